"""Reading the user's files: never more than a config can hold, and every failure one line that
names the file (and line and column where there is one).

A DeepSpeed or Accelerate config is a few kilobytes; the largest of 342 real ones collected from
public repositories is 4.2 KB. Reading stops at `MAX_BYTES` (256 KiB, sixty times that) plus one byte, so
a 200 MB dataset, `/dev/zero` or a never-ending pipe costs the same bounded time and memory as a
config, and the slowest reader behind it (PyYAML's pure-Python loader, ~3 s per MB) stays under a
second.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Iterable

from .boundary import file_kind, os_reason  # noqa: F401 - what a file is, in words (callers import them here too)

MAX_BYTES = 256 << 10
# Files are read in pieces of this size: `read(limit + 1)` allocates its whole buffer first, so
# `--max-file-size 30G` would ask for 30 GiB before reading a single byte of a 2 KB config.
CHUNK = 64 << 10


class FileError(Exception):
    """A file that cannot be used; the message names it and says why, on one line."""


class TooLarge(FileError):
    def __init__(self, path: str, size: int | None, limit: int):
        self.path, self.size, self.limit = path, size, limit
        have = f"is {format_size(size)}" if size is not None else f"is larger than {format_size(limit)}"
        super().__init__(f"{path}: {have}, more than any config holds; not read (the limit is {format_size(limit)})")


class Refused(FileError):
    """The reading boundary (dsconfig.boundary) does not let dsconfig open the file."""


def read_bytes(path: str, limit: int = MAX_BYTES, *, metadata: str | None = None, beside: str | None = None,
               environment: bool = False, prefix: bool = False, real: str | None = None) -> bytes:
    """The file's bytes, opened through the reading boundary (dsconfig.boundary: `metadata`, `beside` and
    `environment` are its). Raises Refused when the boundary refuses it, TooLarge past `limit` bytes,
    FileError when it cannot be read. With `prefix`, a larger file gives its first `limit + 1` bytes instead
    (the caller tells it was cut by the length). `real`: its real path (os.path.realpath), when the caller has it.

    A file not named on the command line is opened without blocking and must be a regular file on the open
    descriptor: a FIFO put in its place after the boundary looked is refused, not waited on."""
    from . import boundary

    if real is None:
        try:
            real = os.path.realpath(path)  # resolved once, for the boundary and the digest
        except ValueError:  # a NUL byte: refusal says so
            real = None
    why = boundary.refusal(path, metadata=metadata, beside=beside, environment=environment, real=real)
    if why is not None:
        raise Refused(f"{path}: {why}")
    as_asked = boundary.named_here(path)
    flags = os.O_RDONLY | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    if not as_asked:
        flags |= getattr(os, "O_NONBLOCK", 0)
    try:
        descriptor = os.open(path, flags)
    except OSError as error:
        raise FileError(f"{path}: cannot read: {os_reason(path, error)}") from None
    except ValueError:  # a NUL byte in the path
        raise FileError(f"{path!r}: cannot read: the path holds a NUL byte") from None
    try:
        with os.fdopen(descriptor, "rb") as handle:
            status = os.fstat(descriptor)
            mode = status.st_mode
            boundary.observe(real, status)  # before reading: a change made while it is read shows on a rerun
            if stat.S_ISDIR(mode):
                raise FileError(f"{path}: cannot read: is a folder, not a file")
            if not as_asked and not stat.S_ISREG(mode):
                raise Refused(f"{path}: {file_kind(mode) or 'not a regular file'}: never opened")
            data = read_at_most(handle, limit + 1)
            if len(data) > limit and not prefix:
                raise TooLarge(path, _size(handle), limit)
    except OSError as error:
        raise FileError(f"{path}: cannot read: {os_reason(path, error)}") from None
    boundary.record(path, data, real)
    return data


def read_own(path: str, limit: int = 64 << 20) -> bytes:
    """A file of dsconfig's own state (dsconfig.cache's entries, in the user's cache folder): not the user's
    input, so outside the reading boundary, but only a regular file, never through a symbolic link, and at most
    `limit` bytes. Raises FileError."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        descriptor = os.open(path, flags)
    except (OSError, ValueError) as error:
        raise FileError(f"{path}: cannot read: {error}") from None
    with os.fdopen(descriptor, "rb") as handle:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise FileError(f"{path}: not a regular file")
        data = read_at_most(handle, limit + 1)
    if len(data) > limit:
        raise FileError(f"{path}: larger than {format_size(limit)}")
    return data


