"""Hostile inputs: each case runs `dsconfig lint` in a fresh process; print exit code, wall time,
peak memory (max RSS of the child) and the first line the user sees.

    python bench/hostile.py            # every case
    python bench/hostile.py deep huge  # cases whose name contains one of the words

Budget on the 2-core reference machine: under 2 s and 200 MB per case, no traceback, one line on
stderr naming the file. tests/test_hostile.py checks the messages and exit codes on the same cases
(built by the same `hostile_cases` module); this script measures time and memory, which tests do not.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from hostile_cases import CASES, Spec, environment  # noqa: E402

TIME_BUDGET_S = 2.0
MEMORY_BUDGET_MB = 200


def run(argv: list[str], cwd: str, stdin: str | None = None, shell: str | None = None):
    """(exit code, seconds, peak RSS in MB, stdout, stderr) of one child process."""
    env = environment()
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPATH"] = ROOT  # `python -m dsconfig` runs this checkout, not whichever one is installed
    out_path, err_path = os.path.join(cwd, ".out"), os.path.join(cwd, ".err")
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        start = time.perf_counter()
        if shell is not None:
            child = subprocess.Popen(["bash", "-c", shell], cwd=cwd, stdout=out, stderr=err, env=env)
        else:
            source = open(os.path.join(cwd, stdin), "rb") if stdin else subprocess.DEVNULL
            child = subprocess.Popen(argv, cwd=cwd, stdin=source, stdout=out, stderr=err, env=env)
            if stdin:
                source.close()
        _, status, usage = os.wait4(child.pid, 0)
        seconds = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
    with open(out_path, "rb") as out, open(err_path, "rb") as err:
        # only the start: reading megabytes of findings here would grow this process, and Linux
        # counts a parent's resident memory into the peak of every child it forks afterwards
        stdout, stderr = out.read(4096), err.read(65536)
    return child.returncode, seconds, usage.ru_maxrss / 1024, stdout, stderr


def _build_in_child(name: str, folder: str):
    """Build a case in its own process: Linux carries a parent's peak RSS into a forked child, so
    building a million-key file here would inflate every later reading."""
    script = ("import json, sys; sys.path.insert(0, sys.argv[3]); import hostile_cases as h; "
              "spec, where = h.build(h.by_name(sys.argv[1]), sys.argv[2]); "
              "print(json.dumps([spec and spec._asdict(), where]))")
    tests = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests")
    out = subprocess.run([sys.executable, "-c", script, name, folder, tests], check=True,
                         capture_output=True, text=True).stdout
    import json
    spec, where = json.loads(out)
    return (Spec(**spec) if spec else None), where


def main(words: list[str]) -> int:
    over = 0
    with tempfile.TemporaryDirectory(prefix="dsconfig-hostile-") as folder:
        print(f"{'case':<22} {'exit':>4} {'time':>7} {'peak':>8}  first line of output")
        for case in CASES:
            if words and not any(word in case.name for word in words):
                continue
            spec, where = _build_in_child(case.name, folder)
            if spec is None:
                print(f"{case.name:<22} {'-':>4} {'':>7} {'':>8}  (cannot be built here)")
                continue
            code, seconds, peak, stdout, stderr = run(spec.argv, where, spec.stdin, spec.shell)
            text = (stdout or stderr).decode("utf-8", "replace").strip().splitlines()
            first = text[0] if text else ""
            flags = []
            if seconds > TIME_BUDGET_S:
                flags.append("SLOW")
            if peak > MEMORY_BUDGET_MB:
                flags.append("MEMORY")
            if b"Traceback" in stderr:
                flags.append("TRACEBACK")
            over += bool(flags)
            print(f"{case.name:<22} {code:>4} {seconds:6.2f}s {peak:6.0f}MB  {first[:110]}"
                  + (f"  <-- {' '.join(flags)}" if flags else ""))
    print(f"\nbudget: {TIME_BUDGET_S:.0f} s and {MEMORY_BUDGET_MB} MB per case; "
          f"{'all within' if not over else f'{over} case(s) over or crashing'}")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
