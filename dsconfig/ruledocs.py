"""The documentation of every rule: what it checks, why it matters, an example, what to write instead, the fix.

`dsconfig rule CODE`, docs/rules.md (scripts/gen_rule_docs.py) and SARIF's rule descriptions all read
it from here, through `dsconfig.rules.RULES[code].docs`. The examples are real files (JSON for the
DeepSpeed rules, YAML for the Accelerate ones, more than one where the rule needs it) together with
the lint options they need; tests/test_rule_docs.py lints each one: the failing example must report
its rule and the passing example must not. `dsconfig rule` shows what `dsconfig lint` reports on the
failing example (lint_example runs the command in a temporary folder).

Writing a rule's docs:
  * `what`: what dsconfig checks, in one or two sentences.
  * `why`: the failure the user would otherwise hit, with DeepSpeed's / Accelerate's / the Trainer's
    own message where there is one, and when it happens (`fails_in`, as in the JSON output: load,
    parse, initialize, launch, or None when nothing fails and the setting is silently wrong).
  * `failing` / `passing`: the smallest realistic config showing the problem, and the same config fixed.
  * `fix`: what to change.
"""

from __future__ import annotations

import json
import os
import tempfile
import textwrap
from typing import NamedTuple

from .findings import INITIALIZE, LAUNCH, LOAD, PARSE

SILENT = None  # fails_in for settings nothing rejects: the run goes on, not as written


class Example(NamedTuple):
    """Config files as they would sit in one folder, and the `dsconfig lint` invocation for them."""

    files: tuple[tuple[str, str], ...]  # (relative path, text), shown in this order
    lint: tuple[str, ...]  # the paths given to `dsconfig lint`
    options: dict  # dsconfig.engine.Options fields: target, world_sizes, gpus, nodes, training_args, dataset_size
    note: str = ""

    def engine_options(self):
        from .engine import Options
        return Options(**self.options)

    def command(self) -> str:
        """The command line that reproduces the example (training_args are shown as training_args.json)."""
        words = ["dsconfig", "lint", *self.lint]
        options = self.options
        if options.get("target"):
            words += ["--target", options["target"]]
        if options.get("gpus"):
            words += ["--gpus", str(options["gpus"])]
            if options.get("nodes"):
                words += ["--nodes", str(options["nodes"])]
        elif options.get("world_sizes"):
            words += ["--world-size", ",".join(str(size) for size in options["world_sizes"])]
        if options.get("training_args") is not None:
            words += ["--training-args", TRAINING_ARGS_FILE]
        if options.get("dataset_size"):
            words += ["--dataset-size", str(options["dataset_size"])]
        if options.get("max_bytes"):
            words += ["--max-file-size", str(options["max_bytes"])]
        return " ".join(words)

    def shown_files(self) -> list[tuple[str, str]]:
        """Every file the command needs, the training arguments included."""
        files = list(self.files)
        if self.options.get("training_args") is not None:
            files.append((TRAINING_ARGS_FILE, json.dumps(self.options["training_args"], indent=2) + "\n"))
        return files


class RuleDoc(NamedTuple):
    what: str
    why: str
    fails_in: tuple  # the phases a finding of this rule can name (LOAD, PARSE, INITIALIZE, LAUNCH, SILENT)
    failing: Example
    passing: Example
    fix: str


TRAINING_ARGS_FILE = "training_args.json"
_DEFAULT_JSON = "ds_config.json"
_DEFAULT_YAML = "accelerate_config.yaml"


def _text(text: str) -> str:
    """Dedent the indented lines (an unindented header, such as _ACC_DS, may come first)."""
    lines = text.strip("\n").split("\n")
    indents = [len(line) - len(line.lstrip(" ")) for line in lines if line.strip() and line.startswith(" ")]
    cut = min(indents, default=0)
    return "\n".join(line[cut:] if line.startswith(" " * cut) else line for line in lines) + "\n"


def _ds(text: str, *, name: str = _DEFAULT_JSON, note: str = "", **options) -> Example:
    """One DeepSpeed config file."""
    return Example(((name, _text(text)),), (name,), options, note)


def _acc(text: str, ds_config: str | None = None, *, note: str = "", **options) -> Example:
    """An Accelerate YAML, and the ds_config.json it names when there is one (linted through the YAML)."""
    files = ((_DEFAULT_YAML, _text(text)),)
    if ds_config is not None:
        files += ((_DEFAULT_JSON, _text(ds_config)),)
    return Example(files, (_DEFAULT_YAML,), options, note)


def _files(*files: tuple[str, str], lint: tuple[str, ...], note: str = "", **options) -> Example:
    return Example(tuple((name, _text(text)) for name, text in files), lint, options, note)


def _prose(text: str) -> str:
    return " ".join(text.split())


DOCS: dict[str, RuleDoc] = {}


def _doc(code: str, *, what: str, why: str, fails_in: tuple, failing: Example, passing: Example, fix: str):
    assert code not in DOCS, code
    DOCS[code] = RuleDoc(_prose(what), _prose(why), tuple(fails_in), failing, passing, _prose(fix))


# =============================================================================================
# DS0xx file and syntax
# =============================================================================================

_doc(
    "DS000",
    what="""Reads the file with the loader the target uses: DeepSpeed's hjson for `--target deepspeed`,
    `json.load` for the HF Trainer, Accelerate and Lightning, `yaml.safe_load` for an Accelerate YAML, and reports
    where it fails.""",
    why="""A config that does not load stops the run before anything else: the HF Trainer and Accelerate raise
    `json.decoder.JSONDecodeError` (a trailing comma gives "Expecting property name enclosed in double quotes"),
    DeepSpeed raises `hjson.HjsonDecodeError`. hjson is the more lenient of the two, so a file that works with
    `deepspeed.initialize` can still fail under the Trainer. Everything else in the file is checked on what the
    other loader reads, if it reads anything.""",
    fails_in=(LOAD,),
    failing=_ds("""
        {
          "train_micro_batch_size_per_gpu": "auto",
          "gradient_accumulation_steps": "auto",
          "zero_optimization": {"stage": 2},
        }
        """, target="hf-trainer"),
    passing=_ds("""
        {
          "train_micro_batch_size_per_gpu": "auto",
          "gradient_accumulation_steps": "auto",
          "zero_optimization": {"stage": 2}
        }
        """, target="hf-trainer"),
    fix="""Write strict JSON: no trailing commas, no comments, every key and string in double quotes. `python -m
    json.tool ds_config.json` shows the error the Trainer would raise.""",
)

_doc(
    "DS001",
    what="Reports a key written twice in the same object, at any depth.",
    why="""DeepSpeed's own loader rejects the file with `ValueError: Duplicate keys in DeepSpeed config:
    ['zero_optimization']`. `json.load` (HF Trainer, Accelerate, Lightning) and `yaml.safe_load` raise nothing and
    keep the last value, so the first block, often the one you just edited, is silently ignored.""",
    fails_in=(LOAD, SILENT),
    failing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "zero_optimization": {"stage": 3, "overlap_comm": true},
          "bf16": {"enabled": true},
          "zero_optimization": {"stage": 2}
        }
        """),
    passing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "zero_optimization": {"stage": 3, "overlap_comm": true},
          "bf16": {"enabled": true}
        }
        """),
    fix="Merge the two objects under one key, or delete the stale copy.",
)

_doc(
    "DS002",
    what="""Reports syntax only hjson accepts: comments, trailing commas, unquoted keys, single-quoted or
    quoteless strings, `'''` multiline strings, members without separating commas, a top level without braces.
    Reported when the target is plain DeepSpeed; under the other targets the file fails to load (DS000).""",
    why="""`deepspeed.initialize(config="ds_config.json")` reads the file with hjson and accepts all of this, so
    the config works until the same file is handed to the HF Trainer (`--deepspeed ds_config.json`), Accelerate
    (`deepspeed_config_file`) or Lightning, which read it with `json.load` and fail with `JSONDecodeError` before
    training starts.""",
    fails_in=(SILENT,),
    failing=_ds("""
        {
          // ZeRO-2 on one 8-GPU node
          "train_micro_batch_size_per_gpu": 4,
          "zero_optimization": {"stage": 2}
        }
        """),
    passing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "zero_optimization": {"stage": 2}
        }
        """),
    fix="Write strict JSON. JSON has no comments: keep notes in a README next to the file.",
)

_doc(
    "DS003",
    what="""Reports unquoted values that look like numbers but that hjson reads as strings: `+5`, `.5`, `1_000`,
    `007`, `NaN`, `Infinity`.""",
    why="""DeepSpeed's hjson loader turns `"gradient_clipping": .5` into the string ".5" without a word, and the
    string travels on until something computes with it: here the engine's `gradient_clipping() > 0.0` raises
    `TypeError: '>' not supported between instances of 'str' and 'float'` at the first optimizer step, long after
    the model has loaded. `json.load` rejects these spellings outright.""",
    fails_in=(SILENT,),
    failing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "gradient_clipping": .5,
          "zero_optimization": {"stage": 2}
        }
        """),
    passing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "gradient_clipping": 0.5,
          "zero_optimization": {"stage": 2}
        }
        """),
    fix="Write plain JSON numbers: `0.5`, `5`, `1000`, `7`.",
)

_doc(
    "DS004",
    what="Reports a file recognised as a DeepSpeed config whose top level is not a JSON object.",
    why="""DeepSpeed reads every setting with `dict` operations on the top level, so an array, a string or a
    number fails before a single setting is read; the HF Trainer and Accelerate fail the same way.""",
    fails_in=(LOAD,),
    failing=_ds("""
        [
          {"train_micro_batch_size_per_gpu": 4, "zero_optimization": {"stage": 2}}
        ]
        """),
    passing=_ds("""
        {"train_micro_batch_size_per_gpu": 4, "zero_optimization": {"stage": 2}}
        """),
    fix="Make the file one JSON object holding the settings (one config per file).",
)

_doc(
    "DS005",
    what="""Notes a JSON or YAML file that is neither a DeepSpeed nor an Accelerate config (package.json,
    tokenizer files, TrainingArguments files, ...). It is skipped; only DS006 still applies to it.""",
    why="""Linting a whole repository must not drown real findings in noise about files that are not configs. The
    note says which files were skipped, so a config dsconfig failed to recognise does not go unnoticed: a
    DeepSpeed config is recognised by its keys (`train_batch_size`, `zero_optimization`, `fp16` as an object,
    ...), an Accelerate config by `distributed_type` or `compute_environment`.""",
    fails_in=(SILENT,),
    failing=_ds("""
        {"name": "trainer", "version": "1.0.0", "private": true}
        """, name="package.json"),
    passing=_ds("""
        {"train_micro_batch_size_per_gpu": 4, "zero_optimization": {"stage": 2}}
        """),
    fix="""Nothing to fix for files that are not configs. A DeepSpeed config that is skipped lacks the keys that
    identify one: add its batch size (`train_micro_batch_size_per_gpu`), which DeepSpeed requires anyway (DS200).""",
)

_doc(
    "DS006",
    what="""Reports, in a JSON file that is not a DeepSpeed config, a batch-size key (`batch_size`,
    `*_batch_size`) holding something other than a positive integer.""",
    why="""Training scripts hand such values straight to `torch.utils.data.DataLoader`, which raises `ValueError:
    batch_size should be a positive integer value, but got batch_size=7.0` when the script builds its data loader.""",
    fails_in=(SILENT,),
    failing=_ds("""
        {"train": {"batch_size": 7.0, "epochs": 3}, "eval": {"batch_size": 16}}
        """, name="train.json"),
    passing=_ds("""
        {"train": {"batch_size": 7, "epochs": 3}, "eval": {"batch_size": 16}}
        """, name="train.json"),
    fix="""Write the batch size as a positive integer literal: `7`, not `7.0` or `"7"`.""",
)

_doc(
    "DS007",
    what="""Reports a file named like a DeepSpeed or Accelerate config (`ds_config*.json`,
    `accelerate_config.yaml`, ...) that is larger than any config: more than 256 KiB, or what `--max-file-size`
    says. dsconfig stops reading it there and does not lint it. Larger files not named like configs are
    skipped with a DS005 note instead.""",
    why="""Real configs are a few kilobytes. A file of megabytes under a config's name is a dataset, a log or a
    mistake, and reading all of it (200 MB, `/dev/zero`, a pipe that never ends) would cost time and memory
    that no verdict is worth, so dsconfig says so at once instead of passing the file as if it had been
    checked.""",
    fails_in=(SILENT,),
    failing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "gradient_accumulation_steps": 8,
          "comment": "linted with --max-file-size 100, this file is larger than that"
        }
        """, max_bytes=100),
    passing=_ds("""
        {"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 8}
        """, max_bytes=100),
    fix="""Give dsconfig the real config file. If a config truly is larger, raise the limit with
    `--max-file-size 4MB`.""",
)

