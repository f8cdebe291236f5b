"""DeepSpeed's pydantic config sections, validated without pydantic.

Reproduces what DeepSpeedConfig (0.19.8) does from fetching each pydantic section to having the
model built: the fetch functions (get_zero_config and its legacy boolean form, the bf16/bfloat16
fallback, the monitors, comms_logger presence, timers, tensor_parallel, weight_quantization,
compile, hybrid_engine), `Model(**x)` on whatever the user wrote, DeepSpeedConfigModel.__init__
("auto" dropped, a `strict` key swallowed), pydantic v2 Python-mode lax validation, field
constraints, the models' validators and the deprecated-field migration. Keys, types, defaults
and aliases come from the generated JSON Schema; only the validators' logic is code here.

Stdlib only. Odd input becomes findings, never an exception.
"""

from __future__ import annotations

import copy
import json
import math
from typing import NamedTuple

from ..findings import Finding
from ..phases import PARSE
from ..pointers import dotted, pointer_join, pointer_tokens
from ..rules.keys import (
    COERCED_VALUE,
    INTEGRAL_FLOAT,
    CONFLICTING_KEYS,
    DEPRECATED_KEY,
    IGNORED_KEY,
    INVALID_VALUE,
    STRICT_KEY,
    UNKNOWN_KEY,
    WRONG_TYPE,
)
from ..rules.precision import BFLOAT16_KEY, BFLOAT16_SHADOWED, LOSS_SCALE_WINDOW
from ..rules.sections import SECTION_TYPE
from ..rules.zero import COMPUTE_GRAD_NORM, PARTIAL_OFFLOAD_STAGE, ZERO_LEGACY_FORMAT
from ..values import brief, closest, is_auto, json_type, to_json
from . import pydantic_v1
from . import schema as _schema


class SectionsResult(NamedTuple):
    """What the pydantic sections come to.

    `resolved` maps zero_optimization, fp16, bf16 (from `bf16` or the legacy `bfloat16`),
    tensorboard, wandb, csv_monitor, comet, hybrid_engine, compile, timers ({"throughput": ...}),
    tensor_parallel, and comms_logger / weight_quantization when present, to their field values
    by pydantic field name: defaults filled, enums as plain values, nested models as dicts, Paths
    as text, tuples as lists, deprecated fields migrated as DeepSpeed does. None means building
    that section raises in DeepSpeed.
    """

    findings: list[Finding]
    auto_dropped: list[str]  # JSON pointers of "auto" values the models silently drop
    resolved: dict[str, dict | None]


def check_sections(config) -> SectionsResult:
    """Odd input becomes findings; an exception here is dsconfig's bug (an internal error, exit 2)."""
    ctx = _Context()
    if isinstance(config, dict):
        _check_pydantic_sections(config, ctx)
        _check_loose(config, _schema.root(), "", ctx, top=True)
    return SectionsResult(ctx.findings, ctx.auto_dropped, ctx.resolved)


def assume_repaired(config: dict, sections: SectionsResult) -> dict:
    """Section values for the cross-field rules, also for sections DeepSpeed rejects.

    DeepSpeed stops at the first invalid section, so the next error only shows after that one
    is fixed. To report it now, rejected sections are validated again with their unknown keys
    removed and the suggested fixes applied; if that validates, the cross-field rules run on it.
    """
    resolved = dict(sections.resolved)
    broken = [f for f in sections.findings if f.fails_in == PARSE]
    if not broken or all(value is not None for value in resolved.values()):
        return resolved
    repaired = _deep_copy(config)
    for finding in broken:
        tokens = pointer_tokens(finding.pointer)
        parent = _node(repaired, tokens[:-1])
        if not isinstance(parent, dict) or not tokens or tokens[-1] not in parent:
            continue
        if finding.rule in (UNKNOWN_KEY, CONFLICTING_KEYS, STRICT_KEY):
            del parent[tokens[-1]]
        elif finding.fix is not None and not finding.on_key:
            parent[tokens[-1]] = json.loads(finding.fix)
    for name, values in check_sections(repaired).resolved.items():
        if resolved.get(name) is None and values is not None:
            resolved[name] = values
    return resolved


def _node(value, tokens):
    """The value at `tokens`, None where a step is not an object."""
    for token in tokens:
        value = value.get(token) if isinstance(value, dict) else None
    return value


# ---------------------------------------------------------------------------------------------
# Fetching the sections, as DeepSpeedConfig._initialize_params does
# ---------------------------------------------------------------------------------------------

class _Context:
    def __init__(self, pydantic: int = 2):
        self.findings: list[Finding] = []
        self.auto_dropped: list[str] = []
        self.resolved: dict[str, dict | None] = {}
        # 1: build the models as DeepSpeed 0.14.x does, with pydantic v1 (pydantic_v1.py; a schema
        # from scripts/build_schema.py run under that release says "pydantic": 1 in x-deepspeed-model)
        self.pydantic = pydantic

    def add(self, rule, message, pointer, **kwargs):
        self.findings.append(Finding(rule, message, pointer, **kwargs))

    def reject(self, exc: "_Reject", pointer: str, fix=None):
        """A pydantic-style rejection, prefixed with where it is so the line reads on its own."""
        where = exc.pointer or pointer
        self.add(exc.rule, f"`{dotted(where)}`: {exc.message}", where, fails_in=PARSE,
                 fix=exc.fix if fix is None else fix)


def _section(key: str) -> dict:
    return _schema.model_branch(_schema.property_of(_schema.root(), key))


