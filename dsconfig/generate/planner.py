"""Planning: the ZeRO stage, offload, checkpointing, precision and batch split a training run needs.

    plan(request: Request) -> Plan        raises NoFit (nothing fits) or PlanError (a bad request)

A pure function of its inputs: no files, no printing. Every decision is made against
`dsconfig.estimate.estimate` (model states exact to DeepSpeed's estimators, activations as
autograd saves them) and carries its reason, so the terminal plan can say why.

The rules, in order (docs/generate.md has the long form):

1. Precision: bf16 where the GPU computes in bf16 (unknown GPU: assumed), else fp16 with dynamic
   loss scaling; `--precision` overrides, bf16 on a GPU without it is refused.
2. Sharding: the first rung of LADDER that fits at the smallest micro batch (1; 2 with
   --batchnorm), each rung tried without and then with gradient checkpointing:
       ZeRO-0, ZeRO-1, ZeRO-2, ZeRO-3,
       ZeRO-2 + optimizer offload, ZeRO-3 + optimizer offload, ZeRO-3 + optimizer and parameter
       offload, ZeRO-3 + NVMe (only with an NVMe path).
   With `--backend fsdp` the rungs are FSDP's (fsdp_ladder): NO_SHARD (FSDP1), SHARD_GRAD_OP,
   HYBRID_SHARD (FSDP1, several nodes), FULL_SHARD, FULL_SHARD + parameter offload.
   "Fits" means the per-GPU total is at most the GPU memory less the headroom (10 % by default,
   for allocator fragmentation, which the estimate does not model), and, when the CPU memory per
   node is given, the CPU side fits in it.
3. Gradient checkpointing only when that rung does not fit without it.
4. The micro batch: the largest that fits (with that rung and checkpointing) among the ones that
   split the requested global batch exactly: micro × accumulation × GPUs × nodes = global batch.
   Without a global batch: for a language model about DEFAULT_TOKENS_PER_STEP tokens per step
   (default_global_batch), split as above; for images or a module the largest micro batch that
   fits, at most DEFAULT_MAX_MICRO, accumulation 1.
   When the global batch cannot be reached exactly, the nearest reachable one is used (equally
   near: the one with the larger micro batch, then the smaller) and both neighbours are offered.
5. Nothing fits: NoFit with a one-line reason (the command exits 1 and writes nothing).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from .. import targets
from ..estimate.estimator import DEFAULT_HEADROOM, Estimate, Hardware, TrainingSetup, estimate, largest_fitting
from ..estimate.fsdp_memory import Fsdp
from ..estimate.measured import MODULE_FAMILY, ModuleProfile
from ..estimate.memory import Buckets
from ..estimate.shapes import ModelShape
from ..values import divisors

PRECISIONS = ("auto", "bf16", "fp16", "fp32")
DEFAULT_MODEL = "llama-3.1-8b"  # sized for when no --model/--params is given: the common fine-tuning size
DEFAULT_MAX_MICRO = 32  # without --global-batch: the micro batch is the largest that fits, up to this
MAX_MICRO = 1 << 16  # the estimate's own limit for the micro batch search
ADAM_FAMILY = ("adamw", "adam")  # what DeepSpeed's ZeRO supports without zero_allow_untested_optimizer

# ZeRO-1/2 communication buckets as the templates write them (DeepSpeed's defaults, as integers).
STAGE12_BUCKET = 500_000_000
# offload_param.buffer_size for NVMe: DeepSpeed's default, raised to hold the largest parameter partition.
NVME_PARAM_BUFFER = 100_000_000


@dataclass(frozen=True)
class Shape:
    """One rung of the ladder: a ZeRO stage with its offload devices, and its template file."""

    name: str  # templates/deepspeed/<name>.json
    stage: int
    offload_optimizer: str = "none"
    offload_param: str = "none"
    label: str = ""
    fsdp: Fsdp | None = None  # an FSDP rung (`--backend fsdp`): sharding strategy and offload instead of ZeRO

    @property
    def offloads(self) -> bool:
        fsdp_offload = self.fsdp is not None and self.fsdp.offload_params
        return self.offload_optimizer != "none" or self.offload_param != "none" or fsdp_offload

    @property
    def short(self) -> str:
        """The rung in a few words: "ZeRO-2", "FULL_SHARD"."""
        return self.fsdp.strategy if self.fsdp is not None else f"ZeRO-{self.stage}"


LADDER = (
    Shape("zero0", 0, label="ZeRO-0 (plain data parallel)"),
    Shape("zero1", 1, label="ZeRO-1"),
    Shape("zero2", 2, label="ZeRO-2"),
    Shape("zero3", 3, label="ZeRO-3"),
    Shape("zero2_offload_optimizer", 2, "cpu", label="ZeRO-2 + optimizer offload to CPU"),
    Shape("zero3_offload_optimizer", 3, "cpu", label="ZeRO-3 + optimizer offload to CPU"),
    Shape("zero3_offload_all", 3, "cpu", "cpu", label="ZeRO-3 + optimizer and parameter offload to CPU"),
    Shape("zero3_nvme", 3, "nvme", "nvme", label="ZeRO-3 + optimizer and parameter offload to NVMe"),
)
SHAPES = {shape.name: shape for shape in LADDER}
BACKENDS = ("deepspeed", "fsdp")


def fsdp_ladder(version: int, nodes: int) -> tuple[Shape, ...]:
    """FSDP's rungs, least sharded first: NO_SHARD (FSDP1 only: fully_shard always shards), SHARD_GRAD_OP,
    HYBRID_SHARD on several nodes (FSDP1: FSDP2 needs a 2-D mesh from parallelism_config), FULL_SHARD, and
    FULL_SHARD with parameter offload."""
    strategies = (["NO_SHARD"] if version == 1 else []) + ["SHARD_GRAD_OP"]
    strategies += (["HYBRID_SHARD"] if version == 1 and nodes > 1 else []) + ["FULL_SHARD"]
    rungs = [Shape(f"fsdp_{s.lower()}", 0, label=f"FSDP{version} {s}", fsdp=Fsdp(s, version)) for s in strategies]
    rungs.append(Shape("fsdp_full_shard_offload", 0, label=f"FSDP{version} FULL_SHARD + CPU offload",
                       fsdp=Fsdp("FULL_SHARD", version, offload_params=True)))
    return tuple(rungs)


class PlanError(ValueError):
    """The request itself is impossible (a one-line reason for the user)."""


class NoFit(Exception):
    """Nothing fits, not even the most sharded rung allowed. `reason` is one line."""

    def __init__(self, reason: str, trials: list):
        super().__init__(reason)
        self.reason = reason
        self.trials = trials


@dataclass(frozen=True)
class Request:
    model: ModelShape
    gpu_memory: int  # bytes per GPU
    gpus: int = 1  # per node
    nodes: int = 1
    gpu_name: str | None = None
    bf16_supported: bool | None = None  # None: GPU model unknown
    cpu_memory: int | None = None  # bytes per node; None: not checked
    seq_len: int = 2048
    global_batch: int | None = None
    micro_batch: int | None = None  # fixed by the user
    precision: str = "auto"
    optimizer: str = "adamw"
    attention: str = "flash"
    target: str = "hf-trainer"
    batchnorm: bool = False
    checkpointing: bool | None = None  # None: decide; True/False: forced
    headroom: float = DEFAULT_HEADROOM  # kept free for fragmentation: the rule `estimate` uses too
    nvme_path: str | None = None  # NVMe offload is a rung only when a path is given
    template: str | None = None  # force one rung (a SHAPES name)
    default_model: bool = False  # the model is DEFAULT_MODEL because none was given
    deepspeed_version: str | None = None  # the release the config is written for (None: the newest)
    module: ModuleProfile | None = None  # --model-factory: the measured module (`model` is its shape)
    backend: str = "deepspeed"  # or "fsdp": an Accelerate FSDP config instead of a ds_config.json
    fsdp_version: int = 2

    @property
    def world_size(self) -> int:
        return self.gpus * self.nodes

    @property
    def has_batchnorm(self) -> bool:
        return self.batchnorm or (self.module is not None and self.module.batchnorm > 0)

    @property
    def budget(self) -> int:
        """GPU bytes a plan may use: the GPU memory less the headroom."""
        return int(self.gpu_memory * (1 - self.headroom))

    @property
    def min_micro(self) -> int:
        return 2 if self.has_batchnorm else 1


@dataclass(frozen=True)
class Trial:
    """One estimate the planner made: a rung, checkpointing on/off, a micro batch, and whether it fits."""

    shape: Shape
    checkpointing: bool
    micro_batch: int
    gpu_total: int
    cpu_total: int
    fits_gpu: bool
    fits_cpu: bool

    @property
    def fits(self) -> bool:
        return self.fits_gpu and self.fits_cpu


@dataclass
class Plan:
    request: Request
    shape: Shape
    precision: str
    checkpointing: bool
    micro_batch: int
    accumulation: int
    global_batch: int
    buckets: Buckets
    estimate: Estimate  # at the chosen micro batch, against the GPU memory less the headroom
    largest_micro: int  # the largest micro batch that fits with this rung and checkpointing
    reasons: dict[str, str]  # "zero", "offload", "checkpointing", "precision", "batch" -> why
    trials: list[Trial]  # every rung tried before the chosen one, and the chosen one
    exact: bool = True  # the requested global batch is reached exactly
    nearest: tuple[int, ...] = ()  # reachable global batches around the requested one (when not exact)
    notes: list[str] = field(default_factory=list)

    @property
    def world_size(self) -> int:
        return self.request.world_size

    @property
    def zero_init(self) -> bool:
        return self.shape.stage == 3


# -- the pieces ---------------------------------------------------------------------------------

def choose_precision(request: Request) -> tuple[str, str]:
    gpu = request.gpu_name or "the GPU"
    supported = request.bf16_supported
    if request.precision not in PRECISIONS:
        raise PlanError(f"--precision must be one of {', '.join(PRECISIONS)}, got {request.precision!r}")
    if request.precision == "auto":
        if supported is False:
            return "fp16", (f"{gpu} has no bf16 (compute capability below 8.0): fp16 with dynamic loss scaling")
        if supported is None:
            return "bf16", ("bf16, assuming an Ampere or newer GPU (the GPU model is not known: pass --gpu NAME, or "
                            "--precision fp16 on V100/T4)")
        return "bf16", f"bf16: {gpu} computes in bf16"
    if request.precision == "bf16" and supported is False:
        raise PlanError(f"--precision bf16: {gpu} has no bf16 (DeepSpeed raises \"Type bf16 is not supported on "
                        "your device\"); use --precision fp16 or auto")
    if request.precision == "fp16":
        return "fp16", "fp16 with dynamic loss scaling, as asked (--precision fp16)"
    return request.precision, f"{request.precision}, as asked (--precision {request.precision})"


def buckets_for(shape: Shape, model: ModelShape) -> Buckets:
    """The communication buffers the rendered config asks DeepSpeed for (what the estimate counts).

    ZeRO-1/2: the templates' 5·10⁸-element buckets, overlap_comm off. ZeRO-3: the HF Trainer's
    "auto" values from the hidden size h (reduce h², prefetch int(0.9·h²), persistence 10·h),
    overlap_comm on; the other targets get the same numbers written out. A --model-factory module
    has no hidden size (the Trainer's fill raises for a config without one): DeepSpeed's defaults.
    """
    if shape.stage in (1, 2):
        return Buckets(reduce_bucket_size=STAGE12_BUCKET, allgather_bucket_size=STAGE12_BUCKET, overlap_comm=False)
    if shape.stage == 3 and model.family == MODULE_FAMILY:
        return Buckets(overlap_comm=True)
    if shape.stage == 3:
        h = max(1, model.hidden)
        return Buckets(reduce_bucket_size=h * h, prefetch_bucket_size=int(0.9 * h * h),
                       param_persistence_threshold=10 * h, overlap_comm=True)
    return Buckets()


def nvme_param_buffer(model: ModelShape, world: int) -> int:
    """offload_param.buffer_size: the swap buffers hold parameter partitions, the largest one must fit."""
    return max(NVME_PARAM_BUFFER, -(-model.largest_layer_params // world))


def setup_for(request: Request, shape: Shape, checkpointing: bool, precision: str, micro: int) -> TrainingSetup:
    if shape.fsdp is not None:
        # a measured module has no transformer layer class to wrap: it is one FSDP unit
        fsdp = replace(shape.fsdp, wrapped=request.module is None)
        return TrainingSetup(seq_len=request.seq_len, micro_batch=micro, precision=precision,
                             gradient_checkpointing=checkpointing, attention=request.attention,
                             optimizer=request.optimizer, gpus=request.gpus, nodes=request.nodes, fsdp=fsdp)
    return TrainingSetup(seq_len=request.seq_len, micro_batch=micro, precision=precision,
                         gradient_checkpointing=checkpointing, attention=request.attention,
                         optimizer=request.optimizer, gpus=request.gpus, nodes=request.nodes,
                         zero_stage=shape.stage, offload_optimizer=shape.offload_optimizer,
                         offload_param=shape.offload_param, zero_init=True, buckets=buckets_for(shape, request.model))


def trial(request: Request, shape: Shape, checkpointing: bool, precision: str, micro: int) -> Trial:
    result = estimate(request.model, setup_for(request, shape, checkpointing, precision, micro), Hardware(),
                      module=request.module)
    gpu, cpu = result.per_gpu["total"], result.cpu_per_node
    fits_cpu = request.cpu_memory is None or cpu <= request.cpu_memory
    return Trial(shape, checkpointing, micro, gpu, cpu, gpu <= request.budget, fits_cpu)


def ladder(request: Request) -> tuple[Shape, ...]:
    if request.backend == "fsdp":
        return fsdp_ladder(request.fsdp_version, request.nodes)
    if request.template is not None:
        if request.template not in SHAPES:
            raise PlanError(f"--template must be one of {', '.join(SHAPES)}, got {request.template!r}")
        if request.template == "zero3_nvme" and not request.nvme_path:
            raise PlanError("--template zero3_nvme needs --nvme-path (a local NVMe folder on every node)")
        return (SHAPES[request.template],)
    return tuple(s for s in LADDER if s.offload_optimizer != "nvme" or request.nvme_path)


def neighbours(target: int, world: int, micros: range) -> tuple[int | None, int | None]:
    """The reachable global batches (m × a × world, m in `micros`, a ≥ 1) just below and above `target`."""
    below = above = None
    for m in micros:
        step = m * world
        low = (target // step) * step
        if low >= step and (below is None or low > below):
            below = low
        high = -(-target // step) * step
        if above is None or high < above:
            above = high
    return below, above


def _gib(n: int) -> str:
    return f"{n / 2 ** 30:,.1f} GiB"


# -- the plan -----------------------------------------------------------------------------------

def plan(request: Request) -> Plan:
    """Choose everything for `request`; raises NoFit when nothing fits, PlanError for a bad request."""
    _check(request)
    precision, precision_reason = choose_precision(request)
    micro0 = request.micro_batch or request.min_micro
    choices = (request.checkpointing,) if request.checkpointing is not None else (False, True)
    trials: list[Trial] = []
    chosen = None
    for shape in ladder(request):
        for checkpointing in choices:
            attempt = trial(request, shape, checkpointing, precision, micro0)
            trials.append(attempt)
            if attempt.fits:
                chosen = attempt
                break
        if chosen is not None:
            break
    if chosen is None:
        raise NoFit(_no_fit_reason(request, trials, precision, micro0), trials)

    shape, checkpointing = chosen.shape, chosen.checkpointing
    world = request.world_size

    def fits(m: int) -> bool:
        return trial(request, shape, checkpointing, precision, m).fits

    batch = _split_batch(request, fits, world)
    micro, accumulation, global_batch, exact, nearest, largest, batch_reason = batch

    setup = setup_for(request, shape, checkpointing, precision, micro)
    final = estimate(request.model, setup, Hardware(gpu_memory=request.gpu_memory, cpu_memory=request.cpu_memory,
                                                    gpu_name=request.gpu_name, bf16=request.bf16_supported,
                                                    headroom=request.headroom),
                     module=request.module)
    reasons = {
        "zero": _zero_reason(request, trials, chosen),
        "offload": _offload_reason(request, trials, chosen),
        "checkpointing": _checkpointing_reason(request, trials, chosen),
        "precision": precision_reason,
        "batch": batch_reason,
    }
    notes = _notes(request, shape, micro, precision)
    small = batch_size_note(request, global_batch)
    if small:
        notes.insert(0, small)
    if not checkpointing and request.checkpointing is None and accumulation > 1:
        def fits_ckpt(m: int) -> bool:
            return trial(request, shape, True, precision, m).fits
        alternative = _split_batch(replace(request, global_batch=global_batch), fits_ckpt, world)
        if alternative[0] >= 2 * micro:
            why = (" (parameter offload moves the weights over PCIe once per micro batch, so fewer, larger micro "
                   "batches are likely faster)" if shape.offload_param != "none" else "")
            notes.append(f"with --gradient-checkpointing the micro batch could be {alternative[0]} × accumulation "
                         f"{alternative[1]}{why}; checkpointing stays off because the activations fit without it")
    return Plan(request, shape, precision, checkpointing, micro, accumulation, global_batch,
                buckets_for(shape, request.model), final, largest, reasons, trials, exact, nearest, notes)


def _check(request: Request) -> None:
    if request.target not in targets.NAMES:
        raise PlanError(f"--target must be one of {', '.join(targets.NAMES)}, got {request.target!r}")
    if request.backend not in BACKENDS:
        raise PlanError(f"--backend must be one of {', '.join(BACKENDS)}, got {request.backend!r}")
    if request.backend == "fsdp":
        if request.target not in (targets.HF_TRAINER.name, targets.ACCELERATE.name):
            raise PlanError(f"--target {request.target} does not run under `accelerate launch`: --backend fsdp writes an "
                            "Accelerate FSDP config, for --target hf-trainer or accelerate")
        if request.template is not None:
            raise PlanError("--template names a DeepSpeed template; --backend fsdp chooses the sharding strategy itself")
        if request.fsdp_version not in (1, 2):
            raise PlanError(f"--fsdp-version must be 1 or 2, got {request.fsdp_version!r}")
    for name in ("gpus", "nodes", "seq_len"):
        if getattr(request, name) < 1:
            raise PlanError(f"--{name.replace('_', '-')} must be at least 1")
    if request.gpu_memory is None or request.gpu_memory <= 0:
        raise PlanError("the GPU memory must be positive")
    if not 0 <= request.headroom < 1:
        raise PlanError("--headroom must be a percentage from 0 to 99")
    if request.micro_batch is not None and request.micro_batch < request.min_micro:
        which = "--batchnorm" if request.batchnorm else f"the model's {request.module.batchnorm} BatchNorm layers"
        raise PlanError(f"--micro-batch {request.micro_batch} with {which}: a BatchNorm layer needs at least 2 "
                        "samples per GPU (\"Expected more than 1 value per channel when training\")")
    if request.global_batch is not None and request.global_batch < 1:
        raise PlanError("--global-batch must be at least 1")


DEFAULT_TOKENS_PER_STEP = 1 << 18  # without --global-batch, a token model's step: 128 sequences of 2048 tokens
SMALL_TOKENS_PER_STEP = 1 << 16  # below this many tokens per optimizer step, the plan says the batch is small


def default_global_batch(request: Request, world: int) -> int | None:
    """Without --global-batch (and --micro-batch), a language model's global batch: about 262,144 tokens per
    optimizer step (128 sequences of 2048), the order of magnitude fine-tuning recipes use, rounded up to a
    multiple of the GPU count. None for models whose samples are not token sequences (images, a module)."""
    if request.global_batch is not None or request.micro_batch is not None \
            or request.model.family in ("vit", MODULE_FAMILY):
        return None
    sequences = max(1, round(DEFAULT_TOKENS_PER_STEP / request.seq_len))
    step = world * request.min_micro
    return max(step, -(-sequences // world) * world)


def batch_size_note(request: Request, global_batch: int) -> str | None:
    """A global batch the user gave that is small for a language model: say so (noisy updates)."""
    if request.global_batch is None or request.model.family in ("vit", MODULE_FAMILY):
        return None
    tokens = global_batch * request.seq_len
    if tokens >= SMALL_TOKENS_PER_STEP:
        return None
    return (f"global batch {global_batch} × seq {request.seq_len} = {tokens:,} tokens per optimizer step is small for "
            f"a model of {request.model.parameters / 1e9:.1f}B parameters (fine-tuning recipes use about "
            "100K-1M tokens per step): expect noisy updates, or raise --global-batch")


def _split_batch(request: Request, fits, world: int):
    """(micro, accumulation, global, exact, nearest, largest micro that fits, reason)."""
    default = default_global_batch(request, world)
    if default is None:
        return _split_given_batch(request, fits, world, request.global_batch)
    origin = (f"no --global-batch: {default} sequences of {request.seq_len} tokens, {default * request.seq_len:,} "
              "tokens per optimizer step as usual for fine-tuning (--global-batch to choose)")
    return _split_given_batch(request, fits, world, default, origin)


def _split_given_batch(request: Request, fits, world: int, wanted: int | None, origin: str | None = None):
    """_split_batch for `wanted` samples per step; `origin` says where that number came from."""
    low = request.min_micro
    origin = origin or f"global batch {wanted} as asked"
    if request.micro_batch is not None:
        micro = request.micro_batch
        largest = micro
        if wanted is None:
            return micro, 1, micro * world, True, (), largest, \
                f"micro batch {micro} as asked, accumulation 1 (no --global-batch)"
        step = micro * world
        if wanted % step == 0:
            return micro, wanted // step, wanted, True, (), largest, f"global batch {wanted} as asked"
        nearest = tuple(n for n in neighbours(wanted, world, range(micro, micro + 1)) if n is not None)
        chosen = min(nearest, key=lambda g: (abs(g - wanted), g))
        return micro, chosen // step, chosen, False, nearest, largest, \
            _not_exact(wanted, chosen, nearest, f"a multiple of {micro} × {world} (--micro-batch × GPUs)")

    if wanted is None:
        largest = largest_fitting(fits, low, max(low, DEFAULT_MAX_MICRO))
        return largest, 1, largest * world, True, (), largest, \
            (f"no --global-batch: the largest micro batch that fits (at most {DEFAULT_MAX_MICRO}), accumulation 1")
    # the largest micro batch worth knowing: one GPU's share of the global batch (rounded up)
    largest = largest_fitting(fits, low, max(low, min(MAX_MICRO, -(-wanted // world))))
    if wanted % world == 0:
        share = wanted // world
        candidates = [d for d in divisors(share, largest) if low <= d]
        if candidates:
            micro = candidates[-1]
            why = origin
            if micro < largest:
                why += (f"; micro batch {micro} is the largest divisor of the {share} samples per GPU that fits "
                        f"(up to {largest} would fit)")
            return micro, share // micro, wanted, True, (), largest, why
    def best_micro(total: int) -> int:
        return max(d for d in divisors(total // world, largest) if low <= d)

    nearest = tuple(n for n in neighbours(wanted, world, range(low, largest + 1)) if n is not None)
    # the closest; between two equally close, the one with the larger micro batch, then the smaller
    chosen = min(nearest, key=lambda total: (abs(total - wanted), -best_micro(total), total))
    share = chosen // world
    micro = best_micro(chosen)
    if wanted % world:
        why = f"not a multiple of the {world} GPUs"
    elif low > 1:
        why = f"{wanted // world} samples per GPU have no divisor from {low} to {largest} (BatchNorm, what fits)"
    else:
        why = f"{wanted // world} samples per GPU cannot be split into micro batches that fit"
    return micro, share // micro, chosen, False, nearest, largest, _not_exact(wanted, chosen, nearest, why)


def _not_exact(wanted: int, chosen: int, nearest: tuple[int, ...], why: str) -> str:
    others = ", ".join(str(n) for n in nearest)
    return (f"global batch {wanted} cannot be reached exactly ({why}): using {chosen}; the nearest reachable "
            f"are {others}")


def _why_not(request: Request, t: Trial) -> str:
    """What stops a trial, as a phrase: "needs 95.1 GiB per GPU at micro batch 1 even with checkpointing"."""
    ckpt = " even with checkpointing" if t.checkpointing else ""
    if not t.fits_gpu:
        return (f"needs {_gib(t.gpu_total)} per GPU at micro batch {t.micro_batch}{ckpt}, more than the "
                f"{_gib(request.budget)} available")
    return f"needs {_gib(t.cpu_total)} of CPU memory per node, more than --cpu-mem {_gib(request.cpu_memory)}"


def _zero_reason(request: Request, trials: list[Trial], chosen: Trial) -> str:
    shape = chosen.shape
    if request.template is not None:
        return f"{shape.label}, as asked (--template {request.template})"
    before = [t for t in trials if t.shape != shape]
    if not before:
        return f"{shape.label}: the least sharding, and it fits"
    if shape.offloads:
        last = [t for t in before if not t.shape.offloads][-1]
        why = f"{last.shape.label} {_why_not(request, last)}"
        what = "sharding strategy" if shape.fsdp is not None else "stage"
        return f"{shape.short} with offload: no {what} fits without offload ({why})"
    last = before[-1]
    return f"{shape.short}: {last.shape.label} {_why_not(request, last)}"


def _offload_reason(request: Request, trials: list[Trial], chosen: Trial) -> str:
    shape = chosen.shape
    if not shape.offloads:
        return "none: the model states fit on the GPU" + ("s" if request.world_size > 1 else "")
    what = {"zero2_offload_optimizer": "optimizer states and fp32 gradients to CPU memory",
            "zero3_offload_optimizer": "optimizer states and fp32 gradients to CPU memory",
            "zero3_offload_all": "optimizer states, fp32 gradients and parameters to CPU memory",
            "zero3_nvme": f"optimizer states, fp32 gradients and parameters to NVMe ({request.nvme_path})",
            "fsdp_full_shard_offload": "sharded parameters, gradients and optimizer states to CPU memory "
                                       "(fsdp_offload_params: the optimizer steps on the CPU)"}[shape.name]
    before = [t for t in trials if t.shape != shape]
    if request.template is not None or not before:
        return what + (" (as asked)" if request.template else "")
    last = before[-1]
    return f"{what}: {last.shape.label} {_why_not(request, last)}"


def _checkpointing_reason(request: Request, trials: list[Trial], chosen: Trial) -> str:
    if request.checkpointing is not None:
        return ("on" if chosen.checkpointing else "off") + " (as asked)"
    if not chosen.checkpointing:
        return "off: the activations fit without it"
    without = next(t for t in trials if t.shape == chosen.shape and not t.checkpointing)
    return f"on: without it {chosen.shape.label} {_why_not(request, without)}"


def _notes(request: Request, shape: Shape, micro: int, precision: str) -> list[str]:
    notes = []
    module = request.module
    if module is not None and module.batchnorm:
        notes.append(f"the model has {module.batchnorm} BatchNorm layer{'s' if module.batchnorm > 1 else ''}: the "
                     "micro batch is never below 2 (one sample per GPU: \"Expected more than 1 value per channel "
                     "when training\")")
    if micro == 1 and module is None:
        notes.append("micro batch 1: a model with BatchNorm layers fails with \"Expected more than 1 value per "
                     "channel when training\"; pass --batchnorm to keep at least 2")
    if request.cpu_memory is None and shape.offloads:
        notes.append("CPU memory not checked: pass --cpu-mem to check the offloaded states fit in host RAM")
    if shape.stage == 3:
        notes.append("ZeRO-3 assumes the model is created under deepspeed.zero.Init (the HF Trainer and Accelerate "
                     "do this when the DeepSpeed config exists before from_pretrained)")
    if shape.offload_optimizer == "nvme":
        notes.append("NVMe offload needs libaio (DeepSpeed's async_io op) and a fast local disk on every node")
    return notes


def _no_fit_reason(request: Request, trials: list[Trial], precision: str, micro: int) -> str:
    last = trials[-1]
    nodes, gpus = request.nodes, request.gpus
    where = f"{nodes} node{'s' if nodes > 1 else ''} × {gpus} GPU{'s' if gpus > 1 else ''}"
    where += f" of {_gib(request.gpu_memory)}"
    model = request.model.name or f"a {request.model.parameters:,}-parameter model"
    hints = []
    if not last.fits_gpu:
        ckpt = " with gradient checkpointing" if last.checkpointing else ""
        text = (f"{model} does not fit {where}: even {last.shape.label}{ckpt} needs {_gib(last.gpu_total)} per GPU "
                f"at micro batch {micro}, {_gib(request.budget)} available ({request.headroom:.0%} headroom kept)")
        more = _nodes_needed(request, precision, micro)
        if more:
            hints.append(f"{more} nodes ({_most_sharded(request).short} fits there)")
        if request.micro_batch is not None and request.micro_batch > request.min_micro:
            hints.append("a smaller --micro-batch")
        if request.seq_len > 512 and request.model.family not in ("vit", MODULE_FAMILY):
            hints.append("a shorter --seq-len")
    else:
        text = (f"{model} does not fit {where}: {last.shape.label} needs {_gib(last.cpu_total)} of CPU memory per "
                f"node, more than --cpu-mem {_gib(request.cpu_memory)}")
        if not request.nvme_path and request.template is None and request.backend != "fsdp":
            hints.append("--nvme-path to offload to NVMe")
        more = _nodes_needed(request, precision, micro)
        if more:
            hints.append(f"{more} nodes ({_most_sharded(request).short} fits there)")
    if request.template:
        hints.append("no --template, to let dsconfig choose")
    return text + ("; try " + ", or ".join(hints) if hints else "")


def _nodes_needed(request: Request, precision: str, micro: int) -> int | None:
    """The smallest node count, up to 256, at which ZeRO-3 (FSDP: FULL_SHARD) with checkpointing fits (None: none
    does)."""
    most = _most_sharded(request)
    for nodes in range(request.nodes + 1, 257):
        if trial(replace(request, nodes=nodes), most, True, precision, micro).fits:
            return nodes
    return None


def _most_sharded(request: Request) -> Shape:
    """The most sharded rung without offload: ZeRO-3, or FSDP's FULL_SHARD."""
    if request.backend == "fsdp":
        return next(s for s in fsdp_ladder(request.fsdp_version, 1) if s.name == "fsdp_full_shard")
    return SHAPES["zero3"]
