"""Model states, DeepSpeed buffers and framework overhead, per GPU and per node.

Model states at ZeRO stages 2 and 3 are DeepSpeed's own estimators
(`estimate_zero2_model_states_mem_needs`, `estimate_zero3_model_states_mem_needs`, 0.19.8),
reproduced operation for operation — the same float expressions in the same order — so the
numbers agree to the byte (tests/estimate/test_estimate_states.py calls the real functions). Those
estimators assume 16-bit training with Adam; the per-parameter bytes below reduce to theirs in
that case and say what changes for fp32 and other optimizers:

    param   16-bit weights 2, fp32 weights 4
    grad    the gradient in the training dtype (2 or 4) and, for 16-bit training, the fp32
            gradient the optimizer steps on (4)
    master  the fp32 master weights of 16-bit training (4; none in fp32 training)
    states  the optimizer's own: Adam/AdamW 8 (m, v), SGD with momentum 4, Lion 4,
            8-bit AdamW ~2.03, Adafactor ~4·(rows + columns) per matrix

ZeRO-1 partitions master + states + fp32 gradient, ZeRO-2 also the 16-bit gradient, ZeRO-3 also
the weights — the ZeRO paper's partitioning (Rajbhandari et al. 2020, §5) with DeepSpeed's bytes
per state, so stage 0 = 20 B/param and stage 1 = 4 + 16/G B/param for 16-bit Adam, which is also
what DeepSpeed's autotuner assumes (Autotuner.get_instantiation_memory_required_per_gpu). DeepSpeed's ZeRO-3 estimator counts 18 B/param
partitioned (2 weights + 4 gradient + 12 optimizer) and 4·L for the largest layer gathered with
its gradient; we split it that way.
"""

from __future__ import annotations

from dataclasses import dataclass

from .shapes import ModelShape, _module_params

ABF = 1.5  # DeepSpeed's additional_buffer_factor default: headroom its CPU figures include
MIB = 1 << 20

# Framework overhead per GPU (approximate, not from DeepSpeed): the CUDA context with cuBLAS and
# kernel images (CUDA >= 11.7 loads modules lazily: about 0.5 GiB on A100/H100), and NCCL's
# channel buffers and streams once there is more than one rank.
CUDA_CONTEXT = 512 * MIB
COMMUNICATOR = 512 * MIB

# DeepSpeed defaults (zero_optimization), in elements.
REDUCE_BUCKET = 500_000_000
ALLGATHER_BUCKET = 500_000_000
PREFETCH_BUCKET = 50_000_000
PERSISTENCE_THRESHOLD = 100_000
MAX_LIVE_PARAMETERS = 1_000_000_000
# NVMe swapping (aio) pins buffers on the CPU: offload_param buffer_count 5 × buffer_size 1e8.
PARAM_SWAP_BUFFERS = 5 * 100_000_000
OPTIMIZER_SWAP_BUFFERS = 4  # optimizer swapper: buffer_count 4 sub-groups in flight

OPTIMIZERS = ("adamw", "adam", "sgd", "adafactor", "adamw-8bit", "lion")


@dataclass(frozen=True)
class States:
    """Model-state bytes on each GPU, and CPU bytes per node."""

    parameters: int
    gradients: int
    optimizer_states: int
    cpu_per_node: int

    @property
    def gpu_total(self) -> int:
        return self.parameters + self.gradients + self.optimizer_states


