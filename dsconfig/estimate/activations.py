"""Activation memory per architecture: the bytes autograd saves for backward, term by term.

Each formula was read off a measurement (profile.py: the real transformers 5.23 model classes on
the meta device, every tensor saved for backward counted once per storage, dropout and attention
routed to what a CUDA run saves) and is checked against it by tests/estimate/test_estimate_activations.py.
They are written as the list of tensors a layer keeps, so a reader can follow them against the
model code. Notation (all per micro batch on one GPU):

    b batch, s sequence, t = b·s tokens, h hidden, H heads, d head dim, qd = H·d, kvd = K/V heads·d,
    I MLP width, V vocabulary, dt bytes per element of the training dtype (2 for bf16/fp16, 4 fp32).

What every transformer layer shares, and where Korthikanti et al.'s `sbh(34 + 5as/h)` (one fused
GELU, fp16 softmax, dropout everywhere) differs from Hugging Face code:

* A norm keeps its input, its statistics (fp32: 8 bytes per token for LayerNorm's mean and rstd,
  4 for RMSNorm's rstd) and the next linear keeps its output. Llama-style RMSNorm upcasts: it keeps
  an fp32 copy of its input (4·t·h) plus the normalised bf16 tensor before the weight (dt·t·h).
* Eager attention keeps q, k and v as (b·H, s, d) operands — K/V repeated to every query head, so
  GQA saves nothing there — plus the softmax output (fp32 in Llama-style code: 4·b·H·s², and its
  dt copy for the value matmul) and, with attention dropout, a bool mask and the dropped copy.
* Flash attention keeps q, k and v as given (K/V at their own head count), the output (which is the
  o_proj input) and 4·b·H·s of log-sum-exp: no s² term.
* SwiGLU keeps four t·I tensors (gate output, its SiLU, up output, their product); GPT-2's
  gelu_new keeps five (tanh GELU written out in five elementwise ops); a plain GELU MLP keeps two.
* The loss: transformers' causal-LM loss upcasts the logits and log_softmax keeps 4·t·V bytes, often
  the largest single tensor of the step (Llama 3: 128256 fp32 values per token).
* Dropout (CUDA's fused kernel) keeps a one-byte mask per element.

Gradient checkpointing (HF, one checkpoint per decoder layer): forward keeps everything outside the
layers plus each layer's input; backward recomputes one layer at a time, so the largest layer's own
saved tensors are added once.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .shapes import LLAMA_LIKE, NO_FLASH, ModelShape

DTYPE_BYTES = {"bf16": 2, "fp16": 2, "fp32": 4}
RNG_STATE = 16  # flash_attn's saved philox seed and offset: two int64


@dataclass
class Activations:
    """Bytes of saved activations for one micro batch on one GPU."""

    total: int  # what stays allocated between forward and backward (the peak of saved tensors)
    kept: int  # saved at the end of forward (with checkpointing: outside the layers + layer inputs)
    recompute: int  # checkpointing: one layer recomputed in backward; 0 otherwise
    loss: int  # of `kept`: the logits/loss tensors (the fp32 log-softmax and what goes with it)
    attention: str  # the attention actually modelled (flash falls back to eager where HF has none)
    notes: list[str] = field(default_factory=list)


@dataclass
class _Parts:
    """A model's saved tensors, grouped the way checkpointing treats them."""

    outside: int = 0  # embeddings, final norm, head, loss: never checkpointed
    loss: int = 0  # part of `outside`
    # per kind of checkpointed layer: (bytes, of which its own input, how many such layers), so the cost
    # does not grow with the layer count
    units: list = field(default_factory=list)
    first_use: list = field(default_factory=list)  # per kind: tensors its first layer saves first (shared later)
    unit_inputs: int = 0  # what reentrant checkpointing saves per layer call, summed over layers
    checkpoint_first_use: list | None = None  # first_use when checkpointing, if a first use becomes an input


