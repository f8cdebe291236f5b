"""Whole-process timings shared by the bench scripts.

"Cold" means a fresh interpreter per run, as a user or a CI step starts the command; the
first run is not counted (it warms the disk cache and writes the bytecode cache, which an
installed package has anyway: pip compiles it at install time). PYTHONDONTWRITEBYTECODE is
dropped for the same reason, so an editable checkout is measured like an installed one.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import time


def environment() -> dict:
    """Every timed run is a full one: the result cache (dsconfig/cache.py) would replay the second."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["DSCONFIG_NO_CACHE"] = "1"
    return env


def dsconfig(*args: str) -> list[str]:
    """The installed console script (what users run), else `python -m dsconfig`."""
    script = shutil.which("dsconfig")
    return [script, *args] if script else [sys.executable, "-m", "dsconfig", *args]


def time_command(command: list[str], runs: int, cwd=None, ok=(0, 1)) -> list[float]:
    """Milliseconds per run; exits when the command fails with a status outside `ok`."""
    env = environment()
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=cwd)
    timings = []
    for _ in range(runs):
        start = time.perf_counter()
        result = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=cwd)
        timings.append((time.perf_counter() - start) * 1000)
        if result.returncode not in ok:
            sys.exit(f"{' '.join(command)} failed: {result.stderr.decode().strip()}")
    return timings


def summary(label: str, timings: list[float]) -> str:
    return (f"{label:<22} median {statistics.median(timings):7.1f} ms   "
            f"(min {min(timings):.1f}, max {max(timings):.1f}, {len(timings)} runs)")


HEAVY = ("torch", "transformers", "deepspeed", "accelerate")


def heavy_imports(subcommand: str, args: list[str], cwd=None) -> list[str]:
    """Modules from HEAVY that `dsconfig SUBCOMMAND ARGS` imports (there should be none)."""
    probe = ("import sys\n"
             "from dsconfig.cli import main\n"
             f"sys.argv = ['dsconfig', {subcommand!r}] + {args!r}\n"
             "try:\n"
             "    main()\n"
             "except SystemExit:\n"
             "    pass\n"
             f"print('HEAVY:' + ','.join(m for m in {HEAVY!r} if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=cwd).stdout
    marked = [line for line in out.splitlines() if line.startswith("HEAVY:")]
    if not marked:
        sys.exit("the import probe did not run")
    return [m for m in marked[-1][len("HEAVY:"):].split(",") if m]


def report_cold(subcommand: str, args: list[str], runs: int, target_ms: float, cwd=None, ok=(0, 1)) -> int:
    """Time cold `dsconfig SUBCOMMAND ARGS`, print the median against the target and the heavy imports;
    0 when within the target and light."""
    command = dsconfig(subcommand, *args)
    timings = time_command(command, runs, cwd=cwd, ok=ok)
    print(f"command: {' '.join(command)}")
    print(summary(f"dsconfig {subcommand}", timings) + f"; target < {target_ms:.0f} ms")
    heavy = heavy_imports(subcommand, args, cwd=cwd)
    print(f"heavy imports on the {subcommand} path: {', '.join(heavy) if heavy else 'none'}")
    return 0 if statistics.median(timings) < target_ms and not heavy else 1
