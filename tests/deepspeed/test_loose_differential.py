"""check_loose against the real DeepSpeed 0.19.8: DeepSpeedConfig(cfg) raises <=> a "parse" finding.

The batch is always valid and the pydantic sections are either valid or not a mapping, hence
every exception comes from the loose sections or from DeepSpeed's `Model(**value)` fetch of a
pydantic section (which models.check_sections reports; its findings join check_loose's here).
`resolved` is built with DeepSpeed's own models, so check_loose is tested independently of
dsconfig's pydantic emulation.

Oracle environment: deepspeed.comm.get_world_size -> 1, get_rank -> 0, and the accelerator
used by `aio.use_gds` reports 'cuda' (check_loose assumes a CUDA training machine).

Every exception is matched by its exact text: str(error) must appear in a parse finding's
message, for TypeError/AttributeError too (check_loose evaluates the same operation).
"""

from __future__ import annotations

import copy
import json
import logging
from types import SimpleNamespace
from unittest import mock

import pytest

deepspeed = pytest.importorskip("deepspeed")
hypothesis = pytest.importorskip("hypothesis")
import deepspeed.comm as dist  # noqa: E402
import deepspeed.runtime.swap_tensor.aio_config as aio_config  # noqa: E402
from deepspeed.comm.config import CommsLoggerConfig, DeepSpeedCommsConfig  # noqa: E402
from deepspeed.compile.config import CompileConfig  # noqa: E402
from deepspeed.inference.config import WeightQuantConfig  # noqa: E402
from deepspeed.monitor.config import get_monitor_config  # noqa: E402
from deepspeed.runtime import config as ds_config  # noqa: E402
from deepspeed.runtime.config import DeepSpeedConfig, get_hybrid_engine_config  # noqa: E402
from deepspeed.runtime.precision_config import get_bfloat16_config, get_float16_config  # noqa: E402
from deepspeed.runtime.tensor_parallel import get_tensor_parallel_config  # noqa: E402
from deepspeed.runtime.zero.config import get_zero_config  # noqa: E402
from deepspeed.utils.config import get_timers_config  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st

from dsconfig.deepspeed.loose import check_loose  # noqa: E402
from dsconfig.deepspeed.models import check_sections  # noqa: E402
from dsconfig.findings import one_line  # noqa: E402
from dsconfig.phases import PARSE  # noqa: E402
from dsconfig.pointers import pointer_tokens  # noqa: E402
from dsconfig.rules import RULES  # noqa: E402

BATCH = {"train_batch_size": 8, "train_micro_batch_size_per_gpu": 8}


@pytest.fixture(scope="module", autouse=True)
def oracle_environment():
    cuda = SimpleNamespace(device_name=lambda *args: "cuda")
    logging.getLogger("DeepSpeed").setLevel(logging.ERROR)  # its warnings only slow the run down
    with mock.patch.object(dist, "get_world_size", return_value=1), \
            mock.patch.object(dist, "get_rank", return_value=0), \
            mock.patch.object(aio_config, "get_accelerator", return_value=cuda):
        yield


def deepspeed_error(cfg):
    """What DeepSpeedConfig raises on a copy (it inserts keys into nested data_efficiency dicts)."""
    try:
        DeepSpeedConfig(copy.deepcopy(cfg))
    except Exception as error:  # the oracle's verdict, whatever it is
        return error
    return None


def resolved_for(cfg):
    """Validated pydantic sections from DeepSpeed's own models, None where a model raises."""
    def dump(build):
        try:
            return build().model_dump()
        except Exception:
            return None
    return {
        "zero_optimization": dump(lambda: get_zero_config(cfg)),
        "fp16": dump(lambda: get_float16_config(cfg)),
        "bf16": dump(lambda: get_bfloat16_config(cfg)),
        "compile": dump(lambda: CompileConfig(**cfg.get("compile", {}))),
        "comms_logger": dump(lambda: CommsLoggerConfig(**cfg["comms_logger"])) if "comms_logger" in cfg else None,
    }


def pointer_exists(doc, pointer):
    for token in pointer_tokens(pointer):
        if not isinstance(doc, dict) or token not in doc:
            return False
        doc = doc[token]
    return True


