"""dsconfig/deepspeed/pydantic_v1.py against pydantic v1 itself and against DeepSpeed 0.14.5.

Two oracles. `pydantic.v1` (installed with pydantic 2): for every kind of field type, each value is
coerced or refused exactly as a real v1 field with DeepSpeed's model config does it (the error's
loc, message and type included), and models with extra forbid/ignore/allow, aliases and nested
models build to the same values or errors. The real DeepSpeed 0.14.5 (tests/releases.py): its
DeepSpeedConfig accepts a whole `zero_optimization` section exactly when the v1 validator, through
models.py's switch, builds it from the schema scripts/build_schema.py writes for 0.14.5; and every
0.14.5 section builds to the values `Model(**data).dict()` gives in that release, or to its errors.
"""

from __future__ import annotations

import enum
import importlib.util
import json
import math
import os
import pathlib
import subprocess
import sys
import typing

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsconfig.deepspeed import models, pydantic_v1
from dsconfig.phases import PARSE
from tests import releases
from tests.answers import Answers

ROOT = pathlib.Path(__file__).resolve().parents[2]
v1 = pytest.importorskip("pydantic.v1")
pytest.importorskip("torch")  # build_schema's _descriptor knows torch.dtype
EXAMPLES = int(os.environ.get("DSCONFIG_DIFF_EXAMPLES", "400"))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))


def _build_schema_module():
    spec = importlib.util.spec_from_file_location("build_schema", ROOT / "scripts" / "build_schema.py")
    sys.path.insert(0, str(ROOT / "scripts"))  # build_schema imports its neighbour generated.py
    try:
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    return module


descriptor = _build_schema_module()._descriptor


class DeepSpeedV1Config:
    """DeepSpeedConfigModel.Config in 0.14.x (runtime/config_utils.py)."""

    validate_all = True
    validate_assignment = True
    use_enum_values = True
    allow_population_by_field_name = True
    extra = "forbid"
    arbitrary_types_allowed = True


class ZeroStage(int, enum.Enum):
    disabled = 0
    optimizer_states = 1
    gradients = 2
    weights = 3
    max_stage = 3  # noqa: PIE796 - an alias, as in DeepSpeed


class OffloadDevice(str, enum.Enum):
    none = "none"
    cpu = "cpu"
    nvme = "nvme"


def plain(value):
    """A v1 field value as JSON-like data: enums by value, Paths as text, tuples as lists."""
    if isinstance(value, enum.Enum):
        return plain(value.value)
    if isinstance(value, pathlib.PurePath):
        return str(value)
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


