"""The files git tracks in a work tree, read from its index (`.git/index`), as `git ls-files` lists them.

A `.gitignore` pattern does not apply to a tracked file: git keeps it, and so does a walk (a repository's
three DeepSpeed configs under an ignored `configs/` it added with `git add -f`). dsconfig reads the index
itself, through the reading boundary as project metadata, instead of running git: a subprocess would read
the user's git configuration and whatever it names.

Index format (git's Documentation/gitformat-index.txt): a 12-byte header ("DIRC", version 2, 3 or 4, the
entry count), then one entry per path: 40 bytes of stat data, the object name (20 bytes, or 32 in a SHA-256
repository), 2 bytes of flags (2 more with the extended flag, version 3 and later), then the path. Versions 2
and 3 end the path with 1 to 8 NUL bytes, padding the entry to a multiple of 8; version 4 writes the path as
"remove N bytes from the end of the previous path" (a varint) and the rest, ending with one NUL.
Anything else (a missing index, a `.git` file of a linked work tree, an unknown version, a short read) gives
None: then the walk applies the .gitignore files alone, as before.
"""

from __future__ import annotations

import os
import struct

from .files import MAX_BYTES

# An index lists every tracked path with about 70 bytes of overhead: 64 MiB covers some 600,000 files.
MAX_INDEX_BYTES = 256 * MAX_BYTES
_STAT_BYTES = 40
_EXTENDED = 0x4000


class Tracked:
    """The tracked paths of one work tree, relative to its root with "/" separators, and the folders
    that hold them (a folder `.gitignore` ignores is still entered for its tracked files)."""

    def __init__(self, root: str, paths: set[str]):
        self.root = root
        self.paths = paths
        self.folders = {path[:at] for path in paths for at in _slashes(path)}

    def relative(self, path: str) -> str | None:
        rel = os.path.relpath(os.path.abspath(path), self.root)
        if rel == os.curdir or rel.startswith(os.pardir + os.sep) or rel == os.pardir:
            return None
        return rel.replace(os.sep, "/")

    def holds(self, path: str, is_dir: bool) -> bool:
        """Whether git tracks the file, or (a folder) a file below it."""
        rel = self.relative(path)
        return rel is not None and (rel in self.folders if is_dir else rel in self.paths)


def _slashes(path: str):
    at = path.find("/")
    while at != -1:
        yield at
        at = path.find("/", at + 1)


def tracked(root: str) -> Tracked | None:
    """What git tracks in the work tree at `root` (the folder holding `.git`), or None when it cannot tell."""
    from .boundary import project_ceiling
    from .files import FileError, read_bytes
    index = os.path.join(root, ".git", "index")
    if not os.path.isfile(index) or not os.path.isdir(os.path.join(root, ".git")):
        return None
    try:
        data = read_bytes(index, MAX_INDEX_BYTES, metadata=project_ceiling(root))
    except FileError:
        return None
    paths = parse(data)
    return None if paths is None else Tracked(os.path.abspath(root), paths)


def parse(data: bytes) -> set[str] | None:
    """The paths an index file lists (stage entries of one path counted once), or None for what is no index."""
    if len(data) < 12 or data[:4] != b"DIRC":
        return None
    version, count = struct.unpack(">II", data[4:12])
    if version not in (2, 3, 4):
        return None
    for name_bytes in (20, 32):  # SHA-1, else SHA-256: the one whose entries read to the end
        paths = _entries(data, version, count, name_bytes)
        if paths is not None:
            return paths
    return None


def _entries(data: bytes, version: int, count: int, name_bytes: int) -> set[str] | None:
    paths: set[str] = set()
    at, previous = 12, b""
    fixed = _STAT_BYTES + name_bytes + 2
    try:
        for _ in range(count):
            start = at
            (flags,) = struct.unpack(">H", data[at + fixed - 2:at + fixed])
            at += fixed
            if version >= 3 and flags & _EXTENDED:
                at += 2
            if version == 4:
                strip, at = _varint(data, at)
                end = data.index(b"\0", at)
                if strip > len(previous):
                    return None
                name = previous[:len(previous) - strip] + data[at:end]
                at = end + 1
            else:
                end = data.index(b"\0", at)
                name = data[at:end]
                at = start + ((end - start) // 8 + 1) * 8  # NUL padding to a multiple of 8
                if data[end:at].strip(b"\0") or at > len(data):
                    return None
            if not name or at > len(data):
                return None
            previous = name
            paths.add(os.fsdecode(name))
    except (ValueError, struct.error, IndexError):
        return None
    # what follows the entries: extensions ("TREE", ...) whose signature starts with an uppercase letter,
    # then the checksum (the object name's size)
    rest = data[at:]
    if len(rest) < name_bytes or (len(rest) > name_bytes and not (65 <= rest[0] <= 90)):
        return None
    return paths


def _varint(data: bytes, at: int) -> tuple[int, int]:
    """git's offset varint (varint.c): 7 bits a byte, each continuation adding one."""
    byte = data[at]
    at += 1
    value = byte & 0x7F
    while byte & 0x80:
        byte = data[at]
        at += 1
        value = ((value + 1) << 7) | (byte & 0x7F)
    return value, at
