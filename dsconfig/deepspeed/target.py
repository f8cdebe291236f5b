"""`"auto"` and the other things that depend on who hands the config to DeepSpeed.

DeepSpeed itself never resolves "auto". The HF Trainer and Accelerate replace some "auto"
values before DeepSpeed sees the config (which ones: `x-dsconfig-fill` in the schema) and
refuse any other: both end in Accelerate's `deepspeed_config_process`, which raises for an
"auto" it has no value for. Lightning replaces none, and plain DeepSpeed receives them as they
are: its pydantic sections drop "auto" silently (the default applies: `"stage": "auto"` is ZeRO
off), and the loosely read sections pass the string on until something computes with it.
"""

from __future__ import annotations

from typing import Callable

from ..findings import INITIALIZE, PARSE, Finding, dotted, pointer_join, pointer_tokens
from ..values import describe, is_auto, to_json
from . import batch

_WHO = {
    "deepspeed": "plain deepspeed.initialize",
    "hf-trainer": "the HF Trainer",
    "accelerate": "Accelerate's prepare()",
    "lightning": "Lightning's DeepSpeedStrategy",
}
# Loose keys whose "auto" string breaks DeepSpeed as soon as it builds the engine.
_CRASH_AT_INITIALIZE = ("/gradient_clipping", "/optimizer/params/", "/scheduler/params/")


def auto_pointers(value, pointer: str = "") -> list[str]:
    """Every JSON pointer whose value is the string "auto" (iterative: configs can nest deeply)."""
    if is_auto(value):
        return [pointer]
    found, stack = [], [(value, pointer)]
    while stack:  # pointers are built only for "auto" values and containers: most leaves are neither
        node, where = stack.pop()
        if isinstance(node, dict):
            children = node.items()
        elif isinstance(node, list):
            children = enumerate(node)
        else:
            continue
        for key, child in children:
            if isinstance(child, str):
                if child == "auto":
                    found.append(pointer_join(where, key))
            elif isinstance(child, (dict, list)):
                stack.append((child, pointer_join(where, key)))
    return sorted(found)


def batch_filled(config: dict, target: str, fills: Callable[[str], frozenset]) -> frozenset:
    """Batch keys holding an "auto" that this target replaces with a concrete value."""
    return frozenset(key for key in batch.BATCH_KEYS
                     if config.get(key) == "auto" and target in fills(batch.POINTER[key]))


def check_targets(config: dict, target: str, dropped: set[str], fills: Callable[[str], frozenset],
                  defaults: Callable[[str], object], already: set[str]) -> list[Finding]:
    """DS107/DS312/DS700/DS701/DS702 for `target`. `already`: pointers with a parse-phase finding."""
    findings: list[Finding] = []
    who = _WHO[target]
    for pointer in auto_pointers(config):
        if target in fills(pointer) or pointer in already:
            continue
        name = dotted(pointer)
        if pointer in batch.POINTER.values():
            if target == "lightning" and pointer == batch.POINTER[batch.GAS]:
                continue  # DS701 covers any gradient_accumulation_steps under Lightning
            outcome = batch.resolve(*(config.get(k) for k in batch.BATCH_KEYS), 1)
            findings.append(Finding(
                "DS700", f"{name} is \"auto\", which {who} never fills: DeepSpeed fails with {outcome.error}. "
                         "Only the HF Trainer and Accelerate resolve \"auto\"", pointer, fails_in=PARSE))
        elif target in ("hf-trainer", "accelerate"):
            # Both end in Accelerate's _prepare_deepspeed, whose deepspeed_config_process walks every
            # key and refuses any "auto" that neither the Trainer nor prepare() replaced.
            findings.append(Finding(
                "DS700", f"{name} is \"auto\" and neither the HF Trainer nor Accelerate fills it: prepare() raises "
                         f"\"`{name}` not found in kwargs. Please specify `{name}` without `auto` (set to correct "
                         "value) in the DeepSpeed config file or pass it in kwargs.\"", pointer, fails_in=INITIALIZE))
        elif pointer in dropped:
            default = defaults(pointer)
            if pointer == "/zero_optimization/stage":
                findings.append(Finding(
                    "DS312", f"zero_optimization.stage is \"auto\" and {who} does not fill it: DeepSpeed drops the "
                             "value and runs with stage 0, i.e. ZeRO disabled", pointer, fix="3"))
            else:
                shown = "its default" if default is None else f"the default {to_json(default)}"
                findings.append(Finding(
                    "DS107", f"{name} is \"auto\" and {who} does not fill it: DeepSpeed drops the value and uses "
                             f"{shown}", pointer, fix=None if default is None else to_json(default)))
        else:
            crashes = pointer.startswith(_CRASH_AT_INITIALIZE)
            findings.append(Finding(
                "DS700", f"{name} is \"auto\" and {who} does not fill it: DeepSpeed receives the string \"auto\""
                         + (" and fails when it builds the engine" if crashes else ""),
                pointer, fails_in=INITIALIZE if crashes else None))

    if target == "lightning" and batch.GAS in config:
        findings.append(Finding(
            "DS701", "Lightning raises \"Do not set `gradient_accumulation_steps` in the DeepSpeed config as this "
                     "will be set with the `accumulate_grad_batches` argument passed via the Lightning Trainer\"; "
                     "remove the key", batch.POINTER[batch.GAS], fails_in=INITIALIZE, on_key=True))
    if target in ("hf-trainer", "accelerate") and "zero_optimization" not in config:
        findings.append(Finding(
            "DS702", f"{who} builds a DeepSpeedPlugin from this file and raises \"Please specify the ZeRO optimization "
                     "config in the DeepSpeed config.\" without a zero_optimization section", "",
            fails_in=INITIALIZE))
    return findings


def check_walked_sections(config: dict, target: str, fills, already: set[str]) -> list[Finding]:
    """DS605 when the HF Trainer or Accelerate cannot walk to a value it fills.

    They look values up one level at a time with `.get()` (`HfDeepSpeedConfig.find_config_node`),
    so `"fp16": true` or `"optimizer": "adam"` raise AttributeError before DeepSpeed even starts.
    """
    if target not in ("hf-trainer", "accelerate"):
        return []
    findings, reported = [], set()
    for pointer, who_fills in fills:
        if target not in who_fills:
            continue
        node, where = config, ""
        for token in pointer_tokens(pointer)[:-1]:
            if not isinstance(node, dict) or token not in node:
                break
            child, where = node[token], pointer_join(where, token)
            if not isinstance(child, dict):
                if where not in reported and where not in already:
                    reported.add(where)
                    findings.append(Finding(
                        "DS605", f"`{dotted(where)}` is {describe(child)}: {_WHO[target]} looks up "
                                 f"`{dotted(pointer)}` with .get() and raises AttributeError: "
                                 f"'{type(child).__name__}' object has no attribute 'get'", where,
                        fails_in=INITIALIZE))
                break
            node = child
    return findings
