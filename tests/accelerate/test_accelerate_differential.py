"""dsconfig against the real Accelerate 1.15: the loader and `accelerate launch` as oracles.

For every Accelerate config of the corpus and a few hundred generated ones (valid and broken):
* dsconfig reports an error with fails_in "load" ⟺ `load_config_from_file` raises;
* when the file loads, dsconfig reports an error with fails_in "launch" ⟺ what `accelerate
  launch --config_file F train.py` runs before it starts a process raises:
  `_validate_launch_command`, `launch_command`'s dispatch, the launcher's environment builder
  (`prepare_deepspeed_cmd_env`, `prepare_multi_gpu_env`, `prepare_simple_launcher_cmd_env`),
  torchrun's `config_from_args`, and Popen's demand that every environment value be text.
Failures that depend on the machine (no mpirun, no FP8 backend, a busy port, a TPU) are left
out of the comparison and counted separately.
"""

from __future__ import annotations

import os
from typing import NamedTuple

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsconfig.phases import LAUNCH, LOAD
from tests.conftest import corpus_files, quiet_and_restored
from tests.helpers import lint_text

pytest.importorskip("accelerate")
pytest.importorskip("yaml")

ENVIRONMENT_DEPENDENT = ("FP8 is not available", "mpirun or mpiexec were not found", "is already in use",
                         "but another process is utilizing it", "Cuda is not available", "torch_xla")


class Verdict(NamedTuple):
    load_error: str | None
    launch_error: str | None
    machine_dependent: bool  # the launch outcome depends on this machine, not on the file


