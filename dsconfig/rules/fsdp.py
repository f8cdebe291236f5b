"""Accelerate FSDP settings: what `FullyShardedDataParallelPlugin` (Accelerate 1.15) makes of each
`fsdp_config` key, what it refuses, what it drops, and what fails later in `prepare()`.

Checked by dsconfig.accelerate.fsdp_plugin (the plugin replay, on keyword arguments and the FSDP_*
environment) and dsconfig.accelerate.fsdp (the YAML side: which keys reach the plugin, `--model`).
"""

from __future__ import annotations

from ..phases import INITIALIZE, SILENT
from .rule import ERROR, INFO, UNSAFE, WARNING, Autofix, Rule, acc

FSDP = "compute_environment: LOCAL_MACHINE\ndistributed_type: FSDP\nnum_processes: 8\nmixed_precision: bf16"

FSDP_VERSION = Rule(
    "ACC021", "fsdp-version", ERROR,
    summary="fsdp_version is not 1 or 2",
    what="Reports an `fsdp_version` the plugin cannot read as an integer, or one other than 1 and 2.",
    why="""The launcher exports `FSDP_VERSION=str(value)` and the plugin reads `int(...)`: `2.0` or `two` make every
    process fail with `ValueError: invalid literal for int() with base 10: '2.0'`. Any other integer is
    neither FSDP1 nor FSDP2: the plugin then misreads the other settings.""",
    fails_in=(INITIALIZE, SILENT),
    failing=acc(FSDP + """
        fsdp_config:
          fsdp_version: 2.0
        """),
    passing=acc(FSDP + """
        fsdp_config:
          fsdp_version: 2
        """),
    fix="Write `fsdp_version: 2` (or 1).",
)

FSDP_CHOICE = Rule(
    "ACC022", "fsdp-choice", ERROR,
    summary="An FSDP strategy, prefetch, state-dict or wrap-policy value the plugin cannot map",
    what="""Reports `fsdp_sharding_strategy`, `fsdp_reshard_after_forward` (FSDP1), `fsdp_backward_prefetch`,
    `fsdp_state_dict_type` or `fsdp_auto_wrap_policy` values that are neither a name the plugin knows
    (compared upper-cased) nor the number of one.""",
    why="""The plugin maps names to torch enums with `ShardingStrategy[...]` or `ShardingStrategy(int(...))`: every
    process fails with `KeyError: 'SHARDED'`, `ValueError: 0 is not a valid ShardingStrategy` or `ValueError:
    Invalid auto wrap policy: ...`.""",
    fails_in=(INITIALIZE,),
    failing=acc(FSDP + """
        fsdp_config:
          fsdp_version: 1
          fsdp_sharding_strategy: SHARDED
        """),
    passing=acc(FSDP + """
        fsdp_config:
          fsdp_version: 1
          fsdp_sharding_strategy: FULL_SHARD
        """),
    fix="Use one of the names the message lists.",
    autofix=Autofix(UNSAFE, "The replacement is the closest name, a guess."),
)

FSDP_FLAG = Rule(
    "ACC023", "fsdp-flag", ERROR,
    summary="An FSDP true/false setting the plugin cannot read",
    what="""Reports `fsdp_offload_params`, `fsdp_activation_checkpointing`, `fsdp_use_orig_params`, ... whose
    text (`str(value).lower()`, as the launcher exports it) is not one of Accelerate's truth words, and
    `reshard_after_forward` values FSDP2 cannot read as a boolean.""",
    why="""The plugin reads the FSDP_* variables with `str_to_bool`: `fsdp_offload_params: maybe` makes every process
    fail with `ValueError: invalid truth value maybe`; FSDP2's `reshard_after_forward: FULL_SHARD` fails the same
    way.""",
    fails_in=(INITIALIZE,),
    failing=acc(FSDP + """
        fsdp_config:
          fsdp_version: 2
          fsdp_reshard_after_forward: FULL_SHARD
        """),
    passing=acc(FSDP + """
        fsdp_config:
          fsdp_version: 2
          fsdp_reshard_after_forward: true
        """),
    fix="Write `true` or `false`; FSDP2 spells the sharding strategy as `reshard_after_forward: true|false`.",
)

