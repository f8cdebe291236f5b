"""The command line as a user and a CI step meet it: output shapes, exit codes, the seed cases."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import click
import pytest
from click.testing import CliRunner

from dsconfig.cli import cli
from tests.hostile_cases import environment

JSON_KEYS = {"code", "name", "severity", "message", "file", "line", "column", "pointer", "world_size",
             "fails_in", "fix"}


def run(*args, files=None, tmp_path=None):
    runner = CliRunner()
    result = runner.invoke(cli, ["lint", *args], catch_exceptions=False)
    return result


def write(tmp_path, name, content):
    path = tmp_path / name
    path.write_text(content if isinstance(content, str) else json.dumps(content, indent=2))
    return str(path)


def findings(tmp_path, content, *args, name="ds_config.json"):
    path = write(tmp_path, name, content)
    result = run(path, "--format", "json", *args)
    return result.exit_code, json.loads(result.stdout)


def codes(items):
    return [item["code"] for item in items]


def test_clean_config_exits_zero(tmp_path):
    status, items = findings(tmp_path, {"train_batch_size": 64, "train_micro_batch_size_per_gpu": 32,
                                        "gradient_accumulation_steps": 1, "gradient_clipping": 1.0,
                                        "zero_optimization": {"stage": 2}}, "--world-size", "2")
    assert status == 0
    assert items == []


def test_json_output_has_exactly_the_documented_keys(tmp_path):
    status, items = findings(tmp_path, {"train_batch_size": 10, "train_micro_batch_size_per_gpu": 4,
                                        "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "CPU"}}},
                             "--world-size", "4")
    assert status == 1
    # DeepSpeed findings also say which release was replayed (the installed one here)
    assert items and all(set(item) == JSON_KEYS | {"deepspeed_version"} for item in items)
    assert {item["deepspeed_version"] for item in items} == {"0.19.8"}
    assert all(item["severity"] in ("error", "warning", "info") for item in items)
    assert all(item["fails_in"] in ("load", "parse", "initialize", None) for item in items)
    device = next(item for item in items if item["pointer"] == "/zero_optimization/offload_optimizer/device")
    assert device["code"] == "DS103" and device["fails_in"] == "parse" and device["fix"] == '"cpu"'
    assert device["line"] > 1 and device["column"] > 1


def test_concise_format_is_path_line_col_severity_code_message(tmp_path):
    path = write(tmp_path, "ds_config.json", '{\n  "train_batch_size": 8,\n  "fp16": {"enabled": true},\n'
                                             '  "bf16": {"enabled": true}\n}\n')
    result = run(path)
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert lines, result.output
    pattern = re.compile(rf"^{re.escape(path)}:\d+:\d+: (error|warning|info) DS\d{{3}} .+")
    assert all(pattern.match(line) for line in lines), lines
    assert any(": error DS400 " in line and line.startswith((f"{path}:3:", f"{path}:4:")) for line in lines), lines


def test_usage_errors_exit_two_without_traceback(tmp_path):
    result = run(str(tmp_path / "missing.json"))
    assert result.exit_code == 2
    assert "no such file" in result.output and "Traceback" not in result.output
    path = write(tmp_path, "ds_config.json", {"train_batch_size": 8})
    for bad in ("0", "x", "2,-1"):
        result = run(path, "--world-size", bad)
        assert result.exit_code == 2 and "Traceback" not in result.output
    assert run(path, "--world-size", "2", "--gpus", "2").exit_code == 2


def test_gpus_and_nodes_give_the_world_size(tmp_path):
    config = {"train_batch_size": 64, "train_micro_batch_size_per_gpu": 8, "gradient_accumulation_steps": 1}
    status, items = findings(tmp_path, config, "--gpus", "4", "--nodes", "2")
    assert status == 0 and "DS202" not in codes(items)
    status, items = findings(tmp_path, config, "--gpus", "4")
    assert status == 1 and [i["world_size"] for i in items if i["code"] == "DS202"] == [4]


# -- the seed cases ----------------------------------------------------------------------------

def test_global_64_is_clean_on_two_gpus_and_corrected_on_four(tmp_path):
    config = {"train_batch_size": 64, "train_micro_batch_size_per_gpu": 32, "gradient_accumulation_steps": 1}
    status, items = findings(tmp_path, config, "--world-size", "2")
    assert status == 0 and "DS202" not in codes(items)
    status, items = findings(tmp_path, config, "--world-size", "1,2,4,8")
    mismatches = [i for i in items if i["code"] == "DS202"]
    assert sorted(i["world_size"] for i in mismatches) == [1, 4, 8]
    at4 = next(i for i in mismatches if i["world_size"] == 4)
    assert "64 != 32 * 1 * 4" in at4["message"]  # DeepSpeed's own words
    assert at4["pointer"] == "/train_micro_batch_size_per_gpu" and at4["fix"] == "16"
    assert at4["fails_in"] == "parse"


def test_global_batch_of_six_over_four_gpus(tmp_path):
    status, items = findings(tmp_path, {"train_batch_size": 6}, "--world-size", "4")
    mismatch = next(i for i in items if i["code"] == "DS202")
    assert "do not split evenly over 4 GPUs" in mismatch["message"] and "1 sample" in mismatch["message"]
    assert mismatch["fix"] in ("4", "8")
    assert status == 1


def test_without_world_size_only_impossible_batches_are_errors(tmp_path):
    status, items = findings(tmp_path, {"train_batch_size": 30, "train_micro_batch_size_per_gpu": 4,
                                        "gradient_accumulation_steps": 4})
    assert "DS203" in codes(items) and status == 1
    status, items = findings(tmp_path, {"train_batch_size": 64, "train_micro_batch_size_per_gpu": 8}, "--show-info")
    info = next(i for i in items if i["code"] == "DS204")
    assert "1, 2, 4, 8" in info["message"] and info["severity"] == "info" and status == 0


@pytest.mark.parametrize("value,fix,fatal", [(7.5, None, False), ("8", "8", True), (True, "1", False),
                                             (0, None, True), (-4, None, True)])
def test_batch_values_must_be_positive_integers(tmp_path, value, fix, fatal):
    status, items = findings(tmp_path, {"train_batch_size": 16, "train_micro_batch_size_per_gpu": value})
    item = next(i for i in items if i["code"] == "DS201")
    assert item["fix"] == fix
    assert (item["fails_in"] == "parse") == fatal
    assert status == 1


def test_integral_float_is_reported_although_hjson_reads_an_int(tmp_path):
    status, items = findings(tmp_path, '{"train_batch_size": 7.0}')
    item = next(i for i in items if i["code"] == "DS201")
    assert item["fix"] == "7" and item["fails_in"] is None


def test_micro_batch_of_one_gets_a_batchnorm_note(tmp_path):
    status, items = findings(tmp_path, {"train_micro_batch_size_per_gpu": 1}, "--show-info")
    assert [i["severity"] for i in items if i["code"] == "DS205"] == ["info"]


# -- targets, syntax, files ----------------------------------------------------------------------

def test_auto_means_hf_trainer_by_default_and_breaks_plain_deepspeed(tmp_path):
    config = {"train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto",
              "zero_optimization": {"stage": "auto"}, "bf16": {"enabled": "auto"}}
    status, items = findings(tmp_path, config)
    assert status == 0 and not [i for i in items if i["severity"] == "error"]
    status, items = findings(tmp_path, config, "--target", "deepspeed")
    assert status == 1
    assert {i["pointer"] for i in items if i["code"] == "DS700" and i["fails_in"] == "parse"} >= {
        "/train_batch_size", "/train_micro_batch_size_per_gpu"}
    assert any(i["code"] == "DS312" and "ZeRO disabled" in i["message"] for i in items)
    assert any(i["code"] == "DS107" and i["pointer"] == "/bf16/enabled" for i in items)


def test_hjson_syntax_depends_on_the_target(tmp_path):
    text = '{\n  // global batch\n  "train_batch_size": 8,\n}\n'
    status, items = findings(tmp_path, text)
    assert codes(items).count("DS002") == 2 and status == 0
    status, items = findings(tmp_path, text, "--target", "hf-trainer")
    error = next(i for i in items if i["code"] == "DS000")
    assert error["fails_in"] == "load" and error["line"] == 2 and status == 1


def test_duplicate_keys(tmp_path):
    text = '{"train_batch_size": 8, "zero_optimization": {"stage": 2, "stage": 3}}'
    status, items = findings(tmp_path, text)
    dup = next(i for i in items if i["code"] == "DS001")
    assert dup["fails_in"] == "load" and dup["line"] == 1 and dup["column"] == text.rindex('"stage"') + 1
    status, items = findings(tmp_path, text, "--target", "hf-trainer")
    assert next(i for i in items if i["code"] == "DS001")["fails_in"] is None


def test_other_json_files_are_skipped_but_training_configs_checked(tmp_path):
    status, items = findings(tmp_path, {"name": "my-app", "version": "1.0.0"}, name="package.json")
    assert codes(items) == ["DS005"] and status == 0
    status, items = findings(tmp_path, {"train": {"batch_size": 7.0}}, name="train.json")
    assert codes(items) == ["DS006"] and items[0]["fix"] == "7" and status == 1
    assert items[0]["pointer"] == "/train/batch_size"


def test_training_arguments_file_is_not_a_deepspeed_config(tmp_path):
    args = {"per_device_train_batch_size": 8, "gradient_accumulation_steps": 4, "learning_rate": 1e-4,
            "output_dir": "out", "fp16": True, "deepspeed": "ds_config.json"}
    status, items = findings(tmp_path, args, name="train_config.json")
    assert codes(items) == [] and status == 0  # a training config: its batch size is fine, no DeepSpeed rule applies


def test_folder_is_walked(tmp_path):
    (tmp_path / "configs").mkdir()
    write(tmp_path / "configs", "ds_z2.json", {"train_batch_size": 8, "zero_optimization": {"stage": 5}})
    write(tmp_path / "configs", "notes.txt", "not linted")
    result = run(str(tmp_path), "--format", "json")
    items = json.loads(result.stdout)
    assert {i["code"] for i in items} >= {"DS103"} and result.exit_code == 1
    assert all(i["file"].endswith("ds_z2.json") for i in items)


def test_python_dash_m_and_console_script_entry_point(tmp_path):
    path = write(tmp_path, "ds_config.json", {"train_batch_size": 8})
    result = subprocess.run([sys.executable, "-m", "dsconfig", "lint", path], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "file" in result.stderr  # the summary goes to stderr, findings to stdout


def test_dataset_size_adds_steps_per_epoch_for_each_world_size(tmp_path):
    config = {"train_micro_batch_size_per_gpu": 8, "gradient_accumulation_steps": 2,
              "zero_optimization": {"stage": 2}, "gradient_clipping": 1.0}
    status, items = findings(tmp_path, config, "--dataset-size", "10000", "--world-size", "1,2,4",
                              "--show-info")
    table = [i for i in items if i["code"] == "DS705"]
    assert [i["world_size"] for i in table] == [1, 2, 4] and status == 0
    # 10000 samples, 8 per GPU per micro step, 2 micro steps per optimizer step: 625 steps on one GPU
    assert "625" in table[0]["message"]


def test_training_args_mismatch_quotes_the_trainer(tmp_path):
    config = {"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 4, "train_batch_size": "auto",
              "zero_optimization": {"stage": 2}}
    args = write(tmp_path, "args.json", {"per_device_train_batch_size": 4, "gradient_accumulation_steps": 8})
    status, items = findings(tmp_path, config, "--training-args", args, "--world-size", "2")
    mismatch = next(i for i in items if i["code"] == "DS703")
    assert "- ds gradient_accumulation_steps=4 vs hf gradient_accumulation_steps=8" in mismatch["message"]
    assert mismatch["pointer"] == "/gradient_accumulation_steps" and status == 1
    bad = write(tmp_path, "bad.json", "{not json")
    result = run(write(tmp_path, "ds_config.json", config), "--training-args", bad)
    assert result.exit_code == 2 and "Traceback" not in result.output


@pytest.mark.parametrize("module, name", [("dsconfig.deepspeed.initialize", "CHECKS"),
                                          ("dsconfig.deepspeed.models", "_check_pydantic_sections")])
def test_a_crashing_check_is_an_internal_error_naming_the_file(tmp_path, monkeypatch, module, name):
    """A bug in a check is never a silently shorter list of findings: one line naming the file, exit 2."""
    import importlib

    def crash(*args):
        raise KeyError("boom")

    target = importlib.import_module(module)
    monkeypatch.setattr(target, name, (crash,) if name == "CHECKS" else crash)
    path = write(tmp_path, "ds_config.json", {"train_batch_size": 8, "zero_optimization": {"stage": 2}})
    result = CliRunner().invoke(cli, ["lint", "--no-config", path])
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert result.stderr == ("no problems in 0 files; 1 file not checked (an internal error, below)\n"
                             f"dsconfig: internal error: {path}: KeyError: 'boom': this file was not checked (please "
                             "report this with the file that caused it)\n")


def test_a_crash_in_one_file_does_not_hide_the_others(tmp_path, monkeypatch):
    """A walk over a repository: the file whose check crashed is reported as not checked (exit 2), and every other
    file's findings are still reported."""
    from dsconfig.deepspeed import models
    real = models._check_pydantic_sections

    def crash_on_one(*args, **kwargs):
        if any("boom" in str(arg) for arg in args):
            raise KeyError("boom")
        return real(*args, **kwargs)

    monkeypatch.setattr(models, "_check_pydantic_sections", crash_on_one)
    write(tmp_path, "a_ds_config.json", {"train_batch_size": 8.0})
    write(tmp_path, "b_ds_config.json", {"train_batch_size": 8, "zero_optimization": {"stage": 2, "boom": 1}})
    write(tmp_path, "c_ds_config.json", {"train_batch_size": 8, "zero_optimization": {"stage": "2"}})
    result = CliRunner().invoke(cli, ["lint", "--no-config", "--show-info", str(tmp_path)])
    assert result.exit_code == 2, result.output
    assert "a_ds_config.json:1:" in result.stdout and "c_ds_config.json:1:" in result.stdout
    assert "b_ds_config.json" not in result.stdout
    assert "1 file not checked" in result.stderr
    assert f"internal error: {tmp_path / 'b_ds_config.json'}: KeyError" in result.stderr


