"""DS2xx batch arithmetic: train_batch_size = micro batch x gradient accumulation x data-parallel size,
as DeepSpeedConfig resolves and checks it at each world size. Checked by dsconfig.deepspeed.batch.
"""

from __future__ import annotations

from ..phases import INITIALIZE, PARSE, SILENT, STEP
from .rule import CHANGED_VALUE, ERROR, INFO, SAFE, UNSAFE, Autofix, Rule, ds, folder

BATCH_MISSING = Rule(
    "DS200", "batch-missing", ERROR,
    summary="Neither train_batch_size nor train_micro_batch_size_per_gpu is given",
    what="Reports a config that gives neither `train_batch_size` nor `train_micro_batch_size_per_gpu`.",
    why="""`DeepSpeedConfig` fails with `AssertionError: Either train_batch_size or train_micro_batch_size_per_gpu
    needs to be provided` (gradient_accumulation_steps alone is not enough).""",
    fails_in=(PARSE,),
    failing=ds("""
        {
          "gradient_accumulation_steps": 4,
          "zero_optimization": {"stage": 2}
        }
        """),
    passing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "gradient_accumulation_steps": 4,
          "zero_optimization": {"stage": 2}
        }
        """),
    fix="""Add `train_micro_batch_size_per_gpu`; DeepSpeed derives `train_batch_size` from it, the accumulation
    steps and the world size. Under the HF Trainer write `"auto"`.""",
)

BATCH_TYPE = Rule(
    "DS201", "batch-type", ERROR,
    summary="A batch size that is not a positive integer",
    what="""Reports a batch size (`train_batch_size`, `train_micro_batch_size_per_gpu`,
    `gradient_accumulation_steps`) that is not a positive integer: a string, a float (even `8.0`), a boolean, zero
    or a negative number.""",
    why="""A string fails inside `DeepSpeedConfig` with a `TypeError` while it resolves the batch sizes. A float
    is subtler: DeepSpeed's hjson loader reads `16.0` as `16`, but the HF Trainer and Accelerate read the file
    with `json.load`, keep `16.0`, and the data loader raises `ValueError: batch_size should be a positive integer
    value, but got batch_size=16.0`.""",
    fails_in=(PARSE, SILENT),
    failing=ds("""
        {
          "train_micro_batch_size_per_gpu": 16.0,
          "gradient_accumulation_steps": "auto",
          "zero_optimization": {"stage": 2}
        }
        """, target="hf-trainer"),
    passing=ds("""
        {
          "train_micro_batch_size_per_gpu": 16,
          "gradient_accumulation_steps": "auto",
          "zero_optimization": {"stage": 2}
        }
        """, target="hf-trainer"),
    fix="""Write a positive integer literal (`16`, not `16.0` or `"16"`), or `"auto"` under the HF Trainer.""",
    autofix=Autofix(
        SAFE,
        'A batch size written as 32.0 or "32" becomes 32, the number written: hjson already reads 32.0 as 32, '
        "and json.load readers (HF Trainer, Accelerate) get an int instead of a float or a string.",
        unless="the value is a boolean (which number was meant?)",
        demoted_when=CHANGED_VALUE,
    ),
)

BATCH_MISMATCH = Rule(
    "DS202", "batch-mismatch", ERROR,
    summary="train_batch_size != micro_batch × gradient_accumulation × world_size at this world size",
    what="""At each world size given (`--world-size`, or `--gpus`/`--nodes`), replays DeepSpeed's batch derivation
    (its floor divisions and its assertions, in its order) and reports a mismatch with the corrected values.""",
    why="""`DeepSpeedConfig` asserts `train_batch_size == train_micro_batch_size_per_gpu ×
    gradient_accumulation_steps × world_size` and fails with "Check batch related parameters. train_batch_size is
    not equal to micro_batch_per_gpu * gradient_acc_step * world_size 64 != 8 * 2 * 8" when the file was written
    for another GPU count: the job dies at startup on every rank, after the scheduler gave it the GPUs.""",
    fails_in=(PARSE,),
    failing=ds("""
        {
          "train_batch_size": 64,
          "train_micro_batch_size_per_gpu": 8,
          "gradient_accumulation_steps": 2,
          "zero_optimization": {"stage": 2}
        }
        """, world_sizes=(8,)),
    passing=ds("""
        {
          "train_batch_size": 128,
          "train_micro_batch_size_per_gpu": 8,
          "gradient_accumulation_steps": 2,
          "zero_optimization": {"stage": 2}
        }
        """, world_sizes=(8,)),
    fix="""Apply one of the corrections in the message, or give only `train_micro_batch_size_per_gpu` and
    `gradient_accumulation_steps` and let DeepSpeed derive `train_batch_size` for whatever GPU count runs the job
    (`"auto"` under the HF Trainer).""",
    autofix=Autofix(
        UNSAFE,
        "A corrected batch size changes the global batch, the per-GPU memory or the gradient accumulation of the "
        "run.",
    ),
)

BATCH_NO_WORLD_SIZE = Rule(
    "DS203", "batch-no-world-size", ERROR,
    summary="No world size satisfies the batch arithmetic",
    what="""Without a world size, reports batch keys that no world size at all satisfies in DeepSpeed's arithmetic
    (`train_batch_size` is not a multiple of micro batch × accumulation steps).""",
    why="""`DeepSpeedConfig` fails with "Check batch related parameters" (or "... has to be greater than 0")
    whatever the number of GPUs, so the config cannot work anywhere.""",
    fails_in=(PARSE,),
    failing=ds("""
        {
          "train_batch_size": 60,
          "train_micro_batch_size_per_gpu": 8,
          "zero_optimization": {"stage": 2}
        }
        """),
    passing=ds("""
        {
          "train_batch_size": 64,
          "train_micro_batch_size_per_gpu": 8,
          "zero_optimization": {"stage": 2}
        }
        """),
    fix="Set `train_batch_size` to a multiple of micro batch × accumulation steps (the message suggests one).",
    autofix=Autofix(
        UNSAFE,
        "A corrected train_batch_size changes the global batch of the run.",
    ),
)

BATCH_WORLD_SIZES = Rule(
    "DS204", "batch-world-sizes", INFO,
    summary="The batch arithmetic holds only at some world sizes",
    what="""Without a world size, notes batch keys that work only at some world sizes (typically
    `train_batch_size` with only one of the other two), and lists those sizes.""",
    why="""Such a config is tied to GPU counts: it passes on 8 GPUs but fails on 6 ("Check batch related
    parameters") and on 16 ("Gradient accumulation steps: 0 has to be greater than 0"), e.g. when the job is
    scaled out. Pass `--world-size` to have it checked at the count you launch (DS202).""",
    fails_in=(SILENT,),
    failing=ds("""
        {
          "train_batch_size": 64,
          "train_micro_batch_size_per_gpu": 8,
          "zero_optimization": {"stage": 2}
        }
        """),
    passing=ds("""
        {
          "train_micro_batch_size_per_gpu": 8,
          "gradient_accumulation_steps": 1,
          "zero_optimization": {"stage": 2}
        }
        """),
    fix="""Nothing is wrong at the listed world sizes. To make the config work at any GPU count, give the micro
    batch and the accumulation steps instead of `train_batch_size`.""",
)

MICRO_BATCH_ONE = Rule(
    "DS205", "micro-batch-one", INFO,
    summary="One sample per GPU per step: BatchNorm layers fail with 'Expected more than 1 value per channel'",
    what="""Notes a micro batch of 1 per GPU: written as `train_micro_batch_size_per_gpu: 1`, or derived from
    `train_batch_size` at a world size.""",
    why="""Fine for transformers, but a model with BatchNorm layers fails in its first training step with
    `ValueError: Expected more than 1 value per channel when training`, and gradient statistics over one sample
    are noisy.""",
    fails_in=(SILENT,),
    failing=ds("""
        {
          "train_micro_batch_size_per_gpu": 1,
          "gradient_accumulation_steps": 8,
          "zero_optimization": {"stage": 2}
        }
        """),
    passing=ds("""
        {
          "train_micro_batch_size_per_gpu": 2,
          "gradient_accumulation_steps": 4,
          "zero_optimization": {"stage": 2}
        }
        """),
    fix="""Nothing to fix for models without BatchNorm. Otherwise use a micro batch of at least 2 (and fewer
    accumulation steps to keep the global batch).""",
)

FRACTIONAL_WORLD_SIZE = Rule(
    "DS206", "fractional-world-size", ERROR,
    summary="sequence_parallel_size does not divide the world size; DeepSpeed's data-parallel size becomes a float",
    what="""Reports `sequence_parallel_size` at a world size it does not divide. DeepSpeed divides the world size
    by it with true division, so its data-parallel size becomes a float.""",
    why="""With 8 GPUs and `sequence_parallel_size` 3 DeepSpeed computes a data-parallel size of 2.67: the batch
    assertion "Check batch related parameters" fails when the keys are given in full, and otherwise the derived
    batch sizes are fractions.""",
    fails_in=(PARSE, INITIALIZE),
    failing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "sequence_parallel_size": 3,
          "zero_optimization": {"stage": 2}
        }
        """, world_sizes=(8,)),
    passing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "sequence_parallel_size": 4,
          "zero_optimization": {"stage": 2}
        }
        """, world_sizes=(8,)),
    fix="Choose a `sequence_parallel_size` that divides the number of GPUs (1, 2, 4 or 8 on 8 GPUs).",
)

BATCHNORM_ONE_SAMPLE = Rule(
    "DS207", "batchnorm-one-sample", ERROR,
    summary="One sample per device for a model with BatchNorm layers: the first training step fails",
    what="""With `--batchnorm` (or when a linted training script builds BatchNorm layers), reports every batch that
    leaves one sample per device: a micro batch of 1, a global batch that splits to 1 per GPU at a world size
    given, in a ds_config.json or in a project's training config.""",
    why="""BatchNorm normalises over the batch: with one sample per device PyTorch raises `ValueError: Expected more
    than 1 value per channel when training` in the first forward pass (SyncBatchNorm and flax's BatchNorm
    degenerate the same way), after the model has loaded on every GPU.""",
    fails_in=(STEP,),
    failing=ds("""
        {
          "train_batch_size": 8,
          "gradient_accumulation_steps": 1,
          "zero_optimization": {"stage": 2}
        }
        """, world_sizes=(8,), batchnorm=True),
    passing=ds("""
        {
          "train_batch_size": 16,
          "gradient_accumulation_steps": 1,
          "zero_optimization": {"stage": 2}
        }
        """, world_sizes=(8,), batchnorm=True),
    fix="""Give each device at least 2 samples: raise the batch (or lower the accumulation steps, keeping the global
    batch), or launch fewer GPUs. With `--batchnorm` no fix dsconfig suggests goes below 2 per device.""",
    autofix=Autofix(UNSAFE, "The suggested batch gives each device 2 samples: the global batch, and with it the "
                            "learning-rate schedule the run was tuned for, changes."),
)

