"""The concise line, then where it is: the line before, the line itself, carets under the value.

    examples/broken_ds_config.json:3:37: error DS201 [*] train_micro_batch_size_per_gpu is a float (32.0); ...
      |
    2 |   "train_batch_size": 64,
    3 |   "train_micro_batch_size_per_gpu": 32.0,
      |                                     ^~~~
      = help: replace `32.0` with `32` (safe fix)
      = note: at world size 4; fails in: parse (DeepSpeedConfig)

`help:` is the fix (or the did-you-mean of the message); the notes say at which world size the
finding holds, where DeepSpeed (or Accelerate) itself would fail, and where its evidence lies
(`= note: data.py:17:16: DataLoader(...) ...`, one line per Finding.related entry).
"""

from __future__ import annotations

import re

from .. import escape
from ..rules.files import FILE_TOO_LARGE, NOT_A_CONFIG, UNREADABLE_FILE
from .concise import COLORS, header_parts

PHASES = {
    "load": "load (reading the file)",
    "parse": "parse (DeepSpeedConfig)",
    "initialize": "initialize (deepspeed.initialize, the engine, the Trainer)",
    "launch": "launch (accelerate launch)",
    "step": "step (the first training step: forward, backward, optimizer step)",
}
_DID_YOU_MEAN = re.compile(r"did you mean (.+?)\?")


def _style(text: str, context, **style) -> str:
    if not context.color:
        return text
    from ..terminal import style as styled
    return styled(text, **style)


# Findings about a file dsconfig did not lint: it may be anything (a credentials file, a .env); its
# text is never shown.
_UNSHOWN = frozenset({NOT_A_CONFIG, FILE_TOO_LARGE, UNREADABLE_FILE})


def frame(finding, context) -> list[str]:
    text = context.texts.get(finding.file)
    if text is None or finding.rule in _UNSHOWN:
        return []
    lines = text.split("\n")
    if not 1 <= finding.line <= len(lines):
        return []
    shown = [n for n in (finding.line - 1, finding.line) if n >= 1]
    width = len(str(shown[-1]))
    gutter = _style(" " * width + " |", context, fg="blue", bold=True)
    out = [gutter]
    for number in shown:
        shown_line = escape.inline(lines[number - 1], keep_tabs=True)
        out.append(_style(f"{number:>{width}} |", context, fg="blue", bold=True) + (" " + shown_line
                                                                                    if shown_line else ""))
    source = lines[finding.line - 1]
    column = max(1, min(finding.column, len(source) + 1))
    extent = context.extents.get(id(finding))
    length = 1
    if extent is not None:
        start, end = extent
        length = max(1, min(end - start, len(source) - (column - 1)))
    # the carets go under the escaped text: `\x1b` is four columns wide
    lead = "".join("\t" if ch == "\t" else " " for ch in escape.characters(source[:column - 1], keep_tabs=True))
    marked = escape.characters(source[column - 1:column - 1 + length], keep_tabs=True)
    carets = "^" + "~" * (len(marked) - 1)
    out.append(gutter + " " + lead + _style(carets, context, fg=COLORS[finding.severity], bold=True))
    return out


def notes(finding, context, width: int) -> list[str]:
    pad = " " * width + " = "
    out = []
    info = context.fix(finding)
    if info is not None:
        if info.edit is None:
            help_text = info.description
        elif info.safe:
            help_text = f"{info.description} (safe fix: --fix)"
        else:
            help_text = f"{info.description} (unsafe fix: --fix --unsafe-fixes)"
        out.append(pad + _style("help", context, fg="green", bold=True) + ": " + escape.inline(help_text))
    else:
        match = _DID_YOU_MEAN.search(finding.message)
        if match:
            out.append(pad + _style("help", context, fg="green", bold=True)
                       + f": did you mean {escape.inline(match.group(1))}?")
    parts = []
    if finding.world_size is not None:
        parts.append(f"at world size {finding.world_size}")
    if finding.fails_in in PHASES:
        parts.append(f"fails in: {PHASES[finding.fails_in]}")
    if parts:
        out.append(pad + _style("note", context, bold=True) + ": " + "; ".join(parts))
    for file, line, column, note in finding.related:  # the evidence elsewhere (a script's DataLoader, its sampler)
        out.append(pad + _style("note", context, bold=True) + f": {escape.path(file)}:{line}:{column}: "
                   + escape.inline(note))
    return out


WIDTH = 100  # long messages (DS704 lists fifteen "auto" fills) wrap at this width, continued indented


def wrapped_header(finding, context) -> list[str]:
    """The concise line, its message wrapped at WIDTH columns (continuation lines indented by four)."""
    import textwrap

    lead, message = header_parts(finding, context)
    plain_lead = f"{escape.path(finding.file)}:{finding.line}:{finding.column}: {finding.severity} {finding.code}" \
                 + (" [*]" if context.fixable(finding) else "")
    if len(plain_lead) + 1 + len(message) <= WIDTH:
        return [f"{lead} {message}"]
    # wrap as if the lead were plain text of its printed width, then swap the styled lead back in
    lines = textwrap.wrap(f"{plain_lead} {message}", width=WIDTH, subsequent_indent="    ",
                          break_long_words=False, break_on_hyphens=False)
    if not lines[0].startswith(plain_lead):  # a path longer than the width: keep it whole on the first line
        return [f"{lead} {message}"]
    lines[0] = lead + lines[0][len(plain_lead):]
    return lines


def chunks(findings, context):
    """One block per finding, a blank line between blocks."""
    for index, finding in enumerate(findings):
        lines = wrapped_header(finding, context)
        source = frame(finding, context)
        lines.extend(source)
        width = len(str(finding.line)) if source else 0
        lines.extend(notes(finding, context, width))
        yield ("\n" if index else "") + "\n".join(lines) + "\n"
