"""The config against the model `dsconfig lint --model` names (a catalog name or a Hugging Face config.json).

Checked by dsconfig.deepspeed.model_checks (`model_findings`, from the DeepSpeed checker, and the
quantized-weights rule from the FSDP checks), on the facts dsconfig.deepspeed.model_facts reads.
These rules are reported only when --model is given.
"""

from __future__ import annotations

from ..phases import INITIALIZE, SILENT, STEP
from .rule import ERROR, WARNING, Rule, folder

_DEEPSEEK_V3 = """
    {
      "architectures": ["DeepseekV3ForCausalLM"],
      "model_type": "deepseek_v3",
      "hidden_size": 7168,
      "intermediate_size": 18432,
      "moe_intermediate_size": 2048,
      "num_hidden_layers": 61,
      "n_routed_experts": 256,
      "num_experts_per_tok": 8,
      "torch_dtype": "bfloat16"
    }
    """
_QWEN3_MOE = """
    {
      "architectures": ["Qwen3MoeForCausalLM"],
      "model_type": "qwen3_moe",
      "hidden_size": 2048,
      "num_hidden_layers": 48,
      "num_experts": 128,
      "num_experts_per_tok": 8,
      "torch_dtype": "bfloat16"
    }
    """
_LLAMA_4BIT = """
    {
      "architectures": ["LlamaForCausalLM"],
      "model_type": "llama",
      "hidden_size": 4096,
      "num_hidden_layers": 32,
      "torch_dtype": "bfloat16",
      "quantization_config": {
        "quant_method": "bitsandbytes",
        "load_in_4bit": true,
        "bnb_4bit_quant_type": "nf4",
        "bnb_4bit_compute_dtype": "bfloat16",
        "bnb_4bit_quant_storage": "%s"
      }
    }
    """
_NO_HIDDEN_SIZE = """
    {
      "architectures": ["VisionEncoderDecoderModel"],
      "model_type": "vision-encoder-decoder",
      "encoder": {"model_type": "donut-swin", "embed_dim": 128, "depths": [2, 2, 14, 2]},
      "decoder": {"model_type": "mbart", "d_model": 1024, "decoder_layers": 4},
      "torch_dtype": "float32"
    }
    """
_ZERO3 = """
    {
      "train_micro_batch_size_per_gpu": "auto",
      "bf16": {"enabled": "auto"},
      "zero_optimization": {
        "stage": 3%s
      }
    }
    """
_EP = """
    {
      "train_micro_batch_size_per_gpu": 1,
      "bf16": {"enabled": true},
      "zero_optimization": {"stage": 2},
      "expert_parallel": {"enabled": true, "autoep_size": %d}
    }
    """

MOE_NOT_LEAF = Rule(
    "DS950", "moe-not-leaf", WARNING,
    summary="A Mixture-of-Experts model under ZeRO-3 whose sparse MoE block is not a ZeRO-3 leaf module",
    what="""With `--model` naming an MoE model (Mixtral, Qwen2/Qwen3-MoE, DeepSeek V2/V3, ...) and ZeRO stage 3,
    reports when the model's sparse MoE block class is not covered by `zero_optimization.leaf_module` as the
    replayed DeepSpeed release reads it: its `classes` (DeepSpeed 0.18.0 onwards; the default names Mixtral's,
    Qwen2-MoE's and Qwen3-MoE's blocks only), or no such key at all in older releases. A ds_config.json launched
    by Accelerate YAMLs that all name the block in `deepspeed_moe_layer_cls_names` is not reported.""",
    why="""A router sends each rank's tokens to different experts, and an expert that gets no token on a rank runs no
    forward there, so ZeRO-3's gradient hooks for its parameters never fire on that rank: the reduce-scatter the
    other ranks start waits for it and backward hangs until NCCL times out (DeepSpeed issue #4808, on Mixtral,
    where a DeepSpeed maintainer explains it; DeepSpeed pull requests #4966 and #5008 added leaf modules for it).
    A leaf module is fetched and reduced whole, whichever experts ran. transformers 5.23 marks no leaf module
    itself; only Accelerate's `deepspeed_moe_layer_cls_names` (which the HF Trainer also goes through) or the
    training script's own `deepspeed.utils.set_z3_leaf_modules` call does.""",
    fails_in=(STEP,),
    failing=folder(("ds_config.json", _ZERO3 % ""), ("config.json", _DEEPSEEK_V3), lint=("ds_config.json",),
                   model="config.json", target="hf-trainer"),
    passing=folder(("ds_config.json", _ZERO3 % """,
        "leaf_module": {
          "classes": ["transformers.models.deepseek_v3.modeling_deepseek_v3.DeepseekV3MoE"]
        }"""), ("config.json", _DEEPSEEK_V3), lint=("ds_config.json",), model="config.json",
        target="hf-trainer"),
    fix="""List the block's full dotted class path in `zero_optimization.leaf_module.classes` (writing the key
    replaces DeepSpeed's default list), or, before DeepSpeed 0.18.0, call
    `deepspeed.utils.set_z3_leaf_modules(model, [BlockClass])` before training starts (or set
    `deepspeed_moe_layer_cls_names` in the Accelerate config).""",
)

