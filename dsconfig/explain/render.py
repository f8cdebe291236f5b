"""`dsconfig explain` output: a table for people, one JSON object for programs, and a diff of two.

Text: one row per key, `key = value   source`; under a row, every value another source gave at
that key and lost, struck through (SGR 9 on a colour terminal, `~~value~~` otherwise) with why.
JSON: {"context", "config", "received", "sources", "unresolved", "ignored", "failed", "findings"}; numbers
JSON cannot hold (Accelerate's infinite steps_per_print) are written as the strings "Infinity",
"-Infinity" and "NaN".

Everything shown comes from files and the command line: the text formats escape each piece as it is
placed (dsconfig.escape: a key may start a row, so keys get `escape.line`; values, sources, file names
and messages `escape.inline`), before any width is measured; the JSON is `escape.json_text`.
"""

from __future__ import annotations

import json
import math

from .. import escape
from ..pointers import dotted
from ..values import brief
from .chain import Explanation, leaves, same
from .ledger import DEFAULT, Entry, Origin

KEY_WIDTH = 60
VALUE_WIDTH = 24


def _number_text(value) -> str:
    return "Infinity" if value > 0 else "-Infinity" if value < 0 else "NaN"


def _value_text(value) -> str:
    """A value as a row shows it: its JSON text (cut), escaped."""
    if isinstance(value, float) and not math.isfinite(value):
        return _number_text(value)
    return escape.inline(brief(value, 60))


def _key_text(pointer: str) -> str:
    """A key as a row shows it: dotted and escaped; it may start a line, so it is never a CI command."""
    return escape.line(dotted(pointer))


def _shown(text: str) -> str:
    """A source, a note, a file name inside a line: escaped."""
    return escape.inline(text)


def origin_text(origin: Origin) -> str:
    where = origin.where()
    if origin.kind in ("json", "yaml"):
        return where + (f" ({origin.detail})" if origin.kind == "yaml" and origin.detail else "")
    if origin.kind == "flag":
        return origin.detail
    if origin.kind == "training-args":
        return f"TrainingArguments {origin.detail}" + (f" ({where})" if where else "")
    return origin.detail + (f" ({where})" if where else "")


def source_text(result: Explanation, pointer: str) -> str:
    """Who set the value at `pointer`, as a row shows it (or what would, when it is unresolved)."""
    if pointer in result.unresolved:
        return "unresolved: " + result.unresolved[pointer]
    entry = result.sources.get(pointer)
    return origin_text(entry.origin) if entry else ""


class _Style:
    def __init__(self, color: bool):
        self.color = color

    def struck(self, text: str) -> str:
        return f"\x1b[9m{text}\x1b[0m" if self.color else f"~~{text}~~"

    def dim(self, text: str) -> str:
        return f"\x1b[2m{text}\x1b[0m" if self.color else text

    def bold(self, text: str) -> str:
        return f"\x1b[1m{text}\x1b[0m" if self.color else text


def heading(result: Explanation) -> str:
    facts = result.facts
    who = facts["who"]
    if facts.get("transformers_version"):
        who += f" (transformers {facts['transformers_version']})"
    if facts.get("backend") == "fsdp":
        line = f"What {who} holds at world size {facts['world_size']} ({facts['world_size_from']})"
    else:
        line = (f"What DeepSpeed {facts['deepspeed_version']} receives from {who} at world size "
                f"{facts['world_size']} ({facts['world_size_from']})")
    if facts.get("model"):
        line += f", model {facts['model']}" + (f" (hidden_size {facts['hidden_size']})" if facts["hidden_size"] else "")
    return line + "; files: " + (", ".join(facts["files"]) or "none")


def text(result: Explanation, color: bool = False, defaults: bool = True) -> str:
    style = _Style(color)
    lines = [style.bold(escape.line(heading(result))), ""]
    visible, hidden = [], 0
    for pointer, value in leaves(result.config):
        entry = result.sources.get(pointer)
        overridden = result.overridden.get(pointer, [])
        is_default = entry is not None and entry.origin.kind == DEFAULT and not overridden
        if is_default and not defaults:
            hidden += 1
        else:
            visible.append((pointer, value, overridden, is_default))
    # escaped before the widths are measured: a key holding a newline is one row, `\n` counted as two
    width = min(KEY_WIDTH, max((len(_key_text(row[0])) for row in visible), default=0))
    value_width = min(VALUE_WIDTH, max((len(_value_text(row[1])) for row in visible), default=0))
    for pointer, value, overridden, is_default in visible:
        shown = f"{_key_text(pointer):<{width}} = {_value_text(value):<{value_width}}"
        row = f"{shown}  {_shown(source_text(result, pointer))}".rstrip()
        lines.append(style.dim(row) if is_default else row)
        for lost in overridden:
            lines.append(" " * 4 + f"{style.struck(_value_text(lost.value))} {_shown(origin_text(lost.origin))}"
                         + (f": {_shown(lost.note)}" if lost.note else ""))
    if hidden:
        lines.append(f"({hidden} keys at DeepSpeed's defaults not shown; drop --no-defaults to see them)")
    if result.ignored:
        lines += ["", "Written but never read by DeepSpeed:"]
        lines += [f"  {_key_text(p)} = {_value_text(e.value)}   {_shown(origin_text(e.origin))}"
                  for p, e in result.ignored.items()]
    if result.failed:
        lines += ["", "The run stops before training:"]
        lines += [escape.line(f"  {line}") for line in result.failed]
    return "\n".join(lines) + "\n"


