"""Differential tests: dsconfig's pydantic-free section validator against the real DeepSpeed models.

For every pydantic section, hypothesis builds dicts that mix valid values with near-misses; the
real fetch function (get_zero_config, get_bfloat16_config, get_monitor_config, ...) is the oracle:
it raises  <=>  check_sections reports a finding with fails_in="parse", and when it does not
raise, `resolved[section]` equals the real model's model_dump().
"""

from __future__ import annotations

import enum
import json
import logging
import math
import os
import pathlib
import re
import typing

import pytest

deepspeed = pytest.importorskip("deepspeed")
pydantic = pytest.importorskip("pydantic")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from dsconfig.deepspeed import models, schema  # noqa: E402
from dsconfig.phases import PARSE  # noqa: E402

logging.disable(logging.WARNING)

from deepspeed.comm.config import DeepSpeedCommsConfig  # noqa: E402
from deepspeed.compile.config import CompileConfig  # noqa: E402
from deepspeed.inference.config import WeightQuantConfig  # noqa: E402
from deepspeed.monitor.config import get_monitor_config  # noqa: E402
from deepspeed.runtime.config import DeepSpeedConfig, get_hybrid_engine_config  # noqa: E402
from deepspeed.runtime.precision_config import get_bfloat16_config, get_float16_config  # noqa: E402
from deepspeed.runtime.tensor_parallel.config import get_tensor_parallel_config  # noqa: E402
from deepspeed.runtime.zero.config import get_zero_config  # noqa: E402
from deepspeed.utils.config import get_timers_config  # noqa: E402

EXAMPLES = int(os.environ.get("DSCONFIG_DIFF_EXAMPLES", "250"))  # raise it for a deeper hunt
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
AGREEMENT: dict[str, list[int]] = {}  # section -> [examples, raised] (printed with -s)


def normalize(value):
    """A model_dump() as plain JSON data (what `resolved` holds)."""
    if isinstance(value, enum.Enum):
        return normalize(value.value)
    if isinstance(value, pathlib.PurePath):
        return str(value)
    if isinstance(value, (list, tuple)):
        return [normalize(v) for v in value]
    if isinstance(value, dict):
        return {k: normalize(v) for k, v in value.items()}
    return value


def same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b or (isinstance(a, (int, float)) and not isinstance(a, bool)
                                             and isinstance(b, (int, float)) and not isinstance(b, bool) and a == b)


def real(fetch, config):
    try:
        return True, normalize(fetch(config).model_dump())
    except Exception as exc:  # noqa: BLE001 - any exception is DeepSpeed refusing the config
        return False, exc


def parse_findings(result):
    return [f for f in result.findings if f.fails_in == PARSE]


# -- value strategies derived from the schema's type descriptors -----------------------------------

JUNK = st.sampled_from([None, "auto", "", "x", [], {}, [1], {"a": 1}, True, False, 0, 1, -1, 2.5, float("inf")])
NUMERIC_TEXT = st.sampled_from(["0", "1", "3", " 7 ", "3.0", "3.5", "5e8", "1_000", "+3", "-1", "007", "1e3",
                                "inf", "nan", "0x10", "1.", ".5", "٣", "500000000"])
BOOL_TEXT = st.sampled_from(["true", "false", "True", "FALSE", "yes", "no", "on", "off", "t", "f", "y", "n", "1",
                             "0", "maybe", " true"])


