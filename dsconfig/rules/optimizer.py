"""DS5xx optimizer and scheduler: what deepspeed.initialize builds from the optimizer and scheduler
blocks. Checked by dsconfig.deepspeed.initialize (and dsconfig.deepspeed.loose for the blocks' shape).
"""

from __future__ import annotations

from ..phases import INITIALIZE, PARSE, SILENT
from .rule import ERROR, INFO, UNSAFE, WARNING, Autofix, Rule, ds

OPTIMIZER_NAME = Rule(
    "DS500", "optimizer-name", ERROR,
    summary="optimizer.type is not an optimizer DeepSpeed can build",
    what="""Reports `optimizer.type` that DeepSpeed cannot build: not one of its own names (adam, adamw, adagrad,
    lamb, lion, muon, muadam, muadamw, musgd; any case) and not a `torch.optim` class (exact case). Includes the
    removed OneBitAdam, ZeroOneAdam and OneBitLamb.""",
    why="""`deepspeed.initialize` fails: `AssertionError: sgd is not a supported DeepSpeed Optimizer`. torch names
    are case-sensitive, so `sgd` fails where `SGD` works.""",
    fails_in=(PARSE, INITIALIZE),
    failing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "sgd", "params": {"lr": 0.1, "momentum": 0.9}}
        }
        """),
    passing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "SGD", "params": {"lr": 0.1, "momentum": 0.9}}
        }
        """),
    fix="Use a DeepSpeed optimizer name or the exact `torch.optim` class name.",
    autofix=Autofix(
        UNSAFE,
        "The optimizer name is a guess or a different optimizer.",
    ),
)

OPTIMIZER_PARAMS = Rule(
    "DS501", "optimizer-params", ERROR,
    summary="optimizer.params the optimizer constructor rejects",
    what="""Reports `optimizer.params` the optimizer DeepSpeed builds would reject: unknown keyword arguments for
    that class (FusedAdam, DeepSpeedCPUAdam, a torch optimizer, ...), `max_grad_norm`, options that need another
    backend (`amsgrad` without `torch_adam`).""",
    why="""`deepspeed.initialize` fails when it constructs the optimizer: `ValueError: 'max_grad_norm' is not
    supported as an optimizer parameter, please switch to using the deepspeed parameter 'gradient_clipping'`, or
    `TypeError: FusedAdam.__init__() got an unexpected keyword argument 'momentum'`.""",
    fails_in=(INITIALIZE,),
    failing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "AdamW", "params": {"lr": 0.0001, "max_grad_norm": 1.0}}
        }
        """),
    passing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "gradient_clipping": 1.0,
          "optimizer": {"type": "AdamW", "params": {"lr": 0.0001}}
        }
        """),
    fix="Remove or rename the parameter the message names (gradient clipping is the top-level `gradient_clipping`).",
    autofix=Autofix(
        UNSAFE,
        "Changes optimizer parameters (or guesses a renamed one).",
    ),
)

UNTESTED_OPTIMIZER = Rule(
    "DS502", "untested-optimizer", ERROR,
    summary="ZeRO with an optimizer it does not support unless allowed",
    what="""Reports a config optimizer ZeRO does not support (anything but Adam, AdamW, Adagrad, Lion and
    DeepSpeed's CPU variants: `SGD`, `lamb`, `muadam`, ...) at ZeRO stage 1-3 without
    `zero_allow_untested_optimizer: true`.""",
    why="""`deepspeed.initialize` fails: `AssertionError: You are using an untested ZeRO Optimizer. Please add
    <"zero_allow_untested_optimizer": true> in the configuration file to use it.`""",
    fails_in=(INITIALIZE,),
    failing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "SGD", "params": {"lr": 0.1}},
          "zero_optimization": {"stage": 2}
        }
        """),
    passing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "SGD", "params": {"lr": 0.1}},
          "zero_allow_untested_optimizer": true,
          "zero_optimization": {"stage": 2}
        }
        """),
    fix="""Set `"zero_allow_untested_optimizer": true` (and test that ZeRO partitions it correctly), or use AdamW.""",
    autofix=Autofix(
        UNSAFE,
        "Allows an optimizer ZeRO does not test.",
    ),
)

