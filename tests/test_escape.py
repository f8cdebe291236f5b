"""dsconfig.escape: what may reach a terminal or a CI log, and how JSON and workflow commands carry
what may not."""

from __future__ import annotations

import json
import os

from hypothesis import given
from hypothesis import strategies as st

from dsconfig import escape
from tests import workflow_commands
from tests.fuzz_targets import check_rendered

# What a file name or a config can hold and a terminal or CI runner acts on.
HOSTILE = "a\nb\rc\td\x1b[31me\x07f\x7fg\x9bh\u202ei\u2066j\u200fk\u061cl\u2028m\ud800n\udcffo"


def test_characters_are_escaped_as_python_writes_them():
    assert escape.characters(HOSTILE) == ("a\\nb\\rc\\td\\x1b[31me\\x07f\\x7fg\\x9bh\\u202ei\\u2066j\\u200fk\\u061cl"
                                          "\\u2028m\\ud800n\\udcffo")
    assert escape.characters("\t|", keep_tabs=True) == "\t|"


def test_ordinary_text_is_unchanged():
    text = "train_batch_size 64 != 32 × 1 × 4; héllo 日本語 😀 `a`: b, c%"
    for function in (escape.characters, escape.inline, escape.line, escape.path):
        assert function(text) == text
    dumped = json.dumps({"message": text}, ensure_ascii=False)
    assert escape.json_text(dumped) == dumped


def test_no_line_starts_a_workflow_command():
    for text in ("::error::x", "  ::add-mask::x", "##[add-mask]x", "a ##[error]b", "\n::error::x", "::\n::error::x"):
        assert workflow_commands.parse(text) is not None  # raw, the runner would act on it
        assert workflow_commands.parse(escape.line(text)) is None, text
    assert escape.line("::error::x") == "\\x3a:error::x"
    assert escape.line("  ::add-mask::x") == "  \\x3a:add-mask::x"
    assert escape.line("a ::error::x") == "a ::error::x"  # only a line's start counts
    assert escape.inline("x ##[add-mask]y ##VSO[task.setvariable]z") == "x #\\x23[add-mask]y #\\x23VSO[task.setvariable]z"


def test_a_path_that_would_start_a_command_gets_dot_slash():
    assert escape.path("::error file=a::b.json") == "./::error file=a::b.json"
    assert escape.path(" ::x.json") == "./ ::x.json"
    assert escape.path("dir/::x.json") == "dir/::x.json"


def test_json_text_parses_back_to_the_same_value_and_is_utf8():
    value = {"file": "ds\udcff.json", "message": HOSTILE + "##[add-mask]x", "pointer": "/\ud800"}
    text = escape.json_text(json.dumps(value, indent=2, ensure_ascii=False))
    text.encode("utf-8")
    assert json.loads(text) == value
    check_rendered("json", text)
    assert "\\u202e" in text and "\\udcff" in text and "#\\u0023[add-mask]" in text


def test_workflow_properties_unescape_to_the_real_file_name():
    for name in ("ds,config:1.json", "a\n::error file=x::b%0A.json", "\x1b[31m\u202e%25.json"):
        escaped = escape.workflow_property(name)
        assert "\n" not in escaped and "\r" not in escaped and "," not in escaped and ":" not in escaped
        assert workflow_commands.unescape_property(escaped) == name


def test_workflow_data_unescapes_to_the_message():
    message = "50% done\r\nnext: a, b %0A"
    assert workflow_commands.unescape_data(escape.workflow_data(message)) == message


def test_a_name_that_is_not_utf8_keeps_its_bytes():
    assert escape.os_bytes(os.fsdecode(b"ds\xff.json")) == b"ds\xff.json"
    assert escape.os_bytes("\ud800") == b"\xed\xa0\x80"  # no byte decodes to it: visible, not an exception
    assert escape.workflow_property(os.fsdecode(b"ds\xff.json")) == "ds\\udcff.json"  # output stays UTF-8


# any code point, surrogates included, and more often the ones that matter
_CHARACTERS = st.one_of(st.characters(exclude_categories=()), st.sampled_from([*HOSTILE, ":", "#", "[", " "]))


@given(st.text(alphabet=_CHARACTERS, max_size=60))
def test_any_text_becomes_one_safe_line(text):
    shown = escape.line(text)
    shown.encode("utf-8")
    assert "\n" not in shown
    check_rendered("concise", shown)
    path = escape.path(text)
    path.encode("utf-8")
    check_rendered("concise", path)
