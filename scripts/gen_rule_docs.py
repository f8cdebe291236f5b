#!/usr/bin/env python3
"""Generate docs/rules.md from the rule declarations (dsconfig/rules/).

    python scripts/gen_rule_docs.py           # (re)write docs/rules.md
    python scripts/gen_rule_docs.py --check   # exit 1 if the committed file is stale

tests/rules/test_rule_docs.py fails when docs/rules.md differs from what this script writes.
"""

from __future__ import annotations

import argparse
import pathlib
import sys

from generated import write_or_check  # scripts/ is on sys.path when a script runs

ROOT = pathlib.Path(__file__).resolve().parents[1]
OUTPUT = ROOT / "docs" / "rules.md"
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def render() -> str:
    from dsconfig.report.rule_docs import markdown
    from dsconfig.rules import RULES
    return markdown(RULES.values())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if docs/rules.md is out of date")
    args = parser.parse_args(argv)
    text = render()
    return write_or_check(OUTPUT, text, "scripts/gen_rule_docs.py", args.check)

if __name__ == "__main__":
    sys.exit(main())
