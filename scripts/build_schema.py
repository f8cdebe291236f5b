#!/usr/bin/env python3
"""Generate schemas/deepspeed.schema.json from the real DeepSpeed models plus schemas/src/lenient.json.

Dev-time only: this imports deepspeed (and so torch and pydantic). The linter never does; it reads
the generated JSON. The pydantic sections are introspected field by field (annotation, alias,
default, constraints, deprecation, validators, attribute docstrings); the sections DeepSpeed reads
with plain `dict.get` are hand-written in schemas/src/lenient.json.

    python scripts/build_schema.py           # (re)write the schema
    python scripts/build_schema.py --check   # exit 1 if the committed schema is stale
    PYTHONPATH=/path/to/release python scripts/build_schema.py --stdout   # another release's schema

DeepSpeed 0.14.x builds its models with the pydantic v1 API (deepspeed/pydantic_v1.py imports
pydantic.v1); their schema has the same format, with "pydantic": 1 in x-deepspeed-model.
"""

from __future__ import annotations

import argparse
import ast
import copy
import enum
import inspect
import json
import logging
import math
import pathlib
import sys
import textwrap
import types
import typing

from generated import write_or_check  # scripts/ is on sys.path when a script runs

ROOT = pathlib.Path(__file__).resolve().parents[1]
OUTPUT = ROOT / "schemas" / "deepspeed.schema.json"
LENIENT = ROOT / "schemas" / "src" / "lenient.json"

# What the HF Trainer and Accelerate put in place of "auto" (transformers/integrations/deepspeed.py
# HfTrainerDeepSpeedConfig.trainer_config_process / trainer_config_finalize, accelerate/utils/dataclasses.py
# DeepSpeedPlugin.deepspeed_config_process).
# The Trainer builds an Accelerate DeepSpeedPlugin, so the plugin's fills apply to it as well.
# HF only looks at the stage3_-prefixed spellings, never at the bare aliases.
_PLUGIN = "Accelerate's DeepSpeedPlugin"
FILLS: dict[str, dict[str, str]] = {
    "train_micro_batch_size_per_gpu": {
        "hf-trainer": "TrainingArguments.per_device_train_batch_size",
        "accelerate": "the batch_size of the DataLoader(s) passed to the same Accelerator.prepare() call",
    },
    "train_batch_size": {
        "hf-trainer": "world_size × per_device_train_batch_size × gradient_accumulation_steps",
        "accelerate": "train_micro_batch_size_per_gpu × gradient_accumulation_steps × num_processes"
                      " // sequence-parallel size",
    },
    "gradient_accumulation_steps": {
        "hf-trainer": "TrainingArguments.gradient_accumulation_steps",
        "accelerate": "Accelerator(gradient_accumulation_steps=...) / --gradient_accumulation_steps",
    },
    "gradient_clipping": {
        "hf-trainer": "TrainingArguments.max_grad_norm",
        "accelerate": f"{_PLUGIN} gradient_clipping (--gradient_clipping), else 1.0",
    },
    "optimizer/params/lr": {
        "hf-trainer": "TrainingArguments.learning_rate",
        "accelerate": "the lr given to accelerate.utils.DummyOptim",
    },
    "optimizer/params/weight_decay": {
        "hf-trainer": "TrainingArguments.weight_decay",
        "accelerate": "the weight_decay given to accelerate.utils.DummyOptim",
    },
    "optimizer/params/betas": {"hf-trainer": "[TrainingArguments.adam_beta1, TrainingArguments.adam_beta2]"},
    "optimizer/params/eps": {"hf-trainer": "TrainingArguments.adam_epsilon"},
    "scheduler/params/warmup_min_lr": {"hf-trainer": "0", "accelerate": "0 (DummyScheduler)"},
    "scheduler/params/warmup_max_lr": {
        "hf-trainer": "TrainingArguments.learning_rate",
        "accelerate": "the optimizer's lr (DummyScheduler)",
    },
    "scheduler/params/warmup_num_steps": {
        "hf-trainer": "max(1, TrainingArguments.get_warmup_steps(total training steps))",
        "accelerate": "max(1, DummyScheduler warmup_num_steps)",
    },
    "scheduler/params/total_num_steps": {
        "hf-trainer": "the computed number of training steps",
        "accelerate": "ceil(DummyScheduler total_num_steps / num_processes)",
    },
    "fp16/enabled": {
        "hf-trainer": "TrainingArguments.fp16 or fp16_full_eval",
        "accelerate": "mixed_precision == 'fp16' (DeepSpeedPlugin.set_mixed_precision)",
    },
    "bf16/enabled": {
        "hf-trainer": "TrainingArguments.bf16 or bf16_full_eval",
        "accelerate": "mixed_precision == 'bf16' (DeepSpeedPlugin.set_mixed_precision)",
    },
    "zero_optimization/stage": {
        "hf-trainer": f"{_PLUGIN} zero_stage (ACCELERATE_DEEPSPEED_ZERO_STAGE, default 2)",
        "accelerate": f"{_PLUGIN} zero_stage (--zero_stage / Accelerate config, default 2)",
    },
    "zero_optimization/offload_optimizer/device": {
        "hf-trainer": f"{_PLUGIN} offload_optimizer_device (default 'none')",
        "accelerate": f"{_PLUGIN} offload_optimizer_device (default 'none')",
    },
    "zero_optimization/offload_param/device": {
        "hf-trainer": f"{_PLUGIN} offload_param_device (default 'none')",
        "accelerate": f"{_PLUGIN} offload_param_device (default 'none')",
    },
    "zero_optimization/offload_optimizer/nvme_path": {
        "hf-trainer": f"{_PLUGIN} offload_optimizer_nvme_path (default 'none')",
        "accelerate": f"{_PLUGIN} offload_optimizer_nvme_path (default 'none')",
    },
    "zero_optimization/offload_param/nvme_path": {
        "hf-trainer": f"{_PLUGIN} offload_param_nvme_path (default 'none')",
        "accelerate": f"{_PLUGIN} offload_param_nvme_path (default 'none')",
    },
    "zero_optimization/stage3_gather_16bit_weights_on_model_save": {
        "hf-trainer": f"{_PLUGIN} zero3_save_16bit_model (default false)",
        "accelerate": f"{_PLUGIN} zero3_save_16bit_model (default false)",
    },
    "zero_optimization/reduce_bucket_size": {
        "hf-trainer": "hidden_size² of the model config",
        "accelerate": "hidden_size² (model.config.hidden_size or max(hidden_sizes))",
    },
    "zero_optimization/stage3_prefetch_bucket_size": {
        "hf-trainer": "int(0.9 × hidden_size²), ZeRO-3 only",
        "accelerate": "int(0.9 × hidden_size²)",
    },
    "zero_optimization/stage3_param_persistence_threshold": {
        "hf-trainer": "10 × hidden_size, ZeRO-3 only",
        "accelerate": "10 × hidden_size",
    },
}

