"""Configuration (pyproject.toml / .dsconfig.toml), selectors, fail-on / exit-zero, suppressions and DS900,
and what `dsconfig lint` collects: stdin, folders, globs, excludes and .gitignore."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from dsconfig import settings as settings_module
from dsconfig.cli import cli
from dsconfig.pathmatch import PatternSet
from dsconfig.rules import RULES
from dsconfig.suppress import UnknownSelector, enabled_codes, expand
from tests.conftest import modules_after

# 8.0 is DS201 (error, safe fix); bfloat16 is DS401 (warning); no world size gives DS204 (info).
CONFIG = '{\n  "train_batch_size": 8.0,\n  "bfloat16": {"enabled": true},\n  "gradient_clipping": 1.0\n}\n'


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A git repository with one config, as the working directory."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "ds_config.json").write_text(CONFIG)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def lint(*args, input=None):
    return CliRunner().invoke(cli, ["lint", *args], catch_exceptions=False, input=input)


def items(*args, input=None):
    result = lint(*args, "--format", "json", input=input)
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, json.loads(result.stdout)


def codes(found):
    return sorted({item["code"] for item in found})


# -- discovery ---------------------------------------------------------------------------------------


def test_pyproject_table_is_found_walking_up(project):
    (project / "pyproject.toml").write_text('[project]\nname = "x"\n\n[tool.dsconfig]\nignore = ["DS401"]\n')
    os.chdir(project / "configs")
    status, found = items("ds_config.json")
    assert "DS401" not in codes(found) and "DS201" in codes(found)


def test_dsconfig_toml_wins_over_pyproject_in_the_same_folder(project):
    (project / "pyproject.toml").write_text('[tool.dsconfig]\nignore = ["DS401"]\n')
    (project / ".dsconfig.toml").write_text('ignore = ["DS201"]\n')
    status, found = items("configs")
    assert "DS201" not in codes(found) and "DS401" in codes(found)


def test_pyproject_without_the_table_is_passed_over(project):
    (project / "pyproject.toml").write_text('[tool.dsconfig]\nignore = ["DS401"]\n')
    (project / "configs" / "pyproject.toml").write_text('[project]\nname = "inner"\n')
    os.chdir(project / "configs")
    assert settings_module.discover() == str(project / "pyproject.toml")


def test_discovery_stops_at_the_repository_root(tmp_path, monkeypatch):
    (tmp_path / ".dsconfig.toml").write_text('ignore = ["DS201"]\n')
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    monkeypatch.chdir(repo)
    assert settings_module.discover() is None


@pytest.mark.parametrize("text", [
    'tool.dsconfig.ignore = ["DS401"]\n',
    '[tool]\ndsconfig = {ignore = ["DS401"]}\n',
    '[tool.dsconfig]\nignore = ["DS401"]\n',
    '[project]\nname = "x"\n[tool."dsconfig"]\nignore = ["DS401"]\n',
])
def test_every_spelling_of_the_tool_table_is_found(project, text):
    """TOML's dotted keys and inline tables are the same table as `[tool.dsconfig]`: none is passed over."""
    (project / "pyproject.toml").write_text(text)
    assert settings_module.discover() == str(project / "pyproject.toml")
    status, found = items("configs")
    assert "DS401" not in codes(found) and "DS201" in codes(found)


def test_without_a_repository_only_the_working_directory_is_searched(tmp_path, monkeypatch):
    """A stray settings file above an unversioned tree (say, in /tmp) must not decide what is linted in it: it
    could exclude the very file named, which would then pass."""
    (tmp_path / ".dsconfig.toml").write_text('exclude = ["*.json"]\n')
    work = tmp_path / "work"
    work.mkdir()
    (work / "ds_config.json").write_text('{"train_batch_size": 7.0}\n')
    monkeypatch.chdir(work)
    if any((parent / ".git").exists() for parent in work.parents):
        pytest.skip("the temporary folder lies inside a repository here")
    assert settings_module.discover() is None
    result = lint("ds_config.json")
    assert result.exit_code == 1 and "DS201" in result.stdout
    (work / ".dsconfig.toml").write_text('ignore = ["DS201"]\n')  # the working directory's own is read
    assert lint("ds_config.json").exit_code == 0