LAMB_LOSS_SCALE = Rule(
    "DS503", "lamb-loss-scale", ERROR,
    summary="The LAMB optimizer requires dynamic loss scaling",
    what="Reports the LAMB optimizer with a static fp16 loss scale (`fp16.loss_scale` above 0).",
    why="`deepspeed.initialize` fails: `AssertionError: DeepSpeed lamb optimizer requires dynamic loss scaling`.",
    fails_in=(INITIALIZE,),
    failing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "Lamb", "params": {"lr": 0.001}},
          "fp16": {"enabled": true, "loss_scale": 128}
        }
        """),
    passing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "Lamb", "params": {"lr": 0.001}},
          "fp16": {"enabled": true, "loss_scale": 0}
        }
        """),
    fix="""Use dynamic loss scaling: `"loss_scale": 0` (the default).""",
    autofix=Autofix(
        UNSAFE,
        "Switches to dynamic loss scaling.",
    ),
)

MUON_REDUCE_SCATTER = Rule(
    "DS504", "muon-reduce-scatter", ERROR,
    summary="Muon with ZeRO-3 requires reduce_scatter: false",
    what="Reports the Muon optimizer with ZeRO stage 3 and `reduce_scatter` not set to false (it defaults to true).",
    why="""`deepspeed.initialize` fails in the ZeRO-3 optimizer: `ValueError: Muon and reduce scatter cannot be
    used together`.""",
    fails_in=(INITIALIZE,),
    failing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "Muon", "params": {"lr": 0.02}},
          "zero_optimization": {"stage": 3}
        }
        """),
    passing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "Muon", "params": {"lr": 0.02}},
          "zero_optimization": {"stage": 3, "reduce_scatter": false}
        }
        """),
    fix="""Set `"reduce_scatter": false` in `zero_optimization`.""",
    autofix=Autofix(
        UNSAFE,
        "Changes the ZeRO communication pattern.",
    ),
)

MUON_BF16_OPTIMIZER = Rule(
    "DS510", "muon-bf16-optimizer", ERROR,
    summary="Muon under DeepSpeed's BF16 optimizer needs fp32 gradient accumulation and no pipeline parallelism",
    what="""Reports the Muon optimizer where DeepSpeed wraps it in its BF16 optimizer and that optimizer refuses
    it: bf16 training with a pipeline (a `pipeline` section, so a PipelineModule), without ZeRO (the gradients then
    accumulate in bf16) or with ZeRO stage 1 and fp32 gradient accumulation (the pipeline's model-parallel unit).""",
    why="""`deepspeed.initialize` fails while it builds the optimizer: `ValueError: BF16 Muon currently requires
    FP32 accumulation, dense DP and eager execution`. Without a pipeline DeepSpeed takes another wrapper (its
    fp16/bf16 optimizer without ZeRO, the ZeRO optimizer with it) and Muon runs.""",
    fails_in=(INITIALIZE,),
    failing=ds("""
        {
          "train_batch_size": 16,
          "optimizer": {"type": "Muon", "params": {"lr": 0.02}},
          "bf16": {"enabled": true},
          "pipeline": {"activation_checkpoint_interval": 1}
        }
        """),
    passing=ds("""
        {
          "train_batch_size": 16,
          "optimizer": {"type": "AdamW", "params": {"lr": 0.0001}},
          "bf16": {"enabled": true},
          "pipeline": {"activation_checkpoint_interval": 1}
        }
        """),
    fix="""With a PipelineModule, use another optimizer (AdamW, say). To keep Muon, train without pipeline
    parallelism.""",
)

SCHEDULER_NAME = Rule(
    "DS505", "scheduler-name", ERROR,
    summary="scheduler.type is not a scheduler DeepSpeed knows",
    what="""Reports `scheduler.type` that is neither one of DeepSpeed's schedulers (LRRangeTest, OneCycle,
    WarmupLR, WarmupDecayLR, WarmupCosineLR) nor a `torch.optim.lr_scheduler` class DeepSpeed can build; names are
    case-sensitive.""",
    why="`deepspeed.initialize` fails: `AssertionError: DeepSpeed does not recognize LR scheduler warmuplr`.",
    fails_in=(INITIALIZE,),
    failing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "AdamW", "params": {"lr": 0.0001}},
          "scheduler": {"type": "warmuplr", "params": {"warmup_num_steps": 100}}
        }
        """),
    passing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "AdamW", "params": {"lr": 0.0001}},
          "scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": 100}}
        }
        """),
    fix="Use the exact class name the message suggests.",
    autofix=Autofix(
        UNSAFE,
        "The scheduler name is a guess.",
    ),
)

