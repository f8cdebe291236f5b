"""The DeepSpeed releases dsconfig replays, and how version numbers compare.

Stdlib only: this module is on the lint path.
"""

from __future__ import annotations

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
