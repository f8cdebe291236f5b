"""A project's launches linked to the DeepSpeed configs they hand to training.

A launch script (`*.sh`, `*.bash`, `*.slurm`, `*.sbatch`, a Makefile's recipes) is read when its bytes name a
launcher; each launch in it that names a DeepSpeed config (`--deepspeed ds.json` for the HF Trainer,
`--deepspeed_config ds.json` for deepspeed.initialize's argument parser, the `deepspeed` key of LLaMA-Factory's
arguments file) links the config to that launch's world size and, when the entry script is an HF Trainer
script, to the TrainingArguments its flags (or arguments file) give.

Paths in a launch are relative to the folder it runs from, which the script does not say: the script's
folder, then each folder above it up to the root linted, the first that holds the file (scripts in
`scripts/` are usually run from the project root). A path that resolves nowhere links nothing.
"""

from __future__ import annotations

import functools
import os
import re
from typing import Callable, NamedTuple

from ..boundary import Boundary
from . import argv, launchers, makefile, shell, slurm, trainer_flags
from .launchers import Launch

_LAUNCHER_BYTES = re.compile(rb"deepspeed|torchrun|torch\.distributed|accelerate|llamafactory-cli|\blmf\b")
# What marks an HF Trainer script: its arguments are TrainingArguments (or TRL's configs built on them), and
# it builds a Trainer (HfArgumentParser alone parses any dataclass; a custom loop calls deepspeed.initialize)
_ARGUMENT_MARKS = re.compile(r"\b(\w*TrainingArguments|TrlParser|SFTConfig|DPOConfig|GRPOConfig|KTOConfig|"
                             r"ORPOConfig|RewardConfig|PPOConfig|CPOConfig)\b")
_TRAINER_CALL = re.compile(r"\b\w*Trainer\s*\(")
_PARSER = re.compile(r"\b(HfArgumentParser|TrlParser)\b")
_GRPO = re.compile(r"\bGRPO(Config|Trainer)\b")
# GRPOConfig's fields the GRPO replay reads besides the Trainer's (dsconfig.launch.grpo)
GRPO_FIELDS = ("per_device_train_batch_size", "gradient_accumulation_steps", "num_generations", "num_generations_eval",
               "generation_batch_size", "steps_per_generation", "per_device_eval_batch_size", "eval_strategy", "do_eval")


@functools.lru_cache(maxsize=1)
def _setting() -> re.Pattern:
    """A TrainingArguments field the Trainer replay reads, set after parsing (`args.gradient_accumulation_steps =
    ...`, setattr) or given another default by a subclass (`per_device_train_batch_size: int = 4`): its flag
    alone does not decide it."""
    from ..deepspeed.trainer import REPLAYED_FIELDS
    names = "|".join(sorted(REPLAYED_FIELDS | set(GRPO_FIELDS)))
    return re.compile(rf"\.({names})\s*=(?!=)|setattr\(\s*\w+\s*,\s*[\"']({names})[\"']|^[ \t]+({names})\s*:[^=\n]*=",
                      re.M)


_IMPORT = re.compile(r"^\s*(?:from\s+([\w.]+)\s+import|import\s+([\w.]+))", re.M)
MAX_SCRIPT = 2_000_000  # an entry script larger than this is not read for Trainer marks


class Link(NamedTuple):
    launch: Launch
    config: str  # the config's real path
    written: str  # the path as the launch writes it
    trainer: bool  # the entry script builds a Trainer from TrainingArguments: the HF Trainer reads the config
    flags: trainer_flags.TrainerFlags | None  # its TrainingArguments, when HfArgumentParser reads them from the flags
    changed: frozenset = frozenset()  # replayed TrainingArguments fields the scripts set or default otherwise


class _Entry(NamedTuple):
    """What the entry script and the project modules it imports say about its arguments."""
    trainer: bool
    parsed: bool  # HfArgumentParser (or TRL's parser) reads TrainingArguments from the command line
    changed: frozenset
    grpo: bool = False  # a TRL GRPO script whose GRPOConfig a parser reads from the command line


