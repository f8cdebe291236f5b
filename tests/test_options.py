"""`dsconfig lint` without click (dsconfig/cli.py, dsconfig/options.py): the fast parse gives click's own
parameters or steps aside, and a run started either way prints the same bytes and exits the same."""

from __future__ import annotations

import os
import subprocess
import sys

import click
import pytest
from hypothesis import given, settings, strategies as st

from dsconfig.commands.lint_cli import lint as lint_command
from dsconfig.commands.lint_options import OPTIONS, PATHS
from dsconfig.options import parse
from tests.conftest import ROOT


def _clicks(args: list[str]):
    """click's parameters for `dsconfig lint ARGS`, or None when click refuses the command line."""
    try:
        return lint_command.make_context("lint", list(args)).params
    except click.exceptions.Exit:  # --help
        return None
    except click.UsageError:
        return None


FLAGS = [flag for option in OPTIONS for flag in option.flags]
VALUES = ["8", "0", "1,2", "x", "", "-", "-o", "deepspeed", "hf-trainer", "json", "sarif", "always", "warning",
          "hf", "accelerate", "07", "+3", "٣", "2147483648", "ds.json", "folder", "DS2", "/a=global", "a b", "--"]


@settings(max_examples=1500, deadline=None)
@given(words=st.lists(st.one_of(st.sampled_from(FLAGS), st.sampled_from(VALUES),
                                 st.sampled_from(["-h", "--help", "--nope", "-x", "--target=json", "--fix=1",
                                                  "--gpus=2", "--format=", "ds_config.json"]),
                                 st.builds(lambda flag, value: f"{flag}={value}", st.sampled_from(FLAGS),
                                           st.sampled_from(VALUES))), max_size=8))
def test_the_fast_parse_gives_clicks_parameters_or_steps_aside(words, tmp_path_factory):
    folder = tmp_path_factory.getbasetemp()
    (folder / "folder").mkdir(exist_ok=True)
    cwd = os.getcwd()
    os.chdir(folder)  # `folder` is a folder: click refuses it for --config and --training-args
    try:
        ours = parse(PATHS, OPTIONS, words, "dsconfig")
        if ours is not None:
            assert ours == _clicks(words), words
    finally:
        os.chdir(cwd)


@pytest.mark.parametrize("args", [
    [], ["."], ["ds_config.json"], ["a.json", "b.yaml", "--world-size", "8"], ["--gpus", "4", "--nodes", "2", "."],
    ["--format", "json", "--show-info", "."], ["--format=sarif", "-o", "out.sarif", "."], ["--select", "DS2",
    "--ignore", "DS202", "--exclude", "tests/", "."], ["--no-respect-gitignore", "--no-cache", "--exit-zero", "x"],
    ["--fix", "--unsafe-fixes", "--batchnorm", "--batch-key", "/a=global", "--", "-weird.json"],
])
def test_the_command_lines_users_give_are_read_without_click(args):
    assert parse(PATHS, OPTIONS, args, "dsconfig") == _clicks(args)


@pytest.mark.parametrize("args", [["-h"], ["--help"], ["--nope"], ["-o", "-"], ["--gpus", "0"], ["--target", "x"],
                                  ["--fix=yes"], ["--world-size"], ["-ofile"]])
def test_what_only_click_can_answer_is_left_to_it(args):
    assert parse(PATHS, OPTIONS, args, "dsconfig") is None


def _run(code: str, cwd) -> tuple[int, str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DSCONFIG_NO_CACHE": "1"}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=cwd, env=env)
    return result.returncode, result.stdout, result.stderr


@pytest.mark.parametrize("args", [
    ["ds_config.json"], ["ds_config.json", "--world-size", "4", "--format", "full", "--color", "always"],
    ["."], [".", "--format", "json", "--show-info"], ["ds_config.json", "--nodes", "2"],
    ["ds_config.json", "--world-size", "0"], ["ds_config.json", "--unsafe-fixes"], ["missing.json", "ds_config.json"],
    ["--select", "NOPE", "."], ["ds_config.json", "--diff"], ["ds_config.json", "--statistics", "--format", "sarif"],
], ids=lambda args: " ".join(args))
def test_a_run_without_click_prints_what_click_prints(args, tmp_path):
    (tmp_path / "ds_config.json").write_text('{"train_batch_size": 7.0, "zero_optimization": {"stage": 2}}\n')
    (tmp_path / "accelerate_config.yaml").write_text("distributed_type: DEEPSPEED\nnum_processes: 3\n"
                                                     "deepspeed_config:\n  deepspeed_config_file: ds_config.json\n")
    argv = ["dsconfig", "lint", *args]
    fast = _run(f"import sys; sys.argv = {argv!r}\nfrom dsconfig.cli import main\nmain()", tmp_path)
    with_click = _run(f"import sys; sys.argv = {argv!r}\nfrom dsconfig.commands.group import cli, run\n"
                      "run(cli, 'dsconfig')", tmp_path)
    assert fast == with_click


def test_a_reader_that_leaves_ends_both_runs_alike(tmp_path):
    """`dsconfig lint --diff . | head -c 10` over a long diff: click ends the run with status 1 and nothing on
    stderr when the pipe breaks, and so does the run without click (not an internal error)."""
    for index in range(400):
        (tmp_path / f"ds_config_{index}.json").write_text('{"train_batch_size": 8.0, "train_micro_batch_size_per_gpu": 8.0}')
    argv = ["dsconfig", "lint", "--diff", "."]
    ends = []
    for code in (f"import sys; sys.argv = {argv!r}\nfrom dsconfig.cli import main\nmain()",
                 f"import sys; sys.argv = {argv!r}\nfrom dsconfig.commands.group import cli, run\nrun(cli, 'dsconfig')"):
        env = {**os.environ, "PYTHONPATH": str(ROOT), "DSCONFIG_NO_CACHE": "1"}
        process = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   cwd=tmp_path, env=env)
        process.stdout.read(10)
        process.stdout.close()
        ends.append((process.wait(), process.stderr.read()))
        process.stderr.close()
    assert ends[0] == ends[1] == (1, b"")
