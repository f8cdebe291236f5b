"""ZeRO <-> FSDP: what each setting becomes, and why.

`to_fsdp` maps a DeepSpeed setup (as DeepSpeed resolves it: dsconfig.estimate.deepspeed_config)
to an FsdpSettings; `to_deepspeed` maps an Accelerate fsdp_config (as FullyShardedDataParallelPlugin
reads the launcher's FSDP_* environment) to a ZeroChoice. Each returns the Rows of the table: source
setting, target setting, status, reason. docs/convert.md gives the sources of every reason.
"""

from __future__ import annotations

from typing import NamedTuple

from ..accelerate.launch import FALSE_WORDS, TRUE_WORDS
from ..fsdp.settings import SHARDING_STRATEGIES, STATE_DICT_TYPES, FsdpSettings
from ..values import is_auto, py_str, to_json
from .reading import ConvertError, DeepSpeedSource, FsdpSource, launch_numbers

MAPPED, APPROXIMATED, NO_EQUIVALENT, YOU_DECIDE = "mapped", "approximated", "no equivalent", "you decide"
STATUSES = (MAPPED, APPROXIMATED, NO_EQUIVALENT, YOU_DECIDE)

STAGE_TO_STRATEGY = {0: "NO_SHARD", 1: "SHARD_GRAD_OP", 2: "SHARD_GRAD_OP", 3: "FULL_SHARD"}
AT_REST = "SHARD_GRAD_OP also shards the parameters outside forward and backward"
LAUNCH_KEYS = ("num_processes", "num_machines", "machine_rank", "main_process_ip", "main_process_port")
# zero_optimization keys the rows below speak for; the rest (buckets, overlap, ...) have no FSDP twin.
ZERO_READ = ("stage", "offload_optimizer", "offload_param", "stage3_gather_16bit_weights_on_model_save",
             "gather_16bit_weights_on_model_save", "stage3_gather_fp16_weights_on_model_save")
BATCH_KEYS = ("train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps")
DS_TOP_READ = ("zero_optimization", "bf16", "bfloat16", "fp16", "activation_checkpointing", "gradient_clipping",
               "optimizer", "scheduler", *BATCH_KEYS)
CHECKPOINTING_ARG = "TrainingArguments activation_checkpointing (gradient_checkpointing before transformers 5)"


class Row(NamedTuple):
    source: str
    target: str
    status: str
    reason: str


class Launch(NamedTuple):
    num_processes: int
    num_machines: int = 1
    main_process_ip: str | None = None
    main_process_port: int | None = None


# -- DeepSpeed -> FSDP -----------------------------------------------------------------------------

