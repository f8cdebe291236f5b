"""The `dsconfig` program. The commands are click's (dsconfig/commands/group.py), but click is not
imported for the command lines `dsconfig lint` is mostly given (paths and the options of its table,
dsconfig/commands/lint_options.py): importing click costs more than the rest of a single-file lint's
imports, and the fast path gives the same parameters (dsconfig.options.parse) and the same output.

Exit codes: 0 no error found, 1 at least one error finding, 2 usage or internal error
(dsconfig.program.guarded).
"""

from __future__ import annotations

import sys


def main() -> None:
    args = sys.argv[1:]
    launch: tuple[str, ...] = ()
    if args[:1] == ["lint"] and "--" in args:
        # `dsconfig lint [OPTIONS] -- deepspeed --num_gpus 4 train.py ...`: the launch about to run
        split = args.index("--")
        args, launch = args[:split], tuple(args[split + 1:])
    if args[:1] == ["lint"]:
        _lint_without_click(args[1:], launch)  # returns when click must read the command line
    from .commands.group import cli, run
    run(cli, "dsconfig", args, {"launch_command": launch})


def _lint_without_click(args: list[str], launch: tuple[str, ...] = ()) -> None:
    from . import terminal
    if not terminal.plain_text_streams():
        return
    from .commands.lint_options import OPTIONS, PATHS
    from .options import parse
    params = parse(PATHS, OPTIONS, args, "dsconfig")
    if params is None:
        return
    params["launch_command"] = launch
    from .commands.lint import run
    from .program import guarded
    guarded(lambda: run(params), usage_context=lambda: _lint_context(args))


def _lint_context(args: list[str]):
    """The click context `dsconfig lint ARGS` runs in: a usage error raised by the run shows its usage line."""
    from .commands.group import cli
    parent = cli.make_context("dsconfig", ["lint", *args])
    return cli.get_command(parent, "lint").make_context("lint", list(args), parent=parent)


def __getattr__(name: str):
    """The click group and its runner, where they used to live (`from dsconfig.cli import cli`)."""
    if name in ("cli", "run", "LazyGroup"):
        from .commands import group
        return getattr(group, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if __name__ == "__main__":
    main()
