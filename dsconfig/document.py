"""A config file read once: its text, how its loaders read it, and where every value sits.

Every input is a Document: JsonDocument here, YamlDocument in dsconfig.yamldoc. The checks, the
engine and `--fix` use only what the base class promises:

  path, text, kind, format     the file, its newline-normalised text, what detect.classify made
                               of it ("deepspeed", "accelerate", "other") and "json" or "yaml"
  reading(loader)              (loaded, value) as a loader reads the file
  as_written                   the value the positions index, with the types as written
  tree                         (read, as_written): whether any reading succeeded (training configs)
  load_error                   (message, offset) when the file's usual loader fails, else None
  duplicates, yaml11_booleans  keys written twice; plain YAML 1.1 words read as booleans
  position(offset)             line and column of a text offset
  locate(pointer, on_key)      line and column of a value (or its key), else its nearest ancestor
  extent(pointer, on_key)      (start, end) offsets of a value or key, when it is one token

DeepSpeed reads a config path with hjson (comments, trailing commas and quoteless strings
accepted; `7.0` becomes int 7; duplicate keys rejected). The HF Trainer, Accelerate and
Lightning read the same file with `json.load` (strict, last duplicate wins, `7.0` stays a
float). A JsonDocument keeps both readings so each target is linted on what it really sees.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
from typing import NamedTuple

from . import jsonscan

# While `reusing_readings()` is active, the readings of a text already read are taken again, not redone: the
# release table (`lint --deepspeed-version all`) lints the same files once per group of releases.
_READINGS: contextvars.ContextVar[dict | None] = contextvars.ContextVar("dsconfig_readings", default=None)


@contextlib.contextmanager
def reusing_readings():
    token = _READINGS.set({})
    try:
        yield
    finally:
        _READINGS.reset(token)


class LoadError(NamedTuple):
    message: str
    offset: int


class Document:
    """What every input file offers (see the module docstring); subclasses read the text."""

    format = ""

    def __init__(self, path: str, text: str):
        self.path = path
        self.text = text
        self.kind = "unknown"
        self.checked_with: frozenset[str] = frozenset()  # run options a check used (world_sizes, dataset_size, ...)
        self._line_starts: list[int] | None = None

    def release(self) -> None:
        """Forget what can be read again from the text (a format that can does; see JsonDocument)."""

    # -- provided by each format -----------------------------------------------------------------

    @property
    def spans(self) -> dict:
        """JSON pointer -> a span with `key_start` (None for the root and list items) and `start`."""
        raise NotImplementedError

    def reading(self, loader: str) -> tuple[bool, object]:
        raise NotImplementedError

    @property
    def as_written(self):
        raise NotImplementedError

    @property
    def load_error(self) -> LoadError | None:
        raise NotImplementedError

    @property
    def duplicates(self) -> list:
        raise NotImplementedError

    @property
    def yaml11_booleans(self) -> dict[str, str]:
        return {}

    def extent(self, pointer: str, on_key: bool = False) -> tuple[int, int] | None:
        raise NotImplementedError

    @property
    def tree(self) -> tuple[bool, object]:
        """(read, value): the file's contents with the types as written, by whichever reading succeeded."""
        raise NotImplementedError

    # -- shared ------------------------------------------------------------------------------------

    def position(self, offset: int) -> tuple[int, int]:
        if self._line_starts is None:
            self._line_starts = jsonscan.line_starts(self.text)
        return jsonscan.position(self._line_starts, offset)

    def locate(self, pointer: str, on_key: bool = False) -> tuple[int, int]:
        """Line and column of the value (or key) at `pointer`; a missing value is reported at the key of
        its nearest ancestor (or where that ancestor starts, when it has no key)."""
        spans = self.spans
        probe = pointer
        while True:
            span = spans.get(probe)
            if span is not None:
                if span.key_start is not None and (on_key or probe != pointer):
                    return self.position(span.key_start)
                return self.position(span.start)
            if not probe:
                return (1, 1)
            probe = probe.rsplit("/", 1)[0]


class LoadedDocument(Document):
    """A file that one loader reads (YAML, TOML): `loaded`, `value` and `error` are what it returned or raised."""

    def __init__(self, path: str, text: str):
        super().__init__(path, text)
        self.value = None
        self.loaded = False
        self.error: LoadError | None = None

    def reading(self, loader: str = "") -> tuple[bool, object]:
        """(loaded, value): one loader, whatever `loader` asks for."""
        return self.loaded, self.value

    @property
    def as_written(self):
        return self.value

    @property
    def load_error(self) -> LoadError | None:
        return self.error

    @property
    def tree(self) -> tuple[bool, object]:
        return self.loaded, self.value


