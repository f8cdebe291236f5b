"""The first training step: `gradient_clipping`, `steps_per_print` and `gradient_predivide_factor`.

DeepSpeedConfig stores these three with a plain `dict.get` and deepspeed.initialize passes them on
unread, so a value that is not a number (a quoted "1.0", hjson's `.5` or `NaN`, which it reads as
strings, an "auto" nobody fills, null) first meets arithmetic when the model trains. Where, in
DeepSpeed 0.19.8:

  gradient_clipping          engine._take_model_step: `if self.gradient_clipping() > 0.0`, before the
                             optimizer runs (so also when fp16 skips the step). Earlier in two cases:
                             with compute_grad_norm=false, ZeRO-1/2's optimizer compares
                             `clip_grad > 0.0` in its constructor; and the HF Trainer compares the
                             value with max_grad_norm (`!=`: a string never matches) and raises at
                             the start of train().
  steps_per_print            engine._take_model_step: `(self.global_steps + 1) % self.steps_per_print()`
                             on rank 0. null switches the report off, and Accelerate's DeepSpeedPlugin
                             (HF Trainer, Accelerate) overwrites the key with inf.
  gradient_predivide_factor  the gradient reduction in backward: `1.0 / self.gradient_predivide_factor()`
                             (engine.allreduce_bucket, and ZeRO's reduction without reduce-scatter),
                             skipped by a truthy prescale_gradients or gradient_allreduce_op "sum".
                             ZeRO-1's reduce-scatter never reads it; ZeRO-2/3's asserts it equals 1.0
                             in deepspeed.initialize (DS311).

Booleans are numbers to Python (`True > 0.0`), so they run. This module owns the three values' type
check (`x-dsconfig-owner: step` in the schema) and tells the checkers of DS003 (hjson strings) and
DS700 (unfilled "auto") where such a string stops the run.
"""

from __future__ import annotations

from typing import NamedTuple

from ..findings import Finding
from ..phases import INITIALIZE, SILENT, STEP
from ..rules.keys import STEP_VALUE, WRONG_TYPE
from ..targets import HF_TRAINER, Target
from ..values import is_auto, json_type, to_json
from .initialize import engine_setup
from .models import assume_repaired, check_sections

STEP_VALUES = ("/gradient_clipping", "/steps_per_print", "/gradient_predivide_factor")


class Failure(NamedTuple):
    phase: str | None  # STEP, INITIALIZE, or SILENT when the run never computes with the value
    how: str  # what the run does with it, a clause a message can end with


def failure(pointer: str, config: dict, target: Target, resolved: dict | None = None) -> Failure | None:
    """What the value at `pointer` does to the run when it is not a number; None for other pointers and values.

    `resolved`: the pydantic sections as check_sections resolves them (computed when not given).
    """
    key = pointer[1:]
    if pointer not in STEP_VALUES or not isinstance(config, dict) or key not in config or _runs(key, config[key]):
        return None
    if resolved is None:
        resolved = assume_repaired(config, check_sections(config))
    setup = engine_setup(config, resolved, target)
    return _FAILURES[key](setup, config[key])


def check_step(config: dict, resolved: dict, target: Target) -> list[Finding]:
    """DS111 for a step-time value the run fails on, DS109 for one of the wrong type that runs anyway.

    "auto" is dsconfig.deepspeed.target's (DS700, DS704).
    """
    findings = []
    for pointer in STEP_VALUES:
        key = pointer[1:]
        value = config.get(key)
        if key not in config or is_auto(value) or (_runs(key, value) and not isinstance(value, bool)):
            continue
        got = "null" if value is None else f"{json_type(value)} {_short(to_json(value))}"
        if isinstance(value, bool):
            findings.append(Finding(WRONG_TYPE, f"`{key}` should be a number, got {got}; DeepSpeed does not check "
                                                f"it, and Python counts {to_json(value)} as {int(value)}", pointer))
            continue
        outcome = failure(pointer, config, target, resolved)
        if outcome.phase is SILENT:
            findings.append(Finding(WRONG_TYPE, f"`{key}` should be a number, got {got}; DeepSpeed does not check "
                                                f"it, and {outcome.how}", pointer))
        else:
            findings.append(Finding(STEP_VALUE, f"`{key}` is {got}, not a number: DeepSpeedConfig accepts it, and "
                                                f"{outcome.how}", pointer, fails_in=outcome.phase))
    return findings


