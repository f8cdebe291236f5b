"""The loosely read parts of `DeepSpeedConfig(...)`: every way they make DeepSpeed 0.19.8 raise.

Outside its pydantic models, DeepSpeedConfig reads the config with `dict.get`, `.keys()`,
`.items()`, `.lower()`, `|`, `%`, `int()` and comparisons, and an unexpected type surfaces as
whatever those operations raise. Each getter below is a transliteration of DeepSpeed's own
code running the same Python operations on the same plain values (dicts, lists, str, numbers,
bool, None), so the same inputs succeed or fail the same way and the exception text is
DeepSpeed's own. Torch objects (dtypes) are replaced by plain names.

DeepSpeed stops at the first exception; here every getter runs on its own, and a broken
section is treated as its default for the checks after it, so all problems show at once.
Within one section, a failure stops only the reads that depend on it.

Not here: file loading, removed keys, world size and batch arithmetic (batch.py), and the
pydantic sections from DeepSpeed's fetch (`Model(**value)`) to the built model, which models.py
emulates (their validated values arrive in `resolved`).
"""

from __future__ import annotations

import functools
from typing import Callable

from ..findings import Finding
from ..phases import INITIALIZE, PARSE
from ..pointers import dotted, pointer_join
from ..rules.keys import INVALID_VALUE, PRESENCE_ENABLES
from ..rules.optimizer import OPTIMIZER_NAME, OPTIMIZER_WITHOUT_TYPE
from ..rules.precision import (
    COMMUNICATION_DTYPE,
    DTYPE_MISMATCH,
    FP16_AND_BF16,
    GRADIENT_ALLREDUCE_OP,
    MASTER_WEIGHTS_STAGE,
    QUOTED_BOOL,
    TORCH_AUTOCAST,
    WALL_CLOCK_TYPE,
)
from ..rules.sections import AUTOTUNING, CHECKPOINT_VALUES, DATA_EFFICIENCY, SECTION_TYPE, VOCABULARY_SIZE
from ..values import closest, describe, to_json
from . import schema


class DeepSpeedConfigError(Exception):
    """Stand-in for deepspeed.runtime.config.DeepSpeedConfigError (same name in messages)."""


class _Stop(Exception):
    """A crash was recorded; DeepSpeed would read nothing further that depends on it."""


_FAILED = object()

# ---------------------------------------------------------------------------------------------
# DeepSpeed constants (runtime/constants.py and friends, 0.19.8)
# ---------------------------------------------------------------------------------------------
# get_communication_data_type's spellings, in the order its message lists them; each release accepts some
# (0.14.0 spelled bf16 "bfp16"): the generated facts say which.
COMM_DTYPE_NAMES = ("fp16", "bf16", "bfp16", "fp32")
COMM_DTYPE_ERROR = "Invalid communication_data_type. Supported data types: {}. Got: {}"
ALLREDUCE_OPS = ("mean", "sum")
DEEPSPEED_OPTIMIZERS = ["adagrad", "adam", "adamw", "lamb", "muadam", "muadamw", "musgd", "lion", "muon"]
# DtypeEnum's values, torch dtypes left out: JSON cannot produce them.
DTYPE_ENUM_VALUES = frozenset({
    "torch.float16", "fp16", "float16", "half",
    "torch.float32", "fp32", "float32", "float",
    "torch.int8", "int8",
    "torch.bfloat16", "bf16", "bfloat16",
})
TAG_VALIDATION_MODES = ["WARN", "IGNORE", "FAIL"]
WRITER_VALID_VALUES = {"type": ["MOCK", "PYTHON", "FAST"], "data_parallel": ["REPLICA", "SOCKET", "MACHINE"]}
TENSOR_CORE_ALIGN_SIZE = 8
ZERO_MAX_STAGE = 3
# How `"{}".format(ZeroStageEnum.max_stage)` prints: max_stage is an alias of `weights`.
ZERO_MAX_STAGE_TEXT = "ZeroStageEnum.weights"

