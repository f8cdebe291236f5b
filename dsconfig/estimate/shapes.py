"""A model's shape (what memory depends on) and how to read it from a Hugging Face config.json.

`ModelShape` carries the numbers the estimator needs: layer count and widths, attention heads and
K/V heads, MLP width and kind, vocabulary, tied embeddings, dropout rates, and the architecture
family whose activation formula applies. `from_hf_config` derives it from a config.json dict with
the same defaults transformers uses, and counts the parameters exactly (the tests compare the
count with the real model class instantiated on the meta device). `from_params` builds a plausible
decoder-only shape around a bare parameter count ("7B").

Standard library only: this module is on the fast `dsconfig estimate` path.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from typing import NamedTuple

from . import limits

# Families with their own activation formula (activations.py). The model_types that share a
# family's layer code map to it.
LLAMA_LIKE = ("llama", "mistral", "qwen2", "mixtral", "phi3")
FAMILIES = LLAMA_LIKE + ("gemma2", "gpt2", "falcon", "bloom", "t5", "vit")

# transformers implements no flash attention for these (BLOOM has ALiBi inside its eager kernel,
# T5 adds a learned position bias to the scores).
NO_FLASH = ("bloom", "t5")
# These call the attention kernel themselves rather than through transformers' AttentionInterface.
NO_INTERFACE = ("falcon", "bloom")

TRAINING_CLASS = {"t5": "T5ForConditionalGeneration", "vit": "ViTForImageClassification"}


class ShapeError(ValueError):
    """The config cannot be turned into a shape (missing or unsupported fields)."""


@dataclass(frozen=True)
class ModelShape:
    family: str  # one of FAMILIES, or "generic" for a shape built from a parameter count
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int  # MLP width (per expert for MoE)
    vocab: int
    tied_embeddings: bool = True
    mlp: str = "swiglu"  # swiglu | gelu | gelu_new | relu | gated-gelu
    experts: int = 0  # MoE: experts per layer (0 = dense)
    experts_per_token: int = 0
    decoder_layers: int = 0  # encoder-decoder (T5): decoder blocks; `layers` are the encoder's
    image_size: int = 0  # ViT
    patch_size: int = 0
    channels: int = 3
    labels: int = 0  # classifier outputs (ViT)
    max_positions: int = 0
    dropout: dict = field(default_factory=dict)  # site -> probability: embedding, attention, residual, mlp
    extra: dict = field(default_factory=dict)  # family-specific switches (falcon layout, gemma soft-capping...)
    parameters: int = 0  # exact unique parameter count
    trainable_parameters: int | None = None  # requires_grad=True (None: all); frozen ones have no grads or states
    largest_layer_params: int = 0  # DeepSpeed's largest layer: the biggest module's direct parameters
    config: dict | None = None  # the config.json dict it came from (for --profile)
    name: str = ""

    @property
    def q_dim(self) -> int:
        return self.heads * self.head_dim

    @property
    def kv_dim(self) -> int:
        return self.kv_heads * self.head_dim

    def tokens_per_sample(self, seq_len: int) -> int:
        """Sequence positions one sample occupies: seq_len, or the patch count + [CLS] for ViT."""
        if self.family == "vit":
            return (self.image_size // self.patch_size) ** 2 + 1
        return seq_len

    def drop(self, site: str) -> float:
        return float(self.dropout.get(site, 0.0) or 0.0)

    def with_dropout(self, probability: float | None) -> ModelShape:
        """The same shape with every dropout rate set to `probability` (None leaves them)."""
        if probability is None:
            return self
        return replace(self, dropout={site: probability for site in self.dropout})


def supports_flash(config: dict) -> bool:
    return config["model_type"] not in NO_FLASH


def uses_attention_interface(config: dict) -> bool:
    return config["model_type"] not in NO_INTERFACE


def input_kind(config: dict) -> str:
    return "image" if config["model_type"] == "vit" else "text"


def training_class(config: dict) -> str:
    """The transformers class a training run builds for the config (its name)."""
    model_type = config["model_type"]
    if model_type in TRAINING_CLASS:
        return TRAINING_CLASS[model_type]
    return {"llama": "LlamaForCausalLM", "mistral": "MistralForCausalLM", "qwen2": "Qwen2ForCausalLM",
            "mixtral": "MixtralForCausalLM", "phi3": "Phi3ForCausalLM", "gemma2": "Gemma2ForCausalLM",
            "gpt2": "GPT2LMHeadModel", "falcon": "FalconForCausalLM", "bloom": "BloomForCausalLM"}[model_type]


# -- config.json -> ModelShape ------------------------------------------------------------------

def _get(config: dict, *keys, default=None):
    for key in keys:
        if config.get(key) is not None:
            return config[key]
    return default


_REQUIRED = object()


def _count(config: dict, *keys, default=_REQUIRED, limit: limits.Limit = limits.WIDTH, least: int = 1) -> int:
    """The first of `keys` the config sets, as a count (limits.count: no bool, no float, no NaN, nothing
    past the limit), else `default`. Every size read from a config.json goes through here."""
    key = next((key for key in keys if config.get(key) is not None), None)
    if key is None:
        if default is _REQUIRED:
            raise ShapeError(f"config.json has no {' / '.join(keys)}")
        return default
    try:
        return limits.count(config[key], key, limit, least)
    except limits.LimitError as error:
        if isinstance(config[key], float) and config[key].is_integer() and config[key] <= limit.most:
            # transformers 5.23's strict config classes refuse it too ("expected int, got float"),
            # and range(config.num_hidden_layers) would fail on it
            raise ShapeError(f"{error} (transformers refuses a float here too)") from None
        raise ShapeError(str(error)) from None


def _probability(config: dict, key: str, default: float) -> float:
    value = _get(config, key, default=default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise ShapeError(f"{key} must be a probability from 0 to 1, not {limits.shown(value)}")
    return value


def _flag(config: dict, key: str, default: bool) -> bool:
    value = _get(config, key, default=default)
    if not isinstance(value, bool):
        raise ShapeError(f"{key} must be true or false, not {limits.shown(value)}")
    return value


def _head_dim(config: dict, hidden: int, heads: int, hidden_keys=("hidden_size",),
              heads_keys=("num_attention_heads",)) -> int:
    """hidden // heads, as transformers derives it; more heads than hidden units would make it 0."""
    if heads > hidden:
        named = [next((k for k in keys if config.get(k) is not None), keys[0]) for keys in (heads_keys, hidden_keys)]
        raise ShapeError(f"{named[0]} {heads} is more than {named[1]} {hidden}: each attention head would have 0 "
                         "dimensions")
    return hidden // heads


