"""Every file `dsconfig convert` writes, judged by the real readers: `dsconfig lint` (in-process), Accelerate
1.15 (load_config_from_file, the `accelerate launch` environment, then FullyShardedDataParallelPlugin or
DeepSpeedPlugin built from it on CPU) and DeepSpeed 0.19.8 (DeepSpeedConfig, after the HF Trainer's or
Accelerate's "auto" fill). Inputs: tests/convert/fixtures.py and, when present, the shared corpus's
DeepSpeed JSONs and Accelerate FSDP/DeepSpeed YAMLs. Round trips keep the stage, offload and precision
where a mapping exists.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
from collections import Counter
from pathlib import Path
from types import SimpleNamespace
from typing import NamedTuple

import pytest
import yaml
from click.testing import CliRunner

from dsconfig.convert.command import convert
from dsconfig.convert.output import FSDP_CONFIG
from tests.conftest import corpus_files, quiet_and_restored
from tests.convert import fixtures
from tests.helpers import lint

pytest.importorskip("accelerate")
pytest.importorskip("deepspeed")
pytest.importorskip("transformers")

# As for `dsconfig generate`: DS704 (hf-trainer: what the Trainer fills each "auto" with) and DS205
# (--micro-batch 1, the default for targets that fill no "auto": a BatchNorm model would fail), and ACC033
# (FULL_STATE_DICT, chosen where the ds_config gathers 16-bit weights on save: each save gathers on rank 0).
ALLOWED_INFOS = {"DS704", "DS205", "ACC033"}
DS_CONFIG, ACCELERATE_CONFIG = "ds_config.json", "accelerate_config.yaml"


class Conversion(NamedTuple):
    name: str
    folder: Path
    to: str  # "fsdp" or "deepspeed"
    target: str  # --target (--to deepspeed)
    result: object  # click's Result


def run(folder: Path, *args: str):
    folder.mkdir(parents=True, exist_ok=True)
    with contextlib.chdir(folder):
        return CliRunner().invoke(convert, [*args, "-o", "."], catch_exceptions=False)


def _yaml_kind(path: Path) -> str | None:
    try:
        value = yaml.safe_load(path.read_text())
    except (yaml.YAMLError, UnicodeDecodeError, ValueError):
        return None
    return value.get("distributed_type") if isinstance(value, dict) else None


def _convert_all(root: Path) -> list[Conversion]:
    out = []
    for name in fixtures.DEEPSPEED:
        source = root / "in" / f"{name}.json"
        source.parent.mkdir(parents=True, exist_ok=True)
        source.write_text(fixtures.ds_text(name))
        for version in ("1", "2"):
            folder = root / f"{name}-fsdp{version}"
            out.append(Conversion(name, folder, "fsdp", "", run(folder, str(source), "--to", "fsdp", "--fsdp-version",
                                                                   version, "--gpus", "4", "--model", "llama-3.1-8b")))
    for name, text in fixtures.FSDP.items():
        source = root / "in" / f"{name}.yaml"
        source.write_text(text)
        for target in ("hf-trainer", "accelerate", "deepspeed", "lightning"):
            folder = root / f"{name}-{target}"
            out.append(Conversion(name, folder, "deepspeed", target,
                                  run(folder, str(source), "--to", "deepspeed", "--target", target)))
    for index, (path, kind) in enumerate(corpus_files(source="shared")):
        folder = root / "corpus" / str(index)
        if kind == "deepspeed":
            out.append(Conversion(str(path), folder, "fsdp", "", run(folder, str(path), "--to", "fsdp")))
        elif kind == "accelerate" and _yaml_kind(path) == "FSDP":
            out.append(Conversion(str(path), folder, "deepspeed", "hf-trainer",
                                  run(folder, str(path), "--to", "deepspeed")))
        elif kind == "accelerate" and _yaml_kind(path) == "DEEPSPEED":
            result = run(folder, str(path), "--to", "fsdp")
            if result.exit_code == 2 and "not found" in result.stderr:  # its JSON was not collected with it
                continue
            out.append(Conversion(str(path), folder, "fsdp", "", result))
    return out


@pytest.fixture(scope="module")
def conversions(tmp_path_factory) -> list[Conversion]:
    return _convert_all(tmp_path_factory.mktemp("convert"))


def _is_corpus(conversion: Conversion) -> bool:
    return conversion.name.startswith("/")


def test_every_input_converts(conversions):
    failed = [(c.name, c.result.output) for c in conversions if c.result.exit_code != 0]
    assert not failed, failed
    counts = Counter((c.to, _is_corpus(c)) for c in conversions)
    print(f"\nconverted: {dict(counts)}")
    assert counts[("fsdp", False)] == 2 * len(fixtures.DEEPSPEED)
    assert counts[("deepspeed", False)] == 4 * len(fixtures.FSDP)


def _lint_findings(conversion: Conversion) -> list:
    if conversion.to == "fsdp":
        return lint(conversion.folder / FSDP_CONFIG)
    paths = [conversion.folder / name for name in (DS_CONFIG, ACCELERATE_CONFIG) if (conversion.folder / name).exists()]
    world = _world(conversion)
    with contextlib.chdir(conversion.folder):
        return lint(*paths, target=conversion.target, world_sizes=(world,))


def test_every_output_lints_clean(conversions):
    clean = Counter()
    for conversion in conversions:
        findings = _lint_findings(conversion)
        bad = [f"{f.file}:{f.line}: {f.code} {f.message}" for f in findings
               if f.severity != "info" or f.code not in ALLOWED_INFOS]
        assert not bad, (conversion.name, conversion.to, conversion.target, bad)
        clean[(conversion.to, _is_corpus(conversion))] += 1
    print(f"\nlint clean: {dict(clean)}")


# -- Accelerate ------------------------------------------------------------------------------------

def launch_env(yaml_path: Path) -> dict:
    """The environment `accelerate launch --config_file F train.py` gives each process (FSDP or DeepSpeed)."""
    from accelerate.commands.config.config_args import load_config_from_file
    from accelerate.commands.launch import _validate_launch_command as validate
    from accelerate.commands.launch import launch_command_parser
    from accelerate.utils import launch as env_builders

    with quiet_and_restored(), contextlib.chdir(yaml_path.parent):
        load_config_from_file(str(yaml_path))
        args = launch_command_parser().parse_args(["--config_file", str(yaml_path), "train.py"])
        args, defaults, mp_from_config = validate(args)
        if args.use_deepspeed:
            fields = list(defaults.deepspeed_config.keys()) if defaults else []
            if mp_from_config:
                fields.append("mixed_precision")
            args.deepspeed_fields_from_accelerate_config = ",".join(fields)
            args.main_process_port = 0 if args.num_machines == 1 else args.main_process_port
            _, env = env_builders.prepare_deepspeed_cmd_env(args)
        else:
            assert args.use_fsdp
            env = env_builders.prepare_multi_gpu_env(args)
        return dict(env)


@contextlib.contextmanager
def on_a_cuda_machine():
    """FSDP1's sync_module_states asks for the current GPU (the last step of the plugin's __post_init__): answer
    as a CUDA training machine would, as tests/oracle.py does for DeepSpeed's accelerator."""
    import accelerate.utils.dataclasses as plugin_module
    import torch
    saved = plugin_module.is_cuda_available, torch.cuda.current_device
    plugin_module.is_cuda_available, torch.cuda.current_device = (lambda: True), (lambda: 0)
    try:
        yield
    finally:
        plugin_module.is_cuda_available, torch.cuda.current_device = saved


