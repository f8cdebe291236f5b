"""DS3xx ZeRO and offload: the zero_optimization block, as DeepSpeed's config model and engine read it.

Checked by dsconfig.deepspeed.models (parse time) and dsconfig.deepspeed.initialize (engine
and ZeRO optimizer construction), the "auto" stage by dsconfig.deepspeed.target.
"""

from __future__ import annotations

from ..phases import INITIALIZE, PARSE, SILENT
from .rule import ERROR, LEGACY_ALLGATHER, SAFE, UNSAFE, WARNING, Autofix, Rule, ds

ZERO_LEGACY_FORMAT = Rule(
    "DS300", "zero-legacy-format", WARNING,
    summary="`zero_optimization` written as a boolean (legacy format)",
    what="Reports `zero_optimization` written as a boolean, DeepSpeed's legacy format.",
    why="""DeepSpeed still reads `true` as stage 1 and `false` as stage 0, not the stage 2 or 3 a reader may
    assume, and the HF Trainer and Accelerate, which look up `zero_optimization.stage` and the offload devices
    with `.get()`, fail on a boolean section with `AttributeError: 'bool' object has no attribute 'get'` (DS605).""",
    fails_in=(SILENT,),
    failing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "zero_optimization": true
        }
        """),
    passing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "zero_optimization": {"stage": 1}
        }
        """),
    fix="""Write an object with the stage you want: `{"stage": 1}` is what `true` meant.""",
    autofix=Autofix(
        SAFE,
        "`zero_optimization: true/false` becomes {\"stage\": 1}/{\"stage\": 0}, DeepSpeed's own reading of the "
        "legacy format.",
        unless="a top-level `allgather_size` is also given (DeepSpeed's legacy reading moves it into the block)",
        demoted_when=LEGACY_ALLGATHER,
    ),
)

OFFLOAD_IGNORED = Rule(
    "DS301", "offload-ignored", WARNING,
    summary="Offload settings this ZeRO stage ignores or silently changes",
    what="""Reports offload settings the configured ZeRO stage ignores or changes: `offload_param` below stage 3,
    NVMe optimizer offload at stages 1-2, any optimizer offload at stage 0.""",
    why="""Nothing fails, but not as written: below stage 3 the parameters stay on the GPU (the memory you counted
    on is not freed, and the job may run out of memory); at stages 1-2 `"device": "nvme"` silently offloads to CPU
    RAM instead; at stage 0 DeepSpeed still builds its CPU optimizer while the parameters stay on the GPU, and the
    first step fails with "CPUAdam param is on cuda:0 and must be 'cpu'".""",
    fails_in=(SILENT,),
    failing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "AdamW", "params": {"lr": 0.0001}},
          "zero_optimization": {
            "stage": 2,
            "offload_optimizer": {"device": "cpu"},
            "offload_param": {"device": "cpu"}
          }
        }
        """),
    passing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "AdamW", "params": {"lr": 0.0001}},
          "zero_optimization": {
            "stage": 3,
            "offload_optimizer": {"device": "cpu"},
            "offload_param": {"device": "cpu"}
          }
        }
        """),
    fix="Raise the stage to the one the offload needs (3 for parameters and NVMe), or remove the offload block.",
    autofix=Autofix(
        UNSAFE,
        "Changing the offload device or flags changes where the states live.",
    ),
)

PARTIAL_OFFLOAD_STAGE = Rule(
    "DS302", "partial-offload-stage", ERROR,
    summary="offload_optimizer.ratio < 1 needs ZeRO stage 3",
    what="Reports `offload_optimizer.ratio` below 1 (partial optimizer offload) at a ZeRO stage other than 3.",
    why="""`DeepSpeedConfig` fails: "Partial offloading only supported for ZeRO Stage 3." (pydantic
    `ValidationError`).""",
    fails_in=(PARSE,),
    failing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "AdamW", "params": {"lr": 0.0001}},
          "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu", "ratio": 0.3}}
        }
        """),
    passing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "AdamW", "params": {"lr": 0.0001}},
          "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu", "ratio": 0.3}}
        }
        """),
    fix="Use stage 3, or drop `ratio` to offload the whole optimizer state.",
)

