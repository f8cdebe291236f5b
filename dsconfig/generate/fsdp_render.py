"""`generate --backend fsdp`: an FSDP plan as an Accelerate config, launch commands and SLURM script.

The YAML is `dsconfig.fsdp.settings.accelerate_yaml` filled from the plan's `FsdpSettings`
(templates/accelerate/fsdp.yaml), with the plan in a header comment. The layer class to wrap comes
from dsconfig.fsdp.settings.LAYER_CLASSES by the model's `model_type`; for any other model the YAML
names none and Accelerate wraps the classes the model lists in `_no_split_modules` (utils/dataclasses.py
`set_auto_wrap_policy`). A `--model-factory` module is one unit (NO_WRAP), checkpointed by the script.
"""

from __future__ import annotations

import shlex

from ..fsdp.settings import FsdpSettings, accelerate_yaml
from ..fsdp.settings import layer_class as layer_class_of
from ..targets import ACCELERATE
from . import templates
from .planner import Plan
from .render import (
    ACCELERATE_CONFIG,
    MAIN_HOST,
    PORT,
    SLURM,
    Command,
    File,
    Paths,
    fill_text,
    plan_target,
    summary_lines,
    trainer_arguments,
)

# model_type -> the decoder layer class transformers 5.23 lists first in `_no_split_modules`, for the
# catalog's architectures (one small table, to be replaced by a generated one).
DEFAULT_PATHS = Paths()
MIXED_PRECISION = {"bf16": "bf16", "fp16": "fp16", "fp32": "no"}  # the plan's precision -> Accelerate's mixed_precision


def layer_class(plan: Plan) -> str | None:
    return layer_class_of((plan.request.model.config or {}).get("model_type"))


def settings(plan: Plan) -> FsdpSettings:
    fsdp, module = plan.shape.fsdp, plan.request.module is not None
    return FsdpSettings(version=fsdp.version, sharding_strategy=fsdp.strategy, offload_params=fsdp.offload_params,
                        # a module is checkpointed by its own script (as measured); a transformer by Accelerate
                        activation_checkpointing=plan.checkpointing and not module,
                        auto_wrap_policy="NO_WRAP" if module else "TRANSFORMER_BASED_WRAP",
                        transformer_layer_cls_to_wrap=None if module else layer_class(plan),
                        mixed_precision=MIXED_PRECISION[plan.precision])


def notes(plan: Plan) -> list[str]:
    out = []
    if plan.request.module is None and layer_class(plan) is None:
        out.append("no layer class to wrap is known for this model: the YAML names none, and Accelerate wraps the "
                   "classes in the model's _no_split_modules (set fsdp_transformer_layer_cls_to_wrap otherwise)")
    if plan.request.nodes > 1 and plan.shape.fsdp.version == 2:
        out.append("FSDP2 on several nodes shards over every GPU; HYBRID_SHARD (shard within a node) needs "
                   "--fsdp-version 1")
    return out


def lint_command(plan: Plan, paths: Paths) -> str:
    r = plan.request
    return (f"dsconfig lint {shlex.quote(paths.accelerate_config)} --target {r.target} --gpus {r.gpus} "
            f"--nodes {r.nodes}")


def yaml_text(plan: Plan, paths: Paths = DEFAULT_PATHS) -> str:
    r = plan.request
    header = "".join(f"# {line}\n" for line in summary_lines(plan))
    header += f"# check: {lint_command(plan, paths)}\n"
    launch = {}
    if r.nodes > 1:
        header += (f"# Run on every node with its own --machine_rank (0 on {MAIN_HOST}); replace {MAIN_HOST} with the "
                   "rank-0 host.\n")
        launch = {"main_process_ip": MAIN_HOST, "main_process_port": PORT}
    return header + accelerate_yaml(settings(plan), num_processes=r.world_size, num_machines=r.nodes, **launch)


def script_command(plan: Plan, paths: Paths) -> list[str]:
    """The script and, for the HF Trainer, its TrainingArguments (checkpointing is the YAML's: transformers
    refuses it in both places)."""
    words = [shlex.quote(paths.script)]
    if plan_target(plan) is not ACCELERATE:
        for key, value in trainer_arguments(plan).items():
            if key != "gradient_checkpointing":
                words += [f"--{key}"] if value is True else [f"--{key}", str(value)]
    return words


def script_settings(plan: Plan, paths: Paths) -> list[str]:
    if plan_target(plan) is not ACCELERATE:
        return []
    out = [f"DataLoader(batch_size={plan.micro_batch}) passed to accelerator.prepare()",
           f"Accelerator(gradient_accumulation_steps={plan.accumulation})"]
    module = plan.request.module
    if plan.checkpointing and module is not None:
        out.append(f"gradient checkpointing as measured: {module.checkpointing}")
    return out


def launch_commands(plan: Plan, paths: Paths) -> list[Command]:
    r = plan.request
    yaml, script = shlex.quote(paths.accelerate_config), " ".join(script_command(plan, paths))
    if r.nodes == 1:
        return [Command("accelerate launch", f"accelerate launch --config_file {yaml} {script}")]
    return [Command("SLURM", f"sbatch {shlex.quote(paths.slurm)}"),
            Command(f"accelerate launch, on every node ($NODE_RANK = 0 on {MAIN_HOST}, 1, ...)",
                    f"accelerate launch --config_file {yaml} --machine_rank $NODE_RANK {script}")]


def slurm_text(plan: Plan, paths: Paths = DEFAULT_PATHS) -> str:
    r = plan.request
    inner = (f"accelerate launch --config_file {shlex.quote(paths.accelerate_config)} --machine_rank $SLURM_NODEID "
             f"--main_process_ip $MASTER_ADDR --main_process_port $MASTER_PORT {' '.join(script_command(plan, paths))}")
    values = {"job_name": "dsconfig-" + plan.shape.name, "nodes": str(r.nodes), "tasks_per_node": "1",
              "gpus": str(r.gpus), "summary": "; ".join(summary_lines(plan)), "port": str(PORT),
              "command": f"srun bash -c {shlex.quote(inner)}"}
    return fill_text(templates.text("launch/slurm.sbatch"), values, quote=str)


def files(plan: Plan, paths: Paths = DEFAULT_PATHS) -> list[File]:
    out = [File(ACCELERATE_CONFIG, yaml_text(plan, paths))]
    if plan.request.nodes > 1:
        out.append(File(SLURM, slurm_text(plan, paths), executable=True))
    return out
