"""Lint one DeepSpeed config: the phases DeepSpeed goes through, then what it stays silent about.

Order mirrors DeepSpeed: load (hjson or json.load, duplicate keys, removed blocks), parse
(`DeepSpeedConfig`: pydantic sections, loose getters, batch arithmetic), initialize (engine,
optimizer, scheduler), step (the values first used in training). Unlike DeepSpeed, every phase
runs and every problem is reported.
"""

from __future__ import annotations

from .. import targets
from ..findings import Finding
from ..phases import LOAD, PARSE, STEP
from ..rules.batch import BATCHNORM_ONE_SAMPLE, MICRO_BATCH_ONE
from ..rules.files import NOT_AN_OBJECT
from ..rules.keys import REMOVED_KEY, STEP_VALUE, WRONG_TYPE
from ..rules.precision import FP16_AND_BF16
from ..values import describe
from . import batch, schema, syntax, trainer
from . import target as auto
from .initialize import check_initialize
from .loose import check_loose
from .models import assume_repaired, check_sections
from .step import check_step


def default_target(doc) -> targets.Target:
    """Without --target: the HF Trainer when the file holds "auto" (someone must fill it), else DeepSpeed."""
    value = doc.hjson_value if doc.scan is not None else doc.json_value
    return targets.HF_TRAINER if auto.auto_pointers(value) else targets.DEEPSPEED


def lint_deepspeed(doc, options) -> list[Finding]:
    target = options.target or default_target(doc)
    findings = syntax.load_findings(doc, target)
    fallback = "json" if target.loader == "hjson" else "hjson"
    loaded, config = doc.reading(target.loader)
    if not loaded:  # DS000 says so; lint what the other loader reads, if it reads anything
        loaded, config = doc.reading(fallback)
        if not loaded:
            return findings
    if not isinstance(config, dict):
        findings.append(Finding(NOT_AN_OBJECT, f"the top level is {describe(config)}, not an object: DeepSpeed "
                                               "fails before reading any setting", "", fails_in=LOAD))
        return findings
    findings.extend(removed_keys(config))
    written = doc.json_value if doc.json_error is None else None
    findings.extend(config_findings(config, target, options, written))
    return _dedupe(findings)


def _precision_filled(config: dict) -> bool:
    """Whether fp16.enabled or bf16.enabled (or its bfloat16 spelling) is "auto": the target's to fill."""
    return any(isinstance(config.get(key), dict) and config[key].get("enabled") == "auto"
               for key in ("fp16", "bf16", "bfloat16"))


def config_findings(config: dict, target: targets.Target, options, written=None) -> list[Finding]:
    """Everything after loading, for a config dict as the target hands it to DeepSpeed."""
    world_sizes = options.world_sizes
    sections = check_sections(config)
    findings = list(sections.findings)
    resolved = assume_repaired(config, sections)
    loose = check_loose(config, resolved)
    if target.fills_auto and _precision_filled(config):
        # The Trainer (from fp16/bf16, which TrainingArguments refuses together) and Accelerate (from one
        # mixed_precision) fill an "auto" enabled before DeepSpeed reads it: never both true. DeepSpeed 0.14-0.17
        # read the unfilled "auto" as true, which is no failure of these launches.
        loose = [f for f in loose if f.rule is not FP16_AND_BF16]
    findings.extend(loose)
    findings.extend(check_batch(config, target, world_sizes, written, options.batchnorm))
    already = {f.pointer for f in findings if f.fails_in in (LOAD, PARSE)}
    findings.extend(auto.check_targets(config, target, set(sections.auto_dropped), already))
    findings.extend(auto.check_walked_sections(config, target, already))
    findings.extend(check_initialize(config, resolved, target))
    findings.extend(check_step(config, resolved, target))
    if target is targets.HF_TRAINER:
        findings.extend(trainer.trainer_findings(config, options.training_args, world_sizes,
                                                 dataset_size=options.dataset_size, model=getattr(options, "model", None)))
    if getattr(options, "model", None) is not None:
        from . import model_checks  # with --model only: it reads the model tables through dsconfig.accelerate
        findings.extend(model_checks.model_findings(config, options.model, target, world_sizes))
    if options.dataset_size:
        findings.extend(trainer.dataset_table(config, options.dataset_size, world_sizes, target,
                                              options.training_args))
    return findings