# -- reading a config.json, and what no model config can hold -----------------------------------
#
# Every command that takes `--model config.json` (lint, explain, estimate, generate, dsconfig.check) reads
# the file with `read_config`, and every config dict the estimator turns into a shape (a file, a catalog
# entry, a dict given to from_hf_config) passes `check_config`: one place decides what a model config
# may not hold, whatever the architecture. tests/estimate/test_estimate_cli.py holds each rule against
# transformers 5.23 (its config classes, and the models they build).

# The sizes every transformer config names, with what a zero, and a negative number, does to the model.
_NEGATIVE_WIDTH = "transformers fails building the model (RuntimeError \"Trying to create tensor with negative dimension\")"
SIZES = {"hidden_size": ("the hidden states would have no dimensions", _NEGATIVE_WIDTH),
         "num_attention_heads": ("transformers divides by it (ZeroDivisionError)",
                                 "transformers' models fail building the attention or in its first forward pass"),
         "num_hidden_layers": ("the model would have no layers", "the model would have no layers"),
         "intermediate_size": ("the MLP would have no units", _NEGATIVE_WIDTH),
         "vocab_size": ("the embedding would have no tokens", _NEGATIVE_WIDTH)}
# The config.json keys that hold those sizes in the families read here, besides the names above: the
# config class's attribute_map (GPT-2 reads hidden_size from n_embd) and the older spellings the readers
# below take too.
SIZE_ALIASES = {
    "gpt2": {"hidden_size": ("n_embd",), "num_attention_heads": ("n_head",), "num_hidden_layers": ("n_layer",),
             "intermediate_size": ("n_inner",)},
    "bloom": {"hidden_size": ("n_embed",), "num_attention_heads": ("n_head",), "num_hidden_layers": ("n_layer",)},
    "falcon": {"num_attention_heads": ("n_head",), "num_hidden_layers": ("n_layer",),
               "intermediate_size": ("ffn_hidden_size",)},
    "t5": {"hidden_size": ("d_model",), "num_attention_heads": ("num_heads",),
           "num_hidden_layers": ("num_layers", "num_decoder_layers"), "intermediate_size": ("d_ff",)},
}
# The keys transformers' MoE configs count routed experts in (Mixtral num_local_experts, Qwen2/3-MoE
# num_experts, DeepSeek V2/V3 n_routed_experts, Ernie 4.5 moe_num_experts); DeepSpeed's AutoEP presets
# read the same attributes (module_inject/auto_ep_presets: num_experts_attr). And the keys that say how
# many of them each token is routed to (the router's top-k), in the same configs.
EXPERT_COUNT_KEYS = ("num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts")
EXPERTS_PER_TOKEN_KEYS = ("num_experts_per_tok", "moe_k", "moe_topk", "num_experts_per_token")
# The model types whose transformers 5.23 config class itself refuses more K/V heads than attention
# heads, or attention heads that K/V heads do not divide: its ValueError ({heads}, {kv} filled in).
# recurrent_gemma refuses only the first.
KV_REFUSED = {
    "beam": "num_attention_heads must be divisible by num_key_value_heads: {heads} % {kv} != 0",
    "dots3_note_text": "num_key_value_heads must match num_attention_heads",
    "esmc": "ESMC does not support grouped-query attention: `num_key_value_heads` ({kv}) must equal "
            "`num_attention_heads` ({heads}).",
    "glm5_next_text": "num_attention_heads ({heads}) must be the same as num_key_value_heads ({kv}).",
    "neomme": "num_key_value_heads must divide num_attention_heads",
    "recurrent_gemma": "The number of `num_key_value_heads` must be smaller than `num_attention_heads`",
    "zaya": "`num_attention_heads` must be a multiple of `num_key_value_heads`.",
}
KV_REFUSED_ONLY_WHEN_MORE = ("recurrent_gemma",)
# ... and more experts per token than experts ({per_token}, {experts} filled in).
EXPERTS_REFUSED = {
    "jetmoe": "`num_experts_per_tok` must be less than or equal to `num_local_experts`",
    "qwen4_exp_text": "num_experts_per_tok must be in [1, num_experts], got {per_token} and {experts}.",
    "zaya": "ZAYA currently supports `num_experts_per_tok=1` only.",
}
# Where the other model types fail instead: the model builds, and its first forward pass raises.
KV_FAILURE = ("RuntimeError \"The size of tensor a ({heads}) must match the size of tensor b (...) at "
              "non-singleton dimension 1\"")
