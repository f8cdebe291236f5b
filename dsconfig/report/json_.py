"""A JSON list with one object per finding: exactly the keys of Finding.as_dict, documented in the README
(code, name, severity, message, file, line, column, pointer, world_size, fails_in, fix). Stable: new
information goes to SARIF, never into new keys here."""

from __future__ import annotations

import json

from ..escape import json_text


def render(findings, context) -> str:
    return json_text(json.dumps([f.as_dict() for f in findings], indent=2, ensure_ascii=False)) + "\n"
