"""The rule registry: every rule dsconfig can report, one declaration each, grouped by area.

Each module below declares its rules as `Rule` objects (dsconfig.rules.rule) named after the rule
(`batch-mismatch` is BATCH_MISMATCH in dsconfig.rules.batch) and lists them in its RULES tuple. The
checkers import the objects they report; this package lists the modules explicitly, so a rule
exists when its module is in MODULES and its object is in that module's RULES:

  files              DS0xx reading the file, DS900 dsconfig's own configuration
  keys               DS1xx keys and values
  batch              DS2xx batch arithmetic
  zero               DS3xx ZeRO and offload
  precision          DS4xx precision and dtypes
  optimizer          DS5xx optimizer and scheduler
  sections           DS6xx other sections
  integration        DS7xx target integration ("auto", the HF Trainer, Lightning)
  accelerate_keys    ACCxxx what an Accelerate YAML loads, and what it ignores
  accelerate_launch  ACCxxx what `accelerate launch` starts, and the DeepSpeed settings it passes on
  fsdp               ACCxxx the FSDP settings of an Accelerate YAML, as FullyShardedDataParallelPlugin reads them
  scripts            DS8xx training scripts read statically (Lightning samplers, float and indivisible batches)
  trainer_fsdp       ACC04x the HF Trainer's fsdp / fsdp_config, and their conflicts with the Accelerate YAML
  model              DS95x the config against the model `lint --model` names (MoE leaf modules, expert
                     parallelism, quantized weights, the Trainer's hidden-size fills, ZeRO-3 saves); DS9xx
                     had room, and a code keeps the DS/ACC + three digits shape every output format expects

One code, one severity, everywhere (terminal, JSON, SARIF). Where the outcome depends on the target
(hjson vs json.load, who fills "auto"), that shows in a finding's `fails_in`, not in its severity.
"""

from __future__ import annotations

from . import (
    accelerate_keys,
    accelerate_launch,
    batch,
    files,
    fsdp,
    integration,
    keys,
    model,
    optimizer,
    precision,
    scripts,
    sections,
    trainer_fsdp,
    zero,
)
from .rule import AREAS, DOCS_URL, Rule, area_index

MODULES = (files, keys, batch, zero, precision, optimizer, sections, integration, scripts, accelerate_keys,
           accelerate_launch, fsdp, trainer_fsdp, model)


def _listing_order(rule: Rule) -> tuple:
    """By area as docs/rules.md shows them, then by code."""
    return area_index(rule.code), rule.code


RULES: dict[str, Rule] = {rule.code: rule for rule in sorted((r for m in MODULES for r in m.RULES),
                                                              key=_listing_order)}
BY_NAME: dict[str, Rule] = {rule.name: rule for rule in RULES.values()}
assert len(RULES) == sum(len(m.RULES) for m in MODULES), "a rule code is declared twice"
assert len(BY_NAME) == len(RULES), "a rule name is used twice"

__all__ = ["AREAS", "BY_NAME", "DOCS_URL", "MODULES", "RULES", "Rule"]
