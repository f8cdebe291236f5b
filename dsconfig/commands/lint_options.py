"""The options of `dsconfig lint`, declared once: click builds the command from them
(dsconfig/commands/lint_cli.py) and the fast path parses them (dsconfig.options.parse)."""

from __future__ import annotations

from ..options import CHOICE, COUNT, FILE, Arguments, Option
from ..targets import NAMES as TARGET_NAMES
from ..training.epochs import FRAMEWORKS, MAX_DATASET_SIZE

FORMAT_CHOICES = ("concise", "full", "json", "github", "sarif")

PATHS = Arguments("paths")  # any number; a path that cannot be read is one line, later (not click's error)

OPTIONS = (
    Option(("--target",), "target", kind=CHOICE, choices=TARGET_NAMES,
           help="Who loads the config. Default: hf-trainer when the file holds \"auto\", else deepspeed."),
    Option(("--world-size",), "world_size", metavar="N[,N...]",
           help="World size(s) to check the batch arithmetic at, e.g. 8 or 1,2,4,8."),
    Option(("--gpus",), "gpus", kind=COUNT, low=1, help="GPUs per node (world size = gpus x nodes)."),
    Option(("--nodes",), "nodes", kind=COUNT, low=1, help="Number of nodes (with --gpus)."),
    Option(("--training-args",), "training_args", kind=FILE, metavar="FILE",
           help="JSON or YAML file of TrainingArguments values (as HfArgumentParser reads a --config file): check "
                "what the HF Trainer fills and rejects."),
    Option(("--dataset-size",), "dataset_size", kind=COUNT, low=1, high=MAX_DATASET_SIZE, metavar="N",
           help="Training samples: add optimizer steps per epoch at each world size."),
    Option(("--deepspeed-version",), "deepspeed_version", metavar="X.Y.Z|all",
           help="The DeepSpeed release to replay (0.14.0 to 0.19.8). Default: the installed deepspeed, else a "
                "pin in the project (requirements, pyproject.toml, lock files), else the newest. `all`: which "
                "releases accept and which reject each file."),
    Option(("--framework",), "framework", kind=CHOICE, choices=FRAMEWORKS,
           help="How the training loop iterates the data, for steps per epoch (with --dataset-size)."),
    Option(("--batchnorm",), "batchnorm", flag=True, default=None,
           help="The model has BatchNorm layers: one sample per device is an error, and no fix goes below 2."),
    Option(("--model",), "model", metavar="NAME|config.json",
           help="The model the configs train (a catalog name as for `dsconfig estimate --model`, or a Hugging "
                "Face config.json): fsdp_transformer_layer_cls_to_wrap must name its classes, FULL_STATE_DICT "
                "findings give its size, and the DeepSpeed config is checked against it (DS950-DS954: MoE leaf "
                "modules, expert-parallel sizes, quantized weights, the Trainer's hidden-size fills, ZeRO-3 saves)."),
    Option(("--batch-key",), "batch_keys", multiple=True, metavar="POINTER=per-device|global",
           help="Whether a training config's batch key is per device or global (e.g. /data/train_bs=global)."),
    Option(("--format",), "output_format", kind=CHOICE, choices=FORMAT_CHOICES, default="concise",
           show_default=True, help="Output format."),
    Option(("-o", "--output-file"), "output_file", metavar="FILE",
           help="Write the findings (or statistics) to FILE instead of standard output (`-`: standard output; "
                "a device or FIFO such as /dev/null is written into, never replaced)."),
    Option(("--force",), "force", flag=True,
           help="With -o: replace FILE if it exists (only a regular file is replaced)."),
    Option(("--color",), "color", kind=CHOICE, choices=("auto", "always", "never"), default="auto",
           show_default=True, help="Colour concise and full output (auto: on a terminal, unless NO_COLOR is set)."),
    Option(("--statistics",), "statistics", flag=True,
           help="Count findings per rule instead of listing them (as text, or with --format json)."),
    Option(("--select",), "select", multiple=True, metavar="RULES",
           help="Report only these rules: codes, prefixes (DS2, ACC), rule names or ALL; comma-separated."),
    Option(("--ignore",), "ignore", multiple=True, metavar="RULES", help="Do not report these rules."),
    Option(("--fail-on",), "fail_on", kind=CHOICE, choices=("error", "warning", "info"),
           help="Exit 1 when a finding of this severity or above is reported. Default: error."),
    Option(("--exit-zero",), "exit_zero", flag=True,
           help="Exit 0 even when findings are reported (not on usage errors)."),
    Option(("--config",), "config_path", kind=FILE, metavar="FILE",
           help="Configuration file (.dsconfig.toml, or a pyproject.toml with [tool.dsconfig])."),
    Option(("--no-config",), "no_config", flag=True, help="Ignore configuration files."),
    Option(("--exclude",), "exclude", multiple=True, metavar="PATTERN",
           help="gitignore-style pattern of files and folders to skip (replaces the configuration's exclude)."),
    Option(("--respect-gitignore", "--no-respect-gitignore"), "respect_gitignore", flag=True, default=True,
           show_default=True, help="Skip what .gitignore files ignore when walking folders and globs."),
    Option(("--show-info",), "show_info", flag=True,
           help="Report informational findings too (infos); by default only errors and warnings are, and "
                "the infos left out are counted. A --select naming a rule shows its infos."),
    Option(("--show-skipped",), "show_skipped", flag=True,
           help="List the files a folder or glob found that are no DeepSpeed or Accelerate config (DS005); "
                "by default they are only counted."),
    Option(("--fix",), "apply_fixes", flag=True, help="Apply the safe fixes to the files."),
    Option(("--unsafe-fixes",), "unsafe_fixes", flag=True, help="With --fix or --diff, apply the unsafe fixes too."),
    Option(("--diff",), "diff", flag=True,
           help="Print the fixes as a unified diff; write nothing (exit 1 if any)."),
    Option(("--max-file-size",), "max_file_size", metavar="SIZE",
           help="Do not read files larger than this (e.g. 4MB; K, M and G are powers of 1024); a file named "
                "like a config over it is DS007. Default: 256KB."),
    Option(("--allow-read",), "allow_read", multiple=True, metavar="PATH",
           help="Let a config name files under PATH (a folder or file) though PATH is not linted. dsconfig "
                "otherwise opens only the paths given and, for an Accelerate YAML, files in its folder."),
    Option(("--stdin-filename",), "stdin_filename", metavar="NAME",
           help="The name of the file read from standard input (`-`), for detection and messages."),
    Option(("--no-cache",), "no_cache", flag=True,
           help="Do not replay or keep results in the cache (a rerun on an unchanged tree prints the last "
                "output; kept in ~/.cache/dsconfig or DSCONFIG_CACHE_DIR)."),
)
