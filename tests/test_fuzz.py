"""Fuzzing the readers and the whole lint pipeline with hypothesis: random bytes and text, and real
configs (every rule example, plus ../shared/corpus when present) mutated byte by byte. No input may
make dsconfig raise. DSCONFIG_FUZZ_EXAMPLES sets the examples per test (default 250); bench/fuzz.py
is the long run."""

from __future__ import annotations

import os
import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fuzz_targets import NAMES, TARGETS, check_lint, check_scanners, mutate, seeds

EXAMPLES = int(os.environ.get("DSCONFIG_FUZZ_EXAMPLES", "250"))
SEEDS = seeds()
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])

names = st.sampled_from(NAMES)
targets = st.sampled_from(TARGETS)
world_sizes = st.one_of(st.none(), st.lists(st.integers(1, 64), min_size=1, max_size=3).map(tuple))


@FUZZ
@given(data=st.binary(max_size=3000))
def test_scanners_never_raise_on_bytes(data):
    check_scanners(data)


@FUZZ
@given(text=st.text(alphabet=st.sampled_from(list('{}[],:"\'#/*\n\t -_.0123456789eE+aeflnrstu\\&!|>')),
                    max_size=400))
def test_scanners_never_raise_on_syntax_soup(text):
    check_scanners(text.encode("utf-8"))


@FUZZ
@given(data=st.binary(max_size=2000), name=names, target=targets)
def test_lint_never_raises_on_random_bytes(data, name, target):
    check_lint(name, data, target)


@FUZZ
@given(seed=st.integers(0, 2 ** 32 - 1), index=st.integers(0, len(SEEDS) - 1), steps=st.integers(1, 12),
       target=targets, sizes=world_sizes, rename=st.booleans(), name=names)
def test_lint_never_raises_on_mutated_configs(seed, index, steps, target, sizes, rename, name):
    original_name, original = SEEDS[index]
    data = mutate(original, random.Random(seed), steps)
    check_lint(name if rename else original_name, data, target, sizes)


def test_seeds_include_every_rule_example():
    from dsconfig.rules import RULES
    assert len(SEEDS) >= 2 * len(RULES)


def test_mutations_change_the_input():
    rng = random.Random(0)
    original = SEEDS[0][1]
    assert any(mutate(original, rng, 3) != original for _ in range(20))