def _check_pydantic_sections(config: dict, ctx: _Context) -> None:
    # zero_optimization: runtime/zero/config.py get_zero_config
    pointers: dict[str, str] = {}
    if "zero_optimization" in config:
        data = config["zero_optimization"]
        if isinstance(data, bool):
            ctx.add(ZERO_LEGACY_FORMAT, "`zero_optimization` written as a boolean is DeepSpeed's legacy format: true "
                    "means stage 1, false stage 0; write {\"stage\": %d}" % (1 if data else 0), "/zero_optimization",
                    fix=json.dumps({"stage": 1 if data else 0}))
            legacy = {"stage": 1 if data else 0}
            if data and "allgather_size" in config:
                legacy["allgather_bucket_size"] = config["allgather_size"]
                pointers["allgather_bucket_size"] = "/allgather_size"
            data = legacy
    else:
        data = {}
    ctx.resolved["zero_optimization"] = _call(_section("zero_optimization"), data, "/zero_optimization", ctx,
                                              key_pointers=pointers)

    # comms_logger: built only when the key is present (comm/config.py)
    if "comms_logger" in config:
        ctx.resolved["comms_logger"] = _call(_section("comms_logger"), config["comms_logger"], "/comms_logger", ctx)

    # monitors: one DeepSpeedMonitorConfig(**{key: param_dict.get(key, {})}), so each value is a
    # field of that model: "auto" is dropped, anything but a mapping is a model_type error.
    for key in ("tensorboard", "wandb", "csv_monitor", "comet"):
        model = _section(key)
        if model is None:  # a monitor this release does not have: never read
            ctx.resolved[key] = {}
            continue
        pointer = "/" + key
        value = config.get(key, {})
        if is_auto(value):
            ctx.auto_dropped.append(pointer)
            value = {}
        ctx.resolved[key] = _nested(model, value, pointer, ctx)

    # fp16 / bf16 (runtime/precision_config.py; before 0.17.1 read key by key, see _legacy_precision)
    if _section("fp16") is None:
        _legacy_precision(config, ctx)
    else:
        ctx.resolved["fp16"] = _call(_section("fp16"), config.get("fp16", {}), "/fp16", ctx)
        bf16_key = "bf16"
        data = config.get("bf16")
        if data is None:
            data = config.get("bfloat16", {})
            if "bfloat16" in config:
                bf16_key = "bfloat16"
                _bfloat16_spelling(ctx)
        elif "bfloat16" in config:
            _bfloat16_shadowed(ctx)
        ctx.resolved["bf16"] = _call(_section("bfloat16" if bf16_key == "bfloat16" else "bf16"), data,
                                     "/" + bf16_key, ctx)

    ctx.resolved["hybrid_engine"] = _call(_section("hybrid_engine"), config.get("hybrid_engine", {}),
                                          "/hybrid_engine", ctx)
    if "weight_quantization" in config:
        ctx.resolved["weight_quantization"] = _call(_section("weight_quantization"), config["weight_quantization"],
                                                    "/weight_quantization", ctx)
    for key in ("compile", "tensor_parallel"):  # _call: {} where the release has no such model
        ctx.resolved[key] = _call(_section(key), config.get(key, {}), "/" + key, ctx)
    ctx.resolved["timers"] = _timers(config, ctx)


def _bfloat16_spelling(ctx: _Context) -> None:
    ctx.add(BFLOAT16_KEY, "`bfloat16` is the legacy spelling of `bf16`; rename it", "/bfloat16",
            fix='"bf16"', on_key=True)


def _bfloat16_shadowed(ctx: _Context) -> None:
    ctx.add(BFLOAT16_SHADOWED, "`bf16` is present, so DeepSpeed ignores `bfloat16` entirely", "/bfloat16", on_key=True)


def _legacy_precision(config: dict, ctx: _Context) -> None:
    """fp16 and bf16 before 0.17.1 (runtime/config.py get_fp16_enabled and its siblings): each key is
    `param_dict[section].get(key, default)`, nothing validated, so "auto" and "false" are truthy; `bf16`
    wins over `bfloat16` whenever it is present, even as null; with fp16 enabled, `2 ** initial_scale_power`."""
    bf16_key = "bf16" if "bf16" in config else "bfloat16"
    if bf16_key == "bfloat16" and "bfloat16" in config:
        _bfloat16_spelling(ctx)
    elif "bfloat16" in config:
        _bfloat16_shadowed(ctx)
    for name, key in (("fp16", "fp16"), ("bf16", bf16_key)):
        if key not in config:
            ctx.resolved[name] = _legacy_defaults(key)
            continue
        data = config[key]
        if not isinstance(data, dict):
            fix = json.dumps({"enabled": data}) if isinstance(data, bool) else "{}" if data is None else None
            ctx.add(SECTION_TYPE, f"`{key}` must be an object, not {json_type(data)}: DeepSpeed {_schema.active()} "
                    f"raises AttributeError: '{_pytype(data)}' object has no attribute 'get'", "/" + key,
                    fails_in=PARSE, fix=fix)
            ctx.resolved[name] = None
            continue
        values = {field: data.get(field, default) for field, default in _legacy_defaults(key).items()}
        ctx.resolved[name] = values
    fp16 = ctx.resolved["fp16"]
    if fp16 and fp16.get("enabled") and "initial_scale_power" in fp16:
        power = fp16["initial_scale_power"]
        try:
            2 ** power
        except Exception as error:
            ctx.add(INVALID_VALUE, f"`fp16.initial_scale_power` must be a number, not {json_type(power)}: DeepSpeed "
                    f"{_schema.active()} raises {type(error).__name__}: {error}", "/fp16/initial_scale_power",
                    fails_in=PARSE, fix=_int_text(power))


def _legacy_defaults(key: str) -> dict:
    prop = _schema.property_of(_schema.root(), key) or {}
    return {field: spec.get("default") for field, spec in prop.get("properties", {}).items()}


def _int_text(value) -> str | None:
    try:
        return json.dumps(int(value))
    except (TypeError, ValueError, OverflowError):
        return None


def _timers(config: dict, ctx: _Context):
    """utils/config.py get_timers_config: `"throughput" in param_dict["timers"]`, then indexing.

    The same two operations run on the same value, so they fail (or pass: "abc" is a string
    without "throughput" in it) exactly as DeepSpeed's do.
    """
    model = _schema.model_branch(_schema.property_of(_schema.property_of(_schema.root(), "timers"), "throughput"))
    data: object = {}
    if config and "timers" in config:
        timers = config["timers"]
        try:
            if "throughput" in timers:
                data = timers["throughput"]
        except Exception as error:
            ctx.add(SECTION_TYPE, f"`timers` must be an object, not {json_type(timers)}: DeepSpeed raises "
                    f"{type(error).__name__}: {error}", "/timers", fails_in=PARSE, fix="{}")
            return None
        if not isinstance(timers, dict):
            ctx.add(WRONG_TYPE, f"`timers` should be object, got {json_type(timers)} {to_json(timers)}; DeepSpeed "
                    "ignores it and keeps the default throughput timer", "/timers")
    values = _call(model, data, "/timers/throughput", ctx)
    return None if values is None else {"throughput": values}


