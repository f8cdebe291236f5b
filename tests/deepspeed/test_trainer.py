"""The HF Trainer's "auto" fill and mismatch check: dsconfig against the real transformers 5.23.

The oracle is the real code path, run on the CPU:

* `TrainingArguments(output_dir=..., use_cpu=True, deepspeed=config, ...)` builds the real
  `HfTrainerDeepSpeedConfig`, runs `trainer_config_process` and the real `DeepSpeedPlugin`
  (use_cpu only lets bf16 through on a machine without a bf16 GPU; it changes nothing in the
  DeepSpeed code path). The world size comes from a subclass that overrides the `world_size`
  property: the only thing `trainer_config_process` reads from the distributed state.
* What `Trainer(...)` and `train()` do next is called as they call it: `set_mixed_precision`
  (AcceleratorState), the ZeRO-3 + auto_find_batch_size check, `propagate_args_to_deepspeed`
  (auto_find_batch_size), the step count from `Trainer.set_initial_training_values` on a
  dataloader prepared by Accelerate's `prepare_data_loader(num_processes=world)`, and
  `trainer_config_finalize`. End-to-end runs of the real `Trainer.train()` (world size 1, in a
  subprocess with a gloo group) confirm that order.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import socket
import subprocess
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from dsconfig.phases import INITIALIZE, STEP
from tests.helpers import lint_text

transformers = pytest.importorskip("transformers")
pytest.importorskip("accelerate")
pytest.importorskip("deepspeed")
torch = pytest.importorskip("torch")

from accelerate.data_loader import prepare_data_loader  # noqa: E402
from torch.utils.data import DataLoader, DistributedSampler, RandomSampler  # noqa: E402
from transformers import Trainer, TrainingArguments  # noqa: E402
from transformers.integrations.deepspeed import propagate_args_to_deepspeed  # noqa: E402

from dsconfig import targets  # noqa: E402
from dsconfig.deepspeed import trainer  # noqa: E402
from dsconfig.deepspeed.trainer import (  # noqa: E402
    MISMATCH_HEAD,
    TRAINING_ARGS_DEFAULTS,
    TRAINING_ARGS_FIELDS,
    dataset_table,
    epoch_plan,
    trainer_findings,
    trainer_total_steps,
)

REPO = Path(__file__).resolve().parents[2]
OUTPUT_DIR = tempfile.mkdtemp(prefix="dsconfig-trainer-")


class WorldArgs(TrainingArguments):
    """TrainingArguments at a chosen world size (the Trainer reads nothing else of the process group here)."""
    fake_world = 1

    @property
    def world_size(self):
        return WorldArgs.fake_world


# -- the oracle ------------------------------------------------------------------------------------

def real_steps(args, dataset_size: int | None, world: int) -> int | None:
    """num_training_steps as Trainer._inner_training_loop passes it to deepspeed_init."""
    if args.max_steps > 0:
        return args.max_steps
    if dataset_size is None:
        return None
    try:
        return initial_steps(args, dataset_size, world)
    except ValueError:  # an empty per-GPU dataloader: the Trainer stops before DeepSpeed
        return None


def initial_steps(args, dataset_size: int, world: int) -> int:
    """Trainer.set_initial_training_values on rank 0's prepared loader (its errors raised as they are)."""
    data = list(range(dataset_size))
    loader = DataLoader(data, batch_size=args.train_batch_size, sampler=RandomSampler(data),
                        drop_last=args.dataloader_drop_last)
    prepared = prepare_data_loader(loader, num_processes=world, process_index=0, put_on_device=False)
    stub = object.__new__(Trainer)
    stub.model, stub.args, stub.is_deepspeed_enabled = None, args, True
    stub.accelerator = SimpleNamespace(parallelism_config=None)
    stub._train_batch_size = args.train_batch_size
    return Trainer.set_initial_training_values(stub, args, prepared)[-1]


class Real:
    def __init__(self, early: str | None, lines: list[str] | None, steps_known: bool):
        self.early = early  # Trainer(...) raised this before training
        self.lines = lines  # the mismatch lines of the ValueError at train() start ([] when none)
        self.steps_known = steps_known

    @property
    def fails(self) -> bool:
        return bool(self.early) or bool(self.lines)


def real_run(config: dict, targs: dict, world: int, dataset_size: int | None) -> Real:
    WorldArgs.fake_world = world
    args = WorldArgs(output_dir=OUTPUT_DIR, use_cpu=True, report_to=[], deepspeed=config, **targs)
    plugin = args.deepspeed_plugin
    early = None
    try:  # Trainer(...) → Accelerator → AcceleratorState → set_mixed_precision
        plugin.set_mixed_precision(args.mixed_precision)
    except ValueError as error:
        early = str(error)
    if early is None and plugin.zero_stage == 3 and args.auto_find_batch_size:
        early = "`auto_find_batch_size` isn't supported yet with DeepSpeed Zero-3."
    if args.auto_find_batch_size:  # train() → _update_auto_batch_size
        propagate_args_to_deepspeed(SimpleNamespace(state=SimpleNamespace(deepspeed_plugin=plugin)), args,
                                    auto_find_batch_size=True)
    steps = real_steps(args, dataset_size, world)
    model = SimpleNamespace(config=SimpleNamespace(hidden_size=16))
    try:
        plugin.hf_ds_config.trainer_config_finalize(args, model, steps if steps is not None else 10**9)
        lines = []
    except ValueError as error:
        text = str(error)
        assert text.startswith(MISMATCH_HEAD)
        lines = [line for line in text.splitlines() if line.startswith("- ds ")]
    return Real(early, lines, steps is not None)


