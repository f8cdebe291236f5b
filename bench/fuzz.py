"""The long fuzz run: mutate real configs (every rule example, and ../shared/corpus when present) and
random bytes, and feed them to every way in: `lint` (as a DeepSpeed JSON, an Accelerate YAML or another
file under every target, with the fixes applied), `explain`, `convert`, the Python API and the settings
file. Count what crashed, and every file the process opened outside what it was given (an audit hook
on every open; tests/fuzz_targets.Watch). tests/test_fuzz.py runs the same checks briefly in every test
run; this runs for as long as asked.

    python bench/fuzz.py                      # 60 seconds
    python bench/fuzz.py --seconds 600 --seed 7
    python bench/fuzz.py --inputs 100000
    python bench/fuzz.py --only explain,convert

A crashing input is written to bench/fuzz-crashes/ (name, way in, bytes) with its traceback; the exit
status is 1 when there is any crash or any read outside.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import sys
import tempfile
import time
import traceback

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, ROOT)
from tests.fuzz_targets import (EXPLAIN_NAMES, NAMES, TARGETS, Watch, check_api, check_convert,  # noqa: E402
                                check_explain, check_lint, check_scanners, check_settings, mutate, seeds)

# How often each way in is taken: lint is the one CI runs on every file, the others run on one file each.
WAYS = (("lint", 70), ("explain", 10), ("convert", 8), ("api", 7), ("settings", 5))
SETTINGS_SEED = b'''target = "hf-trainer"
world-sizes = [8, 16]
select = ["DS", "ACC"]
ignore = ["DS509"]
exclude = ["legacy/", "**/generated/*.json"]
[per-file-ignores]
"configs/old/*.json" = ["DS104"]
[[suppress]]
files = "configs/ds_z3.json"
pointer = "/zero_optimization/offload_param"
rules = ["DS301"]
reason = "measured"
'''


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
    parser.add_argument("--only", default=None, help="comma-separated ways in: " + ",".join(w for w, _ in WAYS))
    parser.add_argument("--time-limit", type=int, default=10, help="seconds one input may take (default 10)")
    args = parser.parse_args()
    signal.signal(signal.SIGALRM, _alarm)
    ways = [(way, weight) for way, weight in WAYS if args.only is None or way in args.only.split(",")]

    rng = random.Random(args.seed)
    corpus = seeds() + [(".dsconfig.toml", SETTINGS_SEED)]
    crashes_dir = os.path.join(ROOT, "bench", "fuzz-crashes")
    folder = tempfile.mkdtemp(prefix="dsconfig-fuzz-")
    watch = Watch(folder)
    ran = crashed = 0
    taken = {way: 0 for way, _ in ways}
    start = time.perf_counter()
    deadline = start + args.seconds
    try:
        while (ran < args.inputs) if args.inputs is not None else (time.perf_counter() < deadline):
            way = rng.choices([w for w, _ in ways], weights=[weight for _, weight in ways])[0]
            name, data = _input(rng, corpus, way)
            ran += 1
            taken[way] += 1
            signal.alarm(args.time_limit)
            try:
                _feed(way, name, data, folder, rng, args.no_fix)
            except Exception:  # noqa: BLE001 - every exception is a finding of this run
                crashed += 1
                watch.paused = True
                _keep(crashes_dir, f"crash-{args.seed}-{ran}", way, name, data)
                watch.paused = False
            finally:
                signal.alarm(0)
            if watch.outside:
                print(f"OPENED OUTSIDE ({way}, {name!r}): {watch.outside[:3]}", flush=True)
                watch.outside.clear()
                crashed += 1
            _empty(folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    elapsed = time.perf_counter() - start
    ways_taken = ", ".join(f"{way} {count}" for way, count in taken.items())
    print(f"{ran} inputs in {elapsed:.0f} s ({ran / elapsed:.0f}/s; {ways_taken}), {len(corpus)} seeds; crashes and "
          f"reads outside: {crashed}")
    return 1 if crashed else 0


def _input(rng: random.Random, corpus, way: str) -> tuple[str, bytes]:
    if way == "settings":
        source = rng.choice([data for name, data in corpus if name == ".dsconfig.toml"] + [b"", b"[tool]\n"])
        return ".dsconfig.toml", mutate(source, rng, rng.randrange(1, 10))
    if rng.random() < 0.1:
        name, data = rng.choice(NAMES), bytes(rng.randrange(256) for _ in range(rng.randrange(0, 600)))
    else:
        name, original = rng.choice(corpus)
        data = mutate(original, rng, rng.randrange(1, 10))
        if rng.random() < 0.3:
            name = rng.choice(NAMES)
    if way in ("explain", "convert"):
        name = name if name in EXPLAIN_NAMES else rng.choice(EXPLAIN_NAMES)
        if name.endswith(".yaml") and rng.random() < 0.5:  # a YAML naming the JSON beside it
            data = data.replace(b"deepspeed_config_file: ", b"deepspeed_config_file: base_ds_config.json #", 1)
    return name, data


def _feed(way: str, name: str, data: bytes, folder: str, rng: random.Random, no_fix: bool) -> None:
    if way == "lint":
        target = rng.choice(TARGETS)
        sizes = None if rng.random() < 0.5 else tuple(rng.randrange(1, 65) for _ in range(rng.randrange(1, 4)))
        check_scanners(data)
        check_lint(name, data, target, sizes, with_fix=not no_fix)
    elif way == "explain":
        check_explain(name, data, folder)
    elif way == "convert":
        check_convert(name, data, folder)
    elif way == "api":
        check_api(data, folder)
    else:
        check_settings(data, folder)


def _keep(crashes_dir: str, stem: str, way: str, name: str, data: bytes) -> None:
    os.makedirs(crashes_dir, exist_ok=True)
    stem = os.path.join(crashes_dir, stem)
    with open(stem + ".bin", "wb") as handle:
        handle.write(data)
    with open(stem + ".txt", "w", encoding="utf-8") as handle:
        handle.write(f"way={way} name={name!r}\n\n{traceback.format_exc()}")
    print(f"CRASH {stem}.txt ({way}): {traceback.format_exc().strip().splitlines()[-1]}", flush=True)


def _empty(folder: str) -> None:
    for entry in os.listdir(folder):
        path = os.path.join(folder, entry)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            os.unlink(path)


if __name__ == "__main__":
    sys.exit(main())
