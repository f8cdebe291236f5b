"""`dsconfig generate --backend fsdp` as a user runs it: the plan, the Accelerate FSDP YAML, the launch
commands, writes and one-line refusals; and `estimate` reading the YAML back agrees with the plan."""

from __future__ import annotations

import json
import os

import pytest
import yaml
from click.testing import CliRunner

from dsconfig.estimate.command import estimate
from dsconfig.generate.command import generate


def run(*args, cwd=None):
    old = os.getcwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        return CliRunner().invoke(generate, [str(a) for a in args], catch_exceptions=False)
    finally:
        os.chdir(old)


def one_line_error(result, fragment, exit_code=2):
    assert result.exit_code == exit_code, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dsconfig generate: error: ") and fragment in lines[0], lines


def test_writes_the_accelerate_fsdp_config(tmp_path):
    args = ("--backend", "fsdp", "--gpus", "2", "--gpu-mem", "96GB", "--model", "llama-3.1-8b", "--global-batch", "64")
    result = run(*args, cwd=tmp_path)
    assert result.exit_code == 0, result.output
    out = result.output
    assert "\n  FSDP          " in out and "█" in out
    assert "wrote accelerate_config.yaml" in out
    assert ("\n  accelerate launch --config_file accelerate_config.yaml train.py --per_device_train_batch_size "
            in out)
    assert "--deepspeed" not in out and "--gradient_checkpointing" not in out  # checkpointing is the YAML's
    assert os.listdir(tmp_path) == ["accelerate_config.yaml"]
    config = yaml.safe_load((tmp_path / "accelerate_config.yaml").read_text())
    assert config["distributed_type"] == "FSDP" and config["num_processes"] == 2
    fsdp = config["fsdp_config"]
    assert fsdp["fsdp_version"] == 2 and fsdp["fsdp_transformer_layer_cls_to_wrap"] == "LlamaDecoderLayer"
    assert "fsdp_sharding_strategy" not in fsdp and isinstance(fsdp["fsdp_reshard_after_forward"], bool)
    # nothing is overwritten without --force
    one_line_error(run(*args, cwd=tmp_path), "accelerate_config.yaml exists; pass --force")
    assert run(*args, "--force", cwd=tmp_path).exit_code == 0


def test_stdout_prints_the_yaml_and_the_plan_on_stderr(tmp_path):
    result = run("--backend", "fsdp", "--fsdp-version", "1", "--gpus", "8", "--gpu-mem", "80GB", "--model",
                 "llama-3.1-8b", "--stdout", cwd=tmp_path)
    assert result.exit_code == 0, result.output
    config = yaml.safe_load(result.stdout)
    assert config["fsdp_config"]["fsdp_version"] == 1
    assert config["fsdp_config"]["fsdp_sharding_strategy"] in ("NO_SHARD", "SHARD_GRAD_OP", "FULL_SHARD")
    assert "plan\n" in result.stderr and os.listdir(tmp_path) == []


def test_several_nodes_hybrid_shard_and_slurm(tmp_path):
    result = run("--backend", "fsdp", "--fsdp-version", "1", "--gpus", "8", "--nodes", "2", "--gpu-mem", "40GB",
                 "--model", "gemma-2-9b", "--global-batch", "64", "--target", "accelerate", cwd=tmp_path)
    assert result.exit_code == 0, result.output
    assert "HYBRID_SHARD: FSDP1 SHARD_GRAD_OP needs" in result.output
    assert sorted(os.listdir(tmp_path)) == ["accelerate_config.yaml", "slurm.sbatch"]
    config = yaml.safe_load((tmp_path / "accelerate_config.yaml").read_text())
    assert (config["num_processes"], config["num_machines"], config["main_process_ip"]) == (16, 2, "node-1")
    assert config["fsdp_config"]["fsdp_sharding_strategy"] == "HYBRID_SHARD"
    assert "--machine_rank $SLURM_NODEID" in (tmp_path / "slurm.sbatch").read_text()
    assert "accelerator.prepare()" in result.output  # what an Accelerate script sets itself


def test_offload_when_nothing_else_fits(tmp_path):
    result = run("--backend", "fsdp", "--gpus", "1", "--gpu-mem", "24GB", "--model", "llama-3.1-8b", "--stdout",
                 "--cpu-mem", "512GB", cwd=tmp_path)
    assert result.exit_code == 0, result.output
    assert "FULL_SHARD with offload: no sharding strategy fits without offload" in result.stderr
    assert yaml.safe_load(result.stdout)["fsdp_config"]["fsdp_offload_params"] is True