def mine(config, targs, world, dataset_size):
    findings = trainer_findings(config, targs, world, dataset_size=dataset_size)
    return [f for f in findings if f.code == "DS703"], findings


# -- generated configs ---------------------------------------------------------------------------------

ABSENT = object()


def maybe(strategy):
    return st.one_of(st.just(ABSENT), strategy)


def section(**fields):
    return st.fixed_dictionaries({k: maybe(v) for k, v in fields.items()}).map(
        lambda d: {k: v for k, v in d.items() if v is not ABSENT})


BATCH = st.sampled_from(["auto", 1, 2, 4, 8, 16, 32, 64, 128, "8", "4", 8.0, 16.0])
configs = st.fixed_dictionaries({
    "train_batch_size": maybe(BATCH),
    "train_micro_batch_size_per_gpu": maybe(BATCH),
    "gradient_accumulation_steps": maybe(st.sampled_from(["auto", 1, 2, 4, 8, "8", 4.0])),
    "gradient_clipping": maybe(st.sampled_from(["auto", 1.0, 0.5, 1, "1.0", 0])),
    "zero_optimization": section(stage=st.sampled_from([0, 1, 2, 3, "auto"])),
    "optimizer": maybe(st.fixed_dictionaries({"type": st.just("AdamW"), "params": section(
        lr=st.sampled_from(["auto", 5e-05, 2e-05, 1e-05, "2e-05"]),
        betas=st.sampled_from(["auto", [0.9, 0.999], [0.9, 0.95], (0.9, 0.999)]).map(
            lambda v: list(v) if isinstance(v, tuple) else v),
        eps=st.sampled_from(["auto", 1e-08, 1e-06]),
        weight_decay=st.sampled_from(["auto", 0.0, 0.01, 0]))})),
    "scheduler": maybe(st.fixed_dictionaries({"type": st.just("WarmupDecayLR"), "params": section(
        warmup_min_lr=st.sampled_from(["auto", 0, 1e-06]),
        warmup_max_lr=st.sampled_from(["auto", 5e-05, 2e-05]),
        warmup_num_steps=st.sampled_from(["auto", 0, 1, 2, 5, 10]),
        total_num_steps=st.sampled_from(["auto", 1, 2, 3, 4, 6, 7, 8, 12, 100]))})),
    "fp16": maybe(section(enabled=st.sampled_from(["auto", True, False, "true"]),
                          initial_scale_power=st.just(16))),
    "bf16": maybe(section(enabled=st.sampled_from(["auto", True, False]))),
}).map(lambda d: {k: v for k, v in d.items() if v is not ABSENT})

training_args = st.fixed_dictionaries({
    "per_device_train_batch_size": maybe(st.sampled_from([1, 2, 4, 8, 16])),
    "gradient_accumulation_steps": maybe(st.sampled_from([1, 2, 4, 8])),
    "learning_rate": maybe(st.sampled_from([5e-05, 2e-05, 1e-05])),
    "adam_beta2": maybe(st.sampled_from([0.999, 0.95])),
    "adam_epsilon": maybe(st.sampled_from([1e-08, 1e-06])),
    "weight_decay": maybe(st.sampled_from([0.0, 0.01])),
    "max_grad_norm": maybe(st.sampled_from([1.0, 0.5, 0.0])),
    "fp16": maybe(st.booleans()),
    "bf16": maybe(st.booleans()),
    "fp16_full_eval": maybe(st.booleans()),
    "bf16_full_eval": maybe(st.booleans()),
    "warmup_steps": maybe(st.sampled_from([0, 1, 5, 0.1, 0.5, 10.5])),
    "num_train_epochs": maybe(st.sampled_from([1, 2.5, 3.0])),
    "max_steps": maybe(st.sampled_from([0, 7, 100])),  # 0: the Trainer keeps 0 steps, epochs or not
    "auto_find_batch_size": maybe(st.booleans()),
    "save_on_each_node": maybe(st.booleans()),
    "dataloader_drop_last": maybe(st.booleans()),
}).map(lambda d: {k: v for k, v in d.items() if v is not ABSENT}).filter(
    lambda d: not (d.get("fp16") and d.get("bf16")) and not (d.get("fp16_full_eval") and d.get("bf16_full_eval")))


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(config=configs, targs=training_args, world=st.integers(1, 8),
       dataset_size=st.one_of(st.none(), st.integers(1, 600)))
