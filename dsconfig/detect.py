"""Tell DeepSpeed configs from Accelerate configs from everything else.

Linting every JSON file of a repository must stay quiet about files that are not configs,
so classification errs towards "other". Training-argument files (HF TrainingArguments,
ms-swift, ...) borrow a few DeepSpeed key names (`gradient_accumulation_steps`, `fp16: true`)
and must not be mistaken for DeepSpeed configs.
"""

from __future__ import annotations

import re

# Keys that only a DeepSpeed config has at its top level.
_DEEPSPEED_ONLY = frozenset({
    "train_batch_size", "train_micro_batch_size_per_gpu", "zero_optimization", "steps_per_print",
    "wall_clock_breakdown", "zero_allow_untested_optimizer", "zero_force_ds_cpu_optimizer",
    "gradient_clipping", "bfloat16", "activation_checkpointing", "flops_profiler", "prescale_gradients",
    "gradient_predivide_factor", "communication_data_type", "seq_parallel_communication_data_type",
    "memory_breakdown", "dump_state", "tensorboard", "wandb", "csv_monitor", "comet", "comms_logger",
    "aio", "data_efficiency", "autotuning", "elasticity", "amp", "sparse_attention", "nebula",
    "compression_training", "curriculum_learning", "progressive_layer_drop", "hybrid_engine",
    "checkpoint", "data_types", "torch_autocast", "compile", "tensor_parallel", "zero_optimization",
    "gradient_allreduce_op", "managed_gradient_accumulation", "disable_allgather", "sparse_gradients",
    "eigenvalue", "quantize_training", "graph_harvesting", "datastates_ckpt", "expert_parallel",
    "weight_quantization", "timers", "dataloader_drop_last", "disable_python_gc",
})
# Keys DeepSpeed shares with training-argument files; they count only as object-valued sections.
_SHARED_SECTIONS = frozenset({"fp16", "bf16", "optimizer", "scheduler", "pipeline"})
# DeepSpeed sections whose names other projects' configs use for flags or paths (coqui TTS writes
# `"checkpoint": true`, many write `"wandb": false`): they count only as objects, as DeepSpeed writes them.
_SECTION_WORDS = frozenset({"checkpoint", "wandb", "tensorboard", "comet", "compile", "timers", "aio", "amp",
                            "autotuning", "elasticity"})
# Keys that mark HF TrainingArguments-style files.
_TRAINING_ARGS = frozenset({
    "per_device_train_batch_size", "per_device_eval_batch_size", "learning_rate", "output_dir",
    "num_train_epochs", "model_name_or_path", "do_train", "do_eval", "logging_steps", "save_steps",
    "evaluation_strategy", "eval_strategy", "warmup_steps", "warmup_ratio", "lr_scheduler_type",
    "max_steps", "seed", "overwrite_output_dir", "dataset", "model", "deepspeed",
})
_ACCELERATE_KEYS = frozenset({
    "compute_environment", "distributed_type", "num_processes", "num_machines", "machine_rank",
    "mixed_precision", "deepspeed_config", "fsdp_config", "main_training_function", "use_cpu",
    "rdzv_backend", "same_network", "main_process_ip", "main_process_port", "gpu_ids", "downcast_bf16",
})
_DEEPSPEED_NAME = re.compile(r"(^|[^a-z])(ds|deepspeed|zero[0-3_]?|zero_?stage)", re.IGNORECASE)
# Keys no other YAML file uses at its top level: one of them is enough.
_ACCELERATE_ONLY = frozenset({"distributed_type", "compute_environment"})
_ACCELERATE_NAME = re.compile(r"accelerate|deepspeed|fsdp|zero|(^|[^a-z])ds", re.IGNORECASE)


def _deepspeed_score(value: dict, filename: str) -> bool:
    strong = sum(1 for key in value if key in _DEEPSPEED_ONLY and _counts_as_deepspeed(key, value[key]))
    strong += sum(1 for key in _SHARED_SECTIONS if isinstance(value.get(key), dict))
    training = sum(1 for key in value if key in _TRAINING_ARGS)
    if strong == 0:
        # An empty object named like a DeepSpeed config is one (DeepSpeed would reject it).
        return not value and bool(_DEEPSPEED_NAME.search(filename))
    return strong > training


def named_like_deepspeed(filename: str) -> bool:
    return bool(_DEEPSPEED_NAME.search(filename.rsplit("/", 1)[-1]))


def named_like_accelerate(filename: str) -> bool:
    """A YAML file name that promises a launcher config (its parse errors are worth reporting)."""
    return bool(_ACCELERATE_NAME.search(filename.rsplit("/", 1)[-1]))


_ACCELERATE_LINE = re.compile(r"^(compute_environment|distributed_type)[ \t]*:", re.MULTILINE)


def written_like_accelerate(text: str) -> bool:
    """A YAML text that PyYAML cannot read but whose top level sets `compute_environment` or
    `distributed_type`, as only an Accelerate config does (`accelerate config` writes them first)."""
    return bool(_ACCELERATE_LINE.search(text))


