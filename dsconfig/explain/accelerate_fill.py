"""What Accelerate (1.15) does to the DeepSpeed config between `accelerate launch` and DeepSpeed.

`accelerate launch` turns the YAML's `deepspeed_config` keys (and its own command-line flags, which
win over the YAML) into environment variables (utils/launch.py `prepare_deepspeed_cmd_env`). In the
training process `DeepSpeedPlugin.__post_init__` reads them back: with a JSON config it fills the
JSON's "auto" at eight mapped keys (a concrete JSON value wins, silently), adds
`gradient_accumulation_steps: 1` when the key is missing; without one it builds the config from the
variables. Either way it forces `steps_per_print` to infinity. `set_mixed_precision` then adds the
fp16/bf16 blocks, and `Accelerator.prepare()` fills what is still "auto" (dataloader batch size,
clipping 1.0, ...). Every step here is that code, on plain dicts.
"""

from __future__ import annotations

import copy
from typing import NamedTuple

from ..deepspeed.hidden_fills import FORMULAS
from ..values import py_str

# DeepSpeedPlugin's plugin_to_config_mapping: attribute -> the dotted ds_config key it fills.
MAPPED = {
    "gradient_accumulation_steps": "gradient_accumulation_steps",
    "gradient_clipping": "gradient_clipping",
    "zero_stage": "zero_optimization.stage",
    "offload_optimizer_device": "zero_optimization.offload_optimizer.device",
    "offload_param_device": "zero_optimization.offload_param.device",
    "offload_param_nvme_path": "zero_optimization.offload_param.nvme_path",
    "offload_optimizer_nvme_path": "zero_optimization.offload_optimizer.nvme_path",
    "zero3_save_16bit_model": "zero_optimization.stage3_gather_16bit_weights_on_model_save",
}

# The variable each launch option is exported as, and how (prepare_deepspeed_cmd_env). The two nvme
# paths have launch options but are never exported (an Accelerate bug: the plugin always sees "none").
ENVIRONMENT = {
    "zero_stage": ("ACCELERATE_DEEPSPEED_ZERO_STAGE", str),
    "gradient_accumulation_steps": ("ACCELERATE_GRADIENT_ACCUMULATION_STEPS", str),
    "gradient_clipping": ("ACCELERATE_GRADIENT_CLIPPING", lambda v: str(v).lower()),
    "offload_optimizer_device": ("ACCELERATE_DEEPSPEED_OFFLOAD_OPTIMIZER_DEVICE", lambda v: str(v).lower()),
    "offload_param_device": ("ACCELERATE_DEEPSPEED_OFFLOAD_PARAM_DEVICE", lambda v: str(v).lower()),
    "zero3_init_flag": ("ACCELERATE_DEEPSPEED_ZERO3_INIT", lambda v: str(v).lower()),
    "zero3_save_16bit_model": ("ACCELERATE_DEEPSPEED_ZERO3_SAVE_16BIT_MODEL", lambda v: str(v).lower()),
    "deepspeed_config_file": ("ACCELERATE_DEEPSPEED_CONFIG_FILE", str),
}


class PluginError(Exception):
    """DeepSpeedPlugin (or prepare()) raises: the message is Accelerate's."""


def launch_environment(launch_args: dict, yaml_fields: list[str]) -> dict[str, str]:
    """The variables `accelerate launch` exports for DeepSpeed from its options (after the YAML);
    `yaml_fields` are the keys the YAML's deepspeed_config holds, plus mixed_precision when the YAML
    (not a flag) gave it: ACCELERATE_CONFIG_DS_FIELDS, lower-cased."""
    env = {"ACCELERATE_MIXED_PRECISION": py_str(launch_args.get("mixed_precision") or "no").lower(),
           "ACCELERATE_CONFIG_DS_FIELDS": ",".join(yaml_fields).lower()}
    for option, (name, text) in ENVIRONMENT.items():
        value = launch_args.get(option)
        if value is not None:
            env[name] = text(value)
    return env