def _call(model: dict, data, pointer: str, ctx: _Context, key_pointers=None):
    """`Model(**data)`: anything but a mapping is a TypeError before pydantic runs."""
    if model is None:  # a section the replayed release does not model: it never reads it
        return {}
    if not isinstance(data, dict):
        fix = None
        if isinstance(data, bool) and "enabled" in _schema.known_keys(model):
            fix = json.dumps({"enabled": data})
        elif data is None:
            fix = "{}"
        qualified = model["x-deepspeed-model"]["class"]
        ctx.add(SECTION_TYPE, f"`{dotted(pointer)}` must be an object, not {json_type(data)}: DeepSpeed raises "
                f"TypeError: {qualified}() argument after ** must be a mapping, not {_pytype(data)}", pointer,
                fails_in=PARSE, fix=fix)
        return None
    return _build(model, data, pointer, ctx, key_pointers or {})


# ---------------------------------------------------------------------------------------------
# One model: DeepSpeedConfigModel.__init__ + pydantic validation + validators + deprecations
# ---------------------------------------------------------------------------------------------

class _Reject(Exception):
    """A value or model DeepSpeed rejects: message as pydantic words it, optional fix and rule."""

    def __init__(self, message, pointer=None, fix=None, rule=INVALID_VALUE):
        super().__init__(message)
        self.message = message
        self.pointer = pointer
        self.fix = fix
        self.rule = rule


class _Field:
    __slots__ = ("name", "alias", "desc", "prop", "constraints", "default", "deprecated", "exclude")

    def __init__(self, prop: dict):
        x = prop["x-pydantic"]
        self.name = x["field"]
        self.alias = x.get("alias")
        self.desc = x["type"]
        self.constraints = x.get("constraints", {})
        self.exclude = x.get("exclude", False)
        self.default = prop.get("default")
        self.deprecated = prop.get("x-deepspeed-deprecated")
        self.prop = prop


_FIELD_CACHE: dict[int, tuple[list[_Field], set[str]]] = {}


def _fields(model: dict) -> tuple[list[_Field], set[str]]:
    """The model's fields in declaration order, and the removed keys DeepSpeed rejects earlier."""
    cached = _FIELD_CACHE.get(id(model))
    if cached is None:
        fields, seen, removed = [], set(), set()
        for key, prop in model["properties"].items():
            if "x-deepspeed-removed" in prop:
                removed.add(key)
            elif prop["x-pydantic"]["field"] not in seen:
                seen.add(prop["x-pydantic"]["field"])
                fields.append(_Field(prop))
        cached = _FIELD_CACHE[id(model)] = (fields, removed)
    return cached


def _build(model: dict, data: dict, pointer: str, ctx: _Context, key_pointers=None) -> dict | None:
    key_pointers = key_pointers or {}
    if ctx.pydantic == 1 or model["x-deepspeed-model"].get("pydantic") == 1:  # 0.14.x's models
        return _build_v1(model, data, pointer, ctx, key_pointers)
    name = _schema.model_name(model)

    def where(key):
        return key_pointers.get(key) or pointer_join(pointer, key)

    # DeepSpeedConfigModel.__init__(self, strict=False, **data): a key named "self" collides
    # with the bound instance before anything else happens.
    if "self" in data:
        ctx.add(SECTION_TYPE, f"`{dotted(pointer)}` has a key named \"self\", which collides with the config model's "
                f"constructor: DeepSpeed raises TypeError: DeepSpeedConfigModel.__init__() got multiple values for "
                f"argument 'self'", where("self"), fails_in=PARSE, on_key=True)
        return None
    strict = False
    if "strict" in data:
        strict = data["strict"]
        effect = ("a true value also stops DeepSpeed from dropping \"auto\" values here, so they are validated"
                  if strict else "it has no effect")
        ctx.add(STRICT_KEY, f"`strict` is not a setting of {name}: DeepSpeedConfigModel.__init__ swallows it as its "
                f"`strict` argument; {effect}", where("strict"), on_key=True)
    items = {}
    for key, value in data.items():
        if key == "strict":
            continue
        if not strict and is_auto(value) and key != "replace_method":
            ctx.auto_dropped.append(where(key))
            continue
        items[key] = value

    # mode="before" model validators see the kwargs dict
    try:
        for validator in _validators(model, "model", "before"):
            items = validator(items)
    except _Reject as exc:
        ctx.reject(exc, pointer)
        return None

    fields, removed = _fields(model)
    failed = False
    values: dict = {}
    given: dict[str, str] = {}  # field name -> the key the user wrote
    for field in fields:
        key = field.alias if field.alias and field.alias in items else field.name
        if key not in items:
            values[field.name] = _copied(field.default)
            continue
        given[field.name] = key
        try:
            values[field.name] = _validate_field(model, field, items[key], where(key), ctx)
        except _Nested:
            failed = True  # the nested model recorded its own findings
        except _Reject as exc:
            failed = True
            ctx.reject(exc, where(key))

    # Keys no field took: with populate_by_name the alias wins and the bare name becomes extra.
    taken = set(given.values())
    for key in items:
        if key in removed or key in taken:
            continue
        failed = True
        twin = next((f for f in fields if f.name == key and f.alias), None)
        if twin is not None:
            ctx.add(CONFLICTING_KEYS, f"`{key}` and `{twin.alias}` are the same setting; DeepSpeed uses "
                    f"`{twin.alias}` and rejects `{key}` (Extra inputs are not permitted)", where(key), fails_in=PARSE,
                    on_key=True)
            continue
        candidates = [k for k in model["properties"] if k not in removed]
        hint, fix = _did_you_mean(key, candidates)
        ctx.add(UNKNOWN_KEY, f"Unknown key `{key}` in `{dotted(pointer)}`: DeepSpeed {_schema.active()} rejects it "
                f"(Extra inputs are not permitted){_schema.other_releases_note(where(key))}{hint}", where(key),
                fails_in=PARSE, fix=fix, on_key=True)

    # Deprecated keys are announced whether or not the rest validates.
    for field in fields:
        if field.deprecated and field.name in given:
            new = field.deprecated.get("new_param") or ""
            fix = json.dumps(new) if new in model["properties"] else None
            ctx.add(DEPRECATED_KEY, f"`{given[field.name]}` is deprecated" + (f"; use `{new}`" if new else ""),
                    where(given[field.name]), fix=fix, on_key=True)

    if failed:
        return None

    # mode="after" model validators, in declaration order; pydantic stops at the first that raises
    for validator in _validators(model, "model", "after"):
        try:
            values = validator(values, given, where)
        except _Reject as exc:
            ctx.reject(exc, pointer)
            return None

    if not _migrate_deprecated(fields, values, given, where, ctx):
        return None
    return {f.name: values[f.name] for f in fields if not f.exclude and f.name in values}


