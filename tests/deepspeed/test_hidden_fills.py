"""dsconfig.deepspeed.hidden_fills against the real `HfTrainerDeepSpeedConfig.trainer_config_finalize`.

The oracle: `TrainingArguments(deepspeed=config)` builds the real HfTrainerDeepSpeedConfig and
DeepSpeedPlugin (as in test_trainer.py), and `trainer_config_finalize` runs with a model whose
`config` is the real transformers config object of that model type; dsconfig sees only the dict
that object writes as config.json (`to_dict()`).
"""

from __future__ import annotations

import copy
import tempfile
import warnings
from types import SimpleNamespace

import pytest

from dsconfig.deepspeed.hidden_fills import HIDDEN_SIZE_KEYS, NoHiddenSize, bucket_fills, hidden_size_of

transformers = pytest.importorskip("transformers")
pytest.importorskip("accelerate")
pytest.importorskip("deepspeed")
pytest.importorskip("torch")

from transformers import CONFIG_MAPPING, TrainingArguments  # noqa: E402

OUTPUT_DIR = tempfile.mkdtemp(prefix="dsconfig-hidden-")
STAGES = (3, 2, "auto", None)


def _ds_config(stage, autos) -> dict:
    zero = {key.split(".")[1]: "auto" for key in autos}
    zero["reduce_bucket_size"] = zero.get("reduce_bucket_size", 12345)
    if stage is not None:
        zero["stage"] = stage
    return {"train_micro_batch_size_per_gpu": "auto", "zero_optimization": zero}


def real_fills(config: dict, model_config) -> list[tuple[str, object]] | str:
    """What trainer_config_finalize writes over the three keys, or the message of the ValueError it raises."""
    args = TrainingArguments(output_dir=OUTPUT_DIR, use_cpu=True, report_to=[], deepspeed=copy.deepcopy(config))
    hf = args.deepspeed_plugin.hf_ds_config
    try:
        hf.trainer_config_finalize(args, SimpleNamespace(config=model_config), 100)
    except ValueError as error:
        return str(error)
    zero = hf.config["zero_optimization"]
    return [(key, zero[key.split(".")[1]]) for key in HIDDEN_SIZE_KEYS
            if config["zero_optimization"].get(key.split(".")[1]) == "auto" != zero[key.split(".")[1]]]


def ours(config: dict, model_dict: dict) -> list[tuple[str, object]] | str:
    try:
        return bucket_fills(config, hidden_size_of(model_dict))
    except NoHiddenSize as error:
        return str(error)


def _model_configs():
    """Every model type of the installed transformers whose config builds with its defaults."""
    built = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for model_type in sorted(CONFIG_MAPPING.keys()):
            try:
                built.append((model_type, CONFIG_MAPPING[model_type]()))
            except Exception:  # noqa: BLE001 - a config that needs an optional package or arguments
                continue
    return built


MODEL_CONFIGS = _model_configs()


def test_every_model_type_gives_the_trainers_hidden_size():
    """All three keys "auto" at stage 3: the fills (or the error) agree for every model type's default config."""
    assert len(MODEL_CONFIGS) > 500
    config = _ds_config(3, HIDDEN_SIZE_KEYS)
    disagree = [(model_type, ours(config, model_config.to_dict()), real_fills(config, model_config))
                for model_type, model_config in MODEL_CONFIGS
                if ours(config, model_config.to_dict()) != real_fills(config, model_config)]
    # A config class that computes hidden_size in a Python property writes no h into config.json (xcodec's
    # from its acoustic model): the Trainer sees one, a config.json does not show it.
    assert [m for m, _, _ in disagree] == [m for m, c in MODEL_CONFIGS if m in {m for m, _, _ in disagree}
                                           and isinstance(getattr(type(c), "hidden_size", None), property)]
    assert len(disagree) <= 4
    raised = [m for m, c in MODEL_CONFIGS if isinstance(real_fills(config, c), str)]
    aliased = [m for m, c in MODEL_CONFIGS if "hidden_size" not in c.to_dict() and m not in raised]
    assert raised and aliased  # both paths ran: no h at all, and h under another key (gpt2's n_embd)
    assert "gpt2" in aliased


@pytest.mark.parametrize("stage", STAGES)
@pytest.mark.parametrize("autos", [HIDDEN_SIZE_KEYS, HIDDEN_SIZE_KEYS[:1], HIDDEN_SIZE_KEYS[1:], ()])
@pytest.mark.parametrize("model_type", ["llama", "gpt2", "convnext", "llava", "t5", "mixtral"])
def test_stages_and_keys(stage, autos, model_type):
    model_config = dict(MODEL_CONFIGS)[model_type]
    config = _ds_config(stage, autos)
    assert ours(config, model_config.to_dict()) == real_fills(config, model_config)


def test_the_numbers():
    config = _ds_config(3, HIDDEN_SIZE_KEYS)
    assert bucket_fills(config, 4096) == [("zero_optimization.reduce_bucket_size", 16777216),
                                          ("zero_optimization.stage3_prefetch_bucket_size", 15099494),
                                          ("zero_optimization.stage3_param_persistence_threshold", 40960)]
    assert bucket_fills(_ds_config(2, HIDDEN_SIZE_KEYS), 4096) == [("zero_optimization.reduce_bucket_size",
                                                                     16777216)]
    with pytest.raises(NoHiddenSize, match=r"neither `hidden_size` nor `hidden_sizes`.*stage3_prefetch"):
        bucket_fills(config, None)
    assert hidden_size_of({"model_type": "convnext", "hidden_sizes": [96, 768, 384]}) == 768
    assert hidden_size_of({"model_type": "llava", "text_config": {"model_type": "gpt2", "n_embd": 64}}) == 64
    assert hidden_size_of({"hidden_size": "4096"}) is None


def test_the_alias_table_is_the_installed_transformers_attribute_maps():
    """schemas/fsdp-layer-classes.json's hidden_size_aliases (scripts/build_layer_classes.py) against the config
    classes themselves: a regenerated table for another transformers shows here."""
    from dsconfig.accelerate.model_layers import hidden_size_alias

    checked = 0
    for model_type, model_config in MODEL_CONFIGS:
        attribute_map = type(model_config).attribute_map or {}
        for name in ("hidden_size", "hidden_sizes"):
            real = attribute_map.get(name)
            assert hidden_size_alias(model_type, name) == (real if real != name else None), (model_type, name)
            checked += real is not None
    assert checked > 50
