"""What keeps an oracle from stalling the run: the deadline on workers' answers (tests/answers.py), a silent worker
failing one test; and stale JIT build locks cleared before a run (tests/conftest.py)."""

import os
import subprocess
import sys
import time

import pytest

from tests.answers import Answers, NoAnswer
from tests.conftest import STALE_LOCK_SECONDS, _clear_stale_build_locks


def _worker(code):
    return subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)


def test_an_answer_is_read_and_the_end_of_the_stream_is_empty():
    process = _worker("import sys\nfor line in sys.stdin: print(line.strip()[::-1], flush=True)")
    answers = Answers(process, process.stdout)
    process.stdin.write("abc\n")
    process.stdin.flush()
    assert answers.next("abc", seconds=60) == "cba\n"
    process.stdin.close()
    assert answers.next("the end", seconds=60) == ""
    assert process.wait(timeout=60) == 0


def test_a_worker_that_never_answers_is_killed_and_named():
    process = _worker("import sys, time\nsys.stdin.readline()\ntime.sleep(600)")
    answers = Answers(process, process.stdout)
    process.stdin.write("job\n")
    process.stdin.flush()
    with pytest.raises(NoAnswer, match=r"no answer in 1 s to the sleeping job; the worker was killed"):
        answers.next("the sleeping job", seconds=1)
    assert process.poll() is not None


def test_only_a_build_lock_older_than_any_build_is_cleared(tmp_path):
    old = [tmp_path / "cpu_adam" / "lock", tmp_path / "py311_cpu" / "fused_adam" / "lock"]
    fresh = tmp_path / "cpu_lion" / "lock"
    for lock in [*old, fresh]:
        lock.parent.mkdir(parents=True)
        lock.write_text("")
    past = time.time() - STALE_LOCK_SECONDS - 60
    for lock in old:
        os.utime(lock, (past, past))
    _clear_stale_build_locks(tmp_path)
    assert [lock.exists() for lock in old] == [False, False] and fresh.exists()