# =============================================================================================
# DS1xx keys and values
# =============================================================================================

_doc(
    "DS100",
    what="""Reports a block or key that DeepSpeed 0.19.8 removed: `amp`, `elasticity`, `sparse_attention`,
    `curriculum_learning`, `progressive_layer_drop`, `eigenvalue`, `sparse_gradients`, `nebula`,
    `compression_training`, `quantize_training`, `graph_harvesting`, and `mics_*` / `zeropp_loco_param` under
    `zero_optimization`.""",
    why="""DeepSpeed refuses the whole config as soon as the key is present, whatever its value (even `{"enabled":
    false}`), with `DeepSpeedConfigError`, e.g. "NVIDIA Apex AMP integration has been removed. Use DeepSpeed
    'fp16', 'bf16', or 'torch_autocast' instead." Old templates still carry these blocks.""",
    fails_in=(LOAD,),
    failing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "amp": {"enabled": true, "opt_level": "O1"},
          "zero_optimization": {"stage": 1}
        }
        """),
    passing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "fp16": {"enabled": true},
          "zero_optimization": {"stage": 1}
        }
        """),
    fix="""Delete the block; DeepSpeed's message names the replacement (`fp16`/`bf16` for `amp`, explicit batch
    sizes for `elasticity`, `data_efficiency` for `curriculum_learning`).""",
)

_doc(
    "DS101",
    what="""Reports an unknown key in a section DeepSpeed validates with pydantic (`zero_optimization` and its
    offload blocks, `fp16`, `bf16`, `tensorboard`, `wandb`, `compile`, ...), with a did-you-mean.""",
    why="""These sections forbid extra keys: `DeepSpeedConfig` fails with a pydantic `ValidationError` ("Extra
    inputs are not permitted"). DeepSpeed reports only the first such section it meets; dsconfig reports all of
    them.""",
    fails_in=(PARSE,),
    failing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "zero_optimization": {
            "stage": 2,
            "overlap_comm": true,
            "reduce_bucket_sizes": 500000000
          }
        }
        """),
    passing=_ds("""
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
)

_doc(
    "DS102",
    what="""Reports an unknown key at the top level or in a section DeepSpeed reads with `dict.get`
    (`activation_checkpointing`, `flops_profiler`, `autotuning`, `checkpoint`, ...), with a did-you-mean.""",
    why="""DeepSpeed never looks at it, so nothing fails and the setting you meant is not applied: with
    `partitioned_activations` instead of `partition_activations` the activations are not partitioned, and the
    memory you planned for is not saved.""",
    fails_in=(SILENT,),
    failing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "activation_checkpointing": {"partitioned_activations": true, "cpu_checkpointing": false}
        }
        """),
    passing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "activation_checkpointing": {"partition_activations": true, "cpu_checkpointing": false}
        }
        """),
    fix="Fix the spelling (the message suggests the closest key) or delete the key.",
)

_doc(
    "DS103",
    what="""Reports a value a validated section rejects: the wrong type, a value outside an enum (`device` must be
    `none`, `cpu` or `nvme`, in lower case), a number out of range, a float in an integer field.""",
    why="""`DeepSpeedConfig` fails with pydantic's `ValidationError`, e.g. "Input should be 'none', 'cpu' or
    'nvme'" for `"device": "CPU"`, before the engine is built. DeepSpeed stops at the first invalid section;
    dsconfig reports each one.""",
    fails_in=(PARSE,),
    failing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "AdamW", "params": {"lr": 0.0001}},
          "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "CPU"}}
        }
        """),
    passing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "AdamW", "params": {"lr": 0.0001}},
          "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}
        }
        """),
    fix="Use one of the values the message lists, with the type it asks for.",
)

_doc(
    "DS104",
    what="""Reports a deprecated key that DeepSpeed still accepts and migrates to its new name: `cpu_offload`,
    `cpu_offload_param`, `cpu_offload_use_pin_memory`, `stage3_gather_fp16_weights_on_model_save`, ...""",
    why="""DeepSpeed logs a deprecation warning and moves the value to the new key, so the run works today; but
    the old key cannot be combined with the new one (DS105), code that reads the raw file knows only the new name
    (Accelerate's DeepSpeedPlugin looks for `stage3_gather_16bit_weights_on_model_save`), and deprecated keys end
    up removed, which then fails the load (DS100).""",
    fails_in=(SILENT,),
    failing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "zero_optimization": {"stage": 3, "stage3_gather_fp16_weights_on_model_save": true}
        }
        """),
    passing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "zero_optimization": {"stage": 3, "stage3_gather_16bit_weights_on_model_save": true}
        }
        """),
    fix="""Rename the key to the one the message names (`cpu_offload: true` becomes `"offload_optimizer":
    {"device": "cpu"}`).""",
)

_doc(
    "DS105",
    what="""Reports two spellings of one setting in the same section: a deprecated key next to its replacement, or
    a field's name next to its alias (`prefetch_bucket_size` and `stage3_prefetch_bucket_size`).""",
    why="""`DeepSpeedConfig` refuses the pair: "Cannot provide deprecated parameter 'X' and replacing parameter
    'Y' together" (AssertionError), or "Extra inputs are not permitted" for the second spelling of an aliased
    field.""",
    fails_in=(PARSE,),
    failing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "zero_optimization": {
            "stage": 3,
            "stage3_gather_fp16_weights_on_model_save": true,
            "stage3_gather_16bit_weights_on_model_save": true
          }
        }
        """),
    passing=_ds("""
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

_doc(
    "DS106",
    what="""Reports a value DeepSpeed's pydantic models silently convert to another type: `"3"` to `3`, `"true"`
    to `true`, `1` to `true`.""",
    why="""DeepSpeed runs as if the canonical value were written, but anything that reads the raw file does not
    convert: the HF Trainer's and Accelerate's `HfDeepSpeedConfig.is_zero3()` compares `zero_optimization.stage ==
    3`, so with `"3"` they do not treat the run as ZeRO-3: no `zero.Init` while the model loads (every process
    loads the full model before DeepSpeed partitions it), and the ZeRO-3 `"auto"` bucket sizes are not filled.""",
    fails_in=(SILENT,),
    failing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "zero_optimization": {"stage": "3"}
        }
        """),
    passing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "zero_optimization": {"stage": 3}
        }
        """),
    fix="Write the value the message shows: numbers and booleans without quotes.",
)

_doc(
    "DS107",
    what="""Reports an `"auto"` in a validated section that nobody fills for this target: plain DeepSpeed and
    Lightning never resolve `"auto"`, and the HF Trainer fills only some keys.""",
    why="""DeepSpeed's pydantic sections drop `"auto"` without a warning and use their default, so an HF template
    run with plain `deepspeed.initialize` uses `stage3_prefetch_bucket_size` 50000000 and `reduce_bucket_size`
    500000000, not values sized for the model; nothing fails, memory and speed are not what the file suggests.""",
    fails_in=(SILENT,),
    failing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "zero_optimization": {
            "stage": 3,
            "reduce_bucket_size": "auto",
            "stage3_prefetch_bucket_size": "auto"
          }
        }
        """, target="deepspeed"),
    passing=_ds("""
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
)

_doc(
    "DS108",
    what="Reports a key named `strict` inside a validated section.",
    why="""It is not a setting: `DeepSpeedConfigModel.__init__(self, strict=False, **data)` takes it as its own
    argument. `"strict": true` also stops the section from dropping `"auto"` values, so an `"auto"` next to it is
    validated as a value and rejected; `false` does nothing at all.""",
    fails_in=(SILENT,),
    failing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "zero_optimization": {"stage": 3, "strict": true}
        }
        """),
    passing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "zero_optimization": {"stage": 3}
        }
        """),
    fix="Delete the key.",
)

_doc(
    "DS109",
    what="""Reports a value of the wrong type in a part of the config DeepSpeed reads without validation
    (top-level scalars such as `steps_per_print`, `activation_checkpointing`, `flops_profiler`, ...).""",
    why="""`DeepSpeedConfig` accepts anything there and the value fails where it is used, usually after the model
    has loaded: `"steps_per_print": "100"` makes the engine evaluate `(global_steps + 1) % "100"` on rank 0 and
    raise `TypeError` at the first optimizer step.""",
    fails_in=(SILENT,),
    failing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "steps_per_print": "100"
        }
        """),
    passing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "steps_per_print": 100
        }
        """),
    fix="Write the value with the type the message names.",
)

_doc(
    "DS110",
    what="""Reports a block whose presence alone turns the feature on, whatever it contains: `comms_logger`,
    `datastates_ckpt`.""",
    why="""DeepSpeed tests only whether the key exists, so `"comms_logger": {"enabled": false}` still enables the
    communication logger, and `"datastates_ckpt": {}` (or `null`, or `{"enabled": false}`) switches checkpointing
    to the DataStates engine. Nothing fails; the run logs or checkpoints differently from what the file says.""",
    fails_in=(SILENT,),
    failing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "comms_logger": {"enabled": false, "verbose": false}
        }
        """),
    passing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4
        }
        """),
    fix="Delete the block to keep the feature off.",
)

# =============================================================================================
# DS2xx batch arithmetic
# =============================================================================================

_doc(
    "DS200",
    what="Reports a config that gives neither `train_batch_size` nor `train_micro_batch_size_per_gpu`.",
    why="""`DeepSpeedConfig` fails with `AssertionError: Either train_batch_size or train_micro_batch_size_per_gpu
    needs to be provided` (gradient_accumulation_steps alone is not enough).""",
    fails_in=(PARSE,),
    failing=_ds("""
        {
          "gradient_accumulation_steps": 4,
          "zero_optimization": {"stage": 2}
        }
        """),
    passing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "gradient_accumulation_steps": 4,
          "zero_optimization": {"stage": 2}
        }
        """),
    fix="""Add `train_micro_batch_size_per_gpu`; DeepSpeed derives `train_batch_size` from it, the accumulation
    steps and the world size. Under the HF Trainer write `"auto"`.""",
)

_doc(
    "DS201",
    what="""Reports a batch size (`train_batch_size`, `train_micro_batch_size_per_gpu`,
    `gradient_accumulation_steps`) that is not a positive integer: a string, a float (even `8.0`), a boolean, zero
    or a negative number.""",
    why="""A string fails inside `DeepSpeedConfig` with a `TypeError` while it resolves the batch sizes. A float
    is subtler: DeepSpeed's hjson loader reads `16.0` as `16`, but the HF Trainer and Accelerate read the file
    with `json.load`, keep `16.0`, and the data loader raises `ValueError: batch_size should be a positive integer
    value, but got batch_size=16.0`.""",
    fails_in=(PARSE, SILENT),
    failing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 16.0,
          "gradient_accumulation_steps": "auto",
          "zero_optimization": {"stage": 2}
        }
        """, target="hf-trainer"),
    passing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 16,
          "gradient_accumulation_steps": "auto",
          "zero_optimization": {"stage": 2}
        }
        """, target="hf-trainer"),
    fix="""Write a positive integer literal (`16`, not `16.0` or `"16"`), or `"auto"` under the HF Trainer.""",
)

_doc(
    "DS202",
    what="""At each world size given (`--world-size`, or `--gpus`/`--nodes`), replays DeepSpeed's batch derivation
    (its floor divisions and its assertions, in its order) and reports a mismatch with the corrected values.""",
    why="""`DeepSpeedConfig` asserts `train_batch_size == train_micro_batch_size_per_gpu ×
    gradient_accumulation_steps × world_size` and fails with "Check batch related parameters. train_batch_size is
    not equal to micro_batch_per_gpu * gradient_acc_step * world_size 64 != 8 * 2 * 8" when the file was written
    for another GPU count: the job dies at startup on every rank, after the scheduler gave it the GPUs.""",
    fails_in=(PARSE,),
    failing=_ds("""
        {
          "train_batch_size": 64,
          "train_micro_batch_size_per_gpu": 8,
          "gradient_accumulation_steps": 2,
          "zero_optimization": {"stage": 2}
        }
        """, world_sizes=(8,)),
    passing=_ds("""
        {
          "train_batch_size": 128,
          "train_micro_batch_size_per_gpu": 8,
          "gradient_accumulation_steps": 2,
          "zero_optimization": {"stage": 2}
        }
        """, world_sizes=(8,)),
    fix="""Apply one of the corrections in the message, or give only `train_micro_batch_size_per_gpu` and
    `gradient_accumulation_steps` and let DeepSpeed derive `train_batch_size` for whatever GPU count runs the job
    (`"auto"` under the HF Trainer).""",
)

_doc(
    "DS203",
    what="""Without a world size, reports batch keys that no world size at all satisfies in DeepSpeed's arithmetic
    (`train_batch_size` is not a multiple of micro batch × accumulation steps).""",
    why="""`DeepSpeedConfig` fails with "Check batch related parameters" (or "... has to be greater than 0")
    whatever the number of GPUs, so the config cannot work anywhere.""",
    fails_in=(PARSE,),
    failing=_ds("""
        {
          "train_batch_size": 60,
          "train_micro_batch_size_per_gpu": 8,
          "zero_optimization": {"stage": 2}
        }
        """),
    passing=_ds("""
        {
          "train_batch_size": 64,
          "train_micro_batch_size_per_gpu": 8,
          "zero_optimization": {"stage": 2}
        }
        """),
    fix="Set `train_batch_size` to a multiple of micro batch × accumulation steps (the message suggests one).",
)

_doc(
    "DS204",
    what="""Without a world size, notes batch keys that work only at some world sizes (typically
    `train_batch_size` with only one of the other two), and lists those sizes.""",
    why="""Such a config is tied to GPU counts: it passes on 8 GPUs but fails on 6 ("Check batch related
    parameters") and on 16 ("Gradient accumulation steps: 0 has to be greater than 0"), e.g. when the job is
    scaled out. Pass `--world-size` to have it checked at the count you launch (DS202).""",
    fails_in=(SILENT,),
    failing=_ds("""
        {
          "train_batch_size": 64,
          "train_micro_batch_size_per_gpu": 8,
          "zero_optimization": {"stage": 2}
        }
        """),
    passing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 8,
          "gradient_accumulation_steps": 1,
          "zero_optimization": {"stage": 2}
        }
        """),
    fix="""Nothing is wrong at the listed world sizes. To make the config work at any GPU count, give the micro
    batch and the accumulation steps instead of `train_batch_size`.""",
)