def test_mismatch_error_iff_ds703(config, targs, world, dataset_size):
    config = {"zero_optimization": {}, **config}  # without it TrainingArguments fails first (DS702)
    real = real_run(config, targs, world, dataset_size)
    errors, _ = mine(config, targs, world, dataset_size)
    messages = [f.message for f in errors]
    context = (config, targs, world, dataset_size, real.early, real.lines, messages)

    # dsconfig skips what it cannot know; the oracle used a placeholder step count there
    ratio = targs.get("warmup_steps", 0)
    unknown = set()
    if not real.steps_known:
        unknown.add("scheduler.params.total_num_steps")
        if 0 < ratio < 1:
            unknown.add("scheduler.params.warmup_num_steps")
    real_lines = [line for line in real.lines if not line.startswith(tuple(f"- ds {k}=" for k in unknown))]
    assert not any(f.pointer[1:].replace("/", ".") in unknown for f in errors), context
    event(f"real: {'Trainer() fails' if real.early else f'{len(real_lines)} mismatch lines'}")
    event(f"auto_find_batch_size: {bool(targs.get('auto_find_batch_size'))}")
    if real.early:
        assert any(real.early in message for message in messages), context
        if not targs.get("auto_find_batch_size"):  # the first pass's lines do not depend on Trainer(...)
            for line in real_lines:
                assert any(message.startswith(line + ": ") for message in messages), context
        return
    assert bool(real_lines) == bool(errors), context
    mine_lines = [m.split(": ", 1)[0] for m in messages if m.startswith("- ds ")]
    assert sorted(mine_lines) == sorted(real_lines), context
    assert all(m.startswith("- ds ") for m in messages), context
    for f in errors:
        assert MISMATCH_HEAD in f.message and f.fails_in == "initialize"


@settings(max_examples=150, deadline=None)
@given(config=configs, targs=training_args)
def test_fills_match_the_real_config(config, targs):
    """Every value the Trainer writes over an "auto" (world size 2, 3 epochs of 100 samples) is dsconfig's."""
    config = {"zero_optimization": {}, **config}
    targs = {**targs, "auto_find_batch_size": False}
    WorldArgs.fake_world = 2
    args = WorldArgs(output_dir=OUTPUT_DIR, use_cpu=True, report_to=[], deepspeed=config, **targs)
    steps = real_steps(args, 100, 2)
    hf = args.hf_deepspeed_config
    try:
        hf.trainer_config_finalize(args, SimpleNamespace(config=SimpleNamespace(hidden_size=16)),
                                   steps if steps is not None else 10**9)
    except ValueError:
        pass
    run = trainer.replay(config, targs, 2, 100)
    for outcome in run.fills:
        if outcome.step.value is trainer.UNKNOWN:
            continue
        assert hf.get_value(outcome.step.key) == outcome.step.value, (outcome, hf.config)


# -- defaults -------------------------------------------------------------------------------------------

def test_defaults_table_is_transformers_5_23():
    assert transformers.__version__ == trainer.TRANSFORMERS_VERSION
    fields = {f.name: f for f in dataclasses.fields(TrainingArguments)}
    for key, value in TRAINING_ARGS_DEFAULTS.items():
        assert fields[key].default == value and type(fields[key].default) is type(value), key
    assert TRAINING_ARGS_FIELDS == {f.name for f in dataclasses.fields(TrainingArguments) if f.init}
    assert "warmup_ratio" not in TRAINING_ARGS_FIELDS


def test_defaults_equal_a_real_instance():
    args = TrainingArguments(output_dir=OUTPUT_DIR, report_to=[])
    for key, value in TRAINING_ARGS_DEFAULTS.items():
        assert getattr(args, key) == value, key
    assert args.get_warmup_steps(100) == trainer.warmup_steps(dict(TRAINING_ARGS_DEFAULTS), 100)


@pytest.mark.parametrize("warmup,total", [(0, 50), (3, 50), (10.5, 50), (0.1, 50), (0.5, 7), (0.25, 3)])
def test_warmup_steps_is_get_warmup_steps(warmup, total):
    args = TrainingArguments(output_dir=OUTPUT_DIR, report_to=[], warmup_steps=warmup)
    assert trainer.warmup_steps(trainer.effective_args({"warmup_steps": warmup}), total) == args.get_warmup_steps(total)


# -- worked examples -------------------------------------------------------------------------------------

RESEARCH_CONFIG = {"train_batch_size": 16, "train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": 4,
                   "zero_optimization": {"stage": 2}, "fp16": {"enabled": True},
                   "optimizer": {"type": "AdamW", "params": {"lr": 1e-05}}}
RESEARCH_ARGS = {"per_device_train_batch_size": 4, "gradient_accumulation_steps": 8, "learning_rate": 2e-05,
                 "fp16_full_eval": False}