def estimate(shape: ModelShape, *, batch: int, seq_len: int, precision: str = "bf16",
             checkpointing: bool = False, attention: str = "flash") -> Activations:
    """Saved activation bytes for one micro batch of `batch` sequences of `seq_len` tokens."""
    dt = DTYPE_BYTES[precision]
    notes = []
    if attention == "flash" and shape.family in NO_FLASH:
        notes.append(f"transformers has no flash attention for {shape.family}: eager attention assumed")
        attention = "eager"
    flash = attention == "flash"
    family = "llama" if shape.family in LLAMA_LIKE or shape.family == "generic" else shape.family
    s = shape.tokens_per_sample(seq_len)
    parts = _FORMULAS[family](shape, batch, s, dt, flash, precision)
    layers_total = sum(size * count + first for (size, _, count), first in zip(parts.units, parts.first_use) if count)
    if not checkpointing or not any(count for _, _, count in parts.units):
        total = parts.outside + layers_total
        return Activations(total, total, 0, parts.loss, attention, notes)
    first_use = parts.checkpoint_first_use or parts.first_use
    # a kind's first layer saves the most of its kind (first uses are never negative)
    recompute = max(size - own_input + first for (size, own_input, count), first in zip(parts.units, first_use)
                    if count)
    kept = parts.outside + parts.unit_inputs
    return Activations(kept + recompute, kept, recompute, parts.loss, attention, notes)


# -- shared pieces -------------------------------------------------------------------------------

def _layer_norm(t: int, h: int, dt: int) -> int:
    """nn.LayerNorm keeps its input and fp32 mean and rstd per token."""
    return dt * t * h + 8 * t


def _rms_norm_llama(t: int, h: int, dt: int) -> int:
    """Llama-style RMSNorm: fp32 copy of the input, fp32 rstd, the normalised tensor before the weight."""
    return 4 * t * h + 4 * t + dt * t * h


def _eager_probs(b: int, H: int, s_q: int, s_k: int, dt: int, *, fp32_softmax: bool, dropout: float) -> int:
    """The softmax output, its dt copy for the value matmul, and attention dropout's mask and copy."""
    n = b * H * s_q * s_k
    softmax = 4 if fp32_softmax else dt
    probs = softmax * n + (dt * n if fp32_softmax and dt != 4 else 0)
    if dropout > 0:
        probs += n + dt * n  # bool mask + the dropped probabilities the value matmul keeps
    return probs


def _flash(b: int, s: int, H: int, q_bytes: int, k_bytes: int, v_bytes: int, out_bytes: int) -> int:
    """flash_attn: q, k, v as passed, the output, fp32 log-sum-exp per query row, RNG state."""
    return q_bytes + k_bytes + v_bytes + out_bytes + 4 * b * H * s + RNG_STATE


def _mask(elements: int, p: float) -> int:
    """CUDA dropout keeps a one-byte mask (nothing when the rate is 0)."""
    return elements if p > 0 else 0


def _causal_lm_loss(b: int, s: int, V: int) -> int:
    """ForCausalLMLoss: fp32 log_softmax output, int64 shifted labels, fp32 total weight.

    The labels are padded by one and shifted; with one sequence the shifted view is already
    contiguous and keeps the padded storage (s + 1 ids), otherwise it is a copy of b·s ids.
    """
    labels = 8 * (s + 1) if b == 1 else 8 * b * s
    return 4 * b * s * V + labels + 4


# -- families -------------------------------------------------------------------------------------

def _llama(m: ModelShape, b: int, s: int, dt: int, flash: bool, precision: str) -> _Parts:
    """Llama, Mistral, Qwen2, Mixtral, Phi-3 (and --params shapes)."""
    t, h, I, V = b * s, m.hidden, m.intermediate, m.vocab
    qd, kvd, H = m.q_dim, m.kv_dim, m.heads
    fused = m.extra.get("fused_qkv", False)
    rope = 2 * s * int(m.head_dim * m.extra.get("partial_rotary_factor", 1.0)) * dt  # cos, sin: (1, s, d)
    norm = _rms_norm_llama(t, h, dt) + dt * t * h  # + its output, kept by the next linear
    if flash:
        # q and k come out of RoPE; v is a view of v_proj's output, or of the fused qkv output (Phi-3)
        v_storage = dt * t * (qd + 2 * kvd) if fused else dt * t * kvd
        attention = _flash(b, s, H, dt * t * qd, dt * t * kvd, v_storage, dt * t * qd)
    else:
        attention = 4 * dt * t * qd  # q, k and v as (b·H, s, d), o_proj's input
        if fused and m.kv_heads == H and b == 1:
            # unrepeated v of one sequence reshapes to (H, s, d) as a view: the fused qkv output stays
            attention += dt * t * (2 * kvd)
        attention += _eager_probs(b, H, s, s, dt, fp32_softmax=True, dropout=m.drop("attention"))
    if m.experts:
        mlp = _moe(m, t, dt, grouped=precision == "bf16")
    else:
        mlp = 4 * dt * t * I  # SwiGLU: gate, SiLU(gate), up, product
    residual = 2 * _mask(t * h, m.drop("residual"))  # Phi-3's resid_pdrop after attention and MLP
    layer = norm + attention + norm + mlp + residual
    own_input = 4 * t * h if dt == 4 else 0  # fp32: the RMSNorm "copy" is the layer input itself
    outside = 8 * t + _mask(t * h, m.drop("embedding"))  # token ids (+ Phi-3 embedding dropout)
    loss = _causal_lm_loss(b, s, V)
    outside += _rms_norm_llama(t, h, dt) + dt * t * h + loss  # final norm, lm_head input
    return _Parts(outside, loss, [(layer, own_input, m.layers)], [rope], m.layers * dt * t * h)