# Keywords that describe a value's type; moved into the first anyOf branch when "auto" is allowed.
_TYPE_KEYWORDS = ("type", "enum", "const", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
                  "items", "properties", "additionalProperties", "allOf", "anyOf", "not", "pattern",
                  "required", "x-deepspeed-model", "title")


def _quiet_deepspeed():
    logging.disable(logging.WARNING)
    _older_names()
    from deepspeed.utils import logger
    logger.setLevel(logging.ERROR)


def _older_names() -> None:
    """0.14.0-0.14.3 import names torch 2.13 and numpy 2 no longer have, none of them used to parse a
    config (the same stand-ins as tests/release_worker.py gives them)."""
    import numpy
    if not hasattr(numpy, "BUFSIZE"):
        numpy.BUFSIZE = 8192
    from torch.distributed.elastic.agent.server import api
    if not hasattr(api, "log"):
        api.log = logging.getLogger("torchelastic")
    if not hasattr(api, "_get_socket_with_port"):
        api._get_socket_with_port = None


# Config key -> (module, class) of every pydantic section DeepSpeedConfig may build. Older releases
# lack some (fp16/bf16 were read with dict.get before 0.16.x): a class a release does not have is skipped.
SECTIONS = {
    "zero_optimization": ("deepspeed.runtime.zero.config", "DeepSpeedZeroConfig"),
    "fp16": ("deepspeed.runtime.precision_config", "DeepSpeedFP16Config"),
    "bf16": ("deepspeed.runtime.precision_config", "DeepSpeedBF16Config"),
    "bfloat16": ("deepspeed.runtime.precision_config", "DeepSpeedBF16Config"),
    "tensorboard": ("deepspeed.monitor.config", "TensorBoardConfig"),
    "wandb": ("deepspeed.monitor.config", "WandbConfig"),
    "csv_monitor": ("deepspeed.monitor.config", "CSVConfig"),
    "comet": ("deepspeed.monitor.config", "CometConfig"),
    "comms_logger": ("deepspeed.comm.config", "CommsLoggerConfig"),
    "hybrid_engine": ("deepspeed.runtime.config", "HybridEngineConfig"),
    "compile": ("deepspeed.compile.config", "CompileConfig"),
    "compile ": ("deepspeed.runtime.compiler", "CompileConfig"),  # 0.14.0-0.14.3 (key padded: a second place)
    "timers/throughput": ("deepspeed.utils.config", "DeepSpeedThroughputTimerConfig"),
    "tensor_parallel": ("deepspeed.runtime.tensor_parallel.config", "TPTrainingConfig"),
    "weight_quantization": ("deepspeed.inference.config", "WeightQuantConfig"),
}