def identical(a, b) -> bool:
    """Equal and of the same type all the way down (True is not 1, 1 is not 1.0); NaN equals NaN."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(identical(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(identical(x, y) for x, y in zip(a, b))
    return a == b


# -- one field, every kind of type ----------------------------------------------------------------

# the typing forms are what is tested: DeepSpeed's annotations use them, and v1 reads them
LEAVES = [bool, int, float, str, pathlib.Path, typing.Any, dict, list, tuple, typing.Dict, typing.List,  # noqa: UP006
          ZeroStage, OffloadDevice]
# not Literal[None] alone: v1 takes it for the None type, and Optional of it breaks v1 ("a class is expected")
literals = st.lists(st.sampled_from(["a", "auto", "cpu", 1, 0, True, 2.5, None]), min_size=1, max_size=3) \
    .filter(lambda choices: set(choices) != {None}).map(lambda choices: typing.Literal[tuple(choices)])
annotations = st.recursive(
    st.one_of(st.sampled_from(LEAVES), literals),
    lambda inner: st.one_of(
        inner.map(lambda t: typing.Optional[t]),  # noqa: UP045
        inner.map(lambda t: typing.List[t]),  # noqa: UP006
        st.lists(inner, min_size=2, max_size=3).map(lambda ts: typing.Union[tuple(ts)])),  # noqa: UP007
    max_leaves=4)

SCALARS = st.one_of(
    st.booleans(), st.none(), st.integers(-4, 4), st.integers(),
    st.sampled_from([10 ** 400, 2 ** 63, 7.5, -0.5, 1.0, 0.0, -0.0, 3.0, 1e300, 5e8]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["8", "7.5", "1e9", "yes", "no", "On", "OFF", "f", "T", " 4", "4 ", "1_000", "", "auto",
                     "none", "cpu", "CPU", "a", "True", "\u0664", "0x10", "+5", "-3", "nan", "inf", "3.0",
                     "x/../y", "a//b", "1" * 4301, " " + "1" * 4300]),
    st.text(max_size=6))
JSON_VALUES = st.recursive(
    SCALARS,
    lambda children: st.one_of(st.lists(children, max_size=3),
                               st.dictionaries(st.text(max_size=3), children, max_size=3),
                               st.lists(st.sampled_from(["ab", ["a", 1], ["device", "cpu"], ["x"]]), max_size=2)),
    max_leaves=5)
# v1 takes at most one lower and one upper bound (conint refuses gt with ge)
CONSTRAINTS = st.tuples(st.sampled_from([{}, {"ge": 0}, {"ge": 0.0}, {"ge": 1}, {"gt": 0}, {"gt": -1}]),
                        st.sampled_from([{}, {"le": 1.0}, {"le": 100}, {"lt": 5}, {"lt": 0.5}])) \
    .map(lambda bounds: {**bounds[0], **bounds[1]})


def real_field(annotation, constraints: dict, value):
    """(value, None) or (None, (raises, [(loc, msg, type)])) from a real pydantic v1 model."""
    model = v1.create_model("M", __config__=DeepSpeedV1Config, x=(annotation, v1.Field(..., **constraints)))
    try:
        return plain(model(x=value).x), None
    except v1.ValidationError as error:
        return None, ("ValidationError", [(tuple(e["loc"]), e["msg"], e["type"]) for e in error.errors()])
    except OverflowError as error:  # not caught by v1: no loc
        return None, ("OverflowError", [str(error)])


def ours(desc, constraints: dict, value):
    try:
        result = pydantic_v1.validate(desc, value, loc=("x",))
        pydantic_v1.check_constraints(result, constraints, ("x",))
        return result, None
    except pydantic_v1.Invalid as error:
        if error.raises == "OverflowError":
            return None, (error.raises, [e.msg for e in error.errors])
        return None, (error.raises, [tuple(e) for e in error.errors])


TALLY = {"fields": 0, "refused": 0}


@SETTINGS
@given(annotation=annotations, value=JSON_VALUES, data=st.data())
def test_every_field_type_coerces_and_refuses_as_pydantic_v1(annotation, value, data):
    constraints = data.draw(CONSTRAINTS) if annotation in (int, float) else {}
    desc = descriptor(annotation)
    expected, expected_error = real_field(annotation, constraints, value)
    got, got_error = ours(desc, constraints, value)
    TALLY["fields"] += 1
    TALLY["refused"] += expected_error is not None
    assert got_error == expected_error, (annotation, desc, value)
    assert identical(got, expected), (annotation, desc, value, got, expected)


def test_dtype_fields_refuse_every_json_value():
    import torch
    dtype = torch.dtype
    for value in (None, "torch.float16", "fp16", 16, [], {}):
        expected, expected_error = real_field(dtype, {}, value)
        assert ours(descriptor(dtype), {}, value) == (expected, expected_error), value


def test_zz_report_field_agreement(capsys):
    with capsys.disabled():
        print(f"\npydantic v1 fields: {TALLY['fields']} values agree ({TALLY['refused']} refused)")


@pytest.mark.parametrize("desc,value,expected", [
    ("int", 7.5, 7), ("int", True, 1), ("int", "8", 8), ("int", " 4", 4), ("int", "1_000", 1000),
    ("bool", "yes", True), ("bool", "on", True), ("bool", "f", False), ("bool", 1, True), ("bool", 0.0, False),
    ("str", 8, "8"), ("str", True, "True"), ("float", "1e9", 1e9), ("dict", "", {}), ("dict", [["a", 1]], {"a": 1}),
    ({"union": ["int", "str"]}, "8", 8), ({"union": ["str", "int"]}, 8, "8"),
    ({"enum": [0, 1, 2, 3, 3], "base": "int", "name": "ZeroStageEnum"}, True, 1),
    ({"optional": "int"}, None, None), ({"literal": ["a", 1]}, 1.0, 1),
])
def test_v1_coercions(desc, value, expected):
    assert identical(pydantic_v1.validate(desc, value), expected)


@pytest.mark.parametrize("desc,value,message", [
    ("int", "7.5", "value is not a valid integer"), ("int", None, "none is not an allowed value"),
    ("bool", 2, "value could not be parsed to a boolean"), ("float", "yes", "value is not a valid float"),
    ("str", [], "str type expected"), ("dict", "ab", "value is not a valid dict"),
    ({"enum": [0, 1, 2, 3, 3], "base": "int", "name": "ZeroStageEnum"}, "3",
     "value is not a valid enumeration member; permitted: 0, 1, 2, 3"),
    ({"literal": ["a", 1]}, "b", "unexpected value; permitted: 'a', 1"),
])
def test_v1_refusals(desc, value, message):
    with pytest.raises(pydantic_v1.Invalid) as caught:
        pydantic_v1.validate(desc, value)
    assert caught.value.message == message


def test_constraints_are_checked_after_coercion():
    assert pydantic_v1.validate("int", -0.5) == 0
    pydantic_v1.check_constraints(0, {"ge": 0})
    with pytest.raises(pydantic_v1.Invalid, match="^ensure this value is greater than or equal to 0$"):
        pydantic_v1.check_constraints(pydantic_v1.validate("int", "-3"), {"ge": 0})
    with pytest.raises(pydantic_v1.Invalid, match="^ensure this value is less than or equal to 1.0$"):
        pydantic_v1.check_constraints(2.0, {"ge": 0.0, "le": 1.0})


# -- DeepSpeed 0.14.5's models ------------------------------------------------------------------------

RELEASE = "0.14.5"


@pytest.fixture(scope="module")
def release_folder():
    folder = releases.release_dir(RELEASE)
    if folder is None:
        pytest.skip(f"DeepSpeed {RELEASE} is not available (no network to fetch it)")
    return folder


@pytest.fixture(scope="module")
def v1_schema(release_folder):
    """The schema scripts/build_schema.py --stdout writes for 0.14.5 (the committed file is left alone)."""
    committed = (ROOT / "schemas" / "deepspeed.schema.json").read_bytes()
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "build_schema.py"), "--stdout"],
                          capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(release_folder)),
                          check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert (ROOT / "schemas" / "deepspeed.schema.json").read_bytes() == committed
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def zero_model(v1_schema):
    return next(b for b in v1_schema["properties"]["zero_optimization"]["anyOf"] if "x-deepspeed-model" in b)


def _models(node):
    if isinstance(node, dict):
        if "x-deepspeed-model" in node:
            yield node
        for value in node.values():
            yield from _models(value)
    elif isinstance(node, list):
        for value in node:
            yield from _models(value)


def test_build_schema_reads_the_v1_models(v1_schema, zero_model):
    assert v1_schema["x-deepspeed-version"] == RELEASE
    found = [m for m in _models(v1_schema["properties"]) if m["x-deepspeed-model"]["class"].startswith("deepspeed.")]
    assert len(found) >= 10 and all(m["x-deepspeed-model"]["pydantic"] == 1 for m in found)
    props = zero_model["properties"]
    # `overlap_comm: bool = None` is Optional in v1; Field(ge=0) is on FieldInfo; aliases both ways
    assert props["overlap_comm"]["x-pydantic"]["type"] == {"optional": "bool"}
    assert props["reduce_bucket_size"]["x-pydantic"]["constraints"] == {"ge": 0}
    assert props["stage3_prefetch_bucket_size"]["x-pydantic"] == props["prefetch_bucket_size"]["x-pydantic"]
    assert props["cpu_offload"]["x-deepspeed-deprecated"]["new_param"] == "offload_optimizer"
    assert {"name": "overlap_comm_valid", "kind": "field", "mode": "after", "fields": ["overlap_comm"]} in \
        zero_model["x-deepspeed-model"]["validators"]
    comms = v1_schema["properties"]["comms_logger"]["x-deepspeed-model"]
    assert comms["deepspeed_init"] is False  # 0.14's CommsLoggerConfig is a plain BaseModel


def test_every_v1_validator_is_implemented(v1_schema):
    listed = {(m["x-deepspeed-model"]["class"].rsplit(".", 1)[-1], spec["name"])
              for m in _models(v1_schema["properties"]) for spec in m["x-deepspeed-model"]["validators"]}
    assert listed and listed <= set(pydantic_v1.VALIDATORS), listed - set(pydantic_v1.VALIDATORS)


_DUMP_WORKER = r"""
import importlib, json, logging, os, sys
sys.path.append(sys.argv[1])  # scripts/: the names older releases need from today's torch and numpy
from release_compat import restore_older_names
answers = os.fdopen(os.dup(1), "w", buffering=1)
os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
logging.disable(logging.CRITICAL)
restore_older_names()
from pydantic.v1 import ValidationError
answers.write("ready\n")
for line in sys.stdin:
    request = json.loads(line)
    module, _, name = request["class"].rpartition(".")
    try:
        answer = {"values": getattr(importlib.import_module(module), name)(**request["data"]).dict()}
    except ValidationError as error:
        answer = {"raises": "ValidationError", "errors": [[e["loc"], e["msg"], e["type"]] for e in error.errors()]}
    except Exception as error:
        answer = {"raises": type(error).__name__, "errors": [[[], str(error), ""]]}
    answers.write(json.dumps(answer, default=str) + "\n")
