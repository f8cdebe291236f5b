"""How GitHub's runner reads a line of a step's output (actions/runner, src/Runner.Common/ActionCommand.cs):
TryParseV2 for `::command properties::data`, TryParse for the legacy `##[command]data` anywhere in a
line. The tests use it to check that annotations land on the real file and that nothing else is a command."""

from __future__ import annotations

from typing import NamedTuple


class Command(NamedTuple):
    name: str
    properties: dict
    data: str


def _unescape(value: str, mappings) -> str:
    for token, replacement in mappings:  # the runner's order
        value = value.replace(replacement, token)
    return value


def unescape_property(value: str) -> str:
    return _unescape(value, (("\r", "%0D"), ("\n", "%0A"), (":", "%3A"), (",", "%2C"), ("%", "%25")))


def unescape_data(value: str) -> str:
    return _unescape(value, (("\r", "%0D"), ("\n", "%0A"), ("%", "%25")))


def parse(line: str) -> Command | None:
    """The command the runner sees in `line`, or None (any command name counts here)."""
    message = line.lstrip()
    if message.startswith("::"):
        end = message.find("::", 2)
        if end < 0:
            return None
        info = message[2:end]
        name, _, rest = info.partition(" ")
        properties = {}
        for item in filter(None, rest.strip().split(",")):
            key, equals, value = item.partition("=")
            if equals and key and value:
                properties[key] = unescape_property(value)
        return Command(name, properties, unescape_data(message[end + 2:]))
    start = line.find("##[")
    if start >= 0 and line.find("]", start) >= 0:
        return Command(line[start + 3:line.find("]", start)].split(" ")[0], {}, "")
    return None