def test_a_settings_file_that_cannot_be_read_is_a_usage_error(project):
    """Not a silent pass: its selections and exclusions would be lost. A link out of the project or into /proc is
    not followed either."""
    (project / "pyproject.toml").write_text('[tool.dsconfig]\nignore = ["DS401"]\n')
    os.chmod(project / "pyproject.toml", 0)
    try:
        if os.access(project / "pyproject.toml", os.R_OK):
            pytest.skip("root reads any file")
        result = lint("configs")
        assert result.exit_code == 2 and "pyproject.toml: cannot read: Permission denied" in result.stderr
    finally:
        os.chmod(project / "pyproject.toml", 0o644)


@pytest.mark.skipif(not os.path.exists("/proc/self/environ"), reason="no /proc here")
def test_a_settings_file_linked_into_proc_is_not_read(project):
    os.symlink("/proc/self/environ", project / ".dsconfig.toml")
    result = lint("configs")
    assert result.exit_code == 2 and ".dsconfig.toml" in result.stderr and "/proc" in result.stderr, result.stderr
    assert len(result.stderr.splitlines()) == 1


def test_an_integer_past_python_s_limit_is_a_one_line_usage_error(project):
    (project / ".dsconfig.toml").write_text("world-sizes = [" + "9" * 5000 + "]\n")
    result = lint("configs")
    assert result.exit_code == 2
    assert result.stderr.startswith("dsconfig: error: .dsconfig.toml: invalid TOML: Exceeds the limit"), result.stderr
    assert len(result.stderr.splitlines()) == 1


def test_config_and_no_config_options(project):
    (project / ".dsconfig.toml").write_text('ignore = ["DS201"]\n')
    (project / "other.toml").write_text('ignore = ["DS401"]\n')
    assert "DS201" not in codes(items("configs")[1])
    assert "DS201" in codes(items("configs", "--no-config")[1])
    found = items("configs", "--config", "other.toml")[1]
    assert "DS401" not in codes(found) and "DS201" in codes(found)
    result = lint("configs", "--config", "missing.toml")
    assert result.exit_code == 2 and "no such configuration file" in result.stderr


def test_no_tomllib_import_without_a_config_file(tmp_path):
    """No configuration file: the lint path never imports tomllib (nor pathmatch, nor fix)."""
    (tmp_path / ".git").mkdir()
    config = tmp_path / "ds_config.json"
    config.write_text('{"train_batch_size": 8, "zero_optimization": {"stage": 3}}')
    watched = {"tomllib", "dsconfig.pathmatch", "dsconfig.fix", "glob", "yaml"}
    assert not modules_after(["lint", str(config)], tmp_path) & watched
    (tmp_path / ".dsconfig.toml").write_text('ignore = ["DS204"]\n')
    assert "tomllib" in modules_after(["lint", str(config)], tmp_path)


# -- keys, validation, precedence ------------------------------------------------------------------------


