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


# -- config.json values no model can be built from: one line naming the file, the key and its line:column -------

LLAMA = {"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32, "num_hidden_layers": 2}
NEGATIVE_WIDTH = "transformers fails building the model (RuntimeError \"Trying to create tensor with negative dimension\")"
IMPOSSIBLE = [
    ({"hidden_size": -4096}, ("hidden_size",), f"hidden_size must be a positive integer, not -4096: {NEGATIVE_WIDTH}"),
    ({"hidden_size": 0}, ("hidden_size",),
     "hidden_size must be a positive integer, not 0: the hidden states would have no dimensions"),
    ({"num_attention_heads": 0}, ("num_attention_heads",),
     "num_attention_heads must be a positive integer, not 0: transformers divides by it (ZeroDivisionError)"),
    ({"num_attention_heads": -32}, ("num_attention_heads",), "num_attention_heads must be a positive integer, not -32: "
     "transformers' models fail building the attention or in its first forward pass"),
    ({"num_hidden_layers": 0}, ("num_hidden_layers",),
     "num_hidden_layers must be a positive integer, not 0: the model would have no layers"),
    ({"num_hidden_layers": -2}, ("num_hidden_layers",),
     "num_hidden_layers must be a positive integer, not -2: the model would have no layers"),
    ({"intermediate_size": -1}, ("intermediate_size",),
     f"intermediate_size must be a positive integer, not -1: {NEGATIVE_WIDTH}"),
    ({"intermediate_size": 0}, ("intermediate_size",),
     "intermediate_size must be a positive integer, not 0: the MLP would have no units"),
    ({"vocab_size": -32000}, ("vocab_size",), f"vocab_size must be a positive integer, not -32000: {NEGATIVE_WIDTH}"),
    ({"vocab_size": 0}, ("vocab_size",), "vocab_size must be a positive integer, not 0: the embedding would have no tokens"),
    ({"num_key_value_heads": 64}, ("num_key_value_heads",),
     "num_key_value_heads 64 is more than num_attention_heads 32: attention repeats each key/value head 32 // 64 = 0 "
     "times, and the first forward pass fails (transformers' Llama-style attention: RuntimeError \"The size of tensor "
     "a (32) must match the size of tensor b (...) at non-singleton dimension 1\")"),
    ({"num_key_value_heads": 3}, ("num_key_value_heads",),
     "num_attention_heads 32 is not divisible by num_key_value_heads 3: attention repeats each key/value head "
     "32 // 3 = 10 times, 30 heads for 32 queries, and the first forward pass fails"),
    ({"model_type": "mixtral", "num_key_value_heads": 8, "num_local_experts": 4, "num_experts_per_tok": 8},
     ("num_experts_per_tok",), "num_experts_per_tok 8 is more than num_local_experts 4: the router picks the top 8 of "
     "4 experts, and the first forward pass fails (torch.topk: RuntimeError \"selected index k out of range\")"),
    ({"model_type": "qwen2_moe", "num_experts": 4, "num_experts_per_tok": 6}, ("num_experts_per_tok",),
     "num_experts_per_tok 6 is more than num_experts 4"),
    ({"model_type": "deepseek_v3", "n_routed_experts": 8, "num_experts_per_tok": 9}, ("num_experts_per_tok",),
     "num_experts_per_tok 9 is more than n_routed_experts 8"),
    # transformers' own config class refuses it: its words
    ({"model_type": "recurrent_gemma", "num_attention_heads": 10, "num_key_value_heads": 20},
     ("num_key_value_heads",), "num_key_value_heads 20 is more than num_attention_heads 10: transformers' "
     "recurrent_gemma config refuses it: ValueError \"The number of `num_key_value_heads` must be smaller than "
     "`num_attention_heads`\""),
    ({"model_type": "jetmoe", "num_local_experts": 8, "num_experts_per_tok": 9}, ("num_experts_per_tok",),
     "num_experts_per_tok 9 is more than num_local_experts 8: transformers' jetmoe config refuses it: ValueError "
     "\"`num_experts_per_tok` must be less than or equal to "
     "`num_local_experts`\""),
    # the names a family's config class reads the sizes from, and a sub-config's keys
    ({"model_type": "gpt2", "n_embd": -768, "hidden_size": None}, ("n_embd",),
     f"n_embd must be a positive integer, not -768: {NEGATIVE_WIDTH}"),
    ({"model_type": "t5", "num_heads": 0}, ("num_heads",), "num_heads must be a positive integer, not 0"),
    ({"model_type": "llava", "text_config": {"model_type": "llama", "num_attention_heads": 32,
                                             "num_key_value_heads": 48}},
     ("text_config", "num_key_value_heads"), "text_config.num_key_value_heads 48 is more than "
     "text_config.num_attention_heads 32"),
]


def model_file(tmp_path, changes: dict) -> Path:
    """A config.json as Hugging Face writes one (indented), with `changes` over a small Llama."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**LLAMA, **changes}, indent=2))
    return path


def key_position(path: Path, keys: tuple) -> str:
    """line:column of the (last) key's token, found by reading the text: the nested key after its parent's."""
    lines = path.read_text().splitlines()
    start = 0
    for key in keys:
        start = max(i for i, line in enumerate(lines) if f'"{key}":' in line and i >= start)
    return f"{start + 1}:{lines[start].index(chr(34) + keys[-1]) + 1}"


@pytest.mark.parametrize("changes, keys, says", IMPOSSIBLE, ids=[".".join(keys) + "=" + json.dumps(changes)[:40]
                                                                  for changes, keys, says in IMPOSSIBLE])
def test_a_config_no_model_can_be_built_from_is_one_line_naming_the_key(tmp_path, changes, keys, says):
    path = model_file(tmp_path, changes)
    assert_one_line_error(run("--model", path), f"--model: {path}:{key_position(path, keys)}: {says}")


def test_every_catalog_entry_and_every_transformers_default_config_passes():
    """No false alarm: the catalog, and the default config of every config class transformers 5.23 has."""
    for entry in catalog.CATALOG.values():
        assert shapes.config_problem(entry.config) is None, entry.name
    configuration_auto = pytest.importorskip("transformers.models.auto.configuration_auto")
    checked = 0
    for model_type in configuration_auto.CONFIG_MAPPING:
        try:
            config = configuration_auto.CONFIG_MAPPING[model_type]()
        except Exception:  # noqa: BLE001 - classes that need arguments or optional packages
            continue
        assert shapes.config_problem(config.to_dict()) is None, model_type
        checked += 1
    assert checked > 500


def test_the_refusals_quoted_are_transformers_own_and_the_only_ones():
    """Every config class transformers 5.23 has, given more K/V heads than heads, heads the K/V heads do not
    divide, or more experts per token than experts: it raises exactly when shapes.KV_REFUSED /
    EXPERTS_REFUSED say so, with the words quoted."""
    import warnings

    configuration_auto = pytest.importorskip("transformers.models.auto.configuration_auto")

    def refusal(cls, **values):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                cls(**values)
        except Exception as error:  # noqa: BLE001 - strict validation wraps the ValueError
            return str(error)
        return None

    seen_kv, seen_experts = set(), set()
    for model_type in configuration_auto.CONFIG_MAPPING:
        try:
            cls = configuration_auto.CONFIG_MAPPING[model_type]
            default = cls().to_dict()
        except Exception:  # noqa: BLE001
            continue
        heads, kv = default.get("num_attention_heads"), default.get("num_key_value_heads")
        if type(heads) is int and type(kv) is int and heads > 2:
            for kv_heads in (2 * heads, next(k for k in range(2, heads) if heads % k)):
                said = refusal(cls, num_attention_heads=heads, num_key_value_heads=kv_heads)
                quoted = shapes.KV_REFUSED.get(model_type)
                applies = kv_heads > heads or model_type not in shapes.KV_REFUSED_ONLY_WHEN_MORE
                if quoted is not None and applies:
                    assert said is not None and quoted.format(heads=heads, kv=kv_heads) in said, (model_type, said)
                    seen_kv.add(model_type)
                else:
                    assert said is None, (model_type, kv_heads, said)
        for per_token_key in shapes.EXPERTS_PER_TOKEN_KEYS:
            for experts_key in shapes.EXPERT_COUNT_KEYS:
                experts = default.get(experts_key)
                if type(default.get(per_token_key)) is int and type(experts) is int and experts > 1:
                    said = refusal(cls, **{per_token_key: experts + 1, experts_key: experts})
                    quoted = shapes.EXPERTS_REFUSED.get(model_type)
                    if quoted is not None:
                        assert said is not None and quoted.format(per_token=experts + 1, experts=experts) in said
                        seen_experts.add(model_type)
                    else:
                        assert said is None, (model_type, said)
    assert seen_kv == set(shapes.KV_REFUSED) and seen_experts == set(shapes.EXPERTS_REFUSED)


def _tiny(model_type: str, **changes):
    from transformers import AutoConfig
    values = {"hidden_size": 64, "intermediate_size": 64, "num_hidden_layers": 1, "num_attention_heads": 4,
              "num_key_value_heads": 4, "vocab_size": 100, "pad_token_id": 0}
    return AutoConfig.for_model(model_type, **{**values, **changes})


def _build(config):
    """The model transformers builds from the config (on the CPU)."""
    import warnings

    from transformers import AutoModelForCausalLM
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return AutoModelForCausalLM.from_config(config).eval()


def _build_and_run(config):
    """The model, after its first forward pass."""
    import torch
    model = _build(config)
    with torch.no_grad():
        model(torch.tensor([[1, 2, 3]]))
    return model


def test_what_the_messages_say_transformers_does_with_such_sizes():
    pytest.importorskip("transformers")
    pytest.importorskip("torch")
    from huggingface_hub.errors import StrictDataclassClassValidationError
    from transformers import LlamaConfig
    for model_type in ("llama", "mistral", "qwen2"):
        for key in ("hidden_size", "intermediate_size", "vocab_size"):  # the width ones: the tensor cannot exist
            with pytest.raises(RuntimeError, match="Trying to create tensor with negative dimension"):
                _build_and_run(_tiny(model_type, **{key: -8}))
            assert NEGATIVE_WIDTH in shapes.config_problem({key: -8}).message
        with pytest.raises((RuntimeError, ValueError)):  # negative heads: the build or the first forward fails
            _build_and_run(_tiny(model_type, num_attention_heads=-4))
        for layers in (0, -1):  # range() of it: a model without a single layer (-1 then fails in its forward)
            assert "the model would have no layers" in shapes.config_problem({"num_hidden_layers": layers}).message
            if layers < 0 and model_type == "qwen2":  # its config checks layer_types against it, and refuses it
                with pytest.raises(StrictDataclassClassValidationError,
                                   match=r"`num_hidden_layers` \(-1\) must be equal to the number of `layer_types`"):
                    _tiny(model_type, num_hidden_layers=layers)
                continue
            assert len(_build(_tiny(model_type, num_hidden_layers=layers)).model.layers) == 0
    with pytest.raises(ZeroDivisionError):  # transformers' config class divides by it
        LlamaConfig(num_attention_heads=0)
    assert "ZeroDivisionError" in shapes.config_problem({"num_attention_heads": 0}).message


@pytest.mark.parametrize("model_type", ["llama", "mistral", "qwen2", "mixtral", "qwen3"])
def test_more_or_indivisible_kv_heads_fail_in_the_first_forward_pass_as_said(model_type):
    pytest.importorskip("transformers")
    pytest.importorskip("torch")
    for kv in (8, 3):  # 4 attention heads: 8 K/V heads is more, 3 does not divide
        config = _tiny(model_type, num_key_value_heads=kv)
        assert config.num_key_value_heads == kv  # the config class accepts it
        problem = shapes.config_problem(config.to_dict())
        assert problem.tokens == ("num_key_value_heads",) and "the first forward pass fails" in problem.message
        for attention in ("eager", "sdpa"):
            config._attn_implementation = attention
            with pytest.raises(RuntimeError, match=r"The size of tensor a \(4\) must match the size of tensor b \(.*\) at "
                                                   "non-singleton dimension 1"):
                _build_and_run(config)


@pytest.mark.parametrize("model_type, experts_key, extra", [
    ("mixtral", "num_local_experts", {}),
    ("qwen2_moe", "num_experts", {"moe_intermediate_size": 32, "shared_expert_intermediate_size": 32}),
    ("qwen3_moe", "num_experts", {"moe_intermediate_size": 32}),
    ("olmoe", "num_experts", {}),
])
def test_more_experts_per_token_than_experts_fail_in_the_router_as_said(model_type, experts_key, extra):
    pytest.importorskip("transformers")
    pytest.importorskip("torch")
    config = _tiny(model_type, **{experts_key: 4, "num_experts_per_tok": 6}, **extra)
    problem = shapes.config_problem(config.to_dict())
    assert problem.tokens == ("num_experts_per_tok",) and shapes.EXPERTS_FAILURE in problem.message
    with pytest.raises(RuntimeError, match="selected index k out of range"):
        _build_and_run(config)
    dense = _tiny(model_type, **{experts_key: 4, "num_experts_per_tok": 4}, **extra)
    assert shapes.config_problem(dense.to_dict()) is None
    _build_and_run(dense)  # as many as there are: fine


def test_no_routed_experts_is_a_dense_model_and_not_refused():
    """Qwen2-MoE builds dense MLPs with num_experts 0: its num_experts_per_tok is never used."""
    pytest.importorskip("transformers")
    pytest.importorskip("torch")
    config = _tiny("qwen2_moe", num_experts=0, num_experts_per_tok=4, moe_intermediate_size=32,
                   shared_expert_intermediate_size=32)
    assert shapes.config_problem(config.to_dict()) is None
    model = _build_and_run(config)
    assert "Qwen2MoeMLP" in {type(module).__name__ for module in model.modules()}


def test_the_size_aliases_are_transformers_attribute_maps():
    configuration_auto = pytest.importorskip("transformers.models.auto.configuration_auto")
    for model_type in shapes.FAMILIES:
        attribute_map = configuration_auto.CONFIG_MAPPING[model_type].attribute_map
        for size in shapes.SIZES:
            if size in attribute_map:  # the config class reads the size from that key
                assert attribute_map[size] in shapes.SIZE_ALIASES[model_type][size], (model_type, size)