def _migrate_deprecated(fields, values, given, where, ctx) -> bool:
    """DeepSpeedConfigModel._deprecated_fields_check: move the value, or refuse old + new together."""
    for field in fields:
        dep = field.deprecated
        if not dep or field.name not in given or not dep.get("set_new_param", True):
            continue
        new = dep.get("new_param") or ""
        if not new or new not in values:
            continue
        if new in given:
            ctx.add(CONFLICTING_KEYS, f"Cannot provide deprecated parameter '{field.name}' and replacing parameter "
                    f"'{new}' together", where(given[field.name]), fails_in=PARSE, on_key=True)
            return False
        migrate = dep.get("migrate")
        value = values.pop(field.name)
        if migrate is not None:
            value = _copied(migrate["truthy"] if value else migrate["falsy"])
        values[new] = value
        given[new] = given[field.name]
    return True


def _validate_field(model: dict, field: _Field, value, pointer: str, ctx: _Context):
    original = value
    for validator in _validators(model, "field", "before", field.name):
        value = validator(value, field.name)
    result = _validate(field.desc, value, pointer, field.prop, ctx)
    _check_constraints(result, field.constraints, pointer)
    if _coerced(original, result):
        text = to_json(result)
        ctx.add(_coercion_rule(original, result),
                f"DeepSpeed converts {to_json(original)} to {text} for `{dotted(pointer)}`; write {text}", pointer,
                fix=text)
    return result


def _coercion_rule(original, result):
    """DS112 for a whole-number float read as that integer (every reader agrees), else DS106."""
    exact = type(original) is float and type(result) is int and original == result
    return INTEGRAL_FLOAT if exact else COERCED_VALUE


def _coerced(original, result) -> bool:
    """True when DeepSpeed silently changed the JSON type (an int for a float field is fine)."""
    before, after = _pytype(original), _pytype(result)
    return before != after and not (before == "int" and after == "float") and \
        not (isinstance(original, dict) and isinstance(result, dict))


def _build_v1(model: dict, data, pointer: str, ctx: _Context, key_pointers: dict, nested=False) -> dict | None:
    """`Model(**data)` (or, `nested`, a model-typed field's value) as DeepSpeed 0.14.x builds it with
    pydantic v1: pydantic_v1.py validates, this turns its errors and notes into findings."""
    def where(loc) -> str:
        if not loc:
            return pointer
        here = key_pointers.get(loc[0]) or pointer_join(pointer, loc[0])
        for token in loc[1:]:
            here = pointer_join(here, token)
        return here

    notes = pydantic_v1.Notes()
    values = None
    try:
        if nested:
            name = _schema.model_name(model)
            values = pydantic_v1.validate({"model": name}, data, {name: model}, notes)
        else:
            values = pydantic_v1.build(model, data, notes)
    except pydantic_v1.Invalid as exc:
        raised = "" if exc.raises == "ValidationError" else f" (DeepSpeed raises {exc.raises})"
        for error in exc.errors:
            _report_v1(model, data, error, where, raised, ctx)
    ctx.auto_dropped += [where(loc) for loc in notes.auto_dropped]
    for loc, strict in notes.strict:
        owner = _model_at(model, loc[:-1])
        effect = ("a true value also stops DeepSpeed from dropping \"auto\" values here, so they are validated"
                  if strict else "it has no effect")
        ctx.add(STRICT_KEY, f"`strict` is not a setting of {_schema.model_name(owner) if owner else 'this model'}: "
                f"DeepSpeedConfigModel.__init__ swallows it as its `strict` argument; {effect}", where(loc),
                on_key=True)
    for loc, dep in notes.deprecated:
        owner = _model_at(model, loc[:-1])
        new = dep.get("new_param") or ""
        fix = json.dumps(new) if owner and new in owner["properties"] else None
        ctx.add(DEPRECATED_KEY, f"`{loc[-1]}` is deprecated" + (f"; use `{new}`" if new else ""), where(loc),
                fix=fix, on_key=True)
    for loc, original, result in notes.coerced:
        if _coerced(original, result) and not isinstance(result, (dict, list)):
            text = to_json(result)
            ctx.add(_coercion_rule(original, result), f"DeepSpeed converts {brief(original)} to {text} for `{dotted(where(loc))}`; "
                    f"write {text}", where(loc), fix=text)
    return values


