"""What fails later, in `deepspeed.initialize`, and what DeepSpeed silently ignores.

A config that DeepSpeedConfig accepts can still fail when the engine is built: the optimizer
and scheduler constructors receive `optimizer.params` / `scheduler.params` as **kwargs, ZeRO's
optimizers assert on combinations of settings, and the pipeline, activation-checkpointing and
AutoTP code paths add their own asserts (runtime/engine.py, runtime/zero/, runtime/pipe/,
runtime/activation_checkpointing/). Other settings are accepted and then ignored or changed
(offload settings a stage does not use, ZeRO-3-only keys below stage 3). This module replays
those decisions statically for DeepSpeed 0.19.8 and the integration the config is written for:

  deepspeed    the script calls deepspeed.initialize; DeepSpeed builds the optimizer from the
               config when it has `optimizer.type`, otherwise we assume the script passes one.
  hf-trainer   transformers' Trainer: with an `optimizer` block DeepSpeed builds it (DummyOptim);
               without one the Trainer builds a torch optimizer (AdamW by default), sets
               `zero_allow_untested_optimizer`, and hands it to Accelerate's prepare().
  accelerate   prepare(): the config optimizer/scheduler through DummyOptim/DummyScheduler, else
               the script's torch optimizer (prepare() sets `zero_allow_untested_optimizer`).
               Both swap a torch optimizer for DeepSpeed's CPU Adam/Adagrad under optimizer
               offload unless `zero_force_ds_cpu_optimizer` is false
               (accelerate/accelerator.py `map_pytorch_optim_to_deepspeed`).
  lightning    DeepSpeedStrategy: the config optimizer if the config has one, else the one from
               configure_optimizers; it fills `gradient_clipping` (gradient_clip_val or 0) and
               calls deepspeed.checkpointing.configure from `activation_checkpointing`.

`resolved` holds the validated pydantic sections (field names, defaults applied); a section is
None when DeepSpeed already fails parsing it, and the rules that need it are skipped. No torch,
no deepspeed, no pydantic: the constructor signatures below are frozen from torch 2.13 and
DeepSpeed 0.19.8 and tests compare them with the installed packages.
"""

from __future__ import annotations

from ..findings import Finding
from ..phases import INITIALIZE
from ..pointers import pointer_from, pointer_join
from ..rules.keys import IGNORED_KEY
from ..rules.optimizer import (
    GRADIENT_CLIPPING_DEFAULT,
    LAMB_LOSS_SCALE,
    MUON_BF16_OPTIMIZER,
    MUON_REDUCE_SCATTER,
    OPTIMIZER_NAME,
    OPTIMIZER_PARAMS,
    SCHEDULER_ADVICE,
    SCHEDULER_NAME,
    SCHEDULER_PARAMS,
    UNTESTED_OPTIMIZER,
)
from ..rules.precision import DTYPE_MISMATCH, MASTER_WEIGHTS_OFFLOAD, TORCH_AUTOCAST
from ..rules.sections import ACTIVATION_CHECKPOINTING, PIPELINE_FLAGS, TENSOR_PARALLEL
from ..rules.zero import (
    ALLGATHER_BUCKET_ODD,
    COMPUTE_GRAD_NORM,
    LEGACY_STAGE1,
    MANAGED_GRADIENT_ACCUMULATION,
    NVME_PATH_MISSING,
    OFFLOAD_CLIENT_OPTIMIZER,
    OFFLOAD_IGNORED,
    PIPELINE_ZERO,
    REDUCE_SCATTER_SCALING,
    STAGE_MISMATCHED_KEYS,
)
from ..targets import ACCELERATE, DEEPSPEED, HF_TRAINER, LIGHTNING, Target
from ..values import closest, is_auto, to_json
from . import releases, schema

# ---------------------------------------------------------------------------------------------
# Frozen tables (tests/deepspeed/test_initialize.py checks each against the installed torch / DeepSpeed)
# ---------------------------------------------------------------------------------------------

# runtime/config.py DEEPSPEED_OPTIMIZERS: matched case-insensitively, then lower-cased.
DEEPSPEED_OPTIMIZERS = ("adagrad", "adam", "adamw", "lamb", "muadam", "muadamw", "musgd", "lion", "muon")
REMOVED_OPTIMIZERS = ("onebitadam", "zerooneadam", "onebitlamb")  # gone in 0.19.7

# torch.optim optimizer classes and their keyword arguments after `params` (torch 2.13). A name
# that is neither a DeepSpeed name nor one of these fails: getattr(torch.optim, name) is None, or
# (Optimizer, lr_scheduler, swa_utils, ...) is not something you can build from a config.
TORCH_OPTIMIZERS: dict[str, tuple[str, ...]] = {
    "ASGD": ("lr", "lambd", "alpha", "t0", "weight_decay", "foreach", "maximize", "differentiable", "capturable"),
    "Adadelta": ("lr", "rho", "eps", "weight_decay", "foreach", "capturable", "maximize", "differentiable"),
    "Adafactor": ("lr", "beta2_decay", "eps", "d", "weight_decay", "foreach", "maximize"),
    "Adagrad": ("lr", "lr_decay", "weight_decay", "initial_accumulator_value", "eps", "foreach", "maximize",
                "differentiable", "fused"),
    "Adam": ("lr", "betas", "eps", "weight_decay", "amsgrad", "foreach", "maximize", "capturable", "differentiable",
             "fused", "decoupled_weight_decay"),
    "AdamW": ("lr", "betas", "eps", "weight_decay", "amsgrad", "maximize", "foreach", "capturable", "differentiable",
              "fused"),
    "Adamax": ("lr", "betas", "eps", "weight_decay", "foreach", "maximize", "differentiable", "capturable"),
    "LBFGS": ("lr", "max_iter", "max_eval", "tolerance_grad", "tolerance_change", "history_size", "line_search_fn"),
    "Muon": ("lr", "weight_decay", "momentum", "nesterov", "ns_coefficients", "eps", "ns_steps", "adjust_lr_fn"),
    "NAdam": ("lr", "betas", "eps", "weight_decay", "momentum_decay", "decoupled_weight_decay", "foreach", "maximize",
              "capturable", "differentiable"),
    "RAdam": ("lr", "betas", "eps", "weight_decay", "decoupled_weight_decay", "foreach", "maximize", "capturable",
              "differentiable"),
    "RMSprop": ("lr", "alpha", "eps", "weight_decay", "momentum", "centered", "capturable", "foreach", "maximize",
                "differentiable"),
    "Rprop": ("lr", "etas", "step_sizes", "capturable", "foreach", "maximize", "differentiable"),
    "SGD": ("lr", "momentum", "dampening", "weight_decay", "nesterov", "maximize", "foreach", "differentiable",
            "fused"),
    "SparseAdam": ("lr", "betas", "eps", "maximize"),
}

# DeepSpeed's own optimizer classes: keyword arguments after the parameters.
DS_OPTIMIZERS: dict[str, tuple[str, ...]] = {
    "FusedAdam": ("lr", "bias_correction", "betas", "eps", "adam_w_mode", "weight_decay", "amsgrad", "set_grad_none"),
    "DeepSpeedCPUAdam": ("lr", "bias_correction", "betas", "eps", "weight_decay", "amsgrad", "adamw_mode",
                         "fp32_optimizer_states"),
    "ZenFlowCPUAdam": ("lr", "bias_correction", "betas", "eps", "weight_decay", "amsgrad", "adamw_mode",
                       "fp32_optimizer_states", "overlap_step"),
    "FusedLamb": ("lr", "bias_correction", "betas", "eps", "eps_inside_sqrt", "weight_decay", "max_grad_norm",
                  "max_coeff", "min_coeff", "amsgrad"),
    "FusedLion": ("lr", "betas", "weight_decay", "set_grad_none"),
    "DeepSpeedCPULion": ("lr", "betas", "weight_decay", "fp32_optimizer_states"),
    "DeepSpeedCPUAdagrad": ("lr", "eps", "weight_decay", "amsgrad", "fp32_optimizer_states"),
}

# Keyword arguments DeepSpeed passes itself (engine.py get_optimizer_configuration); the same key
# in optimizer.params collides ("got multiple values") unless DeepSpeed popped it first.
INJECTED = {
    "FusedAdam": ("adam_w_mode",),
    "DeepSpeedCPUAdam": ("adamw_mode", "fp32_optimizer_states"),
    "ZenFlowCPUAdam": ("adamw_mode", "fp32_optimizer_states", "overlap_step"),
    "torch.Adam": ("foreach",),
    "torch.AdamW": ("foreach",),
}
# Popped from optimizer.params before the adam/adamw/muon constructors see them.
ADAM_POPPED = ("adam_w_mode", "torch_adam", "fp32_optimizer_states")
MUON_KEYS = ("lr", "momentum", "weight_decay", "ns_method", "muon_lr", "adam_lr", "betas", "eps")
MUON_NS_METHODS = ("gram", "standard")
NO_AMSGRAD = ("FusedAdam", "DeepSpeedCPUAdam", "ZenFlowCPUAdam", "FusedLamb")  # `if amsgrad: raise`

# zero/utils.py ZERO_SUPPORTED_OPTIMIZERS (exact type match) plus MuonWithAuxAdam.
ZERO_SUPPORTED = ("torch.Adam", "torch.AdamW", "FusedAdam", "DeepSpeedCPUAdam", "ZenFlowCPUAdam", "torch.Adagrad",
                  "DeepSpeedCPUAdagrad", "DeepSpeedCPULion", "FusedLion", "MuonWithAuxAdam")