def check_batch(config: dict, target: targets.Target, world_sizes, written=None, batchnorm: bool = False) -> list[Finding]:
    filled = auto.batch_filled(config, target)
    view = config
    if target is targets.LIGHTNING:
        if batch.MBS not in config:
            return []  # Lightning takes the micro batch from the DataLoader: nothing to check statically
        # Lightning writes accumulate_grad_batches (1 unless the script passes it) into the config.
        view = dict(config)
        view.setdefault(batch.GAS, 1)
    elif target.fills_auto and batch.GAS not in config:
        # Accelerate's DeepSpeedPlugin inserts gradient_accumulation_steps: 1 when it is missing.
        view = dict(config)
        view[batch.GAS] = 1
    if target.loader == "hjson" and batch.SP in config and not schema.facts()["sequence_parallel_read_from_a_path"]:
        # deepspeed.initialize hands DeepSpeedConfig the path itself in these releases, and its
        # `"sequence_parallel_size" in config` then tests the path's text: the world size stays whole
        view = {key: value for key, value in view.items() if key != batch.SP}
    findings = batch.world_independent(view, filled) + batch.check_types(config, filled, written)
    if world_sizes:
        for size in world_sizes:
            findings.extend(batch.check_world_size(view, size, filled, batchnorm))
    else:
        findings.extend(batch.check_without_world_size(view, filled))
    micro = config.get(batch.MBS)
    if micro == 1 and isinstance(micro, int) and batch.MBS not in filled and batchnorm:
        findings.append(Finding(BATCHNORM_ONE_SAMPLE, f"{batch.MBS} is 1 and the model has BatchNorm layers: the first "
                                                      "training step fails with \"Expected more than 1 value per "
                                                      "channel when training\"; use at least 2 (and fewer "
                                                      "accumulation steps to keep the global batch)",
                                batch.POINTER[batch.MBS], fails_in=STEP,
                                fix="2" if batch.TBS not in config else None))  # else train_batch_size changes too
    elif micro == 1 and isinstance(micro, int) and batch.MBS not in filled:
        findings.append(Finding(MICRO_BATCH_ONE, f"{batch.MBS} is 1: each GPU sees one sample per step; BatchNorm "
                                                 "layers fail with \"Expected more than 1 value per channel when "
                                                 "training\"",
                                batch.POINTER[batch.MBS]))
    return findings


def removed_keys(config: dict) -> list[Finding]:
    findings = []
    for pointer, message in schema.removed():
        parts = pointer.split("/")[1:]
        node = config
        for part in parts[:-1]:
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, dict) and parts[-1] in node:
            findings.append(Finding(REMOVED_KEY, f"DeepSpeed {schema.active()} fails: {message.strip()}"
                                    f"{schema.other_releases_note(pointer, removed_block=True)}", pointer, fails_in=LOAD,
                                    on_key=True))
    return findings


def _dedupe(findings: list[Finding]) -> list[Finding]:
    """Drop the findings about a value's type where a more specific finding names the same value
    (DS003 for an hjson string, DS700 for "auto", DS305/DS311/DS703 for what fails on it)."""
    generic = (WRONG_TYPE, STEP_VALUE)
    specific = {f.pointer for f in findings if f.rule not in generic}
    seen, out = set(), []
    for f in findings:
        if f.rule in generic and f.pointer in specific:
            continue
        key = (f.code, f.pointer, f.world_size, f.message, f.offset)
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out
