"""DS6xx other sections: activation checkpointing, checkpoint, data efficiency, autotuning, tensor and
pipeline parallelism. Checked by dsconfig.deepspeed.loose and dsconfig.deepspeed.initialize.
"""

from __future__ import annotations

from ..phases import INITIALIZE, PARSE, SILENT
from .rule import ERROR, UNSAFE, WARNING, Autofix, Rule, ds

ACTIVATION_CHECKPOINTING = Rule(
    "DS600", "activation-checkpointing", ERROR,
    summary="Invalid activation_checkpointing combination",
    what="""Reports `activation_checkpointing.contiguous_memory_optimization` without `partition_activations`, and
    with `--target lightning`, where it cannot work.""",
    why="""When the script configures DeepSpeed's activation checkpointing (`deepspeed.checkpointing.configure`),
    it fails: `AssertionError: Contiguous Checkpointing is only available with partitioned activations. Set
    partitioned activations to true in deepspeed config`. Lightning's call never passes the number of layers, so
    there it fails with "Must specify the number of layers with contiguous memory checkpointing".""",
    fails_in=(INITIALIZE,),
    failing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "activation_checkpointing": {"contiguous_memory_optimization": true}
        }
        """),
    passing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "activation_checkpointing": {"partition_activations": true, "contiguous_memory_optimization": true}
        }
        """),
    fix="Set `partition_activations: true`, or turn `contiguous_memory_optimization` off.",
    autofix=Autofix(
        UNSAFE,
        "Changes activation checkpointing.",
    ),
)

CHECKPOINT_VALUES = Rule(
    "DS601", "checkpoint-values", ERROR,
    summary="Invalid checkpoint section values",
    what="""Reports invalid `checkpoint` values: `tag_validation` other than Warn, Ignore or Fail, a non-boolean
    `parallel_write.pipeline_stage`, an unknown `writer.type` or `writer.data_parallel`.""",
    why="""`DeepSpeedConfig` fails: `DeepSpeedConfigError: Checkpoint config contains invalid tag_validation value
    of STRICT, expecting one of ['WARN', 'IGNORE', 'FAIL']`.""",
    fails_in=(PARSE,),
    failing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "checkpoint": {"tag_validation": "STRICT"}
        }
        """),
    passing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "checkpoint": {"tag_validation": "FAIL"}
        }
        """),
    fix="Use one of the values the message lists.",
    autofix=Autofix(
        UNSAFE,
        "Changes checkpoint behaviour.",
    ),
)

DATA_EFFICIENCY = Rule(
    "DS602", "data-efficiency", ERROR,
    summary="An enabled data_efficiency feature lacks a required key",
    what="""Reports an enabled `data_efficiency` feature without its required keys: curriculum learning without
    `curriculum_metrics`, dynamic batching without `max_tokens`, and the like.""",
    why="""`DeepSpeedConfig` fails: `AssertionError: Curriculum learning is enabled, curriculum_metrics must be
    specified`. The sub-feature's own `enabled` is checked even when `data_efficiency.enabled` is false.""",
    fails_in=(PARSE,),
    failing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "data_efficiency": {
            "enabled": true,
            "data_sampling": {"enabled": true, "curriculum_learning": {"enabled": true}}
          }
        }
        """),
    passing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "data_efficiency": {
            "enabled": true,
            "data_sampling": {"enabled": true, "curriculum_learning": {"enabled": false}}
          }
        }
        """),
    fix="Add the keys the message names (see DeepSpeed's data efficiency docs), or disable the feature.",
    autofix=Autofix(
        UNSAFE,
        "Changes a data-efficiency setting.",
    ),
)

AUTOTUNING = Rule(
    "DS603", "autotuning", ERROR,
    summary="Invalid autotuning section",
    what="""Reports an invalid `autotuning` section: empty `results_dir` or `exps_dir`, lists or `"all"` where
    autotuning is not running, and values DeepSpeed cannot parse.""",
    why="""`DeepSpeedConfig` fails even for a normal training run, because it parses the section every time:
    `AssertionError: results_dir cannot be empty`.""",
    fails_in=(PARSE,),
    failing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "autotuning": {"enabled": true, "results_dir": ""}
        }
        """),
    passing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "autotuning": {"enabled": true, "results_dir": "autotuning_results"}
        }
        """),
    fix="Give a non-empty path, or leave the key out for the default.",
    autofix=Autofix(
        UNSAFE,
        "Changes an autotuning setting.",
    ),
)

