"""Reading an oracle process's answers with a deadline.

The oracles (the real engine, older DeepSpeed releases, pydantic v1) run in long-lived worker
processes that answer one line per question. A worker that never answers (a JIT build waiting on a
lock, a process group waiting for peers) must fail the test that asked, with what it was asked, and
not stall the whole run until CI's limit.
"""

from __future__ import annotations

import queue
import threading

# A first engine job may JIT-compile several DeepSpeed ops, minutes each on two loaded cores.
ANSWER_SECONDS = 900


class NoAnswer(RuntimeError):
    """The worker gave no line within the deadline (it has been killed)."""


class Answers:
    """The lines a process writes to `stream`, read in a thread so that waiting can time out."""

    def __init__(self, process, stream):
        self._process = process
        self._lines: queue.Queue = queue.Queue()
        threading.Thread(target=self._pump, args=(stream,), daemon=True).start()

    def _pump(self, stream) -> None:
        try:
            for line in stream:
                self._lines.put(line)
        except (OSError, ValueError):  # closed under us when the worker is killed
            pass
        self._lines.put("")

    def next(self, asked: str, seconds: float = ANSWER_SECONDS) -> str:
        """The next line ('' once the stream ends); NoAnswer, after killing the worker, past `seconds`."""
        try:
            return self._lines.get(timeout=seconds)
        except queue.Empty:
            self._process.kill()
            self._process.wait()
            raise NoAnswer(f"no answer in {seconds:.0f} s to {asked}; the worker was killed") from None