def _report_v1(model: dict, data, error, where, raised: str, ctx: _Context) -> None:
    """One pydantic v1 error as a finding: unknown keys with a did-you-mean, the rest as invalid values
    (with the value written, and its spelling when only its case is off)."""
    here = where(error.loc)
    if error.type == "value_error.extra":
        key = error.loc[-1]
        owner = _model_at(model, error.loc[:-1]) or {"properties": {}}
        twin = next((p["x-pydantic"]["alias"] for k, p in owner["properties"].items()
                     if k == key and p.get("x-pydantic", {}).get("alias")), None)
        if twin:
            ctx.add(CONFLICTING_KEYS, f"`{key}` and `{twin}` are the same setting; DeepSpeed uses `{twin}` and rejects "
                    f"`{key}` (extra fields not permitted)", here, fails_in=PARSE, on_key=True)
            return
        candidates = [k for k, p in owner["properties"].items() if "x-deepspeed-removed" not in p]
        hint, fix = _did_you_mean(key, candidates)
        ctx.add(UNKNOWN_KEY, f"Unknown key `{key}` in `{dotted(where(error.loc[:-1]))}`: DeepSpeed rejects it (extra "
                f"fields not permitted){hint}", here, fails_in=PARSE, fix=fix, on_key=True)
    elif error.msg.endswith("got multiple values for argument 'self'"):
        ctx.add(SECTION_TYPE, f"`{dotted(here)}` has a key named \"self\", which collides with the config model's "
                f"constructor: {error.msg}{raised}", pointer_join(here, "self"), fails_in=PARSE, on_key=True)
    elif error.msg.startswith("Cannot provide deprecated parameter"):
        ctx.add(CONFLICTING_KEYS, f"`{dotted(here)}`: {error.msg}{raised}", here, fails_in=PARSE)
    else:
        value = _node_at(data, error.loc)
        got, fix = "", None
        if value is not _ABSENT:  # brief(): a value nested 100,000 deep is quoted without recursing
            got, fix = f" (got {brief(value, 60)})", _case_fix(value, _choices_at(model, error.loc))
        ctx.add(INVALID_VALUE, f"`{dotted(here)}`: {error.msg}{got}{raised}", here, fails_in=PARSE, fix=fix)


_ABSENT = object()


def _node_at(data, loc):
    """The value written at `loc` (keys and list indexes), or _ABSENT."""
    for token in loc:
        if isinstance(data, dict) and token in data or isinstance(data, list) and isinstance(token, int):
            data = data[token]
        else:
            return _ABSENT
    return data


def _choices_at(model: dict, loc) -> list:
    """The enum members or literal choices of the field at `loc`, else []."""
    owner = _model_at(model, loc[:-1]) if loc and isinstance(loc[-1], str) else None
    prop = _schema.property_of(owner, loc[-1]) if owner else None
    desc = prop["x-pydantic"]["type"] if prop and "x-pydantic" in prop else None
    while isinstance(desc, dict) and "optional" in desc:
        desc = desc["optional"]
    return (desc.get("enum") or desc.get("literal") or []) if isinstance(desc, dict) else []


def _model_at(model: dict, loc) -> dict | None:
    """The nested model schema at `loc` (keys as written, list indexes skipped) below `model`."""
    for token in loc:
        if isinstance(token, int):
            continue
        prop = _schema.property_of(model, token)
        model = _schema.model_branch(prop) if prop else None
        if model is None:
            return None
    return model


# ---------------------------------------------------------------------------------------------
# pydantic v2 Python-mode lax validation of one value
# ---------------------------------------------------------------------------------------------

_I64 = (-(2 ** 63), 2 ** 63 - 1)
_INT_PARSING = "Input should be a valid integer, unable to parse string as an integer"
_INT_SIZE = "Unable to parse input string as an integer, exceeded maximum size"
_TRUE = {"1", "on", "t", "true", "y", "yes"}
_FALSE = {"0", "off", "f", "false", "n", "no"}
# Rust's str::trim (Unicode White_Space), which pydantic-core uses before parsing numbers
_WHITESPACE = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009" \
              "\u200a\u2028\u2029\u202f\u205f\u3000"
_DIGITS = frozenset("0123456789")


def _validate(desc, value, pointer: str, prop: dict, ctx: _Context):
    """The validated value as JSON-like data, or raise _Reject with pydantic's wording."""
    if isinstance(desc, str):
        return _PRIMITIVES[desc](value)
    if "optional" in desc:
        if value is None:
            return None
        return _validate(desc["optional"], value, pointer, prop, ctx)
    if "enum" in desc:
        return _enum(desc, value)
    if "literal" in desc:
        return _literal(desc["literal"], value)
    if "list" in desc:
        if not isinstance(value, list):
            raise _Reject("Input should be a valid list" + _got(value))
        out, problems = [], []
        for index, item in enumerate(value):
            try:
                out.append(_validate(desc["list"], item, pointer, prop, ctx))
            except _Reject as exc:
                problems.append(f"[{index}] {exc.message}")
        if problems:
            raise _Reject("; ".join(problems))
        return out
    if "union" in desc:
        return _union(desc["union"], value)
    if "model" in desc:
        return _nested(_schema.model_branch(prop), value, pointer, ctx, raise_reject=True)
    raise _Reject(f"unsupported type {desc!r}")


def _nested(model: dict, value, pointer: str, ctx: _Context, raise_reject=False):
    """A model-typed field. pydantic calls the custom __init__ for a dict (so "auto" dropping and
    `strict` apply at every level); other input goes through the model's before-validators or
    fails as model_type."""
    name = _schema.model_name(model)
    if ctx.pydantic == 1:
        result = _build_v1(model, value, pointer, ctx, {}, nested=True)
    elif isinstance(value, dict):
        result = _build(model, value, pointer, ctx)
    else:
        try:
            data = value
            for validator in _validators(model, "model", "before"):
                data = validator(data)
            if not isinstance(data, dict):
                raise _Reject(f"Input should be a valid dictionary or instance of {name}" + _got(value))
        except _Reject as exc:
            ctx.reject(exc, pointer)
            result = None
        else:
            result = _build(model, data, pointer, ctx)
    if result is None and raise_reject:
        raise _Nested()
    return result


class _Nested(_Reject):
    """A nested model failed; its findings are already recorded."""

    def __init__(self):
        super().__init__("")


def _bool(value):
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        if value in (0, 1):
            return bool(value)
        if _I64[0] <= value <= _I64[1]:
            raise _Reject("Input should be a valid boolean, unable to interpret input" + _got(value))
        raise _Reject("Input should be a valid boolean" + _got(value))
    if isinstance(value, float):
        if math.isfinite(value) and value.is_integer() and _I64[0] <= value <= _I64[1]:
            if value in (0.0, 1.0):
                return bool(value)
            raise _Reject("Input should be a valid boolean, unable to interpret input" + _got(value))
        raise _Reject("Input should be a valid boolean" + _got(value))
    if isinstance(value, str):
        lowered = value.lower()
        if lowered in _TRUE:
            return True
        if lowered in _FALSE:
            return False
        raise _Reject("Input should be a valid boolean, unable to interpret input" + _got(value))
    raise _Reject("Input should be a valid boolean" + _got(value))


