#!/usr/bin/env python3
"""Generate schemas/accelerate.schema.json from the installed Accelerate plus hand-written descriptions.

Dev-time only: this imports accelerate (and so torch). The linter never does; it reads the
generated JSON. What is introspected:

* the top-level keys: the fields of `ClusterConfig` and `SageMakerConfig` (type, default), which is
  exactly what `load_config_from_file` accepts (any other key raises "had unknown keys");
* the sub-dict keys: the options of `accelerate launch` (`launch_command_parser()`), group by
  group, because `_validate_launch_command` copies every sub-dict key onto the launch namespace
  and only keys with an option of that name are ever read (accelerate/commands/launch.py). `accelerate config`
  itself writes some keys nothing reads (fp8_config `amax_history_length`, ...), so its
  questionnaire is not a source;
* the prefix rules of `_validate_launch_command` (fsdp_config keys get `fsdp_`, ...);
* which deepspeed_config keys `prepare_deepspeed_cmd_env` exports, and which ones
  `DeepSpeedPlugin._deepspeed_config_checks` refuses next to `deepspeed_config_file`.

    python scripts/build_accelerate_schema.py           # (re)write the schema
    python scripts/build_accelerate_schema.py --check   # exit 1 if the committed schema is stale
"""

from __future__ import annotations

import argparse
import dataclasses
import enum
import inspect
import json
import logging
import pathlib
import re
import sys
import typing
import warnings

from generated import write_or_check  # scripts/ is on sys.path when a script runs

ROOT = pathlib.Path(__file__).resolve().parents[1]
OUTPUT = ROOT / "schemas" / "accelerate.schema.json"

# Sub-dict -> the `accelerate launch` option group its keys must name (after prefixing).
SECTION_GROUPS = {
    "deepspeed_config": "DeepSpeed Arguments",
    "fsdp_config": "FSDP Arguments",
    "fp8_config": "FP8 Arguments",
    "dynamo_config": None,  # the dynamo_* options sit in "Resource Selection Arguments"
    "parallelism_config": "ParallelismConfig Arguments",
    "megatron_lm_config": "Megatron-LM Arguments",
    "mpirun_config": "MPI Arguments",
}
# Keys the old config format had; process_config migrates them before the unknown-key check.
LEGACY = {
    "fp16": {"type": "boolean", "description": "Legacy (before mixed_precision existed): `fp16: true` becomes "
                                               "`mixed_precision: fp16` when mixed_precision is absent. Accelerate "
                                               "drops the key while loading."},
    "dynamo_backend": {"type": "string", "description": "Legacy: moved into `dynamo_config.dynamo_backend` while "
                                                        "loading (\"NO\" gives an empty dynamo_config). It replaces "
                                                        "any dynamo_config written next to it."},
}