@pytest.mark.parametrize("body,message", [
    ('selct = ["DS1"]', "unknown key `selct`; did you mean `select`?"),
    ('world_sizes = [8]', "did you mean `world-sizes`?"),
    ('select = ["DS999"]', "unknown rule selector `DS999`; did you mean `DS954`?"),
    ('select = "DS1"', "`select` must be a list of strings"),
    ('fail-on = "warn"', "`fail-on` must be error, warning or info"),
    ('world-sizes = [0]', "`world-sizes` must be a list of positive integers"),
    ('target = "hf"', "`target` must be one of deepspeed, hf-trainer, accelerate, lightning"),
    ('framework = "lightnin"', "`framework` must be one of lightning, torchrun, accelerate, hf-trainer, deepspeed, "
                               "jax, not 'lightnin'; did you mean `lightning`?"),
    ('batchnorm = "yes"', "`batchnorm` must be true or false"),
    ('show-info = 1', "`show-info` must be true or false"),
    ('[batch-keys]\n"/data/train_bs" = "per-gpu"', "`batch-keys`: '/data/train_bs=per-gpu': write POINTER=per-device"),
    ('[per-file-ignores]\n"*.json" = ["nope-rule"]', "unknown rule selector `nope-rule`"),
    ('[[suppress]]\nfiles = "x.json"\nrules = ["DS201"]', "`reason` is required"),
    ('[[suppress]]\nfiles = "x.json"\nrules = ["DS201"]\nreason = "  "', "`reason` is required"),
    ('[[suppress]]\nfiles = "x.json"\nreason = "r"', "`rules` (the codes it suppresses) is required"),
    ('[[suppress]]\nrules = ["DS201"]\nreason = "r"', "`files` (a glob) is required"),
    ('[[suppress]]\nfiles = "x"\npointer = "zero"\nrules = ["DS201"]\nreason = "r"', "must be a JSON pointer"),
    ('[[suppress]]\nfiles = "x"\nrules = ["DS201"]\nreason = "r"\npointr = "/a"', "did you mean `pointer`?"),
    ("x = [", "invalid TOML"),
    # a pattern git would not match as written: where it is, and why
    ('exclude = ["legacy/", "[z-a]*.json"]',
     '.dsconfig.toml:1:23: `exclude`: "[z-a]*.json": the range z-a is reversed, so git reads it as z alone'),
    ('exclude = [\n  "legacy/",\n  \'[[:word:]]\',\n]',
     '.dsconfig.toml:3:3: `exclude`: "[[:word:]]": `[:word:]` is not a character class'),
    ('[per-file-ignores]\n"conf[igs/*.json" = ["DS201"]',
     '.dsconfig.toml:2:1: `per-file-ignores`: "conf[igs/*.json": the `[` at character 5 is never closed'),
    ('[[suppress]]\nfiles = "configs\\\\"\nrules = ["DS201"]\nreason = "r"',
     '.dsconfig.toml:1:1: suppress entry 1: `files`: "configs\\\\": it ends with a lone `\\`'),
    ('exclude = ["# generated"]', '`exclude`: "# generated": it is empty or a comment in gitignore syntax'),
])
def test_bad_configuration_is_a_one_line_usage_error(project, body, message):
    (project / ".dsconfig.toml").write_text(body + "\n")
    result = lint("configs")
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dsconfig: error: .dsconfig.toml") and message in lines[0], lines
    assert "Traceback" not in result.output


def test_pyproject_errors_name_the_table(project):
    (project / "pyproject.toml").write_text('[tool.dsconfig]\nignroe = ["DS1"]\n')
    result = lint("configs")
    assert result.exit_code == 2
    assert "pyproject.toml: [tool.dsconfig]: unknown key `ignroe`; did you mean `ignore`?" in result.stderr


def test_bad_pyproject_pattern_names_file_line_and_table(project):
    (project / "pyproject.toml").write_text('[project]\nname = "x"\n\n[tool.dsconfig.per-file-ignores]\n'
                                            '"configs/*.json" = ["DS5"]\n"[z-a]*" = ["DS6"]\n')
    result = lint("configs")
    assert result.exit_code == 2
    assert result.stderr == ('dsconfig: error: pyproject.toml:6:1: [tool.dsconfig] `per-file-ignores`: "[z-a]*": '
                             'the range z-a is reversed, so git reads it as z alone (write a-z)\n')


def test_bad_exclude_option_is_a_one_line_usage_error(project):
    result = lint("configs", "--exclude", "legacy/", "--exclude", "conf[igs")
    assert result.exit_code == 2
    assert result.stderr == ('dsconfig: error: --exclude "conf[igs": the `[` at character 5 is never closed, so git '
                             'matches nothing with this pattern (write `\\[` for a literal `[`)\n')


def test_world_sizes_and_target_from_the_file_cli_overrides(project):
    (project / "configs" / "ds_config.json").write_text(
        '{"train_batch_size": 64, "train_micro_batch_size_per_gpu": 32, "gradient_clipping": 1.0}')
    (project / ".dsconfig.toml").write_text('world-sizes = [4, 8]\ntarget = "deepspeed"\n')
    status, found = items("configs")
    assert sorted(i["world_size"] for i in found if i["code"] == "DS202") == [4, 8] and status == 1
    status, found = items("configs", "--world-size", "2")
    assert "DS202" not in codes(found) and status == 0


