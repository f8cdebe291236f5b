"""What a check reports: one Finding per problem, of one declared rule, located by JSON pointer.

Checks never compute line numbers. They name a JSON pointer into the document and the
engine turns it into file, line and column, so the same check works on JSON and YAML.
"""

from __future__ import annotations

import sys

from .escape import characters
from .phases import PHASES
from .rules.rule import Rule


# Real messages stay under 1,400 characters (the longest lists Trainer-filled keys); a value quoted
# from a hostile file must not make one line of output megabytes long.
MAX_MESSAGE = 4000


class Finding:
    """One problem in one file.

    `fix` is the suggested replacement text (JSON) for the value at `pointer`, or None.
    `on_key` points the location at the key instead of its value (unknown keys, duplicates);
    `fix` then replaces the key. `offset` locates findings about raw text (syntax errors).
    """

    __slots__ = (
        "rule", "code", "message", "pointer", "fails_in", "world_size", "fix", "on_key", "offset",
        "file", "line", "column", "related",
    )

    def __init__(self, rule: Rule, message: str, pointer: str = "", *, fails_in: str | None = None,
                 world_size: int | None = None, fix: str | None = None, on_key: bool = False,
                 offset: int | None = None):
        assert fails_in is None or fails_in in PHASES, fails_in
        self.rule = rule
        self.code = rule.code
        # interned: a walk over many copies of one config holds each of their messages once
        message = message if len(message) <= MAX_MESSAGE else message[:MAX_MESSAGE] + "... (cut)"
        self.message = sys.intern(one_line(message))
        self.pointer = pointer
        self.fails_in = fails_in
        self.world_size = world_size
        self.fix = fix
        self.on_key = on_key
        self.offset = offset  # a text offset, for findings about syntax rather than a value
        self.file = ""
        self.line = 1
        self.column = 1
        # Evidence elsewhere: (file, line, column, what is there), e.g. the DataLoader a script's Trainer shards again
        self.related: tuple[tuple[str, int, int, str], ...] = ()

    @property
    def severity(self) -> str:
        return self.rule.severity

    @property
    def name(self) -> str:
        return self.rule.name

    def sort_key(self):
        return (self.file, self.line, self.column, self.code, self.world_size or 0, self.message)

    def as_dict(self) -> dict:
        return {
            "code": self.code,
            "name": self.name,
            "severity": self.severity,
            "message": self.message,
            "file": self.file,
            "line": self.line,
            "column": self.column,
            "pointer": self.pointer,
            "world_size": self.world_size,
            "fails_in": self.fails_in,
            "fix": self.fix,
        }

    def __repr__(self):
        where = f" @{self.world_size}" if self.world_size is not None else ""
        return f"<{self.code} {self.pointer or '/'}{where} {self.fails_in or '-'}: {self.message}>"


def one_line(text: str) -> str:
    """A message stays one line in every format, and shows what it quotes (a key holding a newline,
    an escape sequence, a bidi override, a lone surrogate) as escapes."""
    return characters(text)
