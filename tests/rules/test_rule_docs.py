"""Rule documentation: every rule is documented, its examples do what they say, docs/rules.md is the
generator's output, and `dsconfig rules` / `dsconfig rule` work."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from dsconfig import engine, settings, suppress
from dsconfig.commands.rules import example_output, lint_arguments
from dsconfig.commands.rules import rule as rule_command
from dsconfig.commands.rules import rules as rules_command
from dsconfig.launch import LAUNCH_SUFFIXES
from dsconfig.phases import PHASES
from dsconfig.report.rule_docs import markdown
from dsconfig.rules import AREAS, DOCS_URL, MODULES, RULES
from dsconfig.rules.rule import Example
from tests.helpers import options

ROOT = Path(__file__).resolve().parents[2]

# Where the implementation does not (yet) do what a rule's docs say. Remove an entry once it does.
NOT_REPORTED_YET: dict[str, str] = {}
FALSE_POSITIVE: dict[str, str] = {}


def _cases(pending: dict, strict: bool):
    return [pytest.param(code, marks=pytest.mark.xfail(reason=pending[code], strict=strict)) if code in pending
            else code for code in RULES]


def _write(folder: Path, example: Example) -> None:
    example.build(str(folder))


def _lint(folder: Path, example: Example, monkeypatch) -> list:
    """What `dsconfig lint` reports for the example: findings, then its configuration applied."""
    _write(folder, example)
    monkeypatch.chdir(folder)
    files = list(example.lint)
    config = folder / "pyproject.toml"
    found = settings.resolve(str(config)) if config.exists() else settings.resolve(no_config=True)
    collection = engine.collect(files)  # as the command collects them: the examples may name folders
    opts = options(**example.options)._replace(found=collection.found, boundary=collection.boundary)
    findings = collection.problems + engine.lint_files(collection.files, opts).findings
    return suppress.apply(findings, collection.files, found)


# -- completeness ------------------------------------------------------------------------------

def test_the_registry_lists_every_module_rule_once():
    declared = [rule.code for module in MODULES for rule in module.RULES]
    assert sorted(declared) == sorted(RULES) and len(declared) == len(set(declared))


@pytest.mark.parametrize("code", list(RULES))
def test_docs_are_complete(code):
    rule = doc = RULES[code]
    for field in ("what", "why", "fix"):
        text = getattr(doc, field)
        assert text and text[-1] in ".`\"", f"{code}.{field} must be a sentence: {text!r}"
        assert "\\" not in text and "  " not in text, f"{code}.{field}: {text!r}"
    assert doc.fails_in and len(set(doc.fails_in)) == len(doc.fails_in)
    assert set(doc.fails_in) <= set(PHASES) | {None}, doc.fails_in
    assert doc.failing != doc.passing
    option_fields = set(engine.Options._fields)
    for example in (doc.failing, doc.passing):
        names = [name for name, _ in example.shown_files()]
        assert len(names) == len(set(names))
        folders = {os.path.dirname(name) for name in names + [link for link, _ in example.links]} - {""}
        assert example.lint and set(example.lint) <= set(names) | folders
        assert set(example.options) <= option_fields, example.options
        linted = example.lint[0]
        if linted in folders:
            pass  # a folder walked: the rules about walking (DS008, DS009)
        elif code.startswith("ACC"):
            assert linted.endswith(".yaml"), f"{code}: Accelerate rules are shown on a YAML file"
        elif code.startswith("DS8"):
            assert linted.endswith(".py"), f"{code}: training-script rules are shown on a script"
        elif code in LAUNCH_RULES:
            assert linted.endswith(LAUNCH_SUFFIXES), f"{code}: launch rules are shown on a launch script"
        elif code in TRAINING_PROJECT_RULES:
            # about a project's own training configs, which may be any of these
            assert linted.endswith((".json", ".yaml", ".yml", ".toml")), code
        else:
            assert linted.endswith(".json"), f"{code}: DeepSpeed rules are shown on a JSON file"
        assert all(text.endswith("\n") and not text.startswith(" ") for _, text in example.files)
    assert rule.area in [title for _, title in AREAS]


# rules shown on a project's training config (YAML, TOML) or script rather than on a ds_config.json
LAUNCH_RULES = {"DS706"}  # about a launch itself (a shell script, `lint -- COMMAND`)
TRAINING_PROJECT_RULES = {"DS006", "DS010", "DS208", "DS209"}


def test_examples_name_the_files_they_use():
    """An Accelerate example naming a ds_config.json ships it (except ACC020, which is about a missing one)."""
    for code, doc in RULES.items():
        for example in (doc.failing, doc.passing):
            texts = dict(example.files)
            for name, text in texts.items():
                match = re.search(r"deepspeed_config_file: (\S+)", text)
                if match and not (code == "ACC020" and example is doc.failing):
                    beside = os.path.normpath(os.path.join(os.path.dirname(name), match.group(1)))
                    assert match.group(1) in texts or beside in texts, (code, match.group(1))


# -- the examples do what the docs say -------------------------------------------------------------

@pytest.mark.parametrize("code", _cases(NOT_REPORTED_YET, strict=False))
def test_failing_example_reports_the_rule(code, tmp_path, monkeypatch):
    doc = RULES[code]
    found = [f for f in _lint(tmp_path, doc.failing, monkeypatch) if f.code == code]
    assert found, f"{code}'s failing example is not reported"
    assert {f.fails_in for f in found} <= set(doc.fails_in), (found, doc.fails_in)


@pytest.mark.parametrize("code", _cases(FALSE_POSITIVE, strict=True))
def test_passing_example_does_not_report_the_rule(code, tmp_path, monkeypatch):
    found = [f for f in _lint(tmp_path, RULES[code].passing, monkeypatch) if f.code == code]
    assert not found, found


def _run_command(folder: Path, example: Example, monkeypatch):
    """The command line shown with the example, run as `dsconfig lint ... --format json`."""
    from dsconfig.commands.lint_cli import lint

    _write(folder, example)
    monkeypatch.chdir(folder)
    words = shlex.split(example.command())
    assert words[:2] == ["dsconfig", "lint"]
    args = lint_arguments(example)
    assert args[:len(words) - 2] == words[2:]
    result = CliRunner().invoke(lint, args)
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, {item["code"] for item in json.loads(result.stdout)}


@pytest.mark.parametrize("code", list(RULES))
def test_failing_example_command_line_reports_the_rule(code, tmp_path, monkeypatch):
    """Through the command (configuration and suppressions included): reported, and exit 1 for errors."""
    exit_code, codes = _run_command(tmp_path, RULES[code].failing, monkeypatch)
    assert code in codes
    if RULES[code].severity == "error":
        assert exit_code == 1


@pytest.mark.parametrize("code", _cases(FALSE_POSITIVE, strict=True))
def test_passing_example_command_line_does_not_report_the_rule(code, tmp_path, monkeypatch):
    _, codes = _run_command(tmp_path, RULES[code].passing, monkeypatch)
    assert code not in codes


def test_example_output_hides_the_temporary_folder():
    output = example_output(RULES["ACC020"])
    assert output and all("dsconfig-example-" not in line for line in output)
    assert output[0].startswith("accelerate_config.yaml:")


# -- docs/rules.md -------------------------------------------------------------------------------

def _github_slug(heading: str) -> str:
    """GitHub's heading anchor: lower case, punctuation but `-` and `_` dropped, spaces to `-`."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def test_rules_md_is_generated_from_the_registry():
    current = (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
    assert current == markdown(RULES.values()), \
        "docs/rules.md is stale: run `python scripts/gen_rule_docs.py`"


def test_generator_check_mode():
    result = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_rule_docs.py"), "--check"],
                            capture_output=True, text=True, cwd=ROOT, check=False)
    assert result.returncode == 0, result.stderr


