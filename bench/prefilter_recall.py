"""The script prefilter loses nothing: DS8xx findings with it and with every script parsed, on real trees.

A folder walk parses only the scripts where a DS8xx check can start (dsconfig/training/prefilter.py) and
follows imports through their text until a check needs more. Here each repository under --root is linted
twice per world-size setting in fresh processes: as shipped, and with every walked script an entry for every
check and every imported module parsed for its imports (the reading before the prefilter). The DS8xx findings
(file, line, column, code, message) must be the same; the times show what the prefilter saves.

    python bench/prefilter_recall.py --root /work/realrepos [--only NAME ...] [--python PY]

Exit status 1 when any repository differs.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUNS = {"plain": [], "ws8": ["--world-size", "8"]}

# Run in the child: `everything` makes every walked script an entry for all checks and resolves imports
# from the parsed tree, as before the prefilter
DRIVER = r"""
import sys
mode = sys.argv.pop(1)
if mode == "everything":
    from dsconfig.training import prefilter, pysource, reading
    reading.starts = lambda *args, **kwargs: prefilter.ALL
    pysource.Source.import_targets = lambda self: sorted(set(self.imports.values()))
sys.argv[0] = "dsconfig"
from dsconfig.cli import main
main()
"""


def findings(python: str, folder: str, mode: str, extra: list[str]) -> tuple[set, float, int]:
    argv = [python, "-c", DRIVER, mode, "lint", ".", "--format", "json", "--select", "DS8", *extra]
    env = {**os.environ, "PYTHONPATH": ROOT, "NO_COLOR": "1", "DSCONFIG_NO_CACHE": "1"}  # both runs full
    env.pop("CI", None)
    env.pop("GITHUB_ACTIONS", None)
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=folder, capture_output=True, env=env, stdin=subprocess.DEVNULL)
    seconds = time.perf_counter() - start
    try:
        report = json.loads(done.stdout or b"[]")
    except json.JSONDecodeError:
        return {("(no JSON)", done.stderr.decode(errors="replace")[-300:])}, seconds, done.returncode
    rows = report if isinstance(report, list) else report.get("findings", [])
    found = {(row.get("file"), row.get("line"), row.get("column"), row.get("code"), row.get("message"))
             for row in rows}
    return found, seconds, done.returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", required=True, help="folder of fetched repositories, one folder each")
    parser.add_argument("--only", nargs="*", help="repository folder names to run (default: all)")
    parser.add_argument("--python", default=sys.executable)
    args = parser.parse_args()
    names = sorted(name for name in os.listdir(args.root) if os.path.isdir(os.path.join(args.root, name)))
    if args.only:
        names = [name for name in names if name in args.only]
    differing = 0
    print(f"{'repository':44} {'run':5} {'found':>5} {'same':>5} {'shipped s':>9} {'all parsed s':>12}")
    for name in names:
        folder = os.path.join(args.root, name)
        for run, extra in RUNS.items():
            shipped, shipped_s, _ = findings(args.python, folder, "shipped", extra)
            everything, everything_s, _ = findings(args.python, folder, "everything", extra)
            same = shipped == everything
            differing += not same
            print(f"{name:44} {run:5} {len(everything):5} {'yes' if same else 'NO':>5} {shipped_s:9.2f} "
                  f"{everything_s:12.2f}", flush=True)
            for row in sorted(everything - shipped, key=str):
                print(f"    lost:  {row}")
            for row in sorted(shipped - everything, key=str):
                print(f"    added: {row}")
    print(f"{differing} runs differ")
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
