"""A command's options declared once, as data: click builds the command from the table (help, errors,
every unusual spelling), and `parse` reads the common command lines from the same table without importing
click, which costs more than the rest of a single-file lint's imports.

`parse` gives exactly the parameters click would give, or None whenever it is not sure (an unknown or
short option, a value it would have to convert or reject, `--help`, shell completion): the caller then
runs click. tests/test_options.py holds it to click's own parse on generated command lines.
"""

from __future__ import annotations

import os
from typing import NamedTuple

TEXT, CHOICE, COUNT, FILE = "text", "choice", "count", "file"
UNSET = "<unset>"  # no default declared: None for a value, False for a flag (as in click)


class Option(NamedTuple):
    flags: tuple[str, ...]  # ("-o", "--output-file"); a switch's second flag turns it off
    name: str  # the parameter's name
    help: str
    kind: str = TEXT  # TEXT, CHOICE (`choices`), COUNT (an integer from `low` to `high`), FILE (no folder)
    choices: tuple[str, ...] = ()
    low: int | None = None
    high: int | None = None
    flag: bool = False  # no value; with two flags, an on/off switch
    multiple: bool = False
    default: object = UNSET
    metavar: str | None = None
    show_default: bool = False


class Arguments(NamedTuple):
    """The positional arguments: any number of paths."""
    name: str


def click_command(arguments: Arguments, table: tuple[Option, ...], callback, **settings):
    """The click command of the table (its help and its errors are click's)."""
    import click

    for option in reversed(table):
        callback = click.option(*_click_declaration(option), option.name, **_click_settings(option, click))(callback)
    callback = click.argument(arguments.name, nargs=-1, type=click.Path(readable=False))(callback)
    return click.command(**settings)(callback)


def _click_declaration(option: Option) -> tuple[str, ...]:
    if option.flag and len(option.flags) == 2 and option.flags[1].startswith("--no-"):
        return (f"{option.flags[0]}/{option.flags[1]}",)
    return option.flags


def _click_settings(option: Option, click) -> dict:
    settings = {"help": option.help, "metavar": option.metavar, "multiple": option.multiple}
    if option.show_default:
        settings["show_default"] = True
    if option.default is not UNSET:
        settings["default"] = option.default
    if option.flag:
        if len(option.flags) == 1:
            settings["is_flag"] = True
        return settings
    if option.kind == CHOICE:
        settings["type"] = click.Choice(option.choices)
    elif option.kind == COUNT:
        settings["type"] = click.IntRange(min=option.low, max=option.high)
    elif option.kind == FILE:
        settings["type"] = click.Path(dir_okay=False)
    return settings


def parse(arguments: Arguments, table: tuple[Option, ...], args: list[str], prog_name: str) -> dict | None:
    """The parameters click would pass for `args`, or None where only click should answer."""
    if os.name == "nt" or f"_{prog_name.upper()}_COMPLETE" in os.environ:  # click expands globs / completes
        return None
    by_flag = {flag: option for option in table for flag in option.flags}
    given: dict[str, object] = {}
    positional: list[str] = []
    rest = iter(args)
    for word in rest:
        if word == "--":
            positional.extend(rest)
            break
        if word == "-" or not word.startswith("-"):
            positional.append(word)
            continue
        flag, equals, attached = word.partition("=") if word.startswith("--") else (word, "", "")
        option = by_flag.get(flag)
        if option is None:
            return None
        if option.flag:
            if equals:
                return None
            given[option.name] = flag == option.flags[0]
            continue
        value = attached if equals else next(rest, None)
        if not value or value.startswith("-") or not _valid(option, value):
            return None
        if option.multiple:
            given.setdefault(option.name, []).append(_converted(option, value))
        else:
            given[option.name] = _converted(option, value)
    params = {arguments.name: tuple(positional)}
    for option in table:
        if option.name in given:
            value = given[option.name]
            params[option.name] = tuple(value) if option.multiple else value
        elif option.multiple:
            params[option.name] = ()
        elif option.default is UNSET:
            params[option.name] = False if option.flag else None
        else:
            params[option.name] = option.default
    return params


def _valid(option: Option, value: str) -> bool:
    if option.kind == CHOICE:
        return value in option.choices
    if option.kind == COUNT:
        if not value.isascii() or not value.isdigit():
            return False
        number = int(value)
        return (option.low is None or number >= option.low) and (option.high is None or number <= option.high)
    if option.kind == FILE:  # click refuses a folder, and an existing file it cannot read
        try:
            return not os.path.isdir(value) and (not os.path.exists(value) or os.access(value, os.R_OK))
        except (OSError, ValueError):
            return False
    return True


def _converted(option: Option, value: str):
    return int(value) if option.kind == COUNT else value