def _sections():
    """(config key, model class) for every pydantic section this release's DeepSpeedConfig builds."""
    import importlib
    found = {}
    for key, (module, name) in SECTIONS.items():
        try:
            found.setdefault(key.strip(), getattr(importlib.import_module(module), name))
        except (ImportError, AttributeError):
            continue
    return found


# -- attribute docstrings -------------------------------------------------------------------------

def _clean(text: str) -> str:
    text = textwrap.dedent(text).strip()
    return " ".join(line.strip() for line in text.splitlines() if line.strip())


def _field_docstrings(cls) -> dict[str, str]:
    """Field name -> the string expression right after its assignment (attribute docstring).

    A field with no string after it takes an unclaimed string right before it: DeepSpeedZeroConfig
    documents `pipeline_loading_checkpoint` that way.
    """
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if klass.__module__.startswith("pydantic") or klass is object:
            continue
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
        except (OSError, TypeError):
            continue
        body = tree.body[0].body
        claimed: set[int] = {0} if _is_str(body[0]) else set()  # the class docstring
        for i, node in enumerate(body):
            if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
                continue
            name = node.target.id
            after = body[i + 1] if i + 1 < len(body) else None
            before = body[i - 1] if i > 0 else None
            if _is_str(after):
                docs[name] = _clean(after.value.value)
                claimed.add(i + 1)
            elif _is_str(before) and (i - 1) not in claimed:
                docs[name] = _clean(before.value.value)
    return docs


def _is_str(node) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)


# -- types ----------------------------------------------------------------------------------------

def _is_model(tp) -> bool:
    """A DeepSpeed config model; under pydantic v1 any model (0.14.x's CommsLoggerConfig is a plain one)."""
    from deepspeed.runtime.config_utils import DeepSpeedConfigModel
    return isinstance(tp, type) and (issubclass(tp, DeepSpeedConfigModel) or _is_v1(tp))


def _is_v1(cls) -> bool:
    """A pydantic v1 model: DeepSpeed 0.14.x imports BaseModel from pydantic.v1 (deepspeed/pydantic_v1.py)."""
    try:
        from pydantic import v1
    except ImportError:
        return False
    return isinstance(cls, type) and issubclass(cls, v1.BaseModel)


def _model_fields(cls) -> dict:
    """Field name -> field, in declaration order (v2 FieldInfo or v1 ModelField)."""
    return cls.__fields__ if _is_v1(cls) else cls.model_fields


def _is_v1_field(field) -> bool:
    return hasattr(field, "outer_type_")


def _annotation(field):
    """The field's type as written. A v1 ModelField keeps it as outer_type_ with Optional taken off
    (allow_none says None is valid, also for `x: bool = None`) and ge/gt/le/lt turned into a
    ConstrainedInt/ConstrainedFloat subclass."""
    if not _is_v1_field(field):
        return field.annotation
    from pydantic.v1 import types as v1_types
    tp = field.outer_type_
    for constrained, base in ((v1_types.ConstrainedInt, int), (v1_types.ConstrainedFloat, float),
                              (v1_types.ConstrainedStr, str)):
        if isinstance(tp, type) and issubclass(tp, constrained):
            tp = base
    if field.allow_none and tp not in (typing.Any, object) and type(None) not in typing.get_args(tp):
        tp = tp | None
    return tp


def _alias(field) -> str | None:
    if _is_v1_field(field):
        return field.alias if field.has_alias else None
    return field.alias


