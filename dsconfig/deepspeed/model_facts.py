"""What the model-aware checks know about `--model`: one place, read from its config.json.

`facts_of(layers)` takes the resolved model (dsconfig.accelerate.model_layers.ModelLayers: its
model_type, module classes and the config dict it was read from) and answers: the hidden size as the
HF Trainer reads it, the number of routed experts, the sparse MoE block classes its modeling file
defines, where transformers defines them, and what its `quantization_config` says.
"""

from __future__ import annotations

from typing import NamedTuple

from ..accelerate.model_layers import module_path
from ..estimate.shapes import EXPERT_COUNT_KEYS
from .hidden_fills import hidden_size_of

# The class names of a sparse MoE block in transformers 5.23 (MixtralSparseMoeBlock, DeepseekV3MoE,
# DeepseekV2Moe, Llama4TextMoe): the module holding the router and the experts, the one ZeRO-3 must treat as a leaf.
MOE_BLOCK_SUFFIXES = ("SparseMoeBlock", "MoE", "Moe")
FLOAT_DTYPES = ("float16", "bfloat16", "float32")


class Quantization(NamedTuple):
    method: str  # quant_method: "bitsandbytes", "gptq", "awq", "fp8", ...
    bits: int | None  # 4 or 8 for bitsandbytes (load_in_4bit / load_in_8bit), `bits` for GPTQ/AWQ
    storage: str | None  # bnb_4bit_quant_storage for bitsandbytes 4-bit ("uint8" when absent, as transformers)


class ModelFacts(NamedTuple):
    name: str
    model_type: str
    hidden_size: int | None
    experts: int | None  # routed experts per MoE layer
    moe_blocks: tuple[str, ...]  # class names
    module: str | None  # transformers.models.X.modeling_X
    quantization: Quantization | None
    dtype: str | None  # the config's torch_dtype / dtype
    parameters: int | None

    def dotted(self, class_name: str) -> str:
        """The fully qualified name DeepSpeed's leaf_module.classes matches (module.__qualname__)."""
        return f"{self.module}.{class_name}" if self.module else class_name


def facts_of(layers) -> ModelFacts:
    config = layers.config if isinstance(layers.config, dict) else {}
    blocks = tuple(sorted(c for c in layers.classes if c.endswith(MOE_BLOCK_SUFFIXES) and c[0].isupper()))
    dtype = config.get("torch_dtype", config.get("dtype"))
    return ModelFacts(layers.name, layers.model_type, hidden_size_of(config), _experts(config), blocks,
                      module_path(layers.model_type), _quantization(config.get("quantization_config")),
                      dtype if isinstance(dtype, str) else None, layers.parameters)


def _experts(config: dict) -> int | None:
    text_config = config.get("text_config")
    for where in (config, text_config if isinstance(text_config, dict) else {}):
        for key in EXPERT_COUNT_KEYS:
            value = where.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and 0 < value < 2**63:
                return value
    return None


def _quantization(section) -> Quantization | None:
    if not isinstance(section, dict):
        return None
    method = section.get("quant_method")
    method = method.lower() if isinstance(method, str) else "unknown"
    bits = section.get("bits") if isinstance(section.get("bits"), int) else None
    storage = None
    if method == "bitsandbytes":
        bits = 4 if section.get("load_in_4bit") is True else 8 if section.get("load_in_8bit") is True else None
        if bits == 4:
            storage = section.get("bnb_4bit_quant_storage")
            storage = storage if isinstance(storage, str) else "uint8"
    return Quantization(method, bits, storage)
