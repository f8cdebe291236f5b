"""dsconfig's replay of the Trainer's FSDP arguments against the real transformers 5.23 and Accelerate 1.15.

For each dict of training arguments: the real `TrainingArguments(output_dir=..., **args)` (on CPU, no
distributed environment is needed to build it; only `Trainer(...)` asks for one), then the real
`FullyShardedDataParallelPlugin(**args.fsdp_plugin_args)`, as `Trainer.create_accelerator_and_postprocess`
builds it. Three phases are compared with `dsconfig.fsdp.trainer_args.replay`:

* construction: TrainingArguments raises exactly when dsconfig reports ACC040, and otherwise dsconfig's
  plugin kwargs equal the real `fsdp_plugin_args`;
* the plugin: it raises exactly when dsconfig reports an error in phase `initialize` from the plugin replay
  (FSDP1's `sync_module_states` raises "no available devices" on a CPU-only machine: that is the machine,
  not the config, and counts as built);
* ignored keys: a `fsdp_config` key is silently ignored when neither deleting it nor writing another
  value (true, false, "maybe", 5, ["X"]) changes `fsdp_plugin_args` or makes TrainingArguments raise;
  dsconfig must report exactly those keys (ACC041, ACC042, ACC044). A key written both with and without
  the `fsdp_` prefix is ignored in its unprefixed spelling (the prefixed value replaces it);
* YAML values replaced: with an Accelerate FSDP YAML, the plugin fields the Trainer's arguments set differ
  from those the launcher's FSDP_* environment alone gives exactly at the YAML keys dsconfig reports (ACC049).

The default run takes 300 generated argument dicts (DSCONFIG_TRAINER_FSDP_EXAMPLES) and prints the
agreement per phase (`pytest -s`).
"""

from __future__ import annotations

import copy
import logging
import os
import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsconfig.fsdp.trainer_args import replay

transformers = pytest.importorskip("transformers")
accelerate_utils = pytest.importorskip("accelerate.utils")

IGNORED_CODES = {"ACC041", "ACC042", "ACC044"}
CPU_ONLY = "There are currently no available devices found"
_counts: dict[str, list[int]] = {"construction": [0, 0], "plugin": [0, 0], "ignored keys": [0, 0]}


def _real(args: dict, output_dir: str):
    """(raised in TrainingArguments, plugin kwargs, raised in the plugin), with os.environ restored."""
    saved = dict(os.environ)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                # TrainingArguments rewrites fsdp_config in place: hand it a copy
                built = transformers.TrainingArguments(output_dir=output_dir, **copy.deepcopy(args))
            except Exception as error:  # any exception TrainingArguments raises is the verdict
                return f"{type(error).__name__}: {error}", None, None
            kwargs = built.fsdp_plugin_args
            if kwargs is None:
                return None, None, None
            try:
                accelerate_utils.FullyShardedDataParallelPlugin(**dict(kwargs))
            except Exception as error:
                if CPU_ONLY in str(error):
                    return None, kwargs, None
                return None, kwargs, f"{type(error).__name__}: {error}"
            return None, kwargs, None
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _ours(args: dict):
    result = replay(args)
    raised = [f for f in result.findings if f.code == "ACC040"]
    # the plugin replay's errors of the constructor; those it says fail later, in prepare(), are not compared here
    plugin = [f for f in result.findings if f.code[:5] in ("ACC02", "ACC03") and f.fails_in == "initialize"
              and "prepare()" not in f.message]
    return result, raised, plugin


def _compare(args: dict, output_dir: str) -> None:
    real_raised, real_kwargs, plugin_raised = _real(args, output_dir)
    result, raised, plugin = _ours(args)
    _counts["construction"][1] += 1
    assert bool(raised) == bool(real_raised), (args, real_raised, [f.message for f in raised])
    if real_raised:
        _counts["construction"][0] += 1
        return
    assert result.kwargs == (dict(real_kwargs) if real_kwargs is not None else None), args
    _counts["construction"][0] += 1
    if real_kwargs is None:
        return
    _counts["plugin"][1] += 1
    assert bool(plugin) == bool(plugin_raised), (args, plugin_raised, [f.message for f in plugin])
    _counts["plugin"][0] += 1
    config = args.get("fsdp_config")
    if not isinstance(config, dict):
        return
    reported = {f.pointer.rsplit("/", 1)[-1] for f in result.findings if f.code in IGNORED_CODES}
    for key in config:
        ignored = not any(_reads(args, key, probe, real_kwargs, output_dir) for probe in _PROBES)
        if not key.startswith("fsdp_") and "fsdp_" + key in config:
            ignored = True  # written both ways: the prefixed key's value replaces this one
        _counts["ignored keys"][1] += 1
        assert (key in reported) == ignored, (args, key, ignored, sorted(reported))
        _counts["ignored keys"][0] += 1


