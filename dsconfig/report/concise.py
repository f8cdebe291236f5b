"""`path:line:col: severity CODE message`, one finding per line; `[*]` after the code when --fix would fix it.

The severity is written out (error, warning, info): colour alone is lost in CI logs.
"""

from __future__ import annotations

from .. import escape
from ..terminal import style

COLORS = {"error": "red", "warning": "yellow", "info": "cyan"}


def header_parts(finding, context) -> tuple[str, str]:
    """(`path:line:col: severity CODE [*]`, the escaped message), styled when colour is on."""
    severity, code = finding.severity, finding.code
    if context.color:
        severity = style(severity, fg=COLORS[finding.severity], bold=finding.severity == "error")
        code = style(code, fg=COLORS[finding.severity], bold=finding.severity == "error")
    mark = " [*]" if context.fixable(finding) else ""
    where = f"{escape.path(finding.file)}:{finding.line}:{finding.column}:"
    if context.color:
        where = style(where, bold=True)
    return f"{where} {severity} {code}{mark}", escape.inline(finding.message)


def header(finding, context) -> str:
    lead, message = header_parts(finding, context)
    return f"{lead} {message}"


def chunks(findings, context):
    for finding in findings:
        yield header(finding, context) + "\n"