# Booleans DeepSpeed tests for truthiness (`if x`, `not x`, `bool(x)`, `x is False`), where the
# string "false" therefore means true. Keyed by the section holding them ("" = top level).
TRUTHY_KEYS = {
    "": ("dump_state", "disable_python_gc", "disable_allgather", "prescale_gradients",
         "zero_allow_untested_optimizer", "zero_force_ds_cpu_optimizer", "memory_breakdown",
         "dataloader_drop_last", "use_data_before_expert_parallelism", "managed_gradient_accumulation"),
    "activation_checkpointing": ("partition_activations", "contiguous_memory_optimization", "cpu_checkpointing",
                                 "profile", "synchronize_checkpoint_boundary"),
    "torch_autocast": ("enabled",),
    "optimizer": ("legacy_fusion",),
    "flops_profiler": ("detailed",),
    "autotuning": ("enabled", "fast", "overwrite"),
    "autotuning/model_info": ("profile",),
    "pipeline": ("use_reentrant",),  # tested with `is False`: "false" keeps reentrant checkpointing on
    "data_efficiency": ("enabled",),
    "data_efficiency/data_sampling": ("enabled", "pin_memory"),
    "data_efficiency/data_sampling/curriculum_learning": ("enabled",),
    "data_efficiency/data_sampling/dynamic_batching": ("enabled", "verbose"),
    "data_efficiency/data_routing": ("enabled",),
    "data_efficiency/data_routing/random_ltd": ("enabled",),
    "checkpoint": ("load_universal", "use_node_local_storage", "checkpoint_serialization"),
    "checkpoint/writer": ("io_buffer_double", "show_statistics", "decoupled"),
    "aio": ("use_gds",),
    "expert_parallel": ("enabled", "use_grouped_mm", "disable_triton_grouped_mm"),
}


# ---------------------------------------------------------------------------------------------
# Reporting helpers
# ---------------------------------------------------------------------------------------------
class _Report:
    def __init__(self):
        self.findings: list[Finding] = []

    def crash(self, rule, pointer, error: BaseException, why, fix=None, on_key=False):
        """DeepSpeedConfig raises `error` here."""
        text = f"{type(error).__name__}: {error}"
        self.findings.append(Finding(rule, f"{why}; DeepSpeed raises {text}", pointer, fails_in=PARSE,
                                     fix=fix, on_key=on_key))

    def note(self, rule, pointer, message, fix=None, fails_in=None):
        """DeepSpeedConfig parses this, but not as the author meant (or logs a warning)."""
        self.findings.append(Finding(rule, message, pointer, fails_in=fails_in, fix=fix))


def _run(report, rule, pointer, why, operation: Callable, fix=None, stop=True):
    """Evaluate DeepSpeed's own expression; on an exception record it and stop the section
    (`stop=False`: return _FAILED instead, for a leaf nothing else depends on)."""
    try:
        return operation()
    except Exception as error:  # any exception DeepSpeed's identical expression would raise
        report.crash(rule, pointer, error, why, fix)
        if stop:
            raise _Stop from None
        return _FAILED


def _section(check):
    """Run one getter's transliteration; a recorded crash ends it as DeepSpeed would."""
    @functools.wraps(check)
    def run(*args):
        try:
            check(*args)
        except _Stop:
            pass
    return run


def _ptr(*tokens) -> str:
    pointer = ""
    for token in tokens:
        pointer = pointer_join(pointer, token)
    return pointer



def _quoted_bool(value):
    """True/False for the strings "true"/"false" (any case, padded), else None."""
    if isinstance(value, str):
        return {"true": True, "false": False}.get(value.strip().lower())
    return None


def _closest(text, choices):
    """The choice `text` most likely meant (case-insensitive), or None when unclear or tied."""
    if not isinstance(text, str):
        return None
    return closest(text, choices, 0.6, ignore_case=True, unambiguous=True)


def _empty_section_fix(value):
    """`{}` reads like an absent section for every loose getter; offer it for empty-ish junk."""
    if value is None or value is False or value == "" or value == [] or value == 0:
        return "{}"
    return None


def _truthy_traps(report, section_path: str, section: dict):
    """DS410: quoted booleans DeepSpeed tests for truthiness ("false" counts as true)."""
    base = _ptr(*section_path.split("/")) if section_path else ""
    for key in TRUTHY_KEYS.get(section_path, ()):
        if key not in section:
            continue
        as_bool = _quoted_bool(section[key])
        if as_bool is None:
            continue
        pointer = pointer_join(base, key)
        report.note(QUOTED_BOOL, pointer,
                    f"{dotted(pointer)} is the string {section[key]!r}, not a boolean: DeepSpeed does not convert "
                    f"it, and any non-empty string, \"false\" included, counts as true",
                    fix=to_json(as_bool))


def _as_object(report, value, key_path: str, operation: Callable, fix_value=None):
    """Run the getter's first object operation (`.get`/`.keys`/`.items`) on a section; DS605 if
    that crashes. Returns normally only when DeepSpeed would continue."""
    pointer = _ptr(*key_path.split("/"))
    fix = _empty_section_fix(value) if fix_value is None else fix_value
    _run(report, SECTION_TYPE, pointer, f"{dotted(pointer)} must be an object, not {describe(value)}", operation,
         fix=fix)
    return pointer


def _bf16_key(config) -> str:
    """get_bfloat16_config: `bf16` unless it is absent or null, then legacy `bfloat16`."""
    return "bf16" if config.get("bf16", None) is not None else "bfloat16"


