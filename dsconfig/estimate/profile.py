"""Measure activation memory the way autograd holds it: the bytes of the tensors saved for backward.

The model is built on the ``meta`` device (shapes and dtypes only, no memory, no GPU) and run
forward once under ``torch.autograd.graph.saved_tensors_hooks``. Every tensor autograd saves
passes through the pack hook; the bytes are counted once per storage (views of one buffer share
it) and the parameters' own storages are left out (they are counted as parameters). What remains
is what stays allocated between forward and backward: the activation memory.

Two things a CPU/meta run does differently from a CUDA run are routed to what CUDA saves:

* dropout: CUDA's fused ``native_dropout`` keeps a one-byte bool mask; the CPU path keeps a noise
  tensor of the input's dtype. ``F.dropout`` is replaced by a function that saves the bool mask.
* flash attention: the ``flash_attn`` kernel (what ``attn_implementation="flash_attention_2"``
  runs) keeps q, k and v as it is given them (K/V heads, not repeated), its output, the fp32
  log-sum-exp per query row and an 8-byte RNG state. A stand-in with the same saved tensors is
  registered as an attention implementation (or replaces SDPA for models that call it directly).

Gradient checkpointing is measured as it runs: the forward with Hugging Face's checkpointing
(reentrant, so the checkpoint's saved inputs pass through the hook) gives everything kept until
backward; one layer is recomputed at a time in backward, so the largest layer's own saved tensors
(measured in a forward without checkpointing) are added once.

This module imports torch and transformers; only ``dsconfig estimate --profile`` /
``--model-factory`` and the tests import it.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import sys
import warnings
from dataclasses import dataclass, field

import torch
import torch.utils.checkpoint
from torch import nn

from . import measured
from .measured import ModuleProfile

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}
FLASH = "dsconfig_flash"  # the attention implementation name the stand-in is registered under


@dataclass
class SavedTensor:
    """One storage autograd keeps for backward (for listings and debugging)."""

    nbytes: int
    shape: tuple
    dtype: str
    op: str  # the torch function that saved it first
    unit: int | None  # index of the checkpointable layer that saved it, None outside the layers


@dataclass
class Measurement:
    activation_bytes: int  # what the estimate calls activations (see module doc)
    forward_saved_bytes: int  # saved at the end of forward (with checkpointing: outside + layer inputs)
    recompute_bytes: int  # checkpointing: the largest layer recomputed in backward; 0 otherwise
    parameters: int  # unique parameters (shared ones once)
    largest_layer_params: int  # DeepSpeed's largest layer: the biggest module's direct parameters
    tensors: list[SavedTensor] = field(default_factory=list)


# -- counting -----------------------------------------------------------------------------------

def count_parameters(model: nn.Module) -> tuple[int, int]:
    """(total, largest layer) exactly as DeepSpeed's ``_all_live`` estimators count them.

    Shared parameters count once (DeepSpeed dedups by ``data_ptr``; meta tensors have none, so by
    storage identity). The largest layer is the biggest module's own, non-recursive parameters.
    """
    seen, total = set(), 0
    for p in model.parameters():
        key = _storage_key(p)
        if key not in seen:
            seen.add(key)
            total += p.numel()
    largest = max((sum(p.numel() for p in m.parameters(recurse=False)) for m in model.modules()), default=0)
    return total, largest


def _storage_key(t: torch.Tensor):
    return t.untyped_storage()._cdata


class _Recorder:
    """The pack hook: remembers every saved storage once, with the op and layer that saved it."""

    def __init__(self, model: nn.Module, units: list[nn.Module]):
        self.exclude = {_storage_key(p) for p in model.parameters()} | {_storage_key(b) for b in model.buffers()}
        self.saved: dict[int, SavedTensor] = {}
        self.keep: list[torch.Tensor] = []  # keeps each storage alive, so its address is never reused
        self.unit: int | None = None
        self.ops: list[str] = []
        self.handles = []
        for index, unit in enumerate(units):
            self.handles.append(unit.register_forward_pre_hook(self._enter(index)))
            self.handles.append(unit.register_forward_hook(self._leave))
        self.unit_inputs: dict[int, set] = {}

    def _enter(self, index):
        def hook(module, args):
            self.unit = index
            self.unit_inputs[index] = {_storage_key(a) for a in args if isinstance(a, torch.Tensor)}
        return hook

    def _leave(self, module, args, output):
        self.unit = None

    def pack(self, t: torch.Tensor):
        key = _storage_key(t)
        if key not in self.exclude and key not in self.saved:
            self.saved[key] = SavedTensor(t.untyped_storage().nbytes(), tuple(t.shape), str(t.dtype).replace("torch.", ""),
                                          self.ops[-1] if self.ops else "?", self.unit)
            self.keep.append(t)
        return t

    def close(self):
        for handle in self.handles:
            handle.remove()

    def total(self) -> int:
        return sum(s.nbytes for s in self.saved.values())

    def largest_unit(self) -> int:
        """The biggest one layer saves of its own (not its input, not what was saved before it)."""
        per_unit: dict[int, int] = {}
        for key, s in self.saved.items():
            if s.unit is not None and key not in self.unit_inputs.get(s.unit, ()):
                per_unit[s.unit] = per_unit.get(s.unit, 0) + s.nbytes
        return max(per_unit.values(), default=0)


class _OpNames(torch.overrides.TorchFunctionMode):
    """Keeps the name of the torch function being run, so a listing can say who saved what."""

    def __init__(self, stack: list[str]):
        super().__init__()
        self.stack = stack

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.stack.append(getattr(func, "__name__", str(func)))
        try:
            return func(*args, **(kwargs or {}))
        finally:
            self.stack.pop()


# -- what a CUDA run saves ----------------------------------------------------------------------

class _CudaDropout(torch.autograd.Function):
    """CUDA's fused dropout: the output and a bool mask, of which backward keeps only the mask."""

    @staticmethod
    def forward(ctx, x, p):
        mask = torch.empty(x.shape, dtype=torch.bool, device=x.device)
        ctx.save_for_backward(mask)
        ctx.scale = 1.0 / (1.0 - p)
        return torch.empty_like(x)

    @staticmethod
    def backward(ctx, grad):
        (mask,) = ctx.saved_tensors
        return grad * mask * ctx.scale, None