def plugin_settings(env: dict[str, str]) -> dict:
    """DeepSpeedPlugin's attributes after the first part of __post_init__ (values from the environment)."""
    gas = env.get("ACCELERATE_GRADIENT_ACCUMULATION_STEPS", "auto")
    clipping = env.get("ACCELERATE_GRADIENT_CLIPPING", "auto")
    try:
        return {
            "gradient_accumulation_steps": int(gas) if gas.isdigit() else gas,
            "gradient_clipping": clipping if clipping == "auto" else float(clipping),
            "zero_stage": int(env.get("ACCELERATE_DEEPSPEED_ZERO_STAGE", 2)),
            "offload_optimizer_device": env.get("ACCELERATE_DEEPSPEED_OFFLOAD_OPTIMIZER_DEVICE", "none"),
            "offload_param_device": env.get("ACCELERATE_DEEPSPEED_OFFLOAD_PARAM_DEVICE", "none"),
            "offload_optimizer_nvme_path": env.get("ACCELERATE_DEEPSPEED_OFFLOAD_OPTIMIZER_NVME_PATH", "none"),
            "offload_param_nvme_path": env.get("ACCELERATE_DEEPSPEED_OFFLOAD_PARAM_NVME_PATH", "none"),
            "zero3_save_16bit_model": env.get("ACCELERATE_DEEPSPEED_ZERO3_SAVE_16BIT_MODEL", "false").lower()
            == "true",
        }
    except ValueError as error:
        raise PluginError(f"{type(error).__name__}: {error}") from None


# _deepspeed_config_checks: the YAML keys (ACCELERATE_CONFIG_DS_FIELDS) that make a JSON config raise.
REFUSED_WITH_JSON = ("gradient_accumulation_steps", "gradient_clipping", "zero_stage", "offload_optimizer_device",
                     "offload_param_device", "offload_param_nvme_path", "offload_optimizer_nvme_path",
                     "zero3_save_16bit_model", "mixed_precision")


def _config_file_checks(env: dict[str, str]) -> None:
    fields = env.get("ACCELERATE_CONFIG_DS_FIELDS", "").split(",")
    if any(name in REFUSED_WITH_JSON for name in fields):
        raise PluginError(f"ValueError: When using `deepspeed_config_file`, the following accelerate config variables "
                          f"will be ignored: {list(REFUSED_WITH_JSON)}.")


def _node(config: dict, dotted: str):
    """HfDeepSpeedConfig.find_config_node: (the dict holding the last key, the key), or (None, key) when a
    parent is missing or null. A parent that is something else (`"zero_optimization": false`) makes the
    real code call .get() on it: AttributeError, raised here as PluginError."""
    *parents, last = dotted.split(".")
    node = config
    for part in parents:
        node = _get(node, part)
        if node is None:
            return None, last
    _get(node, last)
    return node, last


def _get(node, key):
    if not isinstance(node, dict):
        raise PluginError(f"AttributeError: '{type(node).__name__}' object has no attribute 'get'")
    return node.get(key)


def post_init(config: dict | None, settings: dict, env: dict[str, str]) -> dict:
    """DeepSpeedPlugin.__post_init__ on a JSON config (None: no config file, build one)."""
    if config is not None:
        config = copy.deepcopy(config)
        if "gradient_accumulation_steps" not in config:
            config["gradient_accumulation_steps"] = 1
        if "zero_optimization" not in config:
            raise PluginError("ValueError: Please specify the ZeRO optimization config in the DeepSpeed config.")
        _config_file_checks(env)
        for attribute, dotted in MAPPED.items():  # fill_match(..., must_match=False): only "auto" is replaced
            node, key = _node(config, dotted)
            if node is not None and node.get(key) == "auto":
                node[key] = settings[attribute]
    else:
        config = {
            "train_batch_size": "auto",
            "train_micro_batch_size_per_gpu": "auto",
            "gradient_accumulation_steps": settings["gradient_accumulation_steps"],
            "zero_optimization": {
                "stage": settings["zero_stage"],
                "offload_optimizer": {
                    "device": settings["offload_optimizer_device"],
                    "nvme_path": settings["offload_optimizer_nvme_path"]
                    if settings["offload_optimizer_device"] == "nvme" else None,
                },
                "offload_param": {
                    "device": settings["offload_param_device"],
                    "nvme_path": settings["offload_param_nvme_path"]
                    if settings["offload_param_device"] == "nvme" else None,
                },
                "stage3_gather_16bit_weights_on_model_save": settings["zero3_save_16bit_model"],
            },
        }
        if settings["gradient_clipping"]:
            config["gradient_clipping"] = settings["gradient_clipping"]
    config["steps_per_print"] = float("inf")  # "this will stop deepspeed from logging @ stdout"
    return config


