"""What dsconfig reads: loading a config file as its target loads it (DS0xx), and dsconfig's own
configuration (DS900).

Checked by dsconfig.deepspeed.syntax (hjson or json.load, duplicate keys, hjson-only syntax),
dsconfig.engine (undecodable, oversized and unreadable files, files that are no config or must not
be opened), dsconfig.other
(batch sizes in other JSON files), dsconfig.accelerate.check (YAML loading) and dsconfig.suppress
(unused suppressions).
"""

from __future__ import annotations

from ..phases import INITIALIZE, LOAD, SILENT, STEP
from .rule import CHANGED_VALUE, DS_CONFIG, ERROR, INFO, SAFE, WARNING, Autofix, Rule, ds, folder

PARSE_ERROR = Rule(
    "DS000", "parse-error", ERROR,
    summary="The file cannot be loaded as the target loads it",
    what="""Reads the file with the loader the target uses: DeepSpeed's hjson for `--target deepspeed`,
    `json.load` for the HF Trainer, Accelerate and Lightning, `yaml.safe_load` for an Accelerate YAML, and reports
    where it fails.""",
    why="""A config that does not load stops the run before anything else: the HF Trainer and Accelerate raise
    `json.decoder.JSONDecodeError` (a trailing comma gives "Expecting property name enclosed in double quotes"),
    DeepSpeed raises `hjson.HjsonDecodeError`. hjson is the more lenient of the two, so a file that works with
    `deepspeed.initialize` can still fail under the Trainer. Everything else in the file is checked on what the
    other loader reads, if it reads anything.""",
    fails_in=(LOAD,),
    failing=ds("""
        {
          "train_micro_batch_size_per_gpu": "auto",
          "gradient_accumulation_steps": "auto",
          "zero_optimization": {"stage": 2},
        }
        """, target="hf-trainer"),
    passing=ds("""
        {
          "train_micro_batch_size_per_gpu": "auto",
          "gradient_accumulation_steps": "auto",
          "zero_optimization": {"stage": 2}
        }
        """, target="hf-trainer"),
    fix="""Write strict JSON: no trailing commas, no comments, every key and string in double quotes. `python -m
    json.tool ds_config.json` shows the error the Trainer would raise.""",
)

DUPLICATE_KEY = Rule(
    "DS001", "duplicate-key", ERROR,
    summary="A key appears twice in the same object",
    what="Reports a key written twice in the same object, at any depth.",
    why="""DeepSpeed's own loader rejects the file with `ValueError: Duplicate keys in DeepSpeed config:
    ['zero_optimization']`. `json.load` (HF Trainer, Accelerate, Lightning) and `yaml.safe_load` raise nothing and
    keep the last value, so the first block, often the one you just edited, is silently ignored.""",
    fails_in=(LOAD, SILENT),
    failing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "zero_optimization": {"stage": 3, "overlap_comm": true},
          "bf16": {"enabled": true},
          "zero_optimization": {"stage": 2}
        }
        """),
    passing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "zero_optimization": {"stage": 3, "overlap_comm": true},
          "bf16": {"enabled": true}
        }
        """),
    fix="Merge the two objects under one key, or delete the stale copy.",
)