EXPERTS_FAILURE = "torch.topk: RuntimeError \"selected index k out of range\""


class _Problem(NamedTuple):
    tokens: tuple  # where the key is: the keys leading to it (("text_config", "hidden_size"))
    message: str  # what is wrong, starting with the key's name


def read_config(path: str) -> dict:
    """A Hugging Face config.json as transformers reads it (json.load), checked by `check_config`.
    ShapeError, one line naming the file (and the key's line:column), when it cannot be used."""
    from ..files import FileError, read_json
    try:
        config = read_json(path)
    except FileError as error:
        raise ShapeError(str(error)) from None
    if not isinstance(config, dict):
        raise ShapeError(f"{path}: not a JSON object (a Hugging Face config.json)")
    problem = config_problem(config)
    if problem is not None:
        raise ShapeError(f"{path}{_where(path, problem.tokens)}: {problem.message}")
    return config


def check_config(config: dict) -> None:
    """ShapeError (one line, naming the key) when the config holds what no model can be built from: a
    size that is not positive, more K/V heads than attention heads (or attention heads they do not
    divide), more experts per token than experts."""
    problem = config_problem(config)
    if problem is not None:
        raise ShapeError(problem.message)


def config_problem(config: dict) -> _Problem | None:
    """The first thing wrong in the config or its sub-configs (text_config, vision_config...), else None."""
    pending = [((), config)]
    while pending:
        tokens, section = pending.pop(0)
        problem = _section_problem(section, tokens)
        if problem is not None:
            return problem
        pending += [(tokens + (key,), value) for key, value in section.items()
                    if isinstance(key, str) and key.endswith("_config") and isinstance(value, dict)]
    return None


