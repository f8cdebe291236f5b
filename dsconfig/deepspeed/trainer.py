"""The HF Trainer's "auto" fill and mismatch check (transformers 5.23.0), replayed statically.

`TrainingArguments(deepspeed=...)` runs `HfTrainerDeepSpeedConfig.trainer_config_process`:
every key it knows is either "auto" (replaced by the TrainingArguments value), missing
(skipped) or concrete, and a concrete value that differs (`!=`, so the JSON string "8" differs
from 8) is recorded as `- ds KEY=VALUE vs hf NAME=VALUE`. `trainer_config_finalize` adds the
scheduler step counts at the start of `train()` and raises one ValueError listing every
mismatch. This module replays both on the JSON values, plus what happens in between:

* Accelerate's `DeepSpeedPlugin` inserts `gradient_accumulation_steps: 1` when the key is
  missing, and `AcceleratorState` (inside `Trainer(...)`) runs `set_mixed_precision`, which
  adds `fp16`/`bf16` blocks and refuses an enabled dtype other than TrainingArguments'.
* With `auto_find_batch_size` the Trainer re-runs `trainer_config_process` on the *already
  filled* config at the start of `train()` (mismatches reset, batch sizes not compared), so
  the inserted `gradient_accumulation_steps: 1` and the added `{"enabled": false}` blocks get
  compared too.

Decisions, for the reader of the findings:

* Without a world size, `train_batch_size` is compared at no particular world size: DS703 only
  when no world size can match (the value is not a positive multiple of
  per_device_train_batch_size × gradient_accumulation_steps); otherwise DS704 names the one
  world size at which it matches.
* `scheduler.params.total_num_steps` / `warmup_num_steps` are checked when the step count is
  known: from `max_steps`, or from `dataset_size` × `num_train_epochs` at a known world size
  (assuming the first batch size fits when `auto_find_batch_size` is on). Hidden-size fills
  need the model config and are only described.
* Environment variables (`ACCELERATE_MIXED_PRECISION`, `ACCELERATE_DEEPSPEED_ZERO_STAGE`, ...)
  are assumed unset.
"""

from __future__ import annotations

import copy
import math
import re
from types import MappingProxyType
from typing import NamedTuple

from ..findings import Finding
from ..fsdp.trainer_args import fields
from ..phases import INITIALIZE, PARSE
from ..pointers import pointer_from
from ..rules.batch import BATCH_MISMATCH
from ..rules.integration import AUTO_FILLED, STEPS_PER_EPOCH, TRAINER_MISMATCH
from ..targets import ACCELERATE, DEEPSPEED, HF_TRAINER, LIGHTNING, Target
from ..training.epochs import epoch
from ..values import MAX_NODES, brief, closest, digits, to_json, too_big
from . import batch, schema
from .target import auto_pointers

TRANSFORMERS_VERSION = "5.23.0"

# TrainingArguments defaults in transformers 5.23.0 for every field this module reads
# (tests/deepspeed/test_trainer.py compares them with the real dataclass).
TRAINING_ARGS_DEFAULTS = MappingProxyType({
    "per_device_train_batch_size": 8,
    "gradient_accumulation_steps": 1,
    "learning_rate": 5e-05,
    "adam_beta1": 0.9,
    "adam_beta2": 0.999,
    "adam_epsilon": 1e-08,
    "weight_decay": 0.0,
    "max_grad_norm": 1.0,
    "fp16": False,
    "bf16": False,
    "fp16_full_eval": False,
    "bf16_full_eval": False,
    "warmup_steps": 0,
    "num_train_epochs": 3.0,
    "max_steps": -1,
    "auto_find_batch_size": False,
    "save_on_each_node": False,
    "dataloader_drop_last": False,
})

# Every init field of TrainingArguments 5.23.0: schemas/training-args.json, generated from the installed
# transformers by scripts/build_training_args_schema.py (tests/deepspeed/test_trainer.py compares them too).
TRAINING_ARGS_FIELDS = fields()

# Keys older transformers had that 5.23 no longer accepts, with what to write instead.
_RENAMED = {
    "warmup_ratio": "removed in transformers 5: write warmup_steps < 1 (a ratio of the training steps)",
    "evaluation_strategy": "renamed eval_strategy",
    "no_cuda": "renamed use_cpu",
    "per_gpu_train_batch_size": "removed: use per_device_train_batch_size",
}

_INT_KEYS = ("per_device_train_batch_size", "gradient_accumulation_steps", "max_steps")
_NUMBER_KEYS = ("learning_rate", "adam_beta1", "adam_beta2", "adam_epsilon", "weight_decay", "max_grad_norm",
                "warmup_steps", "num_train_epochs")
_BOOL_KEYS = ("fp16", "bf16", "fp16_full_eval", "bf16_full_eval", "auto_find_batch_size", "save_on_each_node",
              "dataloader_drop_last")
# The TrainingArguments fields the replay reads (the rest do not change what the Trainer does to the config)
REPLAYED_FIELDS = frozenset(_INT_KEYS + _NUMBER_KEYS + _BOOL_KEYS)

MISMATCH_HEAD = "Please correct the following DeepSpeed config values that mismatch TrainingArguments values:"

# A trillion optimizer steps (or epochs, each of at least one step) take 3,000 years at ten steps a
# second: a run that long is a typo. Below it, epochs × steps per epoch (at most --dataset-size) stays
# a finite float in the Trainer's math.ceil, and in dsconfig's replay of it.
MAX_STEPS = 10 ** 12


# -- training arguments -------------------------------------------------------------------------

def training_args_errors(training_args) -> list[str]:
    """Why these values cannot be TrainingArguments (empty when they can be used)."""
    if not isinstance(training_args, dict):
        return [f"training arguments must be a JSON object, not {type(training_args).__name__}"]
    # Values are shown by values.brief: a YAML alias chain shares its nodes, and written out in full twenty-five
    # nested `{a: *x, b: *x}` anchors are gigabytes; brief stops after about 120 characters.
    errors = [too_large] if (too_large := _too_large(training_args)) is not None else []
    for key in _INT_KEYS:
        value = training_args.get(key)
        if key in training_args and (not isinstance(value, int) or isinstance(value, bool)):
            errors.append(f"{key} must be an integer, not {brief(value)}")
    for key in ("per_device_train_batch_size", "gradient_accumulation_steps"):
        value = training_args.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value < 1:
            errors.append(f"{key} must be at least 1, not {_shown(value)}")
        elif isinstance(value, int) and not isinstance(value, bool) and value > MAX_STEPS:
            errors.append(f"{key} is {_shown(value)}, more than {MAX_STEPS:,} (samples per device, or micro-batches "
                          "per optimizer step): no run is that large")
    for key in _NUMBER_KEYS:
        value = training_args.get(key)
        if key in training_args and (not isinstance(value, (int, float)) or isinstance(value, bool)):
            errors.append(f"{key} must be a number, not {brief(value)}")
    warmup = training_args.get("warmup_steps")
    if isinstance(warmup, (int, float)) and not isinstance(warmup, bool) and warmup < 0:
        errors.append(f"warmup_steps must be >= 0, not {brief(warmup)}")  # TrainingArguments raises the same
    errors += _length_errors(training_args)
    for key in _BOOL_KEYS:
        if key in training_args and not isinstance(training_args[key], bool):
            errors.append(f"{key} must be true or false, not {brief(training_args[key])}")
    if training_args.get("fp16") is True and training_args.get("bf16") is True:
        errors.append("fp16 and bf16 are both true: TrainingArguments raises \"At most one of fp16 and bf16 can be "
                      "True, but not both\"")
    if training_args.get("fp16_full_eval") is True and training_args.get("bf16_full_eval") is True:
        errors.append("fp16_full_eval and bf16_full_eval are both true: TrainingArguments raises")
    return errors