def worth_reading(data: bytes) -> bool:
    return _LAUNCHER_BYTES.search(data) is not None


def launches(path: str, text: str) -> list[Launch]:
    found = []
    if os.path.basename(path) in makefile.NAMES:
        text = makefile.as_shell(text)
    environment = slurm.variables(text) if "#SBATCH" in text else None
    for command in shell.commands(text, environment):
        launch = launchers.find(command, path)
        if launch is not None:
            found.append(launch)
    return found


def resolve(written, launch_file: str, roots: Boundary, exists: Callable[[str], bool] = os.path.isfile) -> str | None:
    """The real path a launch's relative path names: from the script's folder or a folder above it, up to
    the root linted that holds the script; None when no such file is there (or it is outside the roots)."""
    if not isinstance(written, str) or not written or written.startswith("~") or "$" in written:
        return None
    if os.path.isabs(written):
        real = os.path.realpath(written)
        return real if roots.admits(real) and exists(real) else None
    # the launch's folder: its script's, or (`lint -- COMMAND`) the one the command is run from
    folder = os.path.dirname(os.path.realpath(launch_file)) if launch_file else os.path.realpath(os.getcwd())
    while True:
        candidate = os.path.realpath(os.path.join(folder, written))
        if roots.admits(candidate) and exists(candidate):
            return candidate
        parent = os.path.dirname(folder)
        if parent == folder or not roots.admits(parent):
            return None
        folder = parent


def link(launch: Launch, roots: Boundary, read_text: Callable[[str], str | None],
         entries: dict | None = None) -> list[Link]:
    """The DeepSpeed configs this launch hands to training. `entries`: what was read of each entry script so
    far in this run (scripts run by many launches are read once)."""
    if launch.launcher == "llamafactory-cli":
        return _llamafactory_links(launch, roots, read_text)
    out = []
    flags = trainer_flags.read(launch.args)
    entry = None
    for dest, trainer_style in (("deepspeed", True), ("deepspeed_config", False)):
        written = _flag_value(launch.args, dest)
        if written is None:
            continue
        config = resolve(written, launch.file, roots)
        if config is None:
            continue
        if trainer_style and entry is None:
            entry = _entry_of(launch, roots, read_text, {} if entries is None else entries)
        trainer = trainer_style and entry.trainer
        out.append(Link(launch, config, written, trainer, flags if trainer and entry.parsed else None,
                        entry.changed if trainer else frozenset()))
    return out


# accelerate launch options that change how many processes start: with one of them on the command line, the
# config file's count is not the whole story
_TOPOLOGY = frozenset({"num_processes", "num_machines", "multi_gpu", "cpu", "tpu", "use_deepspeed", "use_fsdp",
                       "use_megatron_lm"})