_doc(
    "DS205",
    what="""Notes a micro batch of 1 per GPU: written as `train_micro_batch_size_per_gpu: 1`, or derived from
    `train_batch_size` at a world size.""",
    why="""Fine for transformers, but a model with BatchNorm layers fails in its first training step with
    `ValueError: Expected more than 1 value per channel when training`, and gradient statistics over one sample
    are noisy.""",
    fails_in=(SILENT,),
    failing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 1,
          "gradient_accumulation_steps": 8,
          "zero_optimization": {"stage": 2}
        }
        """),
    passing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 2,
          "gradient_accumulation_steps": 4,
          "zero_optimization": {"stage": 2}
        }
        """),
    fix="""Nothing to fix for models without BatchNorm. Otherwise use a micro batch of at least 2 (and fewer
    accumulation steps to keep the global batch).""",
)

_doc(
    "DS206",
    what="""Reports `sequence_parallel_size` at a world size it does not divide. DeepSpeed divides the world size
    by it with true division, so its data-parallel size becomes a float.""",
    why="""With 8 GPUs and `sequence_parallel_size` 3 DeepSpeed computes a data-parallel size of 2.67: the batch
    assertion "Check batch related parameters" fails when the keys are given in full, and otherwise the derived
    batch sizes are fractions.""",
    fails_in=(PARSE, INITIALIZE),
    failing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "sequence_parallel_size": 3,
          "zero_optimization": {"stage": 2}
        }
        """, world_sizes=(8,)),
    passing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "sequence_parallel_size": 4,
          "zero_optimization": {"stage": 2}
        }
        """, world_sizes=(8,)),
    fix="Choose a `sequence_parallel_size` that divides the number of GPUs (1, 2, 4 or 8 on 8 GPUs).",
)

# =============================================================================================
# DS3xx ZeRO and offload
# =============================================================================================

_doc(
    "DS300",
    what="Reports `zero_optimization` written as a boolean, DeepSpeed's legacy format.",
    why="""DeepSpeed still reads `true` as stage 1 and `false` as stage 0, not the stage 2 or 3 a reader may
    assume, and the HF Trainer and Accelerate, which look up `zero_optimization.stage` and the offload devices
    with `.get()`, fail on a boolean section with `AttributeError: 'bool' object has no attribute 'get'` (DS605).""",
    fails_in=(SILENT,),
    failing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "zero_optimization": true
        }
        """),
    passing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "zero_optimization": {"stage": 1}
        }
        """),
    fix="""Write an object with the stage you want: `{"stage": 1}` is what `true` meant.""",
)

_doc(
    "DS301",
    what="""Reports offload settings the configured ZeRO stage ignores or changes: `offload_param` below stage 3,
    NVMe optimizer offload at stages 1-2, any optimizer offload at stage 0.""",
    why="""Nothing fails, but not as written: below stage 3 the parameters stay on the GPU (the memory you counted
    on is not freed, and the job may run out of memory); at stages 1-2 `"device": "nvme"` silently offloads to CPU
    RAM instead; at stage 0 DeepSpeed still builds its CPU optimizer while the parameters stay on the GPU, and the
    first step fails with "CPUAdam param is on cuda:0 and must be 'cpu'".""",
    fails_in=(SILENT,),
    failing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "AdamW", "params": {"lr": 0.0001}},
          "zero_optimization": {
            "stage": 2,
            "offload_optimizer": {"device": "cpu"},
            "offload_param": {"device": "cpu"}
          }
        }
        """),
    passing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "AdamW", "params": {"lr": 0.0001}},
          "zero_optimization": {
            "stage": 3,
            "offload_optimizer": {"device": "cpu"},
            "offload_param": {"device": "cpu"}
          }
        }
        """),
    fix="Raise the stage to the one the offload needs (3 for parameters and NVMe), or remove the offload block.",
)

_doc(
    "DS302",
    what="Reports `offload_optimizer.ratio` below 1 (partial optimizer offload) at a ZeRO stage other than 3.",
    why="""`DeepSpeedConfig` fails: "Partial offloading only supported for ZeRO Stage 3." (pydantic
    `ValidationError`).""",
    fails_in=(PARSE,),
    failing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "AdamW", "params": {"lr": 0.0001}},
          "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu", "ratio": 0.3}}
        }
        """),
    passing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "AdamW", "params": {"lr": 0.0001}},
          "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu", "ratio": 0.3}}
        }
        """),
    fix="Use stage 3, or drop `ratio` to offload the whole optimizer state.",
)

_doc(
    "DS303",
    what="""Reports `offload_optimizer` or `offload_param` with `"device": "nvme"` and no `nvme_path`.""",
    why="""`deepspeed.initialize` fails when ZeRO-3 sets up the swapper: `TypeError: expected str, bytes or
    os.PathLike object, not NoneType` from `os.path.join(nvme_path, ...)` for the optimizer, or `"nvme_path" in
    DeepSpeed Config cannot be None if remote device is nvme` for parameters.""",
    fails_in=(INITIALIZE,),
    failing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "AdamW", "params": {"lr": 0.0001}},
          "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "nvme"}}
        }
        """),
    passing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "AdamW", "params": {"lr": 0.0001}},
          "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "nvme", "nvme_path": "/local_nvme"}}
        }
        """),
    fix="Set `nvme_path` to a directory on a local NVMe drive of every node.",
)

_doc(
    "DS304",
    what="""Reports ZeRO keys read only at another stage: `stage3_*`, ZeRO++ (`zero_quantized_weights`,
    `zero_hpz_partition_size`, ...) below stage 3; `round_robin_gradients`, `parameter_alignment` at stage 3.""",
    why="""DeepSpeed accepts them and never reads them at this stage, so tuning them changes nothing; usually a
    sign that the stage is not the one the file was written for.""",
    fails_in=(SILENT,),
    failing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "zero_optimization": {"stage": 2, "stage3_max_live_parameters": 1000000000}
        }
        """),
    passing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "zero_optimization": {"stage": 3, "stage3_max_live_parameters": 1000000000}
        }
        """),
    fix="Delete the keys, or set the stage they belong to.",
)

_doc(
    "DS305",
    what="""Reports `compute_grad_norm: false` where DeepSpeed refuses it: outside ZeRO stages 1-2, with gradient
    clipping (the default since 0.19.3), with optimizer offload or ZenFlow.""",
    why="""At stage 0 or 3 `DeepSpeedConfig` fails with "compute_grad_norm=false is supported only with ZeRO Stage
    1 or 2"; at stages 1-2 `deepspeed.initialize` fails with "zero_optimization.compute_grad_norm=false requires
    gradient_clipping=0" unless clipping is switched off explicitly, because `gradient_clipping` now defaults to
    1.0.""",
    fails_in=(PARSE, INITIALIZE),
    failing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "AdamW", "params": {"lr": 0.0001}},
          "zero_optimization": {"stage": 2, "compute_grad_norm": false}
        }
        """),
    passing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "AdamW", "params": {"lr": 0.0001}},
          "gradient_clipping": 0,
          "zero_optimization": {"stage": 2, "compute_grad_norm": false}
        }
        """),
    fix="""Set `"gradient_clipping": 0` and use stage 1 or 2 without offload, or remove `compute_grad_norm`.""",
)

_doc(
    "DS306",
    what="Reports an odd `allgather_bucket_size` at ZeRO stage 1 or 2.",
    why="""`deepspeed.initialize` fails in the ZeRO-1/2 optimizer: `AssertionError: allgather_bucket_size must be
    a multiple of nccl_start_alignment_factor, 2`.""",
    fails_in=(INITIALIZE,),
    failing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "AdamW", "params": {"lr": 0.0001}},
          "zero_optimization": {"stage": 2, "allgather_bucket_size": 200000001}
        }
        """),
    passing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "AdamW", "params": {"lr": 0.0001}},
          "zero_optimization": {"stage": 2, "allgather_bucket_size": 200000000}
        }
        """),
    fix="Use an even number.",
)

_doc(
    "DS307",
    what="Reports `zero_optimization.legacy_stage1: true`.",
    why="""`deepspeed.initialize` fails: "The deprecated version of ZeRO Stage 1 is not supported in deepspeed >=
    0.5.9. Please downgrade to a version less than 0.5.9 if you need to use this deprecated version of ZeRO.\"""",
    fails_in=(INITIALIZE,),
    failing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "AdamW", "params": {"lr": 0.0001}},
          "zero_optimization": {"stage": 1, "legacy_stage1": true}
        }
        """),
    passing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "AdamW", "params": {"lr": 0.0001}},
          "zero_optimization": {"stage": 1}
        }
        """),
    fix="Delete the key; stage 1 is the current implementation.",
)

_doc(
    "DS308",
    what="""Reports optimizer offload to CPU or NVMe in a config without an `optimizer` block, so the optimizer
    comes from the training script, and `zero_force_ds_cpu_optimizer` is not `false`.""",
    why="""Unless the script's optimizer is DeepSpeedCPUAdam or DeepSpeedCPULion, `deepspeed.initialize` raises
    `ZeRORuntimeException: You are using ZeRO-Offload with a client provided optimizer (...) which in most cases
    will yield poor performance. Please either use deepspeed.ops.adam.DeepSpeedCPUAdam or set an optimizer in your
    ds-config`. A warning, not an error, because dsconfig cannot see the script.""",
    fails_in=(INITIALIZE, SILENT),
    failing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"}}
        }
        """),
    passing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "zero_force_ds_cpu_optimizer": false,
          "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"}}
        }
        """),
    fix="""Add an `optimizer` block (DeepSpeed then builds DeepSpeedCPUAdam itself), or set
    `"zero_force_ds_cpu_optimizer": false` to keep the script's optimizer on the CPU (slower), or create
    DeepSpeedCPUAdam in the script.""",
)

_doc(
    "DS309",
    what="""Reports a `pipeline` section (so the model is a `PipelineModule`) with ZeRO stage 2 or 3, for a target
    that calls `deepspeed.initialize` with the pipeline model (`--target deepspeed`).""",
    why="""`deepspeed.initialize` fails in `PipelineEngine`: `AssertionError: ZeRO-2 and ZeRO-3 are incompatible
    with pipeline parallelism`.""",
    fails_in=(INITIALIZE,),
    failing=_ds("""
        {
          "train_batch_size": 256,
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "AdamW", "params": {"lr": 0.0001}},
          "zero_optimization": {"stage": 2},
          "pipeline": {"activation_checkpoint_interval": 1}
        }
        """, target="deepspeed"),
    passing=_ds("""
        {
          "train_batch_size": 256,
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "AdamW", "params": {"lr": 0.0001}},
          "zero_optimization": {"stage": 1},
          "pipeline": {"activation_checkpoint_interval": 1}
        }
        """, target="deepspeed"),
    fix="Use ZeRO stage 0 or 1 with pipeline parallelism.",
)

