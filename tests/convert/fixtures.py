"""Inputs for `dsconfig convert` tests: ds_config.json files and Accelerate YAMLs in the shapes real
projects write (every ZeRO stage and offload, bf16/fp16/"auto", FSDP1's five strategies, FSDP2)."""

from __future__ import annotations

import json

AUTO_BATCH = {"train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto",
              "gradient_accumulation_steps": "auto", "gradient_clipping": "auto"}


def _ds(stage, precision="bf16", optimizer="none", param="none", **extra):
    zero = {"stage": stage}
    if optimizer != "none":
        zero["offload_optimizer"] = {"device": optimizer, **({"nvme_path": "/nvme"} if optimizer == "nvme" else {})}
    if param != "none":
        zero["offload_param"] = {"device": param, **({"nvme_path": "/nvme"} if param == "nvme" else {})}
    config = dict(AUTO_BATCH)
    if precision == "fp16":
        config["fp16"] = {"enabled": True, "loss_scale": 0, "initial_scale_power": 16}
    elif precision in ("bf16", "auto"):
        config["bf16"] = {"enabled": True if precision == "bf16" else "auto"}
    config["zero_optimization"] = {**zero, **extra.pop("zero", {})}
    config.update(extra)
    return config


DEEPSPEED = {
    "zero0": _ds(0),
    "zero1": _ds(1),
    "zero2": _ds(2, "fp16"),
    "zero2-offload": _ds(2, optimizer="cpu"),
    "zero3": _ds(3, zero={"stage3_gather_16bit_weights_on_model_save": True}),
    "zero3-sharded-save": _ds(3, "auto"),
    "zero3-offload-all": _ds(3, optimizer="cpu", param="cpu"),
    "zero3-offload-optimizer": _ds(3, optimizer="cpu"),
    "zero3-nvme": _ds(3, optimizer="nvme", param="nvme"),
    "zero3-fp32-checkpointing": _ds(3, "fp32", activation_checkpointing={"partition_activations": True}),
    "zero2-concrete": {"train_batch_size": 64, "train_micro_batch_size_per_gpu": 4, "gradient_clipping": 1.0,
                       "bf16": {"enabled": True}, "zero_optimization": {"stage": 2, "overlap_comm": True},
                       "optimizer": {"type": "AdamW", "params": {"lr": 1e-5}}, "steps_per_print": 10},
}


def ds_text(name: str) -> str:
    return json.dumps(DEEPSPEED[name], indent=2) + "\n"


def fsdp_yaml(version: int, *, strategy: str = "FULL_SHARD", reshard: bool = True, offload: bool = False,
              precision: str = "bf16", state_dict: str = "SHARDED_STATE_DICT", processes: int = 8,
              machines: int = 1, checkpointing: bool = False) -> str:
    lines = ["compute_environment: LOCAL_MACHINE", "distributed_type: FSDP", "fsdp_config:",
             "  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP", "  fsdp_cpu_ram_efficient_loading: true",
             f"  fsdp_offload_params: {str(offload).lower()}", f"  fsdp_state_dict_type: {state_dict}",
             "  fsdp_sync_module_states: true", f"  fsdp_activation_checkpointing: {str(checkpointing).lower()}",
             f"  fsdp_version: {version}"]
    if version == 1:
        lines += [f"  fsdp_sharding_strategy: {strategy}", "  fsdp_backward_prefetch: BACKWARD_PRE",
                  "  fsdp_use_orig_params: true", "  fsdp_forward_prefetch: false"]
    else:
        lines.append(f"  fsdp_reshard_after_forward: {str(reshard).lower()}")
    lines += [f"mixed_precision: {precision}", f"num_machines: {machines}", f"num_processes: {processes}",
              "machine_rank: 0", "main_training_function: main", "rdzv_backend: static", "same_network: true",
              "use_cpu: false"]
    if machines > 1:
        lines += ["main_process_ip: 10.0.0.1", "main_process_port: 29500"]
    return "\n".join(lines) + "\n"


FSDP = {
    **{f"fsdp1-{s.lower()}": fsdp_yaml(1, strategy=s)
       for s in ("FULL_SHARD", "SHARD_GRAD_OP", "NO_SHARD", "HYBRID_SHARD", "HYBRID_SHARD_ZERO2")},
    "fsdp1-offload-fp16-full": fsdp_yaml(1, offload=True, precision="fp16", state_dict="FULL_STATE_DICT"),
    "fsdp1-no-shard-offload": fsdp_yaml(1, strategy="NO_SHARD", offload=True),
    "fsdp2": fsdp_yaml(2),
    "fsdp2-no-reshard": fsdp_yaml(2, reshard=False),
    "fsdp2-offload-checkpointing": fsdp_yaml(2, offload=True, checkpointing=True),
    "fsdp2-fp32-two-nodes": fsdp_yaml(2, precision="'no'", processes=16, machines=2),
}
