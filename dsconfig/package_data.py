"""dsconfig's own data: the schemas and release tables (`schemas/`) and the templates (`templates/`).

An installed wheel carries them as `dsconfig/schemas` and `dsconfig/templates` (pyproject's
force-include); a source checkout keeps them at the top, next to the package. They ship with dsconfig,
so they are the only files it opens without the reading boundary (dsconfig.boundary), which rules
every file of the user's. Standard library only: this module is on the lint path.
"""

from __future__ import annotations

import json
import os
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

TEMPLATES_MARKER = os.path.join("deepspeed", "zero0.json")  # a file every templates folder has
# pathlib is imported only by the callers that want a Path: a plain lint does not pay for it (nor for the
# urllib and ipaddress modules it brings)
_PACKAGE = os.path.dirname(os.path.realpath(__file__))


def _schema_file(name: str) -> str:
    for folder in (os.path.join(_PACKAGE, "schemas"), os.path.join(os.path.dirname(_PACKAGE), "schemas")):
        if os.path.isfile(os.path.join(folder, name)):
            return os.path.join(folder, name)
    raise FileNotFoundError(f"{name} not found next to the dsconfig package or in the source tree")


def schema_path(name: str) -> Path:
    """The path of a file of schemas/ (in a wheel, dsconfig/schemas)."""
    from pathlib import Path
    return Path(_schema_file(name))


@lru_cache(maxsize=None)
def schema_json(name: str) -> dict:
    """A JSON file of schemas/, parsed once per process (callers must not change it)."""
    with open(_schema_file(name), encoding="utf-8") as handle:
        return json.load(handle)


def templates_folder() -> Path:
    from pathlib import Path
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
