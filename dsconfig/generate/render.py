"""Rendering: a Plan and the templates in `templates/` become file texts.

    files(plan, Paths(...)) -> [File(name, text, executable)]

Templates are plain files with placeholders:

* JSON (`templates/deepspeed/*.json`): a string value that is exactly `"{{name}}"` is replaced by
  the JSON value the plan gives `name` (a number, a string, an object, "auto"); a key whose value
  is OMIT disappears. Keys keep the template's order, so the output is stable.
* YAML and text (`templates/accelerate/*.yaml`, `templates/launch/*`): `"{{name}}"` (quoted, so the
  template is valid YAML) or `{{name}}` is replaced by the value written as a YAML scalar
  (strings single-quoted); a line whose value is OMIT is dropped.

The output is strict JSON (json.dumps: no NaN/Infinity, integers stay integers) and YAML in which
every string Accelerate reads is quoted ('no', 'NO' and friends cannot turn into booleans).
Standard library only.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from typing import NamedTuple

from .. import escape
from ..targets import ACCELERATE, BY_NAME, DEEPSPEED, HF_TRAINER, LIGHTNING, Target
from . import templates
from .planner import ADAM_FAMILY, Plan, nvme_param_buffer


class _Omit:
    def __repr__(self) -> str:
        return "OMIT"


OMIT = _Omit()  # the key (JSON) or line (YAML/text) is left out
AUTO = "auto"
PLACEHOLDER = re.compile(r"\{\{([a-z0-9_]+)\}\}")
FP16 = {"enabled": True, "loss_scale": 0, "loss_scale_window": 1000, "initial_scale_power": 16, "hysteresis": 2,
        "min_loss_scale": 1}
MAIN_HOST = "node-1"  # the hostfile's placeholder names: node-1 ... node-N
PORT = 29500
DS_CONFIG = "ds_config.json"
ACCELERATE_CONFIG = "accelerate_config.yaml"
HOSTFILE = "hostfile"
SLURM = "slurm.sbatch"


class TemplateError(ValueError):
    """A template names a placeholder the plan has no value for (a dsconfig bug)."""


@dataclass(frozen=True)
class File:
    name: str
    text: str
    executable: bool = False


class Paths(NamedTuple):
    """How the files name each other: paths as the launch command will see them (relative to the
    folder it runs in, normally where `dsconfig generate` ran)."""

    ds_config: str = DS_CONFIG
    accelerate_config: str = ACCELERATE_CONFIG
    hostfile: str = HOSTFILE
    slurm: str = SLURM
    script: str = "train.py"


# -- filling ------------------------------------------------------------------------------------

def fill(node, values: dict):
    """The template value with every "{{name}}" replaced; OMIT values drop their key."""
    if isinstance(node, str):
        match = PLACEHOLDER.fullmatch(node)
        if match is None:
            if PLACEHOLDER.search(node):
                raise TemplateError(f"placeholder inside a longer string: {node!r}")
            return node
        name = match.group(1)
        if name not in values:
            raise TemplateError(f"the template placeholder {{{{{name}}}}} has no value")
        return values[name]
    if isinstance(node, dict):
        out = {}
        for key, child in node.items():
            value = fill(child, values)
            if value is not OMIT:
                out[key] = value
        return out
    if isinstance(node, list):
        return [v for v in (fill(child, values) for child in node) if v is not OMIT]
    return node


def yaml_scalar(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    raise TemplateError(f"no YAML form for {value!r}")


def fill_text(template: str, values: dict, *, quote) -> str:
    """Line-wise substitution for YAML and text templates; `quote` writes a value (yaml_scalar or str)."""
    out = []
    for line in template.splitlines():
        names = PLACEHOLDER.findall(line)
        if any(values.get(name, None) is OMIT for name in names):
            continue
        for name in names:
            if name not in values:
                raise TemplateError(f"the template placeholder {{{{{name}}}}} has no value")
            line = line.replace(f'"{{{{{name}}}}}"', quote(values[name])).replace(f"{{{{{name}}}}}",
                                                                                   quote(values[name]))
        out.append(line)
    return "\n".join(out) + "\n"


# -- ds_config.json ---------------------------------------------------------------------------------

def ds_values(plan: Plan) -> dict:
    """Every placeholder of the DeepSpeed templates, for the plan's target.

    hf-trainer: "auto" wherever the Trainer fills it from TrainingArguments or the model (batch
    sizes, clipping, ZeRO-3 buckets, optimizer hyper-parameters); precision is written out so a
    run without --bf16/--fp16 stops with the Trainer's mismatch error instead of training in fp32.
    accelerate / deepspeed: concrete integers. lightning: no train_batch_size,
    gradient_accumulation_steps or gradient_clipping (the Lightning Trainer sets them from
    accumulate_grad_batches and gradient_clip_val and refuses gradient_accumulation_steps).
    """
    request, shape = plan.request, plan.shape
    target = plan_target(plan)
    hf, lightning = target is HF_TRAINER, target is LIGHTNING
    adam = request.optimizer in ADAM_FAMILY
    # Optimizer offload with the Trainer: DeepSpeed builds its CPU Adam from this block, with the
    # Trainer's lr/betas/eps/weight_decay. Elsewhere the script's optimizer is kept (zero_force false).
    config_optimizer = hf and adam and shape.offload_optimizer != "none"
    values = {
        "train_batch_size": AUTO if hf else OMIT if lightning else plan.global_batch,
        "train_micro_batch_size_per_gpu": AUTO if hf else plan.micro_batch,
        "gradient_accumulation_steps": AUTO if hf else OMIT if lightning else plan.accumulation,
        "gradient_clipping": AUTO if hf else OMIT if lightning else 1.0,
        "bf16": {"enabled": True} if plan.precision == "bf16" else OMIT,
        "fp16": dict(FP16) if plan.precision == "fp16" else OMIT,
        "zero_allow_untested_optimizer": OMIT if adam else True,
        "zero_force_ds_cpu_optimizer": OMIT if config_optimizer else False,
        "optimizer": _optimizer_block(request.optimizer) if config_optimizer else OMIT,
        "nvme_path": request.nvme_path if request.nvme_path else OMIT,
        "param_buffer_size": nvme_param_buffer(request.model, request.world_size),
    }
    b = plan.buckets
    # the Trainer fills these from model.config.hidden_size, which a --model-factory module lacks
    sized = hf and request.module is None
    values.update({
        "reduce_bucket_size": AUTO if sized else b.reduce_bucket_size,
        "stage3_prefetch_bucket_size": AUTO if sized else b.prefetch_bucket_size,
        "stage3_param_persistence_threshold": AUTO if sized else b.param_persistence_threshold,
    })
    return values


def _optimizer_block(optimizer: str) -> dict:
    params = {"lr": AUTO, "betas": AUTO, "eps": AUTO, "weight_decay": AUTO}
    if optimizer == "adam":
        return {"type": "Adam", "params": dict(params, adam_w_mode=False)}
    return {"type": "AdamW", "params": params}


def ds_config(plan: Plan) -> dict:
    return understood(fill(templates.deepspeed(plan.shape.name), ds_values(plan)), plan.request.deepspeed_version)


def understood(config: dict, version: str | None) -> dict:
    """`config` without the keys DeepSpeed `version` does not know inside its validated sections (which
    would reject them): a template is written for the newest release."""
    from ..deepspeed import releases, schema
    schema.use(version or releases.NEWEST)

    def keep(value, node):
        branch = schema.object_branch(node) if node is not None else None
        if not isinstance(value, dict) or branch is None:
            return value
        known = set(schema.known_keys(branch))
        strict = "x-deepspeed-model" in branch and branch["x-deepspeed-model"].get("extra") == "forbid"
        return {key: keep(item, schema.property_of(branch, key)) for key, item in value.items()
                if key in known or not strict}
    return keep(config, schema.root())


def ds_config_text(plan: Plan) -> str:
    return json.dumps(ds_config(plan), indent=2, allow_nan=False) + "\n"


# -- accelerate_config.yaml -------------------------------------------------------------------------

def plan_target(plan: Plan) -> Target:
    return BY_NAME[plan.request.target]


def writes_accelerate_config(plan: Plan) -> bool:
    """The HF Trainer and Accelerate targets run under `accelerate launch`; Lightning and plain
    DeepSpeed scripts start their own processes and never read the YAML."""
    return plan_target(plan).fills_auto


def accelerate_values(plan: Plan, paths: Paths) -> dict:
    request = plan.request
    multinode = request.nodes > 1
    return {
        "deepspeed_config_file": paths.ds_config,
        # torchrun on every node: no pdsh/ssh and no hostfile needed (Accelerate's `standard` launcher)
        "deepspeed_multinode_launcher": "standard" if multinode else OMIT,
        "zero3_init_flag": plan.shape.stage == 3,
        "main_process_ip": MAIN_HOST if multinode else OMIT,
        "main_process_port": PORT if multinode else OMIT,
        "num_machines": request.nodes,
        "num_processes": request.world_size,  # the TOTAL over all machines
    }


def lint_command(plan: Plan, paths: Paths) -> str:
    """The `dsconfig lint` run that checks the generated files as they will be used (the target matters:
    without it a JSON named by an Accelerate YAML is linted for an Accelerate prepare() loop)."""
    request = plan.request
    files = [paths.ds_config] + ([paths.accelerate_config] if writes_accelerate_config(plan) else [])
    from ..deepspeed.releases import NEWEST
    older = request.deepspeed_version and request.deepspeed_version != NEWEST
    release = f" --deepspeed-version {request.deepspeed_version}" if older else ""
    return (f"dsconfig lint {' '.join(shlex.quote(f) for f in files)} --target {request.target} "
            f"--gpus {request.gpus} --nodes {request.nodes}{release}")


def accelerate_text(plan: Plan, paths: Paths = Paths()) -> str:
    header = "".join(f"# {line}\n" for line in summary_lines(plan))
    header += f"# check: {lint_command(plan, paths)}\n"
    if plan.request.nodes > 1:
        header += (f"# Run on every node with its own --machine_rank (0 on {MAIN_HOST}); replace {MAIN_HOST} with the "
                   "rank-0 host.\n")
    body = fill_text(templates.text("accelerate/deepspeed_config_file.yaml"), accelerate_values(plan, paths),
                     quote=yaml_scalar)
    return header + body


# -- multi-node -------------------------------------------------------------------------------------

def hostfile_text(plan: Plan) -> str:
    request = plan.request
    hosts = "\n".join(f"node-{i} slots={request.gpus}" for i in range(1, request.nodes + 1))
    return fill_text(templates.text("launch/hostfile"), {"hosts": hosts}, quote=str)


def slurm_text(plan: Plan, paths: Paths = Paths()) -> str:
    request = plan.request
    target = plan_target(plan)
    if target is LIGHTNING:
        command = f"srun python {shlex.quote(paths.script)}"
        tasks = request.gpus  # Lightning's SLURM environment: one task per GPU
    elif target is ACCELERATE:
        inner = (f"accelerate launch --config_file {shlex.quote(paths.accelerate_config)} --machine_rank $SLURM_NODEID "
                 f"--main_process_ip $MASTER_ADDR --main_process_port $MASTER_PORT {shlex.quote(paths.script)}")
        command = f"srun bash -c {shlex.quote(inner)}"
        tasks = 1
    else:
        command = ("srun torchrun --nnodes $SLURM_NNODES --nproc_per_node " + str(request.gpus)
                   + " --rdzv_id $SLURM_JOB_ID --rdzv_backend c10d --rdzv_endpoint $MASTER_ADDR:$MASTER_PORT "
                   + " ".join(script_command(plan, paths)))
        tasks = 1
    values = {"job_name": "dsconfig-" + plan.shape.name, "nodes": str(request.nodes), "tasks_per_node": str(tasks),
              "gpus": str(request.gpus), "summary": "; ".join(summary_lines(plan)), "port": str(PORT),
              "command": command}
    return fill_text(templates.text("launch/slurm.sbatch"), values, quote=str)


# -- what the script is given -----------------------------------------------------------------------

def trainer_arguments(plan: Plan) -> dict:
    """The TrainingArguments the HF Trainer needs for this plan (what its "auto" values are filled from)."""
    args = {"per_device_train_batch_size": plan.micro_batch, "gradient_accumulation_steps": plan.accumulation}
    if plan.precision in ("bf16", "fp16"):
        args[plan.precision] = True
    # Under FSDP the Accelerate YAML checkpoints (fsdp_activation_checkpointing); transformers refuses
    # gradient_checkpointing on top of it. A --model-factory module has no YAML checkpointing.
    fsdp_checkpoints = plan.shape.fsdp is not None and plan.request.module is None
    if plan.checkpointing and not fsdp_checkpoints:
        args["gradient_checkpointing"] = True
    return args


def script_command(plan: Plan, paths: Paths) -> list[str]:
    """The training script and its arguments (HF Trainer: the TrainingArguments flags)."""
    words = [shlex.quote(paths.script)]
    if plan_target(plan) is HF_TRAINER:
        words += ["--deepspeed", shlex.quote(paths.ds_config)]
        for key, value in trainer_arguments(plan).items():
            words += [f"--{key}"] if value is True else [f"--{key}", str(value)]
    return words


def script_settings(plan: Plan, paths: Paths) -> list[str]:
    """What the training script itself must set, for targets whose script owns the loop."""
    request = plan.request
    m, a = plan.micro_batch, plan.accumulation
    how = "model.gradient_checkpointing_enable() (HF models; torch.utils.checkpoint otherwise)"
    if request.module is not None and request.module.checkpointing:
        how = f"gradient checkpointing as measured: {request.module.checkpointing}"
    ckpt = [how] if plan.checkpointing else []
    target = plan_target(plan)
    if target is ACCELERATE:
        return [f"DataLoader(batch_size={m}) passed to accelerator.prepare()",
                f"Accelerator(gradient_accumulation_steps={a})"] + ckpt
    if target is DEEPSPEED:
        offload = ["pass deepspeed.ops.adam.DeepSpeedCPUAdam as the optimizer (a torch optimizer works, slower)"] \
            if plan.shape.offload_optimizer != "none" else []
        initialize = f"deepspeed.initialize(..., config={paths.ds_config!r})"
        return [initialize, f"DataLoader(batch_size={m})"] + offload + ckpt
    if target is LIGHTNING:
        precision = {"bf16": "bf16-mixed", "fp16": "16-mixed", "fp32": "32-true"}[plan.precision]
        trainer = (f"Trainer(strategy=DeepSpeedStrategy(config={paths.ds_config!r}), accelerator=\"gpu\", "
                   f"devices={request.gpus}, num_nodes={request.nodes}, precision=\"{precision}\", "
                   f"accumulate_grad_batches={a}, gradient_clip_val=1.0)")
        return [trainer, f"DataLoader(batch_size={m})"] + ckpt
    return []  # the HF Trainer: everything is in the TrainingArguments of the launch command


class Command(NamedTuple):
    label: str
    text: str


def launch_commands(plan: Plan, paths: Paths) -> list[Command]:
    """The launch commands for the target, the recommended one first."""
    request = plan.request
    g, n = request.gpus, request.nodes
    script = " ".join(script_command(plan, paths))
    target = plan_target(plan)
    yaml = shlex.quote(paths.accelerate_config)
    accelerate = f"accelerate launch --config_file {yaml} {script}"
    deepspeed = f"deepspeed --num_gpus {g} {script}"
    torchrun = f"torchrun --nproc_per_node {g} {script}"
    if n == 1:
        if target is LIGHTNING:
            return [Command("Lightning starts its processes itself", f"python {shlex.quote(paths.script)}")]
        if target.fills_auto:
            out = [Command("accelerate launch", accelerate)]
            if target is HF_TRAINER:
                out += [Command("or deepspeed", deepspeed), Command("or torchrun", torchrun)]
            return out
        return [Command("deepspeed", deepspeed), Command("or torchrun", torchrun)]
    rank = "$NODE_RANK"
    out = [Command("SLURM", f"sbatch {shlex.quote(paths.slurm)}")]
    if target.fills_auto:
        out.append(Command(f"accelerate launch, on every node ({rank} = 0 on {MAIN_HOST}, 1, ...)",
                           f"accelerate launch --config_file {yaml} --machine_rank {rank} {script}"))
    if target is not ACCELERATE:
        hostfile = shlex.quote(paths.hostfile)
        if target is not LIGHTNING:
            out.append(Command(f"deepspeed, once on {MAIN_HOST} (ssh/pdsh to the hostfile's nodes)",
                               f"deepspeed --hostfile {hostfile} --num_nodes {n} --num_gpus {g} "
                               f"--master_addr {MAIN_HOST} --master_port {PORT} {script}"))
        out.append(Command(f"torchrun, on every node ({rank} = 0 on {MAIN_HOST}, 1, ...)",
                           f"torchrun --nnodes {n} --nproc_per_node {g} --node_rank {rank} --master_addr {MAIN_HOST} "
                           f"--master_port {PORT} {script if target is not LIGHTNING else shlex.quote(paths.script)}"))
    return out


# -- all files ---------------------------------------------------------------------------------------

def _count(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


def comment_text(text: str) -> str:
    """`text` as part of one comment line of a generated file: escape.inline (no control character, bidi
    override or `##[`), and every other character str.isprintable refuses (U+FFFF, which YAML cannot hold;
    U+FEFF, U+200B, U+00A0) written as its escape too. A model's name is its config.json's folder, which
    may hold anything: raw, a newline would end the comment (the YAML would not parse) and `--stdout`
    would print the rest as a line of its own."""
    text = escape.inline(text)
    if text.isprintable():
        return text
    return "".join(char if char.isprintable() else
                   f"\\x{ord(char):02x}" if ord(char) < 0x100 else
                   f"\\u{ord(char):04x}" if ord(char) < 0x10000 else f"\\U{ord(char):08x}" for char in text)


def summary_lines(plan: Plan) -> list[str]:
    """Two lines recording the plan in the generated files (JSON cannot carry comments: the YAML and
    the SLURM script do): what was chosen, and the batch arithmetic to re-check with dsconfig lint.
    Each is one safe comment line (comment_text: the model's name may be any folder's)."""
    request = plan.request
    model = comment_text(request.model.name) if request.model.name else f"{request.model.parameters:,} parameters"
    head = (f"dsconfig generate: {plan.shape.label} for {model} on {_count(request.nodes, 'node')} x "
            f"{_count(request.gpus, 'GPU')} (world size {request.world_size}), {plan.precision}, "
            f"target {request.target}")
    batch = (f"global batch {plan.global_batch} = micro {plan.micro_batch} x accumulation {plan.accumulation} x "
             f"{_count(request.gpus, 'GPU')} x {_count(request.nodes, 'node')}")
    if plan.checkpointing:
        batch += "; gradient checkpointing on"
    return [head, batch]


def files(plan: Plan, paths: Paths = Paths()) -> list[File]:
    out = [File(DS_CONFIG, ds_config_text(plan))]
    if writes_accelerate_config(plan):
        out.append(File(ACCELERATE_CONFIG, accelerate_text(plan, paths)))
    if plan.request.nodes > 1:
        out.append(File(HOSTFILE, hostfile_text(plan)))
        out.append(File(SLURM, slurm_text(plan, paths), executable=True))
    return out