def _length_errors(training_args: dict) -> list[str]:
    """The run's length: values TrainingArguments accepts but Trainer.train() fails on (NaN, Infinity),
    and lengths no run reaches (past MAX_STEPS)."""
    errors = []
    max_steps = training_args.get("max_steps", TRAINING_ARGS_DEFAULTS["max_steps"])
    if not isinstance(max_steps, int) or isinstance(max_steps, bool):
        return errors  # reported as not an integer
    if max_steps > MAX_STEPS:
        errors.append(f"max_steps is {_shown(max_steps)}, more than {MAX_STEPS:,} optimizer steps (3,000 years at "
                      "ten steps a second)")
    epochs = training_args.get("num_train_epochs")
    # set_initial_training_values reads the epochs when max_steps <= 0 (math.ceil(num_train_epochs) at 0),
    # and counts the run's steps from them when max_steps < 0
    if max_steps <= 0 and isinstance(epochs, float) and not math.isfinite(epochs):  # (math.isfinite(int) can overflow)
        ceil = "math.ceil(num_train_epochs × optimizer steps per epoch)" if max_steps < 0 else \
            "math.ceil(num_train_epochs)"
        errors.append(f"num_train_epochs is {brief(epochs)}: with max_steps {max_steps} Trainer.train() computes "
                      f"{ceil} and raises \"{_ceil_error(epochs)}\"")
    elif max_steps < 0 and _is_number(epochs) and epochs > MAX_STEPS:
        text = (f"num_train_epochs is {brief(epochs)}, more than {MAX_STEPS:,} epochs of at least one optimizer "
                "step each (3,000 years at ten steps a second)")
        if isinstance(epochs, float) and math.isinf(epochs * 2):
            text += (f"; from 2 optimizer steps per epoch Trainer.train() raises \"{_ceil_error(math.inf)}\" in "
                     "math.ceil(num_train_epochs × optimizer steps per epoch)")
        errors.append(text)
    warmup = training_args.get("warmup_steps")
    if isinstance(warmup, float) and not math.isfinite(warmup) and warmup != -math.inf:  # -Infinity: "must be >= 0"
        errors.append(f"warmup_steps is {brief(warmup)}: when train() starts, the HF Trainer's DeepSpeed setup calls "
                      f"TrainingArguments.get_warmup_steps, which raises \"{_ceil_error(warmup)}\"")
    return errors


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _ceil_error(value: float) -> str:
    """What math.ceil or int() raises on a value that is not finite."""
    if math.isnan(value):
        return "ValueError: cannot convert float NaN to integer"
    return "OverflowError: cannot convert float infinity to integer"


def _shown(number: int) -> str:
    if abs(number) < 10 ** 30:
        return str(number)
    return f"a {'negative ' if number < 0 else ''}{digits(number)}-digit number"


def _too_large(training_args: dict) -> str | None:
    """Why the values are too large to use, or None. TrainingArguments values are a flat mapping, but a YAML
    file's aliases can share one node a million times, and whatever writes the values out (json.dumps for
    the checks, a message) would expand every copy: at most MAX_NODES values (dsconfig.values.too_big, the
    bound explain uses too); only nested values are walked. Nesting past its depth is left alone: a cycle
    is named by the JSON conversion that follows, and deep values are not walked by the checks."""
    if all(not isinstance(value, (dict, list)) for value in training_args.values()):
        return None
    if too_big(training_args) == "nodes":
        return (f"the values hold more than {MAX_NODES:,} values once YAML aliases are expanded (an alias "
                "bomb?); TrainingArguments values are a flat mapping of settings")
    return None


def load_training_args(path) -> dict:
    """Read a TrainingArguments JSON or YAML file (as HfArgumentParser.parse_json_file and parse_yaml_file,
    the reading of TRL's --config recipes and LLaMA-Factory's argument files, read it: json.loads, or
    yaml.safe_load for a .yaml/.yml file).

    Raises ValueError with a message for the user when the file cannot be used. Keys that are
    not TrainingArguments fields are kept (scripts parse model and data arguments from the same
    file) and only mentioned in the DS704 note.
    """
    from ..files import FileError, read_json
    try:
        values = read_yaml_file(path) if str(path).endswith((".yaml", ".yml")) else read_json(path)
    except (FileError, ValueError) as error:
        raise ValueError(f"training arguments {error}") from None
    errors = training_args_errors(values)
    if errors:
        raise ValueError(f"training arguments {path}: " + "; ".join(errors))
    return values


def read_yaml_file(path: str):
    """A YAML file of TrainingArguments, as HfArgumentParser.parse_yaml_file reads it (yaml.safe_load). Raises
    dsconfig.files' FileError (TooLarge, Refused) when it cannot be read, ValueError when it is no YAML."""
    from ..files import read_bytes
    from ..yamldoc import YamlDocument
    data = read_bytes(str(path))
    try:
        text = data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
    except UnicodeDecodeError:
        raise ValueError(f"{path}: not UTF-8 text") from None
    doc = YamlDocument(str(path), text)
    if not doc.loaded:
        line, column = doc.position(doc.load_error.offset)
        raise ValueError(f"{path}:{line}:{column}: not valid YAML: {doc.load_error.message}")
    return doc.value


def effective_args(training_args: dict | None) -> dict:
    """The values the Trainer sees: the given ones over the 5.23 defaults."""
    merged = dict(TRAINING_ARGS_DEFAULTS)
    merged.update({k: v for k, v in (training_args or {}).items() if k in TRAINING_ARGS_DEFAULTS})
    return merged


