"""Accelerate config files, what loads and what is ignored: top-level keys, sub-dict keys, the values
Accelerate and its plugins check, YAML 1.1 booleans, and the ds_config.json a YAML names.

Checked by dsconfig.accelerate.check, dsconfig.accelerate.launch (the `accelerate launch` replay)
and dsconfig.pairs (the named JSON file).
"""

from __future__ import annotations

from ..phases import INITIALIZE, LAUNCH, LOAD, SILENT
from .rule import ACC_DEEPSPEED, CHANGED_VALUE, ERROR, SAFE, UNSAFE, WARNING, Autofix, Rule, acc

UNKNOWN_TOP_LEVEL_KEY = Rule(
    "ACC001", "unknown-top-level-key", ERROR,
    summary="Unknown top-level key; Accelerate refuses to load the config",
    what="Reports a top-level key Accelerate's config classes do not have, with a did-you-mean.",
    why="""`accelerate launch` refuses to load the file: `ValueError: The config file at accelerate_config.yaml
    had unknown keys (['num_process'])`. Keys of `deepspeed_config` written at the top level are caught here too.""",
    fails_in=(LOAD,),
    failing=acc(ACC_DEEPSPEED + """
        num_process: 8
        mixed_precision: bf16
        """),
    passing=acc(ACC_DEEPSPEED + """
        num_processes: 8
        mixed_precision: bf16
        """),
    fix="Fix the spelling, or move the key into the section it belongs to.",
)

IGNORED_DEEPSPEED_KEY = Rule(
    "ACC002", "ignored-deepspeed-key", WARNING,
    summary="Unknown key under deepspeed_config; Accelerate silently ignores it",
    what="""Reports a key under `deepspeed_config` that is not one of the `accelerate launch` DeepSpeed options
    (`zero_stage`, `offload_optimizer_device`, `gradient_accumulation_steps`, `deepspeed_config_file`, ...),
    typically a ds_config.json key.""",
    why="""`accelerate launch` copies every key onto its arguments and never reads unknown ones: no error, and the
    setting never reaches DeepSpeed. `train_micro_batch_size_per_gpu` written here does nothing (the batch size
    comes from the script).""",
    fails_in=(SILENT,),
    failing=acc(ACC_DEEPSPEED + """
        num_processes: 8
        deepspeed_config:
          zero_stage: 2
          train_micro_batch_size_per_gpu: 4
        """),
    passing=acc(ACC_DEEPSPEED + """
        num_processes: 8
        deepspeed_config:
          zero_stage: 2
        """),
    fix="Fix the spelling, or move ds_config.json keys into a JSON file and name it with `deepspeed_config_file`.",
)

IGNORED_SECTION_KEY = Rule(
    "ACC003", "ignored-section-key", WARNING,
    summary="Unknown key under fsdp_config / dynamo_config / fp8_config / ...; Accelerate silently ignores it",
    what="""Reports a key under `fsdp_config`, `dynamo_config`, `fp8_config`, `megatron_lm_config`,
    `parallelism_config` and the like that names no `accelerate launch` option (after Accelerate's prefixing),
    with a did-you-mean.""",
    why="""As with `deepspeed_config`, Accelerate copies the key and nothing reads it: a misspelt
    `fsdp_sharding_strategy` leaves FSDP at its default strategy without a word.""",
    fails_in=(SILENT,),
    failing=acc("""
        compute_environment: LOCAL_MACHINE
        distributed_type: FSDP
        num_processes: 8
        fsdp_config:
          fsdp_sharding_strategi: FULL_SHARD
        """),
    passing=acc("""
        compute_environment: LOCAL_MACHINE
        distributed_type: FSDP
        num_processes: 8
        fsdp_config:
          fsdp_sharding_strategy: FULL_SHARD
        """),
    fix="Fix the spelling (the message suggests the closest option) or delete the key.",
)