HJSON_SYNTAX = Rule(
    "DS002", "hjson-syntax", WARNING,
    summary="hjson-only syntax: DeepSpeed accepts it, json.load (HF Trainer, Accelerate, Lightning) does not",
    what="""Reports syntax only hjson accepts: comments, trailing commas, unquoted keys, single-quoted or
    quoteless strings, `'''` multiline strings, members without separating commas, a top level without braces.
    Reported when the target is plain DeepSpeed; under the other targets the file fails to load (DS000).""",
    why="""`deepspeed.initialize(config="ds_config.json")` reads the file with hjson and accepts all of this, so
    the config works until the same file is handed to the HF Trainer (`--deepspeed ds_config.json`), Accelerate
    (`deepspeed_config_file`) or Lightning, which read it with `json.load` and fail with `JSONDecodeError` before
    training starts.""",
    fails_in=(SILENT,),
    failing=ds("""
        {
          // ZeRO-2 on one 8-GPU node
          "train_micro_batch_size_per_gpu": 4,
          "zero_optimization": {"stage": 2}
        }
        """),
    passing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "zero_optimization": {"stage": 2}
        }
        """),
    fix="Write strict JSON. JSON has no comments: keep notes in a README next to the file.",
)

HJSON_VALUE_TRAP = Rule(
    "DS003", "hjson-value-trap", ERROR,
    summary="A value hjson reads as a string although it looks like a number (+5, .5, 1_000, 007, NaN)",
    what="""Reports unquoted values that look like numbers but that hjson reads as strings: `+5`, `.5`, `1_000`,
    `007`, `NaN`, `Infinity`.""",
    why="""DeepSpeed's hjson loader turns `"gradient_clipping": .5` into the string ".5" without a word, and the
    string travels on until something computes with it: here the engine's `gradient_clipping() > 0.0` raises
    `TypeError: '>' not supported between instances of 'str' and 'float'` at the first optimizer step, long after
    the model has loaded (`fails_in` says where, for the values dsconfig follows that far: `gradient_clipping`,
    `steps_per_print`, `gradient_predivide_factor`). `json.load` rejects these spellings outright.""",
    fails_in=(INITIALIZE, STEP, SILENT),
    failing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "gradient_clipping": .5,
          "zero_optimization": {"stage": 2}
        }
        """),
    passing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "gradient_clipping": 0.5,
          "zero_optimization": {"stage": 2}
        }
        """),
    fix="Write plain JSON numbers: `0.5`, `5`, `1000`, `7`.",
)

NOT_AN_OBJECT = Rule(
    "DS004", "not-an-object", ERROR,
    summary="The top level of a DeepSpeed config must be a JSON object",
    what="Reports a file recognised as a DeepSpeed config whose top level is not a JSON object.",
    why="""DeepSpeed reads every setting with `dict` operations on the top level, so an array, a string or a
    number fails before a single setting is read; the HF Trainer and Accelerate fail the same way.""",
    fails_in=(LOAD,),
    failing=ds("""
        [
          {"train_micro_batch_size_per_gpu": 4, "zero_optimization": {"stage": 2}}
        ]
        """),
    passing=ds("""
        {"train_micro_batch_size_per_gpu": 4, "zero_optimization": {"stage": 2}}
        """),
    fix="Make the file one JSON object holding the settings (one config per file).",
)

NOT_A_CONFIG = Rule(
    "DS005", "not-a-config", INFO,
    summary="Not a DeepSpeed or Accelerate config; skipped",
    what="""Notes a JSON or YAML file that is neither a DeepSpeed nor an Accelerate config (package.json,
    tokenizer files, TrainingArguments files, ...). It is skipped; only DS006 still applies to it. A file found by
    walking a folder is also skipped when it cannot be read as a config at all (empty, cut short, binary, no object
    at the top); a file named on the command line is then checked as the config the user says it is (DS000,
    DS004), since DeepSpeed would fail on it.""",
    why="""Linting a whole repository must not drown real findings in noise about files that are not configs. The
    note says which files were skipped, so a config dsconfig failed to recognise does not go unnoticed: a
    DeepSpeed config is recognised by its keys (`train_batch_size`, `zero_optimization`, `fp16` as an object,
    ...), an Accelerate config by `distributed_type` or `compute_environment`.""",
    fails_in=(SILENT,),
    failing=ds("""
        {"name": "trainer", "version": "1.0.0", "private": true}
        """, name="package.json"),
    passing=ds("""
        {"train_micro_batch_size_per_gpu": 4, "zero_optimization": {"stage": 2}}
        """),
    fix="""Nothing to fix for files that are not configs. A DeepSpeed config that is skipped lacks the keys that
    identify one: add its batch size (`train_micro_batch_size_per_gpu`), which DeepSpeed requires anyway (DS200).""",
    infos_shown=True,  # reported for a file named on the command line without --show-info (a walk counts them)
)

NON_INTEGER_BATCH_SIZE = Rule(
    "DS006", "non-integer-batch-size", ERROR,
    summary="A training config's batch-size key holds no positive integer (a PyTorch DataLoader rejects it)",
    what="""Reports, in a project's own training config (JSON, YAML or TOML, OmegaConf/Hydra style included; any
    file that is not a DeepSpeed or Accelerate config), a batch-size key anywhere in the tree (`batch_size`,
    `train_bs`, `micro_batch_size`, `per_device_train_batch_size`, `global_batch_size`, `batch_size_per_gpu`, ...)
    holding a float (even `7.0`) or a number in quotes (`"8"`). `"auto"`, null, `???` and `${...}` interpolations
    that resolve to an integer are left alone, and so is what the file's own program may mean by a non-batch: a
    boolean (a flag such as `pad_samples_to_global_batch_size`), zero or a negative number (0 "as in training",
    -1 "all at once"), a word, and a file whose values are all text (a translation table, a dump of
    arguments).""",
    why="""Training scripts hand these values straight to `torch.utils.data.DataLoader`, which raises `ValueError:
    batch_size should be a positive integer value, but got batch_size=7.0`, or to a bucket sampler that
    multiplies a list by it: `TypeError: can't multiply sequence by non-int of type 'float'`. A batch of more than
    10^15 samples is reported too: no data set is that large, so it is a typo that runs silently.""",
    fails_in=(STEP, SILENT),
    failing=folder(("configs/train.yaml", """
        train:
          batch_size: 7.0
          epochs: 100
        model:
          hidden_channels: 192
        """), lint=("configs/train.yaml",)),
    passing=folder(("configs/train.yaml", """
        train:
          batch_size: 7
          epochs: 100
        model:
          hidden_channels: 192
        """), lint=("configs/train.yaml",)),
    fix="""Write the batch size as a positive integer literal: `7`, not `7.0` or `"7"`; if a program writes the
    file, make it write an integer (`int(...)`, or `//` throughout instead of `/`).""",
    autofix=Autofix(
        SAFE,
        'A batch size written as 7.0 or "7" becomes 7: the number the author wrote, in the only form a PyTorch '
        "DataLoader accepts.",
        unless="the value is a boolean",
        demoted_when=CHANGED_VALUE,
    ),
)

OPTION_UNUSED = Rule(
    "DS010", "option-unused", WARNING,
    summary="--world-size, --gpus, --dataset-size or --batchnorm was given, but no check of this file uses it",
    what="""Warns, for each config linted, about the command-line options (or configuration settings) that describe
    the training run but that no check of that file could use: an Accelerate YAML without batch settings, a
    training script with nothing those options bear on. A file that is no config at all gets DS005 instead,
    which says the same (nothing was checked). A walk in which no file used an option (`dsconfig lint .
    --world-size 8` in a project with no DeepSpeed config, Accelerate YAML or training script with a batch size)
    gets one DS010 for the run, on the first path given.""",
    why="""`dsconfig lint accelerate_config.yaml --dataset-size 100000` that prints nothing would read as "the
    epochs work out", though nothing in the file was checked against the dataset. A pass must never be silent
    about what it did not check.""",
    fails_in=(SILENT,),
    failing=folder(("accelerate_config.yaml", """
        distributed_type: MULTI_GPU
        num_processes: 2
        """), lint=("accelerate_config.yaml",), dataset_size=100000),
    passing=folder(("configs/train.yaml", """
        optimizer:
          lr: 0.0002
        epochs: 100
        batch_size: 8
        """), lint=("configs/train.yaml",), dataset_size=100000),
    fix="""Lint the file that holds the batch size too (a training config, the ds_config.json, the training
    script), or tell dsconfig which key it is (`--batch-key POINTER=per-device|global`).""",
)

FILE_TOO_LARGE = Rule(
    "DS007", "file-too-large", ERROR,
    summary="A file named like a config is too large to be one; it is not linted",
    what="""Reports a file named like a DeepSpeed or Accelerate config (`ds_config*.json`,
    `accelerate_config.yaml`, ...) that is larger than any config: more than 256 KiB, or what `--max-file-size`
    says. dsconfig stops reading it there and does not lint it. Larger files not named like configs are
    skipped with a DS005 note instead.""",
    why="""Real configs are a few kilobytes. A file of megabytes under a config's name is a dataset, a log or a
    mistake, and reading all of it (200 MB, `/dev/zero`, a pipe that never ends) would cost time and memory
    that no verdict is worth, so dsconfig says so at once instead of passing the file as if it had been
    checked.""",
    fails_in=(SILENT,),
    failing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "gradient_accumulation_steps": 8,
          "comment": "linted with --max-file-size 100, this file is larger than that"
        }
        """, max_bytes=100),
    passing=ds("""
        {"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 8}
        """, max_bytes=100),
    fix="""Give dsconfig the real config file. If a config truly is larger, raise the limit with
    `--max-file-size 4MB`.""",
)

