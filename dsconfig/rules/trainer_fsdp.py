"""The HF Trainer's FSDP settings: `fsdp` and `fsdp_config` in a TrainingArguments JSON or YAML, as
transformers 5.23 reads them (ACC040-ACC049), and their conflicts with the Accelerate YAML that
launches the script (`--training-args`); ACC050 when the project pins a transformers they do not replay.

Checked by dsconfig.fsdp.trainer_args (the replay of `TrainingArguments._process_fsdp_args`), run by
dsconfig.other for a TrainingArguments file and by dsconfig.engine for an Accelerate YAML linted with
`--training-args`.
"""

from __future__ import annotations

from ..phases import INITIALIZE, SILENT
from .rule import ERROR, INFO, WARNING, Rule, acc, folder

ARGS = "training_args.yaml"  # Trainer arguments as TRL and alignment-handbook recipes write them


def _args(text: str, note: str = ""):
    return folder((ARGS, text), lint=(ARGS,), note=note)


TRAINER_FSDP_ERROR = Rule(
    "ACC040", "trainer-fsdp-error", ERROR,
    summary="TrainingArguments raises on its fsdp / fsdp_config values",
    what="""Replays `TrainingArguments._process_fsdp_args` and reports what raises: an unknown word in a
    legacy `fsdp` string or list, `hybrid_shard` and the other FSDP1-only strategies under FSDP2, an
    `auto_wrap_policy` not written in upper case, a value `str_to_bool` refuses, a `version` `int()`
    refuses, a `fsdp_config` file that does not open (the path is relative to the working directory).""",
    why="""`TrainingArguments(...)` (HfArgumentParser) raises before anything starts, on every process:
    "ValueError: Unknown `fsdp` option: true" for `fsdp: "true"` (a string, not the boolean), "`auto_wrap_policy`
    must be one of ['TRANSFORMER_BASED_WRAP', 'SIZE_BASED_WRAP', 'NO_WRAP'], got transformer_based_wrap.".""",
    fails_in=(INITIALIZE,),
    failing=_args("""
        output_dir: out
        per_device_train_batch_size: 4
        fsdp: full_shard auto_wrap
        fsdp_config:
          auto_wrap_policy: transformer_based_wrap
        """),
    passing=_args("""
        output_dir: out
        per_device_train_batch_size: 4
        fsdp: true
        fsdp_config:
          auto_wrap_policy: TRANSFORMER_BASED_WRAP
        """),
    fix="Write `\"fsdp\": true` and put every setting in `fsdp_config`, spelled as the message says.",
)

TRAINER_FSDP_IGNORED_KEY = Rule(
    "ACC041", "trainer-fsdp-ignored-key", WARNING,
    summary="A fsdp_config key the Trainer never reads; silently dropped",
    what="""Reports a `fsdp_config` key (after the `fsdp_` prefix is stripped) that `_process_fsdp_args` does not
    read, with the Trainer's name for it: Accelerate's YAML names `offload_params` and `sharding_strategy` are
    `cpu_offload` and the `fsdp` words / `reshard_after_forward` here; other keys get a did-you-mean.""",
    why="""The Trainer builds the plugin from the keys it reads and drops the rest without a word:
    `"fsdp_offload_params": true` copied from an Accelerate YAML leaves the parameters on the GPU.""",
    fails_in=(SILENT,),
    failing=_args("""
        output_dir: out
        fsdp: true
        fsdp_config:
          fsdp_offload_params: true
        """),
    passing=_args("""
        output_dir: out
        fsdp: true
        fsdp_config:
          cpu_offload: true
        """),
    fix="Use the key the message names, or delete it.",
)

TRAINER_FSDP1_ONLY_KEY = Rule(
    "ACC042", "trainer-fsdp1-only-key", WARNING,
    summary="An FSDP1-only fsdp_config key under FSDP2 (the Trainer's default); ignored",
    what="""Reports `backward_prefetch`, `forward_prefetch`, `use_orig_params`, `sync_module_states` and
    `limit_all_gathers` when the Trainer uses FSDP2, which it does unless `fsdp_config` says `"version": 1`.""",
    why="""transformers 5 defaults to FSDP2 and reads these keys only in its FSDP1 branch: a config written for
    FSDP1 without a `version` silently loses them.""",
    fails_in=(SILENT,),
    failing=_args("""
        output_dir: out
        fsdp: true
        fsdp_config:
          backward_prefetch: backward_pre
        """),
    passing=_args("""
        output_dir: out
        fsdp: true
        fsdp_config:
          reshard_after_forward: true
        """),
    fix="Delete the key (FSDP2 has no such setting), or write `\"version\": 1` if FSDP1 is really meant (deprecated).",
)

