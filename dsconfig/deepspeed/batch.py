"""Batch-size arithmetic exactly as DeepSpeed 0.19.8 resolves it, and what to change when it fails.

`resolve` replays `DeepSpeedConfig._set_batch_related_parameters`, `_batch_assertion` and the
first asserts of `_do_error_check` on the very same Python values (strings, bools and floats
included) and the same world size, so every success, every exception and every message is
DeepSpeed's own. The checks around it add what DeepSpeed lets through (floats, bools) and
suggest corrected values.
"""

from __future__ import annotations

import math

from typing import NamedTuple

from ..findings import Finding
from ..phases import INITIALIZE, PARSE, STEP
from ..rules.batch import (
    BATCH_MISMATCH,
    BATCH_MISSING,
    BATCH_NO_WORLD_SIZE,
    BATCH_TYPE,
    BATCH_WORLD_SIZES,
    FRACTIONAL_WORLD_SIZE,
    MICRO_BATCH_ONE,
    BATCHNORM_ONE_SAMPLE,
)
from ..values import divisors
from . import schema

TBS = "train_batch_size"
MBS = "train_micro_batch_size_per_gpu"
GAS = "gradient_accumulation_steps"
BATCH_KEYS = (TBS, MBS, GAS)
POINTER = {key: "/" + key for key in BATCH_KEYS}

MISSING = "Either train_batch_size or train_micro_batch_size_per_gpu needs to be provided"


class Outcome(NamedTuple):
    ok: bool
    values: tuple  # (train_batch, micro_batch, grad_acc) after derivation (may be partial on failure)
    error: str | None  # DeepSpeed's exception text, "TypeError: ..." style for non-assertion errors
    kind: str | None  # "missing" | "type" | "assert"


def data_parallel_size(config: dict, world_size: int):
    """DeepSpeedConfig's world size: divided (true division) by sequence_parallel_size when present, in the
    releases that do (generated facts: 0.17.1 on; until 0.19.2 a division that raises gives world size 1)."""
    if splits_world(config):
        try:
            return world_size / config["sequence_parallel_size"]
        except Exception:
            if schema.facts()["sequence_parallel_error_means_world_1"]:
                return 1
            raise
    return world_size


SP = "sequence_parallel_size"


def splits_world(config: dict) -> bool:
    return SP in config and schema.facts()["sequence_parallel_divides_world"]


def resolve(train_batch, micro_batch, grad_acc, world_size) -> Outcome:
    """Replay DeepSpeed's derivation and assertions; never raises."""
    try:
        if train_batch is not None and micro_batch is not None and grad_acc is not None:
            pass
        elif train_batch is not None and micro_batch is not None:
            grad_acc = train_batch // micro_batch
            grad_acc //= world_size
        elif train_batch is not None and grad_acc is not None:
            micro_batch = train_batch // world_size
            micro_batch //= grad_acc
        elif micro_batch is not None and grad_acc is not None:
            train_batch = micro_batch * grad_acc
            train_batch *= world_size
        elif train_batch is not None:
            grad_acc = 1
            micro_batch = train_batch // world_size
        elif micro_batch is not None:
            train_batch = micro_batch * world_size
            grad_acc = 1
        else:
            return Outcome(False, (train_batch, micro_batch, grad_acc), MISSING, "missing")

        values = (train_batch, micro_batch, grad_acc)
        if not train_batch > 0:
            return Outcome(False, values, f"Train batch size: {train_batch} has to be greater than 0", "assert")
        if not micro_batch > 0:
            return Outcome(False, values, f"Micro batch size per gpu: {micro_batch} has to be greater than 0",
                           "assert")
        if not grad_acc > 0:
            return Outcome(False, values, f"Gradient accumulation steps: {grad_acc} has to be greater than 0",
                           "assert")
        if not train_batch == micro_batch * grad_acc * world_size:
            return Outcome(False, values,
                           "Check batch related parameters. train_batch_size is not equal to "
                           "micro_batch_per_gpu * gradient_acc_step * world_size "
                           f"{train_batch} != {micro_batch} * {grad_acc} * {world_size}", "assert")
        # _do_error_check re-asserts truthiness; unreachable once the > 0 checks passed, kept for fidelity.
        if not micro_batch:
            return Outcome(False, values, f"DeepSpeedConfig: {MBS} is not defined", "assert")
        if not grad_acc:
            return Outcome(False, values, f"DeepSpeedConfig: {GAS} is not defined", "assert")
        return Outcome(True, values, None, None)
    except Exception as error:  # the same TypeError/ZeroDivisionError DeepSpeed would raise
        return Outcome(False, (train_batch, micro_batch, grad_acc), f"{type(error).__name__}: {error}", "type")