def test_research_example_lines():
    """The HF Trainer's fill at world 2, mbs 4, GAS 8, lr 2e-5 (bf16 swapped for the default: see the early error)."""
    errors, _ = mine(RESEARCH_CONFIG, RESEARCH_ARGS, 2, None)
    lines = sorted(f.message.split(": ", 1)[0] for f in errors)
    assert lines == sorted([
        "- ds gradient_accumulation_steps=4 vs hf gradient_accumulation_steps=8",
        "- ds train_batch_size=16 vs hf train_batch_size (calculated)=64",
        "- ds optimizer.params.lr=1e-05 vs hf learning_rate=2e-05",
        "- ds fp16.enabled=True vs hf fp16|fp16_full_eval=False",
    ])
    by_pointer = {f.pointer: f for f in errors}
    assert by_pointer["/gradient_accumulation_steps"].fix == "8"
    assert by_pointer["/train_batch_size"].fix == '"auto"' and by_pointer["/train_batch_size"].world_size == 2
    assert by_pointer["/fp16/enabled"].fix == "false"
    assert by_pointer["/optimizer/params/lr"].world_size is None


def test_string_number_mismatches():
    """LLaMA-Factory #1116: "ds gradient_accumulation_steps=8 vs hf gradient_accumulation_steps=8"."""
    config = {"gradient_accumulation_steps": "8", "zero_optimization": {}}
    errors, _ = mine(config, {"gradient_accumulation_steps": 8}, 1, None)
    assert len(errors) == 1
    assert errors[0].message.startswith("- ds gradient_accumulation_steps=8 vs hf gradient_accumulation_steps=8: ")
    assert "JSON string" in errors[0].message and errors[0].fix == "8"
    assert real_run(config, {"gradient_accumulation_steps": 8}, 1, None).lines == [
        "- ds gradient_accumulation_steps=8 vs hf gradient_accumulation_steps=8"]


@pytest.mark.parametrize("value,fails", [("1.0", True), ([1], True), (None, False), (1.0, False)])
def test_a_gradient_clipping_that_is_no_number_is_a_mismatch(value, fails):
    """fill_match compares any concrete value with max_grad_norm (a string never equals it) and skips a null,
    which then reaches the engine's first step: dsconfig.deepspeed.step says initialize resp. step."""
    config = {"train_micro_batch_size_per_gpu": "auto", "gradient_clipping": value, "zero_optimization": {}}
    assert bool(real_run(config, {}, 1, None).lines) == fails
    found = lint_text(json.dumps(config), "ds_config.json", target="hf-trainer")
    phases = {f.fails_in for f in found if f.pointer == "/gradient_clipping"}
    assert phases == ({INITIALIZE} if fails else {STEP} if value is None else set())


def test_without_training_args_one_info_listing_the_fills():
    config = {"train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto", "gradient_clipping": "auto",
              "zero_optimization": {"stage": 3, "sub_group_size": "auto", "reduce_bucket_size": "auto"},
              "bf16": {"enabled": "auto"}, "scheduler": {"params": {"total_num_steps": "auto"}}}
    findings = trainer_findings(config, None, None)
    assert [f.code for f in findings] == ["DS704"]
    info = findings[0]
    assert info.pointer == "" and info.severity == "info"
    assert ("train_batch_size ← world_size × per_device_train_batch_size × gradient_accumulation_steps"
            in info.message)
    assert "bf16.enabled ← TrainingArguments bf16 or bf16_full_eval" in info.message
    assert "zero_optimization.reduce_bucket_size ← hidden_size²" in info.message
    assert "sub_group_size" not in info.message  # nobody fills it: target.py reports it (DS700)
    assert "6 \"auto\" values" in info.message
    assert trainer_findings({"zero_optimization": {}}, None, None) == []


def test_with_training_args_the_info_shows_values():
    config = {"train_batch_size": "auto", "gradient_accumulation_steps": "auto", "zero_optimization": {},
              "scheduler": {"params": {"total_num_steps": "auto", "warmup_num_steps": "auto"}}}
    findings = trainer_findings(config, {"per_device_train_batch_size": 4, "gradient_accumulation_steps": 2,
                                         "warmup_ratio": 0.1}, [1, 2], dataset_size=1000)
    [info] = [f for f in findings if f.code == "DS704"]
    assert "train_batch_size ← 8 at world size 1, 16 at world size 2" in info.message
    assert "gradient_accumulation_steps ← 2" in info.message
    # 1000 samples / 4 per batch = 250 batches; / GAS 2 = 125 steps × 3 epochs at world 1, 63 × 3 at world 2
    assert "total_num_steps ← 375 at world size 1, 189 at world size 2" in info.message
    assert "warmup_ratio (removed in transformers 5" in info.message


def test_without_world_size_train_batch_size():
    config = {"train_batch_size": 40, "zero_optimization": {}}  # not a multiple of 4 × 4
    args = {"per_device_train_batch_size": 4, "gradient_accumulation_steps": 4}
    assert [f.code for f in trainer_findings(config, args, None)] == ["DS703", "DS704"]
    config["train_batch_size"] = 64  # matches at world size 4 only
    findings = trainer_findings(config, args, None)
    assert [f.code for f in findings] == ["DS704"]
    assert "only at world size 4" in findings[0].message


