"""DeepSpeed 0.14.x's config models, validated as pydantic v1 validates them, without pydantic.

DeepSpeed 0.14.0 to 0.14.5 build their config models with the pydantic v1 API
(deepspeed/pydantic_v1.py imports pydantic.v1); from 0.15.0 on, pydantic 2, which models.py
replays. v1 coerces more and words its errors differently: an int field truncates 7.5 to 7 and
takes True and "8"; a bool takes "yes", "on", "f", 1 and 0; a str takes numbers; a Union takes its
first branch that validates; a nested model takes whatever dict() takes ("" and [] give a default
model); extra keys fail with "extra fields not permitted". The field types are the descriptors
scripts/build_schema.py writes into the schema (x-pydantic.type), the models its model schemas.

`validate(desc, value)` coerces one value (COERCERS holds the scalar kinds), `check_constraints`
checks ge/gt/le/lt after coercion, and `build(model, data)` is `Model(**data)`:
DeepSpeedConfigModel.__init__ ("auto" dropped, `strict` swallowed), v1's validate_model (aliases,
defaults, validators, extra keys) and the deprecated-field migration. Both raise `Invalid`, whose
errors are pydantic v1's own (loc, msg, type), as `ValidationError.errors()` lists them.

Stdlib only: this module is on the lint path.
"""

from __future__ import annotations

import copy
from typing import NamedTuple

_MISSING = object()


class Error(NamedTuple):
    """One pydantic v1 error: where, what, and v1's type code (as `ValidationError.errors()` has them).

    `loc` holds keys and list indexes below the model built, each key as written: where v1 names an
    aliased field by its alias, this names the spelling the config used."""

    loc: tuple
    msg: str
    type: str


class Invalid(ValueError):
    """What pydantic v1 (or the model's __init__) raises for a value or a model.

    `raises` is the exception DeepSpeed's call would end with: "ValidationError" collects errors;
    a TypeError or AssertionError raised by a nested model's __init__ becomes an error of the
    enclosing model, and at the top it is what DeepSpeed raises; an OverflowError passes through
    every level, as pydantic v1 does not catch it.
    """

    def __init__(self, errors: list[Error], raises: str = "ValidationError"):
        self.errors = errors
        self.raises = raises
        super().__init__(self.message)

    @classmethod
    def one(cls, loc: tuple, msg: str, kind: str, raises: str = "ValidationError") -> Invalid:
        return cls([Error(loc, msg, kind)], raises)

    @property
    def message(self) -> str:
        return "; ".join((" -> ".join(map(str, e.loc)) + ": " if e.loc else "") + e.msg for e in self.errors)


class Notes:
    """What building noticed besides errors, for findings (locs as in Error)."""

    def __init__(self):
        self.auto_dropped: list[tuple] = []  # "auto" values DeepSpeedConfigModel.__init__ drops
        self.strict: list[tuple[tuple, object]] = []  # `strict` keys it takes as its own argument
        self.deprecated: list[tuple[tuple, dict]] = []  # deprecated fields given, with their x-deepspeed-deprecated
        self.coerced: list[tuple[tuple, object, object]] = []  # (loc, as written, as validated) of given fields

    def extend(self, other: Notes) -> None:
        for name in vars(self):
            getattr(self, name).extend(getattr(other, name))


# ---------------------------------------------------------------------------------------------
# One value (pydantic/v1/validators.py)
# ---------------------------------------------------------------------------------------------

_BOOL_FALSE = {0, "0", "off", "f", "false", "n", "no"}
_BOOL_TRUE = {1, "1", "on", "t", "true", "y", "yes"}
_MAX_STR_INT = 4300  # v1 refuses longer strings before int() (CPython's own digit limit)


def _bool(value, loc):
    if value is True or value is False:
        return value
    if isinstance(value, str):
        value = value.lower()
    try:  # set membership: 1.0 is 1, a list is unhashable
        if value in _BOOL_TRUE:
            return True
        if value in _BOOL_FALSE:
            return False
    except TypeError:
        pass
    raise Invalid.one(loc, "value could not be parsed to a boolean", "type_error.bool")


def _int(value, loc):
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and len(value) > _MAX_STR_INT:
        raise Invalid.one(loc, "value is not a valid integer", "type_error.integer")
    try:
        return int(value)  # truncates 7.5, takes True, " 4", "1_000" and other Unicode digits
    except (TypeError, ValueError, OverflowError):
        raise Invalid.one(loc, "value is not a valid integer", "type_error.integer") from None


