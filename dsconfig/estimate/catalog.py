"""Built-in model catalog: the architecture fields of popular models' Hugging Face config.json.

Each entry holds the config.json keys that decide the model's shape (the same keys
`shapes.from_hf_config` reads from a user's file), so a catalog name and the real config file give
the same estimate. `source` is the Hub page of the config the values were copied from. The tests
build each entry with transformers on the meta device and check the parameter count exactly.

Only shapes are here: no weights, nothing is downloaded.
"""

from __future__ import annotations

from typing import NamedTuple


class Entry(NamedTuple):
    name: str
    config: dict  # config.json keys (model_type first)
    source: str  # where the values come from


HUB = "https://huggingface.co/{}/blob/main/config.json"


def _gpt2(n_embd, n_layer, n_head):
    return {"model_type": "gpt2", "vocab_size": 50257, "n_positions": 1024, "n_embd": n_embd, "n_layer": n_layer,
            "n_head": n_head, "activation_function": "gelu_new", "resid_pdrop": 0.1, "embd_pdrop": 0.1,
            "attn_pdrop": 0.1, "layer_norm_epsilon": 1e-5, "tie_word_embeddings": True}


def _llama(hidden, inter, layers, heads, kv, vocab, *, tie=False, head_dim=None, rope_theta=10000.0,
           max_pos=4096, rms_eps=1e-5, **extra):
    config = {"model_type": "llama", "hidden_size": hidden, "intermediate_size": inter,
              "num_hidden_layers": layers, "num_attention_heads": heads, "num_key_value_heads": kv,
              "vocab_size": vocab, "max_position_embeddings": max_pos, "rms_norm_eps": rms_eps,
              "rope_theta": rope_theta, "hidden_act": "silu", "attention_bias": False, "mlp_bias": False,
              "tie_word_embeddings": tie}
    if head_dim is not None:
        config["head_dim"] = head_dim
    config.update(extra)
    return config


def _mistral(vocab, sliding_window, rope_theta):
    return {"model_type": "mistral", "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
            "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": vocab, "hidden_act": "silu",
            "max_position_embeddings": 32768, "rms_norm_eps": 1e-5, "rope_theta": rope_theta,
            "sliding_window": sliding_window, "tie_word_embeddings": False}


def _mixtral(hidden, inter, layers, heads, vocab):
    return {"model_type": "mixtral", "hidden_size": hidden, "intermediate_size": inter, "num_hidden_layers": layers,
            "num_attention_heads": heads, "num_key_value_heads": 8, "num_local_experts": 8,
            "num_experts_per_tok": 2, "vocab_size": vocab, "hidden_act": "silu", "max_position_embeddings": 65536,
            "rms_norm_eps": 1e-5, "rope_theta": 1e6, "sliding_window": None, "router_aux_loss_coef": 0.02,
            "tie_word_embeddings": False}


def _qwen2(hidden, inter, layers, heads, kv, vocab, tie):
    return {"model_type": "qwen2", "hidden_size": hidden, "intermediate_size": inter, "num_hidden_layers": layers,
            "num_attention_heads": heads, "num_key_value_heads": kv, "vocab_size": vocab, "hidden_act": "silu",
            "max_position_embeddings": 32768 if hidden < 3584 else 131072, "rms_norm_eps": 1e-6,
            "rope_theta": 1e6, "use_sliding_window": False, "tie_word_embeddings": tie}


def _gemma2(hidden, inter, layers, heads, kv, head_dim, query_pre_attn_scalar):
    return {"model_type": "gemma2", "hidden_size": hidden, "intermediate_size": inter, "num_hidden_layers": layers,
            "num_attention_heads": heads, "num_key_value_heads": kv, "head_dim": head_dim, "vocab_size": 256000,
            "hidden_activation": "gelu_pytorch_tanh", "max_position_embeddings": 8192, "rms_norm_eps": 1e-6,
            "rope_theta": 10000.0, "sliding_window": 4096, "attn_logit_softcapping": 50.0,
            "final_logit_softcapping": 30.0, "query_pre_attn_scalar": query_pre_attn_scalar,
            "tie_word_embeddings": True}


def _phi3(hidden, inter, layers, heads, kv):
    return {"model_type": "phi3", "hidden_size": hidden, "intermediate_size": inter, "num_hidden_layers": layers,
            "num_attention_heads": heads, "num_key_value_heads": kv, "vocab_size": 32064, "hidden_act": "silu",
            "max_position_embeddings": 4096, "original_max_position_embeddings": 4096, "rms_norm_eps": 1e-5,
            "rope_theta": 10000.0, "sliding_window": 2047, "resid_pdrop": 0.0, "embd_pdrop": 0.0,
            "attention_dropout": 0.0, "pad_token_id": 32000, "tie_word_embeddings": False}


