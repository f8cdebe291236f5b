"""DS4xx precision and dtypes: fp16 / bf16 blocks, master weights, communication and data types.

Checked by dsconfig.deepspeed.models, dsconfig.deepspeed.loose and dsconfig.deepspeed.initialize.
"""

from __future__ import annotations

from ..phases import INITIALIZE, PARSE, SILENT
from .rule import ERROR, SAFE, UNSAFE, WARNING, Autofix, Rule, ds

FP16_AND_BF16 = Rule(
    "DS400", "fp16-and-bf16", ERROR,
    summary="fp16 and bf16 are both enabled",
    what="Reports `fp16.enabled` and `bf16.enabled` (or the legacy `bfloat16`) both true.",
    why="`DeepSpeedConfig` fails: `AssertionError: bfloat16 and fp16 modes cannot be simultaneously enabled`.",
    fails_in=(PARSE,),
    failing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "fp16": {"enabled": true},
          "bf16": {"enabled": true}
        }
        """),
    passing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "bf16": {"enabled": true}
        }
        """),
    fix="Enable one of them: bf16 on Ampere and newer GPUs, fp16 on older ones.",
)

BFLOAT16_KEY = Rule(
    "DS401", "bfloat16-key", WARNING,
    summary="The legacy `bfloat16` key; write `bf16`",
    what="Reports the legacy `bfloat16` block instead of `bf16`.",
    why="""DeepSpeed still reads it, but only when there is no `bf16` key (DS402), and the HF Trainer and
    Accelerate look for `bf16` only: they neither fill an `"auto"` in `bfloat16` nor see that bf16 is enabled when
    they compare the config with TrainingArguments.""",
    fails_in=(SILENT,),
    failing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "bfloat16": {"enabled": true}
        }
        """),
    passing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "bf16": {"enabled": true}
        }
        """),
    fix="Rename the key to `bf16`.",
    autofix=Autofix(
        SAFE,
        "`bfloat16` is renamed `bf16`: DeepSpeed reads the two keys identically (dsconfig reports DS402 instead "
        "when both are present), and the HF Trainer and Accelerate, which only know `bf16`, now see the setting "
        "DeepSpeed already applies.",
    ),
)

BFLOAT16_SHADOWED = Rule(
    "DS402", "bfloat16-shadowed", WARNING,
    summary="Both `bf16` and `bfloat16` are present; `bfloat16` is ignored",
    what="Reports a config that has both `bf16` and `bfloat16`.",
    why="""DeepSpeed reads `bf16` and ignores `bfloat16` entirely, whatever it says; if the two disagree, the one
    you edited may be the ignored one.""",
    fails_in=(SILENT,),
    failing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "bf16": {"enabled": false},
          "bfloat16": {"enabled": true}
        }
        """),
    passing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "bf16": {"enabled": true}
        }
        """),
    fix="Keep `bf16` only.",
)

MASTER_WEIGHTS_STAGE = Rule(
    "DS403", "master-weights-stage", ERROR,
    summary="Low-precision master weights or optimizer states need ZeRO 1-3",
    what="""Reports `fp16_master_weights_and_grads`, `bf16_master_weights_and_grads` or `bf16_optimizer_states`
    without ZeRO (stage 0), or `bf16_optimizer_states` without `bf16_master_weights_and_grads`.""",
    why="""`DeepSpeedConfig` fails: "Bf16_master_weights_and_grads is only supported with ZeRO Stage 1, 2, or 3."
    (AssertionError), or "bf16_optimizer_states requires bf16_master_weights_and_grads to be enabled.".""",
    fails_in=(PARSE,),
    failing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "AdamW", "params": {"lr": 0.0001}},
          "bf16": {"enabled": true, "bf16_master_weights_and_grads": true}
        }
        """),
    passing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "AdamW", "params": {"lr": 0.0001}},
          "bf16": {"enabled": true, "bf16_master_weights_and_grads": true},
          "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}
        }
        """),
    fix="Use ZeRO stage 1-3 (with CPU optimizer offload, DS404), or remove the master-weights keys.",
)