CONFIG_FILE_CONFLICT = Rule(
    "ACC004", "config-file-conflict", ERROR,
    summary="deepspeed_config_file together with keys Accelerate then refuses",
    what="""Reports `deepspeed_config_file` together with keys Accelerate then refuses: `zero_stage`,
    `gradient_accumulation_steps`, `gradient_clipping`, the offload keys, `zero3_save_16bit_model`, and a
    top-level `mixed_precision` (even `'no'`).""",
    why="""Every training process fails when it builds the DeepSpeedPlugin: "When using `deepspeed_config_file`,
    the following accelerate config variables will be ignored: ['gradient_accumulation_steps',
    'gradient_clipping', 'zero_stage', ...]." (ValueError, despite the wording).""",
    fails_in=(INITIALIZE,),
    failing=acc(ACC_DEEPSPEED + """
        num_processes: 8
        deepspeed_config:
          deepspeed_config_file: ds_config.json
          zero_stage: 3
        """, """
        {
          "train_micro_batch_size_per_gpu": "auto",
          "gradient_accumulation_steps": "auto",
          "bf16": {"enabled": true},
          "zero_optimization": {"stage": 3}
        }
        """),
    passing=acc(ACC_DEEPSPEED + """
        num_processes: 8
        deepspeed_config:
          deepspeed_config_file: ds_config.json
          zero3_init_flag: true
        """, """
        {
          "train_micro_batch_size_per_gpu": "auto",
          "gradient_accumulation_steps": "auto",
          "bf16": {"enabled": true},
          "zero_optimization": {"stage": 3}
        }
        """),
    fix="""Keep the setting in the JSON file only; next to `deepspeed_config_file` the YAML may hold
    `zero3_init_flag` and the launcher keys (`deepspeed_hostfile`, `deepspeed_multinode_launcher`, ...). Pass
    mixed precision in the JSON or as `--mixed_precision` on the command line.""",
)

DISTRIBUTED_TYPE = Rule(
    "ACC005", "distributed-type", ERROR,
    summary="distributed_type missing or not a valid value",
    what="""Reports `distributed_type` missing or not a valid DistributedType (`NO`, `MULTI_GPU`, `DEEPSPEED`,
    `FSDP`, ...), or a `compute_environment` that is not LOCAL_MACHINE or AMAZON_SAGEMAKER.""",
    why="""`accelerate launch` fails while loading the file: `ValueError: 'DEEP_SPEED' is not a valid
    DistributedType` (or "A `distributed_type` must be specified").""",
    fails_in=(LOAD, LAUNCH, SILENT),
    failing=acc("""
        compute_environment: LOCAL_MACHINE
        distributed_type: DEEP_SPEED
        num_processes: 8
        """),
    passing=acc("""
        compute_environment: LOCAL_MACHINE
        distributed_type: DEEPSPEED
        num_processes: 8
        """),
    fix="Use a DistributedType name as the message suggests, in upper case.",
    autofix=Autofix(
        SAFE,
        "distributed_type is re-spelled in the case Accelerate's enum requires (\"deepspeed\" -> \"DEEPSPEED\").",
        unless="the fix is a closest-match guess rather than the same word",
        demoted_when=CHANGED_VALUE,
    ),
)

MIXED_PRECISION = Rule(
    "ACC006", "mixed-precision", ERROR,
    summary="mixed_precision not one of no, fp16, bf16, fp8",
    what="Reports `mixed_precision` other than `no`, `fp16`, `bf16` or `fp8`.",
    why="""`accelerate launch` fails before starting any process: `ValueError: Unknown mixed_precision mode:
    bfloat16. Choose between ['no', 'fp8', 'fp16', 'bf16'].`""",
    fails_in=(LAUNCH, SILENT),
    failing=acc(ACC_DEEPSPEED + """
        num_processes: 8
        mixed_precision: bfloat16
        """),
    passing=acc(ACC_DEEPSPEED + """
        num_processes: 8
        mixed_precision: bf16
        """),
    fix="Write `no`, `fp16`, `bf16` or `fp8` (quote `'no'`, see ACC016).",
)