def to_fsdp(source: DeepSpeedSource, *, version: int, layer_cls: str | None, model: str | None,
            gpus: int | None, nodes: int | None) -> tuple[FsdpSettings, Launch, list[Row]]:
    from ..estimate import deepspeed_config, limits
    try:
        values, _ = deepspeed_config.from_dict(source.config)
    except limits.LimitError as error:
        raise ConvertError(f"{source.json_path or source.yaml_path}: {error}") from None
    config, rows = source.config, []
    zero = config.get("zero_optimization") if isinstance(config.get("zero_optimization"), dict) else {}
    stage = values.get("zero_stage")
    settings = FsdpSettings(version=version)

    if stage is None:
        rows.append(Row("zero_optimization.stage", "fsdp_sharding_strategy FULL_SHARD", YOU_DECIDE,
                        '"auto", or a value DeepSpeed refuses (dsconfig lint says why): FULL_SHARD (ZeRO-3) '
                        "assumed"))
        stage = 3
    else:
        strategy = STAGE_TO_STRATEGY[stage]
        if stage == 0 and version == 2:
            version = 1
            rows.append(Row("--fsdp-version 2", "fsdp_version 1", APPROXIMATED,
                            "FSDP2's fully_shard always shards: NO_SHARD exists in FSDP1 only"))
        settings = settings.with_(sharding_strategy=strategy, version=version)
        rows.append(_stage_row(stage, strategy, version))

    settings, offload_rows = _offload_to_fsdp(settings, values)
    rows += offload_rows
    settings, precision_rows = _precision_to_fsdp(settings, values, config)
    rows += precision_rows

    if isinstance(config.get("activation_checkpointing"), dict):
        settings = settings.with_(activation_checkpointing=True)
        rows.append(Row("activation_checkpointing", "fsdp_activation_checkpointing true", APPROXIMATED,
                        "DeepSpeed's section configures deepspeed.checkpointing for models that call it; FSDP "
                        "checkpoints every wrapped layer. With the HF Trainer set this or "
                        f"{CHECKPOINTING_ARG}, not both (the Trainer refuses both)"))
        if config["activation_checkpointing"].get("cpu_checkpointing") is True:
            rows.append(Row("activation_checkpointing.cpu_checkpointing", "-", NO_EQUIVALENT,
                            "FSDP2's fsdp_activation_checkpointing_offload is the nearest; not written"))

    gather = _gather_16bit(zero)
    if stage == 3:
        kind = "FULL_STATE_DICT" if gather else "SHARDED_STATE_DICT"
        why = ("rank 0 gathers the whole model to save it, as ZeRO-3 does with this flag" if gather else
               "each rank saves its shard, as ZeRO-3 does without the 16-bit gather (merge with "
               "accelerate merge-weights, as with zero_to_fp32.py)")
        rows.append(Row("zero_optimization.stage3_gather_16bit_weights_on_model_save" + ("" if gather is not None
                                                                                          else " (unset)"),
                        f"fsdp_state_dict_type {kind}", MAPPED, why))
    else:
        kind = "FULL_STATE_DICT"
        rows.append(Row("(ZeRO-0/1/2 save whole weights)", "fsdp_state_dict_type FULL_STATE_DICT", MAPPED,
                        "every rank holds the whole model below ZeRO-3; FULL_STATE_DICT saves it whole too"))
    settings = settings.with_(state_dict_type=kind)

    settings, launch, launch_rows = _launch_to_fsdp(settings, source, gpus, nodes)
    rows += launch_rows
    settings, wrap_row = _wrap(settings, layer_cls, model)
    rows.append(wrap_row)
    rows += _moved_elsewhere(config)
    rows += _leftovers(config, zero)
    return settings, launch, rows


def _stage_row(stage: int, strategy: str, version: int) -> Row:
    target = f"fsdp_sharding_strategy {strategy}" if version == 1 else \
        f"fsdp_reshard_after_forward {str(strategy != 'SHARD_GRAD_OP').lower()}"
    if stage == 0:
        return Row("zero_optimization.stage 0", target, MAPPED, "nothing sharded: plain DDP (MULTI_GPU) would do")
    if stage == 1:
        return Row("zero_optimization.stage 1", target, APPROXIMATED, "ZeRO-1 shards only the optimizer states; FSDP "
                   f"has no exact equivalent: {AT_REST}, and the gradients too")
    if stage == 2:
        return Row("zero_optimization.stage 2", target, APPROXIMATED,
                   f"ZeRO-2 shards gradients and optimizer states; {AT_REST} (ZeRO-2 keeps a full copy)")
    return Row("zero_optimization.stage 3", target, MAPPED, "parameters, gradients and optimizer states sharded")


def _offload_to_fsdp(settings: FsdpSettings, values: dict) -> tuple[FsdpSettings, list[Row]]:
    optimizer, param = values.get("offload_optimizer", "none"), values.get("offload_param", "none")
    source, target = f"offload_optimizer {optimizer}, offload_param {param}", "fsdp_offload_params true"
    if optimizer == "none" and param == "none":
        return settings, [Row("zero_optimization offload (none)", "fsdp_offload_params false", MAPPED,
                              "nothing offloaded")]
    on = settings.with_(offload_params=True)
    if "nvme" in (optimizer, param):
        return on, [Row(source, target, NO_EQUIVALENT, "FSDP offloads to CPU RAM only, never to NVMe: CPU offload "
                        "written; the host needs RAM for the parameters, gradients and optimizer states")]
    if optimizer == "cpu" and param == "cpu":
        return on, [Row(source, target, APPROXIMATED, "FSDP offloads parameters and gradients together and the "
                        "optimizer steps on the CPU with the script's torch optimizer (DeepSpeedCPUAdam is faster)")]
    return on, [Row(source, target, YOU_DECIDE, "FSDP cannot offload only part: it offloads parameters, gradients "
                    "and optimizer states together (less GPU memory, more PCIe traffic); set false to keep "
                    "everything on the GPU")]