def _long_integer_offset(text: str) -> int:
    import re
    match = re.search(r"\d{4301,}", text)
    return match.start() if match else 0


class JsonDocument(Document):
    """A JSON (or hjson) file, with hjson's reading (jsonscan, with positions) and json.load's."""

    format = "json"

    def __init__(self, path: str, text: str):
        super().__init__(path, text)
        readings = _READINGS.get()
        if readings is not None and text in readings:
            self.scan, self.scan_error, self.json_value, self.json_error = readings[text]
            return
        self._read(text)
        if readings is not None:
            readings[text] = (self.scan, self.scan_error, self.json_value, self.json_error)

    _READINGS_KEPT = ("scan", "scan_error", "json_value", "json_error")

    def release(self) -> None:
        """Forget the readings: they are read again from the text when next asked for. A walk of thousands of
        files then holds their texts, not their parse trees (dsconfig.engine releases each once it is checked)."""
        for name in self._READINGS_KEPT:
            self.__dict__.pop(name, None)

    def __getattr__(self, name: str):
        if name in JsonDocument._READINGS_KEPT and "text" in self.__dict__:
            self._read(self.text)
            return self.__dict__[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def _read(self, text: str) -> None:
        try:
            self.scan = jsonscan.scan(text)
            self.scan_error = None
        except jsonscan.ScanError as error:
            self.scan = None
            self.scan_error = error
        # json.load's reading; the C decoder is fast enough to run on every file.
        try:
            self.json_value = json.loads(text)
            self.json_error = None
        except json.JSONDecodeError as error:
            self.json_value = None
            self.json_error = error
        except RecursionError:
            self.json_value = None
            self.json_error = json.JSONDecodeError("nesting too deep for json.load (RecursionError)", text, 0)
        except ValueError as error:
            # int() refuses literals past 4300 digits; json.load raises that ValueError as it is
            self.json_value = None
            self.json_error = json.JSONDecodeError(f"ValueError: {str(error).split(': value has')[0]}",
                                                   text, _long_integer_offset(text))

    @property
    def hjson_value(self):
        return self.scan.value if self.scan is not None else None

    @property
    def spans(self) -> dict:
        return self.scan.spans if self.scan is not None else {}

    def reading(self, loader: str) -> tuple[bool, object]:
        """(loaded, value) as `loader` ("hjson": DeepSpeed's own, or "json") reads the file."""
        if loader == "hjson":
            return self.scan is not None, self.hjson_value
        return self.json_error is None, self.json_value

    @property
    def as_written(self):
        """json.load's reading where it reads the file (32.0 stays a float, as written), else hjson's."""
        return self.json_value if self.json_error is None else self.hjson_value

    @property
    def load_error(self) -> LoadError | None:
        """json.load's error: the loader of everyone but plain DeepSpeed."""
        if self.json_error is None:
            return None
        return LoadError(self.json_error.msg, self.json_error.pos)

    @property
    def duplicates(self) -> list:
        return self.scan.duplicates if self.scan is not None else []

    @property
    def tree(self) -> tuple[bool, object]:
        return self.scan is not None or self.json_error is None, self.as_written

    def extent(self, pointer: str, on_key: bool = False) -> tuple[int, int] | None:
        span = self.spans.get(pointer)
        if span is None:
            return None
        if on_key and span.key_start is not None:
            return span.key_start, span.key_end
        return span.start, span.end


class DictDocument(JsonDocument):
    """A config dict handed to DeepSpeed as it is (`deepspeed.initialize(config=...)`, `dsconfig.check(dict)`),
    written out as JSON text for its positions. No loader reads it: every reading is the dict's own values, which
    json.loads gives back from the text (NaN and Infinity as the floats they were), and hjson's notes, traps and
    duplicate keys do not apply."""

    def _read(self, text: str) -> None:
        super()._read(text)
        if self.json_error is not None:  # json.dumps wrote it: json.loads reads it back
            return
        if self.scan is None:  # hjson reads a quoteless `NaN, ...` to the end of its line: positions are lost
            self.scan, self.scan_error = jsonscan.Scan(self.json_value, {}, [], [], [], 0), None
        else:
            self.scan = self.scan._replace(value=self.json_value, notes=[], duplicates=[], traps=[])