SCHEDULER_PARAMS = Rule(
    "DS506", "scheduler-params", ERROR,
    summary="scheduler.params the scheduler rejects",
    what="""Reports `scheduler.params` the scheduler's constructor rejects: a required parameter missing
    (`total_num_steps` for WarmupDecayLR and WarmupCosineLR), an unknown one, a missing `params` block, values of
    the wrong type or range (`warmup_num_steps` 0 or 100.0).""",
    why="""`deepspeed.initialize` fails while building the scheduler: `TypeError: WarmupDecayLR.__init__() missing
    1 required positional argument: 'total_num_steps'`.""",
    fails_in=(INITIALIZE,),
    failing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "AdamW", "params": {"lr": 0.0001}},
          "scheduler": {"type": "WarmupDecayLR", "params": {"warmup_num_steps": 100}}
        }
        """),
    passing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "AdamW", "params": {"lr": 0.0001}},
          "scheduler": {"type": "WarmupDecayLR", "params": {"warmup_num_steps": 100, "total_num_steps": 10000}}
        }
        """),
    fix="Give the parameters the message names, with the types it asks for.",
    autofix=Autofix(
        UNSAFE,
        "Changes scheduler parameters (or guesses a renamed one).",
    ),
)

SCHEDULER_ADVICE = Rule(
    "DS507", "scheduler-advice", WARNING,
    summary="Scheduler settings DeepSpeed warns about or silently changes",
    what="""Reports scheduler settings DeepSpeed warns about or silently changes: an unknown `warmup_type` (falls
    back to log), `total_num_steps` smaller than `warmup_num_steps`, a torch scheduler that needs a metric
    (ReduceLROnPlateau) stepped without one.""",
    why="""Nothing fails at startup; the learning-rate curve is not the one in the file. DeepSpeed logs "Using
    unknown warmup_type: cosine. The increasing function is set to default (log)".""",
    fails_in=(SILENT,),
    failing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "AdamW", "params": {"lr": 0.0001}},
          "scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": 100, "warmup_type": "cosine"}}
        }
        """),
    passing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "AdamW", "params": {"lr": 0.0001}},
          "scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": 100, "warmup_type": "linear"}}
        }
        """),
    fix="""Use `log` or `linear` for `warmup_type`; for a cosine decay after warmup use WarmupCosineLR; keep
    `total_num_steps` above `warmup_num_steps`.""",
    autofix=Autofix(
        UNSAFE,
        "Changes the warmup schedule.",
    ),
)

OPTIMIZER_WITHOUT_TYPE = Rule(
    "DS508", "optimizer-without-type", WARNING,
    summary="optimizer.params without optimizer.type are ignored",
    what="Reports `optimizer.params` given without `optimizer.type`.",
    why="""DeepSpeed builds an optimizer from the config only when `type` is set; without it the params (learning
    rate, betas, weight decay) are ignored and the script's optimizer, with its own settings, is used.""",
    fails_in=(SILENT,),
    failing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"params": {"lr": 0.0001, "weight_decay": 0.01}}
        }
        """),
    passing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "AdamW", "params": {"lr": 0.0001, "weight_decay": 0.01}}
        }
        """),
    fix="Add `type`, or remove the block and configure the optimizer in the script.",
)

GRADIENT_CLIPPING_DEFAULT = Rule(
    "DS509", "gradient-clipping-default", INFO,
    summary="gradient_clipping unset: 1.0 since DeepSpeed 0.19.3, 0 before",
    what="Notes a config without `gradient_clipping`.",
    why="""Its default changed: DeepSpeed 0.19.3 and later clip the gradient norm at 1.0, earlier versions did not
    clip at all. The same file trains differently depending on the installed DeepSpeed, and with
    `compute_grad_norm: false` the new default makes `deepspeed.initialize` fail (DS305).""",
    fails_in=(SILENT,),
    failing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "zero_optimization": {"stage": 2}
        }
        """),
    passing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "gradient_clipping": 1.0,
          "zero_optimization": {"stage": 2}
        }
        """),
    fix="""Write the value you want: `1.0` to clip, `0` not to (`"auto"` under the HF Trainer: `max_grad_norm`).""",
)

RULES = (
    OPTIMIZER_NAME, OPTIMIZER_PARAMS, UNTESTED_OPTIMIZER, LAMB_LOSS_SCALE, MUON_REDUCE_SCATTER,
    SCHEDULER_NAME, SCHEDULER_PARAMS, SCHEDULER_ADVICE, OPTIMIZER_WITHOUT_TYPE, GRADIENT_CLIPPING_DEFAULT,
    MUON_BF16_OPTIMIZER,
)