def test_every_rule_has_a_stable_url_into_rules_md():
    text = markdown(RULES.values())
    assert text.startswith("<!-- Generated by scripts/gen_rule_docs.py")
    headings = re.findall(r"^#{1,6} (.+)$", text, flags=re.MULTILINE)
    slugs = [_github_slug(h) for h in headings]
    assert len(slugs) == len(set(slugs)), "duplicate anchors"
    for code, rule in RULES.items():
        assert rule.url == f"{DOCS_URL}#{code.lower()}-{rule.name}"
        assert f"{code} {rule.name}" in headings
        assert _github_slug(f"{code} {rule.name}") == rule.anchor
        assert f"](#{rule.anchor})" in text  # linked from the overview table
    assert DOCS_URL.startswith("https://") and DOCS_URL.endswith("/docs/rules.md")


# -- dsconfig rules / dsconfig rule --------------------------------------------------------------

def test_rules_lists_every_rule():
    result = CliRunner().invoke(rules_command, [])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert len(lines) == len(RULES)
    for line, rule in zip(lines, RULES.values()):
        assert line.split()[:3] == [rule.code, rule.name, rule.severity]
        assert line.endswith(rule.summary)


def test_rules_json():
    result = CliRunner().invoke(rules_command, ["--format", "json"])
    assert result.exit_code == 0, result.output
    items = json.loads(result.stdout)
    assert [item["code"] for item in items] == list(RULES)
    for item in items:
        rule = RULES[item["code"]]
        assert item == {"code": rule.code, "name": rule.name, "severity": rule.severity, "summary": rule.summary,
                        "url": rule.url}