# ---------------------------------------------------------------------------------------------
# Getters, in the order _initialize_params calls them
# ---------------------------------------------------------------------------------------------
_COMM_DTYPE_ALIASES = {"float32": "fp32", "float": "fp32", "torch.float32": "fp32", "float16": "fp16",
                       "half": "fp16", "torch.float16": "fp16", "bfloat16": "bf16", "torch.bfloat16": "bf16"}


@_section
def _communication_dtypes(config, resolved, report):
    """get_communication_data_type, for both keys (both raise with communication_data_type's text)."""
    facts = schema.facts()
    accepted = [name for name in COMM_DTYPE_NAMES if facts[f"communication_data_type_{name}"]]
    words = ", ".join(accepted[:-1]) + " or " + accepted[-1]
    # the sequence-parallel key was seq_parallel_comm_data_type before 0.16.5: the release's schema spells it
    sequence_key = next((k for k in ("seq_parallel_communication_data_type", "seq_parallel_comm_data_type")
                         if schema.property_of(schema.root(), k) is not None), "seq_parallel_communication_data_type")
    for key, default in (("communication_data_type", None), (sequence_key, "fp32")):
        value = config.get(key, default)
        pointer = "/" + key
        lowered = _run(report, COMMUNICATION_DTYPE, pointer,
                       f"{key} must be a string ({words}), not {describe(value)}",
                       lambda: value.lower() if value is not None else value, stop=False)
        if lowered is _FAILED or lowered is None or lowered in accepted:
            continue
        fix = _COMM_DTYPE_ALIASES.get(lowered.strip()) or _closest(lowered, accepted)
        if fix not in accepted:
            fix = _closest(fix, accepted) if fix else None
        report.crash(COMMUNICATION_DTYPE, pointer, ValueError(COMM_DTYPE_ERROR.format(accepted, lowered)),
                     f"{key} {value!r} is not {words} (DeepSpeed {schema.active()} lower-cases it, nothing more)",
                     fix=to_json(fix) if fix else None)


def _gradient_allreduce_op(config, report):
    """get_gradient_allreduce_op; returns the op, or None when DeepSpeed would raise (or, before 0.19.6,
    never reads it)."""
    if not schema.facts()["gradient_allreduce_op_checked"]:
        return None
    value = config.get("gradient_allreduce_op", "mean")
    if isinstance(value, str):
        value = value.lower()
    if value in ALLREDUCE_OPS:
        return value
    error = ValueError("Invalid gradient_allreduce_op. Supported operations: ['mean', 'sum']. "
                       f"Got: {value!r}")
    fix = {"avg": "mean", "average": "mean"}.get(value.strip()) if isinstance(value, str) else None
    fix = fix or _closest(value, ALLREDUCE_OPS)
    report.crash(GRADIENT_ALLREDUCE_OP, "/gradient_allreduce_op", error,
                 "gradient_allreduce_op must be \"mean\" or \"sum\" (case-insensitive)",
                 fix=to_json(fix) if fix else None)
    return None


@_section
def _activation_checkpointing(config, resolved, report):
    """DeepSpeedActivationCheckpointingConfig: `param_dict[...]` then `.get` per key."""
    if "activation_checkpointing" not in config.keys():
        return
    section = config["activation_checkpointing"]
    _as_object(report, section, "activation_checkpointing", lambda: section.get("partition_activations", False))
    _truthy_traps(report, "activation_checkpointing", section)


@_section
def _comms_logger_presence(config, resolved, report):
    """DeepSpeedCommsConfig: comms_logger_enabled = 'comms_logger' in config, and CommsLogger.configure
    uses that flag, not the block's own `enabled`."""
    if "comms_logger" not in config or not hasattr(config["comms_logger"], "keys"):
        return  # absent, or the ** fetch crashes (reported with the model sections)
    model = resolved.get("comms_logger")
    raw = config["comms_logger"].get("enabled")
    enabled = model.get("enabled") if isinstance(model, dict) else (raw is True or _quoted_bool(raw) is True)
    if enabled is True:
        return
    report.note(PRESENCE_ENABLES, "/comms_logger",
                "comms_logger is present, so DeepSpeed turns the communication logger on even though its "
                "\"enabled\" is not true (DeepSpeed checks only that the key exists); remove the block to keep "
                "it off")


@_section
def _precision_assert(config, resolved, report):
    """_initialize_params: assert not (fp16.enabled and bf16.enabled)."""
    fp16, bf16 = resolved.get("fp16"), resolved.get("bf16")
    if not (isinstance(fp16, dict) and isinstance(bf16, dict)):
        return
    if fp16.get("enabled") and bf16.get("enabled"):
        section = config.get("fp16")
        pointer = "/fp16/enabled" if isinstance(section, dict) and "enabled" in section else "/fp16"
        report.crash(FP16_AND_BF16, pointer, AssertionError("bfloat16 and fp16 modes cannot be simultaneously enabled"),
                     f"fp16 and {_bf16_key(config)} are both enabled; keep one of them")