FSDP_MIN_NUM_PARAMS = Rule(
    "ACC024", "fsdp-min-num-params", ERROR,
    summary="fsdp_min_num_params is not a whole number",
    what="Reports an `fsdp_min_num_params` that `int()` cannot read when the wrap policy is SIZE_BASED_WRAP.",
    why="""YAML 1.1 reads `1e8` as text and `1.0e+8` as a float; the launcher exports `str(value)` and the plugin
    fails in every process with `ValueError: invalid literal for int() with base 10: '1e8'`.""",
    fails_in=(INITIALIZE,),
    failing=acc(FSDP + """
        fsdp_config:
          fsdp_version: 2
          fsdp_auto_wrap_policy: SIZE_BASED_WRAP
          fsdp_min_num_params: 1e8
        """),
    passing=acc(FSDP + """
        fsdp_config:
          fsdp_version: 2
          fsdp_auto_wrap_policy: SIZE_BASED_WRAP
          fsdp_min_num_params: 100000000
        """),
    fix="Write the number in digits.",
)

FSDP1_KEY_UNDER_FSDP2 = Rule(
    "ACC025", "fsdp1-key-under-fsdp2", WARNING,
    summary="An FSDP1-only setting under fsdp_version 2; the plugin drops it (or refuses it)",
    what="""Reports `fsdp_sharding_strategy`, `fsdp_backward_prefetch`, `fsdp_forward_prefetch`,
    `fsdp_use_orig_params` and `fsdp_sync_module_states` set under `fsdp_version: 2`, with the FSDP2 setting
    `accelerate to-fsdp2` maps each to.""",
    why="""From the YAML the plugin never reads them under FSDP2 (backward prefetch: "backward_prefetch is not
    supported in FSDP2. Setting backward prefetch to None."), so `fsdp_sharding_strategy: SHARD_GRAD_OP` silently
    trains as FULL_SHARD. Passed to the plugin directly, `forward_prefetch` raises "forward_prefetch is not yet
    implemented in FSDP2".""",
    fails_in=(INITIALIZE, SILENT),
    failing=acc(FSDP + """
        fsdp_config:
          fsdp_version: 2
          fsdp_sharding_strategy: SHARD_GRAD_OP
        """),
    passing=acc(FSDP + """
        fsdp_config:
          fsdp_version: 2
          fsdp_reshard_after_forward: false
        """),
    fix="Remove the key, or write its FSDP2 form (`fsdp_reshard_after_forward` for the sharding strategy).",
)

FSDP2_KEY_UNDER_FSDP1 = Rule(
    "ACC026", "fsdp2-key-under-fsdp1", WARNING,
    summary="An FSDP2 setting under fsdp_version 1 (the default); the plugin ignores it",
    what="""Reports `fsdp_reshard_after_forward` under FSDP1 (`fsdp_version` missing means 1), whether a boolean
    written for FSDP2 or a strategy name.""",
    why="""The 1.15 plugin takes FSDP1's strategy from `fsdp_sharding_strategy` alone (the launcher always exports it,
    FULL_SHARD when absent) and never reads `fsdp_reshard_after_forward`: `false` written for FSDP2, and even the
    `fsdp_reshard_after_forward: SHARD_GRAD_OP` that `accelerate config` itself writes for FSDP1, are silently
    ignored and the model trains fully sharded.""",
    fails_in=(SILENT,),
    failing=acc(FSDP + """
        fsdp_config:
          fsdp_reshard_after_forward: false
        """),
    passing=acc(FSDP + """
        fsdp_config:
          fsdp_version: 2
          fsdp_reshard_after_forward: false
        """),
    fix="Set `fsdp_version: 2` (with a boolean), or write the strategy as `fsdp_sharding_strategy` for FSDP1.",
)

FSDP_CHECKPOINTING_OFFLOAD = Rule(
    "ACC027", "fsdp-checkpointing-offload", ERROR,
    summary="activation_checkpointing_offload without activation_checkpointing, or under FSDP1",
    what="""Reports `fsdp_activation_checkpointing_offload: true` without `fsdp_activation_checkpointing: true`, or
    under `fsdp_version` 1.""",
    why="""Every process fails when it builds the plugin: "`activation_checkpointing_offload=True` requires
    `activation_checkpointing=True`." or "... requires `fsdp_version=2`.\"""",
    fails_in=(INITIALIZE,),
    failing=acc(FSDP + """
        fsdp_config:
          fsdp_version: 2
          fsdp_activation_checkpointing_offload: true
        """),
    passing=acc(FSDP + """
        fsdp_config:
          fsdp_version: 2
          fsdp_activation_checkpointing: true
          fsdp_activation_checkpointing_offload: true
        """),
    fix="Turn on `fsdp_activation_checkpointing` (and use `fsdp_version: 2`), or remove the offload.",
)

