"""`dsconfig.check`: the findings `dsconfig lint --no-config` reports for the same file and options, every
accepted input form, the errors it raises, and that `import dsconfig` stays free."""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest
from click.testing import CliRunner

import dsconfig
from dsconfig import targets
from dsconfig.cli import cli
from tests.hostile_cases import environment

CORPUS = pathlib.Path(__file__).parent / "fixtures" / "corpus"
HEAVY = ("torch", "deepspeed", "accelerate", "transformers")
AUTO_BATCH = {"train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto",
              "gradient_accumulation_steps": "auto", "zero_optimization": {"stage": 2}}


def lint_json(*args) -> list[dict]:
    """`dsconfig lint --no-config --format json ARGS`: each finding's public keys."""
    result = CliRunner().invoke(cli, ["lint", "--no-config", "--format", "json", *args], catch_exceptions=False)
    assert result.exit_code in (0, 1), result.output
    return [{key: item[key] for key in dsconfig.Finding._fields} for item in json.loads(result.stdout)]


def as_dicts(findings) -> list[dict]:
    return [finding._asdict() for finding in findings]


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A scratch folder as the working directory, holding copies of the corpus files the tests name."""
    for name in ("ds_zero3_trainer_auto.json", "accelerate_deepspeed_config_file.yaml", "ds_global_batch_12.json",
                 "sft_recipe.json", "ds_hjson_comments_trailing_commas.json"):
        shutil.copy(CORPUS / name, tmp_path / name)
    (tmp_path / "args.json").write_text(json.dumps({"per_device_train_batch_size": 4,
                                                    "gradient_accumulation_steps": 2, "bf16": True}))
    monkeypatch.chdir(tmp_path)
    return tmp_path


# -- the same findings as lint ----------------------------------------------------------------------------


@pytest.mark.parametrize("path, kwargs, flags", [
    ("ds_global_batch_12.json", {"world_size": [1, 2, 4, 8]}, ["--world-size", "1,2,4,8"]),
    ("ds_zero3_trainer_auto.json", {"world_size": 8, "target": "hf-trainer", "training_args": "args.json"},
     ["--world-size", "8", "--target", "hf-trainer", "--training-args", "args.json"]),
    ("ds_zero3_trainer_auto.json", {"world_size": 4, "dataset_size": 1000, "training_args": "args.json"},
     ["--world-size", "4", "--dataset-size", "1000", "--training-args", "args.json"]),
    ("accelerate_deepspeed_config_file.yaml", {}, []),  # the YAML and the ds_config.json it names
    ("sft_recipe.json", {"world_size": 4}, ["--world-size", "4"]),  # a training config
    ("ds_hjson_comments_trailing_commas.json", {"target": "deepspeed"}, ["--target", "deepspeed"]),
    ("ds_global_batch_12.json", {"world_size": 5, "deepspeed_version": "0.16.9"},
     ["--world-size", "5", "--deepspeed-version", "0.16.9"]),
])
def test_findings_are_lints(project, path, kwargs, flags):
    expected = lint_json(path, *flags)
    assert expected, "each case has findings, so the comparison means something"
    assert as_dicts(dsconfig.check(path, **kwargs)) == expected


def test_a_dict_is_linted_as_the_same_json_in_a_file(project):
    config = {"train_batch_size": 12, "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 2,
              "zero_optimization": {"stage": 3, "offload_param": {"device": "cpu"}}}
    (project / "ds_config.json").write_text(json.dumps(config, indent=2))
    expected = lint_json("ds_config.json", "--world-size", "2,4")
    found = as_dicts(dsconfig.check(config, world_size=(2, 4)))
    assert {f["file"] for f in found} == {"<dict>"}
    assert [{**f, "file": "ds_config.json"} for f in found] == expected
    assert any(f["code"] == "DS202" and f["world_size"] == 4 for f in found)


def test_a_dict_with_auto_is_checked_for_the_hf_trainer_as_lint_infers(project):
    inferred = dsconfig.check(AUTO_BATCH, world_size=8)
    assert as_dicts(inferred) == as_dicts(dsconfig.check(AUTO_BATCH, world_size=8, target="hf-trainer"))
    assert "DS704" in {f.code for f in inferred}  # the Trainer fills the "auto" values
    plain = dsconfig.check(AUTO_BATCH, world_size=8, target=targets.DEEPSPEED)
    assert "DS704" not in {f.code for f in plain}
    assert any(f.severity == "error" and f.pointer == "/train_batch_size" for f in plain)  # DeepSpeed reads "auto"


def test_path_forms_and_target_forms_agree(project):
    by_str = dsconfig.check("ds_zero3_trainer_auto.json", world_size=8, target="hf-trainer")
    assert dsconfig.check(pathlib.Path("ds_zero3_trainer_auto.json"), world_size=[8],
                          target=targets.HF_TRAINER) == by_str


def test_world_sizes_int_sequence_and_repeats(project):
    one = dsconfig.check("ds_global_batch_12.json", world_size=5)
    assert {f.world_size for f in one if f.code == "DS202"} == {5}
    many = dsconfig.check("ds_global_batch_12.json", world_size=range(5, 9))
    assert {f.world_size for f in many if f.code == "DS202"} == {5, 7, 8}  # 12 is divisible at 6 only
    assert dsconfig.check("ds_global_batch_12.json", world_size=[5, 5, 7]) == \
        dsconfig.check("ds_global_batch_12.json", world_size=(5, 7))
    numpy = pytest.importorskip("numpy")  # an integer that is no int, as a script computes it
    assert dsconfig.check("ds_global_batch_12.json", world_size=numpy.int64(5)) == one
    assert dsconfig.check("ds_global_batch_12.json", world_size=numpy.arange(5, 9)) == many


# -- training arguments -----------------------------------------------------------------------------------


CONFLICT = {"train_batch_size": 32, "train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto",
            "zero_optimization": {"stage": 2}}


def test_training_args_forms_give_the_same_findings(project):
    (project / "args.yaml").write_text("per_device_train_batch_size: 4\ngradient_accumulation_steps: 2\nbf16: true\n")
    values = {"per_device_train_batch_size": 4, "gradient_accumulation_steps": 2, "bf16": True}
    from_dict = dsconfig.check(CONFLICT, world_size=8, training_args=values)
    assert dsconfig.check(CONFLICT, world_size=8, training_args="args.json") == from_dict
    assert dsconfig.check(CONFLICT, world_size=8, training_args=project / "args.yaml") == from_dict
    # 4 per device × 2 steps × 8 GPUs is 64, not the 32 written: the Trainer refuses it
    assert any(f.severity == "error" and "64" in f.message for f in from_dict), from_dict
    assert from_dict != dsconfig.check(CONFLICT, world_size=8)


def test_a_real_training_arguments_object(project):
    transformers = pytest.importorskip("transformers")
    args = transformers.TrainingArguments(output_dir=str(project / "out"), use_cpu=True, report_to=[],
                                          per_device_train_batch_size=4, gradient_accumulation_steps=2)
    (project / "real_args.json").write_text(json.dumps(args.to_dict()))
    found = dsconfig.check(CONFLICT, world_size=8, training_args=args)
    (project / "ds_config.json").write_text(json.dumps(CONFLICT, indent=2))
    expected = lint_json("ds_config.json", "--world-size", "8", "--training-args", "real_args.json")
    assert [{**f, "file": "ds_config.json"} for f in as_dicts(found)] == expected
    assert any(f.severity == "error" and "64" in f.message for f in found), found


def test_a_dataclass_without_to_dict_is_read_by_its_fields(project):
    @dataclasses.dataclass
    class Arguments:
        per_device_train_batch_size: int = 4
        gradient_accumulation_steps: int = 2

    assert dsconfig.check(CONFLICT, world_size=8, training_args=Arguments()) == \
        dsconfig.check(CONFLICT, world_size=8, training_args={"per_device_train_batch_size": 4,
                                                              "gradient_accumulation_steps": 2})


# -- raising ---------------------------------------------------------------------------------------------


def test_raise_on_error_says_lints_error_lines(project):
    result = CliRunner().invoke(cli, ["lint", "--no-config", "ds_global_batch_12.json", "--world-size", "5,8"])
    lint_errors = [line.replace(" [*]", "") for line in result.stdout.splitlines() if " error " in line]
    assert len(lint_errors) == 2
    with pytest.raises(dsconfig.ConfigError) as raised:
        dsconfig.check("ds_global_batch_12.json", world_size=[5, 8], raise_on_error=True)
    assert str(raised.value).splitlines() == lint_errors
    assert raised.value.findings == dsconfig.check("ds_global_batch_12.json", world_size=[5, 8])


def test_no_raise_without_errors_or_without_the_flag(project):
    found = dsconfig.check("ds_hjson_comments_trailing_commas.json", raise_on_error=True)
    assert {f.severity for f in found} == {"warning"}
    errors = dsconfig.check("ds_global_batch_12.json", world_size=5)
    assert any(f.severity == "error" for f in errors)


def test_findings_are_immutable_values(project):
    finding = dsconfig.check("ds_global_batch_12.json", world_size=5)[0]
    with pytest.raises(AttributeError):
        finding.severity = "info"
    assert hash(finding) == hash(dsconfig.Finding(*finding))
    assert str(finding).startswith(f"ds_global_batch_12.json:{finding.line}:{finding.column}: {finding.severity} "
                                   f"{finding.code} ")


# -- bad arguments: one clear line, never a traceback from inside ----------------------------------------


@pytest.mark.parametrize("config, kwargs, error, says", [
    ("missing.json", {}, FileNotFoundError, "missing.json: no such file or directory"),
    (".", {}, IsADirectoryError, ".: is a folder"),
    (42, {}, TypeError, "config must be a path (str or os.PathLike) or a dict, not int"),
    (b"ds.json", {}, TypeError, "not bytes"),
    ({"a": {1, 2}}, {}, TypeError, "config dict: not JSON data: Object of type set is not JSON serializable"),
    (AUTO_BATCH, {"world_size": "8"}, TypeError, "world_size must be an int or a sequence of ints, not str"),
    (AUTO_BATCH, {"world_size": 0}, ValueError, "world_size must be at least 1, not 0"),
    (AUTO_BATCH, {"world_size": []}, ValueError, "world_size: an empty sequence"),
    (AUTO_BATCH, {"world_size": [8, True]}, TypeError, "world_size must hold ints, not bool"),
    (AUTO_BATCH, {"world_size": [8, 2.0]}, TypeError, "world_size must hold ints, not float (2.0)"),
    (AUTO_BATCH, {"world_size": True}, TypeError, "world_size must hold ints, not bool"),
    (AUTO_BATCH, {"target": "trainer"}, ValueError, "target 'trainer' is none of deepspeed, hf-trainer"),
    (AUTO_BATCH, {"target": 1}, TypeError, "target must be a name or a dsconfig.targets.Target, not int"),
    (AUTO_BATCH, {"deepspeed_version": "0.9.0"}, ValueError, "deepspeed_version: DeepSpeed 0.9.0 is not supported"),
    (AUTO_BATCH, {"deepspeed_version": "all"}, ValueError, "\"all\" is for `dsconfig lint`"),
    (AUTO_BATCH, {"dataset_size": 0}, ValueError, "dataset_size must be between 1 and"),
    (AUTO_BATCH, {"training_args": "nowhere.json"}, FileNotFoundError,
     "training_args nowhere.json: no such file or directory"),
    (AUTO_BATCH, {"training_args": {"per_device_train_batch_size": "4"}}, ValueError,
     "training_args: per_device_train_batch_size must be an integer, not \"4\""),
    (AUTO_BATCH, {"training_args": 3}, TypeError, "training_args must be a dict, a path to a JSON or YAML file"),
    (AUTO_BATCH, {"model": "no-such-model-anywhere"}, ValueError, "model: "),
])
def test_bad_arguments_raise_one_line(project, config, kwargs, error, says):
    with pytest.raises(error) as raised:
        dsconfig.check(config, **kwargs)
    message = str(raised.value)
    assert says in message and "\n" not in message, message
    assert raised.value.__cause__ is None and raised.value.__suppress_context__ or raised.value.__context__ is None


def test_a_dangling_link_says_where_it_leads(project):
    os.symlink("gone.json", project / "ds_config.json")
    with pytest.raises(FileNotFoundError, match="^ds_config.json: a symbolic link to gone.json, which does not exist$"):
        dsconfig.check("ds_config.json")


def test_a_cyclic_dict_is_a_type_error(project):
    config = {"zero_optimization": {}}
    config["zero_optimization"]["again"] = config
    with pytest.raises(TypeError, match="^config dict: not JSON data: Circular reference detected$"):
        dsconfig.check(config)


def test_a_dict_of_megabytes_is_not_linted_as_a_file_that_large(project):
    found = dsconfig.check({"train_batch_size": 8, "pad": "x" * 300_000})
    assert [(f.code, f.file, f.severity) for f in found] == [("DS007", "<dict>", "error")]


def test_a_deep_dict_is_linted_compact_when_indenting_would_pass_the_file_limit(project):
    config = {"train_batch_size": 8}
    for _ in range(900):  # 4 KB compact, 1.6 MB indented
        config = {"a": config}
    found = dsconfig.check(config)
    assert "DS007" not in {f.code for f in found}
    assert {(f.code, f.line) for f in found if f.pointer == "/a"} == {("DS102", 1)}


def test_a_training_arguments_to_dict_that_raises_is_named(project):
    @dataclasses.dataclass
    class Broken:
        x: int = 1

        def to_dict(self):
            raise RuntimeError("no")

    with pytest.raises(TypeError, match=r"^training_args: Broken.to_dict\(\) raised RuntimeError: no$"):
        dsconfig.check(AUTO_BATCH, training_args=Broken())


# -- import cost ------------------------------------------------------------------------------------------


def _modules_after(code: str, cwd) -> set[str]:
    result = subprocess.run([sys.executable, "-c", code + "\nimport sys; print(' '.join(sorted(sys.modules)))"],
                            capture_output=True, text=True, cwd=cwd, env=environment(), timeout=120,
                            check=False)
    assert result.returncode == 0, result.stderr
    return set(result.stdout.split())


def test_import_dsconfig_imports_nothing_of_the_engine(tmp_path):
    modules = _modules_after("import dsconfig", tmp_path)
    assert {m for m in modules if m.startswith("dsconfig")} == {"dsconfig"}
    assert not modules & {*HEAVY, "yaml", "click", "json"}


def test_a_check_of_a_dict_imports_neither_heavy_packages_nor_yaml(tmp_path):
    modules = _modules_after("import dsconfig\nfound = dsconfig.check({'train_batch_size': 3, "
                             "'train_micro_batch_size_per_gpu': 2}, world_size=2)\nassert found", tmp_path)
    assert "dsconfig.engine" in modules  # the check ran
    assert not modules & {*HEAVY, "yaml", "click"}


def test_a_check_of_an_accelerate_yaml_imports_no_heavy_package(tmp_path):
    shutil.copy(CORPUS / "accelerate_deepspeed_config_file.yaml", tmp_path)
    shutil.copy(CORPUS / "ds_zero3_trainer_auto.json", tmp_path)
    modules = _modules_after("import dsconfig\ndsconfig.check('accelerate_deepspeed_config_file.yaml', world_size=2)",
                             tmp_path)
    assert "yaml" in modules and not modules & set(HEAVY)


def test_the_environment_runs_this_checkout(tmp_path):
    """The subprocess tests above import this checkout's dsconfig, not another installed one."""
    result = subprocess.run([sys.executable, "-c", "import dsconfig; print(dsconfig.__file__)"], capture_output=True,
                            text=True, cwd=tmp_path, env=environment(), check=False)
    assert os.path.dirname(result.stdout.strip()) == os.path.dirname(dsconfig.__file__)