def test_auto_find_batch_size_compares_the_inserted_gradient_accumulation():
    config = {"train_micro_batch_size_per_gpu": "auto", "zero_optimization": {"stage": 2}}
    args = {"gradient_accumulation_steps": 8, "auto_find_batch_size": True, "max_steps": 10}
    real = real_run(config, args, 1, None)
    assert real.lines == ["- ds gradient_accumulation_steps=1 vs hf gradient_accumulation_steps=8"]
    errors, _ = mine(config, args, 1, None)
    assert len(errors) == 1 and errors[0].pointer == "" and "inserts 1" in errors[0].message
    assert errors[0].message.startswith(real.lines[0])


def test_missing_gradient_accumulation_breaks_deepspeeds_batch_check():
    config = {"train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto", "zero_optimization": {}}
    findings = trainer_findings(config, {"gradient_accumulation_steps": 8}, 1)
    [error] = [f for f in findings if f.code == "DS202"]
    assert "64 != 8 * 1 * 1" in error.message and "gradient_accumulation_steps\": \"auto\"" in error.message
    assert not [f for f in findings if f.code == "DS703"]
    assert not [f for f in trainer_findings(config, {"gradient_accumulation_steps": 1}, 1) if f.code == "DS202"]


# -- steps per epoch ------------------------------------------------------------------------------------

COMBOS = [(n, m, w, g, dl) for n in (1, 7, 10, 64, 100, 1001) for m in (1, 3, 8) for w in (1, 2, 3, 8)
          for g, dl in ((1, False), (4, False), (3, True))]


@pytest.mark.parametrize("n,m,w,g,drop_last", COMBOS)
def test_distributed_sampler_epoch(n, m, w, g, drop_last):
    """target deepspeed: DeepSpeedDataLoader = DistributedSampler (no drop_last) + the config's drop_last."""
    data = list(range(n))
    loader = DataLoader(data, batch_size=m, drop_last=drop_last,
                        sampler=DistributedSampler(data, num_replicas=w, rank=0, shuffle=False))
    sizes = [len(b) for b in loader]
    plan = epoch_plan(targets.DEEPSPEED, n, m, g, w, drop_last)
    assert plan.batches_per_gpu == len(sizes) == len(loader)
    assert plan.samples_per_gpu == len(loader.sampler)
    assert plan.last_batch == (sizes[-1] if sizes else 0)
    assert plan.first_epoch_steps == len(sizes) // g  # the engine steps on every g-th micro-batch


@pytest.mark.parametrize("n,m,w,g,drop_last", COMBOS)
def test_accelerate_sharded_epoch(n, m, w, g, drop_last):
    """target hf-trainer: the Trainer's DataLoader prepared by Accelerate, and set_initial_training_values."""
    data = list(range(n))
    loader = DataLoader(data, batch_size=m, sampler=RandomSampler(data), drop_last=drop_last)
    prepared = prepare_data_loader(loader, num_processes=w, process_index=0, put_on_device=False)
    sizes = [len(b) for b in prepared]
    plan = epoch_plan(targets.HF_TRAINER, n, m, g, w, drop_last)
    assert plan.batches_per_gpu == len(sizes) == len(prepared)
    assert plan.samples_per_gpu == sum(sizes)
    assert all(size == m for size in sizes[:-1]) and plan.last_batch == (sizes[-1] if sizes else 0)
    args = trainer.effective_args({"per_device_train_batch_size": m, "gradient_accumulation_steps": g,
                                   "dataloader_drop_last": drop_last, "num_train_epochs": 2.5})
    WorldArgs.fake_world = w
    real_args = WorldArgs(output_dir=OUTPUT_DIR, use_cpu=True, report_to=[], per_device_train_batch_size=m,
                          gradient_accumulation_steps=g, dataloader_drop_last=drop_last, num_train_epochs=2.5)
    if sizes:
        stub = object.__new__(Trainer)
        stub.model, stub.args, stub.is_deepspeed_enabled = None, real_args, False
        stub.accelerator = SimpleNamespace(parallelism_config=None)
        stub._train_batch_size = m
        _, per_epoch, *_, max_steps = Trainer.set_initial_training_values(stub, real_args, prepared)
        assert plan.optimizer_steps == per_epoch
        assert trainer_total_steps(args, n, w)[0] == max_steps == real_steps(real_args, n, w)
    else:
        assert trainer_total_steps(args, n, w)[0] is None is real_steps(real_args, n, w)


