"""The generated DeepSpeed JSON Schema: well-formed, up to date, complete, and usable by editors."""

from __future__ import annotations

import enum
import json
import logging
import math
import pathlib
import subprocess
import sys

import pytest

from dsconfig.deepspeed import models, schema
from tests.conftest import corpus_files
from tests.helpers import lint

ROOT = pathlib.Path(__file__).resolve().parents[2]

jsonschema = pytest.importorskip("jsonschema")

KNOWN_GOOD = [
    {"$schema": "../schemas/deepspeed.schema.json", "train_batch_size": 32, "train_micro_batch_size_per_gpu": 4,
     "gradient_accumulation_steps": 8, "gradient_clipping": 1.0, "steps_per_print": 100,
     "zero_optimization": {"stage": 2, "overlap_comm": True, "contiguous_gradients": True,
                           "reduce_bucket_size": 500000000, "allgather_bucket_size": 500000000},
     "bf16": {"enabled": True}},
    {"train_micro_batch_size_per_gpu": "auto", "train_batch_size": "auto", "gradient_accumulation_steps": "auto",
     "gradient_clipping": "auto", "bf16": {"enabled": "auto"}, "fp16": {"enabled": "auto", "loss_scale": 0,
                                                                        "initial_scale_power": 16},
     "optimizer": {"type": "AdamW", "params": {"lr": "auto", "betas": "auto", "eps": "auto",
                                                "weight_decay": "auto"}},
     "scheduler": {"type": "WarmupDecayLR", "params": {"warmup_min_lr": "auto", "warmup_max_lr": "auto",
                                                       "warmup_num_steps": "auto", "total_num_steps": "auto"}},
     "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu", "pin_memory": True},
                           "offload_param": {"device": "cpu", "pin_memory": True}, "overlap_comm": True,
                           "contiguous_gradients": True, "sub_group_size": 1000000000,
                           "reduce_bucket_size": "auto", "stage3_prefetch_bucket_size": "auto",
                           "stage3_param_persistence_threshold": "auto", "stage3_max_live_parameters": 1000000000,
                           "stage3_max_reuse_distance": 1000000000,
                           "stage3_gather_16bit_weights_on_model_save": True}},
    {"train_batch_size": 16, "fp16": {"enabled": True, "loss_scale": 0, "loss_scale_window": 1000, "hysteresis": 2,
                                      "min_loss_scale": 1},
     "zero_optimization": True, "allgather_size": 200000000,
     "activation_checkpointing": {"partition_activations": True, "cpu_checkpointing": False,
                                  "contiguous_memory_optimization": False, "number_checkpoints": None},
     "flops_profiler": {"enabled": False, "profile_step": 1, "module_depth": -1, "top_modules": 1},
     "tensorboard": {"enabled": True, "output_path": "logs/", "job_name": "run"},
     "checkpoint": {"tag_validation": "Warn", "writer": {"type": "fast", "decoupled": True}},
     "timers": {"throughput": {"enabled": True, "synchronized": False}},
     "tensor_parallel": {"autotp_size": 2, "tp": {"tp_size": 2}},
     "compile": {"deepcompile": True, "passes": ["z1"]}, "data_types": {"grad_accum_dtype": "fp32"},
     "communication_data_type": "BF16", "gradient_allreduce_op": "mean", "wall_clock_breakdown": False},
]


def test_schema_is_valid_draft7():
    jsonschema.Draft7Validator.check_schema(schema.load())
    assert schema.load()["$schema"] == "http://json-schema.org/draft-07/schema#"


@pytest.mark.parametrize("config", KNOWN_GOOD, ids=range(len(KNOWN_GOOD)))
def test_known_good_configs_validate(config):
    jsonschema.Draft7Validator(schema.load()).validate(config)
    assert not [f for f in models.check_sections(config).findings if f.code != "DS300"]


@pytest.mark.parametrize("bad, needle", [
    ({"zero_optimization": {"stage": 4}}, "stage"),
    ({"zero_optimization": {"offload_optimizer": {"device": "CPU"}}}, "device"),
    ({"zero_optimization": {"prefetch_bucket_size": 1, "stage3_prefetch_bucket_size": 2}}, "prefetch"),
    ({"zero_optimization": {"cpu_offload": True, "offload_optimizer": {"device": "cpu"}}}, "cpu_offload"),
    ({"fp16": {"opt_level": "O2"}}, "opt_level"),
    ({"amp": {"enabled": False}}, "amp"),
    ({"zero_optimization": {"mics_shard_size": 8}}, "mics"),
    ({"zero_optimization": {"prefetch_bucket_size": "auto"}}, "prefetch"),  # HF fills only the stage3_ name
    ({"bfloat16": {"enabled": "auto"}}, "auto"),  # HF fills bf16.enabled, not the legacy key
])
def test_schema_rejects_what_editors_should_flag(bad, needle):
    errors = list(jsonschema.Draft7Validator(schema.load()).iter_errors(bad))
    assert errors and needle in json.dumps([str(e.message) + str(list(e.absolute_path)) for e in errors]) + \
        json.dumps(bad)


