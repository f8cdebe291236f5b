"""One FSDP setup, as the fields of an Accelerate `fsdp_config` mean it, and its YAML text.

`FsdpSettings` is the common language of `generate --backend fsdp` (which chooses one),
`convert` (which maps ZeRO to one and back) and `estimate --backend fsdp` (which sizes one).
`accelerate_yaml()` fills `templates/accelerate/fsdp.yaml`: FSDP2 files carry only FSDP2's
keys (`fsdp_reshard_after_forward` as a boolean), FSDP1 files only FSDP1's
(`fsdp_sharding_strategy`, the prefetch, `use_orig_params` and `sync_module_states` keys), so
neither gets the plugin's "obsolete in FSDP2" warnings or its FSDP1/FSDP2 type errors.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..generate import templates
from ..generate.render import OMIT, fill_text, yaml_scalar

# FSDP1 sharding strategies by name, in torch's ShardingStrategy order (value = index + 1).
SHARDING_STRATEGIES = ("FULL_SHARD", "SHARD_GRAD_OP", "NO_SHARD", "HYBRID_SHARD", "HYBRID_SHARD_ZERO2")
# What each FSDP1 strategy becomes in FSDP2 (`fully_shard(reshard_after_forward=...)`); the hybrid
# strategies need a 2-D device mesh there, which Accelerate builds from parallelism_config.
FSDP2_RESHARD = {"FULL_SHARD": True, "SHARD_GRAD_OP": False, "HYBRID_SHARD": True, "HYBRID_SHARD_ZERO2": False}
STATE_DICT_TYPES = ("FULL_STATE_DICT", "SHARDED_STATE_DICT")  # LOCAL_STATE_DICT: FSDP1 only, rarely wanted
WRAP_POLICIES = ("TRANSFORMER_BASED_WRAP", "SIZE_BASED_WRAP", "NO_WRAP")
# The decoder-layer class FSDP wraps, by Hugging Face model_type, for the catalog's families: the class in
# transformers' modeling_<model_type>.py that `_no_split_modules` lists (tests/convert check it). For another
# model generate and convert name none, and Accelerate wraps the model's `_no_split_modules`.
LAYER_CLASSES = {
    "llama": "LlamaDecoderLayer", "mistral": "MistralDecoderLayer", "mixtral": "MixtralDecoderLayer",
    "qwen2": "Qwen2DecoderLayer", "gemma2": "Gemma2DecoderLayer", "phi3": "Phi3DecoderLayer",
    "falcon": "FalconDecoderLayer", "bloom": "BloomBlock", "t5": "T5Block", "vit": "ViTLayer", "gpt2": "GPT2Block",
}


def layer_class(model_type) -> str | None:
    return LAYER_CLASSES.get(model_type) if isinstance(model_type, str) else None


@dataclass(frozen=True)
class FsdpSettings:
    version: int = 2
    sharding_strategy: str = "FULL_SHARD"  # FSDP1's name; FSDP2 writes FSDP2_RESHARD[...]
    offload_params: bool = False  # parameters, gradients and optimizer states on the CPU
    activation_checkpointing: bool = False
    auto_wrap_policy: str = "TRANSFORMER_BASED_WRAP"
    transformer_layer_cls_to_wrap: str | None = None  # comma-separated class names, e.g. LlamaDecoderLayer
    min_num_params: int | None = None  # SIZE_BASED_WRAP only
    state_dict_type: str = "SHARDED_STATE_DICT"  # a FULL_STATE_DICT gathers the whole model on rank 0 to save
    cpu_ram_efficient_loading: bool = True  # rank 0 reads the checkpoint, the others start empty
    mixed_precision: str = "bf16"  # the top-level mixed_precision: no, fp16, bf16
    use_orig_params: bool = True  # FSDP1 only; needed by PEFT and torch.compile
    backward_prefetch: str = "BACKWARD_PRE"  # FSDP1 only
    forward_prefetch: bool = False  # FSDP1 only (FSDP2 refuses it)

    def with_(self, **changes) -> FsdpSettings:
        return replace(self, **changes)

    @property
    def reshard_after_forward(self) -> bool:
        """FSDP2's form of the sharding strategy (NO_SHARD has none: it is plain data parallelism)."""
        return FSDP2_RESHARD.get(self.sharding_strategy, True)


def template_values(settings: FsdpSettings, *, num_processes: int, num_machines: int = 1,
                    main_process_ip: str | None = None, main_process_port: int | None = None) -> dict:
    """The placeholders of templates/accelerate/fsdp.yaml; OMIT drops a line."""
    fsdp1 = settings.version == 1
    wrap = settings.auto_wrap_policy
    return {
        "version": settings.version,
        "sharding_strategy": settings.sharding_strategy if fsdp1 else OMIT,
        "reshard_after_forward": OMIT if fsdp1 else settings.reshard_after_forward,
        "offload_params": settings.offload_params,
        "activation_checkpointing": settings.activation_checkpointing,
        "auto_wrap_policy": wrap,
        "transformer_layer_cls_to_wrap": (settings.transformer_layer_cls_to_wrap
                                          if wrap == "TRANSFORMER_BASED_WRAP" and settings.transformer_layer_cls_to_wrap
                                          else OMIT),
        "min_num_params": settings.min_num_params if wrap == "SIZE_BASED_WRAP" and settings.min_num_params else OMIT,
        "state_dict_type": settings.state_dict_type,
        "cpu_ram_efficient_loading": settings.cpu_ram_efficient_loading,
        # The launcher refuses cpu_ram_efficient_loading without sync_module_states (FSDP1 and FSDP2 alike).
        "sync_module_states": True if settings.cpu_ram_efficient_loading else (fsdp1 or OMIT),
        "use_orig_params": settings.use_orig_params if fsdp1 else OMIT,
        "backward_prefetch": settings.backward_prefetch if fsdp1 else OMIT,
        "forward_prefetch": settings.forward_prefetch if fsdp1 else OMIT,
        "mixed_precision": settings.mixed_precision,
        "num_processes": num_processes,  # the TOTAL over all machines
        "num_machines": num_machines,
        "main_process_ip": main_process_ip if main_process_ip is not None else OMIT,
        "main_process_port": main_process_port if main_process_port is not None else OMIT,
    }


def accelerate_yaml(settings: FsdpSettings, **launch) -> str:
    """The Accelerate config file for `settings` (keyword arguments as for template_values)."""
    return fill_text(templates.text("accelerate/fsdp.yaml"), template_values(settings, **launch), quote=yaml_scalar)
