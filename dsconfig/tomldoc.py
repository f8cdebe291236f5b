"""A TOML training config read with tomllib, with where each key and scalar value sits.

tomllib gives values, not positions. A line scanner follows the table headers (`[a.b]`, `[[runs]]`)
and the `key = value` lines (bare, quoted and dotted keys) to index the JSON pointer of every
value written on its own line; a value inside an inline table or a multi-line array is located
at its nearest indexed ancestor. tomllib is imported only for .toml files.
"""

from __future__ import annotations

import re

from .document import LoadedDocument, LoadError
from .pointers import pointer_from
from .yamldoc import Span

_HEADER = re.compile(r"[ \t]*(\[\[?)[ \t]*(?P<name>[^\]#]+?)[ \t]*\]\]?[ \t]*(?:#.*)?$")
_KEY = re.compile(r"[ \t]*(?P<key>(?:[A-Za-z0-9_-]+|\"(?:[^\"\\]|\\.)*\"|'[^']*')"
                  r"(?:[ \t]*\.[ \t]*(?:[A-Za-z0-9_-]+|\"(?:[^\"\\]|\\.)*\"|'[^']*'))*)[ \t]*=[ \t]*")
_PART = re.compile(r"[A-Za-z0-9_-]+|\"(?:[^\"\\]|\\.)*\"|'[^']*'")


def _parts(dotted_key: str) -> list[str]:
    parts = []
    for token in _PART.findall(dotted_key):
        if token.startswith('"'):
            import json
            try:
                token = json.loads(token)
            except ValueError:
                token = token[1:-1]
        elif token.startswith("'"):
            token = token[1:-1]
        parts.append(token)
    return parts


class TomlDocument(LoadedDocument):
    """One TOML input: `loaded` and `value` are what tomllib.loads returns (or that it raises)."""

    format = "toml"

    def __init__(self, path: str, text: str):
        super().__init__(path, text)
        import tomllib
        try:
            self.value, self.loaded = tomllib.loads(text), True
        except tomllib.TOMLDecodeError as error:
            self.error = LoadError(str(error), _error_offset(text, str(error)))
        except RecursionError:
            self.error = LoadError("nested too deeply for tomllib (RecursionError)", 0)
        except ValueError as error:  # a decimal integer past Python's int-string limit (4,300 digits)
            reason = str(error).split(";")[0]  # without the advice to call sys.set_int_max_str_digits()
            self.error = LoadError(f"tomllib raises ValueError: {reason}", _value_error_offset(text, error))
        self._spans: dict | None = None

    @property
    def spans(self) -> dict:
        if self._spans is None:
            self._spans = self._index() if self.loaded else {}
        return self._spans

    @property
    def duplicates(self) -> list:
        return []  # tomllib refuses a key defined twice: a load error

    def extent(self, pointer: str, on_key: bool = False) -> tuple[int, int] | None:
        return None  # no --fix for TOML: the message says what to write

    def _index(self) -> dict:
        spans: dict = {"": Span(None, 0)}
        table: list = []
        arrays: dict[tuple, int] = {}  # [[name]] headers seen: the index of the current element
        offset = 0
        for line in self.text.split("\n"):
            header = _HEADER.match(line)
            if header:
                parts = _parts(header.group("name"))
                if header.group(1) == "[[":
                    key = tuple(parts)
                    arrays[key] = arrays.get(key, -1) + 1
                    table = parts + [arrays[key]]
                else:
                    table = parts
                spans.setdefault(pointer_from(table), Span(offset + line.index("["), offset + line.index("[")))
            else:
                match = _KEY.match(line)
                if match:
                    tokens = table + _parts(match.group("key"))
                    key_start = offset + match.start("key")
                    spans.setdefault(pointer_from(tokens), Span(key_start, offset + match.end()))
            offset += len(line) + 1
        return spans


def _error_offset(text: str, message: str) -> int:
    """tomllib says "(at line 3, column 7)": the offset of that place."""
    match = re.search(r"at line (\d+), column (\d+)", message)
    if not match:
        return len(text) if "end of document" in message else 0
    line, column = int(match.group(1)), int(match.group(2))
    starts = [0] + [i + 1 for i, c in enumerate(text) if c == "\n"]
    return min(starts[min(line, len(starts)) - 1] + column - 1, len(text))


# A decimal integer (`_` between digits allowed) longer than int() reads: what tomllib's ValueError is about.
_LONG_DECIMAL = re.compile(r"[+-]?[0-9](?:_?[0-9]){4300,}")


def _value_error_offset(text: str, error: ValueError) -> int:
    """The offset of the value tomllib raised a plain ValueError on: its message says no place, but its parser's
    innermost `parse_value(src, pos, ...)` frame holds where the value starts in `src` (the text with CRLF
    read as LF). Without that frame (another Python), the first long decimal integer of the text."""
    pos, traceback = None, error.__traceback__
    while traceback is not None:
        frame = traceback.tb_frame
        if frame.f_code.co_name == "parse_value" and isinstance(frame.f_locals.get("pos"), int):
            pos = frame.f_locals["pos"]  # the innermost one wins: a value in an array in an inline table
        traceback = traceback.tb_next
    src = text.replace("\r\n", "\n")
    if pos is None or not 0 <= pos < len(src):
        match = _LONG_DECIMAL.search(src)
        if match is None:
            return 0
        pos = match.start()
    line = src.count("\n", 0, pos)  # the same line and column in the text as given
    column = pos - (src.rfind("\n", 0, pos) + 1)
    line_start = 0
    for _ in range(line):
        line_start = text.index("\n", line_start) + 1
    return min(line_start + column, len(text))
