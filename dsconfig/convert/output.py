"""What `dsconfig convert` writes: the converted files (from the shared templates) and the table.

FSDP: templates/accelerate/fsdp.yaml through dsconfig.fsdp.settings.accelerate_yaml. DeepSpeed:
templates/deepspeed/<shape>.json filled as `dsconfig generate` fills them (dsconfig.generate.render)
and templates/accelerate/deepspeed_config_file.yaml naming it.

The table shows what the input files hold (their names, keys and values): each piece is escaped as it is
placed (dsconfig.escape), so a key holding a newline stays on its row and nothing printed is a CI command;
the JSON table is escape.json_text. The header comments of the files escape the names they quote (a
newline there would end the comment and break the YAML).
"""

from __future__ import annotations

import json
import shlex

from .. import escape
from ..fsdp.settings import FsdpSettings, accelerate_yaml
from ..generate import templates
from ..generate.render import (
    ACCELERATE_CONFIG,
    AUTO,
    DS_CONFIG,
    FP16,
    MAIN_HOST,
    OMIT,
    PORT,
    File,
    fill,
    fill_text,
    understood,
    yaml_scalar,
)
from ..targets import HF_TRAINER, LIGHTNING, Target
from .mapping import STATUSES, Launch, Row, ZeroChoice

FSDP_CONFIG = "accelerate_fsdp.yaml"
# DeepSpeed's own defaults (runtime/zero/config.py), written out for targets that do not fill "auto".
DEEPSPEED_BUCKETS = {"reduce_bucket_size": 500_000_000, "stage3_prefetch_bucket_size": 50_000_000,
                     "stage3_param_persistence_threshold": 100_000}


def _header(source: str, check: str) -> str:
    """Two comment lines; file names in them are escaped, so each stays one comment line."""
    return f"# dsconfig convert: from {escape.inline(source)}\n# check: {escape.inline(check)}\n"


# -- FSDP ------------------------------------------------------------------------------------------

def fsdp_files(settings: FsdpSettings, launch: Launch, source: str, yaml_name: str = FSDP_CONFIG) -> list[File]:
    multinode = launch.num_machines > 1
    ip = launch.main_process_ip or (MAIN_HOST if multinode else None)
    port = launch.main_process_port if launch.main_process_port is not None else (PORT if multinode else None)
    text = accelerate_yaml(settings, num_processes=launch.num_processes, num_machines=launch.num_machines,
                           main_process_ip=ip, main_process_port=port)
    return [File(FSDP_CONFIG, _header(source, f"dsconfig lint {shlex.quote(yaml_name)}") + text)]


# -- DeepSpeed -------------------------------------------------------------------------------------

def shape_name(choice: ZeroChoice) -> str:
    if choice.stage == 3:
        return "zero3_offload_all" if choice.offload else "zero3"
    if choice.offload:
        return "zero2_offload_optimizer"
    return f"zero{choice.stage}"


def ds_values(choice: ZeroChoice, target: Target, micro_batch: int) -> dict:
    """The placeholders of the DeepSpeed templates, as dsconfig.generate.render.ds_values fills them:
    "auto" for the HF Trainer, numbers for the others (Lightning sets the accumulation and clipping)."""
    hf, lightning = target is HF_TRAINER, target is LIGHTNING
    config_optimizer = hf and choice.offload  # DeepSpeed builds its CPU Adam from the Trainer's lr/betas/...
    values = {
        "train_batch_size": AUTO if hf else OMIT if lightning else micro_batch * choice.num_processes,
        "train_micro_batch_size_per_gpu": AUTO if hf else micro_batch,
        "gradient_accumulation_steps": AUTO if hf else OMIT if lightning else 1,
        "gradient_clipping": AUTO if hf else OMIT if lightning else 1.0,
        "bf16": {"enabled": True} if choice.precision == "bf16" else OMIT,
        "fp16": dict(FP16) if choice.precision == "fp16" else OMIT,
        "zero_allow_untested_optimizer": OMIT,
        "zero_force_ds_cpu_optimizer": OMIT if config_optimizer else False,
        "optimizer": ({"type": "AdamW", "params": {"lr": AUTO, "betas": AUTO, "eps": AUTO, "weight_decay": AUTO}}
                      if config_optimizer else OMIT),
    }
    values.update({key: AUTO if hf else value for key, value in DEEPSPEED_BUCKETS.items()})
    return values


def ds_config(choice: ZeroChoice, target: Target, micro_batch: int) -> dict:
    config = fill(templates.deepspeed(shape_name(choice)), ds_values(choice, target, micro_batch))
    zero = config["zero_optimization"]
    if choice.stage == 3:
        zero["stage3_gather_16bit_weights_on_model_save"] = choice.gather_16bit
    if choice.hpz:
        zero["zero_hpz_partition_size"] = choice.hpz
    return understood(config, None)


def deepspeed_files(choice: ZeroChoice, target: Target, micro_batch: int, source: str, ds_path: str = DS_CONFIG,
                    yaml_path: str = ACCELERATE_CONFIG) -> list[File]:
    text = json.dumps(ds_config(choice, target, micro_batch), indent=2, allow_nan=False) + "\n"
    files = [File(DS_CONFIG, text)]
    if not target.fills_auto:  # plain DeepSpeed and Lightning start their own processes
        return files
    multinode = choice.num_machines > 1
    values = {
        "deepspeed_config_file": ds_path,
        "deepspeed_multinode_launcher": "standard" if multinode else OMIT,
        "zero3_init_flag": choice.zero_init,
        "main_process_ip": (choice.main_process_ip or MAIN_HOST) if multinode else OMIT,
        "main_process_port": (choice.main_process_port or PORT) if multinode else OMIT,
        "num_machines": choice.num_machines,
        "num_processes": choice.num_processes,
    }
    check = (f"dsconfig lint {shlex.quote(ds_path)} {shlex.quote(yaml_path)} --target {target.name}")
    body = fill_text(templates.text("accelerate/deepspeed_config_file.yaml"), values, quote=yaml_scalar)
    return files + [File(ACCELERATE_CONFIG, _header(source, check) + body)]


# -- the table -------------------------------------------------------------------------------------

def table_text(rows: list[Row], title: str) -> str:
    """The table for people: each setting's source, target and reason escaped where it is placed."""
    width = max(len(status) for status in STATUSES)
    lines = [escape.line(title)]
    for row in rows:
        lines.append(f"  {row.status:<{width}}  {escape.inline(row.source)} -> {escape.inline(row.target)}")
        lines.append(f"  {'':<{width}}  {escape.inline(row.reason)}")
    counts = ", ".join(f"{sum(r.status == s for r in rows)} {s}" for s in STATUSES)
    lines.append(f"{len(rows)} settings: {counts}")
    return "\n".join(lines) + "\n"


def table_json(rows: list[Row], *, sources: list[str], to: str, files: list[str]) -> str:
    """The table for programs: the same strings when parsed, and nothing raw a terminal or CI log acts on."""
    return escape.json_text(json.dumps({"from": sources, "to": to, "files": files,
                                        "rows": [row._asdict() for row in rows],
                                        "counts": {status: sum(r.status == status for r in rows)
                                                   for status in STATUSES}},
                                       indent=2, ensure_ascii=False)) + "\n"
