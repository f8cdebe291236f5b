"""The plan as the terminal shows it: the choices with their reasons, the per-GPU memory as a bar
chart against the GPU size, what the script must set, and the launch command.

A model's name may be a config.json's folder, a GPU's name the user's, and notes quote them: each is
escaped where it is placed (dsconfig.escape), so one stays on its line and none is a CI command."""

from __future__ import annotations

from .. import escape
from .planner import DEFAULT_MODEL, Plan
from .render import Paths

GIB = 1 << 30
WIDTH = 40  # bar columns for the whole GPU
EIGHTHS = " ▏▎▍▌▋▊▉"
ROWS = (("parameters", "parameters"), ("gradients", "gradients"), ("optimizer_states", "optimizer states"),
        ("activations", "activations"), ("buffers", "buffers"), ("overhead", "overhead"))


def gib(n: int) -> str:
    return f"{n / GIB:,.1f} GiB"


def count(n: int) -> str:
    for size, suffix in ((10 ** 12, "T"), (10 ** 9, "B"), (10 ** 6, "M"), (10 ** 3, "K")):
        if n >= size:
            return f"{n / size:.2f}{suffix}"
    return str(n)


def bar(value: int, total: int, unicode: bool = True) -> str:
    """A bar of `value` on a scale where WIDTH columns are `total`."""
    if total <= 0 or value <= 0:
        return ""
    cells = min(value / total, 1.0) * WIDTH
    if not unicode:
        return "#" * max(1, round(cells))
    full = int(cells)
    part = int((cells - full) * 8)
    text = "█" * full + (EIGHTHS[part] if part else "")
    return text or "▏"


def header(plan: Plan) -> list[str]:
    r = plan.request
    m = r.model
    name = escape.inline(m.name or "model")
    model = f"{name}, {count(m.parameters)} parameters"
    if r.module is not None and r.module.frozen:
        model += f" ({count(r.module.trainable)} trainable, {count(r.module.frozen)} frozen)"
    if r.default_model:
        model += f" (no --model or --params given: sized for the default, {DEFAULT_MODEL})"
    # the memory the plan uses, in GiB as nvidia-smi counts it, and where it comes from
    gpu = f"{gib(r.gpu_memory)}{' (' + escape.inline(r.gpu_name) + ')' if r.gpu_name else ''}"
    world = f"{r.nodes} node{'s' if r.nodes > 1 else ''} × {r.gpus} GPU{'s' if r.gpus > 1 else ''} of {gpu}"
    seq = "image input" if m.family == "vit" else f"seq {r.seq_len}"
    if r.module is not None:
        seq = f"input {'×'.join(str(d) for d in r.module.sample_shape)} per sample"
    return [f"dsconfig generate: {model} on {world}",
            f"  target {r.target}, {seq}, {r.optimizer}, {r.attention} attention"]


def batch_line(plan: Plan) -> str:
    r = plan.request
    return (f"global {plan.global_batch} = micro {plan.micro_batch} × accumulation {plan.accumulation} × "
            f"{r.gpus} GPU{'s' if r.gpus > 1 else ''} × {r.nodes} node{'s' if r.nodes > 1 else ''}")


def choices(plan: Plan) -> list[str]:
    reasons = plan.reasons
    rows = [("FSDP" if plan.shape.fsdp is not None else "ZeRO", reasons["zero"]), ("offload", reasons["offload"]),
            ("checkpointing", reasons["checkpointing"]), ("precision", reasons["precision"]),
            ("batch", batch_line(plan)), ("", reasons["batch"])]
    if plan.request.target == "hf-trainer":  # its batch keys reach the Trainer only as these arguments
        rows.append(("", f"give the Trainer --per_device_train_batch_size {plan.micro_batch} "
                         f"--gradient_accumulation_steps {plan.accumulation}"
                         + (' (ds_config.json says "auto")' if plan.shape.fsdp is None else "")))
    return ["plan"] + [f"  {label:<14}{escape.inline(text)}" for label, text in rows]


def memory_chart(plan: Plan, unicode: bool = True) -> list[str]:
    e, r = plan.estimate, plan.request
    total_gpu = r.gpu_memory
    used = e.per_gpu["total"]
    keep = total_gpu - r.budget
    lines = [f"per GPU at micro batch {plan.micro_batch}"
             f"{', gradient checkpointing' if plan.checkpointing else ''}: {gib(used)} of {gib(total_gpu)} "
             f"(bar: {WIDTH} columns = {gib(total_gpu)})"]
    for key, label in ROWS:
        value = e.per_gpu[key]
        lines.append(f"  {label:<17}{bar(value, total_gpu, unicode):<{WIDTH}}  {gib(value):>11}")
    headroom = total_gpu - used
    lines.append(f"  {'headroom':<17}{bar(headroom, total_gpu, unicode):<{WIDTH}}  {gib(headroom):>11}"
                 f"  (at least {gib(keep)}: {r.headroom:.0%} kept for fragmentation)")
    cpu = f"CPU per node: {gib(e.cpu_per_node)}"
    if r.cpu_memory is None:
        cpu += " (not checked: pass --cpu-mem)"
    else:
        cpu += f" of {gib(r.cpu_memory)}"
    lines.append(cpu)
    return lines


def text(plan: Plan, paths: Paths, written: list[str] | None, unicode: bool = True) -> str:
    if plan.shape.fsdp is not None:  # an Accelerate FSDP config: its own launch, check and script settings
        from .fsdp_render import launch_commands, lint_command, script_settings
    else:
        from .render import launch_commands, lint_command, script_settings
    lines = header(plan) + [""] + choices(plan) + [""] + memory_chart(plan, unicode)
    notes = list(plan.notes) + [n for n in plan.estimate.notes if n not in plan.notes]
    if notes:
        lines += ["", "notes"] + [f"  - {escape.inline(note)}" for note in notes]
    settings = script_settings(plan, paths)
    if settings:
        lines += ["", "the training script sets"] + [f"  {escape.inline(s)}" for s in settings]
    if written is not None:
        lines += ["", "wrote " + ", ".join(escape.inline(name) for name in written)]
    lines += ["", "check", f"  {escape.inline(lint_command(plan, paths))}"]
    lines += ["", "launch"]
    for command in launch_commands(plan, paths):  # paths under --output-dir, which may hold anything
        lines += [f"  # {escape.inline(command.label)}", f"  {escape.inline(command.text)}"]
    return "\n".join(lines) + "\n"
