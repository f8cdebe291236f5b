"""Every code the source emits is registered, and the lint path stays light."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from dsconfig.rules import RULES

ROOT = Path(__file__).resolve().parents[1]
EMITTED = re.compile(r'["\']((?:DS|ACC)\d{3})["\']')


def test_every_emitted_code_is_registered():
    used = set()
    for path in (ROOT / "dsconfig").rglob("*.py"):
        if path.name == "rules.py":
            continue
        used.update(EMITTED.findall(path.read_text()))
    assert used, "no codes found: the pattern is broken"
    assert sorted(used - set(RULES)) == []


def test_rule_names_and_severities():
    for code, rule in RULES.items():
        assert re.fullmatch(r"(DS|ACC)\d{3}", code)
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", rule.name), rule.name
        assert rule.severity in ("error", "warning", "info")
        assert rule.summary and not rule.summary.endswith(".")


def test_lint_path_imports_nothing_heavy(tmp_path):
    """Linting a JSON file never imports the oracles, pydantic, jsonschema or PyYAML."""
    config = tmp_path / "ds_config.json"
    config.write_text('{"train_batch_size": 8, "zero_optimization": {"stage": 3}}')
    probe = (
        "import sys\n"
        "from dsconfig.cli import main\n"
        f"sys.argv = ['dsconfig', 'lint', {str(config)!r}]\n"
        "try:\n"
        "    main()\n"
        "except SystemExit:\n"
        "    pass\n"
        "heavy = ('torch', 'deepspeed', 'accelerate', 'transformers', 'pydantic', 'jsonschema', 'yaml', 'numpy')\n"
        "print('HEAVY:' + ' '.join(sorted(m for m in heavy if m in sys.modules)))\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    heavy = [line for line in result.stdout.splitlines() if line.startswith("HEAVY:")]
    assert heavy == ["HEAVY:"], result.stdout