TOP_DESCRIPTIONS = {
    "compute_environment": "LOCAL_MACHINE (the default) or AMAZON_SAGEMAKER. Any other value makes Accelerate "
                           "load the file as a SageMaker config.",
    "distributed_type": "Required. Picks the launcher: DEEPSPEED runs the DeepSpeed launcher, MULTI_* / FSDP / "
                        "MEGATRON_LM run torchrun, XLA the TPU launcher, NO a single process. Quote \"NO\": "
                        "unquoted, YAML 1.1 reads it as the boolean false.",
    "mixed_precision": "no, fp16, bf16 or fp8 (checked when `accelerate launch` builds the environment). Quote "
                       "'no': unquoted, YAML reads it as false and the launch fails with AttributeError. Must be "
                       "absent when deepspeed_config.deepspeed_config_file is set.",
    "use_cpu": "Run on CPU only.",
    "debug": "Check collective operations for mismatched shapes (slower).",
    "num_processes": "The TOTAL number of processes over all machines (not per machine). Each machine runs "
                     "num_processes // num_machines. Required unless distributed_type is NO (launch fails with "
                     "\"You need to manually pass in `--num_processes`\").",
    "machine_rank": "This machine's rank, 0 to num_machines - 1 (each machine has its own copy of the file).",
    "num_machines": "Number of machines (nodes).",
    "gpu_ids": "Comma-separated GPU ids for this machine, or \"all\"; becomes CUDA_VISIBLE_DEVICES. Write it as "
               "a string: an unquoted single number is an integer and the launch fails.",
    "main_process_ip": "IP address of the machine with rank 0 (multi-machine runs).",
    "main_process_port": "Port of the rank-0 machine; 29500 when unset, 0 picks a free port.",
    "rdzv_backend": "torchrun rendezvous backend (static, c10d, ...).",
    "same_network": "Multi-machine: true uses master_addr/master_port, false an rdzv_endpoint.",
    "main_training_function": "Name of the function to launch (TPU only).",
    "enable_cpu_affinity": "Bind each process to the CPU cores closest to its GPU.",
    "fp8_config": "FP8 settings; keys are the `accelerate launch --fp8_*` options, with or without the `fp8_` "
                  "prefix.",
    "deepspeed_config": "DeepSpeed launcher and plugin settings; keys are the `accelerate launch` DeepSpeed "
                        "options, written as is. ds_config.json keys do not belong here: Accelerate ignores them.",
    "fsdp_config": "FSDP settings; keys are the `accelerate launch --fsdp_*` options, with or without the "
                   "`fsdp_` prefix.",
    "parallelism_config": "ParallelismConfig settings; keys are the `accelerate launch --parallelism_config_*` "
                          "options, written with the prefix.",
    "megatron_lm_config": "Megatron-LM settings; keys are the `--megatron_lm_*` options, written with the prefix.",
    "mpirun_config": "MPI settings for MULTI_CPU runs (mpirun_hostfile).",
    "dynamo_config": "torch.compile settings; keys are the `--dynamo_*` options, with or without the `dynamo_` "
                     "prefix.",
    "downcast_bf16": "TPU + bf16 only: cast float to bfloat16 and keep double in float32. Tested for "
                     "truthiness, so the string 'no' that `accelerate config` writes turns it on.",
    "tpu_name": "TPU pod name.",
    "tpu_zone": "TPU pod zone.",
    "tpu_use_cluster": "Launch on a TPU pod.",
    "tpu_use_sudo": "Use sudo when running the TPU pod commands.",
    "command_file": "File with the commands to run on the TPU pod.",
    "commands": "Commands to run on the TPU pod.",
    "tpu_vm": "TPU VM names.",
    "tpu_env": "Environment variables for the TPU pod.",
    "ec2_instance_type": "Required for SageMaker: the EC2 instance type.",
    "iam_role_name": "Required for SageMaker: the IAM role.",
    "additional_args": "Extra arguments passed to the SageMaker estimator.",
}