"""


@pytest.fixture(scope="module")
def dump(release_folder):
    """`Model(**data)` in 0.14.5, for a model schema: .dict() or the errors (one process for the module)."""
    process = subprocess.Popen([sys.executable, "-c", _DUMP_WORKER, str(ROOT / "scripts")],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=str(release_folder),
                               env=dict(os.environ, PYTHONPATH=str(release_folder)))
    answers = Answers(process, process.stdout)
    assert answers.next("the pydantic v1 worker's start") == "ready\n"

    def ask(model: dict, data: dict) -> dict:
        process.stdin.write(json.dumps({"class": model["x-deepspeed-model"]["class"], "data": data}) + "\n")
        process.stdin.flush()
        return json.loads(answers.next(f"pydantic v1: {model['x-deepspeed-model']['class']}({json.dumps(data)[:300]})"))

    yield ask
    process.stdin.close()
    process.wait(timeout=30)


def same_as_release(model: dict, data: dict, dump) -> dict | None:
    """pydantic_v1.build gives 0.14.5's own .dict(), or its errors, exactly; the values or None."""
    real = dump(model, data)
    try:
        values = json.loads(json.dumps(pydantic_v1.build(model, data)))
    except pydantic_v1.Invalid as error:
        aliases = _aliases(model)  # v1 names an aliased field by its alias; ours as written
        errors = [[[aliases.get(k, k) if e.type != "value_error.extra" else k for k in e.loc], e.msg, e.type]
                  for e in error.errors]
        if error.raises != "ValidationError":
            errors = [[[], e.msg, ""] for e in error.errors]
        assert {"raises": error.raises, "errors": errors} == real, data
        return None
    assert values == real.get("values"), data
    return values


