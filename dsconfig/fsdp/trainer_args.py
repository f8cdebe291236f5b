"""The HF Trainer's FSDP settings, read as transformers 5.23 reads them, statically.

`replay` follows `TrainingArguments.__post_init__` (a `fsdp_config` string starting with `{` is JSON;
`gradient_checkpointing` is the deprecated alias of `activation_checkpointing`) and
`_process_fsdp_args` / `_apply_legacy_fsdp_to_config` step by step: `fsdp` as a bool, a string of
words or a list, `fsdp_config` as a dict or a path (opened relative to the working directory, as
`open()` does), the `fsdp_` prefix stripped, the defaults (FSDP2 unless `version` says 1), `str_to_bool`
on the boolean values. It returns the keyword arguments the Trainer hands to Accelerate's
`FullyShardedDataParallelPlugin`, and the findings: what raises (in the order the real code raises,
stopping at the first, as TrainingArguments does), what is silently dropped, what warns.
`yaml_conflicts` compares those arguments with the Accelerate YAML that launches the script.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from functools import lru_cache
from typing import NamedTuple

from ..findings import Finding
from ..phases import INITIALIZE, SILENT
from ..pointers import pointer_join
from ..rules.trainer_fsdp import (
    TRAINER_CHECKPOINTING_CONFLICT,
    TRAINER_FSDP1_ONLY_KEY,
    TRAINER_FSDP_CONFIG_UNUSED,
    TRAINER_FSDP_ERROR,
    TRAINER_FSDP_IGNORED_KEY,
    TRAINER_FSDP_TRUTHY_STRING,
    TRAINER_FSDP_WARNING,
    TRAINER_FSDP_WITH_DEEPSPEED,
    TRAINER_FSDP_WRAP_SETTING_UNUSED,
    TRAINER_FSDP_XLA,
)
from ..values import brief, closest, to_json

SCHEMA_FILE = "training-args.json"
# Keys of Accelerate's YAML `fsdp_config` (after the prefix is stripped) the Trainer spells differently.
_TRAINER_SPELLING = {
    "offload_params": "cpu_offload",
    "transformer_cls_names_to_wrap": "transformer_layer_cls_to_wrap",
    "sharding_strategy": "reshard_after_forward",
}
# Truthiness tests in _process_fsdp_args and Trainer.__init__: a string such as "false" is true there.
_TRUTHY_TESTED = ("cpu_offload", "xla", "xla_fsdp_v2", "xla_fsdp_grad_ckpt")
_BOOLEAN_WORDS = ("y", "yes", "t", "true", "on", "1", "n", "no", "f", "false", "off", "0")


@lru_cache(maxsize=1)
def schema() -> dict:
    """schemas/training-args.json (scripts/build_training_args_schema.py)."""
    from .. import package_data
    return package_data.schema_json(SCHEMA_FILE)


def fields() -> frozenset[str]:
    return frozenset(schema()["fields"])


# The transformers releases this replay models: 5.x (the FSDP2 default, `fsdp` strings deprecated). A project
# pinned below them runs another Trainer (FSDP1 by default, the `fsdp` string its documented form).
REPLAYED_MAJOR = 5


def other_transformers(start: str | None) -> str | None:
    """The project's transformers pin, as shown ("transformers==4.46.0 in requirements.txt:3"), when every pin of
    the nearest folder holding one allows no release this replay models (LLaMA-Factory's pyproject.toml allows 5.x
    while a requirements file of one optional model pins 4.57: the replay applies); None when one allows such a
    release, or the project pins none (the installed transformers is not asked: dsconfig's environment is often not
    the project's)."""
    from ..deepspeed import specifiers
    from ..deepspeed.pins import project_pins, strongest
    pins = project_pins(start, "transformers")
    if not pins or any(specifiers.is_url(pin.spec) or any(
            specifiers.allows(pin.constraint, f"{REPLAYED_MAJOR}.{minor}.0") for minor in range(100)) for pin in pins):
        return None
    pin = strongest(pins)
    return f"{pin.spec} in {pin.file}:{pin.line}"


class Replay(NamedTuple):
    kwargs: dict | None  # FullyShardedDataParallelPlugin(**kwargs), None when no plugin is built
    config: dict  # fsdp_config as _process_fsdp_args leaves it
    findings: list[Finding]
    activation_checkpointing: bool  # the training argument (or its deprecated alias), as tested


class _Raised(Exception):
    """TrainingArguments raises here; the message is what the user reads, the pointer where it is about."""

    def __init__(self, message: str, pointer: str = "/fsdp_config"):
        super().__init__(message)
        self.pointer = pointer


class NotRead(Exception):
    """dsconfig does not open the file `fsdp_config` names (a special file, outside what it may read)."""


def _str_to_bool(value, key: str, pointer: str = "/fsdp_config") -> bool:
    """transformers' `str_to_bool(str(value).lower())`."""
    text = str(value).lower()
    if text in _BOOLEAN_WORDS[:6]:
        return True
    if text in _BOOLEAN_WORDS[6:]:
        return False
    raise _Raised(f"`{key}`: str_to_bool raises ValueError: invalid truth value {text}", pointer)


def _int(value, key: str, pointer: str = "/fsdp_config") -> int:
    """`int(value)`, as the Trainer reads `version`."""
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError) as error:
        raise _Raised(f"`{key}` is {to_json(value)[:60]}: int() raises {type(error).__name__}: {error}",
                      pointer) from None


