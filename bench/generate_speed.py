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
import sys
from pathlib import Path

from timing import report_cold

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_ARGS = ["--gpus", "2", "--gpu-mem", "96GB", "--global-batch", "64", "--stdout"]
TARGET_MS = 150.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("extra", nargs="*", help="generate arguments (default: 2 x 96 GB, global batch 64)")
    args = parser.parse_args()
    generate_args = args.extra or DEFAULT_ARGS
    if "--stdout" not in generate_args:
        generate_args = [*generate_args, "--stdout"]
    return report_cold("generate", generate_args, args.runs, TARGET_MS, cwd=ROOT, ok=(0,))

if __name__ == "__main__":
    sys.exit(main())