YAML_BOOLEAN = Rule(
    "ACC016", "yaml-boolean", ERROR,
    summary="An unquoted YAML 1.1 boolean (no, off, yes) where Accelerate expects text",
    what="""Reports an unquoted `no`, `off`, `yes` or `on` where Accelerate expects text (`mixed_precision`,
    `distributed_type`, `dynamo_backend`, `gpu_ids`, ...).""",
    why="""YAML 1.1, which `yaml.safe_load` implements, reads them as booleans: `mixed_precision: no` becomes
    `False` and `accelerate launch` fails with `AttributeError: 'bool' object has no attribute 'lower'`;
    `distributed_type: NO` becomes `False`, not the single-process type.""",
    fails_in=(LAUNCH, SILENT),
    failing=acc("""
        compute_environment: LOCAL_MACHINE
        distributed_type: MULTI_GPU
        num_processes: 8
        mixed_precision: no
        """),
    passing=acc("""
        compute_environment: LOCAL_MACHINE
        distributed_type: MULTI_GPU
        num_processes: 8
        mixed_precision: 'no'
        """),
    fix="Quote the value: `'no'`, `'NO'`.",
    autofix=Autofix(
        SAFE,
        "The word the author wrote (`no`, `NO`, `off`) is quoted, so yaml.safe_load reads it as that text "
        "instead of a YAML 1.1 boolean.",
    ),
)

INVALID_SETTING = Rule(
    "ACC019", "invalid-setting", ERROR,
    summary="A value of the wrong type or outside its allowed choices",
    what="""Reports a value of the wrong type or outside its allowed choices, as the launcher or the
    DeepSpeedPlugin parses it: `zero_stage: three`, an offload device `gpu`, a port that is not a number, a
    missing required key.""",
    why="""Depending on who reads it, `accelerate launch` fails while loading or launching, or every training
    process fails when it builds the plugin: `zero_stage` is read with `int("three")`.""",
    fails_in=(LOAD, LAUNCH, INITIALIZE, SILENT),
    failing=acc(ACC_DEEPSPEED + """
        num_processes: 8
        deepspeed_config:
          zero_stage: three
        """),
    passing=acc(ACC_DEEPSPEED + """
        num_processes: 8
        deepspeed_config:
          zero_stage: 3
        """),
    fix="Use a value of the type and range the message names.",
    autofix=Autofix(
        UNSAFE,
        "The replacement is a closest-match guess or a default.",
    ),
)

CONFIG_FILE_MISSING = Rule(
    "ACC020", "config-file-missing", ERROR,
    summary="deepspeed_config_file points to a file that does not exist, or is not JSON",
    what="""Reports a `deepspeed_config_file` that exists neither relative to the working directory nor next to
    the YAML, and one that is not JSON: a YAML file, the Accelerate YAML itself, a FIFO, socket or device, or a
    file under /proc, /sys or /dev (which dsconfig never opens).""",
    why="""Every training process fails in the DeepSpeedPlugin: `ValueError: Expected a string path to an existing
    deepspeed config, or a dictionary, or a base64 encoded string. Received: configs/ds_config.json`. The path is
    opened relative to the directory `accelerate launch` runs in. A file that exists is read with `json.load`
    whatever its name, so a YAML fails with `JSONDecodeError: Expecting value: line 1 column 1 (char 0)`.""",
    fails_in=(INITIALIZE,),
    failing=acc(ACC_DEEPSPEED + """
        num_processes: 8
        deepspeed_config:
          deepspeed_config_file: configs/ds_config.json
        """),
    passing=acc(ACC_DEEPSPEED + """
        num_processes: 8
        deepspeed_config:
          deepspeed_config_file: ds_config.json
        """, """
        {
          "train_micro_batch_size_per_gpu": "auto",
          "gradient_accumulation_steps": "auto",
          "zero_optimization": {"stage": 2}
        }
        """),
    fix="Fix the path; relative paths are best written relative to where `accelerate launch` runs.",
)

RULES = (
    UNKNOWN_TOP_LEVEL_KEY, IGNORED_DEEPSPEED_KEY, IGNORED_SECTION_KEY, CONFIG_FILE_CONFLICT, DISTRIBUTED_TYPE,
    MIXED_PRECISION, YAML_BOOLEAN, INVALID_SETTING, CONFIG_FILE_MISSING,
)
