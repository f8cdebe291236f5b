#!/usr/bin/env python3
"""Every speed figure in one run, each from its own script:

  lint_speed.py      cold `dsconfig lint` on one file vs `DeepSpeedConfig(...)` in a fresh process
                     (targets: median under 80 ms, at least 20x faster)
  throughput.py      all of ../shared/corpus at world sizes 1, 2, 4, 8 in one process vs DeepSpeed's
                     in-process checks (target: at least 2x its checks per second)
  estimate_speed.py  cold `dsconfig estimate` (target: median under 150 ms)
  generate_speed.py  cold `dsconfig generate` (target: median under 150 ms)
  explain_speed.py   cold `dsconfig explain` vs the real Trainer/Accelerate/DeepSpeed chain in a fresh
                     process (target: median under 150 ms)
  api.py             `import dsconfig` and the first `dsconfig.check` (the cost to a training script)

    python bench/speed.py
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCRIPTS = ("lint_speed.py", "throughput.py", "estimate_speed.py", "generate_speed.py", "explain_speed.py", "api.py")


def main() -> int:
    status = 0
    for script in SCRIPTS:
        print(f"== {script}", flush=True)
        status |= subprocess.run([sys.executable, str(HERE / script)], cwd=HERE).returncode
        print(flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