@pytest.mark.parametrize("target", ["hf-trainer", "deepspeed"])
def test_dataset_table_side_by_side(target):
    config = {"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 2, "zero_optimization": {}}
    args = {"per_device_train_batch_size": 4, "gradient_accumulation_steps": 2} if target == "hf-trainer" else None
    table = dataset_table(config, 1000, [1, 2, 4], targets.BY_NAME[target], args)
    assert [f.world_size for f in table] == [1, 2, 4] and {f.code for f in table} == {"DS705"}
    for finding in table:
        plan = epoch_plan(targets.BY_NAME[target], 1000, 4, 2, finding.world_size, False)
        assert f"{plan.batches_per_gpu} micro-batches of 4 per GPU" in finding.message
        assert f"{plan.optimizer_steps:g} optimizer steps per epoch" in finding.message
        expected_row = ", ".join(f"{w} → {epoch_plan(targets.BY_NAME[target], 1000, 4, 2, w, False).optimizer_steps:g}"
                                 for w in (1, 2, 4))
        assert f"Optimizer steps per epoch by world size: {expected_row}" in finding.message


def test_dataset_table_auto_without_args_is_unknown():
    config = {"train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto", "zero_optimization": {}}
    table = dataset_table(config, 1000, [2], targets.HF_TRAINER, None)
    assert len(table) == 1 and "unknown" in table[0].message and "1 → " not in table[0].message


# -- the run's length: what TrainingArguments accepts and Trainer.train() does not -------------------------------

SCHEDULED = {"train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto", "zero_optimization": {},
             "scheduler": {"type": "WarmupDecayLR", "params": {"total_num_steps": "auto", "warmup_num_steps": "auto"}}}

LENGTHS = [  # TrainingArguments values, whether train() fails before DeepSpeed starts, what dsconfig says
    ({"num_train_epochs": math.nan}, True, ('num_train_epochs is NaN: with max_steps -1 Trainer.train() computes '
     'math.ceil(num_train_epochs × optimizer steps per epoch) and raises "ValueError: cannot convert float NaN')),
    ({"num_train_epochs": math.inf}, True, 'raises "OverflowError: cannot convert float infinity to integer"'),
    ({"num_train_epochs": -math.inf}, True, "num_train_epochs is -Infinity: with max_steps -1"),
    ({"num_train_epochs": math.nan, "max_steps": 0}, True, ("with max_steps 0 Trainer.train() computes "
     "math.ceil(num_train_epochs) and raises")),
    ({"num_train_epochs": 1e308}, True, ("num_train_epochs is 1e+308, more than 1,000,000,000,000 epochs of at least "
     'one optimizer step each (3,000 years at ten steps a second); from 2 optimizer steps per epoch Trainer.train() '
     'raises "OverflowError')),
    ({"warmup_steps": math.nan}, True, ('warmup_steps is NaN: when train() starts, the HF Trainer\'s DeepSpeed setup '
     'calls TrainingArguments.get_warmup_steps, which raises "ValueError')),
    ({"warmup_steps": math.inf}, True, 'warmup_steps is Infinity: when train() starts'),
    # dsconfig's own bound: the Trainer computes it, but no run is that long
    ({"num_train_epochs": 1e13}, False, "num_train_epochs is 10000000000000.0, more than 1,000,000,000,000 epochs"),
    ({"max_steps": 10 ** 400}, False, "max_steps is a 401-digit number, more than 1,000,000,000,000 optimizer steps"),
    # what the Trainer ignores or computes: dsconfig lints on
    ({"num_train_epochs": math.nan, "max_steps": 10}, False, None),
    ({"num_train_epochs": 1e308, "max_steps": 0}, False, None),
    ({"warmup_steps": 1e308}, False, None),
    ({"num_train_epochs": 1e12}, False, None),
]


def _train_start_fails(targs: dict, n: int = 1000, world: int = 2) -> bool:
    """Trainer.train() up to deepspeed_init: set_initial_training_values, then the warmup steps that
    trainer_config_finalize fills."""
    WorldArgs.fake_world = world
    args = WorldArgs(output_dir=OUTPUT_DIR, use_cpu=True, report_to=[], per_device_train_batch_size=4, **targs)
    try:
        args.get_warmup_steps(initial_steps(args, n, world))
    except (ValueError, OverflowError):
        return True
    return False


@pytest.mark.parametrize("targs,fails,says", LENGTHS, ids=[str(t) for t, _, _ in LENGTHS])
def test_run_lengths_the_trainer_fails_on_are_refused_naming_the_key(targs, fails, says):
    assert _train_start_fails(targs) is fails
    errors = trainer.training_args_errors({"per_device_train_batch_size": 4, **targs})
    if says is None:
        assert errors == []
        findings = trainer_findings(SCHEDULED, {"per_device_train_batch_size": 4, **targs}, 2, dataset_size=1000)
        findings += dataset_table(SCHEDULED, 1000, [2], targets.HF_TRAINER, {"per_device_train_batch_size": 4, **targs})
        assert findings  # replayed to the end: no OverflowError or ValueError inside the check
        return
    assert len(errors) == 1 and says in errors[0], errors


def test_the_cli_says_it_in_one_line_naming_the_file(tmp_path):
    from click.testing import CliRunner

    from dsconfig.commands.lint_cli import lint
    (tmp_path / "ds_config.json").write_text(json.dumps(SCHEDULED))
    (tmp_path / "args.json").write_text('{"num_train_epochs": NaN}')
    result = CliRunner().invoke(lint, [str(tmp_path / "ds_config.json"), "--training-args", str(tmp_path / "args.json"),
                                       "--world-size", "2", "--dataset-size", "1000"])
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr == (f"dsconfig: error: training arguments {tmp_path / 'args.json'}: num_train_epochs is NaN: "
                             "with max_steps -1 Trainer.train() computes math.ceil(num_train_epochs × optimizer steps "
                             "per epoch) and raises \"ValueError: cannot convert float NaN to integer\"\n")
    huge = CliRunner().invoke(lint, [str(tmp_path / "ds_config.json"), "--dataset-size", "1" + "0" * 400])
    assert huge.exit_code == 2 and "--dataset-size" in huge.output and "Traceback" not in huge.output


# -- end to end: the real Trainer.train() on the CPU (gloo, world size 1) -------------------------------------

E2E_WORKER = r'''
import json, sys, tempfile, torch, logging, warnings
warnings.filterwarnings("ignore")
from transformers import TrainingArguments, Trainer, PretrainedConfig, PreTrainedModel
from transformers.utils import logging as hf_logging
hf_logging.set_verbosity_error()
logging.getLogger("DeepSpeed").setLevel(logging.CRITICAL)

class Cfg(PretrainedConfig):
    model_type = "dsconfig-tiny"
    def __init__(self, hidden_size=4, **kw):
        super().__init__(**kw); self.hidden_size = hidden_size

class Tiny(PreTrainedModel):
    config_class = Cfg
    def __init__(self, config):
        super().__init__(config); self.lin = torch.nn.Linear(config.hidden_size, 1)
    def forward(self, x=None, labels=None):
        return {"loss": ((self.lin(x).squeeze(-1) - labels) ** 2).mean()}

class Data(torch.utils.data.Dataset):
    def __init__(self, n): self.n = n
    def __len__(self): return self.n
    def __getitem__(self, i): return {"x": torch.ones(4), "labels": torch.tensor(1.0)}

out = []
for case in json.loads(sys.stdin.read()):
    result = {}
    try:
        args = TrainingArguments(output_dir=tempfile.mkdtemp(), deepspeed=case["config"], report_to=[],
                                 save_strategy="no", logging_strategy="no", **case["args"])
        tr = Trainer(model=Tiny(Cfg()), args=args, train_dataset=Data(case["n"]))
        tr.train()
        result = {"ok": True, "global_step": tr.state.global_step,
                  "engine_steps": tr.model_wrapped.global_steps}
    except Exception as error:
        result = {"ok": False, "error": f"{type(error).__name__}: {error}"}
    out.append(result)

# DeepSpeed's own loop: the engine counts micro-steps across epochs
import deepspeed
model = torch.nn.Linear(4, 1)
engine, *_ = deepspeed.initialize(model=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.01),
                                  config={"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 3})
loader = engine.deepspeed_io(Data(10))
per_epoch = []
for epoch in range(2):
    for batch in loader:
        loss = ((engine(batch["x"]).squeeze(-1) - batch["labels"]) ** 2).mean()
        engine.backward(loss)
        engine.step()
    per_epoch.append(engine.global_steps)
out.append({"ds_loader_len": len(loader), "ds_steps": per_epoch})
print("RESULT" + json.dumps(out))
'''

E2E_CASES = [
    # 0: the research example at world size 1, with a known step count
    {"config": {**RESEARCH_CONFIG, "scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": 3,
                                                                              "total_num_steps": 10}}},
     "args": RESEARCH_ARGS, "n": 64},
    # 1: auto_find_batch_size with no gradient_accumulation_steps in the file
    {"config": {"train_micro_batch_size_per_gpu": "auto", "zero_optimization": {"stage": 2}},
     "args": {"gradient_accumulation_steps": 8, "auto_find_batch_size": True}, "n": 100},
    # 2: train_batch_size "auto" with no gradient_accumulation_steps: DeepSpeed's batch assertion
    {"config": {"train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto",
                "zero_optimization": {"stage": 0}},
     "args": {"gradient_accumulation_steps": 8, "max_steps": 2}, "n": 100},
    # 3: fp16 in TrainingArguments, bf16 enabled in the file: Trainer(...) refuses
    {"config": {"bf16": {"enabled": True}, "zero_optimization": {"stage": 0}}, "args": {"fp16": True}, "n": 8},
    # 4: a clean run: 100 samples, batches of 8 (13 per epoch), GAS 4 → ceil(13 / 4) = 4 steps in the epoch
    {"config": {"train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto",
                "zero_optimization": {"stage": 0}},
     "args": {"gradient_accumulation_steps": 4, "num_train_epochs": 1}, "n": 100},
]


