"""How the scripts here deliver a generated file: written, or with --check compared with the
committed copy (exit 1 when it is stale, so a test or CI step can catch a forgotten rebuild)."""

from __future__ import annotations

import pathlib
import sys


def write_or_check(output: pathlib.Path, text: str, script: str, check: bool) -> int:
    shown = output.relative_to(pathlib.Path(__file__).resolve().parents[1])
    if check:
        current = output.read_text(encoding="utf-8") if output.exists() else ""
        if current != text:
            print(f"{shown} is out of date; run python {script}", file=sys.stderr)
            return 1
        print(f"{shown} is up to date")
        return 0
    output.write_text(text, encoding="utf-8")
    print(f"wrote {shown}")
    return 0
