#!/usr/bin/env python3
"""Generate schemas/deepspeed-releases.json: what each DeepSpeed release from 0.14.0 to 0.19.8
accepts, from the releases themselves.

Each release runs in its own process (scripts/release_probe.py with PYTHONPATH=<release>): its
models give its schema (scripts/build_schema.py), its DeepSpeedConfig answers the probes. The file
stores each release's schema as a patch against schemas/deepspeed.schema.json (the newest release,
in full) plus its facts; releases whose patch and facts are equal share one entry. Descriptions are
left out of the patches: they are documentation, and the newest release's words serve.

    python scripts/deepspeed_releases.py .cache/deepspeed-releases   # once: the releases side by side
    python scripts/build_releases.py .cache/deepspeed-releases       # (re)write the data
    python scripts/build_releases.py .cache/deepspeed-releases --check
    python scripts/build_releases.py .cache/deepspeed-releases --check --only 0.14.0 0.17.4   # those entries
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import pathlib
import subprocess
import sys

from generated import write_or_check  # scripts/ is on sys.path when a script runs

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from dsconfig.deepspeed.releases import NEWEST, SUPPORTED  # noqa: E402

OUTPUT = ROOT / "schemas" / "deepspeed-releases.json"
BASE = ROOT / "schemas" / "deepspeed.schema.json"
PROBE = pathlib.Path(__file__).with_name("release_probe.py")


def probe(folder: pathlib.Path, version: str) -> dict:
    here = (folder / version).resolve()  # absolute: the probe runs inside it, where a relative path misleads
    env = dict(os.environ, PYTHONPATH=str(here))
    done = subprocess.run([sys.executable, str(PROBE)], capture_output=True, text=True, env=env, cwd=str(here))
    if done.returncode:
        tail = "\n".join(done.stderr.strip().splitlines()[-5:])
        raise SystemExit(f"build_releases: DeepSpeed {version} failed:\n{tail}")
    return json.loads(done.stdout)


def _strip_descriptions(node):
    if isinstance(node, dict):
        return {k: _strip_descriptions(v) for k, v in node.items() if k != "description"}
    if isinstance(node, list):
        return [_strip_descriptions(v) for v in node]
    return node


# Keys a patch leaves alone: documentation, and the release's own name.
_UNPATCHED = ("description", "title", "x-deepspeed-version")


def _same(a, b) -> bool:
    """Equal as JSON values: 0 and 0.0, 1 and true differ (a release's default of 0 is not 0.0). Lists of
    different lengths and objects never reach here with equal contents of other types."""
    return type(a) is type(b) and a == b


def diff(base, other, path=()) -> list:
    """Operations turning `base` into `other`: ["set", [keys...], value] and ["del", [keys...]].
    Objects are compared key by key, lists of one length item by item (the key is the index);
    anything else is replaced whole."""
    if isinstance(base, list) and isinstance(other, list) and len(base) == len(other):
        return [op for i, (a, b) in enumerate(zip(base, other)) for op in diff(a, b, (*path, i))]
    if not (isinstance(base, dict) and isinstance(other, dict)):
        return [] if _same(base, other) else [["set", list(path), _strip_descriptions(other)]]
    ops = []
    for key in base:
        if key in _UNPATCHED:
            continue
        if key not in other:
            ops.append(["del", [*path, key]])
        else:
            ops.extend(diff(base[key], other[key], (*path, key)))
    for key in other:
        if key not in base and key not in _UNPATCHED:
            ops.append(["set", [*path, key], _strip_descriptions(other[key])])
    return ops


def probe_all(folder: pathlib.Path, versions) -> tuple[dict, dict]:
    """The base schema and each release's probe; the base must be the newest release's schema."""
    base = json.loads(BASE.read_text(encoding="utf-8"))
    versions = list(dict.fromkeys([NEWEST, *versions]))
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        probed = dict(zip(versions, pool.map(lambda v: probe(folder, v), versions)))
    newest = diff(base, probed[NEWEST]["schema"])
    if newest:
        raise SystemExit(f"build_releases: {BASE.name} is not DeepSpeed {NEWEST}'s schema "
                         f"(first difference: {newest[0][:2]}); run scripts/build_schema.py with {NEWEST} installed")
    return base, probed


def check_entries(folder: pathlib.Path, versions) -> list[str]:
    """The releases among `versions` whose committed entry (operations and facts) is not what they say now:
    a check of those releases alone, for a quick run where probing all of them costs too much."""
    base, probed = probe_all(folder, versions)
    data = json.loads(OUTPUT.read_text(encoding="utf-8"))
    stale = []
    for version in versions:
        variant = data["variants"][data["releases"][version]] if version in data["releases"] else None
        now = json.loads(json.dumps({"patch": diff(base, probed[version]["schema"]),
                                     "facts": probed[version]["facts"]}))  # as the file holds it
        if variant is None or now != {"patch": [data["operations"][i] for i in variant["patch"]],
                                      "facts": variant["facts"]}:
            stale.append(version)
    return stale


def build(folder: pathlib.Path, versions=SUPPORTED) -> dict:
    base, probed = probe_all(folder, versions)
    ops: list[str] = []  # every distinct operation once (as JSON text); a variant lists its operations' indices
    variants: list[dict] = []
    releases: dict[str, int] = {}
    for version in versions:
        patch = [json.dumps(op, ensure_ascii=False, separators=(",", ":"))
                 for op in diff(base, probed[version]["schema"])]
        for op in patch:
            if op not in ops:
                ops.append(op)
        entry = {"patch": [ops.index(op) for op in patch], "facts": probed[version]["facts"]}
        if entry not in variants:
            variants.append(entry)
        releases[version] = variants.index(entry)
    return {
        "description": ("Generated by dsconfig's scripts/build_releases.py from the DeepSpeed releases themselves. "
                        f"A release's schema is deepspeed.schema.json ({NEWEST}) with the operations its variant "
                        "lists applied in order. Do not edit."),
        "newest": NEWEST,
        "releases": releases,
        "variants": variants,
        "operations": [json.loads(op) for op in ops],
    }


def render(data: dict) -> str:
    # One variant and one operation per line keeps the file small and its diffs readable.
    def lines(items):
        return ",\n".join("    " + json.dumps(v, ensure_ascii=False, separators=(",", ":")) for v in items)
    head = json.dumps({k: v for k, v in data.items() if k not in ("variants", "operations")}, indent=2,
                      ensure_ascii=False)
    return (head[:-2] + ',\n  "variants": [\n' + lines(data["variants"]) + '\n  ],\n  "operations": [\n'
            + lines(data["operations"]) + "\n  ]\n}\n")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=pathlib.Path, help="where scripts/deepspeed_releases.py put the releases")
    parser.add_argument("--check", action="store_true", help="fail if the committed data is out of date")
    parser.add_argument("--only", nargs="+", metavar="VERSION", choices=SUPPORTED,
                        help="with --check: check these releases' entries only")
    args = parser.parse_args(argv)
    if args.only:
        if not args.check:
            parser.error("--only goes with --check")
        stale = check_entries(args.folder, args.only)
        for version in stale:
            print(f"{OUTPUT.name}: DeepSpeed {version}'s entry is out of date; run python scripts/build_releases.py",
                  file=sys.stderr)
        return 1 if stale else 0
    return write_or_check(OUTPUT, render(build(args.folder)), "scripts/build_releases.py", args.check)


if __name__ == "__main__":
    sys.exit(main())