def read_stream(stream, name: str, limit: int = MAX_BYTES) -> bytes:
    """Standard input, bounded like a file (the rest is left unread)."""
    data = read_at_most(stream, limit + 1)
    if len(data) > limit:
        raise TooLarge(name, None, limit)
    return data


def read_at_most(handle, count: int) -> bytes:
    """Up to `count` bytes of a binary handle, in CHUNK pieces: memory follows what the file holds, not
    `count` (nor the size the file claims: `read()` sizes its buffer from st_size, 30 GiB for a sparse
    file)."""
    pieces, have = [], 0
    while have < count:
        piece = handle.read(min(CHUNK, count - have))
        if not piece:
            break
        pieces.append(piece)
        have += len(piece)
    return b"".join(pieces)


def _size(handle) -> int | None:
    try:
        stat = os.fstat(handle.fileno())
    except OSError:
        return None
    return stat.st_size if stat.st_size > 0 else None  # pipes and devices report 0


def read_text(path: str, limit: int = MAX_BYTES, *, beside: str | None = None) -> str:
    """A config file's text as DeepSpeed's `open(path)` and json.load see it (UTF-8, universal newlines).
    Raises FileError: too large, refused, unreadable, or not UTF-8 (naming the line and column of the first bad
    byte)."""
    data = read_bytes(path, limit, beside=beside)
    try:
        return data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
    except UnicodeDecodeError as error:
        line, column = _line_column(data[:error.start].decode("utf-8", "replace"))
        raise FileError(f"{path}:{line}:{column}: not UTF-8 text (byte 0x{data[error.start]:02x})") from None


