"""The one reading boundary: which of the user's files dsconfig may open, for every command.

A linted tree can name any path (`deepspeed_config_file: /proc/self/environ`, `../../.env`, a
`-r ../outside/requirements.txt`), hold a symbolic link to anywhere, and carry its own settings. What
dsconfig reads is decided here, and nowhere else:

* **Named paths** (on the command line, or given to the API) are read as asked. A named symbolic link
  is followed only to a regular file under the working directory or the link's own folder: the
  pre-commit hook names every changed file, and a pull request can add `ds_config.json ->
  /proc/self/environ`. A path the user wrote under /dev or /proc (`<(cat ds_config.json)`,
  /dev/stdin) is read as asked.
* **Everything else** a command reads (a file a walk found, the ds_config.json a YAML names, a module a
  script imports, an `fsdp_config` file) is opened only when its real path lies under a root: a path
  named, or a folder given with `--allow-read` on the command line. A linted repository's own
  settings never widen the roots.
* **Project metadata** that dsconfig looks for by name (the settings file, `.gitignore`, the files
  that pin deepspeed) is read between the place it starts from and the project's ceiling: the
  repository root (the folder holding `.git`), else the working directory. Its real path, and that
  of every include it names (`-r other.txt`), must lie under that ceiling.
* **Never**: a special file (FIFO, socket, device) or anything under /proc, /sys or /dev, unless
  named as such. A FIFO blocks a reader for ever and /proc holds the environment. Files are opened
  without blocking and checked on the open descriptor, so a path swapped for a FIFO between the
  check and the open is refused too.

Each command sets the boundary of its run with `scope(...)`; the readers in dsconfig.files ask
`refusal()` before they open anything. Outside a scope (dsconfig's own functions called directly, as
the tests do) only the rule on special files applies. Every read of a run is recorded (its digest),
so that `--fix` can tell whether a file changed on disk since it was read.
"""

from __future__ import annotations

import contextlib
import contextvars
import errno
import os
import stat
from typing import Iterable, NamedTuple

SYSTEM_FOLDERS = ("/proc", "/sys", "/dev")


class Boundary(NamedTuple):
    roots: tuple[str, ...] = ()  # real paths: a folder admits everything below it, a file itself
    named: frozenset[str] = frozenset()  # absolute paths named on the command line: read as asked
    ceiling: str | None = None  # real path of the folder project metadata may be read up to
    writable: tuple[str, ...] = ()  # real paths --fix may write under: what the command line named

    @classmethod
    def of(cls, paths: Iterable[str]) -> Boundary:
        """Roots only: the real paths of `paths` (folders walked, files a glob matched)."""
        return cls(tuple(dict.fromkeys(os.path.realpath(path) for path in paths)))

    @classmethod
    def named_paths(cls, paths: Iterable[str], allow_read: Iterable[str] = ()) -> Boundary:
        """The boundary of a command: the paths it was given (each a root, and read as asked, but a named
        link only where `named_link_refusal` allows it), and the folders `--allow-read` adds."""
        paths = [path for path in paths if isinstance(path, str) and path and "\0" not in path]
        given = [path for path in paths if named_link_refusal(path, Boundary()) is None]
        real_given = tuple(os.path.realpath(path) for path in given)
        allowed = tuple(os.path.realpath(path) for path in allow_read)
        return cls(tuple(dict.fromkeys(real_given + allowed)), frozenset(os.path.abspath(p) for p in paths),
                   project_ceiling(), tuple(dict.fromkeys(real_given)))

    def __add__(self, other: Boundary) -> Boundary:
        return Boundary(tuple(dict.fromkeys(self.roots + other.roots)), self.named | other.named,
                        self.ceiling or other.ceiling, tuple(dict.fromkeys(self.writable + other.writable)))

    def admits(self, real: str) -> bool:
        """Whether a real path (os.path.realpath's, which every caller has at hand) is a root or lies below one."""
        return any(inside(real, root) for root in self.roots)

    def may_write(self, path: str) -> bool:
        """Whether --fix may replace the file: its real path lies under a path the command line named."""
        real = os.path.realpath(path)
        return any(inside(real, root) for root in self.writable)


def os_reason(path: str, error: OSError) -> str:
    """Why an OSError happened, in words (a symlink loop and a folder say so)."""
    if error.errno == errno.ELOOP:
        return "a loop of symbolic links (too many levels of symbolic links)"
    if error.errno == errno.EISDIR or (error.errno is None and os.path.isdir(path)):
        return "is a folder, not a file"
    if error.errno == errno.ENOENT and os.path.islink(path):
        return f"a symbolic link to {os.readlink(path)}, which does not exist"
    return error.strerror or str(error)


_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"))


