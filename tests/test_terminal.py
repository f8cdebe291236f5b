"""dsconfig.terminal writes what click.echo and click.style write (the lint fast path prints without click)."""

from __future__ import annotations

import io
import sys
from unittest import mock

import click
import pytest

from dsconfig import terminal


@pytest.mark.parametrize("fg", [None, "red", "yellow", "cyan", "blue", "green"])
@pytest.mark.parametrize("bold", [None, True, False])
def test_style_is_clicks(fg, bold):
    assert terminal.style("DS202 x", fg=fg, bold=bold) == click.style("DS202 x", fg=fg, bold=bold)


class _Stream(io.StringIO):
    def __init__(self, tty: bool):
        super().__init__()
        self.tty = tty

    def isatty(self):
        return self.tty


@pytest.mark.parametrize("message", ["", "plain", "a\033[31mred\033[0m b", "\033[1;2m", "x\033]8;;u\033\\y"])
@pytest.mark.parametrize("nl", [True, False])
@pytest.mark.parametrize("color", [None, True, False])
@pytest.mark.parametrize("tty", [True, False])
@pytest.mark.parametrize("err", [True, False])
def test_echo_writes_what_click_writes(message, nl, color, tty, err):
    written = []
    for echo in (terminal.echo, lambda *a, **k: click.echo(*a, **k)):
        stream = _Stream(tty)
        with mock.patch.object(sys, "stderr" if err else "stdout", stream):
            echo(message, err=err, nl=nl, color=color)
        written.append(stream.getvalue())
    assert written[0] == written[1]