_doc(
    "DS310",
    what="""Reports `managed_gradient_accumulation: false` in a combination DeepSpeed does not support: ZeRO stage
    below 2 with `overlap_comm`, pipeline parallelism, or DeepCompile.""",
    why="""`deepspeed.initialize` fails: "managed_gradient_accumulation=False supports ZeRO overlap_comm only with
    ZeRO stage 2" (or "... is not supported with pipeline parallelism" / "... with DeepCompile").""",
    fails_in=(INITIALIZE,),
    failing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "AdamW", "params": {"lr": 0.0001}},
          "managed_gradient_accumulation": false,
          "zero_optimization": {"stage": 1, "overlap_comm": true}
        }
        """),
    passing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "AdamW", "params": {"lr": 0.0001}},
          "managed_gradient_accumulation": false,
          "zero_optimization": {"stage": 2, "overlap_comm": true}
        }
        """),
    fix="Use ZeRO stage 2, turn `overlap_comm` off, or remove `managed_gradient_accumulation`.",
)

_doc(
    "DS311",
    what="""Reports ZeRO stage 2 or 3 with `reduce_scatter` (on by default) and `gradient_predivide_factor` other
    than 1.0 or `prescale_gradients: true`.""",
    why="""`deepspeed.initialize` fails in the ZeRO optimizer: "gradient_predivide_factor != 1.0 is not yet
    supported with ZeRO-2 with reduce scatter enabled" (or "pre-scale gradients is not yet supported with ZeRO-2
    with reduce scatter enabled"; ZeRO-3 has the same checks).""",
    fails_in=(INITIALIZE,),
    failing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "AdamW", "params": {"lr": 0.0001}},
          "gradient_predivide_factor": 2.0,
          "zero_optimization": {"stage": 2}
        }
        """),
    passing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "AdamW", "params": {"lr": 0.0001}},
          "gradient_predivide_factor": 2.0,
          "zero_optimization": {"stage": 2, "reduce_scatter": false}
        }
        """),
    fix="""Remove `gradient_predivide_factor` / `prescale_gradients`, or set `"reduce_scatter": false`.""",
)

_doc(
    "DS312",
    what="""Reports `"stage": "auto"` in `zero_optimization` for a target that does not fill it (plain DeepSpeed,
    Lightning).""",
    why="""DeepSpeed drops the `"auto"` like any other in its pydantic sections and uses the default, stage 0:
    ZeRO is off, every GPU holds the full optimizer state, and a model sized for ZeRO-3 runs out of memory with no
    hint that ZeRO never started.""",
    fails_in=(SILENT,),
    failing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "zero_optimization": {"stage": "auto"}
        }
        """, target="deepspeed"),
    passing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "zero_optimization": {"stage": 3}
        }
        """, target="deepspeed"),
    fix="Write the stage as a number.",
)

# =============================================================================================
# DS4xx precision and dtypes
# =============================================================================================

_doc(
    "DS400",
    what="Reports `fp16.enabled` and `bf16.enabled` (or the legacy `bfloat16`) both true.",
    why="`DeepSpeedConfig` fails: `AssertionError: bfloat16 and fp16 modes cannot be simultaneously enabled`.",
    fails_in=(PARSE,),
    failing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "fp16": {"enabled": true},
          "bf16": {"enabled": true}
        }
        """),
    passing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "bf16": {"enabled": true}
        }
        """),
    fix="Enable one of them: bf16 on Ampere and newer GPUs, fp16 on older ones.",
)

_doc(
    "DS401",
    what="Reports the legacy `bfloat16` block instead of `bf16`.",
    why="""DeepSpeed still reads it, but only when there is no `bf16` key (DS402), and the HF Trainer and
    Accelerate look for `bf16` only: they neither fill an `"auto"` in `bfloat16` nor see that bf16 is enabled when
    they compare the config with TrainingArguments.""",
    fails_in=(SILENT,),
    failing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "bfloat16": {"enabled": true}
        }
        """),
    passing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "bf16": {"enabled": true}
        }
        """),
    fix="Rename the key to `bf16`.",
)

_doc(
    "DS402",
    what="Reports a config that has both `bf16` and `bfloat16`.",
    why="""DeepSpeed reads `bf16` and ignores `bfloat16` entirely, whatever it says; if the two disagree, the one
    you edited may be the ignored one.""",
    fails_in=(SILENT,),
    failing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "bf16": {"enabled": false},
          "bfloat16": {"enabled": true}
        }
        """),
    passing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "bf16": {"enabled": true}
        }
        """),
    fix="Keep `bf16` only.",
)

_doc(
    "DS403",
    what="""Reports `fp16_master_weights_and_grads`, `bf16_master_weights_and_grads` or `bf16_optimizer_states`
    without ZeRO (stage 0), or `bf16_optimizer_states` without `bf16_master_weights_and_grads`.""",
    why="""`DeepSpeedConfig` fails: "Bf16_master_weights_and_grads is only supported with ZeRO Stage 1, 2, or 3."
    (AssertionError), or "bf16_optimizer_states requires bf16_master_weights_and_grads to be enabled.".""",
    fails_in=(PARSE,),
    failing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "AdamW", "params": {"lr": 0.0001}},
          "bf16": {"enabled": true, "bf16_master_weights_and_grads": true}
        }
        """),
    passing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "AdamW", "params": {"lr": 0.0001}},
          "bf16": {"enabled": true, "bf16_master_weights_and_grads": true},
          "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}
        }
        """),
    fix="Use ZeRO stage 1-3 (with CPU optimizer offload, DS404), or remove the master-weights keys.",
)

_doc(
    "DS404",
    what="""Reports low-precision master weights (`fp16_master_weights_and_grads`,
    `bf16_master_weights_and_grads`) without optimizer offload to CPU with DeepSpeedCPUAdam, or both kinds
    together.""",
    why="""`deepspeed.initialize` fails in the ZeRO optimizer: "Master weights feature requires ZeRO-2 Offload
    with DeepSpeedCPUAdam" (ZeRO-3: "... ZeRO-3 Offload ..."). The only exception is bf16 master weights with
    `bf16_optimizer_states` and no offload.""",
    fails_in=(INITIALIZE,),
    failing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "AdamW", "params": {"lr": 0.0001}},
          "bf16": {"enabled": true, "bf16_master_weights_and_grads": true},
          "zero_optimization": {"stage": 2}
        }
        """),
    passing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "AdamW", "params": {"lr": 0.0001}},
          "bf16": {"enabled": true, "bf16_master_weights_and_grads": true},
          "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}
        }
        """),
    fix="""Offload the optimizer to the CPU with a config Adam/AdamW (DeepSpeed builds DeepSpeedCPUAdam), add
    `bf16_optimizer_states`, or remove the master-weights key.""",
)

_doc(
    "DS405",
    what="""Reports fp16 with dynamic loss scaling (`loss_scale` 0, the default) and a `loss_scale_window` or
    `min_loss_scale` that is not positive.""",
    why="""`DeepSpeedConfig` fails with a pydantic `ValidationError`: "fp16.loss_scale_window must be > 0 when
    dynamic loss scaling is enabled (loss_scale=0)".""",
    fails_in=(PARSE,),
    failing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "fp16": {"enabled": true, "loss_scale": 0, "loss_scale_window": 0}
        }
        """),
    passing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "fp16": {"enabled": true, "loss_scale": 0, "loss_scale_window": 1000}
        }
        """),
    fix="Use positive values (DeepSpeed's defaults are 1000 and 1), or a static `loss_scale` above 0.",
)

_doc(
    "DS406",
    what="Reports `communication_data_type` or `seq_parallel_communication_data_type` not fp16, bf16 or fp32.",
    why="""`DeepSpeedConfig` lower-cases the value and fails with `ValueError: Invalid communication_data_type.
    Supported data types: ['fp16', 'bf16', 'fp32']. Got: float16`.""",
    fails_in=(PARSE,),
    failing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "communication_data_type": "float16"
        }
        """),
    passing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "communication_data_type": "fp16"
        }
        """),
    fix="Write `fp16`, `bf16` or `fp32`.",
)

_doc(
    "DS407",
    what="Reports `gradient_allreduce_op` other than `mean` or `sum`, or `sum` with ZeRO-3, ZenFlow or DeepCompile.",
    why="""`DeepSpeedConfig` fails with `ValueError: Invalid gradient_allreduce_op. Supported operations: ['mean',
    'sum']`, or "gradient_allreduce_op='sum' is not supported with ZeRO stage 3".""",
    fails_in=(PARSE,),
    failing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "gradient_allreduce_op": "avg"
        }
        """),
    passing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "gradient_allreduce_op": "mean"
        }
        """),
    fix="Write `mean` (the default) or `sum`; with ZeRO-3 only `mean`.",
)

_doc(
    "DS408",
    what="""Reports `data_types` that contradict the precision mode: a `param_dtype` other than the fp16/bf16/fp32
    mode, a `grad_accum_dtype` other than the model dtype without ZeRO, or an invalid dtype name.""",
    why="""`deepspeed.initialize` fails: "data_types.param_dtype='fp16' conflicts with the enabled precision mode
    (model dtype torch.bfloat16)" (AssertionError), or `NotImplementedError: unsupported mix of
    model_dtype=torch.bfloat16 and grad_accum_dtype=torch.float32` at stage 0.""",
    fails_in=(PARSE, INITIALIZE),
    failing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "AdamW", "params": {"lr": 0.0001}},
          "bf16": {"enabled": true},
          "data_types": {"param_dtype": "fp16"}
        }
        """),
    passing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "AdamW", "params": {"lr": 0.0001}},
          "bf16": {"enabled": true},
          "data_types": {"param_dtype": "bf16"}
        }
        """),
    fix="Make `data_types` agree with the enabled precision, or remove it (DeepSpeed derives it).",
)

_doc(
    "DS409",
    what="""Reports invalid `torch_autocast` settings: a dtype DeepSpeed does not know,
    `lower_precision_safe_modules` that are not a list of strings, autocast together with ZeRO quantized weights.""",
    why="""`DeepSpeedConfig` fails with `ValueError: 'float64' is not a valid DtypeEnum` (or "Invalid module names
    for torch autocast"), and `deepspeed.initialize` with "Cannot enable both torch autocast and zero quantized
    weights".""",
    fails_in=(PARSE, INITIALIZE, SILENT),
    failing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "torch_autocast": {"enabled": true, "dtype": "float64"}
        }
        """),
    passing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "torch_autocast": {"enabled": true, "dtype": "bfloat16"}
        }
        """),
    fix="Use a dtype from the message (`bfloat16`, `float16`, ...), case as shown.",
)

_doc(
    "DS410",
    what="""Reports a quoted boolean (`"false"`, `"true"`) in a setting DeepSpeed tests for truthiness without
    validating it (`zero_force_ds_cpu_optimizer`, `prescale_gradients`, `activation_checkpointing.*`, ...).""",
    why="""Any non-empty string is true in Python, so `"false"` switches the setting on. Nothing fails; DeepSpeed
    does the opposite of what the file says: `"zero_force_ds_cpu_optimizer": "false"` still forces the CPU
    optimizer, and `deepspeed.initialize` raises the ZeRORuntimeException the key was meant to silence.""",
    fails_in=(SILENT,),
    failing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "zero_force_ds_cpu_optimizer": "false",
          "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"}}
        }
        """),
    passing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "zero_force_ds_cpu_optimizer": false,
          "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"}}
        }
        """),
    fix="Write JSON `true` / `false` without quotes.",
)

_doc(
    "DS411",
    what="Reports `wall_clock_breakdown` or `flops_profiler.enabled` that is not a JSON boolean.",
    why="""`DeepSpeedConfig` combines the two with the bitwise `|` and fails on a string: `TypeError: unsupported
    operand type(s) for |: 'str' and 'bool'`.""",
    fails_in=(PARSE,),
    failing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "wall_clock_breakdown": "false"
        }
        """),
    passing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "wall_clock_breakdown": false
        }
        """),
    fix="Write `true` or `false` without quotes.",
)

# =============================================================================================
# DS5xx optimizer and scheduler
# =============================================================================================