def test_training_settings_from_the_file_cli_adds_to_them(project):
    """framework, batchnorm and batch-keys from [tool.dsconfig]; --batch-key wins for the same key."""
    (project / "configs" / "stage1.yaml").write_text("data:\n  train_bs: 30\nmodel:\n  micro_bs: 1\n")
    (project / "pyproject.toml").write_text('[tool.dsconfig]\nbatchnorm = true\nworld-sizes = [4]\n\n'
                                            '[tool.dsconfig.batch-keys]\n"data.train_bs" = "global"\n')
    status, found = items("configs/stage1.yaml")
    assert [(i["code"], i["pointer"]) for i in found if i["code"] != "DS209"] == [
        ("DS208", "/data/train_bs"), ("DS207", "/model/micro_bs")]
    status, found = items("configs/stage1.yaml", "--batch-key", "/data/train_bs=per-device")
    assert [(i["code"], i["pointer"]) for i in found if i["code"] != "DS209"] == [("DS207", "/model/micro_bs")]


def test_target_from_the_file(project):
    (project / "configs" / "ds_config.json").write_text('{"train_batch_size": "auto", "gradient_clipping": 1.0, '
                                                        '"zero_optimization": {"stage": 2}}')
    assert items("configs")[0] == 0  # "auto": hf-trainer by default
    (project / ".dsconfig.toml").write_text('target = "deepspeed"\n')
    status, found = items("configs")
    assert status == 1 and "DS700" in codes(found)
    assert items("configs", "--target", "hf-trainer")[0] == 0


def test_fail_on_from_the_file_cli_overrides(project):
    (project / "configs" / "ds_config.json").write_text('{"train_batch_size": 8, "bfloat16": {"enabled": true}, '
                                                        '"gradient_clipping": 1.0}')
    assert items("configs")[0] == 0  # warnings and infos do not fail by default
    (project / ".dsconfig.toml").write_text('fail-on = "warning"\n')
    assert items("configs")[0] == 1
    assert items("configs", "--fail-on", "error")[0] == 0
    assert items("configs", "--ignore", "DS401", "--fail-on", "info")[0] == 1  # DS204 is an info
    assert items("configs", "--ignore", "DS401,DS204", "--fail-on", "info")[0] == 0


def test_show_info_from_the_file(project):
    (project / "configs" / "ds_config.json").write_text('{"train_batch_size": 8, "gradient_clipping": 1.0}')
    assert [item["code"] for item in items("configs")[1]] == []
    (project / ".dsconfig.toml").write_text("show-info = true\n")
    assert [item["code"] for item in items("configs")[1]] == ["DS204"]


def test_select_from_the_file_cli_select_replaces_it(project):
    (project / ".dsconfig.toml").write_text('select = ["DS4"]\n')
    assert codes(items("configs")[1]) == ["DS401"]
    assert codes(items("configs", "--select", "DS2")[1]) == ["DS201"]  # a prefix does not show infos
    assert codes(items("configs", "--select", "DS2", "--show-info")[1]) == ["DS201", "DS204"]
    # a CLI --ignore alone removes from what the file selected
    assert codes(items("configs", "--ignore", "bfloat16-key")[1]) == []


def test_exit_zero(project):
    assert lint("configs").exit_code == 1
    assert lint("configs", "--exit-zero").exit_code == 0
    assert lint("configs", "--exit-zero", "--select", "NOPE").exit_code == 2  # usage errors stay 2
    assert lint("missing", "--exit-zero").exit_code == 2


# -- selectors ---------------------------------------------------------------------------------------------


