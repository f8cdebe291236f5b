"""Parsers on hostile input: a script's coding cookie, YAML 0x/0b/0o integers and !!binary keys, TOML integers
past Python's int-string limit, and a YAML alias chain given as training arguments. The libraries decide what a
file means (Python's tokenize and codecs, yaml.safe_load, tomllib): the tests compare dsconfig's reading with
theirs, and check that what they refuse is one finding at the right line and column, never a crash."""

from __future__ import annotations

import codecs
import io
import sys
import time
import tokenize

import pytest
import tomllib
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from dsconfig import engine
from dsconfig.tomldoc import TomlDocument
from dsconfig.training.pysource import SAFE_CODINGS, Unreadable, decode_source
from dsconfig.values import digits, int_text, printable
from dsconfig.yamldoc import YamlDocument
from tests.helpers import lint, lint_folder

BROKEN_DS_CONFIG = '{"train_batch_size": 7.0}\n'  # DS201 in a walk: the other file's findings must still show
HUGE_HEX = "0x" + "f" * 4000  # 4,817 decimal digits: int() reads it, str() cannot write it


def _codes(findings) -> list[str]:
    return [f.code for f in findings]


def _crashes(paths, **fields) -> tuple:
    return engine.lint_files([str(p) for p in paths], engine.Options(**fields)).crashed


# -- a script's coding cookie ------------------------------------------------------------------------------

REFUSED = ["punycode", "idna", "utf-7", "rot13", "rot_13", "hex", "base64", "zlib", "uu", "bz2", "quopri",
           "undefined", "unicode_escape", "raw_unicode_escape", "utf-16", "utf-32", "palmos", "nosuch", "x-unknown"]


@pytest.mark.parametrize("coding", REFUSED)
@pytest.mark.parametrize("body", [b"import torch\n", b"import torch\xff\n", b"x-\xff\n", b""])
def test_a_coding_outside_the_safe_set_is_refused_at_the_cookie(coding, body):
    data = f"#!/usr/bin/env python\n# -*- coding: {coding} -*-\n".encode() + body
    with pytest.raises(Unreadable) as raised:
        decode_source(data)
    assert raised.value.message.startswith(f"declares the coding {coding}, which dsconfig does not decode; ")
    assert (raised.value.line, raised.value.column) == (2, 15)


def test_the_safe_set_is_what_codecs_knows_and_its_aliases_are_honoured():
    for name in SAFE_CODINGS:
        assert codecs.lookup(name).name == name  # normalised names: an alias maps onto one of them
    for alias in ("latin-1", "latin1", "iso-8859-15", "cp1252", "sjis", "euc-jp", "gb2312", "gb18030", "big5",
                  "euc-kr", "koi8-r", "koi8-u", "utf8", "UTF-8", "ascii", "cp936"):
        assert codecs.lookup(alias).name in SAFE_CODINGS, alias


@pytest.mark.parametrize("coding, text", [
    ("latin-1", "x = 'caf\xe9'\n"), ("cp1252", "x = '\u20ac'\n"), ("shift_jis", "x = '\u65e5\u672c'\n"),
    ("euc-jp", "x = '\u65e5\u672c'\n"), ("gbk", "x = '\u4e2d\u6587'\n"), ("gb18030", "x = '\u4e2d'\n"),
    ("big5", "x = '\u4e2d'\n"), ("euc-kr", "x = '\ud55c'\n"), ("koi8-r", "x = '\u0436'\n"),
    ("iso-8859-7", "x = '\u03b1'\n"), ("utf-8", "x = '\u00e9'\r\ny = 1\r"), ("ascii", "x = 1\n"),
])
def test_a_safe_coding_reads_as_python_reads_it(coding, text):
    data = f"# coding: {coding}\n{text}".encode(coding)
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)  # as tokenize.open decodes a file
    expected = data.decode(encoding).replace("\r\n", "\n").replace("\r", "\n")
    assert decode_source(data) == expected
    compile(decode_source(data), "x.py", "exec")  # and Python compiles the text


def test_a_bom_and_a_safe_cookie_and_bad_bytes_keep_their_messages():
    assert decode_source(b"\xef\xbb\xbf# coding: utf-8\nx = 1\n") == "# coding: utf-8\nx = 1\n"
    with pytest.raises(Unreadable, match="encoding problem: utf-8"):
        decode_source(b"\xef\xbb\xbf# coding: latin-1\nx = 1\n")  # Python refuses a BOM with another coding
    with pytest.raises(Unreadable) as raised:
        decode_source(b"# coding: shift_jis\nx = '\xff'\n")
    assert (raised.value.line, raised.value.column) == (2, 6) and "byte 0xff" in raised.value.message
    # a cookie on line 2 counts only after a blank or comment line, as in Python
    assert decode_source(b"x = 1\n# coding: punycode\n") == "x = 1\n# coding: punycode\n"