@_section
def _torch_autocast(config, resolved, report):
    """get_torch_autocast_enabled / _dtype / get_lower_precision_safe_modules."""
    if "torch_autocast" not in config.keys():
        return
    section = config["torch_autocast"]
    _as_object(report, section, "torch_autocast", lambda: section.get("enabled", False))
    _truthy_traps(report, "torch_autocast", section)

    if "dtype" in section:
        value = section["dtype"]
        if not (isinstance(value, str) and value in DTYPE_ENUM_VALUES):
            # The `except KeyError` around DtypeEnum(...) never fires: Enum raises ValueError.
            lowered = value.lower() if isinstance(value, str) else None
            fix = lowered if lowered in DTYPE_ENUM_VALUES else None
            report.crash(TORCH_AUTOCAST, "/torch_autocast/dtype", ValueError(f"{value!r} is not a valid DtypeEnum"),
                         "torch_autocast.dtype must be one of bf16, bfloat16, fp16, float16, half, fp32, float32, "
                         "float, int8 (or the torch.* spelling), case-sensitive",
                         fix=to_json(fix) if fix else None)

    key = "lower_precision_safe_modules"
    if key in section:
        modules = section[key]
        pointer = "/torch_autocast/" + key
        why = "torch_autocast.lower_precision_safe_modules must be a list of class paths such as \"torch.nn.Linear\""
        all_str = _run(report, TORCH_AUTOCAST, pointer, why, lambda: all(isinstance(m, str) for m in modules),
                       stop=False)
        if all_str is False:
            report.crash(TORCH_AUTOCAST, pointer, ValueError(f"Invalid module names for torch autocast: {modules}. "
                                                             "Expected list of strings."), why)
        elif all_str is True and isinstance(modules, str) and modules:
            # Accepted, but iterated character by character when autocast starts.
            enabled = section.get("enabled", False)
            report.note(TORCH_AUTOCAST, pointer,
                        f"{why}; DeepSpeed accepts a string here and iterates over its characters, so "
                        "importing the module names fails when autocast starts",
                        fix=to_json([modules]),
                        fails_in=INITIALIZE if enabled else None)


@_section
def _optimizer(config, resolved, report):
    """get_optimizer_name (+ .lower()), get_optimizer_params, get_optimizer_legacy_fusion, and the
    max_grad_norm test of _do_warning_check."""
    if "optimizer" not in config.keys():
        return
    section = config["optimizer"]
    fix = to_json({"type": section}) if isinstance(section, str) and section else None
    _as_object(report, section, "optimizer", lambda: "type" in section.keys(), fix_value=fix)
    _truthy_traps(report, "optimizer", section)
    name = section["type"] if "type" in section.keys() else None
    if name is not None:
        _run(report, OPTIMIZER_NAME, "/optimizer/type", f"optimizer.type must be a string, not {describe(name)}",
             lambda: name.lower() in DEEPSPEED_OPTIMIZERS, stop=False)
    if name is None:
        if "params" in section.keys():
            report.note(OPTIMIZER_WITHOUT_TYPE, "/optimizer/params",
                        "optimizer.params without optimizer.type: DeepSpeed builds no optimizer from the config "
                        "and ignores these params")
        return
    if "params" not in section.keys():
        return
    params = section["params"]
    if params is None:
        return
    has_norm = _run(report, SECTION_TYPE, "/optimizer/params",
                    f"optimizer.params must be an object, not {describe(params)}",
                    lambda: "max_grad_norm" in params.keys(), fix=_empty_section_fix(params))
    if has_norm:
        norm = params["max_grad_norm"]
        _run(report, SECTION_TYPE, "/optimizer/params/max_grad_norm",
             f"optimizer.params.max_grad_norm must be a number, not {describe(norm)} (DeepSpeed compares it with 0)",
             lambda: norm > 0)


@_section
def _scheduler(config, resolved, report):
    """get_scheduler_name / get_scheduler_params."""
    if "scheduler" not in config.keys():
        return
    section = config["scheduler"]
    fix = to_json({"type": section}) if isinstance(section, str) and section else None
    _as_object(report, section, "scheduler", lambda: "type" in section.keys(), fix_value=fix)