def fsdp_plugin(yaml_path: Path):
    """FullyShardedDataParallelPlugin() in a process `accelerate launch` started with the YAML."""
    from accelerate.utils import FullyShardedDataParallelPlugin

    env = launch_env(yaml_path)
    with quiet_and_restored(env), on_a_cuda_machine():
        return FullyShardedDataParallelPlugin(), env


def _offloads(plugin) -> bool:
    """FSDP1: CPUOffload(offload_params=...); FSDP2: a CPUOffloadPolicy, else the base OffloadPolicy."""
    if plugin.fsdp_version == 1:
        return plugin.cpu_offload.offload_params
    return type(plugin.cpu_offload).__name__ == "CPUOffloadPolicy"


def test_fsdp_outputs_are_accepted_by_accelerate(conversions):
    from torch.distributed.fsdp import ShardingStrategy

    accepted = Counter()
    for conversion in (c for c in conversions if c.to == "fsdp"):
        written = yaml.safe_load((conversion.folder / FSDP_CONFIG).read_text())
        plugin, env = fsdp_plugin(conversion.folder / FSDP_CONFIG)
        fsdp = written["fsdp_config"]
        assert plugin.fsdp_version == fsdp["fsdp_version"]
        assert _offloads(plugin) == fsdp["fsdp_offload_params"]
        assert plugin.activation_checkpointing == fsdp["fsdp_activation_checkpointing"]
        assert plugin.state_dict_type.name == fsdp["fsdp_state_dict_type"]
        assert plugin.cpu_ram_efficient_loading == fsdp["fsdp_cpu_ram_efficient_loading"]
        assert env["ACCELERATE_MIXED_PRECISION"] == written["mixed_precision"]
        if plugin.fsdp_version == 1:
            assert plugin.sharding_strategy == ShardingStrategy[fsdp["fsdp_sharding_strategy"]]
        else:
            assert plugin.reshard_after_forward is fsdp["fsdp_reshard_after_forward"]
        if "fsdp_transformer_layer_cls_to_wrap" in fsdp:
            assert plugin.transformer_cls_names_to_wrap == [fsdp["fsdp_transformer_layer_cls_to_wrap"]]
        accepted[_is_corpus(conversion)] += 1
    print(f"\nFSDP YAMLs accepted by Accelerate (fixtures, corpus): {accepted[False]}, {accepted[True]}")
    assert accepted[False] == 2 * len(fixtures.DEEPSPEED)


