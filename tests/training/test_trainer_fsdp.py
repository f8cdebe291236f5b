"""`dsconfig lint` on HF TrainingArguments files (their `fsdp` / `fsdp_config`) and on an Accelerate YAML
linted with `--training-args` (dsconfig.fsdp.trainer_args, ACC040-ACC049). What transformers itself does
with the same values is compared in test_trainer_fsdp_differential.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from dsconfig import detect

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def lint(*args: str, cwd) -> tuple[int, list[dict]]:
    done = subprocess.run([sys.executable, "-m", "dsconfig", "lint", "--format", "json", *args], cwd=cwd,
                          capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=ROOT), check=False)
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, json.loads(done.stdout)


def write(folder, name: str, value) -> str:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value) if name.endswith(".json") else value)
    return str(path)


def test_a_training_arguments_file_is_linted_not_skipped(tmp_path):
    write(tmp_path, "training_args.json", {"output_dir": "out", "fsdp": "true"})
    code, found = lint("training_args.json", cwd=tmp_path)
    assert code == 1
    assert [(f["code"], f["line"], f["fails_in"]) for f in found if f["code"] == "ACC040"] == \
        [("ACC040", 1, "initialize")]
    assert "Unknown `fsdp` option: true" in found[0]["message"]
    assert "DS005" not in {f["code"] for f in found}


def test_a_recipe_yaml_with_fsdp_config_is_trainer_arguments_not_an_accelerate_config(tmp_path):
    write(tmp_path, "config_fsdp.yaml", "output_dir: out\nfsdp: true\nfsdp_config:\n  fsdp_offload_params: true\n")
    code, found = lint("config_fsdp.yaml", cwd=tmp_path)
    assert code == 0
    assert [(f["code"], f["line"], f["pointer"]) for f in found] == \
        [("ACC041", 4, "/fsdp_config/fsdp_offload_params")]
    assert "the Trainer's name is `cpu_offload`" in found[0]["message"]


@pytest.mark.parametrize(("value", "recognised"), [
    ({"output_dir": "out", "fsdp": True}, True),
    ({"output_dir": "out", "per_device_train_batch_size": 8, "learning_rate": 1e-5, "model_name_or_path": "m"}, True),
    ({"output_dir": "out", "learning_rate": 1e-4, "max_epochs": 3}, False),  # two fields: a Lightning-style config
    ({"train_batch_size": 8, "activation_checkpointing": {"partition_activations": True}}, False),  # DeepSpeed
    ({"distributed_type": "FSDP", "fsdp_config": {}, "debug": False, "use_cpu": False}, False),  # Accelerate
])
def test_recognition_is_conservative(value, recognised):
    assert detect.training_arguments(value) is recognised


def test_fsdp_config_file_is_relative_to_the_working_directory(tmp_path):
    write(tmp_path, "recipe/fsdp.json", {"fsdp_sync_module_states": True})
    write(tmp_path, "recipe/training_args.json", {"output_dir": "out", "fsdp": True, "fsdp_config": "fsdp.json"})
    code, found = lint("recipe/training_args.json", cwd=tmp_path)
    assert code == 1
    assert found[0]["code"] == "ACC040" and "FileNotFoundError" in found[0]["message"]
    assert "recipe/fsdp.json exists, but the path is relative to the working directory" in found[0]["message"]
    # started from the recipe's folder, transformers opens it: its FSDP1-only key is ignored under FSDP2
    code, found = lint("training_args.json", cwd=tmp_path / "recipe")
    assert code == 0
    assert [(f["code"], f["pointer"]) for f in found] == [("ACC042", "/fsdp_config")]
    assert found[0]["message"].startswith("in fsdp.json: `fsdp_sync_module_states` is read only for FSDP1")


def test_fsdp_config_given_while_fsdp_is_off(tmp_path):
    write(tmp_path, "training_args.json", {"output_dir": "out", "fsdp": False, "fsdp_config": {"cpu_offload": True}})
    code, found = lint("training_args.json", cwd=tmp_path)
    assert code == 0
    assert [(f["code"], f["fails_in"], f["pointer"]) for f in found] == [("ACC043", None, "/fsdp_config")]


def test_fsdp_with_deepspeed_in_the_arguments(tmp_path):
    write(tmp_path, "training_args.json", {"output_dir": "out", "fsdp": True, "deepspeed": "ds_config.json"})
    code, found = lint("training_args.json", cwd=tmp_path)
    assert code == 1
    assert [(f["code"], f["pointer"], f["fails_in"]) for f in found] == [("ACC046", "/deepspeed", "initialize")]


ACCELERATE_FSDP = """compute_environment: LOCAL_MACHINE
distributed_type: FSDP
num_processes: 2
fsdp_config:
  fsdp_version: 2
  fsdp_state_dict_type: SHARDED_STATE_DICT
  fsdp_activation_checkpointing: true