def _precision_to_fsdp(settings: FsdpSettings, values: dict, config: dict) -> tuple[FsdpSettings, list[Row]]:
    precision = values.get("precision")
    if precision is None:
        return settings.with_(mixed_precision="no"), [
            Row("bf16/fp16 enabled", "mixed_precision no", YOU_DECIDE, '"auto" (or both on, which DeepSpeed '
                "refuses): the HF Trainer's --bf16/--fp16 decide (a YAML bf16 would force it on)")]
    if precision == "fp32":
        return settings.with_(mixed_precision="no"), [Row("bf16/fp16 off", "mixed_precision no", MAPPED, "fp32")]
    rows = [Row(f"{precision}.enabled", f"mixed_precision {precision}", MAPPED,
                "Accelerate's FSDP mixed-precision policy in that dtype")]
    if precision == "fp16":
        scaler = [key for key in ("loss_scale", "initial_scale_power", "loss_scale_window", "hysteresis",
                                  "min_loss_scale") if isinstance(config.get("fp16"), dict) and key in config["fp16"]]
        rows.append(Row("fp16 loss scaling" + (f" ({', '.join(scaler)})" if scaler else ""), "(Accelerate's scaler)",
                        APPROXIMATED, "Accelerate scales the loss with torch's ShardedGradScaler (FSDP1) or "
                        "GradScaler (FSDP2), dynamic; DeepSpeed's loss-scale parameters have no equivalent"))
    return settings.with_(mixed_precision=precision), rows


def _gather_16bit(zero: dict) -> bool | None:
    for key in ("stage3_gather_16bit_weights_on_model_save", "gather_16bit_weights_on_model_save",
                "stage3_gather_fp16_weights_on_model_save"):
        if key in zero and not is_auto(zero[key]):
            return zero[key] is True
    return None


def _launch_to_fsdp(settings: FsdpSettings, source: DeepSpeedSource, gpus: int | None,
                    nodes: int | None) -> tuple[FsdpSettings, Launch, list[Row]]:
    rows = []
    yaml = source.yaml or {}
    section = yaml.get("deepspeed_config") if isinstance(yaml.get("deepspeed_config"), dict) else {}
    init = section.get("zero3_init_flag")
    if init is not None:
        flag = _bool(init, source.doc, "/deepspeed_config/zero3_init_flag")
        rows.append(Row("deepspeed_config.zero3_init_flag", f"fsdp_cpu_ram_efficient_loading {str(flag).lower()}",
                        MAPPED, "both build the model without every rank loading the weights"))
    else:
        flag = True
        rows.append(Row("(zero3_init_flag unset)", "fsdp_cpu_ram_efficient_loading true", YOU_DECIDE,
                        "rank 0 reads the checkpoint and the others receive it (from_pretrained models)"))
    settings = settings.with_(cpu_ram_efficient_loading=flag)
    if gpus is not None or nodes is not None or not yaml:
        machines = nodes or 1
        launch = Launch((gpus or 1) * machines, machines)
        rows.append(Row("--gpus/--nodes" if gpus or nodes else "(no Accelerate YAML)",
                        f"num_processes {launch.num_processes}, num_machines {machines}",
                        MAPPED if gpus or nodes else YOU_DECIDE,
                        "num_processes is the total over all machines" if gpus or nodes else
                        "no YAML to carry them from: pass --gpus N [--nodes M]"))
        return settings, launch, rows
    numbers = launch_numbers(source.doc, yaml)
    rows.append(Row(", ".join(key for key in LAUNCH_KEYS if key in yaml) or "(launch defaults)", "the same keys",
                    MAPPED, "carried over from the Accelerate YAML"))
    return settings, Launch(*numbers), rows


def _wrap(settings: FsdpSettings, layer_cls: str | None, model: str | None) -> tuple[FsdpSettings, Row]:
    if layer_cls:
        return settings.with_(transformer_layer_cls_to_wrap=layer_cls), Row(
            f"--model {model}", f"fsdp_transformer_layer_cls_to_wrap {layer_cls}", MAPPED,
            "ZeRO-3 partitions every parameter with no wrapping; FSDP shards per wrapped layer")
    why = ("--model names no known layer class" if model else "no --model") + ": Accelerate falls back on the " \
          "model's _no_split_modules (Hugging Face models have it); any other model must set " \
          "fsdp_transformer_layer_cls_to_wrap"
    return settings, Row("(model)", "fsdp_transformer_layer_cls_to_wrap", YOU_DECIDE, why)


