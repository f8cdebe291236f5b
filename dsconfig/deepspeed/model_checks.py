"""The DeepSpeed config against the model `--model` names (rules DS950-DS954, dsconfig.rules.model).

`model_findings(config, model, target, world_sizes)` runs from the DeepSpeed checker when --model is
given; `quantized_findings` also runs from the Accelerate FSDP checks. `model` is the resolved
ModelLayers (dsconfig.accelerate.model_layers) or its ModelFacts (dsconfig.deepspeed.model_facts).
"""

from __future__ import annotations

from ..findings import Finding
from ..phases import INITIALIZE, STEP
from ..rules.model import (
    EXPERT_PARALLEL_SIZE,
    MOE_NOT_LEAF,
    NO_HIDDEN_SIZE,
    QUANTIZED_SHARDED,
    ZERO3_SAVE_NO_WEIGHTS,
)
from ..targets import HF_TRAINER
from ..values import divisors, to_json
from . import releases, schema
from .hidden_fills import NoHiddenSize, bucket_fills
from .model_facts import FLOAT_DTYPES, ModelFacts, facts_of

LEAF_MODULE = "/zero_optimization/leaf_module"
GATHER_SPELLINGS = ("stage3_gather_16bit_weights_on_model_save", "gather_16bit_weights_on_model_save",
                    "stage3_gather_fp16_weights_on_model_save")


def as_facts(model) -> ModelFacts:
    return model if isinstance(model, ModelFacts) else facts_of(model)


def model_findings(config: dict, model, target, world_sizes) -> list[Finding]:
    if not isinstance(config, dict) or model is None:
        return []
    facts = as_facts(model)
    zero = config.get("zero_optimization")
    zero = zero if isinstance(zero, dict) else {}
    stage3 = zero.get("stage") == 3
    findings = []
    if stage3:
        findings += _moe_leaf(zero, facts)
        findings += quantized_findings(facts, "ZeRO stage 3", "/zero_optimization/stage", _float_dtype(config))
    findings += _expert_parallel(config, facts, world_sizes)
    if target is HF_TRAINER:
        findings += _hidden_size(config, facts)
        if stage3:
            findings += _gather_on_save(zero, facts)
    return findings


# -- DS950 -------------------------------------------------------------------------------------------

def _as_list(value) -> list:
    """DeepSpeedZeroLeafModuleConfig's coercion: a string is a one-item list."""
    return [value] if isinstance(value, str) else value if isinstance(value, list) else []


def _moe_leaf(zero: dict, facts: ModelFacts) -> list[Finding]:
    if not facts.moe_blocks or not facts.experts:
        return []
    blocks = facts.moe_blocks
    example = facts.dotted(blocks[0])
    consequence = ("an expert that gets no token on some rank fires no ZeRO-3 gradient hook there, and backward "
                   "hangs in a reduce-scatter the other ranks started (DeepSpeed issue #4808)")
    transformers_note = ("transformers does not mark it for the HF Trainer; Accelerate's "
                         "deepspeed_moe_layer_cls_names does, in prepare(), when the run is launched with it")
    if schema.property_at(LEAF_MODULE) is None:
        since = releases.spans(schema.accepted_by(LEAF_MODULE)) or "none"
        message = (f"{facts.name} is a Mixture-of-Experts model ({facts.experts} experts per layer, block "
                   f"{', '.join(blocks)}) and DeepSpeed {schema.active()} has no zero_optimization.leaf_module "
                   f"(DeepSpeed {since} have it): unless the training script calls "
                   f"deepspeed.utils.set_z3_leaf_modules(model, [{blocks[0]}]) before training, {consequence}; "
                   f"{transformers_note}")
        return [Finding(MOE_NOT_LEAF, message, "/zero_optimization/stage", fails_in=STEP)]
    written = zero.get("leaf_module")
    section = written if isinstance(written, dict) else {}
    default = schema.default_at(LEAF_MODULE) or {}
    classes = _as_list(section["classes"]) if "classes" in section else default.get("classes", [])
    names = _as_list(section.get("names", default.get("names", [])))
    suffixes = _as_list(section.get("name_suffixes", default.get("name_suffixes", [])))
    if names or suffixes:
        return []  # module names dsconfig cannot see (the model's attribute names): maybe covered
    # _do_set_z3_leaf_modules matches a string against the class __name__ or module.__qualname__
    if any(entry in (block, facts.dotted(block)) for block in blocks for entry in classes):
        return []
    where = f"{LEAF_MODULE}/classes" if "classes" in section else (LEAF_MODULE if written is not None
                                                                     else "/zero_optimization/stage")
    listed = "DeepSpeed's default list" if "classes" not in section else f"the classes written ({len(classes)})"
    wanted = [c for c in classes if isinstance(c, str)] + [facts.dotted(b) for b in blocks]
    message = (f"{facts.name} is a Mixture-of-Experts model ({facts.experts} experts per layer) and "
               f"{listed} in zero_optimization.leaf_module.classes does not name its MoE block "
               f"{example}: {consequence}. Write \"leaf_module\": {{\"classes\": {to_json(wanted)}}} under "
               f"zero_optimization; {transformers_note}")
    return [Finding(MOE_NOT_LEAF, message, where, fails_in=STEP)]