# -- whatever breaks: one line, exit 2 ----------------------------------------------------------------------


@click.command()
def _broken():
    raise RuntimeError("bad\n::error::forged \x1b[31m\udcff")


def test_any_exception_is_one_escaped_line_and_exit_two(capsys, monkeypatch):
    """An exception a command does not handle (in any subcommand): never a traceback, never exit 1 (which CI
    reads as "findings"), and its text cannot forge a line of its own."""
    from dsconfig.cli import run

    monkeypatch.setattr(sys, "argv", ["dsconfig"])
    with pytest.raises(SystemExit) as exited:
        run(_broken, "dsconfig")
    assert exited.value.code == 2
    assert capsys.readouterr().err == ("dsconfig: internal error: RuntimeError: bad\\n::error::forged \\x1b[31m\\udcff "
                                       "(please report this)\n")


@pytest.mark.parametrize("args, code, shown", [(["--help"], 0, "Usage: dsconfig"), (["-V"], 0, "version"),
                                               (["lint", "--target"], 2, "requires an argument"),
                                               (["nosuch"], 2, "No such command")])
def test_run_keeps_clicks_exit_codes(args, code, shown, capsys, monkeypatch):
    from dsconfig.cli import run

    monkeypatch.setattr(sys, "argv", ["dsconfig", *args])
    with pytest.raises(SystemExit) as exited:
        run(cli, "dsconfig")
    assert exited.value.code == code
    assert shown in "".join(capsys.readouterr())


