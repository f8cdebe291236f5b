"""Lint one DeepSpeed config: the phases DeepSpeed goes through, then what it stays silent about.

Order mirrors DeepSpeed: load (hjson or json.load, duplicate keys, removed blocks), parse
(`DeepSpeedConfig`: pydantic sections, loose getters, batch arithmetic), initialize (engine,
optimizer, scheduler). Unlike DeepSpeed, every phase runs and every problem is reported.
"""

from __future__ import annotations

import copy
import functools
import json

from ..findings import LOAD, PARSE, Finding, pointer_join, pointer_tokens
from ..values import describe
from . import batch, schema, syntax, target as targets, trainer
from .initialize import check_initialize
from .loose import check_loose
from .models import check_sections


def default_target(doc) -> str:
    value = doc.hjson_value if doc.scan is not None else doc.json_value
    return "hf-trainer" if targets.auto_pointers(value) else "deepspeed"


def lint_deepspeed(doc, options) -> list[Finding]:
    target = options.target or default_target(doc)
    findings = syntax.load_findings(doc, target)
    loader, fallback = ("hjson", "json") if target == "deepspeed" else ("json", "hjson")
    loaded, config = doc.reading(loader)
    if not loaded:  # DS000 says so; lint what the other loader reads, if it reads anything
        loaded, config = doc.reading(fallback)
        if not loaded:
            return findings
    if not isinstance(config, dict):
        findings.append(Finding("DS004", f"the top level is {describe(config)}, not an object: DeepSpeed fails before "
                                         "reading any setting", "", fails_in=LOAD))
        return findings
    findings.extend(removed_keys(config))
    written = doc.json_value if doc.json_error is None else None
    findings.extend(config_findings(config, target, options, written))
    return _dedupe(findings)


def config_findings(config: dict, target: str, options, written=None) -> list[Finding]:
    """Everything after loading, for a config dict as the target hands it to DeepSpeed."""
    world_sizes = options.world_sizes
    sections = check_sections(config)
    findings = list(sections.findings)
    resolved = _assume_repaired(config, sections)
    findings.extend(check_loose(config, resolved))
    findings.extend(check_batch(config, target, world_sizes, written))
    already = {f.pointer for f in findings if f.fails_in in (LOAD, PARSE)}
    findings.extend(targets.check_targets(config, target, set(sections.auto_dropped), fill_targets,
                                          default_at, already))
    findings.extend(targets.check_walked_sections(config, target, fill_pointers(), already))
    findings.extend(check_initialize(config, resolved, target))
    if target == "hf-trainer":
        findings.extend(trainer.trainer_findings(config, options.training_args, world_sizes,
                                                 dataset_size=options.dataset_size))
    if options.dataset_size:
        findings.extend(trainer.dataset_table(config, options.dataset_size, world_sizes, target,
                                              options.training_args))
    return findings


def _assume_repaired(config: dict, sections) -> dict:
    """Section values for the cross-field rules, also for sections DeepSpeed rejects.

    DeepSpeed stops at the first invalid section, so the next error only shows after that one
    is fixed. To report it now, rejected sections are validated again with their unknown keys
    removed and the suggested fixes applied; if that validates, the cross-field rules run on it.
    """
    resolved = dict(sections.resolved)
    broken = [f for f in sections.findings if f.fails_in == PARSE]
    if not broken or all(value is not None for value in resolved.values()):
        return resolved
    repaired = copy.deepcopy(config)
    for finding in broken:
        tokens = pointer_tokens(finding.pointer)
        parent = _node(repaired, tokens[:-1])
        if not isinstance(parent, dict) or not tokens or tokens[-1] not in parent:
            continue
        if finding.code in ("DS101", "DS105", "DS108"):
            del parent[tokens[-1]]
        elif finding.fix is not None and not finding.on_key:
            parent[tokens[-1]] = json.loads(finding.fix)
    for name, values in check_sections(repaired).resolved.items():
        if resolved.get(name) is None and values is not None:
            resolved[name] = values
    return resolved


