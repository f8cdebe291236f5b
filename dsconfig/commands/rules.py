"""`dsconfig rules` lists every rule; `dsconfig rule CODE_OR_NAME` explains one.

Exit codes: 0, or 2 for an unknown rule (one line on stderr, with a did-you-mean).
"""

from __future__ import annotations

import json
import shutil
import sys

import click

_FORMATS = click.Choice(("text", "json"))


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
    from .. import ruledocs

    found = lookup(code_or_name)
    if found is None:
        click.echo(f"dsconfig: error: {unknown_message(code_or_name)}", err=True)
        sys.exit(2)
    if output_format == "json":
        click.echo(json.dumps(ruledocs.as_dict(found), indent=2, ensure_ascii=False))
        return
    try:
        output = ruledocs.example_output(found)
    except Exception as error:  # the explanation must still show if linting the example breaks
        output = [f"(could not lint the example: {type(error).__name__}: {error})"]
    width = min(max(shutil.get_terminal_size((100, 24)).columns, 60), 100)
    click.echo(ruledocs.terminal(found, width=width, output=output), nl=False)


def lookup(text: str):
    """The rule for a code (any case) or a name, or None."""
    from ..rules import BY_NAME, RULES

    text = text.strip()
    return RULES.get(text.upper()) or BY_NAME.get(text.lower())


def unknown_message(text: str) -> str:
    import difflib

    from ..rules import RULES

    spellings = {code.lower(): code for code in RULES}
    spellings.update({rule.name: rule.code for rule in RULES.values()})
    guess = difflib.get_close_matches(text.strip().lower(), list(spellings), n=1, cutoff=0.6)
    if guess:
        code = spellings[guess[0]]
        return f"unknown rule `{text}`; did you mean {code} ({RULES[code].name})?"
    return f"unknown rule `{text}`; `dsconfig rules` lists them all"