_doc(
    "DS500",
    what="""Reports `optimizer.type` that DeepSpeed cannot build: not one of its own names (adam, adamw, adagrad,
    lamb, lion, muon, muadam, muadamw, musgd; any case) and not a `torch.optim` class (exact case). Includes the
    removed OneBitAdam, ZeroOneAdam and OneBitLamb.""",
    why="""`deepspeed.initialize` fails: `AssertionError: sgd is not a supported DeepSpeed Optimizer`. torch names
    are case-sensitive, so `sgd` fails where `SGD` works.""",
    fails_in=(PARSE, INITIALIZE),
    failing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "sgd", "params": {"lr": 0.1, "momentum": 0.9}}
        }
        """),
    passing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "SGD", "params": {"lr": 0.1, "momentum": 0.9}}
        }
        """),
    fix="Use a DeepSpeed optimizer name or the exact `torch.optim` class name.",
)

_doc(
    "DS501",
    what="""Reports `optimizer.params` the optimizer DeepSpeed builds would reject: unknown keyword arguments for
    that class (FusedAdam, DeepSpeedCPUAdam, a torch optimizer, ...), `max_grad_norm`, options that need another
    backend (`amsgrad` without `torch_adam`).""",
    why="""`deepspeed.initialize` fails when it constructs the optimizer: `ValueError: 'max_grad_norm' is not
    supported as an optimizer parameter, please switch to using the deepspeed parameter 'gradient_clipping'`, or
    `TypeError: FusedAdam.__init__() got an unexpected keyword argument 'momentum'`.""",
    fails_in=(INITIALIZE,),
    failing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "AdamW", "params": {"lr": 0.0001, "max_grad_norm": 1.0}}
        }
        """),
    passing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "gradient_clipping": 1.0,
          "optimizer": {"type": "AdamW", "params": {"lr": 0.0001}}
        }
        """),
    fix="Remove or rename the parameter the message names (gradient clipping is the top-level `gradient_clipping`).",
)

_doc(
    "DS502",
    what="""Reports a config optimizer ZeRO does not support (anything but Adam, AdamW, Adagrad, Lion and
    DeepSpeed's CPU variants: `SGD`, `lamb`, `muadam`, ...) at ZeRO stage 1-3 without
    `zero_allow_untested_optimizer: true`.""",
    why="""`deepspeed.initialize` fails: `AssertionError: You are using an untested ZeRO Optimizer. Please add
    <"zero_allow_untested_optimizer": true> in the configuration file to use it.`""",
    fails_in=(INITIALIZE,),
    failing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "SGD", "params": {"lr": 0.1}},
          "zero_optimization": {"stage": 2}
        }
        """),
    passing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "SGD", "params": {"lr": 0.1}},
          "zero_allow_untested_optimizer": true,
          "zero_optimization": {"stage": 2}
        }
        """),
    fix="""Set `"zero_allow_untested_optimizer": true` (and test that ZeRO partitions it correctly), or use AdamW.""",
)

_doc(
    "DS503",
    what="Reports the LAMB optimizer with a static fp16 loss scale (`fp16.loss_scale` above 0).",
    why="`deepspeed.initialize` fails: `AssertionError: DeepSpeed lamb optimizer requires dynamic loss scaling`.",
    fails_in=(INITIALIZE,),
    failing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "Lamb", "params": {"lr": 0.001}},
          "fp16": {"enabled": true, "loss_scale": 128}
        }
        """),
    passing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "Lamb", "params": {"lr": 0.001}},
          "fp16": {"enabled": true, "loss_scale": 0}
        }
        """),
    fix="""Use dynamic loss scaling: `"loss_scale": 0` (the default).""",
)

_doc(
    "DS504",
    what="Reports the Muon optimizer with ZeRO stage 3 and `reduce_scatter` not set to false (it defaults to true).",
    why="""`deepspeed.initialize` fails in the ZeRO-3 optimizer: `ValueError: Muon and reduce scatter cannot be
    used together`.""",
    fails_in=(INITIALIZE,),
    failing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "Muon", "params": {"lr": 0.02}},
          "zero_optimization": {"stage": 3}
        }
        """),
    passing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "Muon", "params": {"lr": 0.02}},
          "zero_optimization": {"stage": 3, "reduce_scatter": false}
        }
        """),
    fix="""Set `"reduce_scatter": false` in `zero_optimization`.""",
)

_doc(
    "DS505",
    what="""Reports `scheduler.type` that is neither one of DeepSpeed's schedulers (LRRangeTest, OneCycle,
    WarmupLR, WarmupDecayLR, WarmupCosineLR) nor a `torch.optim.lr_scheduler` class DeepSpeed can build; names are
    case-sensitive.""",
    why="`deepspeed.initialize` fails: `AssertionError: DeepSpeed does not recognize LR scheduler warmuplr`.",
    fails_in=(INITIALIZE,),
    failing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "AdamW", "params": {"lr": 0.0001}},
          "scheduler": {"type": "warmuplr", "params": {"warmup_num_steps": 100}}
        }
        """),
    passing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "AdamW", "params": {"lr": 0.0001}},
          "scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": 100}}
        }
        """),
    fix="Use the exact class name the message suggests.",
)

_doc(
    "DS506",
    what="""Reports `scheduler.params` the scheduler's constructor rejects: a required parameter missing
    (`total_num_steps` for WarmupDecayLR and WarmupCosineLR), an unknown one, a missing `params` block, values of
    the wrong type or range (`warmup_num_steps` 0 or 100.0).""",
    why="""`deepspeed.initialize` fails while building the scheduler: `TypeError: WarmupDecayLR.__init__() missing
    1 required positional argument: 'total_num_steps'`.""",
    fails_in=(INITIALIZE,),
    failing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "AdamW", "params": {"lr": 0.0001}},
          "scheduler": {"type": "WarmupDecayLR", "params": {"warmup_num_steps": 100}}
        }
        """),
    passing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "AdamW", "params": {"lr": 0.0001}},
          "scheduler": {"type": "WarmupDecayLR", "params": {"warmup_num_steps": 100, "total_num_steps": 10000}}
        }
        """),
    fix="Give the parameters the message names, with the types it asks for.",
)

_doc(
    "DS507",
    what="""Reports scheduler settings DeepSpeed warns about or silently changes: an unknown `warmup_type` (falls
    back to log), `total_num_steps` smaller than `warmup_num_steps`, a torch scheduler that needs a metric
    (ReduceLROnPlateau) stepped without one.""",
    why="""Nothing fails at startup; the learning-rate curve is not the one in the file. DeepSpeed logs "Using
    unknown warmup_type: cosine. The increasing function is set to default (log)".""",
    fails_in=(SILENT,),
    failing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "AdamW", "params": {"lr": 0.0001}},
          "scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": 100, "warmup_type": "cosine"}}
        }
        """),
    passing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "AdamW", "params": {"lr": 0.0001}},
          "scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": 100, "warmup_type": "linear"}}
        }
        """),
    fix="""Use `log` or `linear` for `warmup_type`; for a cosine decay after warmup use WarmupCosineLR; keep
    `total_num_steps` above `warmup_num_steps`.""",
)

_doc(
    "DS508",
    what="Reports `optimizer.params` given without `optimizer.type`.",
    why="""DeepSpeed builds an optimizer from the config only when `type` is set; without it the params (learning
    rate, betas, weight decay) are ignored and the script's optimizer, with its own settings, is used.""",
    fails_in=(SILENT,),
    failing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"params": {"lr": 0.0001, "weight_decay": 0.01}}
        }
        """),
    passing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "AdamW", "params": {"lr": 0.0001, "weight_decay": 0.01}}
        }
        """),
    fix="Add `type`, or remove the block and configure the optimizer in the script.",
)

_doc(
    "DS509",
    what="Notes a config without `gradient_clipping`.",
    why="""Its default changed: DeepSpeed 0.19.3 and later clip the gradient norm at 1.0, earlier versions did not
    clip at all. The same file trains differently depending on the installed DeepSpeed, and with
    `compute_grad_norm: false` the new default makes `deepspeed.initialize` fail (DS305).""",
    fails_in=(SILENT,),
    failing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "zero_optimization": {"stage": 2}
        }
        """),
    passing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "gradient_clipping": 1.0,
          "zero_optimization": {"stage": 2}
        }
        """),
    fix="""Write the value you want: `1.0` to clip, `0` not to (`"auto"` under the HF Trainer: `max_grad_norm`).""",
)

# =============================================================================================
# DS6xx other sections
# =============================================================================================

_doc(
    "DS600",
    what="""Reports `activation_checkpointing.contiguous_memory_optimization` without `partition_activations`, and
    with `--target lightning`, where it cannot work.""",
    why="""When the script configures DeepSpeed's activation checkpointing (`deepspeed.checkpointing.configure`),
    it fails: `AssertionError: Contiguous Checkpointing is only available with partitioned activations. Set
    partitioned activations to true in deepspeed config`. Lightning's call never passes the number of layers, so
    there it fails with "Must specify the number of layers with contiguous memory checkpointing".""",
    fails_in=(INITIALIZE,),
    failing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "activation_checkpointing": {"contiguous_memory_optimization": true}
        }
        """),
    passing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "activation_checkpointing": {"partition_activations": true, "contiguous_memory_optimization": true}
        }
        """),
    fix="Set `partition_activations: true`, or turn `contiguous_memory_optimization` off.",
)

_doc(
    "DS601",
    what="""Reports invalid `checkpoint` values: `tag_validation` other than Warn, Ignore or Fail, a non-boolean
    `parallel_write.pipeline_stage`, an unknown `writer.type` or `writer.data_parallel`.""",
    why="""`DeepSpeedConfig` fails: `DeepSpeedConfigError: Checkpoint config contains invalid tag_validation value
    of STRICT, expecting one of ['WARN', 'IGNORE', 'FAIL']`.""",
    fails_in=(PARSE,),
    failing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "checkpoint": {"tag_validation": "STRICT"}
        }
        """),
    passing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "checkpoint": {"tag_validation": "FAIL"}
        }
        """),
    fix="Use one of the values the message lists.",
)

_doc(
    "DS602",
    what="""Reports an enabled `data_efficiency` feature without its required keys: curriculum learning without
    `curriculum_metrics`, dynamic batching without `max_tokens`, and the like.""",
    why="""`DeepSpeedConfig` fails: `AssertionError: Curriculum learning is enabled, curriculum_metrics must be
    specified`. The sub-feature's own `enabled` is checked even when `data_efficiency.enabled` is false.""",
    fails_in=(PARSE,),
    failing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "data_efficiency": {
            "enabled": true,
            "data_sampling": {"enabled": true, "curriculum_learning": {"enabled": true}}
          }
        }
        """),
    passing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "data_efficiency": {
            "enabled": true,
            "data_sampling": {"enabled": true, "curriculum_learning": {"enabled": false}}
          }
        }
        """),
    fix="Add the keys the message names (see DeepSpeed's data efficiency docs), or disable the feature.",
)

_doc(
    "DS603",
    what="""Reports an invalid `autotuning` section: empty `results_dir` or `exps_dir`, lists or `"all"` where
    autotuning is not running, and values DeepSpeed cannot parse.""",
    why="""`DeepSpeedConfig` fails even for a normal training run, because it parses the section every time:
    `AssertionError: results_dir cannot be empty`.""",
    fails_in=(PARSE,),
    failing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "autotuning": {"enabled": true, "results_dir": ""}
        }
        """),
    passing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "autotuning": {"enabled": true, "results_dir": "autotuning_results"}
        }
        """),
    fix="Give a non-empty path, or leave the key out for the default.",
)

_doc(
    "DS604",
    what="Reports `tensor_parallel.tp.tp_size` other than 1 or `tensor_parallel.autotp_size`.",
    why="""`deepspeed.initialize` fails: `ValueError: tensor_parallel.tp.tp_size (2) does not match
    tensor_parallel.autotp_size (4).`""",
    fails_in=(INITIALIZE,),
    failing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "tensor_parallel": {"autotp_size": 4, "tp": {"tp_size": 2}}
        }
        """),
    passing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "tensor_parallel": {"autotp_size": 4}
        }
        """),
    fix="Give the tensor-parallel degree once, in `autotp_size`.",
)

_doc(
    "DS605",
    what="""Reports a section that is not an object where DeepSpeed (or the HF Trainer / Accelerate walking to a
    value they fill) expects one: `"fp16": true`, `"zero_optimization": null`, `"optimizer": "adamw"`.""",
    why="""DeepSpeed calls `Model(**section)` or `section.get(...)` and crashes with `TypeError: ... argument
    after ** must be a mapping, not bool` while parsing; the HF Trainer and Accelerate raise `AttributeError:
    'bool' object has no attribute 'get'` when they look up `fp16.enabled`.""",
    fails_in=(PARSE, INITIALIZE),
    failing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "fp16": true
        }
        """),
    passing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "fp16": {"enabled": true}
        }
        """),
    fix="""Write the section as an object: `"fp16": {"enabled": true}`.""",
)

