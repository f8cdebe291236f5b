"""What the kernel sees: every command of tests/boundary_cases.py run under strace over the hostile repository,
listing each file a run opened (successfully) outside the repository, the Python installation, dsconfig's
own package and the system's shared libraries, and every network call.

    python bench/strace_reads.py              # every case
    python bench/strace_reads.py explain api  # cases whose name holds one of the words

tests/test_reading_boundary.py checks the same runs with a Python audit hook in every test run; this is
the check from outside the interpreter (C extensions, the dynamic loader, anything Python's hooks miss).
Needs strace (Debian's strace package). Exit status 1 when any run opened something it may not.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
from tests.boundary_cases import CASES, SECRET, allowed_places, build, forbidden  # noqa: E402

# What the interpreter and its C libraries read at start, whatever the command: the dynamic loader's cache,
# shared libraries, the C library's locale and character-set tables, OpenSSL's configuration (hashlib).
SYSTEM = ("/etc/ld.so.cache", "/lib/", "/lib64/", "/usr/lib/", "/usr/lib64/", "/usr/share/locale/",
          "/usr/share/zoneinfo/", "/etc/localtime")
OPENED = re.compile(r'^\d+\s+(?:open|openat|openat2|creat)\((?:[^,"]*, )?"((?:[^"\\]|\\.)*)".*\)\s+=\s+(\d+)')
NETWORK = re.compile(r'^\d+\s+(connect|sendto|bind)\(|^\d+\s+socket\(AF_INET')


def trace(top: Path, argv: list[str]) -> tuple[subprocess.CompletedProcess, list[str], list[str]]:
    """(result, files opened, network calls) of `dsconfig ARGV` (or an API call) run in top/repo under strace."""
    log = top / "strace.log"
    command = [sys.executable, "-m", "dsconfig", *argv] if argv[0] != "--api" else \
        [sys.executable, "-c", f"import dsconfig; print(repr({argv[1]}))"]
    # the result cache (~/.cache/dsconfig, dsconfig's own state) is off: every case is a full run over the repository
    env = {**os.environ, "PYTHONPATH": ROOT, "DSCONFIG_TEST_SECRET": SECRET, "TMPDIR": str(top / "tmp"),
           "DSCONFIG_NO_CACHE": "1"}
    result = subprocess.run(["strace", "-f", "-qq", "-s", "4096", "-e", "trace=open,openat,openat2,creat,connect,"
                             "socket,sendto,bind", "-e", "signal=none", "-o", str(log), *command],
                            cwd=top / "repo", capture_output=True, text=True, env=env, timeout=300)
    opened, network = [], []
    for line in log.read_text(errors="replace").splitlines():
        if NETWORK.search(line):
            network.append(line)
        match = OPENED.search(line)
        if match:
            path = match.group(1).encode().decode("unicode_escape")
            opened.append(os.path.normpath(os.path.join(top / "repo", path)))
    return result, opened, network


def main(words: list[str]) -> int:
    if shutil.which("strace") is None:
        print("strace is not installed (apt-get install strace)")
        return 2
    bad = 0
    with tempfile.TemporaryDirectory(prefix="dsconfig-strace-") as folder:
        top = build(Path(folder))
        (top / "tmp").mkdir(exist_ok=True)
        places = allowed_places(top)
        print(f"{'case':<28} {'exit':>4} {'opened':>7}  outside / network")
        for name, argv in CASES:
            if words and not any(word in name for word in words):
                continue
            result, opened, network = trace(top, argv)
            outside = [path for path in forbidden(opened, top, places) if not path.startswith(SYSTEM)]
            leaked = SECRET in result.stdout + result.stderr
            bad += bool(outside or network or leaked)
            note = "; ".join(filter(None, [", ".join(outside[:3]), "; ".join(network[:2]), "SECRET IN OUTPUT" * leaked]))
            print(f"{name:<28} {result.returncode:>4} {len(opened):>7}  {note or 'none'}")
    print(f"\n{bad} run(s) opened a file outside what they were given, used the network or leaked the secret")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
