"""Older DeepSpeed releases as oracles, each in its own process (tests/release_worker.py).

The releases live side by side in DSCONFIG_DEEPSPEED_RELEASES (default .cache/deepspeed-releases in
the checkout), put there by scripts/deepspeed_releases.py; `release_dir()` fetches one that is missing
(a few seconds from pip's cache) and returns None when it cannot (no network), so tests skip cleanly.
"""

from __future__ import annotations

import atexit
import json
import os
import pathlib
import subprocess
import sys
from functools import lru_cache

from tests.answers import Answers

ROOT = pathlib.Path(__file__).resolve().parents[1]
FOLDER = pathlib.Path(os.environ.get("DSCONFIG_DEEPSPEED_RELEASES", ROOT / ".cache" / "deepspeed-releases"))
WORKER = pathlib.Path(__file__).with_name("release_worker.py")

# The releases the differential tests run in CI: the oldest supported, one per minor series, and the
# releases around the changes that matter most (0.17.1 strict bf16, 0.19.7 removed blocks).
DIFFERENTIAL = ("0.14.0", "0.15.4", "0.16.9", "0.17.1", "0.18.4", "0.19.5", "0.19.7")


def release_dir(version: str) -> pathlib.Path | None:
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        from deepspeed_releases import install, installed
    finally:
        sys.path.pop(0)
    if not installed(FOLDER, version):
        FOLDER.mkdir(parents=True, exist_ok=True)
        if install(FOLDER, version) is not None:
            return None
    return FOLDER / version


class Release:
    """A running oracle for one release: `verdict(config, world)` -> {"ok", "phase", "error"}."""

    def __init__(self, version: str, folder: pathlib.Path):
        env = dict(os.environ, PYTHONPATH=str(folder))
        self.process = subprocess.Popen([sys.executable, str(WORKER)], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True, env=env, cwd=str(folder))
        self.answers = Answers(self.process, self.process.stdout)
        hello = self.answers.next(f"the DeepSpeed {version} oracle's start")
        if not hello:
            raise RuntimeError(f"the DeepSpeed {version} oracle did not start")
        self.version = json.loads(hello)["version"]
        if self.version != version:
            raise RuntimeError(f"{folder} holds DeepSpeed {self.version}, not {version}")
        atexit.register(self.close)

    def verdict(self, config, world: int, held: bool = False) -> dict:
        """With `held`, an accepted config's answer carries what DeepSpeedConfig holds (release_worker.held)."""
        if isinstance(config, pathlib.Path):
            config = str(config.resolve())
        self.process.stdin.write(json.dumps({"config": config, "world": world, "held": held}) + "\n")
        self.process.stdin.flush()
        answer = self.answers.next(f"the DeepSpeed {self.version} oracle: world {world}, {json.dumps(config)[:300]}")
        if not answer:
            raise RuntimeError(f"the DeepSpeed {self.version} oracle stopped")
        return json.loads(answer)

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.stdin.close()
            self.process.wait(timeout=30)


@lru_cache(maxsize=None)
def release(version: str) -> Release | None:
    folder = release_dir(version)
    return Release(version, folder) if folder is not None else None
