#!/usr/bin/env python3
"""Cold `dsconfig generate`: whole processes started from scratch, median of several.

The target is a median under 150 ms (see timing.py for what "cold" means). Each run prints the
files (--stdout) rather than writing them, so runs do not collide; writing two small files adds
well under a millisecond. The script also checks that the run imported none of torch,
transformers, deepspeed or accelerate.

    python bench/generate_speed.py [--runs 21] [-- extra generate arguments]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
from pathlib import Path

from timing import dsconfig, summary, time_command

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_ARGS = ["--gpus", "2", "--gpu-mem", "96GB", "--global-batch", "64", "--stdout"]
HEAVY = ("torch", "transformers", "deepspeed", "accelerate")
TARGET_MS = 150.0


def heavy_imports(args: list[str]) -> list[str]:
    """Modules from HEAVY that the generate path imports (there should be none)."""
    probe = ("import sys, runpy\n"
             f"sys.argv = ['dsconfig generate'] + {args!r}\n"
             "try:\n"
             "    runpy.run_module('dsconfig.generate', run_name='__main__')\n"
             "except SystemExit:\n"
             "    pass\n"
             f"print('HEAVY:' + ','.join(m for m in {HEAVY!r} if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT).stdout
    marked = [line for line in out.splitlines() if line.startswith("HEAVY:")]
    if not marked:
        sys.exit("the import probe did not run")
    return [m for m in marked[-1][len("HEAVY:"):].split(",") if m]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("extra", nargs="*", help="generate arguments (default: 2 x 96 GB, global batch 64)")
    args = parser.parse_args()
    generate_args = args.extra or DEFAULT_ARGS
    if "--stdout" not in generate_args:
        generate_args = [*generate_args, "--stdout"]
    cmd = dsconfig("generate", *generate_args)
    timings = time_command(cmd, args.runs, cwd=ROOT, ok=(0,))
    median = statistics.median(timings)
    print(f"command: {' '.join(cmd)}")
    print(summary("dsconfig generate", timings) + f"; target < {TARGET_MS:.0f} ms")
    heavy = heavy_imports(generate_args)
    print(f"heavy imports on the generate path: {', '.join(heavy) if heavy else 'none'}")
    return 0 if median < TARGET_MS and not heavy else 1


if __name__ == "__main__":
    sys.exit(main())