# -- helpers for suggestions -----------------------------------------------------------------

def as_int(value) -> int | None:
    """The integer a person meant: 7, 7.0 and "7" all mean 7; True, 7.5 and "auto" mean nothing."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        text = value.strip()
        if text.lstrip("+-").isdigit():
            return int(text)
        try:
            number = float(text)
        except ValueError:
            return None
        if number == number and abs(number) != float("inf") and number.is_integer():
            return int(number)
    return None


def largest_divisor_at_most(n: int, limit: int) -> int:
    return max(divisors(n, max(1, limit)))


def nearest_multiple(value: int, step: int) -> int:
    """The multiple of `step` closest to `value`, rounding ties up, never below `step`."""
    lower = (value // step) * step
    upper = lower + step
    if lower < step:
        return step
    return lower if value - lower < upper - value else upper


def fmt_product(*factors) -> str:
    return " × ".join(str(f) for f in factors)


class Suggestion(NamedTuple):
    key: str  # the key whose new value is `value`
    value: int
    text: str  # human sentence
    one_key: bool = True  # False: another key must change too (the text says which), so no autofix


def suggest(tbs: int | None, mbs: int | None, gas: int | None, world: int, min_micro: int = 1) -> list[Suggestion]:
    """Ways to make the arithmetic hold at `world`, best first (all inputs positive ints or None), none
    leaving fewer than `min_micro` samples per GPU (2 for a model with BatchNorm layers).

    Keeping train_batch_size (the optimisation hyper-parameter) comes first; a one-key change
    is preferred over two.
    """
    out = _suggestions(tbs, mbs, gas, world)
    if min_micro <= 1:
        return out
    out = [s for s in out if _micro_after(s, tbs, mbs, gas, world) >= min_micro]
    if not out:
        m, g = max(mbs or min_micro, min_micro), gas or 1
        also = f" and {MBS} to {m}" if mbs is not None and mbs < m else ""
        if tbs is not None:
            out.append(Suggestion(TBS, m * g * world, f"set {TBS} to {m * g * world}{also} ({fmt_product(m, g, world)}: "
                                                      f"BatchNorm needs at least {min_micro} samples per GPU)",
                                  one_key=not also))
        elif mbs is not None:
            out.append(Suggestion(MBS, m, f"set {MBS} to {m} (BatchNorm needs at least {min_micro} samples per GPU)"))
    return out


def _micro_after(suggestion: Suggestion, tbs, mbs, gas, world: int) -> int:
    """The micro batch per GPU once the suggestion is applied (a suggestion changes one key)."""
    values = {TBS: tbs, MBS: mbs, GAS: gas}
    values[suggestion.key] = suggestion.value
    if suggestion.key == GAS and mbs is None and tbs is not None:
        return tbs // (suggestion.value * world)
    if values[MBS] is not None:
        return values[MBS]
    return (values[TBS] or 0) // ((values[GAS] or 1) * world)


def _suggestions(tbs: int | None, mbs: int | None, gas: int | None, world: int) -> list[Suggestion]:
    out: list[Suggestion] = []
    if tbs is not None and tbs % world == 0:
        per_gpu = tbs // world
        if mbs is not None and per_gpu % mbs == 0 and gas is not None:
            g = per_gpu // mbs
            out.append(Suggestion(GAS, g, f"keep {TBS} {tbs}: set {GAS} to {g} ({fmt_product(mbs, g, world)} = {tbs})"))
        if mbs is not None and gas is not None and per_gpu % gas == 0:
            m = per_gpu // gas
            out.append(Suggestion(MBS, m, f"keep {TBS} {tbs}: set {MBS} to {m} ({fmt_product(m, gas, world)} = {tbs})"))
        if mbs is not None and gas is None:
            m = largest_divisor_at_most(per_gpu, mbs)
            out.append(Suggestion(MBS, m, f"keep {TBS} {tbs}: set {MBS} to {m} "
                                           f"({GAS} becomes {per_gpu // m}: {fmt_product(m, per_gpu // m, world)} = {tbs})"))
        if gas is not None and mbs is None:
            g = largest_divisor_at_most(per_gpu, gas)
            out.append(Suggestion(GAS, g, f"keep {TBS} {tbs}: set {GAS} to {g} "
                                           f"({MBS} becomes {per_gpu // g}: {fmt_product(per_gpu // g, g, world)} = {tbs})"))
        if mbs is not None and gas is not None and not out:
            m = largest_divisor_at_most(per_gpu, mbs)
            g = per_gpu // m
            out.append(Suggestion(MBS, m, f"keep {TBS} {tbs}: set {MBS} to {m} and {GAS} to {g} "
                                           f"({fmt_product(m, g, world)} = {tbs})", one_key=False))
    if tbs is not None:
        step = (mbs or 1) * (gas or 1) * world
        if mbs is not None and gas is not None:
            new = step
        else:
            new = nearest_multiple(tbs, step)
        if new != tbs:
            parts = [str(p) for p in (mbs, gas) if p is not None] + [str(world)]
            how = f"{' × '.join(parts)} = {new}" if mbs is not None and gas is not None else f"a multiple of {step}"
            out.append(Suggestion(TBS, new, f"set {TBS} to {new} ({how})"))
    return out


# -- the check ---------------------------------------------------------------------------------

def _describe(value) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, float):
        return "a float"
    if isinstance(value, str):
        return "a string"
    if value is None:
        return "null"
    return f"a {type(value).__name__}"


def check_types(config: dict, auto_filled: frozenset, written: dict | None = None) -> list[Finding]:
    """DS201: each given batch value must be a positive integer (even where DeepSpeed lets it pass).

    `written` is the strict-JSON reading of the file: hjson turns `32.0` into 32 for DeepSpeed,
    but the float is still what json.load readers (and the person) see, so it is checked too.
    """
    findings = []
    for key in BATCH_KEYS:
        value = config.get(key)
        if value is None or key in auto_filled:
            continue
        if isinstance(written, dict) and isinstance(written.get(key), float) and isinstance(value, int):
            value = written[key]
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            continue
        meant = as_int(value)
        fix = str(meant) if meant is not None and meant > 0 else None
        if isinstance(value, float) and not math.isfinite(value):  # a Python dict's float('nan') or float('inf')
            findings.append(_non_finite(key, value, resolve(*_values(config, auto_filled), 1)))
            continue
        if isinstance(value, (int, float)) and value <= 0:
            # Always fatal: DeepSpeed asserts every given batch value is > 0 (false counts as 0
            # and fails even earlier, dividing by zero).
            shown = "false (0 in DeepSpeed's arithmetic)" if value is False else repr(value)
            message = f"{key} is {shown}; it must be a positive integer"
            findings.append(Finding(BATCH_TYPE, message, POINTER[key], fails_in=PARSE, fix=fix))
            continue
        if isinstance(value, (int, float)):  # bool, or a float (DeepSpeed computes with it)
            if isinstance(value, bool):
                why = "JSON true/false counts as 1/0 in DeepSpeed's arithmetic; write an integer"
                fix = "1" if value else None
            elif value.is_integer():
                why = ("DeepSpeed's own hjson loader happens to read it as an int, but json.load (HF Trainer, "
                       "Accelerate) keeps the float and a DataLoader rejects batch_size=%r; write %d" % (value, value))
            else:
                why = "a fractional batch size cannot be split into samples"
            findings.append(Finding(BATCH_TYPE, f"{key} is {_describe(value)} ({value!r}); {why}", POINTER[key],
                                    fix=fix))
            continue
        if value == "auto":
            continue  # reported by the target rules (DS700 / the Trainer)
        # Strings, lists, objects: DeepSpeed's arithmetic raises TypeError on them.
        shown = f"{value!r}" if isinstance(value, str) else _describe(value)
        hint = f" Write {meant} without quotes." if fix else ""
        findings.append(Finding(BATCH_TYPE, f"{key} is {shown}, not a number: DeepSpeed fails with a TypeError "
                                            f"while resolving the batch size.{hint}", POINTER[key],
                                fails_in=PARSE, fix=fix))
    return findings


def _non_finite(key: str, value: float, outcome: Outcome) -> Finding:
    """DS201 for NaN or an infinity, which only a Python dict can hand over (a file's `NaN` is a string to hjson and
    a float to json.load): DeepSpeed's own assertions decide whether it fails (NaN fails every comparison;
    inf // n is NaN), else the DataLoader does (batch_size must be an int)."""
    if not outcome.ok and outcome.kind in ("assert", "type"):
        raised = f"AssertionError: {outcome.error}" if outcome.kind == "assert" else outcome.error
        return Finding(BATCH_TYPE, f"{key} is {value!r}, which is no batch size: DeepSpeed raises {raised} at any "
                                   "world size", POINTER[key], fails_in=PARSE)
    return Finding(BATCH_TYPE, f"{key} is {value!r}, which is no batch size: DeepSpeed computes with it, and a "
                               f"DataLoader rejects batch_size={value!r}", POINTER[key])


