"""`dsconfig rules` lists every rule; `dsconfig rule CODE_OR_NAME` explains one, with what `dsconfig lint`
reports on the rule's failing example (run here, on the example's files in a temporary folder).

Exit codes: 0, or 2 for an unknown rule (one line on stderr, with a did-you-mean).
"""

from __future__ import annotations

import json
import os
import shutil
import sys

import click

_FORMATS = click.Choice(("text", "json"))
_CONFIG_FILES = ("pyproject.toml", ".dsconfig.toml")


@click.command()
@click.option("--format", "output_format", type=_FORMATS, default="text", show_default=True,
              help="text: one rule per line; json: an array of {code, name, severity, summary, url}.")
def rules(output_format):
    """List every rule: code, name, severity and summary."""
    from ..rules import RULES

    if output_format == "json":
        items = [{"code": r.code, "name": r.name, "severity": r.severity, "summary": r.summary, "url": r.url}
                 for r in RULES.values()]
        click.echo(json.dumps(items, indent=2, ensure_ascii=False))
        return
    name_width = max(len(r.name) for r in RULES.values())
    for r in RULES.values():
        click.echo(f"{r.code:<7} {r.name:<{name_width}}  {r.severity:<7}  {r.summary}")


@click.command()
@click.argument("code_or_name")
@click.option("--format", "output_format", type=_FORMATS, default="text", show_default=True,
              help="text: the explanation, with dsconfig's output on the example; json: the rule's docs.")
def rule(code_or_name, output_format):
    """Explain one rule: what it checks, why it matters, an example and the fix (e.g. DS202 or batch-mismatch)."""
    from ..report import rule_docs

    found = lookup(code_or_name)
    if found is None:
        from ..escape import line
        click.echo(line(f"dsconfig: error: {unknown_message(code_or_name)}"), err=True)
        sys.exit(2)
    if output_format == "json":
        click.echo(json.dumps(rule_docs.as_dict(found), indent=2, ensure_ascii=False))
        return
    outputs = []
    for example in (found.failing, found.passing):
        try:
            outputs.append(example_output(found, example))
        except Exception as error:  # the explanation must still show if linting the example breaks
            outputs.append([f"(could not lint the example: {type(error).__name__}: {error})"])
    width = min(max(shutil.get_terminal_size((100, 24)).columns, 60), 100)
    click.echo(rule_docs.terminal(found, width=width, output=outputs[0], passing_output=outputs[1]), nl=False)


def lookup(text: str):
    """The rule for a code (any case) or a name, or None."""
    from ..rules import BY_NAME, RULES

    text = text.strip()
    return RULES.get(text.upper()) or BY_NAME.get(text.lower())


def unknown_message(text: str) -> str:
    from ..rules import RULES
    from ..values import closest

    spellings = {code.lower(): code for code in RULES}
    spellings.update({rule.name: rule.code for rule in RULES.values()})
    guess = closest(text.strip().lower(), spellings, cutoff=0.6)
    if guess:
        code = spellings[guess]
        return f"unknown rule `{text}`; did you mean {code} ({RULES[code].name})?"
    return f"unknown rule `{text}`; `dsconfig rules` lists them all"


# -- running a rule's example ------------------------------------------------------------------------


def example_output(rule, example=None) -> list[str]:
    """`dsconfig lint`'s lines for the rule's own findings on one of its examples (the failing one unless
    given), in the concise format."""
    found = [f for f in lint_example(example or rule.failing) if f["code"] == rule.code]
    return [f"{f['file']}:{f['line']}:{f['column']}: {f['severity']} {f['code']} {f['message']}" for f in found]


def lint_arguments(example) -> list[str]:
    """`dsconfig lint` arguments for the example: its command line, JSON output, and no configuration file from
    outside the example's folder (a folder above the temporary one must not change what the example shows)."""
    import shlex

    args = shlex.split(example.command())[2:] + ["--format", "json"]
    if not any(os.path.basename(name) in _CONFIG_FILES for name, _ in example.files):
        args.append("--no-config")
    return args


def lint_example(example) -> list[dict]:
    """Run `dsconfig lint --format json` as the example's command line says, in a fresh folder holding its
    files (the working directory while it runs, so relative paths and pyproject.toml resolve there), and
    return the findings as the JSON output lists them. Messages that mention the folder show `.` instead."""
    import contextlib
    import io
    import tempfile

    from .lint_cli import lint

    args = lint_arguments(example)
    with tempfile.TemporaryDirectory(prefix="dsconfig-example-") as folder:
        previous = os.getcwd()
        os.chdir(folder)
        out, err = io.StringIO(), io.StringIO()
        try:
            example.build(folder)
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                try:
                    lint.main(args, prog_name="dsconfig lint", standalone_mode=False)
                except SystemExit as exit_:
                    if exit_.code not in (0, 1, None):
                        raise RuntimeError(err.getvalue().strip() or f"exit status {exit_.code}") from None
        finally:
            os.chdir(previous)
        findings = json.loads(out.getvalue() or "[]")
        for spelled in {folder, os.path.realpath(folder)}:
            for finding in findings:
                finding["message"] = finding["message"].replace(spelled, ".")
    return findings