NVME_PATH_MISSING = Rule(
    "DS303", "nvme-path-missing", ERROR,
    summary="NVMe offload without nvme_path",
    what="""Reports `offload_optimizer` or `offload_param` with `"device": "nvme"` and no `nvme_path`.""",
    why="""`deepspeed.initialize` fails when ZeRO-3 sets up the swapper: `TypeError: expected str, bytes or
    os.PathLike object, not NoneType` from `os.path.join(nvme_path, ...)` for the optimizer, or `"nvme_path" in
    DeepSpeed Config cannot be None if remote device is nvme` for parameters.""",
    fails_in=(INITIALIZE,),
    failing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "AdamW", "params": {"lr": 0.0001}},
          "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "nvme"}}
        }
        """),
    passing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "AdamW", "params": {"lr": 0.0001}},
          "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "nvme", "nvme_path": "/local_nvme"}}
        }
        """),
    fix="Set `nvme_path` to a directory on a local NVMe drive of every node.",
)

STAGE_MISMATCHED_KEYS = Rule(
    "DS304", "stage-mismatched-keys", WARNING,
    summary="Keys that only take effect at another ZeRO stage",
    what="""Reports ZeRO keys read only at another stage: `stage3_*`, ZeRO++ (`zero_quantized_weights`,
    `zero_hpz_partition_size`, ...) below stage 3; `round_robin_gradients`, `parameter_alignment` at stage 3.""",
    why="""DeepSpeed accepts them and never reads them at this stage, so tuning them changes nothing; usually a
    sign that the stage is not the one the file was written for.""",
    fails_in=(SILENT,),
    failing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "zero_optimization": {"stage": 2, "stage3_max_live_parameters": 1000000000}
        }
        """),
    passing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "zero_optimization": {"stage": 3, "stage3_max_live_parameters": 1000000000}
        }
        """),
    fix="Delete the keys, or set the stage they belong to.",
)

COMPUTE_GRAD_NORM = Rule(
    "DS305", "compute-grad-norm", ERROR,
    summary="compute_grad_norm=false is only valid with ZeRO 1/2 and no clipping",
    what="""Reports `compute_grad_norm: false` where DeepSpeed refuses it: outside ZeRO stages 1-2, with gradient
    clipping (the default since 0.19.3), with optimizer offload or ZenFlow.""",
    why="""At stage 0 or 3 `DeepSpeedConfig` fails with "compute_grad_norm=false is supported only with ZeRO Stage
    1 or 2"; at stages 1-2 `deepspeed.initialize` fails with "zero_optimization.compute_grad_norm=false requires
    gradient_clipping=0" unless clipping is switched off explicitly, because `gradient_clipping` now defaults to
    1.0.""",
    fails_in=(PARSE, INITIALIZE),
    failing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "AdamW", "params": {"lr": 0.0001}},
          "zero_optimization": {"stage": 2, "compute_grad_norm": false}
        }
        """),
    passing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "AdamW", "params": {"lr": 0.0001}},
          "gradient_clipping": 0,
          "zero_optimization": {"stage": 2, "compute_grad_norm": false}
        }
        """),
    fix="""Set `"gradient_clipping": 0` and use stage 1 or 2 without offload, or remove `compute_grad_norm`.""",
    autofix=Autofix(
        UNSAFE,
        "Changes gradient clipping or norm computation.",
    ),
)

ALLGATHER_BUCKET_ODD = Rule(
    "DS306", "allgather-bucket-odd", ERROR,
    summary="ZeRO 1/2 need an even allgather_bucket_size",
    what="Reports an odd `allgather_bucket_size` at ZeRO stage 1 or 2.",
    why="""`deepspeed.initialize` fails in the ZeRO-1/2 optimizer: `AssertionError: allgather_bucket_size must be
    a multiple of nccl_start_alignment_factor, 2`.""",
    fails_in=(INITIALIZE,),
    failing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "AdamW", "params": {"lr": 0.0001}},
          "zero_optimization": {"stage": 2, "allgather_bucket_size": 200000001}
        }
        """),
    passing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "AdamW", "params": {"lr": 0.0001}},
          "zero_optimization": {"stage": 2, "allgather_bucket_size": 200000000}
        }
        """),
    fix="Use an even number.",
    autofix=Autofix(
        UNSAFE,
        "Changes a communication bucket size.",
    ),
)

