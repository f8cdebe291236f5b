"""The `fsdp_config` of an Accelerate YAML, as Accelerate 1.15 turns it into an FSDP plugin.

`accelerate launch` copies the keys onto its namespace (launch.Replay) and `prepare_multi_gpu_env`
exports them as FSDP_* variables with `str(value)`, most of them `.lower()`-ed (`launcher_env`
replays that block). Each process's `FullyShardedDataParallelPlugin` reads them back
(fsdp_plugin.replay). On top of what the plugin raises, this module reports what it drops without
a word (a key the chosen version never reads, a wrap setting of another policy), the settings that
fail later in `prepare()` (layer classes a `--model` lacks), and what costs memory (FULL_STATE_DICT).
"""

from __future__ import annotations

from ..findings import Finding
from ..phases import INITIALIZE, SILENT
from ..rules.fsdp import (
    FSDP1_KEY_UNDER_FSDP2,
    FSDP1_USE_ORIG_PARAMS_FALSE,
    FSDP2_KEY_UNDER_FSDP1,
    FSDP_FULL_STATE_DICT,
    FSDP_LAYER_CLASS_FORMAT,
    FSDP_LAYER_CLASS_MISSING,
    FSDP_USE_CPU_IGNORED,
    FSDP_WRAP_SETTING_UNUSED,
)
from ..values import brief, closest, py_str, to_json
from . import fsdp_plugin
from .launch import TRUE_WORDS, Replay

# prepare_multi_gpu_env's FSDP block: (variable, launch option, lower-cased), in its order; the
# optional ones are exported only when the option is not None.
_ALWAYS = (("FSDP_VERSION", "fsdp_version", False), ("FSDP_SHARDING_STRATEGY", "fsdp_sharding_strategy", False),
           ("FSDP_RESHARD_AFTER_FORWARD", "fsdp_reshard_after_forward", True),
           ("FSDP_OFFLOAD_PARAMS", "fsdp_offload_params", True), ("FSDP_MIN_NUM_PARAMS", "fsdp_min_num_params", False))
_IF_SET = (("FSDP_AUTO_WRAP_POLICY", "fsdp_auto_wrap_policy"),
           ("FSDP_TRANSFORMER_CLS_TO_WRAP", "fsdp_transformer_layer_cls_to_wrap"),
           ("FSDP_BACKWARD_PREFETCH", "fsdp_backward_prefetch"), ("FSDP_STATE_DICT_TYPE", "fsdp_state_dict_type"))
_LOWERED = (("FSDP_FORWARD_PREFETCH", "fsdp_forward_prefetch"), ("FSDP_USE_ORIG_PARAMS", "fsdp_use_orig_params"),
            ("FSDP_CPU_RAM_EFFICIENT_LOADING", "fsdp_cpu_ram_efficient_loading"),
            ("FSDP_SYNC_MODULE_STATES", "fsdp_sync_module_states"),
            ("FSDP_ACTIVATION_CHECKPOINTING", "fsdp_activation_checkpointing"),
            ("FSDP_ACTIVATION_CHECKPOINTING_OFFLOAD", "fsdp_activation_checkpointing_offload"))

# plugin field -> the launch option (fsdp_config key, prefixed) it is read from
OPTION_OF_FIELD = {
    "fsdp_version": "fsdp_version", "sharding_strategy": "fsdp_sharding_strategy",
    "reshard_after_forward": "fsdp_reshard_after_forward", "cpu_offload": "fsdp_offload_params",
    "backward_prefetch": "fsdp_backward_prefetch", "state_dict_type": "fsdp_state_dict_type",
    "auto_wrap_policy": "fsdp_auto_wrap_policy", "transformer_cls_names_to_wrap": "fsdp_transformer_layer_cls_to_wrap",
    "min_num_params": "fsdp_min_num_params", "use_orig_params": "fsdp_use_orig_params",
    "sync_module_states": "fsdp_sync_module_states", "forward_prefetch": "fsdp_forward_prefetch",
    "activation_checkpointing": "fsdp_activation_checkpointing",
    "activation_checkpointing_offload": "fsdp_activation_checkpointing_offload",
    "cpu_ram_efficient_loading": "fsdp_cpu_ram_efficient_loading", "ignored_modules": "fsdp_ignored_modules",
}
_VARIABLE_OF_OPTION = {option: variable for variable, option, *_ in _ALWAYS + _IF_SET + _LOWERED}
# Under FSDP2 the plugin never reads these from the environment; what `accelerate to-fsdp2` does with each.
_FSDP1_ONLY = {
    "fsdp_sharding_strategy": "write fsdp_reshard_after_forward: true (FULL_SHARD, HYBRID_SHARD) or false "
                              "(SHARD_GRAD_OP, NO_SHARD, HYBRID_SHARD_ZERO2) instead",
    "fsdp_use_orig_params": "FSDP2 always uses the original parameters: remove it",
    "fsdp_forward_prefetch": "FSDP2 has no forward prefetch (`accelerate to-fsdp2`: not yet implemented): remove it",
}