def values_for(desc, prop, depth):
    if isinstance(desc, str):
        return {
            "bool": st.one_of(st.booleans(), st.booleans(), BOOL_TEXT, st.sampled_from([0, 1, 2, 0.0, 1.0, 3.0]), JUNK),
            "int": st.one_of(st.integers(0, 10 ** 9), st.integers(-5, 5),
                             st.sampled_from([5e8, 1e9, 0.0, 3.0, 5.5, True, False, 10 ** 20, 1e20]), NUMERIC_TEXT,
                             JUNK),
            "float": st.one_of(st.floats(-2, 2), st.sampled_from([0, 1, 0.5, 0.0, 1e-3, float("nan"), True]),
                               NUMERIC_TEXT, JUNK),
            "str": st.one_of(st.text(max_size=5), st.sampled_from(["auto", "get", "deepspeed"]), JUNK),
            "path": st.one_of(st.sampled_from(["/nvme", "/a//b/", "", ".", "none"]), JUNK),
            "any": JUNK,
            "dict": st.one_of(st.dictionaries(st.text(max_size=3), st.integers(), max_size=2), JUNK),
            "list": st.one_of(st.lists(st.integers(), max_size=2), JUNK),
            "tuple": st.one_of(st.lists(st.integers(), max_size=2), JUNK),
            "dtype": st.sampled_from(["fp16", "torch.float16", "auto", None, 1]),
        }[desc]
    if "optional" in desc:
        return st.one_of(st.none(), values_for(desc["optional"], prop, depth))
    if "enum" in desc or "literal" in desc:
        members = desc.get("enum", desc.get("literal"))
        variants = [m.upper() for m in members if isinstance(m, str)] + [" " + m for m in members
                                                                           if isinstance(m, str)]
        numeric = [float(m) for m in members if isinstance(m, int)] + [str(m) for m in members if
                                                                      isinstance(m, int)]
        return st.one_of(st.sampled_from(members), st.sampled_from(members),
                         st.sampled_from(variants + numeric + [4, -1, "3.0", True, False]), JUNK)
    if "list" in desc:
        return st.one_of(st.lists(values_for(desc["list"], prop, depth), max_size=3),
                         st.lists(st.sampled_from(["a", "b"]), max_size=3), st.text(max_size=3), JUNK)
    if "union" in desc:
        return st.one_of(st.sampled_from(["auto", "5", "x", 0, 1, 5, -1, True, 2.0, 2.5]), JUNK)
    if "model" in desc:
        model = schema.model_branch(prop)
        if depth > 1:
            return st.one_of(st.just({}), JUNK)
        return st.one_of(model_dicts(model, depth + 1), model_dicts(model, depth + 1), JUNK,
                         st.sampled_from(["cpu", None]))
    raise AssertionError(desc)


def model_dicts(model, depth=0):
    """Dicts for one model: known keys (both spellings), unknown keys, `strict`, "auto"."""
    entries = []
    for key, prop in model["properties"].items():
        if "x-deepspeed-removed" in prop:
            continue
        entries.append((key, st.one_of(values_for(prop["x-pydantic"]["type"], prop, depth),
                                       st.just("auto"))))
    entries.append(("strict", st.sampled_from([True, False, 0, "yes", None])))
    entries.append(("pinmemory", st.integers()))
    entries.append(("replace_method", st.just("auto")))
    keys = st.lists(st.sampled_from(range(len(entries))), max_size=6, unique=True)

    @st.composite
    def build(draw):
        rare = {"strict", "pinmemory", "replace_method"}
        data = {}
        for index in draw(keys):
            key, strategy = entries[index]
            if key in rare and draw(st.integers(0, 3)):
                continue
            data[key] = draw(strategy)
        return data

    return build()


def section_model(key):
    return schema.model_branch(schema.property_of(schema.root(), key))


SECTIONS = {
    # section in `resolved` -> (config key, real fetch, how to read resolved)
    "zero_optimization": ("zero_optimization", get_zero_config, None),
    "fp16": ("fp16", get_float16_config, None),
    "bf16": ("bf16", get_bfloat16_config, None),
    "tensorboard": ("tensorboard", lambda c: get_monitor_config(c).tensorboard, None),
    "wandb": ("wandb", lambda c: get_monitor_config(c).wandb, None),
    "csv_monitor": ("csv_monitor", lambda c: get_monitor_config(c).csv_monitor, None),
    "comet": ("comet", lambda c: get_monitor_config(c).comet, None),
    "comms_logger": ("comms_logger", lambda c: DeepSpeedCommsConfig(c).comms_logger, None),
    "hybrid_engine": ("hybrid_engine", get_hybrid_engine_config, None),
    "compile": ("compile", lambda c: CompileConfig(**c.get("compile", {})), None),
    "tensor_parallel": ("tensor_parallel", get_tensor_parallel_config, None),
    "weight_quantization": ("weight_quantization", lambda c: WeightQuantConfig(**c["weight_quantization"]), None),
}


def agree(section, config, fetch, pick=None):
    ok, expected = real(fetch, config)
    result = models.check_sections(config)
    ours = parse_findings(result)
    stats = AGREEMENT.setdefault(section, [0, 0])
    stats[0] += 1
    stats[1] += not ok
    assert ok != bool(ours), (
        f"{section}: DeepSpeed {'accepts' if ok else 'raises ' + repr(expected)[:300]} but dsconfig reports "
        f"{ours} for {config!r}")
    if ok:
        got = result.resolved[section]
        if pick:
            got = pick(got)
        assert same(got, expected), f"{section}: resolved differs for {config!r}\n ours={got}\n real={expected}"


