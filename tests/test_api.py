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
    result = CliRunner().invoke(cli, ["lint", "--no-config", "--show-info", "--format", "json", *args], catch_exceptions=False)
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


# -- a NUL byte in a path, a float NaN or infinity in the dict, world sizes past what lint can take ----------


@pytest.mark.parametrize("config, kwargs, says", [
    ("ds\x00.json", {}, "config: 'ds\\x00.json' holds a NUL byte, which no file name can hold"),
    (pathlib.Path("ds\x00.json"), {}, "config: 'ds\\x00.json' holds a NUL byte"),
    (AUTO_BATCH, {"training_args": "args\x00.json"}, "training_args: 'args\\x00.json' holds a NUL byte"),
    (AUTO_BATCH, {"model": "config\x00.json"}, "model: 'config\\x00.json' holds a NUL byte"),
])
def test_a_nul_byte_in_a_path_is_a_value_error_naming_the_argument(project, config, kwargs, says):
    with pytest.raises(ValueError) as raised:
        dsconfig.check(config, **kwargs)
    assert str(raised.value).startswith(says), raised.value
    assert "\x00" not in str(raised.value) and "\n" not in str(raised.value)
    with pytest.raises(ValueError, match="embedded null byte"):  # what os.stat() and open() say of such a name
        os.stat("ds\x00.json")


NON_FINITE = [
    ({"train_batch_size": float("nan")}, "train_batch_size", "float('nan')"),
    ({"train_batch_size": float("inf"), "train_micro_batch_size_per_gpu": 1}, "train_batch_size", "float('inf')"),
    ({"train_batch_size": -float("inf")}, "train_batch_size", "float('-inf')"),
    ({"train_micro_batch_size_per_gpu": float("nan")}, "train_micro_batch_size_per_gpu", "float('nan')"),
    ({"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": float("nan")},
     "gradient_accumulation_steps", "float('nan')"),
    ({"train_batch_size": 8, "zero_optimization": {"stage": 2, "reduce_bucket_size": float("nan")}},
     "zero_optimization.reduce_bucket_size", "float('nan')"),
    ({"train_batch_size": 8, "zero_optimization": {"stage": 2, "reduce_bucket_size": float("inf")}},
     "zero_optimization.reduce_bucket_size", "float('inf')"),
    ({"train_batch_size": 8, "zero_optimization": {"stage": float("nan")}}, "zero_optimization.stage", "float('nan')"),
    ({"train_batch_size": 8, "fp16": {"enabled": True, "loss_scale": float("nan")}}, "fp16.loss_scale", "float('nan')"),
    ({"train_batch_size": 8, "optimizer": {"type": "Adam", "params": {"lr": float("nan")}}}, "optimizer.params.lr",
     "float('nan')"),
    ({"train_batch_size": 8, "optimizer": {"type": "Adam", "params": {"betas": [0.9, float("inf")]}}},
     "optimizer.params.betas.1", "float('inf')"),
    ({"train_batch_size": 8, "gradient_clipping": float("nan")}, "gradient_clipping", "float('nan')"),
    ({"train_batch_size": 8, "gradient_clipping": float("inf")}, "gradient_clipping", "float('inf')"),
]


@pytest.mark.parametrize("config, key, spelled", NON_FINITE, ids=[f"{key}={spelled}" for _, key, spelled in NON_FINITE])
def test_a_float_nan_or_infinity_in_the_dict_is_checked_as_deepspeed_receives_it(project, config, key, spelled):
    """DeepSpeed gets the dict as it is: the float itself, not the text `NaN` its hjson loader would read as a
    string. The findings agree with the real DeepSpeedConfig on that dict: an error in the phase it fails in, at
    the key, when it refuses it; no load or parse error when it accepts it; and no word of hjson."""
    from tests.oracle import verdict

    found = dsconfig.check(config)
    assert not any(f.code in ("DS002", "DS003") or "hjson" in f.message for f in found), found
    fatal = [f for f in found if f.severity == "error" and f.fails_in in ("load", "parse")]
    real = verdict(config, 1)  # DeepSpeed 0.19.8's DeepSpeedConfig on the dict, at world size 1
    if real.ok:
        assert not fatal, (real, fatal)
        return
    assert fatal, (real.error, found)
    pointer = "/" + key.replace(".", "/")
    batch = ("/train_batch_size", "/train_micro_batch_size_per_gpu", "/gradient_accumulation_steps")
    assert any(f.pointer == pointer or (pointer in batch and f.pointer in batch) for f in fatal), (real.error, fatal)
    if real.error.startswith("AssertionError: "):  # the batch assertion, word for word
        assert any(real.error.removeprefix("AssertionError: ").split(":")[0] in f.message for f in fatal), \
            (real.error, fatal)


