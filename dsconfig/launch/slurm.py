"""What a SLURM batch script's `#SBATCH` lines give the job: the variables SLURM sets for its commands.

`sbatch` reads `#SBATCH` option lines before the first command; the job's commands then see SLURM_NNODES,
SLURM_NTASKS, SLURM_NTASKS_PER_NODE and SLURM_GPUS_ON_NODE. A node count given as a range (`--nodes=2-4`)
leaves them to the scheduler (not set here); so does anything not written.
"""

from __future__ import annotations

import re

_DIRECTIVE = re.compile(r"^#SBATCH[ \t]+(.*)$", re.M)
_OPTION = re.compile(r"(--[\w-]+|-[A-Za-z])(?:[= ]([^\s#]+))?")
_GPUS = re.compile(r"(?:^|,)gpu(?::[\w.-]+)?:(\d+)(?:,|$)")


def _number(text: str | None) -> int | None:
    return int(text) if text is not None and text.isdigit() and int(text) > 0 else None


def variables(text: str) -> dict[str, str]:
    """SLURM's variables as the #SBATCH lines of the script fix them (name -> value)."""
    options: dict[str, str] = {}
    for line in _DIRECTIVE.findall(text):
        for name, value in _OPTION.findall(line):
            options[name] = value
    nodes = _number(options.get("--nodes") or options.get("-N"))
    per_node = _number(options.get("--ntasks-per-node"))
    tasks = _number(options.get("--ntasks") or options.get("-n"))
    gres = options.get("--gres", "")
    gpus_match = _GPUS.search(gres)
    gpus = _number(gpus_match.group(1) if gpus_match else options.get("--gpus-per-node"))
    found: dict[str, str] = {}
    if nodes is not None:
        found["SLURM_NNODES"] = found["SLURM_JOB_NUM_NODES"] = str(nodes)
    if per_node is not None:
        found["SLURM_NTASKS_PER_NODE"] = str(per_node)
    if tasks is None and nodes is not None and per_node is not None:
        tasks = nodes * per_node
    if tasks is not None:
        found["SLURM_NTASKS"] = found["SLURM_NPROCS"] = str(tasks)
    if gpus is not None:
        found["SLURM_GPUS_ON_NODE"] = found["SLURM_GPUS_PER_NODE"] = str(gpus)
    return found


def srun_tasks(options: dict[str, object], env: dict) -> int | None:
    """How many copies of its command `srun` starts: its own -n/--ntasks; or nodes × tasks per node, each its
    own option or else the job's (an srun inside a job runs on all of its nodes); or the job's task count."""
    tasks = _number(_text(options.get("--ntasks") or options.get("-n")))
    if tasks is not None:
        return tasks
    nodes = _number(_text(options.get("--nodes") or options.get("-N")))
    per_node = _number(_text(options.get("--ntasks-per-node")))
    if nodes is None and per_node is None:
        return _number(_text(env.get("SLURM_NTASKS")))
    nodes = nodes if nodes is not None else _number(_text(env.get("SLURM_NNODES")))
    per_node = per_node if per_node is not None else _number(_text(env.get("SLURM_NTASKS_PER_NODE")))
    return nodes * per_node if nodes is not None and per_node is not None else None


def _text(value) -> str | None:
    return value if isinstance(value, str) else None
