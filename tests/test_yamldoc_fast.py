"""libyaml reads a YAML file only inside the subset where it agrees with safe_load's pure-Python
loader (dsconfig/yamldoc.py). Here the two readings are compared wherever the fast path is taken:
every corpus YAML, mutations of them and of the rule examples, PyYAML dumps of random values in
every style, and YAML-significant character soup. DSCONFIG_YAML_EXAMPLES sets the examples per
property (default 400)."""

from __future__ import annotations

import math
import os
import random
import re

import pytest
import yaml
from hypothesis import HealthCheck, given, settings, strategies as st

from dsconfig.yamldoc import YamlDocument, _libyaml_agrees, _outside_plain_subset, _without_comments
from tests.conftest import corpus_files
from tests.fuzz_targets import mutate, seeds

EXAMPLES = int(os.environ.get("DSCONFIG_YAML_EXAMPLES", "400"))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
YAML_SEEDS = [data.decode("utf-8") for name, data in seeds() if name.endswith((".yaml", ".yml"))]


def _comparable(value):
    """NaN != NaN; compare the structure with NaN spelled out."""
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    if isinstance(value, dict):
        return {repr(_comparable(k)): _comparable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_comparable(v) for v in value]
    return (type(value).__name__, value)


def _same_reading(text: str) -> bool:
    """False when the fast path is not taken; asserts the readings agree when it is."""
    if not _libyaml_agrees(text):
        return False
    fast, pure = YamlDocument("x.yaml", text), YamlDocument("x.yaml", text, fast=False)
    assert fast.loaded == pure.loaded, text
    assert fast.error == pure.error, text
    assert _comparable(fast.value) == _comparable(pure.value), text
    assert fast.spans == pure.spans, text
    assert fast.duplicates == pure.duplicates, text
    assert fast.yaml11_booleans == pure.yaml11_booleans, text
    return True


def test_corpus_yaml_reads_the_same():
    files = [path for path, kind in corpus_files() if path.suffix in (".yaml", ".yml")]
    if not files:
        pytest.skip("../shared/corpus is not available")
    taken = sum(_same_reading(path.read_text(encoding="utf-8").replace("\r\n", "\n")) for path in files)
    assert taken >= len(files) // 2  # the fast path is the common one, or it buys nothing


def test_the_subset_refuses_what_libyaml_reads_differently():
    for text in ("a: 0\t\n", "a: !!str 1\n", "a: !x 1\n", "%YAML 1.1\n---\na: 1\n", "a: \"\\xZZ\"\n",
                 "\ufeffa: 1\n", "a: \x85\n", "a: " + "[" * 200 + "]" * 200 + "\n", "- " * 200 + "a\n",
                 "k" * 1100 + ": 1\n", "{a?}\n", "a: |#\n", "a: >\n  b\n", "a: [b, {c: d}]\n",
                 "a: \"\\'\"\n", "a:\n  |\n  b\n", "- >-\n  b\n", "a: [b,\n  c: d]\n", "a: {b:c}\n"):
        assert not _libyaml_agrees(text), text


def test_the_subset_takes_the_shapes_of_real_training_yamls():
    """NeMo's ASR vocabularies, OmegaConf arithmetic, regexes in double quotes and StarCoder's special tokens: read
    by libyaml (each is read the same by both loaders), or a big Hydra tree is read in pure Python."""
    for text in ('model:\n  labels: &labels [" ", "a", "b",\n    "c", "\'"]\n  decoder:\n    vocabulary: *labels\n',
                 "model:\n  d_model: 256\n  inner_size: ${multiply:${model.d_model}, 4}\n",
                 'freeze:\n  - "^llm\\\\..+$"  # LLM\n  - "^perception\\\\.encoder\\\\..+$"\n',
                 'prompt: "Q: {context}\\nA: {answer}"\n', "data:\n  split_sample: <file_sep>\n  prefix: <fim_prefix>\n",
                 "sizes: {train: 1,\n  val: 2,\n}\n", "- [a,\nb]\n",
                 "checkpoint:\n  filename: megatron_gpt--{val_loss:.2f}-{step}-{consumed_samples}\n",
                 'tokens:\n  system_turn_start: "\\x00"\n  label_start: "\\x12"\n  rare: "\\U0002B5AF"\n'):
        assert _libyaml_agrees(text), text
        assert _same_reading(text)


_word = st.sampled_from(["a", "b1", "x.y", "-1", "2.5e-3", "no", "null", "' '", '"a"', '"\\\\d"', "'it''s'",
                         '"\\n"', "1_000", "0x1f"])