def _float(value, loc):
    if isinstance(value, float):
        return value
    try:
        return float(value)
    except (TypeError, ValueError):
        raise Invalid.one(loc, "value is not a valid float", "type_error.float") from None
    except OverflowError as error:  # an int past 1.8e308: v1 does not catch it
        raise Invalid.one(loc, str(error), "overflow_error", raises="OverflowError") from None


def _str(value, loc):
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)):  # bool included: True -> "True"
        try:
            return str(value)
        except ValueError as error:  # an int past CPython's 4,300-digit limit
            raise Invalid.one(loc, str(error), "value_error") from None
    raise Invalid.one(loc, "str type expected", "type_error.str")


def _path(value, loc):
    if isinstance(value, str):
        from pathlib import PurePosixPath  # only a path-typed field's value pays for pathlib
        return str(PurePosixPath(value))
    raise Invalid.one(loc, "value is not a valid path", "type_error.path")


# Lists and dicts are returned as given, as v1 returns them (a copy would recurse as deep as the value).

def _any(value, loc):
    return value


def _dict(value, loc):
    if isinstance(value, dict):
        return value
    try:
        return dict(value)  # also a list of pairs, "" and []
    except (TypeError, ValueError):
        raise Invalid.one(loc, "value is not a valid dict", "type_error.dict") from None


def _list(value, loc):
    if isinstance(value, list):
        return value
    raise Invalid.one(loc, "value is not a valid list", "type_error.list")


def _tuple(value, loc):
    if isinstance(value, list):
        return value  # a tuple, kept as a JSON list
    raise Invalid.one(loc, "value is not a valid tuple", "type_error.tuple")


def _dtype(value, loc):
    raise Invalid.one(loc, "instance of dtype expected", "type_error.arbitrary_type")


# descriptor -> coercer(value, loc) for the scalar kinds; None never reaches them
COERCERS = {"bool": _bool, "int": _int, "float": _float, "str": _str, "path": _path, "any": _any,
            "dict": _dict, "list": _list, "tuple": _tuple, "dtype": _dtype}


def _allows_none(desc) -> bool:
    """v1's allow_none: Optional, Any, a Union with Any, or Literal[None] itself."""
    if desc == "any" or not isinstance(desc, dict):
        return desc == "any"
    if "optional" in desc:
        return True
    if "union" in desc:
        return "any" in desc["union"]
    return desc.get("literal") == [None]


def validate(desc, value, models: dict | None = None, notes: Notes | None = None, loc: tuple = ()):
    """The value pydantic v1 makes of `value` for a field typed `desc`, as JSON-like data.

    `models` maps the name of each nested model ({"model": name}) to its schema; `notes` collects
    what nested models drop and coerce. Lists and dicts in the result are the input's own. Raises
    Invalid."""
    if value is None:
        if _allows_none(desc):
            return None
        raise Invalid.one(loc, "none is not an allowed value", "type_error.none.not_allowed")
    if isinstance(desc, str):
        return COERCERS[desc](value, loc)
    if "optional" in desc:
        return validate(desc["optional"], value, models, notes, loc)
    if "enum" in desc:
        return _enum(desc, value, loc)
    if "literal" in desc:
        return _literal(desc["literal"], value, loc)
    if "list" in desc:
        return _items(desc["list"], value, models, notes, loc)
    if "union" in desc:
        return _union(desc["union"], value, models, notes, loc)
    if "model" in desc:
        return _nested((models or {})[desc["model"]], value, notes, loc)
    raise ValueError(f"unsupported type descriptor {desc!r}")


def _enum(desc, value, loc):
    """enum_member_validator: `Enum(value)`, a hash lookup (True finds 1, 1.0 finds 1), then its value."""
    members = list(dict.fromkeys(desc["enum"]))  # aliases share their member's value
    try:
        return {member: member for member in members}[value]
    except (KeyError, TypeError):
        permitted = ", ".join(map(repr, members))
        raise Invalid.one(loc, f"value is not a valid enumeration member; permitted: {permitted}",
                          "type_error.enum") from None


