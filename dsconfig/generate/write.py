"""Writing the generated files: all or nothing, atomically, never somewhere unexpected.

* Every destination is checked before anything is written: an existing file is refused unless
  `force` (the whole run writes nothing then), a folder, device, FIFO or socket in the way is
  refused (never replaced, even with `force`), and a symlink is followed only when it resolves
  inside the output folder (it is then written through, so the link stays); one that leads out
  of the folder is refused.
* Each file goes to a temporary file in the destination's own folder, is flushed to disk, gets its
  mode (an existing file's mode is kept; a new file gets 0o666, or 0o777 for scripts, less the
  umask) and is moved over the destination with os.replace: a reader sees the old or the new file,
  never half of one.
"""

from __future__ import annotations

import os
import stat
from typing import Iterable, NamedTuple

from ..files import not_replaceable


class WriteError(Exception):
    """A file cannot be written (exists, symlink out of the folder, permissions): one line for the user."""


class Destination(NamedTuple):
    name: str  # as the user sees it (output folder + file name)
    path: str  # where the bytes go (a symlink inside the folder resolved)
    mode: int | None  # the existing file's permission bits, or None for a new file


def _inside(path: str, folder: str) -> bool:
    try:
        return os.path.commonpath([path, folder]) == folder
    except ValueError:  # different drives (Windows)
        return False


def plan_destinations(output_dir: str, names: Iterable[str], force: bool) -> list[Destination]:
    """Check every destination; raise WriteError before anything is written."""
    if os.path.exists(output_dir) and not os.path.isdir(output_dir):
        raise WriteError(f"--output-dir {output_dir} is not a folder")
    root = os.path.realpath(output_dir)
    out = []
    for name in names:
        shown = os.path.join(output_dir, name) if output_dir not in ("", ".") else name
        path = os.path.join(output_dir, name)
        present = os.path.lexists(path)  # a dangling link counts: the name is taken
        if os.path.islink(path):
            real = os.path.realpath(path)
            if not _inside(real, root):
                raise WriteError(f"{shown} is a symlink to {real}, outside {output_dir or '.'}: not followed; "
                                 "remove the link or choose another --output-dir")
            path = real
        if os.path.isdir(path):
            raise WriteError(f"{shown} is a folder; remove it or choose another --output-dir")
        why = not_replaceable(path)  # a device, a FIFO, a socket: only a regular file is replaced
        if why is not None:
            raise WriteError(f"{shown}: {why}; remove it or choose another --output-dir")
        mode = None
        if present:
            if not force:
                raise WriteError(f"{shown} exists; pass --force to overwrite it (nothing was written)")
            if os.path.exists(path):
                mode = stat.S_IMODE(os.stat(path).st_mode)
        out.append(Destination(shown, path, mode))
    return out


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_all(output_dir: str, files, force: bool = False) -> list[str]:
    """Write `files` (objects with name, text, executable) into `output_dir`; the names written."""
    try:
        os.makedirs(output_dir or ".", exist_ok=True)
    except OSError as error:
        raise WriteError(f"cannot create {output_dir}: {error.strerror or error}") from None
    files = list(files)
    destinations = plan_destinations(output_dir, [f.name for f in files], force)
    umask = _umask()
    written = []
    for file, dest in zip(files, destinations):
        mode = dest.mode if dest.mode is not None else (0o777 if file.executable else 0o666) & ~umask
        _atomic_write(dest.path, file.text, mode, dest.name)
        written.append(dest.name)
    return written


def _atomic_write(path: str, text: str, mode: int, shown: str) -> None:
    from ..files import write_atomic
    try:
        write_atomic(path, text, mode)
    except OSError as error:
        raise WriteError(f"cannot write {shown}: {error.strerror or error}") from None