def _unknown_keys_note(training_args: dict) -> str:
    notes = []
    for key in sorted(training_args):
        if key in TRAINING_ARGS_FIELDS:
            continue
        if key in _RENAMED:
            notes.append(f"{key} ({_RENAMED[key]})")
        else:
            near = closest(key, TRAINING_ARGS_FIELDS, 0.85)
            if near:
                notes.append(f"{key} (did you mean {near}?)")
    if not notes:
        return ""
    return (f". Not TrainingArguments fields in transformers {TRANSFORMERS_VERSION}, so not used here (and "
            f"HfArgumentParser rejects them unless another dataclass of the script has them): " + ", ".join(notes))


def warmup_steps(args: dict, total_steps: int | None) -> int | None:
    """`TrainingArguments.get_warmup_steps` (None when it needs an unknown step count)."""
    value = args["warmup_steps"]
    if value >= 1:
        return int(value)
    if value == 0:
        return 0
    if total_steps is None:
        return None
    return math.ceil(total_steps * value)


# -- how the Trainer iterates -------------------------------------------------------------------

class EpochPlan(NamedTuple):
    """One epoch on one GPU (rank 0), as the target's data loading and step counting run it."""
    world_size: int
    micro_batch: int
    gradient_accumulation: int
    drop_last: bool
    samples_per_gpu: int  # samples rank 0 draws per epoch (padding and repeats included)
    batches_per_gpu: int  # micro-batches rank 0 runs per epoch
    last_batch: int  # samples in rank 0's last micro-batch (0 when there is none)
    optimizer_steps: float  # per epoch: an int for the HF Trainer / Accelerate; batches / GAS for DeepSpeed
    first_epoch_steps: int  # optimizer steps that complete within the first epoch
    last_accumulation: int  # micro-batches in the epoch's last (partial) accumulation, 0 if none
    sampler: str  # "accelerate" (BatchSamplerShard, even_batches) | "distributed" (DistributedSampler)


def epoch_plan(target: Target, dataset_size: int, micro_batch: int, gradient_accumulation: int, world_size: int,
               drop_last: bool) -> EpochPlan:
    """How many batches and optimizer steps rank 0 runs per epoch (dsconfig.training.epochs).

    hf-trainer / accelerate: Accelerate deals the batches out to the ranks (BatchSamplerShard) and
    the loop steps every GAS batches and at the end of the epoch. deepspeed / lightning (its
    DeepSpeedStrategy): a DistributedSampler per rank, and DeepSpeed's engine counts micro-steps
    across epochs, so an epoch holds batches / GAS steps on average.
    """
    framework = target.name if target.fills_auto else "deepspeed"
    e = epoch(framework, dataset_size, micro_batch, world_size, gradient_accumulation, drop_last)
    return EpochPlan(e.world_size, e.per_device, e.accumulation, e.drop_last, e.samples_per_device,
                     e.batches_per_device, e.last_batch, e.optimizer_steps, e.first_epoch_steps, e.last_accumulation,
                     "accelerate" if target.fills_auto else "distributed")


def trainer_total_steps(args: dict, dataset_size: int | None, world_size: int | None) -> tuple[int | None, str]:
    """`max_steps` as `Trainer.set_initial_training_values` computes it, and how (None if unknown)."""
    if args["max_steps"] > 0:
        return args["max_steps"], f"max_steps {args['max_steps']}"
    if dataset_size is None or world_size is None:
        return None, ""
    plan = epoch_plan(HF_TRAINER, dataset_size, args["per_device_train_batch_size"],
                      args["gradient_accumulation_steps"], world_size, args["dataloader_drop_last"])
    if plan.batches_per_gpu == 0:
        return None, ""  # the Trainer raises before DeepSpeed starts (dataset_table says so)
    if args["max_steps"] == 0:  # the epochs count only when max_steps is negative: the Trainer keeps 0
        return 0, "max_steps 0"
    total = math.ceil(args["num_train_epochs"] * plan.optimizer_steps)
    how = (f"ceil({args['num_train_epochs']:g} epochs × {plan.optimizer_steps} optimizer steps per epoch) for "
           f"{dataset_size} samples at world size {world_size}")
    return total, how


# -- replaying HfTrainerDeepSpeedConfig ---------------------------------------------------------------

_CRASH = object()  # find_config_node walked into a non-object: the real code raises AttributeError
UNKNOWN = type("Unknown", (), {"__repr__": lambda self: "<unknown>"})()


def _node(config: dict, key: str):
    """HfDeepSpeedConfig.find_config_node: (the object holding the last key, the key)."""
    parts = key.split(".")
    last = parts.pop()
    node = config
    for part in parts:
        if not isinstance(node, dict):
            return _CRASH, last
        node = node.get(part)
        if node is None:
            return None, last
    if not isinstance(node, dict):
        return _CRASH, last
    return node, last


def _pointer(key: str) -> str:
    return pointer_from(key.split("."))


class Step(NamedTuple):
    key: str  # the dotted DeepSpeed key, as the Trainer names it
    hf_key: str | None  # the Trainer's label; None for fill_only
    value: object  # what TrainingArguments give (UNKNOWN when it cannot be known statically)
    source: str  # where the value comes from, for people
    world_size: int | None = None  # set when the value depends on the world size
    how: str = ""  # how a computed value came about


class Outcome(NamedTuple):
    step: Step
    status: str  # filled | mismatch | match | unknown | absent | crash | kept
    ds_value: object


def _fill_match(config: dict, step: Step, must_match: bool) -> Outcome:
    node, key = _node(config, step.key)
    if node is _CRASH:
        return Outcome(step, "crash", None)
    if node is None:
        return Outcome(step, "absent", None)
    current = node.get(key)
    if isinstance(current, str) and current == "auto":
        node[key] = step.value
        return Outcome(step, "filled", current)
    if not must_match:
        return Outcome(step, "kept", current)
    if current is None:
        return Outcome(step, "absent", current)
    if step.value is UNKNOWN:
        return Outcome(step, "unknown", current)
    return Outcome(step, "mismatch" if current != step.value else "match", current)


def mismatch_line(outcome: Outcome) -> str:
    """The Trainer's own line: `- ds KEY=VALUE vs hf NAME=VALUE` (Python str() of both values)."""
    return f"- ds {outcome.step.key}={outcome.ds_value} vs hf {outcome.step.hf_key}={outcome.step.value}"