def test_nan_in_a_string_or_under_auto_is_linted_as_before(project):
    # "NaN" as text is a string in the dict too: nothing to refuse, the same findings as for any other string
    assert dsconfig.check({"train_batch_size": 8, "note": "NaN and Infinity"}, world_size=8) == \
        dsconfig.check({"train_batch_size": 8, "note": "some other text"}, world_size=8)
    # with "auto" the checks read the dict as the HF Trainer's json.load, which gives the float back: DeepSpeed's
    # own batch assertion, at the key
    found = dsconfig.check({"train_batch_size": "auto", "train_micro_batch_size_per_gpu": float("nan")}, world_size=2)
    assert any(f.code == "DS202" and f.message.startswith("Train batch size: nan has to be greater than 0")
               for f in found), found
    assert not any(f.code in ("DS002", "DS003") for f in found)


def test_a_world_size_range_is_bounded_as_lint_bounds_its_list(project):
    from dsconfig.api import MAX_WORLD_SIZES
    for sizes in (range(1, 10**12), itertools_count(), [8] * (MAX_WORLD_SIZES + 1)):
        with pytest.raises(ValueError, match=f"^world_size: more than {MAX_WORLD_SIZES:,} world sizes, as many as "
                                             "`dsconfig lint --world-size` can list in one command-line argument"):
            dsconfig.check({"train_batch_size": 8}, world_size=sizes)
    found = dsconfig.check({"train_batch_size": 8}, world_size=range(1, MAX_WORLD_SIZES + 1))
    assert {f.world_size for f in found if f.code == "DS202"} == set(range(9, MAX_WORLD_SIZES + 1)) | {3, 5, 6, 7}


def itertools_count():
    import itertools
    return itertools.count(1)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="MAX_ARG_STRLEN is Linux's")
def test_max_world_sizes_is_the_longest_list_one_command_line_argument_holds(tmp_path):
    from dsconfig.api import MAX_WORLD_SIZES
    fits = ",".join(map(str, range(1, MAX_WORLD_SIZES + 1)))
    too_long = ",".join(map(str, range(1, MAX_WORLD_SIZES + 2)))
    assert subprocess.run([sys.executable, "-c", "", fits], check=False).returncode == 0
    with pytest.raises(OSError) as raised:  # the kernel refuses the argument before `dsconfig lint` could read it
        subprocess.run([sys.executable, "-c", "", too_long], check=False)
    assert raised.value.errno == 7  # E2BIG: Argument list too long


def test_a_world_size_past_a_c_int_is_refused_as_torch_distributed_refuses_it(project):
    from dsconfig.api import MAX_WORLD_SIZE
    for size in (MAX_WORLD_SIZE + 1, 10 ** 5000):
        with pytest.raises(ValueError, match=r"^world_size must be at most 2,147,483,647 \(2\*\*31 - 1: "
                                             "torch.distributed holds the world size in a C int\\), not "):
            dsconfig.check({"train_batch_size": 8}, world_size=[8, size])
    assert dsconfig.check({"train_batch_size": 8}, world_size=MAX_WORLD_SIZE)
    torch_c10d = pytest.importorskip("torch._C._distributed_c10d")
    assert torch_c10d.ProcessGroup(torch_c10d.HashStore(), 0, MAX_WORLD_SIZE).size() == MAX_WORLD_SIZE
    with pytest.raises(TypeError, match="incompatible constructor arguments"):
        torch_c10d.ProcessGroup(torch_c10d.HashStore(), 0, MAX_WORLD_SIZE + 1)