@pytest.mark.parametrize("spelling", ["DS202", "ds202", "batch-mismatch", " DS202 "])
def test_rule_explains_a_rule_by_code_or_name(spelling):
    result = CliRunner().invoke(rule_command, [spelling])
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert out.startswith("DS202 batch-mismatch (error)\n")
    for section in ("What it does", "Why it matters", "Example", "Use instead", "How to fix"):
        assert f"\n{section}\n" in out
    assert RULES["DS202"].url in out
    assert "$ dsconfig lint ds_config.json --world-size 8" in out
    assert re.search(r"^  ds_config\.json:\d+:\d+: error DS202 at world size 8\. DeepSpeed: Check batch related parameters",
                     out, flags=re.MULTILINE)


@pytest.mark.parametrize("code", list(RULES))
def test_rule_shows_dsconfig_output_for_every_rule(code):
    result = CliRunner().invoke(rule_command, [code])
    assert result.exit_code == 0, result.output
    reported = result.stdout.split(f"\ndsconfig reports ({code} findings only)\n", 1)[1]
    assert f": {RULES[code].severity} {code} " in reported.split("\n\n", 1)[0]


def test_rule_shows_extra_files_and_options():
    out = CliRunner().invoke(rule_command, ["DS703"]).stdout
    assert "--world-size 8 --training-args training_args.json" in out
    assert '  training_args.json:\n    {\n      "per_device_train_batch_size": 8,' in out
    out = CliRunner().invoke(rule_command, ["ACC018"]).stdout
    assert "  accelerate_config.yaml:\n" in out and "  ds_config.json:\n" in out


def test_rule_json():
    result = CliRunner().invoke(rule_command, ["ACC012", "--format", "json"])
    assert result.exit_code == 0, result.output
    item = json.loads(result.stdout)
    assert item["code"] == "ACC012" and item["url"] == RULES["ACC012"].url
    assert item["failing"]["command"] == "dsconfig lint accelerate_config.yaml"
    assert item["failing"]["files"][0]["path"] == "accelerate_config.yaml"
    assert item["fails_in"] == [None]


@pytest.mark.parametrize("typed,suggestion", [
    ("DS2002", "did you mean DS202 (batch-mismatch)?"),
    ("batch-mismach", "did you mean DS202 (batch-mismatch)?"),
    ("acc12", "did you mean ACC012 (hostfile-missing)?"),
    ("no-such-thing-at-all", "`dsconfig rules` lists them all"),
])
def test_unknown_rule_is_a_one_line_usage_error(typed, suggestion):
    result = CliRunner().invoke(rule_command, [typed])
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr == f"dsconfig: error: unknown rule `{typed}`; {suggestion}\n"


def test_the_cli_group_has_the_commands():
    from dsconfig.cli import cli
    result = CliRunner().invoke(cli, ["rule", "DS001"])
    assert result.exit_code == 0 and result.stdout.startswith("DS001 duplicate-key (error)")
    assert CliRunner().invoke(cli, ["rules"]).exit_code == 0


def test_rule_page_shows_the_output_on_both_examples():
    from click.testing import CliRunner

    from dsconfig.commands.rules import rule

    page = CliRunner().invoke(rule, ["DS201"]).output
    failing, passing = page.split("\nUse instead\n")
    assert "DS201 [*]" not in failing and "ds_config.json:" in failing.split("dsconfig reports (DS201 findings only)")[1]
    assert "dsconfig reports (DS201 findings only)\n  (no DS201 finding)" in passing