def file_kind(mode: int) -> str | None:
    """What a file that is not a regular one is, in words ("a FIFO (named pipe)"), or None."""
    for test, kind in _KINDS:
        if test(mode):
            return kind
    return None


def inside(real: str, root: str) -> bool:
    """`real` is `root` or below it (both real, absolute paths)."""
    return real == root or real.startswith(root if root.endswith(os.sep) else root + os.sep)


def special(path: str) -> str | None:
    """Why the file must not be opened ("a FIFO", "under /proc"), or None for a regular file.
    Follows symbolic links; a path that cannot be examined says why."""
    why = under_system_folder(os.path.realpath(path))
    if why is not None:
        return why
    try:
        mode = os.stat(path).st_mode
    except OSError as error:
        return os_reason(path, error)
    except ValueError:  # a NUL byte
        return "not a usable path (it holds a NUL byte)"
    return None if stat.S_ISREG(mode) else file_kind(mode) or "not a regular file"


def under_system_folder(real: str) -> str | None:
    """"under /proc" for a real path in a folder of SYSTEM_FOLDERS, else None."""
    for folder in SYSTEM_FOLDERS:
        if inside(real, folder):
            return f"under {folder}"
    return None


def written_as_system_path(path: str) -> bool:
    """A path the user wrote under /dev or /proc (`<(...)` gives /dev/fd/63): read as asked."""
    return os.path.abspath(path).startswith(tuple(folder + os.sep for folder in SYSTEM_FOLDERS))


def named_link_refusal(path: str, allowed: Boundary) -> str | None:
    """Why a named path that is a symbolic link is not followed, or None (not a link, or a link to a
    regular file under the working directory, beside the link, or under `allowed`)."""
    try:
        if not os.path.islink(path) or written_as_system_path(path):
            return None
    except ValueError:
        return None
    real = os.path.realpath(path)
    why = special(path)
    if why is not None:
        return why + ": not followed (dsconfig never opens a special file a link leads to)"
    beside = os.path.realpath(os.path.dirname(os.path.abspath(path)))
    if inside(real, os.path.realpath(os.getcwd())) or inside(real, beside) or allowed.admits(real):
        return None
    return ("outside the working directory: not followed (dsconfig reads only the tree it is asked to lint; "
            "--allow-read to lint it)")


# -- the boundary of the current run ------------------------------------------------------------------------


class Run:
    """The boundary of one command's run, and the digests of the files it read (real path -> digest)."""

    def __init__(self, boundary: Boundary):
        self.boundary = boundary
        self.digests: dict[str, str] = {}
        self.observed: dict[str, list] = {}  # real path -> what dsconfig.cache compares on a rerun


def observe(real: str | None, stat_result=None) -> None:
    """The run looked at `real` (a file it read: pass the stat of the open descriptor; a folder it listed: stat
    now, before listing): a rerun from the cache checks it is unchanged."""
    run = _CURRENT.get()
    if run is None or real is None:
        return
    try:
        run.observed[real] = signature(stat_result if stat_result is not None else os.stat(real))
    except (OSError, ValueError):
        run.observed[real] = None


def signature(stat_result) -> list:
    """What a change to a file or folder changes: its kind and size (a folder's: 0), modification time (ns),
    inode and device."""
    folder = stat.S_ISDIR(stat_result.st_mode)
    return [stat_result.st_mode >> 12, 0 if folder else stat_result.st_size, stat_result.st_mtime_ns,
            stat_result.st_ino, stat_result.st_dev]


_CURRENT: contextvars.ContextVar[Run | None] = contextvars.ContextVar("dsconfig_boundary", default=None)


@contextlib.contextmanager
def scope(boundary: Boundary):
    """Run the block inside `boundary`: every file opened through dsconfig.files is checked against it."""
    token = _CURRENT.set(Run(boundary))
    try:
        yield _CURRENT.get()
    finally:
        _CURRENT.reset(token)


def current() -> Run | None:
    return _CURRENT.get()


def command_scope():
    """The scope a command starts in (dsconfig.program.guarded): nothing is admitted until the command names its
    inputs with `admit`, so a command that forgets to fails closed (its reads are refused), never open."""
    return scope(Boundary(ceiling=project_ceiling()))


def admit(paths: Iterable[str], allow_read: Iterable[str] = ()) -> None:
    """The paths a command was given (and the folders `--allow-read` names) join the current run's boundary."""
    run = _CURRENT.get()
    if run is not None:
        run.boundary = run.boundary + Boundary.named_paths([p for p in paths if p is not None], allow_read)


def admit_read(paths: Iterable[str]) -> None:
    """Files a command was led to by one it was given (the ds_config.json beside the YAML naming it), after
    `refusal(..., beside=...)` let them in: read for the rest of the run, never written."""
    run = _CURRENT.get()
    if run is not None:
        run.boundary = run.boundary + Boundary.of(paths)


