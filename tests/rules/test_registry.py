"""Every rule is declared once, named after itself and reported by some check; the lint path stays light."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from dsconfig.rules import MODULES, RULES
from tests.conftest import modules_after

ROOT = Path(__file__).resolve().parents[2]


def constant(rule) -> str:
    return rule.name.upper().replace("-", "_")


def test_each_rule_is_its_module_constant():
    """`batch-mismatch` is BATCH_MISMATCH in its module, listed once in the module's RULES."""
    for module in MODULES:
        assert len(set(module.RULES)) == len(module.RULES), module.__name__
        for rule in module.RULES:
            assert getattr(module, constant(rule)) is rule, (module.__name__, rule.code)


def test_every_rule_is_reported_by_a_check():
    """A rule no module outside dsconfig/rules/ imports is reported by nothing."""
    used = set()
    for path in (ROOT / "dsconfig").rglob("*.py"):
        if "rules" in path.relative_to(ROOT / "dsconfig").parts[:1]:
            continue
        used.update(re.findall(r"\b[A-Z][A-Z0-9_]+\b", path.read_text()))
    assert sorted(rule.code for rule in RULES.values() if constant(rule) not in used) == []


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
    loaded = {name.split(".")[0] for name in modules_after(["lint", str(config)], ROOT)}
    heavy = ("torch", "deepspeed", "accelerate", "transformers", "pydantic", "jsonschema", "yaml", "numpy")
    assert not loaded & set(heavy), loaded & set(heavy)
    # standard modules a clean config never needs: pathlib (with urllib and ipaddress), difflib (a misspelling);
    # and click, which the common lint command lines do without (dsconfig.cli)
    avoidable = loaded & {"pathlib", "urllib", "ipaddress", "difflib", "click"}
    assert not avoidable, avoidable
    with_findings = tmp_path / "bad" / "ds_config.json"
    with_findings.parent.mkdir()
    with_findings.write_text('{"train_batch_size": 7.0}')
    assert "click" not in {name.split(".")[0] for name in modules_after(
        ["lint", str(with_findings), "--world-size", "8", "--format", "full", "--color", "always"], ROOT)}


def test_a_ds_config_without_model_loads_no_accelerate_or_model_checks(tmp_path):
    """The model-aware checks read the model tables through dsconfig.accelerate: only with --model (cold lint
    of a plain ds_config.json is the figure README's speed table promises)."""
    config = tmp_path / "ds_config.json"
    config.write_text('{"train_batch_size": "auto", "zero_optimization": {"stage": 3}}')
    loaded = modules_after(["lint", str(config)], ROOT)
    assert not {m for m in loaded if m.startswith("dsconfig.accelerate") or m in (
        "dsconfig.deepspeed.model_checks", "dsconfig.deepspeed.model_facts", "dsconfig.deepspeed.hidden_fills")}
    with_model = modules_after(["lint", str(config), "--model", "llama-3-8b"], ROOT)
    assert "dsconfig.deepspeed.model_checks" in with_model


NEVER = ("torch", "deepspeed", "accelerate", "transformers", "pydantic", "jsonschema", "numpy")


@pytest.mark.parametrize("argv, allowed", [
    (["--help"], ()),
    (["lint", "accelerate_config.yaml"], ("yaml",)),
    (["estimate", "--params", "7B", "--gpus", "2", "--gpu-mem", "80GB"], ()),
    (["generate", "--gpus", "2", "--gpu-mem", "96GB", "--stdout"], ("yaml",)),
    (["rules"], ()),
    (["estimate", "--backend", "fsdp", "--params", "7B", "--gpus", "2", "--gpu-mem", "80GB"], ()),
    (["generate", "--backend", "fsdp", "--gpus", "2", "--gpu-mem", "96GB", "--stdout"], ("yaml",)),
], ids=["help", "lint-yaml", "estimate", "generate", "rules", "estimate-fsdp", "generate-fsdp"])
def test_each_command_imports_only_what_it_needs(argv, allowed, tmp_path):
    """The CLI itself loads no PyYAML; YAML work loads it; nothing ever loads the oracles."""
    (tmp_path / "accelerate_config.yaml").write_text("compute_environment: LOCAL_MACHINE\ndistributed_type: NO\n")
    loaded = {name.split(".")[0] for name in modules_after(argv, tmp_path)}
    assert not loaded & set(NEVER), loaded & set(NEVER)
    assert "yaml" not in loaded or "yaml" in allowed
