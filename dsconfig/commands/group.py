"""The `dsconfig` command group, in click. Each subcommand lives in its own module and is imported
only when it runs, so `dsconfig --help` and `dsconfig lint` pay for nothing else (and the common
`dsconfig lint` command lines do not start click at all: dsconfig.cli).

Exit codes: 0 no error found, 1 at least one error finding, 2 usage or internal error (`run`).
"""

from __future__ import annotations

import click

from .. import __version__


class LazyGroup(click.Group):
    """Subcommands that live in their own packages are imported only when they run."""

    lazy = {
        "lint": "dsconfig.commands.lint_cli:lint",
        "estimate": "dsconfig.estimate.command:estimate",
        "generate": "dsconfig.generate.command:generate",
        "convert": "dsconfig.convert.command:convert",
        "explain": "dsconfig.explain.command:explain",
        "rules": "dsconfig.commands.rules:rules",
        "rule": "dsconfig.commands.rules:rule",
    }

    def list_commands(self, ctx):
        return sorted(set(super().list_commands(ctx)) | set(self.lazy))

    def resolve_command(self, ctx, args):
        """A mistyped command gets a did-you-mean, as a mistyped option does."""
        name = args[0] if args else ""
        if name and not name.startswith("-") and self.get_command(ctx, name) is None:
            import difflib
            guess = difflib.get_close_matches(name, self.list_commands(ctx), n=1, cutoff=0.5)
            ctx.fail(f"No such command '{name}'." + (f" Did you mean '{guess[0]}'?" if guess else ""))
        return super().resolve_command(ctx, args)

    def invoke(self, ctx):
        """Every subcommand runs in a reading scope that admits nothing until it names its inputs
        (dsconfig.boundary.admit), whichever way it is started (`dsconfig`, click's test runner)."""
        from .. import boundary
        with boundary.command_scope():
            return super().invoke(ctx)

    def get_command(self, ctx, name):
        if name in self.lazy:
            import importlib
            module, attribute = self.lazy[name].split(":")
            return getattr(importlib.import_module(module), attribute)
        return super().get_command(ctx, name)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "-V", "--version", prog_name="dsconfig")
def cli():
    """Lint and generate DeepSpeed (ds_config.json) and Hugging Face Accelerate configs."""


def run(command: click.Command, prog_name: str, args: list[str] | None = None, obj: dict | None = None) -> None:
    """Run `command` as a program (dsconfig.program.guarded: click's errors escaped, any other one line).
    `args`: the command line (sys.argv's by default); `obj`: what the commands find in their context's obj
    (`lint` the launch command given after `--`)."""
    from ..program import guarded
    guarded(lambda: command.main(args=args, prog_name=prog_name, standalone_mode=False, obj=obj))