UNREADABLE_FILE = Rule(
    "DS008", "unreadable-file", ERROR,
    summary="A file or folder in a linted folder cannot be read; it is not linted, the rest is",
    what="""Reports an entry found while walking a folder (or by a glob, or named by an Accelerate YAML) that
    cannot be linted: a symbolic link to nothing, a loop of links, a file or folder without read permission, a
    path longer than the system allows, or a FIFO, socket or device under a config's name. The rest of the
    folder is linted. A path given on the command line that cannot be read is a usage error instead (exit 2).""",
    why="""One broken entry must not hide every other finding of a repository, nor pass unnoticed: a
    `ds_config.json` that is a link to a file nobody committed is the config the launch will fail to open
    (DeepSpeed's `open()` raises FileNotFoundError). A FIFO is never opened: reading it would wait forever.""",
    fails_in=(LOAD, SILENT),
    failing=folder(
        ("configs/zero2.json", """
            {"train_micro_batch_size_per_gpu": 4, "zero_optimization": {"stage": 2}}
            """),
        links=(("configs/ds_config.json", "../shared/ds_config.json"),),
        lint=("configs",), note="`shared/ds_config.json` was never committed."),
    passing=folder(
        ("configs/zero2.json", """
            {"train_micro_batch_size_per_gpu": 4, "zero_optimization": {"stage": 2}}
            """),
        ("configs/ds_config.json", """
            {"train_micro_batch_size_per_gpu": 4, "zero_optimization": {"stage": 3}}
            """),
        lint=("configs",)),
    fix="""Commit the file the link points to, or delete the link; give dsconfig read permission on the folder;
    exclude what is not a config (`--exclude`, `exclude = [...]`).""",
)

