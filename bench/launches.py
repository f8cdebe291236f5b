"""The launches dsconfig reads in real training repositories, against the same launches read by hand.

For each fetched snapshot under --root (as bench/realprojects.py lays them out), every launch in its shell
scripts: the launcher, the world size (or why it is not known), the DeepSpeed config it hands over and
whether the entry script is an HF Trainer script, and the batch flags. bench/launches_verdicts.tsv holds,
for a sample of them, what a person read in the script (world size, config, per-device batch, accumulation);
this script prints where dsconfig agrees, where it says less (unknown), and where it disagrees.

    python bench/launches.py --root /work/realrepos                 # agreement with the verdicts
    python bench/launches.py --root /work/realrepos --list > l.tsv  # every launch read, to judge more
"""

from __future__ import annotations

import argparse
import csv
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
VERDICTS = os.path.join(ROOT, "bench", "launches_verdicts.tsv")
FIELDS = ("repo", "script", "line", "launcher", "world_size", "config", "trainer", "micro_batch", "accumulation")


def _repositories(root: str):
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    from realprojects import repositories
    return repositories(root)


def read_launches(repo: str, folder: str):
    from dsconfig.boundary import Boundary
    from dsconfig.launch import LAUNCH_SUFFIXES, project, trainer_flags

    def read_text(path):
        try:
            with open(path, encoding="utf-8") as handle:
                return handle.read()
        except (OSError, UnicodeDecodeError):
            return None

    roots = Boundary.of([folder])
    for base, folders, files in os.walk(folder):
        folders[:] = sorted(name for name in folders if not name.startswith("."))
        for name in sorted(files):
            if not name.endswith(LAUNCH_SUFFIXES):
                continue
            path = os.path.join(base, name)
            try:
                with open(path, "rb") as handle:
                    data = handle.read()
                if not project.worth_reading(data):
                    continue
                text = data.decode("utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            for launch in project.launches(path, text):
                links = project.link(launch, roots, read_text)
                link = links[0] if links else None
                flags = trainer_flags.read(launch.args).values  # what the flags say, Trainer script or not
                yield {"repo": repo, "script": os.path.relpath(path, folder), "line": str(launch.line),
                       "launcher": launch.launcher,
                       "world_size": "?" if launch.world_size is None else str(launch.world_size),
                       "config": os.path.relpath(link.config, folder) if link else "-",
                       "trainer": "yes" if link is not None and link.trainer else "no",
                       "micro_batch": str(flags.get("per_device_train_batch_size", "-")),
                       "accumulation": str(flags.get("gradient_accumulation_steps", "-"))}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", required=True)
    parser.add_argument("--list", action="store_true", help="print every launch read (TSV)")
    args = parser.parse_args()
    read = {}
    count = 0
    writer = csv.writer(sys.stdout, delimiter="\t", lineterminator="\n")
    if args.list:
        writer.writerow(FIELDS)
    for repo, _, folder in _repositories(args.root):
        for row in read_launches(repo, folder):
            count += 1
            read[row["repo"], row["script"], row["line"]] = row
            if args.list:
                writer.writerow([row[field] for field in FIELDS])
    if args.list:
        return 0
    with open(VERDICTS, encoding="utf-8", newline="") as handle:
        verdicts = [row for row in csv.DictReader((line for line in handle if not line.startswith("#")),
                                                   delimiter="\t")]
    tally = {"agree": 0, "says less": 0, "disagrees": 0, "not read": 0}
    for verdict in verdicts:
        ours = read.get((verdict["repo"], verdict["script"], verdict["line"]))
        if ours is None:
            tally["not read"] += 1
            print(f"not read: {verdict['repo']} {verdict['script']}:{verdict['line']}")
            continue
        for field in ("world_size", "config", "trainer", "micro_batch", "accumulation"):
            hand, mine = verdict[field], ours[field]
            if field == "trainer" and verdict["config"] == "-":
                continue  # no config handed over: whose flags they are does not matter
            if hand == mine:
                tally["agree"] += 1
            elif mine in ("?", "-") or (field == "trainer" and mine == "no"):
                tally["says less"] += 1
            else:
                tally["disagrees"] += 1
                print(f"disagrees: {verdict['repo']} {verdict['script']}:{verdict['line']} {field}: by hand {hand}, "
                      f"dsconfig {mine}")
    print(f"{count} launches read in {len({key[0] for key in read})} repositories; {len(verdicts)} judged by hand")
    print("fields: " + ", ".join(f"{name} {number}" for name, number in tally.items()))
    return 1 if tally["disagrees"] else 0


if __name__ == "__main__":
    sys.exit(main())