def _int(value):
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _Reject("Input should be a finite number" + _got(value))
        if not value.is_integer():
            raise _Reject("Input should be a valid integer, got a number with a fractional part" + _got(value))
        if not (_I64[0] <= value < 2.0 ** 63):
            raise _Reject(_INT_SIZE + _got(value))
        return int(value)
    if isinstance(value, str):
        return _str_to_int(value)
    raise _Reject("Input should be a valid integer" + _got(value))


def _str_to_int(text: str) -> int:
    """pydantic-core's string-to-int: trimmed, optional sign, digits with single underscores,
    and a fractional part only if it is all zeros ("3.0" -> 3, "3." and "5e8" fail)."""
    stripped = text.strip(_WHITESPACE)
    if len(stripped) > 4300:
        raise _Reject(_INT_SIZE + _got(text))
    parsed = _parse_int(stripped)
    if parsed is None and "." in stripped:
        head, _, tail = stripped.partition(".")
        if tail and set(tail) == {"0"}:
            parsed = _parse_int(head)
    if parsed is None:
        fix = None
        try:
            number = float(stripped)
            if math.isfinite(number) and number.is_integer():
                fix = str(int(number))
        except ValueError:
            pass
        raise _Reject(_INT_PARSING + _got(text), fix=fix)
    return parsed


def _parse_int(text: str) -> int | None:
    body = text[1:] if text[:1] in "+-" else text
    if not body or body.startswith("_") or body.endswith("_") or "__" in body:
        return None
    if not set(body.replace("_", "")) <= _DIGITS:
        return None
    number = int(body.replace("_", ""))
    return -number if text.startswith("-") else number


def _float(value):
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int):
        try:
            return float(value)
        except OverflowError:
            raise _Reject("Input should be a valid number" + _got(value)) from None
    if isinstance(value, float):
        return value
    if isinstance(value, str):
        return _str_to_float(value)
    raise _Reject("Input should be a valid number" + _got(value))


def _str_to_float(text: str) -> float:
    stripped = text.strip(_WHITESPACE)
    if _is_float_literal(stripped):
        return float(stripped)
    # second try: underscores removed from the *untrimmed* text (so " 1_000" fails)
    if "_" in text and not (text.startswith("_") or text.endswith("_") or "__" in text):
        candidate = text.replace("_", "")
        if _is_float_literal(candidate):
            return float(candidate)
    raise _Reject("Input should be a valid number, unable to parse string as a number" + _got(text))


def _is_float_literal(text: str) -> bool:
    """Rust's f64 grammar: sign, digits with an optional point, optional exponent; inf/infinity/nan."""
    body = text[1:] if text[:1] in "+-" else text
    if body.lower() in ("inf", "infinity", "nan"):
        return True
    mantissa, _, exponent = body.lower().partition("e")
    if "e" in body.lower():
        exp_digits = exponent[1:] if exponent[:1] in "+-" else exponent
        if not exp_digits or not set(exp_digits) <= _DIGITS:
            return False
    whole, _, fraction = mantissa.partition(".")
    if not whole and not fraction:
        return False
    return set(whole + fraction) <= _DIGITS


def _str(value):
    if isinstance(value, str):
        return value
    raise _Reject("Input should be a valid string" + _got(value))


def _path(value):
    if isinstance(value, str):
        from pathlib import PurePosixPath  # only a path-typed field's value pays for pathlib
        return str(PurePosixPath(value))
    raise _Reject("Input is not a valid path for <class 'pathlib.Path'>" + _got(value))


_SCALAR_TYPES = frozenset((str, int, float, bool, type(None)))


def _copied(value):
    """A deep copy, skipped for the immutable scalars that most defaults and values are."""
    if type(value) in _SCALAR_TYPES:
        return value
    return _deep_copy(value)


def _deep_copy(value):
    """copy.deepcopy, or the value itself when it nests deeper than Python's recursion limit (a list
    600 deep): the checks only read such values, and the copy only guards the validators' edits."""
    try:
        return copy.deepcopy(value)
    except RecursionError:
        return value


def _any(value):
    return _copied(value)


def _dict(value):
    if isinstance(value, dict):
        return _copied(value)
    raise _Reject("Input should be a valid dictionary" + _got(value))


def _list(value):
    if isinstance(value, list):
        return _copied(value)
    raise _Reject("Input should be a valid list" + _got(value))


def _tuple(value):
    if isinstance(value, list):
        return _copied(value)
    raise _Reject("Input should be a valid tuple" + _got(value))


def _dtype(value):
    raise _Reject("Input should be an instance of dtype" + _got(value) +
                  "; a torch.dtype field cannot be set from JSON, remove the key")


_PRIMITIVES = {"bool": _bool, "int": _int, "float": _float, "str": _str, "path": _path, "any": _any,
               "dict": _dict, "list": _list, "tuple": _tuple, "dtype": _dtype}


def _enum(desc, value):
    members = desc["enum"]
    if desc["base"] == "str":
        if isinstance(value, str) and value in members:
            return value
        raise _Reject(f"Input should be {_choices(members)}" + _got(value), fix=_case_fix(value, members))
    # int-based Enum: exact ints first, then lax int conversion; failures read as enum errors
    if isinstance(value, int) and not isinstance(value, bool) and value in members:
        return value
    if isinstance(value, int) and not isinstance(value, bool) and not (_I64[0] <= value <= _I64[1]):
        raise _Reject(_INT_SIZE + _got(value))
    number = None
    if isinstance(value, bool):
        number = int(value)
    elif isinstance(value, float) and math.isfinite(value) and value.is_integer() and \
            _I64[0] <= value < 2.0 ** 63:
        number = int(value)
    elif isinstance(value, str):
        try:
            number = _str_to_int(value)
        except _Reject:
            number = None
        if number is not None and not (_I64[0] <= number <= _I64[1]):
            raise _Reject(_INT_SIZE + _got(value))
    if number is not None and number in members:
        return number
    raise _Reject(f"Input should be {_choices(members)}" + _got(value))


def _literal(choices, value):
    for choice in choices:
        if type(value) is type(choice) and value == choice:
            return value
    raise _Reject(f"Input should be {_choices(choices)}" + _got(value), fix=_case_fix(value, choices))