# Optimizers whose `defaults` hold "betas" (OneCycle cycles momentum only for those).
WITH_BETAS = ("FusedAdam", "DeepSpeedCPUAdam", "ZenFlowCPUAdam", "FusedLamb", "FusedLion", "DeepSpeedCPULion",
              "torch.Adam", "torch.AdamW", "torch.Adamax", "torch.NAdam", "torch.RAdam", "torch.SparseAdam")

# deepspeed.runtime.lr_schedules VALID_LR_SCHEDULES: (required, optional) keyword arguments.
DS_SCHEDULERS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "LRRangeTest": ((), ("lr_range_test_min_lr", "lr_range_test_step_size", "lr_range_test_step_rate",
                         "lr_range_test_staircase", "last_batch_iteration")),
    "OneCycle": (("cycle_min_lr", "cycle_max_lr"),
                 ("decay_lr_rate", "cycle_first_step_size", "cycle_second_step_size", "cycle_first_stair_count",
                  "cycle_second_stair_count", "decay_step_size", "cycle_momentum", "cycle_min_mom", "cycle_max_mom",
                  "decay_mom_rate", "last_batch_iteration")),
    "WarmupLR": ((), ("warmup_min_lr", "warmup_max_lr", "warmup_num_steps", "warmup_type", "last_batch_iteration")),
    "WarmupDecayLR": (("total_num_steps",),
                      ("warmup_min_lr", "warmup_max_lr", "warmup_num_steps", "warmup_type", "last_batch_iteration")),
    "WarmupCosineLR": (("total_num_steps",),
                       ("warmup_min_ratio", "warmup_num_steps", "cos_min_ratio", "warmup_type",
                        "last_batch_iteration")),
}
# torch.optim.lr_scheduler LRScheduler subclasses (torch 2.13), called as cls(optimizer, **params).
TORCH_SCHEDULERS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "ChainedScheduler": (("schedulers",), ("optimizer",)),
    "ConstantLR": ((), ("factor", "total_iters", "last_epoch")),
    "CosineAnnealingLR": (("T_max",), ("eta_min", "last_epoch")),
    "CosineAnnealingWarmRestarts": (("T_0",), ("T_mult", "eta_min", "last_epoch")),
    "CyclicLR": (("base_lr", "max_lr"), ("step_size_up", "step_size_down", "mode", "gamma", "scale_fn", "scale_mode",
                                        "cycle_momentum", "base_momentum", "max_momentum", "last_epoch")),
    "ExponentialLR": (("gamma",), ("last_epoch",)),
    "LambdaLR": (("lr_lambda",), ("last_epoch",)),
    "LinearLR": ((), ("start_factor", "end_factor", "total_iters", "last_epoch")),
    "MultiStepLR": (("milestones",), ("gamma", "last_epoch")),
    "MultiplicativeLR": (("lr_lambda",), ("last_epoch",)),
    "OneCycleLR": (("max_lr",), ("total_steps", "epochs", "steps_per_epoch", "pct_start", "anneal_strategy",
                                 "cycle_momentum", "base_momentum", "max_momentum", "div_factor", "final_div_factor",
                                 "three_phase", "last_epoch")),
    "PolynomialLR": ((), ("total_iters", "power", "last_epoch")),
    "ReduceLROnPlateau": ((), ("mode", "factor", "patience", "threshold", "threshold_mode", "cooldown", "min_lr",
                               "eps")),
    "SequentialLR": (("schedulers", "milestones"), ("last_epoch",)),
    "StepLR": (("step_size",), ("gamma", "last_epoch")),
}
# These take Python callables or scheduler objects, which JSON cannot express.
NEEDS_PYTHON_OBJECTS = ("ChainedScheduler", "LambdaLR", "MultiplicativeLR", "SequentialLR")
WARMUP_TYPES = ("log", "linear")

# zero_optimization keys (field names and aliases) that only stage 3 reads.
STAGE3_ONLY = (
    "prefetch_bucket_size", "stage3_prefetch_bucket_size", "param_persistence_threshold",
    "stage3_param_persistence_threshold", "model_persistence_threshold", "stage3_model_persistence_threshold",
    "max_live_parameters", "stage3_max_live_parameters", "max_reuse_distance", "stage3_max_reuse_distance",
    "gather_16bit_weights_on_model_save", "stage3_gather_16bit_weights_on_model_save",
    "stage3_gather_fp16_weights_on_model_save", "module_granularity_threshold", "stage3_module_granularity_threshold",
    "use_all_reduce_for_fetch_params", "stage3_use_all_reduce_for_fetch_params", "allgather_sequential",
    "stage3_allgather_sequential", "sub_group_size", "zero_hpz_partition_size", "zero_quantized_weights",
    "zero_quantized_nontrainable_weights", "zero_quantized_gradients", "memory_efficient_linear",
    "pipeline_loading_checkpoint", "override_module_apply", "save_muon_momentum_buffer_in_memory",
)
STAGE12_ONLY = ("round_robin_gradients", "parameter_alignment")

# runtime/config.py DtypeEnum: every accepted spelling -> canonical name.
DTYPES = {
    "torch.float16": "fp16", "fp16": "fp16", "float16": "fp16", "half": "fp16",
    "torch.float32": "fp32", "fp32": "fp32", "float32": "fp32", "float": "fp32",
    "torch.int8": "int8", "int8": "int8",
    "torch.bfloat16": "bf16", "bf16": "bf16", "bfloat16": "bf16",
}
TORCH_DTYPE = {"fp16": "torch.float16", "fp32": "torch.float32", "bf16": "torch.bfloat16", "int8": "torch.int8"}

UNTESTED = ('You are using an untested ZeRO Optimizer. Please add <"zero_allow_untested_optimizer": true> in the '
            'configuration file to use it.')
ZERO_OFFLOAD_CLIENT = ("ZeRORuntimeException: You are using ZeRO-Offload with a client provided optimizer (...) which "
                       "in most cases will yield poor performance. Please either use "
                       "deepspeed.ops.adam.DeepSpeedCPUAdam or set an optimizer in your ds-config ...")

def check_initialize(config: dict, resolved: dict, target: Target) -> list[Finding]:
    """Everything DeepSpeed (and the target's integration) does after parsing the config.

    A check that raises is dsconfig's bug: the exception propagates, and `dsconfig lint` reports an
    internal error naming the file (exit code 2) instead of a silently shorter list of findings.
    """
    if not isinstance(config, dict):
        return []
    setup = engine_setup(config, resolved, target)
    findings: list[Finding] = []
    for check in CHECKS:
        findings.extend(check(setup))
    return findings


def engine_setup(config: dict, resolved: dict, target: Target) -> _Setup:
    """What the engine will be working with (dsconfig.deepspeed.step asks it which optimizer reduces)."""
    return _Setup(config, resolved if isinstance(resolved, dict) else {}, target)


# ---------------------------------------------------------------------------------------------
# What the engine will be working with
# ---------------------------------------------------------------------------------------------

class _Setup:
    """The facts every rule needs, computed once: stage, offload, precision, the optimizer."""

    def __init__(self, config: dict, resolved: dict, target: Target):
        self.config = config
        self.target = target
        self.zero = _dict_or_none(resolved.get("zero_optimization"))
        self.fp16 = _dict_or_none(resolved.get("fp16"))
        self.bf16 = _dict_or_none(resolved.get("bf16"))
        self.compile = _dict_or_none(resolved.get("compile"))
        self.tensor_parallel = _dict_or_none(resolved.get("tensor_parallel"))
        raw_zero = config.get("zero_optimization")
        self.raw_zero = raw_zero if isinstance(raw_zero, dict) else {}
        # get_bfloat16_config: `bf16`, and only when that is None the legacy `bfloat16`.
        self.bf16_key = "bf16" if config.get("bf16") is not None or "bfloat16" not in config else "bfloat16"

        # The Trainer and prepare() replace these "auto"s before DeepSpeed sees them (stage: the plugin's
        # zero_stage, 2 by default; precision: the mixed-precision setting); `resolved` has DeepSpeed's
        # view, where "auto" is dropped. For those targets the value is unknown: rules needing it skip.
        filled = target.fills_auto
        self.stage = _int(self.zero.get("stage")) if self.zero else None
        if filled and self.raw_zero.get("stage") == "auto":
            self.stage = None
        self.opt_device = _device(self.zero.get("offload_optimizer")) if self.zero else None
        self.param_device = _device(self.zero.get("offload_param")) if self.zero else None
        if filled and _raw(self.raw_zero, "offload_optimizer", "device") == "auto":
            self.opt_device = None
        if filled and _raw(self.raw_zero, "offload_param", "device") == "auto":
            self.param_device = None
        self.zenflow = bool(self.zero and self.zero.get("zenflow") is not None)
        self.cpu_optimizer = self.opt_device in ("cpu", "nvme")  # engine.zero_use_cpu_optimizer(), any stage

        self.model_dtype = _model_dtype(self.fp16, self.bf16)
        if filled and "auto" in (_raw(config, "fp16", "enabled"), _raw(config, self.bf16_key, "enabled")):
            self.model_dtype = None
        self.grad_accum = _data_type(config, "grad_accum_dtype")

        optimizer = config.get("optimizer")
        self.optimizer = optimizer if isinstance(optimizer, dict) else None
        raw_name = self.optimizer.get("type") if self.optimizer else None
        self.raw_name = raw_name if isinstance(raw_name, str) else None
        # get_optimizer_name + the .lower() of _initialize_params
        self.name = self.raw_name.lower() if self.raw_name and self.raw_name.lower() in DEEPSPEED_OPTIMIZERS \
            else self.raw_name
        params = self.optimizer.get("params") if self.optimizer else None
        self.params = params if isinstance(params, dict) else {}
        # DeepSpeed builds the optimizer itself: the config names one and no client optimizer is
        # passed (the Trainer, prepare() and Lightning all pass none when the config has one).
        self.builds_optimizer = self.raw_name is not None
        self.basic = _basic_optimizer(self) if self.builds_optimizer and _known_name(self.name) else None
        # Without an optimizer block the script supplies one (Trainer: its own torch optimizer). The
        # integrations test for the block itself; plain DeepSpeed builds nothing without a type.
        self.client_optimizer = self.raw_name is None if target is DEEPSPEED else "optimizer" not in config
        self.pipeline = _signals_pipeline(config, target)

    def zero_key(self, *paths) -> str:
        """Pointer to the first zero_optimization key of `paths` the user wrote (else the block)."""
        return _locate(self.config, *(("zero_optimization",) + tuple(p if isinstance(p, tuple) else (p,))
                                      for p in paths))

    def zero_written(self, key: str) -> bool:
        return key in self.raw_zero

    @property
    def zero_12_optimizer(self) -> bool:
        """Stage 1/2 builds DeepSpeedZeroOptimizer; stage 1 with bf16 params and fp32 gradient
        accumulation without CPU offload takes the BF16_Optimizer instead (engine.py
        _do_optimizer_sanity_check)."""
        if self.stage not in (1, 2):
            return False
        if self.stage == 2 or self.grad_accum != "fp32" or self.opt_device == "cpu":
            return True
        return self.model_dtype in ("fp16", "fp32") and self.opt_device is not None  # unknown: no verdict

    @property
    def bf16_stage1(self) -> bool:
        """Certainly the BF16_Optimizer path of stage 1 (bf16 params, fp32 accumulation, no CPU offload)."""
        return (self.stage == 1 and self.model_dtype == "bf16" and self.grad_accum == "fp32"
                and self.opt_device not in ("cpu", None))

    @property
    def zero_optimizer(self) -> bool:
        """A ZeRO optimizer wraps the training optimizer (training always has one)."""
        return self.zero_12_optimizer or self.stage == 3

    @property
    def wrapped(self) -> bool | None:
        """engine.optimizer is a DeepSpeed wrapper, not a torch.optim.Optimizer (ZeRO, fp16, bf16)."""
        if self.stage is None or self.model_dtype is None:
            return None
        return self.stage > 0 or self.model_dtype != "fp32"