def _dropout(original):
    def dropout(input, p=0.5, training=True, inplace=False):
        if training and 0.0 < p < 1.0 and input.requires_grad:
            return _CudaDropout.apply(input, p)
        return original(input, p, training, inplace)
    return dropout


class _FlashAttention(torch.autograd.Function):
    """flash_attn's saved tensors: q, k, v as given, the output, fp32 log-sum-exp and the RNG state."""

    @staticmethod
    def forward(ctx, q, k, v):  # q: (b, s, h, d); k, v: (b, s, kv_heads, d)
        out = torch.empty(q.shape[:-1] + (v.shape[-1],), dtype=q.dtype, device=q.device)
        lse = torch.empty((q.shape[0], q.shape[2], q.shape[1]), dtype=torch.float32, device=q.device)
        rng_state = torch.empty(2, dtype=torch.int64, device=q.device)
        ctx.save_for_backward(q, k, v, out, lse, rng_state)
        return out

    @staticmethod
    def backward(ctx, grad):
        q, k, v = ctx.saved_tensors[:3]  # the real kernel also reads out, lse and the RNG state
        return torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)


def _flash_attention_forward(module, query, key, value, attention_mask, dropout=0.0, scaling=None, **kwargs):
    """An AttentionInterface function: (b, h, s, d) in, (b, s, h, d) out, as transformers' flash path."""
    out = _FlashAttention.apply(query.transpose(1, 2), key.transpose(1, 2), value.transpose(1, 2))
    return out, None