def test_usage_errors_quoting_user_text_stay_one_line_each(tmp_path):
    """click's own messages go through the same escaping: a selector holding a newline is one line."""
    result = subprocess.run([sys.executable, "-m", "dsconfig", "lint", "--ignore", "x\n::error::forged", "a.json"],
                            capture_output=True, text=True, cwd=tmp_path, env=environment(), check=False)
    assert result.returncode == 2
    assert "unknown rule selector `x\\n::error::forged`" in result.stderr
    assert not any(line.lstrip().startswith("::") for line in result.stderr.split("\n"))


def test_whole_number_floats_in_the_hf_docs_config_do_not_fail_a_warning_gate(tmp_path):
    """The HF docs' ZeRO-3 config writes 1e9 for integer settings: DS112 information, not a DS106 warning."""
    config = {"zero_optimization": {"stage": 3, "sub_group_size": 1e9, "stage3_max_live_parameters": 1e9,
                                    "stage3_max_reuse_distance": 1e9, "reduce_bucket_size": "auto"},
              "train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto",
              "gradient_clipping": "auto", "train_batch_size": "auto", "bf16": {"enabled": "auto"}}
    path = write(tmp_path, "ds_config.json", config)  # json.dumps writes 1e9 as 1000000000.0
    result = run(path, "--target", "hf-trainer", "--fail-on", "warning", "--format", "json",
                 "--show-info")
    assert result.exit_code == 0, result.stdout
    reported = json.loads(result.stdout)
    assert codes(reported).count("DS112") == 3 and "DS106" not in codes(reported)
    assert {item["severity"] for item in reported if item["code"] == "DS112"} == {"info"}
    # A string where DeepSpeed wants a number is still a warning: other readers do not convert it.
    config["zero_optimization"]["stage"] = "3"
    result = run(write(tmp_path, "ds_config.json", config), "--target", "hf-trainer", "--fail-on", "warning")
    assert result.exit_code == 1 and "DS106" in result.stdout