def _values(config: dict, auto_filled: frozenset):
    return tuple(None if key in auto_filled else config.get(key) for key in BATCH_KEYS)


def check_world_size(config: dict, world_size: int, auto_filled: frozenset = frozenset(),
                     batchnorm: bool = False) -> list[Finding]:
    """DS202/DS205/DS206 at one world size (the number of processes launched); with `batchnorm`, one sample
    per GPU is DS207 and no suggested fix goes below 2 per GPU."""
    findings: list[Finding] = []
    try:
        dp = data_parallel_size(config, world_size)
    except Exception as error:
        sp = config.get("sequence_parallel_size")
        return [Finding(FRACTIONAL_WORLD_SIZE, f"sequence_parallel_size {sp!r} breaks DeepSpeed's world size "
                                               f"computation ({world_size} / {sp!r}: {type(error).__name__}: {error})",
                        "/sequence_parallel_size", fails_in=PARSE, world_size=world_size)]
    values = _values(config, auto_filled)
    outcome = resolve(*values, dp)
    if isinstance(dp, float) and not dp.is_integer():  # 8 / 4 = 2.0 is a float but divides evenly
        sp = config["sequence_parallel_size"]
        findings.append(Finding(
            FRACTIONAL_WORLD_SIZE,
            f"sequence_parallel_size {sp} does not divide world size {world_size}: DeepSpeed's data-parallel size "
            f"becomes {dp}" + ("" if outcome.ok else " and the batch check fails"),
            "/sequence_parallel_size", fails_in=PARSE if not outcome.ok else INITIALIZE, world_size=world_size))
    if outcome.ok:
        micro = outcome.values[1]
        if micro == 1 and values[1] is None:  # explicit 1s are reported once, without a world size
            message = f"at world size {world_size} each GPU gets 1 sample per step ({TBS} {values[0]} over " \
                      f"{world_size} GPUs)"
            if batchnorm:
                fix = suggest(as_int(values[0]), None, as_int(values[2]), dp, min_micro=2)
                findings.append(Finding(BATCHNORM_ONE_SAMPLE, f"{message}: with BatchNorm layers the first step fails "
                                        "with \"Expected more than 1 value per channel when training\". To fix: "
                                        f"{fix[0].text}", POINTER[fix[0].key], fails_in=STEP, world_size=world_size,
                                        fix=str(fix[0].value) if fix[0].one_key else None))
            else:
                findings.append(Finding(MICRO_BATCH_ONE, f"{message}; BatchNorm layers need at least 2",
                                        POINTER[TBS], world_size=world_size))
        return findings
    if outcome.kind != "assert" or any(_non_positive(v) for v in values):
        return findings  # missing keys, type errors and non-positive values do not depend on the world size
    ints = [as_int(v) for v in values]
    if isinstance(dp, float) or any(v is not None and i is None for v, i in zip(values, ints)):
        findings.append(Finding(BATCH_MISMATCH, f"{outcome.error} (world size {world_size})", POINTER[TBS],
                                fails_in=PARSE, world_size=world_size))
        return findings
    tbs, mbs, gas = ints
    options = suggest(tbs, mbs, gas, dp, min_micro=2 if batchnorm else 1)
    given = [k for k, v in zip(BATCH_KEYS, values) if v is not None]
    pointer = POINTER[options[0].key] if options else POINTER[given[0]]
    detail = ""
    if tbs is not None and (outcome.values[1] == 0 or outcome.values[2] == 0):
        detail = f": {tbs} samples are fewer than one micro batch per GPU"
    elif tbs is not None and mbs is None and gas is None and tbs % dp:
        detail = f": {tbs} samples do not split evenly over {dp} GPUs"
        if outcome.values[1] == 1:
            detail += (" (DeepSpeed would give each GPU 1 sample, and a BatchNorm layer fails with "
                       "\"Expected more than 1 value per channel when training\")")
    advice = "; ".join(s.text for s in options[:2])
    message = f"at world size {world_size}{detail}. DeepSpeed: {outcome.error}"
    if advice:
        message += f". To fix: {advice}"
    findings.append(Finding(BATCH_MISMATCH, message, pointer, fails_in=PARSE, world_size=world_size,
                            fix=str(options[0].value) if options and options[0].one_key else None))
    return findings


