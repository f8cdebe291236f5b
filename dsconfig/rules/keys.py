"""DS1xx keys and values: what DeepSpeedConfig accepts, rejects, converts or ignores key by key.

Checked by dsconfig.deepspeed.models (the pydantic sections), dsconfig.deepspeed.loose (the
sections DeepSpeed reads with dict lookups), dsconfig.deepspeed.check (removed blocks) and
dsconfig.deepspeed.step (the values DeepSpeed first computes with in the training step).
"""

from __future__ import annotations

from ..phases import INITIALIZE, LOAD, PARSE, SILENT, STEP
from .rule import INFO, CHANGED_VALUE, CONVERTED_ON_MIGRATION, ERROR, SAFE, UNSAFE, WARNING, Autofix, Rule, ds

REMOVED_KEY = Rule(
    "DS100", "removed-key", ERROR,
    summary="A block or key DeepSpeed 0.19.8 removed; loading the config fails",
    what="""Reports a block or key that DeepSpeed 0.19.8 removed: `amp`, `elasticity`, `sparse_attention`,
    `curriculum_learning`, `progressive_layer_drop`, `eigenvalue`, `sparse_gradients`, `nebula`,
    `compression_training`, `quantize_training`, `graph_harvesting`, and `mics_*` / `zeropp_loco_param` under
    `zero_optimization`.""",
    why="""DeepSpeed refuses the whole config as soon as the key is present, whatever its value (even `{"enabled":
    false}`), with `DeepSpeedConfigError`, e.g. "NVIDIA Apex AMP integration has been removed. Use DeepSpeed
    'fp16', 'bf16', or 'torch_autocast' instead." Old templates still carry these blocks.""",
    fails_in=(LOAD,),
    failing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "amp": {"enabled": true, "opt_level": "O1"},
          "zero_optimization": {"stage": 1}
        }
        """),
    passing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "fp16": {"enabled": true},
          "zero_optimization": {"stage": 1}
        }
        """),
    fix="""Delete the block; DeepSpeed's message names the replacement (`fp16`/`bf16` for `amp`, explicit batch
    sizes for `elasticity`, `data_efficiency` for `curriculum_learning`).""",
)

UNKNOWN_KEY = Rule(
    "DS101", "unknown-key", ERROR,
    summary="Unknown key in a validated section; DeepSpeed rejects it",
    what="""Reports an unknown key in a section DeepSpeed validates with pydantic (`zero_optimization` and its
    offload blocks, `fp16`, `bf16`, `tensorboard`, `wandb`, `compile`, ...), with a did-you-mean.""",
    why="""These sections forbid extra keys: `DeepSpeedConfig` fails with a pydantic `ValidationError` ("Extra
    inputs are not permitted"). DeepSpeed reports only the first such section it meets; dsconfig reports all of
    them.""",
    fails_in=(PARSE,),
    failing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "zero_optimization": {
            "stage": 2,
            "overlap_comm": true,
            "reduce_bucket_sizes": 500000000
          }
        }
        """),
    passing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "zero_optimization": {
            "stage": 2,
            "overlap_comm": true,
            "reduce_bucket_size": 500000000
          }
        }
        """),
    fix="Fix the spelling (the message suggests the closest key) or delete the key.",
    autofix=Autofix(
        UNSAFE,
        "A did-you-mean key rename is a guess, and makes a setting DeepSpeed now rejects take effect.",
    ),
)

IGNORED_KEY = Rule(
    "DS102", "ignored-key", WARNING,
    summary="Unknown key in a section DeepSpeed reads loosely; it is silently ignored",
    what="""Reports an unknown key at the top level or in a section DeepSpeed reads with `dict.get`
    (`activation_checkpointing`, `flops_profiler`, `autotuning`, `checkpoint`, ...), with a did-you-mean.""",
    why="""DeepSpeed never looks at it, so nothing fails and the setting you meant is not applied: with
    `partitioned_activations` instead of `partition_activations` the activations are not partitioned, and the
    memory you planned for is not saved.""",
    fails_in=(SILENT,),
    failing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "activation_checkpointing": {"partitioned_activations": true, "cpu_checkpointing": false}
        }
        """),
    passing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "activation_checkpointing": {"partition_activations": true, "cpu_checkpointing": false}
        }
        """),
    fix="Fix the spelling (the message suggests the closest key) or delete the key.",
    autofix=Autofix(
        UNSAFE,
        "A did-you-mean key rename is a guess, and makes a setting DeepSpeed now ignores take effect.",
    ),
)

