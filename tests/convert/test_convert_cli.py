"""`dsconfig convert` as a user runs it: the table, the files, the mapping's choices, one-line errors."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from dsconfig.fsdp.settings import LAYER_CLASSES
from dsconfig.convert.command import convert
from dsconfig.convert.mapping import STATUSES
from dsconfig.convert.output import FSDP_CONFIG
from tests.conftest import modules_after
from tests.convert import fixtures

ROOT = Path(__file__).resolve().parents[2]


def run(cwd: Path, *args: str):
    with contextlib.chdir(cwd):
        return CliRunner().invoke(convert, list(args), catch_exceptions=False)


def write(folder: Path, name: str, text: str) -> str:
    (folder / name).write_text(text)
    return name


def rows(result) -> dict:
    """source -> row, from --format json (on stderr with --stdout, which prints the files)."""
    table = result.stdout if result.stdout.startswith("{") else result.stderr
    return {row["source"]: row for row in json.loads(table)["rows"]}


def test_zero3_offload_to_fsdp2_table_and_file(tmp_path):
    source = write(tmp_path, "ds_config.json", fixtures.ds_text("zero3-offload-all"))
    result = run(tmp_path, source, "--to", "fsdp", "--model", "llama-3.1-8b", "--gpus", "8")
    assert result.exit_code == 0, result.output
    out = result.output
    assert out.startswith("ds_config.json -> FSDP2 (accelerate_fsdp.yaml)\n")
    assert "  mapped         zero_optimization.stage 3 -> fsdp_reshard_after_forward true\n" in out
    assert "  approximated   offload_optimizer cpu, offload_param cpu -> fsdp_offload_params true\n" in out
    assert "fsdp_transformer_layer_cls_to_wrap LlamaDecoderLayer" in out
    assert out.endswith("wrote accelerate_fsdp.yaml\n")
    written = yaml.safe_load((tmp_path / FSDP_CONFIG).read_text())
    fsdp = written["fsdp_config"]
    assert (fsdp["fsdp_version"], fsdp["fsdp_reshard_after_forward"], fsdp["fsdp_offload_params"]) == (2, True, True)
    assert fsdp["fsdp_transformer_layer_cls_to_wrap"] == "LlamaDecoderLayer"
    assert written["mixed_precision"] == "bf16" and written["num_processes"] == 8
    assert "fsdp_sharding_strategy" not in fsdp  # FSDP2 files carry only FSDP2 keys


@pytest.mark.parametrize("name, version, strategy, status", [
    ("zero0", "1", "NO_SHARD", "mapped"),
    ("zero1", "1", "SHARD_GRAD_OP", "approximated"),
    ("zero2", "1", "SHARD_GRAD_OP", "approximated"),
    ("zero3", "1", "FULL_SHARD", "mapped"),
])
def test_stage_to_sharding_strategy(tmp_path, name, version, strategy, status):
    source = write(tmp_path, "ds.json", fixtures.ds_text(name))
    result = run(tmp_path, source, "--to", "fsdp", "--fsdp-version", version, "--stdout", "--format", "json")
    assert result.exit_code == 0, result.output
    written = yaml.safe_load(result.stdout.split("\n", 2)[2])  # after the two comment lines
    assert written["fsdp_config"]["fsdp_sharding_strategy"] == strategy
    table = json.loads(result.stderr)
    row = next(r for r in table["rows"] if r["source"].startswith("zero_optimization.stage"))
    assert row["status"] == status and row["target"] == f"fsdp_sharding_strategy {strategy}"
    assert set(table["counts"]) == set(STATUSES) and sum(table["counts"].values()) == len(table["rows"])
    assert os.listdir(tmp_path) == ["ds.json"]  # --stdout writes nothing


def test_zero0_asked_as_fsdp2_is_written_as_fsdp1_no_shard(tmp_path):
    source = write(tmp_path, "ds.json", fixtures.ds_text("zero0"))
    result = run(tmp_path, source, "--to", "fsdp", "--format", "json")
    assert result.exit_code == 0
    fsdp = yaml.safe_load((tmp_path / FSDP_CONFIG).read_text())["fsdp_config"]
    assert (fsdp["fsdp_version"], fsdp["fsdp_sharding_strategy"]) == (1, "NO_SHARD")
    assert rows(result)["--fsdp-version 2"]["status"] == "approximated"


def test_what_moves_to_the_script_or_has_no_equivalent(tmp_path):
    source = write(tmp_path, "ds.json", fixtures.ds_text("zero2-concrete"))
    table = rows(run(tmp_path, source, "--to", "fsdp", "--format", "json", "--stdout"))
    assert table["gradient_clipping"]["target"] == "max_grad_norm"
    assert "max_grad_norm=1," in table["gradient_clipping"]["reason"]
    assert table["optimizer"]["status"] == "you decide"
    assert table["zero_optimization.overlap_comm"]["status"] == "no equivalent"
    assert table["steps_per_print"]["status"] == "no equivalent"
    assert table["(model)"]["status"] == "you decide"  # no --model: the user sets the layer class
    assert "_no_split_modules" in table["(model)"]["reason"]


def test_fp16_nvme_and_auto(tmp_path):
    fp16 = rows(run(tmp_path, write(tmp_path, "a.json", fixtures.ds_text("zero2")), "--to", "fsdp", "--format",
                    "json", "--stdout"))
    assert "ShardedGradScaler" in fp16["fp16 loss scaling (loss_scale, initial_scale_power)"]["reason"]
    nvme = rows(run(tmp_path, write(tmp_path, "b.json", fixtures.ds_text("zero3-nvme")), "--to", "fsdp", "--format",
                    "json", "--stdout"))
    assert nvme["offload_optimizer nvme, offload_param nvme"]["status"] == "no equivalent"
    auto = run(tmp_path, write(tmp_path, "c.json", fixtures.ds_text("zero3-sharded-save")), "--to", "fsdp",
               "--stdout")
    assert "mixed_precision: 'no'" in auto.stdout  # "auto": the Trainer's --bf16/--fp16 decide
    assert "fsdp_state_dict_type: 'SHARDED_STATE_DICT'" in auto.stdout


def test_yaml_with_its_json_carries_the_launch_over(tmp_path):
    write(tmp_path, "ds_config.json", fixtures.ds_text("zero3"))
    write(tmp_path, "accelerate.yaml", "compute_environment: LOCAL_MACHINE\ndistributed_type: DEEPSPEED\n"
          "deepspeed_config:\n  deepspeed_config_file: ds_config.json\n  zero3_init_flag: false\n"
          "num_processes: 16\nnum_machines: 2\nmain_process_ip: 10.1.2.3\nmain_process_port: 29501\n")
    result = run(tmp_path, "accelerate.yaml", "--to", "fsdp", "--format", "json")
    assert result.exit_code == 0, result.output
    written = yaml.safe_load((tmp_path / FSDP_CONFIG).read_text())
    assert (written["num_processes"], written["num_machines"]) == (16, 2)
    assert (written["main_process_ip"], written["main_process_port"]) == ("10.1.2.3", 29501)
    assert written["fsdp_config"]["fsdp_cpu_ram_efficient_loading"] is False  # zero3_init_flag false
    assert rows(result)["deepspeed_config.zero3_init_flag"]["status"] == "mapped"


def test_inline_deepspeed_yaml_without_json(tmp_path):
    write(tmp_path, "zero3.yaml", "compute_environment: LOCAL_MACHINE\ndistributed_type: DEEPSPEED\n"
          "deepspeed_config:\n  zero_stage: 3\n  offload_optimizer_device: cpu\n  offload_param_device: cpu\n"
          "  zero3_init_flag: true\n  zero3_save_16bit_model: true\nmixed_precision: fp16\nnum_processes: 4\n")
    result = run(tmp_path, "zero3.yaml", "--to", "fsdp", "--fsdp-version", "1", "--stdout")
    assert result.exit_code == 0, result.output
    written = yaml.safe_load(result.stdout)
    fsdp = written["fsdp_config"]
    assert (fsdp["fsdp_sharding_strategy"], fsdp["fsdp_offload_params"]) == ("FULL_SHARD", True)
    assert fsdp["fsdp_state_dict_type"] == "FULL_STATE_DICT"
    assert (written["mixed_precision"], written["num_processes"]) == ("fp16", 4)


def test_model_config_json_gives_the_layer_class(tmp_path):
    write(tmp_path, "config.json", json.dumps({"model_type": "qwen2", "hidden_size": 896}))
    source = write(tmp_path, "ds.json", fixtures.ds_text("zero3"))
    result = run(tmp_path, source, "--to", "fsdp", "--model", "config.json", "--stdout")
    assert "fsdp_transformer_layer_cls_to_wrap: 'Qwen2DecoderLayer'" in result.stdout


def test_layer_classes_are_the_ones_transformers_does_not_split():
    transformers = pytest.importorskip("transformers")
    import importlib
    for model_type, name in LAYER_CLASSES.items():
        module = importlib.import_module(f"transformers.models.{model_type}.modeling_{model_type}")
        splits = {layer for value in vars(module).values() if isinstance(value, type)
                  and issubclass(value, transformers.PreTrainedModel)
                  for layer in (getattr(value, "_no_split_modules", None) or [])}
        assert name in splits, (model_type, name, splits)


@pytest.mark.parametrize("name, stage, hpz", [
    ("fsdp1-hybrid_shard", 3, 8),
    ("fsdp1-hybrid_shard_zero2", 2, None),
    ("fsdp2-no-reshard", 2, None),
    ("fsdp1-no_shard", 0, None),
])
def test_fsdp_to_deepspeed_stage_and_hybrid(tmp_path, name, stage, hpz):
    write(tmp_path, "fsdp.yaml", fixtures.FSDP[name])
    result = run(tmp_path, "fsdp.yaml", "--to", "deepspeed", "--format", "json")
    assert result.exit_code == 0, result.output
    zero = json.loads((tmp_path / "ds_config.json").read_text())["zero_optimization"]
    assert zero["stage"] == stage and zero.get("zero_hpz_partition_size") == hpz
    statuses = {row["source"]: row["status"] for row in json.loads(result.stdout)["rows"]}
    if "hybrid" in name:
        assert statuses["hybrid sharding"] == ("approximated" if hpz else "no equivalent")
    launched = yaml.safe_load((tmp_path / "accelerate_config.yaml").read_text())
    assert launched["deepspeed_config"]["deepspeed_config_file"] == "ds_config.json"
    assert launched["num_processes"] == 8


def test_target_deepspeed_writes_numbers_and_no_yaml(tmp_path):
    write(tmp_path, "fsdp.yaml", fixtures.FSDP["fsdp2"])
    result = run(tmp_path, "fsdp.yaml", "--to", "deepspeed", "--target", "deepspeed", "--micro-batch", "4")
    assert result.exit_code == 0, result.output
    config = json.loads((tmp_path / "ds_config.json").read_text())
    assert (config["train_batch_size"], config["train_micro_batch_size_per_gpu"]) == (32, 4)
    assert sorted(os.listdir(tmp_path)) == ["ds_config.json", "fsdp.yaml"]


def test_never_overwrites_without_force(tmp_path):
    source = write(tmp_path, "ds.json", fixtures.ds_text("zero3"))
    (tmp_path / FSDP_CONFIG).write_text("mine\n")
    result = run(tmp_path, source, "--to", "fsdp")
    assert result.exit_code == 2
    assert result.stderr == ("dsconfig convert: error: accelerate_fsdp.yaml exists; pass --force to overwrite it "
                             "(nothing was written)\n")
    assert (tmp_path / FSDP_CONFIG).read_text() == "mine\n"
    assert run(tmp_path, source, "--to", "fsdp", "--force").exit_code == 0
    assert "distributed_type: FSDP" in (tmp_path / FSDP_CONFIG).read_text()


BAD = [
    (["bad.json", "--to", "fsdp"], "bad.json", '{"zero_optimization": {"stage": 3,}\n', "bad.json:2:1: DeepSpeed cannot load it: Bad key name (eof)"),
    (["bad.yaml", "--to", "deepspeed"], "bad.yaml", "distributed_type: FSDP\nfsdp_config: [\n",
     "bad.yaml:3:1: not valid YAML"),
    (["ddp.yaml", "--to", "deepspeed"], "ddp.yaml", "distributed_type: MULTI_GPU\n",
     "ddp.yaml:1:1: distributed_type is 'MULTI_GPU', not FSDP"),
    (["f.yaml", "--to", "deepspeed"], "f.yaml", "distributed_type: FSDP\nfsdp_config:\n  fsdp_sharding_strategy: FOO\n",
     "f.yaml:3:27: fsdp_sharding_strategy 'FOO' is not one of FULL_SHARD"),
    (["f.yaml", "--to", "deepspeed"], "f.yaml", "distributed_type: FSDP\nfsdp_config:\n  offload_params: maybe\n",
     "f.yaml:3:19: 'maybe' is not a boolean"),
    (["f.yaml", "--to", "deepspeed"], "f.yaml", "distributed_type: FSDP\nfsdp_config: 3\n",
     "f.yaml:2:14: fsdp_config is not a mapping"),
    (["d.yaml", "--to", "fsdp"], "d.yaml", ("distributed_type: DEEPSPEED\ndeepspeed_config:\n"
                                            "  deepspeed_config_file: missing.json\n"),
     "d.yaml:3:26: deepspeed_config_file missing.json not found"),
    (["a.json", "--to", "deepspeed"], "a.json", "{}", "--to deepspeed takes one Accelerate FSDP YAML"),
    (["a.json", "--to", "fsdp", "--target", "accelerate"], "a.json", "{}", "--target does not go with --to fsdp"),
    (["a.json", "--to", "fsdp", "--model", "no-such-model"], "a.json", "{}", "--model: 'no-such-model' is neither"),
    (["a.json", "--to", "sideways"], "a.json", "{}", "Invalid value for '--to'"),
    (["a.json", "--to", "fsdp"], "a.json", "[1]", "a.json:1:1: not a DeepSpeed config: the top level is not an object"),
    (["a.json", "--to", "fsdp"], "a.json", b"{\"a\": \"\xff\"}", "a.json:1:8: not UTF-8 text (byte 0xff)"),
    (["gone.json", "--to", "fsdp"], None, None, "gone.json: cannot read"),
    (["f.yaml", "--to", "deepspeed"], "f.yaml", "distributed_type: FSDP\nnum_machines: 3\nnum_processes: 8\n",
     "f.yaml:3:16: num_processes 8 is not a multiple of num_machines 3"),
    (["f.yaml", "--to", "deepspeed"], "f.yaml", "distributed_type: FSDP\nfsdp_config:\n  state_dict_type: X\n",
     "f.yaml:3:20: fsdp_state_dict_type 'X' is not one of"),
    (["f.yaml", "--to", "deepspeed"], "f.yaml", "distributed_type: FSDP\nmixed_precision: fp8\n",
     "f.yaml:2:18: mixed_precision 'fp8': DeepSpeed takes no, fp16 or bf16"),
]


@pytest.mark.parametrize("args, name, text, message", BAD)
def test_bad_input_is_one_line_exit_2_and_writes_nothing(tmp_path, args, name, text, message):
    if name is not None:
        (tmp_path / name).write_bytes(text if isinstance(text, bytes) else text.encode())
    result = run(tmp_path, *args)
    assert result.exit_code == 2
    assert result.stderr.startswith("dsconfig convert: error: ") and result.stderr.count("\n") == 1, result.stderr
    assert message in result.stderr, result.stderr
    assert not (tmp_path / FSDP_CONFIG).exists() and not (tmp_path / "ds_config.json").exists()


def test_registered_in_the_group_and_imports_nothing_heavy(tmp_path):
    (tmp_path / "fsdp.yaml").write_text(fixtures.FSDP["fsdp1-full_shard"])
    (tmp_path / "ds.json").write_text(fixtures.ds_text("zero3"))
    for argv in (["convert", "fsdp.yaml", "--to", "deepspeed", "--stdout"],
                 ["convert", "ds.json", "--to", "fsdp", "--model", "gpt2", "--stdout"]):
        loaded = {name.split(".")[0] for name in modules_after(argv, tmp_path)}
        assert not loaded & {"torch", "deepspeed", "accelerate", "transformers", "numpy"}, argv
    result = subprocess.run([sys.executable, "-m", "dsconfig", "convert", "ds.json", "--to", "fsdp"], cwd=tmp_path,
                            check=False, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert result.returncode == 0, result.stderr
    assert "wrote accelerate_fsdp.yaml" in result.stdout


def test_the_example_in_docs_convert_md_is_real(tmp_path):
    doc = (ROOT / "docs" / "convert.md").read_text()
    config = doc.split("```json\n", 1)[1].split("```", 1)[0]
    console = doc.split("```console\n", 1)[1].split("```", 1)[0]
    command, shown = console.split("\n", 1)
    (tmp_path / "ds_config.json").write_text(config)
    result = run(tmp_path, *command.removeprefix("$ dsconfig convert ").split())
    assert result.exit_code == 0 and result.output == shown