DEEPSPEED_DESCRIPTIONS = {
    "deepspeed_config_file": "Path to a ds_config.json. The training processes open it relative to the directory "
                             "`accelerate launch` runs in. With it, only zero3_init_flag and the launcher keys may "
                             "stay here, and top-level mixed_precision must go.",
    "zero_stage": "ZeRO stage 0-3 (2 when unset).",
    "offload_optimizer_device": "none, cpu or nvme. NVMe needs nvme_path, which only ds_config.json can give.",
    "offload_param_device": "none, cpu or nvme; ZeRO-3 only. NVMe needs nvme_path, which only ds_config.json can "
                            "give.",
    "offload_optimizer_nvme_path": "Never exported by `accelerate launch` (1.15): DeepSpeed receives \"none\". "
                                   "Set nvme_path in ds_config.json instead.",
    "offload_param_nvme_path": "Never exported by `accelerate launch` (1.15): DeepSpeed receives \"none\". Set "
                               "nvme_path in ds_config.json instead.",
    "gradient_accumulation_steps": "Replaces the \"auto\" default; the HF Trainer then rejects any other value than "
                                   "its own --gradient_accumulation_steps.",
    "gradient_clipping": "Gradient clipping norm (\"auto\": 1.0 when prepare() fills it).",
    "zero3_init_flag": "Build the model under deepspeed.zero.Init (ZeRO-3 only; ignored with a warning otherwise).",
    "zero3_save_16bit_model": "Gather 16-bit weights when saving (stage3_gather_16bit_weights_on_model_save; "
                              "ZeRO-3 only). Only the text 'true' (or YAML true) turns it on.",
    "deepspeed_hostfile": "Hostfile for the pdsh/openmpi/mvapich/mpich/slurm/nossh launchers. Without it "
                          "DeepSpeed trains on the local machine only.",
    "deepspeed_multinode_launcher": "Multi-machine launcher (pdsh when unset). standard runs torchrun on every "
                                    "machine; the others start all machines from this one through "
                                    "deepspeed --hostfile.",
    "deepspeed_exclusion_filter": "deepspeed --exclude (multi-machine).",
    "deepspeed_inclusion_filter": "deepspeed --include (multi-machine).",
    "deepspeed_moe_layer_cls_names": "Comma-separated MoE layer class names (DeepSpeed >= 0.14.0).",
}
# Values Accelerate or DeepSpeed accept, where the launch option itself says less: a YAML value
# skips argparse and reaches the environment as str(value) (str(value).lower() for some).
OVERRIDES = {
    ("deepspeed_config", "zero_stage"): {"type": "integer", "enum": [0, 1, 2, 3]},
    ("deepspeed_config", "offload_optimizer_device"): {"type": "string", "enum": ["none", "cpu", "nvme"]},
    ("deepspeed_config", "offload_param_device"): {"type": "string", "enum": ["none", "cpu", "nvme"]},
    ("deepspeed_config", "gradient_accumulation_steps"): {"type": ["integer", "string"],
                                                          "pattern": "^(auto|[0-9]+)$"},
    ("deepspeed_config", "gradient_clipping"): {"type": ["number", "string"]},
    ("deepspeed_config", "zero3_init_flag"): {"type": ["boolean", "string"]},
    ("deepspeed_config", "zero3_save_16bit_model"): {"type": ["boolean", "string"]},
}
# Launch options whose lowercase `choices` only bind the command line: a YAML value skips argparse
# and the runtime upper-cases it (FP8RecipeKwargs, TorchDynamoPlugin), so "TE" is as good as "te".
UPPER_CASED_AT_RUNTIME = {("fp8_config", "fp8_backend"), ("fp8_config", "fp8_format")}


def _case_insensitive_choices() -> dict[tuple[str, str], list[str]]:
    """FSDP plugin values: compared with .upper() (digits accepted too), so an editor enum would be too strict."""
    from accelerate.utils import DynamoBackend, constants
    return {
        ("dynamo_config", "dynamo_backend"): [b.value for b in DynamoBackend],
        ("fsdp_config", "fsdp_sharding_strategy"): constants.FSDP_SHARDING_STRATEGY,
        ("fsdp_config", "fsdp_backward_prefetch"): constants.FSDP_BACKWARD_PREFETCH,
        ("fsdp_config", "fsdp_auto_wrap_policy"): constants.FSDP_AUTO_WRAP_POLICY,
        ("fsdp_config", "fsdp_state_dict_type"): constants.FSDP_STATE_DICT_TYPE,
    }


def _launch_parser():
    from accelerate.commands.launch import launch_command_parser
    return launch_command_parser()


def _groups(parser) -> dict[str, list]:
    return {group.title: [a for a in group._group_actions if a.option_strings] for group in parser._action_groups}


