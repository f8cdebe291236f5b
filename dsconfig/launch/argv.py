"""argparse replayed over a launcher's options (schemas/launchers.json, generated from the real parsers).

A launcher's command line is options, then the script, then the script's own arguments (argparse.REMAINDER):
`Parsed` holds the options' values by destination, the script and its arguments. Words may be UNKNOWN (a
value the shell script does not determine) or SPLAT (any number of unknown words); an option whose value is
unknown is recorded as UNKNOWN (an unknown expansion right after an option that takes a value is that value),
and any other SPLAT before the script makes every option `uncertain`.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

from ..package_data import schema_json
from .shell import SPLAT, UNKNOWN, Partial


class Parsed(NamedTuple):
    values: dict  # dest -> the value as argparse would hold it (a str, the const of a flag, UNKNOWN)
    script: object  # the script (a str, UNKNOWN) or None when the command line ends before it
    rest: tuple  # the script's arguments
    uncertain: bool  # a SPLAT among the options: any option may have been given
    error: str | None  # what argparse would refuse ("unrecognized arguments: --nproc", ...)


class _Option(NamedTuple):
    dest: str
    words: str  # "flag", "value", "optional" or "+"
    const: object
    type: str | None
    default: object
    choices: tuple | None


@functools.lru_cache(maxsize=None)
def options(parser: str) -> tuple[dict[str, _Option], bool]:
    """Option string -> option, and whether the parser accepts unique abbreviations of long options."""
    entry = schema_json("launchers.json")[parser]
    table = {}
    for option in entry["options"]:
        choices = option.get("choices")
        spec = _Option(option["dest"], option["words"], option["const"], option["type"], option["default"],
                       None if choices is None else tuple(choices))
        for spelling in option["options"]:
            table[spelling] = spec
    return table, entry["allow_abbrev"]


def defaults(parser: str) -> dict:
    return {spec.dest: spec.default for spec in options(parser)[0].values()}


def _looks_like_option(word) -> bool:
    """argparse's test: an option string starts with '-' and is not a negative number."""
    if not isinstance(word, str) or not word.startswith("-") or word == "-":
        return False
    try:
        float(word)
    except ValueError:
        return True
    return False


def _match(word: str, table: dict, abbrev: bool) -> tuple[str | None, object, str | None]:
    """(option string, explicit value after '=' or None, error) for an option word."""
    if word in table:
        return word, None, None
    if "=" in word:
        head, _, value = word.partition("=")
        if head in table:
            return head, value, None
    if abbrev and word.startswith("--"):
        head, eq, value = word.partition("=")
        found = sorted({spelling for spelling in table if spelling.startswith(head)})
        if len({table[spelling].dest for spelling in found}) == 1 and found:
            return found[0], (value if eq else None), None
        if len(found) > 1:
            return None, None, f"ambiguous option: {head} could match {', '.join(found)}"
    if len(word) > 2 and word[0] == "-" and word[1] != "-" and word[:2] in table:
        return word[:2], word[2:], None  # -Hhostfile
    return None, None, f"unrecognized arguments: {word}"


def parse(parser: str, words) -> Parsed:
    """The launcher's options up to its script, as argparse reads them."""
    table, abbrev = options(parser)
    values: dict = {}
    words = list(words)
    uncertain = False
    i = 0
    while i < len(words):
        word = words[i]
        if word is SPLAT:
            uncertain = True
            i += 1
            continue
        if isinstance(word, Partial):
            if not word.prefix.startswith("-"):
                return Parsed(values, UNKNOWN, tuple(words[i + 1:]), uncertain, None)
            spelling, _, error = _match(word.prefix.partition("=")[0], table, abbrev)
            if "=" in word.prefix and spelling is not None:
                values[table[spelling].dest] = UNKNOWN  # --nproc_per_node=$GPUS
            else:
                uncertain = True  # an option whose name the script does not determine
            i += 1
            continue
        if word is UNKNOWN or not _looks_like_option(word):
            return Parsed(values, word, tuple(words[i + 1:]), uncertain, None)
        if word == "--":
            script = words[i + 1] if i + 1 < len(words) else None
            return Parsed(values, script, tuple(words[i + 2:]), uncertain, None)
        spelling, attached, error = _match(word, table, abbrev)
        if spelling is None:
            return Parsed(values, None, (), uncertain, error)
        spec = table[spelling]
        i += 1
        if spec.words == "flag":
            if attached is not None:
                return Parsed(values, None, (), uncertain, f"argument {spelling}: ignored explicit argument "
                                                           f"'{attached}'")
            values[spec.dest] = spec.const
            continue
        if attached is not None:
            values[spec.dest] = attached
            continue
        following = words[i] if i < len(words) else None
        if isinstance(following, Partial):
            following = UNKNOWN
        if spec.words == "optional":
            if following is SPLAT:  # `--flag $VALUE`: a value or none, which the script does not say
                values[spec.dest] = UNKNOWN
                i += 1
            elif following is None or _looks_like_option(following):
                values[spec.dest] = spec.const
            else:
                values[spec.dest] = following
                i += 1
            continue
        if following is None or following is SPLAT or _looks_like_option(following):
            if following is SPLAT:  # `--master_port $PORT`: taken as the option's one value, whatever it is
                values[spec.dest] = UNKNOWN
                i += 1
                continue
            return Parsed(values, None, (), uncertain, f"argument {spelling}: expected one argument")
        if spec.words == "+":
            taken = []
            while i < len(words) and not _looks_like_option(words[i]) and words[i] is not SPLAT:
                taken.append(words[i])
                i += 1
            values[spec.dest] = taken
            continue
        values[spec.dest] = following
        i += 1
    return Parsed(values, None, (), uncertain, None)