def optimizer_state_bytes(optimizer: str, shape: ModelShape, total_params: int) -> int:
    """Bytes of the optimizer's own state for all parameters (fp32 unless said otherwise)."""
    if optimizer in ("adamw", "adam"):
        return 8 * total_params
    if optimizer in ("sgd", "lion"):
        return 4 * total_params  # one fp32 buffer: SGD's momentum, Lion's exp_avg
    if optimizer == "adamw-8bit":
        # bitsandbytes: m and v in int8 plus an fp32 absmax per 256-element block for each
        return 2 * total_params + 8 * total_params // 256
    if optimizer == "adafactor":
        # factored second moment: a row and a column vector per matrix, about 2/hidden per weight
        return max(4, 8 * total_params // max(1, shape.hidden))
    raise ValueError(f"unknown optimizer {optimizer!r}")


def model_states(shape: ModelShape, *, precision: str, optimizer: str, stage: int, gpus: int, nodes: int,
                 offload_optimizer: str = "none", offload_param: str = "none", zero_init: bool = True,
                 total_params: int | None = None, largest_layer_params: int | None = None) -> States:
    """Per-GPU parameters, gradients and optimizer states, and CPU bytes per node."""
    P = shape.parameters if total_params is None else total_params
    L = shape.largest_layer_params if largest_layer_params is None else largest_layer_params
    # frozen parameters (requires_grad=False) are weights only: DeepSpeed's optimizer gets the
    # trainable ones (the HF Trainer and Accelerate pass only those), so no gradient, fp32 master or
    # state exists for the rest; ZeRO-3 partitions every parameter's weights all the same
    T = P if shape.trainable_parameters is None or total_params is not None else shape.trainable_parameters
    G = gpus * nodes
    half = precision in ("bf16", "fp16")
    param = 2 if half else 4
    grad_copy = 4 if half else 0  # the fp32 gradient partition 16-bit training steps on
    master = 4 if half else 0
    states = optimizer_state_bytes(optimizer, shape, T)
    grads_full = param * T  # gradient in the training dtype
    partitioned_optimizer = master * T + states  # what ZeRO-1 and up shard
    cpu_state = 4 * T + master * T + states  # offloaded: fp32 gradient + master + states
    off_opt = offload_optimizer in ("cpu", "nvme")
    off_param = offload_param in ("cpu", "nvme") and stage == 3

    if stage == 0:
        return States(param * P, grads_full + grad_copy * T, partitioned_optimizer, _load(P, gpus))
    if stage in (1, 2):
        if off_opt:
            # ZeRO-Offload: the optimizer partitions and their fp32 gradients live on the CPU
            gradients = grads_full if stage == 1 else 0
            return States(param * P, gradients, 0, _offloaded_cpu(P, G, cpu_state, offload_optimizer, gpus))
        if stage == 1:
            gradients = grads_full + int(grad_copy * T / G)
            return States(param * P, gradients, int(partitioned_optimizer / G), _load(P, gpus))
        # DeepSpeed: gpu_mem = 2 * P + int(18 * P / G), 18 = 2 + 4 + 4 + 8
        sharded = int((grads_full + grad_copy * T + partitioned_optimizer) / G)
        gradients = int((grads_full + grad_copy * T) / G)
        return States(param * P, gradients, sharded - gradients, _load(P, gpus))
    if stage != 3:
        raise ValueError(f"ZeRO stage must be 0-3, got {stage}")

    largest = 2 * param * L  # DeepSpeed: largest_layer_memory = 4 * L (16-bit weights + gradients)
    gathered_params = largest // 2
    gathered_grads = largest - gathered_params
    grad3 = 4 * T  # DeepSpeed's ZeRO-3 figure keeps 4 B/param of gradient (18 = 2 + 4 + 12)
    gpus_factor = 1 / nodes
    nvme = "nvme" in (offload_optimizer, offload_param if off_param else "none")
    if off_opt and off_param:
        # DeepSpeed: gpu = 4 * L; cpu = P * 18 * (1/nodes) * 1.5, or P * max(4 * g, 18 / nodes) * 1.5
        per_param = _per_param(param * P + grad3 + partitioned_optimizer, P)
        cpu = _nvme_cpu(P, L, gpus, G, zero_init, offload_optimizer, offload_param, param) if nvme \
            else _zero3_cpu(P, per_param, gpus, gpus_factor, zero_init)
        return States(gathered_params, gathered_grads, 0, cpu)
    if off_opt:
        # DeepSpeed: gpu = 4 * L + int(2 * P / G); cpu = P * 16 * (1/nodes) * 1.5 (or the max form)
        per_param = _per_param(grad3 + partitioned_optimizer, P)
        cpu = _nvme_cpu(P, L, gpus, G, zero_init, offload_optimizer, "none", param) if nvme \
            else _zero3_cpu(P, per_param, gpus, gpus_factor, zero_init)
        return States(gathered_params + int(param * P / G), gathered_grads, 0, cpu)
    grads_part = int(grad3 / G)
    if off_param:
        # not in DeepSpeed's table: weights on the CPU, gradients and optimizer on the GPU
        sharded_total = int((grad3 + partitioned_optimizer) / G)
        cpu = _nvme_cpu(P, L, gpus, G, zero_init, "none", offload_param, param) if nvme \
            else _zero3_cpu(P, param, gpus, gpus_factor, zero_init)
        return States(gathered_params, gathered_grads + grads_part, sharded_total - grads_part, cpu)
    # DeepSpeed: gpu = 4 * L + int(18 * P / G); cpu = L * 4 * g * 1.5 with zero.Init, else P * 4 * g * 1.5
    sharded_total = int((param * P + grad3 + partitioned_optimizer) / G)
    params_part = int(param * P / G)
    cpu = int(L * 4 * gpus * ABF) if zero_init else _load(P, gpus)
    return States(gathered_params + params_part, gathered_grads + grads_part,
                  sharded_total - params_part - grads_part, cpu)


def _per_param(total_bytes: int, P: int):
    """Bytes per parameter: an int when exact (16-bit Adam: 18, 16), so DeepSpeed's float
    expression is repeated with the very same operands."""
    return total_bytes // P if total_bytes % P == 0 else total_bytes / P


def _zero3_cpu(P: int, per_param, gpus: int, gpus_factor: float, zero_init: bool) -> int:
    """DeepSpeed's ZeRO-3 offload CPU term: with zero.Init each node holds its share; without, every
    rank first loads the whole fp32 model (4 B/param each)."""
    if zero_init:
        return int(P * per_param * gpus_factor * ABF)
    return int(P * max(4 * gpus, per_param * gpus_factor) * ABF)


def _load(P: int, gpus: int) -> int:
    """Every rank of the node holds the fp32 model in CPU memory while loading (DeepSpeed's P·4·g·1.5)."""
    return int(P * 4 * gpus * ABF)


def _offloaded_cpu(P: int, G: int, cpu_bytes: int, device: str, gpus: int) -> int:
    """ZeRO-Offload at stage 1/2, DeepSpeed: P · max(4·G, 16) · 1.5 (16 = fp32 gradient + master + Adam;
    4·G: DeepSpeed counts every rank's fp32 load copy here, with G the total GPU count)."""
    if device == "nvme":
        return _load(P, gpus)
    return int(P * max(4 * G, _per_param(cpu_bytes, P)) * ABF)


def _nvme_cpu(P, L, gpus, G, zero_init, offload_optimizer, offload_param, param) -> int:
    """NVMe offload keeps the states on disk; the CPU holds loading memory and pinned swap buffers.

    Approximate: DeepSpeed has no formula for it.
    """
    cpu = int(L * 4 * gpus * ABF) if zero_init else _load(P, gpus)
    if offload_param == "nvme":
        cpu += gpus * PARAM_SWAP_BUFFERS * param
    elif offload_param == "cpu":
        cpu += int(P * param / (G // gpus) * ABF)
    if offload_optimizer == "nvme":
        cpu += gpus * OPTIMIZER_SWAP_BUFFERS * min(MAX_LIVE_PARAMETERS, -(-P // G)) * 4
    elif offload_optimizer == "cpu":
        cpu += int(P * 16 / (G // gpus) * ABF)
    return cpu


# -- buffers and overhead ------------------------------------------------------------------------

@dataclass(frozen=True)
class Buckets:
    """zero_optimization sizes (elements) that decide DeepSpeed's communication buffers."""

    reduce_bucket_size: int = REDUCE_BUCKET
    allgather_bucket_size: int = ALLGATHER_BUCKET
    prefetch_bucket_size: int = PREFETCH_BUCKET
    param_persistence_threshold: int = PERSISTENCE_THRESHOLD
    max_live_parameters: int = MAX_LIVE_PARAMETERS
    overlap_comm: bool | None = None  # None: DeepSpeed's default (True at stage 3, False below)


def buffers(shape: ModelShape, *, precision: str, stage: int, gpus: int, nodes: int, buckets: Buckets,
            offload_param: str = "none") -> dict[str, int]:
    """DeepSpeed's GPU communication buffers, by name (bytes)."""
    param = 2 if precision in ("bf16", "fp16") else 4
    world = gpus * nodes
    P = shape.parameters if shape.trainable_parameters is None else shape.trainable_parameters  # what is reduced
    overlap = buckets.overlap_comm if buckets.overlap_comm is not None else stage == 3
    out: dict[str, int] = {}
    if stage == 0:
        if world > 1:
            # the engine flattens gradients into buckets of reduce_bucket_size for the all-reduce
            out["allreduce bucket"] = min(buckets.reduce_bucket_size, P) * param
        return out
    if stage in (1, 2):
        # contiguous gradients are reduced through ipg buffers of reduce_bucket_size, two with overlap_comm
        out["reduce buckets"] = min(buckets.reduce_bucket_size, P) * param * (2 if overlap else 1)
        # updated partitions are all-gathered in chunks of allgather_bucket_size
        if world > 1:
            out["allgather bucket"] = min(buckets.allgather_bucket_size, P) * param
        return out
    # one flat ipg bucket of reduce_bucket_size (ZeRO-3 overlaps on a side stream, not a second buffer)
    out["reduce bucket"] = min(buckets.reduce_bucket_size, P) * param
    # parameters gathered ahead of use, beyond the layer being computed (counted in the model states)
    out["prefetch bucket"] = min(buckets.prefetch_bucket_size, shape.parameters) * param  # frozen ones too
    # small parameters (norms, biases) stay gathered on every GPU
    persistent = sum(n * times for n, times in _module_params_safe(shape) if n < buckets.param_persistence_threshold)
    if offload_param in ("cpu", "nvme"):
        persistent = 0
    out["persistent parameters"] = persistent * param
    return out


def _module_params_safe(shape: ModelShape) -> list[tuple[int, int]]:
    if "parameter_sizes" in shape.extra:  # measured (--model-factory): DeepSpeed's test is per parameter
        return list(shape.extra["parameter_sizes"])
    try:
        return _module_params(shape)
    except ValueError:
        return []


def overhead(*, world: int, transient: int) -> dict[str, int]:
    """Framework overhead per GPU: CUDA context, communicator, the step's largest temporary
    beyond the saved activations."""
    out = {"CUDA context": CUDA_CONTEXT}
    if world > 1:
        out["NCCL communicator"] = COMMUNICATOR
    if transient:
        out["loss backward temporaries"] = transient
    return out