def test_a_mistyped_command_gets_a_did_you_mean(capsys, monkeypatch):
    from dsconfig.cli import run

    monkeypatch.setattr(sys, "argv", ["dsconfig", "lnit", "ds_config.json"])
    with pytest.raises(SystemExit) as exited:
        run(cli, "dsconfig")
    assert exited.value.code == 2
    assert "No such command 'lnit'. Did you mean 'lint'?" in capsys.readouterr().err


def test_lint_without_paths_lints_the_current_folder(tmp_path, monkeypatch):
    write(tmp_path, "ds_config.json", {"train_micro_batch_size_per_gpu": 4.0, "gradient_clipping": 1.0})
    monkeypatch.chdir(tmp_path)
    result = run("--format", "json")
    assert result.exit_code == 1  # DS201 is an error
    assert [(item["code"], os.path.basename(item["file"])) for item in json.loads(result.stdout)] == \
        [("DS201", "ds_config.json")]


def test_a_missing_path_is_reported_after_the_others_are_linted(tmp_path):
    present = write(tmp_path, "ds_config.json", {"train_batch_size": 8, "train_micro_batch_size_per_gpu": 3,
                                                  "gradient_clipping": 1.0})
    missing = str(tmp_path / "missing.json")
    result = subprocess.run([sys.executable, "-m", "dsconfig", "lint", missing, present, str(tmp_path / "no*.json")],
                            capture_output=True, text=True)
    assert result.returncode == 2  # a usage error wins over the findings
    assert "DS20" in result.stdout and present in result.stdout  # the present file was linted
    assert result.stderr.splitlines()[-2:] == [f"dsconfig: error: {missing}: no such file or directory",
                                               f"dsconfig: error: {tmp_path}/no*.json: no file matches this pattern"]
    alone = subprocess.run([sys.executable, "-m", "dsconfig", "lint", missing], capture_output=True, text=True)
    assert alone.returncode == 2 and alone.stdout == ""
    assert alone.stderr == f"dsconfig: error: {missing}: no such file or directory\n"