def _process_steps(args: dict, world_size: int | None) -> list[Step]:
    """trainer_config_process, in order."""
    micro, gas = args["per_device_train_batch_size"], args["gradient_accumulation_steps"]
    if world_size is None:
        tbs = Step("train_batch_size", "train_batch_size (calculated)", UNKNOWN,
                   "world_size × per_device_train_batch_size × gradient_accumulation_steps",
                   how=f"world_size × {micro} × {gas}")
    else:
        tbs = Step("train_batch_size", "train_batch_size (calculated)", world_size * micro * gas,
                   "world_size × per_device_train_batch_size × gradient_accumulation_steps", world_size,
                   f"world_size {world_size} × per_device_train_batch_size {micro} × "
                   f"gradient_accumulation_steps {gas}")
    lr = args["learning_rate"]
    return [
        Step("train_micro_batch_size_per_gpu", "per_device_train_batch_size", micro, "per_device_train_batch_size"),
        Step("gradient_accumulation_steps", "gradient_accumulation_steps", gas, "gradient_accumulation_steps"),
        tbs,
        Step("gradient_clipping", "max_grad_norm", args["max_grad_norm"], "max_grad_norm"),
        Step("optimizer.params.lr", "learning_rate", lr, "learning_rate"),
        Step("optimizer.params.betas", "adam_beta1+adam_beta2", [args["adam_beta1"], args["adam_beta2"]],
             "[adam_beta1, adam_beta2]"),
        Step("optimizer.params.eps", "adam_epsilon", args["adam_epsilon"], "adam_epsilon"),
        Step("optimizer.params.weight_decay", "weight_decay", args["weight_decay"], "weight_decay"),
        Step("scheduler.params.warmup_min_lr", None, 0, "a constant, not a TrainingArguments value"),
        Step("scheduler.params.warmup_max_lr", "learning_rate", lr, "learning_rate"),
        Step("fp16.enabled", "fp16|fp16_full_eval", args["fp16"] or args["fp16_full_eval"], "fp16 or fp16_full_eval"),
        Step("bf16.enabled", "bf16|bf16_full_eval", args["bf16"] or args["bf16_full_eval"], "bf16 or bf16_full_eval"),
    ]


def _must_match(step: Step, auto_find: bool) -> bool:
    if step.hf_key is None:
        return False
    return not (auto_find and step.key in ("train_micro_batch_size_per_gpu", "train_batch_size"))


def _finalize_steps(args: dict, total: int | None, how: str, world_size: int | None) -> list[Step]:
    """trainer_config_finalize's scheduler fills (the hidden-size ones need the model: left out)."""
    total_value = UNKNOWN if total is None else total
    warm = warmup_steps(args, total)
    warm_value = UNKNOWN if warm is None else max(1, warm)
    dependent = world_size if (total is not None and args["max_steps"] < 0) else None
    warm_dependent = dependent if 0 < args["warmup_steps"] < 1 else None
    ratio = args["warmup_steps"]
    if ratio >= 1:
        warm_how = f"max(1, int(warmup_steps {ratio:g}))"
    elif ratio == 0:
        warm_how = "max(1, 0) with warmup_steps 0"
    else:
        warm_how = f"max(1, ceil({total} steps × warmup_steps {ratio:g}))" if total is not None else ""
    return [
        Step("scheduler.params.total_num_steps", "num_training_steps (calculated)", total_value,
             "the number of optimizer steps (max_steps, else epochs × steps per epoch)", dependent, how),
        Step("scheduler.params.warmup_num_steps", "warmup_steps", warm_value,
             "max(1, get_warmup_steps(total steps))", warm_dependent, warm_how),
    ]


def _set_mixed_precision(config: dict, mixed: str) -> str | None:
    """DeepSpeedPlugin.set_mixed_precision (run by AcceleratorState inside Trainer(...)); its error, if any."""
    if mixed == "fp16" and "fp16" not in config:
        config["fp16"] = {"enabled": True, "auto_cast": True}
    elif mixed == "bf16" and "bf16" not in config:
        config["bf16"] = {"enabled": True}
    error = None
    if mixed != "no":
        other = "bf16" if mixed == "fp16" else "fp16"
        block = config.get(other, {})
        if isinstance(block, dict) and str(block.get("enabled", "False")).lower() == "true":
            error = (f"`--mixed_precision` arg cannot be set to `{mixed}` when `{other}` is set in the DeepSpeed "
                     "config file.")
    for dtype in ("fp16", "bf16"):
        if dtype not in config:
            config[dtype] = {"enabled": False}
    for dtype in ("fp16", "bf16"):
        node, key = _node(config, f"{dtype}.enabled")
        if isinstance(node, dict) and isinstance(node.get(key), str) and node[key] == "auto":
            node[key] = mixed == dtype
    return error


class Replay(NamedTuple):
    outcomes: list[Outcome]  # the outcomes whose mismatches the final ValueError lists
    fills: list[Outcome]  # every "auto" the Trainer replaced (first pass and finalize)
    mismatches: list[Outcome]
    early_error: tuple[str, str] | None  # (pointer, Accelerate's message) when Trainer(...) already fails
    config: dict  # the config as DeepSpeed receives it (UNKNOWN where the value is not known)
    inserted_gas: bool  # Accelerate's DeepSpeedPlugin added gradient_accumulation_steps: 1


def replay(config: dict, training_args: dict | None, world_size: int | None,
           dataset_size: int | None = None, launched_mixed_precision: str = "no") -> Replay:
    """Run TrainingArguments(deepspeed=config) → Trainer(...) → train() up to deepspeed_init, on paper.

    `launched_mixed_precision` is ACCELERATE_MIXED_PRECISION (set by `accelerate launch`), which
    TrainingArguments use unless fp16 or bf16 is on."""
    args = effective_args(training_args)
    auto_find = bool(args["auto_find_batch_size"])
    work = copy.deepcopy(config)  # HfDeepSpeedConfig deep-copies a dict too

    first = [_fill_match(work, step, _must_match(step, False)) for step in _process_steps(args, world_size)]
    fills = [o for o in first if o.status == "filled"]
    if args["save_on_each_node"] and isinstance(work.get("checkpoint", {}), dict):
        work.setdefault("checkpoint", {})["use_node_local_storage"] = True

    # DeepSpeedPlugin(hf_ds_config=...) at the end of TrainingArguments.__post_init__
    inserted_gas = "gradient_accumulation_steps" not in work
    if inserted_gas:
        work["gradient_accumulation_steps"] = 1
    # Trainer(...) → Accelerator → AcceleratorState → set_mixed_precision(args.mixed_precision)
    mixed = "fp16" if args["fp16"] else "bf16" if args["bf16"] else launched_mixed_precision
    early = _set_mixed_precision(work, mixed)
    early_error = None
    if early:
        early_error = (_pointer(("bf16" if mixed == "fp16" else "fp16") + ".enabled"), early)

    if auto_find:  # train() → _update_auto_batch_size → propagate_args_to_deepspeed(auto_find_batch_size=True)
        outcomes = [_fill_match(work, step, _must_match(step, True)) for step in _process_steps(args, world_size)]
    else:
        outcomes = first
    total, how = trainer_total_steps(args, dataset_size, world_size)
    final = [_fill_match(work, step, True) for step in _finalize_steps(args, total, how, world_size)]
    fills.extend(o for o in final if o.status == "filled")
    outcomes = outcomes + final
    mismatches = [o for o in outcomes if o.status == "mismatch"]
    return Replay(outcomes, fills, mismatches, early_error, work, inserted_gas)