GLOBAL_BATCH_INDIVISIBLE = Rule(
    "DS208", "global-batch-indivisible", ERROR,
    summary="A training config's global batch does not split evenly over the GPUs launched",
    what="""In a project's training config (YAML, JSON or TOML), at each world size given, reports a global batch
    key (`global_batch_size`, `total_batch_size`, ...; plain `batch_size` under `--framework jax`; any key set
    global with `--batch-key`) that the world size does not divide, or that disagrees with the per-device batch
    and the accumulation steps written next to it.""",
    why="""The global batch is split over the processes: JAX fails with "batch size must be divisible by the number
    of devices", and PyTorch projects that compute the per-GPU batch as `global // world_size` silently train
    with a smaller global batch than the config says (and a learning rate tuned for the other one).""",
    fails_in=(STEP, SILENT),
    failing=folder(("train.yaml", """
        data:
          global_batch_size: 30
          gradient_accumulation_steps: 1
        """), lint=("train.yaml",), world_sizes=(4,)),
    passing=folder(("train.yaml", """
        data:
          global_batch_size: 32
          gradient_accumulation_steps: 1
        """), lint=("train.yaml",), world_sizes=(4,)),
    fix="""Use a global batch that is a multiple of the world size (times the accumulation steps), or give the
    per-device batch instead; dsconfig names the nearest values that divide.""",
    autofix=Autofix(UNSAFE, "The nearest global batch that splits is another batch size: the run's optimisation "
                            "changes, so only --unsafe-fixes writes it."),
)

