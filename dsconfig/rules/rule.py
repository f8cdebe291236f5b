"""What a rule is: one declaration holding everything about one code.

A Rule has its code and name, a fixed severity (the same in every output format), the phases in
which the real tool fails on it (`fails_in`), its documentation (what dsconfig checks, why it
matters, what to do), a failing and a passing example (real files and the `dsconfig lint` command
line for them; tests/rules/test_rule_docs.py lints both), and its autofix policy. The checkers
report the declared objects (`Finding(BATCH_MISMATCH, ...)`); docs/rules.md, `dsconfig rule`,
SARIF's rule descriptions and `--fix` all read them from here.

Writing a rule:
  * `summary`: one line, no final full stop (the `dsconfig rules` listing).
  * `what`: what dsconfig checks, in one or two sentences.
  * `why`: the failure the user would otherwise hit, with DeepSpeed's / Accelerate's / the
    Trainer's own message where there is one.
  * `fails_in`: every phase a finding of the rule can name (LOAD, PARSE, INITIALIZE, LAUNCH, STEP,
    or SILENT when nothing fails and the setting is silently wrong).
  * `failing` / `passing`: the smallest realistic config showing the problem, and the same config fixed.
  * `fix`: what to change.
  * `autofix`: None when findings never carry a fix; else whether `--fix` may apply it (SAFE) or
    only `--fix --unsafe-fixes` (UNSAFE), and why.
"""

from __future__ import annotations

import json
import os
from typing import NamedTuple

from ..phases import PHASES, SILENT

ERROR = "error"
WARNING = "warning"
INFO = "info"
SEVERITIES = (ERROR, WARNING, INFO)

# docs/rules.md on the default branch; every rule's help URL is an anchor in it (SARIF helpUri).
DOCS_URL = "https://github.com/dsconfig/dsconfig/blob/main/docs/rules.md"

# (code prefix, heading) in the order docs/rules.md and `dsconfig rules` show the rules.
AREAS = (
    ("DS0", "DS0xx file and syntax"),
    ("DS1", "DS1xx keys and values"),
    ("DS2", "DS2xx batch arithmetic"),
    ("DS3", "DS3xx ZeRO and offload"),
    ("DS4", "DS4xx precision and dtypes"),
    ("DS5", "DS5xx optimizer and scheduler"),
    ("DS6", "DS6xx other sections"),
    ("DS7", "DS7xx target integration"),
    ("DS8", "DS8xx training scripts"),
    ("DS9", "DS9xx dsconfig itself"),
    ("DS95", "DS95x the model (lint --model)"),
    ("ACC", "ACCxxx Accelerate config files"),
)


def area_index(code: str) -> int:
    """The AREAS entry of a code: the longest prefix it starts with (DS950 is the model's, DS900 dsconfig's)."""
    return max((i for i, (prefix, _) in enumerate(AREAS) if code.startswith(prefix)), key=lambda i: len(AREAS[i][0]))


# -- autofix policy ------------------------------------------------------------------------------

SAFE = "safe"  # --fix applies it: the run does what it did before, or what it plainly was meant to do
UNSAFE = "unsafe"  # --fix --unsafe-fixes only: the run changes

# When a safe rule's single fix is demoted to unsafe (dsconfig.fix implements each condition).
CHANGED_VALUE = "changed-value"  # the fix writes another value, not a re-spelling of the one written
CONVERTED_ON_MIGRATION = "converted-on-migration"  # DeepSpeed reshapes the value while it migrates the key
LEGACY_ALLGATHER = "legacy-allgather"  # a top-level allgather_size moves into the rewritten block


class Autofix(NamedTuple):
    applicability: str  # SAFE | UNSAFE
    why: str
    unless: str | None = None  # when a SAFE rule's fix is demoted to unsafe, in words
    demoted_when: str | None = None  # ... and as the condition dsconfig.fix checks


# -- examples ------------------------------------------------------------------------------------

DS_CONFIG = "ds_config.json"
ACCELERATE_CONFIG = "accelerate_config.yaml"
TRAINING_ARGS_FILE = "training_args.json"
# The head of most Accelerate examples; the bodies that follow it start with a newline.
ACC_DEEPSPEED = "compute_environment: LOCAL_MACHINE\ndistributed_type: DEEPSPEED"