def _flash_sdpa(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """F.scaled_dot_product_attention replaced by the flash stand-in (for models that call it directly)."""
    return _FlashAttention.apply(query.transpose(1, 2), key.transpose(1, 2), value.transpose(1, 2)).transpose(1, 2)


@contextlib.contextmanager
def cuda_like(attention: str = "eager", transformers: bool = True):
    """Route dropout (always) and attention (``flash``) to what a CUDA run saves; `transformers`:
    also transformers' own attention and masking code (importing it takes seconds)."""
    import torch.nn.functional as F
    originals = {"dropout": F.dropout, "sdpa": F.scaled_dot_product_attention}
    F.dropout = _dropout(originals["dropout"])
    masking = _masking_utils() if transformers else None
    if masking is not None:
        # it asks `.all()` of the position ids to detect packed sequences: data a meta tensor has not
        originals["packed"] = masking.find_packed_sequence_indices
        masking.find_packed_sequence_indices = lambda position_ids: None
    if attention == "flash":
        F.scaled_dot_product_attention = _flash_sdpa
        try:
            if transformers:
                from transformers import AttentionInterface
                AttentionInterface.register(FLASH, _flash_attention_forward)
        except ImportError:
            pass
    moe = _moe_integration() if transformers else None
    if moe is not None:
        # torch's grouped GEMM (transformers' default experts kernel) takes bf16 only; other dtypes
        # go through transformers' per-expert fallback op, which keeps the same tensors
        originals["grouped"] = moe._can_use_grouped_mm
        moe._can_use_grouped_mm = lambda input, weight, offs: (weight.dtype == torch.bfloat16
                                                               and originals["grouped"](input, weight, offs))
    try:
        yield
    finally:
        if "grouped" in originals:
            moe._can_use_grouped_mm = originals["grouped"]
        F.dropout = originals["dropout"]
        F.scaled_dot_product_attention = originals["sdpa"]
        if "packed" in originals:
            masking.find_packed_sequence_indices = originals["packed"]


def _moe_integration():
    try:
        from transformers.integrations import moe
    except ImportError:
        return None
    return moe if hasattr(moe, "_can_use_grouped_mm") else None


def _masking_utils():
    try:
        from transformers import masking_utils
    except ImportError:
        return None
    return masking_utils


# -- running a model ----------------------------------------------------------------------------

def checkpoint_units(model: nn.Module) -> list[nn.Module]:
    """The layers Hugging Face gradient checkpointing wraps (one recompute unit each)."""
    try:
        from transformers.modeling_layers import GradientCheckpointingLayer
    except ImportError:
        return []
    return [m for m in model.modules() if isinstance(m, GradientCheckpointingLayer)]


def _run(model: nn.Module, inputs: dict, units: list[nn.Module], describe: bool) -> _Recorder:
    recorder = _Recorder(model, units)
    modes = _OpNames(recorder.ops) if describe else contextlib.nullcontext()
    try:
        with torch.autograd.graph.saved_tensors_hooks(recorder.pack, lambda t: t), modes:
            output = model(**inputs)
            _loss_of(output)
    finally:
        recorder.close()
    return recorder


def _loss_of(output):
    if isinstance(output, torch.Tensor):
        # a plain module: the loss a training loop would take; a mean saves nothing
        return output.float().mean() if output.is_floating_point() else output
    loss = getattr(output, "loss", None)
    if loss is None and isinstance(output, (tuple, list)) and output and isinstance(output[0], torch.Tensor):
        loss = _loss_of(output[0])
    return loss


def measure(model: nn.Module, inputs: dict, *, checkpointing: bool = False, attention: str = "eager",
            describe: bool = False) -> Measurement:
    """Saved-for-backward bytes of one training forward of `model` (already on the meta device)."""
    model.train()
    units = checkpoint_units(model)
    total, largest = count_parameters(model)
    with cuda_like(attention), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if not checkpointing or not units:
            plain = _run(model, inputs, units, describe)
            return Measurement(plain.total(), plain.total(), 0, total, largest, list(plain.saved.values()))
        _set_checkpointing(model, False)
        plain = _run(model, inputs, units, False)
        _set_checkpointing(model, True)
        try:
            kept = _run(model, inputs, units, describe)
        finally:
            _set_checkpointing(model, False)
    recompute = plain.largest_unit()
    return Measurement(kept.total() + recompute, kept.total(), recompute, total, largest, list(kept.saved.values()))


def _set_checkpointing(model: nn.Module, enable: bool):
    if enable:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": True})
    elif getattr(model, "is_gradient_checkpointing", False):
        model.gradient_checkpointing_disable()


# -- Hugging Face models from config dicts -------------------------------------------------------

def hf_config(config: dict):
    """A transformers config object from a config.json dict (what AutoConfig.from_pretrained builds)."""
    from transformers import AutoConfig
    values = {k: v for k, v in config.items() if k not in ("model_type", "architectures", "torch_dtype", "dtype")}
    cfg = AutoConfig.for_model(config["model_type"], **values)
    cfg._attn_implementation = "eager"
    return cfg


def build_hf_model(config: dict, *, precision: str = "bf16", attention: str = "eager") -> nn.Module:
    """The training model class for the config (causal LM, seq2seq LM or image classifier) on meta."""
    from . import shapes
    with cuda_like(attention):  # registers the flash stand-in so the config may name it
        cfg = hf_config(config)
        cls = _model_class(config)
        with torch.device("meta"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = cls._from_config(cfg, dtype=DTYPES[precision])
    if attention == "flash" and shapes.supports_flash(config):
        _set_attention(model, FLASH if shapes.uses_attention_interface(config) else "sdpa")
    model.train()
    return model


def _set_attention(model: nn.Module, name: str):
    for module in model.modules():
        cfg = getattr(module, "config", None)
        if cfg is not None and hasattr(cfg, "_attn_implementation_internal"):
            cfg._attn_implementation_internal = name
    for cfg in {id(m.config): m.config for m in model.modules() if hasattr(m, "config")}.values():
        for sub in getattr(cfg, "sub_configs", {}) or {}:
            sub_cfg = getattr(cfg, sub, None)
            if sub_cfg is not None and hasattr(sub_cfg, "_attn_implementation_internal"):
                sub_cfg._attn_implementation_internal = name


def _model_class(config: dict):
    import transformers

    from . import shapes
    name = shapes.training_class(config)
    return getattr(transformers, name)


def hf_inputs(config: dict, model: nn.Module, batch: int, seq_len: int) -> dict:
    """Training inputs on meta: token ids and labels, or pixels and class labels."""
    from . import shapes
    meta = torch.device("meta")
    kind = shapes.input_kind(config)
    if kind == "image":
        size = config.get("image_size", 224)
        channels = config.get("num_channels", 3)
        dtype = next(model.parameters()).dtype
        return {"pixel_values": torch.empty(batch, channels, size, size, dtype=dtype, device=meta),
                "labels": torch.zeros(batch, dtype=torch.long, device=meta)}
    ids = torch.zeros(batch, seq_len, dtype=torch.long, device=meta)
    # use_cache=False as training recipes set it (and HF forces it with checkpointing): a KV cache
    # would copy every layer's keys and values and keep them alive until the step ends.
    return {"input_ids": ids, "labels": torch.zeros(batch, seq_len, dtype=torch.long, device=meta),
            "use_cache": False}


def measure_hf(config: dict, *, batch: int, seq_len: int, precision: str = "bf16", attention: str = "eager",
               checkpointing: bool = False, describe: bool = False) -> Measurement:
    """Build the transformers model for `config` on meta and measure one training step's activations."""
    model = build_hf_model(config, precision=precision, attention=attention)
    return measure(model, hf_inputs(config, model, batch, seq_len), checkpointing=checkpointing,
                   attention=attention, describe=describe)


# -- any torch.nn.Module ------------------------------------------------------------------------

def load_factory(spec: str):
    """`package.module:function` -> the function (it returns an nn.Module)."""
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise ValueError(f"--model-factory takes module:function, got {spec!r}")
    return getattr(importlib.import_module(module_name), attr)


def build_factory_model(spec: str, precision: str = "bf16") -> nn.Module:
    factory = load_factory(spec)
    with torch.device("meta"):
        model = factory()
    if not isinstance(model, nn.Module):
        raise ValueError(f"{spec} returned {type(model).__name__}, not a torch.nn.Module")
    return model.to(device="meta", dtype=DTYPES[precision])


def _factory_input(shape: tuple[int, ...], precision: str, input_dtype: str | None) -> torch.Tensor:
    if input_dtype == "long":
        return torch.zeros(shape, dtype=torch.long, device="meta")
    return torch.empty(shape, dtype=DTYPES[precision], device="meta")


def _saved_bytes(model: nn.Module, x: torch.Tensor, attention: str, describe: bool = False) -> _Recorder:
    """One training forward of `model` on `x` (with the loss a training loop takes), under the hook."""
    # a factory that builds a transformers model has imported it; otherwise leave it unimported
    with cuda_like(attention, transformers="transformers" in sys.modules), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        recorder = _Recorder(model, [])
        modes = _OpNames(recorder.ops) if describe else contextlib.nullcontext()
        try:
            with torch.autograd.graph.saved_tensors_hooks(recorder.pack, lambda t: t), modes:
                _loss_of(model(x))
        finally:
            recorder.close()
    return recorder


def measure_factory(spec: str, input_shape: tuple[int, ...], *, precision: str = "bf16",
                    input_dtype: str | None = None, attention: str = "eager",
                    describe: bool = False) -> Measurement:
    """Measure a model returned by `module:function` on one input of `input_shape` (batch first)."""
    model = build_factory_model(spec, precision)
    model.train()
    total, largest = count_parameters(model)
    recorder = _saved_bytes(model, _factory_input(input_shape, precision, input_dtype), attention, describe)
    return Measurement(recorder.total(), recorder.total(), 0, total, largest, list(recorder.saved.values()))


# -- a module's own gradient checkpointing, or its repeated blocks checkpointed ---------------------

SINGLE_SAMPLE = "Expected more than 1 value per channel when training"  # F.batch_norm's check


class _CheckpointProbe:
    """Wraps a checkpoint function: before each checkpointed call it runs the block once plainly and
    counts what the block saves of its own (not its inputs, parameters or buffers) — what backward
    holds while it recomputes that block. The largest over all calls is the recompute peak."""

    def __init__(self, model: nn.Module):
        self.exclude = {_storage_key(p) for p in model.parameters()} | {_storage_key(b) for b in model.buffers()}
        self.largest = 0
        self.calls = 0
        self.busy = False  # a checkpoint inside a checkpointed block is left to the outer one

    def wrap(self, checkpoint):
        def probed(fn, *args, **kwargs):
            if self.busy:
                return checkpoint(fn, *args, **kwargs)
            self.busy = True
            try:
                self.largest = max(self.largest, self._own_bytes(fn, args, kwargs))
                self.calls += 1
                return checkpoint(fn, *args, **kwargs)
            finally:
                self.busy = False
        return probed

    def _own_bytes(self, fn, args, kwargs) -> int:
        inputs = {_storage_key(a) for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor)}
        saved: dict = {}
        keep = []

        def pack(t):
            key = _storage_key(t)
            if key not in self.exclude and key not in inputs and key not in saved:
                saved[key] = t.untyped_storage().nbytes()
                keep.append(t)
            return t

        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            fn(*args, **kwargs)
        return sum(saved.values())


def repeated_blocks(model: nn.Module) -> tuple[str, list[nn.Module]]:
    """The largest repeated container: the ModuleList/Sequential children of one class (at least two)
    holding the most trainable parameters, and the container's name. ("", []) when there is none."""
    best = (0, "", [])
    for name, container in model.named_modules():
        if not isinstance(container, (nn.ModuleList, nn.Sequential)):
            continue
        by_class: dict[type, list[nn.Module]] = {}
        for child in container.children():
            if next(child.children(), None) is None:
                continue  # a single layer (a Conv2d in a Sequential) keeps nothing but its input: no block
            by_class.setdefault(type(child), []).append(child)
        for blocks in by_class.values():
            size = sum(p.numel() for block in blocks for p in block.parameters() if p.requires_grad)
            if len(blocks) >= 2 and size > best[0]:
                best = (size, name, blocks)
    return best[1], best[2]


def _enable_checkpointing(model: nn.Module, probe: _CheckpointProbe) -> str:
    """Turn gradient checkpointing on as the model's training code would; say how."""
    for method in ("enable_gradient_checkpointing", "gradient_checkpointing_enable"):  # diffusers, transformers
        if callable(getattr(model, method, None)):
            getattr(model, method)()
            for module in model.modules():  # both set it on every block they checkpoint
                if callable(getattr(module, "_gradient_checkpointing_func", None)):
                    module._gradient_checkpointing_func = probe.wrap(module._gradient_checkpointing_func)
            return f"model.{method}()"
    name, blocks = repeated_blocks(model)
    if not blocks:
        return ""
    checkpoint = probe.wrap(lambda fn, *args, **kwargs: torch.utils.checkpoint.checkpoint(
        fn, *args, use_reentrant=False, **kwargs))
    for block in blocks:
        block.forward = functools.partial(checkpoint, block.forward)
    return (f"torch.utils.checkpoint around each of the {len(blocks)} {type(blocks[0]).__name__} blocks "
            f"of `{name}`")


@contextlib.contextmanager
def _probing(checkpoint):
    """Code that calls torch.utils.checkpoint.checkpoint itself (older diffusers) goes through the probe."""
    original = torch.utils.checkpoint.checkpoint
    torch.utils.checkpoint.checkpoint = checkpoint(original)
    try:
        yield
    finally:
        torch.utils.checkpoint.checkpoint = original


def profile_factory(spec: str, sample_shape: tuple[int, ...], *, batches: tuple[int, ...], precision: str = "bf16",
                    input_dtype: str = "float", attention: str = "flash",
                    checkpointing: tuple[bool, ...] = (False,)) -> ModuleProfile:
    """Measure the model `module:function` returns at each batch size, plainly and (when asked) with
    gradient checkpointing, for the estimate and the planner (see measured.py)."""
    model = build_factory_model(spec, precision)
    model.train()
    total, largest = count_parameters(model)
    trainable = _count_unique(p for p in model.parameters() if p.requires_grad)
    sizes: dict[int, int] = {}
    for p in {_storage_key(p): p for p in model.parameters()}.values():
        sizes[p.numel()] = sizes.get(p.numel(), 0) + 1
    batchnorm = sum(isinstance(m, nn.modules.batchnorm._BatchNorm) for m in model.modules())

    single_sample_error = None

    def line(measure) -> measured.Line:
        nonlocal single_sample_error
        points = []
        for batch in sorted(set(batches)):
            try:
                points.append((batch, measure(batch)))
            except ValueError as error:
                if batch != 1 or SINGLE_SAMPLE not in str(error):
                    raise
                single_sample_error = f"{type(error).__name__}: {error}"
        return measured.Line(tuple(points))

    def run(batch: int) -> _Recorder:
        return _saved_bytes(model, _factory_input((batch, *sample_shape), precision, input_dtype), attention)

    plain = measured.Activations(line(lambda b: run(b).total())) if False in checkpointing else None
    checkpointed, how = None, ""
    if True in checkpointing:
        probe = _CheckpointProbe(model)
        how = _enable_checkpointing(model, probe)
        recompute: dict[int, int] = {}

        def kept(batch: int) -> int:
            probe.largest = 0
            with _probing(probe.wrap):
                total_bytes = run(batch).total()
            recompute[batch] = probe.largest
            return total_bytes

        kept_line = line(kept)
        if how and probe.calls:
            checkpointed = measured.Activations(kept_line, measured.Line(tuple(sorted(recompute.items()))))
        else:
            how = ""
            plain = plain or measured.Activations(kept_line)
    return measured.ModuleProfile(
        spec=spec, sample_shape=tuple(sample_shape), input_dtype=input_dtype, parameters=total, trainable=trainable,
        largest_layer=largest, parameter_sizes=tuple(sorted(sizes.items())), batchnorm=batchnorm,
        plain=plain or checkpointed, checkpointed=checkpointed, checkpointing=how,
        single_sample_error=single_sample_error, attention=attention)


def _count_unique(parameters) -> int:
    return sum(p.numel() for p in {_storage_key(p): p for p in parameters}.values())