def _union(choices, value):
    """Smart-mode union: an exact type match first, then the first lax success."""
    exact = {"str": str, "int": int, "float": float, "bool": bool}
    for choice in choices:
        kind = exact.get(choice) if isinstance(choice, str) else None
        if kind is not None and type(value) is kind:
            return value
    for choice in choices:
        try:
            return _validate(choice, value, "", {}, None)
        except _Reject:
            continue
    names = " or ".join(f"a valid {_TYPE_WORD.get(c, c)}" for c in choices)
    raise _Reject(f"Input should be {names}" + _got(value))


_TYPE_WORD = {"str": "string", "int": "integer", "float": "number", "bool": "boolean"}


def _check_constraints(value, constraints: dict, pointer: str) -> None:
    if not constraints or not isinstance(value, (int, float)):
        return
    tests = {"gt": (lambda v, c: v > c, "greater than"), "ge": (lambda v, c: v >= c, "greater than or equal to"),
             "lt": (lambda v, c: v < c, "less than"), "le": (lambda v, c: v <= c, "less than or equal to")}
    for kind, bound in constraints.items():
        ok, words = tests[kind]
        if not ok(value, bound):
            raise _Reject(f"Input should be {words} {_number(bound)}" + _got(value), pointer)


# ---------------------------------------------------------------------------------------------
# The models' own validators (names as in DeepSpeed; the schema lists which model has which)
# ---------------------------------------------------------------------------------------------

_VALIDATOR_CACHE: dict[tuple, tuple[dict, tuple]] = {}


def _validators(model: dict, kind: str, mode: str, field: str | None = None) -> tuple:
    """The implementations of the model's validators of this kind and mode (for one field, or the model)."""
    cache_key = (id(model), kind, mode, field)
    cached = _VALIDATOR_CACHE.get(cache_key)
    if cached is not None and cached[0] is model:  # the model is kept alive with its entry: ids stay unique
        return cached[1]
    name = _schema.model_name(model)
    found = []
    for spec in model["x-deepspeed-model"].get("validators", ()):
        if spec["kind"] != kind or spec["mode"] != mode:
            continue
        if field is not None and field not in spec.get("fields", ()):
            continue
        impl = VALIDATORS.get((name, spec["name"]))
        if impl is not None:
            found.append(impl)
    _VALIDATOR_CACHE[cache_key] = (model, tuple(found))
    return tuple(found)


def _fp16_loss_scale(value, field):
    if isinstance(value, bool):
        raise _Reject("Value error, fp16.loss_scale must be a number, not bool")
    try:
        number = float(value)  # Python's float(): also "1_000", " 5 ", "١٢"
    except (TypeError, ValueError, OverflowError):
        raise _Reject("Value error, fp16.loss_scale must be a number" + _got(value)) from None
    if not math.isfinite(number):
        raise _Reject("Value error, fp16.loss_scale must be a finite number (not inf/-inf/nan)")
    if number < 0:
        raise _Reject("Value error, fp16.loss_scale must be >= 0 (0 enables dynamic loss scaling)")
    return number


def _fp16_scale_int(value, field):
    name = f"fp16.{field}"
    if isinstance(value, bool):
        raise _Reject(f"Value error, {name} must be an integer, not bool")
    if isinstance(value, float) and not math.isfinite(value):
        raise _Reject(f"Value error, {name} must be a finite number (not inf/-inf/nan)")
    try:
        int(value)  # Python's int(): rejects "2.5" and "5.0", accepts 2.5 (pydantic then refuses it)
    except (TypeError, ValueError, OverflowError):
        raise _Reject(f"Value error, {name} must be an integer" + _got(value)) from None
    return value


def _fp16_dynamic(values, given, where):
    if values["enabled"] and values["loss_scale"] == 0:
        if values["loss_scale_window"] <= 0:
            raise _Reject("Value error, fp16.loss_scale_window must be > 0 when dynamic loss scaling is enabled "
                          "(loss_scale=0)", where(given.get("loss_scale_window", "loss_scale_window")),
                          rule=LOSS_SCALE_WINDOW)
        if values["min_loss_scale"] <= 0:
            raise _Reject("Value error, fp16.min_loss_scale must be > 0 when dynamic loss scaling is enabled "
                          "(loss_scale=0)", where(given.get("min_loss_scale", "min_loss_scale")),
                          rule=LOSS_SCALE_WINDOW)
    return values


def _zero_overlap_comm(values, given, where):
    if values["overlap_comm"] is None:
        values["overlap_comm"] = values["stage"] == 3
    return values


def _zero_compute_grad_norm(values, given, where):
    if not values["compute_grad_norm"] and values["stage"] not in (1, 2):
        raise _Reject("Value error, compute_grad_norm=false is supported only with ZeRO Stage 1 or 2",
                      where("compute_grad_norm"), rule=COMPUTE_GRAD_NORM)
    return values


def _zero_offload_ratio(values, given, where):
    offload = values["offload_optimizer"]
    if offload is not None and offload["ratio"] < 1.0 and values["stage"] != 3:
        key = given.get("offload_optimizer", "offload_optimizer")
        raise _Reject("Assertion failed, Partial offloading only supported for ZeRO Stage 3.",
                      pointer_join(where(key), "ratio"), rule=PARTIAL_OFFLOAD_STAGE)
    return values


def _leaf_coerce(values):
    if values is None:
        return {}
    if isinstance(values, dict):
        coerced = dict(values)
        for key in ("classes", "names", "name_suffixes"):
            if key in coerced and isinstance(coerced[key], str):
                coerced[key] = [coerced[key]]
        return coerced
    raise _Reject("TypeError: leaf_module configuration must be a mapping of fields to values")


def _leaf_dedupe(values, given, where):
    for key in ("classes", "names", "name_suffixes"):
        values[key] = list(dict.fromkeys(str(v) for v in values[key]))
    return values


def _zenflow(values, given, where):
    if values["select_strategy"] not in ["auto", "step", "epoch"]:
        raise _Reject('Value error, select_strategy must be one of "auto", "step", or "epoch"',
                      where(given.get("select_strategy", "select_strategy")))
    if isinstance(values["select_interval"], str) and values["select_interval"] != "auto":
        raise _Reject('Value error, If select_interval is a string, it must be "auto"', where("select_interval"))
    if isinstance(values["update_interval"], str) and values["update_interval"] != "auto":
        raise _Reject('Value error, If update_interval is a string, it must be "auto"', where("update_interval"))
    if isinstance(values["update_interval"], int) and values["update_interval"] < 1:
        raise _Reject("Value error, If update_interval is a number, it must be at least 1", where("update_interval"))
    return values  # full_warm_up_rounds / pt_reserved_cores_perc are int / float after validation