_doc(
    "DS606",
    what="Reports `pipeline.pipe_partitioned` or `pipeline.grad_partitioned` that is not a JSON boolean.",
    why="""For a `PipelineModule` model, `deepspeed.initialize` fails on `assert isinstance(..., bool)` in
    PipelineEngine: a bare `AssertionError` with no message pointing at the config.""",
    fails_in=(INITIALIZE,),
    failing=_ds("""
        {
          "train_batch_size": 256,
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "AdamW", "params": {"lr": 0.0001}},
          "pipeline": {"pipe_partitioned": "true", "grad_partitioned": "true"}
        }
        """),
    passing=_ds("""
        {
          "train_batch_size": 256,
          "train_micro_batch_size_per_gpu": 4,
          "optimizer": {"type": "AdamW", "params": {"lr": 0.0001}},
          "pipeline": {"pipe_partitioned": true, "grad_partitioned": true}
        }
        """),
    fix="Write `true` or `false` without quotes.",
)

_doc(
    "DS607",
    what="Reports `vocabulary_size` that is not a multiple of 8.",
    why="""DeepSpeed only logs "vocabulary size 50257 is not aligned to 8, may import tensor core utilization":
    the embedding and output matmuls miss the tensor-core fast path and run slower.""",
    fails_in=(SILENT,),
    failing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "vocabulary_size": 50257
        }
        """),
    passing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "vocabulary_size": 50264
        }
        """),
    fix="Pad the model's vocabulary to a multiple of 8 (and write that size here).",
)

# =============================================================================================
# DS7xx target integration
# =============================================================================================

