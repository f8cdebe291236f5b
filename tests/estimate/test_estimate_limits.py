"""Model configs and sizes as `dsconfig estimate` and `dsconfig generate` both read them
(dsconfig/estimate/limits.py, shapes._count): one check, one-line errors naming the file and the key,
bounds far above any real model, and work that does not grow with the layer count."""

from __future__ import annotations

import json
import math
import tracemalloc

import pytest
from click.testing import CliRunner

from dsconfig.estimate import activations, catalog, limits, shapes
from dsconfig.estimate.command import estimate
from dsconfig.generate.command import generate

LLAMA = {"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2,
         "intermediate_size": 128, "vocab_size": 100}

# (config changes, the key the message names, what it says)
BAD = [
    ({"num_hidden_layers": 10 ** 12}, "num_hidden_layers", "more than 10,000 layers"),
    ({"num_hidden_layers": 1e12}, "num_hidden_layers", "more than 10,000 layers"),
    ({"num_hidden_layers": 32.0}, "num_hidden_layers", "must be an integer, not 32.0: write 32"),
    ({"head_dim": math.nan}, "head_dim", "must be a positive integer, not NaN"),
    ({"head_dim": math.inf}, "head_dim", "must be a positive integer, not Infinity"),
    ({"head_dim": 0}, "head_dim", "must be a positive integer, not 0"),
    ({"head_dim": -8}, "head_dim", "must be a positive integer, not -8"),
    ({"head_dim": 8.5}, "head_dim", "must be a positive integer, not 8.5"),
    ({"intermediate_size": True}, "intermediate_size", "must be a positive integer, not true"),
    ({"intermediate_size": math.inf}, "intermediate_size", "not Infinity"),
    ({"vocab_size": math.nan}, "vocab_size", "not NaN"),
    ({"vocab_size": "32000"}, "vocab_size", 'not "32000"'),
    ({"num_attention_heads": 128}, "num_attention_heads", "more than hidden_size 64"),
    ({"attention_dropout": math.nan}, "attention_dropout", "a probability from 0 to 1, not NaN"),
    ({"tie_word_embeddings": "false"}, "tie_word_embeddings", 'true or false, not "false"'),
]


def _config_file(tmp_path, changes: dict, model_type: str = "llama"):
    path = tmp_path / "config.json"
    config = dict(LLAMA, **changes) if model_type == "llama" else {"model_type": model_type, **changes}
    path.write_text(json.dumps(config))  # json writes NaN and Infinity, as Python's json reads them
    return path


def _one_line(result, prog: str) -> str:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith(f"{prog}: error: ")
    return result.stderr


@pytest.mark.parametrize("changes,key,says", BAD, ids=[f"{c}" for c, _, _ in BAD])
def test_estimate_and_generate_refuse_the_same_config_naming_file_and_key(tmp_path, changes, key, says):
    path = _config_file(tmp_path, changes)
    for command, prog, extra in ((estimate, "dsconfig estimate", []),
                                 (generate, "dsconfig generate", ["--stdout"])):
        result = CliRunner().invoke(command, ["--model", str(path), "--gpu-mem", "80GB", *extra])
        message = _one_line(result, prog)
        assert f"--model: {path}: " in message and key in message and says in message, message