def _excluded(field) -> bool:
    return bool(field.field_info.exclude if _is_v1_field(field) else field.exclude)


def _description(field) -> str | None:
    return field.field_info.description if _is_v1_field(field) else field.description


def _raw_default(field):
    return field.get_default() if _is_v1_field(field) else field.get_default(call_default_factory=True)


def _descriptor(tp):
    """The pydantic type as a small JSON descriptor the run-time validator interprets."""
    import torch
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        rest = [a for a in args if a is not type(None)]
        inner = _descriptor(rest[0]) if len(rest) == 1 else {"union": [_descriptor(a) for a in rest]}
        return {"optional": inner} if len(rest) < len(args) else inner
    if origin is typing.Literal:
        return {"literal": list(args)}
    if origin in (list, typing.List):
        return {"list": _descriptor(args[0])} if args else "list"
    if origin in (dict, typing.Dict):
        return "dict"
    if origin is tuple:
        return "tuple"
    simple = {bool: "bool", int: "int", float: "float", str: "str", pathlib.Path: "path", object: "any",
              typing.Any: "any", dict: "dict", list: "list", tuple: "tuple", torch.dtype: "dtype"}
    if tp in simple:
        return simple[tp]
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        base = "int" if issubclass(tp, int) else "str"
        # Every member, aliases included: pydantic lists them all in its message ("0, 1, 2, 3 or 3").
        return {"enum": [m.value for m in tp.__members__.values()], "base": base, "name": tp.__name__}
    if _is_model(tp):
        return {"model": tp.__name__}
    raise SystemExit(f"build_schema: no descriptor for annotation {tp!r}; teach _descriptor about it")


def _jsonable(value):
    """A default as JSON: enums by value, Paths and dtypes as text, tuples as lists, models as dicts."""
    if isinstance(value, enum.Enum):
        return _jsonable(value.value)
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return int(value)  # pp_int -> int
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if hasattr(value, "model_dump"):
        return _jsonable(value.model_dump())
    if _is_v1(type(value)):
        return _jsonable(value.dict())
    return str(value)  # pathlib.Path, torch.dtype


def _type_schema(desc, nested: dict) -> dict:
    """Editor-facing JSON Schema for a descriptor (what DeepSpeed accepts without coercion)."""
    if isinstance(desc, str):
        return {
            "bool": {"type": "boolean"}, "int": {"type": "integer"}, "float": {"type": "number"},
            "str": {"type": "string"}, "path": {"type": "string"}, "any": {}, "dict": {"type": "object"},
            "list": {"type": "array"}, "tuple": {"type": "array"},
            "dtype": {"not": {}, "description": "Typed torch.dtype: no JSON value can set it."},
        }[desc]
    if "optional" in desc:
        inner = _type_schema(desc["optional"], nested)
        if set(inner) == {"type"}:
            return {"type": [inner["type"], "null"]}
        return {"anyOf": [inner, {"type": "null"}]}
    if "literal" in desc:
        return {"enum": list(desc["literal"])}
    if "enum" in desc:
        values = list(dict.fromkeys(desc["enum"]))
        return {"type": "integer" if desc["base"] == "int" else "string", "enum": values}
    if "list" in desc:
        return {"type": "array", "items": _type_schema(desc["list"], nested)}
    if "union" in desc:
        return {"anyOf": [_type_schema(d, nested) for d in desc["union"]]}
    if "model" in desc:
        return nested[desc["model"]]
    raise AssertionError(desc)


_BOUNDS = {"Gt": ("gt", "exclusiveMinimum"), "Ge": ("ge", "minimum"),
           "Lt": ("lt", "exclusiveMaximum"), "Le": ("le", "maximum")}
_KEYWORD_OF = dict(_BOUNDS.values())


def _constraints(field) -> dict:
    out = {}
    if _is_v1_field(field):  # v1 keeps them on FieldInfo; get_constraints() names those set
        info = field.field_info
        unsupported = info.get_constraints() - set(_KEYWORD_OF)
        if unsupported:
            raise SystemExit(f"build_schema: unsupported constraint {sorted(unsupported)} on {field.name}")
        return {attr: _jsonable(getattr(info, attr)) for attr in _KEYWORD_OF if getattr(info, attr) is not None}
    for meta in field.metadata:
        kind = type(meta).__name__
        if kind not in _BOUNDS:
            raise SystemExit(f"build_schema: unsupported constraint {meta!r}")
        attr = _BOUNDS[kind][0]
        out[attr] = _jsonable(getattr(meta, attr))
    return out


