"""The TrainingArguments a launch's command line gives: `--per_device_train_batch_size 8 --bf16 True ...`.

A Trainer script parses its arguments with HfArgumentParser over TrainingArguments and dataclasses of its
own. dsconfig knows TrainingArguments' options (schemas/launchers.json, from the real parser): each is read
as HfArgumentParser reads it (its type, `--bf16` alone as True, `--no_X`, the last one given wins); the
script's own options are passed over. Only exact spellings count: argparse would also take an abbreviation,
but which one it means depends on the script's other options.
"""

from __future__ import annotations

from typing import NamedTuple

from . import argv
from .shell import SPLAT, UNKNOWN, Partial

_TRUE = ("yes", "true", "t", "y", "1")
_FALSE = ("no", "false", "f", "n", "0")
# What argparse converts with a type dsconfig can replay; other fields are kept as written (str)
_CONVERT = {"int": int, "float": float, "str": str}


class TrainerFlags(NamedTuple):
    values: dict  # TrainingArguments field -> value, as HfArgumentParser would set it
    unknown: frozenset  # fields given a value the script does not determine
    uncertain: bool  # a SPLAT among the words: any field may also have been given
    errors: tuple  # what HfArgumentParser would refuse: ("--per_device_train_batch_size", "invalid int value: 'x'")


def string_to_bool(text: str):
    """transformers.hf_argparser.string_to_bool: True, False, or None for a word it refuses."""
    lowered = text.lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    return None


def _convert(spec, spelling: str, text):
    if text is UNKNOWN:
        return UNKNOWN, None
    if spec.type == "bool":
        value = string_to_bool(text)
        if value is None:
            return None, f"Truthy value expected: got {text} but expected one of yes/no, true/false, t/f, y/n, 1/0 " \
                         "(case insensitive)."
        return value, None
    convert = _CONVERT.get(spec.type, str)
    try:
        value = convert(text)
    except ValueError:
        return None, f"invalid {spec.type} value: '{text}'"
    if spec.choices is not None and value not in spec.choices:
        return None, f"invalid choice: '{text}' (choose from {', '.join(map(str, spec.choices))})"
    return value, None


def read(words, parser: str = "training_args") -> TrainerFlags:
    """The fields of `parser`'s dataclass (schemas/launchers.json: TrainingArguments, or TRL's GRPOConfig) the
    words give."""
    table, _ = argv.options(parser)
    values: dict = {}
    unknown: set[str] = set()
    errors: list = []
    uncertain = False
    words = list(words)
    i = 0
    while i < len(words):
        word = words[i]
        i += 1
        if word is SPLAT:
            uncertain = True
            continue
        if isinstance(word, Partial) and word.prefix.startswith("--"):
            spec = table.get(word.prefix.partition("=")[0])
            if spec is not None and "=" in word.prefix:
                unknown.add(spec.dest)  # --per_device_train_batch_size=$BS
                values.pop(spec.dest, None)
            elif spec is None and "=" not in word.prefix:
                uncertain = True  # --$NAME: any option
            continue
        if not isinstance(word, str) or not word.startswith("--"):
            continue
        spelling, attached = word, None
        if spelling not in table and "=" in word:
            spelling, _, attached = word.partition("=")
        spec = table.get(spelling)
        if spec is None:
            continue  # another dataclass's option, or no option at all
        if spec.words == "flag":
            value = spec.const
        elif attached is not None:
            value = attached
        else:
            following = words[i] if i < len(words) else None
            if isinstance(following, Partial):
                following = UNKNOWN
            if following is SPLAT or following is None or argv._looks_like_option(following):
                if spec.words == "optional" and following is not SPLAT:
                    value = spec.const
                elif following is SPLAT:  # `--gradient_accumulation_steps $GAS`, `--bf16 $BF16`: unknown
                    unknown.add(spec.dest)
                    values.pop(spec.dest, None)
                    i += 1
                    continue
                else:
                    errors.append((spelling, "expected one argument"))
                    continue
            elif spec.words == "+":
                taken = []
                while i < len(words) and isinstance(words[i], str) and not argv._looks_like_option(words[i]):
                    taken.append(words[i])
                    i += 1
                if i < len(words) and words[i] is UNKNOWN:
                    unknown.add(spec.dest)
                values[spec.dest] = taken
                continue
            else:
                value = following
                i += 1
        if spec.words != "flag" and not (value is spec.const and attached is None):
            value, error = _convert(spec, spelling, value)
            if error is not None:
                errors.append((spelling, error))
                continue
            if spec.words == "+" and value is not UNKNOWN:
                value = [value]  # --include_for_metrics=loss: a list of one
        if value is UNKNOWN:
            unknown.add(spec.dest)
            values.pop(spec.dest, None)
        else:
            unknown.discard(spec.dest)
            values[spec.dest] = value
    return TrainerFlags(values, frozenset(unknown), uncertain, tuple(errors))