INVALID_VALUE = Rule(
    "DS103", "invalid-value", ERROR,
    summary="A value DeepSpeed rejects while parsing the config",
    what="""Reports a value a validated section rejects: the wrong type, a value outside an enum (`device` must be
    `none`, `cpu` or `nvme`, in lower case), a number out of range, a float in an integer field.""",
    why="""`DeepSpeedConfig` fails with pydantic's `ValidationError`, e.g. "Input should be 'none', 'cpu' or
    'nvme'" for `"device": "CPU"`, before the engine is built. DeepSpeed stops at the first invalid section;
    dsconfig reports each one.""",
    fails_in=(PARSE,),
    failing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "AdamW", "params": {"lr": 0.0001}},
          "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "CPU"}}
        }
        """),
    passing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "AdamW", "params": {"lr": 0.0001}},
          "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}
        }
        """),
    fix="Use one of the values the message lists, with the type it asks for.",
    autofix=Autofix(
        SAFE,
        'The value is re-spelled the way DeepSpeed accepts it ("CPU" -> "cpu", "5e8" -> 500000000): the same '
        "value, which DeepSpeed rejects only for its spelling.",
        unless="the fix is a different value (a closest-match guess or a default)",
        demoted_when=CHANGED_VALUE,
    ),
)

DEPRECATED_KEY = Rule(
    "DS104", "deprecated-key", WARNING,
    summary="A deprecated key; DeepSpeed still migrates it, or a later release removed it",
    what="""Reports a deprecated key that DeepSpeed still accepts and migrates to its new name: `cpu_offload`,
    `cpu_offload_param`, `cpu_offload_use_pin_memory`, `stage3_gather_fp16_weights_on_model_save`, ...; and,
    for an older release (`--deepspeed-version`), a block it still reads that a later release removed (`amp`,
    `elasticity`, `progressive_layer_drop`, ...: DS100 from that release on).""",
    why="""DeepSpeed logs a deprecation warning and moves the value to the new key, so the run works today; but
    the old key cannot be combined with the new one (DS105), code that reads the raw file knows only the new name
    (Accelerate's DeepSpeedPlugin looks for `stage3_gather_16bit_weights_on_model_save`), and deprecated keys end
    up removed, which then fails the load (DS100).""",
    fails_in=(SILENT,),
    failing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "zero_optimization": {"stage": 3, "stage3_gather_fp16_weights_on_model_save": true}
        }
        """),
    passing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "zero_optimization": {"stage": 3, "stage3_gather_16bit_weights_on_model_save": true}
        }
        """),
    fix="""Rename the key to the one the message names (`cpu_offload: true` becomes `"offload_optimizer":
    {"device": "cpu"}`).""",
    autofix=Autofix(
        SAFE,
        "The deprecated key is renamed to the key DeepSpeed migrates it to; DeepSpeed reads the value the same "
        "way under either name.",
        unless="DeepSpeed converts the value while migrating it (`cpu_offload: true` becomes a whole "
               "`offload_optimizer` block), or the new key is already present",
        demoted_when=CONVERTED_ON_MIGRATION,
    ),
)

CONFLICTING_KEYS = Rule(
    "DS105", "conflicting-keys", ERROR,
    summary="Two spellings of the same setting are given together",
    what="""Reports two spellings of one setting in the same section: a deprecated key next to its replacement, or
    a field's name next to its alias (`prefetch_bucket_size` and `stage3_prefetch_bucket_size`).""",
    why="""`DeepSpeedConfig` refuses the pair: "Cannot provide deprecated parameter 'X' and replacing parameter
    'Y' together" (AssertionError), or "Extra inputs are not permitted" for the second spelling of an aliased
    field.""",
    fails_in=(PARSE,),
    failing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "zero_optimization": {
            "stage": 3,
            "stage3_gather_fp16_weights_on_model_save": true,
            "stage3_gather_16bit_weights_on_model_save": true
          }
        }
        """),
    passing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "zero_optimization": {
            "stage": 3,
            "stage3_gather_16bit_weights_on_model_save": true
          }
        }
        """),
    fix="Keep the new spelling only.",
)