def test_selectors_code_prefix_name_all():
    assert expand("DS202")[0] == {"DS202"}
    assert expand("batch-mismatch")[0] == {"DS202"}
    assert expand("DS2")[0] == {c for c in RULES if c.startswith("DS2")}
    assert expand("ACC")[0] == {c for c in RULES if c.startswith("ACC")}
    assert expand("ds20")[0] == {c for c in RULES if c.startswith("DS20")}
    assert expand("ALL")[0] == set(RULES)
    with pytest.raises(UnknownSelector) as error:
        expand("batch-missmatch")
    assert error.value.suggestion == "batch-mismatch"


def test_specificity_within_a_layer_and_layers():
    ds2 = {c for c in RULES if c.startswith("DS2")}
    assert enabled_codes([(["DS2"], ["DS202"])]) == ds2 - {"DS202"}
    assert enabled_codes([(["DS202"], ["DS2"])]) == {"DS202"}
    assert enabled_codes([(None, ["DS2"])]) == set(RULES) - ds2
    # a later layer's select starts afresh: the file's ignore does not carry over
    assert enabled_codes([(None, ["DS202"]), (["DS202"], [])]) == {"DS202"}
    assert enabled_codes([(["ALL"], ["ALL"])]) == set()


def test_unknown_cli_selector_exits_two_with_did_you_mean(project):
    result = lint("configs", "--select", "DS2,batch-missmatch")
    assert result.exit_code == 2 and "did you mean `batch-mismatch`?" in result.output
    result = lint("configs", "--ignore", "XX1")
    assert result.exit_code == 2 and "unknown rule selector `XX1`" in result.output


# -- suppressions and DS900 -----------------------------------------------------------------------------------


SUPPRESS = '''# suppressions
[[suppress]]
files = "configs/*.json"
pointer = "/train_batch_size"
rules = ["batch-type"]
reason = "generated by a tool we do not control"

[[suppress]]
files = "configs/ds_config.json"
pointer = "/zero_optimization"
rules = ["DS3"]
reason = "stale"

[per-file-ignores]
"configs/**" = ["DS401"]
"legacy/*.json" = ["DS1"]
"other/*.json" = ["DS204"]
'''


def test_pointer_suppression_per_file_ignore_and_unused_ones(project):
    (project / ".dsconfig.toml").write_text(SUPPRESS)
    (project / "legacy").mkdir()
    (project / "legacy" / "ds_old.json").write_text('{"train_batch_size": 8, "gradient_clipping": 1.0}')
    status, found = items("configs", "legacy")
    assert "DS201" not in codes(found) and "DS401" not in codes(found)
    unused = [i for i in found if i["code"] == "DS900"]
    # the /zero_optimization entry (line 8) and "legacy/*.json" (line 16) matched nothing;
    # "other/*.json" covers no file linted in this run, so it is not judged
    assert [(i["file"], i["line"], i["column"]) for i in unused] == [(".dsconfig.toml", 8, 1),
                                                                     (".dsconfig.toml", 16, 1)]
    assert all(i["severity"] == "warning" and i["pointer"] == "" for i in unused)
    assert any("stale" in i["message"] and "/zero_optimization" in i["message"] for i in unused)
    assert status == 0  # DS900 is a warning


def test_suppression_covers_its_subtree_only(project):
    (project / "configs" / "ds_config.json").write_text(
        '{"train_batch_size": 8, "gradient_clipping": 1.0, "zero_optimization": {"stage": 2, '
        '"offload_param": {"device": "cpu"}}, "fp16": {"enabled": true, "opt_level": "O2"}}')
    (project / ".dsconfig.toml").write_text('[[suppress]]\nfiles = "configs/ds_config.json"\n'
                                            'pointer = "/zero_optimization"\nrules = ["DS301", "DS101"]\n'
                                            'reason = "we know"\n')
    found = items("configs")[1]
    assert "DS301" not in codes(found)
    assert [i["pointer"] for i in found if i["code"] == "DS101"] == ["/fp16/opt_level"]
    assert "DS900" not in codes(found)


def test_unused_suppression_is_not_judged_when_its_rules_are_deselected(project):
    (project / ".dsconfig.toml").write_text(SUPPRESS)
    found = items("configs", "--select", "DS2")[1]
    assert "DS900" not in codes(found)
    found = items("configs", "--ignore", "DS900")[1]
    assert "DS900" not in codes(found)


