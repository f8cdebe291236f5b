"""Which command of a script starts training, and on how many processes.

`deepspeed`, `torchrun`, `python -m torch.distributed.run` (and `.launch`), `accelerate launch`,
`python -m deepspeed.launcher.runner`, and a plain `python train.py` (one process), behind `nohup`, `exec`,
`time`, `env` and `CUDA_VISIBLE_DEVICES=...` prefixes. The launcher's options are read with its own parser's
table (dsconfig.launch.argv); the world size follows each launcher's code:

* deepspeed (launcher/runner.py main): without a hostfile one node; `--num_gpus N` takes N, `--include
  localhost:0,1` the slots named, CUDA_VISIBLE_DEVICES (when none of those is given) its devices; with none of
  them every GPU the machine shows, which only the machine knows;
* torchrun (run.py): `--nnodes` (N, or MIN:MAX when both agree) × `--nproc_per_node` (a number; `gpu`,
  `auto` and kin are the machine's), defaults 1:1 and 1, or the PET_* variables;
* accelerate launch: `--num_processes` is the total; else the config file's (linked later) or the machine's;
* llamafactory-cli train: NNODES × NPROC_PER_NODE under torchrun, which it uses when FORCE_TORCHRUN is on or
  the machine shows more than one GPU; else one process.
"""

from __future__ import annotations

import os
import re
from typing import NamedTuple

from . import argv, slurm
from .shell import SPLAT, UNKNOWN, Command


class Launch(NamedTuple):
    file: str
    line: int
    column: int
    launcher: str  # "deepspeed", "torchrun", "accelerate launch", "python", "srun" (python under srun),
    # "llamafactory-cli" or "lightning" (a script's Trainer(devices=...))
    world_size: int | None
    nodes: int | None
    per_node: int | None
    unknown_why: str | None  # why the world size is not known (None when it is)
    script: object  # the entry script (str), a module name (module=True), UNKNOWN, or None
    module: bool
    args: tuple  # the script's arguments (str, UNKNOWN, SPLAT)
    options: dict  # the launcher's own options (dest -> value)
    text: str  # the command as written

    def where(self) -> str:
        return f"{self.file}:{self.line}" if self.file else "the command line"

    def size_words(self) -> str:
        """"2 × 4 GPUs", "8 GPUs", "1 process"."""
        if self.world_size is None:
            return "an unknown number of GPUs"
        if self.launcher == "python":
            return "1 process"
        if self.launcher == "lightning" and not (self.nodes and self.nodes > 1):
            return f"{self.world_size} device{'s' if self.world_size != 1 else ''}"
        if self.launcher == "srun":
            return f"{self.world_size} task{'s' if self.world_size != 1 else ''}"
        if self.nodes and self.nodes > 1 and self.per_node:
            return f"{self.nodes} × {self.per_node} GPUs"
        return f"{self.world_size} GPU{'s' if self.world_size != 1 else ''}"


_PYTHON = re.compile(r"python(\d+(\.\d+)?)?$")
_WRAPPERS = {"nohup", "exec", "time", "stdbuf", "command", "builtin"}
_PYTHON_VALUE_OPTIONS = {"-W", "-X", "-Q"}
_MODULES = {
    "torch.distributed.run": ("torchrun", "torchrun"),
    "torch.distributed.launch": ("torch_launch", "torch.distributed.launch"),
    "deepspeed.launcher.runner": ("deepspeed", "deepspeed"),
    "accelerate.commands.launch": ("accelerate", "accelerate launch"),
}
_MACHINE_WORDS = {"gpu", "cuda", "auto", "cpu", "xpu", "npu", "hpu", "mps"}


_SRUN_VALUES = {"-N", "-n", "-c", "-p", "-J", "-t", "-o", "-e", "-w", "-A", "-G", "--nodes", "--ntasks",
                "--ntasks-per-node", "--gres", "--gpus", "--gpus-per-node", "--gpus-per-task", "--cpus-per-task",
                "--partition", "--job-name", "--time", "--mem", "--output", "--error", "--export", "--nodelist",
                "--account", "--qos", "--mpi", "--cpu-bind", "--container-image", "--container-mounts",
                "--container-workdir", "--container-name", "--distribution", "--mem-per-cpu", "--mem-per-gpu"}