def _non_positive(value) -> bool:
    return isinstance(value, (int, float)) and value <= 0  # false included: it is 0


def world_independent(config: dict, auto_filled: frozenset = frozenset()) -> list[Finding]:
    """Failures that happen at every world size: nothing given (DS200)."""
    values = _values(config, auto_filled)
    if values[0] is None and values[1] is None:
        if auto_filled & {TBS, MBS}:
            return []
        return [Finding(BATCH_MISSING, f"DeepSpeed fails: {MISSING}. Add {MBS} (the per-GPU batch); DeepSpeed derives "
                                       f"{TBS} from it, the accumulation steps and the world size", "", fails_in=PARSE)]
    return []


def working_world_sizes(config: dict, auto_filled: frozenset = frozenset()) -> list[int] | None:
    """World sizes at which the arithmetic holds; None when every world size works.

    Only for positive-integer values (other values get DS201 first). Valid world sizes never
    exceed train_batch_size, so divisors cover them all.
    """
    if splits_world(config):
        return None  # depends on the process count / sp split; checked per world size only
    tbs, mbs, gas = (as_int(v) if v is not None else None for v in _values(config, auto_filled))
    raw = _values(config, auto_filled)
    if any(v is not None and (i is None or i <= 0) for v, i in zip(raw, (tbs, mbs, gas))):
        return None
    if tbs is None:
        return None  # micro batch (× accumulation) given: train_batch_size follows the world size
    if mbs is not None and gas is not None:
        per_world = mbs * gas
        return [tbs // per_world] if tbs % per_world == 0 else []
    unit = mbs or gas or 1
    if tbs % unit:
        return []
    return divisors(tbs // unit)


def check_without_world_size(config: dict, auto_filled: frozenset = frozenset()) -> list[Finding]:
    """DS203 when no world size can work, DS204 listing the ones that do."""
    sizes = working_world_sizes(config, auto_filled)
    if sizes is None:
        return []
    tbs, mbs, gas = (as_int(v) if v is not None else None for v in _values(config, auto_filled))
    if not sizes:
        factors = [(n, p) for n, p in ((MBS, mbs), (GAS, gas)) if p is not None]
        unit = (mbs or 1) * (gas or 1)
        if len(factors) == 1:
            of = f"{factors[0][0]} ({unit})"
        else:
            of = f"{' × '.join(n for n, _ in factors)} = {' × '.join(str(p) for _, p in factors)} = {unit}"
        fix_value = nearest_multiple(tbs, unit)
        message = (f"{TBS} {tbs} is not a multiple of {of}, so no world size satisfies {tbs} = {unit} × world_size; "
                   f"DeepSpeed fails at every world size. Set {TBS} to a multiple of {unit}, e.g. {fix_value}")
        return [Finding(BATCH_NO_WORLD_SIZE, message, POINTER[TBS], fails_in=PARSE, fix=str(fix_value))]
    shown = ", ".join(str(s) for s in sizes[:12]) + (", ..." if len(sizes) > 12 else "")
    formula = " × ".join(str(p) for p in (mbs, gas) if p is not None)
    if mbs is not None and gas is not None:
        message = f"{TBS} {tbs} = {formula} × world_size holds only at world size {shown}"
    else:
        message = f"{TBS} {tbs} resolves only at world sizes {shown}"
    message += "; pass --world-size to check the GPU count you launch"
    return [Finding(BATCH_WORLD_SIZES, message, POINTER[TBS])]