TRAINER_FSDP_CONFIG_UNUSED = Rule(
    "ACC043", "trainer-fsdp-config-unused", WARNING,
    summary="fsdp_config given while fsdp is off; the Trainer never reads it",
    what="Reports a non-empty `fsdp_config` when `fsdp` is absent, false, null or empty.",
    why="""`_process_fsdp_args` returns at once when `fsdp` is falsy: the run trains without FSDP (each process
    holds the whole model) and says nothing about the settings written.""",
    fails_in=(SILENT,),
    failing=_args("""
        output_dir: out
        fsdp_config:
          cpu_offload: true
        """),
    passing=_args("""
        output_dir: out
        fsdp: true
        fsdp_config:
          cpu_offload: true
        """),
    fix="Add `\"fsdp\": true`, or delete `fsdp_config`.",
)

TRAINER_FSDP_WRAP_SETTING_UNUSED = Rule(
    "ACC044", "trainer-fsdp-wrap-setting-unused", WARNING,
    summary="min_num_params or transformer_layer_cls_to_wrap without the wrap policy that reads it",
    what="""Reports `min_num_params` when `auto_wrap_policy` is not SIZE_BASED_WRAP (the default is
    TRANSFORMER_BASED_WRAP), and `transformer_layer_cls_to_wrap` when it is not TRANSFORMER_BASED_WRAP.""",
    why="""The Trainer passes each to the plugin only with its own policy: `min_num_params` alone wraps by the
    model's `_no_split_modules` instead of by size, without a word.""",
    fails_in=(SILENT,),
    failing=_args("""
        output_dir: out
        fsdp: true
        fsdp_config:
          min_num_params: 100000000
        """),
    passing=_args("""
        output_dir: out
        fsdp: true
        fsdp_config:
          auto_wrap_policy: SIZE_BASED_WRAP
          min_num_params: 100000000
        """),
    fix="Set `auto_wrap_policy` to the policy that reads the key, or delete the key.",
)

TRAINER_CHECKPOINTING_CONFLICT = Rule(
    "ACC045", "trainer-checkpointing-conflict", ERROR,
    summary="gradient_checkpointing / activation_checkpointing together with FSDP activation checkpointing",
    what="""Reports the training argument `activation_checkpointing` (or its deprecated alias
    `gradient_checkpointing`) set together with FSDP's own activation checkpointing, from `fsdp_config` or
    from the Accelerate YAML's `fsdp_activation_checkpointing` (with `--training-args`).""",
    why="""`Trainer(...)` raises ValueError: "`fsdp_config['activation_checkpointing']` (FSDP's own activation
    checkpointing) and the `activation_checkpointing` training argument can't both be set to True. Use FSDP's
    activation checkpointing when using FSDP." (transformers #30404).""",
    fails_in=(INITIALIZE,),
    failing=_args("""
        output_dir: out
        gradient_checkpointing: true
        fsdp: true
        fsdp_config:
          activation_checkpointing: true
        """),
    passing=_args("""
        output_dir: out
        fsdp: true
        fsdp_config:
          activation_checkpointing: true
        """),
    fix="Keep FSDP's `activation_checkpointing` and drop the training argument.",
)

TRAINER_FSDP_WITH_DEEPSPEED = Rule(
    "ACC046", "trainer-fsdp-with-deepspeed", ERROR,
    summary="FSDP and DeepSpeed both asked for (training arguments, or arguments and the Accelerate YAML)",
    what="""Reports `fsdp` on together with `deepspeed` in the training arguments, or `fsdp` in the arguments
    while the Accelerate YAML launches DEEPSPEED; and, with `--training-args`, `deepspeed` in the arguments while
    the YAML launches FSDP.""",
    why="""With DeepSpeed in either place the Accelerator runs DeepSpeed, and `Trainer(...)` then raises
    "Using --fsdp xxx together with --deepspeed is not possible, deactivate one of those flags.". The other way
    round nothing raises: the YAML's `fsdp_config` is silently ignored and DeepSpeed trains.""",
    fails_in=(INITIALIZE, SILENT),
    failing=acc("""
        compute_environment: LOCAL_MACHINE
        distributed_type: DEEPSPEED
        num_processes: 8
        deepspeed_config:
          zero_stage: 3
        """, training_args={"output_dir": "out", "fsdp": True}),
    passing=acc("""
        compute_environment: LOCAL_MACHINE
        distributed_type: FSDP
        num_processes: 8
        fsdp_config:
          fsdp_version: 2
        """, training_args={"output_dir": "out", "fsdp": True}),
    fix="Choose one: delete `fsdp` (and `fsdp_config`) or `deepspeed`, and launch with the matching YAML.",
)

