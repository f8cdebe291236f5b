"""Who set each value: every write to the config on its way to DeepSpeed, in order.

The explanation is a chain of layers (the JSON file, Accelerate's plugin, the HF Trainer's fill,
command-line flags, DeepSpeed's defaults). Each layer writes values at JSON pointers; the ledger keeps
every write, so the last one is the value's source and the earlier ones are what it overrode. A value
a source gave but that nothing used (a YAML key the JSON's concrete value beats) is recorded as lost.
"""

from __future__ import annotations

from typing import NamedTuple

from ..pointers import pointer_join

# Kinds of source, in the words the output uses.
JSON = "json"  # the DeepSpeed JSON file
YAML = "yaml"  # the Accelerate YAML file
TRAINING_ARGS = "training-args"  # TrainingArguments (the file, or the transformers defaults)
FLAG = "flag"  # a command-line --set
ACCELERATE = "accelerate"  # Accelerate's DeepSpeedPlugin / prepare() fill
TRAINER = "trainer"  # the HF Trainer's "auto" fill
DEFAULT = "default"  # DeepSpeed's default
DEEPSPEED = "deepspeed"  # computed or converted by DeepSpeed


class Origin(NamedTuple):
    kind: str
    detail: str = ""  # what a person needs: "per_device_train_batch_size", "zero_stage", "--set ..."
    file: str | None = None
    line: int | None = None
    column: int | None = None

    def where(self) -> str:
        if self.file is None:
            return ""
        if self.line is None:
            return self.file
        return f"{self.file}:{self.line}" + (f":{self.column}" if self.column else "")


class Entry(NamedTuple):
    value: object
    origin: Origin
    note: str = ""  # why it was lost, or how it replaced the one before


class Ledger:
    def __init__(self):
        self.writes: dict[str, list[Entry]] = {}
        self.lost: dict[str, list[Entry]] = {}

    def write(self, pointer: str, value, origin: Origin, note: str = "") -> None:
        self.writes.setdefault(pointer, []).append(Entry(value, origin, note))

    def write_tree(self, pointer: str, value, origin_at) -> None:
        """Every leaf of `value` (dicts are walked, lists are leaves), with origin_at(pointer) each."""
        stack = [(pointer, value)]
        while stack:
            where, node = stack.pop()
            if isinstance(node, dict) and node:
                stack.extend(reversed([(pointer_join(where, str(key)), item) for key, item in node.items()]))
            else:
                self.write(where, node, origin_at(where))

    def lose(self, pointer: str, value, origin: Origin, note: str) -> None:
        self.lost.setdefault(pointer, []).append(Entry(value, origin, note))

    def last(self, pointer: str) -> Entry | None:
        entries = self.writes.get(pointer)
        return entries[-1] if entries else None

    def history(self, pointer: str) -> list[Entry]:
        """What was written at `pointer` before the last write, then what was given and lost there."""
        return self.writes.get(pointer, [])[:-1] + self.lost.get(pointer, [])