def _default(cls, name, field, instance):
    """The default as pydantic validates it (validate_default=True), before model validators.

    Optional fields keep their raw default: None is always valid there, and an after-validator may
    replace it depending on other fields (overlap_comm becomes stage == 3).
    """
    raw = _raw_default(field)
    if raw is None:
        return None
    if _excluded(field):
        return _jsonable(raw)
    return _jsonable(getattr(instance, name))


def _validators(cls) -> list[dict]:
    if _is_v1(cls):
        return _v1_validators(cls)
    decorators = cls.__pydantic_decorators__
    out = []
    for name, dec in decorators.model_validators.items():
        out.append({"name": name, "kind": "model", "mode": dec.info.mode})
    for name, dec in decorators.field_validators.items():
        out.append({"name": name, "kind": "field", "mode": dec.info.mode, "fields": list(dec.info.fields)})
    return out


def _v1_validators(cls) -> list[dict]:
    """v1 root validators (pre, then post with skip_on_failure) and @validator functions, the fields
    each one is declared for; "after" is v1's default (not pre)."""
    out = [{"name": func.__name__, "kind": "model", "mode": "before"} for func in cls.__pre_root_validators__]
    for skip_on_failure, func in cls.__post_root_validators__:
        out.append({"name": func.__name__, "kind": "model", "mode": "after"})
        if skip_on_failure:
            out[-1]["skip_on_failure"] = True
    by_function: dict[tuple[str, str], list[str]] = {}
    for field_name, validators in cls.__validators__.items():
        for validator in validators:
            if validator.each_item:
                raise SystemExit(f"build_schema: each_item validator {validator.func.__name__} not supported")
            mode = "before" if validator.pre else "after"
            by_function.setdefault((validator.func.__name__, mode), []).append(field_name)
    for (name, mode), fields in by_function.items():
        out.append({"name": name, "kind": "field", "mode": mode, "fields": fields})
    return out


def _deprecation(cls, field) -> dict | None:
    extra = field.field_info.extra if _is_v1_field(field) else field.json_schema_extra
    if not isinstance(extra, dict) or not extra.get("deprecated"):
        return None
    info = {"new_param": extra.get("new_param", ""), "set_new_param": extra.get("set_new_param", True)}
    if extra.get("deprecated_msg"):
        info["message"] = extra["deprecated_msg"]
    fn = extra.get("new_param_fn")
    if fn is not None:
        # The migration lambdas only look at truthiness; record both outcomes.
        info["migrate"] = {"truthy": _jsonable(fn(True)), "falsy": _jsonable(fn(False))}
    return info


