"""`dsconfig explain` as users run it: the table, the JSON, --set, --diff, and what it refuses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from dsconfig.cli import cli
from tests.conftest import modules_after

HERE = Path(__file__).resolve().parents[1] / "fixtures" / "explain"
DS_AUTO = str(HERE / "ds_auto.json")
ARGS = str(HERE / "training_args.json")
ZERO2 = str(HERE / "ds_zero2.json")
PLAIN = str(HERE / "ds_plain.json")
YAML_FILE = str(HERE / "accelerate_file.yaml")
YAML_INLINE = str(HERE / "accelerate_inline.yaml")


def run(*argv: str):
    result = CliRunner().invoke(cli, ["explain", *argv], catch_exceptions=False)
    return result.exit_code, result.output


def as_json(*argv: str) -> tuple[int, dict]:
    code, output = run(*argv, "--format", "json")
    return code, json.loads(output)


def row(output: str, key: str) -> str:
    """The table row of `key` and the struck-through lines under it."""
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.split(" = ")[0].strip() == key)
    block = [lines[start]]
    for line in lines[start + 1:]:
        if not line.startswith("    "):
            break
        block.append(line)
    return "\n".join(block)


def test_the_trainer_fills_auto_and_each_row_says_who():
    code, output = run(DS_AUTO, "--training-args", ARGS, "--world-size", "8", "--model", "llama-3-8b", "--color",
                       "never")
    assert code == 0
    batch = row(output, "train_batch_size")
    assert " = 256 " in batch
    assert "world_size 8 × per_device_train_batch_size 4 × gradient_accumulation_steps 8" in batch
    assert "training_args.json:3:34" in batch  # per_device_train_batch_size, where it is written
    assert '~~"auto"~~' in batch and "ds_auto.json:2:23" in batch  # what the JSON said, struck through
    assert " = 16777216 " in row(output, "zero_optimization.reduce_bucket_size")  # 4096², from --model
    assert " = 15099494 " in row(output, "zero_optimization.stage3_prefetch_bucket_size")  # int(0.9 × 4096²)
    assert " = 40960 " in row(output, "zero_optimization.stage3_param_persistence_threshold")
    assert " = 50 " in row(output, "scheduler.params.warmup_num_steps")  # ceil(500 × 0.1)
    steps = row(output, "steps_per_print")
    assert "Infinity" in steps and "~~10~~" in steps  # Accelerate's plugin overrides the JSON's 10
    assert "DeepSpeed 0.19.8's default" in row(output, "zero_optimization.allgather_bucket_size")


def test_json_output_has_the_documented_keys_and_sources():
    code, data = as_json(DS_AUTO, "--training-args", ARGS, "--world-size", "8")
    assert code == 0
    assert set(data) == {"context", "config", "received", "sources", "unresolved", "ignored", "failed", "findings"}
    assert data["config"]["train_batch_size"] == 256
    # what the Trainer hands to deepspeed.initialize: the file's keys filled, no DeepSpeed default added
    assert data["received"]["train_batch_size"] == 256 and "round_robin_gradients" not in data["received"][
        "zero_optimization"]
    assert set(data["received"]) == set(json.loads(Path(DS_AUTO).read_text())) | {"fp16"}
    assert data["config"]["steps_per_print"] == "Infinity"  # JSON holds no infinity: written as text
    source = data["sources"]["/train_micro_batch_size_per_gpu"]
    assert source["source"] == "trainer" and source["file"].endswith("training_args.json") and source["line"] == 3
    assert source["overridden"][0]["value"] == "auto" and source["overridden"][0]["line"] == 3
    written = data["sources"]["/zero_optimization/overlap_comm"]
    assert (written["source"], written["line"], written["column"]) == ("json", 9, 21)
    assert data["sources"]["/zero_optimization/round_robin_gradients"]["source"] == "default"
    # without --model the hidden-size fills stay open, and say what would close them
    assert "--model" in data["unresolved"]["/zero_optimization/reduce_bucket_size"]
    assert data["config"]["zero_optimization"]["reduce_bucket_size"] == "auto"


def test_without_a_step_count_the_scheduler_stays_unresolved(tmp_path):
    args = tmp_path / "args.json"
    args.write_text(json.dumps({"per_device_train_batch_size": 2}))
    code, data = as_json(DS_AUTO, "--training-args", str(args), "--world-size", "2")
    assert "max_steps" in data["unresolved"]["/scheduler/params/total_num_steps"]
    code, data = as_json(DS_AUTO, "--training-args", str(args), "--world-size", "2", "--dataset-size", "1000")
    assert "/scheduler/params/total_num_steps" not in data["unresolved"]
    assert data["config"]["scheduler"]["params"]["total_num_steps"] == 3 * 250  # 3 epochs × 1000 / (2 × 2)


def test_set_overrides_the_json_and_the_old_value_is_struck():
    code, data = as_json(PLAIN, "--world-size", "2", "--set", "zero_optimization.stage=1",
                         "--set", "zero_optimization.typo_key=null", "--set", "zero_optimization.typo_key=2")
    source = data["sources"]["/zero_optimization/stage"]
    assert data["config"]["zero_optimization"]["stage"] == 1
    assert source["source"] == "flag" and source["detail"] == "--set zero_optimization.stage=1"
    assert source["overridden"][0]["value"] == 2 and source["overridden"][0]["source"] == "json"


def test_accelerate_flags_win_over_the_yaml_and_json_concrete_values_win_over_both():
    code, data = as_json(ZERO2, YAML_FILE, "--set", "accelerate.zero_stage=3",
                         "--set", "accelerate.offload_optimizer_device=cpu")
    assert data["config"]["zero_optimization"]["stage"] == 3
    assert data["sources"]["/zero_optimization/stage"]["detail"] == "accelerate launch --zero_stage 3"
    assert data["context"]["world_size"] == 4  # num_processes of the YAML
    # a YAML value next to a concrete JSON value: Accelerate keeps the JSON's and says nothing
    code, output = run(PLAIN, YAML_INLINE, "--set", "accelerate.mixed_precision=fp16", "--color", "never")
    assert code == 1
    assert "When using `deepspeed_config_file`, the following accelerate config variables will be ignored" in output


def test_inline_yaml_builds_the_config():
    code, data = as_json(YAML_INLINE)
    assert data["config"]["zero_optimization"]["stage"] == 3
    assert data["config"]["zero_optimization"]["offload_optimizer"]["device"] == "cpu"
    assert data["config"]["gradient_accumulation_steps"] == 4
    origin = data["sources"]["/zero_optimization/stage"]
    assert (origin["source"], origin["detail"], origin["line"]) == ("yaml", "zero_stage", 4)
    assert data["config"]["bf16"]["enabled"] is True
    assert "DataLoader" in data["unresolved"]["/train_micro_batch_size_per_gpu"]


CLEAN = {"train_micro_batch_size_per_gpu": 8, "gradient_accumulation_steps": 2, "zero_optimization": {"stage": 2}}


def test_diff_against_another_release_shows_the_changed_default(tmp_path):
    clean = tmp_path / "clean.json"
    clean.write_text(json.dumps(CLEAN))
    code, output = run(str(clean), "--world-size", "2", "--diff", "deepspeed==0.19.2", "--color", "never")
    assert code == 1
    lines = output.splitlines()
    at = lines.index("gradient_clipping")  # 1.0 since DeepSpeed 0.19.3, 0.0 before
    assert lines[at + 1].split()[:2] == ["-", "1.0"] and lines[at + 2].split()[:2] == ["+", "0.0"]
    # a setting only the newer release has: one line, under the release that has it
    only = lines.index(f"Only in {clean} (DeepSpeed 0.19.8):")
    assert "  - zero_optimization.compute_grad_norm = true   DeepSpeed 0.19.8's default" in lines[only:]
    assert "zero_optimization.compute_grad_norm" not in lines


def test_diff_of_a_config_with_itself_is_empty():
    code, output = run(DS_AUTO, "--training-args", ARGS, "--world-size", "8", "--diff", DS_AUTO)
    assert code == 0 and "The two effective configs are the same." in output


def test_diff_against_another_file_in_json(tmp_path):
    clean, other = tmp_path / "clean.json", tmp_path / "other.json"
    clean.write_text(json.dumps(CLEAN))
    other.write_text(json.dumps(dict(CLEAN, zero_optimization={"stage": 3})))
    code, output = run(str(clean), "--world-size", "2", "--diff", str(other), "--format", "json")
    assert code == 1
    data = json.loads(output)
    changed = {row["pointer"]: (row["left"], row["right"]) for row in data["differences"]}
    assert changed["/zero_optimization/stage"] == (2, 3)
    assert changed["/zero_optimization/overlap_comm"] == (False, True)  # DeepSpeed's default follows the stage
    assert set(data) == {"left", "right", "differences"}


@pytest.mark.parametrize("argv, says", [
    (["missing.json"], "missing.json: no such file"),
    ([PLAIN, "--set", "novalue"], "--set 'novalue': write KEY=VALUE"),
    ([PLAIN, "--set", "accelerate.zero_stage=3"], "give the Accelerate YAML too"),
    ([PLAIN, "--world-size", "2", "--gpus", "2"], "give either --world-size or --gpus/--nodes"),
    ([], "give a ds_config.json, an Accelerate YAML, or both"),
    ([PLAIN, "--diff", "deepspeed==1.0"], "--diff: \"1.0\" is not a DeepSpeed version"),
    # --diff deepspeed== with no release after it (or every release: explain replays one) names --diff
    ([PLAIN, "--diff", "deepspeed=="], "--diff deepspeed==: give a release such as deepspeed==0.16.9"),
    ([PLAIN, "--diff", "deepspeed== "], "--diff deepspeed== : give a release such as deepspeed==0.16.9"),
    ([PLAIN, "--diff", "deepspeed==all"], "--diff deepspeed==all: give a release such as deepspeed==0.16.9"),
    ([PLAIN, "--deepspeed-version", ""], "--deepspeed-version: \"\" is not a DeepSpeed version"),
    ([PLAIN, "--deepspeed-version", "all"], "--deepspeed-version all is for lint; explain replays one release"),
    # --set through a value that is not an object: refused, not silently replaced by an object
    ([PLAIN, "--set", "train_micro_batch_size_per_gpu.x=1"],
     "--set train_micro_batch_size_per_gpu.x=1: train_micro_batch_size_per_gpu is 8, not an object"),
    ([PLAIN, "--set", "zero_optimization.stage.offload=true"],
     "--set zero_optimization.stage.offload=true: zero_optimization.stage is 2, not an object"),
    ([PLAIN, "--set", "zero_optimization=3", "--set", "zero_optimization.stage=2"],
     "--set zero_optimization.stage=2: zero_optimization is 3, not an object"),
    # accelerate launch flags and TrainingArguments fields are names: a dotted one would do nothing
    ([YAML_FILE, "--set", "accelerate.zero_stage.x=1"],
     "--set accelerate.zero_stage.x=1: an `accelerate launch` flag is one name"),
    ([PLAIN, "--set", "args.lr_scheduler_kwargs.power=2"],
     "--set args.lr_scheduler_kwargs.power=2: a TrainingArguments field is one name"),
    ([PLAIN, "--dataset-size", "1" + "0" * 20], "--dataset-size"),
])
def test_usage_errors_are_one_line_and_exit_2(argv, says):
    code, output = run(*argv)
    assert code == 2
    assert says in output


def test_set_through_a_missing_or_null_key_makes_the_object(tmp_path):
    """Only a value on the way is refused: a key that is absent or null is made an object, as before."""
    config = tmp_path / "ds_config.json"
    config.write_text(json.dumps({"train_micro_batch_size_per_gpu": 8, "zero_optimization": None}))
    code, data = as_json(str(config), "--set", "zero_optimization.stage=2", "--set", "fp16.enabled=true")
    assert code in (0, 1)
    assert data["received"]["zero_optimization"]["stage"] == 2 and data["received"]["fp16"]["enabled"] is True


def test_a_broken_file_names_its_line_and_column(tmp_path):
    broken = tmp_path / "broken.json"
    broken.write_text('{\n  "train_batch_size": 8,\n  "zero_optimization": {"stage": 3,,}\n}\n')
    proc = subprocess.run([sys.executable, "-m", "dsconfig", "explain", str(broken), "--target", "hf-trainer"],
                          capture_output=True, text=True, cwd=os.getcwd(), check=False)
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"dsconfig: error: {broken}:3:")
    assert len(proc.stderr.splitlines()) == 1 and "Traceback" not in proc.stderr


def test_a_yaml_that_launches_neither_deepspeed_nor_fsdp_is_refused(tmp_path):
    multi = tmp_path / "multi_gpu.yaml"
    multi.write_text("distributed_type: MULTI_GPU\nnum_processes: 2\n")
    code, output = run(str(multi))
    assert code == 2 and "neither DEEPSPEED nor FSDP: nothing to explain" in output


def test_explain_imports_neither_torch_nor_deepspeed_nor_accelerate():
    loaded = modules_after(["explain", DS_AUTO, "--training-args", ARGS, "--world-size", "8"], os.getcwd())
    assert not {"torch", "deepspeed", "accelerate", "transformers"} & loaded


@pytest.mark.parametrize("document", ["docs/explain.md", "README.md"])
def test_the_examples_in_the_docs_are_real(document, monkeypatch):
    """The first `dsconfig explain` console block of each document: the command as written, and each line it
    shows ("..." stands for lines left out) in the real output, in order."""
    root = Path(__file__).resolve().parents[2]
    text = (root / document).read_text(encoding="utf-8")
    console = text.split("```console\n$ dsconfig explain ", 1)[1].split("```")[0]
    console = "$ dsconfig explain " + console
    command, *shown = console.rstrip("\n").split("\n")
    argv = command.removeprefix("$ dsconfig explain ").split()
    monkeypatch.chdir(root)  # the paths are the repository's
    code, output = run(*argv)
    assert code == 0
    lines = output.splitlines()
    at = 0
    for line in shown:
        if line == "...":
            continue
        assert line in lines[at:], line
        at = lines.index(line, at) + 1


def test_a_yaml_naming_a_missing_json_says_where_and_what_to_do(tmp_path):
    yaml_path = tmp_path / "accelerate.yaml"
    yaml_path.write_text("distributed_type: DEEPSPEED\ndeepspeed_config:\n  deepspeed_config_file: configs/ds.json\n"
                         "num_processes: 2\n")
    code, output = run(str(yaml_path))
    assert code == 2
    assert f"{yaml_path}:3:26: deepspeed_config_file configs/ds.json: no such file" in output
    assert f"give the JSON too: dsconfig explain ds_config.json {yaml_path}" in output
    # given as the command says, the JSON is explained; lint still reports the launch failing on the missing file
    (tmp_path / "mine.json").write_text(json.dumps(CLEAN))
    code, output = run(str(tmp_path / "mine.json"), str(yaml_path), "--color", "never")
    assert code == 1 and " = 2 " in row(output, "zero_optimization.stage") and "error ACC020" in output