@pytest.fixture(scope="module")
def oracle(release_folder):
    release = releases.release(RELEASE)
    if release is None:
        pytest.skip(f"DeepSpeed {RELEASE} cannot run here")
    return release


BOOL_JUNK = st.sampled_from(["yes", "on", "f", "true", "TRUE", "1", 1, 0, 2, 1.0, None, "auto", "", [], "maybe"])
INT_JUNK = st.sampled_from([7.5, -0.5, -1, "8", " 4", "1e9", "7.5", True, None, "auto", 10 ** 400, "1_000", [], 1e300])


def field(valid, junk):
    """`valid` three times in four."""
    return st.integers(0, 3).flatmap(lambda pick: junk if pick == 0 else valid)


booleans = field(st.booleans(), BOOL_JUNK)
counts = field(st.sampled_from([500000000, 5e8, 1e9, 1, 0, 50000000]), INT_JUNK)
OFFLOAD_COMMON = {
    "device": field(st.sampled_from(["cpu", "nvme", "none"]), st.sampled_from(["CPU", "gpu", "auto", None, 1, ""])),
    "nvme_path": field(st.just("/local_nvme"), st.sampled_from([None, 5, "", True, "auto"])),
    "pin_memory": booleans, "buffer_count": counts,
    "pinmemory": st.just(True), "strict": st.sampled_from([True, False, "auto"]),
}
OPTIMIZER_ONLY = {
    "pipeline_read": booleans, "pipeline_write": booleans, "fast_init": booleans,
    "ratio": field(st.sampled_from([1.0, 0.5, 1, 0]), st.sampled_from(["0.3", 2, -1, True, "nan", 10 ** 400])),
}