def _no_op(values, given=None, where=None):
    return values


VALIDATORS = {
    ("DeepSpeedZeroConfig", "overlap_comm_valid"): _zero_overlap_comm,
    ("DeepSpeedZeroConfig", "compute_grad_norm_valid"): _zero_compute_grad_norm,
    ("DeepSpeedZeroConfig", "offload_ratio_check"): _zero_offload_ratio,
    ("DeepSpeedZeroConfig", "elastic_checkpoint_deprecated"): _no_op,  # only logs a warning
    ("DeepSpeedZeroOffloadOptimizerConfig", "set_pipeline"): _no_op,  # derived attribute, not a field
    ("DeepSpeedZeroLeafModuleConfig", "_coerce_container_types"): _leaf_coerce,
    ("DeepSpeedZeroLeafModuleConfig", "_validate_entries"): _leaf_dedupe,
    ("ZenFlowConfig", "validate_fields"): _zenflow,
    ("DeepSpeedFP16Config", "_validate_loss_scale"): _fp16_loss_scale,
    ("DeepSpeedFP16Config", "_reject_non_integer_scale_params"): _fp16_scale_int,
    ("DeepSpeedFP16Config", "_validate_dynamic_loss_scale_params"): _fp16_dynamic,
}


# ---------------------------------------------------------------------------------------------
# Loose sections: DeepSpeed reads them with dict.get, so typos and wrong types pass silently
# ---------------------------------------------------------------------------------------------

def _check_loose(value, node: dict, pointer: str, ctx: _Context, top=False) -> None:
    branch = _schema.object_branch(node)
    if branch is None or not isinstance(value, dict):
        return
    extra = "ignore" if top else branch.get("x-deepspeed-extra", node.get("x-deepspeed-extra"))
    props = branch.get("properties", {})
    for key, item in value.items():
        here = pointer_join(pointer, key)
        prop = props.get(key)
        if prop is None:
            # `$schema` and comment keys (`_comment`, `__doc`) are written to be ignored, as DeepSpeed does
            if extra == "ignore" and not (top and key == "$schema") and not _comment_key(key):
                where = "at the top level" if top else f"in `{dotted(pointer)}`"
                later = _schema.removed_later(here) if top else None
                if later is not None:  # amp, elasticity, ... before the release that removed them
                    ctx.add(DEPRECATED_KEY, f"`{key}` is read by DeepSpeed {_schema.active()}, but DeepSpeed "
                            f"{later[0]} removed it and fails to load the config: {later[1].strip()}", here,
                            on_key=True)
                    continue
                spelled = _schema.respelled(here)
                if spelled is not None:  # another release's name for a key this one reads
                    ctx.add(IGNORED_KEY, f"`{key}` {where} is how other DeepSpeed releases spell `{spelled}`: "
                            f"DeepSpeed {_schema.active()} ignores it and reads `{spelled}`", here,
                            fix=json.dumps(spelled), on_key=True)
                    continue
                hint, fix = _did_you_mean(key, _schema.known_keys(branch))
                ctx.add(IGNORED_KEY, f"Unknown key `{key}` {where}: DeepSpeed ignores it{hint}", here, fix=fix,
                        on_key=True)
            continue
        if "x-deepspeed-removed" in prop or _schema.model_branch(prop) is not None:
            continue  # reported by the caller / validated above
        if "x-dsconfig-owner" not in prop and not (top and key == "timers"):  # timers: see _timers
            _check_type(item, prop, here, ctx)
        if isinstance(item, dict):
            _check_loose(item, prop, here, ctx)


def _check_type(value, prop: dict, pointer: str, ctx: _Context) -> None:
    accepted = _schema.accepted_kinds(prop)
    if accepted is None:
        return
    kinds, consts = accepted
    if any(type(value) is type(c) and value == c for c in consts):
        return
    if _json_kinds(value) & kinds:
        return
    expected = " or ".join(sorted(kinds) + [json.dumps(c) for c in consts if c is not None])
    ctx.add(WRONG_TYPE, f"`{dotted(pointer)}` should be {expected}, got {json_type(value)} {to_json(value)}; "
            f"DeepSpeed does not check it while parsing", pointer)


def _json_kinds(value) -> set[str]:
    if value is None:
        return {"null"}
    if isinstance(value, bool):
        return {"boolean"}
    if isinstance(value, int):
        return {"integer", "number"}
    if isinstance(value, float):
        return {"integer", "number"} if math.isfinite(value) and value.is_integer() else {"number"}
    if isinstance(value, str):
        return {"string"}
    if isinstance(value, list):
        return {"array"}
    if isinstance(value, dict):
        return {"object"}
    return set()


# ---------------------------------------------------------------------------------------------
# small helpers
# ---------------------------------------------------------------------------------------------


def _comment_key(key: str) -> bool:
    """A key written as a comment in JSON, which has none: `_comment`, `__note__`, `//`, `comment`."""
    return key.startswith(("_", "//")) or key.lower() in ("comment", "comments", "#")


def _did_you_mean(key, candidates):
    match = closest(key, (c for c in candidates if c != "$schema"))  # built only when a guess is made
    if match is None:
        return "", None
    return f"; did you mean `{match}`?", to_json(match)


def _case_fix(value, choices):
    if not isinstance(value, str):
        return None
    folded = value.strip().lower()
    hits = [c for c in choices if isinstance(c, str) and c.lower() == folded]
    return json.dumps(hits[0]) if len(hits) == 1 else None


def _choices(values) -> str:
    shown = [repr(v) if isinstance(v, str) else _number(v) for v in values]
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " or " + shown[-1]


def _number(value) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)



def _got(value) -> str:
    text = brief(value, 60)
    return f" (got {text if len(text) <= 60 else text[:57] + '...'})"



def _pytype(value) -> str:
    return type(value).__name__
