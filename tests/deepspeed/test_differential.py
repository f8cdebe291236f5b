"""dsconfig vs the real DeepSpeed 0.19.8: DeepSpeed rejects a config while loading or parsing it
exactly when dsconfig reports an error whose `fails_in` is "load" or "parse".

Two populations: every DeepSpeed config of ../shared/corpus at world sizes 1, 2, 4 and 8, and
a few thousand hypothesis-generated configs. The agreement table is printed (run with -s).
"""

from __future__ import annotations

import json
import os
import tempfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import corpus_files
from tests.helpers import lint

oracle = pytest.importorskip("tests.oracle")

WORLD_SIZES = (1, 2, 4, 8)


def dsconfig_rejects(path: str, world_size: int):
    findings = lint(path, target="deepspeed", world_sizes=(world_size,), kind="deepspeed")
    fatal = [f for f in findings if f.severity == "error" and f.fails_in in ("load", "parse")]
    return bool(fatal), fatal


def _compare(path: str, world_size: int):
    truth = oracle.verdict(path, world_size)
    rejects, fatal = dsconfig_rejects(path, world_size)
    return truth, rejects, fatal


CORPUS = [p for p, kind in corpus_files() if kind in ("deepspeed", "other") and p.suffix in (".json", ".conf")]


def test_corpus_agrees_with_deepspeed(capsys):
    disagreements, total, rejected = [], 0, 0
    for path in CORPUS:
        for size in WORLD_SIZES:
            truth, rejects, fatal = _compare(str(path), size)
            total += 1
            rejected += not truth.ok
            if rejects == truth.ok:
                disagreements.append((path.relative_to(path.parents[1]), size, truth.error, fatal))
    with capsys.disabled():
        print(f"\ncorpus: {total - len(disagreements)}/{total} verdicts agree "
              f"({len(CORPUS)} files x {len(WORLD_SIZES)} world sizes; DeepSpeed rejects {rejected})")
    assert not disagreements, "\n".join(map(str, disagreements[:40]))


# -- generated configs --------------------------------------------------------------------------
# Each field draws a plausible value most of the time and a near-miss now and then, so that
# DeepSpeed accepts a good share of the configs and both directions of the verdict are tested.