def test_a_folder_walk_counts_the_files_that_are_no_configs_instead_of_listing_them(tmp_path):
    write(tmp_path, "ds_config.json", {"train_micro_batch_size_per_gpu": 4, "gradient_clipping": 1.0})
    write(tmp_path, "package.json", {"name": "web", "version": "1.0.0"})
    write(tmp_path, "tsconfig.json", {"compilerOptions": {"strict": True}})
    walked = subprocess.run([sys.executable, "-m", "dsconfig", "lint", str(tmp_path)], capture_output=True, text=True)
    assert walked.returncode == 0 and "DS005" not in walked.stdout
    assert "in 1 file" in walked.stderr and "2 other files skipped" in walked.stderr
    listed = run(str(tmp_path), "--show-skipped", "--format", "json")
    assert sorted(os.path.basename(item["file"]) for item in json.loads(listed.stdout)
                  if item["code"] == "DS005") == ["package.json", "tsconfig.json"]
    named = run(str(tmp_path / "package.json"), "--format", "json")  # a file the user names is still told about
    assert codes(json.loads(named.stdout)) == ["DS005"]


def test_infos_are_opt_in(tmp_path):
    """As in cfn-lint: errors and warnings by default, infos counted; --show-info, a select naming the rule or
    --fail-on info shows them, and --fix fixes only what is reported."""
    config = {"train_batch_size": 64, "train_micro_batch_size_per_gpu": 8}  # DS204 and DS509, both infos
    path = write(tmp_path, "ds_config.json", config)
    quiet = run("--no-config", path)
    assert quiet.exit_code == 0 and quiet.stdout == ""
    assert "no problems in 1 file" in quiet.stderr and "2 infos not shown (--show-info shows them)" in quiet.stderr
    shown = run("--no-config", "--show-info", path)
    assert {line.split()[2] for line in shown.stdout.splitlines()} == {"DS204", "DS509"}
    assert "not shown" not in shown.stderr
    for named in ("DS204", "batch-world-sizes"):  # by code or name; a prefix selects rules, not their infos
        selected = run("--no-config", "--select", named, "--select", "DS", path)
        assert [line.split()[2] for line in selected.stdout.splitlines()] == ["DS204"]
    assert run("--no-config", "--select", "DS", path).stdout == ""
    gate = run("--no-config", "--fail-on", "info", path)
    assert gate.exit_code == 1 and len(gate.stdout.splitlines()) == 2
    before = open(path).read()
    fixed = run("--no-config", "--fix", "--unsafe-fixes", path)
    assert fixed.exit_code == 0 and open(path).read() == before  # nothing reported, nothing changed