"""


def test_yaml_with_training_args_checkpointing_twice_and_values_replaced(tmp_path):
    write(tmp_path, "accelerate_config.yaml", ACCELERATE_FSDP)
    write(tmp_path, "args.json", {"output_dir": "out", "fsdp": True, "gradient_checkpointing": True})
    code, found = lint("accelerate_config.yaml", "--training-args", "args.json", cwd=tmp_path)
    assert code == 1
    ours = [(f["code"], f["line"], f["fails_in"]) for f in found if f["code"] in ("ACC045", "ACC049")]
    assert ours == [("ACC049", 6, None), ("ACC045", 7, "initialize")]
    assert "replaced by the Trainer's state_dict_type=\"FULL_STATE_DICT\"" in found[0]["message"]


def test_yaml_launching_deepspeed_with_fsdp_arguments(tmp_path):
    write(tmp_path, "accelerate_config.yaml", "compute_environment: LOCAL_MACHINE\ndistributed_type: DEEPSPEED\n"
                                              "num_processes: 2\ndeepspeed_config:\n  zero_stage: 2\n")
    write(tmp_path, "args.json", {"output_dir": "out", "fsdp": True})
    code, found = lint("accelerate_config.yaml", "--training-args", "args.json", cwd=tmp_path)
    assert code == 1
    assert [(f["code"], f["line"]) for f in found if f["code"] == "ACC046"] == [("ACC046", 2)]
    # without the arguments' fsdp the same launch is fine
    write(tmp_path, "args.json", {"output_dir": "out"})
    _, found = lint("accelerate_config.yaml", "--training-args", "args.json", cwd=tmp_path)
    assert "ACC046" not in {f["code"] for f in found}


def test_a_key_that_is_no_string_fails_as_transformers_does():
    """A YAML `1:` or `!!binary` key in fsdp_config: transformers' `k.startswith("fsdp_")` raises; so does the
    replay, naming the key, where it used to crash."""
    import pytest
    transformers = pytest.importorskip("transformers")
    from dsconfig.fsdp import trainer_args
    for key in (1, b"fsdp_offload_params", 2 ** 14_000):
        with pytest.raises((AttributeError, TypeError)) as raised:
            transformers.TrainingArguments(output_dir="o", fsdp="full_shard", fsdp_config={key: True})
        messages = [f.message for f in trainer_args.replay({"output_dir": "o", "fsdp": "full_shard",
                                                            "fsdp_config": {key: True}}).findings]
        said = f"{type(raised.value).__name__}: {raised.value}"
        assert any(said in message for message in messages), (said, messages)


@pytest.mark.parametrize("pin, replayed", [
    ("transformers==4.46.3\n", False), ("transformers>=4.41.2,<=4.46.1\n", False), ("transformers<5\n", False),
    ("transformers>=4.46\n", True), ("transformers==5.2.0\n", True), ("torch\n", True),
    ("transformers @ git+https://github.com/huggingface/transformers@v4.46.3\n", True),  # unknown: replayed
])
def test_a_project_on_transformers_4_gets_no_transformers_5_findings(tmp_path, pin, replayed):
    """LLaMA-Factory and axolotl pin transformers 4.x, whose Trainer reads `fsdp: full_shard auto_wrap` as its
    documented form with FSDP1: the 5.23 replay's deprecation warning and FSDP2 errors are not about it. One info
    says so (ACC050); an Accelerate YAML linted with those arguments gets no Trainer conflict either."""
    write(tmp_path, "requirements.txt", pin)
    write(tmp_path, "train.yaml", "output_dir: out\nfsdp: full_shard auto_wrap\nfsdp_config:\n  version: 2\n"
                                  "  sharding_strategy: HYBRID_SHARD\n")
    _, found = lint("train.yaml", "--show-info", cwd=tmp_path)
    codes = {f["code"] for f in found}
    if replayed:
        assert {"ACC049", "ACC041"} <= codes and "ACC050" not in codes, codes
    else:
        assert codes == {"ACC050"}, codes
        assert found[0]["line"] == 2 and pin.strip() in found[0]["message"]
    write(tmp_path, "accelerate_config.yaml", ACCELERATE_FSDP)
    write(tmp_path, "args.json", {"output_dir": "out", "fsdp": True, "gradient_checkpointing": True})
    _, found = lint("accelerate_config.yaml", "--training-args", "args.json", cwd=tmp_path)
    assert bool({f["code"] for f in found} & {"ACC045", "ACC049"}) == replayed


def test_one_pin_allowing_transformers_5_keeps_the_checks(tmp_path):
    """LLaMA-Factory's shape: pyproject.toml allows transformers 5.x, requirements/moss-vl.txt pins 4.57 for one
    optional model. The project may well run 5.x: the Trainer checks apply (ACC049 here), no ACC050."""
    write(tmp_path, "pyproject.toml", '[project]\nname = "x"\ndependencies = ["transformers>=4.55.0,<=5.8.0"]\n')
    write(tmp_path, "requirements/moss-vl.txt", "transformers==4.57.1\n")
    write(tmp_path, "train.yaml", "output_dir: out\nfsdp: [full_shard, auto_wrap]\n")
    _, found = lint("train.yaml", "--show-info", cwd=tmp_path)
    assert {f["code"] for f in found} == {"ACC049"}
    write(tmp_path, "pyproject.toml", '[project]\nname = "x"\ndependencies = ["transformers>=4.55.0,<5"]\n')
    _, found = lint("train.yaml", "--show-info", cwd=tmp_path)
    assert {f["code"] for f in found} == {"ACC050"}