def _literal(choices, value, loc):
    """make_literal_validator: the same hash lookup, returning the choice as declared."""
    if choices == [None]:  # v1 takes Literal[None] for the None type itself
        raise Invalid.one(loc, "value is not None", "type_error.not_none")
    try:
        return {choice: choice for choice in choices}[value]
    except (KeyError, TypeError):
        permitted = ", ".join(map(repr, choices))
        raise Invalid.one(loc, f"unexpected value; permitted: {permitted}", "value_error.const") from None


def _items(desc, value, models, notes, loc):
    if not isinstance(value, list):
        raise Invalid.one(loc, "value is not a valid list", "type_error.list")
    out, errors = [], []
    for index, item in enumerate(value):
        try:
            out.append(validate(desc, item, models, notes, (*loc, index)))
        except Invalid as exc:
            if exc.raises == "OverflowError":
                raise
            errors.extend(exc.errors)
    if errors:
        raise Invalid(errors)
    return out


def _union(choices, value, models, notes, loc):
    """Without smart_union (DeepSpeed never sets it) the first branch that validates wins."""
    errors = []
    for choice in choices:
        scratch = Notes()
        try:
            result = validate(choice, value, models, scratch, loc)
        except Invalid as exc:
            if exc.raises == "OverflowError":
                raise
            errors.extend(exc.errors)
            continue
        if notes is not None:
            notes.extend(scratch)
        return result
    raise Invalid(errors)


def _nested(model: dict, value, notes, loc):
    """BaseModel.validate: a dict builds the model, anything else goes through dict() first."""
    if not isinstance(value, dict):
        try:
            value = dict(value)
        except (TypeError, ValueError):
            raise Invalid.one(loc, "value is not a valid dict", "type_error.dict") from None
    try:
        return build(model, value, notes, loc)
    except Invalid as exc:
        if exc.raises in ("TypeError", "AssertionError"):  # from the model's __init__: an error here
            raise Invalid(exc.errors) from None
        raise


def check_constraints(value, constraints: dict, loc: tuple = ()) -> None:
    """number_size_validator, after coercion: gt else ge, then lt, then le."""
    if not constraints or not isinstance(value, (int, float)) or isinstance(value, bool):
        return
    gt, ge, lt, le = (constraints.get(k) for k in ("gt", "ge", "lt", "le"))
    if gt is not None and not value > gt:
        raise Invalid.one(loc, f"ensure this value is greater than {gt}", "value_error.number.not_gt")
    if gt is None and ge is not None and not value >= ge:
        raise Invalid.one(loc, f"ensure this value is greater than or equal to {ge}", "value_error.number.not_ge")
    if lt is not None and not value < lt:
        raise Invalid.one(loc, f"ensure this value is less than {lt}", "value_error.number.not_lt")
    if le is not None and not value <= le:
        raise Invalid.one(loc, f"ensure this value is less than or equal to {le}", "value_error.number.not_le")


# ---------------------------------------------------------------------------------------------
# One model: DeepSpeedConfigModel.__init__ + pydantic v1 validate_model + deprecations
# ---------------------------------------------------------------------------------------------

class _Field(NamedTuple):
    name: str
    alias: str | None
    desc: object
    constraints: dict
    default: object
    exclude: bool
    deprecated: dict | None
    models: dict  # nested model name -> schema
    before: tuple  # the model's @validator(pre=True) functions for this field, then the others
    after: tuple


_FIELDS: dict[int, tuple[dict, list[_Field]]] = {}  # holding the model keeps its id unique


def fields(model: dict) -> list[_Field]:
    """The model's fields in declaration order (the schema lists an aliased field twice)."""
    if id(model) in _FIELDS:
        return _FIELDS[id(model)][1]
    info = model["x-deepspeed-model"]
    found, seen = [], set()
    for prop in model["properties"].values():
        x = prop.get("x-pydantic")
        if x is None or x["field"] in seen:  # a removed key, or the bare twin of an alias
            continue
        name = x["field"]
        seen.add(name)
        found.append(_Field(name, x.get("alias"), x["type"], x.get("constraints", {}), prop.get("default"),
                            x.get("exclude", False), prop.get("x-deepspeed-deprecated"), _models_in(prop),
                            tuple(_validators(info, "field", "before", name)),
                            tuple(_validators(info, "field", "after", name))))
    _FIELDS[id(model)] = (model, found)
    return found


