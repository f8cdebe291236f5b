"""What would make a setup that does not fit fit: the same estimate, one change at a time.

Tried in the order a user would reach for them, each alone: a smaller micro batch with gradient
accumulation (the global batch kept), gradient checkpointing, a higher ZeRO stage, optimizer offload
to the CPU, more GPUs. Each remedy is estimated with the same model, activations and hardware, so it
is what `estimate` would answer for that command line; `dsconfig generate` picks among them.
"""

from __future__ import annotations

import dataclasses

from . import estimator


def remedies(result: estimator.Estimate, measured_activations: int | None = None) -> list[str]:
    """One line per change that makes `result`'s setup fit; [] when it fits or nothing was asked."""
    if result.fits is not False:
        return []
    setup, hardware, model, module = result.setup, result.hardware, result.model, result.module
    least = 2 if module is not None and module.batchnorm else 1

    def fits(**change) -> estimator.Estimate | None:
        if measured_activations is not None and "gradient_checkpointing" in change:
            return None  # --profile measured one mode only
        try:
            tried = estimator.estimate(model, dataclasses.replace(setup, **change), hardware,
                                       measured_activations=measured_activations, module=module)
        except ValueError:
            return None
        return tried if tried.fits else None

    lines = []
    best = result.max_micro_batch
    if best and best >= least and best < setup.micro_batch:
        wanted = setup.micro_batch
        divisor = max(d for d in range(1, best + 1) if wanted % d == 0)  # the same samples per optimizer step
        if divisor >= max(least, best // 2):
            lines.append(f"--micro-batch {divisor} with gradient accumulation {wanted // divisor}: the same {wanted} "
                         "samples per GPU per optimizer step")
        else:
            steps = -(-wanted // best)
            lines.append(f"--micro-batch {best} (the largest that fits) with gradient accumulation {steps}: "
                         f"{best * steps} samples per GPU per optimizer step")
    if not setup.gradient_checkpointing and (module is None or module.checkpointed is not None):
        tried = fits(gradient_checkpointing=True)
        if tried is not None:
            lines.append(f"--gradient-checkpointing: fits, up to micro batch {tried.max_micro_batch}")
    elif not setup.gradient_checkpointing:
        lines.append("--gradient-checkpointing may fit: re-run with it to measure the checkpointed module")
    if setup.fsdp is not None:
        return lines + _fsdp_remedies(setup, fits, bool(lines))
    for stage in range(setup.zero_stage + 1, 4):
        if setup.gpus * setup.nodes == 1:
            break  # nothing to shard over on one GPU
        tried = fits(zero_stage=stage)
        if tried is not None:
            lines.append(f"--zero-stage {stage}: fits, up to micro batch {tried.max_micro_batch}")
            break
    if not lines and not setup.gradient_checkpointing and setup.gpus * setup.nodes > 1:
        for stage in range(max(setup.zero_stage, 1), 4):  # no single change on the GPUs: two together
            tried = fits(zero_stage=stage, gradient_checkpointing=True)
            if tried is not None:
                lines.append(f"--zero-stage {stage} --gradient-checkpointing: fits, up to micro batch "
                             f"{tried.max_micro_batch}")
                break
    for change in ({"zero_stage": max(setup.zero_stage, 2), "offload_optimizer": "cpu"},
                   {"zero_stage": 3, "offload_optimizer": "cpu", "offload_param": "cpu"}):
        if setup.offload_optimizer != "none" and setup.offload_param != "none":
            break
        tried = fits(**change)
        if tried is not None:
            words = " ".join(f"--{key.replace('_', '-')} {value}" for key, value in change.items())
            lines.append(f"{words}: fits, up to micro batch {tried.max_micro_batch} (needs "
                         f"{tried.cpu_per_node / 2 ** 30:.1f} GiB of CPU memory per node)")
            break
    for more in (2, 4, 8):
        gpus = setup.gpus * more
        tried = fits(gpus=gpus, zero_stage=max(setup.zero_stage, 2))
        if tried is not None:
            lines.append(f"--gpus {gpus} --zero-stage {max(setup.zero_stage, 2)}: fits, up to micro batch "
                         f"{tried.max_micro_batch}")
            break
    if not lines:  # no single change: the smallest micro batch with what the GPUs can do, then with offload
        first = {"micro_batch": least, "gradient_checkpointing": True}
        if setup.gpus * setup.nodes > 1:
            first["zero_stage"] = 3
        for change in (first, {**first, "zero_stage": 3, "offload_optimizer": "cpu", "offload_param": "cpu"}):
            tried = fits(**change)
            if tried is not None:
                change["micro_batch"] = max(tried.max_micro_batch or least, least)  # the largest that fits
                words = " ".join(f"--{key.replace('_', '-')}" + ("" if value is True else f" {value}")
                                 for key, value in change.items())
                lines.append(f"{words}: fits; reach the batch with gradient accumulation")
                break
    if lines:
        lines.append("dsconfig generate with the same model and GPUs picks the least of these and writes the config")
    else:
        lines.append(f"nothing fits these GPUs at {least} sample{'s' if least > 1 else ''} per GPU, not even with "
                     "checkpointing, ZeRO-3 and offload: more GPUs, or GPUs with more memory")
    return lines


# FSDP's sharding strategies from the least sharded to the most (HYBRID_SHARD shards within a node).
FSDP_ORDER = ("NO_SHARD", "SHARD_GRAD_OP", "HYBRID_SHARD", "FULL_SHARD")


def _fsdp_remedies(setup, fits, found: bool) -> list[str]:
    """The FSDP counterparts: more sharding, parameter offload, more GPUs (options of `estimate --backend fsdp`)."""
    fsdp, lines = setup.fsdp, []
    order = [s for s in FSDP_ORDER if s != "NO_SHARD" or fsdp.version == 1]
    start = order.index(fsdp.strategy) + 1 if fsdp.strategy in order else len(order)
    for strategy in order[start:]:
        if setup.gpus * setup.nodes == 1 or (strategy == "HYBRID_SHARD" and setup.nodes == 1):
            continue
        tried = fits(fsdp=dataclasses.replace(fsdp, strategy=strategy))
        if tried is not None:
            lines.append(f"--sharding-strategy {strategy}: fits, up to micro batch {tried.max_micro_batch}")
            break
    if not fsdp.offload_params:
        tried = fits(fsdp=dataclasses.replace(fsdp, strategy="FULL_SHARD", offload_params=True))
        if tried is not None:
            strategy = "" if fsdp.strategy == "FULL_SHARD" else "--sharding-strategy FULL_SHARD "
            lines.append(f"{strategy}--offload-params: fits, up to micro batch {tried.max_micro_batch} (needs "
                         f"{tried.cpu_per_node / 2 ** 30:.1f} GiB of CPU memory per node)")
    for more in (2, 4, 8):
        tried = fits(gpus=setup.gpus * more, fsdp=dataclasses.replace(fsdp, strategy="FULL_SHARD"))
        if tried is not None:
            lines.append(f"--gpus {setup.gpus * more} --sharding-strategy FULL_SHARD: fits, up to micro batch "
                         f"{tried.max_micro_batch}")
            break
    if lines or found:
        return [*lines, ("dsconfig generate --backend fsdp with the same model and GPUs picks the least of these and "
                         "writes the config")]
    samples = f"{setup.micro_batch} sample{'s' if setup.micro_batch > 1 else ''}"
    return [(f"nothing fits these GPUs at {samples} per GPU, not even with FULL_SHARD and parameter offload: more "
             "GPUs, or GPUs with more memory")]
