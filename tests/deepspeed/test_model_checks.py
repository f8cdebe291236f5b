"""`lint --model` against the model (DS950-DS954, dsconfig.deepspeed.model_checks), with the real packages.

* DS950: tiny real MoE models (Mixtral, Qwen2-MoE, Qwen3-MoE, DeepSeek V2/V3 built by transformers 5.23 on
  the CPU) go through DeepSpeed 0.19.8's own `apply_zero_leaf_module_config`, which deepspeed.initialize runs
  on the model: dsconfig reports exactly when some MoE block is left without the leaf flag. The default
  class list of every supported release is read from that release's source.
* DS951: the same tiny models through AutoEP's detection and `validate_autoep_post_detection`, and the
  world sizes through `build_folding_spec` / `validate_folding_global`.
* DS953: the real `trainer_config_finalize` on the real config object the model's config.json builds.
* The rest on config.json fixtures in the shapes of the real Hub models (tests/fixtures/models).
"""

from __future__ import annotations

import ast
import json
import warnings
from pathlib import Path

import pytest

from dsconfig.deepspeed import schema
from tests.helpers import lint_text

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")
pytest.importorskip("deepspeed")

from deepspeed.module_inject.auto_ep import AutoEP  # noqa: E402
from deepspeed.module_inject.auto_ep_config import parse_autoep_config, validate_autoep_post_detection  # noqa: E402
from deepspeed.module_inject.auto_ep_folding import build_folding_spec, validate_folding_global  # noqa: E402
from deepspeed.runtime.zero.leaf_module_config import DeepSpeedZeroLeafModuleConfig  # noqa: E402
from deepspeed.utils.z3_leaf_module import apply_zero_leaf_module_config  # noqa: E402
from transformers import AutoConfig, AutoModelForCausalLM  # noqa: E402

MODELS = Path(__file__).resolve().parents[1] / "fixtures" / "models"
COMMON = dict(hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1,
              vocab_size=64, num_experts_per_tok=2)
_MLA = dict(moe_intermediate_size=8, first_k_dense_replace=0, n_group=1, topk_group=1, kv_lora_rank=8, q_lora_rank=None,
            qk_rope_head_dim=4, qk_nope_head_dim=4, v_head_dim=4, num_key_value_heads=2)
TINY = {
    "mixtral": dict(num_local_experts=4),
    "qwen2_moe": dict(num_experts=4, moe_intermediate_size=8, shared_expert_intermediate_size=8),
    "qwen3_moe": dict(num_experts=4, moe_intermediate_size=8, head_dim=8),
    "deepseek_v3": dict(n_routed_experts=4, **_MLA),
    "deepseek_v2": dict(n_routed_experts=4, **_MLA),
}


@pytest.fixture(scope="module")
def tiny_models(tmp_path_factory):
    """model_type -> (real model, path of its config.json)."""
    folder = tmp_path_factory.mktemp("models")
    built = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for model_type, extra in TINY.items():
            config = AutoConfig.for_model(model_type, **{**COMMON, **extra})
            path = folder / f"{model_type}.json"
            path.write_text(config.to_json_string())
            built[model_type] = (AutoModelForCausalLM.from_config(config), str(path))
    return built