# -- findings --------------------------------------------------------------------------------------

def _world_list(world_size) -> list[int | None]:
    if world_size is None:
        return [None]
    if isinstance(world_size, int):
        return [world_size]
    sizes = list(dict.fromkeys(int(w) for w in world_size))
    return sizes or [None]


def _looks_equal(ds_value, hf_value) -> bool:
    """A string that spells the wanted number or boolean ("8" for 8, "true" for True)."""
    if not isinstance(ds_value, str):
        return False
    text = ds_value.strip()
    if isinstance(hf_value, bool):
        return text.lower() == str(hf_value).lower()
    if isinstance(hf_value, (int, float)):
        try:
            return float(text) == hf_value
        except ValueError:
            return False
    return False


def _mismatch_message(outcome: Outcome, given: frozenset) -> str:
    step, ds_value = outcome.step, outcome.ds_value
    line = mismatch_line(outcome)
    wanted = to_json(step.value)
    if step.key == "train_batch_size":
        why = f"the Trainer computes {step.how} = {step.value}"
    elif step.key == "scheduler.params.total_num_steps":
        why = f"the Trainer computes {step.value} optimizer steps ({step.how})"
    elif step.key == "scheduler.params.warmup_num_steps":
        why = f"the Trainer computes {step.how} = {step.value}"
    else:
        why = f"TrainingArguments give {step.source} = {wanted}"
        names = [name for name in re.findall(r"[a-z0-9_]+", step.source) if name in TRAINING_ARGS_DEFAULTS]
        if names and not any(name in given for name in names):
            why += f" (the transformers {TRANSFORMERS_VERSION} default)"
    hint = ""
    if _looks_equal(ds_value, step.value):
        hint = (f" {to_json(ds_value)} is a JSON string and the Trainer compares with !=, so it never equals "
                f"{wanted}; write it without quotes")
    message = (f"{line}: {why}. The HF Trainer collects every such mismatch and the whole run fails at the start "
               f"of train() with \"{MISMATCH_HEAD} ...\".{hint} Set {step.key} to \"auto\" (the Trainer then "
               f"fills it) or to {wanted}")
    return message


def _fix_for(step: Step) -> str:
    if step.key in ("train_batch_size", "scheduler.params.total_num_steps", "scheduler.params.warmup_num_steps"):
        return '"auto"'
    return to_json(step.value)


def trainer_findings(config: dict, training_args: dict | None, world_size=None, *,
                     dataset_size: int | None = None, model=None) -> list[Finding]:
    """DS704 (what the Trainer fills) and, with training arguments, DS703 (what it rejects).

    `world_size`: None, one int, or several ints. `dataset_size` (samples in the training
    set) lets the scheduler step counts be checked when max_steps is not set. Only meaningful
    for the hf-trainer target.
    """
    if not isinstance(config, dict):
        return []
    if training_args is None:
        return _describe_fills(config, model)
    errors = training_args_errors(training_args)
    if errors:
        raise ValueError("training arguments: " + "; ".join(errors))
    args = effective_args(training_args)
    given = frozenset(training_args)
    findings: list[Finding] = []
    seen: set[tuple] = set()
    replays = {w: replay(config, training_args, w, dataset_size) for w in _world_list(world_size)}

    for w, run in replays.items():
        early_pointer = run.early_error[0] if run.early_error else None
        for outcome in run.mismatches:
            step = outcome.step
            pointer = _pointer(step.key)
            message = _mismatch_message(outcome, given)
            if step.world_size is None and step.key == "gradient_accumulation_steps" and run.inserted_gas \
                    and "gradient_accumulation_steps" not in config:
                message = (f"{mismatch_line(outcome)}: the file has no gradient_accumulation_steps, so Accelerate's "
                           "DeepSpeedPlugin inserts 1, and with auto_find_batch_size the Trainer compares that 1 "
                           f"with gradient_accumulation_steps {step.value} when train() starts. The whole run fails "
                           f"with \"{MISMATCH_HEAD} ...\". Add \"gradient_accumulation_steps\": \"auto\"")
                pointer = ""
            if pointer == early_pointer:
                message += f". Even earlier, Trainer(...) fails with \"{run.early_error[1]}\""
            key = (pointer, message, step.world_size)
            if key in seen:
                continue
            seen.add(key)
            findings.append(Finding(TRAINER_MISMATCH, message, pointer, fails_in=INITIALIZE, world_size=step.world_size,
                                    fix=None if pointer == "" else _fix_for(step)))
        if run.early_error and not any(f.pointer == early_pointer for f in findings if f.rule is TRAINER_MISMATCH):
            mixed = "fp16" if args["fp16"] else "bf16"
            message = (f"TrainingArguments set {mixed}=true, but {early_pointer[1:].replace('/', '.')} is enabled: "
                       f"Trainer(...) fails before training with Accelerate's \"{run.early_error[1]}\". "
                       "Set it to \"auto\"")
            if ("early", message) not in seen:
                seen.add(("early", message))
                findings.append(Finding(TRAINER_MISMATCH, message, early_pointer, fails_in=INITIALIZE, fix='"auto"'))
        if w is not None:
            findings.extend(_batch_after_fill(config, run, args, w))

    if args["auto_find_batch_size"]:
        stage = config.get("zero_optimization", {}).get("stage") if isinstance(config.get("zero_optimization"),
                                                                                 dict) else None
        if stage == 3 and not isinstance(stage, bool):
            findings.append(Finding(
                TRAINER_MISMATCH,
                "auto_find_batch_size is set in TrainingArguments and zero_optimization.stage is 3: Trainer(...) "
                "raises \"`auto_find_batch_size` isn't supported yet with DeepSpeed Zero-3. Please consider using "
                "Zero-2, Zero-1, or FSDP\"",
                "/zero_optimization/stage",
                fails_in=INITIALIZE))

    if None in replays:
        findings.extend(_train_batch_without_world(config, args))
    findings.append(_describe_with_args(config, training_args, args, replays, model))
    return [f for f in findings if f is not None]