def test_fill_annotations():
    root = schema.load()
    zero = schema.model_branch(root["properties"]["zero_optimization"])["properties"]
    assert set(zero["stage3_prefetch_bucket_size"]["x-dsconfig-fill"]) == {"hf-trainer", "accelerate"}
    assert "x-dsconfig-fill" not in zero["prefetch_bucket_size"]
    assert "x-dsconfig-fill" not in zero["gather_16bit_weights_on_model_save"]
    assert set(root["properties"]["optimizer"]["properties"]["params"]["properties"]["betas"]["x-dsconfig-fill"]) \
        == {"hf-trainer"}
    assert "x-dsconfig-fill" in root["properties"]["bf16"]["properties"]["enabled"]
    assert "x-dsconfig-fill" not in root["properties"]["bfloat16"]["properties"]["enabled"]


def test_every_listed_validator_is_implemented():
    def walk(node):
        if isinstance(node, dict):
            if "x-deepspeed-model" in node:
                name = node["x-deepspeed-model"]["class"].rsplit(".", 1)[-1]
                for spec in node["x-deepspeed-model"]["validators"]:
                    yield name, spec["name"]
            for value in node.values():
                yield from walk(value)
        elif isinstance(node, list):
            for value in node:
                yield from walk(value)

    listed = set(walk(schema.load()))
    assert listed, "no validators found"
    assert listed <= set(models.VALIDATORS), listed - set(models.VALIDATORS)


# -- against the real DeepSpeed ----------------------------------------------------------------------

@pytest.fixture(scope="module")
def ds():
    deepspeed = pytest.importorskip("deepspeed")
    logging.disable(logging.WARNING)
    sys.path.insert(0, str(ROOT / "scripts"))
    import build_schema
    return deepspeed, build_schema


def test_build_schema_check_passes(ds):
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "build_schema.py"), "--check"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def _placements(build_schema):
    """(schema node, model class) for every model reachable from the config, nested ones included."""
    root = schema.load()
    out = []

    def visit(node, cls):
        out.append((node, cls))
        for name, field in cls.model_fields.items():
            for tp in build_schema._walk_types(field.annotation):
                if build_schema._is_model(tp):
                    key = field.alias or name
                    visit(schema.model_branch(node["properties"][key]), tp)

    for key, cls in build_schema._sections().items():
        if key == "timers/throughput":
            node = schema.model_branch(root["properties"]["timers"]["properties"]["throughput"])
        else:
            node = schema.model_branch(root["properties"][key])
        visit(node, cls)
    return out


def _plain(value):
    if isinstance(value, enum.Enum):
        return _plain(value.value)
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, pathlib.PurePath) or type(value).__module__ == "torch":
        return str(value)
    if hasattr(value, "model_dump"):
        return _plain(value.model_dump())
    return value


def test_every_field_default_and_constraint_is_in_the_schema(ds):
    _, build_schema = ds
    placements = _placements(build_schema)
    assert len(placements) >= 18
    for node, cls in placements:
        props = node["properties"]
        assert node["additionalProperties"] is False
        instance = cls()
        for name, field in cls.model_fields.items():
            spellings = [name] + ([field.alias] if field.alias else [])
            for key in spellings:
                assert key in props, f"{cls.__name__}.{key} missing"
                prop = props[key]
                assert prop["x-pydantic"]["field"] == name
                expected = None if field.get_default(call_default_factory=True) is None else \
                    _plain(getattr(instance, name))
                assert prop["default"] == expected or (isinstance(expected, float) and math.isclose(
                    prop["default"], expected)), (cls.__name__, key, prop["default"], expected)
                for meta in field.metadata:
                    kind = type(meta).__name__.lower()
                    assert prop["x-pydantic"]["constraints"][kind] == getattr(meta, kind)
                extra = field.json_schema_extra
                if isinstance(extra, dict) and extra.get("deprecated"):
                    assert prop["deprecated"] is True and prop["x-deepspeed-deprecated"]["new_param"] == \
                        extra["new_param"]


def test_removed_keys_carry_deepspeeds_message(ds):
    from deepspeed.runtime import config as ds_config
    root = schema.load()
    for key, message in ds_config._REMOVED_TOP_LEVEL_CONFIG_KEYS.items():
        prop = root["properties"][key]
        assert prop["x-deepspeed-removed"] == message and prop["not"] == {} and prop["deprecated"] is True
    zero = schema.model_branch(root["properties"]["zero_optimization"])
    for key, message in ds_config._REMOVED_ZERO_CONFIG_KEYS.items():
        assert zero["properties"][key]["x-deepspeed-removed"] == message


def test_corpus_configs_the_validator_accepts_are_schema_valid():
    """A corpus config free of parse-time errors and of "auto" must also pass the editor schema."""
    validator = jsonschema.Draft7Validator(schema.load())
    checked = 0
    for path, kind in corpus_files("deepspeed"):
        try:
            config = json.loads(path.read_text())
        except (ValueError, UnicodeDecodeError):
            continue  # hjson-only syntax: another check
        if not isinstance(config, dict) or "auto" in json.dumps(config):
            continue
        findings = lint(path, target="deepspeed", kind="deepspeed", world_sizes=(1,))
        if any(f.severity == "error" and f.fails_in in ("load", "parse") for f in findings):
            continue
        errors = [e.message for e in validator.iter_errors(config)]
        assert not errors, (path.name, errors[:3])
        checked += 1
    assert checked >= 5