MASTER_WEIGHTS_OFFLOAD = Rule(
    "DS404", "master-weights-offload", ERROR,
    summary="Low-precision master weights need CPU optimizer offload",
    what="""Reports low-precision master weights (`fp16_master_weights_and_grads`,
    `bf16_master_weights_and_grads`) without optimizer offload to CPU with DeepSpeedCPUAdam, or both kinds
    together.""",
    why="""`deepspeed.initialize` fails in the ZeRO optimizer: "Master weights feature requires ZeRO-2 Offload
    with DeepSpeedCPUAdam" (ZeRO-3: "... ZeRO-3 Offload ..."). The only exception is bf16 master weights with
    `bf16_optimizer_states` and no offload.""",
    fails_in=(INITIALIZE,),
    failing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "AdamW", "params": {"lr": 0.0001}},
          "bf16": {"enabled": true, "bf16_master_weights_and_grads": true},
          "zero_optimization": {"stage": 2}
        }
        """),
    passing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "AdamW", "params": {"lr": 0.0001}},
          "bf16": {"enabled": true, "bf16_master_weights_and_grads": true},
          "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}
        }
        """),
    fix="""Offload the optimizer to the CPU with a config Adam/AdamW (DeepSpeed builds DeepSpeedCPUAdam), add
    `bf16_optimizer_states`, or remove the master-weights key.""",
    autofix=Autofix(
        UNSAFE,
        "Changes the precision of the master weights.",
    ),
)

LOSS_SCALE_WINDOW = Rule(
    "DS405", "loss-scale-window", ERROR,
    summary="Dynamic fp16 loss scaling needs positive window and minimum scale",
    what="""Reports fp16 with dynamic loss scaling (`loss_scale` 0, the default) and a `loss_scale_window` or
    `min_loss_scale` that is not positive.""",
    why="""`DeepSpeedConfig` fails with a pydantic `ValidationError`: "fp16.loss_scale_window must be > 0 when
    dynamic loss scaling is enabled (loss_scale=0)".""",
    fails_in=(PARSE,),
    failing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "fp16": {"enabled": true, "loss_scale": 0, "loss_scale_window": 0}
        }
        """),
    passing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "fp16": {"enabled": true, "loss_scale": 0, "loss_scale_window": 1000}
        }
        """),
    fix="Use positive values (DeepSpeed's defaults are 1000 and 1), or a static `loss_scale` above 0.",
)

COMMUNICATION_DTYPE = Rule(
    "DS406", "communication-dtype", ERROR,
    summary="communication_data_type must be fp16, bf16 or fp32",
    what="Reports `communication_data_type` or `seq_parallel_communication_data_type` not fp16, bf16 or fp32.",
    why="""`DeepSpeedConfig` lower-cases the value and fails with `ValueError: Invalid communication_data_type.
    Supported data types: ['fp16', 'bf16', 'fp32']. Got: float16`.""",
    fails_in=(PARSE,),
    failing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "communication_data_type": "float16"
        }
        """),
    passing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "communication_data_type": "fp16"
        }
        """),
    fix="Write `fp16`, `bf16` or `fp32`.",
    autofix=Autofix(
        UNSAFE,
        "Changes the communication dtype (or guesses one).",
    ),
)

GRADIENT_ALLREDUCE_OP = Rule(
    "DS407", "gradient-allreduce-op", ERROR,
    summary="gradient_allreduce_op must be mean or sum (sum not with ZeRO-3)",
    what="Reports `gradient_allreduce_op` other than `mean` or `sum`, or `sum` with ZeRO-3, ZenFlow or DeepCompile.",
    why="""`DeepSpeedConfig` fails with `ValueError: Invalid gradient_allreduce_op. Supported operations: ['mean',
    'sum']`, or "gradient_allreduce_op='sum' is not supported with ZeRO stage 3".""",
    fails_in=(PARSE,),
    failing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "gradient_allreduce_op": "avg"
        }
        """),
    passing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "gradient_allreduce_op": "mean"
        }
        """),
    fix="Write `mean` (the default) or `sum`; with ZeRO-3 only `mean`.",
    autofix=Autofix(
        UNSAFE,
        "Changes the gradient all-reduce operation.",
    ),
)