def _runs(key: str, value) -> bool:
    """Whether DeepSpeed computes with `value` without an error (booleans count as 1 and 0)."""
    return isinstance(value, (int, float)) or (key == "steps_per_print" and value is None)


def _short(text: str) -> str:
    return text if len(text) <= 60 else text[:57] + "..."


def _type_error(value, template: str) -> str:
    return "TypeError: " + template.format(type(value).__name__)


def _clipping(s, value) -> Failure:
    error = _type_error(value, "'>' not supported between instances of '{}' and 'float'")
    if s.target is HF_TRAINER and value is not None:  # fill_match skips a null
        return Failure(INITIALIZE, "the HF Trainer compares it with TrainingArguments.max_grad_norm, which it never "
                                   "equals: train() fails at its start with \"Please correct the following DeepSpeed "
                                   f"config values that mismatch TrainingArguments values: - ds "
                                   f"gradient_clipping={_short(str(value))} vs hf max_grad_norm=...\"")
    if s.zero and s.stage in (1, 2) and s.zero.get("compute_grad_norm") is False:
        return Failure(INITIALIZE, f"with compute_grad_norm=false, ZeRO-{s.stage}'s optimizer compares it with 0.0: "
                                   f"deepspeed.initialize raises `{error}`")
    return Failure(STEP, f"the first optimizer step raises `{error}` (engine._take_model_step: "
                         "`gradient_clipping() > 0.0`), after the model has loaded")


def _steps_per_print(s, value) -> Failure:
    if s.target.fills_auto:
        return Failure(SILENT, "Accelerate's DeepSpeedPlugin replaces it with inf, so it is never used")
    error = _type_error(value, "unsupported operand type(s) for %: 'int' and '{}'")
    return Failure(STEP, f"the first optimizer step raises `{error}` on rank 0 (engine._take_model_step: "
                         "`(global_steps + 1) % steps_per_print()`), after the model has loaded")


def _predivide(s, value) -> Failure:
    if s.config.get("prescale_gradients") or str(s.config.get("gradient_allreduce_op", "mean")).lower() != "mean":
        return Failure(SILENT, "with prescale_gradients or gradient_allreduce_op \"sum\" it is never used")
    reduce_scatter = s.zero.get("reduce_scatter", True) if s.zero else True
    if s.stage is None:
        return Failure(SILENT, "whether DeepSpeed uses it depends on the ZeRO stage, which is not known here")
    if s.stage in (2, 3) and reduce_scatter:
        return Failure(INITIALIZE, f"ZeRO-{s.stage}'s reduce-scatter asserts it equals 1.0 in deepspeed.initialize")
    if s.stage == 1 and reduce_scatter and s.zero_12_optimizer:
        return Failure(SILENT, "ZeRO-1's reduce-scatter never uses it")
    if s.stage == 3:  # stage3.py: buffer_to_reduce.div_(self.gradient_predivide_factor)
        error = _type_error(value, "div_(): argument 'other' (position 1) must be Tensor, not {}")
    else:  # engine.allreduce_bucket, stage_1_and_2.gradient_reduction_w_predivide
        error = _type_error(value, "unsupported operand type(s) for /: 'float' and '{}'")
    return Failure(STEP, f"the first backward pass raises `{error}` where the gradient reduction divides by it, "
                         "after the model has loaded")


_FAILURES = {"gradient_clipping": _clipping, "steps_per_print": _steps_per_print,
             "gradient_predivide_factor": _predivide}
