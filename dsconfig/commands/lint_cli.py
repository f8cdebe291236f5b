"""The click command of `dsconfig lint`, built from its options table (dsconfig/commands/lint_options.py):
its help, and every command line the fast path leaves to click."""

from __future__ import annotations

import click

from ..options import click_command
from .lint_options import OPTIONS, PATHS


def _lint(**params):
    """Lint DeepSpeed and Accelerate config files (or every config below a folder, or matching a glob).

    Without PATHS, the current folder is linted. `-` reads standard input. After `--`, a launch command
    (`dsconfig lint -- deepspeed --num_gpus 4 train.py --deepspeed ds.json ...`): the configs it names are
    checked at its world size with its training arguments. With --fix, safe fixes are
    written back (stdin: the fixed text is printed). A path that is not there is reported at the end
    (exit 2) after the others are linted.
    """
    from .lint import run
    context = click.get_current_context()
    run(dict(context.params, launch_command=tuple((context.find_root().obj or {}).get("launch_command") or ())))


lint = click_command(PATHS, OPTIONS, _lint, name="lint")
