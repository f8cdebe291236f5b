"""Real PyTorch FSDP on CPU: two processes on a gloo group, a tiny Llama, bf16 mixed precision as
Accelerate sets it (fp32 parameters, MixedPrecision param_dtype = reduce_dtype = bf16), AdamW.

For each setup, rank 0 reports what it holds: its shards of the parameters, gradients and AdamW
states after one step (bytes as numel × element size, so shared storages and padding do not count),
and the parameters gathered (FSDP2: each unit's allocated all-gather outputs, or its prefetched
all-gather buffer; FSDP1: the flat parameters whose padded full storage is allocated) after forward, and at their most in backward
(looked at whenever a gradient reaches the output of the final norm, of a decoder layer or of its
MLP's down projection, the first thing a layer's backward computes).
"""

from __future__ import annotations

import functools
import os

CONFIG = {"model_type": "llama", "vocab_size": 512, "hidden_size": 64, "intermediate_size": 128,
          "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2,
          "tie_word_embeddings": False, "max_position_embeddings": 128}
SETUPS = ((2, "FULL_SHARD"), (2, "SHARD_GRAD_OP"), (1, "FULL_SHARD"), (1, "SHARD_GRAD_OP"), (1, "NO_SHARD"))
WORLD = 2


def _bytes(tensor) -> int:
    local = tensor.to_local() if hasattr(tensor, "to_local") else tensor
    return local.numel() * local.element_size()


def _wrap(model, version: int, strategy: str):
    import torch
    from transformers.models.llama.modeling_llama import LlamaDecoderLayer
    if version == 2:
        from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
        policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.bfloat16)
        reshard = strategy == "FULL_SHARD"
        for layer in model.model.layers:
            fully_shard(layer, mp_policy=policy, reshard_after_forward=reshard)
        fully_shard(model, mp_policy=policy, reshard_after_forward=reshard)
        return model
    from torch.distributed.fsdp import (
        FullyShardedDataParallel,
        MixedPrecision,
        ShardingStrategy,
    )
    from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy
    policy = functools.partial(transformer_auto_wrap_policy, transformer_layer_cls={LlamaDecoderLayer})
    precision = MixedPrecision(param_dtype=torch.bfloat16, reduce_dtype=torch.bfloat16, buffer_dtype=torch.bfloat16)
    return FullyShardedDataParallel(model, auto_wrap_policy=policy, mixed_precision=precision,
                                    sharding_strategy=ShardingStrategy[strategy], use_orig_params=True,
                                    device_id=torch.device("cpu"))


def _gathered(model, version: int) -> int:
    if version == 2:
        return sum(_fsdp2_gathered(module) for module in model.modules() if hasattr(module, "_get_fsdp_state"))
    from torch.distributed.fsdp import FullyShardedDataParallel
    total = 0
    for unit in FullyShardedDataParallel.fsdp_modules(model):
        handle = unit._handle
        if handle is None:
            continue
        flat = handle.flat_param
        full = getattr(flat, "_full_param_padded", None)
        if full is not None and full.untyped_storage().size() > 0:
            total += full.numel() * full.element_size()
        elif not handle.uses_sharded_strategy:  # NO_SHARD: computes on its low-precision copy, if any
            copy = getattr(flat, "_mp_shard", None)
            if copy is not None and copy.untyped_storage().size() > 0:
                total += copy.numel() * copy.element_size()
    return total


def _fsdp2_gathered(module) -> int:
    """One fully_shard unit's unsharded parameters (allocated all-gather outputs), or its prefetch in
    flight (the all-gather buffer whose copy-out waits for the unit's turn)."""
    group = module._get_fsdp_state()._fsdp_param_group
    if group is None:
        return 0
    pending = getattr(group, "_all_gather_result", None)
    if pending is not None:
        return _bytes(pending.all_gather_output)
    return sum(t.numel() * t.element_size() for param in group.fsdp_params
               for t in getattr(param, "all_gather_outputs", ()) if t.untyped_storage().size() > 0)


def _rank(rank: int, port: int, results) -> None:
    import torch
    import torch.distributed as dist
    from transformers import LlamaConfig, LlamaForCausalLM
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=WORLD)
    try:
        for version, strategy in SETUPS:
            torch.manual_seed(0)
            model = _wrap(LlamaForCausalLM(LlamaConfig(**CONFIG)), version, strategy)
            optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
            ids = torch.randint(0, CONFIG["vocab_size"], (2, 16))
            in_backward = []
            watched = [m for name, m in model.named_modules()
                       if name.endswith(("model.norm", "mlp.down_proj")) or type(m).__name__ == "LlamaDecoderLayer"]

            def watch(module, args, output, model=model, version=version, seen=in_backward):
                output = output[0] if isinstance(output, tuple) else output
                output.register_hook(lambda grad: seen.append(_gathered(model, version)))

            hooks = [m.register_forward_hook(watch) for m in watched]
            loss = model(input_ids=ids, labels=ids).loss
            for hook in hooks:
                hook.remove()
            gathered = _gathered(model, version)
            loss.backward()
            optimizer.step()
            states = sum(_bytes(v) for state in optimizer.state.values() for v in state.values()
                         if torch.is_tensor(v) and v.dim() > 0)
            if rank == 0:
                results[(version, strategy)] = {
                    "parameters": sum(_bytes(p) for p in model.parameters()),
                    "gradients": sum(_bytes(p.grad) for p in model.parameters() if p.grad is not None),
                    "optimizer_states": states, "gathered_after_forward": gathered,
                    "gathered_in_backward": max(in_backward)}
            dist.barrier()
    finally:
        dist.destroy_process_group()


def measure(port: int = 29617) -> dict:
    """{(version, strategy): bytes on rank 0}, for every setup in SETUPS."""
    import torch.multiprocessing as mp
    with mp.Manager() as manager:
        results = manager.dict()
        mp.spawn(_rank, args=(port, results), nprocs=WORLD)
        return dict(results)
