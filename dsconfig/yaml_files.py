"""YAML inputs: Accelerate configs are recognised; other YAML files are skipped with a note."""

from __future__ import annotations

import re

from .findings import LOAD, Finding

_CONFIG_NAME = re.compile(r"accelerate|deepspeed|fsdp|zero|(^|[^a-z])ds", re.IGNORECASE)


def lint_yaml(text: str, path: str, options) -> list[Finding]:
    import yaml  # only YAML inputs pay for PyYAML

    from . import detect
    from .engine import place

    class _Doc:  # the little of Document that `place` needs, for a YAML file
        def __init__(self):
            self.path = path
            self.text = text

        def position(self, offset):
            before = text[:offset]
            return before.count("\n") + 1, offset - (before.rfind("\n") + 1) + 1

        def locate(self, pointer, on_key=False):
            return (1, 1)

    doc = _Doc()
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        offset = mark.index if mark is not None else 0
        if _CONFIG_NAME.search(path.rsplit("/", 1)[-1]):
            return place(doc, [Finding("DS000", f"YAML parse error: {getattr(error, 'problem', None) or error}",
                                       offset=offset, fails_in=LOAD)])
        return place(doc, [Finding("DS005", "not valid YAML and not recognisable as a config; skipped")])
    if detect.classify(path, value, is_yaml=True) == "accelerate":
        return []  # Accelerate-specific checks are not implemented yet
    return place(doc, [Finding("DS005", "not a DeepSpeed or Accelerate config; skipped")])