def replay(args: dict, where: Callable[[str], str] = lambda key: pointer_join("/fsdp_config", key),
           read_config: Callable[[str], object] | None = None) -> Replay:
    """The plugin kwargs and the findings for a dict of TrainingArguments values.

    `where(key)`: the pointer of a `fsdp_config` key as written (with its prefix). `read_config(path)`
    returns a `fsdp_config` file's JSON value, or raises _Raised or NotRead; None: such a file is not read."""
    findings: list[Finding] = []
    checkpointing = args.get("activation_checkpointing")
    if checkpointing is None:  # __post_init__: the deprecated alias counts when the new name is unset
        checkpointing = args.get("gradient_checkpointing")
    try:
        kwargs, config = _process(args, bool(checkpointing), where, read_config, findings)
    except _Raised as error:
        findings.append(Finding(TRAINER_FSDP_ERROR, f"TrainingArguments(...) raises: {error}", error.pointer,
                                fails_in=INITIALIZE))
        return Replay(None, {}, findings, bool(checkpointing))
    except NotRead as error:
        from ..rules.files import REFERENCE_NOT_FOLLOWED
        findings.append(Finding(REFERENCE_NOT_FOLLOWED, str(error), "/fsdp_config"))
        return Replay(None, {}, findings, bool(checkpointing))
    return Replay(kwargs, config, findings, bool(checkpointing))


def _process(args: dict, checkpointing: bool, where, read_config, findings: list[Finding]):
    """(plugin kwargs or None, fsdp_config as processed); raises _Raised where TrainingArguments raises."""
    fsdp, config = args.get("fsdp"), args.get("fsdp_config")
    if isinstance(config, str) and config.startswith("{"):
        try:  # __post_init__ parses a dict field given as JSON text
            config = json.loads(config)
        except ValueError as error:
            raise _Raised(f"fsdp_config is JSON text that json.loads rejects: {error}") from None
    if not fsdp:
        if config:
            state = to_json(fsdp) if "fsdp" in args else "not set"
            findings.append(Finding(TRAINER_FSDP_CONFIG_UNUSED, f"fsdp is {state}, so the Trainer never reads "
                                    "fsdp_config: FSDP stays off (set \"fsdp\": true to use it)", "/fsdp_config",
                                    fails_in=SILENT, on_key=True))
        return None, {}
    if isinstance(config, str):  # the keys are in another file: its findings name it, at the path's value
        own: list[Finding] = []
        kwargs, config = _process(dict(args, fsdp_config=_loaded(config, read_config)), checkpointing,
                                  lambda key: "/fsdp_config", read_config, own)
        for finding in own:
            if finding.pointer == "/fsdp_config":
                finding.message = f"in {args['fsdp_config']}: {finding.message}"
        findings.extend(own)
        return kwargs, config
    config, written = _stripped(_loaded(config, read_config), where, findings)
    if isinstance(fsdp, (str, list)):
        _legacy(fsdp, config, findings)
    if checkpointing:
        findings.append(Finding(TRAINER_FSDP_WARNING, "the Trainer warns: \"When using FSDP, prefer "
                                "`fsdp_config['activation_checkpointing']` (FSDP's own activation checkpointing) over "
                                "the `activation_checkpointing` training argument; the latter introduces a redundant "
                                "AllGather in the backward pass.\"", _checkpointing_key(args), fails_in=SILENT))
    if not config.get("xla"):
        _ignored(config, written, where, findings)
    kwargs = _plugin_kwargs(config, written, where, findings)
    if kwargs is not None:
        findings.extend(_plugin(kwargs, config, written, where))
    if args.get("deepspeed"):
        findings.append(Finding(TRAINER_FSDP_WITH_DEEPSPEED, "`fsdp` and `deepspeed` are both set: the "
                                "Accelerator runs DeepSpeed and Trainer(...) raises \"Using --fsdp xxx together with "
                                "--deepspeed is not possible, deactivate one of those flags.\"", "/deepspeed",
                                fails_in=INITIALIZE))
    if kwargs is not None and kwargs.get("activation_checkpointing") and checkpointing:
        findings.append(checkpointing_conflict(_checkpointing_key(args), "fsdp_config['activation_checkpointing']"))
    return kwargs, config