def test_punycode_is_refused_before_its_quadratic_decoder_runs():
    half = 128 * 1024
    text = "# coding: punycode\n#" + "x" * (half - 30) + "\n#" + "\xe9" * (half - 10) + "\n"
    data = text.encode("punycode")  # decoding this takes CPython seconds
    start = time.perf_counter()
    with pytest.raises(Unreadable, match="declares the coding punycode"):
        decode_source(data)
    assert time.perf_counter() - start < 0.5


@pytest.mark.parametrize("cookie, column", [("# coding: punycode\n", 11), ("# -*- coding: nosuch -*-\n", 15),
                                            ("# vim: set fileencoding=undefined :\n", 25)])
def test_named_script_is_ds000_at_the_cookie_and_walked_one_is_skipped(tmp_path, cookie, column):
    (tmp_path / "train.py").write_bytes(cookie.encode() + b"from torch.utils.data import DataLoader\n")
    (tmp_path / "ds_config.json").write_text(BROKEN_DS_CONFIG)
    named = lint(tmp_path / "train.py")
    assert _codes(named) == ["DS000"] and (named[0].line, named[0].column) == (1, column)
    assert "which dsconfig does not decode" in named[0].message
    walked = lint_folder(tmp_path)
    assert "DS201" in _codes(walked) and not [f for f in walked if f.file.endswith("train.py")]
    assert not _crashes([tmp_path / "train.py", tmp_path / "ds_config.json"])


# -- YAML 0x / 0b / 0o integers ---------------------------------------------------------------------------

TOKENS = ["0x10", "0b101", "0o17", "0x", "0b2", "0b", "0o", "+0x1f", "-0b11", "0x1_0", "0b_1", "017", "0_17", "09",
          "0x1g", "0b1.5", "190:20:30", "0x1:2", HUGE_HEX, "-0b" + "1" * 20000, "0" + "7" * 6000]


@pytest.mark.parametrize("token", TOKENS, ids=lambda t: t[:12])
@pytest.mark.parametrize("fast", [True, False])
def test_yaml_integers_read_as_safe_load_reads_them(token, fast):
    key = f"{token}: key\n" if len(token) < 1000 else f"? {token}\n: key\n"  # a simple key is at most 1024 long
    text = f"compute_environment: LOCAL_MACHINE\nnum_processes: {token}\nlist: [{token}, 1]\n{key}"
    doc = YamlDocument("x.yaml", text, fast=fast)
    assert doc.loaded and doc.value == yaml.safe_load(text)


@pytest.mark.parametrize("text, where", [
    ("a: 1\nnum_processes: 0x_\n", (2, 16)), ("a: 1\nb: [1, !!int 0b2]\n", (2, 8)), ("a:\n  b: !!int 0x\n", (2, 6)),
    ("a: 2001-13-45\n", (1, 4)), ("a: !!float abc\n", (1, 4)), ("a: !!int ''\n", (1, 4)),
])
def test_where_safe_load_raises_the_error_is_at_the_value(text, where):
    with pytest.raises(Exception) as raised:
        yaml.safe_load(text)
    assert not isinstance(raised.value, yaml.YAMLError)  # a constructor's own error: no mark of PyYAML's
    for fast in (True, False):
        doc = YamlDocument("x.yaml", text, fast=fast)
        assert not doc.loaded and doc.position(doc.load_error.offset) == where
        assert type(raised.value).__name__ in doc.load_error.message


ACCELERATE_HEAD = "compute_environment: LOCAL_MACHINE\ndistributed_type: {kind}\nnum_processes: 2\n"


@pytest.mark.parametrize("kind", ["DEEPSPEED", "FSDP", "MULTI_GPU", "NO"])
@pytest.mark.parametrize("key", ["num_processes", "num_machines", "machine_rank", "main_process_port", "gpu_ids",
                                 "mixed_precision", "compute_environment", "deepspeed_config", "fsdp_config"])
