"""Focused tests of the FSDP checks (dsconfig.accelerate.fsdp, fsdp_plugin, model_layers), each against the
real Accelerate 1.15 / transformers where they run here. The broad agreement numbers are in
test_fsdp_differential.py."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys

import pytest
import yaml

from dsconfig.accelerate import fsdp_plugin
from dsconfig.accelerate.fsdp import launcher_env
from dsconfig.accelerate.launch import Replay
from dsconfig.accelerate.model_layers import ModelProblem, resolve
from dsconfig.phases import INITIALIZE, SILENT
from tests.accelerate.fsdp_oracle import build_plugin, real_launch
from tests.conftest import ROOT
from tests.helpers import lint_text

pytest.importorskip("accelerate")

HEAD = "compute_environment: LOCAL_MACHINE\ndistributed_type: FSDP\nnum_processes: 2\nfsdp_config:\n"


def codes(findings) -> list[str]:
    return [f.code for f in findings]


def fsdp_lint(body: str, **options) -> list:
    return [f for f in lint_text(HEAD + body, "accelerate_config.yaml", **options) if f.code >= "ACC021"]


# -- the launcher's environment -----------------------------------------------------------------


def real_env(tmp_path, text: str) -> dict:
    path = tmp_path / "accelerate_config.yaml"
    path.write_text(text)
    _, env = real_launch(str(path))
    return {key: value for key, value in env.items() if key.startswith("FSDP_")}


@pytest.mark.parametrize("body", [
    "  fsdp_offload_params: 'False'\n  fsdp_version: 2\n",  # quoted text is lower-cased, a YAML false too
    "  offload_params: false\n  sharding_strategy: 1\n  backward_prefetch: 2\n  state_dict_type: 3\n",
    "  fsdp_transformer_layer_cls_to_wrap: [LlamaDecoderLayer, LlamaMLP]\n  fsdp_min_num_params: 1e8\n",
    "  fsdp_reshard_after_forward: null\n  fsdp_use_orig_params: 0\n  fsdp_sync_module_states: yes\n",
    "  fsdp_version: '2'\n  fsdp_activation_checkpointing: On\n  fsdp_ignored_modules: [a, b]\n",
    "  {}\n",
])
def test_launcher_env_is_what_prepare_multi_gpu_env_exports(tmp_path, body):
    text = HEAD + body if body.strip() != "{}" else HEAD.replace("fsdp_config:\n", "")
    replay = Replay(yaml.safe_load(text))
    assert launcher_env(replay.args) == real_env(tmp_path, text)


# -- the plugin on keyword arguments (as the HF Trainer passes them) ---------------------------


def real_plugin(kwargs: dict, env: dict, monkeypatch):
    """(exception text or None, the FSDP2 warning text) of FullyShardedDataParallelPlugin(**kwargs)."""
    _, error, logged = build_plugin(kwargs, env, monkeypatch)
    return error, logged


KWARGS = [
    {"fsdp_version": 2, "forward_prefetch": True},
    {"fsdp_version": 2, "sharding_strategy": "FULL_SHARD"},  # FSDP2 then has no reshard_after_forward
    {"fsdp_version": 2, "sharding_strategy": "FULL_SHARD", "reshard_after_forward": True},
    {"fsdp_version": 2, "reshard_after_forward": "maybe"},
    {"fsdp_version": 2, "reshard_after_forward": "false"},
    {"fsdp_version": 1, "reshard_after_forward": True},
    {"fsdp_version": 1, "sharding_strategy": 6},
    {"fsdp_version": 1, "sharding_strategy": "hybrid_shard_zero2"},
    {"fsdp_version": 2, "mixed_precision_policy": "BF16"},
    {"fsdp_version": 2, "mixed_precision_policy": "bf16"},
    {"fsdp_version": 2, "mixed_precision_policy": {"param_dtype": "bfloat16"}},
    {"fsdp_version": 2, "cpu_offload": "true"},
    {"fsdp_version": 1, "cpu_offload": True},
    {"fsdp_version": 2, "auto_wrap_policy": "size_based_wrap", "min_num_params": 1e8},
    {"fsdp_version": 2, "auto_wrap_policy": "size_based_wrap", "min_num_params": 100},
    {"fsdp_version": 2, "auto_wrap_policy": "transformer", "transformer_cls_names_to_wrap": ["X"]},
    {"fsdp_version": 2, "state_dict_type": "local_state_dict"},
    {"fsdp_version": 2, "state_dict_type": "2"},
    {"fsdp_version": 1, "backward_prefetch": "backward_prefetch"},
    {"fsdp_version": 2, "use_orig_params": False, "sync_module_states": True},
    {"fsdp_version": 2, "activation_checkpointing_offload": True, "activation_checkpointing": True},
    {"fsdp_version": 1, "activation_checkpointing_offload": True, "activation_checkpointing": True},
]


@pytest.mark.parametrize("kwargs", KWARGS, ids=lambda k: ",".join(f"{a}={b}" for a, b in k.items()))
def test_plugin_findings_on_keyword_arguments_agree_with_the_plugin(kwargs, monkeypatch):
    error, logged = real_plugin(kwargs, {}, monkeypatch)
    findings = fsdp_plugin.plugin_findings(kwargs, {}, lambda field: f"/fsdp_config/{field}")
    raised = [f for f in findings if f.fails_in == INITIALIZE and "prepare()" not in f.message]
    assert bool(raised) == (error is not None), (error, findings)
    if error is not None:  # the exact exception text, before dsconfig's own hint
        assert any(error in f.message for f in raised), (error, [f.message for f in raised])
    dropped = {f.pointer.rsplit("/", 1)[1] for f in findings if f.fails_in is SILENT}
    if error is None and kwargs["fsdp_version"] == 2:  # FSDP1 logs sharding_strategy's deprecation, and uses it
        assert dropped == {name for name in ("sharding_strategy", "backward_prefetch", "use_orig_params",
                                             "sync_module_states") if f"{name} is" in logged}, logged


def test_plugin_findings_reports_at_where():
    """The entry point the HF Trainer checks use: `where(field)` places each finding."""
    findings = fsdp_plugin.plugin_findings({"fsdp_version": 2, "forward_prefetch": True, "state_dict_type": "LOCAL"},
                                           {}, lambda field: f"/fsdp_config/{field}")
    assert sorted((f.code, f.pointer) for f in findings) == [
        ("ACC022", "/fsdp_config/state_dict_type"), ("ACC025", "/fsdp_config/forward_prefetch")]


def test_layer_class_names_that_are_no_class_fail_in_prepare(monkeypatch):
    """A YAML list reaches the plugin as its str(): `set_auto_wrap_policy` raises on a real model."""
    from transformers import LlamaConfig, LlamaForCausalLM
    error = None
    env = {"FSDP_VERSION": "2", "FSDP_AUTO_WRAP_POLICY": "TRANSFORMER_BASED_WRAP",
           "FSDP_TRANSFORMER_CLS_TO_WRAP": str(["LlamaDecoderLayer"])}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    from accelerate.utils import dataclasses
    plugin = dataclasses.FullyShardedDataParallelPlugin()
    model = LlamaForCausalLM(LlamaConfig(hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                         num_attention_heads=2, num_key_value_heads=1, vocab_size=32))
    try:
        plugin.set_auto_wrap_policy(model)
    except ValueError as raised:
        error = str(raised)
    finding = fsdp_lint("  fsdp_version: 2\n  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP\n"
                        "  fsdp_transformer_layer_cls_to_wrap: [LlamaDecoderLayer]\n")
    assert codes(finding) == ["ACC029"]
    assert error is not None and error in finding[0].message
    assert finding[0].fix == '"LlamaDecoderLayer"'  # the list written as one text


# -- what the plugin never reads ----------------------------------------------------------------


def test_fsdp1_keys_under_fsdp2_are_reported_with_their_fsdp2_form():
    findings = fsdp_lint("  fsdp_version: 2\n  fsdp_sharding_strategy: SHARD_GRAD_OP\n  fsdp_use_orig_params: false\n"
                         "  fsdp_forward_prefetch: true\n  fsdp_sync_module_states: true\n"
                         "  fsdp_state_dict_type: SHARDED_STATE_DICT\n")
    found = {f.pointer: f for f in findings}
    assert set(found) == {"/fsdp_config/fsdp_sharding_strategy", "/fsdp_config/fsdp_use_orig_params",
                          "/fsdp_config/fsdp_forward_prefetch"}  # sync_module_states: the launcher still wants it
    assert "fsdp_reshard_after_forward: true (FULL_SHARD, HYBRID_SHARD) or false" in \
           found["/fsdp_config/fsdp_sharding_strategy"].message
    assert all(f.code == "ACC025" and f.fails_in is SILENT for f in findings)


def test_reshard_after_forward_under_fsdp1_is_ignored():
    assert codes(fsdp_lint("  fsdp_reshard_after_forward: false\n")) == ["ACC026", "ACC033"]
    assert codes(fsdp_lint("  fsdp_version: 2\n  fsdp_reshard_after_forward: false\n")) == []


def test_wrap_settings_of_another_policy_and_a_size_policy_that_wraps_nothing():
    body = "  fsdp_version: 2\n  fsdp_auto_wrap_policy: SIZE_BASED_WRAP\n  fsdp_min_num_params: 0\n"
    (finding,) = fsdp_lint(body)
    assert finding.code == "ACC031" and "min_num_params 0" in finding.message
    assert codes(fsdp_lint(body.replace(": 0\n", ": 1000000\n"))) == []
    findings = fsdp_lint("  fsdp_version: 2\n  fsdp_transformer_layer_cls_to_wrap: LlamaDecoderLayer\n")
    assert codes(findings) == ["ACC031"] and "NO_WRAP" in findings[0].message


def test_fsdp1_use_orig_params_false_warns_about_peft():
    (finding,) = fsdp_lint("  fsdp_version: 1\n  fsdp_use_orig_params: false\n"
                           "  fsdp_state_dict_type: SHARDED_STATE_DICT\n")
    assert finding.code == "ACC032" and finding.severity == "warning" and finding.fix == "true"
    assert "Must flatten tensors with uniform requires_grad when use_orig_params=False" in finding.message


def test_use_cpu_is_not_exported_by_the_fsdp_launcher(tmp_path, monkeypatch):
    monkeypatch.delenv("ACCELERATE_USE_CPU", raising=False)
    text = HEAD.replace("fsdp_config:\n", "use_cpu: true\nfsdp_config:\n  fsdp_version: 2\n")
    path = tmp_path / "accelerate_config.yaml"
    path.write_text(text)
    args, env = real_launch(str(path))
    assert "ACCELERATE_USE_CPU" not in env and not args.cpu
    assert codes([f for f in lint_text(text, str(path)) if f.code == "ACC034"]) == ["ACC034"]


# -- --model ------------------------------------------------------------------------------------


@pytest.mark.parametrize("model_type", ["llama", "qwen2", "mistral", "mixtral", "gemma", "gemma2", "phi3", "gpt2",
                                        "t5", "falcon"])
def test_layer_table_holds_what_transformers_builds(model_type):
    """Every module class of a small real model of the type is in the table, and its _no_split_modules."""
    transformers = pytest.importorskip("transformers")
    import torch
    config = transformers.AutoConfig.for_model(model_type)
    for key, value in {"hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2,
                       "num_key_value_heads": 1, "head_dim": 8, "vocab_size": 32, "n_embd": 16, "n_layer": 1,
                       "n_head": 2, "d_model": 16, "d_ff": 32, "d_kv": 8, "num_heads": 2, "num_layers": 1,
                       "num_local_experts": 2, "num_experts_per_tok": 1, "pad_token_id": 0}.items():
        if hasattr(config, key):
            with contextlib.suppress(AttributeError):  # a derived property (Falcon's head_dim)
                setattr(config, key, value)
    with torch.device("meta"):
        model = transformers.AutoModel.from_config(config)
    layers = resolve(_config_file(model_type))
    built = {type(module).__name__ for module in model.modules()}
    assert built <= layers.classes, built - layers.classes
    assert set(layers.no_split) == set(model._no_split_modules or ())


_FILES = {}


def _config_file(model_type: str) -> str:
    import tempfile
    if model_type not in _FILES:
        handle, path = tempfile.mkstemp(suffix=".json")
        with os.fdopen(handle, "w") as out:
            json.dump({"model_type": model_type}, out)
        _FILES[model_type] = path
    return _FILES[model_type]


def test_model_from_architectures_only_suggests_its_layer(tmp_path):
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"architectures": ["MistralForCausalLM"]}))
    findings = fsdp_lint("  fsdp_version: 2\n  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP\n"
                         "  fsdp_transformer_layer_cls_to_wrap: LlamaDecoderLayer\n", model=str(config))
    assert codes(findings) == ["ACC030"]
    assert findings[0].fix == '"MistralDecoderLayer"' and "model_type mistral" in findings[0].message
    assert codes(fsdp_lint("  fsdp_version: 2\n  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP\n"
                           "  fsdp_transformer_layer_cls_to_wrap: MistralDecoderLayer,MistralRMSNorm\n",
                           model=str(config))) == []


def test_full_state_dict_gives_the_model_size():
    (finding,) = fsdp_lint("  fsdp_version: 2\n  fsdp_state_dict_type: FULL_STATE_DICT\n", model="llama-3-70b")
    assert finding.code == "ACC033" and "70.55B parameters, about 141 GB in bf16" in finding.message


def test_unknown_model_is_a_one_line_usage_error(tmp_path):
    with pytest.raises(ModelProblem, match="did you mean qwen2.5-7b"):
        resolve("qwen2.5-7")
    path = tmp_path / "accelerate_config.yaml"
    path.write_text(HEAD + "  fsdp_version: 2\n")
    done = subprocess.run([sys.executable, "-m", "dsconfig", "lint", str(path), "--model", "qwen2.5-7"],
                          capture_output=True, text=True, cwd=ROOT, check=False)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == [("dsconfig: error: --model: 'qwen2.5-7' is neither a catalog model (dsconfig "
                                         "estimate --list-models) nor a config.json; did you mean qwen2.5-7b?")]


def test_the_fsdp1_strategy_accelerate_config_writes_is_ignored(tmp_path, monkeypatch):
    """`accelerate config` writes FSDP1's strategy as fsdp_reshard_after_forward; the 1.15 plugin never reads it."""
    text = HEAD + "  fsdp_version: 1\n  fsdp_reshard_after_forward: SHARD_GRAD_OP\n"
    env = real_env(tmp_path, text)
    import torch
    from accelerate.utils import dataclasses
    monkeypatch.setattr(dataclasses, "is_cuda_available", lambda: True)  # sync_module_states asks for the GPU
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    plugin = dataclasses.FullyShardedDataParallelPlugin()
    assert plugin.sharding_strategy.name == "FULL_SHARD" and plugin.reshard_after_forward is None
    (finding,) = [f for f in fsdp_lint(text[len(HEAD):]) if f.code == "ACC026"]
    assert "the model trains with FULL_SHARD; write fsdp_sharding_strategy: SHARD_GRAD_OP" in finding.message


