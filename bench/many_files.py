"""A run over many files: `dsconfig lint DIR` on N small DeepSpeed configs, clean ones and ones that each hold
three findings, in a fresh process; wall time and peak memory (max RSS of the child), median of --runs, and,
when ruff is installed, `ruff check --no-cache` on N small Python files of the same tree shape in the same run.

    python bench/many_files.py                  # 20,000 files of each kind
    python bench/many_files.py --files 100000 --runs 1

Memory should follow the findings, not the number of files: a clean file's document is dropped once it is
checked, and one with findings keeps its text, not its parse tree (dsconfig.engine, dsconfig.document).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLEAN = {"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 2, "gradient_clipping": 1.0,
         "zero_optimization": {"stage": 2}}
WITH_FINDINGS = {"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 2, "train_batch_size": 7.0,
                 "zero_optimization": {"stage": 2, "typo": 1}}  # DS201, DS101, and DS509 (no gradient_clipping)


def build(folder: str, count: int, config: dict | None) -> None:
    """`count` files, 500 per folder: ds_config_N.json holding `config`, or (None) a small Python module."""
    for index in range(count):
        sub = os.path.join(folder, f"d{index // 500}")
        if index % 500 == 0:
            os.makedirs(sub)
        if config is None:
            with open(os.path.join(sub, f"module_{index}.py"), "w") as handle:
                handle.write(f"import os\n\n\ndef f{index}(x):\n    return os.path.join(x, 'a')\n")
        else:
            with open(os.path.join(sub, f"ds_config_{index}.json"), "w") as handle:
                json.dump(config, handle)


def run(argv: list[str], cwd: str) -> tuple[float, float, int]:
    """(seconds, peak RSS in MB, exit status) of one child process."""
    env = {**os.environ, "PYTHONPATH": ROOT, "DSCONFIG_NO_CACHE": "1"}  # full runs, not replays
    start = time.perf_counter()
    child = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    _, status, usage = os.wait4(child.pid, 0)
    return time.perf_counter() - start, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status)


def measure(argv: list[str], cwd: str, runs: int) -> tuple[float, float]:
    results = [run(argv, cwd) for _ in range(runs)]
    return statistics.median(r[0] for r in results), max(r[1] for r in results)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    lint = [sys.executable, "-m", "dsconfig", "lint", "--no-config", "."]
    print(f"{args.files:,} files each; median of {args.runs} runs, peak RSS the largest")
    print(f"{'run':<40} {'time':>8} {'per file':>9} {'peak':>8}")
    with tempfile.TemporaryDirectory(prefix="dsconfig-many-") as top:
        for name, config in (("dsconfig lint, clean configs", CLEAN), ("dsconfig lint, 3 findings each", WITH_FINDINGS)):
            folder = os.path.join(top, name.split(", ")[1].replace(" ", "-"))
            build(folder, args.files, config)
            seconds, peak = measure(lint, folder, args.runs)
            print(f"{name:<40} {seconds:7.1f}s {seconds / args.files * 1000:7.2f}ms {peak:6.0f}MB")
            shutil.rmtree(folder)
        ruff = shutil.which("ruff")
        if ruff:
            folder = os.path.join(top, "python")
            build(folder, args.files, None)
            seconds, peak = measure([ruff, "check", "--no-cache", "--quiet", "."], folder, args.runs)
            print(f"{'ruff check, small Python modules':<40} {seconds:7.1f}s {seconds / args.files * 1000:7.2f}ms "
                  f"{peak:6.0f}MB")
        else:
            print("(ruff is not installed: no peer timing)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