def _json_type(annotation) -> dict:
    """JSON Schema for a dataclass annotation."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Union:
        branches = [_json_type(a) for a in args if a is not type(None)]
        nullable = type(None) in args
        if len(branches) == 1:
            schema = dict(branches[0])
        else:
            values = [v for b in branches for v in b.get("enum", [])]
            schema = {"type": "string", "enum": values} if values else {"anyOf": branches}
        if nullable:
            schema["type"] = [schema["type"], "null"] if isinstance(schema.get("type"), str) else "null"
            if "enum" in schema:
                schema["enum"] = schema["enum"] + [None]
        return schema
    if inspect.isclass(annotation) and issubclass(annotation, enum.Enum):
        return {"type": "string", "enum": [m.value for m in annotation]}
    if origin is list:
        item = _json_type(args[0]) if args else {}
        return {"type": "array", "items": item}
    return {bool: {"type": "boolean"}, int: {"type": "integer"}, float: {"type": "number"}, str: {"type": "string"},
            dict: {"type": "object"}, list: {"type": "array"}}.get(annotation, {})


def _default(field: dataclasses.Field):
    if field.default is not dataclasses.MISSING:
        value = field.default
        return value.value if isinstance(value, enum.Enum) else value
    return None


def _option_schema(action) -> dict:
    """JSON Schema for a launch option's value as a YAML key gives it (argparse `type` is not applied)."""
    from accelerate.utils import str_to_bool
    if action.nargs == 0:
        schema = {"type": "boolean"}
    elif isinstance(action.default, tuple):  # fp8_override_linear_precision: three booleans
        schema = {"type": "array", "items": {"type": "boolean"}, "minItems": 3, "maxItems": 3}
    elif action.type is int:
        schema = {"type": "integer"}
    elif action.type is float:
        schema = {"type": "number"}
    elif action.type is str_to_bool or isinstance(action.default, bool) or action.default in ("true", "false"):
        schema = {"type": ["boolean", "string"]}  # str(value).lower() is what the environment receives
    else:
        schema = {"type": ["string", "number"]}  # str(value) is what the environment receives
    if action.choices:
        schema["enum"] = list(action.choices)
        if all(isinstance(c, str) and c.isdigit() for c in action.choices):  # fsdp_version: 2 works as well
            schema["type"] = ["string", "integer"]
            schema["enum"] += [int(c) for c in action.choices]
    schema["type"] = [*([schema["type"]] if isinstance(schema["type"], str) else schema["type"]), "null"]
    if action.default is not None and action.default != argparse.SUPPRESS:
        default = action.default
        schema["default"] = list(default) if isinstance(default, tuple) else default
    if action.help:
        schema["description"] = " ".join(action.help.split())
    return schema


def _prefix_rules() -> dict[str, dict]:
    """`_validate_launch_command`: `if name == "fsdp_config" and not key.startswith("fsdp"): key = "fsdp_" + key`."""
    from accelerate.commands import launch
    source = inspect.getsource(launch._validate_launch_command)
    pattern = re.compile(r'name == "(\w+)" and not key\.startswith\("(\w+)"\):\s*key = "(\w+)" \+ key')
    rules = {name: {"startswith": start, "prefix": prefix} for name, start, prefix in pattern.findall(source)}
    assert set(rules) == {"fsdp_config", "fp8_config", "dynamo_config"}, rules
    return rules


def _exported_deepspeed_keys() -> dict[str, str]:
    """deepspeed_config key -> environment variable, as prepare_deepspeed_cmd_env writes them."""
    from accelerate.utils import launch
    source = inspect.getsource(launch.prepare_deepspeed_cmd_env)
    pattern = re.compile(r'if args\.(\w+) is not None:\s*current_env\["(\w+)"\]')
    return dict(pattern.findall(source))


def _refused_with_config_file() -> list[str]:
    """The names `DeepSpeedPlugin._deepspeed_config_checks` refuses next to deepspeed_config_file."""
    from accelerate.utils.dataclasses import DeepSpeedPlugin
    source = inspect.getsource(DeepSpeedPlugin._deepspeed_config_checks)
    listed = re.search(r"env_variable_names_to_ignore = \[(.*?)\]", source, re.S).group(1)
    names = re.findall(r'"(ACCELERATE_\w+)"', listed)
    return [name.replace("ACCELERATE_", "").replace("DEEPSPEED_", "").lower() for name in names]


def _read_without_option(options: set[str]) -> dict[str, str]:
    """Names the env builders read with getattr(args, ...) that no launch option defines, by sub-dict:
    only a sub-dict key can set them (fsdp_config.fsdp_ignored_modules, mpirun_config["bind-to"])."""
    from accelerate.utils import launch
    names = set(re.findall(r'getattr\(args, "([\w-]+)"', inspect.getsource(launch))) - options
    placed = {name: "fsdp_config" if name.startswith("fsdp_") else "mpirun_config" for name in names}
    assert set(placed) == {"fsdp_ignored_modules", "bind-to"}, placed
    return placed


def _plugin_defaults() -> dict[str, object]:
    """What DeepSpeedPlugin.__post_init__ uses when the launcher exported nothing."""
    return {"zero_stage": 2, "offload_optimizer_device": "none", "offload_param_device": "none",
            "offload_optimizer_nvme_path": "none", "offload_param_nvme_path": "none",
            "gradient_accumulation_steps": "auto", "gradient_clipping": "auto", "zero3_save_16bit_model": False,
            "deepspeed_multinode_launcher": "pdsh"}


