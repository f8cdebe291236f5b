"""Hostile inputs (tests/hostile_cases.py), each in a fresh `dsconfig` process: the right exit code,
no traceback, one line on stderr, and a message that names the file (line and column where one
exists). Time and memory per case are measured by bench/hostile.py, not asserted here."""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.conftest import ROOT
from tests.hostile_cases import CASES, DSCONFIG, build

# `python -m dsconfig` in the case's folder: this checkout's package, not whichever one is installed.
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def _run(spec, where: str):
    if spec.shell is not None:
        return subprocess.run(["bash", "-c", spec.shell], cwd=where, capture_output=True, timeout=120, env=ENV)
    stdin = open(os.path.join(where, spec.stdin), "rb") if spec.stdin else subprocess.DEVNULL
    try:
        return subprocess.run(spec.argv, cwd=where, stdin=stdin, capture_output=True, timeout=120, env=ENV)
    finally:
        if spec.stdin:
            stdin.close()


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_hostile_input(case, tmp_path):
    spec, where = build(case, str(tmp_path))
    if spec is None:
        pytest.skip(f"{case.name} cannot be built on this machine")
    result = _run(spec, where)
    stdout = result.stdout.decode("utf-8", "replace")
    stderr = result.stderr.decode("utf-8", "replace")

    assert "Traceback" not in stderr and "Exception ignored" not in stderr, stderr
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
                            capture_output=True, timeout=120, env=ENV)
    assert result.returncode == 1
    assert result.stdout.decode().startswith("ds_config.json:1:")
    assert len(result.stdout.decode().splitlines()) == 1
    assert b"Traceback" not in result.stderr and b"Exception ignored" not in result.stderr


def test_symlinked_config_is_linted_through_the_link(tmp_path):
    (tmp_path / "real.json").write_text('{"train_batch_size": 7.0}')
    os.symlink("real.json", tmp_path / "ds_config.json")
    result = subprocess.run([*DSCONFIG, "lint", "ds_config.json"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=120, env=ENV)
    assert result.returncode == 1
    assert result.stdout.startswith("ds_config.json:1:")


def test_dangling_symlink_says_where_it_points(tmp_path):
    os.symlink("gone.json", tmp_path / "ds_config.json")
    result = subprocess.run([*DSCONFIG, "lint", "ds_config.json"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=120, env=ENV)
    assert result.returncode == 2
    assert result.stderr.strip() == "dsconfig: error: ds_config.json: a symbolic link to gone.json, which does not exist"
