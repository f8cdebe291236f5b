"""The result cache (dsconfig/cache.py): a rerun on an unchanged tree prints what the last run printed without
linting, and every change that could change the output makes a full run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from dsconfig import engine
from dsconfig.cli import cli

CONFIG = '{"train_batch_size": 8, "train_micro_batch_size_per_gpu": 3}\n'  # DS202 at world size 2
GOOD = '{"train_batch_size": 8, "train_micro_batch_size_per_gpu": 4}\n'  # the same size: only its time tells


def _age(folder: Path) -> None:
    """Everything made a minute ago: a run that looked at something modified a moment ago is not kept."""
    past = time.time() - 60
    for root, folders, files in os.walk(folder):
        for name in folders + files:
            os.utime(os.path.join(root, name), (past, past))
    os.utime(folder, (past, past))


@pytest.fixture
def project(tmp_path, monkeypatch):
    root = tmp_path / "project"
    (root / "configs").mkdir(parents=True)
    (root / "configs" / "ds_config.json").write_text(CONFIG, encoding="utf-8")
    (root / ".git").mkdir()
    _age(tmp_path)
    monkeypatch.chdir(root)
    monkeypatch.delenv("DSCONFIG_NO_CACHE", raising=False)
    monkeypatch.setenv("DSCONFIG_CACHE_DIR", str(tmp_path / "cache"))
    return root


class Counted:
    """engine.collect (the walk every full run starts with), counting the full runs."""

    def __init__(self, monkeypatch):
        self.runs = 0
        original = engine.collect

        def counted(*args, **kwargs):
            self.runs += 1
            return original(*args, **kwargs)
        monkeypatch.setattr(engine, "collect", counted)


def _lint(*args: str):
    result = CliRunner().invoke(cli, ["lint", *args], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_a_rerun_on_an_unchanged_tree_replays_without_linting(project, monkeypatch):
    counted = Counted(monkeypatch)
    first = _lint(".", "--world-size", "2")
    assert first[0] == 1 and "DS202" in first[1]
    assert _lint(".", "--world-size", "2") == first
    assert counted.runs == 1


@pytest.mark.parametrize("change", [
    "edit the config (same size)", "add a config", "remove the config", "add a .gitignore ignoring it",
    "add settings ignoring DS2", "add a pin", "another option",
])
def test_each_change_makes_a_full_run(project, monkeypatch, change):
    counted = Counted(monkeypatch)
    before = _lint(".", "--world-size", "2")
    config = project / "configs" / "ds_config.json"
    options = ["--world-size", "2"]
    if change == "edit the config (same size)":
        config.write_text(GOOD, encoding="utf-8")
    elif change == "add a config":
        (project / "configs" / "zero.json").write_text('{"train_batch_size": 7}\n', encoding="utf-8")
    elif change == "remove the config":
        config.unlink()
    elif change == "add a .gitignore ignoring it":
        (project / ".gitignore").write_text("configs/\n", encoding="utf-8")
    elif change == "add settings ignoring DS2":
        (project / "pyproject.toml").write_text('[tool.dsconfig]\nignore = ["DS2"]\n', encoding="utf-8")
    elif change == "add a pin":
        (project / "requirements.txt").write_text("deepspeed==0.14.0\n", encoding="utf-8")
    else:
        options = ["--world-size", "4"]
    after = _lint(".", *options)
    assert counted.runs == 2
    if change != "add a pin":  # an installed deepspeed wins over a pin: the output may stay the same
        assert after != before


def test_what_is_kept_is_a_whole_run_and_a_broken_entry_is_a_miss(project, monkeypatch, tmp_path):
    counted = Counted(monkeypatch)
    first = _lint(".", "--world-size", "2")
    entries = list((tmp_path / "cache").glob("lint-*.json"))
    assert len(entries) == 1
    stored = json.loads(entries[0].read_text(encoding="utf-8"))
    assert stored["status"] == 1 and "DS202" in "".join(stored["stdout"])
    assert any(path.endswith("ds_config.json") for path, _ in stored["observed"])
    entries[0].write_text("{not json", encoding="utf-8")
    assert _lint(".", "--world-size", "2") == first
    assert counted.runs == 2


def test_a_tree_changed_a_moment_ago_is_not_kept(project, monkeypatch, tmp_path):
    """A second change in the same clock tick would keep the file's time: such a run is not trusted later."""
    (project / "configs" / "ds_config.json").write_text(GOOD, encoding="utf-8")
    _lint(".")
    assert not list((tmp_path / "cache").glob("lint-*.json"))


@pytest.mark.parametrize("args, environment", [
    ([".", "--no-cache"], {}), ([".", "--fix"], {}), ([".", "-o", "out.txt"], {}), ([".", "--diff"], {}),
    (["."], {"DSCONFIG_NO_CACHE": "1"}),
])
def test_runs_that_write_or_opt_out_are_never_kept(project, monkeypatch, tmp_path, args, environment):
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    _lint(*args)
    _lint(*args)
    assert not (tmp_path / "cache").exists() or not list((tmp_path / "cache").glob("lint-*.json"))


def test_a_replay_in_a_fresh_process_imports_no_linting(project, tmp_path):
    """The real command twice: the same bytes and status, and the second never loads the engine."""
    environment = {**os.environ, "DSCONFIG_CACHE_DIR": str(tmp_path / "cache")}
    environment.pop("DSCONFIG_NO_CACHE", None)
    command = [sys.executable, "-X", "importtime", "-m", "dsconfig", "lint", ".", "--world-size", "2"]
    first = subprocess.run(command, capture_output=True, text=True, env=environment)
    second = subprocess.run(command, capture_output=True, text=True, env=environment)
    assert first.returncode == second.returncode == 1
    assert first.stdout == second.stdout and "DS202" in first.stdout
    strip = [line for line in first.stderr.splitlines() if not line.startswith("import time:")]
    assert strip == [line for line in second.stderr.splitlines() if not line.startswith("import time:")]
    assert "dsconfig.engine" in first.stderr and "dsconfig.engine" not in second.stderr