# A key is read when deleting it or writing one of these instead changes what TrainingArguments does.
_DELETED = object()
_PROBES = (_DELETED, True, False, "maybe", 5, ["X"])


def _reads(args: dict, key: str, probe, real_kwargs, output_dir: str) -> bool:
    config = {k: v for k, v in args["fsdp_config"].items() if k != key}
    if probe is not _DELETED:
        config[key] = probe
    raised, kwargs, _ = _real(dict(args, fsdp_config=config), output_dir)
    return raised is not None or kwargs is None or dict(kwargs) != dict(real_kwargs)


HAND_WRITTEN = [
    {"fsdp": True},
    {"fsdp": False, "fsdp_config": {"cpu_offload": True}},
    {"fsdp": "full_shard auto_wrap"},
    {"fsdp": "full_shard offload auto_wrap",
     "fsdp_config": {"fsdp_transformer_layer_cls_to_wrap": "LlamaDecoderLayer"}},
    {"fsdp": "hybrid_shard"},
    {"fsdp": "hybrid_shard", "fsdp_config": {"version": 1}},
    {"fsdp": "FULL_SHARD"},
    {"fsdp": "true"},
    {"fsdp": ["shard_grad_op", "offload"]},
    {"fsdp": True, "fsdp_config": {"auto_wrap_policy": "transformer_based_wrap"}},
    {"fsdp": True, "fsdp_config": {"auto_wrap_policy": "SIZE_BASED_WRAP", "min_num_params": 1000}},
    {"fsdp": True, "fsdp_config": {"auto_wrap_policy": "SIZE_BASED_WRAP", "min_num_params": "1000"}},
    {"fsdp": True, "fsdp_config": {"min_num_params": 1000}},
    {"fsdp": True, "fsdp_config": {"fsdp_offload_params": True, "sharding_strategy": "FULL_SHARD"}},
    {"fsdp": True, "fsdp_config": {"backward_prefetch": "backward_pre", "use_orig_params": False}},
    {"fsdp": True, "fsdp_config": {"version": 1, "backward_prefetch": "backward_pre", "limit_all_gathers": "yes"}},
    {"fsdp": True, "fsdp_config": {"version": 1, "backward_prefetch": 3}},
    {"fsdp": True, "fsdp_config": {"activation_checkpointing": "maybe"}},
    {"fsdp": True, "fsdp_config": {"activation_checkpointing": True}, "gradient_checkpointing": True},
    {"fsdp": True, "fsdp_config": {"cpu_offload": "false"}},
    {"fsdp": True, "fsdp_config": {"state_dict_type": "LOCAL_STATE_DICT"}},
    {"fsdp": True, "fsdp_config": {"version": "two"}},
    {"fsdp": True, "fsdp_config": {"version": 3}},
    {"fsdp": True, "fsdp_config": '{"fsdp_version": 2, "reshard_after_forward": false}'},
    {"fsdp": True, "fsdp_config": {"cpu_ram_efficient_loading": True, "version": 1, "sync_module_states": False}},
    {"fsdp": True, "fsdp_config": {"reshard_after_forward": "shard_grad_op"}},
    {"fsdp": True, "fsdp_config": {"version": 1, "reshard_after_forward": "shard_grad_op"}},
    {"fsdp": True, "fsdp_config": {"transformer_layer_cls_to_wrap": ["A", "B"], "auto_wrap_policy": "NO_WRAP"}},
]