def _make_test(section):
    key, fetch, _ = SECTIONS[section]
    model = section_model(key)

    @SETTINGS
    @given(data=st.one_of(model_dicts(model), model_dicts(model), JUNK))
    def test(data):
        agree(section, {key: data}, fetch)

    test.__name__ = f"test_section_{section}"
    return test


for _section in SECTIONS:
    globals()[f"test_section_{_section}"] = _make_test(_section)


@SETTINGS
@given(data=st.one_of(model_dicts(section_model("bf16")), JUNK, st.none()),
       legacy=st.one_of(model_dicts(section_model("bf16")), JUNK, st.none()),
       layout=st.sampled_from(["both", "legacy", "bf16"]))
def test_bf16_fallback(data, legacy, layout):
    config = {}
    if layout in ("both", "bf16"):
        config["bf16"] = data
    if layout in ("both", "legacy"):
        config["bfloat16"] = legacy
    agree("bf16", config, get_bfloat16_config)


@SETTINGS
@given(flag=st.booleans(), size=st.one_of(st.none(), st.integers(0, 10 ** 9), JUNK, NUMERIC_TEXT),
       with_size=st.booleans())
def test_zero_legacy_boolean(flag, size, with_size):
    config = {"zero_optimization": flag}
    if with_size:
        config["allgather_size"] = size
    agree("zero_optimization", config, get_zero_config)
    assert any(f.code == "DS300" for f in models.check_sections(config).findings)


def _throughput_model():
    return schema.model_branch(schema.property_of(schema.property_of(schema.root(), "timers"), "throughput"))


@SETTINGS
@given(timers=st.one_of(st.builds(lambda d: {"throughput": d}, st.one_of(model_dicts(_throughput_model()), JUNK)),
                        JUNK, st.sampled_from(["throughput", "abc", ["throughput"], ["x"], {"other": 1}])))
def test_timers(timers):
    agree("timers", {"timers": timers}, get_timers_config, pick=lambda r: r and r["throughput"])


# -- the whole DeepSpeedConfig ---------------------------------------------------------------------

def _precision_errors(resolved) -> bool:
    """DeepSpeedConfig's own cross-section asserts (runtime/config.py:511 and _do_error_check)."""
    fp16, bf16, zero = resolved.get("fp16"), resolved.get("bf16"), resolved.get("zero_optimization")
    if fp16 and bf16 and fp16["enabled"] and bf16["enabled"]:
        return True
    stage = zero["stage"] if zero else 0
    if fp16 and fp16["fp16_master_weights_and_grads"] and stage == 0:
        return True
    if bf16 and (bf16["bf16_master_weights_and_grads"] or bf16["bf16_optimizer_states"]) and stage == 0:
        return True
    return bool(bf16 and bf16["bf16_optimizer_states"] and not bf16["bf16_master_weights_and_grads"])


WHOLE_KEYS = ["zero_optimization", "fp16", "bf16", "bfloat16", "tensorboard", "wandb", "csv_monitor", "comet",
              "comms_logger", "hybrid_engine", "compile", "tensor_parallel", "weight_quantization"]


@st.composite
def whole_configs(draw):
    config = {"train_batch_size": 1}
    for key in draw(st.lists(st.sampled_from(WHOLE_KEYS), min_size=1, max_size=4, unique=True)):
        config[key] = draw(st.one_of(model_dicts(section_model(key)), model_dicts(section_model(key)), JUNK))
    return config


