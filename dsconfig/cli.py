"""The `dsconfig` command group. Each subcommand lives in its own module and is imported
only when it runs, so `dsconfig --help` and `dsconfig lint` pay for nothing else.

Exit codes: 0 no error found, 1 at least one error finding, 2 usage or internal error.
"""

from __future__ import annotations

import click

from . import __version__


class LazyGroup(click.Group):
    """Subcommands that live in their own packages are imported only when they run."""

    lazy = {
        "lint": "dsconfig.commands.lint:lint",
        "estimate": "dsconfig.estimate.command:estimate",
        "generate": "dsconfig.generate.command:generate",
        "rules": "dsconfig.commands.rules:rules",
        "rule": "dsconfig.commands.rules:rule",
    }

    def list_commands(self, ctx):
        return sorted(set(super().list_commands(ctx)) | set(self.lazy))

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


def main():
    cli(prog_name="dsconfig")


if __name__ == "__main__":
    main()