def checkpointing_conflict(pointer: str, fsdp_side: str) -> Finding:
    """ACC045: Trainer.create_accelerator_and_postprocess raises when both checkpointings are on."""
    return Finding(TRAINER_CHECKPOINTING_CONFLICT, f"activation checkpointing twice: the training argument and "
                   f"{fsdp_side}; Trainer(...) raises ValueError: \"`fsdp_config['activation_checkpointing']` (FSDP's "
                   "own activation checkpointing) and the `activation_checkpointing` training argument can't both be "
                   "set to True. Use FSDP's activation checkpointing when using FSDP.\"", pointer, fails_in=INITIALIZE)


def _checkpointing_key(args: dict) -> str:
    return "/activation_checkpointing" if args.get("activation_checkpointing") is not None \
        else "/gradient_checkpointing"


# Plugin fields under the fsdp_config key the Trainer reads them from (the others have the same name).
_CONFIG_KEY = {"fsdp_version": "version", "transformer_cls_names_to_wrap": "transformer_layer_cls_to_wrap"}


def _plugin(kwargs: dict, config: dict, written: dict, where) -> list[Finding]:
    """What `FullyShardedDataParallelPlugin(**kwargs)` does with them (Trainer.create_accelerator_and_postprocess);
    env is empty: the Trainer passes keyword arguments, and `python train.py` or torchrun sets no FSDP_* variable."""
    from ..accelerate.fsdp_plugin import plugin_findings

    def at(field_name: str) -> str:
        key = _CONFIG_KEY.get(field_name, field_name)
        return where(written.get(key, key)) if key in config and key in written else "/fsdp_config"

    return plugin_findings(kwargs, {}, at)


def _loaded(config, read_config) -> dict:
    if config is None:
        return {}
    if isinstance(config, str):
        if read_config is None:
            raise _Raised(f"fsdp_config names the file {config}, which dsconfig did not read")
        config = read_config(config)
    if not isinstance(config, dict):
        raise _Raised(f"fsdp_config is {type(config).__name__} {to_json(config)[:60]}, not a dict or a path to a "
                      "JSON file (its keys are read with .get)")
    return config


def _stripped(config: dict, where, findings: list[Finding]) -> tuple[dict, dict[str, str]]:
    """`fsdp_KEY` -> `KEY` as _process_fsdp_args renames them, and each key's spelling in the file. A key
    written both ways keeps the prefixed one's value."""
    config = dict(config)
    written = {key: key for key in config}
    for key in list(config):
        if not isinstance(key, str):  # a YAML `1:` or `!!binary` key: transformers' k.startswith("fsdp_") raises
            try:
                key.startswith("fsdp_")
            except (AttributeError, TypeError) as error:
                raise _Raised(f"fsdp_config has the key {brief(key, 40)} ({type(key).__name__}): _process_fsdp_args "
                              f"raises {type(error).__name__}: {error}") from None
            continue
        if key.startswith("fsdp_"):
            if key[5:] in config:
                findings.append(Finding(TRAINER_FSDP_IGNORED_KEY, f"`{written[key[5:]]}` is replaced by `{key}`: "
                                        "the Trainer strips the fsdp_ prefix and the prefixed key's value wins",
                                        where(written[key[5:]]), fails_in=SILENT, on_key=True))
            config[key[5:]] = config.pop(key)
            written[key[5:]] = key
    return config, written


