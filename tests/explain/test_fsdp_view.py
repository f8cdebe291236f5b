"""`dsconfig explain` on an Accelerate FSDP YAML: every setting equals the real plugin's, with its source;
and a DeepSpeed config compared with an FSDP one by what both do."""

from __future__ import annotations

import enum
import json

import pytest
from click.testing import CliRunner

from dsconfig.cli import cli
from dsconfig.explain.chain import Request, explain
from tests.conftest import corpus_files

pytest.importorskip("accelerate")
pytest.importorskip("torch")

from tests.accelerate.fsdp_oracle import build_plugin, real_launch  # noqa: E402


def _fsdp_yamls():
    rows = []
    for path, _ in corpus_files("accelerate"):
        text = path.read_text(encoding="utf-8")
        if "distributed_type: FSDP" in text:
            rows.append(path)
    return rows


def _real_value(plugin, field_name: str):
    value = getattr(plugin, field_name)
    if field_name == "cpu_offload":  # FSDP1 CPUOffload(offload_params=...), FSDP2 CPUOffloadPolicy or OffloadPolicy
        if hasattr(value, "offload_params"):
            return value.offload_params
        return type(value).__name__ == "CPUOffloadPolicy"
    if isinstance(value, enum.Enum):
        return value.name.lstrip("_")
    return value


COMPARED = ("fsdp_version", "sharding_strategy", "reshard_after_forward", "cpu_offload", "backward_prefetch",
            "state_dict_type", "transformer_cls_names_to_wrap", "min_num_params", "use_orig_params",
            "sync_module_states", "forward_prefetch", "activation_checkpointing", "cpu_ram_efficient_loading")


def test_fsdp_settings_equal_the_real_plugin(monkeypatch, capsys):
    checked, problems = 0, []
    for path in _fsdp_yamls():
        try:
            _, env = real_launch(str(path))
        except Exception:  # noqa: BLE001 - accelerate launch refuses it: lint's business
            continue
        plugin, raised, _ = build_plugin({}, env, monkeypatch)
        ours = explain(Request(accelerate_path=str(path)))
        if plugin is None:
            if not ours.failed:
                problems.append(f"{path.name}: the plugin raises {raised}; dsconfig says nothing")
            continue
        for field_name in COMPARED:
            real = _real_value(plugin, field_name)
            mine = ours.config.get(field_name)
            if field_name == "state_dict_type" and real is not None:
                real = real if isinstance(real, str) else getattr(real, "name", real)
            if mine != real:
                problems.append(f"{path.name}: {field_name} real {real!r} vs dsconfig {mine!r}")
        checked += 1
    with capsys.disabled():
        print(f"\nFSDP plugin: {checked} corpus YAMLs equal on {len(COMPARED)} settings")
    assert not problems, "\n".join(problems[:20])
    assert checked > 0


def test_sources_name_the_yaml_line_or_the_default(tmp_path):
    yaml_path = tmp_path / "fsdp.yaml"
    yaml_path.write_text("distributed_type: FSDP\nmixed_precision: bf16\nnum_processes: 4\nfsdp_config:\n"
                         "  fsdp_version: 2\n  fsdp_offload_params: true\n  fsdp_state_dict_type: SHARDED_STATE_DICT\n")
    result = CliRunner().invoke(cli, ["explain", str(yaml_path), "--format", "json"])
    data = json.loads(result.output)
    assert data["config"]["fsdp_version"] == 2 and data["config"]["cpu_offload"] is True
    offload = data["sources"]["/cpu_offload"]
    assert (offload["source"], offload["line"], offload["detail"]) == ("yaml", 6, "fsdp_offload_params")
    assert data["sources"]["/activation_checkpointing"]["source"] == "default"
    assert data["config"]["mixed_precision"] == "bf16" and data["sources"]["/mixed_precision"]["line"] == 2
    assert data["context"]["world_size"] == 4


def test_deepspeed_against_fsdp_compares_what_they_do(tmp_path):
    ds = tmp_path / "ds.json"
    ds.write_text(json.dumps({"train_micro_batch_size_per_gpu": 2, "zero_optimization": {"stage": 2},
                              "bf16": {"enabled": True}}))
    yaml_path = tmp_path / "fsdp.yaml"
    yaml_path.write_text("distributed_type: FSDP\nmixed_precision: bf16\nnum_processes: 4\nfsdp_config:\n"
                         "  fsdp_sharding_strategy: FULL_SHARD\n  fsdp_state_dict_type: FULL_STATE_DICT\n")
    result = CliRunner().invoke(cli, ["explain", str(ds), "--world-size", "4", "--diff", str(yaml_path),
                                      "--format", "json"])
    assert result.exit_code == 1
    rows = {row["what"]: row for row in json.loads(result.output)["plan"]}
    assert rows["parameters sharded"]["left"] is False and rows["parameters sharded"]["right"] is True
    assert rows["parameters sharded"]["differs"]
    assert rows["gradients sharded"]["left"] is True and not rows["gradients sharded"]["differs"]
    assert rows["mixed precision"]["left"] == rows["mixed precision"]["right"] == "bf16"
    assert "fsdp.yaml:5" in rows["parameters sharded"]["right_source"]
    assert not rows["micro batch per GPU"]["differs"]  # FSDP's YAML holds no batch size: nothing to compare
