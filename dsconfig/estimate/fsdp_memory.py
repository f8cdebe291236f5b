"""PyTorch FSDP's per-GPU model states and gathered parameters, as Accelerate 1.15 sets FSDP up.

What Accelerate builds (utils/dataclasses.py `FullyShardedDataParallelPlugin`, accelerator.py,
utils/fsdp_utils.py `fsdp2_prepare_model`) and what each piece costs, per GPU, for P parameters
(T trainable), shard degree S (FULL_SHARD / SHARD_GRAD_OP: every GPU; HYBRID_*: the GPUs of a
node, replicated across nodes; NO_SHARD: 1) and compute dtype c bytes (bf16/fp16 2, fp32 4):

    sharded parameters   4·P/S   Accelerate upcasts the parameters to fp32 when mixed precision
                                 is on (FSDP2: the trainable ones; frozen ones keep c bytes)
    sharded gradients    4·T/S   reduce-scattered, then kept in the parameters' fp32
    optimizer states     states(T)/S   (Adam 8·T/S) built on the sharded parameters
    gathered parameters  the peak, in backward: c·(root + 2·layer) with FULL_SHARD / HYBRID_SHARD
                         (and NO_SHARD's low-precision copies): the root unit (embeddings, final
                         norm, LM head when not wrapped separately) is gathered through the whole
                         backward, one wrapped layer is computed while the next is prefetched;
                         c·P with SHARD_GRAD_OP / HYBRID_SHARD_ZERO2 (nothing is freed after
                         forward). Measured on a gloo group (tests/estimate/test_estimate_fsdp.py).
    unit gradient        c·unit (FSDP1: the flat parameter's gradient) or 2·c·unit (FSDP2:
                         the gradients plus the reduce-scatter input they are copied into), for
                         the largest unit
    CPU offload          (fsdp_offload_params) sharded parameters, gradients and optimizer
                         states in host memory (the optimizer steps there): 4P/S + 4T/S +
                         states(T)/S per GPU, the GPU keeps what is gathered
    CPU per node         offloaded states, plus the larger of loading (rank 0 alone holds the
                         fp32 model with cpu_ram_efficient_loading, every rank without) and a
                         FULL_STATE_DICT save (rank 0 gathers the fp32 model and the optimizer
                         states in CPU memory: Accelerate's FullStateDictConfig(offload_to_cpu=True,
                         rank0_only=True))

Without a transformer layer class to wrap (NO_WRAP, or a module whose layers are unknown) the
whole model is one unit. Standard library only; docs/estimate.md states the sources.
"""

from __future__ import annotations

from dataclasses import dataclass

from .memory import States, optimizer_state_bytes
from .shapes import ModelShape, _module_params

# torch's ShardingStrategy names, in its order (dsconfig.fsdp.settings.SHARDING_STRATEGIES)
STRATEGIES = ("FULL_SHARD", "SHARD_GRAD_OP", "NO_SHARD", "HYBRID_SHARD", "HYBRID_SHARD_ZERO2")
RESHARDING = ("FULL_SHARD", "HYBRID_SHARD", "NO_SHARD")  # gathered (or low-precision) copies freed after each unit
HYBRID = ("HYBRID_SHARD", "HYBRID_SHARD_ZERO2")  # sharded within a node, replicated across nodes


@dataclass(frozen=True)
class Fsdp:
    """An FSDP setup as far as memory goes."""

    strategy: str = "FULL_SHARD"
    version: int = 2
    offload_params: bool = False
    wrapped: bool = True  # each transformer layer is its own unit (TRANSFORMER_BASED_WRAP)
    full_state_dict: bool = False  # FULL_STATE_DICT: rank 0 gathers the whole state in CPU memory to save
    cpu_ram_efficient_loading: bool = True

    def check(self) -> None:
        if self.strategy not in STRATEGIES:
            raise ValueError(f"sharding strategy must be one of {', '.join(STRATEGIES)}, got {self.strategy!r}")
        if self.version not in (1, 2):
            raise ValueError(f"FSDP version must be 1 or 2, got {self.version!r}")
        if self.version == 2 and self.strategy == "NO_SHARD":
            raise ValueError("FSDP2 has no NO_SHARD (fully_shard always shards): use FSDP1 (--fsdp-version 1) or "
                             "plain data parallelism")

    def label(self) -> str:
        offload = " + parameter offload to CPU" if self.offload_params else ""
        return f"FSDP{self.version} {self.strategy}{offload}"