def read_json(path: str, limit: int = MAX_BYTES, *, beside: str | None = None):
    """A strict JSON file (json.load's reading). Raises FileError naming the line and column."""
    import json

    data = read_bytes(path, limit, beside=beside)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line, column = _line_column(data[:error.start].decode("utf-8", "replace"))
        raise FileError(f"{path}:{line}:{column}: not UTF-8 text (byte 0x{data[error.start]:02x})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise FileError(f"{path}:{error.lineno}:{error.colno}: not valid JSON: {error.msg}") from None
    except (ValueError, RecursionError) as error:  # a 5000-digit integer; nesting past the C recursion limit
        reason = "nested too deeply" if isinstance(error, RecursionError) else str(error).split(":")[0]
        raise FileError(f"{path}: not usable JSON: {reason}") from None


def _line_column(prefix: str) -> tuple[int, int]:
    line = prefix.count("\n") + 1
    return line, len(prefix) - (prefix.rfind("\n") + 1) + 1


def format_size(size: int) -> str:
    """1048576 -> '1 MiB', 209715233 -> '200 MiB', 5120 -> '5 KiB', 100 -> '100 bytes'."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            value = size / scale
            return f"{value:.0f} {unit}" if value >= 10 or value.is_integer() else f"{value:.1f} {unit}"
    return f"{size} byte{'' if size == 1 else 's'}"


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmg]i?b?|b(?:ytes?)?)?\s*$", re.IGNORECASE)


def parse_file_size(text: str) -> int:
    """A file size (--max-file-size): '1MB', '512KiB', '2 mb', '4096' -> bytes. Raises ValueError.

    K, M and G are powers of 1024 whether written KB or KiB (1MB = 2**20 bytes), as file sizes are
    usually counted; a bare number is bytes. Compare dsconfig.estimate.gpus.parse_memory_size.
    """
    match = _SIZE.match(text)
    if not match:
        raise ValueError(f"{text!r} is not a size (use e.g. 4MB, 512KB or 65536)")
    number, unit = float(match.group(1)), (match.group(2) or "b").lower()
    scale = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}.get(unit[0], 1)
    if number * scale == float("inf"):  # 400 digits: no float holds it, and no disk either
        raise ValueError(f"{text[:40]!r}... is larger than any file")
    size = int(number * scale)
    if size < 1:
        raise ValueError(f"{text!r} is not a positive size")
    return size


def not_replaceable(path: str) -> str | None:
    """Why a new regular file may not take the place of `path` (it is a symbolic link, a folder, a
    device, a FIFO, a socket), or None: it is a regular file, or nothing."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(mode):  # replacing it would cut the link, following it could write anywhere
        return "a symbolic link; not written through"
    kind = file_kind(mode)
    return None if kind is None else f"{kind}, not a regular file; not replaced"


def is_stream(path: str) -> bool:
    """What is written into, as the shell's `>` does, never replaced by a file: a FIFO (a named pipe,
    `>(...)`), a character device named as such (/dev/null, /dev/tty), or the one this process already
    writes to under another name (/dev/stderr). A link to any other device (a checked-out
    `report.sarif -> /dev/mem`) is not followed."""
    try:
        status = os.stat(path)
    except OSError:
        return False
    if stat.S_ISFIFO(status.st_mode):
        return True
    if not stat.S_ISCHR(status.st_mode):
        return False
    if os.path.realpath(path) == os.path.abspath(path):
        return True
    return any(_same_file(status, fd) for fd in (1, 2))


def _same_file(status: os.stat_result, fd: int) -> bool:
    try:
        return os.path.samestat(status, os.fstat(fd))
    except OSError:
        return False


def discard_into(descriptor: int) -> None:
    """Point `descriptor` (standard output, once its reader has gone) at /dev/null."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, descriptor)
    os.close(devnull)


def _pieces(text) -> Iterable[str]:
    return (text,) if isinstance(text, str) else text


def write_into(path: str, text: str | Iterable[str]) -> None:
    """Write `text` (a string, or its pieces) in UTF-8 into the character device or FIFO `path`: opened
    without creating or truncating anything, and refused (OSError) if it turns out to be something else."""
    handle = os.open(path, os.O_WRONLY | os.O_NOCTTY)
    with os.fdopen(handle, "wb") as stream:
        mode = os.fstat(stream.fileno()).st_mode
        if not (stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)):
            raise OSError(errno.EPERM, "not a device or FIFO; not written into", path)
        for piece in _pieces(text):
            stream.write(piece.encode("utf-8"))


class Changed(OSError):
    """The file no longer holds what it held when it was read: someone else wrote it meanwhile."""


def write_atomic(path: str, text: str | Iterable[str], mode: int | None = None,
                 expected: bytes | None = None) -> None:
    """Replace (or create) `path` with `text` (a string, or its pieces) in UTF-8, all or nothing.

    The bytes go to a temporary file in the same folder, are flushed to disk, get `mode` (default:
    the existing file's mode, or 0o666 less the umask for a new file) and are renamed over `path`,
    so a reader sees the old file or the new one, never half of one. Only a regular file is
    replaced: a symbolic link, a folder, a device (`/dev/null`), a FIFO or a socket is refused
    (`not_replaceable`). With `expected`, the file must still hold exactly those bytes just before the
    rename (checked after the new text is on disk, so the window is as short as it can be); otherwise
    nothing is replaced and Changed is raised: a second `--fix`, or an editor saving, wrote it meanwhile.
    Raises OSError.
    """
    import tempfile

    why = not_replaceable(path)
    if why is not None:
        raise OSError(errno.EPERM, why, path)
    if mode is None:
        try:
            mode = stat.S_IMODE(os.stat(path).st_mode)
        except FileNotFoundError:
            mask = os.umask(0)
            os.umask(mask)
            mode = 0o666 & ~mask
    folder = os.path.dirname(os.path.abspath(path))
    with _sigterm_as_exit():
        handle, temporary = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".dsconfig", dir=folder)
        try:
            with os.fdopen(handle, "wb") as stream:
                for piece in _pieces(text):
                    stream.write(piece.encode("utf-8"))
                stream.flush()
                os.fsync(stream.fileno())
            os.chmod(temporary, mode)
            if expected is not None and _current_bytes(path, len(expected)) != expected:
                raise Changed(errno.EAGAIN, "it changed on disk since dsconfig read it; not written (run again)",
                              path)
            os.replace(temporary, path)
        except BaseException:  # Ctrl-C, SIGTERM (below), a full disk: no temporary file is left
            try:
                os.unlink(temporary)
            except OSError:
                pass
            raise


def _current_bytes(path: str, expected_size: int) -> bytes | None:
    """What the regular file `path` holds now (one byte more than `expected_size` at most), or None."""
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    with os.fdopen(descriptor, "rb") as handle:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            return None
        return read_at_most(handle, expected_size + 1)


class _sigterm_as_exit:
    """While writing, SIGTERM (a CI timeout, `kill`) raises SystemExit like Ctrl-C raises
    KeyboardInterrupt, so the temporary file is removed; the default action would kill the process
    at once and leave it behind. Only the main thread may set signal handlers."""

    def __enter__(self):
        import signal
        import threading

        self.installed = threading.current_thread() is threading.main_thread()
        if self.installed:
            self.previous = signal.signal(signal.SIGTERM, _exit_on_signal)
        return self

    def __exit__(self, *exc):
        import signal

        if self.installed:
            signal.signal(signal.SIGTERM, self.previous if self.previous is not None else signal.SIG_DFL)
        return False


def _exit_on_signal(signum, frame):
    raise SystemExit(128 + signum)