def _moved_elsewhere(config: dict) -> list[Row]:
    rows = []
    batch = [key for key in BATCH_KEYS if key in config]
    if batch:
        auto = all(is_auto(config[key]) for key in batch)
        rows.append(Row(", ".join(batch), "per_device_train_batch_size, gradient_accumulation_steps", YOU_DECIDE,
                        '"auto": they stay the Trainer\'s' if auto else "not FSDP settings: TrainingArguments, or "
                        "the DataLoader's batch_size and Accelerator(gradient_accumulation_steps=...)"))
    if "gradient_clipping" in config:
        rows.append(Row("gradient_clipping", "max_grad_norm", YOU_DECIDE,
                        '"auto": it stays the Trainer\'s' if is_auto(config["gradient_clipping"]) else
                        f"not an FSDP setting: TrainingArguments max_grad_norm={to_json(config['gradient_clipping'])},"
                        " or accelerator.clip_grad_norm_() in the script"))
    for key in ("optimizer", "scheduler"):
        if key in config:
            rows.append(Row(key, "the script / TrainingArguments", YOU_DECIDE,
                            f"not an FSDP setting: TrainingArguments {'optim' if key == 'optimizer' else 'lr_scheduler_type'}"
                            f", or the torch {key} the script passes to accelerator.prepare()"))
    return rows


def _leftovers(config: dict, zero: dict) -> list[Row]:
    rows = []
    zero_rest = [key for key in zero if key not in ZERO_READ]
    if zero_rest:
        rows.append(Row("zero_optimization." + ", ".join(zero_rest), "-", NO_EQUIVALENT,
                        "DeepSpeed's buckets and overlap settings; FSDP communicates per wrapped layer"))
    rest = [key for key in config if key not in DS_TOP_READ]
    if rest:
        rows.append(Row(", ".join(rest), "-", NO_EQUIVALENT, "DeepSpeed engine settings: not carried over"))
    return rows


# -- FSDP -> DeepSpeed -----------------------------------------------------------------------------

class ZeroChoice(NamedTuple):
    stage: int
    offload: bool  # optimizer (and, at ZeRO-3, parameter) offload to the CPU
    precision: str  # bf16, fp16, fp32
    gather_16bit: bool
    zero_init: bool
    hpz: int | None  # zero_hpz_partition_size (ZeRO++ hierarchical partitioning)
    num_processes: int
    num_machines: int
    main_process_ip: str | None
    main_process_port: int | None
    checkpointing: bool