def _node(value, tokens):
    for token in tokens:
        value = value.get(token) if isinstance(value, dict) else None
    return value


def check_batch(config: dict, target: str, world_sizes, written=None) -> list[Finding]:
    filled = targets.batch_filled(config, target, fill_targets)
    view = config
    if target == "lightning":
        if batch.MBS not in config:
            return []  # Lightning takes the micro batch from the DataLoader: nothing to check statically
        # Lightning writes accumulate_grad_batches (1 unless the script passes it) into the config.
        view = dict(config)
        view.setdefault(batch.GAS, 1)
    elif target in ("hf-trainer", "accelerate") and batch.GAS not in config:
        # Accelerate's DeepSpeedPlugin inserts gradient_accumulation_steps: 1 when it is missing.
        view = dict(config)
        view[batch.GAS] = 1
    findings = batch.world_independent(view, filled) + batch.check_types(config, filled, written)
    if world_sizes:
        for size in world_sizes:
            findings.extend(batch.check_world_size(view, size, filled))
    else:
        findings.extend(batch.check_without_world_size(view, filled))
    micro = config.get(batch.MBS)
    if micro == 1 and isinstance(micro, int) and batch.MBS not in filled:
        findings.append(Finding("DS205", f"{batch.MBS} is 1: each GPU sees one sample per step; BatchNorm layers fail "
                                         "with \"Expected more than 1 value per channel when training\"",
                                batch.POINTER[batch.MBS]))
    return findings


def property_at(pointer: str) -> dict | None:
    """The schema of the value at `pointer` (None for keys the schema does not know)."""
    node = schema.root()
    for token in pointer_tokens(pointer):
        node = schema.property_of(node, token)
        if node is None:
            return None
    return node


def fill_targets(pointer: str) -> frozenset:
    """Targets that replace an "auto" at `pointer` before DeepSpeed sees it."""
    prop = property_at(pointer)
    return frozenset(prop.get("x-dsconfig-fill", ())) if prop else frozenset()


@functools.lru_cache(maxsize=1)
def fill_pointers() -> tuple[tuple[str, frozenset], ...]:
    """(pointer, targets) for every value the HF Trainer or Accelerate may fill."""
    found = []
    stack = [("", schema.root())]
    while stack:
        pointer, node = stack.pop()
        if node.get("x-dsconfig-fill"):
            found.append((pointer, frozenset(node["x-dsconfig-fill"])))
        branch = schema.object_branch(node) or {}
        stack.extend((pointer_join(pointer, key), prop) for key, prop in branch.get("properties", {}).items())
    return tuple(sorted(found))


def default_at(pointer: str):
    prop = property_at(pointer)
    return prop.get("default") if prop else None


def _removed() -> list[tuple[str, str]]:
    """(pointer, DeepSpeed's message) for every block DeepSpeed 0.19.8 refuses to load."""
    found = []
    for parent in ("", "/zero_optimization"):
        node = property_at(parent) if parent else schema.root()
        branch = schema.object_branch(node) or {}
        for key, prop in branch.get("properties", {}).items():
            if "x-deepspeed-removed" in prop:
                found.append((pointer_join(parent, key), prop["x-deepspeed-removed"]))
    return found


def removed_keys(config: dict) -> list[Finding]:
    findings = []
    for pointer, message in _removed():
        parts = pointer.split("/")[1:]
        node = config
        for part in parts[:-1]:
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, dict) and parts[-1] in node:
            findings.append(Finding("DS100", f"DeepSpeed 0.19.8 fails: {message.strip()}", pointer, fails_in=LOAD,
                                    on_key=True))
    return findings


def _dedupe(findings: list[Finding]) -> list[Finding]:
    """Drop generic warnings where a more specific finding names the same value."""
    specific = {f.pointer for f in findings if f.code != "DS109"}
    seen, out = set(), []
    for f in findings:
        if f.code == "DS109" and f.pointer in specific:
            continue
        key = (f.code, f.pointer, f.world_size, f.message, f.offset)
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out