@pytest.mark.parametrize("token", ["0x10", "0b101", "0o17", "0x", "0b2", HUGE_HEX], ids=lambda t: t[:6])
def test_accelerate_yaml_integers_are_findings_not_crashes(tmp_path, kind, key, token):
    settings = {"compute_environment": "LOCAL_MACHINE", "distributed_type": kind, "num_processes": "2",
                "num_machines": "1", key: token}
    if kind == "DEEPSPEED" and key != "deepspeed_config":
        settings["deepspeed_config"] = f"\n  zero_stage: {token}\n  gradient_accumulation_steps: {token}"
    if kind == "FSDP" and key != "fsdp_config":
        settings["fsdp_config"] = f"\n  fsdp_min_num_params: {token}\n  fsdp_reshard_after_forward: {token}"
    path = tmp_path / "accelerate_config.yaml"
    path.write_text("".join(f"{name}: {value}\n" for name, value in settings.items()))
    (tmp_path / "ds_config.json").write_text(BROKEN_DS_CONFIG)
    assert not _crashes([path], world_sizes=(1, 2, 16))
    assert "DS201" in _codes(lint_folder(tmp_path))  # the walk goes on to the other file


def test_a_huge_num_processes_fails_the_launch_as_str_fails_in_accelerate(tmp_path):
    path = tmp_path / "accelerate_config.yaml"
    path.write_text(f"compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\nnum_processes: {HUGE_HEX}\n")
    with pytest.raises(ValueError) as raised:  # what `accelerate launch` evaluates: str(args.num_processes)
        str(yaml.safe_load(path.read_text())["num_processes"])
    found = [f for f in lint(path) if f.code == "ACC019"]
    assert len(found) == 1 and (found[0].line, found[0].column) == (3, 16)
    assert str(raised.value).split(";")[0] in found[0].message


@pytest.mark.parametrize("text", [
    "train:\n  batch_size: {H}\n  gradient_accumulation_steps: 2\n  global_batch_size: 64\n",
    "train:\n  batch_size: 4\n  gradient_accumulation_steps: {H}\n  global_batch_size: 64\n",
    "train:\n  per_device_train_batch_size: {H}\n  global_batch_size: 64\n",
    "batch_size: -{H}\n", "{H}: 1\nbatch_size: 4\n", "batch_size: 0b2\nbs: 0x\neval_bs: 0o17\n",
])
def test_training_yaml_integers_are_findings_not_crashes(tmp_path, text):
    path = tmp_path / "train.yaml"
    path.write_text(text.format(H=HUGE_HEX))
    for fields in ({}, {"world_sizes": (2, 3)}, {"world_sizes": (2,), "dataset_size": 100, "batchnorm": True}):
        assert not _crashes([path], **fields)
    if "batch_size: {H}" in text:
        found = [f for f in lint(path) if f.code == "DS006"]
        assert found and "4817-digit number" in found[0].message and found[0].line == 2


@pytest.mark.parametrize("text", [
    ACCELERATE_HEAD.format(kind="DEEPSPEED") + "? {H}\n: {{a: 1}}\n",
    ACCELERATE_HEAD.format(kind="DEEPSPEED") + "deepspeed_config:\n  zero_stage: 2\n  ? {H}\n  : 1\n",
    ACCELERATE_HEAD.format(kind="FSDP") + "fsdp_config:\n  ? {H}\n  : {{a: 1}}\n",
    "batch_size: 4\n? {H}\n: {{a: 1}}\nbs:\n  ? {H}\n  : 3\n",
])
def test_an_integer_key_too_long_for_str_reads_as_safe_load_reads_it(tmp_path, text):
    text = text.format(H=HUGE_HEX)  # an explicit `?` key: a plain one stops at 1,024 characters
    for fast in (True, False):
        doc = YamlDocument("x.yaml", text, fast=fast)
        assert doc.loaded and doc.value == yaml.safe_load(text)
    path = tmp_path / ("train.yaml" if text.startswith("batch_size") else "accelerate_config.yaml")
    path.write_text(text)
    assert not _crashes([path], world_sizes=(2,), dataset_size=100)
    assert all(f.line >= 1 for f in lint(path))


# -- YAML !!binary keys ------------------------------------------------------------------------------------

BINARY_KEYS = ["? !!binary aGVsbG8=\n: {a: 1}", "!!binary aGk=: {x: 1}", "!!binary aGk=: 1", "!!binary aGk=: [1, 2]"]


def _nested(key: str, indent: str) -> str:
    return "\n".join(indent + line for line in key.split("\n")) + "\n"