class Example(NamedTuple):
    """Config files as they would sit in one folder, and the `dsconfig lint` invocation for them."""

    files: tuple[tuple[str, str], ...]  # (relative path, text), shown in this order
    lint: tuple[str, ...]  # the paths given to `dsconfig lint`
    # lint options: target (a name), world_sizes, gpus, nodes, training_args (a dict), dataset_size, framework,
    # batchnorm, batch_keys, max_bytes, model (a --model name)
    options: dict
    note: str = ""
    links: tuple[tuple[str, str], ...] = ()  # (relative path, where that symbolic link points)
    show_info: bool = False  # the command says --show-info (an info rule's examples: infos are opt-in)

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
        if options.get("framework"):
            words += ["--framework", options["framework"]]
        if options.get("batchnorm"):
            words.append("--batchnorm")
        for pointer, kind in options.get("batch_keys", ()):
            words += ["--batch-key", f"{pointer}={kind}"]
        if options.get("model"):
            words += ["--model", options["model"]]
        if options.get("max_bytes"):
            words += ["--max-file-size", str(options["max_bytes"])]
        if self.show_info:
            words.append("--show-info")
        return " ".join(words)

    def build(self, folder: str) -> None:
        """Write the example's files, and make its symbolic links, under `folder`."""
        for name, text in self.shown_files():
            path = os.path.join(folder, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(text)
        for name, target in self.links:
            path = os.path.join(folder, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            os.symlink(target, path)

    def shown_files(self) -> list[tuple[str, str]]:
        """Every file the command needs, the training arguments included."""
        files = list(self.files)
        if self.options.get("training_args") is not None:
            files.append((TRAINING_ARGS_FILE, json.dumps(self.options["training_args"], indent=2) + "\n"))
        return files


def _text(text: str) -> str:
    """Dedent the indented lines (an unindented head, such as ACC_DEEPSPEED, may come first)."""
    lines = text.strip("\n").split("\n")
    indents = [len(line) - len(line.lstrip(" ")) for line in lines if line.strip() and line.startswith(" ")]
    cut = min(indents, default=0)
    return "\n".join(line[cut:] if line.startswith(" " * cut) else line for line in lines) + "\n"


def ds(text: str, *, name: str = DS_CONFIG, note: str = "", **options) -> Example:
    """One DeepSpeed config file."""
    return Example(((name, _text(text)),), (name,), options, note)


def acc(text: str, ds_config: str | None = None, *, note: str = "", **options) -> Example:
    """An Accelerate YAML, and the ds_config.json it names when there is one (linted through the YAML)."""
    files = ((ACCELERATE_CONFIG, _text(text)),)
    if ds_config is not None:
        files += ((DS_CONFIG, _text(ds_config)),)
    return Example(files, (ACCELERATE_CONFIG,), options, note)


def folder(*files: tuple[str, str], lint: tuple[str, ...], note: str = "", links: tuple = (), **options) -> Example:
    """Several files (and symbolic links), and which of them `dsconfig lint` is given."""
    return Example(tuple((name, _text(text)) for name, text in files), lint, options, note, tuple(links))


def _prose(text: str) -> str:
    return " ".join(text.split())


# -- the rule ------------------------------------------------------------------------------------


class Rule:
    """One rule, declared once (in the dsconfig.rules module of its area)."""

    __slots__ = ("code", "name", "severity", "summary", "fails_in", "what", "why", "failing", "passing", "fix",
                 "autofix", "infos_shown")

    def __init__(self, code: str, name: str, severity: str, *, summary: str, fails_in: tuple, what: str, why: str,
                 failing: Example, passing: Example, fix: str, autofix: Autofix | None = None,
                 infos_shown: bool = False):
        assert severity in SEVERITIES, (code, severity)
        assert fails_in and all(phase in PHASES or phase is SILENT for phase in fails_in), (code, fails_in)
        self.code = code
        self.name = name
        self.severity = severity
        self.summary = summary
        self.fails_in = tuple(fails_in)
        self.what = _prose(what)
        self.why = _prose(why)
        # Infos are opt-in, as in cfn-lint: `dsconfig lint` reports them with --show-info or when a select names
        # the rule (unless infos_shown), so an info rule's examples run with --show-info
        self.infos_shown = infos_shown
        if severity == INFO and not infos_shown:
            failing, passing = failing._replace(show_info=True), passing._replace(show_info=True)
        self.failing = failing
        self.passing = passing
        self.fix = _prose(fix)
        self.autofix = autofix

    @property
    def anchor(self) -> str:
        """The rule's heading anchor in docs/rules.md (GitHub's slug of "DS202 batch-mismatch")."""
        return f"{self.code.lower()}-{self.name}"

    @property
    def url(self) -> str:
        """Stable help URL: the rule's section of docs/rules.md."""
        return f"{DOCS_URL}#{self.anchor}"

    @property
    def area(self) -> str:
        return AREAS[area_index(self.code)][1]

    @property
    def fix_safety(self) -> str:
        """"safe", "unsafe" or "none" (findings of this rule never carry a fix)."""
        return self.autofix.applicability if self.autofix is not None else "none"

    def __repr__(self) -> str:
        return f"<Rule {self.code} {self.name}>"