FSDP2_LOCAL_STATE_DICT = Rule(
    "ACC028", "fsdp2-local-state-dict", ERROR,
    summary="LOCAL_STATE_DICT under FSDP2",
    what="Reports `fsdp_state_dict_type: LOCAL_STATE_DICT` (or 2) with `fsdp_version: 2`.",
    why="""Every process fails when it builds the plugin: "FSDP2 does not support LOCAL_STATE_DICT. Please set
    `fsdp_state_dict_type` to `SHARDED_STATE_DICT` or `FULL_STATE_DICT`.\"""",
    fails_in=(INITIALIZE,),
    failing=acc(FSDP + """
        fsdp_config:
          fsdp_version: 2
          fsdp_state_dict_type: LOCAL_STATE_DICT
        """),
    passing=acc(FSDP + """
        fsdp_config:
          fsdp_version: 2
          fsdp_state_dict_type: SHARDED_STATE_DICT
        """),
    fix="Use SHARDED_STATE_DICT (or FULL_STATE_DICT).",
    autofix=Autofix(UNSAFE, "The checkpoint format changes."),
)

FSDP_LAYER_CLASS_FORMAT = Rule(
    "ACC029", "fsdp-layer-class-format", ERROR,
    summary="fsdp_transformer_layer_cls_to_wrap is not a comma-separated list of class names",
    what="""Reports a `fsdp_transformer_layer_cls_to_wrap` that is a YAML list, or whose comma-separated names
    carry spaces or are empty, with TRANSFORMER_BASED_WRAP.""",
    why="""The launcher exports `str(value)` and the plugin splits it on `,` without stripping: `[LlamaDecoderLayer]`
    becomes the name `['LlamaDecoderLayer']` and `A, B` the name ` B`. `prepare()` then fails in every process
    with "Could not find the transformer layer class ['LlamaDecoderLayer'] in the model.\"""",
    fails_in=(INITIALIZE,),
    failing=acc(FSDP + """
        fsdp_config:
          fsdp_version: 2
          fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP
          fsdp_transformer_layer_cls_to_wrap: [LlamaDecoderLayer]
        """),
    passing=acc(FSDP + """
        fsdp_config:
          fsdp_version: 2
          fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP
          fsdp_transformer_layer_cls_to_wrap: LlamaDecoderLayer
        """),
    fix="Write the class names as one text, separated by commas without spaces: `LlamaDecoderLayer,LlamaMLP`.",
    autofix=Autofix(UNSAFE, "The names are re-joined with commas; check that they are the classes you meant."),
)

FSDP_LAYER_CLASS_MISSING = Rule(
    "ACC030", "fsdp-layer-class-missing", ERROR,
    summary="A class in fsdp_transformer_layer_cls_to_wrap is not in the model given with --model",
    what="""With `--model` (a catalog name such as `llama-3-8b`, or a Hugging Face `config.json`), reports a
    layer class to wrap that the model's architecture does not have, with a did-you-mean.""",
    why="""`prepare()` looks each name up in the model and fails in every process with "Could not find the
    transformer layer class LlamaDecoderLayer in the model." when it is missing: a config copied from a Llama
    recipe onto a Qwen2 model.""",
    fails_in=(INITIALIZE,),
    failing=acc(FSDP + """
        fsdp_config:
          fsdp_version: 2
          fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP
          fsdp_transformer_layer_cls_to_wrap: LlamaDecoderLayer
        """, model="qwen2.5-7b"),
    passing=acc(FSDP + """
        fsdp_config:
          fsdp_version: 2
          fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP
          fsdp_transformer_layer_cls_to_wrap: Qwen2DecoderLayer
        """, model="qwen2.5-7b"),
    fix="Name the model's decoder layer class (the message lists them), or leave the key out: Accelerate then "
        "wraps the model's `_no_split_modules`.",
    autofix=Autofix(UNSAFE, "The replacement is the architecture's layer class; check it is the one to wrap."),
)

