"""Hostile inputs (tests/hostile_cases.py), each in a fresh `dsconfig` process: the right exit code,
no traceback, one line on stderr, a message that names the file (line and column where one
exists), and output that is UTF-8 and holds nothing a terminal or a CI runner would act on. Time
and memory per case are measured by bench/hostile.py, not asserted here."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess

import pytest

from tests.fuzz_targets import check_rendered
from tests.hostile_cases import CASES, DSCONFIG, build, environment


def _run(spec, where: str):
    if spec.shell is not None:
        return subprocess.run(["bash", "-c", spec.shell], cwd=where, capture_output=True, timeout=120,
                              env=environment())
    stdin = open(os.path.join(where, spec.stdin), "rb") if spec.stdin else subprocess.DEVNULL
    try:
        return subprocess.run(spec.argv, cwd=where, stdin=stdin, capture_output=True, timeout=120,
                              env=environment())
    finally:
        if spec.stdin:
            stdin.close()


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_hostile_input(case, tmp_path):
    spec, where = build(case, str(tmp_path))
    if spec is None:
        pytest.skip(f"{case.name} cannot be built on this machine")
    result = _run(spec, where)
    stdout = result.stdout.decode("utf-8")  # strict: every byte dsconfig writes is UTF-8
    stderr = result.stderr.decode("utf-8")

    assert "Traceback" not in stderr and "Exception ignored" not in stderr, stderr
    # nothing a terminal or a CI runner acts on: the checks the fuzzers apply to every format
    shape = next((fmt for fmt in ("github", "full") if fmt in spec.argv), "concise")
    check_rendered(shape, stdout)
    check_rendered("concise", stderr)
    assert result.returncode == case.exit_code, (stdout[:2000], stderr)
    assert len(stderr.splitlines()) <= 1, stderr  # the summary line, or the one error line
    if not case.says:
        assert not stderr.strip(), stderr
        return
    said = stdout + stderr
    assert case.says in said, said[:3000]
    if result.returncode == 2:  # a one-line error that names the path it is about
        assert stderr.startswith("dsconfig"), stderr
        assert case.says in stderr
    if case.where is not None:
        assert any(line.startswith(case.where) for line in said.splitlines()), said[:3000]


def test_closed_stdout_keeps_the_exit_code(tmp_path):
    """A reader that stops early (`| head -1`) gets what was written; dsconfig still exits 1 on errors."""
    spec, where = build(next(case for case in CASES if case.name == "closed-stdout"), str(tmp_path))
    if spec is None:
        pytest.skip("needs bash and head")
    result = subprocess.run(["bash", "-c", spec.shell.replace("head -0", "head -1")], cwd=where,
                            capture_output=True, timeout=120, env=environment())
    assert result.returncode == 1
    assert result.stdout.decode().startswith("ds_config.json:1:")
    assert len(result.stdout.decode().splitlines()) == 1
    assert b"Traceback" not in result.stderr and b"Exception ignored" not in result.stderr


def test_closed_stdout_without_errors_exits_0(tmp_path):
    """Only notes were written when the reader left: the exit status says no error was found (click's
    own handling of a closed pipe would exit 1)."""
    if shutil.which("head") is None or shutil.which("bash") is None:
        pytest.skip("needs bash and head")
    body = ", ".join(f'"key_{i}": {i}' for i in range(3000))
    for i in range(20):
        (tmp_path / f"data_{i}.json").write_text("{" + body + "}")  # DS005 notes, a line each
    command = " ".join(shlex.quote(part) for part in DSCONFIG + ["lint", ".", "--no-config"])
    result = subprocess.run(["bash", "-c", f"set -o pipefail; {command} | head -0"], cwd=tmp_path,
                            capture_output=True, timeout=120, env=environment())
    assert result.returncode == 0, result.stderr
    assert b"Traceback" not in result.stderr and b"Exception ignored" not in result.stderr


def test_symlinked_config_is_linted_through_the_link(tmp_path):
    (tmp_path / "real.json").write_text('{"train_batch_size": 7.0}')
    os.symlink("real.json", tmp_path / "ds_config.json")
    result = subprocess.run([*DSCONFIG, "lint", "ds_config.json"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=120, env=environment())
    assert result.returncode == 1
    assert result.stdout.startswith("ds_config.json:1:")


def test_dangling_symlink_says_where_it_points(tmp_path):
    os.symlink("gone.json", tmp_path / "ds_config.json")
    result = subprocess.run([*DSCONFIG, "lint", "ds_config.json"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=120, env=environment())
    assert result.returncode == 2
    assert result.stderr.strip() == "dsconfig: error: ds_config.json: a symbolic link to gone.json, which does not exist"


def test_messages_never_expand_yaml_aliases(tmp_path):
    """Every Accelerate setting holding a 40-level alias chain (2^40 leaves when expanded): the
    messages quote a short prefix of the value, and the whole lint stays fast."""
    import time

    from dsconfig import engine
    from dsconfig.accelerate import schema
    from dsconfig.findings import MAX_MESSAGE
    from tests.hostile_cases import alias_chain

    places = [(None, key) for key in schema.fields(schema.CLUSTER)]
    places += [(section, key) for section in ("deepspeed_config", "fsdp_config") for key in schema.section_options(section)]
    path = tmp_path / "accelerate_config.yaml"
    start = time.perf_counter()
    for section, key in places:
        lines = alias_chain(40) + ["compute_environment: LOCAL_MACHINE", "distributed_type: DEEPSPEED"]
        lines += [f"{key}: *l40"] if section is None else [f"{section}:", f"  {key}: *l40"]
        path.write_text("\n".join(lines) + "\n")
        found = engine.lint_files([str(path)], engine.Options()).findings
        assert found and all(len(f.message) <= MAX_MESSAGE + 10 for f in found), (section, key)
        assert all(f.message.count("a'") + f.message.count('a"') < 100 for f in found), (section, key)
    assert time.perf_counter() - start < 60, "an alias chain is being expanded"


def test_brief_stops_where_it_writes():
    from dsconfig.values import brief, py_str, to_json

    def chain(levels):
        value = [1, 2]
        for _ in range(levels):
            value = {"a": value, "b": value}
        return value

    # written out, 60 levels are 2^60 leaves; the cut text is the first levels' keys
    assert brief(chain(60)) == ('{"a": ' * 20)[:120] + "..."
    assert py_str(chain(60), 50) == ("{'a': " * 9)[:50] + "..."
    assert brief(chain(2)) == to_json(chain(2)) and py_str(chain(3)) == str(chain(3))
    for value in ({"a": 1, "b": [1, 2.5, None, True]}, "text", 1e400, float("nan"), {1: 2}, [], {}):
        assert brief(value) == to_json(value)
        assert py_str(value) == str(value)
