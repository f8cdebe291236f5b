"""`dsconfig lint --deepspeed-version all`: for each DeepSpeed config, which releases load and parse it and
which reject it, so a user sees whether an upgrade (or a downgrade) breaks it.

Each group of consecutive releases that behave alike (the generated data says which) is linted once,
and after the first only the files a release can change the verdict on (DeepSpeed configs, and the
Accelerate YAMLs that launch them) are linted again; neighbouring groups with the same verdict and the same first error are merged into one range.
"""

from __future__ import annotations

import json
import os
import sys

import click

from .. import escape
from ..deepspeed import releases
from ..document import reusing_readings
from ..phases import LOAD, PARSE


def lint_all_releases(run, inputs, selection, exclude, respect_gitignore: bool, output_format: str,
                      output_file) -> int:
    """`run` is the lint command's own run (collect, lint, select, suppress), called once per group."""
    with reusing_readings():  # each file is parsed once, not once per group
        verdicts = _verdicts(run, inputs, selection, exclude, respect_gitignore)
    text = _json(verdicts) if output_format == "json" else _text(verdicts)
    if output_file is not None:
        from .. import files
        files.write_atomic(output_file, text)
    else:
        click.echo(text, nl=False)
    rejected = sum(1 for ranges in verdicts.values() if any(errors for _, _, errors in ranges))
    click.echo(escape.line(f"{len(verdicts)} DeepSpeed config{'' if len(verdicts) == 1 else 's'} against "
                           f"{len(releases.SUPPORTED)} releases ({releases.SUPPORTED[0]} to {releases.NEWEST}); "
                           f"{rejected} rejected by some"), err=True)
    sys.stdout.flush()
    return 1 if rejected else 0


def _verdicts(run, inputs, selection, exclude, respect_gitignore: bool) -> dict[str, list]:
    """file -> [(first release, last release, [first error] or [])]."""
    verdicts: dict[str, list] = {}
    only = None  # after the first group: the DeepSpeed configs and the YAMLs that launch them, all that changes
    for group in releases.same_behaviour(releases.SUPPORTED):
        options = inputs.options._replace(deepspeed_version=group[-1])
        outcome = run(inputs._replace(options=options), selection, exclude, respect_gitignore,
                      fixing=False, unsafe=False, only=only)
        if only is None:
            only = frozenset(os.path.realpath(path) for path, kind in outcome.linted.items()
                             if kind in ("deepspeed", "accelerate"))
        fatal: dict[str, list] = {}
        for finding in outcome.findings:
            if finding.severity == "error" and finding.fails_in in (LOAD, PARSE) and finding.code.startswith("DS"):
                fatal.setdefault(finding.file, []).append(finding)
        for path, kind in outcome.linted.items():
            if kind != "deepspeed":
                continue
            errors = [(f.code, f.line, f.message) for f in fatal.get(path, [])[:1]]
            ranges = verdicts.setdefault(path, [])
            # the same error (code and line) in neighbouring groups is one range; its text names a release
            if ranges and [e[:2] for e in ranges[-1][2]] == [e[:2] for e in errors]:
                ranges[-1] = (ranges[-1][0], group[-1], ranges[-1][2])
            else:
                ranges.append((group[0], group[-1], errors))
    return verdicts


def _span(first: str, last: str) -> str:
    return first if first == last else f"{first} to {last}"


def _text(verdicts: dict) -> str:
    lines = []
    for path, ranges in verdicts.items():
        lines.append(escape.line(path))
        for first, last, errors in ranges:
            if errors:
                code, line, message = errors[0]
                lines.append(escape.line(f"  {_span(first, last):<18} rejects  {code} line {line}: {message}"))
            else:
                lines.append(f"  {_span(first, last):<18} accepts")
    return "\n".join(lines) + ("\n" if lines else "")


def _json(verdicts: dict) -> str:
    out = [{"file": path, "releases": [
        {"from": first, "to": last, "accepts": not errors,
         "error": {"code": errors[0][0], "line": errors[0][1], "message": errors[0][2]} if errors else None}
        for first, last, errors in ranges]} for path, ranges in verdicts.items()]
    return escape.json_text(json.dumps(out, indent=2, ensure_ascii=False)) + "\n"