def find(command: Command, file: str, submitted: bool = False) -> Launch | None:
    """The launch this command is, or None. `submitted`: the command a job submitter runs (after its `--`), which
    is not searched for another submitter in turn."""
    words = list(command.words)
    env = dict(command.env)
    srun: dict | None = None  # srun's options, when srun starts the launch (one copy per task)
    while words and isinstance(words[0], str):
        head = os.path.basename(words[0])
        if head == "srun":
            words.pop(0)
            srun = {}
            while words and isinstance(words[0], str) and words[0].startswith("-"):
                option = words.pop(0)
                name, eq, value = option.partition("=")
                if eq:
                    srun[name] = value
                elif name in _SRUN_VALUES and words:
                    srun[name] = words.pop(0)
                else:
                    srun[name] = True
            if words and not isinstance(words[0], str):
                return None
        elif head in _WRAPPERS:
            words.pop(0)
        elif head == "env":
            words.pop(0)
            while words and isinstance(words[0], str) and ("=" in words[0] or words[0].startswith("-")):
                name, _, value = words.pop(0).partition("=")
                if value or not name.startswith("-"):
                    env[name] = value
        else:
            break
    if not words or not isinstance(words[0], str):
        return None
    head = os.path.basename(words[0])
    rest = words[1:]
    if head == "deepspeed":
        return _deepspeed(command, file, argv.parse("deepspeed", rest), env, "deepspeed")
    if head == "torchrun":
        return _torchrun(command, file, argv.parse("torchrun", rest), env, "torchrun")
    if head == "accelerate" and rest[:1] == ["launch"]:
        return _accelerate(command, file, argv.parse("accelerate", rest[1:]))
    if head == "accelerate-launch":
        return _accelerate(command, file, argv.parse("accelerate", rest))
    if head in ("llamafactory-cli", "lmf") and rest[:1] == ["train"]:
        return _llamafactory(command, file, rest[1:], env)
    if _PYTHON.match(head):
        launch = _python(command, file, rest, env)
        if launch is not None and launch.launcher == "python" and "--" in launch.args and not submitted:
            # `python submit.py --cluster ... -- accelerate launch ...`: a job submitter; the launch is after --
            inner = launch.args[launch.args.index("--") + 1:]
            nested = find(command._replace(words=tuple(inner)), file, submitted=True)
            if nested is not None:
                return nested
        if launch is not None and srun is not None and launch.launcher == "python":
            tasks = slurm.srun_tasks(srun, env)  # srun starts the script once per task: the tasks are the processes
            why = None if tasks is not None else "srun starts one process per task, and the script does not fix " \
                                                  "the task count"
            launch = launch._replace(launcher="srun", world_size=tasks, nodes=None, per_node=None, unknown_why=why)
        return launch
    return None


def _python(command: Command, file: str, words: list, env: dict) -> Launch | None:
    i = 0
    while i < len(words):
        word = words[i]
        if not isinstance(word, str):
            return None  # an option the script does not determine: it may be `-c`
        if word == "-m" and i + 1 < len(words):
            module = words[i + 1]
            rest = words[i + 2:]
            if module in _MODULES:
                parser, name = _MODULES[module]
                parsed = argv.parse(parser, rest)
                if parser in ("torchrun", "torch_launch"):
                    return _torchrun(command, file, parsed, env, name)
                if parser == "deepspeed":
                    return _deepspeed(command, file, parsed, env, name)
                return _accelerate(command, file, parsed)
            if not isinstance(module, str):
                return None
            return _single(command, file, module, True, rest)
        if word.startswith("-m") and len(word) > 2:
            return _python(command, file, ["-m", word[2:], *words[i + 1:]], env)
        if word in ("-c", "-") or word.startswith("-c"):
            return None
        if word in _PYTHON_VALUE_OPTIONS:
            i += 2
            continue
        if word.startswith("-"):
            i += 1
            continue
        if not word.endswith(".py"):
            return None
        return _single(command, file, word, False, words[i + 1:])
    return None