@_section
def _flops_and_wall_clock(config, resolved, report):
    """DeepSpeedFlopsProfilerConfig, then `wall_clock_breakdown | flops_profiler.enabled` (bitwise)."""
    enabled = False  # a crashed flops_profiler section is taken as its default for the `|`
    if "flops_profiler" in config.keys():
        section = config["flops_profiler"]
        try:
            _as_object(report, section, "flops_profiler", lambda: section.get("enabled", False))
            enabled = section.get("enabled", False)
            _truthy_traps(report, "flops_profiler", section)
        except _Stop:
            pass
    wall_clock = config.get("wall_clock_breakdown", False)
    try:
        wall_clock | enabled
        return
    except Exception as error:
        combined = error
    wall_bad = _raises(lambda: wall_clock | False)
    flops_bad = _raises(lambda: False | enabled)
    if wall_bad or not flops_bad:
        report.crash(WALL_CLOCK_TYPE, "/wall_clock_breakdown", combined,
                     f"wall_clock_breakdown must be true or false, not {describe(wall_clock)} (DeepSpeed combines it "
                     "with flops_profiler.enabled using the bitwise `|`)",
                     fix=_bool_fix(wall_clock))
    if flops_bad:
        error = flops_bad if wall_bad else combined
        report.crash(WALL_CLOCK_TYPE, "/flops_profiler/enabled", error,
                     f"flops_profiler.enabled must be true or false, not {describe(enabled)} (DeepSpeed combines it "
                     "with wall_clock_breakdown using the bitwise `|`)",
                     fix=_bool_fix(enabled))


def _raises(operation):
    try:
        operation()
        return None
    except Exception as error:
        return error


def _bool_fix(value):
    """A quoted boolean becomes the boolean; "auto" and null become the default, false."""
    as_bool = _quoted_bool(value)
    if as_bool is not None:
        return to_json(as_bool)
    return "false" if value is None or value == "auto" else None


@_section
def _autotuning(config, resolved, report):
    """DeepSpeedAutotuningConfig: `.get` per key, two truthiness asserts, then model_info."""
    if not (config and "autotuning" in config.keys()):
        return
    section = config["autotuning"]
    _as_object(report, section, "autotuning", lambda: section.get("enabled", False))
    _truthy_traps(report, "autotuning", section)
    for key, default in (("results_dir", "autotuning_results"), ("exps_dir", "autotuning_exps")):
        if not section.get(key, default):
            report.crash(AUTOTUNING, "/autotuning/" + key, AssertionError(f"{key} cannot be empty"),
                         f"autotuning.{key} is {section.get(key)!r}; it must be a non-empty path (or left out "
                         f"for the default {default!r})", fix=to_json(default))
    if "model_info" in section and section["model_info"] is not None:
        info = section["model_info"]
        _as_object(report, info, "autotuning/model_info", lambda: info.get("profile", False))
        _truthy_traps(report, "autotuning/model_info", info)


@_section
def _pipeline(config, resolved, report):
    """get_pipeline_config: `param_dict.get("pipeline", {}).items()`."""
    section = config.get("pipeline", {})
    _as_object(report, section, "pipeline", lambda: section.items())
    _truthy_traps(report, "pipeline", section)


# -- data_efficiency (runtime/data_pipeline/config.py) ----------------------------------------
@_section
def _data_efficiency(config, resolved, report):
    """get_data_efficiency_enabled / get_data_efficiency_config, read-only (DeepSpeed also inserts
    empty sub-dicts into the user's config, which changes nothing it reads)."""
    if "data_efficiency" not in config.keys():
        return
    section = config["data_efficiency"]
    _as_object(report, section, "data_efficiency", lambda: section.get("enabled", False))
    _truthy_traps(report, "data_efficiency", section)
    _data_sampling(section, report)
    _data_routing(section, report)


@_section
def _data_sampling(efficiency, report):
    if "data_sampling" not in efficiency.keys():
        return
    sampling = efficiency["data_sampling"]
    path = "data_efficiency/data_sampling"
    _as_object(report, sampling, path, lambda: sampling.get("enabled", False))
    _truthy_traps(report, path, sampling)
    _curriculum_learning(sampling, report)
    _dynamic_batching(sampling, report)


@_section
def _curriculum_learning(sampling, report):
    if "curriculum_learning" not in sampling.keys():
        return
    curriculum = sampling["curriculum_learning"]
    path = "data_efficiency/data_sampling/curriculum_learning"
    pointer = _as_object(report, curriculum, path, lambda: curriculum.get("enabled", False))
    _truthy_traps(report, path, curriculum)
    if curriculum.get("enabled", False) and "curriculum_metrics" not in curriculum.keys():
        report.crash(DATA_EFFICIENCY, pointer,
                     AssertionError("Curriculum learning is enabled, curriculum_metrics must be specified"),
                     "curriculum learning is enabled without curriculum_metrics (checked even when "
                     "data_efficiency.enabled is false)")