@pytest.fixture(scope="module")
def e2e():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "RANK": "0", "WORLD_SIZE": "1",
           "LOCAL_RANK": "0", "PYTHONPATH": str(REPO), "TOKENIZERS_PARALLELISM": "false"}
    proc = subprocess.run([sys.executable, "-c", E2E_WORKER], input=json.dumps(E2E_CASES), capture_output=True,
                          text=True, env=env, timeout=600, check=False)
    marker = [line for line in proc.stdout.splitlines() if line.startswith("RESULT")]
    assert marker, proc.stderr[-3000:]
    return json.loads(marker[-1][len("RESULT"):])


@pytest.mark.slow
def test_e2e_research_example(e2e):
    case, result = E2E_CASES[0], e2e[0]
    assert not result["ok"] and result["error"].startswith("ValueError: " + MISMATCH_HEAD)
    real_lines = [line for line in result["error"].splitlines() if line.startswith("- ds ")]
    errors, _ = mine(case["config"], case["args"], 1, case["n"])
    assert sorted(f.message.split(": ", 1)[0] for f in errors) == sorted(real_lines)
    assert "- ds scheduler.params.total_num_steps=10 vs hf num_training_steps (calculated)=6" in real_lines


@pytest.mark.slow
def test_e2e_auto_find_batch_size(e2e):
    case, result = E2E_CASES[1], e2e[1]
    assert result["error"] == ("ValueError: " + MISMATCH_HEAD + "\n- ds gradient_accumulation_steps=1 vs hf "
                               "gradient_accumulation_steps=8\nThe easiest method is to set these DeepSpeed config "
                               "values to 'auto'.")
    errors, _ = mine(case["config"], case["args"], 1, case["n"])
    assert [f.message.split(": ", 1)[0] for f in errors] == [
        "- ds gradient_accumulation_steps=1 vs hf gradient_accumulation_steps=8"]