def _bloom(hidden, layers, heads):
    return {"model_type": "bloom", "hidden_size": hidden, "n_layer": layers, "n_head": heads, "vocab_size": 250880,
            "layer_norm_epsilon": 1e-5, "hidden_dropout": 0.0, "attention_dropout": 0.0,
            "apply_residual_connection_post_layernorm": False, "tie_word_embeddings": True}


def _t5(d_model, d_ff, heads, layers, *, gated=False, tie=True):
    return {"model_type": "t5", "d_model": d_model, "d_ff": d_ff, "d_kv": 64, "num_heads": heads,
            "num_layers": layers, "num_decoder_layers": layers, "vocab_size": 32128,
            "feed_forward_proj": "gated-gelu" if gated else "relu", "dropout_rate": 0.1,
            "relative_attention_num_buckets": 32, "relative_attention_max_distance": 128,
            "layer_norm_epsilon": 1e-6, "tie_word_embeddings": tie, "decoder_start_token_id": 0,
            "pad_token_id": 0, "eos_token_id": 1}


def _vit(hidden, layers, heads, inter, patch, labels):
    return {"model_type": "vit", "hidden_size": hidden, "num_hidden_layers": layers, "num_attention_heads": heads,
            "intermediate_size": inter, "hidden_act": "gelu", "image_size": 224, "patch_size": patch,
            "num_channels": 3, "qkv_bias": True, "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0,
            "layer_norm_eps": 1e-12, "num_labels": labels}


_LLAMA3_SCALING = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                   "original_max_position_embeddings": 8192}
_LLAMA32_SCALING = dict(_LLAMA3_SCALING, factor=32.0)

