"""dsconfig.jsonscan against the real hjson 3.1.0 (DeepSpeed's config reader).

The module under test never imports hjson; these tests compare it with hjson itself: same
accept/reject decisions (and the same HjsonDecodeError message and offset), same values with
the same types, on generated, mutated and real config texts. Then spans, notes, traps,
duplicates, the nesting-depth model and line/column conversion.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsconfig import jsonscan
from dsconfig.jsonscan import Duplicate, Note, ScanError, Span, line_starts, position, scan
from tests.conftest import corpus_files

REPO = Path(__file__).resolve().parents[1]

# ---------------------------------------------------------------------------------------------
# helpers


def same(a, b) -> bool:
    """Strict equality: bool/int/float are different types, -0.0 != 0.0, NaN == NaN, key order counts.

    hjson.loads builds OrderedDicts (its default object_pairs_hook) and scan() plain dicts
    (what DeepSpeed's own object_pairs_hook and json.load give): any dict matches any dict.
    """
    if isinstance(a, dict) or isinstance(b, dict):
        return (isinstance(a, dict) and isinstance(b, dict) and list(a) == list(b)
                and all(same(a[k], b[k]) for k in a))
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, float):
        if math.isnan(a):
            return math.isnan(b)
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    return a == b


def hjson_outcome(text: str):
    """("ok", value) or (exception name, ...) for hjson.loads(text)."""
    hjson = pytest.importorskip("hjson")
    try:
        return ("ok", hjson.loads(text))
    except hjson.HjsonDecodeError as error:
        return ("HjsonDecodeError", error.msg.replace("%r", repr(error.doc[error.pos:error.pos + 1])), error.pos)
    except Exception as error:  # noqa: BLE001  (OverflowError, IndexError, ValueError, RecursionError)
        return (type(error).__name__,)


def pointers(value, prefix=""):
    """Every JSON pointer in a value (iteratively)."""
    out = []
    todo = [(prefix, value)]
    while todo:
        ptr, v = todo.pop()
        out.append(ptr)
        if isinstance(v, dict):
            todo.extend((ptr + "/" + k.replace("~", "~0").replace("/", "~1"), x) for k, x in v.items())
        elif isinstance(v, list):
            todo.extend((f"{ptr}/{i}", x) for i, x in enumerate(v))
    return out


def resolve(value, ptr: str):
    for token in ptr.split("/")[1:]:
        token = token.replace("~1", "/").replace("~0", "~")
        value = value[int(token)] if isinstance(value, list) else value[token]
    return value


def check_invariants(text: str, result) -> None:
    """Properties every successful scan has, whatever the input."""
    n = len(text)
    assert set(result.spans) == set(pointers(result.value))
    for ptr, span in result.spans.items():
        assert isinstance(span, Span)
        assert 0 <= span.start <= span.end <= n, (ptr, span)
        value = resolve(result.value, ptr)
        if span.key_start is not None:
            assert 0 <= span.key_start < span.key_end <= span.start
            token = text[span.key_start:span.key_end]
            if token[0] not in "\"'":
                key = ptr.rsplit("/", 1)[1].replace("~1", "/").replace("~0", "~")
                # hjson rstrip()s quoteless keys; a key stripped to "" keeps a one-character token
                assert token == key or (key == "" and len(token) == 1 and token.isspace())
        braceless = ptr == "" and any(note.kind in ("braceless-root", "empty-document") for note in result.notes)
        if isinstance(value, (dict, list)) and not braceless:
            assert text[span.start] == ("{" if isinstance(value, dict) else "[")
            assert text[span.end - 1] == ("}" if isinstance(value, dict) else "]")
    assert [note.start for note in result.notes] == sorted(note.start for note in result.notes)
    for note in result.notes:
        assert note.kind in jsonscan.NOTE_KINDS
        assert 0 <= note.start <= note.end <= n
        replaced = any(note.pointer == d.pointer or note.pointer.startswith(d.pointer + "/")
                       for d in result.duplicates)
        if note.kind == "quoteless-string" and not replaced:
            assert text[note.start:note.end] == resolve(result.value, note.pointer)
        if note.kind == "comment":
            assert text[note.start] in "#/"
    for trap in result.traps:
        assert text[trap.start:trap.end] == trap.text
    assert [d.key_start for d in result.duplicates] == sorted(d.key_start for d in result.duplicates)


def assert_agrees(text: str):
    """scan(text) raises iff hjson.loads(text) raises (the same way); else the values are identical."""
    expected = hjson_outcome(text)
    try:
        result = scan(text)
    except ScanError as error:
        assert expected[0] != "ok", f"scan raised {error.hjson_exception}: {error} but hjson accepts {text!r}"
        assert error.hjson_exception == expected[0], (text, str(error), expected)
        if expected[0] == "HjsonDecodeError":
            assert (error.message, error.offset) == expected[1:], text
        return None
    assert expected[0] == "ok", f"hjson raises {expected} but scan accepts {text!r}"
    assert same(expected[1], result.value), (text, expected[1], result.value)
    check_invariants(text, result)
    return result


# ---------------------------------------------------------------------------------------------
# 1. differential tests (hypothesis)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.integers(-10**30, 10**30)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=8), children, max_size=5),
    max_leaves=25,
)
json_layouts = st.fixed_dictionaries({
    "indent": st.sampled_from([None, 0, 1, 2, 4, "\t"]),
    "separators": st.sampled_from([None, (",", ":"), (", ", ": "), (" , ", " : ")]),
    "ensure_ascii": st.booleans(),
    "sort_keys": st.booleans(),
})

FAST = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])


@settings(FAST, max_examples=1500)
@given(json_values, json_layouts)
def test_strict_json_agrees(value, layout):
    text = json.dumps(value, **layout)
    result = assert_agrees(text)
    assert result is not None
    assert result.notes == [] and result.traps == [] and result.duplicates == []


# hjson-flavoured documents
_BLANKS = [" ", "", "\n", "\t", "\r\n", "  ", "\r", "\n    ", " \t"]
_COMMENTS = ["# c\n", "// c\n", "/* c */", "/* a\nb */", "#\n", "/**/", "// x\r\n", "#}\n", "/*/ */"]
_GAPS = _BLANKS * 6 + [b + c + a for b in _BLANKS[:4] for c in _COMMENTS for a in _BLANKS[:3]]


def gaps():
    """Whitespace, sometimes with a comment in it."""
    return st.sampled_from(_GAPS)


NUMBERS = ["0", "1", "-1", "7.0", "5e8", "1e20", "1e10", "9999999999.0", "1E5", "-0", "-0.0", "1.5", "2.5e-3",
           "1e-400", "+5", ".5", "1.", "007", "1_000", "1e400", "-1e400", "NaN", "Infinity", "-Infinity",
           "12345678901234567890", "1\u0662", "0x10", "1 \t", "3\x0c"]
LITERALS = ["true", "false", "null", "True", "None", "nul", "truex", "null\u00a0"]
QUOTED = ['"cpu"', '"a\\nb"', '"\\u0041"', '"\\ud83d\\ude00"', "\"it's\"", '"\\\'"', '"x\\"y"', "'cpu'", "'a\"b'",
          "''", '"\\x"', '"tab\there"', '"\\u12"', '"\\u-001"', '"unterminated']
QUOTELESS = ["cpu", "auto", "hello world", "cpu}}", "a, b", "x # y", "http://x", "a: b", "\x0cz", "-", "x/*y*/"]
MULTILINE = ["'''\n  a\n  b\n  '''", "'''x'''", "'''\n  it's\n  '''", "'''  a\r\n  b'''", "''''x''''", "'''"]
KEYS = ['"a"', '"b"', '"train_batch_size"', "'a'", "a", "b", "zero_optimization", '"x/y"', '"t~1"', '""',
        "a b", "'''", "a#b", "a\x0c", "\"\\u0041\""]

scalars = st.sampled_from(NUMBERS + LITERALS + QUOTED + QUOTELESS + MULTILINE)
separators = st.sampled_from([",", ",", "\n", "", ",\n", " ,", ",,"])


def _containers(children):
    member = st.tuples(st.sampled_from(KEYS), gaps(), gaps(), children, gaps(), separators, gaps()).map(
        lambda t: t[0] + t[1] + ":" + t[2] + t[3] + t[4] + t[5] + t[6])
    item = st.tuples(children, gaps(), separators, gaps()).map("".join)
    objects = st.tuples(gaps(), st.lists(member, max_size=4), st.sampled_from(["}", "}", "}", ""])).map(
        lambda t: "{" + t[0] + "".join(t[1]) + t[2])
    arrays = st.tuples(gaps(), st.lists(item, max_size=4), st.sampled_from(["]", "]", "]", ""])).map(
        lambda t: "[" + t[0] + "".join(t[1]) + t[2])
    return objects | arrays


hjson_values = st.recursive(scalars, _containers, max_leaves=12)


@st.composite
def hjson_documents(draw):
    prefix = draw(st.sampled_from(["", "", "", "\ufeff", "\xef\xbb\xbf"])) + draw(gaps())
    if draw(st.booleans()):
        return prefix + draw(hjson_values) + draw(gaps())
    members = draw(st.lists(st.tuples(st.sampled_from(KEYS), gaps(), hjson_values, separators, gaps()),
                            min_size=1, max_size=4))
    return prefix + "".join(k + ":" + g + v + s + g2 for k, g, v, s, g2 in members)


@settings(FAST, max_examples=2500)
@given(hjson_documents())
def test_hjson_flavoured_agrees(text):
    assert_agrees(text)


SEED_CONFIGS = [
    json.dumps({
        "train_batch_size": 32, "train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": 1,
        "optimizer": {"type": "AdamW", "params": {"lr": 3e-5, "betas": [0.9, 0.999], "eps": 1e-8,
                                                  "weight_decay": 0.0}},
        "fp16": {"enabled": True, "loss_scale": 0, "initial_scale_power": 16},
        "zero_optimization": {"stage": 3, "offload_param": {"device": "cpu", "pin_memory": True},
                              "reduce_bucket_size": 5e8, "stage3_max_live_parameters": 1e9},
        "gradient_clipping": 1.0, "steps_per_print": 2000, "wall_clock_breakdown": False,
    }, indent=2),
    """// DeepSpeed config, hjson style
{
  train_batch_size: 32
  'fp16': {enabled: true, loss_scale: 0,}, # trailing comma
  "zero_optimization": {
    stage: 2
    offload_optimizer: {device: cpu}
    reduce_bucket_size: 5e8
    /* block
       comment */
    allgather_bucket_size: 2e8
  }
  note: '''
    multi
    line
    '''
  lr: +5
}
""",
    "train_batch_size: 16\ngradient_clipping: 1.0\r\nzero_optimization: {\"stage\": 1}\n",
]
SEED_CONFIGS += sorted(p.read_text(encoding="utf-8", errors="replace")[:1500]
                       for p, _ in corpus_files() if p.suffix in (".json", ".conf"))[:40]

MUTATION_CHARS = list("{}[],:\"'#/*\n\r\t \\u019aefnlrt+-._x\x0c\ufeff") + [
    "'''", "//", "/*", "*/", "\\u", "null", "true", "1e400", "\r\n", "NaN", "\u0662"]


@st.composite
def mutated_configs(draw):
    text = list(draw(st.sampled_from(SEED_CONFIGS)))
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["delete", "insert", "duplicate"]))
        i = draw(st.integers(0, len(text)))
        if op == "insert":
            text.insert(i, draw(st.sampled_from(MUTATION_CHARS)))
        elif text:
            i = min(i, len(text) - 1)
            if op == "delete":
                del text[i]
            else:
                text.insert(i, text[i])
    return "".join(text)


@settings(FAST, max_examples=2500)
@given(mutated_configs())
def test_mutated_configs_agree(text):
    assert_agrees(text)


@settings(FAST, max_examples=1500)
@given(st.lists(st.sampled_from(MUTATION_CHARS + list("abc019")), max_size=25).map("".join))
def test_short_random_texts_agree(text):
    assert_agrees(text)


# ---------------------------------------------------------------------------------------------
# 2. the corpus of real config files


def _corpus_files():
    return sorted(p for p, _ in corpus_files() if p.is_file() and p.suffix in (".json", ".conf"))


@pytest.mark.parametrize("path", _corpus_files(), ids=lambda p: p.name)
def test_corpus_file_agrees(path):
    # As DeepSpeed reads it (open(path): universal newlines) and byte for byte.
    with open(path, encoding="utf-8") as handle:
        assert_agrees(handle.read())
    raw = path.read_bytes().decode("utf-8")
    result = assert_agrees(raw)
    try:
        strict = json.loads(raw)
    except ValueError:
        return
    assert result is not None and result.notes == [] and result.traps == []
    assert_spans_decode(raw, strict, result)


# ---------------------------------------------------------------------------------------------
# 3. spans on strict JSON


def assert_spans_decode(text, strict_value, result):
    assert set(result.spans) == set(pointers(strict_value))
    for ptr, span in result.spans.items():
        assert same(json.loads(text[span.start:span.end]), resolve(strict_value, ptr)), ptr
        if span.key_start is None:
            assert ptr == "" or isinstance(resolve(strict_value, ptr.rsplit("/", 1)[0]), list)
        else:
            key = ptr.rsplit("/", 1)[1].replace("~1", "/").replace("~0", "~")
            assert json.loads(text[span.key_start:span.key_end]) == key


@settings(FAST, max_examples=800)
@given(json_values, json_layouts)
def test_spans_of_strict_json(value, layout):
    text = json.dumps(value, **layout)
    assert_spans_decode(text, json.loads(text), scan(text))


def test_span_examples():
    text = '{"a": [1, {"b~/c": "x"}], "d": -1.5e3 }'
    spans = scan(text).spans
    assert spans[""] == Span(None, None, 0, len(text))
    assert text[spans["/a"].key_start:spans["/a"].key_end] == '"a"'
    assert text[spans["/a"].start:spans["/a"].end] == '[1, {"b~/c": "x"}]'
    assert spans["/a/0"] == Span(None, None, 7, 8)
    assert text[spans["/a/1/b~0~1c"].start:spans["/a/1/b~0~1c"].end] == '"x"'
    assert text[spans["/d"].start:spans["/d"].end] == "-1.5e3"
    # quoteless values: the stripped text; braceless root: first key to last value
    text = "a: hello world  \nb: 5 \t\n"
    result = scan(text)
    assert text[result.spans["/a"].start:result.spans["/a"].end] == "hello world"
    assert text[result.spans["/b"].start:result.spans["/b"].end] == "5"
    assert result.spans[""] == Span(None, None, 0, text.index("5") + 1)


# ---------------------------------------------------------------------------------------------
# 4. unit tests: values hjson gives that JSON would not


@pytest.mark.parametrize("text, value", [
    ('{"a": 7.0}', {"a": 7}),
    ('{"a": 5e8}', {"a": 500000000}),
    ('{"a": 1e20}', {"a": 1e20}),
    ('{"a": 1e10}', {"a": 1e10}),
    ('{"a": 9999999999.0}', {"a": 9999999999}),
    ('{"a": -0.0}', {"a": 0}),
    ('{"a": 0.5}', {"a": 0.5}),
    ("{a: +5\nb: .5\nc: 1_000\nd: 007\ne: NaN\nf: 1.\n}", {"a": "+5", "b": ".5", "c": "1_000", "d": "007",
                                                           "e": "NaN", "f": "1."}),
    ('{"offload": cpu}}', None),  # the quoteless string swallows both braces: unclosed object
    ('{"offload": cpu}}\n}', {"offload": "cpu}}"}),
    ("", {}),
    ("// nothing\n/* here */", {}),
    ("\ufeff{}", {}),
    ("a: [", "a: ["),  # the braceless object fails, so hjson reads the line as one string
    ('"x"', "x"),
])
def test_values(text, value):
    result = assert_agrees(text)
    if value is None:
        assert result is None
    else:
        assert same(result.value, value)


@pytest.mark.parametrize("text, exception, fragment", [
    ('{"a": 1e400}', "OverflowError", "1e400 overflows"),
    ('{"a": 1} /* never closed', "IndexError", "unterminated /* comment"),
    ("a: '''x'''", "IndexError", "without any line break"),
    ('{"a": "\\u-001"}', "ValueError", "code point -1"),
    ('{"a": ' + "1" * 5000 + "}", "ValueError", "5000 digits"),
    ('{"a" 1}', "HjsonDecodeError", "Expecting ':' delimiter"),
    ("\ufeff", "HjsonDecodeError", "Bad key name (eof)"),
    ('{"a": 1}}', "HjsonDecodeError", "Extra data"),
])
def test_errors(text, exception, fragment):
    assert_agrees(text)
    with pytest.raises(ScanError) as info:
        scan(text)
    assert info.value.hjson_exception == exception
    assert fragment in info.value.message
    assert isinstance(info.value.offset, int)


def test_error_offset():
    text = '{\n  "a": 1,\n  "b" 2\n}'
    with pytest.raises(ScanError) as info:
        scan(text)
    assert info.value.message == "Expecting ':' delimiter"
    assert info.value.offset == text.index("2")
    assert position(line_starts(text), info.value.offset) == (3, 7)


# ---------------------------------------------------------------------------------------------
# notes


def notes_of(text):
    return [note for note in scan(text).notes]


def test_note_comment():
    text = '{"a": 1, # one\n "b": {/* two */ "c": 2 // three\n}}'
    assert notes_of(text) == [
        Note("comment", text.index("#"), text.index("\n"), ""),
        Note("comment", text.index("/*"), text.index("*/") + 2, "/b"),
        Note("comment", text.index("//"), text.rindex("\n"), "/b"),
    ]


def test_note_trailing_comma():
    text = '{"a": [1, 2,], "b": 3,}'
    assert notes_of(text) == [
        Note("trailing-comma", text.index("2,") + 1, text.index("2,") + 2, "/a/1"),
        Note("trailing-comma", text.index("3,") + 1, text.index("3,") + 2, "/b"),
    ]


def test_note_missing_comma():
    text = '{"a": 1\n "b": ["x" "y"]}'
    assert notes_of(text) == [
        Note("missing-comma", text.index("1") + 1, text.index('"b"'), "/b"),
        Note("missing-comma", text.index('"y"') - 1, text.index('"y"'), "/b/1"),
    ]
    # on one line, `1 2]}` would be a single quoteless string


def test_note_unquoted_key():
    text = '{zero: {stage : 3}}'
    assert notes_of(text) == [
        Note("unquoted-key", 1, 5, "/zero"),
        Note("unquoted-key", text.index("stage"), text.index("stage") + 5, "/zero/stage"),
    ]


def test_note_single_quotes():
    text = "{'device': 'cpu'}"
    assert notes_of(text) == [
        Note("single-quotes", 1, 9, "/device"),
        Note("single-quotes", 11, 16, "/device"),
    ]


def test_note_quoteless_string():
    text = '{"device": cpu\n}'
    assert notes_of(text) == [Note("quoteless-string", 11, 14, "/device")]
    assert scan(text).traps == []  # a plain word is fine


def test_note_multiline_string():
    text = "{\n  a: '''\n     x\n     '''\n}"
    result = scan(text)
    assert result.value == {"a": "x"}
    assert Note("multiline-string", text.index("'''"), text.rindex("'''") + 3, "/a") in result.notes


def test_note_braceless_root():
    text = "a: 1\nb: 2\n"
    result = scan(text)
    assert result.value == {"a": 1, "b": 2}
    assert result.notes[0] == Note("braceless-root", 0, len(text), "")
    assert [note.kind for note in result.notes] == [
        "braceless-root", "unquoted-key", "missing-comma", "unquoted-key"]
    assert result.max_depth == 1


def test_note_empty_document():
    text = "  # nothing\n"
    result = scan(text)
    assert result.value == {}
    assert result.notes == [Note("empty-document", 0, len(text), ""), Note("comment", 2, 11, "")]


def test_comment_noted_once_when_hjson_retries_the_root():
    # The braceless-object attempt fails, hjson re-reads the root as a single value.
    text = "# a number\n42 // answer\n"
    result = scan(text)
    assert result.value == 42
    assert [note.kind for note in result.notes] == ["comment", "comment"]
    assert result.max_depth == 0


# ---------------------------------------------------------------------------------------------
# traps


@pytest.mark.parametrize("literal, reason", [
    ("+5", "'+5' is not an hjson number (no leading +)"),
    ("1_000", "'1_000': underscores are not allowed"),
    ("007", "'007': leading zeros"),
    (".5", "'.5' needs a leading 0"),
    ("-.5", "'-.5' needs a leading 0"),
    ("1.", "'1.' needs a digit after the decimal point"),
    ("NaN", "'NaN' is not a number in hjson"),
    ("-Infinity", "'-Infinity' is not a number in hjson"),
    ("0x10", "'0x10': hex, octal and binary numbers are not allowed"),
    ("True", "'True' is not a literal in hjson (write true)"),
    ("None", "'None' is not a literal in hjson (write null)"),
    ("cpu}}", "the quoteless string runs to the end of the line and swallowed '}'"),
    ("cpu, pin_memory: true", "the quoteless string runs to the end of the line and swallowed ','"),
    ("5e8", None),  # a number
    ("auto # HF fills it", "the quoteless string runs to the end of the line and swallowed the '#' comment"),
    ("http://host/x", None),
    ("cpu", None),
])
def test_traps(literal, reason):
    text = '{"a": ' + literal + "\n}"
    result = scan(text)
    traps = result.traps
    if reason is None:
        assert traps == []
        return
    start = text.index(literal)
    assert [(t.pointer, t.start, t.end, t.text, t.reason) for t in traps] == [
        ("/a", start, start + len(literal), literal, reason)]
    assert result.value == {"a": literal}


def test_trap_root_line():
    result = scan("train_batch_size: [8\n")
    assert result.value == "train_batch_size: [8"
    assert [t.reason for t in result.traps] == [
        "hjson could not read the document as an object and took its first line as one string"]


def test_no_traps_for_numbers_hjson_reads():
    assert scan("{a: 5e8, b: 1e-4, c: -0, d: 7.0}").traps == []


# ---------------------------------------------------------------------------------------------
# duplicates


def test_duplicates_nested():
    text = '{"a": {"x": 1, "y": {"k": 1}, "x": 2}, "b": [{"z": 0, "z": 1}], "a": {"y": 3}, "a": 4}'
    result = scan(text)
    assert result.value == {"a": 4, "b": [{"z": 1}]}
    first_a = text.index('"a"')
    first_x = text.index('"x"')
    first_z = text.index('"z"')
    second_a = text.index('"a"', first_a + 1)
    assert result.duplicates == [
        Duplicate("/a/x", text.index('"x"', first_x + 1), text.index('"x"', first_x + 1) + 3, first_x),
        Duplicate("/b/0/z", text.index('"z"', first_z + 1), text.index('"z"', first_z + 1) + 3, first_z),
        Duplicate("/a", second_a, second_a + 3, first_a),
        Duplicate("/a", text.rindex('"a"'), text.rindex('"a"') + 3, first_a),
    ]
    # spans follow the last occurrence; the replaced values' spans are gone
    assert set(result.spans) == {"", "/a", "/b", "/b/0", "/b/0/z"}
    assert text[result.spans["/a"].start:result.spans["/a"].end] == "4"
    assert result.spans["/a"].key_start == text.rindex('"a"')


def test_duplicate_unquoted_and_quoted_key():
    text = 'stage: 1\n"stage": 2\n'
    result = scan(text)
    assert result.value == {"stage": 2}
    assert result.duplicates == [Duplicate("/stage", 9, 16, 0)]


# ---------------------------------------------------------------------------------------------
# nesting depth: hjson recurses; scan must not, but must report hjson's RecursionError


def test_deep_nesting_is_a_scan_error_quickly():
    for text in ("[" * 100_000 + "]" * 100_000, '{"a":' * 100_000 + "1" + "}" * 100_000, "a:" + "[" * 100_000):
        start = time.perf_counter()
        with pytest.raises(ScanError) as info:
            scan(text)
        assert time.perf_counter() - start < 1.0
        assert info.value.hjson_exception == "RecursionError"
        assert "RecursionError" in info.value.message
        assert 400 < info.value.offset < 5000


def test_scanner_itself_is_iterative(monkeypatch):
    # Pretend the recursion limit is huge: hjson's limit no longer applies and scan reads far deeper
    # than any recursive reader could. (Not 100,000 levels: the pointers alone would then take
    # 10 GB, since the pointer of depth d has d tokens.)
    monkeypatch.setattr(jsonscan, "_probe", lambda level: 10**9)
    depth = 5_000
    result = scan("[" * depth + "]" * depth)
    assert result.max_depth == depth
    assert len(result.spans) == depth
    value = result.value
    for _ in range(depth - 1):
        value = value[0]
    assert value == []
    result = scan('{"a":' * depth + "1" + "}" * depth)
    assert result.max_depth == depth
    assert result.spans["/a" * depth] == Span(5 * depth - 4, 5 * depth - 1, 5 * depth, 5 * depth + 1)


def _both_outcomes(text):
    """hjson.loads and scan called from this same frame, so both have the same stack to work with."""
    hjson = pytest.importorskip("hjson")
    try:
        hjson.loads(text)
        expected = "ok"
    except RecursionError:
        expected = "RecursionError"
    except Exception as error:  # noqa: BLE001
        expected = type(error).__name__
    try:
        scan(text)
        got = "ok"
    except ScanError as error:
        got = error.hjson_exception
    return expected, got


# (opening, closing, innermost text): the document is opening*n + innermost + closing*n
DEEP_SHAPES = {
    "arrays": ("[", "]", ""),
    "arrays-number": ("[", "]", "1"),
    "arrays-string": ("[", "]", '"x"'),
    "arrays-unicode-escape": ("[", "]", '"\\u0041"'),
    "arrays-comment": ("[", "]", "# c\n1"),
    "arrays-multiline": ("[", "]", "'''\nx'''"),
    "objects-number": ('{"a":', "}", "1"),
    "objects-empty": ('{"a":', "}", "{}"),
    "objects-unquoted-key": ("{a:", "}", "{b: x\n}"),
    "objects-escaped-key": ('{"a":', "}", '{"\\u0041": 1}'),
    "mixed": ('[{"a":', "}]", "true"),
    "error-unclosed-array": ("[", "", ""),
    "error-bad-key": ('{"a":', "", "{,"),
    "error-bad-escape": ("[", "", '"\\x"'),
    "error-overflow": ("[", "", "1e400]"),
}


def _threshold_window(opening, closing, inner, braceless):
    def make(n):
        if braceless:
            return "\nroot:" + opening * (n - 1) + inner + closing * (n - 1)
        return "\n" + opening * n + inner + closing * n
    per_level = 2 * max(1, opening.count("{") + opening.count("["))
    estimate = (sys.getrecursionlimit() - len(_frames())) // per_level
    return make, range(max(1, estimate - 14), estimate + 6)


def _frames():
    frames, frame = [], sys._getframe()
    while frame is not None:
        frames.append(frame)
        frame = frame.f_back
    return frames


@pytest.mark.parametrize("braceless", [False, True], ids=["braces", "braceless-root"])
@pytest.mark.parametrize("shape", DEEP_SHAPES)
def test_recursion_threshold_matches_hjson(shape, braceless):
    make, depths = _threshold_window(*DEEP_SHAPES[shape], braceless)
    seen = set()
    for n in depths:
        expected, got = _both_outcomes(make(n))
        assert got == expected, f"depth {n}: hjson {expected}, scan {got}"
        seen.add(expected)
    assert "RecursionError" in seen and len(seen) > 1  # the window straddles hjson's threshold


@pytest.mark.parametrize("limit", [400, 2500])
def test_recursion_threshold_other_limits(limit):
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(limit)
    try:
        for shape in ("arrays", "objects-number", "error-bad-key"):
            make, depths = _threshold_window(*DEEP_SHAPES[shape], False)
            seen = set()
            for n in depths:
                expected, got = _both_outcomes(make(n))
                assert got == expected, f"limit {limit}, {shape}, depth {n}: hjson {expected}, scan {got}"
                seen.add(expected)
            assert "RecursionError" in seen and len(seen) > 1
    finally:
        sys.setrecursionlimit(old)


def test_measured_depths_at_the_default_limit():
    """The numbers quoted in jsonscan's comment, from a fresh interpreter's top level."""
    pytest.importorskip("hjson")
    # hjson.loads and scan are called from the module level, as in the comment.
    code = (
        "import hjson, sys\n"
        "from dsconfig.jsonscan import scan, ScanError\n"
        "assert sys.getrecursionlimit() == 1000\n"
        "deepest = {}\n"
        "for name, unit, inner, end in (('arrays', '[', '', ']'), ('objects', '{\"a\":', '1', '}')):\n"
        "    for n in range(450, 600):\n"
        "        text = unit * n + inner + end * n\n"
        "        try:\n"
        "            hjson.loads(text)\n"
        "            expected = 'ok'\n"
        "        except RecursionError:\n"
        "            expected = 'RecursionError'\n"
        "        try:\n"
        "            scan(text)\n"
        "            got = 'ok'\n"
        "        except ScanError as error:\n"
        "            got = error.hjson_exception\n"
        "        assert got == expected, (name, n, expected, got)\n"
        "        if expected != 'ok':\n"
        "            deepest[name] = n - 1\n"
        "            break\n"
        "print(deepest['arrays'], deepest['objects'])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["497", "496"]


# ---------------------------------------------------------------------------------------------
# offsets -> line and column


def test_line_starts_and_position():
    text = "ab\r\ncd\ref\ngh\r\n\r\nij"
    starts = line_starts(text)
    assert starts == [0, 4, 7, 10, 14, 16]
    assert position(starts, 0) == (1, 1)
    assert position(starts, 2) == (1, 3)  # the CR of CRLF is still on line 1
    assert position(starts, 3) == (1, 4)  # and so is its LF: CRLF is one line break
    assert position(starts, 4) == (2, 1)
    assert position(starts, 7) == (3, 1)  # a lone CR ends a line too
    assert position(starts, 14) == (5, 1)
    assert position(starts, 17) == (6, 2)
    assert position(starts, len(text)) == (6, 3)


def test_position_counts_characters():
    text = '{"é€😀": x, "b": 1}\n  y: 2'
    starts = line_starts(text)
    assert position(starts, text.index("x")) == (1, 9)
    assert position(starts, text.index("y")) == (2, 3)


# ---------------------------------------------------------------------------------------------
# the module itself


def test_module_imports_without_hjson():
    code = "import sys; sys.modules['hjson'] = None; import dsconfig.jsonscan as j; print(j.scan('a: 1').value)"
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "{'a': 1}"


def test_speed_on_a_typical_config():
    config = json.loads(SEED_CONFIGS[0])
    sections = {}
    while len(json.dumps(sections, indent=2)) < 5000:
        sections[f"section_{len(sections)}"] = config
    text = json.dumps(sections, indent=2)
    scan(text)
    runs = 20
    start = time.perf_counter()
    for _ in range(runs):
        scan(text)
    per_scan = (time.perf_counter() - start) / runs
    assert per_scan < 0.01, f"{per_scan * 1000:.2f} ms for {len(text)} characters"