# Keys only the HF Trainer's arguments hold, with the types they take there (a DeepSpeed config's
# `activation_checkpointing` is an object, an Accelerate YAML's `fsdp_config` sits next to distributed_type).
_TRAINER_MARKERS = {"output_dir": (str,), "per_device_train_batch_size": (int,), "fsdp": (bool, str, list),
                    "fsdp_config": (dict, str), "deepspeed": (dict, str), "gradient_checkpointing": (bool,),
                    "activation_checkpointing": (bool,)}


# Keys of other trainers' configs that also write `fsdp_config`, `output_dir` or `gradient_accumulation_steps`
# with their own meaning: axolotl (micro_batch_size, base_model, sequence_len), Composer and llm-foundry
# (max_duration, global_train_batch_size, device_train_microbatch_size). No TrainingArguments field has these names.
_OTHER_TRAINERS = frozenset({"micro_batch_size", "base_model", "sequence_len", "max_duration",
                             "global_train_batch_size", "device_train_microbatch_size", "device_train_batch_size"})


def training_arguments(value) -> bool:
    """Conservatively, a JSON or YAML object of HF TrainingArguments: at least three keys that are
    TrainingArguments fields (schemas/training-args.json), one of them a Trainer marker of its type, and
    no key only an Accelerate config has; or `fsdp` / `fsdp_config` next to `output_dir`."""
    if not isinstance(value, dict) or any(key in value for key in _ACCELERATE_ONLY):
        return False
    if any(key in value for key in _OTHER_TRAINERS):
        return False
    if not any(isinstance(value.get(key), types) for key, types in _TRAINER_MARKERS.items()):
        return False
    from .fsdp.trainer_args import fields
    return len(fields().intersection(value)) >= 3 or bool({"fsdp", "fsdp_config"}.intersection(value)) and \
        isinstance(value.get("output_dir"), str)


# A value written as a bare upper-case word (`"train_batch_size": CONFIG_BATCH_SIZE,`): a placeholder that a
# script replaces (sed) before DeepSpeed reads the file, as Megatron-DeepSpeed's *_TEMPLATE.json files are.
_PLACEHOLDER = re.compile(r"""^[ \t]*"[^"\n]+"[ \t]*:[ \t]*([A-Z][A-Z0-9_]*[A-Z0-9])[ \t]*,?[ \t]*$""", re.MULTILINE)


def placeholders(text: str) -> list[str]:
    """The bare upper-case placeholders a JSON template holds where values belong (none in real JSON)."""
    return list(dict.fromkeys(_PLACEHOLDER.findall(text)))


# Keys of a DeepSpeed config that hold a number (or "auto"): another program's object of the same name
# (composer's `"gradient_clipping": {"name": ...}` algorithm card) does not make a DeepSpeed config.
_SCALAR_KEYS = frozenset({"train_batch_size", "train_micro_batch_size_per_gpu", "gradient_clipping",
                          "steps_per_print", "gradient_predivide_factor", "prescale_gradients",
                          "wall_clock_breakdown", "memory_breakdown", "dump_state", "zero_allow_untested_optimizer",
                          "zero_force_ds_cpu_optimizer", "disable_allgather", "sparse_gradients",
                          "dataloader_drop_last", "disable_python_gc", "communication_data_type"})


def _counts_as_deepspeed(key: str, item) -> bool:
    if key in _SECTION_WORDS:
        return isinstance(item, dict)
    if key in _SCALAR_KEYS:
        return not isinstance(item, (dict, list))
    return True


def foreign(value: dict) -> str | None:
    """The other framework a config with DeepSpeed-looking keys belongs to, or None. GPT-NeoX writes its
    arguments with hyphens (`num-layers`) next to the DeepSpeed sections it hands on; DeepSpeed itself has no
    hyphenated key."""
    hyphenated = sum(1 for key in value if isinstance(key, str) and "-" in key)
    if hyphenated >= 2 and any(key in _DEEPSPEED_ONLY for key in value):
        return "GPT-NeoX (hyphenated argument names)"
    return None


def classify(filename: str, value, is_yaml: bool) -> str:
    """Return "deepspeed", "accelerate" or "other" for a parsed top-level value."""
    base = filename.rsplit("/", 1)[-1]
    if not isinstance(value, dict):
        # A JSON file named like a DeepSpeed config but holding a list, a scalar or null is a broken
        # config: DeepSpeed fails on each (null: "argument of type 'NoneType' is not iterable").
        if not is_yaml and _DEEPSPEED_NAME.search(base):
            return "deepspeed"
        return "other"
    accelerate_keys = sum(1 for key in value if key in _ACCELERATE_KEYS)
    if accelerate_keys >= 2 or any(key in value for key in _ACCELERATE_ONLY):
        return "accelerate"
    # A YAML file named like a launcher config with one Accelerate key (a config missing distributed_type),
    # unless it is Trainer arguments with their own `fsdp_config` (a recipe's config_fsdp.yaml).
    if is_yaml and accelerate_keys and named_like_accelerate(base) and not training_arguments(value) \
            and not any(key in value for key in _OTHER_TRAINERS):
        return "accelerate"
    if _deepspeed_score(value, base) and foreign(value) is None:
        return "deepspeed"
    return "other"
