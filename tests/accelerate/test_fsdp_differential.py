"""dsconfig's FSDP checks against the real Accelerate 1.15, phase by phase.

For every FSDP config of the corpus and generated FSDP YAMLs (valid and mutated: each fsdp_config key
with good, bad and boundary values, names and numbers, both versions, YAML 1.1 booleans, with and
without the `fsdp_` prefix):
* load: dsconfig reports an error with fails_in "load" ⟺ `load_config_from_file` raises;
* launch: an error with fails_in "launch" ⟺ `_validate_launch_command` + `prepare_multi_gpu_env`
  (and torchrun's `config_from_args`) raise;
* plugin: when the launch succeeds, an initialize error of the plugin's rules ⟺
  `FullyShardedDataParallelPlugin()` raises, built on CPU from exactly the FSDP_* environment
  `prepare_multi_gpu_env` returned; and dsconfig's "dropped" findings name exactly the settings the
  plugin's FSDP2 deprecation warning names;
* prepare: when the plugin is built, a layer-class error (ACC029, ACC030, linted with --model
  llama-3.2-1b) ⟺ `set_auto_wrap_policy` raises on a small real Llama model, and ACC031's "wraps
  nothing" ⟺ the size policy is dropped there.
The plugin asks the machine for its accelerator when sync_module_states is on; this machine has none,
so the test answers that one question (`is_cuda_available`, `torch.cuda.current_device`) as a GPU
machine would; nothing else is replaced. DSCONFIG_FSDP_EXAMPLES sets the number of generated configs.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsconfig.phases import INITIALIZE, LAUNCH, LOAD
from dsconfig.rules import fsdp as fsdp_rules
from tests.accelerate.fsdp_oracle import build_plugin
from tests.conftest import corpus_files, quiet_and_restored
from tests.helpers import lint_text

pytest.importorskip("accelerate")
pytest.importorskip("transformers")

MODEL = "llama-3.2-1b"  # the catalog model dsconfig is told about; the oracle builds a small Llama
PREPARE_CODES = {fsdp_rules.FSDP_LAYER_CLASS_FORMAT.code, fsdp_rules.FSDP_LAYER_CLASS_MISSING.code}
PLUGIN_CODES = {rule.code for rule in fsdp_rules.RULES} - PREPARE_CODES
EXAMPLES = int(os.environ.get("DSCONFIG_FSDP_EXAMPLES", "500"))


def _text(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


class Verdict:
    def __init__(self):
        self.load = self.launch = self.plugin = self.prepare = None  # error texts
        self.env = None
        self.dropped: set[str] | None = None  # settings the plugin's FSDP2 warning names
        self.size_policy_dropped = None  # SIZE_BASED_WRAP with min_num_params 0 dropped in set_auto_wrap_policy


_DROPPABLE = ("sharding_strategy", "backward_prefetch", "use_orig_params", "sync_module_states")


def _tiny_llama():
    from transformers import LlamaConfig, LlamaForCausalLM
    config = LlamaConfig(hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
                         num_key_value_heads=1, vocab_size=32)
    return LlamaForCausalLM(config)


_MODEL = []


def accelerate_verdict(path: str, monkeypatch) -> Verdict:
    from accelerate.commands.config.config_args import load_config_from_file
    from accelerate.commands.launch import (
        _validate_launch_command,
        launch_command_parser,
    )
    from accelerate.utils import launch as env_builders

    verdict = Verdict()
    with quiet_and_restored():
        try:
            load_config_from_file(path)
        except Exception as error:  # noqa: BLE001 - whatever Accelerate raises is its verdict
            verdict.load = _text(error)
            return verdict
        try:
            import torch.distributed.run as distrib_run
            args = launch_command_parser().parse_args(["--config_file", path, "train.py"])
            args, _, _ = _validate_launch_command(args)
            env = env_builders.prepare_multi_gpu_env(args)
            filtered = env_builders._filter_args(args, distrib_run.get_args_parser(),
                                                 ["--training_script", "train.py", "--training_script_args", []])
            distrib_run.config_from_args(filtered)
        except Exception as error:  # noqa: BLE001 - whatever Accelerate raises is its verdict
            verdict.launch = _text(error)
            return verdict
    verdict.env = {k: v for k, v in env.items() if k.startswith("FSDP_")}
    _plugin_and_prepare(verdict, monkeypatch)
    return verdict


def _plugin_and_prepare(verdict: Verdict, monkeypatch) -> None:
    plugin, error, said = build_plugin({}, verdict.env, monkeypatch)
    if error is not None:
        verdict.plugin = error
        return
    verdict.dropped = {name for name in _DROPPABLE if f"{name} is" in said}
    if not _MODEL:
        _MODEL.append(_tiny_llama())
    from torch.distributed.fsdp.wrap import size_based_auto_wrap_policy
    size_based = plugin.auto_wrap_policy is size_based_auto_wrap_policy
    try:
        plugin.set_auto_wrap_policy(_MODEL[0])
    except Exception as error:  # noqa: BLE001 - whatever Accelerate raises is its verdict
        verdict.prepare = _text(error)
        return
    verdict.size_policy_dropped = size_based and plugin.auto_wrap_policy is None


class Tally:
    PHASES = ("load", "launch", "plugin", "dropped", "prepare", "size policy")

    def __init__(self, name: str):
        self.name = name
        self.counts = {phase: [0, 0, 0] for phase in self.PHASES}  # agree, compared, Accelerate raised/dropped
        self.disagreements: list[str] = []

    def _count(self, phase, ours, theirs, text, findings, path) -> None:
        """Agreement: both raised or neither (a set of dropped settings must be the same set)."""
        row = self.counts[phase]
        row[1] += 1
        row[2] += bool(theirs)
        if (ours == theirs) if isinstance(theirs, set) else (bool(ours) == bool(theirs)):
            row[0] += 1
        else:
            said = "\n    ".join(repr(f) for f in findings) or "(nothing)"
            self.disagreements.append(f"{phase}: accelerate says {theirs!r}; dsconfig said:\n    {said}\n--- {path}\n"
                                      f"{text}")

    def compare(self, path: str, text: str, monkeypatch) -> None:
        verdict = accelerate_verdict(path, monkeypatch)
        findings = lint_text(text, path, model=MODEL)
        errors = [f for f in findings if f.severity == "error" or f.code == "ACC007"]  # (see dsconfig_phases)
        self._count("load", any(f.fails_in == LOAD for f in errors), verdict.load, text, findings, path)
        if verdict.load is not None:
            return
        self._count("launch", any(f.fails_in == LAUNCH for f in errors), verdict.launch, text, findings, path)
        if verdict.launch is not None:
            return
        plugin_errors = [f for f in errors if f.fails_in == INITIALIZE and f.code in PLUGIN_CODES]
        self._count("plugin", plugin_errors, verdict.plugin, text, findings, path)
        if verdict.plugin is not None:
            return
        dropped = {name for f in findings if f.code == fsdp_rules.FSDP1_KEY_UNDER_FSDP2.code
                   for name in _DROPPABLE if f"plugin drops {name}" in f.message}
        self._count("dropped", dropped, verdict.dropped, text, findings, path)
        prepare_errors = [f for f in errors if f.code in PREPARE_CODES]
        self._count("prepare", prepare_errors, verdict.prepare, text, findings, path)
        if verdict.prepare is None:
            wraps_nothing = any(f.code == fsdp_rules.FSDP_WRAP_SETTING_UNUSED.code and "min_num_params 0" in f.message
                                for f in findings)
            self._count("size policy", wraps_nothing, verdict.size_policy_dropped, text, findings, path)

    def report(self) -> str:
        parts = []
        for phase in self.PHASES:
            agree, total, raised = self.counts[phase]
            share = f" ({100 * agree / total:.1f}%)" if total else ""
            parts.append(f"{phase} {agree}/{total}{share}, Accelerate raised/dropped on {raised}")
        return f"{self.name}: " + "; ".join(parts)


# -- the corpus ---------------------------------------------------------------------------------


def _fsdp_corpus() -> list:
    rows = []
    for path, _ in corpus_files("accelerate"):
        text = path.read_text(encoding="utf-8")
        if "FSDP" in text:
            rows.append((path, text))
    return rows


def test_corpus_agrees_with_accelerate(capsys, monkeypatch):
    rows = _fsdp_corpus()
    if not rows:
        pytest.skip("no FSDP config in the corpus")
    tally = Tally("FSDP corpus")
    for path, text in rows:
        tally.compare(str(path), text, monkeypatch)
    with capsys.disabled():
        print("\n" + tally.report())
    assert not tally.disagreements, "\n\n".join(tally.disagreements)


# -- generated configs --------------------------------------------------------------------------


def scalar(*values):
    return st.sampled_from([str(v) for v in values])


BOOLEAN = scalar("true", "false", "'true'", "'False'", "yes", "no", "on", "Off", "1", "0", "maybe", "null", "''")
FSDP_KEYS = {
    "fsdp_version": scalar(1, 2, 2, 2, "'2'", "'1'", "2.0", 3, 0, "two", "null"),
    "fsdp_sharding_strategy": scalar("FULL_SHARD", "full_shard", "SHARD_GRAD_OP", "NO_SHARD", "HYBRID_SHARD",
                                     "HYBRID_SHARD_ZERO2", "_HYBRID_SHARD_ZERO2", 1, 5, 0, 6, "'3'", "SHARDED",
                                     "null", "true"),
    "fsdp_reshard_after_forward": scalar("true", "false", "'true'", "yes", "no", "FULL_SHARD", "SHARD_GRAD_OP",
                                         "full_shard", 1, 0, 2, "maybe", "null"),
    "fsdp_offload_params": BOOLEAN,
    "fsdp_auto_wrap_policy": scalar("TRANSFORMER_BASED_WRAP", "TRANSFORMER_BASED_WRAP", "transformer_based_wrap",
                                    "SIZE_BASED_WRAP", "SIZE_BASED_WRAP", "NO_WRAP", "no_wrap", "TRANSFORMER", 1,
                                    "null"),
    "fsdp_transformer_layer_cls_to_wrap": scalar("LlamaDecoderLayer", "LlamaDecoderLayer", "LlamaDecoderLayer,LlamaMLP",
                                                 "LlamaDecoderLayer, LlamaMLP", "[LlamaDecoderLayer]",
                                                 "[LlamaDecoderLayer, LlamaMLP]", "Qwen2DecoderLayer",
                                                 "LlamaDecoderLayer,", "GPT2Block", "null", 3),
    "fsdp_min_num_params": scalar(100000000, 1000, "1e8", "1.0e+8", 0, -1, "'1000'", "abc", "null"),
    "fsdp_backward_prefetch": scalar("BACKWARD_PRE", "backward_post", "NO_PREFETCH", 1, 2, 3, 0, "BACKWARD", "null"),
    "fsdp_state_dict_type": scalar("FULL_STATE_DICT", "SHARDED_STATE_DICT", "SHARDED_STATE_DICT", "LOCAL_STATE_DICT",
                                   "sharded_state_dict", 1, 2, 3, 4, "FULL", "null"),
    "fsdp_forward_prefetch": BOOLEAN,
    "fsdp_use_orig_params": BOOLEAN,
    "fsdp_cpu_ram_efficient_loading": BOOLEAN,
    "fsdp_sync_module_states": BOOLEAN,
    "fsdp_activation_checkpointing": BOOLEAN,
    "fsdp_activation_checkpointing_offload": BOOLEAN,
}
TOP = {
    "mixed_precision": scalar("bf16", "bf16", "fp16", "'no'", "no"),  # fp8 depends on the machine's backends
    "use_cpu": scalar("false", "true"),
    "num_machines": scalar(1, 1, 2),
    "main_process_ip": scalar("10.0.0.1"),
    "machine_rank": scalar(0),
    "gpu_ids": scalar("all"),
}


@st.composite
def fsdp_yaml(draw) -> str:
    lines = ["compute_environment: LOCAL_MACHINE", "distributed_type: FSDP",
             f"num_processes: {draw(st.sampled_from([2, 2, 4, 8]))}"]
    for key in draw(st.lists(st.sampled_from(sorted(TOP)), max_size=3, unique=True)):
        lines.append(f"{key}: {draw(TOP[key])}")
    keys = draw(st.lists(st.sampled_from(sorted(FSDP_KEYS)), min_size=1, max_size=6, unique=True))
    if "fsdp_version" not in keys and draw(st.booleans()):
        keys.insert(0, "fsdp_version")
    wrap_layers = "fsdp_transformer_layer_cls_to_wrap" in keys and draw(st.booleans())
    if wrap_layers:  # often enough that prepare() looks the classes up
        keys = [key for key in keys if key != "fsdp_auto_wrap_policy"]
    body = ["  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP"] if wrap_layers else []
    for key in keys:
        written = key.removeprefix("fsdp_") if draw(st.sampled_from([False] * 4 + [True])) else key
        body.append(f"  {written}: {draw(FSDP_KEYS[key])}")
    return "\n".join(lines + ["fsdp_config:"] + body) + "\n"


GENERATED = Tally("FSDP generated")


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(text=fsdp_yaml())
def test_generated_configs_agree_with_accelerate(tmp_path_factory, monkeypatch, text):
    path = tmp_path_factory.mktemp("fsdp") / "accelerate_config.yaml"
    path.write_text(text, encoding="utf-8")
    before = len(GENERATED.disagreements)
    GENERATED.compare(str(path), text, monkeypatch)
    assert len(GENERATED.disagreements) == before, GENERATED.disagreements[-1]


def test_generated_agreement_numbers(capsys):
    """Runs after the property test (file order): print what it measured."""
    if not GENERATED.counts["load"][1]:
        pytest.skip("the generated-config test did not run")
    with capsys.disabled():
        print("\n" + GENERATED.report())
    assert GENERATED.counts["plugin"][1] > EXAMPLES // 3, "too few generated configs reached the plugin"
    assert GENERATED.counts["plugin"][2] > 10 and GENERATED.counts["prepare"][2] > 5, "too few failures exercised"


def test_oracle_sees_the_known_failures(tmp_path, monkeypatch):
    """The oracle itself, on configs whose outcome the plugin's code states."""
    head = "distributed_type: FSDP\nnum_processes: 2\nfsdp_config:\n"
    cases = {
        "  fsdp_version: 2.0\n": ("plugin", "invalid literal for int()"),
        "  fsdp_version: 1\n  fsdp_sharding_strategy: 0\n": ("plugin", "0 is not a valid ShardingStrategy"),
        "  fsdp_version: 2\n  fsdp_reshard_after_forward: FULL_SHARD\n": ("plugin", "invalid truth value full_shard"),
        "  fsdp_version: 2\n  fsdp_state_dict_type: LOCAL_STATE_DICT\n": ("plugin", "not support LOCAL_STATE_DICT"),
        "  fsdp_version: 2\n  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP\n"
        "  fsdp_transformer_layer_cls_to_wrap: [LlamaDecoderLayer]\n": ("prepare", "Could not find the transformer"),
        "  fsdp_cpu_ram_efficient_loading: true\n  fsdp_sync_module_states: false\n": ("launch", "set `--fsdp_sync"),
    }
    for body, (phase, message) in cases.items():
        path = tmp_path / "accelerate_config.yaml"
        path.write_text(head + body)
        error = getattr(accelerate_verdict(str(path), monkeypatch), phase)
        assert error is not None and message in error, (body, phase, error)
    path.write_text(head + "  fsdp_version: 2\n  fsdp_backward_prefetch: BACKWARD_PRE\n")
    assert accelerate_verdict(str(path), monkeypatch).dropped == {"backward_prefetch"}
