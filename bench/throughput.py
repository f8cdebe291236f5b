#!/usr/bin/env python3
"""In-process throughput: lint all of ../shared/corpus at world sizes 1, 2, 4 and 8 in one process,
against DeepSpeed's own in-process check of the same files at the same world sizes.

dsconfig: one `engine.lint_files` call per file with world_sizes=(1, 2, 4, 8): every check it has
(hjson and json.load readings, schema, batch arithmetic at each size, initialize-time and Trainer
rules, Accelerate YAMLs and their pairs). DeepSpeed: for every JSON file and world size, the config
loaded as `deepspeed.initialize` loads it, then `DeepSpeedConfig(...)` with torch.distributed's
world size patched in, as tests/oracle.py does. DeepSpeed cannot read the Accelerate YAMLs, so
dsconfig's pass holds more work than DeepSpeed's; the JSON-only figure is printed too.

Both sides are warmed up once (imports, schemas), then the median of --repeats whole passes counts.

    python bench/throughput.py [--repeats 5] [--corpus ../shared/corpus]
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
WORLD_SIZES = (1, 2, 4, 8)
TARGET_RATIO = 2.0


def corpus_files(corpus: Path) -> list[str]:
    manifest = corpus / "MANIFEST.tsv"
    rows = manifest.read_text(encoding="utf-8").splitlines()[1:]
    return [str(corpus / row.split("\t")[0]) for row in rows if row.strip()]


def time_passes(one_pass, repeats: int) -> list[float]:
    one_pass()  # warm-up: imports, schemas, caches
    timings = []
    for _ in range(repeats):
        start = time.perf_counter()
        one_pass()
        timings.append(time.perf_counter() - start)
    return timings


def dsconfig_pass(files: list[str]):
    from dsconfig import engine
    options = engine.Options(world_sizes=WORLD_SIZES)

    def run():
        count = 0
        for path in files:
            count += len(engine.lint_files([path], options).findings)
        return count
    return run


@contextlib.contextmanager
def _world(size: int):
    import deepspeed.comm as ds_comm
    saved = ds_comm.get_world_size, ds_comm.get_rank
    ds_comm.get_world_size = lambda group=None: size
    ds_comm.get_rank = lambda group=None: 0
    try:
        yield
    finally:
        ds_comm.get_world_size, ds_comm.get_rank = saved


def deepspeed_pass(files: list[str]):
    from deepspeed.runtime.config import DeepSpeedConfig
    from deepspeed.runtime.tensor_parallel.init_utils import load_ds_config
    for name in ("DeepSpeed", "deepspeed"):
        logging.getLogger(name).setLevel(logging.CRITICAL)

    def run():
        rejected = 0
        for path in files:
            for size in WORLD_SIZES:
                try:
                    config = load_ds_config(path)
                    with _world(size):
                        DeepSpeedConfig(config)
                except Exception:  # noqa: BLE001 - a rejection is a result, not a failure
                    rejected += 1
        return rejected
    return run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--corpus", default=str(ROOT.parent / "shared" / "corpus"))
    args = parser.parse_args()
    corpus = Path(args.corpus)
    if not (corpus / "MANIFEST.tsv").exists():
        print(f"no corpus at {corpus}: nothing to measure")
        return 0
    files = corpus_files(corpus)
    json_files = [path for path in files if path.endswith(".json")]

    ours_all = time_passes(dsconfig_pass(files), args.repeats)
    ours_json = time_passes(dsconfig_pass(json_files), args.repeats)
    with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):  # DeepSpeed prints while importing
        theirs = time_passes(deepspeed_pass(json_files), args.repeats)

    checks_all, checks_json = len(files) * len(WORLD_SIZES), len(json_files) * len(WORLD_SIZES)
    ours_all_s, ours_json_s, theirs_s = (statistics.median(t) for t in (ours_all, ours_json, theirs))
    print(f"corpus: {len(files)} files ({len(json_files)} JSON), world sizes {','.join(map(str, WORLD_SIZES))}; "
          f"median of {args.repeats} passes")
    print(f"{'dsconfig, all files':<26} {ours_all_s * 1000:8.1f} ms  {checks_all / ours_all_s:8.0f} checks/s")
    print(f"{'dsconfig, JSON files':<26} {ours_json_s * 1000:8.1f} ms  {checks_json / ours_json_s:8.0f} checks/s")
    print(f"{'DeepSpeedConfig, JSON':<26} {theirs_s * 1000:8.1f} ms  {checks_json / theirs_s:8.0f} checks/s")
    throughput = (checks_all / ours_all_s) / (checks_json / theirs_s)
    print(f"{'throughput ratio':<26} {throughput:.1f}x DeepSpeed's checks per second, every file and more checks "
          f"each (target {TARGET_RATIO:.0f}x)")
    print(f"{'same JSON files':<26} {theirs_s / ours_json_s:.1f}x faster; the whole corpus takes "
          f"{ours_all_s / theirs_s:.2f} of DeepSpeed's time for its JSON files alone")
    return 0


if __name__ == "__main__":
    sys.exit(main())