def test_deepspeed_yamls_are_accepted_by_accelerate(conversions):
    from accelerate.commands.config.config_args import load_config_from_file

    seen = 0
    for conversion in (c for c in conversions if c.to == "deepspeed" and c.target in ("hf-trainer", "accelerate")):
        with quiet_and_restored():
            loaded = load_config_from_file(str(conversion.folder / ACCELERATE_CONFIG))
        assert loaded.distributed_type.value == "DEEPSPEED"
        assert loaded.deepspeed_config["deepspeed_config_file"] == DS_CONFIG
        env = launch_env(conversion.folder / ACCELERATE_CONFIG)
        assert env["ACCELERATE_DEEPSPEED_CONFIG_FILE"] == DS_CONFIG
        seen += 1
    print(f"\nDeepSpeed Accelerate YAMLs accepted by Accelerate: {seen}")
    assert seen >= 2 * len(fixtures.FSDP)


# -- DeepSpeed -------------------------------------------------------------------------------------

def _precision(config: dict) -> str:
    for key in ("bf16", "fp16"):
        if isinstance(config.get(key), dict) and config[key].get("enabled") is True:
            return key
    return "fp32"


def deepspeed_view(conversion: Conversion) -> tuple[dict, int]:
    """(the config as the target hands it to deepspeed.initialize, the world size)."""
    from accelerate.utils import DeepSpeedPlugin
    from transformers.integrations.deepspeed import HfTrainerDeepSpeedConfig

    from tests.generate.test_generate_grid import WorldArgs
    folder = conversion.folder
    config = json.loads((folder / DS_CONFIG).read_text())
    if conversion.target in ("deepspeed", "lightning"):
        world = _world(conversion)
        if conversion.target == "lightning":  # what Lightning's DeepSpeedStrategy adds for accumulate_grad_batches=1
            config = {**config, "gradient_accumulation_steps": 1, "gradient_clipping": 1.0}
        assert "auto" not in json.dumps(config)
        return config, world
    env = launch_env(folder / ACCELERATE_CONFIG)
    world = int(env["WORLD_SIZE"]) if "WORLD_SIZE" in env else yaml.safe_load(
        (folder / ACCELERATE_CONFIG).read_text())["num_processes"]
    with quiet_and_restored(env), contextlib.chdir(folder):
        if conversion.target == "accelerate":
            plugin = DeepSpeedPlugin()
            plugin.set_mixed_precision(os.environ.get("ACCELERATE_MIXED_PRECISION", "no"))
            return plugin.deepspeed_config, world
        args = WorldArgs.get(world, _precision(config))
        args.per_device_train_batch_size, args.gradient_accumulation_steps = 2, 1
        hf = HfTrainerDeepSpeedConfig(DS_CONFIG)
        hf.trainer_config_process(args)
        plugin = DeepSpeedPlugin(hf_ds_config=hf)
        plugin.set_mixed_precision(args.mixed_precision)
        hf.trainer_config_finalize(args, SimpleNamespace(config=SimpleNamespace(hidden_size=4096)), 1000)
        return plugin.deepspeed_config, world


def _world(conversion: Conversion) -> int:
    """The processes the source YAML launches (1 when it does not say: the launcher's default)."""
    source = Path(conversion.name) if _is_corpus(conversion) else conversion.folder.parent / "in" / \
        f"{conversion.name}.yaml"
    return int(yaml.safe_load(source.read_text()).get("num_processes", 1))


def deepspeed_config(config: dict, world: int):
    from deepspeed.runtime.config import DeepSpeedConfig

    from tests import oracle
    with oracle.world(world), quiet_and_restored():
        return DeepSpeedConfig(copy.deepcopy(config))