def to_deepspeed(source: FsdpSource) -> tuple[ZeroChoice, list[Row]]:
    fsdp, config, rows = source.fsdp, source.config, []
    version = _version(source)
    numbers = launch_numbers(source.doc, config)
    per_machine = numbers.num_processes // numbers.num_machines
    hybrid = False
    if version == 1:
        strategy = _strategy(source, fsdp.get("fsdp_sharding_strategy", "FULL_SHARD"))
        key = "fsdp_sharding_strategy"
        hybrid = strategy.startswith("HYBRID")
        stage = {"FULL_SHARD": 3, "HYBRID_SHARD": 3, "SHARD_GRAD_OP": 2, "HYBRID_SHARD_ZERO2": 2, "NO_SHARD": 0}[strategy]
    else:
        reshard = _flag(source, "fsdp_reshard_after_forward", True)
        strategy, key = str(reshard).lower(), "fsdp_reshard_after_forward"
        stage = 3 if reshard else 2
        parallel = config.get("parallelism_config") if isinstance(config.get("parallelism_config"), dict) else {}
        replicate = parallel.get("parallelism_config_dp_replicate_size", 1)
        hybrid = isinstance(replicate, int) and not isinstance(replicate, bool) and replicate > 1
    rows.append(_sharding_row(key, strategy, stage, version))
    hpz = None
    if hybrid:
        if stage == 3 and per_machine > 1:
            hpz = per_machine
            rows.append(Row("hybrid sharding", f"zero_hpz_partition_size {hpz}", APPROXIMATED,
                            "ZeRO++ hpZ is the nearest: a secondary copy of the parameters sharded within each "
                            "machine; the gradients and optimizer states stay sharded over all ranks"))
        else:
            rows.append(Row("hybrid sharding", "-", NO_EQUIVALENT, "ZeRO++ hpZ needs ZeRO-3 and several GPUs per "
                            f"machine: ZeRO-{stage} over all ranks"))

    offload = _flag(source, "fsdp_offload_params", False)
    if offload:
        what = "offload_optimizer cpu + offload_param cpu" if stage == 3 else "offload_optimizer cpu"
        rows.append(Row("fsdp_offload_params true", what, MAPPED if stage == 3 else APPROXIMATED,
                        "parameters, gradients and optimizer states to the CPU; DeepSpeedCPUAdam steps there" if
                        stage == 3 else f"ZeRO-{stage} cannot offload parameters (offload_param needs ZeRO-3): "
                        "only the optimizer states and step move to the CPU"))
        if stage == 0:
            stage = 2  # no ZeRO-0 offload; ZeRO-2 + optimizer offload is the nearest template
            rows.append(Row("fsdp_sharding_strategy NO_SHARD + offload", "zero_optimization.stage 2", APPROXIMATED,
                            "DeepSpeed offloads the optimizer only with ZeRO sharding: ZeRO-2 written"))
    else:
        rows.append(Row("fsdp_offload_params false", "no offload", MAPPED, "nothing offloaded"))

    precision = _mixed_precision(source)
    rows.append(Row(f"mixed_precision {precision if precision != 'fp32' else 'no'}",
                    {"bf16": "bf16.enabled true", "fp16": "fp16.enabled true (dynamic loss scale)",
                     "fp32": "bf16/fp16 off"}[precision], MAPPED,
                    "DeepSpeed's dynamic loss scaler replaces Accelerate's grad scaler" if precision == "fp16"
                    else "the same training precision"))

    checkpointing = _flag(source, "fsdp_activation_checkpointing", False)
    if checkpointing:
        rows.append(Row("fsdp_activation_checkpointing true", CHECKPOINTING_ARG, APPROXIMATED,
                        "DeepSpeed has no layer-wrapping checkpointing for HF models: the model checkpoints itself "
                        "(model.gradient_checkpointing_enable())"))
    state_dict = py_str(fsdp.get("fsdp_state_dict_type", "FULL_STATE_DICT" if version == 1 else "SHARDED_STATE_DICT"))
    if state_dict.upper() not in STATE_DICT_TYPES + ("LOCAL_STATE_DICT",):
        raise _error(source, source.pointer("fsdp_state_dict_type"), f"fsdp_state_dict_type {state_dict!r} is not one "
                     "of FULL_STATE_DICT, SHARDED_STATE_DICT, LOCAL_STATE_DICT")
    gather = state_dict.upper() == "FULL_STATE_DICT"
    rows.append(Row(f"fsdp_state_dict_type {state_dict}",
                    f"stage3_gather_16bit_weights_on_model_save {str(gather).lower()}" if stage == 3 else "-",
                    MAPPED if stage == 3 else NO_EQUIVALENT,
                    ("rank 0 gathers the 16-bit weights to save them" if gather else "each rank saves its shard; "
                     "zero_to_fp32.py merges them") if stage == 3 else "below ZeRO-3 every rank saves whole weights"))
    loading = _flag(source, "fsdp_cpu_ram_efficient_loading", False)
    zero_init = stage == 3 and loading
    if stage == 3:
        rows.append(Row(f"fsdp_cpu_ram_efficient_loading {str(loading).lower()}",
                        f"deepspeed_config.zero3_init_flag {str(zero_init).lower()}", MAPPED,
                        "zero.Init builds the model already partitioned"))
    rows += _fsdp_without_twin(fsdp)
    rows.append(Row(", ".join(key for key in LAUNCH_KEYS if key in config) or "(launch)", "the same keys", MAPPED,
                    "carried over to the DeepSpeed Accelerate YAML"))
    return ZeroChoice(stage, offload, precision, gather, zero_init, hpz, *numbers, checkpointing), rows


