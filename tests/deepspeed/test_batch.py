"""Batch arithmetic: dsconfig's replay must agree with DeepSpeed to the message."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsconfig.deepspeed import batch

oracle = pytest.importorskip("tests.oracle")

batch_value = st.one_of(
    st.none(),
    st.integers(-4, 40),
    st.sampled_from([64, 96, 128, 6, 7, 10, 30, 32]),
    st.floats(-2, 40, allow_nan=False).map(lambda x: round(x * 2) / 2),
    st.booleans(),
    st.sampled_from(["8", "auto", "4", " 2", "x", "1e3"]),
    st.just([2]),
)


@settings(max_examples=3000, deadline=None)
@given(tbs=batch_value, mbs=batch_value, gas=batch_value, world=st.integers(1, 16),
       sp=st.one_of(st.none(), st.sampled_from([1, 2, 3, 4, 0, "2", 2.0])))
def test_resolve_matches_deepspeed(tbs, mbs, gas, world, sp):
    config = {key: value for key, value in zip(batch.BATCH_KEYS, (tbs, mbs, gas)) if value is not None}
    if sp is not None:
        config["sequence_parallel_size"] = sp
    truth = oracle.verdict(config, world)
    try:
        dp = batch.data_parallel_size(config, world)
    except Exception as error:
        assert not truth.ok and truth.error == f"{type(error).__name__}: {error}"
        return
    mine = batch.resolve(tbs, mbs, gas, dp)
    assert mine.ok == truth.ok, (config, world, truth)
    if not truth.ok:
        expected = truth.error.split(": ", 1)[1] if truth.error.startswith("AssertionError") else truth.error
        assert mine.error == expected


@pytest.mark.parametrize("tbs,mbs,gas,world,message", [
    (32, None, None, 4, None),
    (10, None, None, 4, "10 != 2 * 1 * 4"),
    (3, None, None, 4, "Micro batch size per gpu: 0 has to be greater than 0"),
    (30, 4, None, 4, "30 != 4 * 1 * 4"),
    (10, 4, None, 4, "Gradient accumulation steps: 0 has to be greater than 0"),
    (25, 2, 3, 4, "25 != 2 * 3 * 4"),
    (0, 1, None, 1, "Train batch size: 0 has to be greater than 0"),
    (None, 0, None, 4, "Train batch size: 0 has to be greater than 0"),
    (7.0, None, None, 1, None),
    (10.0, 2.5, None, 4, None),
])
def test_worked_examples(tbs, mbs, gas, world, message):
    """Worked examples of DeepSpeedConfig._batch_assertion and _set_batch_related_parameters."""
    outcome = batch.resolve(tbs, mbs, gas, world)
    assert outcome.ok == (message is None)
    if message:
        assert message in outcome.error


def test_suggestions_keep_global_batch():
    options = batch.suggest(64, 32, 1, 4)
    assert options[0][:2] == (batch.MBS, 16) and options[0].one_key
    assert any(o.key == batch.TBS and o.value == 128 for o in options)
    # every suggestion makes the arithmetic hold
    for option in options:
        values = {batch.TBS: 64, batch.MBS: 32, batch.GAS: 1}
        values[option.key] = option.value
        if not option.one_key:
            assert " and " in option.text  # the text names the second key
            continue
        assert batch.resolve(values[batch.TBS], values[batch.MBS], values[batch.GAS], 4).ok


@settings(max_examples=2000, deadline=None)
@given(tbs=st.integers(1, 300), mbs=st.one_of(st.none(), st.integers(1, 40)),
       gas=st.one_of(st.none(), st.integers(1, 16)), world=st.integers(1, 64))
def test_first_suggestion_always_works(tbs, mbs, gas, world):
    if batch.resolve(tbs, mbs, gas, world).ok:
        return
    options = batch.suggest(tbs, mbs, gas, world)
    assert options, (tbs, mbs, gas, world)
    best = options[0]
    values = {batch.TBS: tbs, batch.MBS: mbs, batch.GAS: gas}
    values[best.key] = best.value
    if " and " in best.text:  # a two-key change: micro batch and accumulation together
        per_gpu = tbs // world
        values[batch.GAS] = per_gpu // best.value
    assert batch.resolve(values[batch.TBS], values[batch.MBS], values[batch.GAS], world).ok, (best, values)


@settings(max_examples=1500, deadline=None)
@given(tbs=st.integers(1, 500), mbs=st.one_of(st.none(), st.integers(1, 40)),
       gas=st.one_of(st.none(), st.integers(1, 16)))
def test_working_world_sizes_are_exactly_those_deepspeed_accepts(tbs, mbs, gas):
    config = {k: v for k, v in zip(batch.BATCH_KEYS, (tbs, mbs, gas)) if v is not None}
    sizes = batch.working_world_sizes(config)
    for world in range(1, 70):
        assert batch.resolve(tbs, mbs, gas, world).ok == (world in sizes), (config, world)