_ENTRIES = [
    ("gpt2", "openai-community/gpt2", _gpt2(768, 12, 12)),
    ("gpt2-medium", "openai-community/gpt2-medium", _gpt2(1024, 24, 16)),
    ("gpt2-large", "openai-community/gpt2-large", _gpt2(1280, 36, 20)),
    ("gpt2-xl", "openai-community/gpt2-xl", _gpt2(1600, 48, 25)),
    ("llama-2-7b", "meta-llama/Llama-2-7b-hf", _llama(4096, 11008, 32, 32, 32, 32000)),
    ("llama-2-13b", "meta-llama/Llama-2-13b-hf", _llama(5120, 13824, 40, 40, 40, 32000)),
    ("llama-2-70b", "meta-llama/Llama-2-70b-hf", _llama(8192, 28672, 80, 64, 8, 32000)),
    ("llama-3-8b", "meta-llama/Meta-Llama-3-8B",
     _llama(4096, 14336, 32, 32, 8, 128256, rope_theta=500000.0, max_pos=8192)),
    ("llama-3-70b", "meta-llama/Meta-Llama-3-70B",
     _llama(8192, 28672, 80, 64, 8, 128256, rope_theta=500000.0, max_pos=8192)),
    ("llama-3.1-8b", "meta-llama/Llama-3.1-8B",
     _llama(4096, 14336, 32, 32, 8, 128256, rope_theta=500000.0, max_pos=131072, rope_scaling=_LLAMA3_SCALING)),
    ("llama-3.1-70b", "meta-llama/Llama-3.1-70B",
     _llama(8192, 28672, 80, 64, 8, 128256, rope_theta=500000.0, max_pos=131072, rope_scaling=_LLAMA3_SCALING)),
    ("llama-3.1-405b", "meta-llama/Llama-3.1-405B",
     _llama(16384, 53248, 126, 128, 8, 128256, rope_theta=500000.0, max_pos=131072,
            rope_scaling=_LLAMA3_SCALING)),
    ("llama-3.2-1b", "meta-llama/Llama-3.2-1B",
     _llama(2048, 8192, 16, 32, 8, 128256, tie=True, head_dim=64, rope_theta=500000.0, max_pos=131072,
            rope_scaling=_LLAMA32_SCALING)),
    ("llama-3.2-3b", "meta-llama/Llama-3.2-3B",
     _llama(3072, 8192, 28, 24, 8, 128256, tie=True, head_dim=128, rope_theta=500000.0, max_pos=131072,
            rope_scaling=_LLAMA32_SCALING)),
    ("mistral-7b-v0.1", "mistralai/Mistral-7B-v0.1", _mistral(32000, 4096, 10000.0)),
    ("mistral-7b-v0.3", "mistralai/Mistral-7B-v0.3", _mistral(32768, None, 1e6)),
    ("mixtral-8x7b", "mistralai/Mixtral-8x7B-v0.1", _mixtral(4096, 14336, 32, 32, 32000)),
    ("mixtral-8x22b", "mistralai/Mixtral-8x22B-v0.1", _mixtral(6144, 16384, 56, 48, 32000)),
    ("qwen2.5-0.5b", "Qwen/Qwen2.5-0.5B", _qwen2(896, 4864, 24, 14, 2, 151936, True)),
    ("qwen2.5-1.5b", "Qwen/Qwen2.5-1.5B", _qwen2(1536, 8960, 28, 12, 2, 151936, True)),
    ("qwen2.5-3b", "Qwen/Qwen2.5-3B", _qwen2(2048, 11008, 36, 16, 2, 151936, True)),
    ("qwen2.5-7b", "Qwen/Qwen2.5-7B", _qwen2(3584, 18944, 28, 28, 4, 152064, False)),
    ("qwen2.5-14b", "Qwen/Qwen2.5-14B", _qwen2(5120, 13824, 48, 40, 8, 152064, False)),
    ("qwen2.5-32b", "Qwen/Qwen2.5-32B", _qwen2(5120, 27648, 64, 40, 8, 152064, False)),
    ("qwen2.5-72b", "Qwen/Qwen2.5-72B", _qwen2(8192, 29568, 80, 64, 8, 152064, False)),
    ("gemma-2-2b", "google/gemma-2-2b", _gemma2(2304, 9216, 26, 8, 4, 256, 256)),
    ("gemma-2-9b", "google/gemma-2-9b", _gemma2(3584, 14336, 42, 16, 8, 256, 256)),
    ("gemma-2-27b", "google/gemma-2-27b", _gemma2(4608, 36864, 46, 32, 16, 128, 144)),
    ("phi-3-mini", "microsoft/Phi-3-mini-4k-instruct", _phi3(3072, 8192, 32, 32, 32)),
    ("phi-3-medium", "microsoft/Phi-3-medium-4k-instruct", _phi3(5120, 17920, 40, 40, 10)),
    ("falcon-7b", "tiiuae/falcon-7b",
     {"model_type": "falcon", "hidden_size": 4544, "num_hidden_layers": 32, "num_attention_heads": 71,
      "multi_query": True, "new_decoder_architecture": False, "parallel_attn": True, "bias": False,
      "alibi": False, "vocab_size": 65024, "layer_norm_epsilon": 1e-5, "hidden_dropout": 0.0,
      "attention_dropout": 0.0, "tie_word_embeddings": True}),
    ("falcon-40b", "tiiuae/falcon-40b",
     {"model_type": "falcon", "hidden_size": 8192, "num_hidden_layers": 60, "num_attention_heads": 128,
      "num_kv_heads": 8, "new_decoder_architecture": True, "parallel_attn": True, "bias": False,
      "alibi": False, "vocab_size": 65024, "layer_norm_epsilon": 1e-5, "hidden_dropout": 0.0,
      "attention_dropout": 0.0, "tie_word_embeddings": True}),
    ("bloom-560m", "bigscience/bloom-560m", _bloom(1024, 24, 16)),
    ("bloom-1b7", "bigscience/bloom-1b7", _bloom(2048, 24, 16)),
    ("bloom-7b1", "bigscience/bloom-7b1", _bloom(4096, 30, 32)),
    ("bloom-176b", "bigscience/bloom", _bloom(14336, 70, 112)),
    ("t5-small", "google-t5/t5-small", _t5(512, 2048, 8, 6)),
    ("t5-base", "google-t5/t5-base", _t5(768, 3072, 12, 12)),
    ("t5-large", "google-t5/t5-large", _t5(1024, 4096, 16, 24)),
    ("flan-t5-xl", "google/flan-t5-xl", _t5(2048, 5120, 32, 24, gated=True, tie=False)),
    ("vit-base-patch16-224", "google/vit-base-patch16-224", _vit(768, 12, 12, 3072, 16, 1000)),
    ("vit-large-patch16-224", "google/vit-large-patch16-224", _vit(1024, 24, 16, 4096, 16, 1000)),
    ("vit-huge-patch14-224", "google/vit-huge-patch14-224-in21k", _vit(1280, 32, 16, 5120, 14, 21843)),
]

CATALOG: dict[str, Entry] = {name: Entry(name, config, HUB.format(repo)) for name, repo, config in _ENTRIES}

# What people also type for the same entry.
ALIASES = {
    "gpt2-small": "gpt2", "llama2-7b": "llama-2-7b", "llama2-13b": "llama-2-13b", "llama2-70b": "llama-2-70b",
    "llama3-8b": "llama-3-8b", "llama3-70b": "llama-3-70b", "mistral-7b": "mistral-7b-v0.3",
    "mixtral-8x7b-v0.1": "mixtral-8x7b", "bloom": "bloom-176b", "vit-base": "vit-base-patch16-224",
    "vit-large": "vit-large-patch16-224", "vit-huge": "vit-huge-patch14-224",
}


def lookup(name: str) -> Entry | None:
    """The entry for a catalog name (case-insensitive; aliases and the Hub repo name also work)."""
    key = name.strip().lower()
    key = ALIASES.get(key, key)
    if key in CATALOG:
        return CATALOG[key]
    for entry in CATALOG.values():  # "meta-llama/Llama-2-7b-hf" -> its entry
        if entry.source.lower() == HUB.format(key).lower():
            return entry
    return None


def names() -> list[str]:
    return list(CATALOG)