LEGACY_STAGE1 = Rule(
    "DS307", "legacy-stage1", ERROR,
    summary="legacy_stage1 is not supported since DeepSpeed 0.5.9",
    what="Reports `zero_optimization.legacy_stage1: true`.",
    why="""`deepspeed.initialize` fails: "The deprecated version of ZeRO Stage 1 is not supported in deepspeed >=
    0.5.9. Please downgrade to a version less than 0.5.9 if you need to use this deprecated version of ZeRO.\"""",
    fails_in=(INITIALIZE,),
    failing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "AdamW", "params": {"lr": 0.0001}},
          "zero_optimization": {"stage": 1, "legacy_stage1": true}
        }
        """),
    passing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "AdamW", "params": {"lr": 0.0001}},
          "zero_optimization": {"stage": 1}
        }
        """),
    fix="Delete the key; stage 1 is the current implementation.",
    autofix=Autofix(
        UNSAFE,
        "Changes the ZeRO optimizer DeepSpeed builds.",
    ),
)

OFFLOAD_CLIENT_OPTIMIZER = Rule(
    "DS308", "offload-client-optimizer", WARNING,
    summary="Optimizer offload with a client optimizer needs zero_force_ds_cpu_optimizer: false",
    what="""Reports optimizer offload to CPU or NVMe in a config without an `optimizer` block, so the optimizer
    comes from the training script, and `zero_force_ds_cpu_optimizer` is not `false`.""",
    why="""Unless the script's optimizer is DeepSpeedCPUAdam or DeepSpeedCPULion, `deepspeed.initialize` raises
    `ZeRORuntimeException: You are using ZeRO-Offload with a client provided optimizer (...) which in most cases
    will yield poor performance. Please either use deepspeed.ops.adam.DeepSpeedCPUAdam or set an optimizer in your
    ds-config`. A warning, not an error, because dsconfig cannot see the script.""",
    fails_in=(INITIALIZE, SILENT),
    failing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
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
    fix="""Add an `optimizer` block (DeepSpeed then builds DeepSpeedCPUAdam itself), or set
    `"zero_force_ds_cpu_optimizer": false` to keep the script's optimizer on the CPU (slower), or create
    DeepSpeedCPUAdam in the script.""",
    autofix=Autofix(
        UNSAFE,
        "Adds a key that changes which optimizer runs offloaded.",
    ),
)

PIPELINE_ZERO = Rule(
    "DS309", "pipeline-zero", ERROR,
    summary="Pipeline parallelism is incompatible with ZeRO stage 2 and 3",
    what="""Reports a `pipeline` section (so the model is a `PipelineModule`) with ZeRO stage 2 or 3, for a target
    that calls `deepspeed.initialize` with the pipeline model (`--target deepspeed`).""",
    why="""`deepspeed.initialize` fails in `PipelineEngine`: `AssertionError: ZeRO-2 and ZeRO-3 are incompatible
    with pipeline parallelism`.""",
    fails_in=(INITIALIZE,),
    failing=ds("""
        {
          "train_batch_size": 256,
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "AdamW", "params": {"lr": 0.0001}},
          "zero_optimization": {"stage": 2},
          "pipeline": {"activation_checkpoint_interval": 1}
        }
        """, target="deepspeed"),
    passing=ds("""
        {
          "train_batch_size": 256,
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "AdamW", "params": {"lr": 0.0001}},
          "zero_optimization": {"stage": 1},
          "pipeline": {"activation_checkpoint_interval": 1}
        }
        """, target="deepspeed"),
    fix="Use ZeRO stage 0 or 1 with pipeline parallelism.",
    autofix=Autofix(
        UNSAFE,
        "Changes the ZeRO stage.",
    ),
)

