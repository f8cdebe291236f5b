"""What the fuzzers feed and what they check: tests/test_fuzz.py (hypothesis, in every test run) and
bench/fuzz.py (a long run) share it.

A run of the pipeline "crashes" when it raises: the CLI would print "internal error" and exit 2.
Every input must instead come out as findings with a known rule, a line and a column, render in
every output format as the CLI writes it (valid UTF-8, nothing a terminal or a CI runner acts on),
and survive `--fix` (whose result must lint again without raising).
"""

from __future__ import annotations

import json
import os
import random
import re

from dsconfig import engine, fix, jsonscan, report
from dsconfig import targets as target_values
from dsconfig.report import statistics
from dsconfig.rules import RULES
from dsconfig.yamldoc import YamlDocument

# Inputs live under a folder that does not exist, so nothing on disk is read by accident
# (an Accelerate YAML naming a deepspeed_config_file then gets its "missing file" finding).
FOLDER = os.path.join(os.sep, "nonexistent-dsconfig-fuzz")
# The last name holds what a file name can hold on Linux and must never reach a terminal or CI log raw:
# a newline and a forged workflow command, an escape sequence, a bidi override, an undecodable byte.
NAMES = ("ds_config.json", "accelerate_config.yaml", "train.json", "notes.yaml", "zero3.json",
         "x\n::error::\x1b[31m\u202e\udcffds_config.json")
TARGETS = (None, "deepspeed", "hf-trainer", "accelerate", "lightning")


def seeds() -> list[tuple[str, bytes]]:
    """Real configs to mutate: every rule example, the project's corpus fixtures, and the shared
    corpus (../shared/corpus) when it is present (tests.conftest.corpus_files)."""
    from tests.conftest import corpus_files
    found: list[tuple[str, bytes]] = []
    for doc in RULES.values():
        for example in (doc.failing, doc.passing):
            for name, text in example.files:
                found.append((os.path.basename(name), text.encode("utf-8")))
    for path, _ in corpus_files():
        if path.is_file():
            found.append((path.name, path.read_bytes()))
    return found


# -- mutations --------------------------------------------------------------------------------------

_TOKENS = [b"{", b"}", b"[", b"]", b",", b":", b'"', b"'", b"\n", b"\r\n", b"#", b"//", b"/*", b"*/", b"'''",
           b"auto", b'"auto"', b"null", b"true", b"false", b"NaN", b"-Infinity", b"1e400", b"7.0", b"-1", b"0",
           b"9" * 40, b"\xef\xbb\xbf", b"\xff", b"\x00", b"\\u0000", b"\\ud800", b"&a", b"*a", b"!!python/name:x",
           b"<<: *a", b"---", b"...", b"- ", b"  ", b"\t", b"%YAML 1.1", b"stage", b"zero_optimization",
           b"train_batch_size", b"deepspeed_config_file", b"num_processes", b"distributed_type: DEEPSPEED"]


def mutate(data: bytes, rng: random.Random, steps: int) -> bytes:
    """Flip, insert, delete, duplicate and splice bytes and tokens; `steps` edits."""
    buffer = bytearray(data)
    for _ in range(steps):
        choice = rng.randrange(7)
        at = rng.randrange(len(buffer) + 1)
        if choice == 0 and buffer:  # flip a byte
            at = min(at, len(buffer) - 1)
            buffer[at] = rng.randrange(256)
        elif choice == 1:  # insert a token that matters to one of the readers
            buffer[at:at] = rng.choice(_TOKENS)
        elif choice == 2 and buffer:  # delete a run
            del buffer[at:at + rng.randrange(1, 16)]
        elif choice == 3 and buffer:  # duplicate a slice (duplicate keys, repeated members)
            end = min(len(buffer), at + rng.randrange(1, 64))
            buffer[at:at] = buffer[max(0, at - (end - at)):at] or buffer[at:end]
        elif choice == 4:  # truncate
            del buffer[at:]
        elif choice == 5:  # random bytes
            buffer[at:at] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 8)))
        else:  # swap a number for another
            buffer[at:at] = str(rng.choice([0, 1, 2, 3, 7, 8, 16, 1024, -4, 2 ** 63, 0.5, 7.0])).encode()
    return bytes(buffer)


# -- the properties -----------------------------------------------------------------------------------

# What may never be written raw to a terminal or a CI log: C0 controls but the newline (and the tab of
# a source line in `full`), DEL, C1 controls, bidi overrides and isolates, line separators.
_RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]")


def check_rendered(name: str, text: str) -> None:
    """The output of a format is what the CLI writes: valid UTF-8 (a lone surrogate is an error
    here, as on a UTF-8 stdout), JSON that parses, and no line a terminal or a CI runner would act on."""
    text.encode("utf-8")  # strict, as sys.stdout and -o encode
    if name in ("json", "sarif"):
        json.loads(text)
    for line in text.split("\n"):
        shown = line
        if name == "github":  # the file property stays the real name (escaped as GitHub unescapes it)
            assert not line or line.startswith(("::error ", "::warning ", "::notice ")), line
            shown = line.split("::", 2)[-1]
        elif name == "full":  # a source line keeps its tabs
            shown = line.replace("\t", " ")
        assert not _RAW.search(shown), (name, line)
        assert "##[" not in shown and "##vso[" not in shown, (name, line)
        assert name == "github" or not line.lstrip().startswith("::"), (name, line)

def check_scanners(data: bytes) -> None:
    """jsonscan raises only ScanError; YamlDocument never raises."""
    try:
        text = engine.decode(data)
    except UnicodeDecodeError:
        return
    try:
        jsonscan.scan(text)
    except jsonscan.ScanError:
        pass
    YamlDocument("fuzz.yaml", text)


def check_lint(name: str, data: bytes, target: str | None = None, world_sizes=None, with_fix: bool = True) -> list:
    """Lint `data` as the file `name`; assert the findings are well-formed and render everywhere."""
    path = os.path.join(FOLDER, name)
    options = engine.Options(target=target_values.BY_NAME[target] if target else None, world_sizes=world_sizes,
                             sources={os.path.realpath(path): data})
    result = engine.lint_files([path], options)
    findings, documents = result.findings, result.documents
    texts = {doc_path: doc.text for doc_path, doc in documents.items()}
    for finding in findings:
        assert RULES[finding.code] is finding.rule, finding
        assert finding.fails_in in finding.rule.fails_in, (finding, finding.rule.fails_in)  # the docs tell the truth
        assert finding.file is not None and finding.line >= 1 and finding.column >= 1, finding
        assert finding.severity in ("error", "warning", "info"), finding
        assert "\n" not in finding.message, finding  # one finding, one line
    context = report.Context(fixes=fix.describe(findings, documents), texts=texts,
                             extents=fix.extents(findings, documents))
    for name_ in report.FORMATS:
        check_rendered(name_, report.render(name_, findings, context))
    check_rendered("concise", statistics.render(findings, context) + report.summary(findings, 1, context))
    if with_fix:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return findings
        result = fix.run([path], options, keep=lambda finding: True, unsafe=True, stdin={path: text})
        for outcome in result.files.values():
            # the fixed text lints again without raising
            engine.lint_files([path], options._replace(sources={os.path.realpath(path): outcome.text}))
    return findings