def launch_marks_moe_leaves(launch_args: dict, model) -> bool:
    """An Accelerate launch whose deepspeed_moe_layer_cls_names names every MoE block class: prepare() then calls
    set_z3_leaf_modules on them (DeepSpeedPlugin.set_moe_leaf_modules splits the text at commas, no stripping)."""
    names = launch_args.get("deepspeed_moe_layer_cls_names")
    blocks = as_facts(model).moe_blocks
    return names is not None and bool(blocks) and set(blocks) <= set(str(names).split(","))


# -- DS951 -------------------------------------------------------------------------------------------

def _positive_int(value) -> int | None:
    """A size to check; past 2**63 no GPU count is meant, and products of such sizes outgrow what a message
    can print."""
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 < value < 2**63 else None


def _expert_parallel(config: dict, facts: ModelFacts, world_sizes) -> list[Finding]:
    section = config.get("expert_parallel")
    if not isinstance(section, dict) or section.get("enabled") is not True or \
            schema.property_at("/expert_parallel") is None:
        return []
    ep = _positive_int(section.get("autoep_size", 1))
    etp = _positive_int(section.get("expert_tensor_parallel_size", 1))
    findings = []
    experts = facts.experts
    if ep is not None and experts:
        if ep > experts:
            message = (f"autoep_size={ep} exceeds num_experts={experts} of {facts.name}: deepspeed.initialize "
                       f"fails with \"Each rank must own at least one expert\"; valid autoep_size values "
                       f"(divisors of {experts}): {divisors(experts)}")
            findings.append(Finding(EXPERT_PARALLEL_SIZE, message, "/expert_parallel/autoep_size",
                                    fails_in=INITIALIZE))
        elif experts % ep:
            message = (f"num_experts={experts} of {facts.name} is not divisible by autoep_size={ep}: "
                       f"deepspeed.initialize fails; suggested autoep_size values: {divisors(experts)}")
            findings.append(Finding(EXPERT_PARALLEL_SIZE, message, "/expert_parallel/autoep_size",
                                    fails_in=INITIALIZE))
    if etp is not None and etp != 1:
        message = (f"expert_tensor_parallel_size={etp}: DeepSpeed {schema.active()} fails with "
                   "\"expert_parallel.expert_tensor_parallel_size=... is reserved for expert-internal tensor "
                   "parallelism and is not supported yet\"; use 1")
        findings.append(Finding(EXPERT_PARALLEL_SIZE, message, "/expert_parallel/expert_tensor_parallel_size",
                                fails_in=INITIALIZE))
    if ep is not None and etp is not None:
        width = ep * etp
        for world in world_sizes or ():
            if isinstance(world, int) and world > 0 and world % width:
                message = (f"autoep_size × expert_tensor_parallel_size ({ep} × {etp} = {width}) does not divide "
                           f"the world size {world}: deepspeed.initialize fails (\"Computed edp would be "
                           f"non-integral\"); sizes that divide it: {divisors(world)}")
                findings.append(Finding(EXPERT_PARALLEL_SIZE, message, "/expert_parallel/autoep_size",
                                        fails_in=INITIALIZE, world_size=world))
    return findings


# -- DS952 -------------------------------------------------------------------------------------------