@pytest.mark.parametrize("model_type,changes,says", [
    ("t5", {"num_layers": 10 ** 8}, "num_layers is 100000000, more than 10,000 layers"),
    ("t5", {"num_decoder_layers": 0}, "num_decoder_layers must be a positive integer, not 0"),
    ("gpt2", {"n_embd": 8, "n_head": 32}, "n_head 32 is more than n_embd 8"),
    ("falcon", {"n_layer": 12.0}, "n_layer must be an integer, not 12.0"),
    ("vit", {"image_size": math.nan}, "image_size must be a positive integer, not NaN"),
    ("mixtral", {"hidden_size": 64, "num_attention_heads": 4, "num_local_experts": 10 ** 6},
     "num_local_experts is 1000000, more than 65,536 experts"),
    ("llama", {"hidden_size": 1 << 20, "num_attention_heads": 8, "intermediate_size": 1 << 20,
               "num_hidden_layers": 10_000}, "the model has 76,965,835,126,603,776 parameters, more than 100,000,000"),
])
def test_every_family_reads_its_sizes_through_the_same_check(tmp_path, model_type, changes, says):
    if model_type == "llama":
        changes = {k: v for k, v in dict(LLAMA, **changes).items() if k != "model_type"}
    with pytest.raises(shapes.ShapeError) as raised:
        shapes.from_config_file(str(_config_file(tmp_path, changes, model_type)))
    assert says in str(raised.value) and str(raised.value).startswith(str(tmp_path)), raised.value


def test_what_transformers_refuses_dsconfig_refuses():
    """transformers 5.23's strict config classes refuse a float or bool count and NaN outright; a
    head_dim of 0 or -8 passes the config but not the model. dsconfig refuses all of them."""
    transformers = pytest.importorskip("transformers")
    torch = pytest.importorskip("torch")
    for changes, key, _ in BAD:
        if key in ("num_attention_heads", "attention_dropout", "tie_word_embeddings") or changes == {
                "num_hidden_layers": 10 ** 12}:
            continue  # transformers builds these (or would build 10^12 layers); the bound is dsconfig's
        config = dict(LLAMA, **changes)
        with pytest.raises(Exception):  # noqa: B017 - StrictDataclassFieldValidationError, ZeroDivisionError, ...
            built = transformers.LlamaConfig.from_dict(config)
            with torch.device("meta"):
                transformers.LlamaForCausalLM(built)
        with pytest.raises(shapes.ShapeError, match=key):
            shapes.from_hf_config(config)
    with torch.device("meta"):  # and the unchanged config builds in both
        transformers.LlamaForCausalLM(transformers.LlamaConfig.from_dict(LLAMA))
    assert shapes.from_hf_config(LLAMA).layers == 2


@pytest.mark.parametrize("args,says", [
    (["--params", "999999999999999999999999999T"], "1e+39 parameters, more than 100,000,000,000,000 parameters"),
    (["--params", "9" * 400], "more parameters than a float holds"),
    (["--params", "7B", "--layers", "1000000000"], "--layers is 1000000000, more than 10,000 layers"),
    (["--params", "100T", "--hidden", "64"], "at hidden size 64 make 2,034,505,125 layers, more than 10,000"),
    (["--params", "100T", "--layers", "1"], "in 1 layers make a hidden size of 2,884,096, more than 1,048,576"),
    (["--model", "gpt2", "--seq-len", "1" + "0" * 400], "--seq-len is a 401-digit number, more than"),
    (["--model", "gpt2", "--seq-len", "9" * 5000], "--seq-len is a 5000-digit number, more than"),
    (["--model", "gpt2", "--micro-batch", "2000000000"], "--micro-batch is 2000000000, more than 1,073,741,824"),
    (["--model", "gpt2", "--gpus", "1" + "0" * 40], "--gpus is a 41-digit number, more than 65,536 GPUs"),
    (["--model", "gpt2", "--nodes", "1000000"], "--nodes is 1000000, more than 131,072 nodes"),
    (["--model", "gpt2", "--cpu-mem", "1" + "0" * 400 + "GB"], "more memory than any machine has"),
    (["--model", "gpt2", "--gpu-mem", "2000000TB"], "--gpu-mem: 2000000TB is more memory than any machine has"),
])
def test_command_line_sizes_are_bounded_in_both_commands(args, says):
    for command, prog in ((estimate, "dsconfig estimate"), (generate, "dsconfig generate")):
        full = args if "--gpu-mem" in args else [*args, "--gpu-mem", "80GB"]
        message = _one_line(CliRunner().invoke(command, [*full, *(["--stdout"] if command is generate else [])]),
                            prog)
        assert says in message, message
    result = CliRunner().invoke(generate, ["--gpu-mem", "80GB", "--global-batch", "1" + "0" * 30, "--stdout"])
    assert "--global-batch is a 31-digit number, more than 1,073,741,824 samples" in _one_line(result, "dsconfig generate")


