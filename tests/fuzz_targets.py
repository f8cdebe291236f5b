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
           b"train_batch_size", b"deepspeed_config_file", b"num_processes", b"distributed_type: DEEPSPEED",
           # names outside what was given, which no way in may open: the reading boundary's cases
           b"/proc/self/environ", b"../../../../etc/hostname", b"/etc/hostname", b"~/.netrc", b"${oc.env:HOME}",
           b"deepspeed_config_file: /etc/hostname\n", b'"fsdp_config": "/etc/hostname"', b"/dev/zero"]


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
    assert not result.crashed, result.crashed  # the CLI would report an internal error for the file
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
            again = engine.lint_files([path], options._replace(sources={os.path.realpath(path): outcome.text}))
            assert not again.crashed, again.crashed
    return findings


# -- the other commands, the API and the settings ----------------------------------------------------------------


class Crash(AssertionError):
    """A command crashed (an internal error) or broke a promise on the input `data`."""


def run_command(command, args: list[str], cwd: str) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of a dsconfig command run in this process as `dsconfig` runs it: in a reading
    scope, with click's errors as exit 2. An exception that escapes is a Crash (the CLI would print "internal
    error"), and so is an internal error a command reports itself."""
    import contextlib
    import io

    import click

    from dsconfig import boundary
    out, err = io.StringIO(), io.StringIO()
    previous = os.getcwd()
    os.chdir(cwd)
    try:
        with boundary.command_scope(), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                status = command.main(args, prog_name="dsconfig", standalone_mode=False)
                status = status if isinstance(status, int) else 0
            except SystemExit as exit_:
                status = exit_.code if isinstance(exit_.code, int) else 0
            except click.ClickException as error:
                error.show(file=err)
                status = error.exit_code
    except Exception as error:  # noqa: BLE001 - this is what the harness looks for
        raise Crash(f"{type(error).__name__}: {error}") from error
    finally:
        os.chdir(previous)
    stdout, stderr = out.getvalue(), err.getvalue()
    if status not in (0, 1, 2) or "internal error" in stderr:
        raise Crash(f"exit {status}: {stderr[-2000:]}")
    if "--format" in args and args[args.index("--format") + 1] == "json" and status != 2:
        check_rendered("json", stdout)
    else:
        _check_text(stdout)
    _check_text(stderr)
    return status, stdout, stderr


def _check_text(text: str) -> None:
    """Human output: UTF-8, no raw control characters, no CI command, no line a runner executes."""
    text.encode("utf-8")
    for line in text.split("\n"):
        assert not _RAW.search(line), line
        assert "##[" not in line and "##vso[" not in line, line
        assert not line.lstrip().startswith("::"), line


def _write(folder: str, name: str, data: bytes) -> str:
    path = os.path.join(folder, name)
    with open(path, "wb") as handle:
        handle.write(data)
    return path


EXPLAIN_NAMES = ("ds_config.json", "accelerate_config.yaml", "fsdp_config.yaml")


def check_explain(name: str, data: bytes, folder: str) -> None:
    """`dsconfig explain FILE` (and as JSON) on the input, beside a valid ds_config.json a YAML may name."""
    from dsconfig.explain.command import explain
    _write(folder, "base_ds_config.json", b'{"train_micro_batch_size_per_gpu": 4, "zero_optimization": {"stage": 2}}')
    _write(folder, name, data)
    run_command(explain, [name], folder)
    run_command(explain, [name, "--format", "json", "--world-size", "2"], folder)


def check_convert(name: str, data: bytes, folder: str) -> None:
    """`dsconfig convert FILE --to fsdp|deepspeed --stdout` on the input."""
    from dsconfig.convert.command import convert
    _write(folder, "base_ds_config.json", b'{"train_micro_batch_size_per_gpu": 4, "zero_optimization": {"stage": 3}}')
    _write(folder, name, data)
    to = "deepspeed" if name.endswith(".yaml") and b"FSDP" in data else "fsdp"
    run_command(convert, [name, "--to", to, "--stdout"], folder)


def check_api(data: bytes, folder: str) -> None:
    """`dsconfig.check` on the input as a dict (when it is JSON of one) and as a file: only the documented
    errors (TypeError, ValueError, OSError), never RuntimeError (an internal error)."""
    import dsconfig
    try:
        value = json.loads(data)
    except (ValueError, RecursionError):
        value = None
    targets = [value] if isinstance(value, dict) else []
    targets.append(_write(folder, "api_ds_config.json", data))
    for config in targets:
        try:
            dsconfig.check(config, world_size=[1, 2, 8])
        except (TypeError, ValueError, OSError):
            pass
        except RuntimeError as error:
            raise Crash(str(error)) from error


def check_settings(data: bytes, folder: str) -> None:
    """A `.dsconfig.toml` of the input: loaded, or one ConfigError line, never another exception."""
    from dsconfig import settings
    path = _write(folder, ".dsconfig.toml", data)
    try:
        settings.load(path)
    except settings.ConfigError as error:
        assert "\n" not in str(error), str(error)


# -- nothing outside what was asked: an audit hook on every file the process opens -----------------------------


class Watch:
    """Logs every file the fuzzing process opens outside the allowed places (the inputs' folder, the Python
    installation, dsconfig's own package): with `sys.addaudithook`, whatever way the code opens it."""

    def __init__(self, folder: str):
        import sys
        given = (folder, FOLDER, os.path.dirname(os.path.dirname(__file__)), sys.prefix, sys.base_prefix,
                 *[p for p in sys.path if os.path.isabs(p)])
        self.allowed = [os.path.realpath(p) for p in given if os.path.realpath(p) != "/"] + ["/dev/null"]
        self.outside: list[str] = []
        self.paused = False
        sys.addaudithook(self._hook)

    def _hook(self, event, args):
        if self.paused:
            return
        if event in ("open", "os.scandir", "os.listdir") and isinstance(args[0], (str, bytes)):
            real = os.path.realpath(os.fsdecode(args[0]))
            if not any(real == place or real.startswith(place.rstrip("/") + "/") for place in self.allowed):
                self.outside.append(real)
        elif event in ("socket.connect", "socket.getaddrinfo", "socket.bind"):
            self.outside.append(f"network: {event}")