GLOBAL_BATCH = Rule(
    "DS209", "global-batch", INFO,
    summary="The global batch a training config's per-device batch makes at the world size launched",
    what="""In a project's training config, when the world size is known (`--world-size`, `--gpus`, or an Accelerate
    YAML linted with it that launches that many processes), states the global batch per optimizer step: the
    per-device batch × the accumulation steps written in the file × the world size.""",
    why="""The learning rate and schedule are tuned for a global batch, and the file only says what one GPU gets: the
    same `train_bs: 32` is a global batch of 64 on 2 GPUs and 256 on 8.""",
    fails_in=(SILENT,),
    failing=folder(("stage1.yaml", """
        data:
          train_bs: 32
        optimization:
          gradient_accumulation_steps: 1
        """), lint=("stage1.yaml",), world_sizes=(2,)),
    passing=folder(("stage1.yaml", """
        data:
          train_bs: 32
        optimization:
          gradient_accumulation_steps: 1
        """), lint=("stage1.yaml",)),
    fix="Nothing to fix: check that the global batch is the one the learning rate was tuned for.",
)

RULES = (
    BATCH_MISSING, BATCH_TYPE, BATCH_MISMATCH, BATCH_NO_WORLD_SIZE, BATCH_WORLD_SIZES, MICRO_BATCH_ONE,
    BATCHNORM_ONE_SAMPLE, GLOBAL_BATCH_INDIVISIBLE, GLOBAL_BATCH,
    FRACTIONAL_WORLD_SIZE,
)