MANAGED_GRADIENT_ACCUMULATION = Rule(
    "DS310", "managed-gradient-accumulation", ERROR,
    summary="managed_gradient_accumulation=false is unsupported in this combination",
    what="""Reports `managed_gradient_accumulation: false` in a combination DeepSpeed does not support: ZeRO stage
    below 2 with `overlap_comm`, pipeline parallelism, or DeepCompile.""",
    why="""`deepspeed.initialize` fails: "managed_gradient_accumulation=False supports ZeRO overlap_comm only with
    ZeRO stage 2" (or "... is not supported with pipeline parallelism" / "... with DeepCompile").""",
    fails_in=(INITIALIZE,),
    failing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "AdamW", "params": {"lr": 0.0001}},
          "managed_gradient_accumulation": false,
          "zero_optimization": {"stage": 1, "overlap_comm": true}
        }
        """),
    passing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "AdamW", "params": {"lr": 0.0001}},
          "managed_gradient_accumulation": false,
          "zero_optimization": {"stage": 2, "overlap_comm": true}
        }
        """),
    fix="Use ZeRO stage 2, turn `overlap_comm` off, or remove `managed_gradient_accumulation`.",
)

REDUCE_SCATTER_SCALING = Rule(
    "DS311", "reduce-scatter-scaling", ERROR,
    summary="ZeRO 2/3 with reduce_scatter require gradient_predivide_factor 1.0 and no prescale_gradients",
    what="""Reports ZeRO stage 2 or 3 with `reduce_scatter` (on by default) and `gradient_predivide_factor` other
    than 1.0 or `prescale_gradients: true`.""",
    why="""`deepspeed.initialize` fails in the ZeRO optimizer: "gradient_predivide_factor != 1.0 is not yet
    supported with ZeRO-2 with reduce scatter enabled" (or "pre-scale gradients is not yet supported with ZeRO-2
    with reduce scatter enabled"; ZeRO-3 has the same checks).""",
    fails_in=(INITIALIZE,),
    failing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "AdamW", "params": {"lr": 0.0001}},
          "gradient_predivide_factor": 2.0,
          "zero_optimization": {"stage": 2}
        }
        """),
    passing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "AdamW", "params": {"lr": 0.0001}},
          "gradient_predivide_factor": 2.0,
          "zero_optimization": {"stage": 2, "reduce_scatter": false}
        }
        """),
    fix="""Remove `gradient_predivide_factor` / `prescale_gradients`, or set `"reduce_scatter": false`.""",
    autofix=Autofix(
        UNSAFE,
        "Changes gradient scaling.",
    ),
)

STAGE_AUTO = Rule(
    "DS312", "stage-auto", WARNING,
    summary='"stage": "auto" left for DeepSpeed means ZeRO disabled',
    what="""Reports `"stage": "auto"` in `zero_optimization` for a target that does not fill it (plain DeepSpeed,
    Lightning).""",
    why="""DeepSpeed drops the `"auto"` like any other in its pydantic sections and uses the default, stage 0:
    ZeRO is off, every GPU holds the full optimizer state, and a model sized for ZeRO-3 runs out of memory with no
    hint that ZeRO never started.""",
    fails_in=(SILENT,),
    failing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "zero_optimization": {"stage": "auto"}
        }
        """, target="deepspeed"),
    passing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "zero_optimization": {"stage": 3}
        }
        """, target="deepspeed"),
    fix="Write the stage as a number.",
    autofix=Autofix(
        UNSAFE,
        '"stage": "auto" runs ZeRO stage 0 under plain DeepSpeed; stage 3 is a different run.',
    ),
)

RULES = (
    ZERO_LEGACY_FORMAT, OFFLOAD_IGNORED, PARTIAL_OFFLOAD_STAGE, NVME_PATH_MISSING, STAGE_MISMATCHED_KEYS,
    COMPUTE_GRAD_NORM, ALLGATHER_BUCKET_ODD, LEGACY_STAGE1, OFFLOAD_CLIENT_OPTIMIZER, PIPELINE_ZERO,
    MANAGED_GRADIENT_ACCUMULATION, REDUCE_SCATTER_SCALING, STAGE_AUTO,
)
