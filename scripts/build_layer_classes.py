"""Write schemas/fsdp-layer-classes.json: the module classes each transformers architecture builds.

`dsconfig lint --model` checks `fsdp_transformer_layer_cls_to_wrap` against it without importing
transformers. For every model type of the installed transformers (CONFIG_MAPPING_NAMES) this reads
its modeling_*.py files with `ast` (nothing is imported from them) and keeps:
  * per model folder, `classes`: the torch module classes the file defines or imports from another modeling file
    (not configs, outputs, enums or dataclasses), which is what `get_module_class_from_name`
    can find in a model of that type, and the `torch.nn` classes the file names;
  * `no_split`: the `_no_split_modules` of its pretrained-model classes, which Accelerate wraps when
    the key is absent.
`model_types` maps each model type to its folder. `common` holds the module classes of transformers'
activations.py and pytorch_utils.py (ACT2FN's activations, Conv1D), which any model may build.
`hidden_size_aliases` maps a model type to the keys its config class's `attribute_map` reads
`hidden_size` / `hidden_sizes` from (GPT-2's `n_embd`, T5's `d_model`), which the HF Trainer's hidden-size
fills see through (dsconfig/deepspeed/hidden_fills.py). Class
names are stored space-separated, with the model's prefix replaced by `*` (LlamaDecoderLayer ->
*DecoderLayer for prefix Llama), to keep the file small.

Run: python scripts/build_layer_classes.py  (rewrites the file; commit it with the transformers version)
"""

from __future__ import annotations

import ast
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUTPUT = ROOT / "schemas" / "fsdp-layer-classes.json"
_NOT_MODULES = ("ModelOutput", "Config", "Enum", "Exception", "TypedDict", "NamedTuple", "Protocol", "Kwargs",
                "Tokenizer", "Processor")
_SHARED_FILES = ("activations.py", "pytorch_utils.py")
_NOT_CLASSES = ("Parameter", "Buffer")  # torch.nn names that build tensors, not modules


def _base_names(node: ast.ClassDef) -> list[str]:
    names = []
    for base in node.bases:
        if isinstance(base, ast.Name):
            names.append(base.id)
        elif isinstance(base, ast.Attribute):
            names.append(base.attr)
        elif isinstance(base, ast.Subscript) and isinstance(base.value, ast.Name):
            names.append(base.value.id)
    return names


def _is_module_class(node: ast.ClassDef) -> bool:
    decorated = any((isinstance(d, ast.Name) and d.id == "dataclass")
                    or (isinstance(d, ast.Call) and getattr(d.func, "id", "") == "dataclass")
                    for d in node.decorator_list)
    bases = _base_names(node)
    return bool(bases) and not decorated and not any(part in base for base in bases for part in _NOT_MODULES) \
        and not node.name.endswith(("Output", "Config", "Kwargs"))


def read_modeling_file(path: Path) -> tuple[set, set]:
    """(module class names, _no_split_modules entries) of one modeling file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    classes, no_split = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node in tree.body and _is_module_class(node):
            classes.add(node.name)
            for item in node.body:
                if isinstance(item, ast.Assign) and isinstance(item.value, (ast.List, ast.Tuple, ast.Set)) \
                        and any(getattr(t, "id", "") == "_no_split_modules" for t in item.targets):
                    no_split.update(e.value for e in item.value.elts if isinstance(e, ast.Constant))
        elif isinstance(node, ast.ImportFrom) and node.module and ".modeling_" in f".{node.module}":
            classes.update(alias.asname or alias.name for alias in node.names
                           if alias.name[:1].isupper() and not alias.name.isupper()
                           and "Output" not in alias.name and not alias.name.endswith(("Kwargs", "Config")))
        elif isinstance(node, ast.ImportFrom) and node.module in ("torch.nn", "torch.nn.modules"):
            classes.update(alias.asname or alias.name for alias in node.names
                           if alias.name[:1].isupper() and alias.name not in _NOT_CLASSES)
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "nn" \
                and node.attr[:1].isupper() and node.attr not in _NOT_CLASSES:
            classes.add(node.attr)  # nn.LayerNorm(...), or nn.ReLU in ACT2FN's table
    return classes, no_split


def _prefix(config_class: str) -> str:
    return config_class.removesuffix("Config")


def _compress(names, prefix: str) -> list[str]:
    return sorted("*" + n[len(prefix):] if prefix and n.startswith(prefix) and len(n) > len(prefix) else n
                  for n in names)


def build() -> dict:
    import transformers
    from transformers.models.auto.configuration_auto import (
        CONFIG_MAPPING_NAMES,
        model_type_to_module_name,
    )

    models_dir = Path(transformers.__file__).parent / "models"
    types, folders, aliases = {}, {}, {}
    for model_type, config_class in sorted(CONFIG_MAPPING_NAMES.items()):
        renamed = _hidden_size_aliases(model_type)
        if renamed:
            aliases[model_type] = renamed
        folder = models_dir / model_type_to_module_name(model_type)
        files = sorted(folder.glob("modeling_*.py")) if folder.is_dir() else []
        files = [f for f in files if not f.name.startswith(("modeling_tf_", "modeling_flax_"))]
        if not files:
            continue
        classes, no_split = set(), set()
        for path in files:
            found, split = read_modeling_file(path)
            classes |= found
            no_split |= split
        prefix = _prefix(config_class)
        types[model_type] = folder.name
        folders.setdefault(folder.name, {"prefix": prefix, "classes": " ".join(_compress(classes, prefix)),
                                         "no_split": " ".join(_compress(no_split, prefix))})
    common = set()
    for name in _SHARED_FILES:  # ACT2FN's activations and Conv1D, built by many models' files
        common |= read_modeling_file(models_dir.parent / name)[0]
    return {"x-transformers-version": transformers.__version__, "common": " ".join(sorted(common)),
            "model_types": types, "folders": folders, "hidden_size_aliases": aliases}


def _hidden_size_aliases(model_type: str) -> dict:
    from transformers import CONFIG_MAPPING

    try:
        attribute_map = getattr(CONFIG_MAPPING[model_type], "attribute_map", None) or {}
    except (ImportError, KeyError):  # a config class that needs an optional package
        return {}
    return {name: attribute_map[name] for name in ("hidden_size", "hidden_sizes")
            if attribute_map.get(name, name) != name}


def main() -> int:
    data = build()
    text = json.dumps(data, separators=(",", ":"), sort_keys=True) + "\n"
    OUTPUT.write_text(text, encoding="utf-8")
    print(f"{os.path.relpath(OUTPUT)}: {len(data['model_types'])} model types in {len(data['folders'])} folders, "
          f"{len(text) // 1024} KB, "
          f"transformers {data['x-transformers-version']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
