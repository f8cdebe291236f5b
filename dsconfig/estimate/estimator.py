"""The per-GPU memory estimate: model states + activations + buffers + overhead, and whether it fits.

    estimate(model: ModelShape, setup: TrainingSetup, hardware: Hardware) -> Estimate

is the library entry point the generator and the lint fit-check call; `dsconfig estimate` is a
command in front of it. Standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from . import activations, fsdp_memory, memory
from .measured import ModuleProfile
from .shapes import ModelShape

PRECISIONS = ("bf16", "fp16", "fp32")
ATTENTIONS = ("flash", "eager")
OFFLOAD_DEVICES = ("none", "cpu", "nvme")
MAX_MICRO_BATCH = 1 << 16  # the search for the largest micro batch stops here
BREAKDOWN_KEYS = ("parameters", "gradients", "optimizer_states", "activations", "buffers", "overhead", "total")


@dataclass(frozen=True)
class TrainingSetup:
    seq_len: int = 2048
    micro_batch: int = 1
    precision: str = "bf16"
    gradient_checkpointing: bool = False
    cpu_checkpointing: bool = False  # DeepSpeed activation_checkpointing.cpu_checkpointing: layer inputs on CPU
    attention: str = "flash"
    optimizer: str = "adamw"
    gpus: int = 1  # per node
    nodes: int = 1
    zero_stage: int = 0
    offload_optimizer: str = "none"
    offload_param: str = "none"
    zero_init: bool = True  # ZeRO-3 weights partitioned while loading (deepspeed.zero.Init / HF from_pretrained)
    buckets: memory.Buckets = field(default_factory=memory.Buckets)
    fsdp: fsdp_memory.Fsdp | None = None  # PyTorch FSDP instead of DeepSpeed (zero_stage and offload unused)

    @property
    def world_size(self) -> int:
        return self.gpus * self.nodes

    def check(self) -> None:
        """Raise ValueError with a one-line reason for a setup that cannot be estimated."""
        if self.precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, got {self.precision!r}")
        if self.attention not in ATTENTIONS:
            raise ValueError(f"attention must be flash or eager, got {self.attention!r}")
        if self.optimizer not in memory.OPTIMIZERS:
            raise ValueError(f"optimizer must be one of {', '.join(memory.OPTIMIZERS)}, got {self.optimizer!r}")
        for name in ("seq_len", "micro_batch", "gpus", "nodes"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name.replace('_', '-')} must be at least 1, got {getattr(self, name)}")
        if self.zero_stage not in (0, 1, 2, 3):
            raise ValueError(f"zero stage must be 0, 1, 2 or 3, got {self.zero_stage}")
        for name in ("offload_optimizer", "offload_param"):
            if getattr(self, name) not in OFFLOAD_DEVICES:
                raise ValueError(f"{name.replace('_', '-')} must be none, cpu or nvme, got {getattr(self, name)!r}")
        if self.offload_optimizer != "none" and self.zero_stage == 0:
            raise ValueError("offloading the optimizer needs ZeRO stage 1, 2 or 3")
        if self.fsdp is not None:
            if self.zero_stage or self.offload_optimizer != "none" or self.offload_param != "none":
                raise ValueError("FSDP has no ZeRO stage or DeepSpeed offload: use the sharding strategy and "
                                 "offload_params")
            self.fsdp.check()


# The share of GPU memory a plan leaves free for the allocator's fragmentation: `estimate` and `generate`
# say "fits" by the same rule (total <= memory less this), so one never accepts what the other rejects.
DEFAULT_HEADROOM = 0.10


@dataclass(frozen=True)
class Hardware:
    gpu_memory: int | None = None  # bytes per GPU; None: no fit question
    cpu_memory: int | None = None  # bytes per node
    gpu_name: str | None = None
    bf16: bool | None = None  # whether the GPU computes in bf16 (None: unknown)
    headroom: float = DEFAULT_HEADROOM  # of gpu_memory, kept free

    @property
    def usable_gpu_memory(self) -> int | None:
        """What a setup may use: the GPU memory less the headroom."""
        return None if self.gpu_memory is None else int(self.gpu_memory * (1 - self.headroom))


@dataclass
class Estimate:
    per_gpu: dict[str, int]  # BREAKDOWN_KEYS
    cpu_per_node: int
    fits: bool | None
    max_micro_batch: int | None
    headroom: int | None  # usable GPU memory (less the kept share) - total: negative when it does not fit
    cpu_headroom: int | None
    buffers: dict[str, int]
    overhead: dict[str, int]
    activations: activations.Activations
    model: ModelShape
    setup: TrainingSetup
    hardware: Hardware
    notes: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # why the setup cannot train whatever the memory
    module: ModuleProfile | None = None  # what --model-factory measured
    remedies: list[str] = field(default_factory=list)  # what would make it fit (estimate.remedies)

    @property
    def total(self) -> int:
        return self.per_gpu["total"]


def estimate(model: ModelShape, setup: TrainingSetup, hardware: Hardware = Hardware(), *,
             measured_activations: int | None = None, module: ModuleProfile | None = None) -> Estimate:
    """Per-GPU memory for training `model` with `setup`, and whether it fits `hardware`.

    `measured_activations` replaces the analytic activation figure at the setup's micro batch
    (from `--profile`); the largest micro batch is then found by scaling it linearly. `module`
    (from `--model-factory`, with `model` = measured.module_shape(module)) gives the activations
    measured on the module at every micro batch.
    """
    setup.check()
    notes: list[str] = []
    if module is not None and setup.gradient_checkpointing and module.checkpointed is None:
        notes.append("nothing to checkpoint was found (no enable_gradient_checkpointing() / "
                     "gradient_checkpointing_enable(), no ModuleList or Sequential of repeated blocks): "
                     "activations measured without checkpointing")
    if setup.offload_param != "none" and setup.zero_stage != 3:
        notes.append("offload_param only works at ZeRO stage 3; DeepSpeed ignores it here")
    if setup.precision == "bf16" and hardware.bf16 is False:
        notes.append(f"{hardware.gpu_name or 'this GPU'} has no bf16: DeepSpeed raises 'Type bf16 is not supported "
                     "on your device'; use fp16")
    if setup.attention == "flash" and setup.precision == "fp32":
        notes.append("flash attention kernels need bf16/fp16; fp32 runs SDPA's memory-efficient kernel, which "
                     "keeps the same tensors")
    if setup.fsdp is not None:
        notes += _fsdp_notes(setup)
        states = fsdp_memory.model_states(model, precision=setup.precision, optimizer=setup.optimizer,
                                          fsdp=setup.fsdp, gpus=setup.gpus, nodes=setup.nodes)
        bufs = fsdp_memory.buffers(model, precision=setup.precision, fsdp=setup.fsdp)
    else:
        states = memory.model_states(model, precision=setup.precision, optimizer=setup.optimizer,
                                     stage=setup.zero_stage, gpus=setup.gpus, nodes=setup.nodes,
                                     offload_optimizer=setup.offload_optimizer, offload_param=setup.offload_param,
                                     zero_init=setup.zero_init)
        bufs = memory.buffers(model, precision=setup.precision, stage=setup.zero_stage, gpus=setup.gpus,
                              nodes=setup.nodes, buckets=setup.buckets, offload_param=setup.offload_param)

    def at(batch: int):
        if module is not None:
            kept, recompute = module.activations(setup.gradient_checkpointing).at(batch)
            acts = activations.Activations(kept + recompute, kept, recompute, 0, module.attention)
        else:
            acts = activations.estimate(model, batch=batch, seq_len=setup.seq_len, precision=setup.precision,
                                        checkpointing=setup.gradient_checkpointing, attention=setup.attention)
        gpu_acts, cpu_acts = acts.total, 0
        if measured_activations is not None:
            gpu_acts = measured_activations * batch // setup.micro_batch
        elif setup.gradient_checkpointing and setup.cpu_checkpointing:
            inputs = _layer_inputs(model, batch, setup)
            gpu_acts, cpu_acts = acts.total - inputs, inputs
        # the loss's backward runs while everything is still saved; layers are recomputed only after
        # the loss tensors are freed, so only the part of the temporary above the recompute adds
        recompute = acts.recompute if measured_activations is None else 0
        transient = 0 if module is not None else max(0, _transient(model, batch, setup) - recompute)
        over = memory.overhead(world=setup.world_size, transient=transient)
        per_gpu = {"parameters": states.parameters, "gradients": states.gradients,
                   "optimizer_states": states.optimizer_states, "activations": gpu_acts,
                   "buffers": sum(bufs.values()), "overhead": sum(over.values())}
        per_gpu["total"] = sum(per_gpu.values())
        return per_gpu, acts, over, cpu_acts

    per_gpu, acts, over, cpu_acts = at(setup.micro_batch)
    notes.extend(acts.notes)
    cpu = states.cpu_per_node + cpu_acts * setup.gpus
    headroom = cpu_headroom = None
    fits = max_batch = None
    if hardware.gpu_memory is not None:
        usable = hardware.usable_gpu_memory
        headroom = usable - per_gpu["total"]
        fits = headroom >= 0
        max_batch = _largest_batch(lambda b: at(b)[0]["total"] <= usable)
    if hardware.cpu_memory is not None:
        cpu_headroom = hardware.cpu_memory - cpu
        fits = (fits is not False) and cpu_headroom >= 0
    errors = [single_sample_error(module)] if module is not None and module.batchnorm and setup.micro_batch == 1 \
        else []
    return Estimate(per_gpu, cpu, fits, max_batch, headroom, cpu_headroom, bufs, over, acts, model, setup,
                    hardware, notes, errors, module)


def _fsdp_notes(setup: TrainingSetup) -> list[str]:
    fsdp, notes = setup.fsdp, []
    if fsdp.strategy in fsdp_memory.HYBRID and setup.nodes == 1:
        notes.append(f"{fsdp.strategy} on one node shards over its {setup.gpus} GPUs, as FULL_SHARD does")
    if fsdp.strategy in fsdp_memory.HYBRID and fsdp.version == 2:
        notes.append("FSDP2 shards within a node and replicates across nodes only on a 2-D device mesh: Accelerate "
                     "builds it from parallelism_config (dp_replicate_size = nodes, dp_shard_size = GPUs per node)")
    if fsdp.offload_params:
        notes.append("fsdp_offload_params keeps the sharded parameters, gradients and optimizer states in CPU memory "
                     "and steps the optimizer there: every unit crosses PCIe twice per step")
    if not fsdp.wrapped:
        notes.append("no transformer layer class is wrapped: the whole model is one FSDP unit, gathered at once")
    return notes


def single_sample_error(module: ModuleProfile) -> str:
    """Micro batch 1 with BatchNorm: what torch said when the measurement ran one sample, or why not."""
    layers = f"{module.batchnorm} BatchNorm layer{'s' if module.batchnorm > 1 else ''}"
    if module.single_sample_error:
        return (f"micro batch 1: the model's {layers} fail with one sample per GPU ({module.single_sample_error}); "
                "use a micro batch of at least 2")
    return (f"micro batch 1: the model has {layers}, which normalise with the statistics of each GPU's own batch; "
            "with one sample per GPU a BatchNorm that sees one value per channel fails (\"Expected more than 1 "
            "value per channel when training\") and the others train on single-sample statistics; use a micro "
            "batch of at least 2")


def _layer_inputs(model: ModelShape, batch: int, setup: TrainingSetup) -> int:
    """Bytes of the per-layer inputs checkpointing keeps (what cpu_checkpointing moves to the CPU)."""
    dt = activations.DTYPE_BYTES[setup.precision]
    layers = model.layers + model.decoder_layers
    return layers * dt * batch * model.tokens_per_sample(setup.seq_len) * model.hidden


def _transient(model: ModelShape, batch: int, setup: TrainingSetup) -> int:
    """The largest short-lived tensor pair of the step: in backward, the gradient of the fp32
    log-softmax and of its input (2 × 4·t·V bytes) exist while the saved activations still do."""
    if model.family == "vit":
        return 0
    tokens = batch * model.tokens_per_sample(setup.seq_len)
    if model.family == "t5":
        dt = activations.DTYPE_BYTES[setup.precision]
        return 2 * dt * tokens * model.vocab
    return 8 * tokens * model.vocab


def largest_fitting(fits, low: int, high: int) -> int:
    """The largest m in [low, high] with fits(m), given fits(low) and fits monotone (true then false)."""
    if high <= low or fits(high):
        return max(low, high)
    while high - low > 1:
        middle = (low + high) // 2
        if fits(middle):
            low = middle
        else:
            high = middle
    return low


def _largest_batch(fits) -> int:
    """The largest micro batch b >= 1 with fits(b) (memory grows with b), 0 if not even 1 fits."""
    if not fits(1):
        return 0
    low = 1
    while low * 2 <= MAX_MICRO_BATCH and fits(low * 2):
        low *= 2
    return largest_fitting(fits, low, min(2 * low - 1, MAX_MICRO_BATCH))