def _models_in(node, found=None) -> dict:
    """Name -> schema of the models a property's type names (looking through anyOf and items)."""
    found = {} if found is None else found
    if isinstance(node, dict):
        if "x-deepspeed-model" in node:
            found.setdefault(node["x-deepspeed-model"]["class"].rsplit(".", 1)[-1], node)
            return found
        for key in ("anyOf", "items"):
            branches = node.get(key)
            for branch in branches if isinstance(branches, list) else [branches]:
                _models_in(branch, found)
    return found


def build(model: dict, data: dict, notes: Notes | None = None, loc: tuple = ()) -> dict:
    """`Model(**data)` for a model schema: its values (defaults filled, enums as values, nested
    models as dicts, as `.dict()` gives them), or Invalid."""
    notes = Notes() if notes is None else notes
    info = model["x-deepspeed-model"]
    if any(not isinstance(key, str) for key in data):  # only dict() of a list makes such keys
        raise Invalid.one(loc, "keywords must be strings", "type_error", raises="TypeError")
    if info.get("deepspeed_init", True):
        data = _deepspeed_init(data, notes, loc)
    for impl in _validators(info, "model", "before"):
        data = _run(impl, (data,), (*loc, "__root__"))
    values: dict = {}
    errors: list[Error] = []
    fields_set: set[str] = set()
    used: set[str] = set()
    populate_by_name = info.get("populate_by_name", True)  # DeepSpeedConfigModel sets it
    for field in fields(model):
        key = field.alias or field.name
        value = data.get(key, _MISSING)
        if value is _MISSING and field.alias and populate_by_name:
            key = field.name
            value = data.get(key, _MISSING)
        given = value is not _MISSING
        if given:
            fields_set.add(field.name)
            used.add(key)
            if field.deprecated:
                notes.deprecated.append(((*loc, key), field.deprecated))
        else:
            value = _fresh(field.default)
        where = (*loc, key if given else field.alias or field.name)
        try:
            values[field.name] = _field(field, value, values, notes, where, given)
        except Invalid as exc:
            if exc.raises == "OverflowError":
                raise
            errors.extend(exc.errors)
        else:
            if given:
                notes.coerced.append((where, value, values[field.name]))
    errors += _extra(info, data, used, values, fields_set, model, loc)
    values = _after(info, values, errors, loc)
    if errors:
        raise Invalid(errors)
    if info.get("deepspeed_init", True):
        values = _migrate_deprecated(model, values, fields_set, loc)
    excluded = {f.name for f in fields(model) if f.exclude}
    return {k: v for k, v in values.items() if k not in excluded}


def _deepspeed_init(data: dict, notes: Notes, loc: tuple) -> dict:
    """DeepSpeedConfigModel.__init__(self, strict=False, **data): "self" collides with the instance;
    unless `strict` is true, "auto" values are dropped (replace_method keeps one)."""
    if "self" in data:
        raise Invalid.one(loc, "DeepSpeedConfigModel.__init__() got multiple values for argument 'self'",
                          "type_error", raises="TypeError")
    strict = data.get("strict", False)
    if "strict" in data:
        notes.strict.append(((*loc, "strict"), strict))
    kept = {}
    for key, value in data.items():
        if key == "strict":
            continue
        if not strict and value == "auto" and key != "replace_method":
            notes.auto_dropped.append((*loc, key))
            continue
        kept[key] = value
    return kept


def _field(field: _Field, value, values: dict, notes: Notes, loc: tuple, given: bool):
    """ModelField.validate: pre validators, None, the type, its constraints, then the @validator functions.

    A default is validated too (validate_all), but the schema holds it already validated, so only
    the validators run on it."""
    for impl in field.before:
        value = _run(impl, (value, values), loc)
    if given:
        value = validate(field.desc, value, field.models, notes, loc)
        check_constraints(value, field.constraints, loc)
    for impl in field.after:
        value = _run(impl, (value, values), loc)
    return value


def _extra(info, data: dict, used: set, values: dict, fields_set: set, model: dict, loc: tuple) -> list[Error]:
    """Keys no field took: "forbid" refuses them in sorted order, "allow" keeps them, "ignore" drops them."""
    removed = {k for k, prop in model["properties"].items() if "x-deepspeed-removed" in prop}
    extra = set(data) - used - removed  # a removed key: DeepSpeed refuses it before the model is built
    mode = info.get("extra", "ignore")
    if not extra or mode == "ignore":
        return []
    fields_set |= extra
    if mode == "allow":
        values.update({key: data[key] for key in data if key in extra})
        return []
    return [Error((*loc, key), "extra fields not permitted", "value_error.extra") for key in sorted(extra)]


