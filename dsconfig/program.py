"""How a command runs as a program: its exit status, and one line for whatever goes wrong (never a
traceback), whether click parsed the command line (dsconfig.commands.group.run) or not (dsconfig.cli)."""

from __future__ import annotations

import sys


def guarded(action, usage_context=None) -> None:
    """Run `action` as the program and exit with its status. Click's errors are printed escaped (they may quote a
    path); Ctrl-C is `Aborted!`, exit 1, as click says it; an exception that escapes a command is one line,
    `dsconfig: internal error: ...`, with exit status 2: never a traceback, and never 1, which CI reads as
    "findings". `usage_context`: where a usage error raised outside click gets its usage line from."""
    from . import boundary, escape
    from .terminal import echo

    try:
        with boundary.command_scope():
            result = action()
    except (KeyboardInterrupt, EOFError):  # outside click (click turns these into Abort, after a blank line)
        echo(err=True)
        echo("Aborted!", err=True)
        sys.exit(1)
    except Exception as error:  # noqa: BLE001 - any bug: one line, and a report asked for
        import errno
        if isinstance(error, OSError) and error.errno == errno.EPIPE:  # outside click, as click.main says it: the
            sys.stdout, sys.stderr = _Pacified(sys.stdout), _Pacified(sys.stderr)  # reader left (`--diff | head`)
            sys.exit(1)
        click = sys.modules.get("click")  # a click error means click was imported
        if click is not None and isinstance(error, click.ClickException):
            if isinstance(error, click.UsageError) and error.ctx is None and usage_context is not None:
                error.ctx = usage_context()
            import io
            shown = io.StringIO()
            error.show(file=shown)
            echo(escape.lines(shown.getvalue()), err=True, nl=False)
            sys.exit(error.exit_code)
        if click is not None and isinstance(error, click.Abort):  # Ctrl-C, as click reports it
            echo("Aborted!", err=True)
            sys.exit(1)
        try:
            echo(escape.line(f"dsconfig: internal error: {type(error).__name__}: {error} (please report this)"),
                 err=True)
        except OSError:  # stderr is gone too: the exit status still says it
            pass
        sys.exit(2)
    sys.exit(result if isinstance(result, int) else 0)


class _Pacified:
    """A stream whose flush ignores a broken pipe: the interpreter flushes stdout and stderr as it exits, and the
    reader is gone (click's _PacifyFlushWrapper)."""

    def __init__(self, wrapped):
        self.wrapped = wrapped

    def flush(self) -> None:
        try:
            self.wrapped.flush()
        except BrokenPipeError:
            pass

    def __getattr__(self, name: str):
        return getattr(self.wrapped, name)