_gap = st.sampled_from([" ", "", "\n", "\n  ", "\n    ", "\n\n ", " \n"])


@st.composite
def _flow_documents(draw):
    """Documents of flow lists and mappings over several lines, continuation lines at any indentation."""
    lines = []
    for key in range(draw(st.integers(1, 4))):
        indent = " " * draw(st.sampled_from([0, 2, 4]))
        anchor = draw(st.sampled_from(["", f"&k{key} "]))
        words = draw(st.lists(_word, min_size=1, max_size=6))
        gaps = [draw(_gap) for _ in words]
        if draw(st.booleans()):
            body = "".join(f"{w},{g}" for w, g in zip(words, gaps))
            body = body if draw(st.booleans()) else body.rstrip(", \n")
            value = f"[{draw(_gap)}{body}]"
        else:
            value = "{" + ",".join(f"{draw(_gap)}k{i}: {w}" for i, w in enumerate(words)) + "}"
        lines.append(f"{indent}key{key}: {anchor}{value}")
        if anchor and draw(st.booleans()):
            lines.append(f"{indent}copy{key}: *k{key}")
    return "\n".join(lines) + "\n"


@SETTINGS
@given(text=_flow_documents())
def test_flow_collections_over_lines_read_the_same(text):
    _same_reading(text)


@SETTINGS
@given(seed=st.integers(0, 2 ** 32 - 1), steps=st.integers(1, 8), index=st.integers(0, max(0, len(YAML_SEEDS) - 1)))
def test_mutated_configs_read_the_same(seed, steps, index):
    text = mutate(YAML_SEEDS[index].encode("utf-8"), random.Random(seed), steps).decode("utf-8", "replace")
    _same_reading(text.replace("\r", "\n"))


_scalars = st.one_of(st.none(), st.booleans(), st.integers(-10 ** 6, 10 ** 6), st.floats(allow_nan=True),
                     st.text(max_size=12), st.sampled_from(["no", "yes", "on", "off", "~", "0o17", "0x1f", "1_000",
                                                            "2024-01-01", ".inf", "<<", "=", "a: b", "- x", "#"]))
_values = st.recursive(_scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                          st.dictionaries(st.text(max_size=8), inner, max_size=4)),
                       max_leaves=20)


@SETTINGS
@given(value=_values, flow=st.sampled_from([True, False, None]), width=st.sampled_from([20, 80, 1000]))
def test_dumped_values_read_the_same(value, flow, width):
    _same_reading(yaml.safe_dump(value, default_flow_style=flow, width=width, allow_unicode=True))


@SETTINGS
@given(pieces=st.lists(st.sampled_from(list("ab01 \n:-[]{},#\"'&*?|><=~.yno@`%") +
                                      ["<<", "  ", "- ", ": ", "[]", "{}", ": [a, b]", ": []", ": {}", ", ", ": [ a, b ]",
                                       ": { a: 1 }", '"<|a|>"', "'x>y'", "'!b'", '"a\\b"', "'it''s'",
                                       ": [[a, 1], [b]]", "- [ 1, -2.5 ]", ": ${a:b, c}", "${a}", ": ${x,y}",
                                       ": &l [a,\n  b,\n", "\n  ]", ",\n", ": {a: 1,\n b: 2}", "<x>", "a|b", " |",
                                       '"\\\\d"', '"\\n\\t"', '"\\/\\e\\N"', '"\\\'"', '"\\x41"', "${m:${a.b}, 4}",
                                       ": [a, b, ]", ", ]", "*l", '"\\uD800"', '"\\U0002B5AF"', '"\\U00110000"',
                                       '"\\x0"', "a{b}", "x]", "{v:.2f}", "-{s}", "a[0]", "}]"]),
                      max_size=80))
def test_character_soup_reads_the_same(pieces):
    _same_reading("".join(pieces))


# The two tests of the subset as single patterns (slower: one alternation tried at every offset); the functions that
# replaced them must agree with them on any text.
_COMMENT = re.compile(r"(?:^|(?<=[ \t]))#[^\n]*", re.MULTILINE)
_OUTSIDE = re.compile("[^\n\x20-\x7e\xa0-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]"
                      "|[!\\\\]|(?:^|[ \t])[|>]|^%", re.MULTILINE)


@SETTINGS
@given(text=st.text(alphabet=st.sampled_from(list("ab #\t\n\r!\\|>%:-\x00\x85\ufeff\ud800é")), max_size=60))
def test_the_piecewise_subset_tests_are_the_patterns(text):
    assert _without_comments(text) == _COMMENT.sub("", text)
    assert _outside_plain_subset(text) == bool(_OUTSIDE.search(text))