def _train_batch_without_world(config: dict, args: dict) -> list[Finding]:
    """No world size given: a concrete train_batch_size that no world size can match."""
    value = config.get("train_batch_size")
    if value is None or (isinstance(value, str) and value == "auto"):
        return []
    if args["auto_find_batch_size"]:
        return []
    unit = args["per_device_train_batch_size"] * args["gradient_accumulation_steps"]
    if _matching_world(value, unit) is not None:
        return []
    message = (f"train_batch_size is {to_json(value)}, but the HF Trainer computes world_size × "
               f"{args['per_device_train_batch_size']} × {args['gradient_accumulation_steps']} = "
               f"{unit} × world_size, "
               f"which is never {to_json(value)} at any world size: the Trainer reports \"- ds train_batch_size="
               f"{value} vs hf train_batch_size (calculated)=...\" and the whole run fails at the start of train() "
               f"with \"{MISMATCH_HEAD} ...\". Set it to \"auto\"")
    return [Finding(TRAINER_MISMATCH, message, "/train_batch_size", fails_in=INITIALIZE, fix='"auto"')]


def _matching_world(value, unit: int) -> int | None:
    """The world size w ≥ 1 with w × unit == value, if any (with Python's == on the JSON value)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not value.is_integer():
        return None
    whole = int(value)
    if whole < unit or whole % unit:
        return None
    return whole // unit


def _batch_after_fill(config: dict, run: Replay, args: dict, world: int) -> list[Finding]:
    """DeepSpeed's batch check on the values the Trainer and Accelerate leave in the config.

    Only where the plain check cannot see it: an "auto" batch value was filled, or Accelerate
    inserted gradient_accumulation_steps: 1. A batch-key mismatch fails earlier (DS703).
    """
    batch_keys = set(batch.BATCH_KEYS)
    if any(o.step.key in batch_keys for o in run.mismatches):
        return []
    filled = any(isinstance(config.get(k), str) and config.get(k) == "auto" for k in batch.BATCH_KEYS)
    if not (filled or run.inserted_gas):
        return []
    values = [run.config.get(k) for k in batch.BATCH_KEYS]
    if any(v is UNKNOWN for v in values):
        return []
    try:
        dp = batch.data_parallel_size(run.config, world)
    except (TypeError, ZeroDivisionError):
        return []
    outcome = batch.resolve(*values, dp)
    if outcome.ok or outcome.kind != "assert":
        return []
    given = ", ".join(f"{k}={to_json(v)}" for k, v in zip(batch.BATCH_KEYS, values) if v is not None)
    if run.inserted_gas and args["gradient_accumulation_steps"] != 1:
        why = (f"the file has no gradient_accumulation_steps, so Accelerate's DeepSpeedPlugin inserts 1 while the "
               f"Trainer accumulates {args['gradient_accumulation_steps']} batches and fills train_batch_size with "
               "them. Add \"gradient_accumulation_steps\": \"auto\"")
    elif args["auto_find_batch_size"]:
        why = ("with auto_find_batch_size the Trainer does not compare train_batch_size and "
               "train_micro_batch_size_per_gpu with TrainingArguments, so nothing stops them disagreeing; set both "
               "to \"auto\"")
    elif "sequence_parallel_size" in run.config:
        why = ("the Trainer computes train_batch_size from the full world size, DeepSpeed divides the world size "
               "by sequence_parallel_size")
    else:
        why = "the values the Trainer fills do not satisfy DeepSpeed's batch arithmetic"
    message = (f"at world size {world} DeepSpeed receives {given} from the HF Trainer and fails when train() "
               f"starts the engine: {outcome.error}. {why}")
    return [Finding(BATCH_MISMATCH, message, "", fails_in=PARSE, world_size=world)]


# -- DS704: what gets filled ----------------------------------------------------------------------

_FILL_SOURCES = {
    "/train_batch_size": "world_size × per_device_train_batch_size × gradient_accumulation_steps",
    "/train_micro_batch_size_per_gpu": "per_device_train_batch_size",
    "/gradient_accumulation_steps": "gradient_accumulation_steps",
    "/gradient_clipping": "max_grad_norm",
    "/optimizer/params/lr": "learning_rate",
    "/optimizer/params/betas": "[adam_beta1, adam_beta2]",
    "/optimizer/params/eps": "adam_epsilon",
    "/optimizer/params/weight_decay": "weight_decay",
    "/scheduler/params/warmup_min_lr": "0",
    "/scheduler/params/warmup_max_lr": "learning_rate",
    "/scheduler/params/total_num_steps": "the number of optimizer steps (max_steps, else epochs × steps per epoch)",
    "/scheduler/params/warmup_num_steps": "max(1, warmup_steps, or ceil(total steps × warmup_steps) when < 1)",
    "/fp16/enabled": "fp16 or fp16_full_eval",
    "/bf16/enabled": "bf16 or bf16_full_eval",
    "/zero_optimization/reduce_bucket_size": "hidden_size² of the model config",
    "/zero_optimization/stage3_prefetch_bucket_size": "int(0.9 × hidden_size²) of the model config",
    "/zero_optimization/stage3_param_persistence_threshold": "10 × hidden_size of the model config",
}
_PLUGIN_DEFAULTS = {  # Accelerate's DeepSpeedPlugin, with no ACCELERATE_* environment variables
    "/zero_optimization/stage": 2,
    "/zero_optimization/offload_optimizer/device": "none",
    "/zero_optimization/offload_param/device": "none",
    "/zero_optimization/offload_optimizer/nvme_path": "none",
    "/zero_optimization/offload_param/nvme_path": "none",
    "/zero_optimization/stage3_gather_16bit_weights_on_model_save": False,
}


def trainer_fills(pointer: str) -> str | None:
    """How the HF Trainer fills an "auto" at `pointer` (the schema's x-dsconfig-fill), or None."""
    node = schema.property_at(pointer)
    return (node.get("x-dsconfig-fill") or {}).get(HF_TRAINER.name) if node is not None else None


def _filled_pointers(config: dict) -> list[str]:
    return [p for p in auto_pointers(config) if trainer_fills(p) is not None]


def _label(pointer: str) -> str:
    return pointer[1:].replace("/", ".")


def _source_text(pointer: str) -> str:
    """Where the Trainer takes the value for an "auto" at `pointer` from, in words."""
    if pointer in _PLUGIN_DEFAULTS:
        return f"Accelerate's DeepSpeedPlugin ({to_json(_PLUGIN_DEFAULTS[pointer])} unless ACCELERATE_* variables say)"
    source = _FILL_SOURCES.get(pointer)
    if source is None:
        return trainer_fills(pointer) or "?"
    if pointer.startswith(("/zero_optimization/", "/scheduler/params/total", "/scheduler/params/warmup_num",
                           "/scheduler/params/warmup_min", "/train_batch_size")):
        return source
    return "TrainingArguments " + source


def _hidden_size_fills(config: dict, model) -> dict[str, str]:
    """With --model: the numbers the Trainer writes over the hidden-size "auto" values, by pointer."""
    if model is None:
        return {}
    # with --model only: they read dsconfig.accelerate's tables
    from .hidden_fills import HIDDEN_SIZE_KEYS, NoHiddenSize, bucket_fills
    from .model_facts import facts_of
    facts = facts_of(model)
    try:
        fills = bucket_fills(config, facts.hidden_size)
    except NoHiddenSize:
        return {pointer_from(key.split(".")): f"nothing: {facts.name} has no hidden size and train() fails (DS953)"
                for key in HIDDEN_SIZE_KEYS}
    shown = {}
    for key, value in fills:
        pointer = pointer_from(key.split("."))
        shown[pointer] = f"{value} ({_FILL_SOURCES[pointer]}: {facts.name} has hidden_size {facts.hidden_size})"
    return shown


def _describe_fills(config: dict, model=None) -> list[Finding]:
    pointers = _filled_pointers(config)
    if not pointers:
        return []
    known = _hidden_size_fills(config, model)
    parts = [f"{_label(pointer)} ← {known.get(pointer) or _source_text(pointer)}" for pointer in pointers]
    message = (f"the HF Trainer fills {len(pointers)} \"auto\" value{'s' if len(pointers) != 1 else ''} before "
               "DeepSpeed sees the config: " + "; ".join(parts)
               + ". Give the TrainingArguments (--training-args) to check the concrete values against them")
    return [Finding(AUTO_FILLED, message, "")]


def _describe_with_args(config: dict, training_args: dict, args: dict, replays: dict, model=None) -> Finding | None:
    pointers = _filled_pointers(config)
    known = _hidden_size_fills(config, model)
    parts = []
    for pointer in pointers:
        key = _label(pointer)
        values = []
        for w, run in replays.items():
            match = next((o for o in run.fills if o.step.key == key), None)
            if match is not None:
                values.append((w, match.step))
        if values:
            shown = _shown_values(key, values, args)
        elif pointer in _PLUGIN_DEFAULTS:
            shown = f"{to_json(_PLUGIN_DEFAULTS[pointer])} (Accelerate's DeepSpeedPlugin default)"
        elif pointer in known:
            shown = known[pointer]
        elif pointer.startswith("/zero_optimization/") and pointer in _FILL_SOURCES:
            shown = f"{_FILL_SOURCES[pointer]} (known only once the model is loaded)"
        else:
            shown = _source_text(pointer)
        parts.append(f"{key} ← {shown}")
    notes = []
    if args["save_on_each_node"]:
        notes.append("checkpoint.use_node_local_storage is set to true (save_on_each_node)")
    if "gradient_accumulation_steps" not in config:
        notes.append("gradient_accumulation_steps is missing, so Accelerate's DeepSpeedPlugin inserts 1")
    tbs = config.get("train_batch_size")
    if None in replays and tbs is not None and not (isinstance(tbs, str) and tbs == "auto") \
            and not args["auto_find_batch_size"]:
        unit = args["per_device_train_batch_size"] * args["gradient_accumulation_steps"]
        world = _matching_world(tbs, unit)
        if world is not None:
            notes.append(f"train_batch_size {to_json(tbs)} matches world_size × "
                         f"{args['per_device_train_batch_size']} × {args['gradient_accumulation_steps']} only at "
                         f"world size {world}; the Trainer rejects it at any other GPU count (pass --world-size to "
                         "check yours)")
    if not parts and not notes:
        return None
    given = sorted(k for k in training_args if k in TRAINING_ARGS_DEFAULTS)
    message = "with these TrainingArguments the HF Trainer "
    if parts:
        message += "fills: " + "; ".join(parts)
    if notes:
        message += (". " if parts else "") + "; ".join(notes)
    message += (f". TrainingArguments not in the file take the transformers {TRANSFORMERS_VERSION} defaults"
                + (f" (given: {', '.join(given)})" if given else ""))
    message += _unknown_keys_note(training_args)
    return Finding(AUTO_FILLED, message, "")


def _shown_values(key: str, values: list[tuple], args: dict) -> str:
    step = values[0][1]
    if key == "train_batch_size":
        if step.value is UNKNOWN:
            return f"{step.how} (pass --world-size for the number)"
        return ", ".join(f"{s.value} at world size {w}" for w, s in values) + \
            f" ({args['per_device_train_batch_size']} × {args['gradient_accumulation_steps']} × world_size)"
    if key in ("scheduler.params.total_num_steps", "scheduler.params.warmup_num_steps"):
        known = [(w, s) for w, s in values if s.value is not UNKNOWN]
        if not known:
            need = "max_steps, or --dataset-size with --world-size"
            return f"{_FILL_SOURCES['/' + key.replace('.', '/')]}: unknown here (give {need})"
        if all(s.world_size is None for _, s in known):
            step = known[0][1]
            return f"{to_json(step.value)} ({step.how})" if step.how else to_json(step.value)
        return ", ".join(f"{s.value} at world size {w}" for w, s in known)
    return f"{to_json(step.value)} ({step.source})"


# -- DS705: steps per epoch -------------------------------------------------------------------------

_HOW = {
    HF_TRAINER: "HF Trainer: Accelerate deals the batches out to the GPUs in turn (repeating samples to even out "
                "the last round) and the Trainer steps every gradient_accumulation_steps batches and at epoch end",
    ACCELERATE: "Accelerate: prepare() deals the batches out to the GPUs in turn (repeating samples to even out "
                "the last round); accelerator.accumulate() steps every gradient_accumulation_steps batches and at "
                "epoch end",
    DEEPSPEED: "DeepSpeed: a DistributedSampler gives each GPU ceil(N / world) samples and the engine steps at "
               "every gradient_accumulation_steps-th micro-batch, counting across epochs",
    LIGHTNING: "Lightning: a DistributedSampler gives each GPU ceil(N / world) samples and DeepSpeed's engine steps "
               "at every gradient_accumulation_steps-th micro-batch, counting across epochs",
}


def _loop_values(config: dict, target: Target, args: dict | None, world: int):
    """(micro batch, GAS, drop_last, note) the target's loop uses at `world`, or a reason they are unknown."""
    given = args is not None
    eff = effective_args(args)
    if target is HF_TRAINER:
        if given:
            return eff["per_device_train_batch_size"], eff["gradient_accumulation_steps"], \
                eff["dataloader_drop_last"], None
        if batch.GAS not in config:
            return None, None, False, ("gradient_accumulation_steps is not in the file: the Trainer accumulates "
                                       "TrainingArguments.gradient_accumulation_steps (give --training-args)")
        micro, gas = config.get(batch.MBS), config.get(batch.GAS)
        drop_last = False
    elif target is ACCELERATE:
        micro, gas = config.get(batch.MBS), config.get(batch.GAS, 1)
        if isinstance(micro, str) and micro == "auto":
            micro = eff["per_device_train_batch_size"] if given else micro
        if isinstance(gas, str) and gas == "auto":
            gas = eff["gradient_accumulation_steps"] if given else gas
        drop_last = eff["dataloader_drop_last"]
    elif target is LIGHTNING:
        micro = config.get(batch.MBS)
        if micro is None and given:
            micro = eff["per_device_train_batch_size"]
        gas = eff["gradient_accumulation_steps"] if given else 1
        drop_last = eff["dataloader_drop_last"]
    else:
        micro, gas = config.get(batch.MBS), config.get(batch.GAS)
        drop_last = bool(config.get("dataloader_drop_last", False))
    tbs = config.get(batch.TBS)
    if target.fills_auto and isinstance(tbs, str) and tbs == "auto":
        tbs = None  # filled with micro × GAS × world: DeepSpeed derives the same
    values = [tbs, micro, gas]
    for i, v in enumerate(values):
        if isinstance(v, str) and v == "auto":
            name = batch.BATCH_KEYS[i]
            return None, None, drop_last, f"{name} is \"auto\" (give --training-args for the value the target fills)"
    if target.fills_auto and batch.GAS not in config:
        values[2] = 1  # Accelerate's DeepSpeedPlugin inserts it
    dp = batch.data_parallel_size(config, world) if target is DEEPSPEED else world
    outcome = batch.resolve(*values, dp)
    if not outcome.ok:
        return None, None, drop_last, f"DeepSpeed rejects the batch sizes at this world size ({outcome.error})"
    return outcome.values[1], outcome.values[2], drop_last, None


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}es" if noun.endswith("ch") else f"{count} {noun}s"