def shard_degree(fsdp: Fsdp, gpus: int, nodes: int) -> int:
    if fsdp.strategy == "NO_SHARD":
        return 1
    return gpus if fsdp.strategy in HYBRID else gpus * nodes


@dataclass(frozen=True)
class Units:
    """Parameters of the largest wrapped layer and of what is left to the root unit."""

    layer: int
    root: int

    @property
    def largest(self) -> int:
        return max(self.layer, self.root)


def units(shape: ModelShape, wrapped: bool) -> Units:
    """The FSDP units: one per transformer layer and the root (everything else), or one in all."""
    if not wrapped:
        return Units(0, shape.parameters)
    try:
        modules = _module_params(shape)
    except ValueError:  # ShapeError: a --model-factory module, whose layers are not known
        return Units(0, shape.parameters)
    per_layer: dict[int, int] = {}
    for size, times in modules:
        if times > 1:
            per_layer[times] = per_layer.get(times, 0) + size
    if not per_layer:
        return Units(0, shape.parameters)
    layer = max(per_layer.values())
    if shape.family == "t5" and shape.layers == shape.decoder_layers:
        layer = _t5_decoder_block(shape)  # encoder and decoder blocks share the count: take the larger
    repeated = sum(size * times for size, times in modules if times > 1)
    return Units(layer, max(0, shape.parameters - repeated))


def _t5_decoder_block(s: ModelShape) -> int:
    attention = 4 * s.hidden * s.q_dim
    ff = s.hidden * s.intermediate * (3 if s.mlp.startswith("gated") else 2)
    return 2 * attention + ff + 3 * s.hidden


def model_states(shape: ModelShape, *, precision: str, optimizer: str, fsdp: Fsdp, gpus: int,
                 nodes: int) -> States:
    """Per-GPU sharded parameters, gradients and optimizer states; CPU bytes per node."""
    P = shape.parameters
    T = P if shape.trainable_parameters is None else shape.trainable_parameters
    S = shard_degree(fsdp, gpus, nodes)
    half = precision in ("bf16", "fp16")
    frozen_bytes = 2 if half and fsdp.version == 2 else 4  # FSDP1 upcasts whole flat parameters
    params = _ceil(4 * T + frozen_bytes * (P - T), S)
    grads = _ceil(4 * T, S)
    states = _ceil(optimizer_state_bytes(optimizer, shape, T), S)
    load = 4 * P * (1 if fsdp.cpu_ram_efficient_loading else gpus)
    save = 4 * P + optimizer_state_bytes(optimizer, shape, T) if fsdp.full_state_dict else 0
    if fsdp.offload_params:
        return States(0, 0, 0, (params + grads + states) * gpus + max(load, save))
    return States(params, grads, states, max(load, save))


def buffers(shape: ModelShape, *, precision: str, fsdp: Fsdp) -> dict[str, int]:
    """What FSDP gathers on each GPU beyond the sharded states (bytes, by name)."""
    c = 2 if precision in ("bf16", "fp16") else 4
    u = units(shape, fsdp.wrapped)
    out: dict[str, int] = {}
    if fsdp.strategy == "NO_SHARD" and c == 4:
        pass  # fp32 NO_SHARD computes on the parameters themselves: no copy
    elif fsdp.strategy in RESHARDING:
        if u.layer:
            out["gathered root unit (embeddings, head)"] = c * u.root
            out["gathered layers (computed + prefetched)"] = 2 * c * u.layer
        else:
            out["gathered model (one unit)"] = c * u.root
    else:
        out["gathered parameters (kept from forward to backward)"] = c * shape.parameters
    out["unit gradient before reduce-scatter"] = c * u.largest * (2 if fsdp.version == 2 else 1)
    return out


def _ceil(total: int, parts: int) -> int:
    return -(-total // parts)