_doc(
    "DS700",
    what="""Reports an `"auto"` that the target never replaces: any `"auto"` under plain `deepspeed.initialize` or
    Lightning in a batch key or a loosely read setting, and, under the HF Trainer and Accelerate, an `"auto"` on a
    key neither of them fills (`sub_group_size`, `optimizer.params.eps`, ...).""",
    why="""Only the HF Trainer and Accelerate resolve `"auto"`. Handed to DeepSpeed as is, a batch key fails in
    `DeepSpeedConfig` with a `TypeError` such as "can't multiply sequence by non-int of type 'str'"; under
    Accelerate's `prepare()` an unfillable `"auto"` raises "`zero_optimization.sub_group_size` not found in
    kwargs. Please specify `zero_optimization.sub_group_size` without `auto` (set to correct value) in the
    DeepSpeed config file or pass it in kwargs.\"""",
    fails_in=(PARSE, INITIALIZE, SILENT),
    failing=_ds("""
        {
          "train_micro_batch_size_per_gpu": "auto",
          "gradient_accumulation_steps": "auto",
          "gradient_clipping": 1.0,
          "zero_optimization": {"stage": 2}
        }
        """, target="deepspeed"),
    passing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "gradient_accumulation_steps": 8,
          "gradient_clipping": 1.0,
          "zero_optimization": {"stage": 2}
        }
        """, target="deepspeed"),
    fix="""Write concrete values for this target, or run the config through the HF Trainer / Accelerate, which
    fill the `"auto"` values they know (DS704 lists them).""",
)

_doc(
    "DS701",
    what="""Reports `gradient_accumulation_steps` in a config used by Lightning's DeepSpeedStrategy (`--target
    lightning`).""",
    why="""Lightning sets the key itself from `accumulate_grad_batches` and refuses the config: "Do not set
    `gradient_accumulation_steps` in the DeepSpeed config as this will be set with the `accumulate_grad_batches`
    argument passed via the Lightning Trainer".""",
    fails_in=(INITIALIZE,),
    failing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "gradient_accumulation_steps": 4,
          "gradient_clipping": 1.0,
          "zero_optimization": {"stage": 2}
        }
        """, target="lightning"),
    passing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "gradient_clipping": 1.0,
          "zero_optimization": {"stage": 2}
        }
        """, target="lightning"),
    fix="Delete the key and pass `accumulate_grad_batches=4` to the Lightning Trainer.",
)

_doc(
    "DS702",
    what="Reports a config for the HF Trainer or Accelerate without a `zero_optimization` section.",
    why="""Both build a DeepSpeedPlugin from the file, which refuses it: "Please specify the ZeRO optimization
    config in the DeepSpeed config." when the Trainer (or `prepare()`) starts.""",
    fails_in=(INITIALIZE,),
    failing=_ds("""
        {
          "train_micro_batch_size_per_gpu": "auto",
          "gradient_accumulation_steps": "auto",
          "bf16": {"enabled": "auto"}
        }
        """, target="hf-trainer"),
    passing=_ds("""
        {
          "train_micro_batch_size_per_gpu": "auto",
          "gradient_accumulation_steps": "auto",
          "bf16": {"enabled": "auto"},
          "zero_optimization": {"stage": 0}
        }
        """, target="hf-trainer"),
    fix="""Add a `zero_optimization` section (`{"stage": 0}` to run without ZeRO).""",
)

_doc(
    "DS703",
    what="""With `--training-args`, replays the HF Trainer's `"auto"` fill and reports each concrete value that
    disagrees with TrainingArguments (micro batch, accumulation steps, train batch at the world size, precision,
    clipping, optimizer and scheduler values).""",
    why="""The Trainer collects every mismatch and fails at the start of `train()`: "Please correct the following
    DeepSpeed config values that mismatch TrainingArguments values: - ds train_micro_batch_size_per_gpu=16 vs hf
    per_device_train_batch_size=8". Typical when the JSON was written for another script or GPU count.""",
    fails_in=(INITIALIZE,),
    failing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 16,
          "gradient_accumulation_steps": "auto",
          "gradient_clipping": "auto",
          "bf16": {"enabled": "auto"},
          "zero_optimization": {"stage": 2}
        }
        """, world_sizes=(8,), training_args={"per_device_train_batch_size": 8, "bf16": True}),
    passing=_ds("""
        {
          "train_micro_batch_size_per_gpu": "auto",
          "gradient_accumulation_steps": "auto",
          "gradient_clipping": "auto",
          "bf16": {"enabled": "auto"},
          "zero_optimization": {"stage": 2}
        }
        """, world_sizes=(8,), training_args={"per_device_train_batch_size": 8, "bf16": True}),
    fix="""Write `"auto"` for every value the Trainer fills, so TrainingArguments are the only source, or make the
    JSON agree with them.""",
)

_doc(
    "DS704",
    what="""Shows, for the HF Trainer and Accelerate, which TrainingArguments (or `prepare()` values) fill each
    `"auto"`, and with `--training-args`, the concrete values.""",
    why="""An `"auto"` hides where the value comes from; the note shows it, e.g. that `gradient_clipping` becomes
    `max_grad_norm` (1.0 unless the script says otherwise), so the config can be reviewed as the run will see it.""",
    fails_in=(SILENT,),
    failing=_ds("""
        {
          "train_micro_batch_size_per_gpu": "auto",
          "gradient_accumulation_steps": "auto",
          "gradient_clipping": "auto",
          "zero_optimization": {"stage": 2}
        }
        """, target="hf-trainer"),
    passing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 8,
          "gradient_accumulation_steps": 2,
          "gradient_clipping": 1.0,
          "zero_optimization": {"stage": 2}
        }
        """, target="hf-trainer", note="Concrete values: nothing is filled, nothing to show."),
    fix="Nothing to fix; it is information. Pass `--training-args` to see the concrete values.",
)

_doc(
    "DS705",
    what="""With `--dataset-size N`, shows per world size optimizer steps per epoch, micro-batches and samples per
    GPU, and samples per optimizer step, counted the way the target's data loader and DeepSpeed's step counter
    really iterate.""",
    why="""The number of steps per epoch changes with the GPU count, and with it any schedule written in steps
    (warmup, decay, evaluation, checkpoints). Side by side, a schedule that only fits one GPU count is easy to
    spot, and steps that fall with the square of the GPU count reveal data that is sharded twice.""",
    fails_in=(SILENT,),
    failing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 8,
          "gradient_accumulation_steps": 4,
          "gradient_clipping": 1.0,
          "zero_optimization": {"stage": 2}
        }
        """, world_sizes=(4, 8), dataset_size=10000),
    passing=_ds("""
        {
          "train_micro_batch_size_per_gpu": 8,
          "gradient_accumulation_steps": 4,
          "gradient_clipping": 1.0,
          "zero_optimization": {"stage": 2}
        }
        """, world_sizes=(4, 8), note="Without --dataset-size there is no table."),
    fix="Nothing to fix; it is information. Check that step-based schedules fit the step counts shown.",
)

# =============================================================================================
# DS9xx dsconfig itself
# =============================================================================================

_doc(
    "DS900",
    what="""Reports an entry of the dsconfig configuration (`[tool.dsconfig]` in pyproject.toml, or
    .dsconfig.toml) that suppressed nothing: a `[[tool.dsconfig.suppress]]` entry with no finding of its `rules`
    at its `pointer` (or below it) in the files its `files` glob matches, or a per-file-ignores entry that hid
    nothing. Entries whose files were not linted in this run are not judged.""",
    why="""A suppression outlives the problem it hid: once the config is fixed or the pointer moves, the stale
    entry would silently swallow a future finding at that place. Like ruff's unused-noqa (RUF100), it is reported
    so it can be deleted.""",
    fails_in=(SILENT,),
    failing=_files(
        ("pyproject.toml", """
            [tool.dsconfig]

            [[tool.dsconfig.suppress]]
            files = "ds_config.json"
            pointer = "/zero_optimization/offload_param"
            rules = ["DS301"]
            reason = "parameter offload kept for the stage-3 variant of this file"
            """),
        (_DEFAULT_JSON, """
            {
              "train_micro_batch_size_per_gpu": 4,
              "optimizer": {"type": "AdamW", "params": {"lr": 0.0001}},
              "zero_optimization": {
                "stage": 3,
                "offload_optimizer": {"device": "cpu"},
                "offload_param": {"device": "cpu"}
              }
            }
            """),
        lint=(_DEFAULT_JSON,)),
    passing=_files(
        ("pyproject.toml", """
            [tool.dsconfig]
            """),
        (_DEFAULT_JSON, """
            {
              "train_micro_batch_size_per_gpu": 4,
              "optimizer": {"type": "AdamW", "params": {"lr": 0.0001}},
              "zero_optimization": {
                "stage": 3,
                "offload_optimizer": {"device": "cpu"},
                "offload_param": {"device": "cpu"}
              }
            }
            """),
        lint=(_DEFAULT_JSON,), note="The stale entry is deleted."),
    fix="Delete the entry, or correct its `files`, `pointer` or `rules` if it was meant to match.",
)

# =============================================================================================
# ACCxxx Accelerate config files
# =============================================================================================

_ACC_DS = "compute_environment: LOCAL_MACHINE\ndistributed_type: DEEPSPEED"  # the bodies below start with a newline

_doc(
    "ACC001",
    what="Reports a top-level key Accelerate's config classes do not have, with a did-you-mean.",
    why="""`accelerate launch` refuses to load the file: `ValueError: The config file at accelerate_config.yaml
    had unknown keys (['num_process'])`. Keys of `deepspeed_config` written at the top level are caught here too.""",
    fails_in=(LOAD,),
    failing=_acc(_ACC_DS + """
        num_process: 8
        mixed_precision: bf16
        """),
    passing=_acc(_ACC_DS + """
        num_processes: 8
        mixed_precision: bf16
        """),
    fix="Fix the spelling, or move the key into the section it belongs to.",
)

_doc(
    "ACC002",
    what="""Reports a key under `deepspeed_config` that is not one of the `accelerate launch` DeepSpeed options
    (`zero_stage`, `offload_optimizer_device`, `gradient_accumulation_steps`, `deepspeed_config_file`, ...),
    typically a ds_config.json key.""",
    why="""`accelerate launch` copies every key onto its arguments and never reads unknown ones: no error, and the
    setting never reaches DeepSpeed. `train_micro_batch_size_per_gpu` written here does nothing (the batch size
    comes from the script).""",
    fails_in=(SILENT,),
    failing=_acc(_ACC_DS + """
        num_processes: 8
        deepspeed_config:
          zero_stage: 2
          train_micro_batch_size_per_gpu: 4
        """),
    passing=_acc(_ACC_DS + """
        num_processes: 8
        deepspeed_config:
          zero_stage: 2
        """),
    fix="Fix the spelling, or move ds_config.json keys into a JSON file and name it with `deepspeed_config_file`.",
)

_doc(
    "ACC003",
    what="""Reports a key under `fsdp_config`, `dynamo_config`, `fp8_config`, `megatron_lm_config`,
    `parallelism_config` and the like that names no `accelerate launch` option (after Accelerate's prefixing),
    with a did-you-mean.""",
    why="""As with `deepspeed_config`, Accelerate copies the key and nothing reads it: a misspelt
    `fsdp_sharding_strategy` leaves FSDP at its default strategy without a word.""",
    fails_in=(SILENT,),
    failing=_acc("""
        compute_environment: LOCAL_MACHINE
        distributed_type: FSDP
        num_processes: 8
        fsdp_config:
          fsdp_sharding_strategi: FULL_SHARD
        """),
    passing=_acc("""
        compute_environment: LOCAL_MACHINE
        distributed_type: FSDP
        num_processes: 8
        fsdp_config:
          fsdp_sharding_strategy: FULL_SHARD
        """),
    fix="Fix the spelling (the message suggests the closest option) or delete the key.",
)

_doc(
    "ACC004",
    what="""Reports `deepspeed_config_file` together with keys Accelerate then refuses: `zero_stage`,
    `gradient_accumulation_steps`, `gradient_clipping`, the offload keys, `zero3_save_16bit_model`, and a
    top-level `mixed_precision` (even `'no'`).""",
    why="""Every training process fails when it builds the DeepSpeedPlugin: "When using `deepspeed_config_file`,
    the following accelerate config variables will be ignored: ['gradient_accumulation_steps',
    'gradient_clipping', 'zero_stage', ...]." (ValueError, despite the wording).""",
    fails_in=(INITIALIZE,),
    failing=_acc(_ACC_DS + """
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
    passing=_acc(_ACC_DS + """
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

_doc(
    "ACC005",
    what="""Reports `distributed_type` missing or not a valid DistributedType (`NO`, `MULTI_GPU`, `DEEPSPEED`,
    `FSDP`, ...), or a `compute_environment` that is not LOCAL_MACHINE or AMAZON_SAGEMAKER.""",
    why="""`accelerate launch` fails while loading the file: `ValueError: 'DEEP_SPEED' is not a valid
    DistributedType` (or "A `distributed_type` must be specified").""",
    fails_in=(LOAD, LAUNCH, SILENT),
    failing=_acc("""
        compute_environment: LOCAL_MACHINE
        distributed_type: DEEP_SPEED
        num_processes: 8
        """),
    passing=_acc("""
        compute_environment: LOCAL_MACHINE
        distributed_type: DEEPSPEED
        num_processes: 8
        """),
    fix="Use a DistributedType name as the message suggests, in upper case.",
)

_doc(
    "ACC006",
    what="Reports `mixed_precision` other than `no`, `fp16`, `bf16` or `fp8`.",
    why="""`accelerate launch` fails before starting any process: `ValueError: Unknown mixed_precision mode:
    bfloat16. Choose between ['no', 'fp8', 'fp16', 'bf16'].`""",
    fails_in=(LAUNCH, SILENT),
    failing=_acc(_ACC_DS + """
        num_processes: 8
        mixed_precision: bfloat16
        """),
    passing=_acc(_ACC_DS + """
        num_processes: 8
        mixed_precision: bf16
        """),
    fix="Write `no`, `fp16`, `bf16` or `fp8` (quote `'no'`, see ACC016).",
)

_doc(
    "ACC007",
    what="Reports a distributed launch (any `distributed_type` but `NO`) without `num_processes`.",
    why="""`accelerate launch` fails with `ValueError`: "You need to manually pass in `--num_processes` using this
    config yaml.\"""",
    fails_in=(LAUNCH,),
    failing=_acc("""
        compute_environment: LOCAL_MACHINE
        distributed_type: MULTI_GPU
        mixed_precision: bf16
        """),
    passing=_acc("""
        compute_environment: LOCAL_MACHINE
        distributed_type: MULTI_GPU
        num_processes: 8
        mixed_precision: bf16
        """),
    fix="Set `num_processes` to the total number of processes over all machines.",
)

_doc(
    "ACC008",
    what="Reports `num_processes` that is not a multiple of `num_machines`.",
    why="""Accelerate starts `num_processes // num_machines` processes per machine without a warning: 16 processes
    on 3 machines run as 3 × 5 = 15, and every batch size computed for 16 is off.""",
    fails_in=(SILENT,),
    failing=_acc("""
        compute_environment: LOCAL_MACHINE
        distributed_type: MULTI_GPU
        num_machines: 3
        num_processes: 16
        main_process_ip: 10.0.0.1
        """),
    passing=_acc("""
        compute_environment: LOCAL_MACHINE
        distributed_type: MULTI_GPU
        num_machines: 3
        num_processes: 24
        main_process_ip: 10.0.0.1
        """),
    fix="Set `num_processes` to GPUs per machine × `num_machines`.",
)

_doc(
    "ACC009",
    what="""Reports `num_processes` that looks like a per-machine count: smaller than `num_machines`, or, with
    `--gpus` and `--nodes`, equal to the GPUs of one machine.""",
    why="""`num_processes` is the total over all machines. 8 on 2 machines of 8 GPUs starts 4 processes per
    machine: half the GPUs stay idle and the world size is 8, not 16, with no error.""",
    fails_in=(SILENT,),
    failing=_acc("""
        compute_environment: LOCAL_MACHINE
        distributed_type: MULTI_GPU
        num_machines: 2
        num_processes: 8
        main_process_ip: 10.0.0.1
        """, gpus=8, nodes=2, world_sizes=(16,)),
    passing=_acc("""
        compute_environment: LOCAL_MACHINE
        distributed_type: MULTI_GPU
        num_machines: 2
        num_processes: 16
        main_process_ip: 10.0.0.1
        """, gpus=8, nodes=2, world_sizes=(16,)),
    fix="Set `num_processes` to the total: GPUs per machine × `num_machines`.",
)

_doc(
    "ACC010",
    what="""Reports `gpu_ids` that cannot serve the processes started on one machine (fewer ids than processes per
    machine), or, with `--gpus`, more processes per machine than the machine has GPUs.""",
    why="""For MULTI_GPU `accelerate launch` fails: "Less than two GPU ids were configured and tried to run on
    multiple GPUs. Please ensure at least two are specified for `--gpu_ids`, or use `--gpu_ids='all'`." For the
    other types the processes without a GPU fail later, when they select their device.""",
    fails_in=(LAUNCH, INITIALIZE),
    failing=_acc("""
        compute_environment: LOCAL_MACHINE
        distributed_type: MULTI_GPU
        num_processes: 4
        gpu_ids: '0'
        """),
    passing=_acc("""
        compute_environment: LOCAL_MACHINE
        distributed_type: MULTI_GPU
        num_processes: 4
        gpu_ids: all
        """),
    fix="List one id per process on a machine, or write `all`.",
)

_doc(
    "ACC011",
    what="Reports `distributed_type: 'NO'` with `num_processes` above 1.",
    why="""`NO` means a single process: Accelerate starts one and ignores `num_processes`, so a job meant for 8
    GPUs trains on one, slowly, without an error (as in some widely copied single-GPU templates).""",
    fails_in=(SILENT,),
    failing=_acc("""
        compute_environment: LOCAL_MACHINE
        distributed_type: 'NO'
        num_processes: 8
        """),
    passing=_acc("""
        compute_environment: LOCAL_MACHINE
        distributed_type: MULTI_GPU
        num_processes: 8
        """),
    fix="Use MULTI_GPU (or DEEPSPEED / FSDP) for several processes, or `num_processes: 1`.",
)

_doc(
    "ACC012",
    what="""Reports a multi-machine DeepSpeed launch with a launcher that needs a hostfile (`pdsh`, the default,
    and openmpi, mvapich, mpich, slurm, nossh) but no `deepspeed_hostfile`.""",
    why="""Accelerate runs `deepspeed --hostfile None`; DeepSpeed logs "Unable to find hostfile, will proceed with
    training with local resources only." and trains on the launching machine alone: a world size of 8 instead of
    16, and a batch arithmetic that no longer matches.""",
    fails_in=(SILENT,),
    failing=_acc(_ACC_DS + """
        num_machines: 2
        num_processes: 16
        main_process_ip: 10.0.0.1
        deepspeed_config:
          zero_stage: 2
        """),
    passing=_acc(_ACC_DS + """
        num_machines: 2
        num_processes: 16
        main_process_ip: 10.0.0.1
        deepspeed_config:
          zero_stage: 2
          deepspeed_multinode_launcher: standard
        """),
    fix="""Set `deepspeed_hostfile` to a hostfile listing the machines, or use `deepspeed_multinode_launcher:
    standard` and run `accelerate launch` on every machine with its own `machine_rank`.""",
)

_doc(
    "ACC013",
    what="""Reports a multi-machine launch without `main_process_ip`, or a `machine_rank` outside 0 …
    `num_machines` − 1.""",
    why="""torchrun gets the rendezvous address `None` and the machines never meet: the rendezvous fails or hangs
    until it times out; a machine with a rank out of range never joins.""",
    fails_in=(LAUNCH, SILENT),
    failing=_acc("""
        compute_environment: LOCAL_MACHINE
        distributed_type: MULTI_GPU
        num_machines: 2
        num_processes: 16
        """),
    passing=_acc("""
        compute_environment: LOCAL_MACHINE
        distributed_type: MULTI_GPU
        num_machines: 2
        num_processes: 16
        main_process_ip: 10.0.0.1
        main_process_port: 29500
        """),
    fix="Set `main_process_ip` to the address of the rank-0 machine, and `machine_rank` per machine.",
)

_doc(
    "ACC014",
    what="Reports `offload_optimizer_device: nvme` or `offload_param_device: nvme` in the Accelerate YAML.",
    why="""`accelerate launch` never exports the `*_nvme_path` keys to the training processes, so DeepSpeed gets
    the path "none" and swaps to a folder named `none` in the working directory, usually not on the NVMe drive.""",
    fails_in=(SILENT,),
    failing=_acc(_ACC_DS + """
        num_processes: 8
        deepspeed_config:
          zero_stage: 3
          offload_param_device: nvme
          offload_param_nvme_path: /local_nvme
        """),
    passing=_acc(_ACC_DS + """
        num_processes: 8
        deepspeed_config:
          deepspeed_config_file: ds_config.json
          zero3_init_flag: true
        """, """
        {
          "train_micro_batch_size_per_gpu": "auto",
          "gradient_accumulation_steps": "auto",
          "zero_optimization": {
            "stage": 3,
            "offload_param": {"device": "nvme", "nvme_path": "/local_nvme"}
          }
        }
        """),
    fix="""Configure NVMe offload in a ds_config.json (`zero_optimization.offload_param.nvme_path`) and name it
    with `deepspeed_config_file`.""",
)

_doc(
    "ACC015",
    what="""Reports settings the ZeRO stage ignores: `offload_param_device` below stage 3, optimizer offload at
    stage 0, `zero3_init_flag` or `zero3_save_16bit_model` below stage 3 (also when the stage comes from the
    ds_config.json).""",
    why="""Nothing fails: below stage 3 the parameters stay on the GPU, and Accelerate warns "DeepSpeed Zero3 Init
    flag is only applicable for ZeRO Stage 3. Setting it to False." The memory you planned for is not freed.""",
    fails_in=(SILENT,),
    failing=_acc(_ACC_DS + """
        num_processes: 8
        deepspeed_config:
          zero_stage: 2
          offload_optimizer_device: cpu
          offload_param_device: cpu
        """),
    passing=_acc(_ACC_DS + """
        num_processes: 8
        deepspeed_config:
          zero_stage: 3
          offload_optimizer_device: cpu
          offload_param_device: cpu
        """),
    fix="Use stage 3 for these settings, or remove them.",
)

_doc(
    "ACC016",
    what="""Reports an unquoted `no`, `off`, `yes` or `on` where Accelerate expects text (`mixed_precision`,
    `distributed_type`, `dynamo_backend`, `gpu_ids`, ...).""",
    why="""YAML 1.1, which `yaml.safe_load` implements, reads them as booleans: `mixed_precision: no` becomes
    `False` and `accelerate launch` fails with `AttributeError: 'bool' object has no attribute 'lower'`;
    `distributed_type: NO` becomes `False`, not the single-process type.""",
    fails_in=(LAUNCH, SILENT),
    failing=_acc("""
        compute_environment: LOCAL_MACHINE
        distributed_type: MULTI_GPU
        num_processes: 8
        mixed_precision: no
        """),
    passing=_acc("""
        compute_environment: LOCAL_MACHINE
        distributed_type: MULTI_GPU
        num_processes: 8
        mixed_precision: 'no'
        """),
    fix="Quote the value: `'no'`, `'NO'`.",
)