def _after(info, values: dict, errors: list[Error], loc: tuple) -> dict:
    """Root validators after the fields: also when fields failed (appending to `errors`), unless
    skip_on_failure."""
    for spec in info.get("validators", ()):
        impl = VALIDATORS.get((_name(info), spec["name"]))
        if spec["kind"] != "model" or spec["mode"] != "after" or impl is None or \
                (errors and spec.get("skip_on_failure")):
            continue
        try:
            values = _run(impl, (values,), (*loc, "__root__"))
        except Invalid as exc:
            errors.extend(exc.errors)
    return values


def _migrate_deprecated(model: dict, values: dict, fields_set: set, loc: tuple) -> dict:
    """DeepSpeedConfigModel._deprecated_fields_check, as 0.14 runs it on a v1 model: the old field is
    deleted and the new one assigned with validate_assignment, so the root validators run again."""
    model_fields = {f.name: f for f in fields(model)}
    for field in model_fields.values():
        dep = field.deprecated
        if not dep or field.name not in fields_set or not dep.get("set_new_param", True):
            continue
        new = dep.get("new_param") or ""
        if new not in model_fields:  # no new field, or a dotted one: no 0.14 model has such a migration
            continue
        if new in fields_set:
            raise Invalid.one(loc, f"Cannot provide deprecated parameter '{field.name}' and replacing parameter "
                              f"'{new}' together", "assertion_error", raises="AssertionError")
        old = values.pop(field.name)
        migrate = dep.get("migrate")  # new_param_fn's result for a true and a false value
        values[new] = _fresh(migrate["truthy"] if old else migrate["falsy"]) if migrate else old
        fields_set.add(new)
        errors: list[Error] = []
        values = _after(model["x-deepspeed-model"], values, errors, loc)
        if errors:
            raise Invalid(errors)
    return values


def _fresh(value):
    """A copy of a default from the schema (shared by every build), skipped for immutable scalars."""
    return copy.deepcopy(value) if isinstance(value, (dict, list)) else value


def _name(info: dict) -> str:
    return info["class"].rsplit(".", 1)[-1]


def _validators(info: dict, kind: str, mode: str, field: str | None = None):
    """The implementations of the model's validators of this kind and mode (for `field`), in order."""
    for spec in info.get("validators", ()):
        impl = VALIDATORS.get((_name(info), spec["name"]))
        if impl and (spec["kind"], spec["mode"]) == (kind, mode) and (field is None or field in spec.get("fields", ())):
            yield impl


def _run(impl, args: tuple, loc: tuple):
    """A validator raising as DeepSpeed's do (AssertionError, ValueError, TypeError) -> Invalid at loc."""
    try:
        return impl(*args)
    except AssertionError as error:
        raise Invalid.one(loc, str(error), "assertion_error") from None
    except (ValueError, TypeError) as error:
        kind = "value_error" if isinstance(error, ValueError) else "type_error"
        raise Invalid.one(loc, str(error), kind) from None


# ---------------------------------------------------------------------------------------------
# DeepSpeed 0.14.x's validators (runtime/zero/config.py, runtime/zero/offload_config.py)
# ---------------------------------------------------------------------------------------------

def _overlap_comm_valid(value, values):
    if value is None:
        if "stage" not in values:  # stage failed: DeepSpeed's assert adds this error
            raise AssertionError("DeepSpeedZeroConfig: 'stage' must be defined before 'overlap_comm'")
        value = values["stage"] == 3
    return value


def _offload_ratio_check(values):
    # `getattr(values, "offload_optimizer", {})` on the values dict is always {}: in 0.14 a partial
    # offload ratio passes at every stage (0.15.0 reads self.offload_optimizer and refuses it)
    return values


def _set_pipeline(value, values):
    values["pipeline"] = value or values.get("pipeline", False)
    return value


VALIDATORS = {
    ("DeepSpeedZeroConfig", "overlap_comm_valid"): _overlap_comm_valid,
    ("DeepSpeedZeroConfig", "offload_ratio_check"): _offload_ratio_check,
    ("DeepSpeedZeroOffloadOptimizerConfig", "set_pipeline"): _set_pipeline,
}
