"""dsconfig's reading of launch command lines against the launchers' own code.

Generated command lines go through the real `deepspeed` runner (its main(), with the machine's GPU count and
the process start patched: the resources it would launch are decoded from the --world_info it hands to
deepspeed.launcher.launch), `torch.distributed.run` (its parser and config_from_args), `accelerate launch`'s
parser and `HfArgumentParser(TrainingArguments)`. Where dsconfig states a world size it must be the
launcher's on every machine tried; where the launcher's answer depends on the machine, dsconfig must say
it does not know.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsconfig.launch import argv, launchers, trainer_flags
from dsconfig.launch.shell import Command

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def launch_of(words, env=None):
    return launchers.find(Command(1, 1, tuple(words), dict(env or {}), " ".join(words)), "run.sh")


def test_launcher_table_is_current():
    """schemas/launchers.json is what the installed parsers hold (scripts/build_launchers.py --check)."""
    result = subprocess.run([sys.executable, str(ROOT / "scripts" / "build_launchers.py"), "--check"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


# -- deepspeed -------------------------------------------------------------------------------------

class _Launched(Exception):
    pass


def deepspeed_world(words: list[str], devices: int, visible: str | None, monkeypatch) -> int | str:
    """What `deepspeed <words>` launches on a machine with `devices` GPUs and no hostfile: the number of
    processes, or "refused" when the runner stops before starting any."""
    from deepspeed.launcher import runner

    class Accelerator:
        def device_count(self):
            return devices

        def visible_devices_envs(self):
            return ["CUDA_VISIBLE_DEVICES"]

        def export_envs(self):
            return []

    captured = {}

    def popen(cmd, env=None):
        captured["cmd"] = cmd
        raise _Launched

    monkeypatch.setattr(runner, "fetch_hostfile", lambda path: None)
    monkeypatch.setattr(runner, "get_accelerator", lambda: Accelerator())
    monkeypatch.setattr(runner.subprocess, "Popen", popen)
    if visible is None:
        monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    else:
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    try:
        runner.main(words)
    except _Launched:
        info = next(part for part in captured["cmd"] if str(part).startswith("--world_info="))
        world = json.loads(base64.urlsafe_b64decode(info.split("=", 1)[1]))
        return sum(len(slots) for slots in world.values())
    except (SystemExit, ValueError, RuntimeError, AssertionError, KeyError):
        return "refused"
    return "refused"


deepspeed_options = st.lists(st.one_of(
    st.tuples(st.just("--num_gpus"), st.sampled_from(["1", "2", "4", "8", "-1", "0"])),
    st.tuples(st.just("--num_accelerators"), st.sampled_from(["2", "3"])),
    st.tuples(st.just("--num_nodes"), st.sampled_from(["1", "-1"])),
    st.tuples(st.just("--include"), st.sampled_from(["localhost:0,1", "localhost:0,1,2,3", "localhost:1",
                                                     "localhost"])),
    st.tuples(st.just("--exclude"), st.sampled_from(["localhost:0", "localhost:1,2"])),
    st.tuples(st.just("--master_port"), st.sampled_from(["29500", "6001"])),
    st.tuples(st.just("--no_local_rank"),),
    st.tuples(st.sampled_from(["--num_gpus=2", "--num_gpus=4", "--master_port=1234"]),),
), max_size=4)


@EXAMPLES
@given(deepspeed_options, st.sampled_from([None, "0,1", "0,1,2", "3"]),
       st.sampled_from([[], ["--deepspeed", "ds.json"], ["--per_device_train_batch_size", "4", "--bf16"]]))
def test_deepspeed_world_size(options, visible, script_args):
    words = [word for option in options for word in option] + ["train.py", *script_args]
    env = {} if visible is None else {"CUDA_VISIBLE_DEVICES": visible}
    ours = launch_of(["deepspeed", *words], env)
    with pytest.MonkeyPatch.context() as patch:
        reals = {deepspeed_world(words, devices, visible, patch) for devices in (8, 16)}
    real_parse = _real_deepspeed_parse(words)
    assert ours is not None
    assert ours.script == real_parse.user_script and list(ours.args) == real_parse.user_args
    if ours.world_size is not None:
        assert reals == {ours.world_size}, (words, visible)
    else:
        assert len(reals) > 1 or reals == {"refused"} or not _fixed(options, visible), (words, visible, reals)


def _fixed(options, visible) -> bool:
    """Whether the command line pins the GPUs (then dsconfig must know the count)."""
    flat = [word for option in options for word in option]
    return any(word.startswith(("--num_gpus", "--num_accelerators", "--include")) for word in flat) or bool(visible)


def _real_deepspeed_parse(words):
    from deepspeed.launcher import runner
    return runner.parse_args(words)


# -- torchrun ----------------------------------------------------------------------------------------

torchrun_options = st.lists(st.one_of(
    st.tuples(st.sampled_from(["--nproc_per_node", "--nproc-per-node"]),
              st.sampled_from(["1", "2", "8", "gpu", "auto", "cpu"])),
    st.tuples(st.just("--nnodes"), st.sampled_from(["1", "2", "4", "1:1", "2:2", "1:4"])),
    st.tuples(st.sampled_from(["--nproc_per_node=4", "--nnodes=2", "--standalone", "--master_port=6000",
                               "--node_rank=0"]),),
    st.tuples(st.sampled_from(["--rdzv_backend", "--master_addr"]), st.sampled_from(["c10d", "localhost"])),
), max_size=4)


@EXAMPLES
@given(torchrun_options, st.sampled_from([[], ["--deepspeed", "ds.json"], ["--fp16", "--gradient_accumulation_steps",
                                                                         "2"]]))
def test_torchrun_world_size(options, script_args):
    import torch
    from torch.distributed.run import config_from_args, get_args_parser
    words = [word for option in options for word in option] + ["train.py", *script_args]
    ours = launch_of(["torchrun", *words])
    args = get_args_parser().parse_args(words)
    assert ours.script == args.training_script and list(ours.args) == args.training_script_args
    worlds = set()
    for devices in (2, 3):  # machines with 2 and 3 GPUs (and 20 and 30 CPUs)
        with pytest.MonkeyPatch.context() as patch:
            for module, name, value in ((torch.cuda, "device_count", devices), (torch.cuda, "is_available", True),
                                        (torch.accelerator, "device_count", devices),
                                        (torch.accelerator, "is_available", True),
                                        (torch._utils, "cpu_count", devices * 10)):
                patch.setattr(module, name, lambda value=value: value)
            try:
                config, _, _ = config_from_args(get_args_parser().parse_args(words))
                worlds.add((config.min_nodes, config.max_nodes, config.nproc_per_node))
            except (ValueError, RuntimeError, AttributeError):
                worlds.add("refused")
    sizes = {w[0] * w[2] if w != "refused" and w[0] == w[1] else None for w in worlds}
    if ours.world_size is not None:
        assert sizes == {ours.world_size}, (words, worlds)
    else:
        assert None in sizes or len(sizes) > 1, (words, worlds)


def test_python_m_torch_distributed_run_is_torchrun():
    ours = launch_of(["python", "-u", "-m", "torch.distributed.run", "--nproc_per_node", "4", "--nnodes", "2",
                      "train.py", "--deepspeed", "ds.json"])
    assert (ours.launcher, ours.world_size, ours.nodes, ours.per_node) == ("torchrun", 8, 2, 4)
    assert ours.size_words() == "2 × 4 GPUs"


# -- accelerate launch ---------------------------------------------------------------------------------

accelerate_options = st.lists(st.one_of(
    st.tuples(st.just("--num_processes"), st.sampled_from(["1", "2", "8"])),
    st.tuples(st.just("--num_machines"), st.sampled_from(["1", "2"])),
    st.tuples(st.just("--config_file"), st.sampled_from(["acc.yaml", "configs/fsdp.yaml"])),
    st.tuples(st.sampled_from(["--multi_gpu", "--use_deepspeed", "--mixed_precision=bf16", "-m"]),),
    st.tuples(st.just("--gpu_ids"), st.sampled_from(["0,1", "all"])),
), max_size=4)


@EXAMPLES
@given(accelerate_options, st.sampled_from([[], ["--deepspeed", "ds.json"]]))
def test_accelerate_launch_parse(options, script_args):
    from accelerate.commands.launch import launch_command_parser
    words = [word for option in options for word in option] + ["train.py", *script_args]
    ours = launch_of(["accelerate", "launch", *words])
    args = launch_command_parser().parse_args(words)
    assert ours.script == args.training_script and list(ours.args) == args.training_script_args
    assert ours.options.get("config_file") == args.config_file
    if ours.world_size is not None:
        assert ours.world_size == args.num_processes
    else:
        assert args.num_processes is None


# -- TrainingArguments flags -------------------------------------------------------------------------------

def _training_options():
    table, _ = argv.options("training_args")
    by_dest = {}
    for spelling, spec in table.items():
        by_dest.setdefault(spec.dest, []).append((spelling, spec))
    return [spellings for _, spellings in sorted(by_dest.items())
            if spellings[0][1].type in ("int", "float", "bool", "str") or spellings[0][1].words == "flag"]


TRAINING_OPTIONS = _training_options()
VALUES = {"int": ["1", "8", "-2", "x"], "float": ["2e-5", "0.1", "1", "x"],
          "bool": ["True", "false", "yes", "0", "maybe"], "str": ["ds.json", "cosine", "out"]}


@st.composite
def training_flags(draw):
    words = []
    for _ in range(draw(st.integers(0, 6))):
        spellings = draw(st.sampled_from(TRAINING_OPTIONS))
        spelling, spec = draw(st.sampled_from(spellings))
        if spec.words == "flag":
            words.append(spelling)
            continue
        value = draw(st.sampled_from(VALUES.get(spec.type, ["x"])))
        form = draw(st.sampled_from(["separate", "equals", "bare"] if spec.words == "optional" else
                                    ["separate", "equals"]))
        words.extend({"separate": [spelling, value], "equals": [f"{spelling}={value}"], "bare": [spelling]}[form])
        if draw(st.booleans()):
            words.extend(["--zz_model_path", "facebook/opt"])  # the script's own dataclass's option
    return words


@EXAMPLES
@given(training_flags())
def test_training_flags_against_hf_argument_parser(words):
    from transformers import HfArgumentParser, TrainingArguments
    parser = HfArgumentParser(TrainingArguments)
    parser.exit_on_error = False
    ours = trainer_flags.read(words)
    try:
        namespace, _ = parser.parse_known_args(words)
    except (SystemExit, Exception):
        assert ours.errors, words
        return
    assert not ours.errors, (words, ours.errors)
    for dest, value in ours.values.items():
        assert getattr(namespace, dest) == value, (words, dest)
    given_dests = {spec.dest for word in words if isinstance(word, str)
                   for spec in [argv.options("training_args")[0].get(word.partition("=")[0])] if spec is not None}
    assert set(ours.values) == given_dests, words