@_section
def _dynamic_batching(sampling, report):
    """get_dynamic_batching: bool()/str()/int() conversions, each on its own value."""
    batching = sampling.get("dynamic_batching", {})
    path = "data_efficiency/data_sampling/dynamic_batching"
    pointer = _as_object(report, batching, path, lambda: batching.get("enabled", False))
    _truthy_traps(report, path, batching)

    def to_int(key):
        value = batching[key]
        _run(report, DATA_EFFICIENCY, pointer_join(pointer, key),
             f"{dotted(pointer)}.{key} must be an integer, not {describe(value)}", lambda: int(value), stop=False,
             fix=_int_fix(value))
    if "min_batch_size" in batching:
        to_int("min_batch_size")
    if "max_batch_size" in batching.keys():
        to_int("max_batch_size")
    if bool(batching.get("enabled", False)):
        if "max_tokens" not in batching.keys():
            report.crash(DATA_EFFICIENCY, pointer,
                         AssertionError("Dynamic batching is enabled, so max_tokens must be specified"),
                         "dynamic batching is enabled without max_tokens (checked even when "
                         "data_efficiency.enabled is false)")
        else:
            to_int("max_tokens")


def _int_fix(value):
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            return None
        return to_json(int(number)) if number.is_integer() else None
    return None


@_section
def _data_routing(efficiency, report):
    if "data_routing" not in efficiency.keys():
        return
    routing = efficiency["data_routing"]
    path = "data_efficiency/data_routing"
    _as_object(report, routing, path, lambda: routing.get("enabled", False))
    _truthy_traps(report, path, routing)
    if "random_ltd" in routing.keys():
        ltd = routing["random_ltd"]
        _as_object(report, ltd, path + "/random_ltd", lambda: ltd.get("enabled", False))
        _truthy_traps(report, path + "/random_ltd", ltd)


# -- checkpoint (runtime/config.py and runtime/model_checkpointing/config.py) ---------------
@_section
def _checkpoint(config, resolved, report):
    """get_checkpoint_tag_validation_mode, parallel_write, then get_checkpoint_config's writer.
    `"checkpoint": null` crashes: _initialize_params reads it with `.get` before the None check."""
    section = config.get("checkpoint", {})
    _as_object(report, section, "checkpoint", lambda: section.get("tag_validation", "WARN"))
    _truthy_traps(report, "checkpoint", section)
    _tag_validation(section, report)
    _parallel_write(section, report)
    _writer(section, report)


@_section
def _tag_validation(section, report):
    value = section.get("tag_validation", "WARN")
    pointer = "/checkpoint/tag_validation"
    why = "checkpoint.tag_validation must be \"Warn\", \"Ignore\" or \"Fail\" (case-insensitive)"
    mode = _run(report, CHECKPOINT_VALUES, pointer, f"{why}, not {describe(value)}", lambda: value.upper())
    if mode not in TAG_VALIDATION_MODES:
        fix = _closest(mode, TAG_VALIDATION_MODES)
        report.crash(CHECKPOINT_VALUES, pointer, DeepSpeedConfigError(
            f"Checkpoint config contains invalid tag_validation value of {mode}, expecting one of "
            f"{TAG_VALIDATION_MODES}"), why, fix=to_json(fix) if fix else None)


@_section
def _parallel_write(section, report):
    writes = section.get("parallel_write", {})
    _as_object(report, writes, "checkpoint/parallel_write", lambda: writes.get("pipeline_stage", False))
    value = writes.get("pipeline_stage", False)
    if value in [True, False]:  # `in` compares with ==, so 0, 1, 0.0 and 1.0 pass too
        return
    as_bool = _quoted_bool(value)
    report.crash(CHECKPOINT_VALUES, "/checkpoint/parallel_write/pipeline_stage", DeepSpeedConfigError(
        f"checkpoint::parallel_write::pipeline_stage value of '{value}' is invalid, expecting: true or false"),
        f"checkpoint.parallel_write.pipeline_stage must be true or false, not {describe(value)}",
        fix=to_json(as_bool) if as_bool is not None else None)