class PrepareFill(NamedTuple):
    dotted: str
    value: object  # UNRESOLVED when only the script knows it
    how: str


UNRESOLVED = object()


def prepare_fills(config: dict, world_size: int, gradient_accumulation: int | None,
                  hidden_size: int | None) -> list[PrepareFill]:
    """What `Accelerator._prepare_deepspeed` puts in the "auto" keys. `gradient_accumulation` is the
    Accelerator's own value (the YAML's, else what the script passes: None when unknown);
    `hidden_size` the model's (None: unknown)."""
    micro = config.get("train_micro_batch_size_per_gpu")
    micro_known = isinstance(micro, int) and not isinstance(micro, bool)
    fills = [PrepareFill("train_micro_batch_size_per_gpu", UNRESOLVED,
                         "the batch_size of the DataLoader the script passes to prepare()")]
    gas = config.get("gradient_accumulation_steps")
    if gas == "auto":
        gas = gradient_accumulation if gradient_accumulation is not None else UNRESOLVED
        fills.append(PrepareFill("gradient_accumulation_steps", gas,
                                 "the Accelerator's gradient_accumulation_steps (1 unless the script passes another)"))
    if micro_known and isinstance(gas, int):
        fills.append(PrepareFill("train_batch_size", micro * gas * world_size,
                                 f"train_micro_batch_size_per_gpu {micro} × gradient_accumulation_steps {gas} × "
                                 f"{world_size} processes"))
    else:
        fills.append(PrepareFill("train_batch_size", UNRESOLVED, "the DataLoader's batch_size × "
                                 f"gradient_accumulation_steps × {world_size} processes"))
    fills.append(PrepareFill("gradient_clipping", 1.0, "Accelerate's fixed fill"))
    fills.append(PrepareFill("zero_optimization.stage3_gather_16bit_weights_on_model_save", False,
                             "Accelerate's fixed fill"))
    for dotted, (how, formula) in FORMULAS.items():
        value = UNRESOLVED if hidden_size is None else formula(hidden_size)
        fills.append(PrepareFill(dotted, value, f"{how} of the model's hidden_size"
                                 + (f" {hidden_size}" if hidden_size is not None else " (give --model)")))
    for dotted, how in (("optimizer.params.lr", "the lr of the DummyOptim the script passes"),
                        ("optimizer.params.weight_decay", "the weight_decay of the DummyOptim the script passes"),
                        ("scheduler.params.warmup_max_lr", "the DummyOptim's lr"),
                        ("scheduler.params.warmup_num_steps", "the DummyScheduler's warmup_num_steps"),
                        ("scheduler.params.total_num_steps", "the DummyScheduler's total_num_steps")):
        fills.append(PrepareFill(dotted, UNRESOLVED, how))
    fills.append(PrepareFill("scheduler.params.warmup_min_lr", 0, "0, with the DummyScheduler"))
    return fills


def apply_fills(config: dict, fills: list[PrepareFill]) -> list[PrepareFill]:
    """Put each known value where the config still says "auto"; the fills that applied."""
    applied = []
    for fill in fills:
        try:
            node, key = _node(config, fill.dotted)
        except PluginError:  # post_init already raised on such a config
            continue
        if node is not None and node.get(key) == "auto":
            if fill.value is not UNRESOLVED:
                node[key] = fill.value
            applied.append(fill)
    return applied
