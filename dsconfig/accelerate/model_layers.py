"""`lint --model`: which module classes a model's architecture builds, without transformers.

The model is a catalog name (as for `dsconfig estimate --model`) or a Hugging Face config.json. Its
`model_type` (or, without one, the class in `architectures`) selects an entry of
schemas/fsdp-layer-classes.json, which scripts/build_layer_classes.py writes from the installed
transformers' modeling files.
"""

from __future__ import annotations

import json
import os
from functools import lru_cache
from typing import NamedTuple

from ..deepspeed import schema as deepspeed_schema
from ..values import closest

TABLE_FILE = "fsdp-layer-classes.json"


class ModelProblem(ValueError):
    """--model names nothing usable: one line for the command line."""


class ModelLayers(NamedTuple):
    name: str  # as given
    model_type: str
    classes: frozenset  # module class names a model of this type holds
    no_split: tuple  # its _no_split_modules: what Accelerate wraps when no class is named
    parameters: int | None  # exact count when the shape is known (catalog, or a config the estimator reads)
    config: dict | None = None  # the config.json (or the catalog entry's config) it was read from

    def layer_classes(self) -> list[str]:
        """The likely wrap targets, for messages: the no-split classes, then the other *Layer/*Block ones."""
        others = sorted(c for c in self.classes if c.endswith(("Layer", "Block")) and c not in self.no_split
                        and c != "GradientCheckpointingLayer")
        return list(self.no_split) + others


@lru_cache(maxsize=1)
def _table() -> dict:
    from .. import package_data
    return package_data.schema_json(TABLE_FILE)


def transformers_version() -> str:
    return _table().get("x-transformers-version", "")


def hidden_size_alias(model_type, name: str) -> str | None:
    """The config.json key a model type's config class reads `name` (hidden_size, hidden_sizes) from,
    when its attribute_map renames it (GPT-2: n_embd)."""
    if not isinstance(model_type, str):
        return None
    return _table().get("hidden_size_aliases", {}).get(model_type, {}).get(name)


def _expand(text: str, prefix: str) -> list[str]:
    return [prefix + name[1:] if name.startswith("*") else name for name in text.split()]


def module_path(model_type: str) -> str | None:
    """The dotted module transformers defines a model type's classes in (transformers.models.X.modeling_X)."""
    folder = _table()["model_types"].get(model_type)
    return f"transformers.models.{folder}.modeling_{folder}" if folder else None


def for_type(model_type: str) -> tuple[frozenset, tuple] | None:
    table = _table()
    folder = table["model_types"].get(model_type)
    if folder is None:
        return None
    entry = table["folders"][folder]
    classes = _expand(entry["classes"], entry["prefix"]) + table["common"].split()
    return frozenset(classes), tuple(_expand(entry["no_split"], entry["prefix"]))


def _type_of_architecture(architecture: str) -> str | None:
    table = _table()
    for model_type, folder in table["model_types"].items():
        entry = table["folders"][folder]
        if architecture in _expand(entry["classes"], entry["prefix"]):
            return model_type
    return None


def resolve(text: str) -> ModelLayers:
    """The layers of `--model TEXT`; ModelProblem (one line) when it names nothing usable."""
    from ..estimate import catalog, shapes

    entry = catalog.lookup(text)
    if entry is not None:
        config, parameters = entry.config, shapes.from_hf_config(entry.config, entry.name).parameters
    elif os.path.exists(text) or text.endswith(".json"):
        config, parameters = _read_config(text), None
        try:
            parameters = shapes.from_hf_config(config).parameters
        except (shapes.ShapeError, TypeError, ValueError, OverflowError):
            pass  # an architecture the estimator does not know: the class check still works
    else:
        guess = closest(text.lower(), catalog.names(), cutoff=0.6)
        hint = f"; did you mean {guess}?" if guess else ""
        raise ModelProblem(f"--model: {text!r} is neither a catalog model (dsconfig estimate --list-models) nor a "
                           f"config.json{hint}")
    model_type = config.get("model_type")
    if not isinstance(model_type, str):
        architectures = config.get("architectures")
        names = architectures if isinstance(architectures, list) else []
        model_type = next((t for t in map(_type_of_architecture, (n for n in names if isinstance(n, str))) if t), None)
    if model_type is None:
        raise ModelProblem(f"--model: {text}: no `model_type` and no known class in `architectures`")
    found = for_type(model_type)
    if found is None:
        raise ModelProblem(f"--model: {text}: model_type {model_type!r} is not an architecture of transformers "
                           f"{transformers_version()}")
    return ModelLayers(text, model_type, found[0], found[1], parameters or None, config)


def _read_config(path: str) -> dict:
    """The config.json as every --model reads it (dsconfig.estimate.shapes.read_config: json.load, and no size,
    head or expert count no model can be built from)."""
    from ..estimate.shapes import ShapeError, read_config
    try:
        return read_config(path)
    except ShapeError as error:
        raise ModelProblem(f"--model: {error}") from None
