"""dsconfig.deepspeed.step against the real DeepSpeed 0.19.8 engine: what fails in the first training step.

The oracle is tests/deepspeed/test_initialize.py's worker: `deepspeed.initialize` on nn.Linear(4, 4)
(or a PipelineModule) in a single-process gloo group on the CPU, then one training step (forward,
backward and `engine.step()` for each micro batch), or the same through Accelerate's prepare().
For every config here, DeepSpeed fails in the phase dsconfig names first: parse, initialize, the
step (`fails_in: step`), or not at all. A config is written as the file's text, so hjson's strings
(`.5`, `NaN`) reach the engine as `deepspeed.initialize(config=path)` would hand them over.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from dsconfig.deepspeed import step
from dsconfig.phases import INITIALIZE, PHASES, SILENT, STEP
from dsconfig.targets import HF_TRAINER
from tests.deepspeed.test_initialize import ENGINE_EXAMPLES, Worker, engine_configs
from tests.helpers import lint_text

hjson = pytest.importorskip("hjson")  # DeepSpeed's config loader


def findings(text: str, target: str = "deepspeed") -> list:
    return lint_text(text, "ds_config.json", target=target, world_sizes=(1,))


def first_phase(found: list) -> str | None:
    """Where dsconfig says the run stops: the earliest phase any finding names."""
    phases = [f.fails_in for f in found if f.fails_in is not None]
    return min(phases, key=PHASES.index) if phases else None


def config_text(**values) -> str:
    """A ds_config.json with train_batch_size 1 and `values` written as given (JSON text, or hjson as the
    last member: a quoteless string runs to the end of its line)."""
    body = {"train_batch_size": "1", **values}
    return "{\n" + ",\n".join(f'  "{key}": {text}' for key, text in body.items()) + "\n}\n"


Z2 = '{"stage": 2}'
# (JSON or hjson text of the members, what DeepSpeed does): every way dsconfig follows a value to the step.
CASES = [
    (config_text(gradient_clipping='"1.0"'), STEP),
    (config_text(gradient_clipping='"1.0"', zero_optimization=Z2, bf16='{"enabled": true}'), STEP),
    (config_text(gradient_clipping='"1.0"', zero_optimization='{"stage": 3}', fp16='{"enabled": true}'), STEP),
    (config_text(gradient_clipping="null", zero_optimization='{"stage": 1}'), STEP),
    (config_text(gradient_clipping="[1]"), STEP),
    (config_text(gradient_clipping=".5"), STEP),  # hjson: the string ".5"
    (config_text(gradient_clipping="NaN"), STEP),  # hjson: the string "NaN"
    (config_text(gradient_clipping='"auto"'), STEP),
    (config_text(gradient_clipping='"1.0"', train_batch_size="2", gradient_accumulation_steps="2"), STEP),
    (config_text(gradient_clipping='"1.0"', pipeline='{"pipe_partitioned": true}'), STEP),
    (config_text(gradient_clipping='"1.0"', zero_optimization='{"stage": 2, "compute_grad_norm": false}'), INITIALIZE),
    (config_text(zero_optimization='{"stage": 1, "compute_grad_norm": false}', gradient_clipping=".5"), INITIALIZE),
    (config_text(gradient_clipping="true"), None),
    (config_text(gradient_clipping="0.5"), None),
    (config_text(steps_per_print='"10"'), STEP),
    (config_text(steps_per_print="+5"), STEP),  # hjson: the string "+5"
    (config_text(steps_per_print='"auto"', zero_optimization=Z2), STEP),
    (config_text(steps_per_print="null"), None),
    (config_text(steps_per_print="true"), None),
    (config_text(gradient_predivide_factor='"2"'), STEP),
    (config_text(gradient_predivide_factor="null", bf16='{"enabled": true}'), STEP),
    (config_text(gradient_predivide_factor='"2"', zero_optimization='{"stage": 2, "reduce_scatter": false}'), STEP),
    (config_text(zero_optimization='{"stage": 3, "reduce_scatter": false}', gradient_predivide_factor=".5"), STEP),
    (config_text(gradient_predivide_factor='"2"', zero_optimization='{"stage": 1}', bf16='{"enabled": true}',
                 data_types='{"grad_accum_dtype": "fp32"}'), STEP),  # stage 1's BF16_Optimizer path
    (config_text(gradient_predivide_factor='"auto"', pipeline='{"pipe_partitioned": true}'), STEP),
    (config_text(gradient_predivide_factor='"2"', zero_optimization='{"stage": 1}'), None),
    (config_text(gradient_predivide_factor='"2"', prescale_gradients="true"), None),
    (config_text(gradient_predivide_factor='"2"', prescale_gradients='"false"'), None),  # a truthy string
    (config_text(gradient_predivide_factor='"2"', gradient_allreduce_op='"sum"'), None),
    (config_text(gradient_predivide_factor='"2"', zero_optimization=Z2), INITIALIZE),  # DS311
]


@pytest.fixture(scope="module")
def worker():
    w = Worker()
    yield w
    w.close()


@pytest.mark.parametrize("text,phase", CASES, ids=[f"{i}-{phase}" for i, (_, phase) in enumerate(CASES)])
def test_dsconfig_names_the_phase(text, phase):
    found = findings(text)
    assert first_phase(found) == phase, found
    for f in found:
        if f.pointer in step.STEP_VALUES and f.fails_in is not None:
            assert f.code in ("DS003", "DS111", "DS700", "DS311"), f


@pytest.mark.parametrize("text,phase", CASES, ids=[f"{i}-{phase}" for i, (_, phase) in enumerate(CASES)])
def test_engine_fails_where_dsconfig_says(worker, text, phase):
    config = hjson.loads(text)  # as deepspeed.initialize reads a config path
    real = worker.run(kind="engine", config=config, client="optimizer" not in config, pipeline="pipeline" in config,
                      step=True)
    assert real["phase"] == phase, real


# Through Accelerate's prepare() (target accelerate): the plugin fills "auto" gradient_clipping and
# overwrites steps_per_print with inf, and passes a concrete gradient_clipping on unread.
PREPARED = {"train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": 1,
            "zero_optimization": {"stage": 2}}
PREPARE_CASES = [
    ({"gradient_clipping": "1.0"}, STEP),
    ({"gradient_clipping": None}, STEP),
    ({"gradient_clipping": "auto"}, None),
    ({"steps_per_print": "10"}, None),
    ({"steps_per_print": "auto"}, None),
    ({"gradient_predivide_factor": "2", "zero_optimization": {"stage": 2, "reduce_scatter": False}}, STEP),
    ({"gradient_predivide_factor": "auto"}, INITIALIZE),
]


@pytest.mark.parametrize("members,phase", PREPARE_CASES, ids=[f"{i}-{p}" for i, (_, p) in enumerate(PREPARE_CASES)])
def test_accelerate_prepare_fails_where_dsconfig_says(worker, members, phase):
    config = {**PREPARED, **members}
    assert first_phase(findings(json.dumps(config), "accelerate")) == phase
    real = worker.run(kind="prepare", config=config, step=True)
    assert real["phase"] == phase, real


def test_hf_trainer_compares_a_string_clipping_with_max_grad_norm():
    """The Trainer's fill_match: "1.0" != 1.0 fails train() at its start; null is skipped (test_trainer.py
    replays this against the real Trainer)."""
    text = json.dumps({"train_micro_batch_size_per_gpu": "auto", "gradient_clipping": "1.0",
                       "zero_optimization": {"stage": 2}})
    (found,) = [f for f in findings(text, "hf-trainer") if f.pointer == "/gradient_clipping"]
    assert (found.code, found.fails_in) == ("DS111", INITIALIZE)
    assert "ds gradient_clipping=1.0 vs hf max_grad_norm" in found.message
    null = text.replace('"1.0"', "null")
    assert [(f.code, f.fails_in) for f in findings(null, "hf-trainer") if f.pointer == "/gradient_clipping"] == [
        ("DS111", STEP)]


def test_messages_quote_deepspeeds_error():
    (clip,) = [f for f in findings(config_text(gradient_clipping='"1.0"')) if f.code == "DS111"]
    assert "TypeError: '>' not supported between instances of 'str' and 'float'" in clip.message
    (trap,) = [f for f in findings(config_text(steps_per_print=".5")) if f.code == "DS003"]
    assert trap.fails_in == STEP and "unsupported operand type(s) for %: 'int' and 'str'" in trap.message
    (auto,) = [f for f in findings(config_text(gradient_clipping='"auto"')) if f.code == "DS700"]
    assert auto.fails_in == STEP and "fails when it builds the engine" not in auto.message


def test_booleans_run_and_are_still_the_wrong_type():
    found = findings(config_text(gradient_clipping="true", steps_per_print="false"))
    assert sorted((f.code, f.pointer, f.fails_in) for f in found if f.pointer in step.STEP_VALUES) == [
        ("DS109", "/gradient_clipping", SILENT), ("DS109", "/steps_per_print", SILENT)]


def test_only_the_step_values_are_followed():
    config = {"train_batch_size": 1, "gradient_clipping": "1.0", "dump_state": "yes"}
    assert step.failure("/dump_state", config, HF_TRAINER) is None
    assert step.failure("/gradient_clipping", {"gradient_clipping": 1.0}, HF_TRAINER) is None
    assert step.failure("/steps_per_print", {"steps_per_print": None}, HF_TRAINER) is None


# -- a family: test_initialize's engine configs, with step-time values mixed in -------------------------

STEP_RISKS = {
    "gradient_clipping": ["1.0", None, "auto", [1], True, 0.5, "0"],
    "steps_per_print": ["10", None, "auto", True, 2.5],
    "gradient_predivide_factor": ["2", None, "auto", 2.0, 1.0],
}


@st.composite
def step_configs(draw):
    config, pipeline = draw(engine_configs())
    for key in draw(st.lists(st.sampled_from(sorted(STEP_RISKS)), min_size=1, max_size=2, unique=True)):
        config[key] = draw(st.sampled_from(STEP_RISKS[key]))
    zero = config["zero_optimization"]
    extra = draw(st.sampled_from(["none", "reduce_scatter", "grad_norm", "prescale", "sum", "accumulate"]))
    if extra == "reduce_scatter":
        zero["reduce_scatter"] = False
    elif extra == "grad_norm" and zero["stage"] in (1, 2):
        zero["compute_grad_norm"] = False
    elif extra == "prescale":
        config["prescale_gradients"] = True
    elif extra == "sum" and zero["stage"] != 3:
        config["gradient_allreduce_op"] = "sum"
    elif extra == "accumulate":
        config.update(train_batch_size=2, gradient_accumulation_steps=2)
    return config, pipeline


@pytest.mark.slow
@settings(max_examples=ENGINE_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(case=step_configs())
def test_first_step_agrees(worker, case):
    """Among the configs the engine builds, DeepSpeed fails in the step <=> dsconfig reports a step finding."""
    config, pipeline = case
    real = worker.run(kind="engine", config=config, client="optimizer" not in config, pipeline=pipeline, step=True)
    event(f"DeepSpeed fails in: {real['phase']}")
    assume(real["phase"] in (None, "step"))
    assume(not any(text in real.get("error", "") for text in ("not been implemented on CPU backend",
                                                               "only supports NVIDIA CUDA GPUs")))
    found = findings(json.dumps(config))
    said = [f for f in found if f.fails_in == STEP]
    assert bool(said) == (real["phase"] == "step"), (real, found)