@_section
def _writer(section, report):
    """get_checkpoint_writer_config: `.get`, `.upper()` on type and data_parallel, then membership."""
    writer = section.get("writer", None)
    if writer is None:
        return
    # null, not {}, is "no writer": {} selects the FAST writer with its defaults
    _as_object(report, writer, "checkpoint/writer", lambda: writer.get("type", "FAST"),
               fix_value="null" if _empty_section_fix(writer) else None)
    _truthy_traps(report, "checkpoint/writer", writer)
    for key, default in (("type", "FAST"), ("data_parallel", None)):
        value = writer.get(key, default)
        pointer = "/checkpoint/writer/" + key
        choices = WRITER_VALID_VALUES[key]
        why = f"checkpoint.writer.{key} must be one of {', '.join(c.lower() for c in choices)} (case-insensitive)"
        upper = _run(report, CHECKPOINT_VALUES, pointer, f"{why}, not {describe(value)}",
                     lambda: value if value is None else value.upper(), stop=False)
        if upper is _FAILED or upper is None or upper in choices:
            continue
        fix = _closest(upper, choices)
        report.crash(CHECKPOINT_VALUES, pointer, AssertionError(
            f"writer contains invalid value {upper} for {key}, expecting one of {choices}"),
            why, fix=to_json(fix.lower()) if fix else None)


@_section
def _data_types(config, resolved, report):
    """data_types: `.get` per key and the keep_in_fp32_modules check (dtype strings resolve later)."""
    section = config.get("data_types", {})
    _as_object(report, section, "data_types", lambda: section.get("grad_accum_dtype", None))
    value = section.get("keep_in_fp32_modules", "auto")
    if value != "auto" and not (isinstance(value, list) and all(isinstance(n, str) for n in value)):
        fix = to_json([value]) if isinstance(value, str) and value.strip().lower() not in ("", "none") else None
        report.crash(DTYPE_MISMATCH, "/data_types/keep_in_fp32_modules", DeepSpeedConfigError(
            f"data_types.keep_in_fp32_modules must be \"auto\" or a list of name patterns, got {value!r}"),
            "data_types.keep_in_fp32_modules must be \"auto\" or a list of module-name patterns ([] keeps "
            "nothing in fp32)", fix=fix)


@_section
def _aio(config, resolved, report):
    """get_aio_config. `use_gds` asserts the accelerator is CUDA: assumed true (a CUDA training
    machine), so it never fails here."""
    if not ("aio" in config.keys() and config["aio"] is not None):
        return
    section = config["aio"]
    _as_object(report, section, "aio", lambda: section.get("block_size", 1048576))
    _truthy_traps(report, "aio", section)


@_section
def _datastates(config, resolved, report):
    """DeepSpeedDataStatesConfig: enabled = value `is not False`, whatever the value is."""
    if "datastates_ckpt" not in config or config["datastates_ckpt"] is False:
        return
    value = config["datastates_ckpt"]
    if not _looks_off(value):
        return  # a block that does not try to disable itself: DataStates is wanted
    report.note(PRESENCE_ENABLES, "/datastates_ckpt",
                f"datastates_ckpt is {describe(value)}: DeepSpeed enables DataStates checkpointing whenever the "
                "key is present and not literally false (null, {} and {\"enabled\": false} all enable it)",
                fix="false")


def _looks_off(value) -> bool:
    """null, empty, 0, "false", or an object whose own "enabled" looks off."""
    return (not value or _quoted_bool(value) is False
            or (isinstance(value, dict) and "enabled" in value and _looks_off(value["enabled"])))


@_section
def _expert_parallel(config, resolved, report):
    """parse_autoep_config: falsy means defaults, otherwise `.get` per key; only a non-null
    load_balance_coeff is rejected while parsing."""
    if "expert_parallel" not in config:
        return
    section = config["expert_parallel"]
    if not section:
        return
    _as_object(report, section, "expert_parallel", lambda: section.get("enabled", False))
    _truthy_traps(report, "expert_parallel", section)
    if "load_balance_coeff" in section and section["load_balance_coeff"] is not None:
        value = section["load_balance_coeff"]
        report.crash(INVALID_VALUE, "/expert_parallel/load_balance_coeff", ValueError(
            f"load_balance_coeff={value!r} is not supported in this AutoEP build (would register expert_bias and "
            "route through unsupported auxiliary-loss-free load balancing). Set load_balance_coeff to null or "
            "omit the key."), "expert_parallel.load_balance_coeff is not supported by DeepSpeed 0.19.8",
            fix="null")


@_section
def _top_level_truthy(config, resolved, report):
    _truthy_traps(report, "", config)


