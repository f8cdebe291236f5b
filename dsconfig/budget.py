"""What one file may cost: the checks of every file run inside a budget, whatever the file holds.

The inputs themselves are bounded where they are read (a file at most 256 KiB, dsconfig.files; YAML
aliases, nesting and node counts where they are parsed), so each file costs a bounded amount of work.
Two things here keep that bound small and certain:

* **Did-you-mean lookups**: each costs about a millisecond (difflib against a section's keys). A config
  has a handful of unknown keys; a 256 KiB file of ten thousand of them would spend seconds suggesting
  names, so each file gets `CLOSEST_PER_FILE` suggestions, and the rest of its unknown keys are reported
  without one.
* **A time limit per file** (`FILE_SECONDS`, far above the milliseconds a real config takes and the second
  the worst hostile input takes): should a file ever run past it, its checks stop with `Overrun`, which the
  engine reports as an internal error for that file alone (exit 2, please report it), and the run goes on.
  It uses SIGALRM, so it applies in the main thread, and not while a caller's own timer is running (the fuzz
  harness's), which then keeps the say.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading

FILE_SECONDS = 30.0
CLOSEST_PER_FILE = 200


class Overrun(BaseException):
    """A file's checks ran past FILE_SECONDS. A BaseException, as KeyboardInterrupt is, so that no `except
    Exception` inside a check swallows it; the engine catches it for the file (and the timer repeats every
    second until it does)."""


class _File:
    def __init__(self, seconds: float):
        self.closest_left = CLOSEST_PER_FILE
        self.seconds = seconds


_CURRENT: contextvars.ContextVar[_File | None] = contextvars.ContextVar("dsconfig_budget", default=None)


def spend_closest() -> bool:
    """Whether the current file may have one more did-you-mean lookup (outside a file's budget: always)."""
    budget = _CURRENT.get()
    if budget is None:
        return True
    if budget.closest_left <= 0:
        return False
    budget.closest_left -= 1
    return True


@contextlib.contextmanager
def per_file(seconds: float | None = None):
    """Run one file's reading and checks inside its budget (`seconds`: FILE_SECONDS). Nested calls share the
    outer file's budget."""
    if _CURRENT.get() is not None:
        yield
        return
    seconds = FILE_SECONDS if seconds is None else seconds
    token = _CURRENT.set(_File(seconds))
    try:
        with _time_limit(seconds):
            yield
    finally:
        _CURRENT.reset(token)


def _overrun(signum, frame):
    current = _CURRENT.get()
    raise Overrun(f"checking it took more than {current.seconds if current else FILE_SECONDS:.0f} s")


# Whether the SIGALRM handler is in place for a run over many files (`alarm_ready`): each file then only sets
# its timer, instead of swapping the handler in and out (a tenth of a small file's cost).
_READY: contextvars.ContextVar[bool] = contextvars.ContextVar("dsconfig_alarm_ready", default=False)


def _can_time() -> bool:
    """SIGALRM applies: the main thread, a platform with setitimer, and no timer of a caller's running."""
    import signal
    return threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer") \
        and signal.getitimer(signal.ITIMER_REAL)[0] == 0


@contextlib.contextmanager
def alarm_ready():
    """Around a run over many files: the handler that turns a file's expired timer into Overrun, installed once
    and the previous one put back at the end."""
    if _READY.get() or not _can_time():
        yield
        return
    import signal
    previous = signal.signal(signal.SIGALRM, _overrun)
    token = _READY.set(True)
    try:
        yield
    finally:
        _READY.reset(token)
        signal.signal(signal.SIGALRM, previous if previous is not None else signal.SIG_DFL)


@contextlib.contextmanager
def _time_limit(seconds: float):
    if not _can_time():
        yield
        return
    import signal
    with alarm_ready():
        signal.setitimer(signal.ITIMER_REAL, seconds, 1.0)
        try:
            yield
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