def _text(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


def accelerate_verdict(path: str) -> Verdict:
    """What Accelerate 1.15 does with the config file at `path`, up to the point processes start."""
    from accelerate.commands.config.config_args import load_config_from_file

    with quiet_and_restored():
        try:
            load_config_from_file(path)
        except Exception as error:
            return Verdict(_text(error), None, False)
        try:
            _launch_until_processes_start(path)
        except Exception as error:
            text = _text(error)
            return Verdict(None, text, any(part in text for part in ENVIRONMENT_DEPENDENT))
    return Verdict(None, None, False)


class _TpuLauncher(Exception):
    pass


def _launch_until_processes_start(path: str) -> None:
    import torch.distributed.run as distrib_run
    from accelerate.commands.launch import _validate_launch_command, launch_command_parser
    from accelerate.utils import ComputeEnvironment
    from accelerate.utils import launch as env_builders

    args = launch_command_parser().parse_args(["--config_file", path, "train.py"])
    args, defaults, mp_from_config = _validate_launch_command(args)
    popen = torchrun = None
    if args.use_deepspeed and not args.cpu:  # launch_command, then deepspeed_launcher
        fields = list(defaults.deepspeed_config.keys()) if defaults else []
        if mp_from_config:
            fields.append("mixed_precision")
        args.deepspeed_fields_from_accelerate_config = ",".join(fields)
        cmd, env = env_builders.prepare_deepspeed_cmd_env(args)
        if args.num_machines > 1 and args.deepspeed_multinode_launcher != "standard":
            popen = (cmd, env)
        else:
            torchrun = args
    elif (args.use_fsdp or args.use_megatron_lm or args.multi_gpu) and not args.cpu:
        env_builders.prepare_multi_gpu_env(args)
        torchrun = args
    elif args.tpu and not args.cpu:
        raise _TpuLauncher("torch_xla: the TPU launcher needs a TPU")
    elif defaults is not None and defaults.compute_environment == ComputeEnvironment.AMAZON_SAGEMAKER:
        raise _TpuLauncher("torch_xla: SageMaker needs AWS")
    else:
        popen = env_builders.prepare_simple_launcher_cmd_env(args)
    if popen is not None:  # subprocess.Popen(cmd, env=env) raises TypeError on anything but text
        cmd, env = popen
        for item in list(cmd) + list(env.values()):
            if not isinstance(item, (str, bytes, os.PathLike)):
                raise TypeError(f"expected str, bytes or os.PathLike object, not {type(item).__name__}")
    if torchrun is not None:
        filtered = env_builders._filter_args(torchrun, distrib_run.get_args_parser(),
                                             ["--training_script", "train.py", "--training_script_args", []])
        distrib_run.config_from_args(filtered)


def dsconfig_phases(path: str, text: str) -> tuple[set, list]:
    findings = lint_text(text, path)
    # ACC007 is a warning only because a launch command may give --num_processes; this replay gives none
    errors = [f for f in findings if f.severity == "error" or f.code == "ACC007"]
    return {f.fails_in for f in errors}, findings


class Tally:
    def __init__(self, name: str):
        self.name = name
        self.load = [0, 0, 0]  # agree, total, accelerate raised
        self.launch = [0, 0, 0]
        self.machine_dependent = 0
        self.not_recognised = 0  # dsconfig skips it (DS005): too little of an Accelerate config to tell
        self.disagreements: list[str] = []

    def compare(self, path: str, text: str) -> None:
        verdict = accelerate_verdict(path)
        phases, findings = dsconfig_phases(path, text)
        if any(f.code == "DS005" for f in findings):
            self.not_recognised += 1
            return
        says_load = LOAD in phases
        self.load[1] += 1
        self.load[2] += verdict.load_error is not None
        if says_load == (verdict.load_error is not None):
            self.load[0] += 1
        else:
            self.disagreements.append(self._explain("load", path, text, verdict.load_error, findings))
        if verdict.load_error is not None:
            return
        if verdict.machine_dependent:
            self.machine_dependent += 1
            return
        self.launch[1] += 1
        self.launch[2] += verdict.launch_error is not None
        if (LAUNCH in phases) == (verdict.launch_error is not None):
            self.launch[0] += 1
        else:
            self.disagreements.append(self._explain("launch", path, text, verdict.launch_error, findings))

    @staticmethod
    def _explain(phase, path, text, error, findings) -> str:
        said = "\n    ".join(repr(f) for f in findings) or "(nothing)"
        return f"{phase}: accelerate says {error!r}; dsconfig said:\n    {said}\n--- {path}\n{text}"

    def report(self) -> str:
        return (f"{self.name}: load agreement {self.load[0]}/{self.load[1]} (the loader raised on {self.load[2]}), "
                f"launch agreement {self.launch[0]}/{self.launch[1]} (launch raised on {self.launch[2]}); "
                f"{self.machine_dependent} left out because the outcome depends on the machine, "
                f"{self.not_recognised} not recognised as Accelerate configs")


# -- the corpus ---------------------------------------------------------------------------------


def test_corpus_agrees_with_accelerate(capsys):
    rows = corpus_files("accelerate")
    tally = Tally("corpus")
    for path, _ in rows:
        tally.compare(str(path), path.read_text(encoding="utf-8"))
    with capsys.disabled():
        print("\n" + tally.report())
    assert not tally.disagreements, "\n\n".join(tally.disagreements)
    assert tally.load[1] == len(rows), "every corpus config is recognised"


# -- generated configs --------------------------------------------------------------------------

WORDS = ["no", "NO", "off", "yes", "On"]  # YAML 1.1 booleans when unquoted


def scalar(*values):
    """Strategy for the YAML text of a scalar: each value as written."""
    return st.sampled_from([str(v) for v in values])


# Keys that break loading are drawn rarely, so that most configs reach the launch comparison.
LOAD_BREAKERS = {
    "num_process": scalar("8"),  # unknown keys
    "bogus_key": scalar("1"),
    "zero_stage": scalar("3"),
    "ec2_instance_type": scalar("ml.p3.2xlarge"),
    "compute_environment": scalar("AMAZON_SAGEMAKER", "LOCAL", "null", "1"),
}
TOP = {
    "distributed_type": scalar("DEEPSPEED", "DEEPSPEED", "MULTI_GPU", "MULTI_GPU", "FSDP", "FSDP", "'NO'", "NO",
                               "no", "MULTI_CPU", "MEGATRON_LM", "XLA", "MULTI_NPU", "null", "3", "true",
                               "deepspeed", "DEEP_SPEED"),
    "compute_environment": scalar("LOCAL_MACHINE"),
    "num_processes": scalar("1", "2", "2", "3", "4", "8", "8", "16", "0", "-1", "'8'", "eight", "8.0", "null",
                            "true"),
    "num_machines": scalar("1", "1", "2", "2", "3", "0", "'2'", "null"),
    "machine_rank": scalar("0", "0", "1", "5", "'0'", "x", "null"),
    "mixed_precision": scalar("'no'", "no", "fp16", "bf16", "bf16", "BF16", "bfloat16", "null", "true", "''"),
    "gpu_ids": scalar("all", "all", "'0'", "0", "'0,1'", "0,1,2,3", "null", "no"),
    "main_process_ip": scalar("10.0.0.1", "10.0.0.1", "null", "10"),
    "main_process_port": scalar("29500", "29500", "0", "70000", "'29500'", "-1", "null", "295.5"),
    "use_cpu": scalar("false", "false", "true", "null", "'yes'", "maybe", "2", "no"),
    "debug": scalar("true", "false", "'no'"),
    "downcast_bf16": scalar("'no'", "true", "no"),
    "same_network": scalar("true", "false"),
    "rdzv_backend": scalar("static", "c10d"),
    "main_training_function": scalar("main"),
    "enable_cpu_affinity": scalar("false", "true"),
    "tpu_use_cluster": scalar("false"),
    "tpu_env": scalar("[]"),
    "fp16": scalar("true", "false"),
    "dynamo_backend": scalar("NO", "'NO'", "INDUCTOR", "bad", "no"),
}
SECTIONS = {
    "deepspeed_config": {
        "zero_stage": scalar("0", "1", "2", "3", "4", "'3'", "three", "3.0"),
        "offload_optimizer_device": scalar("none", "cpu", "CPU", "nvme", "disk", "no"),
        "offload_param_device": scalar("none", "cpu", "nvme"),
        "gradient_accumulation_steps": scalar("1", "4", "auto", "0", "'4.0'"),
        "gradient_clipping": scalar("1.0", "auto", "none", "true"),
        "zero3_init_flag": scalar("true", "false", "maybe", "yes"),
        "zero3_save_16bit_model": scalar("true", "false", "'yes'"),
        "deepspeed_multinode_launcher": scalar("standard", "pdsh", "nossh", "openmpi"),
        "deepspeed_hostfile": scalar("/job/hostfile"),
        "deepspeed_config_file": scalar("ds_config.json", "none"),
        "train_micro_batch_size_per_gpu": scalar("4"),  # ds_config.json keys, ignored here
        "zero_stag": scalar("3"),
        "1": scalar("x"),  # a key that is not text
    },
    "fsdp_config": {
        "fsdp_sharding_strategy": scalar("FULL_SHARD", "full_shard", "1", "SHARDED"),
        "cpu_ram_efficient_loading": scalar("true", "false", "'false'"),
        "fsdp_sync_module_states": scalar("true", "false", "'false'", "null", "0"),
        "fsdp_version": scalar("1", "2"),
        "fsdp_offload_params": scalar("true", "false"),
        "offload_param": scalar("true"),
    },
    "dynamo_config": {
        "dynamo_backend": scalar("no", "'no'", "INDUCTOR", "inductor", "bad", "3"),
        "dynamo_mode": scalar("default", "3"),
        "mode": scalar("max-autotune"),
        "use_fullgraph": scalar("true"),
    },
    "parallelism_config": {
        "parallelism_config_cp_size": scalar("1", "2", "'2'"),
        "parallelism_config_sp_size": scalar("1", "'2'"),
        "parallelism_config_tp_size": scalar("2"),
    },
    "megatron_lm_config": {
        "megatron_lm_tp_degree": scalar("2"),
        "tp_degree": scalar("2"),
    },
}


@st.composite
def accelerate_yaml(draw) -> str:
    often = st.sampled_from([True] * 9 + [False])  # hypothesis leans to the first element
    keys = draw(st.lists(st.sampled_from(sorted(TOP)), max_size=9, unique=True))
    for key in ("distributed_type", "num_processes"):
        if key not in keys and draw(often):
            keys.append(key)
    lines = [f"{key}: {draw(TOP[key])}" for key in keys]
    if not draw(often):
        key = draw(st.sampled_from(sorted(LOAD_BREAKERS)))
        lines = [line for line in lines if not line.startswith(key + ":")]
        lines.append(f"{key}: {draw(LOAD_BREAKERS[key])}")
        if key == "compute_environment" and draw(st.booleans()):  # sometimes a complete SageMaker config
            lines += ["ec2_instance_type: ml.p3.2xlarge", "iam_role_name: role"]
    for section in draw(st.lists(st.sampled_from(sorted(SECTIONS)), max_size=2, unique=True)):
        options = SECTIONS[section]
        chosen = draw(st.lists(st.sampled_from(sorted(options)), max_size=4, unique=True))
        if not chosen:
            lines.append(f"{section}: {draw(st.sampled_from(['{}', 'null', '3', '[a]']))}")
            continue
        lines.append("\n".join([f"{section}:"] + [f"  {key}: {draw(options[key])}" for key in chosen]))
    draw(st.randoms()).shuffle(lines)  # whole entries: a sub-dict keeps its indented lines
    text = "\n".join(lines) + "\n"
    damage = draw(st.sampled_from([None] * 30 + ["syntax", "duplicate", "tab", "list"]))
    if damage == "syntax":
        text += "broken: [unclosed\n"
    elif damage == "duplicate" and lines:
        text += lines[0] + "\n"
    elif damage == "tab":
        text = "\t" + text
    elif damage == "list":
        text = "- " + text.replace("\n", "\n  ")
    return text


GENERATED = Tally("generated")


@settings(max_examples=500, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(text=accelerate_yaml())
def test_generated_configs_agree_with_accelerate(tmp_path_factory, text):
    folder = tmp_path_factory.mktemp("acc")
    path = folder / "accelerate_config.yaml"
    path.write_text(text, encoding="utf-8")
    before = len(GENERATED.disagreements)
    GENERATED.compare(str(path), text)
    assert len(GENERATED.disagreements) == before, GENERATED.disagreements[-1]


def test_generated_agreement_numbers(capsys):
    """Runs after the property test (file order): print what it measured."""
    if not GENERATED.load[1]:
        pytest.skip("the generated-config test did not run")
    with capsys.disabled():
        print("\n" + GENERATED.report())
    assert GENERATED.launch[1] > 150, "too few generated configs reached the launch comparison"


def test_oracle_sees_the_known_failures(tmp_path):
    """The oracle itself: each phase, on configs whose outcome is known from the research notes."""
    cases = {
        "distributed_type: DEEPSPEED\nbogus_key: 1\n": ("load", "had unknown keys"),
        "num_processes: 2\n": ("load", "A `distributed_type` must be specified"),
        "distributed_type: DEEP_SPEED\n": ("load", "is not a valid DistributedType"),
        "distributed_type: DEEPSPEED\nnum_processes: 2\nmixed_precision: no\n": ("launch", "no attribute 'lower'"),
        "distributed_type: MULTI_GPU\n": ("launch", "manually pass in `--num_processes`"),
        "distributed_type: MULTI_GPU\nnum_processes: 2\ngpu_ids: '0'\n": ("launch", "Less than two GPU ids"),
        "distributed_type: DEEPSPEED\nnum_processes: null\n": ("launch", "Unsupported nproc_per_node value: None"),
    }
    for text, (phase, message) in cases.items():
        path = tmp_path / "accelerate_config.yaml"
        path.write_text(text)
        verdict = accelerate_verdict(str(path))
        error = verdict.load_error if phase == "load" else verdict.launch_error
        assert error is not None and message in error, (text, verdict)