COERCED_VALUE = Rule(
    "DS106", "coerced-value", WARNING,
    summary="DeepSpeed silently converts this value; write the canonical form",
    what="""Reports a value DeepSpeed's pydantic models silently convert to another type: `"3"` to `3`, `"true"`
    to `true`, `1` to `true`. A whole number written as a float (`1e9` for an integer setting) is DS112
    instead: every reader gets the same number.""",
    why="""DeepSpeed runs as if the canonical value were written, but anything that reads the raw file does not
    convert: the HF Trainer's and Accelerate's `HfDeepSpeedConfig.is_zero3()` compares `zero_optimization.stage ==
    3`, so with `"3"` they do not treat the run as ZeRO-3: no `zero.Init` while the model loads (every process
    loads the full model before DeepSpeed partitions it), and the ZeRO-3 `"auto"` bucket sizes are not filled.""",
    fails_in=(SILENT,),
    failing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "zero_optimization": {"stage": "3"}
        }
        """),
    passing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "zero_optimization": {"stage": 3}
        }
        """),
    fix="Write the value the message shows: numbers and booleans without quotes.",
    autofix=Autofix(
        SAFE,
        'The value is replaced by exactly what DeepSpeed converts it to (500000000.0 -> 500000000, "true" -> '
        "true), so DeepSpeed runs the same; readers that skip the conversion (the HF Trainer compares `stage == "
        "3`) now agree with it.",
    ),
)

INTEGRAL_FLOAT = Rule(
    "DS112", "integral-float", INFO,
    summary="A whole number written as a float where DeepSpeed wants an integer; it converts it exactly",
    what="""Reports an integer setting of DeepSpeed's config models written as a float with no fractional part:
    `"sub_group_size": 1e9`, `"reduce_bucket_size": 5e8`, `"stage": 3.0`.""",
    why="""Nothing goes wrong: pydantic converts `1e9` to `1000000000` and every other reader (the HF Trainer,
    Accelerate) compares the number, not its spelling. (DeepSpeed's own hjson reader already reads `1e9` as an
    integer; the HF Trainer and Accelerate read the file with `json.load`, which gives a float.) The Hugging Face docs write these sizes this way. It is
    reported as information, for those who want integers written as integers (`--fix` rewrites them); it never
    fails a `--fail-on warning` run.""",
    fails_in=(SILENT,),
    failing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "zero_optimization": {
            "sub_group_size": 1e9,
            "stage": 3
          }
        }
        """, target="hf-trainer"),
    passing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "zero_optimization": {
            "sub_group_size": 1000000000,
            "stage": 3
          }
        }
        """, target="hf-trainer"),
    fix="Nothing is needed; to write integers as integers, `dsconfig lint --fix --select DS112`.",
    autofix=Autofix(SAFE, "The float is replaced by the integer DeepSpeed converts it to; the value is the same."),
)

AUTO_IGNORED = Rule(
    "DS107", "auto-ignored", WARNING,
    summary='"auto" that nothing fills for this target; DeepSpeed drops it and uses the default',
    what="""Reports an `"auto"` in a validated section that nobody fills for this target: plain DeepSpeed and
    Lightning never resolve `"auto"`, and the HF Trainer fills only some keys.""",
    why="""DeepSpeed's pydantic sections drop `"auto"` without a warning and use their default, so an HF template
    run with plain `deepspeed.initialize` uses `stage3_prefetch_bucket_size` 50000000 and `reduce_bucket_size`
    500000000, not values sized for the model; nothing fails, memory and speed are not what the file suggests.""",
    fails_in=(SILENT,),
    failing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "zero_optimization": {
            "stage": 3,
            "reduce_bucket_size": "auto",
            "stage3_prefetch_bucket_size": "auto"
          }
        }
        """, target="deepspeed"),
    passing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "zero_optimization": {
            "stage": 3,
            "reduce_bucket_size": 16777216,
            "stage3_prefetch_bucket_size": 15099494
          }
        }
        """, target="deepspeed"),
    fix="""Write concrete values for the model (the HF Trainer fills `reduce_bucket_size` with hidden_size²,
    `stage3_prefetch_bucket_size` with 0.9 × hidden_size² and `stage3_param_persistence_threshold` with 10 ×
    hidden_size: 16777216 and 15099494 for a hidden size of 4096), or delete the key to use DeepSpeed's default
    knowingly.""",
    autofix=Autofix(
        UNSAFE,
        "Writing DeepSpeed's default instead of \"auto\" breaks the file for a target that fills \"auto\".",
    ),
)