@pytest.mark.parametrize("key", BINARY_KEYS)
@pytest.mark.parametrize("where", ["top", "deepspeed_config", "fsdp_config", "dynamo_config"])
@pytest.mark.parametrize("kind", ["DEEPSPEED", "FSDP"])
def test_binary_keys_are_bytes_keys_as_safe_load_reads_them(tmp_path, key, where, kind):
    text = ACCELERATE_HEAD.format(kind=kind) + (key + "\n" if where == "top" else f"{where}:\n" + _nested(key, "  "))
    expected = yaml.safe_load(text)
    assert any(isinstance(k, bytes) for part in (expected, expected.get(where) or {}) for k in part)
    for fast in (True, False):
        doc = YamlDocument("accelerate_config.yaml", text, fast=fast)
        assert doc.loaded and doc.value == expected
    path = tmp_path / "accelerate_config.yaml"
    path.write_text(text)
    assert not _crashes([path], world_sizes=(2,))
    assert lint(path)  # Accelerate refuses a key that is no text: a finding says so


@pytest.mark.parametrize("key", BINARY_KEYS)
def test_binary_keys_in_a_training_yaml(tmp_path, key):
    path = tmp_path / "train.yaml"
    path.write_text("train:\n  batch_size: 4\n" + _nested(key, "  ") + key + "\n")
    assert YamlDocument(str(path), path.read_text()).value == yaml.safe_load(path.read_text())
    assert not _crashes([path], world_sizes=(2,), dataset_size=100)


# -- TOML integers past the int-string limit ---------------------------------------------------------------

BIG = "1" + "0" * 5000


@pytest.mark.parametrize("text, where", [
    (f"title = 'x'\n[train]\nlr = 0.1\nbatch_size = {BIG}\n", (4, 14)),
    (f"[train]\ns = \"\"\"\n{BIG}\n\"\"\"\nn = [\n  1,\n  {BIG[:10]}_{BIG[10:]},\n]\n", (7, 3)),
    (f"a = 1\r\n[t]\r\nc = {{x = [1, -{BIG}]}}\r\n", (3, 14)),
    (f"# {BIG}\nk = '{BIG}'\nbatch_size = +{BIG}\n", (3, 14)),
])
def test_a_toml_integer_past_the_limit_is_a_parse_error_at_it(tmp_path, text, where):
    with pytest.raises(ValueError) as raised:
        tomllib.loads(text)
    assert not isinstance(raised.value, tomllib.TOMLDecodeError)  # what TomlDocument used to let through
    doc = TomlDocument("train.toml", text)
    assert not doc.loaded and doc.position(doc.load_error.offset) == where
    path = tmp_path / "train.toml"
    path.write_bytes(text.encode())
    found = lint(path)
    assert _codes(found) == ["DS000"] and (found[0].line, found[0].column) == where
    assert found[0].message.startswith("not valid TOML: tomllib raises ValueError: Exceeds the limit (4300 digits)")
    (tmp_path / "ds_config.json").write_text(BROKEN_DS_CONFIG)
    assert "DS201" in _codes(lint_folder(tmp_path))


def test_a_toml_hex_integer_past_the_limit_reads_as_tomllib_reads_it(tmp_path):
    text = f"[train]\nbatch_size = {HUGE_HEX}\ngradient_accumulation_steps = 0o{'7' * 6000}\n"
    assert TomlDocument("train.toml", text).value == tomllib.loads(text)
    path = tmp_path / "train.toml"
    path.write_text(text)
    assert not _crashes([path], world_sizes=(2,), dataset_size=100)
    found = [f for f in lint(path) if f.code == "DS006"]
    assert len(found) == 1 and "4817-digit number" in found[0].message and found[0].line == 2


# -- values too long to print ------------------------------------------------------------------------------

def test_int_text_and_digits_agree_with_str_without_the_limit():
    numbers = [0, 7, -7, 10 ** 17, 10 ** 18 - 1, 10 ** 18, 10 ** 4299, 10 ** 4300 - 1, 10 ** 4300, 10 ** 4300 + 1,
               int(HUGE_HEX, 16), -int(HUGE_HEX, 16), 2 ** 200_000, 10 ** 20_000 - 1, 10 ** 20_000]
    limit = sys.get_int_max_str_digits()
    try:
        sys.set_int_max_str_digits(0)
        written = [str(n) for n in numbers]
    finally:
        sys.set_int_max_str_digits(limit)
    for number, text in zip(numbers, written):
        assert digits(number) == len(text.lstrip("-"))
        if len(text.lstrip("-")) <= limit:
            assert printable(number) and int_text(number) == text
        else:
            assert not printable(number)
            assert int_text(number) == f"a {'negative ' if number < 0 else ''}{len(text.lstrip('-'))}-digit number"