def _single(command: Command, file: str, script, module: bool, args: list) -> Launch:
    return Launch(file, command.line, command.column, "python", 1, 1, 1, None, script, module, tuple(args), {},
                  command.text)


def _int(value) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and re.fullmatch(r"\s*[-+]?\d+\s*", value):
        return int(value)
    return None


def _deepspeed(command: Command, file: str, parsed: argv.Parsed, env: dict, name: str) -> Launch | None:
    if parsed.error is not None or parsed.script is None:
        return None
    values = parsed.values
    nodes = per_node = None
    why = None
    num_nodes, num_gpus = _int(values.get("num_nodes", -1)), _int(values.get("num_gpus", -1))
    include, exclude = values.get("include", ""), values.get("exclude", "")
    visible = env.get("CUDA_VISIBLE_DEVICES")
    if parsed.uncertain or UNKNOWN in (include, exclude) or None in (num_nodes, num_gpus):
        why = "the launcher's options hold values the script does not determine"
    elif values.get("hostfile") is not None:
        why = f"the hosts come from the hostfile {values['hostfile']}"
    elif values.get("autotuning"):
        why = "the autotuner chooses the resources"
    elif visible is not None and not isinstance(visible, str):
        why = "CUDA_VISIBLE_DEVICES is set to a value the script does not determine"
    else:
        # runner.main, in its order: visible devices become --include unless a resource option is given
        if visible and not (include or exclude or num_nodes > 1 or num_gpus > 0):
            include = f"localhost:{visible}"
        if (num_nodes >= 0 or num_gpus >= 0) and (include or exclude):
            why = f"{name} refuses --num_nodes/--num_gpus with --include/--exclude (or CUDA_VISIBLE_DEVICES)"
        elif num_nodes > 1:
            why = f"{name} refuses --num_nodes {num_nodes} without a hostfile"
        elif exclude:
            why = "--exclude leaves what the machine has, less the slots named"
        elif include:
            nodes, per_node = _included(include)
            if nodes is None:
                why = f"--include {include} takes every slot of a host, or a host only a hostfile names"
        elif num_gpus > 0:
            nodes, per_node = 1, num_gpus
        else:
            why = (f"{name} without --num_gpus, --include or CUDA_VISIBLE_DEVICES takes every GPU the machine "
                   "shows")
    size = nodes * per_node if nodes is not None and per_node is not None else None
    return Launch(file, command.line, command.column, name, size, nodes, per_node, why if size is None else None,
                  parsed.script, bool(values.get("module")), parsed.rest, values, command.text)


def _included(include: str) -> tuple[int | None, int | None]:
    """(hosts, slots per host) of an --include naming the slots of localhost (`localhost:0,1`), else (None, None)."""
    hosts = include.split("@")
    if len(hosts) != 1:
        return None, None  # without a hostfile only localhost exists: the runner refuses other hosts
    name, colon, slots = hosts[0].partition(":")
    devices = {slot.strip() for slot in slots.split(",") if slot.strip()}
    if name != "localhost" or not colon or not devices or not all(slot.isdigit() for slot in devices):
        return None, None
    return 1, len(devices)


def _torchrun(command: Command, file: str, parsed: argv.Parsed, env: dict, name: str) -> Launch | None:
    if parsed.error is not None or parsed.script is None:
        return None
    values = parsed.values
    nproc = values.get("nproc_per_node", env.get("PET_NPROC_PER_NODE", "1"))
    nnodes = values.get("nnodes", env.get("PET_NNODES", "1:1"))
    why = None
    per_node = nodes = None
    if parsed.uncertain:
        why = "the launcher's options hold values the script does not determine"
    elif not isinstance(nproc, str) or not isinstance(nnodes, str):
        why = "--nproc_per_node or --nnodes is a value the script does not determine"
    elif nproc.strip().lower() in _MACHINE_WORDS:
        why = f"--nproc_per_node {nproc} starts one process per device the machine shows"
    else:
        per_node = _int(nproc)
        low, _, high = nnodes.partition(":")
        low_n, high_n = _int(low), _int(high or low)
        if low_n is not None and low_n == high_n:
            nodes = low_n
        elif low_n is not None and high_n is not None:
            why = f"--nnodes {nnodes} is elastic: between {low_n} and {high_n} nodes"
        if per_node is None and why is None:
            why = f"--nproc_per_node {nproc} is no number"
    size = nodes * per_node if nodes is not None and per_node is not None and nodes > 0 and per_node > 0 else None
    if size is None and why is None:
        why = "the launcher's process count is not a positive number"
    return Launch(file, command.line, command.column, name, size, nodes, per_node, why if size is None else None,
                  parsed.script, bool(values.get("module")), parsed.rest, values, command.text)


