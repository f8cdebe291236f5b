"""Show an Estimate: a readable table, or one JSON object (`--format json`).

A model's name may be a file's or a folder's (a config.json), a GPU's name the user's, a note may quote
either: the table escapes each as it is placed (dsconfig.escape), before a width is measured."""

from __future__ import annotations

import json

from .. import escape
from .estimator import BREAKDOWN_KEYS, Estimate

GIB = 1 << 30
LABELS = {"parameters": "parameters", "gradients": "gradients", "optimizer_states": "optimizer states",
          "activations": "activations", "buffers": "DeepSpeed buffers", "overhead": "framework overhead",
          "total": "total"}


def gib(value: int) -> str:
    return f"{value / GIB:,.2f} GiB"


def count(n: int) -> str:
    for size, suffix in ((10 ** 12, "T"), (10 ** 9, "B"), (10 ** 6, "M"), (10 ** 3, "K")):
        if n >= size:
            return f"{n / size:.2f}{suffix}"
    return str(n)


def describe_module(e: Estimate) -> list[str]:
    """The header for a --model-factory model: no layers, heads, vocabulary or sequence length."""
    m, s, p = e.model, e.setup, e.module
    model = f"{escape.line(m.name)}: {count(p.parameters)} parameters ({p.parameters:,})"
    if p.frozen:
        model += f", {count(p.trainable)} trainable, {count(p.frozen)} frozen"
    model += f", largest layer {count(p.largest_layer)}"
    if p.batchnorm:
        model += f", {p.batchnorm} BatchNorm layer{'s' if p.batchnorm > 1 else ''}"
    ckpt = f"gradient checkpointing ({p.checkpointing})" if s.gradient_checkpointing and p.checkpointed \
        else "no checkpointing"
    sample = "×".join(str(d) for d in p.sample_shape)
    training = (f"{s.precision}, micro batch {s.micro_batch} × input {sample}"
                f"{' (token ids)' if p.input_dtype == 'long' else ''}, {p.attention} attention, {ckpt}, {s.optimizer}")
    return [model, training, _zero_line(e)]


def describe_setup(e: Estimate) -> list[str]:
    if e.module is not None:
        return describe_module(e)
    m, s = e.model, e.setup
    name = escape.line(m.name or m.family)  # a config.json's folder: it starts the line
    model = f"{name}: {count(m.parameters)} parameters ({m.parameters:,}), largest layer {count(m.largest_layer_params)}"
    ckpt = "gradient checkpointing" + (" (inputs on CPU)" if s.cpu_checkpointing else "") \
        if s.gradient_checkpointing else "no checkpointing"
    tokens = m.tokens_per_sample(s.seq_len)
    seq = f"{tokens} patches+CLS" if m.family == "vit" else f"seq {s.seq_len}"
    training = (f"{s.precision}, micro batch {s.micro_batch} × {seq}, {e.activations.attention} attention, {ckpt}, "
                f"{s.optimizer}")
    return [model, training, _zero_line(e)]


def _zero_line(e: Estimate) -> str:
    s = e.setup
    world = f"{s.nodes} node{'s' if s.nodes > 1 else ''} × {s.gpus} GPU{'s' if s.gpus > 1 else ''}"
    if s.fsdp is not None:
        return f"{s.fsdp.label()} on {world}"
    offload = []
    if s.offload_optimizer != "none":
        offload.append(f"optimizer → {s.offload_optimizer}")
    if s.offload_param != "none":
        offload.append(f"parameters → {s.offload_param}")
    zero = f"ZeRO-{s.zero_stage}" + (f" (offload {', '.join(offload)})" if offload else "")
    return f"{zero} on {world}"


def table(e: Estimate) -> str:
    lines = describe_setup(e)
    rows: list[tuple[str, str]] = []
    for key in BREAKDOWN_KEYS[:-1]:
        label = "FSDP buffers" if key == "buffers" and e.setup.fsdp is not None else LABELS[key]
        rows.append((label, gib(e.per_gpu[key])))
        detail = e.buffers if key == "buffers" else e.overhead if key == "overhead" else {}
        if key == "activations":
            a = e.activations
            unit = "one block recomputed" if e.module is not None else "one layer recomputed"
            detail = {"saved at end of forward": a.kept, unit: a.recompute} if a.recompute else {}
            if a.loss:
                detail = dict(detail, **{"of which logits/loss": a.loss})
        for name, value in detail.items():
            rows.append((f"  {name}", gib(value)))
    rows.append(("total", gib(e.per_gpu["total"])))
    if e.hardware.gpu_memory is not None:
        label = f"GPU memory{f' ({escape.inline(e.hardware.gpu_name)})' if e.hardware.gpu_name else ''}"
        rows.append((label, gib(e.hardware.gpu_memory)))
        rows.append((f"  kept free ({e.hardware.headroom:.0%})", gib(e.hardware.gpu_memory - e.hardware.usable_gpu_memory)))
        rows.append(("headroom", gib(e.headroom)))
    width = max(len(label) for label, _ in rows)
    out = [*lines, "", "per GPU"]
    out += [f"  {label:<{width}}  {value:>14}" for label, value in rows]
    out += ["", "CPU per node", f"  {'model states and buffers':<{width}}  {gib(e.cpu_per_node):>14}"]
    if e.hardware.cpu_memory is not None:
        out.append(f"  {'CPU memory':<{width}}  {gib(e.hardware.cpu_memory):>14}")
        out.append(f"  {'headroom':<{width}}  {gib(e.cpu_headroom):>14}")
    out.append("")
    if e.fits is None:
        out.append("fits: unknown (give --gpu-mem or --gpu)")
    else:
        out.append(f"fits: {'yes' if e.fits else 'no'}" + _fit_rule(e))
    if e.max_micro_batch is not None:
        out.append(f"largest micro batch that fits: {e.max_micro_batch}")
    if e.remedies:
        out.append("to fit, any one of:")
        out += [f"  {escape.inline(remedy)}" for remedy in e.remedies]
    out += [f"error: {escape.inline(error)}" for error in e.errors]
    out += [f"note: {escape.inline(note)}" for note in e.notes]
    return "\n".join(out) + "\n"


