"""Where the templates live, and reading them.

An installed wheel carries them as `dsconfig/templates` (pyproject's force-include); a source
checkout keeps them at the top as `templates/`, next to `schemas/` (found the same way as
`dsconfig/deepspeed/schema.py` finds the schemas). Standard library only.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

MARKER = Path("deepspeed") / "zero0.json"  # a file every templates folder has


def folder() -> Path:
    here = Path(__file__).resolve()
    for candidate in (here.parent.parent / "templates", here.parents[2] / "templates"):
        if (candidate / MARKER).is_file():
            return candidate
    raise FileNotFoundError("the dsconfig templates were not found next to the dsconfig package (dsconfig/templates) "
                            "or in the source tree (templates/)")


@lru_cache(maxsize=None)
def text(relative: str) -> str:
    with open(folder() / relative, encoding="utf-8") as handle:
        return handle.read()


def deepspeed(name: str) -> dict:
    """A fresh copy of templates/deepspeed/<name>.json (key order as written)."""
    return json.loads(text(f"deepspeed/{name}.json"))


def names() -> list[str]:
    return sorted(path.stem for path in (folder() / "deepspeed").glob("*.json"))