def launcher_env(args: dict) -> dict[str, str]:
    """The FSDP_* variables `prepare_multi_gpu_env` exports for the launch options `args`."""
    env = {}
    for variable, option, lowered in _ALWAYS:
        text = py_str(args.get(option))
        env[variable] = text.lower() if lowered else text
    for variable, option in _IF_SET:
        if args.get(option) is not None:
            env[variable] = py_str(args[option])
    for variable, option in _LOWERED:
        env[variable] = py_str(args.get(option)).lower()
    if args.get("fsdp_ignored_modules") is not None:
        env["FSDP_IGNORED_MODULES"] = py_str(args["fsdp_ignored_modules"])
    return env


def fsdp_findings(replay: Replay, model=None) -> list[Finding]:
    """Everything about an FSDP config's plugin settings (distributed_type FSDP)."""
    section = replay.fields.get("fsdp_config")
    fallback = "/fsdp_config" if isinstance(section, dict) and section else "/distributed_type"

    def where(field_name: str) -> str:
        return replay.source.get(OPTION_OF_FIELD.get(field_name, field_name), fallback)

    result = fsdp_plugin.replay({}, launcher_env(replay.args))
    findings = [_with_list_fix(f, replay) for f in fsdp_plugin.findings_of(result, where)]
    if result.version is None:
        return findings
    findings.extend(_unread(replay, result))
    findings.extend(_wrap_settings(replay, result, where))
    findings.extend(_memory_and_peft(result, where, model))
    if model is not None:
        findings.extend(_layer_classes(result, model, where))
        # imported here: dsconfig.deepspeed.model_checks reads the model table through dsconfig.accelerate,
        # whose package import reaches this module
        from ..deepspeed.model_checks import quantized_findings
        findings.extend(quantized_findings(model, "FSDP", "/distributed_type"))
    findings.extend(_use_cpu(replay))
    return findings


def _written(replay: Replay, option: str) -> bool:
    """Whether the YAML's fsdp_config sets this option."""
    return replay.source.get(option, "").startswith("/fsdp_config/")


def _unread(replay: Replay, result) -> list[Finding]:
    """ACC025/ACC026: keys the plugin of this version never reads from the environment."""
    findings = []
    for option, variable in _VARIABLE_OF_OPTION.items():
        if not _written(replay, option) or variable in result.read:
            continue
        pointer = replay.source[option]
        if result.version == 2 and option in _FSDP1_ONLY:
            findings.append(Finding(FSDP1_KEY_UNDER_FSDP2, f"{option} is an FSDP1 setting: under fsdp_version 2 the "
                                                           f"plugin never reads it, so it silently does nothing; "
                                                           f"{_FSDP1_ONLY[option]}", pointer, fails_in=SILENT,
                                    on_key=True))
        elif result.version == 1 and option == "fsdp_reshard_after_forward":
            findings.append(Finding(FSDP2_KEY_UNDER_FSDP1, _reshard_under_fsdp1(replay), pointer, fails_in=SILENT,
                                    on_key=True))
    return findings


def _reshard_under_fsdp1(replay: Replay) -> str:
    value = replay.args.get("fsdp_reshard_after_forward")
    strategy = py_str(replay.args.get("fsdp_sharding_strategy"))
    default = "" if _written(replay, "fsdp_sharding_strategy") else " when absent"
    unread = ("under fsdp_version 1 (the default when fsdp_version is absent) the plugin takes its strategy from "
              f"fsdp_sharding_strategy ({strategy}{default}) and never reads fsdp_reshard_after_forward")
    written = (f"fsdp_reshard_after_forward {py_str(value)}: `accelerate config` writes the FSDP1 strategy here, but "
               f"{unread}")
    if isinstance(value, str) and value.upper() == strategy.upper():
        return (f"{written}; it matches the strategy used today, but changing it does nothing: write "
                f"fsdp_sharding_strategy: {value} instead")
    if isinstance(value, str) and value.upper() in fsdp_plugin.SHARDING_STRATEGY_NAMES:
        return f"{written}, so the model trains with {strategy}; write fsdp_sharding_strategy: {value} instead"
    return (f"fsdp_reshard_after_forward is FSDP2's setting: {unread}; set fsdp_version: 2, or write "
            "fsdp_sharding_strategy")