def test_fsdp_lint_with_a_model_imports_no_oracle(tmp_path):
    """The plugin replay and --model read JSON tables: no torch, accelerate or transformers at lint time."""
    from tests.conftest import modules_after
    body = "  fsdp_version: 2\n  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP\n  transformer_layer_cls_to_wrap: X\n"
    (tmp_path / "accelerate_config.yaml").write_text(HEAD + body)
    modules = modules_after(["lint", "accelerate_config.yaml", "--model", "llama-3-8b"], tmp_path)
    assert "dsconfig.accelerate.fsdp_plugin" in modules  # the FSDP checks did run
    loaded = {name.split(".")[0] for name in modules}
    assert not loaded & {"torch", "deepspeed", "accelerate", "transformers", "pydantic", "jsonschema", "numpy"}


def test_every_shared_fsdp_settings_file_lints_clean_and_builds_the_plugin(tmp_path, monkeypatch):
    """The YAMLs generate/convert write (dsconfig.fsdp.settings.accelerate_yaml): no FSDP error or warning from
    dsconfig, and the real launcher and plugin accept them."""
    import itertools

    import torch
    from accelerate.utils import dataclasses

    from dsconfig.fsdp.settings import (
        SHARDING_STRATEGIES,
        STATE_DICT_TYPES,
        FsdpSettings,
        accelerate_yaml,
    )
    monkeypatch.setattr(dataclasses, "is_cuda_available", lambda: True)  # sync_module_states asks for the GPU
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    wraps = (("TRANSFORMER_BASED_WRAP", "LlamaDecoderLayer", None), ("SIZE_BASED_WRAP", None, 1_000_000),
             ("NO_WRAP", None, None))
    checked = 0
    for version, strategy, (policy, layers, size), state, offload, loading in itertools.product(
            (1, 2), SHARDING_STRATEGIES, wraps, STATE_DICT_TYPES, (False, True), (False, True)):
        if version == 2 and strategy == "NO_SHARD":
            continue  # FSDP2 has no NO_SHARD (plain data parallelism)
        settings = FsdpSettings(version=version, sharding_strategy=strategy, auto_wrap_policy=policy,
                                transformer_layer_cls_to_wrap=layers, min_num_params=size, state_dict_type=state,
                                offload_params=offload, cpu_ram_efficient_loading=loading,
                                activation_checkpointing=offload)
        text = accelerate_yaml(settings, num_processes=8)
        findings = [f for f in lint_text(text, "accelerate_config.yaml", model=MODEL_NAME)
                    if f.severity != "info" and f.code.startswith("ACC")]
        assert findings == [], (settings, findings)
        for name in [k for k in os.environ if k.startswith("FSDP_")]:
            monkeypatch.delenv(name)
        for name, value in real_env(tmp_path, text).items():
            monkeypatch.setenv(name, value)
        plugin = dataclasses.FullyShardedDataParallelPlugin()
        if version == 1:  # the strategy chosen is the one the plugin uses
            assert plugin.sharding_strategy.name.lstrip("_") == strategy
        else:
            assert plugin.fsdp_version == 2 and plugin.reshard_after_forward is settings.reshard_after_forward
        assert plugin.state_dict_type.name == state and plugin.activation_checkpointing is offload
        checked += 1
    assert checked == 2 * 5 * 3 * 2 * 2 * 2 - 24


MODEL_NAME = "llama-3-8b"