def test_the_largest_real_models_are_well_inside_the_bounds():
    for entry in catalog.CATALOG.values():
        shape = shapes.from_hf_config(entry.config, entry.name)
        assert shape.layers * 10 <= limits.LAYERS.most and shape.parameters * 50 <= limits.PARAMETERS.most
        assert max(shape.hidden, shape.intermediate) * 14 <= limits.WIDTH.most
        assert shape.vocab * 65 <= limits.VOCABULARY.most and shape.max_positions * 100 <= limits.SEQUENCE.most


def test_the_layer_count_costs_neither_time_nor_memory():
    """Parameters and activations grow exactly linearly with the layer count, and a 10,000-layer
    model is counted in the memory of a 3-layer one (per-layer lists made 10^12 layers a MemoryError)."""
    for name in ("llama-3-8b", "gpt2", "t5-small", "falcon-40b", "vit-base-patch16-224", "mixtral-8x7b"):
        config = dict(catalog.CATALOG[name].config)
        key = next(k for k in ("num_hidden_layers", "n_layer", "num_layers") if k in config)

        def measure(layers, config=config, key=key):
            stacks = {key: layers, "num_decoder_layers": layers} if config["model_type"] == "t5" else {key: layers}
            shape = shapes.from_hf_config({**config, **stacks})
            acts = activations.estimate(shape, batch=2, seq_len=128, checkpointing=False)
            ckpt = activations.estimate(shape, batch=2, seq_len=128, checkpointing=True)
            return shape.parameters, shape.largest_layer_params, acts.total, ckpt.kept, ckpt.recompute

        # from two layers on (T5 keeps its position bias for the later blocks only)
        two, three, many = measure(2), measure(3), measure(10_000)
        for index in (0, 2, 3):  # parameters, activations, checkpointed inputs: linear in the layers
            assert many[index] == two[index] + 9_998 * (three[index] - two[index]), (name, index)
        assert many[1] == two[1] and many[4] == two[4], name  # largest layer, one recomputed layer
        tracemalloc.start()
        measure(10_000)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert peak < 200_000, (name, peak)


@pytest.mark.parametrize("value,message", [
    (32, None),
    (32.0, "n must be an integer, not 32.0: write 32"),
    (1e12, "n is 1000000000000.0, more than 10,000 layers"),
    (True, "n must be a positive integer, not true"),
    (math.nan, "n must be a positive integer, not NaN"),
    (-math.inf, "n must be a positive integer, not -Infinity"),
    (10 ** 500, "n is a 501-digit number, more than 10,000 layers"),
    ([1], "n must be a positive integer, not a JSON array"),
])
def test_count_says_what_is_wrong(value, message):
    if message is None:
        assert limits.count(value, "n", limits.LAYERS) == value
        return
    with pytest.raises(limits.LimitError) as raised:
        limits.count(value, "n", limits.LAYERS)
    assert str(raised.value).startswith(message), raised.value


@pytest.mark.parametrize("written,shown", [("1" + "0" * 400, "a 401-digit number"), ("1e300", "1e+300")])
def test_a_ds_config_micro_batch_past_the_bound_is_an_error_naming_file_and_key(tmp_path, written, shown):
    # DeepSpeed takes any positive micro batch; a 401-digit one overflowed the estimate's float arithmetic
    path = tmp_path / "ds_config.json"
    path.write_text(f'{{"train_micro_batch_size_per_gpu": {written}}}')
    message = _one_line(CliRunner().invoke(estimate, [str(path), "--model", "gpt2", "--gpu-mem", "80GB"]),
                        "dsconfig estimate")
    assert f"{path}: train_micro_batch_size_per_gpu is {shown}, more than 1,073,741,824 samples" in message