DTYPE_MISMATCH = Rule(
    "DS408", "dtype-mismatch", ERROR,
    summary="data_types disagree with the precision mode",
    what="""Reports `data_types` that contradict the precision mode: a `param_dtype` other than the fp16/bf16/fp32
    mode, a `grad_accum_dtype` other than the model dtype without ZeRO, or an invalid dtype name.""",
    why="""`deepspeed.initialize` fails: "data_types.param_dtype='fp16' conflicts with the enabled precision mode
    (model dtype torch.bfloat16)" (AssertionError), or `NotImplementedError: unsupported mix of
    model_dtype=torch.bfloat16 and grad_accum_dtype=torch.float32` at stage 0.""",
    fails_in=(PARSE, INITIALIZE),
    failing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "AdamW", "params": {"lr": 0.0001}},
          "bf16": {"enabled": true},
          "data_types": {"param_dtype": "fp16"}
        }
        """),
    passing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "AdamW", "params": {"lr": 0.0001}},
          "bf16": {"enabled": true},
          "data_types": {"param_dtype": "bf16"}
        }
        """),
    fix="Make `data_types` agree with the enabled precision, or remove it (DeepSpeed derives it).",
    autofix=Autofix(
        UNSAFE,
        "Changes a data type of the run.",
    ),
)

TORCH_AUTOCAST = Rule(
    "DS409", "torch-autocast", ERROR,
    summary="Invalid torch_autocast settings",
    what="""Reports invalid `torch_autocast` settings: a dtype DeepSpeed does not know,
    `lower_precision_safe_modules` that are not a list of strings, autocast together with ZeRO quantized weights.""",
    why="""`DeepSpeedConfig` fails with `ValueError: 'float64' is not a valid DtypeEnum` (or "Invalid module names
    for torch autocast"), and `deepspeed.initialize` with "Cannot enable both torch autocast and zero quantized
    weights".""",
    fails_in=(PARSE, INITIALIZE, SILENT),
    failing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "torch_autocast": {"enabled": true, "dtype": "float64"}
        }
        """),
    passing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "torch_autocast": {"enabled": true, "dtype": "bfloat16"}
        }
        """),
    fix="Use a dtype from the message (`bfloat16`, `float16`, ...), case as shown.",
    autofix=Autofix(
        UNSAFE,
        "Changes the autocast or quantization settings.",
    ),
)

QUOTED_BOOL = Rule(
    "DS410", "quoted-bool", ERROR,
    summary='A quoted boolean where DeepSpeed tests truthiness ("false" is true)',
    what="""Reports a quoted boolean (`"false"`, `"true"`) in a setting DeepSpeed tests for truthiness without
    validating it (`zero_force_ds_cpu_optimizer`, `prescale_gradients`, `activation_checkpointing.*`, ...).""",
    why="""Any non-empty string is true in Python, so `"false"` switches the setting on. Nothing fails; DeepSpeed
    does the opposite of what the file says: `"zero_force_ds_cpu_optimizer": "false"` still forces the CPU
    optimizer, and `deepspeed.initialize` raises the ZeRORuntimeException the key was meant to silence.""",
    fails_in=(SILENT,),
    failing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "zero_force_ds_cpu_optimizer": "false",
          "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"}}
        }
        """),
    passing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "zero_force_ds_cpu_optimizer": false,
          "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"}}
        }
        """),
    fix="Write JSON `true` / `false` without quotes.",
    autofix=Autofix(
        UNSAFE,
        'DeepSpeed reads the quoted "false" as true: writing false turns the feature off, the opposite of what '
        "runs today.",
    ),
)

WALL_CLOCK_TYPE = Rule(
    "DS411", "wall-clock-type", ERROR,
    summary="wall_clock_breakdown / flops_profiler.enabled must be booleans",
    what="Reports `wall_clock_breakdown` or `flops_profiler.enabled` that is not a JSON boolean.",
    why="""`DeepSpeedConfig` combines the two with the bitwise `|` and fails on a string: `TypeError: unsupported
    operand type(s) for |: 'str' and 'bool'`.""",
    fails_in=(PARSE,),
    failing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "wall_clock_breakdown": "false"
        }
        """),
    passing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "wall_clock_breakdown": false
        }
        """),
    fix="Write `true` or `false` without quotes.",
    autofix=Autofix(
        UNSAFE,
        "DeepSpeed reads the quoted value by truthiness: the boolean may invert what runs.",
    ),
)

RULES = (
    FP16_AND_BF16, BFLOAT16_KEY, BFLOAT16_SHADOWED, MASTER_WEIGHTS_STAGE, MASTER_WEIGHTS_OFFLOAD,
    LOSS_SCALE_WINDOW, COMMUNICATION_DTYPE, GRADIENT_ALLREDUCE_OP, DTYPE_MISMATCH, TORCH_AUTOCAST,
    QUOTED_BOOL, WALL_CLOCK_TYPE,
)
