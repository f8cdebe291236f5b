"""Output formats: golden outputs for each format, SARIF against the official schema, GitHub escaping,
--statistics, colours and NO_COLOR.

The golden files in tests/golden/ are the exact output of `dsconfig lint` on tests/fixtures/formats/.
After an intended change, regenerate them and review the diff:

    DSCONFIG_UPDATE_GOLDEN=1 python -m pytest tests/test_formats.py tests/test_fix.py
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from urllib.parse import unquote_to_bytes

import pytest
from click.testing import CliRunner

from dsconfig import __version__, escape, report
from dsconfig.cli import cli
from dsconfig.findings import Finding
from tests import workflow_commands
from tests.fuzz_targets import check_rendered

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "formats"
GOLDEN = ROOT / "tests" / "golden"
SARIF_SCHEMA = ROOT / "tests" / "fixtures" / "sarif-schema-2.1.0.json"
ARGS = ["ds_config.json", "accelerate_config.yaml", "--world-size", "4", "--no-config"]
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def check_golden(name: str, text: str) -> None:
    """Compare with tests/golden/<name>; DSCONFIG_UPDATE_GOLDEN=1 rewrites it instead."""
    path = GOLDEN / name
    if os.environ.get("DSCONFIG_UPDATE_GOLDEN"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return
    assert path.exists(), f"{path} is missing: run with DSCONFIG_UPDATE_GOLDEN=1 to create it"
    expected = path.read_text(encoding="utf-8")
    assert text == expected, f"{name} differs from the golden output (DSCONFIG_UPDATE_GOLDEN=1 regenerates it)"


def lint(*args, cwd=FIXTURES, env=None, input=None):
    runner = CliRunner()
    old = os.getcwd()
    os.chdir(cwd)
    try:
        return runner.invoke(cli, ["lint", *args], catch_exceptions=False, env=env, input=input)
    finally:
        os.chdir(old)


def sarif_stable(text: str) -> str:
    """SARIF with the machine-dependent parts (working directory, version) and the rule docs masked."""
    document = json.loads(text)
    run = document["runs"][0]
    run["originalUriBaseIds"]["%SRCROOT%"]["uri"] = "file:///SRCROOT/"
    run["tool"]["driver"]["version"] = "VERSION"
    for rule in run["tool"]["driver"]["rules"]:  # the rule docs evolve on their own (tests/rules/test_rule_docs.py)
        rule["fullDescription"]["text"] = "(the rule's docs)"
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


# -- golden outputs ----------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["concise", "full", "json", "github"])
def test_golden_output(fmt):
    result = lint(*ARGS, "--format", fmt)
    assert result.exit_code == 1
    check_golden(f"lint.{fmt}", result.stdout)


def test_golden_sarif():
    result = lint(*ARGS, "--format", "sarif")
    assert result.exit_code == 1
    check_golden("lint.sarif", sarif_stable(result.stdout))


def test_golden_statistics():
    result = lint(*ARGS, "--statistics")
    assert result.exit_code == 1
    check_golden("lint.statistics", result.stdout)
    result = lint(*ARGS, "--statistics", "--format", "json")
    check_golden("lint.statistics.json", result.stdout)
    rows = json.loads(result.stdout)
    assert {"code", "name", "severity", "count", "fixable"} == set(rows[0])
    assert sum(row["count"] for row in rows) == len(json.loads(lint(*ARGS, "--format", "json").stdout))


def test_concise_summary_and_fix_marker():
    result = lint(*ARGS)
    assert result.stderr.strip() == ("5 errors, 1 warning in 2 files (DeepSpeed 0.19.8: installed deepspeed 0.19.8); "
                                     "4 fixable with --fix (2 more with --unsafe-fixes)")
    marked = [line.split()[2] for line in result.stdout.splitlines() if " [*] " in line]
    assert marked == ["DS201", "DS401", "DS103", "ACC016"]  # the safe fixes only


# -- json ----------------------------------------------------------------------------------------------


def test_json_keys_stay_exactly_the_documented_ones():
    items = json.loads(lint(*ARGS, "--format", "json").stdout)
    keys = {"code", "name", "severity", "message", "file", "line", "column", "pointer", "world_size", "fails_in",
            "fix"}
    # a DeepSpeed finding also names the release replayed; an Accelerate one does not
    assert items and all(set(item) == keys | ({"deepspeed_version"} if item["code"].startswith("DS") else set())
                         for item in items)


@pytest.mark.parametrize("count", [0, 1, 3])
def test_json_written_a_finding_at_a_time_is_what_json_dumps_writes_for_the_list(count):
    """The JSON report is written as it is made (report.chunks); its bytes stay those of json.dumps over the
    whole list, escapes included (a key holding `##[`, a bidi override, a newline)."""
    from dsconfig.report import json_
    from dsconfig.rules.keys import UNKNOWN_KEY

    findings = []
    for index in range(count):
        finding = Finding(UNKNOWN_KEY, f"Unknown key `k{index}##[group]\u202e\nx` in `zero_optimization`",
                          "/zero_optimization/k", fix='"stage"', on_key=True)
        finding.file, finding.line, finding.column = f"d{index}/ds_config.json", index + 1, 3
        finding.related = (("train.py", 4, 2, "é"),) if index == 1 else ()
        findings.append(finding)
    context = report.Context()
    whole = escape.json_text(json.dumps([json_._item(f, None) for f in findings], indent=2, ensure_ascii=False)) + "\n"
    assert report.render("json", findings, context) == whole
    assert json.loads(whole) == [json_._item(f, None) for f in findings]


def test_a_report_goes_out_in_pieces_not_as_one_string(tmp_path):
    """Over many findings, the concise report reaches stdout in blocks of about 64 KiB, not as one string."""
    for index in range(600):
        (tmp_path / f"ds_config_{index}.json").write_text('{"train_batch_size": 7.0}')
    writes = []
    from dsconfig.commands import lint as lint_module
    original = lint_module.echo

    def counting(message="", *args, **kwargs):
        writes.append(len(message or ""))
        return original(message, *args, **kwargs)

    from unittest import mock
    with mock.patch.object(lint_module, "echo", counting):
        result = lint(".", "--no-config", cwd=tmp_path)
    assert result.stdout.count("DS201") == 600
    report_writes = writes[:-1]  # the last is the summary line on stderr
    assert len(report_writes) > 1 and max(report_writes) < 2 * 65536


# -- sarif ---------------------------------------------------------------------------------------------


def _validator():
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(SARIF_SCHEMA.read_text(encoding="utf-8"))
    jsonschema.Draft4Validator.check_schema(schema)
    return jsonschema.Draft4Validator(schema, format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER)


def test_sarif_validates_against_the_official_schema():
    validator = _validator()
    for args in (ARGS, ["ds_config.json", "--no-config"], [str(ROOT / "examples"), "--no-config"]):
        document = json.loads(lint(*args, "--format", "sarif").stdout)
        errors = sorted(validator.iter_errors(document), key=lambda e: list(e.path))
        assert not errors, [f"{list(e.path)}: {e.message}" for e in errors[:5]]


def test_sarif_without_findings_validates():
    validator = _validator()
    clean = FIXTURES.parent / "hooks" / "positive" / "dsconfig-lint"
    result = lint("ds_config.json", "--no-config", "--format", "sarif", cwd=clean)
    assert result.exit_code == 0
    document = json.loads(result.stdout)
    assert document["runs"][0]["results"] == [] and document["runs"][0]["tool"]["driver"]["rules"] == []
    assert not list(validator.iter_errors(document))


def test_sarif_rules_results_and_fixes():
    document = json.loads(lint(*ARGS, "--format", "sarif").stdout)
    run = document["runs"][0]
    assert document["version"] == "2.1.0" and run["tool"]["driver"]["version"] == __version__
    rules = run["tool"]["driver"]["rules"]
    assert [rule["id"] for rule in rules] == sorted(rule["id"] for rule in rules)
    for rule in rules:
        assert rule["helpUri"].startswith("https://") and rule["id"].lower() in rule["helpUri"]
        assert rule["shortDescription"]["text"] and rule["fullDescription"]["text"]
        assert rule["defaultConfiguration"]["level"] in ("error", "warning", "note")
    for result in run["results"]:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
        location = result["locations"][0]["physicalLocation"]
        assert location["artifactLocation"]["uriBaseId"] == "%SRCROOT%"
        assert not location["artifactLocation"]["uri"].startswith("/")
    fixed = {r["ruleId"]: r["fixes"][0] for r in run["results"] if "fixes" in r}
    assert fixed["DS201"]["properties"]["applicability"] == "safe"
    assert fixed["DS202"]["properties"]["applicability"] == "unsafe"
    replacement = fixed["DS201"]["artifactChanges"][0]["replacements"][0]
    assert replacement["insertedContent"]["text"] == "32"
    assert replacement["deletedRegion"] == {"startLine": 3, "startColumn": 37, "endLine": 3, "endColumn": 41}
    yaml_fix = fixed["ACC016"]["artifactChanges"][0]["replacements"][0]
    assert yaml_fix["insertedContent"]["text"] == '"no"'


def test_sarif_paths_outside_the_working_directory_are_absolute_file_uris(tmp_path):
    config = tmp_path / "ds_config.json"
    config.write_text('{"train_batch_size": 8.0}')
    document = json.loads(lint(str(config), "--no-config", "--format", "sarif").stdout)
    uri = document["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert uri["uri"].startswith("file:///") and "uriBaseId" not in uri


# -- github --------------------------------------------------------------------------------------------


def test_github_escaping_is_that_of_actions_core():
    assert escape.workflow_data("50% done\r\nnext: a, b") == "50%25 done%0D%0Anext: a, b"
    assert escape.workflow_property("a:b,c%\n") == "a%3Ab%2Cc%25%0A"


def test_github_annotation_levels_and_properties(tmp_path):
    result = lint(*ARGS, "--format", "github")
    lines = result.stdout.splitlines()
    assert all(re.match(r"^::(error|warning|notice) file=[^,]+,line=\d+,col=\d+,title=dsconfig [A-Z]+\d{3}::", line)
               for line in lines), lines
    assert any(line.startswith("::warning ") and "title=dsconfig DS401::" in line for line in lines)
    assert any("loss%25scale" in line for line in lines)  # `%` in the message is escaped
    config = tmp_path / "ds,config:1.json"  # `,` and `:` in a property value
    config.write_text('{"train_batch_size": 8, "gradient_clipping": 1.0, "zero_optimization": {"stage": 7}}')
    out = lint(config.name, "--no-config", "--format", "github", cwd=tmp_path).stdout
    assert "file=ds%2Cconfig%3A1.json,line=" in out


def test_info_findings_are_notices(tmp_path):
    config = tmp_path / "ds_config.json"
    config.write_text('{"train_micro_batch_size_per_gpu": 1, "gradient_clipping": 1.0}')
    out = lint(str(config), "--no-config", "--show-info", "--format", "github").stdout
    assert out.startswith("::notice ") and "title=dsconfig DS205::" in out


# -- full ------------------------------------------------------------------------------------------------


def test_full_frame_carets_help_and_world_size_note():
    out = lint(*ARGS, "--format", "full").stdout
    block = out.split("\n\n")[1]  # DS202 at world size 4
    assert block.splitlines()[0].startswith("ds_config.json:3:37: error DS202 ")
    assert '3 |   "train_micro_batch_size_per_gpu": 32.0,' in block
    assert "  |                                     ^~~~" in block
    assert "= help: replace `32.0` with `16` (unsafe fix: --fix --unsafe-fixes)" in block
    assert "= note: at world size 4; fails in: parse (DeepSpeedConfig)" in block


def test_the_step_phase_in_every_format_that_names_phases(tmp_path):
    (tmp_path / "ds_config.json").write_text('{"train_batch_size": 8, "gradient_clipping": "1.0"}')
    run = ["ds_config.json", "--no-config", "--format"]
    full = lint(*run, "full", cwd=tmp_path).stdout
    assert "= note: fails in: step (the first training step: forward, backward, optimizer step)" in full
    (item,) = [i for i in json.loads(lint(*run, "json", cwd=tmp_path).stdout) if i["code"] == "DS111"]
    assert item["fails_in"] == "step"
    document = json.loads(lint(*run, "sarif", cwd=tmp_path).stdout)
    (result,) = [r for r in document["runs"][0]["results"] if r["ruleId"] == "DS111"]
    assert result["properties"]["failsIn"] == "step"
    _validator().validate(document)


def test_full_frame_keeps_tabs_under_the_caret(tmp_path):
    config = tmp_path / "ds_config.json"
    config.write_text('{\n\t"train_batch_size":\t8.0,\n\t"gradient_clipping": 1.0\n}\n')
    out = lint(str(config), "--no-config", "--format", "full").stdout
    frame = out.split("\n\n")[0].splitlines()
    source = next(line for line in frame if line.startswith("2 |"))
    carets = frame[frame.index(source) + 1]
    assert carets.endswith("^~~") and "\t" in carets
    assert carets[len("  | "):].index("^") == source[len("2 | "):].index("8.0")


def test_full_reports_config_file_findings_with_their_line(tmp_path):
    (tmp_path / "ds_config.json").write_text('{"train_batch_size": 8, "gradient_clipping": 1.0}')
    (tmp_path / ".dsconfig.toml").write_text('[[suppress]]\nfiles = "ds_config.json"\nrules = ["DS201"]\n'
                                             'reason = "legacy"\n')
    out = lint("ds_config.json", "--format", "full", cwd=tmp_path).stdout
    assert ".dsconfig.toml:1:1: warning DS900 " in out and "1 | [[suppress]]" in out


def test_full_frame_escapes_the_source_and_keeps_the_carets_under_it(tmp_path):
    # U+202E (a bidi override) and U+0089 (a C1 control) are legal raw in a JSON string
    (tmp_path / "ds_config.json").write_text('{"\u202e\x89": 1, "train_batch_size": 7.0, "gradient_clipping": 1.0}')
    out = lint("ds_config.json", "--no-config", "--format", "full", "--world-size", "7", cwd=tmp_path).stdout
    check_rendered("full", out)
    block = next(block for block in out.split("\n\n") if " DS201 " in block.splitlines()[0])
    source = next(line for line in block.splitlines() if line.startswith("1 |"))[len("1 | "):]
    carets = block.splitlines()[block.splitlines().index("1 | " + source) + 1][len("  | "):]
    assert source.startswith('{"\\u202e\\x89": 1, ')
    assert source[carets.index("^"):].startswith("7.0") and carets.strip() == "^~~"


# -- what a file name or a config holds, in every format --------------------------------------------------

UNDECODABLE = os.fsdecode(b"ds\xff_config.json")  # the byte 0xff: not UTF-8, given by Python as "\udcff"
CONTROL = "ds_config\n::error file=x::\x1b[31m\r\x9b\u202e.json"
SURROGATES = '{"train_batch_size": 8, "gradient_clipping": 1.0, "\\ud800": 1, "communication_data_type": "\\udcff"}'


@pytest.mark.parametrize("fmt", report.FORMATS)
def test_lone_surrogates_in_keys_and_values_in_every_format(tmp_path, fmt):
    (tmp_path / "ds_config.json").write_text(SURROGATES)
    result = lint("ds_config.json", "--no-config", "--world-size", "8", "--format", fmt, cwd=tmp_path)
    assert result.exit_code == 1, result.output  # DS406 (the value), not an internal error
    check_rendered(fmt, result.stdout)
    if fmt in ("json", "sarif"):
        text = json.dumps(json.loads(result.stdout))
        assert '"/\\ud800"' in text and "\\\\udcff" in text  # the pointer exact, the message showing `\udcff`
    else:
        assert "Unknown key `\\ud800`" in result.stdout and "'\\udcff'" in result.stdout


def test_a_name_that_is_not_utf8_keeps_its_bytes_in_json_and_sarif(tmp_path):
    (tmp_path / UNDECODABLE).write_text('{"train_batch_size": 7.0}')
    items = json.loads(lint(UNDECODABLE, "--no-config", "--format", "json", cwd=tmp_path).stdout)
    assert {os.fsencode(item["file"]) for item in items} == {b"ds\xff_config.json"}
    document = json.loads(lint(UNDECODABLE, "--no-config", "--format", "sarif", cwd=tmp_path).stdout)
    uris = {result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            for result in document["runs"][0]["results"]}
    assert uris == {"ds%FF_config.json"} and unquote_to_bytes(uris.pop()) == b"ds\xff_config.json"
    assert not list(_validator().iter_errors(document))
    concise = lint(UNDECODABLE, "--no-config", cwd=tmp_path).stdout
    assert concise.startswith("ds\\udcff_config.json:1:")


@pytest.mark.parametrize("fmt", ["concise", "full"])
def test_concise_and_full_escape_the_file_name(tmp_path, fmt):
    (tmp_path / CONTROL).write_text('{"train_batch_size": 7.0}')
    out = lint(CONTROL, "--no-config", "--show-info", "--format", fmt, cwd=tmp_path).stdout
    check_rendered(fmt, out)
    assert out.startswith("ds_config\\n::error file=x::\\x1b[31m\\r\\x9b\\u202e.json:1:1: info DS509 ")
    assert not any(workflow_commands.parse(line) for line in out.split("\n"))


def test_a_name_that_would_start_a_workflow_command_is_written_with_dot_slash(tmp_path):
    (tmp_path / "::add-mask::ds_config.json").write_text('{"train_batch_size": 7.0}')
    out = lint("::add-mask::ds_config.json", "--no-config", "--show-info", cwd=tmp_path).stdout
    assert out.startswith("./::add-mask::ds_config.json:1:1: info DS509 ")
    assert not any(workflow_commands.parse(line) for line in out.split("\n"))


def test_a_key_holding_a_legacy_workflow_command_is_escaped(tmp_path):
    (tmp_path / "ds_config.json").write_text('{"train_batch_size": 8, "##[add-mask]secret": 1}')
    for fmt in report.FORMATS:
        out = lint("ds_config.json", "--no-config", "--format", fmt, cwd=tmp_path).stdout
        assert not [line for line in out.split("\n") if workflow_commands.parse(line) is not None
                    and workflow_commands.parse(line).name == "add-mask"], fmt
        if fmt in ("json", "sarif"):  # escaped the JSON way: the text parses back to the key
            assert "##[add-mask]secret" in json.dumps(json.loads(out), ensure_ascii=False)


def test_github_annotations_name_the_real_file(tmp_path):
    (tmp_path / CONTROL).write_text('{"train_batch_size": 7.0}')
    out = lint(CONTROL, "--no-config", "--show-info", "--format", "github", cwd=tmp_path).stdout
    commands = [workflow_commands.parse(line) for line in out.split("\n")[:-1]]
    assert [command.name for command in commands] == ["notice", "error", "notice"]
    assert all(command.properties["file"] == CONTROL for command in commands)
    assert commands[1].properties["line"] == "1" and commands[1].properties["col"] == "22"


@pytest.mark.parametrize("fmt", ["sarif", "github"])
def test_statistics_is_refused_with_sarif_and_github(fmt, tmp_path):
    result = lint(*ARGS, "--statistics", "--format", fmt, "-o", str(tmp_path / "out"))
    assert result.exit_code == 2 and result.stdout == ""
    assert f"--statistics prints a table of counts instead of the findings (as text, or with --format json); " \
           f"--format {fmt} cannot hold it" in result.stderr
    assert not (tmp_path / "out").exists()


# -- colour ----------------------------------------------------------------------------------------------


def test_color_always_never_and_no_color():
    always = lint(*ARGS, "--color", "always").stdout
    assert ANSI.search(always) and ANSI.sub("", always) == lint(*ARGS).stdout
    assert not ANSI.search(lint(*ARGS, "--color", "never").stdout)
    # auto: CliRunner is not a terminal, so no colour; NO_COLOR never turns `always` off (it is explicit)
    assert not ANSI.search(lint(*ARGS).stdout)
    assert ANSI.search(lint(*ARGS, "--color", "always", env={"NO_COLOR": "1"}).stdout)
    full = lint(*ARGS, "--format", "full", "--color", "always").stdout
    assert ANSI.sub("", full) == lint(*ARGS, "--format", "full").stdout


def test_color_auto_honours_no_color_on_a_terminal(monkeypatch, tmp_path):
    """A real pseudo-terminal: colour by default, none with NO_COLOR set (and non-empty)."""
    import subprocess
    import sys
    pty = pytest.importorskip("pty")
    config = FIXTURES / "ds_config.json"

    def run(env_extra):
        env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
        env.update(env_extra)
        leader, follower = pty.openpty()
        proc = subprocess.Popen([sys.executable, "-m", "dsconfig", "lint", str(config), "--no-config"],
                                stdout=follower, stderr=subprocess.DEVNULL, env=env, cwd=ROOT)
        os.close(follower)
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:
                break
            if not chunk:
                break
            chunks.append(chunk)
        proc.wait()
        os.close(leader)
        return b"".join(chunks).decode()

    assert ANSI.search(run({}))
    assert not ANSI.search(run({"NO_COLOR": "1"}))


# -- output file ------------------------------------------------------------------------------------------


def test_output_file(tmp_path):
    target = tmp_path / "out.sarif"
    result = lint(*ARGS, "--format", "sarif", "-o", str(target))
    assert result.exit_code == 1 and result.stdout == ""
    assert json.loads(target.read_text())["version"] == "2.1.0"