def model_schema(cls) -> dict:
    """The inline JSON Schema of one DeepSpeedConfigModel, with the x- keywords the validator reads."""
    docs = _field_docstrings(cls)
    instance = cls()
    nested = {}
    fields = _model_fields(cls)
    for field in fields.values():
        for tp in _walk_types(_annotation(field)):
            if _is_model(tp) and tp.__name__ not in nested:
                nested[tp.__name__] = model_schema(tp)
    props: dict[str, dict] = {}
    exclusive: list[list[str]] = []
    for name, field in fields.items():
        desc = _descriptor(_annotation(field))
        alias = _alias(field)
        prop = copy.deepcopy(_type_schema(desc, nested))
        doc = docs.get(name) or _description(field)
        if doc:
            prop["description"] = doc  # the field's own text wins over a nested model's class docstring
        cons = _constraints(field)
        for attr, value in cons.items():
            prop[_KEYWORD_OF[attr]] = value
        prop["default"] = _default(cls, name, field, instance)
        x = {"field": name, "type": desc}
        if alias:
            x["alias"] = alias
        if cons:
            x["constraints"] = cons
        if _excluded(field):
            x["exclude"] = True
        prop["x-pydantic"] = x
        dep = _deprecation(cls, field)
        if dep:
            prop["deprecated"] = True
            prop["x-deepspeed-deprecated"] = dep
            new = fields.get(dep["new_param"])
            if new is not None and dep["set_new_param"]:
                for spelling in dict.fromkeys([dep["new_param"], _alias(new) or dep["new_param"]]):
                    exclusive.append([name, spelling])
        if alias:
            props[alias] = prop
            bare = copy.deepcopy(prop)
            bare["description"] = (f"Same setting as `{alias}` (DeepSpeed accepts both spellings; giving both "
                                   f"is an error). " + prop.get("description", "")).strip()
            bare["x-deepspeed-spelling-of"] = alias
            props[name] = bare
            exclusive.append([name, alias])
        else:
            props[name] = prop
    schema = {
        "title": cls.__name__,
        "type": "object",
        "additionalProperties": False,
        "properties": props,
        "x-deepspeed-model": {
            "class": f"{cls.__module__}.{cls.__qualname__}",
            "extra": _extra(cls),
            "validators": _validators(cls),
        },
    }
    if _is_v1(cls):
        schema["x-deepspeed-model"]["pydantic"] = 1
        schema["x-deepspeed-model"]["populate_by_name"] = bool(cls.__config__.allow_population_by_field_name)
        from deepspeed.runtime.config_utils import DeepSpeedConfigModel
        if not issubclass(cls, DeepSpeedConfigModel):
            # a plain BaseModel: no "auto" dropped, no `strict` argument, no deprecation migration
            schema["x-deepspeed-model"]["deepspeed_init"] = False
    if cls.__doc__ and cls.__doc__.strip() and not cls.__doc__.startswith(("Usage docs", "!!!")):
        schema["description"] = _clean(cls.__doc__)
    if exclusive:
        schema["allOf"] = [{"not": {"required": pair}} for pair in exclusive]
    return schema


def _extra(cls) -> str:
    if _is_v1(cls):
        return cls.__config__.extra.value  # an Extra enum member
    return cls.model_config.get("extra", "ignore")


def _walk_types(tp):
    yield tp
    for arg in typing.get_args(tp):
        yield from _walk_types(arg)


# -- assembly -------------------------------------------------------------------------------------

def _removed_keys():
    from deepspeed.runtime import config as ds_config
    # Before 0.19.7 DeepSpeed refused no block by name.
    return (getattr(ds_config, "_REMOVED_TOP_LEVEL_CONFIG_KEYS", {}),
            getattr(ds_config, "_REMOVED_ZERO_CONFIG_KEYS", {}))


def _removed(message: str) -> dict:
    return {"description": f"Removed from DeepSpeed: {message}", "not": {}, "deprecated": True,
            "x-deepspeed-removed": message}


def _locate(root: dict, path: str) -> dict | None:
    """The property at `path`; None when this release has no model for it (fp16 and bf16 are read with
    dict.get before 0.16.x, and lenient.json describes the newest release)."""
    node = root
    for part in path.split("/"):
        node = _object_branch(node)["properties"].get(part)
        if node is None:
            return None
    return node


def _object_branch(node: dict) -> dict:
    """The branch of a property that describes an object (looks through anyOf)."""
    if "properties" in node:
        return node
    for branch in node.get("anyOf", []):
        if "properties" in branch:
            return branch
    raise KeyError("no object schema here")


def _allow_auto(prop: dict, fill: dict) -> None:
    typed = {k: prop.pop(k) for k in _TYPE_KEYWORDS if k in prop}
    prop["anyOf"] = [typed, {"const": "auto", "description": "Filled in by the HF Trainer / Accelerate."}]
    prop["x-dsconfig-fill"] = fill


# Keys of dict.get sections (schemas/src/lenient.json, written for the newest release) that releases spell
# differently: each release's spelling is its own constant, the first of the candidates it defines; a key
# none of them defines is not read by that release.
SPELLED = {
    "seq_parallel_communication_data_type": (("deepspeed.runtime.constants", "SEQ_PARALLEL_COMMUNICATION_DATA_TYPE"),),
    "aio/intra_op_parallelism": (("deepspeed.runtime.swap_tensor.constants", "AIO_INTRA_OP_PARALLELISM"),
                                 ("deepspeed.runtime.swap_tensor.constants", "AIO_THREAD_COUNT")),
    "aio/use_gds": (("deepspeed.runtime.swap_tensor.constants", "AIO_USE_GDS"),),
}


