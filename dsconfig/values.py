"""Small helpers for talking about JSON values in messages."""

from __future__ import annotations

import json
import sys

from .budget import spend_closest


def to_json(value) -> str:
    """The JSON text of a value (for messages and fixes); repr() for what JSON cannot hold, and "a N-digit
    number" for an integer past Python's int-to-text limit (see int_text)."""
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        if type(value) is int:
            return int_text(value)
        try:
            return repr(value)
        except ValueError:  # a container holding such an integer
            return _bounded(value, sys.maxsize, to_json, whole=True)


def int_text(number: int) -> str:
    """str(number), or "a N-digit number" past Python's int-to-text limit (sys.get_int_max_str_digits(),
    4,300 digits by default), where str() raises ValueError. json.load and a decimal YAML or TOML integer
    stop at that limit, but YAML's (and TOML's) 0x, 0o and 0b integers do not: `0x` and 5,000 hex digits
    is an int no message can print."""
    try:
        return str(number)
    except ValueError:
        return f"a {'negative ' if number < 0 else ''}{digits(number)}-digit number"


def key_token(key):
    """A mapping key as a JSON-pointer token can hold it: the key, or for an integer too long for str() (a YAML
    `? 0x...` key of thousands of digits) its hex() text, which has no length limit and stays unique."""
    if type(key) is int and not -10 ** 18 < key < 10 ** 18 and not printable(key):  # str() only for the huge
        return hex(key)
    return key


def printable(number: int) -> bool:
    """Whether str() can write the integer (see int_text)."""
    try:
        str(number)
    except ValueError:
        return False
    return True


def digits(number: int) -> int:
    """The decimal digits of abs(number), counted without str() (which raises past the limit)."""
    import math
    number = abs(number)
    if number < 10 ** 18:
        return len(str(number))
    estimate = math.log10(number)  # a float: exact but next to a power of ten, where 10 ** k decides
    count = math.floor(estimate) + 1
    if abs(estimate - round(estimate)) < 1e-9:
        power = round(estimate)
        count = power + 1 if number >= 10 ** power else power
    return count


class _Full(Exception):
    pass


def brief(value, limit: int = 120) -> str:
    """The JSON text of a value for a message, at most about `limit` characters ("..." ends a cut).

    YAML aliases share structure: twenty nested `{a: *x, b: *x}` anchors are a few hundred bytes
    whose JSON text is millions of characters long. This walks only as far as it writes, so a
    message costs the same whatever the value expands to.
    """
    text = _bounded(value, limit, to_json)
    return to_json(value) if text is None else text  # None: it fits, so the exact text is short


def py_str(value, limit: int = 4096) -> str:
    """`str(value)` as Accelerate computes it (it calls str() on settings), cut after `limit`
    characters for a list or mapping: such a value never equals a setting's word or a real path
    (longer than PATH_MAX), so the cut changes no verdict, and an alias bomb costs nothing."""
    if not isinstance(value, (dict, list, tuple)):
        return int_text(value) if type(value) is int else str(value)
    text = _bounded(value, limit, repr)
    if text is not None:
        return text
    try:
        return str(value)
    except ValueError:  # it holds an integer too long for str()
        return _bounded(value, limit, repr, whole=True)


def _bounded(value, limit: int, scalar, whole: bool = False) -> str | None:
    """The text of `value` (scalars written by `scalar`), or None when it is no longer than `limit` (with
    `whole`: the text then). An integer too long for str() is written as int_text writes it."""
    parts: list[str] = []
    room = [limit]

    def put(text: str) -> None:
        parts.append(text)
        room[0] -= len(text)
        if room[0] < 0:
            raise _Full

    def walk(node) -> None:
        if isinstance(node, dict):
            put("{")
            for index, (key, item) in enumerate(node.items()):
                put(", " if index else "")
                put(scalar(key if isinstance(key, str) else _text(key)[:limit]) + ": ")
                walk(item)
            put("}")
        elif isinstance(node, (list, tuple)):
            put("[")
            for index, item in enumerate(node):
                put(", " if index else "")
                walk(item)
            put("]")
        elif type(node) is int:
            put(int_text(node)[:limit + 1])
        else:
            put(scalar(node[:limit + 1] if isinstance(node, str) else node)[:limit + 1])

    try:
        walk(value)
    except (_Full, RecursionError):
        return "".join(parts)[:limit] + "..."
    return "".join(parts) if whole else None


def _text(key) -> str:
    return int_text(key) if type(key) is int else str(key)


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


def closest(word, choices, cutoff: float = 0.7, *, ignore_case: bool = False, unambiguous: bool = False):
    """The choice `word` most likely meant, or None: dsconfig's one "did you mean".

    By default difflib's closest match scoring at least `cutoff`. With `ignore_case` the word (stripped)
    and the choices are compared lower-cased and the choice is returned as spelled; with `unambiguous`,
    a tie for the best score means no guess (for fixes that write the guess into the file). A file spends
    at most dsconfig.budget.CLOSEST_PER_FILE of these; past that, no guess.
    """
    if not spend_closest():
        return None
    import difflib  # only a file with a misspelling pays for it
    if unambiguous:
        text = str(word).strip().lower() if ignore_case else str(word)
        scored = sorted(((difflib.SequenceMatcher(None, text, c.lower() if ignore_case else c).ratio(), c)
                         for c in choices), reverse=True)
        if not scored:
            return None
        best, second = scored[0], scored[1] if len(scored) > 1 else (0.0, None)
        return best[1] if best[0] >= cutoff and best[0] > second[0] else None
    if ignore_case:
        spelled = {str(c).lower(): c for c in choices}
        match = difflib.get_close_matches(str(word).strip().lower(), list(spelled), n=1, cutoff=cutoff)
        return spelled[match[0]] if match else None
    match = difflib.get_close_matches(str(word), list(choices), n=1, cutoff=cutoff)
    return match[0] if match else None


_TRIAL_LIMIT = 1 << 18


def divisors(n: int, at_most: int | None = None) -> list[int]:
    """The divisors of n (those up to `at_most` when given), ascending.

    Trial division stops after 2**18 candidates: exact for every n below 2**36, and for a larger
    n (a fuzzer's 10**40) the divisors below 2**18 and their cofactors, found in milliseconds
    instead of never. No GPU count or micro batch comes near either bound.
    """
    import math
    limit = min(math.isqrt(n), _TRIAL_LIMIT)
    small = [d for d in range(1, limit + 1) if n % d == 0]
    large = [n // d for d in reversed(small) if n // d > limit]
    found = small + large
    return found if at_most is None else [d for d in found if d <= at_most]


# Real configs hold a few hundred values, nested a handful of levels; a YAML alias can share one node a million
# times (a bomb) or nest it in itself (a cycle). Whatever must walk or write out a whole value stops at these.
MAX_NODES = 100_000
MAX_DEPTH = 100


def too_big(value, max_nodes: int = MAX_NODES, max_depth: int = MAX_DEPTH) -> str | None:
    """"nodes" when `value` holds more than `max_nodes` values (objects, lists and scalars, as if written out),
    "depth" when it nests deeper than `max_depth`, else None: walked iteratively, stopping at the first limit."""
    stack, seen = [(value, 1)], 0
    while stack:
        node, level = stack.pop()
        seen += 1
        if seen > max_nodes:
            return "nodes"
        if isinstance(node, (dict, list)):
            if level > max_depth:
                return "depth"
            items = node.values() if isinstance(node, dict) else node
            stack.extend((item, level + 1) for item in items)
    return None