def with_config_world(launch: Launch, roots: Boundary, read_text) -> Launch:
    """`accelerate launch --config_file X.yaml` with no topology option of its own starts what X.yaml says
    (dsconfig.accelerate's replay of the launcher: num_processes over num_machines, one process for the simple
    launcher)."""
    written = launch.options.get("config_file")
    if launch.launcher != "accelerate launch" or launch.world_size is not None or not isinstance(written, str) \
            or _TOPOLOGY & set(launch.options) or not written.endswith((".yaml", ".yml")):
        return launch
    path = resolve(written, launch.file, roots)
    text = read_text(path) if path is not None else None
    if text is None:
        return launch
    from ..accelerate.check import launched_world_size
    from ..accelerate.launch import Replay
    from ..yamldoc import YamlDocument
    doc = YamlDocument(path, text)
    if not doc.loaded or not isinstance(doc.value, dict):
        return launch
    replay = Replay(doc.value, doc.yaml11_booleans)
    size = launched_world_size(replay)
    if not size:
        return launch
    machines = replay.args.get("num_machines")
    nodes = machines if isinstance(machines, int) and machines > 1 and size % machines == 0 else 1
    return launch._replace(world_size=size, nodes=nodes, per_node=size // nodes, unknown_why=None)


def grpo_values(launch: Launch, roots: Boundary, read_text, entries: dict) -> dict | None:
    """The GRPOConfig values a launch of a TRL GRPO script gives (its flags over its `--config` file, TrlParser's
    order), or None: no GRPO script, a value the script does not determine, or a field its code sets."""
    if launch.launcher == "llamafactory-cli":
        return None
    entry = _entry_of(launch, roots, read_text, entries)
    if not entry.grpo or entry.changed & set(GRPO_FIELDS):
        return None
    flags = trainer_flags.read(launch.args, "grpo_args")
    if flags.uncertain or flags.errors or flags.unknown & set(GRPO_FIELDS):
        return None
    values: dict = {}
    written = _flag_value(launch.args, "config")
    if written is not None:
        config = resolve(written, launch.file, roots)
        text = read_text(config) if config is not None else None
        loaded = _argument_file_values(text) if text is not None else None
        if loaded is None:
            return None  # a --config file that cannot be read: its values are unknown
        values.update({key: value for key, value in loaded.items() if key in GRPO_FIELDS})
    values.update({key: value for key, value in flags.values.items() if key in GRPO_FIELDS})
    return values


def _llamafactory_links(launch: Launch, roots: Boundary, read_text) -> list[Link]:
    """LLaMA-Factory's train command: its arguments file (YAML as OmegaConf loads it, or JSON), with the
    `key=value` overrides after it, is the TrainingArguments of its Trainer; its `deepspeed` key the config."""
    arguments = resolve(launch.options["arguments_file"], launch.file, roots)
    text = read_text(arguments) if arguments is not None else None
    if text is None:
        return []
    values = _argument_file_values(text)
    if values is None:
        return []
    uncertain = False
    for word in launch.args:
        if not isinstance(word, str) or "=" not in word:
            uncertain = True  # an override the script does not determine, or none OmegaConf reads
            continue
        key, _, written = word.partition("=")
        values[key.strip()] = _yaml_scalar(written)
    written = values.get("deepspeed")
    config = resolve(written, launch.file, roots) if isinstance(written, str) else None
    if config is None:
        return []
    fields = {spec.dest for spec in argv.options("training_args")[0].values()}
    known = {key: value for key, value in values.items() if key in fields}
    flags = trainer_flags.TrainerFlags(known, frozenset(), uncertain, ())
    return [Link(launch, config, written, True, flags)]


def _argument_file_values(text: str) -> dict | None:
    """The top-level mapping of an arguments file (YAML, JSON being YAML too), or None."""
    import yaml
    try:
        value = yaml.safe_load(text)
    except (yaml.YAMLError, RecursionError, ValueError):
        return None
    return dict(value) if isinstance(value, dict) else None


def _yaml_scalar(text: str):
    """A `key=value` override as OmegaConf.from_cli reads its value (a YAML scalar). OmegaConf's own loader
    reads some spellings otherwise (`2e-5` is a float there, a string to PyYAML): a value whose type the
    Trainer replay refuses leaves the launch's arguments out (dsconfig.engine), it is never guessed."""
    import yaml
    try:
        return yaml.safe_load(text)
    except (yaml.YAMLError, ValueError):
        return text


_CONFIG_SUFFIXES = (".yaml", ".yml", ".json", ".toml")


def named_files(launch: Launch, roots: Boundary) -> list[str]:
    """The real paths of the config-like files the launch's arguments name (`--cfg-path train.yaml`,
    `config=train.yaml`, LLaMA-Factory's arguments file) that resolve in the project."""
    found = []
    words = list(launch.args)
    if launch.options.get("arguments_file"):
        words.append(launch.options["arguments_file"])
    for word in words:
        if not isinstance(word, str):
            continue
        value = word.partition("=")[2] if "=" in word else word
        if value.endswith(_CONFIG_SUFFIXES) and not value.startswith("-"):
            real = resolve(value, launch.file, roots)
            if real is not None and real not in found:
                found.append(real)
    return found


def _flag_value(words, dest: str):
    """The last value given to --dest (or --dest=value), when it is a path (not another option)."""
    value = None
    for index, word in enumerate(words):
        if not isinstance(word, str):
            continue
        if word == f"--{dest}" and index + 1 < len(words):
            following = words[index + 1]
            value = following if isinstance(following, str) and not following.startswith("-") else None
        elif word.startswith(f"--{dest}="):
            value = word.partition("=")[2]
    return value if value and value.endswith((".json", ".yaml", ".yml")) else None


def _entry_of(launch: Launch, roots: Boundary, read_text, entries: dict) -> _Entry:
    """The launch's entry script's _Entry, read once per run: `entries` holds them by script and launch folder,
    and under "files" each file's facts (_facts)."""
    key = (launch.script, launch.module, os.path.dirname(launch.file))
    if key not in entries:
        entries[key] = _entry(launch, roots, read_text, entries.setdefault("files", {}))
    return entries[key]


def _entry(launch: Launch, roots: Boundary, read_text, facts: dict) -> _Entry:
    """Whether the entry script, or a module of the project it imports, builds a Trainer from TrainingArguments,
    parses them with HfArgumentParser, and sets or re-defaults which of their fields. `facts`: each file's,
    by path, as far as this run has read them."""
    nothing = _Entry(False, False, frozenset())
    script = launch.script
    if not isinstance(script, str):
        return nothing
    path = _module_path(script, launch.file, roots) if launch.module else resolve(script, launch.file, roots)
    if path is None:
        return nothing
    text = read_text(path)
    if text is None:
        return nothing
    paths = [path]
    base = os.path.dirname(path)
    modules = facts.setdefault("modules", {})  # (folder, module name) -> the project's file, or None
    for match in _IMPORT.finditer(text):
        name = match.group(1) or match.group(2)
        if (base, name) not in modules:
            modules[base, name] = _module_file(name, base, roots)
        imported = modules[base, name]
        if imported is not None and imported not in paths:
            paths.append(imported)
    found = [_facts(candidate, read_text, facts) for candidate in paths]
    trainer = any(arguments for arguments, _, _, _, _ in found) and any(call for _, call, _, _, _ in found)
    changed = frozenset().union(*(fields for _, _, _, fields, _ in found))
    parsed = any(parsed for _, _, parsed, _, _ in found)
    return _Entry(trainer, trainer and parsed, changed, parsed and any(grpo for *_, grpo in found))


def _facts(path: str, read_text, facts: dict) -> tuple:
    """(TrainingArguments mark, Trainer call, HfArgumentParser, TrainingArguments fields set, GRPO) of one file."""
    if path not in facts:
        text = read_text(path) or ""
        changed = frozenset(name for match in _setting().finditer(text) for name in match.groups() if name)
        facts[path] = (bool(_ARGUMENT_MARKS.search(text)), bool(_TRAINER_CALL.search(text)),
                       bool(_PARSER.search(text)), changed, bool(_GRPO.search(text)))
    return facts[path]


def _module_path(name: str, launch_file: str, roots: Boundary) -> str | None:
    return resolve(name.replace(".", "/") + ".py", launch_file, roots)


def _module_file(name: str, base: str, roots: Boundary) -> str | None:
    """A module of the project: beside the script, or from a folder above it (the project root)."""
    relative = name.lstrip(".").replace(".", "/")
    folder = base
    while roots.admits(folder):
        for candidate in (os.path.join(folder, relative + ".py"), os.path.join(folder, relative, "__init__.py")):
            if os.path.isfile(candidate):
                return os.path.realpath(candidate)
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    return None
