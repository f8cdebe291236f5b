"""Output formats. `concise` for people and grep, `json` for machines (stable keys, documented)."""

from __future__ import annotations

import json

FORMATS = ("concise", "json")
_COLORS = {"error": "red", "warning": "yellow", "info": "cyan"}


def concise(findings, color: bool = False) -> str:
    """`path:line:col: CODE message`, one finding per line."""
    lines = []
    for f in findings:
        code = f.code
        if color:
            import click
            code = click.style(code, fg=_COLORS[f.severity], bold=f.severity == "error")
        lines.append(f"{f.file}:{f.line}:{f.column}: {code} {f.message}")
    return "\n".join(lines) + ("\n" if lines else "")


def as_json(findings) -> str:
    return json.dumps([f.as_dict() for f in findings], indent=2, ensure_ascii=False) + "\n"


def summary(findings, files: int) -> str:
    counts = {"error": 0, "warning": 0, "info": 0}
    for f in findings:
        counts[f.severity] += 1
    parts = [f"{n} {name}{'' if n == 1 else 's'}" for name, n in counts.items() if n]
    what = ", ".join(parts) if parts else "no problems"
    return f"{what} in {files} file{'' if files == 1 else 's'}"