# ---------------------------------------------------------------------------------------------
# _do_error_check (after the batch asserts) and _do_warning_check
# ---------------------------------------------------------------------------------------------
def _error_check(config, resolved, report, allreduce_op):
    zero = resolved.get("zero_optimization")
    stage = zero.get("stage") if isinstance(zero, dict) else None
    if isinstance(stage, int) and stage > 0 and stage > ZERO_MAX_STAGE:  # unreachable: pydantic rejects it first
        report.crash(INVALID_VALUE, "/zero_optimization/stage", AssertionError(
            f"DeepSpeedConfig: Maximum supported ZeRO stage is {ZERO_MAX_STAGE_TEXT}"), "ZeRO stage must be 0-3")

    if allreduce_op == "sum" and schema.facts()["gradient_allreduce_sum_zero3_rejected"]:
        compile_ = resolved.get("compile")
        conflicts = []
        if isinstance(zero, dict) and stage == 3:
            conflicts.append(("ZeRO stage 3", "zero_optimization.stage is 3"))
        if isinstance(zero, dict) and zero.get("zenflow") is not None:
            conflicts.append(("ZenFlow", "zero_optimization.zenflow is set"))
        if isinstance(compile_, dict) and compile_.get("deepcompile"):
            conflicts.append(("DeepCompile", "compile.deepcompile is on"))
        for feature, reason in conflicts:
            report.crash(GRADIENT_ALLREDUCE_OP, "/gradient_allreduce_op",
                         ValueError(f"gradient_allreduce_op='sum' is not supported with {feature}"),
                         f"gradient_allreduce_op \"sum\" cannot be used because {reason}", fix='"mean"')

    if not isinstance(stage, int):
        return  # the ZeRO model fails: DeepSpeed never gets here
    zero_1_to_3 = stage > 0 and stage in (1, 2, 3)
    fp16, bf16 = resolved.get("fp16"), resolved.get("bf16")
    bf16_key = _bf16_key(config)
    asserts = []
    if isinstance(fp16, dict) and fp16.get("fp16_master_weights_and_grads") and not zero_1_to_3:
        asserts.append(("/fp16/fp16_master_weights_and_grads",
                        "Fp16_master_weights_and_grads is only supported with ZeRO Stage 1, 2, or 3."))
    if isinstance(bf16, dict):
        if bf16.get("bf16_master_weights_and_grads") and not zero_1_to_3 and \
                schema.facts()["bf16_master_weights_needs_zero"]:
            asserts.append((f"/{bf16_key}/bf16_master_weights_and_grads",
                            "Bf16_master_weights_and_grads is only supported with ZeRO Stage 1, 2, or 3."))
        if bf16.get("bf16_optimizer_states"):
            if not zero_1_to_3:
                asserts.append((f"/{bf16_key}/bf16_optimizer_states",
                                "bf16_optimizer_states is only supported with ZeRO Stage 1, 2, or 3."))
            if not bf16.get("bf16_master_weights_and_grads"):
                asserts.append((f"/{bf16_key}/bf16_optimizer_states",
                                "bf16_optimizer_states requires bf16_master_weights_and_grads to be enabled."))
    for pointer, text in asserts:
        report.crash(MASTER_WEIGHTS_STAGE, pointer, AssertionError(text),
                     f"{dotted(pointer)} needs ZeRO stage 1-3 (zero_optimization.stage is {stage})"
                     if "Stage 1, 2, or 3" in text else f"{dotted(pointer)} needs bf16_master_weights_and_grads")


def _warning_check(config, report):
    """vocabulary_size alignment: `if v and v % 8 != 0`, evaluated as written (a string `%` formats)."""
    value = config.get("vocabulary_size", None)
    if not value:
        return
    misaligned = _run(report, SECTION_TYPE, "/vocabulary_size",
                      f"vocabulary_size must be an integer, not {describe(value)}",
                      lambda: bool(value % TENSOR_CORE_ALIGN_SIZE != 0), stop=False, fix=_int_fix(value))
    if misaligned is True:
        report.note(VOCABULARY_SIZE, "/vocabulary_size",
                    f"DeepSpeedConfig: vocabulary size {value} is not aligned to {TENSOR_CORE_ALIGN_SIZE}, may "
                    "import tensor core utilization. (DeepSpeed's warning: pad the model's vocabulary to a multiple "
                    "of 8 for tensor-core efficiency)")


# ---------------------------------------------------------------------------------------------
_GETTERS = (
    _communication_dtypes, _activation_checkpointing, _comms_logger_presence, _precision_assert,
    _torch_autocast, _optimizer, _scheduler, _flops_and_wall_clock, _autotuning, _pipeline, _data_efficiency,
    _checkpoint, _data_types, _aio, _datastates, _expert_parallel, _top_level_truthy,
)


def check_loose(config, resolved: dict) -> list[Finding]:
    """Every exception DeepSpeedConfig(config) raises outside its pydantic models and batch checks.

    `resolved` maps pydantic section names to their validated field values (None when that model
    fails). Never raises, whatever `config` is; non-objects are left to the loader's checks.
    """
    if not isinstance(config, dict):
        return []
    resolved = resolved if isinstance(resolved, dict) else {}
    report = _Report()
    allreduce_op = _gradient_allreduce_op(config, report)
    for getter in _GETTERS:
        getter(config, resolved, report)
    _error_check(config, resolved, report, allreduce_op)
    _warning_check(config, report)
    return report.findings
