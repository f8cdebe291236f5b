"""A Lightning script as a launch: `Trainer(devices=4, num_nodes=2)` fixes the world size of the training
configs the script names.

Lightning starts (or, under torchrun or SLURM, expects) devices × num_nodes processes. Only whole numbers
written in the call count: `devices="auto"`, `-1`, a value from a variable or `**kwargs` leave the world size
to the machine or the run, and the script is then no launch. A list of device ids is as many devices. The
configs the script names are its string literals that end in .yaml, .yml, .json or .toml and resolve in the
project, and Hydra's `@hydra.main(config_path=..., config_name=...)`.
"""

from __future__ import annotations

import ast
import os

from ..boundary import Boundary
from .launchers import Launch
from .project import resolve

_LIGHTNING = ("lightning", "pytorch_lightning")
_SUFFIXES = (".yaml", ".yml", ".json", ".toml")


def worth_reading(text: str) -> bool:
    return "Trainer(" in text and "devices" in text and any(name in text for name in _LIGHTNING)


def launches(path: str, text: str, roots: Boundary) -> list[tuple[Launch, list[str]]]:
    """(launch, real paths of the configs the script names) for each Trainer call that fixes its devices."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    found = []
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call) and _called(node.func) == "Trainer"]
    for call in calls:
        size = _world(call)
        if size is None:
            continue
        nodes, per_node = size
        launch = Launch(path, call.lineno, call.col_offset + 1, "lightning", nodes * per_node, nodes, per_node, None,
                        path, False, (), {}, ast.get_source_segment(text, call) or "Trainer(...)")
        found.append(launch)
    if not found:
        return []
    configs = _named_configs(tree, path, roots)
    return [(launch, configs) for launch in found] if configs else []


def _called(func: ast.AST) -> str:
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _world(call: ast.Call) -> tuple[int, int] | None:
    """(nodes, devices per node) the call fixes, or None."""
    if any(keyword.arg is None for keyword in call.keywords) or call.args:
        return None  # **kwargs or positional arguments: what they hold is the run's
    given = {keyword.arg: keyword.value for keyword in call.keywords}
    devices = _devices(given.get("devices"))
    nodes = _whole(given.get("num_nodes")) if "num_nodes" in given else 1
    if devices is None or nodes is None:
        return None
    return nodes, devices


def _devices(node: ast.AST | None) -> int | None:
    if isinstance(node, (ast.List, ast.Tuple)) and node.elts and all(_whole(item, zero=True) is not None
                                                                     for item in node.elts):
        return len(node.elts)
    return _whole(node)


def _whole(node: ast.AST | None, zero: bool = False) -> int | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value if node.value > 0 or (zero and node.value == 0) else None
    return None


def _named_configs(tree: ast.AST, path: str, roots: Boundary) -> list[str]:
    found: list[str] = []

    def add(written: str) -> None:
        real = resolve(written, path, roots)
        if real is not None and real not in found:
            found.append(real)

    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.endswith(_SUFFIXES) \
                and "\n" not in node.value and len(node.value) < 300:
            add(node.value)
        elif isinstance(node, ast.Call) and _called(node.func) == "main" and node.keywords:
            given = {k.arg: k.value.value for k in node.keywords
                     if isinstance(k.value, ast.Constant) and isinstance(k.value.value, str)}
            if "config_name" in given:  # @hydra.main(config_path="conf", config_name="train")
                name = given["config_name"]
                add(os.path.join(given.get("config_path", "."), name if name.endswith(_SUFFIXES) else name + ".yaml"))
    return found
