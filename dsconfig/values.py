"""Small helpers for talking about JSON values in messages."""

from __future__ import annotations

import difflib
import json


def to_json(value) -> str:
    """The JSON text of a value (for messages and fixes); repr() for what JSON cannot hold."""
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)


def is_auto(value) -> bool:
    return isinstance(value, str) and value == "auto"


def json_type(value) -> str:
    """The JSON Schema type name of a parsed value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def describe(value) -> str:
    """`null`, `a boolean`, `an integer`, `a number`, `a string`, `an array`, `an object`."""
    name = json_type(value)
    if name == "null":
        return name
    return ("an " if name[0] in "aeiou" else "a ") + name


def closest(word, choices, cutoff: float = 0.7) -> str | None:
    """The choice `word` most likely meant, or None."""
    match = difflib.get_close_matches(str(word), list(choices), n=1, cutoff=cutoff)
    return match[0] if match else None