def _legacy(fsdp, config: dict, findings: list[Finding]) -> None:
    """_apply_legacy_fsdp_to_config: the words of a string or list `fsdp` become fsdp_config entries."""
    kind = "a string" if isinstance(fsdp, str) else "a list"
    findings.append(Finding(TRAINER_FSDP_WARNING, f"`fsdp` is {kind} ({to_json(fsdp)[:60]}): deprecated, the Trainer "
                            f"warns \"Passing `fsdp` as {kind} is deprecated and will be removed in Transformers "
                            "v5.20. Use `fsdp=True` and configure everything via `fsdp_config` instead.\"", "/fsdp",
                            fails_in=SILENT))
    items = fsdp.split() if isinstance(fsdp, str) else list(fsdp)
    version = _int(config.get("version", 2), "version")
    spec = schema()["fsdp"]
    for item in items:
        if not isinstance(item, str):
            raise _Raised(f"`fsdp` holds {to_json(item)[:60]}: AttributeError: no attribute 'upper'", "/fsdp")
        if item.upper() in spec["sharding_strategies"]:
            if version != 2:
                config.setdefault("reshard_after_forward", item)
            elif item in ("full_shard", "shard_grad_op"):
                config.setdefault("reshard_after_forward", item == "full_shard")
            else:
                raise _Raised(f"`fsdp={item}` is only available with FSDP1. Set `fsdp_config['version'] = 1` to use "
                              "it, but note that FSDP1 is deprecated and will be removed in Transformers v5.20.",
                              "/fsdp")
        elif item == "offload":
            config.setdefault("cpu_offload", True)
        elif item != "auto_wrap":
            near = closest(item, spec["options"], 0.6, ignore_case=True)
            raise _Raised(f"Unknown `fsdp` option: {item}" + (f" (did you mean {near}?)" if near else
                                                               f" (write \"fsdp\": true, or one of {spec['options']})"),
                          "/fsdp")


def _ignored(config: dict, written: dict, where, findings: list[Finding]) -> None:
    """Keys _process_fsdp_args never reads, and FSDP1-only keys under FSDP2."""
    spec = schema()["fsdp"]
    read = set(spec["config_keys"])
    fsdp1_only = set(spec["fsdp1_only_keys"])
    try:
        version = int(config.get("version", 2)) if not isinstance(config.get("version"), (list, dict)) else None
    except (TypeError, ValueError, OverflowError):
        version = None  # reported when _plugin_kwargs reads it
    for key in config:
        shown = written.get(key, key)
        if key in read or (key in fsdp1_only and version != 2):
            continue
        if key in fsdp1_only:
            findings.append(Finding(TRAINER_FSDP1_ONLY_KEY, f"`{shown}` is read only for FSDP1, and this is FSDP2 "
                                    f"({'the default' if 'version' not in config else 'version 2'}): the Trainer "
                                    "ignores it", where(shown), fails_in=SILENT, on_key=True))
            continue
        hint = _TRAINER_SPELLING.get(key)
        if key == "sharding_strategy":
            hint = "the Trainer takes the strategy from `fsdp` (\"full_shard\", ...) or `reshard_after_forward`"
        elif hint:
            hint = f"the Trainer's name is `{hint}`"
        else:
            near = closest(key, read | fsdp1_only, 0.75)
            hint = f"did you mean `{near}`?" if near else "the Trainer reads " + ", ".join(sorted(read | fsdp1_only))
        findings.append(Finding(TRAINER_FSDP_IGNORED_KEY, f"`{shown}` is not a key the Trainer reads from "
                                f"fsdp_config: it is silently dropped; {hint}", where(shown), fails_in=SILENT,
                                on_key=True))