FSDP_WRAP_SETTING_UNUSED = Rule(
    "ACC031", "fsdp-wrap-setting-unused", WARNING,
    summary="A wrap setting the chosen auto_wrap_policy ignores, or SIZE_BASED_WRAP that wraps nothing",
    what="""Reports `fsdp_transformer_layer_cls_to_wrap` without TRANSFORMER_BASED_WRAP, `fsdp_min_num_params`
    without SIZE_BASED_WRAP, and SIZE_BASED_WRAP with `fsdp_min_num_params: 0`.""",
    why="""The plugin reads only the setting of its policy; with `min_num_params` 0 `set_auto_wrap_policy` silently
    drops the policy ("If zero, we silently ignore it."): one FSDP unit for the whole model, no memory saved
    by sharding layer by layer.""",
    fails_in=(SILENT,),
    failing=acc(FSDP + """
        fsdp_config:
          fsdp_version: 2
          fsdp_auto_wrap_policy: SIZE_BASED_WRAP
          fsdp_transformer_layer_cls_to_wrap: LlamaDecoderLayer
        """),
    passing=acc(FSDP + """
        fsdp_config:
          fsdp_version: 2
          fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP
          fsdp_transformer_layer_cls_to_wrap: LlamaDecoderLayer
        """),
    fix="Choose the policy the setting belongs to, or remove the setting.",
)

FSDP1_USE_ORIG_PARAMS_FALSE = Rule(
    "ACC032", "fsdp1-use-orig-params-false", WARNING,
    summary="FSDP1 with use_orig_params false: fails with frozen and trainable parameters in one unit (PEFT)",
    what="Reports `fsdp_use_orig_params: false` under FSDP1.",
    why="""FSDP1 flattens each unit's parameters into one tensor; when a unit mixes frozen and trainable
    parameters (LoRA/PEFT, a frozen embedding) `prepare()` fails with "ValueError: Must flatten tensors with
    uniform requires_grad when use_orig_params=False" (peft #1702). Full fine-tuning is unaffected.""",
    fails_in=(INITIALIZE,),
    failing=acc(FSDP + """
        fsdp_config:
          fsdp_version: 1
          fsdp_use_orig_params: false
        """),
    passing=acc(FSDP + """
        fsdp_config:
          fsdp_version: 1
          fsdp_use_orig_params: true
        """),
    fix="Set `fsdp_use_orig_params: true` (or move to `fsdp_version: 2`, which always keeps the original parameters).",
)

FSDP_FULL_STATE_DICT = Rule(
    "ACC033", "fsdp-full-state-dict", INFO,
    summary="FULL_STATE_DICT gathers the whole model on rank 0 at every save",
    what="""Reports the FULL_STATE_DICT state dict type (written, or FSDP1's default), with the size gathered when
    `--model` gives it.""",
    why="""Each checkpoint gathers every parameter (and with the optimizer, its states) into rank 0's CPU memory:
    a 70B model needs about 140 GB of host RAM in bf16 and saves slowly or dies with out-of-memory
    (accelerate #3633, #4099).""",
    fails_in=(SILENT,),
    failing=acc(FSDP + """
        fsdp_config:
          fsdp_version: 2
          fsdp_state_dict_type: FULL_STATE_DICT
        """),
    passing=acc(FSDP + """
        fsdp_config:
          fsdp_version: 2
          fsdp_state_dict_type: SHARDED_STATE_DICT
        """),
    fix="Use SHARDED_STATE_DICT for training checkpoints; gather a full model once at the end.",
)

FSDP_USE_CPU_IGNORED = Rule(
    "ACC034", "fsdp-use-cpu-ignored", WARNING,
    summary="use_cpu with distributed_type FSDP; the FSDP launcher ignores it",
    what="Reports `use_cpu: true` in an FSDP config.",
    why="""`accelerate launch` starts FSDP with the multi-GPU launcher, which never exports ACCELERATE_USE_CPU (only the
    command-line `--cpu` flag changes the launcher): the processes train on GPUs.""",
    fails_in=(SILENT,),
    failing=acc(FSDP + """
        use_cpu: true
        fsdp_config:
          fsdp_version: 2
        """),
    passing=acc(FSDP + """
        use_cpu: false
        fsdp_config:
          fsdp_version: 2
        """),
    fix="Remove `use_cpu`, or use `distributed_type: MULTI_CPU` to train on CPUs.",
)

RULES = (
    FSDP_VERSION, FSDP_CHOICE, FSDP_FLAG, FSDP_MIN_NUM_PARAMS, FSDP1_KEY_UNDER_FSDP2, FSDP2_KEY_UNDER_FSDP1,
    FSDP_CHECKPOINTING_OFFLOAD, FSDP2_LOCAL_STATE_DICT, FSDP_LAYER_CLASS_FORMAT, FSDP_LAYER_CLASS_MISSING, FSDP_WRAP_SETTING_UNUSED,
    FSDP1_USE_ORIG_PARAMS_FALSE, FSDP_FULL_STATE_DICT, FSDP_USE_CPU_IGNORED,
)