def test_deepspeed_outputs_are_accepted_by_deepspeed(conversions):
    accepted = Counter()
    for conversion in (c for c in conversions if c.to == "deepspeed"):
        config, world = deepspeed_view(conversion)
        written = json.loads((conversion.folder / DS_CONFIG).read_text())
        ds = deepspeed_config(config, world)
        assert ds.zero_optimization_stage == written["zero_optimization"]["stage"]
        assert ds.bfloat16_config.enabled == (_precision(written) == "bf16")
        assert ds.float16_config.enabled == (_precision(written) == "fp16")
        accepted[_is_corpus(conversion)] += 1
    print(f"\nds_config.json accepted by DeepSpeedConfig (fixtures, corpus): {accepted[False]}, {accepted[True]}")
    assert accepted[False] == 4 * len(fixtures.FSDP)


# -- round trips -------------------------------------------------------------------------------------

def _zero(config: dict) -> tuple[int, str, str]:
    zero = config.get("zero_optimization", {})
    devices = [(zero.get(key) or {}).get("device", "none") for key in ("offload_optimizer", "offload_param")]
    return zero.get("stage", 0), *devices


# ZeRO stage -> the stage after DeepSpeed -> FSDP -> DeepSpeed: ZeRO-1 has no FSDP twin (SHARD_GRAD_OP, ZeRO-2).
STAGE_BACK = {0: 0, 1: 2, 2: 2, 3: 3}


@pytest.mark.parametrize("version", ["1", "2"])
@pytest.mark.parametrize("name", [n for n in fixtures.DEEPSPEED if n not in ("zero3-nvme",)])
def test_deepspeed_round_trip_keeps_stage_offload_precision(tmp_path, name, version):
    source = tmp_path / "ds_config_in.json"
    source.write_text(fixtures.ds_text(name))
    first = run(tmp_path / "fsdp", str(source), "--to", "fsdp", "--fsdp-version", version, "--gpus", "2")
    assert first.exit_code == 0, first.output
    second = run(tmp_path / "back", str(tmp_path / "fsdp" / FSDP_CONFIG), "--to", "deepspeed")
    assert second.exit_code == 0, second.output
    before = fixtures.DEEPSPEED[name]
    after = json.loads((tmp_path / "back" / DS_CONFIG).read_text())
    stage, optimizer, param = _zero(before)
    back_stage, back_optimizer, back_param = _zero(after)
    assert back_stage == STAGE_BACK[stage]
    if optimizer == param:  # all or nothing: FSDP's only offload
        assert (back_optimizer, back_param) == (optimizer, param if stage == 3 else "none")
    else:  # part offloaded: FSDP offloads all, and says the user decides
        assert back_optimizer == "cpu" and "you decide" in first.output
    if not (isinstance(before.get("bf16"), dict) and before["bf16"]["enabled"] == "auto"):
        assert _precision(after) == _precision(before)
    back_yaml = yaml.safe_load((tmp_path / "back" / ACCELERATE_CONFIG).read_text())
    assert back_yaml["num_processes"] == 2


@pytest.mark.parametrize("name", list(fixtures.FSDP))
def test_fsdp_round_trip_keeps_sharding_offload_precision(tmp_path, name):
    source = tmp_path / "fsdp_in.yaml"
    source.write_text(fixtures.FSDP[name])
    first = run(tmp_path / "ds", str(source), "--to", "deepspeed")
    assert first.exit_code == 0, first.output
    before = yaml.safe_load(fixtures.FSDP[name])
    version = before["fsdp_config"]["fsdp_version"]
    second = run(tmp_path / "back", str(tmp_path / "ds" / ACCELERATE_CONFIG), str(tmp_path / "ds" / DS_CONFIG),
                 "--to", "fsdp", "--fsdp-version", str(version))
    assert second.exit_code == 0, second.output
    after = yaml.safe_load((tmp_path / "back" / FSDP_CONFIG).read_text())
    b, a = before["fsdp_config"], after["fsdp_config"]
    assert a["fsdp_offload_params"] == b["fsdp_offload_params"]
    assert after["mixed_precision"] == before["mixed_precision"]
    assert after["num_processes"] == before["num_processes"] and after["num_machines"] == before["num_machines"]
    assert a["fsdp_state_dict_type"] == b["fsdp_state_dict_type"] or "SHARD_GRAD_OP" in str(b) or \
        "NO_SHARD" in str(b) or b.get("fsdp_reshard_after_forward") is False or "ZERO2" in str(b)
    if version == 2:
        assert a["fsdp_reshard_after_forward"] == b["fsdp_reshard_after_forward"]
    else:
        expected = {"HYBRID_SHARD": "FULL_SHARD", "HYBRID_SHARD_ZERO2": "SHARD_GRAD_OP"}
        strategy = b["fsdp_sharding_strategy"]
        if strategy == "NO_SHARD" and b["fsdp_offload_params"]:
            expected["NO_SHARD"] = "SHARD_GRAD_OP"  # DeepSpeed offloads only with ZeRO sharding
        assert a["fsdp_sharding_strategy"] == expected.get(strategy, strategy)
