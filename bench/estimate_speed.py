#!/usr/bin/env python3
"""Cold `dsconfig estimate` (no --profile): whole processes started from scratch, median of several.

The target is a median under 150 ms (see timing.py for what "cold" means). The script also
checks that the run imported none of torch, transformers, deepspeed or accelerate.

    python bench/estimate_speed.py [--runs 21] [-- extra estimate arguments]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from timing import report_cold

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_ARGS = ["--model", "llama-3-8b", "--seq-len", "4096", "--micro-batch", "2", "--zero-stage", "3",
                "--gpus", "8", "--nodes", "2", "--gradient-checkpointing", "--gpu", "H100-80GB"]
TARGET_MS = 150.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("extra", nargs="*", help="estimate arguments (default: a Llama-3-8B ZeRO-3 question)")
    args = parser.parse_args()
    estimate_args = args.extra or DEFAULT_ARGS
    return report_cold("estimate", estimate_args, args.runs, TARGET_MS, cwd=ROOT)

if __name__ == "__main__":
    sys.exit(main())
