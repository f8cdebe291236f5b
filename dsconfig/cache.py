"""The result cache of `dsconfig lint`: run again on an unchanged tree, it prints what the last run printed.

A run is keyed by what decides its output besides the files: dsconfig's own code (its version and the size
and modification time of every file of the package), the options as parsed, the working directory, the
environment variables that change output, whether standard output and error are terminals, the Python
running it and the folders it imports from (an installed deepspeed is found there). The entry then holds what
the run looked at and what it printed: every file it read (size, modification time in nanoseconds, inode:
the stat taken on the open descriptor before reading), every folder whose listing it used (the folders a walk
entered, where pins and imported modules are looked for) and every path it looked for, there or not (settings
files, `.git`, a file a YAML names). A rerun whose key and observations all match prints the stored output and exits with the
stored status, having read no linted file; any difference, an unreadable entry, or an option that writes
(--fix, -o) or reads standard input makes a full run, as ruff and mypy do with theirs. A run that looked at
something modified in the last RACY_NS is not kept (a second change within one clock tick would not show).

The cache lives in the user's cache folder (DSCONFIG_CACHE_DIR, else $XDG_CACHE_HOME/dsconfig, else
~/.cache/dsconfig), never in the linted project: a repository cannot plant a result. DSCONFIG_NO_CACHE=1 or
--no-cache turns it off. Entries are JSON (never unpickled), written atomically, the oldest removed past
MAX_ENTRIES.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys

MAX_ENTRIES = 64
# A file or folder modified this recently when the run ends is not trusted to show its next change in its
# modification time (timestamps advance in ticks of a few milliseconds): the run is not kept
RACY_NS = 2_000_000_000
FORMAT = 1  # the entry layout: a change makes old entries unreadable, hence misses
# what changes output beside the options and the files (colour, the GitHub format's defaults, settings paths)
_ENVIRONMENT = ("NO_COLOR", "FORCE_COLOR", "TERM", "CI", "GITHUB_ACTIONS", "HOME", "XDG_CONFIG_HOME", "LANG",
                "LC_ALL", "PYTHONIOENCODING")


def folder() -> str | None:
    """Where entries are kept; None when the cache is off."""
    if os.environ.get("DSCONFIG_NO_CACHE", "") not in ("", "0"):
        return None
    chosen = os.environ.get("DSCONFIG_CACHE_DIR")
    if chosen:
        return chosen
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "dsconfig")


def key(options: dict) -> str:
    """The digest of everything but the files that decides a lint run's output."""
    from . import __version__
    described = {
        "format": FORMAT,
        "version": __version__,
        "code": _code_signature(),
        "options": options,
        "cwd": os.path.realpath(os.getcwd()),
        "environment": {name: value for name, value in sorted(os.environ.items())
                        if name in _ENVIRONMENT or (name.startswith("DSCONFIG_") and "CACHE" not in name)},
        "terminals": [_isatty(sys.stdout), _isatty(sys.stderr)],
        "python": [sys.executable, sys.version, [(path, _signature(path)) for path in sys.path if path]],
    }
    return hashlib.sha256(json.dumps(described, sort_keys=True, default=str).encode()).hexdigest()[:40]


class Recording:
    """What a run printed (standard output blocks, standard error lines) and its status, while it runs."""

    def __init__(self, digest: str):
        self.key = digest
        self.stdout: list[str] = []
        self.stderr: list[str] = []


_RECORDING: Recording | None = None


def start(digest: str) -> None:
    global _RECORDING
    _RECORDING = Recording(digest)


def printed(text: str, err: bool) -> None:
    """Called where lint writes its output: kept for the entry."""
    if _RECORDING is not None:
        (_RECORDING.stderr if err else _RECORDING.stdout).append(text)


def abandon() -> None:
    """This run's output is not stored (it failed, or wrote somewhere else)."""
    global _RECORDING
    _RECORDING = None


def replay(digest: str) -> tuple[list[str], list[str], int] | None:
    """(stdout blocks, stderr lines, status) of the run stored under `digest`, if every file and folder it
    observed is unchanged; None otherwise."""
    where = folder()
    if where is None:
        return None
    from .files import FileError, read_own
    try:
        entry = json.loads(read_own(os.path.join(where, f"lint-{digest}.json")))
        if entry.get("format") != FORMAT:
            return None
        for path, signature in entry["observed"]:
            if _signature(path) != signature:
                return None
        stdout, stderr, status = entry["stdout"], entry["stderr"], entry["status"]
    except (FileError, ValueError, KeyError, TypeError, AttributeError):  # missing, unreadable, not an entry
        return None
    if not (isinstance(stdout, list) and isinstance(stderr, list) and isinstance(status, int)):
        return None
    return [str(s) for s in stdout], [str(s) for s in stderr], status


def store(status: int) -> None:
    """Keep the recorded run with what the current boundary run observed. Quietly nothing when the cache is off
    or cannot be written."""
    global _RECORDING
    recording, _RECORDING = _RECORDING, None
    where = folder()
    if recording is None or where is None:
        return
    from . import boundary
    run = boundary.current()
    if run is None:
        return
    observed = dict(run.observed)
    import time
    now = time.time_ns()
    if any(signature is not None and now - signature[2] < RACY_NS for signature in observed.values()):
        return  # changed a moment ago: a change in the same clock tick would keep its time (git's racy case)
    entry = {"format": FORMAT, "observed": sorted(observed.items()), "stdout": recording.stdout,
             "stderr": recording.stderr, "status": status}
    from .files import write_atomic
    try:
        os.makedirs(where, mode=0o700, exist_ok=True)
        write_atomic(os.path.join(where, f"lint-{recording.key}.json"), json.dumps(entry, separators=(",", ":")),
                     mode=0o600)
        _prune(where)
    except OSError:
        return


def _prune(where: str) -> None:
    entries = []
    with os.scandir(where) as found:
        for item in found:
            if item.name.startswith("lint-") and item.name.endswith(".json"):
                entries.append((item.stat().st_mtime_ns, item.path))
    for _, path in sorted(entries)[:-MAX_ENTRIES]:
        try:
            os.unlink(path)
        except OSError:
            pass


def _signature(path: str) -> list | None:
    from .boundary import signature
    try:
        return signature(os.stat(path))
    except (OSError, ValueError):
        return None


def _isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def _code_signature() -> list:
    """Every file of the installed package (and its schemas and templates): a change to dsconfig's own code or
    data misses every entry, released or not."""
    package = os.path.dirname(os.path.abspath(__file__))
    found = []
    for top in (package, os.path.join(os.path.dirname(package), "schemas"),
                os.path.join(os.path.dirname(package), "templates")):
        for root, folders, files in os.walk(top):
            folders[:] = sorted(name for name in folders if name != "__pycache__")
            for name in sorted(files):
                if not name.endswith(".pyc"):
                    path = os.path.join(root, name)
                    found.append((os.path.relpath(path, package), _signature(path)))
    return found