def _whole(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _section_problem(c: dict, tokens: tuple) -> _Problem | None:
    model_type = c.get("model_type") if isinstance(c.get("model_type"), str) else None
    aliases = SIZE_ALIASES.get(model_type, {})

    def name(key: str) -> str:
        return ".".join(tokens + (key,))

    for size, (zero, negative) in SIZES.items():
        for key in (size,) + aliases.get(size, ()):
            value = c.get(key)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value <= 0:
                continue  # absent, null, positive, NaN, or not a number: the readers say what is wrong with it
            why = "" if not _whole(value) else f": {zero if value == 0 else negative}"
            return _Problem(tokens + (key,), f"{name(key)} must be a positive integer, not {limits.shown(value)}{why}")

    heads_key = next((k for k in ("num_attention_heads",) + aliases.get("num_attention_heads", ()) if k in c), None)
    kv_keys = ("num_key_value_heads",)
    if model_type == "falcon" and (c.get("new_decoder_architecture") is True or c.get("multi_query") is False):
        kv_keys += ("num_kv_heads",)  # FalconAttention reads it then (else one K/V head: multi-query)
    kv_key = next((k for k in kv_keys if _whole(c.get(k))), None)
    if heads_key is not None and kv_key is not None and _whole(c[heads_key]) and c[heads_key] > 0 and c[kv_key] > 0:
        heads, kv = c[heads_key], c[kv_key]
        if kv > heads or heads % kv:
            if kv > heads:
                what = f"{name(kv_key)} {kv} is more than {name(heads_key)} {heads}"
                how = f"attention repeats each key/value head {heads} // {kv} = 0 times"
            else:
                what = f"{name(heads_key)} {heads} is not divisible by {name(kv_key)} {kv}"
                how = (f"attention repeats each key/value head {heads} // {kv} = {heads // kv} times, "
                       f"{heads // kv * kv} heads for {heads} queries")
            refused = KV_REFUSED.get(model_type)
            if refused is not None and (kv > heads or model_type not in KV_REFUSED_ONLY_WHEN_MORE):
                why = f"transformers' {model_type} config refuses it: ValueError \"{refused.format(heads=heads, kv=kv)}\""
            else:
                why = (f"{how}, and the first forward pass fails (transformers' Llama-style attention: "
                       f"{KV_FAILURE.format(heads=heads)})")
            return _Problem(tokens + (kv_key,), f"{what}: {why}")

    for per_token_key in EXPERTS_PER_TOKEN_KEYS:
        per_token = c.get(per_token_key)
        if not _whole(per_token):
            continue
        for experts_key in EXPERT_COUNT_KEYS:
            experts = c.get(experts_key)
            # 0 or 1 routed experts builds dense MLPs in Qwen2/3-MoE, GraniteMoeHybrid and Jamba: no router runs
            if _whole(experts) and experts > 1 and per_token > experts:
                refused = EXPERTS_REFUSED.get(model_type)
                if refused is not None:
                    why = (f"transformers' {model_type} config refuses it: ValueError "
                           f"\"{refused.format(per_token=per_token, experts=experts)}\"")
                else:
                    why = (f"the router picks the top {per_token} of {experts} experts, and the first forward pass "
                           f"fails ({EXPERTS_FAILURE})")
                return _Problem(tokens + (per_token_key,),
                                f"{name(per_token_key)} {per_token} is more than {name(experts_key)} {experts}: {why}")
    return None


def _where(path: str, tokens: tuple) -> str:
    """":line:column" of the key in the file (the last one, as json.load keeps it), or "" when the file
    cannot be read again."""
    from .. import jsonscan
    from ..files import FileError, read_text
    from ..pointers import pointer_from
    try:
        text = read_text(path)
        span = jsonscan.scan(text).spans.get(pointer_from(tokens))
    except (FileError, jsonscan.ScanError, RecursionError, ValueError):
        return ""
    if span is None or span.key_start is None:
        return ""
    line, column = jsonscan.position(jsonscan.line_starts(text), span.key_start)
    return f":{line}:{column}"


def from_config_file(path: str) -> ModelShape:
    """The shape from a Hugging Face config.json file; ShapeError (one line, naming the file) otherwise."""
    import os

    config = read_config(path)
    try:
        return from_hf_config(config, os.path.basename(os.path.dirname(os.path.abspath(path))) or path)
    except (ShapeError, TypeError, ValueError, OverflowError) as error:  # a wrong type or absurd size inside
        raise ShapeError(f"{path}: {error}") from None


def from_hf_config(config: dict, name: str = "") -> ModelShape:
    """Derive the shape from a Hugging Face config.json dict (transformers' defaults for missing keys)."""
    if not isinstance(config, dict):
        raise ShapeError("config.json must hold a JSON object")
    check_config(config)
    model_type = config.get("model_type")
    if model_type is None:
        raise ShapeError("config.json has no model_type")
    if model_type not in FAMILIES:
        raise ShapeError(f"model_type {limits.shown(model_type)} is not supported (supported: {', '.join(FAMILIES)}); "
                         "use --params with shape flags, or --profile with --model-factory")
    reader = globals()[f"_read_{model_type}"] if model_type not in LLAMA_LIKE else _read_llama_like
    shape = reader(config)
    total, largest = count_parameters(shape)
    if total > limits.PARAMETERS.most:
        raise ShapeError(limits.too_large(f"the model has {total:,} parameters", limits.PARAMETERS))
    return replace(shape, parameters=total, largest_layer_params=largest, config=dict(config), name=name)


def _read_llama_like(c: dict) -> ModelShape:
    t = c["model_type"]
    hidden = _count(c, "hidden_size")
    heads = _count(c, "num_attention_heads")
    kv = _count(c, "num_key_value_heads", default=heads)
    head_dim = _count(c, "head_dim", default=None)
    if head_dim is None:
        head_dim = _head_dim(c, hidden, heads)
    defaults = {"llama": (11008, 32000, 32), "mistral": (14336, 32000, 32), "qwen2": (22016, 151936, 32),
                "mixtral": (14336, 32000, 32), "phi3": (8192, 32064, 32)}[t]
    rotary = _get(c, "partial_rotary_factor", default=1.0)
    if isinstance(rotary, bool) or not isinstance(rotary, (int, float)) or not 0 < rotary <= 1:
        raise ShapeError(f"partial_rotary_factor must be a fraction above 0 and at most 1, not {limits.shown(rotary)}")
    extra = {"attention_bias": _flag(c, "attention_bias", False),
             "mlp_bias": _flag(c, "mlp_bias", False),
             "fused_qkv": t == "phi3",
             "partial_rotary_factor": float(rotary)}
    if t == "qwen2":
        extra["qkv_bias"] = True  # Qwen2 always has q/k/v biases and none on o_proj
    return ModelShape(
        family=t, layers=_count(c, "num_hidden_layers", default=defaults[2], limit=limits.LAYERS), hidden=hidden,
        heads=heads, kv_heads=kv, head_dim=head_dim, intermediate=_count(c, "intermediate_size", default=defaults[0]),
        vocab=_count(c, "vocab_size", default=defaults[1], limit=limits.VOCABULARY),
        tied_embeddings=_flag(c, "tie_word_embeddings", False), mlp="swiglu",
        experts=_count(c, "num_local_experts", default=8, limit=limits.EXPERTS) if t == "mixtral" else 0,
        experts_per_token=_count(c, "num_experts_per_tok", default=2, limit=limits.EXPERTS) if t == "mixtral" else 0,
        max_positions=_count(c, "max_position_embeddings", default=4096, limit=limits.SEQUENCE),
        dropout={"attention": _probability(c, "attention_dropout", 0.0),
                 **({"embedding": _probability(c, "embd_pdrop", 0.0),
                     "residual": _probability(c, "resid_pdrop", 0.0)} if t == "phi3" else {})},
        extra=extra)


def _read_gemma2(c: dict) -> ModelShape:
    hidden = _count(c, "hidden_size", default=2304)
    heads = _count(c, "num_attention_heads", default=8)
    return ModelShape(
        family="gemma2", layers=_count(c, "num_hidden_layers", default=26, limit=limits.LAYERS), hidden=hidden,
        heads=heads, kv_heads=_count(c, "num_key_value_heads", default=4), head_dim=_count(c, "head_dim", default=256),
        intermediate=_count(c, "intermediate_size", default=9216),
        vocab=_count(c, "vocab_size", default=256000, limit=limits.VOCABULARY),
        tied_embeddings=_flag(c, "tie_word_embeddings", True), mlp="geglu",
        max_positions=_count(c, "max_position_embeddings", default=8192, limit=limits.SEQUENCE),
        dropout={"attention": _probability(c, "attention_dropout", 0.0)},
        extra={"attn_softcap": _get(c, "attn_logit_softcapping", default=50.0),
               "final_softcap": _get(c, "final_logit_softcapping", default=30.0),
               "attention_bias": _flag(c, "attention_bias", False)})


def _read_gpt2(c: dict) -> ModelShape:
    hidden = _count(c, "n_embd", "hidden_size", default=768)
    heads = _count(c, "n_head", "num_attention_heads", default=12)
    return ModelShape(
        family="gpt2", layers=_count(c, "n_layer", "num_hidden_layers", default=12, limit=limits.LAYERS),
        hidden=hidden, heads=heads, kv_heads=heads, head_dim=_head_dim(c, hidden, heads, ("n_embd", "hidden_size"),
                                                                             ("n_head", "num_attention_heads")),
        intermediate=_count(c, "n_inner", default=4 * hidden),
        vocab=_count(c, "vocab_size", default=50257, limit=limits.VOCABULARY),
        tied_embeddings=_flag(c, "tie_word_embeddings", True),
        mlp="gelu_new" if _get(c, "activation_function", default="gelu_new") == "gelu_new" else "gelu",
        max_positions=_count(c, "n_positions", default=1024, limit=limits.SEQUENCE),
        dropout={"embedding": _probability(c, "embd_pdrop", 0.1), "attention": _probability(c, "attn_pdrop", 0.1),
                 "residual": _probability(c, "resid_pdrop", 0.1)})


def _read_falcon(c: dict) -> ModelShape:
    hidden = _count(c, "hidden_size", default=4544)
    heads = _count(c, "num_attention_heads", "n_head", default=71)
    new_arch = _flag(c, "new_decoder_architecture", False)
    multi_query = _flag(c, "multi_query", True)
    if new_arch:
        kv = _count(c, "num_kv_heads", default=heads)
    else:
        kv = 1 if multi_query else heads
    if _flag(c, "alibi", False):
        raise ShapeError("Falcon with alibi=true is not supported")
    return ModelShape(
        family="falcon", layers=_count(c, "num_hidden_layers", "n_layer", default=32, limit=limits.LAYERS),
        hidden=hidden, heads=heads, kv_heads=kv,
        head_dim=_head_dim(c, hidden, heads, heads_keys=("num_attention_heads", "n_head")),
        intermediate=_count(c, "ffn_hidden_size", default=4 * hidden),
        vocab=_count(c, "vocab_size", default=65024, limit=limits.VOCABULARY),
        tied_embeddings=_flag(c, "tie_word_embeddings", True), mlp="gelu",
        max_positions=_count(c, "max_position_embeddings", default=2048, limit=limits.SEQUENCE),
        dropout={"attention": _probability(c, "attention_dropout", 0.0),
                 "residual": _probability(c, "hidden_dropout", 0.0)},
        extra={"new_decoder_architecture": new_arch, "multi_query": multi_query,
               "parallel_attn": _flag(c, "parallel_attn", True), "bias": _flag(c, "bias", False),
               "num_ln_in_parallel_attn": _count(c, "num_ln_in_parallel_attn", default=2 if new_arch else 1)})


def _read_bloom(c: dict) -> ModelShape:
    hidden = _count(c, "hidden_size", "n_embed", default=64)
    heads = _count(c, "n_head", "num_attention_heads", default=8)
    return ModelShape(
        family="bloom", layers=_count(c, "n_layer", "num_hidden_layers", default=2, limit=limits.LAYERS),
        hidden=hidden, heads=heads, kv_heads=heads, head_dim=_head_dim(c, hidden, heads, ("hidden_size", "n_embed"),
                                                                               ("n_head", "num_attention_heads")),
        intermediate=4 * hidden, vocab=_count(c, "vocab_size", default=250880, limit=limits.VOCABULARY),
        tied_embeddings=_flag(c, "tie_word_embeddings", True), mlp="gelu",
        dropout={"attention": _probability(c, "attention_dropout", 0.0),
                 "residual": _probability(c, "hidden_dropout", 0.0)})


def _read_t5(c: dict) -> ModelShape:
    d_model = _count(c, "d_model", default=512)
    heads = _count(c, "num_heads", default=8)
    layers = _count(c, "num_layers", default=6, limit=limits.LAYERS)
    proj = _get(c, "feed_forward_proj", default="relu")
    if proj not in ("relu", "gated-gelu", "gated-relu", "gelu"):
        raise ShapeError(f"T5 feed_forward_proj {limits.shown(proj)} is not supported")
    return ModelShape(
        family="t5", layers=layers, hidden=d_model, heads=heads, kv_heads=heads, head_dim=_count(c, "d_kv", default=64),
        intermediate=_count(c, "d_ff", default=2048), vocab=_count(c, "vocab_size", default=32128,
                                                                   limit=limits.VOCABULARY),
        # transformers 5 always ties T5's lm_head to the shared embedding; a false tie_word_embeddings
        # (T5 v1.1, FLAN-T5) now only turns off the d_model**-0.5 scaling of the decoder output
        tied_embeddings=True,
        mlp={"relu": "relu", "gelu": "gelu", "gated-gelu": "gated-gelu", "gated-relu": "gated-relu"}[proj],
        decoder_layers=_count(c, "num_decoder_layers", default=layers, limit=limits.LAYERS),
        dropout={"all": _probability(c, "dropout_rate", 0.1)},
        extra={"buckets": _count(c, "relative_attention_num_buckets", default=32),
               "scale_decoder_outputs": _flag(c, "tie_word_embeddings", True)})


def _read_vit(c: dict) -> ModelShape:
    hidden = _count(c, "hidden_size", default=768)
    heads = _count(c, "num_attention_heads", default=12)
    labels = _count(c, "num_labels", default=None, limit=limits.VOCABULARY, least=0)
    if labels is None:
        labels = len(c["id2label"]) if isinstance(c.get("id2label"), dict) else 2
    return ModelShape(
        family="vit", layers=_count(c, "num_hidden_layers", default=12, limit=limits.LAYERS), hidden=hidden,
        heads=heads, kv_heads=heads, head_dim=_head_dim(c, hidden, heads),
        intermediate=_count(c, "intermediate_size", default=3072), vocab=0,
        tied_embeddings=False, mlp="gelu", image_size=_count(c, "image_size", default=224),
        patch_size=_count(c, "patch_size", default=16), channels=_count(c, "num_channels", default=3), labels=labels,
        dropout={"attention": _probability(c, "attention_probs_dropout_prob", 0.0),
                 "residual": _probability(c, "hidden_dropout_prob", 0.0)},
        extra={"qkv_bias": _flag(c, "qkv_bias", True)})


# -- parameter counts ---------------------------------------------------------------------------

def count_parameters(shape: ModelShape) -> tuple[int, int]:
    """(unique parameters, largest module's direct parameters), as transformers builds the model.

    Each family lists its modules' direct parameter counts; the total is their sum (a tied LM head
    is the embedding, counted once) and the largest layer their maximum, exactly what DeepSpeed's
    `_all_live` estimators compute from a live model.
    """
    modules = _module_params(shape)
    return sum(size * times for size, times in modules), max(size for size, times in modules if times)


def _linear(n_in: int, n_out: int, bias: bool = False) -> int:
    return n_in * n_out + (n_out if bias else 0)


def _once(*sizes: int) -> list[tuple[int, int]]:
    return [(size, 1) for size in sizes]


def _each(sizes: list[int], times: int) -> list[tuple[int, int]]:
    """Modules repeated in every layer, as (size, times): the work does not grow with the layer count."""
    return [(size, times) for size in sizes]


def _module_params(s: ModelShape) -> list[tuple[int, int]]:
    """(direct parameters of a module, how many such modules), module by module."""
    h, V = s.hidden, s.vocab
    f = s.family
    mods: list[tuple[int, int]] = []
    if f in LLAMA_LIKE or f == "gemma2":
        x = s.extra
        qkv_bias = x.get("qkv_bias", False) or x.get("attention_bias", False)
        o_bias = x.get("attention_bias", False)
        layer: list[int] = []
        if x.get("fused_qkv"):
            layer.append(_linear(h, s.q_dim + 2 * s.kv_dim, qkv_bias))
        else:
            layer += [_linear(h, s.q_dim, qkv_bias), _linear(h, s.kv_dim, qkv_bias), _linear(h, s.kv_dim, qkv_bias)]
        layer.append(_linear(s.q_dim, h, o_bias))
        if s.experts:
            layer += [s.experts * h,  # router
                      s.experts * 2 * s.intermediate * h + s.experts * h * s.intermediate]  # experts' 3D weights
        elif x.get("fused_qkv"):  # phi3: gate_up_proj fused
            layer += [_linear(h, 2 * s.intermediate), _linear(s.intermediate, h)]
        else:
            mb = x.get("mlp_bias", False)
            layer += [_linear(h, s.intermediate, mb), _linear(h, s.intermediate, mb), _linear(s.intermediate, h, mb)]
        layer += [h] * (4 if f == "gemma2" else 2)  # RMSNorm weights
        mods += _once(V * h) + _each(layer, s.layers) + _once(h)
        if not s.tied_embeddings:
            mods += _once(V * h)
    elif f == "gpt2":
        layer = [2 * h, _linear(h, 3 * h, True), _linear(h, h, True), 2 * h,
                 _linear(h, s.intermediate, True), _linear(s.intermediate, h, True)]
        mods += _once(V * h, s.max_positions * h) + _each(layer, s.layers) + _once(2 * h)
        if not s.tied_embeddings:
            mods += _once(V * h)
    elif f == "falcon":
        x = s.extra
        bias = x["bias"]
        if x["new_decoder_architecture"] or x["multi_query"]:
            qkv_out = s.q_dim + 2 * s.kv_dim
        else:
            qkv_out = 3 * h
        layer = [_linear(h, qkv_out, bias), _linear(h, h, bias), _linear(h, s.intermediate, bias),
                 _linear(s.intermediate, h, bias)]
        if x["new_decoder_architecture"] and x["num_ln_in_parallel_attn"] == 2:
            layer += [2 * h, 2 * h]
        else:
            layer += [2 * h]
            if not x["parallel_attn"]:
                layer += [2 * h]
        mods += _once(V * h) + _each(layer, s.layers) + _once(2 * h)
        if not s.tied_embeddings:
            mods += _once(V * h)
    elif f == "bloom":
        layer = [2 * h, _linear(h, 3 * h, True), _linear(h, h, True), 2 * h,
                 _linear(h, 4 * h, True), _linear(4 * h, h, True)]
        mods += _once(V * h, 2 * h) + _each(layer, s.layers) + _once(2 * h)
        if not s.tied_embeddings:
            mods += _once(V * h)
    elif f == "t5":
        inner = s.q_dim
        attention = [h * inner] * 4
        ff = [h * s.intermediate] * (2 if s.mlp.startswith("gated") else 1) + [s.intermediate * h]
        bias_table = s.extra["buckets"] * s.heads
        mods += _once(V * h)
        for stack_layers, cross in ((s.layers, False), (s.decoder_layers, True)):
            block = attention + [h] + (attention + [h] if cross else []) + ff + [h]
            mods += _each(block, stack_layers) + (_once(bias_table) if stack_layers else [])  # in the first block
            mods += _once(h)  # final layer norm
        if not s.tied_embeddings:
            mods += _once(V * h)
    elif f == "vit":
        patches = (s.image_size // s.patch_size) ** 2
        bias = s.extra.get("qkv_bias", True)
        mods += _once(h + (patches + 1) * h, _linear(s.channels * s.patch_size ** 2, h, True))
        layer = [_linear(h, h, bias)] * 3 + [_linear(h, h, True), _linear(h, s.intermediate, True),
                                            _linear(s.intermediate, h, True), 2 * h, 2 * h]
        mods += _each(layer, s.layers) + _once(2 * h, _linear(h, s.labels, True))
    elif f == "generic":
        mods += _once(s.parameters) if not s.layers else _generic_modules(s)
    else:
        raise ShapeError(f"no parameter count for family {f!r}")
    return mods


def _generic_modules(s: ModelShape) -> list[tuple[int, int]]:
    h = s.hidden
    layer = [h * s.q_dim, h * s.kv_dim, h * s.kv_dim, s.q_dim * h] + [h * s.intermediate] * 3 + [h, h]
    mods = _once(s.vocab * h) + _each(layer, s.layers) + _once(h)
    if not s.tied_embeddings:
        mods += _once(s.vocab * h)
    return mods


# -- --params 7B --------------------------------------------------------------------------------

_SUFFIX = {"": 1, "K": 10 ** 3, "M": 10 ** 6, "B": 10 ** 9, "G": 10 ** 9, "T": 10 ** 12}


def parse_count(text: str) -> int:
    """`7B`, `6.7b`, `350M`, `124439808` -> an integer parameter count."""
    match = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([kKmMbBgGtT]?)\s*", str(text))
    if not match:
        raise ShapeError(f"cannot read {text!r} as a parameter count (use e.g. 7B, 350M or 124439808)")
    value = float(match.group(1)) * _SUFFIX[match.group(2).upper()]
    if value < 1:
        raise ShapeError(f"parameter count must be positive, got {text!r}")
    if value > limits.PARAMETERS.most:  # infinity too: 400 digits are more than a float holds
        written = text.strip() if len(text.strip()) <= 30 else text.strip()[:27] + "..."
        size = f"{value:.3g} parameters" if value != math.inf else "more parameters than a float holds"
        raise ShapeError(limits.too_large(f"{written} is {size}", limits.PARAMETERS))
    return int(round(value))


def from_params(total: int, *, layers: int | None = None, hidden: int | None = None, heads: int | None = None,
                kv_heads: int | None = None, intermediate: int | None = None, vocab: int | None = None,
                tied: bool = False, largest_layer: int | None = None, name: str = "") -> ModelShape:
    """A Llama-style decoder of about `total` parameters; given flags win over the derived values.

    The model-state terms use `total` exactly; the shape only feeds the activation estimate, which
    is then as good as the guessed widths. Llama's proportions: 12·h² per layer (attention 4·h²,
    SwiGLU 3·h·8h/3), head dim 128, and about h/128 layers.
    """
    try:
        limits.count(total, "the parameter count", limits.PARAMETERS)
    except limits.LimitError as error:
        raise ShapeError(str(error)) from None
    vocab = vocab or 32000
    embeddings = 1 if tied else 2
    if hidden is None:
        if layers is not None:  # 12·L·h² + e·V·h = total
            root = math.sqrt((embeddings * vocab) ** 2 + 48 * layers * total)
            hidden = _round_width((root - embeddings * vocab) / (24 * layers))
        else:
            hidden = min((_round_width(h) for h in range(64, 65536 + 1, 64)),
                         key=lambda h: abs(12 * max(1, round(h / 128)) * h * h + embeddings * vocab * h - total))
    if layers is None:
        layers = max(1, round((total - embeddings * vocab * hidden) / (12 * hidden * hidden)))
    head_dim = 128 if hidden % 128 == 0 else 64 if hidden % 64 == 0 else hidden
    heads = heads or max(1, hidden // head_dim)
    kv_heads = kv_heads or heads
    if hidden % heads:
        raise ShapeError(f"--hidden {hidden} is not divisible by --heads {heads}")
    if heads % kv_heads:
        raise ShapeError(f"--heads {heads} is not divisible by --kv-heads {kv_heads}")
    intermediate = intermediate or int(8 * hidden / 3 + 255) // 256 * 256
    for size, made, limit in ((layers, f"at hidden size {hidden:,} make {layers:,} layers", limits.LAYERS),
                              (hidden, f"in {layers:,} layers make a hidden size of {hidden:,}", limits.WIDTH),
                              (intermediate, f"at hidden size {hidden:,} make an MLP width of {intermediate:,}",
                               limits.WIDTH)):
        if size > limit.most:  # a size the flags did not give, derived from too many parameters per width
            raise ShapeError(limits.too_large(f"{total:,} parameters {made}", limit))
    shape = ModelShape(family="llama", layers=layers, hidden=hidden, heads=heads, kv_heads=kv_heads,
                       head_dim=hidden // heads, intermediate=intermediate, vocab=vocab, tied_embeddings=tied,
                       mlp="swiglu", dropout={"attention": 0.0}, extra={}, name=name)
    _, derived_largest = count_parameters(shape)
    return replace(shape, parameters=total, largest_layer_params=largest_layer or derived_largest)


def _round_width(width: float) -> int:
    """A plausible hidden size near `width`: a multiple of 128 (64 for small models)."""
    step = 128 if width >= 512 else 64
    return max(64, int(round(width / step)) * step)
