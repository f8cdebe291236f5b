"""Every code the source emits is registered, and the lint path stays light."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

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


NEVER = ("torch", "deepspeed", "accelerate", "transformers", "pydantic", "jsonschema", "numpy")


def _modules_after(argv: list[str], cwd) -> set[str]:
    probe = (
        "import sys\n"
        "from dsconfig.cli import main\n"
        f"sys.argv = ['dsconfig'] + {argv!r}\n"
        "try:\n"
        "    main()\n"
        "except SystemExit:\n"
        "    pass\n"
        "print('MODULES:' + ' '.join(sorted(m.split('.')[0] for m in sys.modules)))\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=cwd)
    marked = [line for line in result.stdout.splitlines() if line.startswith("MODULES:")]
    assert marked, result.stderr
    return set(marked[-1][len("MODULES:"):].split())


@pytest.mark.parametrize("argv, allowed", [
    (["--help"], ()),
    (["lint", "accelerate_config.yaml"], ("yaml",)),
    (["estimate", "--params", "7B", "--gpus", "2", "--gpu-mem", "80GB"], ()),
    (["generate", "--gpus", "2", "--gpu-mem", "96GB", "--stdout"], ("yaml",)),
    (["rules"], ()),
], ids=["help", "lint-yaml", "estimate", "generate", "rules"])
def test_each_command_imports_only_what_it_needs(argv, allowed, tmp_path):
    """The CLI itself loads no PyYAML; YAML work loads it; nothing ever loads the oracles."""
    (tmp_path / "accelerate_config.yaml").write_text("compute_environment: LOCAL_MACHINE\ndistributed_type: NO\n")
    loaded = _modules_after(argv, tmp_path)
    assert not loaded & set(NEVER), loaded & set(NEVER)
    assert "yaml" not in loaded or "yaml" in allowed
