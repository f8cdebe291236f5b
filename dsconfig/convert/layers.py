"""The decoder-layer class FSDP wraps, by Hugging Face model_type, for the catalog's model families.

Each name is the class in transformers' modeling_<model_type>.py that the model's `_no_split_modules`
lists (tests/convert check them against transformers). A model not here needs
fsdp_transformer_layer_cls_to_wrap set by hand, or Accelerate's fallback to `_no_split_modules`.
"""

from __future__ import annotations

LAYER_CLASS = {
    "bloom": "BloomBlock",
    "falcon": "FalconDecoderLayer",
    "gemma2": "Gemma2DecoderLayer",
    "gpt2": "GPT2Block",
    "llama": "LlamaDecoderLayer",
    "mistral": "MistralDecoderLayer",
    "mixtral": "MixtralDecoderLayer",
    "phi3": "Phi3DecoderLayer",
    "qwen2": "Qwen2DecoderLayer",
    "t5": "T5Block",
    "vit": "ViTLayer",
}


def layer_class(model_type: str) -> str | None:
    return LAYER_CLASS.get(model_type)
