"""`path:line:col: CODE message`, one finding per line; `[*]` after the code when --fix would fix it."""

from __future__ import annotations

from .. import escape

COLORS = {"error": "red", "warning": "yellow", "info": "cyan"}


def header(finding, context) -> str:
    code = finding.code
    if context.color:
        import click
        code = click.style(code, fg=COLORS[finding.severity], bold=finding.severity == "error")
    mark = " [*]" if context.fixable(finding) else ""
    where = f"{escape.path(finding.file)}:{finding.line}:{finding.column}:"
    if context.color:
        import click
        where = click.style(where, bold=True)
    return f"{where} {code}{mark} {escape.inline(finding.message)}"


def render(findings, context) -> str:
    lines = [header(f, context) for f in findings]
    return "\n".join(lines) + ("\n" if lines else "")