def assert_agreement(cfg):
    """The differential check; returns the oracle's exception (or None)."""
    error = deepspeed_error(cfg)
    findings = check_loose(copy.deepcopy(cfg), resolved_for(copy.deepcopy(cfg)))
    findings += [f for f in check_sections(copy.deepcopy(cfg)).findings if f.code == "DS605"]
    for finding in findings:
        assert finding.code in RULES, finding
        assert pointer_exists(cfg, finding.pointer), finding
    parse = [f for f in findings if f.fails_in == PARSE]
    if error is None:
        assert not parse, f"DeepSpeed accepts {cfg!r} but check_loose reports {parse}"
        return None
    assert parse, f"DeepSpeed raises {type(error).__name__}: {error} on {cfg!r}; check_loose is silent"
    # DeepSpeed's own words, control characters escaped (a finding is always one line)
    assert any(one_line(str(error)) in f.message for f in parse), f"DeepSpeed's text {str(error)!r} is in none of {parse}"
    # DeepSpeed stops at its first error, check_loose reports them all: each of the others must
    # make DeepSpeed raise on its own too (its top-level key alone, with the keys it is checked with).
    for finding in parse:
        keys = next((group for group in LINKED if pointer_tokens(finding.pointer)[0] in group),
                    pointer_tokens(finding.pointer)[:1])
        alone = {**BATCH, **{key: cfg[key] for key in keys if key in cfg}}
        assert deepspeed_error(alone) is not None, f"{finding} but DeepSpeed accepts {alone!r}"
    return error


# Keys whose checks read each other (cross-field asserts, `wall_clock_breakdown | flops enabled`).
LINKED = (("zero_optimization", "fp16", "bf16", "bfloat16", "compile", "gradient_allreduce_op"),
          ("wall_clock_breakdown", "flops_profiler"))


# -- strategies -------------------------------------------------------------------------------
ODD_STRINGS = ["true", "false", "True", "FALSE", " false", "auto", "", "none", "null", "1", "0", "1.0", "1e3",
               "-1", "%d", "%s", "%(a)s", "abc", "fp16", "FP16", "bf16", "Bf16", "fp32", "float32", "half",
               "bfloat16", "fp8", "mean", "MEAN", "sum", "Sum", "avg", "warn", "Ignore", "FAIL", "strict",
               "mock", "Python", "FAST", "slow", "replica", "Socket", "machine", "node", "throughput", "self",
               "torch.nn.Linear", "enabled"]
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 70000), st.sampled_from([0.0, -0.0, 1.0, 1.5, 1e16, float("inf")]),
    st.sampled_from(ODD_STRINGS), st.text(max_size=4),
)
junk = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.sampled_from(ODD_STRINGS + ["type", "params"]), inner, max_size=3)),
    max_leaves=5,
)
not_mapping = st.one_of(st.none(), st.booleans(), st.integers(-1, 3), st.sampled_from(["", "auto", "x"]),
                        st.lists(scalars, max_size=2))


def section(**children):
    """An object holding the given keys (each optional), or junk of any type."""
    return st.one_of(st.fixed_dictionaries({}, optional=children), st.fixed_dictionaries({}, optional=children),
                     junk)


def leaf(*likely):
    return st.one_of(st.sampled_from(likely), junk) if likely else junk


def model(**fields):
    """A pydantic section: valid, not a mapping, or carrying a `self` key."""
    return st.one_of(st.fixed_dictionaries({}, optional=fields), st.fixed_dictionaries({}, optional=fields),
                     not_mapping, st.just({"self": 1}))


flag = st.one_of(st.booleans(), st.sampled_from(["true", "false", "False", "yes", 0, 1, 2, None]), junk)
comm_dtype = leaf("fp16", "FP16", "bf16", "fp32", "Fp32", "float32", "fp8", "half", None)

