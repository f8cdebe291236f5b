"""A config file read once: its text, its two JSON readings, and where every value sits.

DeepSpeed reads a config path with hjson (comments, trailing commas and quoteless strings
accepted; `7.0` becomes int 7; duplicate keys rejected). The HF Trainer, Accelerate and
Lightning read the same file with `json.load` (strict, last duplicate wins, `7.0` stays a
float). A Document keeps both readings so each target is linted on what it really sees.
"""

from __future__ import annotations

import json

from . import jsonscan


def _long_integer_offset(text: str) -> int:
    import re
    match = re.search(r"\d{4301,}", text)
    return match.start() if match else 0


class Document:
    """One input file. `kind` is set by `detect.classify`."""

    def __init__(self, path: str, text: str):
        self.path = path
        self.text = text
        self.kind = "unknown"
        self._line_starts: list[int] | None = None
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

    def reading(self, loader: str) -> tuple[bool, object]:
        """(loaded, value) as `loader` ("hjson": DeepSpeed's own, or "json") reads the file."""
        if loader == "hjson":
            return self.scan is not None, self.hjson_value
        return self.json_error is None, self.json_value

    def position(self, offset: int) -> tuple[int, int]:
        if self._line_starts is None:
            self._line_starts = jsonscan.line_starts(self.text)
        return jsonscan.position(self._line_starts, offset)

    def locate(self, pointer: str, on_key: bool = False) -> tuple[int, int]:
        """Line and column of the value (or key) at `pointer`; the nearest known ancestor otherwise."""
        spans = self.scan.spans if self.scan is not None else {}
        probe = pointer
        while True:
            span = spans.get(probe)
            if span is not None:
                if probe == pointer and on_key and span.key_start is not None:
                    return self.position(span.key_start)
                # A missing key is reported where its parent object starts (or its key, if it has one).
                if probe != pointer and span.key_start is not None:
                    return self.position(span.key_start)
                return self.position(span.start)
            if not probe:
                return (1, 1)
            probe = probe.rsplit("/", 1)[0]
