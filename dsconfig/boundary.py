"""Which files dsconfig may open: the paths it was asked to lint, never what a config merely names.

A config in a linted tree can name any path (`deepspeed_config_file: /proc/self/environ`,
`../../.env`) and a symbolic link in it can point anywhere. dsconfig opens such a file only when
its real path (every link resolved) lies under a path given on the command line, under the folder
of the YAML that names it, or under a path the user allowed (`--allow-read`, `allow-read`). It
never opens a special file (FIFO, socket, device, or anything under /proc, /sys or /dev), even
when allowed: a FIFO blocks forever, and /proc holds the environment.
"""

from __future__ import annotations

import os
import stat
from typing import Iterable, NamedTuple

SYSTEM_FOLDERS = ("/proc", "/sys", "/dev")


class Boundary(NamedTuple):
    roots: tuple[str, ...]  # real paths: a folder admits everything below it, a file itself

    @classmethod
    def of(cls, paths: Iterable[str]) -> Boundary:
        return cls(tuple(dict.fromkeys(os.path.realpath(path) for path in paths)))

    def __add__(self, other: Boundary) -> Boundary:
        return Boundary(tuple(dict.fromkeys(self.roots + other.roots)))

    def admits(self, path: str) -> bool:
        """Whether the file's real path is a root or lies below one."""
        return any(inside(os.path.realpath(path), root) for root in self.roots)


def inside(real: str, root: str) -> bool:
    """`real` is `root` or below it (both real, absolute paths)."""
    return real == root or real.startswith(root if root.endswith(os.sep) else root + os.sep)


def special(path: str) -> str | None:
    """Why the file must not be opened ("a FIFO", "under /proc"), or None for a regular file.
    Follows symbolic links; a path that cannot be examined says why."""
    real = os.path.realpath(path)
    for folder in SYSTEM_FOLDERS:
        if inside(real, folder):
            return f"under {folder}"
    from .files import file_kind, os_reason
    try:
        mode = os.stat(path).st_mode
    except OSError as error:
        return os_reason(path, error)
    return None if stat.S_ISREG(mode) else file_kind(mode) or "not a regular file"
