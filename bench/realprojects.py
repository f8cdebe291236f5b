"""`dsconfig lint .` on real training repositories, as a new user runs it: precision per rule, crashes and times.

The repositories are fetched snapshots kept outside this repository (read-only; one folder each under --root,
with an optional REPOS.tsv of `repo<TAB>commit<TAB>shape<TAB>files` naming them). Only facts about them live
here: bench/realprojects_verdicts.tsv holds, per error and warning, the verdict of someone who read it against
the project and the real library (repository, commit, run, file, line, rule, true/false, reason).

    python bench/realprojects.py --root /work/realrepos --python /path/to/bare-venv/bin/python
    python bench/realprojects.py --root /work/realrepos --ruff            # ruff check on each tree, same run
    python bench/realprojects.py --root /work/realrepos --unjudged        # list findings with no verdict yet

Each repository is linted twice in a fresh process, `dsconfig lint .` (what CI does first) and
`dsconfig lint . --world-size 8`, in the repository's folder, with its own settings files honoured as a user's
would be, both full runs (the result cache off); then `dsconfig lint .` twice more sharing a fresh cache folder,
the second timed ("rerun": the unchanged tree). Printed: per repository the exit status, errors and warnings,
time and peak memory; per rule the
findings judged true and false and the precision; the repositories that would fail CI on a false error.
"""

from __future__ import annotations

import argparse
import collections
import csv
import json
import os
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VERDICTS = os.path.join(ROOT, "bench", "realprojects_verdicts.tsv")
RUNS = {"plain": [], "ws8": ["--world-size", "8"]}
VERDICT_FIELDS = ("repo", "commit", "run", "file", "line", "code", "verdict", "reason")


class Run(collections.namedtuple("Run", "repo run status seconds mb findings crashed stderr")):
    """One `dsconfig lint .` of one repository."""


def run_measured(argv: list[str], cwd: str, cache: str | None = None) -> tuple[int, float, float, bytes, bytes]:
    """`cache`: the result cache's folder for this run; without one the run is a full (cold) one."""
    env = {**os.environ, "PYTHONPATH": ROOT, "NO_COLOR": "1", "DSCONFIG_NO_CACHE": "1"}
    if cache is not None:
        env.pop("DSCONFIG_NO_CACHE")
        env["DSCONFIG_CACHE_DIR"] = cache
    env.pop("CI", None)  # the run a developer sees, not the GitHub format
    env.pop("GITHUB_ACTIONS", None)
    out_path, err_path = os.path.join(_scratch(), "out"), os.path.join(_scratch(), "err")
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        start = time.perf_counter()
        process = subprocess.Popen(argv, cwd=cwd, stdout=out, stderr=err, stdin=subprocess.DEVNULL, env=env)
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - start
    with open(out_path, "rb") as out, open(err_path, "rb") as err:
        return os.waitstatus_to_exitcode(status), seconds, usage.ru_maxrss / 1024, out.read(), err.read()


def _scratch() -> str:
    folder = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"dsconfig-realprojects-{os.getpid()}")
    os.makedirs(folder, exist_ok=True)
    return folder


def lint_repo(folder: str, repo: str, run: str, python: str) -> Run:
    argv = [python, "-m", "dsconfig", "lint", ".", "--format", "json", *RUNS[run]]
    status, seconds, mb, out, err = run_measured(argv, folder)
    try:
        findings = json.loads(out or b"[]")
    except ValueError:
        findings = []
    stderr = err.decode("utf-8", "replace")
    crashed = status not in (0, 1) or "Traceback" in stderr or "internal error" in stderr
    return Run(repo, run, status, seconds, mb, findings, crashed, stderr.strip())


def rerun_time(folder: str, python: str) -> tuple[float, float]:
    """`dsconfig lint .` again on the unchanged tree: the second of two runs sharing a fresh cache folder."""
    cache = os.path.join(_scratch(), "cache")
    shutil.rmtree(cache, ignore_errors=True)
    argv = [python, "-m", "dsconfig", "lint", ".", "--format", "json"]
    run_measured(argv, folder, cache)
    _, seconds, mb, _, _ = run_measured(argv, folder, cache)
    return seconds, mb


def ruff_time(folder: str) -> tuple[float, float] | None:
    ruff = shutil.which("ruff") or os.path.join(os.path.dirname(sys.executable), "ruff")
    if not os.path.exists(ruff):
        return None
    _, seconds, mb, _, _ = run_measured([ruff, "check", "--no-cache", "--quiet", "--isolated", "--exit-zero", "."],
                                        folder)
    return seconds, mb


def load_verdicts(path: str) -> dict:
    """(repo, run, file, line, code) -> (verdict, reason); run `*` stands for both runs."""
    verdicts = {}
    if not os.path.exists(path):
        return verdicts
    with open(path, encoding="utf-8", newline="") as handle:
        for row in csv.DictReader((line for line in handle if not line.startswith("#")), delimiter="\t"):
            key = (row["repo"], row["run"], row["file"], int(row["line"]), row["code"])
            verdicts[key] = (row["verdict"], row["reason"])
    return verdicts


def verdict_of(verdicts: dict, repo: str, run: str, finding: dict):
    file = finding["file"].removeprefix("./")
    for which in (run, "*"):
        found = verdicts.get((repo, which, file, finding["line"], finding["code"]))
        if found:
            return found
    return None


REPOSITORIES = os.path.join(ROOT, "bench", "realprojects_repos.tsv")