def _moe(m: ModelShape, t: int, dt: int, grouped: bool) -> int:
    """Mixtral's router and grouped-GEMM experts (transformers' default `grouped_mm`).

    Independent of the routing: S = t·k token-expert pairs are processed whatever the split.
    torch's grouped GEMM takes bf16 only; fp16 and fp32 run transformers' fallback op, which does
    not keep the group offsets.
    """
    h, I, E, k = m.hidden, m.intermediate, m.experts, m.experts_per_token
    S = t * k
    router = 4 * t * E + 8 * t * k + 4 * t + 4 * t * k  # fp32 softmax, top-k ids, renormalising sum and values
    indices = 3 * 8 * S + (4 * E if grouped else 0)  # token gather, weight gather, un-permute (int64), group offsets (int32)
    experts = dt * S * h + dt * S * 2 * I + 2 * dt * S * I  # gathered input, gate_up, SiLU(gate), product
    weighting = 4 * S + dt * S * h  # fp32 routing weights and the expert outputs they scale
    return router + indices + experts + weighting


def _gemma2(m: ModelShape, b: int, s: int, dt: int, flash: bool, precision: str) -> _Parts:
    """Gemma 2: four fp32 RMSNorms per layer, soft-capped attention and logits, GeGLU."""
    t, h, I, V = b * s, m.hidden, m.intermediate, m.vocab
    qd, kvd, H = m.q_dim, m.kv_dim, m.heads
    rope = 2 * s * m.head_dim * dt
    # Gemma's RMSNorm works in fp32 throughout: input copy, rstd, (1 + weight), normalised input
    norm = 4 * t * h + 4 * t + 4 * h + 4 * t * h
    if flash:
        attention = _flash(b, s, H, dt * t * qd, dt * t * kvd, dt * t * kvd, dt * t * qd)
    else:
        n = b * H * s * s
        attention = 4 * dt * t * qd + dt * n  # q, k, v, o_proj input; tanh of the soft-capped scores
        attention += _eager_probs(b, H, s, s, dt, fp32_softmax=True, dropout=m.drop("attention"))
    mlp = 4 * dt * t * I
    layer = 4 * norm + 2 * dt * t * h + attention + mlp  # two norms feed linears (their outputs kept)
    own_input = 4 * t * h if dt == 4 else 0
    loss = dt * t * V + _causal_lm_loss(b, s, V)  # tanh of the soft-capped logits, then the fp32 loss
    outside = 8 * t + norm + dt * t * h + loss
    return _Parts(outside, loss, [(layer, own_input, m.layers)], [rope], m.layers * dt * t * h)