# An Accelerate YAML in one folder naming the ds_config.json in another (DS009's examples).
_SPLIT_LAUNCH = (
    ("accelerate/zero2.yaml", """
        compute_environment: LOCAL_MACHINE
        distributed_type: DEEPSPEED
        num_processes: 8
        deepspeed_config:
          deepspeed_config_file: ../deepspeed/zero2.json
        """),
    ("deepspeed/zero2.json", """
        {"train_micro_batch_size_per_gpu": 4, "zero_optimization": {"stage": 2}}
        """),
)

REFERENCE_NOT_FOLLOWED = Rule(
    "DS009", "reference-not-followed", ERROR,
    summary="A config names a file dsconfig will not read or quote: outside the linted paths, or no config",
    what="""Reports a `deepspeed_config_file` whose real path (every symbolic link resolved) lies outside the
    paths given to `dsconfig lint` and outside the folder of the YAML naming it, a symbolic link in a walked
    folder that leads out of it, a file named on the command line that is a link to a special file or out of the
    working directory (as the pre-commit hook names a link a pull request added), and a named JSON file that holds no DeepSpeed setting, which it does not lint.
    The pair is then not checked (a named FIFO, socket, device or file under /proc, /sys or /dev is never opened
    either; that is ACC020, since DeepSpeedPlugin cannot read it). `--allow-read PATH` on the command line lets dsconfig
    open files under PATH; `allow-read` in a repository's own configuration is not honoured (a pull request could
    widen what is read on the CI runner with it).""",
    why="""A config in a pull request can name any path: `/proc/self/environ`, `../../.env`, a link to a secret.
    Linting that file would print its contents in findings, into CI logs anyone can read. dsconfig reads only
    what it was asked to lint, so the GitHub Action and pre-commit hook are safe on untrusted changes. It is an
    error because the launch it describes was not checked: CI must not pass it as clean.""",
    fails_in=(SILENT,),
    failing=folder(*_SPLIT_LAUNCH, lint=("accelerate",)),
    passing=folder(*_SPLIT_LAUNCH, lint=("accelerate", "deepspeed"),
                   note="Both folders are linted, so the pair is checked."),
    fix="""Lint the folder that holds both files (`dsconfig lint .`), or add the JSON's folder: `dsconfig lint
    accelerate deepspeed`, or `--allow-read deepspeed`. A name under /proc, /sys or /dev is never a config.""",
)

UNUSED_SUPPRESSION = Rule(
    "DS900", "unused-suppression", WARNING,
    summary="A suppression in the dsconfig configuration matched nothing",
    what="""Reports an entry of the dsconfig configuration (`[tool.dsconfig]` in pyproject.toml, or
    .dsconfig.toml) that suppressed nothing: a `[[tool.dsconfig.suppress]]` entry with no finding of its `rules`
    at its `pointer` (or below it) in the files its `files` glob matches, or a per-file-ignores entry that hid
    nothing. Entries whose files were not linted in this run are not judged.""",
    why="""A suppression outlives the problem it hid: once the config is fixed or the pointer moves, the stale
    entry would silently swallow a future finding at that place. Like ruff's unused-noqa (RUF100), it is reported
    so it can be deleted.""",
    fails_in=(SILENT,),
    failing=folder(
        ("pyproject.toml", """
            [tool.dsconfig]

            [[tool.dsconfig.suppress]]
            files = "ds_config.json"
            pointer = "/zero_optimization/offload_param"
            rules = ["offload-ignored"]
            reason = "parameter offload kept for the stage-3 variant of this file"
            """),
        (DS_CONFIG, """
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
        lint=(DS_CONFIG,)),
    passing=folder(
        ("pyproject.toml", """
            [tool.dsconfig]
            """),
        (DS_CONFIG, """
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
        lint=(DS_CONFIG,), note="The stale entry is deleted."),
    fix="Delete the entry, or correct its `files`, `pointer` or `rules` if it was meant to match.",
)

RULES = (
    PARSE_ERROR, DUPLICATE_KEY, HJSON_SYNTAX, HJSON_VALUE_TRAP, NOT_AN_OBJECT, NOT_A_CONFIG,
    NON_INTEGER_BATCH_SIZE, FILE_TOO_LARGE, UNREADABLE_FILE, REFERENCE_NOT_FOLLOWED, OPTION_UNUSED,
    UNUSED_SUPPRESSION,
)