def _raw(node, *path):
    """config[path...] if every step is an object, else None."""
    for token in path:
        if not isinstance(node, dict):
            return None
        node = node.get(token)
    return node


def _dict_or_none(value):
    return value if isinstance(value, dict) else None


def _int(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _device(offload) -> str | None:
    """The offload device as DeepSpeed sees it: "none", "cpu" or "nvme" ("none" when absent)."""
    if not isinstance(offload, dict):
        return "none"
    device = offload.get("device", "none")
    return str(getattr(device, "value", device))


def _model_dtype(fp16, bf16) -> str | None:
    if fp16 is None or bf16 is None:
        return None
    if fp16.get("enabled"):
        return "fp16"
    return "bf16" if bf16.get("enabled") else "fp32"


def _data_type(config: dict, key: str) -> str | None:
    """Canonical DtypeEnum name of data_types.<key>; None when unset, "invalid" when DtypeEnum rejects it."""
    types = config.get("data_types")
    if not isinstance(types, dict) or types.get(key) is None:
        return None
    value = types[key]
    return DTYPES.get(value, "invalid") if isinstance(value, str) else "invalid"


def _known_name(name) -> bool:
    return name in DEEPSPEED_OPTIMIZERS or name in TORCH_OPTIMIZERS


def _basic_optimizer(s: _Setup) -> str | None:
    """The class engine._configure_basic_optimizer builds for the config optimizer."""
    name, params = s.name, s.params
    if name in ("adam", "adamw"):
        if params.get("torch_adam", False):
            adam_w = name == "adamw" or params.get("adam_w_mode", True)
            return "torch.AdamW" if adam_w else "torch.Adam"
        if s.opt_device is None:
            return None  # which Adam depends on the offload device
        if s.cpu_optimizer:
            return "ZenFlowCPUAdam" if s.zenflow else "DeepSpeedCPUAdam"
        return "FusedAdam"
    if name in ("adagrad", "lion"):
        if s.opt_device is None:
            return None
        if name == "adagrad":
            return "DeepSpeedCPUAdagrad" if s.cpu_optimizer else "torch.Adagrad"
        return "DeepSpeedCPULion" if s.cpu_optimizer else "FusedLion"
    if name == "lamb":
        return "FusedLamb"
    if name == "muon":
        return "MuonWithAuxAdam"
    if name in ("muadam", "muadamw", "musgd"):
        return "mup." + {"muadam": "MuAdam", "muadamw": "MuAdamW", "musgd": "MuSGD"}[name]
    return "torch." + name


def _signals_pipeline(config: dict, target: Target) -> bool:
    """Assume a PipelineModule when a plain-DeepSpeed config has a non-empty `pipeline` section.

    DeepSpeed reads `pipeline` for every model but acts on it only in PipelineEngine, which
    deepspeed.initialize picks when the model is a PipelineModule; a config that bothers to write
    the section is meant for one. The Trainer, Accelerate and Lightning never build a PipelineModule.
    """
    section = config.get("pipeline")
    return target is DEEPSPEED and isinstance(section, dict) and bool(section)


def _locate(config: dict, *paths: tuple) -> str:
    """Pointer to the first path the config has; otherwise the deepest existing prefix of the first."""
    for path in paths:
        node = config
        for token in path:
            if not isinstance(node, dict) or token not in node:
                break
            node = node[token]
        else:
            return pointer_from(path)
    node, found = config, []
    for token in paths[0] if paths else ():
        if not isinstance(node, dict) or token not in node:
            break
        found.append(token)
        node = node[token]
    return pointer_from(found)


def _key_fix(key: str | None) -> str | None:
    """A `fix` for an on_key finding: the replacement key, as JSON text."""
    return to_json(key) if key else None


def _real(value) -> bool:
    """What math.isclose and the arithmetic in DeepSpeed's schedulers accept (bool is an int)."""
    return isinstance(value, (int, float))


def _stage_text(stage) -> str:
    return f"ZeRO stage {stage}"


# ---------------------------------------------------------------------------------------------
# Optimizer (DS500-DS504)
# ---------------------------------------------------------------------------------------------

def _optimizer_name(s: _Setup):
    """DS500: engine._do_sanity_check asserts the name is DeepSpeed's or a torch.optim attribute."""
    if not s.builds_optimizer or _known_name(s.name):
        return
    name = s.raw_name
    asserted = f"`AssertionError: {name} is not a supported DeepSpeed Optimizer`"
    if name.lower() in REMOVED_OPTIMIZERS:
        yield Finding(OPTIMIZER_NAME, f"optimizer {name!r} (1-bit Adam / 0/1 Adam / 1-bit LAMB) was removed in "
                                      f"DeepSpeed 0.19.7: deepspeed.initialize raises {asserted}. Use \"adam\" or "
                                      "\"lamb\", or pin deepspeed<=0.19.6", "/optimizer/type", fails_in=INITIALIZE)
        return
    if name in ("Optimizer", "lr_scheduler", "swa_utils"):
        yield Finding(OPTIMIZER_NAME, f"torch.optim.{name} is not an optimizer class: DeepSpeed's name check passes "
                                      "(getattr(torch.optim, name)) and calling it fails with TypeError",
                      "/optimizer/type", fails_in=INITIALIZE)
        return
    exact = {n.lower(): n for n in TORCH_OPTIMIZERS}.get(name.lower())
    guess = exact or closest(name, list(TORCH_OPTIMIZERS) + list(DEEPSPEED_OPTIMIZERS), cutoff=0.75)
    hint = f"; did you mean {guess!r}?" if guess else ""
    if exact:
        hint = f"; torch names are case-sensitive: write {exact!r}"
    yield Finding(OPTIMIZER_NAME, f"optimizer {name!r} is neither a DeepSpeed optimizer "
                                  f"({', '.join(DEEPSPEED_OPTIMIZERS)}; any case) nor a torch.optim class (exact "
                                  f"case): deepspeed.initialize raises {asserted}{hint}",
                  "/optimizer/type", fails_in=INITIALIZE,
                  fix=to_json(guess) if guess else None)


def _accepted_kwargs(basic: str) -> tuple[str, ...]:
    if basic.startswith("torch."):
        return TORCH_OPTIMIZERS[basic[len("torch."):]]
    return DS_OPTIMIZERS[basic]


def _popped(s: _Setup) -> tuple[str, ...]:
    """optimizer.params keys DeepSpeed removes before calling the constructor."""
    if s.name not in ("adam", "adamw", "muon"):
        return ()
    return ADAM_POPPED + (("foreach",) if s.params.get("torch_adam", False) else ())


def _optimizer_params(s: _Setup):
    """DS501: optimizer.params go to the constructor as **kwargs (engine._configure_basic_optimizer)."""
    if not s.builds_optimizer:
        return
    base = "/optimizer/params"
    if "max_grad_norm" in s.params:  # checked before any constructor, for every optimizer type
        yield Finding(OPTIMIZER_PARAMS, "max_grad_norm in optimizer.params: deepspeed.initialize raises `ValueError: "
                                        "'max_grad_norm' is not supported as an optimizer parameter, please switch to "
                                        "using the deepspeed parameter 'gradient_clipping'`; move the value to the "
                                        "top-level \"gradient_clipping\"",
                      base + "/max_grad_norm", fails_in=INITIALIZE, on_key=True)
    basic = s.basic
    if basic is None or basic.startswith("mup."):
        return  # name unknown (DS500), offload unknown, or mup's optimizers (not modelled)
    if basic == "MuonWithAuxAdam":
        yield from _muon_params(s, base)
        return
    accepted = _accepted_kwargs(basic)
    popped = _popped(s)
    injected = INJECTED.get(basic, ())
    why = _why_class(s, basic)
    for key in s.params:
        if key in popped or key == "max_grad_norm":
            continue
        pointer = pointer_join(base, key)
        if key in ("params", "model_params"):
            yield Finding(OPTIMIZER_PARAMS, f"{basic} receives the model parameters positionally: deepspeed.initialize "
                                            f"raises `TypeError: {basic}.__init__() got multiple values for argument "
                                            f"'{key}'`",
                          pointer, fails_in=INITIALIZE, on_key=True)
        elif key in injected:
            rename = "adam_w_mode" if key == "adamw_mode" and "adam_w_mode" not in s.params else None
            yield Finding(OPTIMIZER_PARAMS, f"DeepSpeed passes {key} to {basic} itself{why}: deepspeed.initialize "
                                            f"raises `TypeError: {basic}() got multiple values for keyword argument "
                                            f"'{key}'`"
                                   + ("; write adam_w_mode, which DeepSpeed reads and forwards" if rename else ""),
                          pointer, fails_in=INITIALIZE, on_key=True, fix=_key_fix(rename))
        elif key not in accepted:
            guess = "adam_w_mode" if key == "adamw_mode" and "adam_w_mode" not in s.params \
                else closest(key, [k for k in accepted if k not in injected] + list(popped), cutoff=0.75)
            yield Finding(OPTIMIZER_PARAMS, f"{basic} has no parameter {key!r}{why}: deepspeed.initialize raises "
                                            f"`TypeError: {basic}.__init__() got an unexpected keyword argument "
                                            f"'{key}'`"
                                   + (f"; did you mean {guess!r}?" if guess else ""),
                          pointer, fails_in=INITIALIZE, on_key=True, fix=_key_fix(guess))
    if basic in NO_AMSGRAD and s.params.get("amsgrad"):
        cls = "DeepSpeedCPUAdam" if basic == "ZenFlowCPUAdam" else basic
        yield Finding(OPTIMIZER_PARAMS, f"{basic} has no AMSGrad variant{why}: deepspeed.initialize raises "
                                        f"`RuntimeError: {cls} does not support the AMSGrad variant.`",
                      base + "/amsgrad",
                      fails_in=INITIALIZE, fix="false")


def _why_class(s: _Setup, basic: str) -> str:
    """Why DeepSpeed picked this class, for the messages."""
    if basic in ("DeepSpeedCPUAdam", "ZenFlowCPUAdam", "DeepSpeedCPUAdagrad", "DeepSpeedCPULion"):
        return f" (optimizer {s.raw_name!r} with offload_optimizer.device {s.opt_device!r} builds {basic})"
    if basic == "FusedAdam":
        return f" (optimizer {s.raw_name!r} without CPU offload builds FusedAdam)"
    if basic in ("torch.Adam", "torch.AdamW") and s.name in ("adam", "adamw"):
        return f" (torch_adam: true builds {basic})"
    return ""


def _muon_params(s: _Setup, base: str):
    """Muon reads a fixed set of keys into its param groups and silently drops the rest."""
    popped = _popped(s)
    for key in s.params:
        if key in popped or key in MUON_KEYS or key == "max_grad_norm":
            continue
        yield Finding(IGNORED_KEY, f"Muon ignores optimizer.params.{key}: DeepSpeed copies only {', '.join(MUON_KEYS)} "
                                   "into Muon's parameter groups", pointer_join(base, key), on_key=True,
                      fix=_key_fix(closest(key, MUON_KEYS, cutoff=0.75)))
    method = s.params.get("ns_method", "gram")
    if not is_auto(method) and not (isinstance(method, str) and method in MUON_NS_METHODS):
        yield Finding(OPTIMIZER_PARAMS, "Muon's ns_method must be \"gram\" or \"standard\": deepspeed.initialize "
                                        "raises `AssertionError: ns_method must be one of {'gram', 'standard'}, got "
                                        f"{method}`",
                      base + "/ns_method", fails_in=INITIALIZE, fix='"gram"')


def _untested_optimizer(s: _Setup):
    """DS502: ZeRO accepts only its tested optimizer classes unless zero_allow_untested_optimizer."""
    if not s.stage or s.basic is None or s.basic in ZERO_SUPPORTED:
        return
    if s.config.get("zero_allow_untested_optimizer", False):
        return
    mup = " (and needs the mup package installed)" if s.basic.startswith("mup.") else ""
    who = ""
    if s.target is HF_TRAINER:
        who = ("; the Trainer sets this flag only when it builds the optimizer itself, i.e. when the config has "
               "no optimizer block")
    elif s.target is ACCELERATE:
        who = "; prepare() sets this flag only for a torch optimizer passed from the script"
    written = "zero_allow_untested_optimizer" in s.config
    yield Finding(UNTESTED_OPTIMIZER, f"{_stage_text(s.stage)} does not support optimizer {s.raw_name!r} "
                                      f"({s.basic}){mup}: deepspeed.initialize raises "
                                      f"`AssertionError: {UNTESTED}`{who}",
                  "/zero_allow_untested_optimizer" if written else "/optimizer/type", fails_in=INITIALIZE,
                  fix="true" if written else None)


def _lamb_loss_scale(s: _Setup):
    """DS503: _do_sanity_check asserts dynamic loss scaling (fp16.loss_scale == 0) for lamb,
    whether or not fp16 is enabled."""
    if s.name != "lamb" or s.fp16 is None:
        return
    scale = s.fp16.get("loss_scale", 0)
    if scale == 0:
        return
    note = "" if s.fp16.get("enabled") else " (the check reads fp16.loss_scale even though fp16 is disabled)"
    yield Finding(LAMB_LOSS_SCALE, "the lamb optimizer needs dynamic loss scaling but fp16.loss_scale is "
                                   f"{scale}{note}: deepspeed.initialize raises `AssertionError: DeepSpeed lamb "
                                   "optimizer requires dynamic loss scaling`",
                  _locate(s.config, ("fp16", "loss_scale")), fails_in=INITIALIZE, fix="0")


def _muon_reduce_scatter(s: _Setup):
    """DS504: DeepSpeedZeroOptimizer_Stage3 rejects Muon with reduce_scatter (default true)."""
    if s.name != "muon" or s.stage != 3 or not s.zero.get("reduce_scatter", True):
        return
    written = s.zero_written("reduce_scatter")
    yield Finding(MUON_REDUCE_SCATTER, "Muon with ZeRO stage 3 needs \"reduce_scatter\": false"
                                       + ("" if written else " (it defaults to true)") + ": deepspeed.initialize "
                                       "raises `ValueError: Muon and reduce scatter cannot be used together`",
                  s.zero_key("reduce_scatter"), fails_in=INITIALIZE, fix="false" if written else None)


def _muon_bf16_optimizer(s: _Setup):
    """DS510: BF16_Optimizer takes Muon only with fp32 gradient accumulation and no model-parallel unit (a
    PipelineModule brings one). The engine picks BF16_Optimizer for bf16 without ZeRO under a pipeline
    (accumulating in bf16) and for the bf16 path of ZeRO stage 1 (accumulating in fp32)."""
    if s.name != "muon" or not s.builds_optimizer or not s.pipeline:
        return
    without_zero = s.stage == 0 and s.model_dtype == "bf16" and s.grad_accum in (None, "bf16")
    if not (without_zero or s.bf16_stage1):
        return
    accumulation = "bf16 (the model dtype, without ZeRO)" if without_zero else "fp32"
    yield Finding(MUON_BF16_OPTIMIZER, f"Muon with bf16 under a pipeline ({_stage_text(s.stage)}, gradients "
                                       f"accumulated in {accumulation}): DeepSpeed wraps it in its BF16 optimizer, "
                                       "and deepspeed.initialize raises `ValueError: BF16 Muon currently requires "
                                       "FP32 accumulation, dense DP and eager execution`", "/optimizer/type",
                  fails_in=INITIALIZE)


def _partial_offload(s: _Setup):
    """ZeRO-3 partial optimizer offload (ratio < 1) keeps a GPU AdamW copy and asserts DeepSpeedCPUAdam."""
    offload = s.zero.get("offload_optimizer") if s.zero else None
    if s.stage != 3 or not s.cpu_optimizer or not isinstance(offload, dict) or not s.builds_optimizer:
        return
    ratio = offload.get("ratio", 1.0)
    if not _real(ratio) or ratio >= 1.0 or s.basic in (None, "DeepSpeedCPUAdam"):
        return
    text = (f"partial offload (offload_optimizer.ratio {ratio}) works only with DeepSpeedCPUAdam, but optimizer "
            f"{s.raw_name!r} builds {s.basic}: deepspeed.initialize raises `AssertionError: Hybrid Optimizer Only "
            "Supports DeepSpeedCPUAdam`")
    if s.basic in ("torch.Adam", "torch.AdamW"):
        yield Finding(OPTIMIZER_PARAMS, text, "/optimizer/params/torch_adam", fails_in=INITIALIZE, fix="false")
    elif s.basic == "ZenFlowCPUAdam":
        yield Finding(OPTIMIZER_NAME, text + " (ZenFlow swaps in ZenFlowCPUAdam)", s.zero_key("zenflow"),
                      fails_in=INITIALIZE)
    else:
        yield Finding(OPTIMIZER_NAME, text, "/optimizer/type", fails_in=INITIALIZE, fix='"adamw"')


# ---------------------------------------------------------------------------------------------
# Scheduler (DS505-DS507)
# ---------------------------------------------------------------------------------------------

def _scheduler(s: _Setup):
    """engine._scheduler_from_config: `scheduler(optimizer, **params)` for a lr_schedules or
    torch.optim.lr_scheduler name (case-sensitive)."""
    section = s.config.get("scheduler")
    if not isinstance(section, dict):
        return
    if "type" not in section:
        if "params" in section:
            yield Finding(SCHEDULER_ADVICE, "scheduler.params without scheduler.type: DeepSpeed builds no scheduler "
                                            "and ignores these params", "/scheduler/params")
        return
    name = section["type"]
    if name is None:
        return
    if not isinstance(name, str):
        yield Finding(SCHEDULER_NAME, f"scheduler.type must be a string, not {type(name).__name__}: "
                                      "deepspeed.initialize raises `TypeError: attribute name must be string, not "
                                      f"'{type(name).__name__}'`",
                      "/scheduler/type", fails_in=INITIALIZE)
        return
    if name not in DS_SCHEDULERS and name not in TORCH_SCHEDULERS:
        yield _unknown_scheduler(name)
        return
    if name in TORCH_SCHEDULERS and s.wrapped:
        yield Finding(SCHEDULER_NAME, f"torch scheduler {name!r} gets DeepSpeed's optimizer wrapper ({_wrapper(s)}), "
                                      "not a torch.optim.Optimizer: deepspeed.initialize raises `TypeError: "
                                      f"{_wrapper(s)} is not an Optimizer`. From the config only DeepSpeed's "
                                      "schedulers (WarmupLR, WarmupDecayLR, WarmupCosineLR, OneCycle, LRRangeTest) "
                                      "work with ZeRO or fp16/bf16; pass a torch scheduler from the script instead",
                      "/scheduler/type", fails_in=INITIALIZE)
    if "params" not in section or section["params"] is None:
        yield Finding(SCHEDULER_PARAMS, f"scheduler {name!r} has no params: DeepSpeed calls {name}(optimizer, **None) "
                                        "and deepspeed.initialize raises `TypeError: ... argument after ** must be a "
                                        "mapping, not NoneType`; write \"params\": {} at least",
                      "/scheduler/params" if "params" in section else "/scheduler/type", fails_in=INITIALIZE,
                      fix="{}" if "params" in section and not _signature(name)[0] else None)
        return
    params = section["params"]
    if not isinstance(params, dict):
        yield Finding(SCHEDULER_PARAMS, "scheduler.params must be an object: deepspeed.initialize raises `TypeError: "
                                        f"... argument after ** must be a mapping, not {type(params).__name__}`",
                      "/scheduler/params", fails_in=INITIALIZE)
        return
    yield from _scheduler_kwargs(name, params)
    if name in DS_SCHEDULERS:
        yield from _ds_scheduler_values(name, params, _has_betas(s))
    else:
        yield from _torch_scheduler_values(name, params)


def _unknown_scheduler(name: str) -> Finding:
    known = list(DS_SCHEDULERS) + [n for n in TORCH_SCHEDULERS if n not in NEEDS_PYTHON_OBJECTS]
    exact = {n.lower(): n for n in known}.get(name.lower())
    guess = exact or closest(name, known, cutoff=0.75)
    hint = f"; names are case-sensitive: write {exact!r}" if exact else (f"; did you mean {guess!r}?" if guess else "")
    return Finding(SCHEDULER_NAME, f"scheduler {name!r} is neither in deepspeed.runtime.lr_schedules "
                                   f"({', '.join(DS_SCHEDULERS)}) nor a torch.optim.lr_scheduler class: "
                                   "deepspeed.initialize raises `AssertionError: "
                                   f"DeepSpeed does not recognize LR scheduler {name}`{hint}", "/scheduler/type",
                   fails_in=INITIALIZE, fix=to_json(guess) if guess else None)


def _wrapper(s: _Setup) -> str:
    if s.stage == 3:
        return "DeepSpeedZeroOptimizer_Stage3"
    if s.stage in (1, 2):
        return "DeepSpeedZeroOptimizer" if s.zero_12_optimizer else "BF16_Optimizer"
    return "FP16_Optimizer" if s.basic == "FusedAdam" else "FP16_UnfusedOptimizer"


def _signature(name: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    return DS_SCHEDULERS.get(name) or TORCH_SCHEDULERS[name]


def _scheduler_kwargs(name: str, params: dict):
    """Unknown and missing keyword arguments (TypeError from the call)."""
    required, optional = _signature(name)
    accepted = required + optional
    for key in params:
        pointer = pointer_join("/scheduler/params", key)
        if key == "optimizer" and name != "ChainedScheduler":
            yield Finding(SCHEDULER_PARAMS, f"DeepSpeed passes the optimizer to {name} itself: deepspeed.initialize "
                                            f"raises `TypeError: {name}.__init__() got multiple values for argument "
                                            "'optimizer'`",
                          pointer, fails_in=INITIALIZE, on_key=True)
        elif key not in accepted:
            guess = closest(key, accepted, cutoff=0.75)
            yield Finding(SCHEDULER_PARAMS, f"{name} has no parameter {key!r}: deepspeed.initialize raises `TypeError: "
                                            f"{name}.__init__() got an unexpected keyword argument '{key}'`"
                                   + (f"; did you mean {guess!r}?" if guess else ""),
                          pointer, fails_in=INITIALIZE, on_key=True, fix=_key_fix(guess))
    missing = [key for key in required if key not in params]
    if missing:
        names = " and ".join(repr(k) for k in missing)
        yield Finding(SCHEDULER_PARAMS, f"{name} requires {names}: deepspeed.initialize raises `TypeError: "
                                        f"{name}.__init__() missing {len(missing)} required positional "
                                        f"argument{'s' if len(missing) > 1 else ''}: {names}`",
                      "/scheduler/params", fails_in=INITIALIZE)
    if name in NEEDS_PYTHON_OBJECTS:
        yield Finding(SCHEDULER_PARAMS, f"{name} needs Python callables or scheduler objects, which a JSON config "
                                        "cannot hold; it fails when DeepSpeed builds it. Create it in the script and "
                                        "pass lr_scheduler= to deepspeed.initialize",
                      "/scheduler/type", fails_in=INITIALIZE)


def _has_betas(s: _Setup) -> bool:
    """Whether the optimizer the scheduler sees has betas; a client optimizer is assumed Adam-like."""
    return s.basic in WITH_BETAS if s.basic else True


def _ds_scheduler_values(name: str, params: dict, has_betas: bool):
    """Replay the value checks of deepspeed.runtime.lr_schedules constructors (0.19.8)."""
    def param(key, default):
        return params.get(key, default)

    def fail(key, text):
        pointer = pointer_join("/scheduler/params", key) if key in params else "/scheduler/params"
        return Finding(SCHEDULER_PARAMS, f"{name}: deepspeed.initialize raises `{text}`", pointer, fails_in=INITIALIZE)

    if name in ("WarmupLR", "WarmupDecayLR", "WarmupCosineLR"):
        steps = param("warmup_num_steps", 1000)
        steps_ok = isinstance(steps, int) and steps > 0
        if not steps_ok and not is_auto(steps):
            fix = to_json(int(steps)) if isinstance(steps, float) and steps.is_integer() and steps > 0 else None
            finding = fail("warmup_num_steps", f"ValueError: warmup_num_steps must be a positive integer, got {steps}")
            finding.fix = fix
            yield finding
        kind = param("warmup_type", "log")
        try:
            hash(kind)  # DeepSpeed tests membership in a set
        except TypeError:
            yield fail("warmup_type", f"TypeError: unhashable type: '{type(kind).__name__}'")
        else:
            if kind not in WARMUP_TYPES:
                yield Finding(SCHEDULER_ADVICE, f"{name} does not know warmup_type {kind!r}: DeepSpeed logs \"Using "
                                                f"unknown warmup_type: {kind}. The increasing function is set to "
                                                "default (log)\"",
                              "/scheduler/params/warmup_type", fix='"linear"' if str(kind).lower() == "linear" else
                              '"log"')
        if name != "WarmupCosineLR":
            yield from _warmup_lr_bounds(params, fail)
        if name != "WarmupLR" and "total_num_steps" in params:
            total = params["total_num_steps"]
            if not _real(total):
                if not is_auto(total):
                    yield fail("total_num_steps", f"TypeError: '<' not supported between instances of "
                                                  f"'{type(total).__name__}' and 'int'")
            elif steps_ok and total < max(2, steps):
                yield Finding(SCHEDULER_ADVICE, f"{name}: total_num_steps {total} is less than warmup_num_steps "
                                                f"{steps}; DeepSpeed warns and the schedule never finishes its warmup",
                              "/scheduler/params/total_num_steps")
    elif name == "OneCycle":
        yield from _one_cycle(params, has_betas, fail)
    elif name == "LRRangeTest":
        size = param("lr_range_test_step_size", 2000)
        if not (isinstance(size, int) and size > 0) and not is_auto(size):
            yield fail("lr_range_test_step_size",
                       f"ValueError: lr_range_test_step_size must be a positive integer, got {size}")


def _warmup_lr_bounds(params: dict, fail):
    """WarmupLR computes max_lr - min_lr per param group in its constructor."""
    low = params.get("warmup_min_lr", 0.0)
    high = params.get("warmup_max_lr")  # None: the optimizer's lr
    for key, value, may_be_none in (("warmup_min_lr", low, False), ("warmup_max_lr", high, True)):
        if is_auto(value) or isinstance(value, (list, tuple)) or (value is None and may_be_none):
            continue
        if not _real(value):
            yield fail(key, f"TypeError: unsupported operand type(s) for -: {_operands(key, low, high)}")


def _operands(key, low, high) -> str:
    big = "float" if high is None else type(high).__name__
    return f"'{big}' and '{type(low).__name__}'"


def _one_cycle(params: dict, has_betas: bool, fail):
    """OneCycle._initialize_cycle / _initialize_lr / _initialize_momentum."""
    sizes = {}
    for key, default in (("cycle_first_step_size", 2000), ("cycle_second_step_size", None)):
        value = params.get(key, default)
        if value is None and key == "cycle_second_step_size" or is_auto(value):
            continue
        try:
            sizes[key] = float(value)
        except (TypeError, ValueError) as error:
            yield fail(key, f"{type(error).__name__}: {error}")
    first = sizes.get("cycle_first_step_size")
    if first is not None and first <= 0:
        yield fail("cycle_first_step_size", f"ValueError: cycle_first_step_size must be positive, got {first}")
    second = sizes.get("cycle_second_step_size")
    if second is not None and second < 0:
        yield fail("cycle_second_step_size", f"ValueError: cycle_second_step_size must be non-negative, got {second}")
    checked = ["decay_step_size", "decay_lr_rate"]
    if params.get("cycle_momentum", True) and has_betas:
        checked.append("decay_mom_rate")
    for key in checked:
        value = params.get(key, 0)
        if not _real(value) and not is_auto(value):
            yield fail(key, f"TypeError: must be real number, not {type(value).__name__}")


def _torch_scheduler_values(name: str, params: dict):
    if name == "OneCycleLR" and params.get("total_steps") is None and (
            params.get("epochs") is None or params.get("steps_per_epoch") is None):
        yield Finding(SCHEDULER_PARAMS, "OneCycleLR needs total_steps, or epochs and steps_per_epoch: "
                                        "deepspeed.initialize raises `ValueError: You must define either total_steps "
                                        "OR (epochs AND steps_per_epoch)`", "/scheduler/params", fails_in=INITIALIZE)
    if name == "ReduceLROnPlateau":
        yield Finding(SCHEDULER_ADVICE, "ReduceLROnPlateau needs the validation metric in step(); DeepSpeed's engine "
                                        "calls step() without one, catches the TypeError and calls "
                                        "step(train_batch_size), so the \"metric\" never improves and the learning "
                                        "rate drops every `patience` steps",
                      "/scheduler/type")


# ---------------------------------------------------------------------------------------------
# ZeRO (DS303-DS311)
# ---------------------------------------------------------------------------------------------

def _nvme_path(s: _Setup):
    """DS303: stage 3 swaps to nvme_path; None fails (stages 1/2 treat nvme as cpu and never read it)."""
    if s.stage != 3:
        return
    for key, device, text in (
            ("offload_optimizer", s.opt_device,
             "`TypeError: expected str, bytes or os.PathLike object, not NoneType` (os.path.join(nvme_path, "
             "'zero_stage_3') in the ZeRO-3 optimizer)"),
            ("offload_param", s.param_device,
             "`AssertionError: \"nvme_path\" in DeepSpeed Config cannot be None if remote device is "
             "OffloadDeviceEnum.nvme`")):
        offload = s.zero.get(key)
        if device == "nvme" and isinstance(offload, dict) and offload.get("nvme_path") is None:
            pointer = s.zero_key((key, "nvme_path"), (key, "device"), key)
            yield Finding(NVME_PATH_MISSING, f"{key}.device is \"nvme\" without {key}.nvme_path: deepspeed.initialize "
                                             f"raises {text}; set nvme_path to a directory on a local NVMe drive",
                          pointer, fails_in=INITIALIZE)


def _compute_grad_norm(s: _Setup):
    """DS305: DeepSpeedZeroOptimizer's compute_grad_norm=false preconditions (stage_1_and_2.py)."""
    if not s.zero or s.zero.get("compute_grad_norm", True) or s.stage not in (1, 2):
        return
    here = s.zero_key("compute_grad_norm")
    if s.bf16_stage1:
        yield Finding(COMPUTE_GRAD_NORM, "compute_grad_norm=false with bf16 parameters and fp32 gradient accumulation "
                                         "at ZeRO stage 1 (DeepSpeed's BF16_Optimizer path): deepspeed.initialize "
                                         "raises `ValueError: zero_optimization.compute_grad_norm=false does not "
                                         "support ZeRO Stage 1 with BF16 parameters and FP32 gradient accumulation`",
                      here, fails_in=INITIALIZE, fix="true")
        return
    if not s.zero_12_optimizer:
        return
    clip = _clipping(s)
    if _real(clip) and clip > 0.0:
        written = "gradient_clipping" in s.config
        why = f"gradient_clipping is {clip}" if written else (
            "gradient_clipping is not set and defaults to 1.0 since DeepSpeed 0.19.3")
        yield Finding(COMPUTE_GRAD_NORM, f"compute_grad_norm=false needs \"gradient_clipping\": 0 ({why}): "
                                         "deepspeed.initialize raises `ValueError: "
                                         "zero_optimization.compute_grad_norm=false requires gradient_clipping=0`",
                      "/gradient_clipping" if written else here,
                      fails_in=INITIALIZE, fix="0" if written else None)
    if s.zenflow:
        yield Finding(COMPUTE_GRAD_NORM, "compute_grad_norm=false with ZenFlow: deepspeed.initialize raises "
                                         "`ValueError: zero_optimization.compute_grad_norm=false does not support "
                                         "ZenFlow`", here,
                      fails_in=INITIALIZE, fix="true")
    if s.opt_device not in ("none", None):
        yield Finding(COMPUTE_GRAD_NORM, "compute_grad_norm=false with optimizer offload: deepspeed.initialize raises "
                                         "`ValueError: zero_optimization.compute_grad_norm=false does not support "
                                         "optimizer offload`", here, fails_in=INITIALIZE, fix="true")


def _clipping(s: _Setup):
    """gradient_clipping as the engine gets it (Lightning writes gradient_clip_val or 0 when absent)."""
    if "gradient_clipping" in s.config:
        value = s.config["gradient_clipping"]
        return None if is_auto(value) else value
    return 0.0 if s.target is LIGHTNING else 1.0


def _allgather_bucket(s: _Setup):
    """DS306: DeepSpeedZeroOptimizer asserts an even allgather_bucket_size (4-byte NCCL alignment)."""
    size = s.zero.get("allgather_bucket_size") if s.zero else None
    if not s.zero_12_optimizer or not isinstance(size, int) or size % 2 == 0:
        return
    pointer = s.zero_key("allgather_bucket_size") if s.raw_zero else _locate(s.config, ("allgather_size",))
    yield Finding(ALLGATHER_BUCKET_ODD, f"allgather_bucket_size {size} is odd: deepspeed.initialize raises "
                                        "`AssertionError: allgather_bucket_size must be a multiple of "
                                        "nccl_start_alignment_factor, 2`",
                  pointer, fails_in=INITIALIZE, fix=str(size + 1))


def _legacy_stage1(s: _Setup):
    """DS307: engine._configure_zero_optimizer refuses legacy_stage1 for every ZeRO optimizer."""
    if not s.zero or not s.zero.get("legacy_stage1") or not s.zero_optimizer:
        return
    yield Finding(LEGACY_STAGE1, "legacy_stage1 is true: deepspeed.initialize raises `Exception: The deprecated "
                                 "version of ZeRO Stage 1 is not supported in deepspeed >= 0.5.9. ...`",
                  s.zero_key("legacy_stage1"),
                  fails_in=INITIALIZE, fix="false")


def _pipeline(s: _Setup):
    """DS309/DS606: PipelineEngine's asserts (runtime/pipe/engine.py), under the pipeline assumption."""
    if not s.pipeline:
        return
    assumption = "the config has a \"pipeline\" section, so the model is taken to be a PipelineModule"
    if s.stage is not None and s.stage >= 2:
        yield Finding(PIPELINE_ZERO, f"{assumption}, and pipeline parallelism works with ZeRO stage 0 or 1 only: "
                                     "deepspeed.initialize raises `AssertionError: ZeRO-2 and ZeRO-3 are incompatible "
                                     "with pipeline parallelism`", s.zero_key("stage"), fails_in=INITIALIZE, fix="1")
    section = s.config["pipeline"]
    for key in ("pipe_partitioned", "grad_partitioned"):
        if key in section and not isinstance(section[key], bool):
            value = section[key]
            fix = {"true": "true", "false": "false"}.get(str(value).strip().lower())
            yield Finding(PIPELINE_FLAGS, f"pipeline.{key} is {value!r}, not a JSON boolean: PipelineEngine asserts "
                                          f"isinstance(..., bool) (a bare `AssertionError`). This matters only for "
                                          "PipelineModule models", f"/pipeline/{key}", fails_in=INITIALIZE, fix=fix)


def _managed_grad_accum(s: _Setup):
    """DS310: engine._do_sanity_check on managed_gradient_accumulation=false."""
    if "managed_gradient_accumulation" not in s.config or s.config["managed_gradient_accumulation"]:
        return
    pointer = "/managed_gradient_accumulation"
    if s.stage is not None and s.stage < 2 and s.zero.get("overlap_comm"):
        yield Finding(MANAGED_GRADIENT_ACCUMULATION, "managed_gradient_accumulation=false with overlap_comm at ZeRO "
                                                     f"stage {s.stage}: deepspeed.initialize raises `AssertionError: "
                                                     "managed_gradient_accumulation=False supports ZeRO overlap_comm "
                                                     "only with ZeRO stage 2`", pointer, fails_in=INITIALIZE)
    if s.pipeline:
        yield Finding(MANAGED_GRADIENT_ACCUMULATION, "managed_gradient_accumulation=false with pipeline parallelism "
                                                     "(the config has a \"pipeline\" section, so the model is taken "
                                                     "to be a PipelineModule): deepspeed.initialize raises "
                                                     "`AssertionError: managed_gradient_accumulation=False is not "
                                                     "supported with pipeline parallelism`",
                      pointer, fails_in=INITIALIZE)
    if s.compile and s.compile.get("deepcompile"):
        yield Finding(MANAGED_GRADIENT_ACCUMULATION, "managed_gradient_accumulation=false with compile.deepcompile: "
                                                     "deepspeed.initialize raises `AssertionError: "
                                                     "managed_gradient_accumulation=False is not supported with "
                                                     "DeepCompile`", pointer, fails_in=INITIALIZE)


def _reduce_scatter_scaling(s: _Setup):
    """DS311: ZeRO-2 (with gradient averaging) and ZeRO-3 reduce-scatter need plain averaging."""
    if not s.zero or not s.zero.get("reduce_scatter", True):
        return
    if s.stage == 2 and s.zero_12_optimizer:
        if str(s.config.get("gradient_allreduce_op", "mean")).lower() != "mean":
            return  # gradient_average is False with "sum": ZeRO-2 skips the check
        label = "ZeRO-2"
    elif s.stage == 3:
        label = "ZeRO-3"
    else:
        return
    factor = s.config.get("gradient_predivide_factor", 1.0)
    if not is_auto(factor) and not factor == 1.0:
        yield Finding(REDUCE_SCATTER_SCALING, f"gradient_predivide_factor {factor!r} with {label} reduce_scatter: "
                                              "deepspeed.initialize raises `AssertionError: gradient_predivide_factor "
                                              f"!= 1.0 is not yet supported with {label} with reduce scatter enabled`",
                      "/gradient_predivide_factor", fails_in=INITIALIZE, fix="1.0")
    if s.config.get("prescale_gradients", False) and not is_auto(s.config.get("prescale_gradients")):
        yield Finding(REDUCE_SCATTER_SCALING, f"prescale_gradients with {label} reduce_scatter: deepspeed.initialize "
                                              "raises `AssertionError: pre-scale gradients is not yet supported with "
                                              f"{label} with reduce scatter enabled`",
                      "/prescale_gradients", fails_in=INITIALIZE, fix="false")


# ---------------------------------------------------------------------------------------------
# Precision (DS404, DS408, DS409)
# ---------------------------------------------------------------------------------------------

def _master_weights(s: _Setup):
    """DS404: ZeROOptimizer._configure_master_weights (base_optimizer.py) and its offload validators."""
    if s.fp16 is None or s.bf16 is None or not s.zero_optimizer:
        return
    fp16_mw = bool(s.fp16.get("fp16_master_weights_and_grads"))
    bf16_mw = bool(s.bf16.get("bf16_master_weights_and_grads"))
    states = bool(s.bf16.get("bf16_optimizer_states"))
    fp16_at = _locate(s.config, ("fp16", "fp16_master_weights_and_grads"))
    bf16_at = _locate(s.config, (s.bf16_key, "bf16_master_weights_and_grads"))
    if fp16_mw and bf16_mw:
        yield Finding(MASTER_WEIGHTS_OFFLOAD, "fp16 and bf16 master weights are both enabled: deepspeed.initialize "
                                              "raises `AssertionError: fp16_master_weights_and_gradients and "
                                              "bf16_master_weights_and_gradients are mutually exclusive.`", fp16_at,
                      fails_in=INITIALIZE, fix="false")
    offload = s.opt_device not in ("none", None)
    label = "ZeRO-3" if s.stage == 3 else f"ZeRO-{s.stage}"
    for enabled, pointer, needs in ((fp16_mw, fp16_at, True), (bf16_mw, bf16_at, not states or offload)):
        if not enabled or not needs:
            continue
        problem = _master_weights_optimizer(s, offload)
        if problem:
            yield Finding(MASTER_WEIGHTS_OFFLOAD, f"low-precision master weights need {label} optimizer offload with "
                                                  f"DeepSpeedCPUAdam, but {problem}: deepspeed.initialize raises "
                                                  f"`AssertionError: Master weights feature requires {label} Offload "
                                                  "with DeepSpeedCPUAdam. ...`",
                          pointer, fails_in=INITIALIZE)
    if bf16_mw and states and offload and _cpu_adam_keeps_fp32_states(s):
        yield Finding(MASTER_WEIGHTS_OFFLOAD, "bf16_optimizer_states with optimizer offload needs DeepSpeedCPUAdam "
                                              "built with fp32_optimizer_states=False, but the CPU Adam that "
                                              "prepare() swaps in for your torch optimizer keeps fp32 states: "
                                              "deepspeed.initialize raises `AssertionError: bf16_optimizer_states "
                                              "with ZeRO-Offload requires DeepSpeedCPUAdam constructed with "
                                              "fp32_optimizer_states=False ...`",
                      _locate(s.config, (s.bf16_key, "bf16_optimizer_states")), fails_in=INITIALIZE)


def _master_weights_optimizer(s: _Setup, offload: bool) -> str | None:
    """Why the master-weights validator fails, or None when it passes (or we cannot know)."""
    if not offload:
        return "offload_optimizer.device is not cpu/nvme"
    if s.builds_optimizer:
        if s.basic is None or s.basic == "DeepSpeedCPUAdam":
            return None
        return f"optimizer {s.raw_name!r} builds {s.basic}"
    if s.target.fills_auto:
        if s.config.get("zero_force_ds_cpu_optimizer", True) and _accelerate_swaps(s):
            return None  # prepare() swaps in DeepSpeedCPUAdam
        return "the script's torch optimizer reaches DeepSpeed unchanged"
    # The script's own optimizer: assumed a torch optimizer, as for DS308.
    return "the optimizer the script passes is taken to be a torch optimizer (DeepSpeedCPUAdam would pass)"


def _cpu_adam_keeps_fp32_states(s: _Setup) -> bool:
    """prepare()'s map_pytorch_optim_to_deepspeed builds DeepSpeedCPUAdam with the default fp32 states."""
    return (not s.builds_optimizer and s.target.fills_auto
            and bool(s.config.get("zero_force_ds_cpu_optimizer", True)) and _accelerate_swaps(s))


def _data_types(s: _Setup):
    """DS408: data_types dtypes resolved through DtypeEnum at initialize (engine.py)."""
    types = s.config.get("data_types")
    if not isinstance(types, dict):
        return
    for key in ("param_dtype", "grad_accum_dtype", "buffer_dtype"):
        value = types.get(key)
        if value is None or is_auto(value) or (isinstance(value, str) and value in DTYPES):
            continue
        if key == "buffer_dtype" and s.model_dtype == "fp32":
            continue  # only read when fp16/bf16 casts the module
        guess = DTYPES.get(value.lower()) if isinstance(value, str) else None
        yield Finding(DTYPE_MISMATCH, f"data_types.{key} {value!r} is not a DeepSpeed dtype "
                                      f"({', '.join(sorted(DTYPES))}): deepspeed.initialize raises `ValueError: "
                                      f"{value!r} is not a valid DtypeEnum`",
                      f"/data_types/{key}", fails_in=INITIALIZE, fix=to_json(guess) if guess else None)
    if s.model_dtype is None:
        return
    param = _data_type(s.config, "param_dtype")
    if param not in (None, "invalid") and param != s.model_dtype:
        yield Finding(DTYPE_MISMATCH, f"data_types.param_dtype {types['param_dtype']!r} but the precision mode is "
                                      f"{s.model_dtype}: deepspeed.initialize raises `AssertionError: "
                                      f"data_types.param_dtype='{types['param_dtype']}' conflicts with the enabled "
                                      f"precision mode (model dtype {TORCH_DTYPE[s.model_dtype]}). ...`",
                      "/data_types/param_dtype",
                      fails_in=INITIALIZE, fix=to_json(s.model_dtype))
    if s.stage == 0 and s.grad_accum not in (None, "invalid") and s.grad_accum != s.model_dtype:
        yield Finding(DTYPE_MISMATCH, f"without ZeRO the gradients accumulate in the model dtype ({s.model_dtype}), "
                                      f"not {s.grad_accum}: deepspeed.initialize raises `NotImplementedError: "
                                      f"unsupported mix of model_dtype={TORCH_DTYPE[s.model_dtype]} and "
                                      f"grad_accum_dtype={TORCH_DTYPE[s.grad_accum]}`", "/data_types/grad_accum_dtype",
                      fails_in=INITIALIZE, fix=to_json(s.model_dtype))


def _autocast_quantized(s: _Setup):
    """DS409: torch_autocast._validate_auto_cast_settings."""
    autocast = s.config.get("torch_autocast")
    if not isinstance(autocast, dict) or not autocast.get("enabled", False) or not s.zero:
        return
    if s.zero.get("zero_quantized_weights"):
        yield Finding(TORCH_AUTOCAST, "torch_autocast with zero_quantized_weights: deepspeed.initialize raises "
                                      "`AssertionError: Cannot enable both torch autocast and zero quantized weights`",
                      s.zero_key("zero_quantized_weights"), fails_in=INITIALIZE, fix="false")


# ---------------------------------------------------------------------------------------------
# Other sections (DS600, DS604)
# ---------------------------------------------------------------------------------------------

def _activation_checkpointing(s: _Setup):
    """DS600: deepspeed.checkpointing.configure's asserts. Lightning calls it from the config;
    plain-DeepSpeed scripts (Megatron) call it themselves; the Trainer and Accelerate never do."""
    section = s.config.get("activation_checkpointing")
    if not isinstance(section, dict) or s.target.fills_auto:
        return
    if not section.get("contiguous_memory_optimization"):
        return
    who = ("Lightning calls deepspeed.checkpointing.configure from this section" if s.target is LIGHTNING
           else "when the script calls deepspeed.checkpointing.configure")
    pointer = "/activation_checkpointing/contiguous_memory_optimization"
    if not section.get("partition_activations"):
        yield Finding(ACTIVATION_CHECKPOINTING, f"contiguous_memory_optimization needs partition_activations ({who}): "
                                                "it raises `AssertionError: Contiguous Checkpointing is only "
                                                "available with partitioned activations. Set partitioned activations "
                                                "to true in deepspeed config`",
                      pointer, fails_in=INITIALIZE, fix="false")
    # Megatron-style scripts pass num_checkpoints themselves; Lightning never does, and its call
    # ignores number_checkpoints.
    if s.target is LIGHTNING:
        yield Finding(ACTIVATION_CHECKPOINTING, "contiguous_memory_optimization under Lightning always fails: "
                                                "Lightning's deepspeed.checkpointing.configure call never passes the "
                                                "number of layers, so it raises `AssertionError: Must specify the "
                                                "number of layers with contiguous memory checkpointing`",
                      pointer, fails_in=INITIALIZE, fix="false")


def _tensor_parallel(s: _Setup):
    """DS604: engine._apply_autotp_partitioning runs when autotp_size > 1."""
    tp = s.tensor_parallel
    if not tp:
        return
    autotp, inner = tp.get("autotp_size", 0), tp.get("tensor_parallel")
    size = inner.get("tp_size", 1) if isinstance(inner, dict) else 1
    if not isinstance(autotp, int) or autotp <= 1 or size in (1, autotp):
        return
    pointer = _locate(s.config, ("tensor_parallel", "tp", "tp_size"), ("tensor_parallel", "tensor_parallel", "tp_size"))
    yield Finding(TENSOR_PARALLEL, f"tensor_parallel.tp.tp_size {size} differs from tensor_parallel.autotp_size "
                                   f"{autotp}: deepspeed.initialize raises `ValueError: tensor_parallel.tp.tp_size "
                                   f"({size}) does not match tensor_parallel.autotp_size ({autotp}).`",
                  pointer, fails_in=INITIALIZE,
                  fix=str(autotp))


# ---------------------------------------------------------------------------------------------
# Silent traps (DS301, DS304, DS308, DS509)
# ---------------------------------------------------------------------------------------------

def _offload_ignored(s: _Setup):
    """DS301: offload settings this stage ignores or changes."""
    if s.stage is None:
        return
    if s.param_device not in ("none", None) and s.stage < 3:
        yield Finding(OFFLOAD_IGNORED, f"offload_param only works at ZeRO stage 3; at stage {s.stage} DeepSpeed "
                                       "ignores it and the parameters stay on the GPU",
                      s.zero_key(("offload_param", "device"), "cpu_offload_param", "offload_param"))
    device_at = s.zero_key(("offload_optimizer", "device"), "cpu_offload", "offload_optimizer")
    if s.cpu_optimizer and s.stage == 0:
        yield Finding(OFFLOAD_IGNORED, "optimizer offload at ZeRO stage 0: nothing is offloaded, yet DeepSpeed still "
                                       "builds its CPU optimizer (DeepSpeedCPUAdam/Adagrad/Lion) for a config "
                                       "optimizer (and prepare() swaps one in for a torch optimizer); the parameters "
                                       "stay on the GPU, so the first step fails with \"CPUAdam param is on cuda:0 "
                                       "and must be 'cpu'\". Use stage 1-3 or remove offload_optimizer", device_at)
    if s.opt_device == "nvme" and s.stage in (1, 2):
        yield Finding(OFFLOAD_IGNORED, f"offload_optimizer.device \"nvme\" at ZeRO stage {s.stage}: stages 1 and 2 "
                                       "cannot swap to NVMe and silently offload to CPU memory instead (nvme_path is "
                                       "ignored); NVMe offload needs stage 3", device_at, fix='"cpu"')
    offload = s.zero.get("offload_optimizer")
    if isinstance(offload, dict) and offload.get("super_offload") and s.stage < 3:
        yield Finding(OFFLOAD_IGNORED, f"super_offload only works at ZeRO stage 3; at stage {s.stage} DeepSpeed "
                                       "ignores it",
                      s.zero_key(("offload_optimizer", "super_offload")), fix="false")


def _stage_keys(s: _Setup):
    """DS304: zero_optimization keys the user wrote that the chosen stage never reads."""
    if s.stage is None or not s.raw_zero:
        return
    for key, value in s.raw_zero.items():
        if is_auto(value):
            continue  # "auto" values are the target module's business
        if key in STAGE3_ONLY and s.stage < 3:
            yield Finding(STAGE_MISMATCHED_KEYS, f"zero_optimization.{key} is read only by ZeRO stage 3; at stage "
                                                 f"{s.stage} DeepSpeed ignores it", s.zero_key(key), on_key=True)
        elif key in STAGE12_ONLY and s.stage not in (1, 2) and value:
            yield Finding(STAGE_MISMATCHED_KEYS, f"zero_optimization.{key} is read only by ZeRO stages 1 and 2; at "
                                                 f"stage {s.stage} DeepSpeed ignores it", s.zero_key(key), on_key=True)


def _accelerate_swaps(s: _Setup) -> bool:
    """prepare() swaps a torch optimizer for DeepSpeed's CPU one when the raw offload_optimizer.device
    is not "none" (it reads the dict, not DeepSpeed's resolved value)."""
    offload = s.raw_zero.get("offload_optimizer", {})
    device = offload.get("device", "none") if isinstance(offload, dict) else None
    return device not in ("none", None) and not is_auto(device)


def _client_optimizer_offload(s: _Setup):
    """DS308: optimizer offload with an optimizer that does not come from the config."""
    if not s.client_optimizer or not s.cpu_optimizer or not s.config.get("zero_force_ds_cpu_optimizer", True):
        return
    written = "zero_force_ds_cpu_optimizer" in s.config
    pointer = "/zero_force_ds_cpu_optimizer" if written else s.zero_key(("offload_optimizer", "device"), "cpu_offload")
    fix = "false" if written else None
    if s.target.fills_auto and _accelerate_swaps(s):
        # accelerate's map_pytorch_optim_to_deepspeed builds the CPU optimizer from the torch optimizer's param
        # groups (lr, betas, eps, weight_decay carry over): the Trainer's AdamW becomes CPU AdamW, nothing lost
        if s.target is HF_TRAINER:
            return
        yield Finding(OFFLOAD_CLIENT_OPTIMIZER, "with optimizer offload and no optimizer block, prepare() replaces "
                                                "your torch optimizer with DeepSpeedCPUAdam (DeepSpeedCPUAdagrad for "
                                                "Adagrad): AdamW stays AdamW, but a torch Adam becomes CPU Adam with "
                                                "L2 decay and any other class (SGD, RMSprop) becomes Adam; the param "
                                                "groups' lr, betas, eps and weight_decay carry over. Set "
                                                "\"zero_force_ds_cpu_optimizer\": false to keep your optimizer, or "
                                                "declare it in the config",
                      pointer, fix=fix)
        return
    if s.target.fills_auto:
        who = "the Trainer's torch optimizer" if s.target is HF_TRAINER else "your torch optimizer"
        why = ("prepare() looks only at zero_optimization.offload_optimizer.device and misses the deprecated "
               "cpu_offload, so it passes " + who + " through unchanged")
    else:
        who = ("the optimizer from configure_optimizers" if s.target is LIGHTNING
               else "the optimizer your script passes to deepspeed.initialize")
        why = f"the config has no optimizer block, so DeepSpeed offloads {who}"
    yield Finding(OFFLOAD_CLIENT_OPTIMIZER, f"{why}; unless it is DeepSpeedCPUAdam or DeepSpeedCPULion, "
                                            f"deepspeed.initialize raises `{ZERO_OFFLOAD_CLIENT}`. Set "
                                            "\"zero_force_ds_cpu_optimizer\": false, or use DeepSpeedCPUAdam",
                  pointer, fails_in=INITIALIZE, fix=fix)


def _gradient_clipping_default(s: _Setup):
    """DS509: what an absent gradient_clipping means changed between releases (0.0, then 1.0 from 0.19.3;
    generated facts); Lightning fills it itself."""
    if "gradient_clipping" in s.config or s.target is LIGHTNING:
        return
    default = schema.facts()["gradient_clipping_default"]
    clipping = releases.having("gradient_clipping_default", 1.0)
    others = f"DeepSpeed {releases.spans(clipping)} clip at 1.0" if not default \
        else f"DeepSpeed {releases.spans(releases.having('gradient_clipping_default', 0.0))} do not clip"
    what = f"clips the gradient norm at {float(default)}" if default else "does not clip the gradient norm"
    yield Finding(GRADIENT_CLIPPING_DEFAULT, f"gradient_clipping is not set: DeepSpeed {schema.active()} {what} "
                                             f"({others}); write the value you want", "")



CHECKS = (
    _optimizer_name, _optimizer_params, _untested_optimizer, _lamb_loss_scale, _muon_reduce_scatter,
    _muon_bf16_optimizer, _partial_offload, _scheduler,
    _nvme_path, _compute_grad_norm, _allgather_bucket, _legacy_stage1, _pipeline, _managed_grad_accum,
    _reduce_scatter_scaling,
    _master_weights, _data_types, _autocast_quantized,
    _activation_checkpointing, _tensor_parallel,
    _offload_ignored, _stage_keys, _client_optimizer_offload, _gradient_clipping_default,
)