EXPERT_PARALLEL_SIZE = Rule(
    "DS951", "expert-parallel-size", ERROR,
    summary="expert_parallel.autoep_size does not divide the model's expert count, or the world size",
    what="""With `--model` naming an MoE model and `expert_parallel.enabled`, reports an `autoep_size` larger than
    the number of routed experts or not dividing it, an `expert_tensor_parallel_size` other than 1, and (with
    --world-size) a world size that `autoep_size × expert_tensor_parallel_size` does not divide.""",
    why="""DeepSpeed's AutoEP (module_inject/auto_ep_config.py and auto_ep_folding.py, 0.19.8) checks these in
    `deepspeed.initialize` and raises, e.g. "num_experts=128 in layer 'model.layers.0.mlp' is not divisible by
    autoep_size=6. Suggested autoep_size values: [1, 2, 4, 8, 16, 32, 64, 128]" or
    "expert_parallel.autoep_size * expert_parallel.expert_tensor_parallel_size (6 * 1 = 6) must divide the stage
    size (world_size=8 / pp_size=1 = 8)".""",
    fails_in=(INITIALIZE,),
    failing=folder(("ds_config.json", _EP % 6), ("config.json", _QWEN3_MOE), lint=("ds_config.json",),
                   model="config.json"),
    passing=folder(("ds_config.json", _EP % 8), ("config.json", _QWEN3_MOE), lint=("ds_config.json",),
                   model="config.json"),
    fix="Pick an `autoep_size` that divides both the expert count and the number of GPUs (the message lists them).",
)

QUANTIZED_SHARDED = Rule(
    "DS952", "quantized-sharded", ERROR,
    summary="A quantized model under ZeRO-3 or FSDP whose weights cannot be sharded as stored",
    what="""With `--model` naming a config.json that has a `quantization_config`, under ZeRO stage 3 or an
    Accelerate FSDP config: reports bitsandbytes 8-bit, GPTQ and AWQ weights (integer tensors), and bitsandbytes
    4-bit weights whose `bnb_4bit_quant_storage` is not the model's float dtype (`uint8` when absent).""",
    why="""FSDP flattens each unit's parameters into one tensor of one floating dtype and refuses anything else
    in `prepare()`: "Cannot flatten integer dtype tensors" for uint8/int8/int32 weights, "Must flatten tensors
    with uniform dtype but got torch.bfloat16 and torch.uint8" for a mix (torch `_flat_param.py`). bitsandbytes
    added `quant_storage` for exactly this (bitsandbytes pull request #970: "FSDP can only shard float data
    types"), and PEFT's guides for QLoRA with FSDP and with DeepSpeed ZeRO-3 set `bnb_4bit_quant_storage` to the
    same dtype as `torch_dtype`; 8-bit bitsandbytes has no such option (PEFT issue #2833: "QLORA FSDP doesn't
    work with 8bit"). Under ZeRO-3 transformers also skips `zero.Init` for a quantized model
    (modeling_utils: `is_deepspeed_zero3_enabled() and not _is_quantized`), so every rank first loads it whole.""",
    fails_in=(INITIALIZE,),
    failing=folder(("ds_config.json", _ZERO3 % ""), ("config.json", _LLAMA_4BIT % "uint8"), lint=("ds_config.json",),
                   model="config.json", target="hf-trainer"),
    passing=folder(("ds_config.json", _ZERO3 % ""), ("config.json", _LLAMA_4BIT % "bfloat16"),
                   lint=("ds_config.json",), model="config.json", target="hf-trainer"),
    fix="""For QLoRA, quantize with `BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_storage=torch.bfloat16)`
    and load with `torch_dtype=torch.bfloat16` (the same dtype). For 8-bit, GPTQ or AWQ weights use ZeRO stage
    1/2 or DDP, or start from the unquantized model.""",
)