def _plugin_kwargs(config: dict, written: dict, where, findings: list[Finding]) -> dict | None:
    """The rest of _process_fsdp_args, from the shared defaults to the version branches."""
    spec = schema()["fsdp"]

    def at(key: str) -> str:
        return where(written.get(key, key)) if key in config else "/fsdp_config"

    def flag(key: str, default) -> bool:
        return _str_to_bool(config.get(key, default), key, at(key))

    config.setdefault("min_num_params", 0)
    if isinstance(config.get("transformer_layer_cls_to_wrap"), str):
        config["transformer_layer_cls_to_wrap"] = [config["transformer_layer_cls_to_wrap"]]
    for key in _TRUTHY_TESTED:
        value = config.get(key)
        if isinstance(value, str) and value.strip().lower() in _BOOLEAN_WORDS[6:] + ("",) and value:
            shown = written.get(key, key)
            findings.append(Finding(TRAINER_FSDP_TRUTHY_STRING, f"`{shown}` is the string {to_json(value)}, and the "
                                    "Trainer tests it with `if`: any non-empty string is true, so this turns "
                                    f"{key} ON; write false", where(shown), fails_in=SILENT))
    if config.get("xla"):
        findings.append(Finding(TRAINER_FSDP_XLA, "`xla` is on: the Trainer takes the PyTorch/XLA FSDP path (TPU, "
                                "needs torch_xla), builds no Accelerate FSDP plugin and ignores the other fsdp_config "
                                "keys",
                                where(written.get("xla", "xla")), fails_in=SILENT))
        return None
    if config.get("xla_fsdp_v2"):
        findings.append(Finding(TRAINER_FSDP_XLA, "`xla_fsdp_v2` is on without `xla`: Trainer(...) raises \"FSDPv2 "
                                "requires `torch_xla` 2.2 or higher.\" wherever torch_xla is not installed (any GPU "
                                "machine)", where(written.get("xla_fsdp_v2")), fails_in=INITIALIZE))
    if config.get("xla_fsdp_grad_ckpt"):
        findings.append(Finding(TRAINER_FSDP_WARNING, "the Trainer warns \"`--xla_fsdp_grad_ckpt` is useful only when "
                                "`--xla` is set to true.\" and ignores it", where(written.get("xla_fsdp_grad_ckpt")),
                                fails_in=SILENT))
    if "xla_fsdp_settings" in config:
        findings.append(Finding(TRAINER_FSDP_IGNORED_KEY, "`xla_fsdp_settings` is read only on the XLA path (`xla` "
                                "on): silently dropped", where(written["xla_fsdp_settings"]), fails_in=SILENT,
                                on_key=True))
    version = _int(config.get("version", 2), "version", at("version"))
    kwargs: dict = {"fsdp_version": version}
    if config.get("cpu_offload", False):
        kwargs["cpu_offload"] = True
    policy = config.get("auto_wrap_policy", spec["auto_wrap_policies"][0])
    if policy not in spec["auto_wrap_policies"]:
        raise _Raised(f"`auto_wrap_policy` must be one of {spec['auto_wrap_policies']}, got {policy}.",
                      at("auto_wrap_policy"))
    kwargs["auto_wrap_policy"] = policy
    minimum = config["min_num_params"]
    if policy == "SIZE_BASED_WRAP":
        if not isinstance(minimum, (int, float)):
            raise _Raised(f"`min_num_params` is {to_json(minimum)[:60]}: TypeError: '>' not supported between "
                          f"'{type(minimum).__name__}' and 'int'", at("min_num_params"))
        if minimum > 0:
            kwargs["min_num_params"] = minimum
    elif "min_num_params" in written:
        findings.append(Finding(TRAINER_FSDP_WRAP_SETTING_UNUSED, f"`{written['min_num_params']}` is read only with "
                                f"auto_wrap_policy SIZE_BASED_WRAP, and the policy is {policy}"
                                f"{'' if 'auto_wrap_policy' in config else ' (the default)'}: ignored",
                                where(written["min_num_params"]), fails_in=SILENT, on_key=True))
    classes = config.get("transformer_layer_cls_to_wrap")
    if policy == "TRANSFORMER_BASED_WRAP" and classes is not None:
        if not isinstance(classes, (list, dict)) or not all(isinstance(name, str) for name in classes):
            raise _Raised(f"`transformer_layer_cls_to_wrap` is {to_json(classes)[:60]}: \",\".join() raises "
                          "TypeError (write a class name or a list of them)", at("transformer_layer_cls_to_wrap"))
        kwargs["transformer_cls_names_to_wrap"] = ",".join(classes)
    elif "transformer_layer_cls_to_wrap" in config and policy != "TRANSFORMER_BASED_WRAP":  # null included
        shown = written.get("transformer_layer_cls_to_wrap")
        findings.append(Finding(TRAINER_FSDP_WRAP_SETTING_UNUSED, f"`{shown}` is read only with auto_wrap_policy "
                                f"TRANSFORMER_BASED_WRAP, and the policy is {policy}: ignored", where(shown),
                                fails_in=SILENT, on_key=True))
    kwargs["cpu_ram_efficient_loading"] = flag("cpu_ram_efficient_loading", "false")
    kwargs["state_dict_type"] = config.get("state_dict_type", "FULL_STATE_DICT")
    if "activation_checkpointing" in config:
        kwargs["activation_checkpointing"] = flag("activation_checkpointing", None)
    if version == 2:
        kwargs["reshard_after_forward"] = flag("reshard_after_forward", True)
        return kwargs
    findings.append(Finding(TRAINER_FSDP_WARNING, "FSDP1: the Trainer warns \"FSDP1 (`fsdp_config['version'] = 1`) is "
                            "deprecated and will be removed in Transformers v5.20. Please migrate to FSDP2 by setting "
                            "`fsdp_config['version'] = 2` (the default).\"", at("version"), fails_in=SILENT))
    kwargs["reshard_after_forward"] = str(config.get("reshard_after_forward", "full_shard")).lower()
    kwargs["forward_prefetch"] = flag("forward_prefetch", "false")
    prefetch = config.get("backward_prefetch", "NO_PREFETCH")
    if not isinstance(prefetch, str):
        raise _Raised(f"`backward_prefetch` is {to_json(prefetch)[:60]}: AttributeError: no attribute 'upper'",
                      at("backward_prefetch"))
    kwargs["backward_prefetch"] = prefetch.upper()
    kwargs["use_orig_params"] = flag("use_orig_params", "true")
    kwargs["sync_module_states"] = flag("sync_module_states", "true")
    if "limit_all_gathers" in config:
        kwargs["limit_all_gathers"] = flag("limit_all_gathers", None)
    return kwargs