_doc(
    "ACC017",
    what="""Reports `deepspeed_config.gradient_accumulation_steps` in a YAML used to launch an HF Trainer script
    (`--target hf-trainer`).""",
    why="""The YAML value replaces the `"auto"` the Trainer would fill, and unless it equals the script's
    `--gradient_accumulation_steps` the Trainer fails at the start of `train()`: "Please correct the following
    DeepSpeed config values that mismatch TrainingArguments values: - ds gradient_accumulation_steps=4 vs hf
    gradient_accumulation_steps=1".""",
    fails_in=(INITIALIZE,),
    failing=_acc(_ACC_DS + """
        num_processes: 8
        deepspeed_config:
          zero_stage: 2
          gradient_accumulation_steps: 4
        """, target="hf-trainer"),
    passing=_acc(_ACC_DS + """
        num_processes: 8
        deepspeed_config:
          zero_stage: 2
        """, target="hf-trainer", note="Pass --gradient_accumulation_steps 4 to the training script."),
    fix="Remove the key and pass `--gradient_accumulation_steps` to the training script.",
)

_doc(
    "ACC018",
    what="""Reports where the Accelerate YAML and the ds_config.json it names (`deepspeed_config_file`) disagree:
    on mixed precision, or on a setting both give (`zero_stage`, the accumulation steps, the offload devices).
    Reported in both files, each pointing at the other.""",
    why="""For precision every process fails in the DeepSpeedPlugin: "`--mixed_precision` arg cannot be set to
    `fp16` when `bf16` is set in the DeepSpeed config file." For the other settings the JSON's concrete value wins
    (and the YAML key is refused anyway, ACC004).""",
    fails_in=(INITIALIZE, SILENT),
    failing=_acc(_ACC_DS + """
        num_processes: 8
        mixed_precision: fp16
        deepspeed_config:
          deepspeed_config_file: ds_config.json
        """, """
        {
          "train_micro_batch_size_per_gpu": "auto",
          "gradient_accumulation_steps": "auto",
          "bf16": {"enabled": true},
          "zero_optimization": {"stage": 3}
        }
        """),
    passing=_acc(_ACC_DS + """
        num_processes: 8
        deepspeed_config:
          deepspeed_config_file: ds_config.json
        """, """
        {
          "train_micro_batch_size_per_gpu": "auto",
          "gradient_accumulation_steps": "auto",
          "bf16": {"enabled": true},
          "zero_optimization": {"stage": 3}
        }
        """),
    fix="Choose the setting in the JSON only and remove it from the YAML.",
)

_doc(
    "ACC019",
    what="""Reports a value of the wrong type or outside its allowed choices, as the launcher or the
    DeepSpeedPlugin parses it: `zero_stage: three`, an offload device `gpu`, a port that is not a number, a
    missing required key.""",
    why="""Depending on who reads it, `accelerate launch` fails while loading or launching, or every training
    process fails when it builds the plugin: `zero_stage` is read with `int("three")`.""",
    fails_in=(LOAD, LAUNCH, INITIALIZE, SILENT),
    failing=_acc(_ACC_DS + """
        num_processes: 8
        deepspeed_config:
          zero_stage: three
        """),
    passing=_acc(_ACC_DS + """
        num_processes: 8
        deepspeed_config:
          zero_stage: 3
        """),
    fix="Use a value of the type and range the message names.",
)

_doc(
    "ACC020",
    what="""Reports a `deepspeed_config_file` that exists neither relative to the working directory nor next to
    the YAML.""",
    why="""Every training process fails in the DeepSpeedPlugin: `ValueError: Expected a string path to an existing
    deepspeed config, or a dictionary, or a base64 encoded string. Received: configs/ds_config.json`. The path is
    opened relative to the directory `accelerate launch` runs in.""",
    fails_in=(INITIALIZE,),
    failing=_acc(_ACC_DS + """
        num_processes: 8
        deepspeed_config:
          deepspeed_config_file: configs/ds_config.json
        """),
    passing=_acc(_ACC_DS + """
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


# =============================================================================================
# Running and showing the examples
# =============================================================================================

_CONFIG_FILES = ("pyproject.toml", ".dsconfig.toml")


def lint_arguments(example: Example) -> list[str]:
    """`dsconfig lint` arguments for the example: its command line, JSON output, and no configuration file from
    outside the example's folder (a folder above the temporary one must not change what the example shows)."""
    import shlex

    args = shlex.split(example.command())[2:] + ["--format", "json"]
    if not any(os.path.basename(name) in _CONFIG_FILES for name, _ in example.files):
        args.append("--no-config")
    return args


def lint_example(example: Example) -> list[dict]:
    """Run `dsconfig lint --format json` as the example's command line says, in a fresh folder holding its
    files (the working directory while it runs, so relative paths and pyproject.toml resolve there), and
    return the findings as the JSON output lists them. Messages that mention the folder show `.` instead."""
    import contextlib
    import io

    from .commands.lint import lint

    args = lint_arguments(example)
    with tempfile.TemporaryDirectory(prefix="dsconfig-example-") as folder:
        previous = os.getcwd()
        os.chdir(folder)
        out, err = io.StringIO(), io.StringIO()
        try:
            for name, text in example.shown_files():
                if os.path.dirname(name):
                    os.makedirs(os.path.dirname(name), exist_ok=True)
                with open(name, "w", encoding="utf-8") as handle:
                    handle.write(text)
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                try:
                    lint.main(args, prog_name="dsconfig lint", standalone_mode=False)
                except SystemExit as exit_:
                    if exit_.code not in (0, 1, None):
                        raise RuntimeError(err.getvalue().strip() or f"exit status {exit_.code}") from None
        finally:
            os.chdir(previous)
        findings = json.loads(out.getvalue() or "[]")
        for spelled in {folder, os.path.realpath(folder)}:
            for finding in findings:
                finding["message"] = finding["message"].replace(spelled, ".")
    return findings


_PHASE_WORDS = {
    LOAD: "load (reading the file)",
    PARSE: "parse (DeepSpeedConfig)",
    INITIALIZE: "initialize (deepspeed.initialize, the Trainer, prepare())",
    LAUNCH: "launch (accelerate launch)",
    SILENT: "nothing fails (silently wrong)",
}


def phases_text(fails_in: tuple) -> str:
    return "; ".join(_PHASE_WORDS[phase] for phase in fails_in)


def _phase_short(fails_in: tuple) -> str:
    return ", ".join("—" if phase is SILENT else phase for phase in fails_in)


def _language(name: str) -> str:
    if name.endswith((".yaml", ".yml")):
        return "yaml"
    if name.endswith(".toml"):
        return "toml"
    return "json"


def _example_labels(rule) -> tuple[str, str]:
    if rule.severity == "info":
        return "Reported for", "Not reported for"
    return "Example", "Use instead"


def _markdown_example(label: str, example: Example) -> list[str]:
    lines = [f"**{label}** (`{example.command()}`):", ""]
    for name, text in example.shown_files():
        lines += [f"`{name}`:", "", f"```{_language(name)}", text.rstrip("\n"), "```", ""]
    if example.note:
        lines += [example.note, ""]
    return lines


def markdown(rules) -> str:
    """docs/rules.md: an overview table per area, then one section per rule."""
    from .rules import AREAS

    rules = list(rules)
    out = [
        ("<!-- Generated by scripts/gen_rule_docs.py from dsconfig/rules.py and dsconfig/ruledocs.py. "
         "Do not edit: edit those and run `python scripts/gen_rule_docs.py`. -->"),
        "",
        "# dsconfig rules",
        "",
        ("Every finding has a rule code and a fixed severity. **error** means DeepSpeed, Accelerate or the "
         "HF Trainer will refuse the config or crash on it (and `dsconfig lint` exits 1 by default); **warning** "
         "means the run goes on but not as written; **info** is information. *Fails in* is where the real tool "
         "stops: `load` (reading the file), `parse` (`DeepSpeedConfig`), `initialize` (`deepspeed.initialize`, "
         "the HF Trainer, Accelerate's `prepare()`), `launch` (`accelerate launch`), or — when nothing fails. A "
         "rule with more than one phase names the one that applies in each finding's `fails_in`."),
        "",
        ("`dsconfig rules` lists the rules; `dsconfig rule DS202` (or `dsconfig rule batch-mismatch`) shows one "
         "in the terminal, together with what dsconfig reports on its example."),
        "",
        "## Overview",
        "",
    ]
    for prefix, title in AREAS:
        group = [rule for rule in rules if rule.code.startswith(prefix)]
        if not group:
            continue
        out += [f"**{title}**", "", "| code | name | severity | fails in | summary |", "|---|---|---|---|---|"]
        for rule in group:
            summary = rule.summary.replace("|", "\\|")
            out.append(f"| [{rule.code}](#{rule.anchor}) | {rule.name} | {rule.severity} | "
                       f"{_phase_short(rule.docs.fails_in)} | {summary} |")
        out.append("")
    for prefix, title in AREAS:
        group = [rule for rule in rules if rule.code.startswith(prefix)]
        if not group:
            continue
        out += [f"## {title}", ""]
        for rule in group:
            doc = rule.docs
            failing, passing = _example_labels(rule)
            out += [
                f"### {rule.code} {rule.name}",
                "",
                f"**{rule.severity}** · fails in: {phases_text(doc.fails_in)}",
                "",
                f"*{rule.summary}.*",
                "",
                f"**What it does.** {doc.what}",
                "",
                f"**Why it matters.** {doc.why}",
                "",
                *_markdown_example(failing, doc.failing),
                *_markdown_example(passing, doc.passing),
                f"**How to fix.** {doc.fix}",
                "",
            ]
    return "\n".join(out).rstrip("\n") + "\n"


def _wrap(text: str, width: int, indent: str = "  ") -> list[str]:
    return textwrap.wrap(text, width=width, initial_indent=indent, subsequent_indent=indent,
                         break_on_hyphens=False, break_long_words=False) or [indent]


def terminal(rule, width: int = 100, output: list[str] | None = None) -> str:
    """`dsconfig rule CODE`: the rule's docs as plain text, with dsconfig's output on the failing example."""
    doc = rule.docs
    failing, passing = _example_labels(rule)
    lines = [f"{rule.code} {rule.name} ({rule.severity})", f"{rule.summary}.", "",
             f"Fails in: {phases_text(doc.fails_in)}", f"Docs: {rule.url}", ""]

    def section(title: str, text: str):
        lines.append(title)
        lines.extend(_wrap(text, width))
        lines.append("")

    def example(title: str, ex: Example):
        lines.append(title)
        lines.append(f"  $ {ex.command()}")
        for name, text in ex.shown_files():
            lines.append(f"  {name}:")
            lines.extend("    " + line if line else "" for line in text.rstrip("\n").split("\n"))
        if ex.note:
            lines.extend(_wrap(ex.note, width))
        lines.append("")

    section("What it does", doc.what)
    section("Why it matters", doc.why)
    example(failing, doc.failing)
    if output is not None:
        lines.append(f"dsconfig reports ({rule.code} findings only)")
        lines.extend("  " + line for line in output)
        if not output:
            lines.append(f"  (no {rule.code} finding: this dsconfig does not report the rule yet)")
        lines.append("")
    example(passing, doc.passing)
    section("How to fix", doc.fix)
    return "\n".join(lines).rstrip("\n") + "\n"


def example_output(rule) -> list[str]:
    """`dsconfig lint`'s lines for the rule's own findings on its failing example (concise format)."""
    found = [f for f in lint_example(rule.docs.failing) if f["code"] == rule.code]
    return [f"{f['file']}:{f['line']}:{f['column']}: {f['code']} {f['message']}" for f in found]


def as_dict(rule) -> dict:
    doc = rule.docs

    def example(ex: Example) -> dict:
        return {"command": ex.command(), "files": [{"path": n, "content": t} for n, t in ex.shown_files()],
                "note": ex.note or None}

    return {"code": rule.code, "name": rule.name, "severity": rule.severity, "summary": rule.summary,
            "url": rule.url, "area": rule.area, "fails_in": list(doc.fails_in), "what": doc.what, "why": doc.why,
            "failing": example(doc.failing), "passing": example(doc.passing), "fix": doc.fix}