def test_pyproject_suppression_lines(project):
    (project / "pyproject.toml").write_text('[project]\nname = "x"\n\n[tool.dsconfig]\nselect = ["ALL"]\n\n'
                                            '[tool.dsconfig.per-file-ignores]\n"configs/*.json" = ["DS5"]\n\n'
                                            '[[tool.dsconfig.suppress]]\nfiles = "configs/*.json"\n'
                                            'rules = ["DS6"]\nreason = "r"\n')
    found = [i for i in items("configs")[1] if i["code"] == "DS900"]
    assert sorted((i["file"], i["line"]) for i in found) == [("pyproject.toml", 8), ("pyproject.toml", 10)]


def test_per_file_ignore_pattern_semantics(tmp_path):
    patterns = PatternSet(str(tmp_path), ["*.bak", "/build", "configs/legacy/", "**/gen/*.json", "!keep.bak",
                                          "docs/**"])
    assert patterns.excluded(str(tmp_path / "a" / "x.bak"))
    assert not patterns.excluded(str(tmp_path / "keep.bak"))
    assert patterns.excluded(str(tmp_path / "build" / "ds.json"))
    assert not patterns.excluded(str(tmp_path / "src" / "build" / "ds.json"))  # anchored
    assert patterns.excluded(str(tmp_path / "configs" / "legacy" / "ds.json"))
    assert not patterns.excluded(str(tmp_path / "configs" / "legacy"))  # a dir-only pattern, asked about a file
    assert patterns.excluded(str(tmp_path / "x" / "y" / "gen" / "ds.json"))
    assert patterns.excluded(str(tmp_path / "gen" / "ds.json"))
    assert patterns.excluded(str(tmp_path / "docs" / "a" / "b.json"))
    assert not patterns.excluded(str(tmp_path / "docs.json"))
    assert not patterns.excluded("/elsewhere/x.bak")  # outside the base folder


# -- inputs: stdin, folders, globs, excludes, .gitignore ----------------------------------------------------


def test_stdin_with_and_without_a_name(project):
    status, found = items("-", input=CONFIG)
    assert status == 1 and {i["file"] for i in found} == {"-"}
    status, found = items("-", "--stdin-filename", "configs/ds_z3.json", input=CONFIG)
    assert {i["file"] for i in found} == {"configs/ds_z3.json"} and "DS201" in codes(found)
    # the name decides the kind: a YAML name reads YAML
    accelerate = "compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\nnum_processes: 2\ngpu_ids: no\n"
    status, found = items("-", "--stdin-filename", "accelerate_config.yaml", input=accelerate)
    assert "ACC016" in codes(found)
    result = lint("configs", "--stdin-filename", "x.json")
    assert result.exit_code == 2 and "give `-`" in result.output


def test_stdin_filename_is_matched_by_per_file_ignores(project):
    (project / ".dsconfig.toml").write_text('[per-file-ignores]\n"configs/*.json" = ["DS201"]\n')
    found = items("-", "--stdin-filename", "configs/new.json", input=CONFIG)[1]
    assert "DS201" not in codes(found)


def _tree(root: Path):
    for path, text in {
        "configs/ds_a.json": CONFIG,
        "configs/sub/ds_b.json": CONFIG,
        "configs/generated/ds_c.json": CONFIG,
        "configs/notes.txt": "text",
        "build/ds_d.json": CONFIG,
        ".hidden/ds_e.json": CONFIG,
        "venv/ds_f.json": CONFIG,
        "configs/ds_x.tmp.json": CONFIG,
    }.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)


def files_of(found):
    return sorted({i["file"] for i in found})


