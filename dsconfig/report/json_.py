"""A JSON list with one object per finding: exactly the keys of Finding.as_dict, documented in the README
(code, name, severity, message, file, line, column, pointer, world_size, fails_in, fix), plus `related`
(a list of {file, line, column, message} evidence lines) only on findings that have evidence elsewhere,
so the output of every other finding stays as it was, and `deepspeed_version` (the DeepSpeed release replayed)
on DeepSpeed findings. Stable: other new information goes to SARIF."""

from __future__ import annotations

import json

from ..escape import json_text


def _item(finding, release) -> dict:
    item = finding.as_dict()
    if release is not None and finding.code.startswith("DS"):
        item["deepspeed_version"] = release.version
    if finding.related:
        item["related"] = [{"file": file, "line": line, "column": column, "message": note}
                           for file, line, column, note in finding.related]
    return item


def chunks(findings, context):
    """The bytes json.dumps(list, indent=2) writes, an item at a time: `[`, each object indented by two
    more, `,` between them, `]`; `[]` for none."""
    release = getattr(context, "release", None)
    first = True
    for finding in findings:
        item = json.dumps(_item(finding, release), indent=2, ensure_ascii=False).replace("\n", "\n  ")
        yield json_text(("[\n  " if first else ",\n  ") + item)
        first = False
    yield "[]\n" if first else "\n]\n"