def _respell(props: dict) -> dict:
    """Rename SPELLED's keys to this release's spelling; returns {path in lenient.json: spelling or None}."""
    import importlib
    spellings = {}
    for path, candidates in SPELLED.items():
        *parents, key = path.split("/")
        owner = props
        for parent in parents:
            owner = owner[parent]["properties"]
        spelled = None
        for module, name in candidates:
            spelled = getattr(importlib.import_module(module), name, None)
            if spelled is not None:
                break
        spellings[path] = spelled
        items = list(owner.items())  # renamed in place: the key keeps its position
        owner.clear()
        owner.update((spelled, prop) if name == key else (name, prop) for name, prop in items
                     if name != key or spelled is not None)
    return spellings


def _legacy_precision(key: str) -> dict:
    """fp16 / bf16 before they became pydantic models (0.17.1): read key by key with dict.get, every
    other key ignored; the keys and defaults are the release's own constants (FP16_X = "x" with
    FP16_X_DEFAULT)."""
    from deepspeed.runtime import constants
    prefix = "FP16_" if key == "fp16" else "BFLOAT16_"
    props = {}
    for name in dir(constants):
        spelled, default = getattr(constants, name), getattr(constants, name + "_DEFAULT", _NO_DEFAULT)
        if name.startswith(prefix) and isinstance(spelled, str) and default is not _NO_DEFAULT:
            props[spelled] = {"default": _jsonable(default)}
    return {"type": "object", "x-deepspeed-extra": "ignore", "x-deepspeed-legacy-precision": True,
            "properties": dict(sorted(props.items()))}


_NO_DEFAULT = object()


def build() -> dict:
    _quiet_deepspeed()
    import deepspeed
    lenient = json.loads(LENIENT.read_text())
    removed_top, removed_zero = _removed_keys()

    props: dict[str, dict] = {
        "$schema": {"type": "string", "description": "The JSON Schema this file follows (for editors); "
                    "DeepSpeed ignores it."},
    }
    props.update(copy.deepcopy(lenient["properties"]))
    spellings = _respell(props)
    for key, cls in _sections().items():
        schema = model_schema(cls)
        if key == "timers/throughput":
            props["timers"]["properties"]["throughput"] = schema
            continue
        if key == "zero_optimization":
            for name, message in removed_zero.items():
                schema["properties"][name] = _removed(message)
            legacy = {"type": "boolean", "deprecated": True,
                      "description": "Legacy form: true means ZeRO stage 1 (allgather_bucket_size from the "
                                     "top-level allgather_size), false means stage 0. DeepSpeed warns."}
            schema = {"description": "ZeRO optimizer settings (pydantic DeepSpeedZeroConfig).",
                      "anyOf": [schema, legacy]}
        elif key == "bfloat16":
            schema["deprecated"] = True
            schema["description"] = ("Legacy spelling of `bf16`. DeepSpeed reads it only when `bf16` is absent "
                                     "or null.")
            schema["x-deepspeed-legacy-of"] = "bf16"
        props[key] = schema
    for key in ("fp16", "bf16", "bfloat16"):
        if key not in props:
            props[key] = _legacy_precision("bf16" if key == "bfloat16" else key)
    for name, message in removed_top.items():
        props[name] = _removed(message)
    version = deepspeed.__version__.strip()  # most source distributions write "0.14.5 " with a space

    root = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": f"DeepSpeed {version} configuration (ds_config.json)",
        "description": ("Generated by dsconfig's scripts/build_schema.py from DeepSpeed's config models and the "
                        "hand-written schemas/src/lenient.json. Do not edit."),
        "type": "object",
        "additionalProperties": True,
        "properties": props,
        "x-deepspeed-version": version,
        # how this release spells the dict.get keys others spell differently (see SPELLED)
        "x-deepspeed-spelled": spellings,
        "x-deepspeed-model": {"class": "deepspeed.runtime.config.DeepSpeedConfig", "extra": "ignore",
                              "validators": []},
    }
    for path, fill in FILLS.items():
        prop = _locate(root, path)
        if prop is not None:
            _allow_auto(prop, fill)
    return root


def render(schema: dict) -> str:
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="fail if the committed schema is out of date")
    mode.add_argument("--stdout", action="store_true",
                      help="print the schema instead of writing it (for the release on PYTHONPATH)")
    args = parser.parse_args(argv)
    text = render(build())
    if args.stdout:
        sys.stdout.write(text)
        return 0
    return write_or_check(OUTPUT, text, "scripts/build_schema.py", args.check)

if __name__ == "__main__":
    sys.exit(main())