STRICT_KEY = Rule(
    "DS108", "strict-key", WARNING,
    summary="A key named `strict` is swallowed by DeepSpeed's config model",
    what="Reports a key named `strict` inside a validated section.",
    why="""It is not a setting: `DeepSpeedConfigModel.__init__(self, strict=False, **data)` takes it as its own
    argument. `"strict": true` also stops the section from dropping `"auto"` values, so an `"auto"` next to it is
    validated as a value and rejected; `false` does nothing at all.""",
    fails_in=(SILENT,),
    failing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "zero_optimization": {"stage": 3, "strict": true}
        }
        """),
    passing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "zero_optimization": {"stage": 3}
        }
        """),
    fix="Delete the key.",
)

WRONG_TYPE = Rule(
    "DS109", "wrong-type", WARNING,
    summary="A value of the wrong type in a section DeepSpeed does not validate",
    what="""Reports a value of the wrong type in a part of the config DeepSpeed reads without validation
    (top-level scalars such as `steps_per_print`, `activation_checkpointing`, `flops_profiler`, ...). A
    `gradient_clipping`, `steps_per_print` or `gradient_predivide_factor` the run fails on is DS111 instead.""",
    why="""`DeepSpeedConfig` accepts anything there and the value does whatever Python makes of it where it is
    used: `"steps_per_print": true` counts as 1, so rank 0 prints a progress report at every step.""",
    fails_in=(SILENT,),
    failing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "steps_per_print": true
        }
        """),
    passing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "steps_per_print": 100
        }
        """),
    fix="Write the value with the type the message names.",
)

PRESENCE_ENABLES = Rule(
    "DS110", "presence-enables", WARNING,
    summary="The mere presence of this block turns the feature on",
    what="""Reports a block whose presence alone turns the feature on, whatever it contains: `comms_logger`,
    `datastates_ckpt`.""",
    why="""DeepSpeed tests only whether the key exists, so `"comms_logger": {"enabled": false}` still enables the
    communication logger, and `"datastates_ckpt": {}` (or `null`, or `{"enabled": false}`) switches checkpointing
    to the DataStates engine. Nothing fails; the run logs or checkpoints differently from what the file says.""",
    fails_in=(SILENT,),
    failing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "comms_logger": {"enabled": false, "verbose": false}
        }
        """),
    passing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4
        }
        """),
    fix="Delete the block to keep the feature off.",
    autofix=Autofix(
        UNSAFE,
        "Disabling a block that its presence turned on changes the run.",
    ),
)

STEP_VALUE = Rule(
    "DS111", "step-value", ERROR,
    summary="gradient_clipping, steps_per_print or gradient_predivide_factor is not a number; training fails on it",
    what="""Reports a `gradient_clipping`, `steps_per_print` or `gradient_predivide_factor` that is not a number (a
    quoted `"1.0"`, null, a list) where the run computes with it. `"auto"` is DS700's, hjson's `.5` and `NaN`
    DS003's.""",
    why="""`DeepSpeedConfig` stores these three unchecked and `deepspeed.initialize` passes them on, so the model
    loads and the job dies in its first training step: `"gradient_clipping": "1.0"` makes the engine evaluate
    `gradient_clipping() > 0.0` and raise `TypeError: '>' not supported between instances of 'str' and 'float'`.
    It fails earlier in two cases: with `compute_grad_norm: false`, ZeRO-1/2's optimizer makes that comparison in
    `deepspeed.initialize`; and the HF Trainer compares `gradient_clipping` with `max_grad_norm`, which a string
    never equals ("Please correct the following DeepSpeed config values that mismatch TrainingArguments values:
    - ds gradient_clipping=1.0 vs hf max_grad_norm=1.0").""",
    fails_in=(INITIALIZE, STEP),
    failing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "gradient_clipping": "1.0",
          "zero_optimization": {"stage": 2}
        }
        """),
    passing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "gradient_clipping": 1.0,
          "zero_optimization": {"stage": 2}
        }
        """),
    fix="""Write a JSON number: `1.0`, not `"1.0"` (`"gradient_clipping": 0` switches clipping off, `"steps_per_print":
    null` the progress report).""",
)

RULES = (
    REMOVED_KEY, UNKNOWN_KEY, IGNORED_KEY, INVALID_VALUE, DEPRECATED_KEY, CONFLICTING_KEYS, COERCED_VALUE,
    INTEGRAL_FLOAT, AUTO_IGNORED, STRICT_KEY, WRONG_TYPE, PRESENCE_ENABLES, STEP_VALUE,
)