SECTIONS = {
    "communication_data_type": comm_dtype,
    "seq_parallel_communication_data_type": comm_dtype,
    "gradient_allreduce_op": leaf("mean", "MEAN", "sum", "Sum", "avg", None),
    "activation_checkpointing": section(partition_activations=flag, contiguous_memory_optimization=flag,
                                        cpu_checkpointing=flag, number_checkpoints=junk),
    "comms_logger": model(enabled=st.booleans(), verbose=st.booleans()),
    "fp16": model(enabled=st.sampled_from([True, False, "auto"]), fp16_master_weights_and_grads=st.booleans()),
    "bf16": st.one_of(st.none(), model(enabled=st.booleans(), bf16_master_weights_and_grads=st.booleans(),
                                       bf16_optimizer_states=st.booleans())),
    "bfloat16": model(enabled=st.booleans(), bf16_master_weights_and_grads=st.booleans()),
    "zero_optimization": st.one_of(
        st.fixed_dictionaries({"stage": st.sampled_from([0, 1, 2, 3, "auto"])},
                              optional={"zenflow": st.sampled_from([None, {}])}),
        st.booleans(), not_mapping, st.just({"self": 2})),
    "compile": model(deepcompile=st.booleans()),
    "hybrid_engine": model(enabled=st.booleans()),
    "weight_quantization": model(enabled=st.booleans()),
    "tensor_parallel": model(autotp_size=st.sampled_from([0, 2])),
    "timers": st.one_of(st.fixed_dictionaries({}, optional={"throughput": model(enabled=st.booleans())}),
                        st.sampled_from(["throughput", ["throughput"], "timers"]),
                        junk.filter(lambda v: not (isinstance(v, dict) and "throughput" in v))),  # pydantic's
    "torch_autocast": section(enabled=flag, dtype=leaf("bf16", "bfloat16", "fp16", "float", "FP16", "fp8", "int8"),
                              lower_precision_safe_modules=st.one_of(
                                  st.lists(st.sampled_from(["torch.nn.Linear", "torch.nn.Conv2d"]), max_size=2),
                                  st.lists(scalars, max_size=2), junk)),
    "optimizer": st.one_of(
        section(type=leaf("Adam", "adamw", "SGD", "lamb", "OneBitAdam", None),
                params=section(lr=st.sampled_from([1e-4, "auto"]), max_grad_norm=leaf(1.0, 0, -1, "1.0", None)),
                legacy_fusion=flag),
        st.sampled_from(["adam", "AdamW"])),
    "scheduler": st.one_of(section(type=leaf("WarmupLR", None), params=junk), st.just("WarmupLR")),
    "flops_profiler": section(enabled=flag, detailed=flag, profile_step=junk),
    "wall_clock_breakdown": flag,
    "autotuning": section(enabled=flag, results_dir=leaf("out", "", None), exps_dir=leaf("exps", "", 0),
                          model_info=st.one_of(st.none(), section(profile=flag, num_params=junk))),
    "pipeline": section(use_reentrant=flag, stages=junk, pipe_partitioned=st.booleans()),
    "data_efficiency": section(
        enabled=flag, seed=junk,
        data_sampling=section(
            enabled=flag, num_epochs=junk,
            curriculum_learning=section(enabled=flag, curriculum_metrics=junk),
            dynamic_batching=section(enabled=flag, min_batch_size=leaf(2, "4", "1_0", 2.5, "x"),
                                     max_batch_size=leaf(8, "8", None), max_tokens=leaf(1024, "2k", "16"),
                                     verbose=flag)),
        data_routing=section(enabled=flag, random_ltd=section(enabled=flag, model_type=junk))),
    "checkpoint": section(
        tag_validation=leaf("warn", "Ignore", "FAIL", "strict", "warning"),
        parallel_write=section(pipeline_stage=leaf(True, False, "true", 1, 0.0, 2)),
        writer=st.one_of(st.none(), section(type=leaf("mock", "Python", "FAST", "slow", None),
                                            data_parallel=leaf("replica", "socket", "MACHINE", "node", None),
                                            decoupled=flag)),
        load_universal=flag),
    "data_types": section(keep_in_fp32_modules=st.one_of(st.just("auto"), st.lists(scalars, max_size=2), junk),
                          grad_accum_dtype=junk),
    "aio": st.one_of(st.none(), section(use_gds=flag, block_size=junk, single_submit=flag)),
    "datastates_ckpt": st.one_of(junk, st.sampled_from([False, {}, {"enabled": False}, {"host_cache_size": 16}])),
    "expert_parallel": section(enabled=flag, load_balance_coeff=leaf(None, 0.1, 0), autoep_size=junk),
    "vocabulary_size": st.one_of(st.integers(0, 60000), st.sampled_from(["%d", "%s", "abc", "50257"]), junk),
    "dump_state": flag,
    "zero_force_ds_cpu_optimizer": flag,
    "managed_gradient_accumulation": flag,
}