def read_config_file(base_boundary, named_from: str):
    """A `read_config` for replay: the path is opened relative to the working directory, as transformers'
    `open(self.fsdp_config)` does, and only where the reading boundary lets dsconfig read (dsconfig.boundary:
    under the paths given, `base_boundary`'s roots, or the folder of the file naming it)."""
    from ..boundary import inside, refusal
    from ..files import FileError, read_json

    def read(path: str):
        beside = os.path.join(os.path.dirname(named_from), path)
        if not os.path.exists(path):
            note = f"; {beside} exists, but the path is relative to the working directory the training starts " \
                   "in, not to this file" if not os.path.isabs(path) and os.path.exists(beside) else ""
            raise _Raised(f"fsdp_config names {path}: open() raises FileNotFoundError (relative to the working "
                          f"directory){note}")
        real = os.path.realpath(path)
        folder = os.path.dirname(os.path.abspath(named_from))  # as for the JSON an Accelerate YAML names
        why = refusal(path, beside=folder) or (None if any(inside(real, root) for root in base_boundary.roots)
                                               or inside(real, os.path.realpath(folder)) else "outside the paths given")
        if why is not None:
            raise NotRead(f"fsdp_config names {path}, which dsconfig does not open ({why}; --allow-read it): its keys "
                          "are not checked")
        try:
            return read_json(path, beside=folder)
        except FileError as error:
            raise _Raised(f"fsdp_config file: json.load fails: {error}") from None
    return read