def _wrap_settings(replay: Replay, result, where) -> list[Finding]:
    """ACC031: wrap settings of another policy, and a size policy that wraps nothing."""
    findings, policy = [], result.values.get("auto_wrap_policy")
    shown = policy or "NO_WRAP"
    refused = {field_name for field_name, _, _ in result.raised}
    for option, needs in (("fsdp_transformer_layer_cls_to_wrap", "TRANSFORMER_BASED_WRAP"),
                          ("fsdp_min_num_params", "SIZE_BASED_WRAP")):
        if _written(replay, option) and policy != needs and "auto_wrap_policy" not in refused:
            message = f"{option} only applies to {needs}; with auto_wrap_policy {shown} the plugin never reads it"
            findings.append(Finding(FSDP_WRAP_SETTING_UNUSED, message, replay.source[option], on_key=True))
    if policy == "SIZE_BASED_WRAP" and result.values.get("min_num_params") == 0:
        message = ("SIZE_BASED_WRAP with min_num_params 0: prepare() silently drops the policy (\"If zero, we silently "
                   "ignore it.\") and the whole model becomes one FSDP unit; set fsdp_min_num_params, e.g. 100000000")
        findings.append(Finding(FSDP_WRAP_SETTING_UNUSED, message, where("min_num_params")))
    return findings


def _memory_and_peft(result, where, model) -> list[Finding]:
    findings = []
    if result.values.get("state_dict_type") == "FULL_STATE_DICT":
        size = ""
        if model is not None and model.parameters:
            gigabytes = model.parameters * 2 / 1e9
            shown = f"{gigabytes:.0f}" if gigabytes >= 10 else f"{gigabytes:.1f}"
            size = (f": {model.name} has {model.parameters / 1e9:.2f}B parameters, about {shown} GB in bf16 on "
                    "rank 0's CPU for every checkpoint, twice that or more with fp32 optimizer states")
        message = (f"FULL_STATE_DICT: every save gathers the whole model onto rank 0 (CPU, offload_to_cpu and "
                   f"rank0_only){size}; SHARDED_STATE_DICT saves each rank's shard")
        findings.append(Finding(FSDP_FULL_STATE_DICT, message, where("state_dict_type")))
    if result.version == 1 and result.values.get("use_orig_params") is False:
        message = ("fsdp_use_orig_params false under FSDP1: if a wrapped unit holds both frozen and trainable "
                   "parameters (LoRA/PEFT, a frozen embedding), prepare() fails with \"ValueError: Must flatten "
                   "tensors with uniform requires_grad when use_orig_params=False\"; set it to true")
        findings.append(Finding(FSDP1_USE_ORIG_PARAMS_FALSE, message, where("use_orig_params"), fails_in=INITIALIZE,
                                fix="true"))
    return findings


def _layer_classes(result, model, where) -> list[Finding]:
    """ACC030: each class to wrap must be in the model (`get_module_class_from_name`)."""
    if result.values.get("auto_wrap_policy") != "TRANSFORMER_BASED_WRAP":
        return []
    names = result.values.get("transformer_cls_names_to_wrap")
    if names is None:
        return []
    missing = [name for name in names if isinstance(name, str) and name.isidentifier() and name not in model.classes]
    if not missing:  # names that are no class name at all are ACC029's
        return []
    choices = model.layer_classes()
    name = missing[0]
    guess = closest(name, choices, cutoff=0.5) or (choices[0] if choices else None)
    hint = f"; did you mean {guess}?" if guess else ""
    more = f"; {len(missing) - 1} more of the names are not in it either" if len(missing) > 1 else ""
    listed = ", ".join(choices[:6]) or "none known"
    message = (f"{name} is not a class of {model.name} (model_type {model.model_type}; its layer classes: "
               f"{listed}{more}): prepare() fails in every process with \"ValueError: Could not find the transformer "
               f"layer class {name} in the model.\"{hint}")
    return [Finding(FSDP_LAYER_CLASS_MISSING, message, where("transformer_cls_names_to_wrap"), fails_in=INITIALIZE,
                    fix=to_json(guess) if guess and len(names) == 1 else None)]


def _with_list_fix(finding: Finding, replay: Replay) -> Finding:
    """A YAML list of layer classes gets the comma-joined text as its fix."""
    value = replay.args.get("fsdp_transformer_layer_cls_to_wrap")
    if finding.rule is FSDP_LAYER_CLASS_FORMAT and isinstance(value, list) and all(isinstance(v, str) for v in value):
        finding.fix = to_json(",".join(v.strip() for v in value))
    elif finding.rule is FSDP_LAYER_CLASS_FORMAT and isinstance(value, str):
        finding.fix = to_json(",".join(part.strip() for part in value.split(",") if part.strip()))
    return finding


def _use_cpu(replay: Replay) -> list[Finding]:
    """ACC034: the multi-GPU launcher FSDP uses never exports use_cpu."""
    value = replay.fields.get("use_cpu")
    if value is None or py_str(value).lower() not in TRUE_WORDS:
        return []
    message = (f"use_cpu {brief(value)} with distributed_type FSDP: `accelerate launch` starts the multi-GPU "
               "launcher, which never exports ACCELERATE_USE_CPU, so the processes use the GPUs; use distributed_type "
               "MULTI_CPU to train on CPUs, or remove use_cpu")
    return [Finding(FSDP_USE_CPU_IGNORED, message, "/use_cpu")]

