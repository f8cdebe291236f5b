#!/usr/bin/env python3
"""Cold `dsconfig explain` against the real chain it replays, in one run.

Both are whole processes started from scratch. dsconfig:

    dsconfig explain examples/ds_config_auto.json --training-args examples/training_args.json \
        --world-size 8 --model llama-3-8b --format json

and the real code answering the same question for the same files (at world size 1: without a
process group the Trainer sees one process):

    TrainingArguments(deepspeed=config, **args)      (transformers: HfTrainerDeepSpeedConfig's fill)
    plugin.set_mixed_precision(...)                  (Accelerate, as Trainer(...) calls it)
    hf_ds_config.trainer_config_finalize(args, model, steps)   (the hidden-size and step fills)
    DeepSpeedConfig(plugin.deepspeed_config)         (DeepSpeed's defaults)

Prints the medians and the ratio, and the heavy packages the explain path imported (none expected).
Without transformers installed (the test extras) only dsconfig is timed.

    python bench/explain_speed.py [--runs 21] [--real-runs 5]
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
from pathlib import Path

from timing import dsconfig, heavy_imports, summary, time_command

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "examples" / "ds_config_auto.json"
ARGS = ROOT / "examples" / "training_args.json"
TARGET_MS = 150
EXPLAIN = ["explain", str(CONFIG), "--training-args", str(ARGS), "--world-size", "8", "--model", "llama-3-8b",
           "--format", "json"]
REAL_CHAIN = f"""import json, logging, os, tempfile, types
logging.disable(logging.CRITICAL)
from transformers import TrainingArguments
from deepspeed.runtime.config import DeepSpeedConfig
config = json.load(open({str(CONFIG)!r}))
values = json.load(open({str(ARGS)!r}))
values["output_dir"] = tempfile.mkdtemp()
args = TrainingArguments(deepspeed=config, use_cpu=True, report_to=[], **values)
plugin = args.deepspeed_plugin
plugin.set_mixed_precision(args.mixed_precision)
model = types.SimpleNamespace(config=types.SimpleNamespace(hidden_size=4096))
plugin.hf_ds_config.trainer_config_finalize(args, model, 1000)
DeepSpeedConfig(plugin.deepspeed_config)
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--real-runs", type=int, default=5)
    args = parser.parse_args()

    ours = time_command(dsconfig(*EXPLAIN), args.runs)
    print(f"command: dsconfig {' '.join(EXPLAIN)}")
    print(summary("dsconfig explain", ours) + f"; target < {TARGET_MS} ms")
    heavy = heavy_imports("explain", EXPLAIN[1:])
    print(f"heavy imports on the explain path: {', '.join(heavy) if heavy else 'none'}")
    status = 0 if statistics.median(ours) < TARGET_MS and not heavy else 1
    if importlib.util.find_spec("transformers") is None or importlib.util.find_spec("deepspeed") is None:
        print("transformers or deepspeed is not installed: install the test extras for the comparison")
        return status
    theirs = time_command([sys.executable, "-c", REAL_CHAIN], args.real_runs, ok=(0,))
    print(summary("the real chain", theirs))
    print(f"{'ratio':<22} dsconfig is {statistics.median(theirs) / statistics.median(ours):.1f}x faster")
    return status


if __name__ == "__main__":
    sys.exit(main())
