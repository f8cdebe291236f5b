"""dsconfig's own data: the schemas and release tables (`schemas/`) and the templates (`templates/`).

An installed wheel carries them as `dsconfig/schemas` and `dsconfig/templates` (pyproject's
force-include); a source checkout keeps them at the top, next to the package. They ship with dsconfig,
so they are the only files it opens without the reading boundary (dsconfig.boundary), which rules
every file of the user's. Standard library only: this module is on the lint path.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

TEMPLATES_MARKER = Path("deepspeed") / "zero0.json"  # a file every templates folder has


def schema_path(name: str) -> Path:
    """The path of a file of schemas/ (in a wheel, dsconfig/schemas)."""
    here = Path(__file__).resolve()
    for folder in (here.parent / "schemas", here.parents[1] / "schemas"):
        if (folder / name).is_file():
            return folder / name
    raise FileNotFoundError(f"{name} not found next to the dsconfig package or in the source tree")


@lru_cache(maxsize=None)
def schema_json(name: str) -> dict:
    """A JSON file of schemas/, parsed once per process (callers must not change it)."""
    with open(schema_path(name), encoding="utf-8") as handle:
        return json.load(handle)


def templates_folder() -> Path:
    here = Path(__file__).resolve()
    for candidate in (here.parent / "templates", here.parents[1] / "templates"):
        if (candidate / TEMPLATES_MARKER).is_file():
            return candidate
    raise FileNotFoundError("the dsconfig templates were not found next to the dsconfig package (dsconfig/templates) "
                            "or in the source tree (templates/)")


@lru_cache(maxsize=None)
def template_text(relative: str) -> str:
    with open(templates_folder() / relative, encoding="utf-8") as handle:
        return handle.read()