TENSOR_PARALLEL = Rule(
    "DS604", "tensor-parallel", ERROR,
    summary="Invalid tensor_parallel settings",
    what="Reports `tensor_parallel.tp.tp_size` other than 1 or `tensor_parallel.autotp_size`.",
    why="""`deepspeed.initialize` fails: `ValueError: tensor_parallel.tp.tp_size (2) does not match
    tensor_parallel.autotp_size (4).`""",
    fails_in=(INITIALIZE,),
    failing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "tensor_parallel": {"autotp_size": 4, "tp": {"tp_size": 2}}
        }
        """),
    passing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "tensor_parallel": {"autotp_size": 4}
        }
        """),
    fix="Give the tensor-parallel degree once, in `autotp_size`.",
    autofix=Autofix(
        UNSAFE,
        "Changes tensor parallelism.",
    ),
)

SECTION_TYPE = Rule(
    "DS605", "section-type", ERROR,
    summary="A section of the wrong type crashes DeepSpeed or its integration",
    what="""Reports a section that is not an object where DeepSpeed (or the HF Trainer / Accelerate walking to a
    value they fill) expects one: `"fp16": true`, `"zero_optimization": null`, `"optimizer": "adamw"`.""",
    why="""DeepSpeed calls `Model(**section)` or `section.get(...)` and crashes with `TypeError: ... argument
    after ** must be a mapping, not bool` while parsing; the HF Trainer and Accelerate raise `AttributeError:
    'bool' object has no attribute 'get'` when they look up `fp16.enabled`.""",
    fails_in=(PARSE, INITIALIZE),
    failing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "fp16": true
        }
        """),
    passing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "fp16": {"enabled": true}
        }
        """),
    fix="""Write the section as an object: `"fp16": {"enabled": true}`.""",
    autofix=Autofix(
        UNSAFE,
        "Replaces a whole section.",
    ),
)

PIPELINE_FLAGS = Rule(
    "DS606", "pipeline-flags", ERROR,
    summary="pipeline.pipe_partitioned / grad_partitioned must be real booleans",
    what="Reports `pipeline.pipe_partitioned` or `pipeline.grad_partitioned` that is not a JSON boolean.",
    why="""For a `PipelineModule` model, `deepspeed.initialize` fails on `assert isinstance(..., bool)` in
    PipelineEngine: a bare `AssertionError` with no message pointing at the config.""",
    fails_in=(INITIALIZE,),
    failing=ds("""
        {
          "train_batch_size": 256,
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "AdamW", "params": {"lr": 0.0001}},
          "pipeline": {"pipe_partitioned": "true", "grad_partitioned": "true"}
        }
        """),
    passing=ds("""
        {
          "train_batch_size": 256,
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "AdamW", "params": {"lr": 0.0001}},
          "pipeline": {"pipe_partitioned": true, "grad_partitioned": true}
        }
        """),
    fix="Write `true` or `false` without quotes.",
    autofix=Autofix(
        UNSAFE,
        "Changes pipeline partitioning.",
    ),
)

VOCABULARY_SIZE = Rule(
    "DS607", "vocabulary-size", WARNING,
    summary="vocabulary_size not a multiple of 8 (tensor-core alignment)",
    what="Reports `vocabulary_size` that is not a multiple of 8.",
    why="""DeepSpeed only logs "vocabulary size 50257 is not aligned to 8, may import tensor core utilization":
    the embedding and output matmuls miss the tensor-core fast path and run slower.""",
    fails_in=(SILENT,),
    failing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "vocabulary_size": 50257
        }
        """),
    passing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "vocabulary_size": 50264
        }
        """),
    fix="Pad the model's vocabulary to a multiple of 8 (and write that size here).",
    autofix=Autofix(
        UNSAFE,
        "Changes the vocabulary size.",
    ),
)

RULES = (
    ACTIVATION_CHECKPOINTING, CHECKPOINT_VALUES, DATA_EFFICIENCY, AUTOTUNING, TENSOR_PARALLEL, SECTION_TYPE,
    PIPELINE_FLAGS, VOCABULARY_SIZE,
)