@pytest.fixture(scope="module", autouse=True)
def _report():
    logging.getLogger("transformers").setLevel(logging.ERROR)
    yield
    print("\nTrainer FSDP agreement with transformers 5.23 / Accelerate 1.15:")
    for phase, (agreed, total) in _counts.items():
        print(f"  {phase}: {agreed}/{total}")


@pytest.mark.parametrize("args", HAND_WRITTEN, ids=lambda args: str(args)[:70])
def test_hand_written(args, tmp_path):
    _compare(args, str(tmp_path))


_WORDS = st.sampled_from(["full_shard", "shard_grad_op", "hybrid_shard", "no_shard", "offload", "auto_wrap",
                          "FULL_SHARD", "Offload", "true"])
_KEYS = st.sampled_from(["version", "fsdp_version", "cpu_offload", "auto_wrap_policy", "fsdp_auto_wrap_policy",
                         "min_num_params", "transformer_layer_cls_to_wrap", "cpu_ram_efficient_loading",
                         "state_dict_type", "activation_checkpointing", "reshard_after_forward", "backward_prefetch",
                         "forward_prefetch", "use_orig_params", "sync_module_states", "limit_all_gathers",
                         "offload_params", "sharding_strategy", "fsdp_sharding_strategy", "mixed_precision_policy"])
_VALUES = st.sampled_from([True, False, "true", "false", "yes", "maybe", 0, 1, 2, "1", 1000, 1e6, None,
                           "FULL_STATE_DICT", "SHARDED_STATE_DICT", "LOCAL_STATE_DICT", "TRANSFORMER_BASED_WRAP",
                           "SIZE_BASED_WRAP", "size_based_wrap", "NO_WRAP", ["LlamaDecoderLayer"], "BACKWARD_PRE",
                           "backward_post", "full_shard", "FULL_SHARD"])
_ARGS = st.fixed_dictionaries(
    {"fsdp": st.one_of(st.booleans(), st.none(), st.lists(_WORDS, max_size=3).map(" ".join),
                       st.lists(_WORDS, max_size=3))},
    optional={"fsdp_config": st.dictionaries(_KEYS, _VALUES, max_size=5),
              "gradient_checkpointing": st.booleans()})


