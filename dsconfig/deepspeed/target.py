"""`"auto"` and the other things that depend on who hands the config to DeepSpeed.

DeepSpeed itself never resolves "auto". The HF Trainer and Accelerate replace some "auto"
values before DeepSpeed sees the config (which ones: `x-dsconfig-fill` in the schema) and
refuse any other: both end in Accelerate's `deepspeed_config_process`, which raises for an
"auto" it has no value for. Lightning replaces none, and plain DeepSpeed receives them as they
are: its pydantic sections drop "auto" silently (the default applies: `"stage": "auto"` is ZeRO
off), and the loosely read sections pass the string on until something computes with it.
"""

from __future__ import annotations

from ..findings import Finding
from ..phases import INITIALIZE, PARSE
from ..pointers import dotted, pointer_join, pointer_tokens
from ..rules.integration import AUTO_UNRESOLVED, LIGHTNING_GRADIENT_ACCUMULATION, ZERO_SECTION_REQUIRED
from ..rules.keys import AUTO_IGNORED
from ..rules.sections import SECTION_TYPE
from ..rules.zero import STAGE_AUTO
from ..targets import LIGHTNING, Target
from ..values import describe, is_auto, to_json
from . import batch, schema, step

# Loose keys whose "auto" string breaks DeepSpeed as soon as it builds the engine.
_CRASH_AT_INITIALIZE = ("/optimizer/params/", "/scheduler/params/")


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


def batch_filled(config: dict, target: Target) -> frozenset:
    """Batch keys holding an "auto" that this target replaces with a concrete value."""
    return frozenset(key for key in batch.BATCH_KEYS
                     if config.get(key) == "auto" and target.name in schema.fill_targets(batch.POINTER[key]))


def check_targets(config: dict, target: Target, dropped: set[str], already: set[str]) -> list[Finding]:
    """What "auto" and the integration do under `target`. `already`: pointers with a parse-phase finding."""
    findings: list[Finding] = []
    who = target.who
    for pointer in auto_pointers(config):
        if target.name in schema.fill_targets(pointer) or pointer in already:
            continue
        if target.fills_auto and pointer == "/steps_per_print":
            continue  # Accelerate's DeepSpeedPlugin overwrites it with inf before prepare() looks for "auto"
        name = dotted(pointer)
        if pointer in batch.POINTER.values():
            if target is LIGHTNING and pointer == batch.POINTER[batch.GAS]:
                continue  # DS701 covers any gradient_accumulation_steps under Lightning
            outcome = batch.resolve(*(config.get(k) for k in batch.BATCH_KEYS), 1)
            findings.append(Finding(
                AUTO_UNRESOLVED,
                f"{name} is \"auto\", which {who} never fills: DeepSpeed fails with {outcome.error}. Only the HF "
                "Trainer and Accelerate resolve \"auto\"",
                pointer, fails_in=PARSE))
        elif target.fills_auto:
            # Both end in Accelerate's _prepare_deepspeed, whose deepspeed_config_process walks every
            # key and refuses any "auto" that neither the Trainer nor prepare() replaced.
            findings.append(Finding(
                AUTO_UNRESOLVED,
                f"{name} is \"auto\" and neither the HF Trainer nor Accelerate fills it: prepare() raises \"`{name}` "
                f"not found in kwargs. Please specify `{name}` without `auto` (set to correct value) in the DeepSpeed "
                "config file or pass it in kwargs.\"",
                pointer, fails_in=INITIALIZE))
        elif pointer in dropped:
            default = schema.default_at(pointer)
            if pointer == "/zero_optimization/stage":
                findings.append(Finding(
                    STAGE_AUTO,
                    f"zero_optimization.stage is \"auto\" and {who} does not fill it: DeepSpeed drops the value and "
                    "runs with stage 0, i.e. ZeRO disabled",
                    pointer, fix="3"))
            else:
                shown = "its default" if default is None else f"the default {to_json(default)}"
                findings.append(Finding(
                    AUTO_IGNORED,
                    f"{name} is \"auto\" and {who} does not fill it: DeepSpeed drops the value and uses {shown}",
                    pointer, fix=None if default is None else to_json(default)))
        elif pointer in step.STEP_VALUES:
            outcome = step.failure(pointer, config, target)
            findings.append(Finding(
                AUTO_UNRESOLVED,
                f"{name} is \"auto\" and {who} does not fill it: DeepSpeed receives the string \"auto\", and "
                f"{outcome.how}",
                pointer, fails_in=outcome.phase))
        else:
            crashes = pointer.startswith(_CRASH_AT_INITIALIZE)
            findings.append(Finding(
                AUTO_UNRESOLVED,
                f"{name} is \"auto\" and {who} does not fill it: DeepSpeed receives the string \"auto\""
                + (" and fails when it builds the engine" if crashes else ""),
                pointer, fails_in=INITIALIZE if crashes else None))

    if target is LIGHTNING and batch.GAS in config:
        findings.append(Finding(
            LIGHTNING_GRADIENT_ACCUMULATION,
            "Lightning raises \"Do not set `gradient_accumulation_steps` in the DeepSpeed config as this will be set "
            "with the `accumulate_grad_batches` argument passed via the Lightning Trainer\"; remove the key",
            batch.POINTER[batch.GAS], fails_in=INITIALIZE, on_key=True))
    # an autotuning config is the autotuner's input: each experiment it runs gets its own ZeRO section
    autotuning = isinstance(config.get("autotuning"), dict) and config["autotuning"].get("enabled") is True
    if target.fills_auto and "zero_optimization" not in config and not autotuning:
        findings.append(Finding(
            ZERO_SECTION_REQUIRED,
            f"{who} builds a DeepSpeedPlugin from this file and raises \"Please specify the ZeRO optimization config "
            "in the DeepSpeed config.\" without a zero_optimization section",
            "",
            fails_in=INITIALIZE))
    return findings


def check_walked_sections(config: dict, target: Target, already: set[str]) -> list[Finding]:
    """DS605 when the HF Trainer or Accelerate cannot walk to a value it fills.

    They look values up one level at a time with `.get()` (`HfDeepSpeedConfig.find_config_node`),
    so `"fp16": true` or `"optimizer": "adam"` raise AttributeError before DeepSpeed even starts.
    """
    if not target.fills_auto:
        return []
    findings, reported = [], set()
    for pointer, who_fills in schema.fill_pointers():
        if target.name not in who_fills:
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
                        SECTION_TYPE,
                        f"`{dotted(where)}` is {describe(child)}: {target.who} looks up `{dotted(pointer)}` with "
                        f".get() and raises AttributeError: '{type(child).__name__}' object has no attribute 'get'",
                        where,
                        fails_in=INITIALIZE))
                break
            node = child
    return findings