def _plain(value):
    """JSON-safe: non-finite floats as strings (a YAML key too: `.nan: 1`)."""
    if isinstance(value, float) and not math.isfinite(value):
        return _number_text(value)
    if isinstance(value, dict):
        return {_number_text(key) if isinstance(key, float) and not math.isfinite(key) else key: _plain(item)
                for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value


def _origin_dict(entry: Entry) -> dict:
    origin = entry.origin
    return {"source": origin.kind, "detail": origin.detail, "file": origin.file, "line": origin.line,
            "column": origin.column}


def as_dict(result: Explanation) -> dict:
    sources = {}
    for pointer, entry in result.sources.items():
        item = _origin_dict(entry)
        if pointer in result.unresolved:
            item = {"source": "unresolved", "detail": result.unresolved[pointer], "file": None, "line": None,
                    "column": None}
        lost = result.overridden.get(pointer)
        if lost:
            item["overridden"] = [dict(_origin_dict(e), value=_plain(e.value), note=e.note) for e in lost]
        sources[pointer] = item
    return {
        "context": _plain(result.facts),
        "config": _plain(result.config),
        # the dict handed to deepspeed.initialize (the Trainer's or Accelerate's), before DeepSpeedConfig's defaults
        "received": _plain(result.stages.get("final")),
        "sources": sources,
        "unresolved": dict(result.unresolved),
        "ignored": {p: dict(_origin_dict(e), value=_plain(e.value)) for p, e in result.ignored.items()},
        "failed": list(result.failed),
        "findings": [f.as_dict() for f in result.findings],
    }


def dumps(value) -> str:
    """JSON for `--format json`: what a file holds comes back as the same strings when parsed, and no raw
    control character, bidi override, lone surrogate or CI command is written (escape.json_text)."""
    return escape.json_text(json.dumps(value, indent=2, ensure_ascii=False, allow_nan=False)) + "\n"


def as_json(result: Explanation) -> str:
    return dumps(as_dict(result))


# -- two explanations side by side ---------------------------------------------------------------------

def differences(left: Explanation, right: Explanation) -> list[tuple[str, object, object]]:
    """(pointer, left value, right value) for every key whose effective value differs; a key only one
    side has shows the other side's value as the sentinel ABSENT."""
    a, b = dict(leaves(left.config)), dict(leaves(right.config))
    rows = []
    for pointer in list(a) + [p for p in b if p not in a]:
        x, y = a.get(pointer, ABSENT), b.get(pointer, ABSENT)
        if x is ABSENT or y is ABSENT or not same(x, y):
            rows.append((pointer, x, y))
    return rows


ABSENT = type("Absent", (), {"__repr__": lambda self: "(absent)"})()


def diff_text(left: Explanation, right: Explanation, left_name: str, right_name: str, color: bool = False) -> str:
    style = _Style(color)
    rows = differences(left, right)
    lines = [style.bold(escape.line(f"--- {left_name}: {heading(left)}")),
             style.bold(escape.line(f"+++ {right_name}: {heading(right)}")), ""]
    if not rows:
        lines.append("The two effective configs are the same.")
    both = [row for row in rows if ABSENT not in (row[1], row[2])]
    for pointer, x, y in both:
        lines.append(_key_text(pointer))
        for sign, value, result in (("-", x, left), ("+", y, right)):
            source = _shown(source_text(result, pointer))
            lines.append(f"  {sign} {_value_text(value):<{VALUE_WIDTH}} {source}".rstrip())
    # A key only one side has (a release's new setting, a section only one file writes): one line each.
    for sign, name, side, index in (("-", left_name, left, 1), ("+", right_name, right, 2)):
        only = [row for row in rows if row[3 - index] is ABSENT]
        if only:
            lines += ["", escape.line(f"Only in {name}:")]
            lines += [f"  {sign} {_key_text(row[0])} = {_value_text(row[index])}   {_shown(source_text(side, row[0]))}"
                      .rstrip() for row in only]
    if rows:
        lines += ["", f"{len(rows)} key{'' if len(rows) == 1 else 's'} differ"
                  + (f" ({len(both)} in both)." if len(both) != len(rows) else ".")]
    return "\n".join(lines) + "\n"



def diff_dict(left: Explanation, right: Explanation) -> dict:
    rows = []
    for pointer, x, y in differences(left, right):
        rows.append({"pointer": pointer,
                     "left": None if x is ABSENT else _plain(x), "left_present": x is not ABSENT,
                     "right": None if y is ABSENT else _plain(y), "right_present": y is not ABSENT})
    return {"left": as_dict(left), "right": as_dict(right), "differences": rows}


def diff_json(left: Explanation, right: Explanation) -> str:
    return dumps(diff_dict(left, right))