def one_in(n: int):
    """True about one time in n (sampled_from draws evenly; integer strategies favour the bounds)."""
    return st.sampled_from(range(n)).map(lambda i: i == n // 2)


def field(valid, junk, junk_rate=8):
    """`valid` usually, `junk` about one time in `junk_rate`."""
    return one_in(junk_rate).flatmap(lambda bad: junk if bad else valid)


def sometimes(strategy, rate=12):
    """A strategy for optional keys that are always wrong: present about one time in `rate`."""
    return one_in(rate).flatmap(lambda present: strategy if present else st.just(ABSENT))


ABSENT = object()


def drop_absent(mapping: dict) -> dict:
    return {k: v for k, v in mapping.items() if v is not ABSENT}


batch_value = field(
    st.sampled_from([1, 2, 4, 8, 16, 32, 64, 128, 6, 12, 24, 96]),
    st.one_of(st.integers(-2, 130), st.floats(0, 130, allow_nan=False).map(lambda x: round(x * 4) / 4),
              st.booleans(), st.sampled_from(["8", "16", "auto", "x", "", " 4", None])),
    junk_rate=5,
)
bool_like = field(st.booleans(), st.sampled_from(["true", "false", "auto", 1, 0, 2, "yes", None]))
offload = st.fixed_dictionaries({}, optional={
    "device": field(st.sampled_from(["cpu", "nvme", "none"]), st.sampled_from(["CPU", "gpu", "auto", None, 1])),
    "pin_memory": bool_like,
    "nvme_path": field(st.just("/local_nvme"), st.sampled_from([None, 5])),
    "ratio": field(st.sampled_from([1.0, 0.5, 1]), st.sampled_from([2, "0.3", -1])),
    "buffer_count": field(st.sampled_from([4, 5]), st.sampled_from([4.0, 4.5, "4", -1, True])),
    "pinmemory": sometimes(st.just(True)),
}).map(drop_absent)
zero = field(st.fixed_dictionaries({}, optional={
    "stage": field(st.sampled_from([0, 1, 2, 3]), st.sampled_from([4, -1, "3", 3.0, 2.5, True, "auto", None, "all"])),
    "offload_optimizer": field(offload, st.sampled_from([None, "auto", "cpu"])),
    "offload_param": field(offload, st.just(None)),
    "overlap_comm": bool_like,
    "contiguous_gradients": bool_like,
    "reduce_bucket_size": field(st.sampled_from([5e8, 500000000, 2e8]),
                                st.sampled_from(["auto", 0, -1, 15099494.4, "5e8", "500"])),
    "stage3_prefetch_bucket_size": field(st.sampled_from([5e7, 50000000]), st.sampled_from(["auto", 15099494.4, 0])),
    "prefetch_bucket_size": sometimes(st.sampled_from([5e7, 100, -3])),
    "sub_group_size": field(st.sampled_from([1e9, 1e12]), st.just("auto")),
    "cpu_offload": sometimes(bool_like),
    "compute_grad_norm": bool_like,
    "stage3_gather_16bit_weights_on_model_save": bool_like,
    "stage3_gather_fp16_weights_on_model_save": sometimes(bool_like),
    "round_robin_gradients": bool_like,
    "mics_shard_size": sometimes(st.just(8)),
    "zeropp_loco_param": sometimes(st.just({})),
    "strict": sometimes(st.booleans()),
    "stag": sometimes(st.just(2)),
}).map(drop_absent), st.sampled_from([True, False, None, [], "auto"]), junk_rate=12)
fp16 = st.fixed_dictionaries({}, optional={
    "enabled": bool_like,
    "loss_scale": field(st.sampled_from([0, 1, 128.0]), st.sampled_from([-1, "inf", True, "0"])),
    "loss_scale_window": field(st.sampled_from([1000, 100]), st.sampled_from([0, -5, 0.5, True, "100"])),
    "min_loss_scale": field(st.sampled_from([1, 2]), st.sampled_from([0, 0.5, "1"])),
    "initial_scale_power": field(st.sampled_from([16, 12]), st.sampled_from([16.0, "16"])),
    "hysteresis": field(st.just(2), st.just("2")),
    "opt_level": sometimes(st.just("O2")),
    "auto_cast": bool_like,
}).map(drop_absent)
bf16 = st.fixed_dictionaries({}, optional={
    "enabled": bool_like, "check_overflow": sometimes(st.booleans()), "immediate_grad_update": bool_like,
    "bf16_master_weights_and_grads": sometimes(bool_like, 4), "bf16_optimizer_states": sometimes(bool_like, 4),
}).map(drop_absent)
top_extra = st.fixed_dictionaries({}, optional={
    "steps_per_print": field(st.sampled_from([10, 2000]), st.just("auto")),
    "gradient_clipping": field(st.sampled_from([1.0, 0]), st.sampled_from(["auto", "1.0"])),
    "wall_clock_breakdown": field(st.booleans(), st.sampled_from(["false", None, 0])),
    "train_batch_sizee": st.just(8),
    "foo_bar": st.just(1),
    "elasticity": st.just({"enabled": False}),
    "amp": st.just({"enabled": True}),
    "sparse_attention": st.just({}),
    "curriculum_learning": st.just({"enabled": False}),
    "progressive_layer_drop": st.just({"enabled": True}),
    "communication_data_type": field(st.sampled_from(["fp16", "bf16", "fp32", "FP32"]), st.sampled_from(["fp8", None, 5])),
    "gradient_allreduce_op": field(st.sampled_from(["mean", "sum"]), st.sampled_from(["avg", "SUM"])),
    "sequence_parallel_size": field(st.sampled_from([1, 2, 4]), st.sampled_from([3, 0, "2"])),
})
rare = one_in(30)


@st.composite
def consistent_batch(draw, world: int) -> dict:
    """A batch triple that holds at `world`, with one or two of its keys left for DeepSpeed to derive."""
    micro, accumulation = draw(st.integers(1, 16)), draw(st.integers(1, 8))
    triple = {"train_batch_size": micro * accumulation * world, "train_micro_batch_size_per_gpu": micro,
              "gradient_accumulation_steps": accumulation}
    keep = draw(st.sampled_from([("train_batch_size", "train_micro_batch_size_per_gpu",
                                  "gradient_accumulation_steps"),
                                 ("train_batch_size", "train_micro_batch_size_per_gpu"),
                                 ("train_batch_size", "gradient_accumulation_steps"),
                                 ("train_micro_batch_size_per_gpu", "gradient_accumulation_steps"),
                                 ("train_micro_batch_size_per_gpu",)]))
    if keep in (("train_batch_size", "train_micro_batch_size_per_gpu"),):
        triple["train_batch_size"] = micro * world  # accumulation is derived as 1... or more:
        triple["train_batch_size"] *= accumulation
    return {key: triple[key] for key in keep}


@st.composite
def configs_at(draw):
    world = draw(st.integers(1, 16))
    config = draw(configs(world))
    return config, world


@st.composite
def configs(draw, world: int = 1):
    config = {}
    if draw(st.booleans()):
        config.update(draw(consistent_batch(world)))
    else:
        for key in ("train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps"):
            if draw(st.integers(0, 3)):
                config[key] = draw(batch_value)
    for key, strategy in (("zero_optimization", zero), ("fp16", fp16), ("bf16", bf16)):
        if draw(st.booleans()):
            config[key] = draw(strategy)
    if draw(rare):
        config["bfloat16"] = draw(bf16)
    if draw(rare):
        config[draw(st.sampled_from(["fp16", "bf16", "zero_optimization"]))] = None
    extras = draw(top_extra)
    for key, value in extras.items():  # the removed and misspelled blocks are rare too
        if key in ("train_batch_sizee", "foo_bar", "elasticity", "amp", "sparse_attention", "curriculum_learning",
                   "progressive_layer_drop") and not draw(rare):
            continue
        config[key] = value
    return config


@pytest.fixture(scope="module")
def scratch():
    with tempfile.TemporaryDirectory() as folder:
        yield folder


AGREEMENT = {"total": 0, "agree": 0, "rejected": 0}


@settings(max_examples=int(os.environ.get("DSCONFIG_DIFF_EXAMPLES", "3000")), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(case=configs_at())
def test_generated_configs_agree_with_deepspeed(scratch, case):
    config, world_size = case
    text = json.dumps(config, indent=2)
    path = os.path.join(scratch, "ds_config.json")
    with open(path, "w") as handle:
        handle.write(text)
    truth, rejects, fatal = _compare(path, world_size)
    AGREEMENT["total"] += 1
    AGREEMENT["rejected"] += not truth.ok
    AGREEMENT["agree"] += rejects != truth.ok
    assert rejects != truth.ok, f"world {world_size}\n{text}\nDeepSpeed: {truth.error}\ndsconfig: {fatal}"


def test_zz_report_generated_agreement(capsys):
    if AGREEMENT["total"]:
        with capsys.disabled():
            print(f"\ngenerated: {AGREEMENT['agree']}/{AGREEMENT['total']} verdicts agree "
                  f"(DeepSpeed rejects {AGREEMENT['rejected']})")


# -- named files that are no usable config ---------------------------------------------------------
# A file named on the command line is checked as a config whatever its name: empty, cut short or
# holding no object, DeepSpeed fails on it, and dsconfig must say so rather than skip it.


def _mutants(text: str) -> list[str]:
    cuts = sorted({len(text) // 4, len(text) // 2, 3 * len(text) // 4, max(len(text.rstrip()) - 1, 0)})
    # no integer or boolean root: DeepSpeedConfig takes a non-dict for a path and open()s it, and open(True)
    # is file descriptor 1 (it would close this process's stdout)
    return ["", " \n", *(text[:cut] for cut in cuts), "[" + text + "]", "4.5", '"text"', "null", "[]"]


def test_named_mutants_agree_with_deepspeed(tmp_path, capsys):
    disagreements, total = [], 0
    for source in CORPUS[:40]:
        for index, text in enumerate(_mutants(source.read_text(encoding="utf-8", errors="replace"))):
            path = tmp_path / f"mutant_{index}.json"  # a name that says nothing about DeepSpeed
            path.write_text(text, encoding="utf-8")
            truth = oracle.verdict(str(path), 1)
            findings = lint(str(path), target="deepspeed", world_sizes=(1,))  # kind detected, as the command does
            rejects = any(f.severity == "error" and f.fails_in in ("load", "parse") for f in findings)
            total += 1
            if rejects == truth.ok:
                disagreements.append((source.name, index, truth.error, [f.code for f in findings]))
    with capsys.disabled():
        print(f"\nnamed mutants: {total - len(disagreements)}/{total} verdicts agree")
    assert total and not disagreements, "\n".join(map(str, disagreements[:20]))