@settings(max_examples=EXAMPLES * 8 // 5, deadline=None, suppress_health_check=list(HealthCheck))
@given(config=whole_configs())
def test_whole_config(config):
    try:
        DeepSpeedConfig(config)
        raised = None
    except Exception as exc:  # noqa: BLE001
        raised = exc
    result = models.check_sections(config)
    sections_fail = bool(parse_findings(result))
    expected = sections_fail or (not sections_fail and _precision_errors(result.resolved))
    stats = AGREEMENT.setdefault("DeepSpeedConfig", [0, 0])
    stats[0] += 1
    stats[1] += raised is not None
    assert (raised is not None) == expected, f"DeepSpeedConfig raised {raised!r}; dsconfig {result.findings}: {config}"


# -- hand-picked cases the generators may miss -----------------------------------------------------

CASES = [
    {"zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu", "ratio": 0.5}}},
    {"zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu", "ratio": 0.5}}},
    {"zero_optimization": {"stage": 0, "compute_grad_norm": False}},
    {"zero_optimization": {"stage": "2", "compute_grad_norm": "no"}},
    {"zero_optimization": {"cpu_offload": True}},
    {"zero_optimization": {"cpu_offload": False, "offload_optimizer": None}},
    {"zero_optimization": {"cpu_offload_param": "yes", "stage": 3}},
    {"zero_optimization": {"cpu_offload_use_pin_memory": True}},
    {"zero_optimization": {"stage3_gather_fp16_weights_on_model_save": True}},
    {"zero_optimization": {"stage3_gather_fp16_weights_on_model_save": 1,
                           "stage3_gather_16bit_weights_on_model_save": True}},
    {"zero_optimization": {"prefetch_bucket_size": 1, "stage3_prefetch_bucket_size": 2}},
    {"zero_optimization": {"prefetch_bucket_size": 1, "stage3_prefetch_bucket_size": "auto"}},
    {"zero_optimization": {"strict": True, "stage": "auto"}},
    {"zero_optimization": {"offload_param": {"strict": True, "device": "auto"}}},
    {"zero_optimization": {"leaf_module": None}},
    {"zero_optimization": {"leaf_module": "x"}},
    {"zero_optimization": {"leaf_module": {"classes": "a", "names": ["b", "b"]}}},
    {"zero_optimization": {"zenflow": {"select_strategy": "x"}}},
    {"zero_optimization": {"zenflow": {"update_interval": 0}}},
    {"zero_optimization": {"zenflow": {"select_interval": True, "update_interval": 2.0}}},
    {"zero_optimization": {"reduce_bucket_size": 0}},
    {"zero_optimization": {"sub_group_size": 1e12, "stage3_prefetch_bucket_size": 15099494.4}},
    {"fp16": {"enabled": True, "loss_scale_window": 0}},
    {"fp16": {"enabled": True, "min_loss_scale": True}},
    {"fp16": {"loss_scale": "1_000", "min_loss_scale": "2.5"}},
    {"fp16": {"loss_scale": -1}},
    {"fp16": {"loss_scale": "١٢"}},
    {"fp16": {"opt_level": "O2"}},
    {"fp16": None},
    {"bf16": None, "bfloat16": {"enabled": True}},
    {"bf16": {"enabled": False}, "bfloat16": {"enabled": True}},
    {"bf16": {"check_overflow": True}},
    {"tensorboard": None},
    {"wandb": "auto"},
    {"comet": {"strict": 1, "enabled": "auto"}},
    {"comms_logger": {}},
    {"comms_logger": "auto"},
    {"tensor_parallel": {"tp": {"tp_size": 2}, "tensor_parallel": {}}},
    {"tensor_parallel": {"dtype": "fp16"}},
    {"tensor_parallel": {"injection_policy_tuple": [1, "a"]}},
    {"compile": {"passes": ["z1", "z2"]}},
    {"hybrid_engine": {"max_out_tokens": 0}},
    {"weight_quantization": {"q_type": "Symmetric"}},
    {"timers": "throughput"},
    {"timers": 3},
]


@pytest.mark.parametrize("config", CASES, ids=lambda c: json.dumps(c)[:60])
def test_cases(config):
    key = next(iter(config))
    section = {"bfloat16": "bf16"}.get(key, key)
    if section == "timers":
        agree("timers", config, get_timers_config, pick=lambda r: r and r["throughput"])
    else:
        agree(section, config, SECTIONS[section][1])


def test_findings_for_known_traps():
    codes = lambda c: {f.code for f in models.check_sections(c).findings}  # noqa: E731
    assert "DS302" in codes(CASES[1])
    assert "DS305" in codes(CASES[2])
    assert "DS405" in codes(CASES[22])
    assert "DS104" in codes(CASES[4])
    assert "DS105" in codes(CASES[9]) and "DS105" in codes(CASES[10])
    assert "DS108" in codes(CASES[12])
    assert {"DS401"} <= codes(CASES[29]) and "DS402" in codes(CASES[30])
    result = models.check_sections({"zero_optimization": {"stage": "3", "offload_optimizer": {"device": "CPU"}}})
    by_code = {f.code: f for f in result.findings}
    assert by_code["DS106"].fix == "3"
    assert by_code["DS103"].fix == '"cpu"' and "Input should be 'none', 'cpu' or 'nvme'" in by_code["DS103"].message
    dropped = models.check_sections({"zero_optimization": {"stage": "auto"}, "bf16": {"enabled": "auto"}}).auto_dropped
    assert dropped == ["/zero_optimization/stage", "/bf16/enabled"]