@settings(max_examples=int(os.environ.get("DSCONFIG_TRAINER_FSDP_EXAMPLES", "300")), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(args=_ARGS)
def test_generated(args, tmp_path):
    _compare(args, str(tmp_path))


# -- the Accelerate YAML that launches the Trainer ---------------------------------------------------

def _launcher_env(yaml_text: str, folder) -> dict:
    """The FSDP_* environment `accelerate launch` gives the processes for this YAML (the real launcher)."""
    from accelerate.commands.launch import (
        _validate_launch_command,
        launch_command_parser,
    )
    from accelerate.utils import launch as env_builders

    path = folder / "accelerate_config.yaml"
    path.write_text(yaml_text)
    args = launch_command_parser().parse_args(["--config_file", str(path), "train.py"])
    args, _, _ = _validate_launch_command(args)
    return {k: v for k, v in env_builders.prepare_multi_gpu_env(args).items() if k.startswith("FSDP_")}


def _replaced_fields(yaml_text: str, args: dict, folder) -> set[str] | None:
    """Plugin fields whose YAML value the Trainer's kwargs replace: the plugin built from the launcher's
    environment alone and the one the Trainer builds under it differ there. None when either fails."""
    env = _launcher_env(yaml_text, folder)
    saved = dict(os.environ)
    try:
        os.environ.update(env)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:  # the launcher's plugin first: TrainingArguments writes FSDP_CPU_RAM_EFFICIENT_LOADING
                launched = accelerate_utils.FullyShardedDataParallelPlugin()
                built = transformers.TrainingArguments(output_dir=str(folder), **copy.deepcopy(args))
                kwargs = built.fsdp_plugin_args
                trainer = accelerate_utils.FullyShardedDataParallelPlugin(**dict(kwargs))
            except Exception:  # a config TrainingArguments or the plugin refuses: compared in the tests above
                return None
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return {name for name in kwargs if str(getattr(trainer, name)) != str(getattr(launched, name))}


YAML_CASES = [
    ("fsdp_version: 2\nfsdp_state_dict_type: SHARDED_STATE_DICT\n", {"fsdp": True}),
    ("fsdp_version: 2\nfsdp_state_dict_type: FULL_STATE_DICT\nfsdp_offload_params: true\n", {"fsdp": True}),
    ("fsdp_version: 2\nfsdp_reshard_after_forward: false\nfsdp_auto_wrap_policy: SIZE_BASED_WRAP\n"
     + "fsdp_min_num_params: 1000\n", {"fsdp": True}),
    ("fsdp_version: 2\nfsdp_cpu_ram_efficient_loading: true\nfsdp_activation_checkpointing: true\n",
     {"fsdp": True, "fsdp_config": {"cpu_ram_efficient_loading": True}}),
    ("fsdp_version: 2\nfsdp_transformer_layer_cls_to_wrap: LlamaDecoderLayer\n",
     {"fsdp": True, "fsdp_config": {"transformer_layer_cls_to_wrap": "Qwen2DecoderLayer"}}),
    ("fsdp_version: 2\nfsdp_activation_checkpointing: true\n",
     {"fsdp": True, "fsdp_config": {"activation_checkpointing": False}}),
]


def _yaml(fsdp_section: str) -> str:
    section = "".join(f"  {line}\n" for line in fsdp_section.splitlines())
    return f"compute_environment: LOCAL_MACHINE\ndistributed_type: FSDP\nnum_processes: 2\nfsdp_config:\n{section}"


def _compare_yaml(fsdp_section: str, args: dict, folder) -> None:
    import yaml

    from dsconfig.fsdp.trainer_args import _YAML_FIELDS, yaml_conflicts

    text = _yaml(fsdp_section)
    replaced = _replaced_fields(text, args, folder)
    if replaced is None:
        return
    section = yaml.safe_load(text)["fsdp_config"]
    expected = {key for key in section if _YAML_FIELDS.get(key) in replaced}
    reported = {f.pointer.rsplit("/", 1)[-1] for f in yaml_conflicts(yaml.safe_load(text), args) if f.code == "ACC049"}
    _counts["YAML values replaced"][1] += 1
    assert reported == expected, (fsdp_section, args, replaced)
    _counts["YAML values replaced"][0] += 1


_counts["YAML values replaced"] = [0, 0]


@pytest.mark.parametrize(("fsdp_section", "args"), YAML_CASES, ids=lambda value: str(value)[:50])
def test_yaml_values_the_trainer_replaces(fsdp_section, args, tmp_path):
    _compare_yaml(fsdp_section, args, tmp_path)


_YAML_LINES = st.sampled_from(["fsdp_state_dict_type: SHARDED_STATE_DICT", "fsdp_state_dict_type: FULL_STATE_DICT",
                               "fsdp_offload_params: true", "fsdp_offload_params: false",
                               "fsdp_auto_wrap_policy: SIZE_BASED_WRAP", "fsdp_auto_wrap_policy: NO_WRAP",
                               "fsdp_min_num_params: 1000", "fsdp_reshard_after_forward: false",
                               "fsdp_cpu_ram_efficient_loading: true", "fsdp_activation_checkpointing: true",
                               "fsdp_transformer_layer_cls_to_wrap: LlamaDecoderLayer"])
_TRAINER_CONFIG = st.dictionaries(st.sampled_from(["cpu_offload", "state_dict_type", "auto_wrap_policy",
                                                   "activation_checkpointing", "reshard_after_forward",
                                                   "cpu_ram_efficient_loading"]),
                                  st.sampled_from([True, False, "SHARDED_STATE_DICT", "FULL_STATE_DICT",
                                                   "SIZE_BASED_WRAP", "NO_WRAP"]), max_size=3)


@settings(max_examples=int(os.environ.get("DSCONFIG_TRAINER_FSDP_EXAMPLES", "300")) // 10, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(lines=st.lists(_YAML_LINES, max_size=4, unique_by=lambda line: line.split(":")[0]), config=_TRAINER_CONFIG)
def test_generated_yaml(lines, config, tmp_path):
    _compare_yaml("\n".join(["fsdp_version: 2", *lines]), {"fsdp": True, "fsdp_config": config}, tmp_path)