@st.composite
def configs(draw):
    cfg = dict(BATCH)
    for name in draw(st.lists(st.sampled_from(sorted(SECTIONS)), max_size=4, unique=True)):
        cfg[name] = draw(SECTIONS[name])
    return cfg


@settings(max_examples=4000, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
@given(configs())
def test_differential_against_deepspeed(cfg):
    assert_agreement(cfg)


# Deeply nested values are rare above: here every container on the way is an object.
def obj(**children):
    return st.fixed_dictionaries({}, optional=children)


DEEP = {
    "data_efficiency": obj(
        data_sampling=obj(
            curriculum_learning=obj(enabled=flag, curriculum_metrics=junk),
            dynamic_batching=obj(enabled=flag, min_batch_size=leaf(2, "4", "1_0", 2.5, float("nan"), "x"),
                                 max_batch_size=leaf(8, "8", None), max_tokens=leaf(1024, "2k", " 16 "),
                                 lr_scaling_method=junk, verbose=flag)),
        data_routing=obj(enabled=flag, random_ltd=section(enabled=flag))),
    "checkpoint": obj(tag_validation=leaf("warn", "Ignore", "FAIL", "strict", "warning"),
                      parallel_write=section(pipeline_stage=leaf(True, False, "true", 1, 0.0, 2)),
                      writer=obj(type=leaf("mock", "Python", "FAST", "slow", None),
                                 data_parallel=leaf("replica", "socket", "MACHINE", "node", None),
                                 io_buffer_double=flag)),
    "autotuning": obj(results_dir=leaf("out", "", None), exps_dir=leaf("exps", "", 0),
                      model_info=section(profile=flag)),
    "torch_autocast": obj(enabled=flag, dtype=leaf("bf16", "FP16", "fp8", "torch.bfloat16"),
                          lower_precision_safe_modules=st.one_of(st.lists(scalars, max_size=2), junk)),
    "optimizer": obj(type=leaf("Adam", "adamw", None), params=obj(max_grad_norm=leaf(1.0, 0, "1.0", None))),
    "data_types": obj(keep_in_fp32_modules=st.one_of(st.lists(scalars, max_size=2), junk)),
    "expert_parallel": obj(load_balance_coeff=leaf(None, 0.1)),
}


@settings(max_examples=1500, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.fixed_dictionaries({key: st.just(value) for key, value in BATCH.items()}, optional=DEEP))
def test_nested_values_against_deepspeed(cfg):
    assert_agreement(cfg)


# Precision, ZeRO and allreduce cross-checks need the pydantic sections together more often.
@settings(max_examples=800, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.fixed_dictionaries({key: st.just(value) for key, value in BATCH.items()}, optional={
    "zero_optimization": st.fixed_dictionaries({"stage": st.integers(0, 3)},
                                               optional={"zenflow": st.sampled_from([None, {}])}),
    "fp16": st.fixed_dictionaries({}, optional={"enabled": st.booleans(),
                                                "fp16_master_weights_and_grads": st.booleans()}),
    "bf16": st.fixed_dictionaries({}, optional={"enabled": st.booleans(),
                                                "bf16_master_weights_and_grads": st.booleans(),
                                                "bf16_optimizer_states": st.booleans()}),
    "bfloat16": st.fixed_dictionaries({}, optional={"enabled": st.booleans(),
                                                    "bf16_master_weights_and_grads": st.booleans()}),
    "compile": st.fixed_dictionaries({}, optional={"deepcompile": st.booleans()}),
    "gradient_allreduce_op": st.sampled_from(["mean", "sum", "SUM"]),
}))
def test_cross_field_checks_against_deepspeed(cfg):
    assert_agreement(cfg)


# -- a few exact expectations ---------------------------------------------------------------------
def only(cfg, code):
    findings = [f for f in check_loose(cfg, resolved_for(cfg)) if f.code == code]
    assert len(findings) == 1, findings
    return findings[0]


def test_section_of_wrong_type_gets_a_fix():
    finding = only({**BATCH, "optimizer": "adam"}, "DS605")
    assert (finding.pointer, finding.fails_in, json.loads(finding.fix)) == ("/optimizer", PARSE, {"type": "adam"})
    assert only({**BATCH, "checkpoint": None}, "DS605").fix == "{}"


def test_quoted_bool_is_a_silent_trap():
    finding = only({**BATCH, "zero_force_ds_cpu_optimizer": "false"}, "DS410")
    assert (finding.pointer, finding.fails_in, finding.fix) == ("/zero_force_ds_cpu_optimizer", None, "false")
    finding = only({**BATCH, "wall_clock_breakdown": "false"}, "DS411")
    assert (finding.fails_in, finding.fix) == (PARSE, "false")


def test_presence_enables():
    assert only({**BATCH, "datastates_ckpt": {}}, "DS110").pointer == "/datastates_ckpt"
    assert only({**BATCH, "comms_logger": {"enabled": False}}, "DS110").fails_in is None
    assert not check_loose({**BATCH, "comms_logger": {"enabled": True}, "datastates_ckpt": False}, {})


def test_optimizer_params_without_type_and_vocabulary_warning():
    assert only({**BATCH, "optimizer": {"params": {"lr": 1}}}, "DS508").fails_in is None
    assert only({**BATCH, "vocabulary_size": 50257}, "DS607").fails_in is None
    assert only({**BATCH, "vocabulary_size": "50257"}, "DS605").fails_in == PARSE


def test_fixes_for_enum_values():
    assert only({**BATCH, "communication_data_type": "float32"}, "DS406").fix == '"fp32"'
    assert only({**BATCH, "gradient_allreduce_op": "avg"}, "DS407").fix == '"mean"'
    assert only({**BATCH, "checkpoint": {"parallel_write": {"pipeline_stage": "true"}}}, "DS601").fix == "true"


@pytest.mark.parametrize("config", [None, [], "x", 3, {}, {"optimizer": {"type": None}}])
def test_never_raises(config):
    check_loose(config, None)
    check_loose(config, {"zero_optimization": "junk", "fp16": 5})


# -- the real-world corpus ----------------------------------------------------------------------
def _model_builders():
    """(keys, build) for each pydantic-backed getter; build raises like DeepSpeed does."""
    return [
        (("zero_optimization",), get_zero_config),
        (("comms_logger",), DeepSpeedCommsConfig),
        (("tensorboard", "wandb", "csv_monitor", "comet"), get_monitor_config),
        (("fp16",), get_float16_config),
        (("bf16", "bfloat16"), get_bfloat16_config),
        (("hybrid_engine",), get_hybrid_engine_config),
        (("weight_quantization",),
         lambda c: WeightQuantConfig(**c["weight_quantization"]) if "weight_quantization" in c else None),
        (("compile",), lambda c: CompileConfig(**c.get("compile", {}))),
        (("timers",), get_timers_config),
        (("tensor_parallel",), get_tensor_parallel_config),
    ]


def normalize(cfg):
    """Valid batch, no removed keys, no world-size divisor, and without the pydantic sections
    whose *validation* fails (the `**` call and the timers lookup stay: check_loose owns them)."""
    cfg = copy.deepcopy(cfg)
    for key in ("gradient_accumulation_steps", "sequence_parallel_size", *ds_config._REMOVED_TOP_LEVEL_CONFIG_KEYS):
        cfg.pop(key, None)
    cfg.update(BATCH)
    if isinstance(cfg.get("zero_optimization"), dict):
        for key in ds_config._REMOVED_ZERO_CONFIG_KEYS:
            cfg["zero_optimization"].pop(key, None)
    for keys, build in _model_builders():
        try:
            build(copy.deepcopy(cfg))
        except TypeError:
            pass  # `Model(**not_a_mapping)` or the timers lookup: part of the comparison
        except Exception:
            for key in keys:
                cfg.pop(key, None)
    return cfg


def test_corpus_agreement():
    from tests.conftest import corpus_files
    hjson = pytest.importorskip("hjson")
    checked, raised, codes = 0, 0, {}
    for path in sorted(p for p, _ in corpus_files() if p.suffix == ".json"):
        try:
            original = hjson.loads(path.read_text(encoding="utf-8"))
        except Exception:
            continue  # loading is not check_loose's business
        if not isinstance(original, dict):
            continue
        cfg = normalize(json.loads(json.dumps(original)))  # plain dicts, as from a JSON file
        error = assert_agreement(cfg)
        checked += 1
        raised += error is not None
        for finding in check_loose(cfg, resolved_for(cfg)):
            codes[finding.code] = codes.get(finding.code, 0) + 1
    print(f"\ncorpus: {checked} configs agree with DeepSpeed; {raised} raise in loose sections; findings {codes}")
    assert checked > 0
