"""`dsconfig generate --model-factory`: plans for a measured torch.nn.Module (a UNet, a ResNet with
BatchNorm), and the two user scenarios of issue 13 typed as a user types them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from dsconfig.estimate import measured, profile
from dsconfig.generate import planner

ROOT = Path(__file__).resolve().parents[2]
UNET = "tests.estimate_harness.unet:unet_tiny"
RESNET = "tests.estimate_harness.unet:resnet_bn"


def dsconfig(*args, cwd=ROOT):
    """`python -m dsconfig ...` from the repository root (where `tests.estimate_harness` imports)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "dsconfig", *map(str, args)], check=False, cwd=cwd,
                          capture_output=True, text=True, env=env, timeout=300)


def lint_clean(folder: Path, target: str, gpus: int):
    names = [name for name in ("ds_config.json", "accelerate_config.yaml") if (folder / name).exists()]
    result = dsconfig("lint", *names, "--target", target, "--gpus", gpus, "--nodes", 1, "--fail-on", "warning",
                      cwd=folder)
    assert result.returncode == 0, result.stdout + result.stderr


def generated(folder: Path) -> dict:
    return json.loads((folder / "ds_config.json").read_text())


def batch_of(config: dict, plan_text: str) -> tuple[int, int, int]:
    """(micro, accumulation, global) as the plan prints them (the HF Trainer's JSON says "auto")."""
    line = next(line for line in plan_text.splitlines() if line.strip().startswith("batch"))
    words = line.split()
    return int(words[words.index("micro") + 1]), int(words[words.index("accumulation") + 1]), \
        int(words[words.index("global") + 1])


@pytest.mark.parametrize("target, template", [("hf-trainer", None), ("accelerate", None), ("deepspeed", None),
                                               ("lightning", None), ("hf-trainer", "zero3")])
def test_the_config_splits_the_global_batch_and_lints_clean(tmp_path, target, template):
    extra = ["--template", template] if template else []
    result = dsconfig("generate", "--model-factory", UNET, "--input-shape", "8,4,32,32", "--gpus", 2,
                      "--gpu-mem", "24GB", "--global-batch", 24, "--target", target, "--output-dir", tmp_path, *extra)
    assert result.returncode == 0, result.stderr
    config = generated(tmp_path)
    micro, accumulation, total = batch_of(config, result.stdout)
    assert micro * accumulation * 2 == total == 24
    if target != "hf-trainer":
        assert config["train_micro_batch_size_per_gpu"] == micro
    if template == "zero3":
        # no hidden size to fill "auto" from: integers for every target (the Trainer would raise)
        assert isinstance(config["zero_optimization"]["reduce_bucket_size"], int)
    lint_clean(tmp_path, target, 2)


def test_the_planned_micro_batch_has_the_measured_activations():
    """The plan reads activations off the line through micro batches 2 and 4; measuring at the micro
    batch it chose gives the same bytes."""
    module = profile.profile_factory(UNET, (4, 32, 32), batches=(2, 4), checkpointing=(False, True))
    request = planner.Request(model=measured.module_shape(module), module=module, gpu_memory=24 * 10 ** 9,
                              gpus=2, global_batch=48, target="deepspeed")
    plan = planner.plan(request)
    direct = profile.profile_factory(UNET, (4, 32, 32), batches=(plan.micro_batch,),
                                     checkpointing=(plan.checkpointing,))
    assert plan.estimate.per_gpu["activations"] == sum(direct.activations(plan.checkpointing).at(plan.micro_batch))
    assert plan.micro_batch * plan.accumulation * 2 == 48


def test_batchnorm_found_by_measuring_never_plans_one_sample_per_gpu():
    module = profile.profile_factory(RESNET, (3, 64, 64), batches=(2, 4), checkpointing=(False, True))
    assert module.batchnorm == 10
    base = planner.Request(model=measured.module_shape(module), module=module, gpu_memory=16 * 10 ** 9,
                           target="deepspeed")
    for gpus in (1, 2, 3):
        for global_batch in (None, 1, 2, 3, 5, 6, 7, 16):
            plan = planner.plan(replace(base, gpus=gpus, global_batch=global_batch))
            assert plan.micro_batch >= 2, (gpus, global_batch)
            assert plan.micro_batch * plan.accumulation * gpus == plan.global_batch
    # memory that holds one sample but not two: nothing is planned below 2
    tight = replace(base, gpu_memory=planner.trial(base, planner.SHAPES["zero3_offload_all"], True, "bf16", 1)
                    .gpu_total + 1, headroom=0.0)
    with pytest.raises(planner.NoFit):
        planner.plan(replace(tight, template="zero3_offload_all", checkpointing=True))


def test_batchnorm_micro_batch_one_is_refused(tmp_path):
    result = dsconfig("generate", "--model-factory", RESNET, "--input-shape", "4,3,32,32", "--gpu-mem", "24GB",
                      "--micro-batch", 1, "--output-dir", tmp_path)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and "BatchNorm" in result.stderr and "--micro-batch 1" in result.stderr


def test_params_alone_notes_the_llm_assumption():
    result = dsconfig("generate", "--gpus", 2, "--gpu-mem", "96GB", "--params", "7B", "--stdout")
    assert result.returncode == 0 and "decoder-only LLM" in result.stderr