TRAINER_FSDP_TRUTHY_STRING = Rule(
    "ACC047", "trainer-fsdp-truthy-string", WARNING,
    summary="A string such as \"false\" where the Trainer tests truthiness; it turns the setting on",
    what="""Reports `cpu_offload`, `xla`, `xla_fsdp_v2` or `xla_fsdp_grad_ckpt` written as a string meaning false
    ("false", "no", "0", ...).""",
    why="""`_process_fsdp_args` reads these with `if fsdp_config.get(...)`, not `str_to_bool`: `"cpu_offload":
    "false"` offloads the parameters to the CPU, `"xla": "false"` takes the TPU path.""",
    fails_in=(SILENT,),
    failing=_args("""
        output_dir: out
        fsdp: true
        fsdp_config:
          cpu_offload: 'false'
        """),
    passing=_args("""
        output_dir: out
        fsdp: true
        fsdp_config:
          cpu_offload: false
        """),
    fix="Write the JSON boolean `false` (or delete the key).",
)

TRAINER_FSDP_XLA = Rule(
    "ACC048", "trainer-fsdp-xla", WARNING,
    summary="XLA FSDP settings: the plugin is not built, or Trainer(...) needs torch_xla",
    what="""Reports `xla` on (the Trainer takes the PyTorch/XLA path and builds no Accelerate FSDP plugin) and
    `xla_fsdp_v2` on without `xla` (the Trainer then requires torch_xla 2.2).""",
    why="""On a GPU machine `xla` leaves every other `fsdp_config` key unused and wraps with torch_xla, which is not
    installed; `xla_fsdp_v2` makes `Trainer(...)` raise "FSDPv2 requires `torch_xla` 2.2 or higher.".""",
    fails_in=(INITIALIZE, SILENT),
    failing=_args("""
        output_dir: out
        fsdp: true
        fsdp_config:
          xla_fsdp_v2: true
        """),
    passing=_args("""
        output_dir: out
        fsdp: true
        fsdp_config: {}
        """),
    fix="Delete the XLA keys on GPU machines; on TPUs set `xla` and the XLA keys together.",
)

TRAINER_FSDP_WARNING = Rule(
    "ACC049", "trainer-fsdp-warning", WARNING,
    summary="A setting the Trainer warns about (deprecated fsdp string, FSDP1) or overrides in the YAML",
    what="""Reports what the Trainer warns about: `fsdp` as a string or list and FSDP1 (both deprecated),
    the `activation_checkpointing` training argument with FSDP (a redundant AllGather), `xla_fsdp_grad_ckpt`
    without `xla`; and, with `--training-args`, each Accelerate YAML `fsdp_config` value the Trainer's own plugin
    arguments replace.""",
    why="""The Trainer builds `FullyShardedDataParallelPlugin(**fsdp_plugin_args)`; the launcher's FSDP_*
    variables only fill what those arguments leave unset, so with `fsdp` in the arguments a YAML
    `fsdp_state_dict_type: SHARDED_STATE_DICT` becomes the Trainer's default FULL_STATE_DICT.""",
    fails_in=(SILENT,),
    failing=_args("""
        output_dir: out
        fsdp: full_shard auto_wrap
        """),
    passing=_args("""
        output_dir: out
        fsdp: true
        fsdp_config:
          reshard_after_forward: true
        """),
    fix="Write `\"fsdp\": true` and the settings in `fsdp_config` (FSDP2); keep FSDP settings in one place.",
)

TRAINER_RELEASE_NOT_REPLAYED = Rule(
    "ACC050", "trainer-release-not-replayed", INFO,
    summary="The project pins a transformers older than the one the Trainer's FSDP checks replay",
    what="""Reports, instead of ACC040-ACC049, a TrainingArguments file setting `fsdp` or `fsdp_config` in a project
    whose pin of transformers (requirements, pyproject.toml, lock files, as for DeepSpeed's pin) allows no 5.x
    release.""",
    why="""dsconfig replays how transformers 5.23 reads these arguments: FSDP2 unless `version: 1`, a `fsdp` string
    deprecated. transformers 4.x reads them otherwise (FSDP1, the string its documented form), so those findings
    would not be about the Trainer the project runs.""",
    fails_in=(SILENT,),
    failing=folder(("requirements.txt", "transformers==4.46.3\naccelerate>=0.34\n"),
                   (ARGS, "output_dir: out\nfsdp: full_shard auto_wrap\n"), lint=(ARGS,)),
    passing=folder(("requirements.txt", "transformers>=4.46.3\naccelerate>=1.0\n"),
                   (ARGS, "output_dir: out\nfsdp: true\n"), lint=(ARGS,)),
    fix="Nothing to change for the pinned release; pin transformers 5 to have these settings checked.",
)

RULES = (TRAINER_FSDP_ERROR, TRAINER_FSDP_IGNORED_KEY, TRAINER_FSDP1_ONLY_KEY, TRAINER_FSDP_CONFIG_UNUSED,
         TRAINER_FSDP_WRAP_SETTING_UNUSED, TRAINER_CHECKPOINTING_CONFLICT, TRAINER_FSDP_WITH_DEEPSPEED,
         TRAINER_FSDP_TRUTHY_STRING, TRAINER_FSDP_XLA, TRAINER_FSDP_WARNING, TRAINER_RELEASE_NOT_REPLAYED)