def _gpt2(m: ModelShape, b: int, s: int, dt: int, flash: bool, precision: str) -> _Parts:
    """GPT-2: LayerNorm, fused c_attn, gelu_new written out, dropout after embeddings, attention and MLP."""
    t, h, I, V, H = b * s, m.hidden, m.intermediate, m.vocab, m.heads
    p_attn, p_resid = m.drop("attention"), m.drop("residual")
    if flash:
        # q, k and v are views of c_attn's output; the output is c_proj's input
        attention = _flash(b, s, H, 3 * dt * t * h, 0, 0, dt * t * h)
    else:
        attention = 4 * dt * t * h + _eager_probs(b, H, s, s, dt, fp32_softmax=False, dropout=p_attn)
    mlp = (5 if m.mlp == "gelu_new" else 2) * dt * t * I
    layer = (_layer_norm(t, h, dt) + dt * t * h + attention + _mask(t * h, p_resid)
             + _layer_norm(t, h, dt) + dt * t * h + mlp + _mask(t * h, p_resid))
    loss = _causal_lm_loss(b, s, V)
    outside = 8 * t + 8 * s + _mask(t * h, m.drop("embedding")) + _layer_norm(t, h, dt) + dt * t * h + loss
    # GPT2Block takes the eager causal mask (b, 1, s, s) positionally, so checkpointing keeps it
    inputs = m.layers * dt * t * h + (0 if flash else dt * b * s * s)
    return _Parts(outside, loss, [(layer, dt * t * h, m.layers)], [0], inputs)


def _falcon(m: ModelShape, b: int, s: int, dt: int, flash: bool, precision: str) -> _Parts:
    """Falcon: parallel attention and MLP off one (7B) or two (40B/180B) LayerNorms, fused qkv, GELU MLP."""
    t, h, I, V, H = b * s, m.hidden, m.intermediate, m.vocab, m.heads
    qd, kvd = m.q_dim, m.kv_dim
    x = m.extra
    new_arch = x["new_decoder_architecture"]
    rope = 2 * s * m.head_dim * dt
    two_norms = new_arch and x["num_ln_in_parallel_attn"] == 2
    norms = dt * t * h + (16 if two_norms else 8) * t  # one input, one or two mean/rstd pairs
    norms += (2 if two_norms else 1) * dt * t * h  # outputs kept by the qkv (and MLP) matmuls
    index = 16 if (new_arch or x["multi_query"]) else 0  # the [-2] / [-1] index tensors picking K and V
    if flash:
        # the new architecture broadcasts K/V to every head before the kernel; multi-query keeps one
        k_bytes = dt * t * (qd if new_arch else kvd)
        attention = _flash(b, s, H, dt * t * qd, k_bytes, k_bytes, dt * t * qd)
    else:
        attention = 4 * dt * t * qd + _eager_probs(b, H, s, s, dt, fp32_softmax=False, dropout=m.drop("attention"))
        if not new_arch and x["multi_query"] and b == 1:
            # K/V expanded to every head reshape to (H, s, d) as views for one sequence: no copies
            attention -= 2 * dt * t * (qd - kvd)
    mlp = 2 * dt * t * I
    if not x["parallel_attn"]:
        norms += _layer_norm(t, h, dt) + dt * t * h
    layer = norms + index + attention + mlp + 2 * _mask(t * h, m.drop("residual"))
    loss = _causal_lm_loss(b, s, V)
    outside = 8 * t + _layer_norm(t, h, dt) + dt * t * h + loss
    return _Parts(outside, loss, [(layer, dt * t * h, m.layers)], [rope], m.layers * dt * t * h)


def _bloom(m: ModelShape, b: int, s: int, dt: int, flash: bool, precision: str) -> _Parts:
    """BLOOM: ALiBi eager attention (fp32 softmax), LayerNorm, GELU MLP, embedding LayerNorm."""
    t, h, V, H = b * s, m.hidden, m.vocab, m.heads
    attention = 4 * dt * t * h + _eager_probs(b, H, s, s, dt, fp32_softmax=True, dropout=m.drop("attention"))
    mlp = 2 * dt * t * 4 * h
    layer = (_layer_norm(t, h, dt) + dt * t * h + attention + _mask(t * h, m.drop("residual"))
             + _layer_norm(t, h, dt) + dt * t * h + mlp + _mask(t * h, m.drop("residual")))
    loss = _causal_lm_loss(b, s, V)
    outside = 8 * t + _layer_norm(t, h, dt) + _layer_norm(t, h, dt) + dt * t * h + loss
    return _Parts(outside, loss, [(layer, dt * t * h, m.layers)], [0], m.layers * dt * t * h)


