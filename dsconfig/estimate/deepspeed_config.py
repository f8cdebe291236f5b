"""What a ds_config.json says about memory: ZeRO stage, offload devices, precision, micro batch,
optimizer, bucket sizes and activation checkpointing.

The file is read the way DeepSpeed reads it (dsconfig.jsonscan: hjson 3.1.0's reading), and each
value is taken only when it is one DeepSpeed would accept; `"auto"` (filled later by the HF
Trainer or Accelerate) and anything unreadable leave the estimate's default and add a note.
"""

from __future__ import annotations


from ..jsonscan import ScanError, scan
from ..values import is_auto

OPTIMIZER_NAMES = {"adam": "adam", "adamw": "adamw", "lion": "lion", "sgd": "sgd", "adafactor": "adafactor"}


class ConfigError(ValueError):
    """The file cannot be read as a DeepSpeed config."""


def read(path: str) -> tuple[dict, list[str]]:
    """(TrainingSetup field values, notes) from a ds_config.json path."""
    from ..files import FileError, read_bytes
    try:
        text = read_bytes(path).decode("utf-8")
    except FileError as error:
        raise ConfigError(str(error)) from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path} is not UTF-8 text") from None
    try:
        config = scan(text).value
    except ScanError as error:
        raise ConfigError(f"{path} is not a DeepSpeed config: {error.message}") from None
    if not isinstance(config, dict):
        raise ConfigError(f"{path} is not a DeepSpeed config: the top level is not an object")
    return from_dict(config)


def from_dict(config: dict) -> tuple[dict, list[str]]:
    values: dict = {}
    notes: list[str] = []

    def number(value, what: str, minimum: int = 0):
        if is_auto(value):
            notes.append(f"{what} is \"auto\" (filled by the HF Trainer/Accelerate): the estimate uses its default")
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value or value < minimum:
            if value is not None:
                notes.append(f"{what} = {value!r} is not a number DeepSpeed accepts: ignored")
            return None
        return int(value)

    def enabled(section) -> bool:
        return isinstance(section, dict) and section.get("enabled") is True

    auto_precision = [key for key in ("bf16", "fp16") if isinstance(config.get(key), dict)
                      and is_auto(config[key].get("enabled"))]
    if enabled(config.get("bf16")) or enabled(config.get("bfloat16")):
        values["precision"] = "bf16"
    elif enabled(config.get("fp16")):
        values["precision"] = "fp16"
    elif auto_precision:
        notes.append(f"{auto_precision[0]}.enabled is \"auto\": the precision comes from the launcher "
                     "(bf16 assumed; pass --precision)")
    else:
        values["precision"] = "fp32"  # neither enabled: DeepSpeed trains in fp32

    micro = config.get("train_micro_batch_size_per_gpu")
    if micro is not None:
        micro = number(micro, "train_micro_batch_size_per_gpu", 1)
        if micro is not None:
            values["micro_batch"] = micro

    zero = config.get("zero_optimization")
    if isinstance(zero, dict):
        stage = zero.get("stage", 0)
        stage = number(stage, "zero_optimization.stage")
        if stage is not None and stage in (0, 1, 2, 3):
            values["zero_stage"] = stage
        for key in ("offload_optimizer", "offload_param"):
            section = zero.get(key)
            if isinstance(section, dict):
                device = section.get("device", "none")
                if isinstance(device, str) and device in ("none", "cpu", "nvme"):
                    values[key] = device
                elif device is not None:
                    notes.append(f"zero_optimization.{key}.device = {device!r} is not none/cpu/nvme: ignored")
        if zero.get("cpu_offload") is True and "offload_optimizer" not in values:
            values["offload_optimizer"] = "cpu"  # the deprecated spelling
        buckets = {}
        for key, field_name in (("reduce_bucket_size", "reduce_bucket_size"),
                                ("allgather_bucket_size", "allgather_bucket_size"),
                                ("stage3_prefetch_bucket_size", "prefetch_bucket_size"),
                                ("stage3_param_persistence_threshold", "param_persistence_threshold"),
                                ("stage3_max_live_parameters", "max_live_parameters")):
            if key in zero:
                size = number(zero[key], f"zero_optimization.{key}")
                if size is not None:
                    buckets[field_name] = size
        if isinstance(zero.get("overlap_comm"), bool):
            buckets["overlap_comm"] = zero["overlap_comm"]
        if buckets:
            values["buckets"] = buckets

    optimizer = config.get("optimizer")
    if isinstance(optimizer, dict) and isinstance(optimizer.get("type"), str):
        name = optimizer["type"].lower()
        if name in OPTIMIZER_NAMES:
            values["optimizer"] = OPTIMIZER_NAMES[name]
        else:
            notes.append(f"optimizer {optimizer['type']!r} is not modelled: Adam's states are assumed")

    checkpointing = config.get("activation_checkpointing")
    if isinstance(checkpointing, dict):
        # the section configures deepspeed.checkpointing, used only when the model checkpoints its layers
        values["gradient_checkpointing"] = True
        if checkpointing.get("cpu_checkpointing") is True:
            values["cpu_checkpointing"] = True
    return values, notes