NO_HIDDEN_SIZE = Rule(
    "DS953", "no-hidden-size", ERROR,
    summary='"auto" in a bucket size the HF Trainer fills from hidden_size, for a model config without one',
    what="""With `--model` and the hf-trainer target, reports `"auto"` in `zero_optimization.reduce_bucket_size`,
    `stage3_prefetch_bucket_size` or `stage3_param_persistence_threshold` when the model's config.json has
    neither `hidden_size` nor `hidden_sizes` (nor those in `text_config`, nor the key its config class renames
    them to, such as GPT-2's `n_embd`): encoder-decoder wrappers such as Donut's VisionEncoderDecoderModel. With a
    hidden size, DS704 gives the numbers the Trainer writes.""",
    why="""transformers 5.23 `trainer_config_finalize` fills them with h², int(0.9·h²) and 10·h and, without h,
    fails at the start of train() with "The model's config file has neither `hidden_size` nor `hidden_sizes`
    entry, therefore it's not possible to automatically fill out the following `auto` entries in the DeepSpeed
    config file: [...]".""",
    fails_in=(INITIALIZE,),
    failing=folder(("ds_config.json", _ZERO3 % """,
        "reduce_bucket_size": "auto\""""), ("config.json", _NO_HIDDEN_SIZE), lint=("ds_config.json",),
                   model="config.json", target="hf-trainer"),
    passing=folder(("ds_config.json", _ZERO3 % """,
        "reduce_bucket_size": 500000000"""), ("config.json", _NO_HIDDEN_SIZE), lint=("ds_config.json",),
                   model="config.json", target="hf-trainer"),
    fix="Write an integer for each of these keys (DeepSpeed's defaults: 500000000, 50000000 and 100000).",
)

ZERO3_SAVE_NO_WEIGHTS = Rule(
    "DS954", "zero3-save-no-weights", WARNING,
    summary="ZeRO-3 with the HF Trainer and stage3_gather_16bit_weights_on_model_save off: save_model writes no "
            "weights",
    what="""With `--model` and the hf-trainer target, reports ZeRO stage 3 with
    `stage3_gather_16bit_weights_on_model_save` false, absent or "auto" (Accelerate's DeepSpeedPlugin fills
    false unless ACCELERATE_DEEPSPEED_ZERO3_SAVE_16BIT_MODEL says otherwise).""",
    why="""transformers 5.23 `Trainer.save_model` asks Accelerate for the full state dict, which DeepSpeed refuses
    without the gather; the Trainer catches the ValueError, logs "stage3_gather_16bit_weights_on_model_save=false.
    Saving the full checkpoint instead, use zero_to_fp32.py to recover weights", deletes the model.safetensors /
    pytorch_model.bin it had written empty, and writes DeepSpeed's partitioned checkpoint (global_stepN/) instead:
    `from_pretrained(output_dir)` finds no weights. PEFT models are the exception: the Trainer gathers their
    trainable weights itself.""",
    fails_in=(SILENT,),
    failing=folder(("ds_config.json", _ZERO3 % ""), ("config.json", _QWEN3_MOE), lint=("ds_config.json",),
                   model="config.json", target="hf-trainer"),
    passing=folder(("ds_config.json", _ZERO3 % """,
        "stage3_gather_16bit_weights_on_model_save": true"""), ("config.json", _QWEN3_MOE),
        lint=("ds_config.json",), model="config.json", target="hf-trainer"),
    fix="""Set `zero_optimization.stage3_gather_16bit_weights_on_model_save` to true (save_model then gathers the
    16-bit weights on rank 0), or convert the checkpoint afterwards with the zero_to_fp32.py DeepSpeed writes
    next to it.""",
)

RULES = (MOE_NOT_LEAF, EXPERT_PARALLEL_SIZE, QUANTIZED_SHARDED, NO_HIDDEN_SIZE, ZERO3_SAVE_NO_WEIGHTS)