def test_no_layer_class_known_leaves_it_to_accelerate(tmp_path):
    result = run("--backend", "fsdp", "--gpus", "2", "--gpu-mem", "80GB", "--params", "3B", "--stdout", cwd=tmp_path)
    assert result.exit_code == 0, result.output
    assert "fsdp_transformer_layer_cls_to_wrap" not in result.stdout
    assert "_no_split_modules" in result.stderr


def test_estimate_reads_the_generated_yaml_as_planned(tmp_path):
    result = run("--backend", "fsdp", "--gpus", "4", "--gpu-mem", "40GB", "--model", "llama-3.1-8b",
                 "--global-batch", "32", "--target", "accelerate", cwd=tmp_path)
    assert result.exit_code == 0, result.output
    micro = next(line for line in result.output.splitlines() if line.startswith("per GPU at micro batch "))
    micro_batch = int(micro.split()[5].rstrip(":,"))
    checked = CliRunner().invoke(estimate, [str(tmp_path / "accelerate_config.yaml"), "--model", "llama-3.1-8b",
                                            "--micro-batch", str(micro_batch), "--gpu-mem", "40GB", "--format",
                                            "json"])
    assert checked.exit_code == 0, checked.output
    data = json.loads(checked.stdout)
    total = data["per_gpu_bytes"]["total"] / 2 ** 30
    assert f"{total:,.1f} GiB of" in micro  # the same per-GPU total as the plan's chart
    assert data["fits"] is True


@pytest.mark.parametrize("args, fragment", [
    (("--target", "deepspeed"), "--target deepspeed does not run under `accelerate launch`"),
    (("--target", "lightning"), "--target lightning does not run under `accelerate launch`"),
    (("--template", "zero3"), "--template goes with --backend deepspeed"),
    (("--nvme-path", "/nvme"), "--nvme-path goes with --backend deepspeed"),
    (("--deepspeed-version", "0.16.9"), "--deepspeed-version goes with --backend deepspeed"),
])
def test_refusals_are_one_line(tmp_path, args, fragment):
    one_line_error(run("--backend", "fsdp", "--gpus", "2", "--gpu-mem", "80GB", *args, cwd=tmp_path), fragment)
    assert os.listdir(tmp_path) == []


def test_nothing_fits_is_one_line(tmp_path):
    result = run("--backend", "fsdp", "--gpus", "1", "--gpu-mem", "16GB", "--model", "llama-3.1-70b", "--cpu-mem",
                 "64GB", cwd=tmp_path)
    one_line_error(result, "llama-3.1-70b does not fit 1 node × 1 GPU", exit_code=1)  # as estimate: does not fit
    assert "--nvme-path" not in result.stderr and os.listdir(tmp_path) == []


def test_a_measured_module_is_one_unit_accepted_by_accelerate(tmp_path, monkeypatch):
    pytest.importorskip("torch")
    pytest.importorskip("accelerate")
    import subprocess
    import sys
    from pathlib import Path

    from tests.generate.test_generate_fsdp_accelerate import accelerate_reads
    root = Path(__file__).resolve().parents[2]
    result = subprocess.run([sys.executable, "-m", "dsconfig", "generate", "--backend", "fsdp", "--model-factory",
                             "tests.estimate_harness.unet:unet_tiny", "--input-shape", "8,4,32,32", "--gpus", "2",
                             "--gpu-mem", "24GB", "--global-batch", "24", "--target", "accelerate", "--stdout"],
                            cwd=root, capture_output=True, text=True, timeout=300, check=False,
                            env={**os.environ, "PYTHONPATH": str(root)})
    assert result.returncode == 0, result.stderr
    fsdp = yaml.safe_load(result.stdout)["fsdp_config"]
    assert fsdp["fsdp_auto_wrap_policy"] == "NO_WRAP" and "fsdp_transformer_layer_cls_to_wrap" not in fsdp
    assert fsdp["fsdp_activation_checkpointing"] is False  # the script checkpoints a module as it was measured
    path = tmp_path / "accelerate_config.yaml"
    path.write_text(result.stdout)
    _, plugin, said, processes = accelerate_reads(str(path), monkeypatch)
    assert not said and processes == 2 and plugin.auto_wrap_policy is None
