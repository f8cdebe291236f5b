"""The model catalog and config.json parsing against the real transformers classes on meta.

Parameter counts (shared weights once) and DeepSpeed's largest layer are compared exactly with
the model transformers builds from the same config; real Hub config.json files (fixtures) must
give the same shape as the catalog entry for that model.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dsconfig.estimate import catalog, gpus, shapes

FIXTURES = Path(__file__).resolve().parents[1] / "estimate_harness" / "hf_configs"
FIXTURE_ENTRIES = {"Llama-2-7b-hf.json": "llama-2-7b", "Meta-Llama-3-8B.json": "llama-3-8b",
                   "Mistral-7B-v0.1.json": "mistral-7b-v0.1", "Qwen2.5-0.5B.json": "qwen2.5-0.5b",
                   "gpt2.json": "gpt2", "t5-small.json": "t5-small", "Phi-3-mini-4k-instruct.json": "phi-3-mini",
                   "falcon-7b.json": "falcon-7b"}
# published sizes (model cards / papers) for a sanity check of the catalog's values
PUBLISHED = {"gpt2": 124_439_808, "llama-2-7b": 6_738_415_616, "llama-3-8b": 8_030_261_248,
             "mistral-7b-v0.1": 7_241_732_096, "mixtral-8x7b": 46_702_792_704, "t5-small": 60_506_624,
             "vit-base-patch16-224": 86_567_656, "bloom-560m": 559_214_592, "qwen2.5-0.5b": 494_032_768}


def test_catalog_size_and_sources():
    assert len(catalog.CATALOG) >= 30
    families = {entry.config["model_type"] for entry in catalog.CATALOG.values()}
    assert families == set(shapes.FAMILIES)
    for entry in catalog.CATALOG.values():
        assert entry.source.startswith("https://huggingface.co/") and entry.source.endswith("/config.json")


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_published_sizes(name):
    assert shapes.from_hf_config(catalog.CATALOG[name].config).parameters == PUBLISHED[name]


def test_lookup_by_alias_and_repo():
    assert catalog.lookup("Llama2-7B").name == "llama-2-7b"
    assert catalog.lookup("meta-llama/Llama-2-7b-hf").name == "llama-2-7b"
    assert catalog.lookup("no-such-model") is None


@pytest.mark.parametrize("name", sorted(catalog.CATALOG))
def test_parameter_count_matches_transformers_on_meta(name):
    pytest.importorskip("transformers")
    from dsconfig.estimate import profile
    entry = catalog.CATALOG[name]
    shape = shapes.from_hf_config(entry.config, name)
    model = profile.build_hf_model(entry.config)
    assert (shape.parameters, shape.largest_layer_params) == profile.count_parameters(model)


@pytest.mark.parametrize("fixture", sorted(FIXTURE_ENTRIES))
def test_real_config_json_gives_the_catalog_shape(fixture):
    config = json.loads((FIXTURES / fixture).read_text())
    shape = shapes.from_hf_config(config)
    expected = shapes.from_hf_config(catalog.CATALOG[FIXTURE_ENTRIES[fixture]].config)
    for field in ("family", "layers", "hidden", "heads", "kv_heads", "head_dim", "intermediate", "vocab",
                  "tied_embeddings", "mlp", "parameters", "largest_layer_params"):
        assert getattr(shape, field) == getattr(expected, field), field


@pytest.mark.parametrize("fixture", sorted(FIXTURE_ENTRIES))
def test_real_config_json_counts_like_transformers(fixture):
    pytest.importorskip("transformers")
    from dsconfig.estimate import profile
    config = json.loads((FIXTURES / fixture).read_text())
    model = profile.build_hf_model(config)
    assert shapes.from_hf_config(config).parameters == profile.count_parameters(model)[0]


@pytest.mark.parametrize("bad,message", [
    ({}, "no model_type"),
    ({"model_type": "mamba"}, "not supported"),
    ({"model_type": "llama", "hidden_size": "big", "num_attention_heads": 8}, "positive integer"),
    ([], "JSON object"),
])
def test_bad_configs_say_why(bad, message):
    with pytest.raises(shapes.ShapeError, match=message):
        shapes.from_hf_config(bad)


@pytest.mark.parametrize("text,count", [("7B", 7_000_000_000), ("6.7b", 6_700_000_000), ("350M", 350_000_000),
                                        ("124439808", 124_439_808), ("1.5T", 1_500_000_000_000)])
def test_parse_count(text, count):
    assert shapes.parse_count(text) == count


def test_from_params_keeps_the_count_and_builds_a_plausible_shape():
    shape = shapes.from_params(7_000_000_000)
    assert shape.parameters == 7_000_000_000
    derived = shapes.count_parameters(shape)[0]
    assert abs(derived - 7_000_000_000) / 7_000_000_000 < 0.15  # the guessed widths are about right
    assert shape.hidden % shape.heads == 0


def test_gpu_catalog():
    assert gpus.lookup("H100-80GB").memory_bytes == 81559 * 2 ** 20
    assert gpus.lookup("h100").name == "H100-80GB"
    assert gpus.lookup("A100 40GB").memory_mib == 40960
    assert gpus.lookup("V100-32GB").bf16 is False and gpus.lookup("RTX4090").bf16 is True
    assert gpus.lookup("H20-96GB").memory_mib == 97871
    assert gpus.lookup("nonsense") is None
    assert gpus.parse_memory_size("80GB") == 80 * 2 ** 30  # GPU and host memory are sold in binary gigabytes
    for spelled in ("80GiB", "80G", "80"):
        assert gpus.parse_memory_size(spelled) == 80 * 2 ** 30
    with pytest.raises(ValueError):
        gpus.parse_memory_size("lots")


def test_a_size_printed_on_the_box_means_the_catalog_cards_of_that_size():
    """--gpu-mem 96GB is an H20 / GH200 / RTX PRO 6000, not 96·10⁹ bytes: the least usable memory among them."""
    card = gpus.nominal_card("96GB")
    assert card.memory_mib == gpus.lookup("H20-96GB").memory_mib == 97871 and card.bf16 is True
    assert gpus.nominal_card("96") == card and gpus.nominal_card(" 96 gb ") == card
    assert gpus.nominal_card("80GB").memory_mib == min(gpus.lookup(n).memory_mib for n in ("H100-80GB", "A100-80GB"))
    assert gpus.nominal_card("16GB").bf16 is False  # V100-16GB and T4
    assert gpus.nominal_card("96GiB") is None and gpus.nominal_card("50GB") is None  # exact, or no such card
