"""Writing lines and colours to the terminal as click does, without importing click (about a fifth of a
single-file lint's time): the lint command's fast path (dsconfig.cli) prints through these.

`echo` and `style` give the bytes click.echo and click.style give for the arguments dsconfig uses
(tests/test_terminal.py compares them): a text line and a newline, flushed; ANSI sequences stripped
when `color` is None and the stream is no terminal, or when `color` is False.
"""

from __future__ import annotations

import sys

_COLORS = {"black": 30, "red": 31, "green": 32, "yellow": 33, "blue": 34, "magenta": 35, "cyan": 36, "white": 37}
_RESET = "\033[0m"
_ANSI = None  # compiled on first use: most runs print no ANSI sequence to strip


def style(text: str, fg: str | None = None, bold: bool | None = None) -> str:
    """click.style(text, fg=..., bold=...): the colour, then bold, the text, and a reset."""
    bits = []
    if fg is not None:
        bits.append(f"\033[{_COLORS[fg]}m")
    if bold is not None:
        bits.append(f"\033[{1 if bold else 22}m")
    return "".join(bits) + text + _RESET


def echo(message: str = "", *, err: bool = False, nl: bool = True, color: bool | None = None) -> None:
    """click.echo(message, err=..., nl=..., color=...) for text."""
    stream = sys.stderr if err else sys.stdout
    if stream is None:
        return
    out = message + "\n" if nl else message
    if not out:
        stream.flush()
        return
    if "\033" in out and (not color if color is not None else not _isatty(stream)):
        global _ANSI
        if _ANSI is None:
            import re
            _ANSI = re.compile(r"\033\[[0-?]*[ -/]*[@-~]")
        out = _ANSI.sub("", out)
    stream.write(out)
    stream.flush()


def _isatty(stream) -> bool:
    try:
        return stream.isatty()
    except Exception:  # noqa: BLE001 - click's own test: a stream that cannot say is no terminal
        return False


def plain_text_streams() -> bool:
    """Whether standard output and error take any text as they are: click re-wraps a stream whose encoding is
    ASCII (PYTHONIOENCODING=ascii) to write UTF-8, so there the fast path leaves the run to click."""
    import codecs
    for stream in (sys.stdout, sys.stderr):
        encoding = getattr(stream, "encoding", None)
        if stream is None or not encoding:
            return False
        try:
            if codecs.lookup(encoding).name == "ascii":
                return False
        except LookupError:
            return False
    return True
