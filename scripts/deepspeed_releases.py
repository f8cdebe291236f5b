#!/usr/bin/env python3
"""Put DeepSpeed releases side by side, one importable copy per release, for the version data and the
differential tests.

Each release's source distribution is downloaded once (pip's cache keeps it) and its `deepspeed/`
package is unpacked into DIR/<version>/deepspeed: the same Python code `pip install --no-deps
--target` installs, without building the wheel (a minute per release on two cores, against a few
seconds). Run a release with PYTHONPATH=DIR/<version>; torch 2.13 CPU imports 0.14 to 0.19.

    python scripts/deepspeed_releases.py DIR                 # every supported release
    python scripts/deepspeed_releases.py DIR 0.14.5 0.17.6   # some
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import pathlib
import shutil
import subprocess
import sys
import tarfile
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dsconfig.deepspeed.releases import SUPPORTED  # noqa: E402

DOWNLOAD_SECONDS = 600


def installed(folder: pathlib.Path, version: str) -> bool:
    return (folder / version / "deepspeed" / "version.py").is_file() or \
        (folder / version / "deepspeed" / "git_version_info_installed.py").is_file()


def install(folder: pathlib.Path, version: str) -> str | None:
    """Unpack release `version` into folder/version; None on success, else pip's complaint."""
    if installed(folder, version):
        return None
    with tempfile.TemporaryDirectory() as scratch:
        try:  # a stalled index fails this release (its tests skip), not the whole run
            done = subprocess.run(
                [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:",
                 "--dest", scratch, f"deepspeed=={version}"], capture_output=True, text=True, timeout=DOWNLOAD_SECONDS)
        except subprocess.TimeoutExpired:
            return f"pip download took over {DOWNLOAD_SECONDS} s"
        archives = list(pathlib.Path(scratch).glob("deepspeed-*.tar.gz"))
        if done.returncode or not archives:
            return (done.stderr.strip().splitlines() or ["pip download failed"])[-1]
        target = folder / version
        partial = folder / f".{version}.{os.getpid()}.partial"  # own name: test workers may fetch it at once
        shutil.rmtree(partial, ignore_errors=True)
        with tarfile.open(archives[0]) as archive:
            prefix = f"deepspeed-{version}/deepspeed/"
            members = [m for m in archive.getmembers() if m.name.startswith(prefix) and (m.isfile() or m.isdir())]
            for member in members:
                member.name = "deepspeed/" + member.name[len(prefix):]
            archive.extractall(partial, members=members, filter="data")
        if target.exists() and not installed(folder, version):
            shutil.rmtree(target, ignore_errors=True)  # a broken one (a complete one only ever appears whole)
        try:
            partial.rename(target)  # a folder is there only once complete
        except OSError:  # another process put it there first
            shutil.rmtree(partial, ignore_errors=True)
            if not installed(folder, version):
                raise
    return None


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=pathlib.Path)
    parser.add_argument("versions", nargs="*", help=f"default: all of {SUPPORTED[0]} to {SUPPORTED[-1]}")
    args = parser.parse_args(argv)
    versions = args.versions or list(SUPPORTED)
    args.folder.mkdir(parents=True, exist_ok=True)
    failed = 0
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        for version, error in zip(versions, pool.map(lambda v: install(args.folder, v), versions)):
            if error:
                failed += 1
                print(f"deepspeed {version}: {error}", file=sys.stderr)
    print(f"{len(versions) - failed} of {len(versions)} releases in {args.folder}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