def admit_found(paths: Iterable[str]) -> None:
    """Files and folders the command's own walk or glob found under what it was given: roots, and writable
    (they are what the command line named, expanded), but not read as asked."""
    run = _CURRENT.get()
    if run is not None:
        found = Boundary.of(paths)
        run.boundary = run.boundary + found._replace(writable=found.roots)


def named_here(path: str) -> bool:
    """Whether the current run's command line named `path`: then it is read as asked (a FIFO too)."""
    run = _CURRENT.get()
    return run is not None and os.path.abspath(path) in run.boundary.named


def refusal(path: str, *, metadata: str | None = None, beside: str | None = None,
            environment: bool = False, real: str | None = None) -> str | None:
    """Why `path` may not be opened in the current run, in words, or None.

    `metadata`: the project folder (`project_ceiling`) of a file dsconfig looks for by name (settings,
    .gitignore, pins): admitted when its real path lies in that folder, and only then. `beside`: one more
    folder admitted (the folder of the YAML that names a ds_config.json). `environment`: the Python
    installation's own metadata (the installed deepspeed's version), where only the rule on special files
    applies. `real`: the path's real path, when the caller has it."""
    run = _CURRENT.get()
    try:
        absolute = os.path.abspath(path)
    except ValueError:
        return "the path holds a NUL byte"
    if "\0" in absolute:
        return "the path holds a NUL byte"
    if run is not None and absolute in run.boundary.named:
        if written_as_system_path(path):
            return None  # `<(cat ds_config.json)`, /dev/stdin: the user wrote it
        return named_link_refusal(path, run.boundary)
    real = os.path.realpath(path) if real is None else real
    why = _not_openable(path, real)
    if why is not None:
        return why
    if metadata is not None:
        if inside(real, os.path.realpath(metadata)):
            return None
        return f"its real path {real} is outside the project ({metadata}): not opened"
    if run is None or environment:
        return None
    if run.boundary.admits(real) or (beside is not None and inside(real, os.path.realpath(beside))):
        return None
    return f"{real} is outside the paths given to dsconfig: not opened"


def _not_openable(path: str, real: str | None = None) -> str | None:
    """Why a file not named as such is never opened (under /proc, a FIFO, a device), or None; a path that
    cannot be examined (missing, no permission) is left to the reader, which says why it cannot read it.
    `real`: its real path, when the caller has it."""
    real = os.path.realpath(path) if real is None else real
    for folder in SYSTEM_FOLDERS:
        if inside(real, folder):
            return f"under {folder}"
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    return None if stat.S_ISREG(mode) or stat.S_ISDIR(mode) else file_kind(mode) or "not a regular file"


def record(path: str, data: bytes, real: str | None = None) -> None:
    """Remember what the run read of `path` (its digest): --fix checks the file still holds it (`read_digest`).
    `real`: its real path, when the caller has it."""
    run = _CURRENT.get()
    if run is not None:
        run.digests[os.path.realpath(path) if real is None else real] = digest(data)


def read_digest(path: str) -> str | None:
    run = _CURRENT.get()
    return None if run is None else run.digests.get(os.path.realpath(path))


def digest(data: bytes) -> str:
    import hashlib
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def project_ceiling(start: str | None = None) -> str:
    """The real path of the folder project metadata is looked for up to: the repository root (the nearest
    folder at or above `start` holding `.git`), else the working directory when `start` lies below it, else
    `start`'s own folder."""
    here = os.path.realpath(os.getcwd())
    folder = os.path.realpath(start) if start else here
    if start and not os.path.isdir(folder):
        folder = os.path.dirname(folder)
    root = repository_root(folder)
    if root is not None:
        return root
    return here if inside(folder, here) else folder


def repository_root(folder: str) -> str | None:
    """The nearest folder at or above `folder` (an absolute path) holding `.git`; None outside a repository."""
    current = folder
    while True:
        observe(os.path.join(current, ".git"))  # a repository made or removed here moves the ceiling
        if os.path.exists(os.path.join(current, ".git")):
            return current
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


def folders_up_to_ceiling(start: str | None = None) -> list[str]:
    """`start`'s folder (default: the working directory) and each parent up to its project ceiling, nearest
    first: where settings and pins are looked for."""
    folder = os.path.abspath(start or os.getcwd())
    if start and not os.path.isdir(folder):
        folder = os.path.dirname(folder)
    ceiling = project_ceiling(folder)
    chain = [folder]
    while os.path.realpath(folder) != ceiling:
        parent = os.path.dirname(folder)
        if parent == folder or not inside(os.path.realpath(parent), ceiling):
            break
        folder = parent
        chain.append(folder)
    return chain