def some_of(strategies: dict, max_size=4):
    """A dict holding a few of the keys, each drawn from its strategy."""
    return st.lists(st.sampled_from(sorted(strategies)), max_size=max_size, unique=True).flatmap(
        lambda keys: st.fixed_dictionaries({k: strategies[k] for k in keys}))


offload_optimizer = some_of({**OFFLOAD_COMMON, **OPTIMIZER_ONLY})
offload_param = some_of({**OFFLOAD_COMMON, "buffer_size": counts, "max_in_cpu": counts,
                         "ratio": OPTIMIZER_ONLY["ratio"]})
NESTED_JUNK = st.sampled_from(["", [], None, "auto", "cpu", [["device", "cpu"]], ["ab"], 1, [["self", 1]], {"self": 1}])
ZERO_KEYS = {
    "stage": field(st.sampled_from([0, 1, 2, 3]), st.sampled_from(["3", 3.0, True, 2.5, 4, -1, "x", None, "auto"])),
    "offload_optimizer": field(offload_optimizer, NESTED_JUNK),
    "offload_param": field(offload_param, NESTED_JUNK),
    **{key: booleans for key in ("overlap_comm", "contiguous_gradients", "reduce_scatter", "round_robin_gradients",
                                 "stage3_gather_16bit_weights_on_model_save", "gather_16bit_weights_on_model_save",
                                 "cpu_offload", "cpu_offload_param", "cpu_offload_use_pin_memory",
                                 "stage3_gather_fp16_weights_on_model_save", "legacy_stage1", "elastic_checkpoint",
                                 "stage3_use_all_reduce_for_fetch_params")},
    **{key: counts for key in ("reduce_bucket_size", "allgather_bucket_size", "sub_group_size", "prefetch_bucket_size",
                               "stage3_prefetch_bucket_size", "stage3_max_live_parameters", "max_live_parameters",
                               "stage3_param_persistence_threshold", "zero_hpz_partition_size", "mics_shard_size")},
    "stag": st.just(2), "compute_grad_norm": st.booleans(), "strict": st.sampled_from([True, False, 0, "yes"]),
    "self": st.just(1),
}
zero_sections = some_of(ZERO_KEYS, max_size=5)


def _aliases(model: dict) -> dict:
    return {p["x-pydantic"]["field"]: p["x-pydantic"]["alias"] for p in model["properties"].values()
            if p.get("x-pydantic", {}).get("alias")}


ZERO_TALLY = {"sections": 0, "refused": 0}


def agree_with_release(section, zero_model, dump, oracle) -> None:
    """DeepSpeedConfig 0.14.5 accepts the section <=> the v1 validator builds it, through models.py's
    switch, to 0.14.5's own values or errors."""
    truth = oracle.verdict({"train_batch_size": 1, "zero_optimization": section}, 1)
    ctx = models._Context(pydantic=1)
    resolved = models._call(zero_model, section, "/zero_optimization", ctx)
    fatal = [f for f in ctx.findings if f.fails_in == PARSE]
    ZERO_TALLY["sections"] += 1
    ZERO_TALLY["refused"] += not truth["ok"]
    assert truth["ok"] == (not fatal) == (resolved is not None), (section, truth["error"], fatal)
    values = same_as_release(zero_model, section, dump)
    assert values == (None if resolved is None else json.loads(json.dumps(resolved)))


@SETTINGS
@given(section=zero_sections)
def test_zero_sections_agree_with_deepspeed_0_14_5(zero_model, dump, oracle, section):
    agree_with_release(section, zero_model, dump, oracle)