def test_folders_are_walked_respecting_gitignore_and_exclude(project):
    _tree(project)
    (project / ".gitignore").write_text("build/\n# generated configs\nconfigs/generated/\n")
    found = items(".")[1]
    assert files_of(found) == ["./configs/ds_a.json", "./configs/ds_config.json", "./configs/ds_x.tmp.json",
                               "./configs/sub/ds_b.json"]
    found = items(".", "--no-respect-gitignore")[1]
    assert "./build/ds_d.json" in files_of(found) and "./configs/generated/ds_c.json" in files_of(found)
    assert "./.hidden/ds_e.json" not in files_of(found) and "./venv/ds_f.json" not in files_of(found)
    (project / ".dsconfig.toml").write_text('exclude = ["*.tmp.json", "sub/"]\n')
    assert files_of(items(".")[1]) == ["./configs/ds_a.json", "./configs/ds_config.json"]
    # --exclude replaces the file's patterns
    assert "./configs/ds_x.tmp.json" in files_of(items(".", "--exclude", "sub/")[1])


def test_nested_gitignore_and_negation(project):
    _tree(project)
    (project / "configs" / ".gitignore").write_text("ds_*.json\n!ds_a.json\n")
    # `ds_*.json` ignores every config below configs/, `!ds_a.json` takes one back
    assert files_of(items("configs")[1]) == ["configs/ds_a.json"]


def test_gitignore_of_parent_folders_applies_to_a_walked_subfolder(project):
    _tree(project)
    (project / ".gitignore").write_text("generated/\n")
    assert "configs/generated/ds_c.json" not in files_of(items("configs")[1])


def test_explicit_files_honour_exclude_but_not_gitignore(project):
    _tree(project)
    (project / ".gitignore").write_text("build/\n")
    assert files_of(items("build/ds_d.json")[1]) == ["build/ds_d.json"]
    (project / ".dsconfig.toml").write_text('exclude = ["build/"]\n')
    status, found = items("build/ds_d.json")
    assert found == [] and status == 0


def test_globs_are_expanded_by_dsconfig(project):
    _tree(project)
    (project / ".gitignore").write_text("build/\n")
    assert files_of(items("configs/*.json")[1]) == ["configs/ds_a.json", "configs/ds_config.json",
                                                    "configs/ds_x.tmp.json"]
    assert files_of(items("**/ds_b.json")[1]) == ["configs/sub/ds_b.json"]
    found = files_of(items("**/*.json")[1])
    assert "build/ds_d.json" not in found and ".hidden/ds_e.json" not in found and "venv/ds_f.json" not in found
    assert "configs/generated/ds_c.json" in found
    result = lint("nothing/*.json")
    assert result.exit_code == 2 and "no file matches" in result.stderr


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_gitignore_patterns_are_read_as_git_reads_them(tmp_path, monkeypatch):
    """Patterns git accepts but matches oddly (or not at all): dsconfig lints exactly what git does not ignore."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_text("[z-a]*.json\nconf[igs/\n[[:word:]].json\nx/ab**/c/\n"
                                         "*a*a*a*a*a*a*a*a*[b].json\nlegacy\\\n\\#*.json\n")
    for name in ["z1.json", "a.json", "conf[igs/a.json", "w.json", "x/abc/a.json", "x/abq/r/c/a.json", "x/ab/a.json",
                 "a" * 50 + "b.json", "legacy\\/a.json", "#1.json", "y/z2.json"]:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(CONFIG)
    monkeypatch.chdir(tmp_path)
    from dsconfig import engine
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], capture_output=True, text=True,
                            check=True).stdout.split("\0")
    kept = sorted(os.path.relpath(path) for path in engine.collect(["."]).files)
    assert kept == sorted(name for name in listed if name.endswith(".json"))
    assert "a.json" in kept and "z1.json" not in kept and "x/abc/a.json" not in kept  # `[z-a]` is `[z]`; ab**/c


def test_apply_is_what_the_command_reports(project):
    """suppress.apply: the library form of the selection, the suppressions and DS900."""
    from dsconfig import engine
    from dsconfig.suppress import apply
    (project / ".dsconfig.toml").write_text(SUPPRESS)
    loaded = settings_module.resolve()
    files = engine.collect(["configs"]).files
    found = apply(engine.lint_files(files, engine.Options()).findings, files, loaded)
    cli_found = items("configs", "--show-info")[1]
    assert [(f.code, f.file, f.line) for f in found] == [(i["code"], i["file"], i["line"]) for i in cli_found]
