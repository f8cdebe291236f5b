"""`--statistics`: how many findings each rule produced, most frequent first (ruff's layout).

    3  DS106  [*] coerced-value
    1  DS400      fp16-and-bf16
"""

from __future__ import annotations

import json


def rows(findings, context):
    counts: dict[object, list] = {}
    for f in findings:
        entry = counts.setdefault(f.rule, [0, 0])
        entry[0] += 1
        entry[1] += 1 if context.fixable(f) else 0
    ordered = sorted(counts.items(), key=lambda item: (-item[1][0], item[0].code))
    return [(rule.code, rule.name, rule.severity, count, fixable) for rule, (count, fixable) in ordered]


def render(findings, context, as_json: bool = False) -> str:
    table = rows(findings, context)
    if as_json:
        return json.dumps([{"code": code, "name": name, "severity": severity, "count": count, "fixable": fixable}
                           for code, name, severity, count, fixable in table], indent=2) + "\n"
    if not table:
        return ""
    width = max(len(str(count)) for *_, count, _ in table)
    code_width = max(len(code) for code, *_ in table)
    lines = []
    for code, name, _, count, fixable in table:
        mark = "[*]" if fixable else "   "
        lines.append(f"{count:>{width}}  {code:<{code_width}}  {mark} {name}")
    return "\n".join(lines) + "\n"