@pytest.mark.parametrize("section", [
    {"strict": True, "stage": "auto"}, {"strict": "yes", "offload_param": {"device": "auto"}},
    {"offload_param": {"strict": True, "device": "auto"}}, {"stage": "auto", "strict": 0},
    {"stag": 1, "zzz": 2, "compute_grad_norm": True, "a": 0}, {"offload_optimizer": {"b": 1, "a": 2, "pinmemory": 3}},
    {"prefetch_bucket_size": 5}, {"prefetch_bucket_size": 5, "stage3_prefetch_bucket_size": 6},
    {"stage": 3, "overlap_comm": None}, {"stage": "x"}, {"stage": "x", "overlap_comm": False},
    {"cpu_offload": True}, {"cpu_offload": 0, "offload_optimizer": None}, {"cpu_offload_param": "on"},
    {"stage3_gather_fp16_weights_on_model_save": True, "stage3_gather_16bit_weights_on_model_save": False},
    {"cpu_offload_use_pin_memory": True}, {"offload_param": [["device", "cpu"], ["pin_memory", "yes"]]},
    {"offload_optimizer": {"pipeline_read": True}}, {"offload_optimizer": {"ratio": 10 ** 400}},
    {"sub_group_size": 10 ** 400}, {"reduce_bucket_size": " " + "1" * 4300}, {"self": 1, "stag": 1},
], ids=lambda section: json.dumps(section)[:50])
def test_chosen_zero_sections_agree_with_deepspeed_0_14_5(zero_model, dump, oracle, section):
    agree_with_release(section, zero_model, dump, oracle)


JUNK = st.sampled_from([None, "auto", "", "yes", "8", 7.5, -1, True, 0, [], {}, [["a", 1]], "x", 10 ** 400, "self"])


def valid_for(desc):
    """Values a field of this type takes as written."""
    plain_kinds = {"bool": st.booleans(), "int": st.integers(-2, 10 ** 6), "float": st.floats(-1, 2),
                   "str": st.text(max_size=5), "path": st.text(max_size=5), "list": st.lists(st.text(max_size=3)),
                   "dict": st.dictionaries(st.text(max_size=3), st.integers(), max_size=2)}
    if isinstance(desc, str):
        return plain_kinds.get(desc, st.none())
    if "optional" in desc:
        return st.one_of(st.none(), valid_for(desc["optional"]))
    return st.sampled_from(desc.get("enum") or desc.get("literal") or [None])


def sections_of(model: dict):
    keys = {key: st.one_of(valid_for(prop["x-pydantic"]["type"]), JUNK)
            for key, prop in model["properties"].items() if "x-pydantic" in prop}
    return some_of({**keys, "unknown_key": st.just(1), "strict": st.sampled_from([True, False]), "self": st.just(1)})


@pytest.mark.parametrize("key", ["tensorboard", "wandb", "csv_monitor", "comet", "comms_logger", "hybrid_engine",
                                 "weight_quantization", "timers/throughput"])