def _sharding_row(key: str, value: str, stage: int, version: int) -> Row:
    source = f"{key} {value}"
    if stage == 3:
        return Row(source, "zero_optimization.stage 3", MAPPED, "parameters, gradients and optimizer states sharded")
    if stage == 0:
        return Row(source, "zero_optimization.stage 0", MAPPED, "nothing sharded (DDP)")
    return Row(source, "zero_optimization.stage 2", APPROXIMATED,
               "ZeRO-2 shards gradients and optimizer states but keeps whole parameters; "
               + ("SHARD_GRAD_OP" if version == 1 else "FSDP2 without resharding") + " shards them between steps")


NO_TWIN = {
    "fsdp_auto_wrap_policy": "ZeRO-3 partitions every parameter, no wrapping",
    "fsdp_transformer_layer_cls_to_wrap": "ZeRO-3 partitions every parameter, no wrapping",
    "fsdp_min_num_params": "ZeRO-3 partitions every parameter, no wrapping",
    "fsdp_backward_prefetch": "ZeRO-3 prefetches by stage3_prefetch_bucket_size (\"auto\" from the hidden size)",
    "fsdp_forward_prefetch": "ZeRO-3 prefetches by stage3_prefetch_bucket_size (\"auto\" from the hidden size)",
    "fsdp_use_orig_params": "DeepSpeed keeps the original parameters",
    "fsdp_sync_module_states": "deepspeed.initialize broadcasts the model from rank 0",
    "fsdp_activation_checkpointing_offload": "DeepSpeed's cpu_checkpointing serves deepspeed.checkpointing only",
}
READ_FSDP = ("fsdp_version", "fsdp_sharding_strategy", "fsdp_reshard_after_forward", "fsdp_offload_params",
             "fsdp_activation_checkpointing", "fsdp_state_dict_type", "fsdp_cpu_ram_efficient_loading")


def _fsdp_without_twin(fsdp: dict) -> list[Row]:
    rows = []
    for key, value in fsdp.items():
        if key in READ_FSDP:
            continue
        why = NO_TWIN.get(key, "dsconfig convert does not map this key")
        rows.append(Row(f"{key} {to_json(value) if not isinstance(value, str) else value}", "-", NO_EQUIVALENT, why))
    return rows


def _version(source: FsdpSource) -> int:
    value = source.fsdp.get("fsdp_version", 1)
    text = py_str(value)
    if text not in ("1", "2"):
        raise _error(source, source.pointer("fsdp_version"), f"fsdp_version {text!r} is neither 1 nor 2")
    return int(text)


def _strategy(source: FsdpSource, value) -> str:
    text = py_str(value).upper()
    if text.isdigit() and 1 <= int(text) <= len(SHARDING_STRATEGIES):
        return SHARDING_STRATEGIES[int(text) - 1]
    if text not in SHARDING_STRATEGIES:
        raise _error(source, source.pointer("fsdp_sharding_strategy"), f"fsdp_sharding_strategy {py_str(value)!r} is not one of "
                     f"{', '.join(SHARDING_STRATEGIES)}")
    return text


def _mixed_precision(source: FsdpSource) -> str:
    value = source.config.get("mixed_precision", "no")
    text = "no" if value is False else py_str(value).lower()  # YAML 1.1 reads a bare `no` as False
    if text not in ("no", "fp16", "bf16"):
        raise _error(source, "/mixed_precision", f"mixed_precision {py_str(value)!r}: DeepSpeed takes no, fp16 or bf16")
    return "fp32" if text == "no" else text


def _error(source: FsdpSource, pointer: str, message: str) -> ConvertError:
    line, column = source.doc.locate(pointer)
    return ConvertError(f"{source.path}:{line}:{column}: {message}")


def _flag(source: FsdpSource, key: str, default: bool) -> bool:
    return _bool(source.fsdp.get(key, default), source.doc, source.pointer(key))


def _bool(value, doc=None, pointer: str = "") -> bool:
    """As accelerate.utils.str_to_bool reads the launcher's str(value).lower(), which refuses other words."""
    text = str(value).lower()
    if text in TRUE_WORDS:
        return True
    if text in FALSE_WORDS or doc is None:
        return False
    line, column = doc.locate(pointer)
    raise ConvertError(f"{doc.path}:{line}:{column}: {py_str(value)!r} is not a boolean (Accelerate's str_to_bool "
                       "raises ValueError: invalid truth value)")