def repositories(root: str) -> list[tuple[str, str, str]]:
    """(repo, commit, folder) for each snapshot under root; REPOS.tsv there (else bench/realprojects_repos.tsv)
    names them."""
    listed = os.path.join(root, "REPOS.tsv")
    if not os.path.exists(listed) and os.path.exists(REPOSITORIES):
        listed = REPOSITORIES
    found = []
    if os.path.exists(listed):
        with open(listed, encoding="utf-8", newline="") as handle:
            rows = (line for line in handle if not line.startswith("#"))
            for row in csv.DictReader(rows, delimiter="\t"):
                folder = os.path.join(root, row["repo"].replace("/", "+"))
                if os.path.isdir(folder):
                    found.append((row["repo"], row["commit"], folder))
        return found
    for name in sorted(os.listdir(root)):
        folder = os.path.join(root, name)
        if os.path.isdir(folder):
            found.append((name.replace("+", "/", 1), "?", folder))
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", default=os.environ.get("DSCONFIG_REALPROJECTS"),
                        help="folder of fetched snapshots (or $DSCONFIG_REALPROJECTS)")
    parser.add_argument("--verdicts", default=VERDICTS)
    parser.add_argument("--python", default=os.environ.get("DSCONFIG_BENCH_PYTHON", sys.executable),
                        help="the Python that runs dsconfig: one without deepspeed installed replays the release "
                             "each project pins, as a CI job that installs only dsconfig does")
    parser.add_argument("--only", action="append", default=[], help="repository (owner/name) to run; repeatable")
    parser.add_argument("--ruff", action="store_true", help="time `ruff check --no-cache` on each tree too")
    parser.add_argument("--unjudged", action="store_true", help="list the errors and warnings with no verdict")
    parser.add_argument("--dump", help="write every finding of every run here as JSON lines")
    args = parser.parse_args()
    if not args.root or not os.path.isdir(args.root):
        parser.error("--root: a folder of fetched repository snapshots is needed")
    verdicts = load_verdicts(args.verdicts)
    repos = [entry for entry in repositories(args.root) if not args.only or entry[0] in args.only]

    per_rule = collections.defaultdict(lambda: collections.Counter())
    failing_falsely, unjudged, crashes, lines = [], [], [], []
    dump = open(args.dump, "w", encoding="utf-8") if args.dump else None
    for repo, commit, folder in repos:
        row = [repo[:40].ljust(40)]
        for run in RUNS:
            result = lint_repo(folder, repo, run, args.python)
            errors = [f for f in result.findings if f["severity"] == "error"]
            warnings = [f for f in result.findings if f["severity"] == "warning"]
            row.append(f"{run} exit {result.status} {len(errors):3d}E {len(warnings):3d}W "
                       f"{result.seconds:6.2f}s {result.mb:5.0f}MB")
            if result.crashed:
                crashes.append(f"{repo} ({run}): exit {result.status}: {result.stderr.splitlines()[-1:]}")
            false_errors = 0
            for finding in errors + warnings:
                judged = verdict_of(verdicts, repo, run, finding)
                tally = per_rule[(finding["code"], finding["severity"])]
                if judged is None:
                    tally["unjudged"] += 1
                    unjudged.append((repo, commit, run, finding))
                else:
                    tally[judged[0]] += 1
                    false_errors += judged[0] == "false" and finding["severity"] == "error"
            if false_errors:
                failing_falsely.append(f"{repo} ({run}): {false_errors} false error(s)")
            if dump:
                for finding in result.findings:
                    dump.write(json.dumps({"repo": repo, "commit": commit, "run": run, **finding}) + "\n")
        rerun = rerun_time(folder, args.python)
        row.append(f"rerun {rerun[0]:5.2f}s {rerun[1]:4.0f}MB")
        if args.ruff:
            timed = ruff_time(folder)
            if timed:
                row.append(f"ruff {timed[0]:6.2f}s {timed[1]:5.0f}MB")
        lines.append("  ".join(row))
        print(lines[-1], flush=True)
    if dump:
        dump.close()

    print("\nrule     severity  true false unjudged  precision")
    totals = collections.defaultdict(collections.Counter)
    for (code, severity), tally in sorted(per_rule.items()):
        judged = tally["true"] + tally["false"]
        precision = f"{100 * tally['true'] / judged:5.1f}%" if judged else "    -"
        print(f"{code:8s} {severity:8s} {tally['true']:5d} {tally['false']:5d} {tally['unjudged']:8d}  {precision}")
        totals[severity].update(tally)
    for severity in ("error", "warning"):
        tally = totals[severity]
        judged = tally["true"] + tally["false"]
        share = f"{100 * tally['true'] / judged:.1f}%" if judged else "-"
        print(f"{severity}s: {tally['true']} true, {tally['false']} false, {tally['unjudged']} unjudged: "
              f"precision {share}")
    print(f"repositories failing on a false error: {len(failing_falsely)}")
    for line in failing_falsely:
        print(f"  {line}")
    print(f"crashes: {len(crashes)}")
    for line in crashes:
        print(f"  {line}")
    if args.unjudged:
        print("\nunjudged (repo, commit, run, file, line, code, message):")
        for repo, commit, run, finding in unjudged:
            print("\t".join([repo, commit, run, finding["file"].removeprefix("./"), str(finding["line"]),
                             finding["code"], finding["message"][:300]]))
    shutil.rmtree(_scratch(), ignore_errors=True)
    return 1 if crashes or failing_falsely else 0


if __name__ == "__main__":
    sys.exit(main())