def _fmt_steps(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.2f}".rstrip("0")


def dataset_table(config: dict, dataset_size: int, world_sizes, target: Target,
                  training_args: dict | None = None) -> list[Finding]:
    """DS705 per world size: micro-batches and optimizer steps per epoch for `dataset_size` samples.

    `world_sizes` None or empty means 1, 2, 4, 8. Each message also lists the steps per epoch at
    every world size, so the expected 1/world_size scaling can be compared with a real run.
    """
    if not isinstance(config, dict) or not isinstance(dataset_size, int) or dataset_size < 1:
        return []
    if training_args is not None and training_args_errors(training_args):
        raise ValueError("training arguments: " + "; ".join(training_args_errors(training_args)))
    sizes = list(dict.fromkeys(world_sizes or ())) or [1, 2, 4, 8]
    plans: dict[int, EpochPlan | str] = {}
    for w in sizes:
        micro, gas, drop_last, why = _loop_values(config, target, training_args, w)
        if why is not None:
            plans[w] = why
            continue
        dp = w
        if target is DEEPSPEED and "sequence_parallel_size" in config:
            dp = batch.data_parallel_size(config, w)
            if isinstance(dp, float):
                plans[w] = f"sequence_parallel_size does not divide world size {w}"
                continue
        if not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in (micro, gas)):
            plans[w] = f"the batch values ({to_json(micro)}, {to_json(gas)}) are not positive integers"
            continue
        plans[w] = epoch_plan(target, dataset_size, micro, gas, dp, drop_last)
    row = ", ".join(f"{w} → {_fmt_steps(p.optimizer_steps if p.batches_per_gpu else 0)}"
                    if isinstance(p, EpochPlan) else f"{w} → ?" for w, p in plans.items())
    eff = effective_args(training_args)
    findings = []
    for w, plan in plans.items():
        if isinstance(plan, str):
            message = (f"{dataset_size} samples at world size {w}: steps per epoch unknown: {plan}. "
                       f"Optimizer steps per epoch by world size: {row}")
            findings.append(Finding(STEPS_PER_EPOCH, message, "", world_size=w))
            continue
        findings.append(Finding(STEPS_PER_EPOCH, _table_message(plan, dataset_size, target, row, eff, training_args),
                                "", world_size=w))
    return findings