def _t5(m: ModelShape, b: int, s: int, dt: int, flash: bool, precision: str) -> _Parts:
    """T5 encoder-decoder (decoder length = encoder length): T5LayerNorm, relative position bias, dropout."""
    t, h, I, V, H = b * s, m.hidden, m.intermediate, m.vocab, m.heads
    qd = m.q_dim
    p = m.drop("all")
    # T5LayerNorm: fp32 copy, rstd, the input itself (bf16: a separate tensor), the normalised dt copy
    norm = 4 * t * h + 4 * t + (dt * t * h if dt != 4 else 0) + dt * t * h
    attention = 4 * dt * t * qd + _eager_probs(b, H, s, s, dt, fp32_softmax=False, dropout=p)
    self_block = norm + dt * t * h + attention + _mask(t * h, p)
    if m.mlp.startswith("gated"):
        act = 4 if m.mlp == "gated-gelu" else 1  # gelu_new written out keeps 4 tensors, ReLU its output
        ff_inner = (act + 2) * dt * t * I  # activation + the gated product's two operands
    else:
        ff_inner = dt * t * I  # ReLU keeps its output, GELU its input
    ff_block = norm + dt * t * h + ff_inner + _mask(t * I, p) + dt * t * I + _mask(t * h, p)
    # fp16: every sub-block's output is clamped to the finite range; clamp keeps its input and the
    # two fp32 bounds
    clamp = dt * t * h + 8 if precision == "fp16" else 0
    encoder_layer = self_block + ff_block + 2 * clamp
    decoder_layer = self_block + (norm + dt * t * h + attention + _mask(t * h, p)) + ff_block + 3 * clamp
    buckets = 8 * s * s  # int64 relative-position buckets, first layer of each stack
    own_input = dt * t * h if dt != 4 else 4 * t * h
    encoder_out = dt * t * h  # dropped encoder output, kept by every cross-attention's k and v
    loss = dt * t * V + 8 * t + dt  # T5 takes the loss on the dt logits
    outside = (2 * (8 * t + _mask(t * h, p))  # encoder and decoder ids, embedding dropout
               + norm + _mask(t * h, p)  # encoder final norm and dropout
               + norm + _mask(t * h, p) + dt * t * h  # decoder final norm, dropout, lm_head input
               + loss)
    units = [(encoder_layer, own_input, m.layers), (decoder_layer, own_input, m.decoder_layers)]
    first = [buckets, buckets + encoder_out]
    # T5Block takes its masks and position biases positionally: reentrant checkpointing keeps the
    # (1, H, s, s) self-attention bias (both stacks) and the cross-attention bias (decoder) that the
    # first block computes, the decoder's causal mask and the encoder output
    bias = dt * H * s * s
    inputs = (m.layers + m.decoder_layers) * dt * t * h + encoder_out + dt * b * s * s
    inputs += (bias if m.layers > 1 else 0) + (2 * bias if m.decoder_layers > 1 else 0)
    first_ckpt = [buckets, buckets]
    return _Parts(outside, loss, units, first, inputs, first_ckpt)


def _vit(m: ModelShape, b: int, s: int, dt: int, flash: bool, precision: str) -> _Parts:
    """ViT image classifier: s = patches + [CLS]; LayerNorm, GELU MLP, loss on the dt logits."""
    t, h, I, H = b * s, m.hidden, m.intermediate, m.heads
    if flash:
        attention = _flash(b, s, H, dt * t * h, dt * t * h, dt * t * h, dt * t * h)
    else:
        attention = 4 * dt * t * h + _eager_probs(b, H, s, s, dt, fp32_softmax=True, dropout=m.drop("attention"))
    layer = (_layer_norm(t, h, dt) + dt * t * h + attention + _mask(t * h, m.drop("residual"))
             + _layer_norm(t, h, dt) + dt * t * h + 2 * dt * t * I + _mask(t * h, m.drop("residual")))
    pixels = dt * b * m.channels * m.image_size * m.image_size  # kept by the patch convolution
    loss = dt * b * m.labels + 8 * b + dt
    # the classifier keeps the [CLS] row, a view of the whole final LayerNorm output
    outside = pixels + _layer_norm(t, h, dt) + dt * t * h + loss
    return _Parts(outside, loss, [(layer, dt * t * h, m.layers)], [0], m.layers * dt * t * h)


_FORMULAS = {"llama": _llama, "gemma2": _gemma2, "gpt2": _gpt2, "falcon": _falcon, "bloom": _bloom,
             "t5": _t5, "vit": _vit}