def _section(name: str, actions: list, prefix: dict | None, extra: list[str]) -> dict:
    props = {}
    for action in sorted(actions, key=lambda a: a.dest):
        props[action.dest] = _option_schema(action)
    for key in extra:
        props[key] = {"type": ["string", "null"], "description": "Not a launch option, but the launcher reads it "
                                                       "(getattr(args, ...)) when a sub-dict key sets it.",
                      "x-accelerate-getattr": True}
    if name == "deepspeed_config":
        exported = _exported_deepspeed_keys()
        refused = set(_refused_with_config_file())
        defaults = _plugin_defaults()
        from accelerate.utils.constants import DEEPSPEED_MULTINODE_LAUNCHERS
        for key, prop in props.items():
            if key in DEEPSPEED_DESCRIPTIONS:
                prop["description"] = DEEPSPEED_DESCRIPTIONS[key]
            if key in defaults:
                prop["default"] = defaults[key]
            if key in exported:
                prop["x-accelerate-env"] = exported[key]
            elif key.endswith("_nvme_path"):
                prop["x-accelerate-env"] = None  # the launcher has the option but never exports it
            if key in refused:
                prop["x-accelerate-refused-with-config-file"] = True
        props["deepspeed_multinode_launcher"].update(type=["string", "null"], enum=list(DEEPSPEED_MULTINODE_LAUNCHERS))
    for (section, key), override in OVERRIDES.items():
        if section == name:
            props[key].update(override)
    for section, key in UPPER_CASED_AT_RUNTIME:
        if section == name:
            choices = [c.upper() for c in props[key].pop("enum")]
            props[key].update({"examples": choices, "x-accelerate-choices": choices})
    for (section, key), choices in _case_insensitive_choices().items():
        if section == name:
            props[key].pop("enum", None)  # the CLI's lowercase choices; the YAML value is compared upper-cased
            props[key].update({"examples": list(choices), "x-accelerate-choices": list(choices)})
    schema = {"type": ["object", "null"], "description": TOP_DESCRIPTIONS[name], "properties": props}
    if name == "deepspeed_config":  # in Accelerate's order, for quoting its message
        schema["x-accelerate-refused-with-config-file"] = _refused_with_config_file()
    if prefix is not None:
        schema["x-accelerate-prefix"] = prefix
        # Editors: the unprefixed spelling is accepted too (Accelerate adds the prefix).
        for key, prop in list(props.items()):
            if key.startswith(prefix["prefix"]):
                short = key[len(prefix["prefix"]):]
                if not short.startswith(prefix["startswith"]):
                    alias = dict(prop, **{"x-accelerate-alias-of": key})
                    props.setdefault(short, alias)
    schema["properties"] = dict(sorted(props.items()))
    return schema


def _config_class(cls, sections: dict, distributed_enum: list) -> dict:
    from accelerate.commands.config.config_args import BaseConfig
    hints = typing.get_type_hints(cls)
    parser_help = {a.dest: a.help for group in _groups(_launch_parser()).values() for a in group}
    props = {}
    required = ["distributed_type"]
    for field in dataclasses.fields(cls):
        if field.name in sections:
            props[field.name] = {"$ref": f"#/definitions/{field.name}"}
            continue
        schema = _json_type(hints[field.name])
        default = _default(field)
        if field.name == "distributed_type":
            schema = {"type": "string", "enum": distributed_enum}
        elif field.name == "mixed_precision":
            from accelerate.utils import PrecisionType
            schema = {"type": ["string", "null"], "enum": [p.value for p in PrecisionType] + [None]}
        elif field.name == "compute_environment":
            default = "LOCAL_MACHINE"
        if default is not None or field.name in ("gpu_ids", "main_process_ip", "main_process_port"):
            schema["default"] = default
        if field.default is None and "type" in schema and "null" not in schema["type"]:  # commands: list = None
            schema["type"] = [schema["type"], "null"] if isinstance(schema["type"], str) else schema["type"] + ["null"]
        description = TOP_DESCRIPTIONS.get(field.name) or parser_help.get(field.name)
        if description:
            schema["description"] = " ".join(description.split())
        schema["x-accelerate-declared-in"] = "BaseConfig" if field.name in BaseConfig.__dataclass_fields__ \
            else cls.__name__
        if field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING \
                and field.name not in BaseConfig.__dataclass_fields__:
            required.append(field.name)
        props[field.name] = schema
    for key, schema in LEGACY.items():
        props.setdefault(key, dict(schema, **{"x-accelerate-legacy": True}))
    return {"type": "object", "properties": dict(sorted(props.items())), "required": required,
            "additionalProperties": False}


