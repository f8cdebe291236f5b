"""What `dsconfig.check` costs a training script: `import dsconfig`, then the first check.

    python bench/api.py            # 15 cold runs per measurement
    python bench/api.py 30         # more runs

Each run is a fresh interpreter running this checkout (timing.py says what "cold" means). Printed:
the whole-process wall time of `python -c pass`, of `import dsconfig`, and of `import dsconfig` plus
one check (a DeepSpeed config dict, a ds_config.json, an Accelerate YAML with the JSON it names),
as medians; `python -X importtime`'s cumulative time for `import dsconfig`; the first and second
check timed inside the process; and any heavy package (torch, deepspeed, accelerate, transformers)
or PyYAML the check imported. Exit 1 when a check imports a heavy package, or PyYAML for JSON.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import HEAVY, environment, summary, time_command  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "tests", "fixtures", "corpus")
DICT = ("{'train_batch_size': 'auto', 'train_micro_batch_size_per_gpu': 'auto', "
        "'gradient_accumulation_steps': 'auto', 'zero_optimization': {'stage': 3}}")
CHECKS = {  # label -> the call, made in a folder holding the corpus files it names
    "dict": f"dsconfig.check({DICT}, world_size=8)",
    "json file": "dsconfig.check('ds_zero3_trainer_auto.json', world_size=8, target='hf-trainer')",
    "yaml file": "dsconfig.check('accelerate_deepspeed_config_file.yaml')",
}
# Times the first and the second call inside the process, and lists what the check imported.
PROBE = """import sys, time
start = time.perf_counter()
import dsconfig
imported = time.perf_counter()
{call}
first = time.perf_counter()
{call}
second = time.perf_counter()
print(f"{{(imported - start) * 1e3:.2f}} {{(first - imported) * 1e3:.2f}} {{(second - first) * 1e3:.2f}}",
      ",".join(m for m in {heavy!r} if m in sys.modules) or "-")
"""


def _run(code: str, cwd: str, *flags: str) -> subprocess.CompletedProcess:
    result = subprocess.run([sys.executable, *flags, "-c", code], capture_output=True, text=True, cwd=cwd,
                            env=_env(), check=False)
    if result.returncode != 0:
        sys.exit(f"{code!r} failed: {result.stderr.strip()}")
    return result


def _env() -> dict:
    env = environment()
    env["PYTHONPATH"] = ROOT  # this checkout, not whichever dsconfig is installed
    return env


def import_time_us(cwd: str) -> int:
    """`python -X importtime -c "import dsconfig"`: the cumulative microseconds of the dsconfig line."""
    stderr = _run("import dsconfig", cwd, "-X", "importtime").stderr
    for line in stderr.splitlines():
        parts = [part.strip() for part in line.split("|")]
        if len(parts) == 3 and parts[2] == "dsconfig":
            return int(parts[1])
    sys.exit("no dsconfig line in -X importtime's output")


def main() -> int:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    status = 0
    with tempfile.TemporaryDirectory() as folder:
        for name in ("ds_zero3_trainer_auto.json", "accelerate_deepspeed_config_file.yaml"):
            shutil.copy(os.path.join(CORPUS, name), folder)
        os.environ["PYTHONPATH"] = ROOT  # time_command runs with this process's environment
        baseline = time_command([sys.executable, "-c", "pass"], runs, cwd=folder)
        imported = time_command([sys.executable, "-c", "import dsconfig"], runs, cwd=folder)
        print(summary("python -c pass", baseline))
        print(summary("import dsconfig", imported) +
              f"; +{statistics.median(imported) - statistics.median(baseline):.1f} ms over python")
        cumulative = statistics.median(import_time_us(folder) for _ in range(runs))
        print(f"{'-X importtime':<22} dsconfig cumulative median {cumulative / 1000:.2f} ms")
        for label, call in CHECKS.items():
            timings = time_command([sys.executable, "-c", f"import dsconfig\n{call}"], runs, cwd=folder)
            print(summary(f"+ check({label})", timings) +
                  f"; +{statistics.median(timings) - statistics.median(imported):.1f} ms over the import")
            inside = [_run(PROBE.format(call=call, heavy=(*HEAVY, "yaml")), folder).stdout.split() for _ in range(runs)]
            first = statistics.median(float(row[1]) for row in inside)
            second = statistics.median(float(row[2]) for row in inside)
            loaded = inside[-1][3]
            print(f"{'':<22} in process: first check {first:.1f} ms, second {second:.1f} ms; "
                  f"imported of torch/deepspeed/accelerate/transformers/yaml: {loaded}")
            heavy = [m for m in loaded.split(",") if m in HEAVY]
            if heavy or (label != "yaml file" and "yaml" in loaded):
                status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