def _model_dict(e: Estimate) -> dict:
    m, p = e.model, e.module
    if p is not None:
        return {"name": p.spec, "family": m.family, "parameters": p.parameters, "trainable_parameters": p.trainable,
                "frozen_parameters": p.frozen, "largest_layer_parameters": p.largest_layer,
                "input_shape": list(p.sample_shape), "input_dtype": p.input_dtype, "batchnorm": p.batchnorm > 0,
                "batchnorm_layers": p.batchnorm,
                "gradient_checkpointing": p.checkpointing if e.setup.gradient_checkpointing and p.checkpointed
                else None}
    return {"name": m.name or None, "family": m.family, "parameters": m.parameters,
            "largest_layer_parameters": m.largest_layer_params, "layers": m.layers, "hidden_size": m.hidden,
            "attention_heads": m.heads, "key_value_heads": m.kv_heads, "intermediate_size": m.intermediate,
            "vocab_size": m.vocab, "tied_embeddings": m.tied_embeddings}


def as_dict(e: Estimate) -> dict:
    s = e.setup
    setup = {"seq_len": s.seq_len, "micro_batch": s.micro_batch, "precision": s.precision,
             "gradient_checkpointing": s.gradient_checkpointing, "attention": e.activations.attention,
             "optimizer": s.optimizer, "gpus": s.gpus, "nodes": s.nodes, "zero_stage": s.zero_stage,
             "offload_optimizer": s.offload_optimizer, "offload_param": s.offload_param}
    if s.fsdp is not None:  # the DeepSpeed fields give way to FSDP's
        for key in ("zero_stage", "offload_optimizer", "offload_param"):
            del setup[key]
        f = s.fsdp
        setup.update(backend="fsdp", fsdp={"version": f.version, "sharding_strategy": f.strategy,
                                           "offload_params": f.offload_params, "wrapped_layers": f.wrapped,
                                           "full_state_dict": f.full_state_dict,
                                           "cpu_ram_efficient_loading": f.cpu_ram_efficient_loading})
    else:
        setup["backend"] = "deepspeed"
    if e.module is not None:
        del setup["seq_len"]  # the input shape says what a sample is
    return {
        "model": _model_dict(e),
        "setup": setup,
        "per_gpu_bytes": {key: e.per_gpu[key] for key in BREAKDOWN_KEYS},
        "cpu_bytes_per_node": e.cpu_per_node,
        "fits": e.fits,
        "max_micro_batch": e.max_micro_batch,
        "gpu_memory_bytes": e.hardware.gpu_memory,
        "cpu_memory_bytes": e.hardware.cpu_memory,
        "headroom_bytes": e.headroom,
        "usable_gpu_memory_bytes": e.hardware.usable_gpu_memory,
        "headroom_percent": round(e.hardware.headroom * 100),
        "buffers_bytes": dict(e.buffers),
        "overhead_bytes": dict(e.overhead),
        "activation_bytes": {"kept_after_forward": e.activations.kept, "recomputed_layer": e.activations.recompute,
                             "loss": e.activations.loss},
        "remedies": list(e.remedies),
        "errors": list(e.errors),
        "notes": list(e.notes),
    }


def as_json(e: Estimate) -> str:
    return json.dumps(as_dict(e), indent=2) + "\n"


def _fit_rule(e) -> str:
    """What "fits" was measured against: the GPU memory less the share kept free (as `generate` does)."""
    if e.hardware.gpu_memory is None:
        return ""
    return (f" ({gib(e.total)} of the {gib(e.hardware.usable_gpu_memory)} usable: {gib(e.hardware.gpu_memory)} less "
            f"{e.hardware.headroom:.0%} kept for fragmentation, as `dsconfig generate` plans; --headroom PERCENT)")
