"""`dsconfig estimate` from the outside: output shapes, JSON keys, fits and the largest micro
batch, GPU names, --params, config.json and ds_config.json inputs, one-line errors (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from dsconfig.estimate import Hardware, TrainingSetup, catalog, shapes
from dsconfig.estimate import estimate as estimate_memory
from dsconfig.estimate.command import estimate

FIXTURES = Path(__file__).resolve().parents[1] / "estimate_harness" / "hf_configs"
KEYS = ["parameters", "gradients", "optimizer_states", "activations", "buffers", "overhead", "total"]


def run(*args):
    return CliRunner().invoke(estimate, [str(a) for a in args], prog_name="dsconfig estimate")


def run_json(*args):
    result = run(*args, "--format", "json")
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout), result.exit_code


def assert_one_line_error(result, fragment):
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("dsconfig estimate: error: ") and fragment in lines[0], lines[0]
    assert result.stdout == ""


def test_json_shape_without_memory():
    data, code = run_json("--model", "llama-2-7b")
    assert code == 0
    assert list(data["per_gpu_bytes"]) == KEYS
    assert data["per_gpu_bytes"]["total"] == sum(data["per_gpu_bytes"][k] for k in KEYS[:-1])
    assert isinstance(data["cpu_bytes_per_node"], int)
    assert data["fits"] is None and data["max_micro_batch"] is None
    assert data["model"]["parameters"] == 6_738_415_616


def test_table_lists_every_row():
    result = run("--model", "llama-3-8b", "--gpu", "H100-80GB", "--zero-stage", "3", "--gpus", "8",
                 "--gradient-checkpointing", "--seq-len", "4096")
    assert result.exit_code == 0, result.output
    for label in ("parameters", "gradients", "optimizer states", "activations", "DeepSpeed buffers",
                  "framework overhead", "total", "GPU memory (H100-80GB)", "headroom", "CPU per node",
                  "fits: yes", "largest micro batch that fits:"):
        assert label in result.stdout, label


def test_deepspeed_exact_states_through_the_cli():
    data, _ = run_json("--model", "llama-2-7b", "--zero-stage", "2", "--gpus", "8")
    P = 6_738_415_616
    per_gpu = data["per_gpu_bytes"]
    assert per_gpu["parameters"] + per_gpu["gradients"] + per_gpu["optimizer_states"] == 2 * P + int(18 * P / 8)
    assert data["cpu_bytes_per_node"] == int(P * 4 * 8 * 1.5)


def test_fits_and_exit_status():
    data, code = run_json("--model", "gpt2", "--gpu-mem", "1TB")
    assert data["fits"] is True and code == 0 and data["max_micro_batch"] >= 1
    data, code = run_json("--model", "llama-2-70b", "--gpu-mem", "24GB")
    assert data["fits"] is False and code == 1 and data["max_micro_batch"] == 0
    assert data["headroom_bytes"] < 0


@pytest.mark.parametrize("checkpointing", [False, True])
def test_max_micro_batch_is_the_largest_that_fits(checkpointing):
    shape = shapes.from_hf_config(catalog.CATALOG["llama-3-8b"].config, "llama-3-8b")
    hardware = Hardware(gpu_memory=80 * 10 ** 9)
    setup = TrainingSetup(seq_len=2048, zero_stage=3, gpus=8, gradient_checkpointing=checkpointing)
    best = estimate_memory(shape, setup, hardware).max_micro_batch
    assert best >= 1
    at = {b: estimate_memory(shape, TrainingSetup(**{**setup.__dict__, "micro_batch": b}), Hardware()).total
          for b in (best, best + 1)}
    assert at[best] <= hardware.usable_gpu_memory < at[best + 1]  # the GPU memory less the 10% kept free


def test_cpu_memory_decides_fits_too():
    data, code = run_json("--model", "llama-2-7b", "--zero-stage", "3", "--gpus", "8", "--offload-optimizer", "cpu",
                          "--offload-param", "cpu", "--gpu", "A100-80GB", "--cpu-mem", "64GiB")
    assert data["fits"] is False and code == 1  # 169 GiB of CPU states per node
    data, _ = run_json("--model", "llama-2-7b", "--zero-stage", "3", "--gpus", "8", "--offload-optimizer", "cpu",
                       "--offload-param", "cpu", "--gpu", "A100-80GB", "--cpu-mem", "1TB")
    assert data["fits"] is True


@pytest.mark.parametrize("name,mib", [("H100-80GB", 81559), ("A100-40GB", 40960), ("V100-32GB", 32768),
                                      ("H20-96GB", 97871), ("RTX4090", 24564), ("L40S", 46068)])
def test_gpu_names(name, mib):
    data, _ = run_json("--model", "gpt2", "--gpu", name)
    assert data["gpu_memory_bytes"] == mib * 2 ** 20
    data, _ = run_json("--model", "gpt2", "--gpu-mem", name)  # a name where a size is expected works too
    assert data["gpu_memory_bytes"] == mib * 2 ** 20


def test_gpu_without_bf16_is_reported():
    data, _ = run_json("--model", "gpt2", "--gpu", "V100-32GB", "--precision", "bf16")
    assert any("no bf16" in note for note in data["notes"])
    data, _ = run_json("--model", "gpt2", "--gpu", "V100-32GB", "--precision", "fp16")
    assert not any("bf16" in note for note in data["notes"])


def test_params_with_and_without_shape_flags():
    data, _ = run_json("--params", "7B")
    assert data["model"]["parameters"] == 7_000_000_000
    data, _ = run_json("--params", "7B", "--layers", "32", "--hidden", "4096", "--heads", "32", "--vocab", "32000")
    assert (data["model"]["layers"], data["model"]["hidden_size"]) == (32, 4096)


def test_hf_config_json_file():
    data, _ = run_json("--model", FIXTURES / "Meta-Llama-3-8B.json")
    assert data["model"]["parameters"] == 8_030_261_248
    assert data["model"]["key_value_heads"] == 8


def test_ds_config_supplies_the_deepspeed_side(tmp_path):
    path = tmp_path / "ds_config.json"
    path.write_text(json.dumps({
        "train_micro_batch_size_per_gpu": 4,
        "bf16": {"enabled": True},
        "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"}, "reduce_bucket_size": 1e8},
        "activation_checkpointing": {"partition_activations": False},
        "optimizer": {"type": "AdamW", "params": {"lr": 1e-5}},
    }))
    data, _ = run_json(path, "--model", "llama-2-7b", "--gpus", "8")
    setup = data["setup"]
    assert (setup["zero_stage"], setup["offload_optimizer"], setup["micro_batch"], setup["precision"]) == \
        (3, "cpu", 4, "bf16")
    assert setup["gradient_checkpointing"] is True
    assert data["buffers_bytes"]["reduce bucket"] == 100_000_000 * 2
    # options given on the command line win over the file
    data, _ = run_json(path, "--model", "llama-2-7b", "--micro-batch", "2", "--zero-stage", "2")
    assert (data["setup"]["micro_batch"], data["setup"]["zero_stage"]) == (2, 2)


def test_ds_config_auto_values_keep_defaults(tmp_path):
    path = tmp_path / "ds_config.json"
    path.write_text('{"train_micro_batch_size_per_gpu": "auto", "fp16": {"enabled": "auto"},'
                    ' "zero_optimization": {"stage": 2, "overlap_comm": true}}')
    data, _ = run_json(path, "--model", "gpt2")
    assert data["setup"]["micro_batch"] == 1 and data["setup"]["zero_stage"] == 2
    assert any('"auto"' in note for note in data["notes"])
    assert data["buffers_bytes"]["reduce buckets"] == 2 * min(500_000_000, 124_439_808) * 2  # overlap: two


def test_ds_config_read_like_deepspeed(tmp_path):
    path = tmp_path / "ds_config.json"
    path.write_text("{\n  // hjson comments, as DeepSpeed accepts them\n  zero_optimization: {stage: 1}\n}\n")
    data, _ = run_json(path, "--model", "gpt2")
    assert data["setup"]["zero_stage"] == 1


def test_profile_measures_the_activations():
    pytest.importorskip("transformers")
    from dsconfig.estimate import profile
    data, _ = run_json("--model", "gpt2", "--profile", "--seq-len", "64", "--micro-batch", "2", "--attention", "eager")
    measured = profile.measure_hf(catalog.CATALOG["gpt2"].config, batch=2, seq_len=64, attention="eager")
    assert data["per_gpu_bytes"]["activations"] == measured.activation_bytes
    assert any("--profile" in note for note in data["notes"])


def test_model_factory_measures_any_module():
    pytest.importorskip("torch")
    from tests.estimate_harness import models
    data, _ = run_json("--model-factory", "tests.estimate_harness.models:cnn", "--input-shape", "4,3,32,32",
                       "--precision", "fp32", "--gpu-mem", "16GB")
    assert data["per_gpu_bytes"]["activations"] == models.expected_cnn_bytes(4, 32, 4)
    assert data["setup"]["micro_batch"] == 4
    assert data["model"]["parameters"] == sum(p.numel() for p in models.cnn().parameters())
    assert data["max_micro_batch"] > 4


def test_lists():
    result = run("--list-models")
    assert result.exit_code == 0 and len(result.stdout.splitlines()) == len(catalog.CATALOG)
    result = run("--list-gpus")
    assert result.exit_code == 0 and "H100-80GB" in result.stdout


@pytest.mark.parametrize("args,fragment", [
    (["--model", "no-such-model"], "neither a catalog model"),
    ([], "say which model"),
    (["--model", "gpt2", "--params", "7B"], "not both"),
    (["--params", "lots"], "parameter count"),
    (["--model", "gpt2", "--gpu-mem", "lots"], "--gpu-mem"),
    (["--model", "gpt2", "--gpu", "TPU-v5"], "unknown GPU"),
    (["--model", "gpt2", "--precision", "fp8"], "fp8"),
    (["--model", "gpt2", "--bogus"], "--bogus"),
    (["--model", "gpt2", "--offload-optimizer", "cpu"], "ZeRO stage 1, 2 or 3"),
    (["--model", "gpt2", "--layers", "4"], "goes with --params"),
    (["--params", "7B", "--profile"], "needs a model config"),
    (["--model-factory", "tests.estimate_harness.models:cnn"], "--input-shape"),
    (["--model-factory", "no_such_module:f", "--input-shape", "1,3"], "no_such_module"),
])
def test_errors_are_one_line_with_exit_2(args, fragment):
    assert_one_line_error(run(*args), fragment)


def test_bad_files_are_one_line_errors(tmp_path):
    broken = tmp_path / "ds_config.json"
    broken.write_text('{"zero_optimization": {"stage": 3,,}}')
    assert_one_line_error(run(broken, "--model", "gpt2"), "not a DeepSpeed config")
    assert_one_line_error(run(tmp_path / "missing.json", "--model", "gpt2"), "cannot read")
    bad_model = tmp_path / "config.json"
    bad_model.write_text('{"model_type": "mamba"}')
    assert_one_line_error(run("--model", bad_model), "not supported")
    not_json = tmp_path / "model.json"
    not_json.write_text("{")
    assert_one_line_error(run("--model", not_json), "model.json:1:2: not valid JSON")


def test_the_estimate_path_imports_no_heavy_module():
    import subprocess
    import sys
    probe = ("import sys\n"
             "from dsconfig.estimate.command import estimate\n"
             "try:\n"
             "    estimate(['--model', 'llama-3-8b', '--gpu', 'H100-80GB', '--format', 'json'], prog_name='x')\n"
             "except SystemExit:\n"
             "    pass\n"
             "print('HEAVY:' + ','.join(m for m in ('torch', 'transformers', 'deepspeed', 'accelerate')"
             " if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parents[2]).stdout
    assert "HEAVY:\n" in out


def test_estimate_and_generate_say_fits_by_the_same_rule(tmp_path):
    """The newcomer's trial: ZeRO-2 with checkpointing on 2 × 96 GB. generate keeps 10% free and rejects
    ZeRO-2; estimate keeps the same 10% and says it does not fit, and both print the usable figure."""
    from dsconfig.generate.command import generate

    data, code = run_json("--model", "llama-3.1-8b", "--zero-stage", "2", "--gradient-checkpointing", "--gpus", "2",
                          "--gpu-mem", "96GB")
    assert code == 1 and data["fits"] is False and data["headroom_percent"] == 10
    assert data["usable_gpu_memory_bytes"] == int(data["gpu_memory_bytes"] * 0.9) < data["per_gpu_bytes"]["total"]
    plan = CliRunner().invoke(generate, ["--gpus", "2", "--gpu-mem", "96GB", "--model", "llama-3.1-8b", "--stdout",
                                         "--gradient-checkpointing"])
    assert plan.exit_code == 0 and "ZeRO          ZeRO-3: ZeRO-2 needs" in plan.stderr
    usable = f"{data['usable_gpu_memory_bytes'] / 2 ** 30:.1f} GiB available"
    assert usable in plan.stderr  # the same figure on both sides
    # With the headroom given up, estimate counts all of it, as generate --headroom 0 does.
    data, code = run_json("--model", "llama-3.1-8b", "--zero-stage", "2", "--gradient-checkpointing", "--gpus", "2",
                          "--gpu-mem", "96GB", "--headroom", "0")
    assert code == 0 and data["fits"] is True
    plan = CliRunner().invoke(generate, ["--gpus", "2", "--gpu-mem", "96GB", "--model", "llama-3.1-8b", "--stdout",
                                         "--gradient-checkpointing", "--headroom", "0"])
    assert "ZeRO          ZeRO-2" in plan.stderr


def test_estimate_on_the_file_generate_wrote_describes_the_plan(tmp_path, monkeypatch):
    """generate writes "auto" bucket sizes for the HF Trainer; estimate fills them from --model as the Trainer
    does, so it counts the buffers the plan counted and reaches the same total and verdict."""
    from dsconfig.generate.command import generate

    monkeypatch.chdir(tmp_path)
    plan = CliRunner().invoke(generate, ["--gpus", "2", "--gpu-mem", "96GB", "--model", "llama-3.1-8b",
                                         "--global-batch", "64"])
    assert plan.exit_code == 0, plan.output
    line = next(text for text in plan.output.splitlines() if text.startswith("per GPU at micro batch 1"))
    planned = line.split(": ", 1)[1].split(" of ")[0]  # "85.6 GiB"
    data, code = run_json("ds_config.json", "--model", "llama-3.1-8b", "--gpus", "2", "--gpu-mem", "96GB")
    assert code == 0 and data["fits"] is True
    assert f"{data['per_gpu_bytes']['total'] / 2 ** 30:.1f} GiB" == planned
    assert any("reduce_bucket_size is \"auto\": the HF Trainer fills it with hidden_size² = 16,777,216" in note
               for note in data["notes"])