def test_factory_errors_are_one_line_exit_2(tmp_path):
    for args, fragment in ((["--model-factory", "nocolon", "--input-shape", "1,3"], "MODULE:FUNCTION"),
                           (["--model-factory", UNET], "--input-shape"),
                           (["--model-factory", "no_such_module:f", "--input-shape", "1,3"], "no_such_module"),
                           (["--model-factory", UNET, "--input-shape", "2,4,32,32", "--model", "gpt2"], "alone")):
        result = dsconfig("generate", *args, "--gpu-mem", "24GB", "--output-dir", tmp_path)
        assert result.returncode == 2, (args, result.stderr)
        assert result.stderr.startswith("dsconfig generate: error: ") and result.stderr.count("\n") == 1
        assert fragment in result.stderr and "Traceback" not in result.stderr
    assert os.listdir(tmp_path) == []


# -- the scenarios --------------------------------------------------------------------------------

def test_scenario_2_unet_850m_on_two_h20_global_64(tmp_path):
    """accelerate launch, 2 × H20 96 GB, an 850M UNet: does 64 = 32 per GPU × 1 × 2 GPUs fit, and how?"""
    result = dsconfig("generate", "--model-factory", "tests.estimate_harness.unet:unet_850m",
                      "--input-shape", "32,4,64,64", "--gpus", 2, "--gpu", "H20-96GB", "--global-batch", 64,
                      "--target", "accelerate", "--output-dir", tmp_path)
    assert result.returncode == 0, result.stderr
    config = generated(tmp_path)
    assert (config["train_batch_size"], config["train_micro_batch_size_per_gpu"],
            config["gradient_accumulation_steps"]) == (64, 32, 1)
    assert config["bf16"] == {"enabled": True}
    assert "global 64 = micro 32 × accumulation 1 × 2 GPUs × 1 node" in result.stdout
    assert "input 4×64×64 per sample" in result.stdout and "seq " not in result.stdout
    lint_clean(tmp_path, "accelerate", 2)
    # the estimate of exactly that setup agrees: it fits, with the plan's stage and checkpointing
    stage = config["zero_optimization"]["stage"]
    checkpointing = "--gradient-checkpointing" if "checkpointing on" in result.stdout else \
        "--no-gradient-checkpointing"
    check = dsconfig("estimate", "--model-factory", "tests.estimate_harness.unet:unet_850m", "--input-shape",
                     "32,4,64,64", "--gpus", 2, "--gpu", "H20-96GB", "--zero-stage", stage, checkpointing)
    assert check.returncode == 0 and "fits: yes" in check.stdout, check.stdout + check.stderr
    assert "850.71M parameters" in check.stdout


def test_scenario_5_unet_1_27b_out_of_memory_above_a_batch_on_one_gpu(tmp_path):
    """torchrun DDP, one 24 GB GPU, a 1.27B UNet with 610M frozen: out of memory above some batch; the
    remedies are gradient accumulation, gradient checkpointing, ZeRO, more GPUs."""
    factory = ["--model-factory", "tests.estimate_harness.unet:unet_1_27b"]
    first = dsconfig("estimate", *factory, "--input-shape", "1,4,64,64", "--gpu", "RTX4090", "--format", "json")
    data = json.loads(first.stdout)
    assert data["model"]["frozen_parameters"] > 0.45 * data["model"]["parameters"]
    largest = data["max_micro_batch"]
    assert largest >= 2
    over = dsconfig("estimate", *factory, "--input-shape", f"{largest + 1},4,64,64", "--gpu", "RTX4090")
    assert over.returncode == 1 and "fits: no" in over.stdout  # the user's out-of-memory

    wanted = 1 << (2 * (largest + 1)).bit_length()  # a power of two past what fits: it splits over 1 or 2 GPUs
    one = dsconfig("generate", *factory, "--input-shape", f"{largest + 1},4,64,64", "--gpu", "RTX4090",
                   "--global-batch", wanted, "--target", "deepspeed", "--output-dir", tmp_path / "one")
    assert one.returncode == 0, one.stderr
    micro, accumulation, total = batch_of(generated(tmp_path / "one"), one.stdout)
    assert total == wanted and micro * accumulation == wanted and accumulation > 1  # remedy: accumulation
    assert micro <= largest
    assert "with --gradient-checkpointing the micro batch could be" in one.stdout  # remedy: checkpointing
    lint_clean(tmp_path / "one", "deepspeed", 1)

    forced = dsconfig("generate", *factory, "--input-shape", f"{largest + 1},4,64,64", "--gpu", "RTX4090",
                      "--micro-batch", largest + 1, "--global-batch", largest + 1, "--target", "deepspeed",
                      "--output-dir", tmp_path / "forced")
    assert forced.returncode == 0, forced.stderr
    assert "checkpointing on: without it" in forced.stdout  # remedy: checkpointing, when the micro batch is fixed
    assert generated(tmp_path / "forced")["train_micro_batch_size_per_gpu"] == largest + 1
    lint_clean(tmp_path / "forced", "deepspeed", 1)

    two = dsconfig("generate", *factory, "--input-shape", f"{largest + 1},4,64,64", "--gpu", "RTX4090",
                   "--gpus", 2, "--global-batch", wanted, "--target", "deepspeed", "--output-dir", tmp_path / "two")
    assert two.returncode == 0, two.stderr
    micro2, accumulation2, total2 = batch_of(generated(tmp_path / "two"), two.stdout)
    assert total2 == wanted and micro2 * accumulation2 * 2 == wanted and accumulation2 < accumulation  # more GPUs
    lint_clean(tmp_path / "two", "deepspeed", 2)
