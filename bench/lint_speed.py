#!/usr/bin/env python3
"""Cold `dsconfig lint` on one file against DeepSpeed's own check of the same file, and against the
interpreter starting and doing nothing, in one run.

All are whole processes started from scratch, as a user or a CI step runs them:

    dsconfig lint FILE
    python -c "import deepspeed; DeepSpeedConfig(FILE)"
    python -c pass

Prints the median of several runs of each and the ratios (targets: at least 20x faster than DeepSpeed's
check, at most 5x `python -c pass`). DeepSpeed must be importable for the
comparison (it is in the test extras); without it only dsconfig is timed.

    python bench/lint_speed.py [FILE] [--runs 21] [--deepspeed-runs 5]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
from pathlib import Path

from timing import dsconfig, summary, time_command

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_FILE = ROOT / "examples" / "ds_config_zero3.json"
DEEPSPEED_CHECK = (
    "import logging, deepspeed\n"
    "logging.getLogger('DeepSpeed').setLevel(logging.ERROR)\n"
    "from deepspeed.runtime.config import DeepSpeedConfig\n"
    "try:\n"
    "    DeepSpeedConfig({path!r})\n"
    "except Exception as error:\n"
    "    print(type(error).__name__, error)\n"
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", nargs="?", default=str(DEFAULT_FILE))
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--deepspeed-runs", type=int, default=5)
    args = parser.parse_args()
    path = os.path.abspath(args.file)

    ours = time_command(dsconfig("lint", path), args.runs)
    idle = time_command([sys.executable, "-c", "pass"], args.runs)
    print(f"file: {path}")
    print(summary("dsconfig lint", ours))
    print(summary("python -c pass", idle))
    print(f"{'startup ratio':<22} dsconfig lint takes {statistics.median(ours) / statistics.median(idle):.1f}x "
          "python -c pass")
    if importlib.util.find_spec("deepspeed") is None:
        print("deepspeed is not installed: install the test extras for the comparison")
        return 0
    theirs = time_command([sys.executable, "-c", DEEPSPEED_CHECK.format(path=path)], args.deepspeed_runs)
    print(summary("DeepSpeedConfig", theirs))
    print(f"{'ratio':<22} dsconfig is {statistics.median(theirs) / statistics.median(ours):.1f}x faster")
    return 0


if __name__ == "__main__":
    sys.exit(main())