@pytest.mark.slow
def test_e2e_missing_gradient_accumulation(e2e):
    case, result = E2E_CASES[2], e2e[2]
    assert result["error"].startswith("AssertionError: Check batch related parameters")
    [finding] = [f for f in trainer_findings(case["config"], case["args"], 1) if f.code == "DS202"]
    assert result["error"].split("AssertionError: ", 1)[1] in finding.message


@pytest.mark.slow
def test_e2e_mixed_precision_refused(e2e):
    case, result = E2E_CASES[3], e2e[3]
    assert result["error"].startswith("ValueError: `--mixed_precision` arg cannot be set to `fp16`")
    errors, _ = mine(case["config"], case["args"], 1, case["n"])
    assert any(result["error"].split("ValueError: ", 1)[1] in f.message for f in errors)


@pytest.mark.slow
def test_e2e_steps_per_epoch(e2e):
    case, result = E2E_CASES[4], e2e[4]
    assert result["ok"], result
    plan = epoch_plan(targets.HF_TRAINER, 100, 8, 4, 1, False)
    assert result["global_step"] == result["engine_steps"] == plan.optimizer_steps == 4
    assert not [f for f in trainer_findings(case["config"], case["args"], 1, dataset_size=100) if f.code == "DS703"]


@pytest.mark.slow
def test_e2e_deepspeed_counts_across_epochs(e2e):
    result = e2e[-1]
    plan = epoch_plan(targets.DEEPSPEED, 10, 2, 3, 1, False)
    assert result["ds_loader_len"] == plan.batches_per_gpu == 5
    assert result["ds_steps"] == [plan.first_epoch_steps, math.floor(2 * plan.batches_per_gpu / 3)] == [1, 3]


@pytest.mark.parametrize("version", ["0.14.0", "0.16.0", "0.17.0"])
def test_precisions_left_auto_are_filled_before_deepspeed_reads_them(tmp_path, version):
    """The most common Hugging Face config: fp16.enabled and bf16.enabled both "auto". DeepSpeed 0.14-0.17 read an
    unfilled "auto" as true (DS400 for plain deepspeed.initialize), but the Trainer fills both first, from
    fp16/bf16 that TrainingArguments refuses together, and Accelerate from one mixed_precision."""
    from transformers import TrainingArguments
    from transformers.integrations.deepspeed import HfTrainerDeepSpeedConfig

    config = {"train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto",
              "fp16": {"enabled": "auto"}, "bf16": {"enabled": "auto"}, "zero_optimization": {"stage": 2}}
    for flags in ({}, {"bf16": True}, {"fp16": True}):
        filled = HfTrainerDeepSpeedConfig(json.loads(json.dumps(config)))
        filled.trainer_config_process(TrainingArguments(output_dir=str(tmp_path), use_cpu=True, **flags))
        assert not (filled.config["fp16"]["enabled"] and filled.config["bf16"]["enabled"]), flags
    with pytest.raises(ValueError, match="At most one of fp16 and bf16"):
        TrainingArguments(output_dir=str(tmp_path), use_cpu=True, fp16=True, bf16=True)
    text = json.dumps(config)
    for target in ("hf-trainer", "accelerate"):
        codes = [f.code for f in lint_text(text, "ds_config.json", target=target, deepspeed_version=version)]
        assert "DS400" not in codes, (target, codes)
    plain = [f.code for f in lint_text(text, "ds_config.json", target="deepspeed", deepspeed_version=version)]
    assert "DS400" in plain