# -- training arguments: a YAML alias chain ---------------------------------------------------------------

def _chain(levels: int, last: str) -> str:
    lines = ["z0: &l0 [1, 2]"] + [f"z{i}: &l{i} {{a: *l{i - 1}, b: *l{i - 1}}}" for i in range(1, levels + 1)]
    return "\n".join(lines + [last]) + "\n"


def test_an_alias_chain_as_a_batch_size_is_a_short_message_at_once(tmp_path):
    import dsconfig
    (tmp_path / "ds_config.json").write_text('{"train_batch_size": "auto"}')
    (tmp_path / "args.yaml").write_text(_chain(25, "per_device_train_batch_size: *l25"))
    start = time.perf_counter()
    with pytest.raises(ValueError) as raised:
        dsconfig.check(tmp_path / "ds_config.json", training_args=tmp_path / "args.yaml")
    assert time.perf_counter() - start < 10
    message = str(raised.value)
    assert 'per_device_train_batch_size must be an integer, not {"a": {"a": ' in message and len(message) < 600
    assert "more than 100,000 values once YAML aliases are expanded" in message


def test_an_alias_bomb_elsewhere_in_the_training_arguments_is_refused(tmp_path):
    import dsconfig
    (tmp_path / "ds_config.json").write_text('{"train_batch_size": "auto"}')
    (tmp_path / "args.yaml").write_text(_chain(25, "per_device_train_batch_size: 4\nextra: *l25"))
    with pytest.raises(ValueError, match="more than 100,000 values once YAML aliases are expanded"):
        dsconfig.check(tmp_path / "ds_config.json", training_args=tmp_path / "args.yaml")
    (tmp_path / "args.yaml").write_text(_chain(10, "per_device_train_batch_size: 4\nextra: *l10"))  # 4,000 values
    assert dsconfig.check(tmp_path / "ds_config.json", training_args=tmp_path / "args.yaml") is not None


@pytest.mark.parametrize("text, says", [
    (f"per_device_train_batch_size: {HUGE_HEX}\n", "per_device_train_batch_size is a 4817-digit number"),
    (f"per_device_train_batch_size: -{HUGE_HEX}\n", "not a negative 4817-digit number"),
    (f"warmup_steps: -{HUGE_HEX}\n", "warmup_steps must be >= 0, not a negative 4817-digit number"),
    (f"max_steps: {HUGE_HEX}\nnum_train_epochs: {HUGE_HEX}\n", "max_steps is a 4817-digit number"),
    (f"max_steps: -1\nnum_train_epochs: {HUGE_HEX}\n", "num_train_epochs is a 4817-digit number"),
])
def test_training_arguments_past_the_int_string_limit(tmp_path, text, says):
    import dsconfig
    (tmp_path / "ds_config.json").write_text('{"train_batch_size": "auto"}')
    (tmp_path / "args.yaml").write_text(text)
    with pytest.raises(ValueError, match=says):
        dsconfig.check(tmp_path / "ds_config.json", training_args=tmp_path / "args.yaml")


_HEAD_LINES = st.sampled_from([b"", b"#!/usr/bin/env python", b"# -*- coding: latin-1 -*-", b"# coding=utf-8",
                               b"# vim: set fileencoding=cp1252 :", b"x = 1", b"  ", b"# caf\xc3\xa9", b"# caf\xe9",
                               b"\xef\xbb\xbf", b"\xef\xbb\xbfx = 1", b"s = '\xe6\x97\xa5'", b"\r", b"# coding: utf-8\r"])


@given(st.lists(_HEAD_LINES, min_size=0, max_size=4), st.sampled_from([b"\n", b"\r\n"]))
@settings(max_examples=400, deadline=None)
def test_the_utf8_shortcut_reads_as_python_reads(lines, newline):
    """decode_source skips tokenize.detect_encoding for ASCII first lines with no cookie: the text, or the refusal,
    is what Python's own reading gives (tokenize.detect_encoding, then the decode) on every composed head."""
    data = newline.join(lines) + newline + b"y = 2\n"
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        expected = data.decode(encoding).replace("\r\n", "\n").replace("\r", "\n")
    except (SyntaxError, UnicodeDecodeError, LookupError):
        expected = None
    try:
        ours = decode_source(data)
    except Unreadable:
        ours = None
    if expected is not None and codecs.lookup(encoding).name in SAFE_CODINGS:
        assert ours == expected
    else:
        assert ours is None
