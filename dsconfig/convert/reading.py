"""Reading what `dsconfig convert` converts, as the real readers read it, with one-line errors.

A ds_config.json is read as DeepSpeed reads a path (hjson, dsconfig.document); an Accelerate YAML
as `yaml.safe_load` reads it (dsconfig.yamldoc), with `fsdp_config` keys given the `fsdp_` prefix
the launcher adds (accelerate/commands/launch.py `_validate_launch_command`). Every problem is a
ConvertError whose message starts with the file and, where there is one, the line and column.
"""

from __future__ import annotations

import os
from typing import NamedTuple

from ..values import py_str

YAML_SUFFIXES = (".yaml", ".yml")
# Accelerate's inline deepspeed_config keys and the ds_config.json fields DeepSpeedPlugin writes them to
# (accelerate/utils/dataclasses.py, DeepSpeedPlugin.__post_init__).
INLINE_DEEPSPEED = {
    "gradient_accumulation_steps": ("gradient_accumulation_steps",),
    "gradient_clipping": ("gradient_clipping",),
    "zero_stage": ("zero_optimization", "stage"),
    "offload_optimizer_device": ("zero_optimization", "offload_optimizer", "device"),
    "offload_param_device": ("zero_optimization", "offload_param", "device"),
    "zero3_save_16bit_model": ("zero_optimization", "stage3_gather_16bit_weights_on_model_save"),
}
INLINE_DEFAULTS = {"zero_stage": 2, "offload_optimizer_device": "none", "offload_param_device": "none"}


class ConvertError(Exception):
    """One line for the user: `file[:line:col]: what is wrong`."""


class DeepSpeedSource(NamedTuple):
    config: dict  # the ds_config as DeepSpeed receives it (inline YAML settings turned into one)
    json_path: str | None
    yaml: dict | None  # the Accelerate YAML that launches it, as safe_load reads it
    yaml_path: str | None
    doc: object = None  # the YAML's document (positions)


class FsdpSource(NamedTuple):
    path: str
    config: dict  # the whole YAML
    fsdp: dict  # fsdp_config, every key with the launcher's fsdp_ prefix
    written: dict  # prefixed key -> the key as written
    doc: object  # the YAML's document (positions)

    def pointer(self, key: str) -> str:
        from ..pointers import pointer_join
        return pointer_join("/fsdp_config", str(self.written.get(key, key)))


def _text(path: str, beside: str | None = None) -> str:
    """The file's text, through the reading boundary (`beside`: the folder of the YAML naming it)."""
    from ..files import FileError, read_text
    try:
        return read_text(path, beside=beside)
    except FileError as error:
        raise ConvertError(str(error)) from None


def _at(doc, pointer: str, message: str, on_key: bool = False) -> ConvertError:
    line, column = doc.locate(pointer, on_key=on_key)
    return ConvertError(f"{doc.path}:{line}:{column}: {message}")


def read_json(path: str, beside: str | None = None) -> dict:
    from ..document import JsonDocument
    doc = JsonDocument(path, _text(path, beside))
    if doc.scan_error is not None:
        line, column = doc.position(doc.scan_error.offset)
        raise ConvertError(f"{path}:{line}:{column}: DeepSpeed cannot load it: {doc.scan_error.message}")
    if not isinstance(doc.hjson_value, dict):
        raise ConvertError(f"{path}:1:1: not a DeepSpeed config: the top level is not an object")
    return doc.hjson_value


def read_yaml(path: str):
    """(value, document) of an Accelerate YAML whose top level is a mapping."""
    from ..yamldoc import YamlDocument
    doc = YamlDocument(path, _text(path))
    if doc.error is not None:
        line, column = doc.position(doc.error.offset)
        raise ConvertError(f"{path}:{line}:{column}: not valid YAML: {doc.error.message}")
    if not isinstance(doc.value, dict):
        raise ConvertError(f"{path}:1:1: not an Accelerate config: the top level is not a mapping")
    return doc.value, doc


def is_yaml(path: str) -> bool:
    return path.lower().endswith(YAML_SUFFIXES)


def _section(doc, config: dict, key: str) -> dict:
    section = config.get(key)
    if section is None:
        return {}
    if not isinstance(section, dict):
        raise _at(doc, "/" + key, f"{key} is not a mapping (Accelerate reads it as one)")
    return section


def _distributed_type(doc, config: dict, wanted: str, instead: str) -> None:
    found = config.get("distributed_type")
    if found is None or py_str(found) != wanted:
        shown = "missing" if found is None else f"{py_str(found)!r}"
        raise _at(doc, "/distributed_type", f"distributed_type is {shown}, not {wanted}: {instead}", on_key=True)


