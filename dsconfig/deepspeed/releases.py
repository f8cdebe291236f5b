"""The DeepSpeed releases dsconfig replays, and how version numbers compare.

Stdlib only: this module is on the lint path.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import TYPE_CHECKING

from .. import package_data

if TYPE_CHECKING:
    from pathlib import Path

RELEASES_FILE = "deepspeed-releases.json"

# Every release from 0.14.0 to 0.19.8, as published on PyPI.
SUPPORTED: tuple[str, ...] = (
    "0.14.0", "0.14.1", "0.14.2", "0.14.3", "0.14.4", "0.14.5",
    "0.15.0", "0.15.1", "0.15.2", "0.15.3", "0.15.4",
    "0.16.0", "0.16.1", "0.16.2", "0.16.3", "0.16.4", "0.16.5", "0.16.6", "0.16.7", "0.16.8", "0.16.9",
    "0.17.0", "0.17.1", "0.17.2", "0.17.3", "0.17.4", "0.17.5", "0.17.6",
    "0.18.0", "0.18.1", "0.18.2", "0.18.3", "0.18.4", "0.18.5", "0.18.6", "0.18.7", "0.18.8", "0.18.9",
    "0.19.0", "0.19.1", "0.19.2", "0.19.3", "0.19.4", "0.19.5", "0.19.6", "0.19.7", "0.19.8",
)
NEWEST = SUPPORTED[-1]


def key(version: str) -> tuple[int, ...]:
    """"0.16.9" -> (0, 16, 9); anything after the numbers (".dev0", "+cu121") is ignored."""
    parts = []
    for piece in version.split("+")[0].split("."):
        digits = ""
        for char in piece:
            if not char.isdigit():
                break
            digits += char
        if not digits:
            break
        parts.append(int(digits))
        if len(digits) < len(piece):
            break
    return tuple(parts)


class UnknownRelease(ValueError):
    pass


@lru_cache(maxsize=1)
def _data() -> dict:
    """schemas/deepspeed-releases.json (scripts/build_releases.py), found where deepspeed.schema.json is."""
    return package_data.schema_json(RELEASES_FILE)


def data_path(name: str = RELEASES_FILE) -> Path:
    """Installed wheels carry dsconfig/schemas; a source checkout keeps schemas/ at the top."""
    return package_data.schema_path(name)


def _variant(version: str) -> dict:
    data = _data()
    if version not in data["releases"]:
        raise UnknownRelease(version)
    return data["variants"][data["releases"][version]]


def facts(version: str) -> dict:
    """What `version`'s own DeepSpeedConfig answered to scripts/release_probe.py's probes."""
    return _variant(version)["facts"]


def patched(schema: dict, version: str) -> dict:
    """The newest release's schema turned into `version`'s (a deep copy; `schema` is left alone)."""
    schema = json.loads(json.dumps(schema))
    if version == NEWEST:
        return schema
    operations = _data()["operations"]
    for index in _variant(version)["patch"]:
        op, path, *value = operations[index]
        parent = schema
        for token in path[:-1]:
            parent = parent[token]
        if op == "set":
            parent[path[-1]] = value[0]
        else:
            del parent[path[-1]]
    return schema


def same_behaviour(versions) -> list[list[str]]:
    """`versions` grouped into runs of consecutive releases that share schema and facts."""
    data = _data()
    groups: list[list[str]] = []
    for version in versions:
        if groups and data["releases"][groups[-1][-1]] == data["releases"][version]:
            groups[-1].append(version)
        else:
            groups.append([version])
    return groups


def spans(versions) -> str:
    """"0.14.0 to 0.17.0, 0.18.3 to 0.19.8": runs of consecutive supported releases."""
    chosen = set(versions)
    runs: list[list[str]] = []
    for version in SUPPORTED:
        if version in chosen:
            if runs and SUPPORTED.index(runs[-1][-1]) == SUPPORTED.index(version) - 1:
                runs[-1].append(version)
            else:
                runs.append([version])
    return ", ".join(run[0] if len(run) == 1 else f"{run[0]} to {run[-1]}" for run in runs)


def having(fact: str, value) -> list[str]:
    """The supported releases whose fact `fact` equals `value`."""
    data = _data()
    return [v for v in SUPPORTED if data["variants"][data["releases"][v]]["facts"][fact] == value]