def _accelerate(command: Command, file: str, parsed: argv.Parsed) -> Launch | None:
    if parsed.error is not None or parsed.script is None:
        return None
    values = parsed.values
    processes = _int(values.get("num_processes")) if "num_processes" in values else None
    machines = _int(values.get("num_machines", 1)) if "num_machines" in values else 1
    why = None
    if parsed.uncertain:
        why = "the launcher's options hold values the script does not determine"
    elif processes is None and "num_processes" in values:
        why = "--num_processes is a value the script does not determine"
    elif processes is None:
        config = values.get("config_file")
        why = (f"the processes come from {config}" if isinstance(config, str) else
               "without --num_processes or --config_file, accelerate reads the machine's default config")
    nodes = machines if processes is not None and machines else None
    per_node = processes // machines if processes is not None and machines and processes % machines == 0 else None
    return Launch(file, command.line, command.column, "accelerate launch", processes if why is None else None,
                  nodes, per_node, why, parsed.script, bool(values.get("module")), parsed.rest, values, command.text)


def _llamafactory(command: Command, file: str, words: list, env: dict) -> Launch | None:
    """`llamafactory-cli train args.yaml [key=value ...]` (LLaMA-Factory's launcher.py): torchrun when
    FORCE_TORCHRUN is on or the machine shows more than one device, with NNODES (1) × NPROC_PER_NODE (the
    device count) processes; else one process. The device count is CUDA_VISIBLE_DEVICES's when the script sets
    it; the variables are the script's (unset where it does not set them)."""
    if not words or not isinstance(words[0], str) or not words[0].endswith((".yaml", ".yml", ".json")):
        return None
    name = "llamafactory-cli"

    def value(key: str):
        return env.get(key)

    def on(key: str):
        text = value(key)
        return text if not isinstance(text, str) else text.lower() in ("true", "y", "1")

    why = None
    nodes = per_node = None
    visible = value("CUDA_VISIBLE_DEVICES")
    devices = len([d for d in visible.split(",") if d.strip()]) if isinstance(visible, str) else None
    nnodes, nproc = value("NNODES") or "1", value("NPROC_PER_NODE")
    forced = on("FORCE_TORCHRUN") or on("USE_MCA") or on("USE_MEGATRON_BRIDGE")
    if any(value(key) is not None for key in ("USE_RAY", "USE_KT", "RDZV_ID")):
        why = "USE_RAY, USE_KT or RDZV_ID hand the processes to another launcher"
    elif not all(isinstance(item, str) or item in (None, False, True) for item in (visible, nnodes, nproc, forced)):
        why = "the launcher's variables hold values the script does not determine"
    elif forced is not True and devices is None:
        why = (f"{name} runs torchrun when the machine shows more than one GPU (no FORCE_TORCHRUN and no "
               "CUDA_VISIBLE_DEVICES here)")
    elif forced is not True and devices <= 1:
        nodes, per_node = 1, 1
    elif nproc is None and devices is None:
        why = f"{name} starts one process per GPU the machine shows (no NPROC_PER_NODE here)"
    else:
        nodes, per_node = _int(nnodes), _int(nproc if nproc is not None else devices)
        if nodes is None or per_node is None or nodes <= 0 or per_node <= 0:
            nodes = per_node = None
            why = "NNODES or NPROC_PER_NODE is no positive number"
    size = nodes * per_node if nodes is not None and per_node is not None else None
    return Launch(file, command.line, command.column, name, size, nodes, per_node, why if size is None else None,
                  None, False, tuple(words[1:]), {"arguments_file": words[0]}, command.text)


__all__ = ["Launch", "SPLAT", "UNKNOWN", "find"]
