"""One-line errors for a subcommand: `PROG: error: message` on stderr and exit status 2, for bad
input files and for usage errors (unknown option, bad choice) alike, standalone or in the group."""

from __future__ import annotations

import click


def one_line_errors(prog: str):
    """(InputError, Command class) for the subcommand `prog` ("dsconfig estimate", ...)."""

    class InputError(click.ClickException):
        exit_code = 2

        def show(self, file=None):
            from ..escape import line
            click.echo(line(f"{prog}: error: {self.format_message()}"), file=file, err=True)

    class OneLineErrors(click.Command):
        def parse_args(self, ctx, args):
            try:
                return super().parse_args(ctx, args)
            except click.UsageError as error:
                raise InputError(error.format_message()) from None

    return InputError, OneLineErrors