# Accelerate YAML fsdp_config keys (prefixed, as the launcher reads them) -> the plugin field their FSDP_*
# variable fills when the Trainer's keyword arguments leave it unset.
_YAML_FIELDS = {
    "fsdp_version": "fsdp_version", "fsdp_offload_params": "cpu_offload", "fsdp_auto_wrap_policy": "auto_wrap_policy",
    "fsdp_min_num_params": "min_num_params", "fsdp_transformer_layer_cls_to_wrap": "transformer_cls_names_to_wrap",
    "fsdp_cpu_ram_efficient_loading": "cpu_ram_efficient_loading", "fsdp_state_dict_type": "state_dict_type",
    "fsdp_activation_checkpointing": "activation_checkpointing", "fsdp_reshard_after_forward": "reshard_after_forward",
    "fsdp_forward_prefetch": "forward_prefetch", "fsdp_backward_prefetch": "backward_prefetch",
    "fsdp_use_orig_params": "use_orig_params", "fsdp_sync_module_states": "sync_module_states",
}


def _same(yaml_value, trainer_value) -> bool:
    """Whether the plugin would see the same setting from the YAML's FSDP_* variable and from the Trainer."""
    def norm(value):
        text = str(value).strip().lower()
        if text in _BOOLEAN_WORDS:
            return _BOOLEAN_WORDS.index(text) < 6
        return text
    return norm(yaml_value) == norm(trainer_value)


def yaml_conflicts(yaml_value: dict, args: dict) -> list[Finding]:
    """What the Trainer does with the Accelerate YAML that launches it (pointers into the YAML): DeepSpeed and
    FSDP both asked for, activation checkpointing twice, YAML fsdp_config values the Trainer's plugin arguments
    replace."""
    kind = yaml_value.get("distributed_type")
    trainer = replay(args)
    if kind == "DEEPSPEED" and trainer.kwargs is not None:
        return [Finding(TRAINER_FSDP_WITH_DEEPSPEED, "this YAML launches DeepSpeed and the training arguments turn on "
                        "`fsdp`: the Accelerator runs DeepSpeed and Trainer(...) raises \"Using --fsdp xxx together "
                        "with --deepspeed is not possible, deactivate one of those flags.\"", "/distributed_type",
                        fails_in=INITIALIZE)]
    if kind != "FSDP":
        return []
    if args.get("deepspeed") and not args.get("fsdp"):
        return [Finding(TRAINER_FSDP_WITH_DEEPSPEED, "this YAML launches FSDP but the training arguments name a "
                        "`deepspeed` config: the Accelerator gets a DeepSpeed plugin, which wins, and fsdp_config is "
                        "silently ignored", "/distributed_type", fails_in=SILENT)]
    section = yaml_value.get("fsdp_config")
    section = section if isinstance(section, dict) else {}
    prefixed = {(key if key.startswith("fsdp_") else "fsdp_" + key): key for key in section if isinstance(key, str)}
    findings = []
    yaml_checkpointing = "fsdp_activation_checkpointing" in prefixed and \
        _same(section[prefixed["fsdp_activation_checkpointing"]], True)
    overridden = trainer.kwargs is not None and "activation_checkpointing" in trainer.kwargs
    if trainer.activation_checkpointing and yaml_checkpointing and not overridden:
        findings.append(checkpointing_conflict(pointer_join("/fsdp_config", prefixed["fsdp_activation_checkpointing"]),
                                               "this YAML's fsdp_activation_checkpointing"))
    if trainer.kwargs is None:
        return findings
    for name, key in prefixed.items():
        field_name = _YAML_FIELDS.get(name)
        if field_name in trainer.kwargs and not _same(section[key], trainer.kwargs[field_name]):
            findings.append(Finding(TRAINER_FSDP_WARNING, f"`{key}: {to_json(section[key])}` is replaced by the "
                                    f"Trainer's {field_name}={to_json(trainer.kwargs[field_name])} from the training "
                                    "arguments' fsdp_config: the Trainer builds the FSDP plugin itself and this YAML "
                                    "only fills what it leaves unset", pointer_join("/fsdp_config", key),
                                    fails_in=SILENT))
    return findings