def deepspeed_source(paths: tuple[str, ...]) -> DeepSpeedSource:
    """A ds_config.json, an Accelerate YAML that launches DeepSpeed, or both."""
    yamls = [p for p in paths if is_yaml(p)]
    jsons = [p for p in paths if not is_yaml(p)]
    if len(yamls) > 1 or len(jsons) > 1:
        raise ConvertError("--to fsdp takes one ds_config.json and/or one Accelerate YAML")
    json_path = jsons[0] if jsons else None
    if not yamls:
        return DeepSpeedSource(read_json(json_path), json_path, None, None)
    yaml_path = yamls[0]
    config, doc = read_yaml(yaml_path)
    _distributed_type(doc, config, "DEEPSPEED", "--to fsdp converts a DeepSpeed launch")
    section = _section(doc, config, "deepspeed_config")
    named = section.get("deepspeed_config_file")
    if json_path is None and named is not None and py_str(named) != "none":
        from ..pairs import resolve
        found, how = resolve(yaml_path, py_str(named))
        if found is None:
            raise _at(doc, "/deepspeed_config/deepspeed_config_file",
                      f"deepspeed_config_file {py_str(named)} not found ({how}); name the JSON too")
        from ..boundary import refusal
        beside = os.path.dirname(os.path.abspath(yaml_path))
        why = refusal(found, beside=beside)
        if why is not None:  # the same rule as lint's DS009: only the files given and those beside the YAML
            raise _at(doc, "/deepspeed_config/deepspeed_config_file",
                      f"deepspeed_config_file {py_str(named)}: {why}; dsconfig reads only the files it is given and "
                      "those beside the YAML: name the JSON too")
        return DeepSpeedSource(read_json(found, beside), found, config, yaml_path, doc)
    if json_path is not None:
        return DeepSpeedSource(read_json(json_path), json_path, config, yaml_path, doc)
    return DeepSpeedSource(inline_config(section, config), None, config, yaml_path, doc)


class LaunchNumbers(NamedTuple):
    num_processes: int
    num_machines: int
    main_process_ip: str | None
    main_process_port: int | None


def launch_numbers(doc, config: dict) -> LaunchNumbers:
    """The launch keys a conversion carries over, refused where `accelerate launch` would fail on them: it
    computes num_processes // num_machines with the values as loaded (a string raises TypeError there)."""
    numbers = {}
    for key, default, most in (("num_processes", 1, 1 << 20), ("num_machines", 1, 1 << 16),
                               ("main_process_port", None, 65535)):
        value = config.get(key)
        if value is None:
            numbers[key] = default
        elif isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= most:
            raise _at(doc, "/" + key, f"{key} {py_str(value)[:40]!r} is not a whole number from 1 to {most}")
        else:
            numbers[key] = value
    if numbers["num_processes"] % numbers["num_machines"]:
        raise _at(doc, "/num_processes", f"num_processes {numbers['num_processes']} is not a multiple of "
                  f"num_machines {numbers['num_machines']} (it is the total over all machines)")
    ip = config.get("main_process_ip")
    return LaunchNumbers(numbers["num_processes"], numbers["num_machines"], None if ip is None else py_str(ip),
                         numbers["main_process_port"])


def inline_config(section: dict, config: dict) -> dict:
    """The ds_config DeepSpeedPlugin builds from inline deepspeed_config keys and mixed_precision."""
    out: dict = {}
    for key, path in INLINE_DEEPSPEED.items():
        value = section.get(key, INLINE_DEFAULTS.get(key))
        if value is None:
            continue
        node = out
        for part in path[:-1]:
            node = node.setdefault(part, {})
        node[path[-1]] = value
    precision = py_str(config.get("mixed_precision", "no")).lower()
    if precision in ("bf16", "fp16"):
        out[precision] = {"enabled": True}
    return out


def fsdp_source(path: str) -> FsdpSource:
    config, doc = read_yaml(path)
    _distributed_type(doc, config, "FSDP", "--to deepspeed converts an Accelerate FSDP config")
    section = _section(doc, config, "fsdp_config")
    written = {(key if str(key).startswith("fsdp_") else f"fsdp_{key}"): key for key in section}
    fsdp = {prefixed: section[key] for prefixed, key in written.items()}
    return FsdpSource(path, config, fsdp, written, doc)


def model_type(model: str) -> tuple[str, str]:
    """(model_type, name) of a catalog model or a Hugging Face config.json given to --model."""
    from ..estimate import catalog
    entry = catalog.lookup(model)
    if entry is not None:
        return entry.config["model_type"], entry.name
    if not (os.path.exists(model) or model.endswith(".json")):
        raise ConvertError(f"--model: {model!r} is neither a catalog model (dsconfig estimate --list-models) nor a "
                           "config.json")
    from ..files import FileError
    from ..files import read_json as read_strict
    try:
        config = read_strict(model)
    except FileError as error:
        raise ConvertError(f"--model: {error}") from None
    if not isinstance(config, dict) or not isinstance(config.get("model_type"), str):
        raise ConvertError(f"--model: {model} has no model_type")
    return config["model_type"], model