def _table_message(plan: EpochPlan, n: int, target: Target, row: str, args: dict, given: dict | None) -> str:
    w, m, g = plan.world_size, plan.micro_batch, plan.gradient_accumulation
    if plan.batches_per_gpu == 0:
        text = (f"{n} samples at world size {w}: with drop_last each GPU gets no complete micro-batch of {m}, so an "
                "epoch runs 0 steps")
        if target is HF_TRAINER and args["max_steps"] <= 0:
            text += (" (the HF Trainer raises \"args.max_steps must be set to a positive value if dataloader does not "
                     "have a length\")")
        return text + f". Optimizer steps per epoch by world size: {row}"
    global_batch = m * g * w
    text = (f"{n} samples at world size {w}: {_plural(plan.batches_per_gpu, 'micro-batch')} of {m} per GPU per "
            f"epoch ({plan.samples_per_gpu} samples per GPU")
    if plan.last_batch != m:
        text += f", the last batch holds {plan.last_batch}"
    if plan.samples_per_gpu * w > n and not plan.drop_last:
        text += f"; {plan.samples_per_gpu * w - n} repeated to even out the GPUs"
    steps = _fmt_steps(plan.optimizer_steps)
    text += f"), {steps} optimizer step{'' if steps == '1' else 's'} per epoch with gradient_accumulation_steps {g}"
    if plan.sampler == "accelerate" and plan.last_accumulation:
        text += f" (the last step accumulates only {_plural(plan.last_accumulation, 'batch')})"
    if plan.sampler == "distributed" and plan.last_accumulation:
        text += (f" ({plan.first_epoch_steps} complete in the first epoch; DeepSpeed carries the other "
                 f"{_plural(plan.last_accumulation, 'micro-batch')} into the next epoch)")
    text += f", {global_batch} samples per optimizer step ({m} × {g} × {w})"
    if target is HF_TRAINER and given is not None:
        total, _ = trainer_total_steps(args, n, w)
        if total is not None:
            how = "max_steps" if args["max_steps"] >= 0 else f"{args['num_train_epochs']:g} epochs"
            text += f"; {total} optimizer steps in total ({how})"
    text += (f". {_HOW[target]}. Optimizer steps per epoch by world size: {row}; they should fall as "
             "1/world_size; steps that fall with the square of the GPU count mean the training code splits the data "
             "twice (its own DistributedSampler or per-rank slicing under a loader that is sharded again)")
    return text
