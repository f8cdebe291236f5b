"""One reading boundary behind every command (dsconfig.boundary): every command of the CLI and the public API
is walked over the same hostile repository, as an attacker with a pull request would build it, and each run
is watched by a Python audit hook (tests/audited.py) that logs every file the process opens.

What must hold for every run: it ends (a FIFO is never waited on), with exit 0, 1 or 2 and no traceback;
no byte of the secret in the files outside the repository, in the environment or under /proc reaches any
output; and the process opens no file outside the repository, the Python installation and dsconfig's own
package. A command added to the CLI without a case here fails `test_every_command_is_walked`.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.boundary_cases import CASES, SECRET, allowed_places, build, forbidden
from tests.hostile_cases import environment

AUDITED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "audited.py")


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    return build(tmp_path_factory.mktemp("boundary"))



def _run(top, argv: list[str]) -> tuple[subprocess.CompletedProcess, list[str]]:
    log = top / f"audit-{os.getpid()}.log"
    (top / "tmp").mkdir(exist_ok=True)  # `dsconfig rule` lints its examples in a folder of its own there
    env = {**environment(), "DSCONFIG_TEST_SECRET": SECRET, "DSCONFIG_AUDIT_LOG": str(log), "NO_COLOR": "1",
           "TMPDIR": str(top / "tmp")}
    result = subprocess.run([sys.executable, AUDITED, *argv], cwd=top / "repo", capture_output=True, text=True,
                            env=env, timeout=120)
    return result, log.read_text(encoding="utf-8").splitlines()


@pytest.mark.parametrize("argv", [argv for _, argv in CASES], ids=[name for name, _ in CASES])
def test_no_command_reads_outside_what_it_was_given(hostile, argv):
    result, log = _run(hostile, argv)
    output = result.stdout + result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode in (0, 1, 2), output
    assert SECRET not in output, output
    assert not [line for line in log if line.startswith("network ")], log
    opened = [line[len("open "):] for line in log if line.startswith("open ")]
    refused = forbidden(opened, hostile, allowed_places(hostile))
    assert not refused, (refused, output)


def test_every_command_is_walked():
    """A new command must be added to CASES: it cannot open files another way unnoticed."""
    import click

    from dsconfig.cli import cli
    with click.Context(cli) as context:
        commands = set(cli.list_commands(context))
    walked = {argv[0] for _, argv in CASES if argv[0] != "--api"}
    assert commands == walked, commands ^ walked


def test_the_refusals_say_why(hostile):
    """Not a silent skip: what was not read is said, at the place that named it."""
    result, _ = _run(hostile, ["lint", "acc_outside.yaml", "acc_environ.yaml", "acc_link.yaml"])
    assert "acc_outside.yaml:5:" in result.stdout and "DS009" in result.stdout
    assert "acc_environ.yaml:5:" in result.stdout and "under /proc" in result.stdout
    result, _ = _run(hostile, ["explain", "acc_outside.yaml"])
    assert result.returncode == 2
    assert result.stderr.startswith("dsconfig: error: acc_outside.yaml:5:26: deepspeed_config_file "
                                    "../outside/secret.json:"), result.stderr
    result, _ = _run(hostile, ["convert", "acc_fifo.yaml", "--to", "fsdp", "--stdout"])
    assert result.returncode == 2 and "a FIFO" in result.stderr, result.stderr
    result, _ = _run(hostile, ["lint", "ds_config.json"])
    assert "`allow-read` is not honoured" in result.stderr