def _zero3(**zero) -> dict:
    return {"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 3, **zero}}


def codes(config: dict, model: str, **options) -> list:
    return lint_text(json.dumps(config), "ds_config.json", model=model, **options)


def _of(findings, code):
    return [f for f in findings if f.code == code]


# -- DS950 ------------------------------------------------------------------------------------------

def _real_blocks_left(model, section) -> bool:
    """deepspeed.initialize's leaf marking (DeepSpeed 0.19.8) leaves some MoE block (the module holding the experts)
    without the leaf flag."""
    for module in model.modules():
        module.__dict__.pop("_z3_leaf", None)
    leaf = DeepSpeedZeroLeafModuleConfig(**section) if section is not None else DeepSpeedZeroLeafModuleConfig()
    apply_zero_leaf_module_config(model, leaf)
    blocks = [m for m in model.modules() if isinstance(getattr(m, "experts", None), torch.nn.Module)]
    assert blocks
    return not all(getattr(m, "_z3_leaf", False) for m in blocks)


def _sections(model):
    block = next(type(m) for m in model.modules() if isinstance(getattr(m, "experts", None), torch.nn.Module))
    dotted = f"{block.__module__}.{block.__qualname__}"
    return [None, {}, {"classes": []}, {"classes": [block.__name__]}, {"classes": dotted}, {"classes": [dotted]},
            {"classes": ["transformers.models.mixtral.modeling_mixtral.MixtralSparseMoeBlock"]},
            {"classes": [f"{block.__module__}.Other"]}, {"classes": ["SparseMoeBlock"]}]


@pytest.mark.parametrize("model_type", sorted(TINY))
def test_moe_leaf_agrees_with_deepspeed(tiny_models, model_type):
    model, path = tiny_models[model_type]
    for section in _sections(model):
        config = _zero3() if section is None else _zero3(leaf_module=section)
        reported = bool(_of(codes(config, path), "DS950"))
        assert reported == _real_blocks_left(model, section), (model_type, section)


def test_moe_leaf_default_covers_mixtral_and_qwen_not_deepseek(tiny_models):
    reported = {t: bool(_of(codes(_zero3(), path), "DS950")) for t, (_, path) in tiny_models.items()}
    assert reported == {"mixtral": False, "qwen2_moe": False, "qwen3_moe": False, "deepseek_v2": True,
                        "deepseek_v3": True}
    finding = _of(codes(_zero3(), str(MODELS / "deepseek-v3.json")), "DS950")[0]
    assert "transformers.models.deepseek_v3.modeling_deepseek_v3.DeepseekV3MoE" in finding.message
    assert "256 experts" in finding.message and finding.pointer == "/zero_optimization/stage"


def test_moe_leaf_written_classes_replace_the_default():
    config = _zero3(leaf_module={"classes": ["MyBlock"]})
    finding = _of(codes(config, "mixtral-8x7b"), "DS950")[0]
    assert finding.pointer == "/zero_optimization/leaf_module/classes"
    assert '["MyBlock", "transformers.models.mixtral.modeling_mixtral.MixtralSparseMoeBlock"]' in finding.message


def test_moe_leaf_names_and_suffixes_are_not_second_guessed():
    """Module names depend on the model's attributes, which a config.json does not show: no finding."""
    for section in ({"names": ["model.layers.0.mlp"]}, {"name_suffixes": "mlp"}):
        assert not _of(codes(_zero3(leaf_module={"classes": [], **section}), "mixtral-8x7b"), "DS950")


def test_moe_leaf_only_at_stage_3_and_only_for_moe_models():
    assert not _of(codes({"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 2}},
                         str(MODELS / "deepseek-v3.json")), "DS950")
    assert not _of(codes(_zero3(), "llama-3-8b"), "DS950")


def test_moe_leaf_before_the_key_existed():
    for version in ("0.17.6", "0.14.0"):
        try:
            findings = _of(codes(_zero3(), "mixtral-8x7b", deepspeed_version=version), "DS950")
        finally:
            schema.use("0.19.8")
        assert findings and "set_z3_leaf_modules(model, [MixtralSparseMoeBlock])" in findings[0].message
        assert "0.18.0 to 0.19.8 have it" in findings[0].message


def _default_classes_in_source(folder: Path) -> list | None:
    """DEFAULT_LEAF_MODULE_CLASSES as a release's source defines it (None: the release has no leaf_module)."""
    path = folder / "deepspeed" / "runtime" / "zero" / "leaf_module_config.py"
    if not path.exists():
        return None
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == "DEFAULT_LEAF_MODULE_CLASSES":
            return ast.literal_eval(node.value)
    raise AssertionError(f"{path}: no DEFAULT_LEAF_MODULE_CLASSES")


def test_leaf_module_defaults_match_the_releases():
    """Each release where our data for the default changes, the one before it, the differential releases and a
    daily sample of the rest (every release under DSCONFIG_SLOW=all): each is downloaded and unpacked once."""
    from deepspeed.runtime.zero.leaf_module_config import DEFAULT_LEAF_MODULE_CLASSES

    from dsconfig.deepspeed import releases
    from tests.conftest import slow_sample
    from tests.releases import DIFFERENTIAL, release_dir

    assert schema.default_at("/zero_optimization/leaf_module")["classes"] == DEFAULT_LEAF_MODULE_CLASSES
    ours = {}
    for version in releases.SUPPORTED:
        schema.use(version)
        try:
            ours[version] = (schema.default_at("/zero_optimization/leaf_module") or {}).get("classes") \
                if schema.property_at("/zero_optimization/leaf_module") else None
        finally:
            schema.use(releases.NEWEST)
    order = list(releases.SUPPORTED)
    changes = {v for before, v in zip(order, order[1:]) if ours[v] != ours[before]}
    changes |= {before for before, v in zip(order, order[1:]) if v in changes}
    assert changes, "the default appeared in some release: its boundary is checked"
    checked = 0
    for version in sorted(changes | set(DIFFERENTIAL) | set(slow_sample(order)), key=order.index):
        folder = release_dir(version)
        if folder is None:
            continue
        assert ours[version] == _default_classes_in_source(folder), version
        checked += 1
    if not checked:
        pytest.skip("no DeepSpeed release folders (DSCONFIG_DEEPSPEED_RELEASES)")


# -- DS951 ------------------------------------------------------------------------------------------

def _ep(size, etp=1) -> dict:
    return {"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 2},
            "expert_parallel": {"enabled": True, "autoep_size": size, "expert_tensor_parallel_size": etp}}


@pytest.mark.parametrize("model_type", sorted(TINY))
def test_autoep_size_agrees_with_deepspeed(tiny_models, model_type):
    model, path = tiny_models[model_type]
    for size in range(1, 10):
        section = _ep(size)["expert_parallel"]
        try:
            config = parse_autoep_config(section)
            validate_autoep_post_detection(config, AutoEP(model, config).ep_parser())
            real = None
        except ValueError as error:
            real = str(error)
        found = _of(codes(_ep(size), path), "DS951")
        assert bool(found) == (real is not None), (size, real)
        if real and "not divisible" in real:
            assert f"is not divisible by autoep_size={size}" in found[0].message


def test_world_size_agrees_with_deepspeed():
    for size in (1, 2, 3, 4, 6, 8):
        for etp in (1, 2):
            for world in (1, 2, 4, 6, 8, 12):
                try:
                    spec = build_folding_spec(world_size=world, pp_size=1, tp_size=1, ep_size=size, etp_size=etp,
                                              mp_mode="sp")
                    validate_folding_global(spec)
                    real = False
                except ValueError:
                    real = True
                found = _of(codes(_ep(size, etp), str(MODELS / "qwen3-30b-a3b.json"), world_sizes=[world]), "DS951")
                ours = any(f.world_size == world or "expert_tensor_parallel_size" in f.pointer for f in found)
                assert ours == real, (size, etp, world, [f.message for f in found])


def test_expert_parallel_off_or_dense_model_is_not_checked():
    config = _ep(7)
    config["expert_parallel"]["enabled"] = False
    assert not _of(codes(config, "mixtral-8x7b"), "DS951")
    assert not _of(codes(_ep(7), "llama-3-8b"), "DS951")  # no expert count: AutoEP's own detection fails
    assert _of(codes(_ep(7), str(MODELS / "qwen1.5-moe-a2.7b.json")), "DS951")  # 60 experts
    assert not _of(codes(_ep(6), str(MODELS / "qwen1.5-moe-a2.7b.json")), "DS951")


# -- DS952 ------------------------------------------------------------------------------------------

def _fsdp_yaml(folder: Path) -> Path:
    path = folder / "accelerate_config.yaml"
    path.write_text("compute_environment: LOCAL_MACHINE\ndistributed_type: FSDP\nnum_processes: 8\n"
                    "mixed_precision: bf16\nfsdp_config:\n  fsdp_version: 2\n")
    return path


def _quantized(tmp_path, name, **change) -> str:
    config = json.loads((MODELS / name).read_text())
    config["quantization_config"].update(change)
    path = tmp_path / name
    path.write_text(json.dumps(config))
    return str(path)


def test_quantized_under_zero3(tmp_path):
    bnb = str(MODELS / "llama-3-8b-bnb-4bit.json")
    found = _of(codes(_zero3(), bnb), "DS952")
    assert found and "stored as uint8" in found[0].message and "bnb_4bit_quant_storage=bfloat16" in found[0].message
    assert not _of(codes(_zero3(), _quantized(tmp_path, "llama-3-8b-bnb-4bit.json",
                                              bnb_4bit_quant_storage="bfloat16")), "DS952")
    mismatch = _of(codes(_zero3(), _quantized(tmp_path, "llama-3-8b-bnb-4bit.json",
                                              bnb_4bit_quant_storage="float16")), "DS952")
    assert mismatch and "model's dtype is bfloat16" in mismatch[0].message
    eight = _of(codes(_zero3(), _quantized(tmp_path, "llama-3-8b-bnb-4bit.json", load_in_4bit=False,
                                           load_in_8bit=True)), "DS952")
    assert eight and "bitsandbytes 8-bit" in eight[0].message
    assert "GPTQ" in _of(codes(_zero3(), str(MODELS / "llama-2-7b-gptq.json")), "DS952")[0].message
    stage2 = {"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 2}}
    assert not _of(codes(stage2, bnb), "DS952")  # ZeRO-2 does not partition the weights
    assert not _of(codes(_zero3(), str(MODELS / "deepseek-v3.json")), "DS952")  # fp8: not claimed either way


def test_quantized_under_fsdp(tmp_path):
    from tests.helpers import lint

    yaml = _fsdp_yaml(tmp_path)
    found = _of(lint(yaml, model=str(MODELS / "llama-2-7b-gptq.json")), "DS952")
    assert found and found[0].pointer == "/distributed_type" and "FSDP cannot shard" in found[0].message
    storage = _quantized(tmp_path, "llama-3-8b-bnb-4bit.json", bnb_4bit_quant_storage="bfloat16")
    assert not _of(lint(yaml, model=storage), "DS952")


def test_fsdp_refuses_integer_and_mixed_weights_as_the_message_says():
    """The two messages DS952 quotes are the ones torch's FSDP flattening raises."""
    from torch.distributed.fsdp._flat_param import FlatParamHandle

    check = FlatParamHandle._validate_tensors_to_flatten
    stub = type("Stub", (), {"_use_orig_params": True})()
    with pytest.raises(ValueError, match="Cannot flatten integer dtype tensors"):
        check(stub, [torch.nn.Parameter(torch.zeros(4, dtype=torch.uint8), requires_grad=False)])
    with pytest.raises(ValueError, match="Must flatten tensors with uniform dtype"):
        check(stub, [torch.nn.Parameter(torch.zeros(4, dtype=torch.bfloat16)),
                     torch.nn.Parameter(torch.zeros(4, dtype=torch.float16))])


# -- DS953 and DS704 --------------------------------------------------------------------------------

def test_no_hidden_size_agrees_with_the_trainer():
    from types import SimpleNamespace

    from transformers import TrainingArguments

    path = MODELS / "donut-base.json"
    config = {"train_micro_batch_size_per_gpu": "auto",
              "zero_optimization": {"stage": 3, "reduce_bucket_size": "auto", "stage3_prefetch_bucket_size": "auto"}}
    args = TrainingArguments(output_dir=str(path.parent), use_cpu=True, report_to=[], deepspeed=json.loads(json.dumps(config)))
    real_config = AutoConfig.for_model(**json.loads(path.read_text()))
    with pytest.raises(ValueError) as raised:
        args.deepspeed_plugin.hf_ds_config.trainer_config_finalize(args, SimpleNamespace(config=real_config), 10)
    found = _of(codes(config, str(path), target="hf-trainer"), "DS953")
    assert len(found) == 1 and str(raised.value) in found[0].message
    assert found[0].pointer == "/zero_optimization/reduce_bucket_size"
    assert not _of(codes(config, str(path), target="deepspeed"), "DS953")
    assert not _of(codes(config, "llama-3-8b", target="hf-trainer"), "DS953")


def test_trainer_fills_give_the_numbers_with_a_model():
    config = _zero3(reduce_bucket_size="auto", stage3_prefetch_bucket_size="auto",
                    stage3_param_persistence_threshold="auto")
    info = _of(codes(config, "llama-3-8b", target="hf-trainer"), "DS704")[0]
    assert "reduce_bucket_size ← 16777216" in info.message and "stage3_prefetch_bucket_size ← 15099494" in info.message
    assert "stage3_param_persistence_threshold ← 40960" in info.message
    without = _of(lint_text(json.dumps(config), "ds_config.json", target="hf-trainer"), "DS704")[0]
    assert "reduce_bucket_size ← hidden_size²" in without.message
    with_args = _of(codes(config, "qwen2.5-7b", target="hf-trainer", training_args={}), "DS704")[0]
    assert "reduce_bucket_size ← 12845056" in with_args.message  # 3584²


# -- DS954 ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("written, reported", [(None, True), (False, True), ("auto", True), (True, False)])
def test_gather_on_save(written, reported):
    zero = {} if written is None else {"stage3_gather_16bit_weights_on_model_save": written}
    found = _of(codes(_zero3(**zero), "llama-3-8b", target="hf-trainer"), "DS954")
    assert bool(found) == reported
    if found:
        assert "zero_to_fp32.py" in found[0].message and "16.1 GB" in found[0].message
    assert not _of(codes(_zero3(**zero), "llama-3-8b", target="deepspeed"), "DS954")


def test_gather_other_spellings_count():
    for key in ("gather_16bit_weights_on_model_save", "stage3_gather_fp16_weights_on_model_save"):
        assert not _of(codes(_zero3(**{key: True}), "llama-3-8b", target="hf-trainer"), "DS954")


def test_the_trainer_refusal_comes_from_deepspeeds_default():
    """DeepSpeed's default for the gather is false (what DS954 assumes when the key is absent)."""
    from deepspeed.runtime.zero.config import DeepSpeedZeroConfig

    assert DeepSpeedZeroConfig(stage=3).gather_16bit_weights_on_model_save is False
    assert DeepSpeedZeroConfig(stage=3, stage3_gather_fp16_weights_on_model_save=True).gather_16bit_weights_on_model_save


def test_without_model_nothing_is_reported():
    config = _zero3(reduce_bucket_size="auto")
    found = lint_text(json.dumps(config), "ds_config.json", target="hf-trainer")
    assert not [f for f in found if f.code.startswith("DS95")]


@pytest.mark.parametrize("names, reported", [(None, True), ("DeepseekV3MoE", False),
                                             ("DeepseekV3MLP,DeepseekV3MoE", False), ("Foo", True),
                                             ("DeepseekV3MLP, DeepseekV3MoE", True)])
def test_accelerate_moe_layer_names_mark_the_leaves(tmp_path, tiny_models, names, reported):
    """A ds_config.json launched by an Accelerate YAML whose deepspeed_moe_layer_cls_names names the block: prepare()
    calls set_z3_leaf_modules (DeepSpeedPlugin.set_moe_leaf_modules), so DS950 stays quiet; Accelerate splits
    the names at commas without stripping, so " DeepseekV3MoE" names nothing."""
    from tests.helpers import lint

    (tmp_path / "ds_config.json").write_text(json.dumps(_zero3()))
    extra = f"  deepspeed_moe_layer_cls_names: '{names}'\n" if names is not None else ""
    yaml = tmp_path / "accelerate_config.yaml"
    yaml.write_text("compute_environment: LOCAL_MACHINE\ndistributed_type: DEEPSPEED\nnum_processes: 8\n"
                    "deepspeed_config:\n  deepspeed_config_file: ds_config.json\n  zero3_init_flag: true\n" + extra)
    assert bool(_of(lint(yaml, model=str(MODELS / "deepseek-v3.json")), "DS950")) == reported
    # the oracle: Accelerate's own set_moe_leaf_modules on a tiny DeepSeek V3
    from types import SimpleNamespace

    from accelerate.utils import DeepSpeedPlugin

    model = tiny_models["deepseek_v3"][0]
    for module in model.modules():
        module.__dict__.pop("_z3_leaf", None)
    try:
        DeepSpeedPlugin.set_moe_leaf_modules(SimpleNamespace(transformer_moe_cls_names=names), model)
    except Exception:  # noqa: BLE001 - Accelerate raises a bare Exception for a class it cannot find
        pass
    blocks = [m for m in model.modules() if isinstance(getattr(m, "experts", None), torch.nn.Module)]
    assert (not all(getattr(m, "_z3_leaf", False) for m in blocks)) == reported


# -- a config.json no model can be built from: every command that takes --model says so, in the same words ------

# Tiny configs as transformers writes them (indented), each with one value no model can be built from, the key
# whose line:column the message names, and the line the key is on.
IMPOSSIBLE_MODELS = [
    ("mixtral", {"hidden_size": -16}, "hidden_size", "hidden_size must be a positive integer, not -16"),
    ("mixtral", {"num_key_value_heads": 4}, "num_key_value_heads",
     "num_key_value_heads 4 is more than num_attention_heads 2"),
    ("mixtral", {"num_local_experts": 4, "num_experts_per_tok": 6}, "num_experts_per_tok",
     "num_experts_per_tok 6 is more than num_local_experts 4"),
    ("deepseek_v3", {"n_routed_experts": 4, "num_experts_per_tok": 5, **_MLA}, "num_experts_per_tok",
     "num_experts_per_tok 5 is more than n_routed_experts 4"),
    ("qwen2_moe", {"num_experts": 4, "num_experts_per_tok": 8, "moe_intermediate_size": 8,
                   "shared_expert_intermediate_size": 8}, "num_experts_per_tok",
     "num_experts_per_tok 8 is more than num_experts 4"),
]


def _impossible(tmp_path, model_type: str, changes: dict) -> str:
    """config.json holding transformers' own to_json_string() of the tiny config, with `changes` written over it
    (the config classes accept every one of these values: only building or running the model fails)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        config = AutoConfig.for_model(model_type, **{**COMMON, **changes})
    values = json.loads(config.to_json_string())
    assert all(values[key] == value for key, value in changes.items())  # transformers kept them as written
    (tmp_path / "config.json").write_text(json.dumps(values, indent=2))
    (tmp_path / "ds_config.json").write_text(json.dumps(_zero3()))
    return "config.json"


def _position(path: Path, key: str) -> str:
    lines = path.read_text().splitlines()
    line = next(i for i, text in enumerate(lines) if text.startswith(f'  "{key}":'))
    return f"{line + 1}:3"


@pytest.mark.parametrize("model_type, changes, key, says", IMPOSSIBLE_MODELS,
                         ids=[f"{t}-{k}" for t, c, k, s in IMPOSSIBLE_MODELS])
def test_every_command_refuses_the_model_in_one_line_naming_the_key(tmp_path, monkeypatch, model_type, changes, key,
                                                                    says):
    from click.testing import CliRunner

    import dsconfig
    from dsconfig.cli import cli

    monkeypatch.chdir(tmp_path)
    model = _impossible(tmp_path, model_type, changes)
    expected = f"--model: config.json:{_position(tmp_path / model, key)}: {says}"
    for command, prefix in ((["lint", "--no-config", "ds_config.json"], "dsconfig: error: "),
                            (["explain", "ds_config.json"], "dsconfig: error: "),
                            (["estimate"], "dsconfig estimate: error: "),
                            (["generate", "--gpu-mem", "80GB", "--stdout"], "dsconfig generate: error: ")):
        result = CliRunner().invoke(cli, [*command, "--model", model])
        assert result.exit_code == 2, (command, result.output)
        lines = result.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith(prefix + expected), (command, lines)
        assert result.stdout == "" and "Traceback" not in result.stderr
    with pytest.raises(ValueError) as raised:
        dsconfig.check("ds_config.json", model=model)
    assert str(raised.value).startswith(f"model: {expected}") and "\n" not in str(raised.value)


def test_the_tiny_real_models_configs_are_not_refused(tiny_models):
    """No false alarm: the config.json of every tiny model transformers built (and ran, for DS950) passes."""
    from dsconfig.accelerate.model_layers import resolve

    for model_type, (model, path) in tiny_models.items():
        assert resolve(path).model_type == model_type
        with torch.no_grad():
            model(torch.tensor([[1, 2, 3]]))
