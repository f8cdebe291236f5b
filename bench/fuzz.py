"""The long fuzz run: mutate real configs (every rule example, and ../shared/corpus when present) and
random bytes, lint each as a DeepSpeed JSON, an Accelerate YAML or another file under every target,
apply the fixes, and count what raised. tests/test_fuzz.py runs the same checks briefly in every
test run; this runs for as long as asked.

    python bench/fuzz.py                      # 60 seconds
    python bench/fuzz.py --seconds 600 --seed 7
    python bench/fuzz.py --inputs 100000

A crashing input is written to bench/fuzz-crashes/ (name, target, world sizes, bytes) with its
traceback; the exit status is 1 when there is any.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import sys
import time
import traceback

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, ROOT)
from tests.fuzz_targets import NAMES, TARGETS, check_lint, check_scanners, mutate, seeds  # noqa: E402


class Hang(Exception):
    """One input ran past --time-limit: a hang is a crash too."""


def _alarm(signum, frame):
    raise Hang("no result within the time limit")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="stop after this long (default 60)")
    parser.add_argument("--inputs", type=int, default=None, help="stop after this many inputs instead")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-fix", action="store_true", help="skip the --fix pass (faster)")
    parser.add_argument("--time-limit", type=int, default=5, help="seconds one input may take (default 5)")
    args = parser.parse_args()
    signal.signal(signal.SIGALRM, _alarm)

    rng = random.Random(args.seed)
    corpus = seeds()
    crashes_dir = os.path.join(ROOT, "bench", "fuzz-crashes")
    ran = crashed = parsed_ok = 0
    start = time.perf_counter()
    deadline = start + args.seconds
    while (ran < args.inputs) if args.inputs is not None else (time.perf_counter() < deadline):
        if rng.random() < 0.1:
            name, data = rng.choice(NAMES), bytes(rng.randrange(256) for _ in range(rng.randrange(0, 600)))
        else:
            name, original = rng.choice(corpus)
            data = mutate(original, rng, rng.randrange(1, 10))
            if rng.random() < 0.3:
                name = rng.choice(NAMES)
        target = rng.choice(TARGETS)
        sizes = None if rng.random() < 0.5 else tuple(rng.randrange(1, 65) for _ in range(rng.randrange(1, 4)))
        ran += 1
        signal.alarm(args.time_limit)
        try:
            check_scanners(data)
            findings = check_lint(name, data, target, sizes, with_fix=not args.no_fix)
            parsed_ok += not any(f.code == "DS000" for f in findings)
        except Exception:  # noqa: BLE001 - every exception is a finding of this run
            crashed += 1
            os.makedirs(crashes_dir, exist_ok=True)
            stem = os.path.join(crashes_dir, f"crash-{args.seed}-{ran}")
            with open(stem + ".bin", "wb") as handle:
                handle.write(data)
            with open(stem + ".txt", "w", encoding="utf-8") as handle:
                handle.write(f"name={name} target={target} world_sizes={sizes}\n\n{traceback.format_exc()}")
            print(f"CRASH {stem}.txt: {traceback.format_exc().strip().splitlines()[-1]}", flush=True)
        finally:
            signal.alarm(0)
    elapsed = time.perf_counter() - start
    print(f"{ran} inputs in {elapsed:.0f} s ({ran / elapsed:.0f}/s), {parsed_ok} of them loadable by their "
          f"target, {len(corpus)} seeds; crashes: {crashed}")
    return 1 if crashed else 0


if __name__ == "__main__":
    sys.exit(main())