def build() -> dict:
    import accelerate
    from accelerate.commands.config.config_args import ClusterConfig, SageMakerConfig
    from accelerate.utils import DistributedType, SageMakerDistributedType

    groups = _groups(_launch_parser())
    prefixes = _prefix_rules()
    extra = _read_without_option({a.dest for group in groups.values() for a in group})
    sections = {}
    for name, title in SECTION_GROUPS.items():
        if title is None:
            actions = [a for group in groups.values() for a in group if a.dest.startswith("dynamo_")]
        else:
            actions = groups[title]
        sections[name] = _section(name, actions, prefixes.get(name),
                                  sorted(key for key, where in extra.items() if where == name))
    # SageMaker's dynamo_config is the same launch group, its additional_args free-form.
    cluster = _config_class(ClusterConfig, sections, [t.value for t in DistributedType])
    sagemaker = _config_class(SageMakerConfig, {"dynamo_config": None}, [t.value for t in SageMakerDistributedType])
    sagemaker["properties"]["additional_args"] = {
        "type": ["object", "null"], "description": TOP_DESCRIPTIONS["additional_args"],
        "x-accelerate-declared-in": "SageMakerConfig"}
    # `accelerate config` writes downcast_bf16: 'no' (a string, truthy on TPU); both load.
    cluster["properties"]["downcast_bf16"]["type"] = ["boolean", "string"]
    cluster["properties"]["compute_environment"]["enum"] = ["LOCAL_MACHINE"]
    sagemaker["properties"]["compute_environment"]["enum"] = ["AMAZON_SAGEMAKER"]
    sagemaker["properties"]["base_job_name"]["description"] = (
        "SageMaker job name (the default is computed once, when Accelerate is imported).")

    # The namespace `accelerate launch --config_file F script.py` starts from (argparse: the first
    # action of a dest sets its default). The linter replays the launch on it.
    launch_defaults: dict = {}
    for group in groups.values():
        for action in group:
            default = action.default
            if default == argparse.SUPPRESS:
                continue
            launch_defaults.setdefault(action.dest, list(default) if isinstance(default, tuple) else default)
    cluster["x-accelerate-field-order"] = [f.name for f in dataclasses.fields(ClusterConfig)]
    sagemaker["x-accelerate-field-order"] = [f.name for f in dataclasses.fields(SageMakerConfig)]
    return {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": f"Hugging Face Accelerate {accelerate.__version__} config file (accelerate config / launch)",
        "description": ("Generated by dsconfig's scripts/build_accelerate_schema.py from Accelerate's config "
                        "dataclasses and `accelerate launch` options. Do not edit."),
        "type": "object",
        "required": ["distributed_type"],
        "if": {"properties": {"compute_environment": {"const": "AMAZON_SAGEMAKER"}},
               "required": ["compute_environment"]},
        "then": {"$ref": "#/definitions/SageMakerConfig"},
        "else": {"$ref": "#/definitions/ClusterConfig"},
        "definitions": {"ClusterConfig": cluster, "SageMakerConfig": sagemaker, **sections},
        "x-accelerate-version": accelerate.__version__,
        "x-accelerate-launch-defaults": dict(sorted(launch_defaults.items())),
    }


def render(schema: dict) -> str:
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if the committed schema is out of date")
    args = parser.parse_args(argv)
    logging.disable(logging.WARNING)
    warnings.simplefilter("ignore")
    text = render(build())
    return write_or_check(OUTPUT, text, "scripts/build_accelerate_schema.py", args.check)

if __name__ == "__main__":
    sys.exit(main())
