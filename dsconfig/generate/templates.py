"""Where the templates live, and reading them.

An installed wheel carries them as `dsconfig/templates` (pyproject's force-include); a source
checkout keeps them at the top as `templates/`, next to `schemas/` (found the same way as
`dsconfig/deepspeed/schema.py` finds the schemas). Standard library only.
"""

from __future__ import annotations

import json

from ..package_data import template_text as text  # noqa: F401 - the templates' reader, under its old name
from ..package_data import templates_folder as folder


def deepspeed(name: str) -> dict:
    """A fresh copy of templates/deepspeed/<name>.json (key order as written)."""
    return json.loads(text(f"deepspeed/{name}.json"))


def names() -> list[str]:
    return sorted(path.stem for path in (folder() / "deepspeed").glob("*.json"))
