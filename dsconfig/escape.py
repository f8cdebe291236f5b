"""What dsconfig prints is escaped here, so that no file name and no config can write to a terminal or
steer a CI log, and every byte written is valid UTF-8.

* `characters`: control characters (C0, DEL, C1 such as U+009B, the terminal's one-byte CSI), line and
  paragraph separators, bidirectional overrides and isolates (which reorder what a reader sees) and
  lone surrogates (a JSON `"\\ud800"`, or a file name's undecodable byte: Python decodes b"\\xff" as
  "\\udcff") become Python-style escapes: `\\n`, `\\x1b`, `\\x9b`, `\\u202e`, `\\udcff`.
* `inline`, `line`, `lines`, `path`: the human formats, error lines and summaries. On top of `characters`,
  nothing they print can be a CI command: GitHub's runner runs any line that starts with `::` after
  leading white space, and any line holding `##[` (its legacy syntax; actions/runner,
  src/Runner.Common/ActionCommand.cs, TryParseV2 and TryParse); the Azure Pipelines agent any line
  holding `##vso[` (microsoft/azure-pipelines-agent, Command.cs, TryParse).
* `json_text`: JSON and SARIF; the same characters as `\\uXXXX` escapes, which parse back to the
  very same string.
* `workflow_data`, `workflow_property`: GitHub workflow commands, escaped as @actions/core does
  (packages/core/src/command.ts), so an annotation names the real file.
"""

from __future__ import annotations

import os
import re

# Patterns, compiled on first use (re caches them): a command starts in well under 100 ms, and most
# text holds none of these (str.isprintable is False for every one of them, so it is the fast path).
_UNSAFE = "[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff]"
_COMMAND = r"(?i)##(?=\[|vso\[)"
_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _python_escape(match: re.Match) -> str:
    char = match.group()
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def characters(text: str, keep_tabs: bool = False) -> str:
    """`text` with the characters above escaped (tabs kept with `keep_tabs`, for source lines)."""
    if text.isprintable():
        return text
    if keep_tabs and "\t" in text:
        return "\t".join(characters(part) for part in text.split("\t"))
    return re.sub(_UNSAFE, _python_escape, text)


def inline(text: str, keep_tabs: bool = False) -> str:
    """Text inside a line of a terminal or CI log (a message, a source line after its gutter):
    `characters`, and no `##[` or `##vso[`."""
    text = characters(text, keep_tabs)
    return re.sub(_COMMAND, "#\\\\x23", text) if "##" in text else text


def line(text: str) -> str:
    """A whole line (an error, a summary): `inline`, and it does not start with `::`."""
    text = inline(text)
    stripped = text.lstrip()
    if stripped.startswith("::"):
        at = len(text) - len(stripped)
        text = text[:at] + "\\x3a" + text[at + 1:]
    return text


def lines(text: str) -> str:
    """Several lines (a table, a plan, click's usage message): `line` on each."""
    return "\n".join(line(each) for each in text.split("\n"))


def path(name: str) -> str:
    """A file name that starts a line (`path:line:col: ...`): `inline`, with `./` before a name that
    would start with `::`, so that the line names the same file and is no command."""
    if name.lstrip().startswith(":"):
        name = "./" + name
    return inline(name)


def _json_escape(match: re.Match) -> str:
    char = match.group()
    return char if char < " " else f"\\u{ord(char):04x}"  # json.dumps escaped C0 (what is left is its layout)


def json_text(dumped: str) -> str:
    """The output of json.dumps(..., ensure_ascii=False), with what `characters` escapes (json.dumps
    already escapes C0) and CI commands written as `\\uXXXX`: JSON that parses to the same value and
    encodes to valid UTF-8. Those characters can only be inside strings, so an escape is always legal."""
    return re.sub(_COMMAND, "#\\\\u0023", re.sub(_UNSAFE, _json_escape, dumped))


def workflow_data(text: str) -> str:
    """A workflow command's message."""
    return characters(text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A"))


def workflow_property(text: str) -> str:
    """A workflow command's property value (file=, title=). Only what GitHub unescapes is escaped,
    so the annotation lands on the real file; a lone surrogate (a name that is not UTF-8, which no
    annotation can name) is written `\\udcff`, as output must be UTF-8."""
    escaped = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A").replace(":", "%3A")
    return re.sub("[\ud800-\udfff]", _python_escape, escaped.replace(",", "%2C"))


def os_bytes(name: str) -> bytes:
    """A file name's bytes as the system has them (the surrogates of undecodable bytes undone)."""
    try:
        return os.fsencode(name)
    except UnicodeEncodeError:  # a surrogate that no byte decodes to: keep it visible rather than fail
        return name.encode("utf-8", "surrogatepass")