def test_never_raises_on_any_json():
    json_values = st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=4),
        lambda children: st.lists(children, max_size=3) | st.dictionaries(
            st.sampled_from(WHOLE_KEYS + ["timers", "stage", "offload_optimizer", "strict", "x"]), children,
            max_size=4),
        max_leaves=12)

    @settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
    @given(json_values)
    def run(value):
        result = models.check_sections(value)
        assert not any("could not validate" in f.message for f in result.findings)

    run()


def teardown_module(module):
    print("\nagreement (examples, of which DeepSpeed raised):", json.dumps(AGREEMENT))


# -- primitive lax-coercion tables against pydantic.TypeAdapter ------------------------------------

class _IntEnum(int, enum.Enum):
    a = 0
    b = 1
    c = 2
    d = 3
    m = 3


class _StrEnum(str, enum.Enum):
    none = "none"
    cpu = "cpu"
    nvme = "nvme"


PRIMITIVES = [
    (bool, "bool"), (int, "int"), (float, "float"), (str, "str"), (pathlib.Path, "path"), (list, "list"),
    (typing.List[str], {"list": "str"}), (dict, "dict"), (tuple, "tuple"), (typing.Union[str, int],
                                                                          {"union": ["str", "int"]}),
    (typing.Literal["torch", "liger"], {"literal": ["torch", "liger"]}),
    (_IntEnum, {"enum": [0, 1, 2, 3, 3], "base": "int"}), (_StrEnum, {"enum": ["none", "cpu", "nvme"], "base": "str"}),
]
ODD_INPUTS = st.one_of(
    st.booleans(), st.integers(), st.integers(-3, 5), st.floats(allow_nan=True),
    st.sampled_from([0.0, 1.0, 3.0, 2.0 ** 63, 1e20]),
    NUMERIC_TEXT, BOOL_TEXT, st.text(max_size=4),
    st.from_regex(r"[ \t]?[+-]?[0-9_]{0,4}(\.[0-9_]{0,2})?([eE][+-]?[0-9]{0,2})?[ \t]?", fullmatch=True),
    st.sampled_from(["cpu", "CPU", "torch", "none", None, [], ["a"], [1], {}, {"a": 1}]))


@pytest.mark.parametrize("annotation,desc", PRIMITIVES, ids=lambda p: str(p)[:30])
def test_lax_primitives_match_type_adapter(annotation, desc):
    adapter = pydantic.TypeAdapter(annotation)

    @settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
    @given(ODD_INPUTS)
    def run(value):
        try:
            expected = normalize(adapter.validate_python(value))
            expected_error = None
        except pydantic.ValidationError as exc:
            expected, expected_error = None, exc.errors()[0]["msg"]
        try:
            got = models._validate(desc, value, "", {}, None)
            got_error = None
        except models._Reject as exc:
            got, got_error = None, exc.message
        if expected_error is None:
            assert got_error is None and same(got, expected), (value, got, got_error, expected)
        else:
            assert got_error is not None, (value, got, expected_error)
            if not isinstance(desc, dict) or "union" not in desc:
                message = re.sub(r"^\[\d+\] ", "", got_error)  # list items are prefixed with their index
                assert message.startswith(expected_error), (value, got_error, expected_error)

    run()


# -- real-world configs ------------------------------------------------------------------------------


def _corpus():
    from tests.conftest import corpus_files
    return [path for path, _ in corpus_files("deepspeed")]


def test_corpus_sections_agree_with_deepspeed():
    """Every corpus ds_config, loaded the way DeepSpeed loads a path (hjson), section by section."""
    hjson = pytest.importorskip("hjson")
    checked, paths = 0, _corpus()
    for path in paths:
        try:
            config = hjson.loads(path.read_text(), object_pairs_hook=dict)
        except Exception:  # noqa: BLE001 - unloadable files are another check's business
            continue
        if not isinstance(config, dict):
            continue
        config = json.loads(json.dumps(config))  # hjson's OrderedDicts and Decimals -> plain JSON data
        for section, (key, fetch, _) in SECTIONS.items():
            if key in config:
                agree(section, {key: config[key], **({"allgather_size": config["allgather_size"]}
                                                     if "allgather_size" in config else {})}, fetch)
                checked += 1
    assert checked >= len(paths) > 0  # about two sections per config: ZeRO, fp16/bf16, ...