def _float_dtype(config: dict) -> str | None:
    for key, dtype in (("bf16", "bfloat16"), ("fp16", "float16")):
        section = config.get(key)
        if isinstance(section, dict) and section.get("enabled") is True:
            return dtype
    return None


def quantized_findings(model, sharding: str, pointer: str, compute_dtype: str | None = None) -> list[Finding]:
    """DS952 for a quantized model under `sharding` ("ZeRO stage 3", "FSDP"), reported at `pointer`."""
    facts = as_facts(model)
    q = facts.quantization
    if q is None:
        return []
    dtype = facts.dtype if facts.dtype in FLOAT_DTYPES else compute_dtype
    if q.method == "bitsandbytes" and q.bits == 4:
        if q.storage in FLOAT_DTYPES and (dtype is None or q.storage == dtype):
            return []
        wanted = dtype or "bfloat16"
        problem = (f"its 4-bit weights are stored as {q.storage}" if q.storage not in FLOAT_DTYPES else
                   f"its 4-bit weights are stored as {q.storage} but the model's dtype is {dtype}")
        message = (f"{facts.name} is quantized with bitsandbytes and {problem}: {sharding} cannot shard them with "
                   f"the rest (FSDP's prepare() fails with \"Cannot flatten integer dtype tensors\" or \"Must "
                   f"flatten tensors with uniform dtype\"); quantize with bnb_4bit_quant_storage={wanted}, the "
                   f"dtype the model loads in, as PEFT's QLoRA guides for FSDP and ZeRO-3 do")
        return [Finding(QUANTIZED_SHARDED, message, pointer, fails_in=INITIALIZE)]
    if (q.method == "bitsandbytes" and q.bits == 8) or q.method in ("gptq", "awq"):
        kind = "bitsandbytes 8-bit" if q.method == "bitsandbytes" else q.method.upper()
        message = (f"{facts.name} is quantized with {kind}, whose weights are integer tensors with no float "
                   f"storage option: {sharding} cannot shard them (FSDP's prepare() fails with \"Cannot flatten "
                   f"integer dtype tensors\"); train it with ZeRO stage 1/2 or DDP, or use bitsandbytes 4-bit "
                   f"with bnb_4bit_quant_storage set to the model's dtype")
        return [Finding(QUANTIZED_SHARDED, message, pointer, fails_in=INITIALIZE)]
    return []


# -- DS953 and the Trainer's fills -------------------------------------------------------------------

def _hidden_size(config: dict, facts: ModelFacts) -> list[Finding]:
    try:
        bucket_fills(config, facts.hidden_size)
    except NoHiddenSize as error:
        pointer = "/" + error.keys[0].replace(".", "/")
        message = (f"{facts.name} (model_type {facts.model_type}) has no hidden size in its config (a whole number "
                   f"in hidden_size, hidden_sizes or text_config's), and the HF "
                   f"Trainer fills {', '.join(error.keys)} from it: train() fails with \"{error}\"")
        return [Finding(NO_HIDDEN_SIZE, message, pointer, fails_in=INITIALIZE)]
    return []


# -- DS954 -------------------------------------------------------------------------------------------

def _gather_on_save(zero: dict, facts: ModelFacts) -> list[Finding]:
    if any(zero.get(key) is True for key in GATHER_SPELLINGS):
        return []
    key = next((k for k in GATHER_SPELLINGS if k in zero), None)
    shown = f"{key} is {to_json(zero[key])}" if key else "stage3_gather_16bit_weights_on_model_save is not set"
    if key and zero[key] == "auto":
        shown += " (Accelerate's DeepSpeedPlugin fills false)"
    size = ""
    if facts.parameters:
        size = f" (about {facts.parameters * 2 / 1e9:.1f} GB of 16-bit weights for {facts.name})"
    message = (f"ZeRO stage 3 and {shown}: the HF Trainer's save_model() writes no model.safetensors"
               f"{size}; it logs \"Saving the full checkpoint instead, use zero_to_fp32.py to recover weights\" "
               "and writes DeepSpeed's partitioned checkpoint (global_stepN/), which from_pretrained() cannot "
               "load (PEFT adapters excepted); set it to true")
    return [Finding(ZERO3_SAVE_NO_WEIGHTS, message, f"/zero_optimization/{key}" if key else "/zero_optimization/stage")]