def test_other_sections_build_as_deepspeed_0_14_5_builds_them(v1_schema, dump, key):
    node = v1_schema
    for part in key.split("/"):
        node = node["properties"][part]
    model = next(m for m in _models(node))

    @settings(max_examples=max(EXAMPLES // 4, 50), deadline=None, suppress_health_check=list(HealthCheck))
    @given(section=sections_of(model))
    def run(section):
        ctx = models._Context(pydantic=1)
        resolved = models._call(model, section, "/" + key, ctx)
        values = same_as_release(model, section, dump)
        assert (values is None) == any(f.fails_in == PARSE for f in ctx.findings)
        assert values == (None if resolved is None else json.loads(json.dumps(resolved)))

    run()


def test_zz_report_zero_agreement(capsys):
    if ZERO_TALLY["sections"]:
        with capsys.disabled():
            print(f"\nDeepSpeed {RELEASE} zero_optimization: {ZERO_TALLY['sections']} verdicts agree "
                  f"({ZERO_TALLY['refused']} refused)")


# Where 0.14.5 (pydantic v1) and 0.19.8 (pydantic 2) part ways, each checked against its release.
DIFFERENCES = [
    ({"reduce_bucket_size": 7.5}, True, "converts 7.5 to 7"),
    ({"stage": True}, True, "converts true to 1"),
    ({"overlap_comm": "on"}, True, 'converts "on" to true'),
    ({"offload_param": ""}, True, None),  # dict(""): a default offload_param
    ({"stage": 1, "offload_optimizer": {"device": "cpu", "ratio": 0.5}}, True, None),  # 0.15+: stage 3 only
    ({"stage": "3"}, False, "value is not a valid enumeration member; permitted: 0, 1, 2, 3"),
    ({"compute_grad_norm": False}, False,
     "Unknown key `compute_grad_norm` in `zero_optimization`: DeepSpeed rejects it (extra fields not permitted)"),
]


@pytest.mark.parametrize("section,accepted,message", DIFFERENCES, ids=lambda x: json.dumps(x)[:40])
def test_v1_findings_where_releases_differ(zero_model, oracle, section, accepted, message):
    assert oracle.verdict({"train_batch_size": 1, "zero_optimization": section}, 1)["ok"] is accepted
    ctx = models._Context(pydantic=1)
    assert (models._call(zero_model, section, "/zero_optimization", ctx) is not None) is accepted
    assert all(f.fails_in != PARSE for f in ctx.findings) is accepted
    if message:
        assert any(message in f.message for f in ctx.findings), [f.message for f in ctx.findings]


def test_v1_findings_quote_the_value_and_fix_its_case(zero_model):
    ctx = models._Context(pydantic=1)
    section = {"offload_optimizer": {"device": "CPU", "ratio": 2}, "stage": "3", "stag": 1}
    assert models._call(zero_model, section, "/zero_optimization", ctx) is None
    found = {f.pointer: f for f in ctx.findings}
    device = found["/zero_optimization/offload_optimizer/device"]
    assert device.message.endswith("permitted: 'none', 'cpu', 'nvme' (got \"CPU\")") and device.fix == '"cpu"'
    assert found["/zero_optimization/offload_optimizer/ratio"].message.endswith(
        "ensure this value is less than or equal to 1.0 (got 2)")
    assert found["/zero_optimization/stag"].fix == '"stage"' and found["/zero_optimization/stag"].on_key


def test_default_context_still_validates_as_pydantic_2():
    ctx = models._Context()
    assert ctx.pydantic == 2
    findings = models.check_sections({"zero_optimization": {"reduce_bucket_size": 7.5}}).findings
    assert any("fractional part" in f.message and f.fails_in == PARSE for f in findings)


# -- hostile values: findings, never a crash, in bounded time ---------------------------------------

def _deep(depth: int):
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


def _timed_call(model, section, pydantic: int):
    import time
    start = time.perf_counter()
    ctx = models._Context(pydantic=pydantic)
    built = models._call(model, section, "/section", ctx)
    assert all(len(f.message) < 4000 for f in ctx.findings)
    return built, ctx.findings, time.perf_counter() - start


def test_hostile_values_are_findings(v1_schema, zero_model):
    comms = v1_schema["properties"]["comms_logger"]
    weights = v1_schema["properties"]["weight_quantization"]
    cases = [
        (comms, {"prof_ops": _deep(100_000)}, True),  # a list field keeps the list; nothing walks it
        (weights, {"quantized_initialization": _deep(100_000)}, False),  # dict() of it: the first item is no pair
        (weights, {"quantized_initialization": [[f"k{i}", i] for i in range(80_000)]}, True),
        (zero_model, {"stage": 3, "stag": _deep(100_000), "offload_param": _deep(100_000)}, False),
        (zero_model, {"sub_group_size": 10 ** 4000, "offload_optimizer": {"ratio": 10 ** 400}}, False),
        (zero_model, {"reduce_bucket_size": " " + "9" * 4300, "strict": _deep(100_000)}, False),
    ]
    for model, section, accepted in cases:
        built, findings, seconds = _timed_call(model, section, 1)
        assert (built is not None) is accepted and (any(f.fails_in == PARSE for f in findings) is not accepted)
        assert seconds < 2.0


def test_many_unknown_keys_cost_what_they_cost_under_pydantic_2(zero_model):
    """The most a 256 KiB file holds: 11,000 unknown keys, each with its did-you-mean."""
    section = {"stage": 3, **{f"unknown_key_{i}": i for i in range(11_000)}}
    _, findings_v1, seconds_v1 = _timed_call(zero_model, section, 1)
    current = models._section("zero_optimization")
    _, findings_v2, seconds_v2 = _timed_call(current, section, 2)
    assert len(findings_v1) == len(findings_v2) == 11_000
    assert seconds_v1 < 1.5 * seconds_v2 + 0.5


# -- model features DeepSpeed 0.14 does not use, against pydantic v1 models --------------------------

class Inner(v1.BaseModel):
    class Config:
        validate_all = True
        use_enum_values = True
        extra = "forbid"

    device: OffloadDevice = "none"
    ratio: float = v1.Field(1.0, ge=0.0, le=1.0)


def _outer(extra: str, populate: bool):
    class Outer(v1.BaseModel):
        class Config:
            validate_all = True
            use_enum_values = True
            allow_population_by_field_name = populate

        stage: ZeroStage = 0
        bucket: int = v1.Field(5, ge=0, alias="stage3_bucket")
        inner: typing.Optional[Inner] = None  # noqa: UP045
        items: typing.List[Inner] = v1.Field(default_factory=list)  # noqa: UP006
        choice: typing.Union[int, Inner] = 0  # noqa: UP007
        name: str = "x"

    Outer.__config__.extra = v1.Extra(extra)
    return Outer


@pytest.fixture(scope="module")
def schema_of():
    pytest.importorskip("deepspeed")  # build_schema asks whether a class is a DeepSpeedConfigModel
    return _build_schema_module().model_schema


OUTER_VALUES = st.one_of(JUNK, st.integers(-1, 3), st.sampled_from(["cpu", "CPU", "nvme"]),
                         st.fixed_dictionaries({}, optional={"device": st.sampled_from(["cpu", "gpu", None]),
                                                             "ratio": st.sampled_from([0.5, 2, "0.3"]),
                                                             "extra": st.just(1)}))


@pytest.mark.parametrize("extra", ["forbid", "ignore", "allow"])
@pytest.mark.parametrize("populate", [True, False])
def test_extra_aliases_and_nested_models_as_pydantic_v1(schema_of, extra, populate):
    cls = _outer(extra, populate)
    model = schema_of(cls)
    assert model["x-deepspeed-model"]["extra"] == extra and model["x-deepspeed-model"]["deepspeed_init"] is False
    keys = ["stage", "bucket", "stage3_bucket", "inner", "items", "choice", "name", "other", "strict", "self"]

    @settings(max_examples=max(EXAMPLES // 2, 100), deadline=None, suppress_health_check=list(HealthCheck))
    @given(section=st.dictionaries(st.sampled_from(keys), st.one_of(OUTER_VALUES, st.lists(OUTER_VALUES, max_size=2)),
                                   max_size=4))
    def run(section):
        try:
            expected, expected_errors = plain(cls(**section).dict()), None
        except v1.ValidationError as error:
            expected, expected_errors = None, [[list(e["loc"]), e["msg"], e["type"]] for e in error.errors()]
        try:
            got, got_errors = pydantic_v1.build(model, section), None
        except pydantic_v1.Invalid as error:
            aliases = _aliases(model)
            got, got_errors = None, [[[aliases.get(k, k) if e.type != "value_error.extra" else k for k in e.loc],
                                      e.msg, e.type] for e in error.errors]
        assert got_errors == expected_errors, section
        assert identical(got, expected), section

    run()


def test_notes_come_from_the_union_branch_that_validated(zero_model):
    offload = next(m for m in _models(zero_model["properties"]["offload_param"]))
    name = offload["x-deepspeed-model"]["class"].rsplit(".", 1)[-1]
    desc = {"union": [{"model": name}, "dict"]}
    notes = pydantic_v1.Notes()  # the model drops "auto", then refuses `other`; the dict branch wins
    assert pydantic_v1.validate(desc, {"device": "auto", "other": 1}, {name: offload}, notes) == \
        {"device": "auto", "other": 1}
    assert notes.auto_dropped == []
    assert pydantic_v1.validate(desc, {"device": "auto"}, {name: offload}, notes)["device"] == "none"
    assert notes.auto_dropped == [("device",)]
