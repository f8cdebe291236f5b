"""dsconfig.deepspeed.initialize against the real DeepSpeed 0.19.8 engine, constructors and tables.

Three kinds of oracle, from strongest to weakest:
  * the real engine: `deepspeed.initialize(model=nn.Linear(4, 4) or a PipelineModule, ...)` in a
    single-process gloo group on the CPU accelerator, in a worker subprocess (so that
    torch.distributed state never leaks into this process). A hypothesis family of optimizer /
    scheduler / ZeRO / precision configs must agree: the engine raises an error we model  <=>
    dsconfig reports a finding with fails_in="initialize", and the error's rule is among them.
    FusedLamb and FusedLion have no CPU kernels and mup is not installed, so lamb, GPU lion and
    mu* stay out of the family; their rules are checked against signatures instead.
  * the real constructors: torch.optim optimizers, DeepSpeed's CPU optimizers and every
    scheduler, built in-process with hypothesis-generated params on a dummy parameter.
  * the installed packages' signatures and constants, against the frozen tables.
"""

from __future__ import annotations

import contextlib
import enum
import inspect
import json
import logging
import os
import subprocess
import sys
import textwrap

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from dsconfig import targets
from dsconfig.deepspeed import initialize as init
from dsconfig.phases import INITIALIZE
from dsconfig.rules import RULES
from tests.answers import Answers

deepspeed = pytest.importorskip("deepspeed")
torch = pytest.importorskip("torch")

logging.disable(logging.WARNING)

from deepspeed.compile.config import CompileConfig  # noqa: E402
from deepspeed.runtime.precision_config import get_bfloat16_config, get_float16_config  # noqa: E402
from deepspeed.runtime.tensor_parallel.config import get_tensor_parallel_config  # noqa: E402
from deepspeed.runtime.zero.config import get_zero_config  # noqa: E402

ENGINE_EXAMPLES = int(os.environ.get("DSCONFIG_ENGINE_EXAMPLES", "120"))
CTOR_EXAMPLES = int(os.environ.get("DSCONFIG_CTOR_EXAMPLES", "400"))
AGREEMENT: dict[str, list[int]] = {}  # oracle -> [examples, real failures, agreeing]


# ---------------------------------------------------------------------------------------------
# `resolved` from the real pydantic models (what models.check_sections hands over)
# ---------------------------------------------------------------------------------------------

def _plain(value):
    if isinstance(value, enum.Enum):
        return _plain(value.value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def resolved_for(config: dict) -> dict:
    builders = {
        "zero_optimization": lambda: get_zero_config(config),
        "fp16": lambda: get_float16_config(config),
        "bf16": lambda: get_bfloat16_config(config),
        "compile": lambda: CompileConfig(**config.get("compile", {})),
        "tensor_parallel": lambda: get_tensor_parallel_config(config),
    }
    out = {}
    for key, build in builders.items():
        try:
            out[key] = _plain(build().model_dump())
        except Exception:
            out[key] = None
    return out


def findings(config: dict, target: str = "deepspeed"):
    return init.check_initialize(config, resolved_for(config), targets.BY_NAME[target])


def codes(config: dict, target: str = "deepspeed", *, failing: bool | None = None) -> set[str]:
    return {f.code for f in findings(config, target)
            if failing is None or (f.fails_in == INITIALIZE) == failing}


# ---------------------------------------------------------------------------------------------
# Frozen tables against the installed packages
# ---------------------------------------------------------------------------------------------

def _kwargs(cls, skip: int = 1) -> tuple[str, ...]:
    params = list(inspect.signature(cls.__init__).parameters.values())[1 + skip:]
    return tuple(p.name for p in params if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD))


def _required_optional(cls, skip: int = 1):
    params = list(inspect.signature(cls.__init__).parameters.values())[1 + skip:]
    params = [p for p in params if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    return (tuple(p.name for p in params if p.default is p.empty),
            tuple(p.name for p in params if p.default is not p.empty))


def test_torch_optimizer_table_matches_installed_torch():
    base = torch.optim.Optimizer
    installed = {name: _kwargs(cls) for name, cls in vars(torch.optim).items()
                 if isinstance(cls, type) and issubclass(cls, base) and cls is not base}
    assert init.TORCH_OPTIMIZERS == installed


def test_torch_scheduler_table_matches_installed_torch():
    lr = torch.optim.lr_scheduler
    installed = {name: _required_optional(cls, skip=0 if name == "ChainedScheduler" else 1)
                 for name, cls in vars(lr).items()
                 if isinstance(cls, type) and issubclass(cls, lr.LRScheduler) and not name.startswith("_")
                 and cls is not lr.LRScheduler}
    assert init.TORCH_SCHEDULERS == installed
    for name in init.NEEDS_PYTHON_OBJECTS:
        assert {"lr_lambda", "schedulers"} & set(installed[name][0])


def test_deepspeed_tables_match_installed_deepspeed():
    from deepspeed.ops.adagrad import DeepSpeedCPUAdagrad
    from deepspeed.ops.adam import DeepSpeedCPUAdam, FusedAdam, ZenFlowCPUAdam
    from deepspeed.ops.lamb import FusedLamb
    from deepspeed.ops.lion import DeepSpeedCPULion, FusedLion
    from deepspeed.runtime import config as ds_config
    from deepspeed.runtime import lr_schedules
    from deepspeed.runtime.engine import DeepSpeedEngine
    from deepspeed.runtime.zero import utils as zero_utils
    from deepspeed.runtime.zero.muon import original_muon

    classes = (FusedAdam, DeepSpeedCPUAdam, FusedLamb, FusedLion, DeepSpeedCPULion, DeepSpeedCPUAdagrad)
    for name, cls in ((c.__name__, c) for c in classes):
        assert init.DS_OPTIMIZERS[name] == _kwargs(cls), name
    zenflow = inspect.signature(ZenFlowCPUAdam.__init__).parameters
    assert "overlap_step" in zenflow
    assert init.DS_OPTIMIZERS["ZenFlowCPUAdam"] == _kwargs(DeepSpeedCPUAdam) + ("overlap_step",)
    assert init.DEEPSPEED_OPTIMIZERS == tuple(ds_config.DEEPSPEED_OPTIMIZERS)
    assert set(init.REMOVED_OPTIMIZERS).isdisjoint(ds_config.DEEPSPEED_OPTIMIZERS)
    assert sorted(init.DS_SCHEDULERS) == sorted(lr_schedules.VALID_LR_SCHEDULES)
    for name in lr_schedules.VALID_LR_SCHEDULES:
        assert init.DS_SCHEDULERS[name] == _required_optional(getattr(lr_schedules, name)), name
    supported = {("torch." + c.__name__) if c.__module__.startswith("torch") else c.__name__
                 for c in zero_utils.ZERO_SUPPORTED_OPTIMIZERS}
    assert set(init.ZERO_SUPPORTED) == supported | {"MuonWithAuxAdam"}
    assert init.MUON_KEYS == tuple(dict.fromkeys(DeepSpeedEngine._MUON_HALF_KEYS + ("muon_lr", "adam_lr")
                                                 + DeepSpeedEngine._ADAM_HALF_KEYS))
    assert set(init.MUON_NS_METHODS) == original_muon.NS_METHODS
    strings = {k: v.name for k, v in ds_config.DtypeEnum._value2member_map_.items() if isinstance(k, str)}
    assert init.DTYPES == strings
    assert (ds_config.ADAM_W_MODE, ds_config.TORCH_ADAM_PARAM) == init.ADAM_POPPED[:2]


def test_betas_table_matches_optimizer_defaults():
    p = [torch.nn.Parameter(torch.zeros(2, 2))]
    for name in init.TORCH_OPTIMIZERS:
        has = "betas" in getattr(torch.optim, name)(p).defaults
        assert has == (f"torch.{name}" in init.WITH_BETAS), name


def test_stage_keys_are_zero_config_keys():
    from deepspeed.runtime.zero.config import DeepSpeedZeroConfig
    names = set()
    for field, info in DeepSpeedZeroConfig.model_fields.items():
        names |= {field, info.alias} - {None}
    assert set(init.STAGE3_ONLY) <= names and set(init.STAGE12_ONLY) <= names


def test_every_code_is_registered():
    used = set()
    for _code, bad, good in CASES:
        used |= codes(*bad) | codes(*good)
    assert used <= set(RULES)


# ---------------------------------------------------------------------------------------------
# One failing and one passing example per rule
# ---------------------------------------------------------------------------------------------

ADAM = {"type": "Adam", "params": {"lr": 1e-3}}
Z = "zero_optimization"

# (code, (bad config, target), (good config, target))
CASES = [
    ("DS500", ({"optimizer": {"type": "sgd"}}, "deepspeed"), ({"optimizer": {"type": "SGD"}}, "deepspeed")),
    ("DS500", ({"optimizer": {"type": "OneBitAdam"}}, "deepspeed"), ({"optimizer": {"type": "ADAMW"}}, "deepspeed")),
    ("DS500", ({"optimizer": {"type": "Optimizer"}}, "hf-trainer"), ({"optimizer": {"type": "RMSprop"}}, "hf-trainer")),
    ("DS501", ({"optimizer": {"type": "Adam", "params": {"momentum": 0.9}}}, "deepspeed"),
     ({"optimizer": {"type": "Adam", "params": {"betas": [0.9, 0.95]}}}, "deepspeed")),
    ("DS501", ({"optimizer": {"type": "AdamW", "params": {"max_grad_norm": 1.0}}}, "deepspeed"),
     ({"optimizer": {"type": "AdamW"}, "gradient_clipping": 1.0}, "deepspeed")),
    ("DS501", ({"optimizer": {"type": "Adam", "params": {"amsgrad": True}}}, "deepspeed"),
     ({"optimizer": {"type": "Adam", "params": {"amsgrad": True, "torch_adam": True}}}, "deepspeed")),
    ("DS501", ({"optimizer": {"type": "Adam", "params": {"adamw_mode": False}}, Z: {"stage": 2, "offload_optimizer":
                                                                                   {"device": "cpu"}}}, "deepspeed"),
     ({"optimizer": {"type": "Adam", "params": {"adam_w_mode": False}}, Z: {"stage": 2, "offload_optimizer":
                                                                          {"device": "cpu"}}}, "deepspeed")),
    ("DS501", ({"optimizer": {"type": "Lion", "params": {"fp32_optimizer_states": True}}}, "deepspeed"),
     ({"optimizer": {"type": "Lion", "params": {"fp32_optimizer_states": True}}, Z: {"stage": 1, "offload_optimizer":
                                                                                    {"device": "cpu"}}}, "deepspeed")),
    ("DS501", ({"optimizer": {"type": "muon", "params": {"ns_method": "newton"}}}, "deepspeed"),
     ({"optimizer": {"type": "muon", "params": {"ns_method": "standard"}}}, "deepspeed")),
    ("DS501", ({"optimizer": {"type": "Adam", "params": {"torch_adam": True}},
       Z: {"stage": 3, "offload_optimizer": {"device": "cpu", "ratio": 0.5}}}, "deepspeed"),
     ({"optimizer": {"type": "Adam"}, Z: {"stage": 3, "offload_optimizer": {"device": "cpu", "ratio": 0.5}}},
      "deepspeed")),
    ("DS102", ({"optimizer": {"type": "Muon", "params": {"nesterov": True}}}, "deepspeed"),
     ({"optimizer": {"type": "Muon", "params": {"momentum": 0.9}}}, "deepspeed")),
    ("DS502", ({"optimizer": {"type": "SGD"}, Z: {"stage": 1}}, "hf-trainer"),
     ({"optimizer": {"type": "SGD"}, Z: {"stage": 1}, "zero_allow_untested_optimizer": True}, "hf-trainer")),
    ("DS502", ({"optimizer": {"type": "lamb"}, Z: {"stage": 2}}, "deepspeed"),
     ({"optimizer": {"type": "lamb"}, Z: {"stage": 0}}, "deepspeed")),
    ("DS503", ({"optimizer": {"type": "LAMB"}, "fp16": {"enabled": True, "loss_scale": 128}}, "deepspeed"),
     ({"optimizer": {"type": "LAMB"}, "fp16": {"enabled": True, "loss_scale": 0}}, "deepspeed")),
    ("DS503", ({"optimizer": {"type": "lamb"}, "fp16": {"enabled": False, "loss_scale": 64}}, "deepspeed"),
     ({"optimizer": {"type": "adam"}, "fp16": {"enabled": True, "loss_scale": 64}}, "deepspeed")),
    ("DS504", ({"optimizer": {"type": "muon"}, Z: {"stage": 3}}, "deepspeed"),
     ({"optimizer": {"type": "muon"}, Z: {"stage": 3, "reduce_scatter": False}}, "deepspeed")),
    ("DS505", ({"optimizer": ADAM, "scheduler": {"type": "warmuplr", "params": {}}}, "deepspeed"),
     ({"optimizer": ADAM, "scheduler": {"type": "WarmupLR", "params": {}}}, "deepspeed")),
    ("DS505", ({"optimizer": ADAM, "scheduler": {"type": "StepLR", "params": {"step_size": 2}}, Z: {"stage": 1}},
               "deepspeed"),
     ({"optimizer": ADAM, "scheduler": {"type": "StepLR", "params": {"step_size": 2}}}, "deepspeed")),
    ("DS505", ({"optimizer": ADAM, "scheduler": {"type": "StepLR", "params": {"step_size": 2}},
                "bf16": {"enabled": True}}, "deepspeed"),
     ({"optimizer": ADAM, "scheduler": {"type": "WarmupLR", "params": {}}, "bf16": {"enabled": True}}, "deepspeed")),
    ("DS506", ({"optimizer": ADAM, "scheduler": {"type": "WarmupLR"}}, "deepspeed"),
     ({"optimizer": ADAM, "scheduler": {"type": "WarmupLR", "params": {}}}, "deepspeed")),
    ("DS506", ({"optimizer": ADAM, "scheduler": {"type": "WarmupDecayLR", "params": {"warmup_num_steps": 10}}},
               "deepspeed"),
     ({"optimizer": ADAM, "scheduler": {"type": "WarmupDecayLR", "params": {"total_num_steps": 100}}}, "deepspeed")),
    ("DS506", ({"optimizer": ADAM, "scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": 100.0}}},
               "deepspeed"),
     ({"optimizer": ADAM, "scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": 100}}}, "deepspeed")),
    ("DS506", ({"optimizer": ADAM, "scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": 0}}}, "deepspeed"),
     ({"optimizer": ADAM, "scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": 1}}}, "deepspeed")),
    ("DS506", ({"optimizer": ADAM, "scheduler": {"type": "OneCycle", "params": {
        "cycle_min_lr": 0, "cycle_max_lr": 1, "cycle_first_step_size": 0}}}, "deepspeed"),
     ({"optimizer": ADAM, "scheduler": {"type": "OneCycle", "params": {
         "cycle_min_lr": 0, "cycle_max_lr": 1, "cycle_first_step_size": 10}}}, "deepspeed")),
    ("DS506", ({"optimizer": ADAM, "scheduler": {"type": "OneCycle", "params": {
        "cycle_min_lr": 0, "cycle_max_lr": 1, "cycle_second_step_size": -1}}}, "deepspeed"),
     ({"optimizer": ADAM, "scheduler": {"type": "OneCycle", "params": {
         "cycle_min_lr": 0, "cycle_max_lr": 1, "cycle_second_step_size": 0}}}, "deepspeed")),
    ("DS506", ({"optimizer": ADAM, "scheduler": {"type": "WarmupLR", "params": {"warmup_steps": 10}}}, "deepspeed"),
     ({"optimizer": ADAM, "scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": 10}}}, "deepspeed")),
    ("DS506", ({"optimizer": ADAM, "scheduler": {"type": "LambdaLR", "params": {"lr_lambda": "x"}}}, "deepspeed"),
     ({"optimizer": ADAM, "scheduler": {"type": "ExponentialLR", "params": {"gamma": 0.9}}}, "deepspeed")),
    ("DS507", ({"optimizer": ADAM, "scheduler": {"type": "WarmupLR", "params": {"warmup_type": "cosine"}}},
               "deepspeed"),
     ({"optimizer": ADAM, "scheduler": {"type": "WarmupLR", "params": {"warmup_type": "linear"}}}, "deepspeed")),
    ("DS507", ({"optimizer": ADAM, "scheduler": {"type": "WarmupDecayLR", "params": {
        "total_num_steps": 10, "warmup_num_steps": 100}}}, "deepspeed"),
     ({"optimizer": ADAM, "scheduler": {"type": "WarmupDecayLR", "params": {
         "total_num_steps": 1000, "warmup_num_steps": 100}}}, "deepspeed")),
    ("DS507", ({"optimizer": ADAM, "scheduler": {"type": "ReduceLROnPlateau", "params": {}}}, "deepspeed"),
     ({"optimizer": ADAM, "scheduler": {"type": "CosineAnnealingLR", "params": {"T_max": 10}}}, "deepspeed")),
    ("DS303", ({"optimizer": ADAM, Z: {"stage": 3, "offload_optimizer": {"device": "nvme"}}}, "deepspeed"),
     ({"optimizer": ADAM, Z: {"stage": 3, "offload_optimizer": {"device": "nvme", "nvme_path": "/nvme"}}},
      "deepspeed")),
    ("DS303", ({Z: {"stage": 3, "offload_param": {"device": "nvme"}}}, "hf-trainer"),
     ({Z: {"stage": 2, "offload_param": {"device": "nvme"}}}, "hf-trainer")),
    ("DS305", ({"optimizer": ADAM, Z: {"stage": 2, "compute_grad_norm": False}}, "deepspeed"),
     ({"optimizer": ADAM, Z: {"stage": 2, "compute_grad_norm": False}, "gradient_clipping": 0}, "deepspeed")),
    ("DS305", ({"optimizer": ADAM, Z: {"stage": 1, "compute_grad_norm": False, "offload_optimizer": {"device": "cpu"}},
                "gradient_clipping": 0.0}, "deepspeed"),
     ({"optimizer": ADAM, Z: {"stage": 1, "compute_grad_norm": True, "offload_optimizer": {"device": "cpu"}}},
      "deepspeed")),
    ("DS305", ({"optimizer": ADAM, Z: {"stage": 1, "compute_grad_norm": False}}, "hf-trainer"),
     ({"optimizer": ADAM, Z: {"stage": 1, "compute_grad_norm": False}}, "lightning")),
    ("DS305", ({"optimizer": ADAM, Z: {"stage": 1, "compute_grad_norm": False}, "gradient_clipping": 0,
                "bf16": {"enabled": True}, "data_types": {"grad_accum_dtype": "fp32"}}, "deepspeed"),
     ({"optimizer": ADAM, Z: {"stage": 1, "compute_grad_norm": False}, "gradient_clipping": 0,
       "bf16": {"enabled": True}}, "deepspeed")),
    ("DS306", ({"optimizer": ADAM, Z: {"stage": 2, "allgather_bucket_size": 200000001}}, "deepspeed"),
     ({"optimizer": ADAM, Z: {"stage": 3, "allgather_bucket_size": 200000001}}, "deepspeed")),
    ("DS307", ({"optimizer": ADAM, Z: {"stage": 1, "legacy_stage1": True}}, "deepspeed"),
     ({"optimizer": ADAM, Z: {"stage": 1, "legacy_stage1": False}}, "deepspeed")),
    ("DS309", ({"optimizer": ADAM, Z: {"stage": 2}, "pipeline": {"activation_checkpoint_interval": 1}}, "deepspeed"),
     ({"optimizer": ADAM, Z: {"stage": 2}, "pipeline": {"activation_checkpoint_interval": 1}}, "hf-trainer")),
    ("DS309", ({"optimizer": ADAM, Z: {"stage": 3}, "pipeline": {"stages": 2}}, "deepspeed"),
     ({"optimizer": ADAM, Z: {"stage": 1}, "pipeline": {"stages": 2}}, "deepspeed")),
    ("DS310", ({"optimizer": ADAM, Z: {"stage": 1, "overlap_comm": True}, "managed_gradient_accumulation": False},
               "deepspeed"),
     ({"optimizer": ADAM, Z: {"stage": 2, "overlap_comm": True}, "managed_gradient_accumulation": False},
      "deepspeed")),
    ("DS310", ({"optimizer": ADAM, "pipeline": {"stages": 1}, "managed_gradient_accumulation": False}, "deepspeed"),
     ({"optimizer": ADAM, "pipeline": {"stages": 1}, "managed_gradient_accumulation": True}, "deepspeed")),
    ("DS310", ({"optimizer": ADAM, Z: {"stage": 2}, "compile": {"deepcompile": True},
                "managed_gradient_accumulation": False}, "deepspeed"),
     ({"optimizer": ADAM, Z: {"stage": 2}, "compile": {"deepcompile": True}}, "deepspeed")),
    ("DS311", ({"optimizer": ADAM, Z: {"stage": 2}, "gradient_predivide_factor": 2.0}, "deepspeed"),
     ({"optimizer": ADAM, Z: {"stage": 1}, "gradient_predivide_factor": 2.0}, "deepspeed")),
    ("DS311", ({"optimizer": ADAM, Z: {"stage": 3}, "prescale_gradients": True}, "deepspeed"),
     ({"optimizer": ADAM, Z: {"stage": 3, "reduce_scatter": False}, "prescale_gradients": True}, "deepspeed")),
    ("DS311", ({"optimizer": ADAM, Z: {"stage": 2}, "prescale_gradients": True}, "deepspeed"),
     ({"optimizer": ADAM, Z: {"stage": 2}, "prescale_gradients": True, "gradient_allreduce_op": "sum"}, "deepspeed")),
    ("DS404", ({"optimizer": ADAM, Z: {"stage": 2}, "bf16": {"enabled": True, "bf16_master_weights_and_grads": True}},
               "deepspeed"),
     ({"optimizer": ADAM, Z: {"stage": 2, "offload_optimizer": {"device": "cpu"}},
       "bf16": {"enabled": True, "bf16_master_weights_and_grads": True}}, "deepspeed")),
    ("DS404", ({"optimizer": {"type": "SGD"}, "zero_allow_untested_optimizer": True,
                Z: {"stage": 3, "offload_optimizer": {"device": "cpu"}},
                "fp16": {"enabled": True, "fp16_master_weights_and_grads": True}}, "deepspeed"),
     ({"optimizer": ADAM, Z: {"stage": 3, "offload_optimizer": {"device": "cpu"}},
       "fp16": {"enabled": True, "fp16_master_weights_and_grads": True}}, "deepspeed")),
    ("DS404", ({"optimizer": ADAM, Z: {"stage": 2}, "bf16": {"enabled": True, "bf16_master_weights_and_grads": True},
                "fp16": {"fp16_master_weights_and_grads": True}}, "deepspeed"),
     ({"optimizer": ADAM, Z: {"stage": 2}, "bf16": {"enabled": True, "bf16_master_weights_and_grads": True,
                                                     "bf16_optimizer_states": True}}, "deepspeed")),
    ("DS404", ({Z: {"stage": 2, "offload_optimizer": {"device": "cpu"}}, "bf16": {
        "enabled": True, "bf16_master_weights_and_grads": True, "bf16_optimizer_states": True}}, "hf-trainer"),
     ({"optimizer": ADAM, Z: {"stage": 2, "offload_optimizer": {"device": "cpu"}}, "bf16": {
         "enabled": True, "bf16_master_weights_and_grads": True, "bf16_optimizer_states": True}}, "hf-trainer")),
    ("DS408", ({"optimizer": ADAM, "bf16": {"enabled": True}, "data_types": {"param_dtype": "fp16"}}, "deepspeed"),
     ({"optimizer": ADAM, "bf16": {"enabled": True}, "data_types": {"param_dtype": "bfloat16"}}, "deepspeed")),
    ("DS408", ({"optimizer": ADAM, "bf16": {"enabled": True}, "data_types": {"grad_accum_dtype": "fp32"}},
               "deepspeed"),
     ({"optimizer": ADAM, Z: {"stage": 1}, "bf16": {"enabled": True}, "data_types": {"grad_accum_dtype": "fp32"}},
      "deepspeed")),
    ("DS408", ({"optimizer": ADAM, "data_types": {"grad_accum_dtype": "FP32"}}, "deepspeed"),
     ({"optimizer": ADAM, "data_types": {"grad_accum_dtype": "float32"}}, "deepspeed")),
    ("DS408", ({"optimizer": ADAM, "fp16": {"enabled": True}, "data_types": {"buffer_dtype": "f32"}}, "deepspeed"),
     ({"optimizer": ADAM, "data_types": {"buffer_dtype": "f32"}}, "deepspeed")),
    ("DS409", ({"optimizer": ADAM, Z: {"stage": 3, "zero_quantized_weights": True},
                "torch_autocast": {"enabled": True}}, "deepspeed"),
     ({"optimizer": ADAM, Z: {"stage": 3, "zero_quantized_weights": True},
       "torch_autocast": {"enabled": False}}, "deepspeed")),
    ("DS600", ({"activation_checkpointing": {"contiguous_memory_optimization": True}}, "deepspeed"),
     ({"activation_checkpointing": {"contiguous_memory_optimization": True, "partition_activations": True}},
      "deepspeed")),
    ("DS600", ({"activation_checkpointing": {"contiguous_memory_optimization": True, "partition_activations": True,
                                             "number_checkpoints": 4}}, "lightning"),
     ({"activation_checkpointing": {"contiguous_memory_optimization": True}}, "hf-trainer")),
    ("DS604", ({"tensor_parallel": {"autotp_size": 4, "tp": {"tp_size": 2}}}, "deepspeed"),
     ({"tensor_parallel": {"autotp_size": 4, "tp": {"tp_size": 4}}}, "deepspeed")),
    ("DS606", ({"optimizer": ADAM, "pipeline": {"pipe_partitioned": "false"}}, "deepspeed"),
     ({"optimizer": ADAM, "pipeline": {"pipe_partitioned": False}}, "deepspeed")),
    ("DS301", ({Z: {"stage": 2, "offload_param": {"device": "cpu"}}}, "hf-trainer"),
     ({Z: {"stage": 3, "offload_param": {"device": "cpu"}}}, "hf-trainer")),
    ("DS301", ({"optimizer": ADAM, Z: {"stage": 0, "offload_optimizer": {"device": "cpu"}}}, "deepspeed"),
     ({"optimizer": ADAM, Z: {"stage": 1, "offload_optimizer": {"device": "cpu"}}}, "deepspeed")),
    ("DS301", ({"optimizer": ADAM, Z: {"stage": 2, "offload_optimizer": {"device": "nvme", "nvme_path": "/n"}}},
               "deepspeed"),
     ({"optimizer": ADAM, Z: {"stage": 3, "offload_optimizer": {"device": "nvme", "nvme_path": "/n"}}}, "deepspeed")),
    ("DS301", ({"optimizer": ADAM, Z: {"stage": 2, "offload_optimizer": {"device": "cpu", "super_offload": True}}},
               "deepspeed"),
     ({"optimizer": ADAM, Z: {"stage": 3, "offload_optimizer": {"device": "cpu", "super_offload": True}}},
      "deepspeed")),
    ("DS304", ({Z: {"stage": 2, "stage3_prefetch_bucket_size": 100}}, "hf-trainer"),
     ({Z: {"stage": 3, "stage3_prefetch_bucket_size": 100}}, "hf-trainer")),
    ("DS304", ({Z: {"stage": 3, "round_robin_gradients": True}}, "deepspeed"),
     ({Z: {"stage": 2, "round_robin_gradients": True}}, "deepspeed")),
    ("DS304", ({Z: {"stage": 1, "zero_quantized_gradients": True}}, "deepspeed"),
     ({Z: {"stage": 1}}, "deepspeed")),
    ("DS308", ({Z: {"stage": 2, "offload_optimizer": {"device": "cpu"}}}, "deepspeed"),
     ({Z: {"stage": 2, "offload_optimizer": {"device": "cpu"}}, "zero_force_ds_cpu_optimizer": False}, "deepspeed")),
    ("DS308", ({Z: {"stage": 3, "offload_optimizer": {"device": "cpu"}}}, "lightning"),
     ({"optimizer": ADAM, Z: {"stage": 3, "offload_optimizer": {"device": "cpu"}}}, "lightning")),
    ("DS308", ({Z: {"stage": 2, "offload_optimizer": {"device": "cpu"}}}, "accelerate"),
     ({Z: {"stage": 2, "offload_optimizer": {"device": "cpu"}}, "zero_force_ds_cpu_optimizer": False}, "accelerate")),
    ("DS308", ({Z: {"stage": 2, "cpu_offload": True}}, "hf-trainer"),
     ({Z: {"stage": 2}}, "hf-trainer")),
    # the Trainer's AdamW becomes CPU AdamW with its own param groups: nothing to warn about
    ("DS308", ({Z: {"stage": 2, "offload_optimizer": {"device": "cpu"}}}, "accelerate"),
     ({Z: {"stage": 2, "offload_optimizer": {"device": "cpu"}}}, "hf-trainer")),
    ("DS509", ({Z: {"stage": 2}}, "hf-trainer"), ({Z: {"stage": 2}, "gradient_clipping": 1.0}, "hf-trainer")),
    ("DS510", ({"optimizer": {"type": "Muon"}, "bf16": {"enabled": True}, "pipeline": {"pipe_partitioned": True}},
               "deepspeed"),
     ({"optimizer": {"type": "Muon"}, "bf16": {"enabled": True}}, "deepspeed")),
    ("DS510", ({"optimizer": {"type": "Muon"}, "bf16": {"enabled": True}, Z: {"stage": 1},
                "data_types": {"grad_accum_dtype": "fp32"}, "pipeline": {"pipe_partitioned": True}}, "deepspeed"),
     ({"optimizer": {"type": "Muon"}, "bf16": {"enabled": True}, Z: {"stage": 1},
       "pipeline": {"pipe_partitioned": True}}, "deepspeed")),
    ("DS509", ({Z: {"stage": 2}}, "deepspeed"), ({Z: {"stage": 2}}, "lightning")),
]


@pytest.mark.parametrize("code,bad,good", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_rule_examples(code, bad, good):
    assert code in codes(*bad), findings(*bad)
    assert code not in codes(*good), findings(*good)


def test_fails_in_matches_the_rule():
    """Each finding's phase is one its rule declares: a rule that only raises carries "initialize", a
    silent trap carries none."""
    seen = set()
    for _, bad, _good in CASES:
        for f in findings(*bad):
            assert f.fails_in in f.rule.fails_in, (f, f.rule.fails_in)
            seen.add(f.rule.fails_in)
    assert (INITIALIZE,) in seen and (None,) in seen


def test_fixes_are_json_and_pointers_exist():
    for _, (config, target), _good in CASES:
        for f in findings(config, target):
            if f.fix is not None:
                json.loads(f.fix)  # a value, or with on_key the replacement key, as JSON text
            node = config
            for token in [t.replace("~1", "/").replace("~0", "~") for t in f.pointer.split("/")[1:]]:
                assert isinstance(node, dict) and token in node, (f, config)
                node = node[token]


def test_hf_trainer_sets_untested_flag_only_without_optimizer_block():
    assert "DS502" not in codes({Z: {"stage": 2}}, "hf-trainer")
    assert "DS502" in codes({Z: {"stage": 2}, "optimizer": {"type": "RMSprop"}}, "hf-trainer")


def test_auto_values_are_left_to_the_auto_module():
    config = {"optimizer": {"type": "AdamW", "params": {"lr": "auto", "betas": "auto"}},
              "scheduler": {"type": "WarmupDecayLR", "params": {"warmup_num_steps": "auto", "total_num_steps": "auto",
                                                                 "warmup_min_lr": "auto", "warmup_max_lr": "auto"}},
              Z: {"stage": 2, "compute_grad_norm": False}, "gradient_clipping": "auto"}
    assert codes(config, "hf-trainer", failing=True) == set()


def test_values_the_integrations_fill_are_unknown():
    """Under the Trainer / prepare(), "stage": "auto" becomes the plugin's stage (2 by default), not
    DeepSpeed's 0, and "enabled": "auto" follows the mixed-precision setting: no verdict on them."""
    config = {Z: {"stage": "auto", "stage3_prefetch_bucket_size": 10, "allgather_bucket_size": 3,
                  "offload_optimizer": {"device": "auto"}},
              "bf16": {"enabled": "auto"}, "data_types": {"param_dtype": "bf16"},
              "optimizer": {"type": "Adam", "params": {"adamw_mode": True}}}
    assert codes(config, "hf-trainer") == {"DS509"}
    assert {"DS304", "DS408", "DS501"} <= codes(config, "deepspeed")  # DeepSpeed itself drops the "auto"s


json_value = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 10**10) | st.floats(allow_nan=True) | st.text(max_size=6)
    | st.sampled_from(["auto", "cpu", "nvme", "none", "Adam", "WarmupLR", "StepLR", "bf16", "fp32"]),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(
        st.sampled_from(["type", "params", "stage", "device", "offload_optimizer", "offload_param", "enabled", "lr",
                         "ratio", "nvme_path", "warmup_num_steps", "total_num_steps", "tp", "tp_size",
                         "autotp_size", "x"]), children, max_size=4),
    max_leaves=12)
top_keys = st.sampled_from(["optimizer", "scheduler", "zero_optimization", "fp16", "bf16", "bfloat16", "data_types",
                            "pipeline", "activation_checkpointing", "tensor_parallel", "torch_autocast", "compile",
                            "gradient_clipping", "managed_gradient_accumulation", "zero_force_ds_cpu_optimizer",
                            "prescale_gradients", "gradient_predivide_factor", "zero_allow_untested_optimizer"])


@settings(max_examples=600, deadline=None, suppress_health_check=list(HealthCheck))
@given(config=st.dictionaries(top_keys, json_value, max_size=6),
       target=st.sampled_from(["deepspeed", "hf-trainer", "accelerate", "lightning"]))
def test_never_raises(config, target):
    for resolved in (resolved_for(config), {}, {"zero_optimization": {"stage": "x", "offload_optimizer": 3}}):
        for f in init.check_initialize(config, resolved, targets.BY_NAME[target]):
            assert f.code in RULES


# ---------------------------------------------------------------------------------------------
# Oracle 1: the real engine, in a worker process
# ---------------------------------------------------------------------------------------------

WORKER = textwrap.dedent(r"""
    import json, logging, os, socket, sys, traceback
    s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK="0", WORLD_SIZE="1", LOCAL_RANK="0",
                      ACCELERATE_USE_DEEPSPEED="true")
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # DeepSpeed prints; keep our protocol on the saved stdout
    import torch, deepspeed
    logging.disable(logging.CRITICAL)
    deepspeed.init_distributed(dist_backend="gloo")
    # dsconfig lints for GPU machines, where fp16 is always supported. The CPU accelerator asks oneDNN,
    # which has no fp16 on CPUs without AVX512-FP16 or AMX (AMD EPYC among them): there the engine
    # refuses every fp16 config ("Type fp16 is not supported on your device.") before it reads it.
    # Claiming support lets the real fp16 path (loss scaler, FP16 optimizers) run on every machine.
    from deepspeed.accelerator import get_accelerator
    type(get_accelerator()).is_fp16_supported = lambda self: True
    from deepspeed.runtime.config import DeepSpeedConfig
    from deepspeed.pipe import PipelineModule

    def engine(job):
        config = job["config"]
        try:
            DeepSpeedConfig(json.loads(json.dumps(config)))
        except Exception as error:
            return {"phase": "parse", "error": f"{type(error).__name__}: {error}"}
        torch.manual_seed(0)
        if job.get("pipeline"):
            model = PipelineModule(layers=[torch.nn.Linear(4, 4)], num_stages=1, loss_fn=torch.nn.MSELoss())
        else:
            model = torch.nn.Linear(4, 4)
        kwargs = {}
        if job.get("client"):
            kwargs["optimizer"] = torch.optim.AdamW(model.parameters(), lr=1e-3)
        try:
            eng, *_ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=config, **kwargs)
        except Exception as error:
            return failed("initialize", error)
        return first_step(eng, job)

    def failed(phase, error):
        files = [os.path.basename(f.filename) for f in traceback.extract_tb(error.__traceback__)]
        return {"phase": phase, "error": f"{type(error).__name__}: {error}", "files": files}

    def first_step(eng, job):
        # With job["step"], one training step: forward, backward and step for each micro batch of a train batch.
        try:
            if job.get("step"):
                dtype = (torch.float16 if eng.fp16_enabled() else torch.bfloat16 if eng.bfloat16_enabled()
                         else torch.float32)
                batch = torch.ones(1, 4, dtype=dtype)
                if job.get("pipeline"):
                    eng.train_batch(data_iter=iter([(batch, batch)] * eng.gradient_accumulation_steps()))
                else:
                    for _ in range(eng.gradient_accumulation_steps()):
                        eng.backward(eng(batch).float().pow(2).mean())
                        eng.step()
        except Exception as error:
            return failed("step", error)
        finally:
            eng.destroy()
        return {"phase": None}

    def checkpointing(job):
        # deepspeed.checkpointing.configure as Lightning calls it, or with the config file (plain DeepSpeed)
        section = job["config"].get("activation_checkpointing", {})
        try:
            if job["how"] == "lightning":
                deepspeed.checkpointing.configure(
                    mpu_=None, partition_activations=section.get("partition_activations"),
                    contiguous_checkpointing=section.get("contiguous_memory_optimization"),
                    checkpoint_in_cpu=section.get("cpu_checkpointing"), profile=section.get("profile"))
            else:  # as Megatron-DeepSpeed does: the config file plus the number of layers
                deepspeed.checkpointing.configure(None, deepspeed_config=job["config"], num_checkpoints=4)
        except Exception as error:
            return {"phase": "initialize", "error": f"{type(error).__name__}: {error}"}
        return {"phase": None}

    def autotp(job):
        # DeepSpeedEngine._apply_autotp_partitioning up to its size check (a world of 1 cannot build a TP mesh)
        from deepspeed.runtime.engine import DeepSpeedEngine
        from deepspeed.runtime.tensor_parallel.config import get_tensor_parallel_config
        tp_config = get_tensor_parallel_config(job["config"])
        class Stub:
            local_rank = 0
            def autotp_size(self):
                return tp_config.autotp_size
        if not tp_config.autotp_size > 1:
            return {"phase": None}  # DeepSpeedEngine.__init__: `if self.autotp_size() > 1:`
        try:
            DeepSpeedEngine._apply_autotp_partitioning(Stub(), torch.nn.Linear(4, 4), tp_config)
        except ValueError as error:
            if "does not match" in str(error):
                return {"phase": "initialize", "error": f"ValueError: {error}"}
        except Exception:
            pass  # past the size check: AutoTP itself needs a real model
        return {"phase": None}

    def prepare(job):
        # Accelerate's prepare(), as the HF Trainer and Accelerate scripts reach DeepSpeed: DummyOptim /
        # DummyScheduler for config blocks, else the script's torch AdamW. The HF zero.Init weakref needs
        # transformers (not installed) and plays no part in building the optimizer: stubbed.
        from accelerate import Accelerator
        from accelerate.state import AcceleratorState
        from accelerate.utils import DeepSpeedPlugin, DummyOptim, DummyScheduler
        DeepSpeedPlugin.set_deepspeed_weakref = lambda self: None
        config = job["config"]
        fixed = dict(config, train_batch_size=1, train_micro_batch_size_per_gpu=1, gradient_accumulation_steps=1)
        try:
            DeepSpeedConfig(json.loads(json.dumps(fixed)))
        except Exception as error:
            return {"phase": "parse", "error": f"{type(error).__name__}: {error}"}
        torch.manual_seed(0)
        model = torch.nn.Linear(4, 4)
        data = torch.utils.data.DataLoader(torch.zeros(4, 4), batch_size=1)
        optimizer = DummyOptim(model.parameters()) if "optimizer" in config else torch.optim.AdamW(
            model.parameters(), lr=1e-3)
        objects = [model, optimizer, data] + ([DummyScheduler(optimizer)] if "scheduler" in config else [])
        try:
            try:
                plugin = DeepSpeedPlugin(hf_ds_config=json.loads(json.dumps(config)))
                prepared = Accelerator(deepspeed_plugin=plugin).prepare(*objects)
            except Exception as error:
                return failed("initialize", error)
            return first_step(prepared[0], job)
        finally:
            AcceleratorState._reset_state(True)

    for line in sys.stdin:
        job = json.loads(line)
        kinds = {"engine": engine, "checkpointing": checkpointing, "autotp": autotp, "prepare": prepare}
        result = kinds[job["kind"]](job)
        out.write("@@" + json.dumps(result) + "\n")
        out.flush()
""")


class Worker:
    """The engine worker process; one that hangs fails the job that asked and is replaced for the next."""

    def __init__(self):
        self._start()

    def _start(self):
        env = dict(os.environ, PYTHONWARNINGS="ignore")
        self.proc = subprocess.Popen([sys.executable, "-c", WORKER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True, env=env)
        self.answers = Answers(self.proc, self.proc.stdout)

    def run(self, **job) -> dict:
        if self.proc.poll() is not None:
            self._start()
        self.proc.stdin.write(json.dumps(job) + "\n")
        self.proc.stdin.flush()
        while True:
            line = self.answers.next(f"the DeepSpeed engine worker's {job['kind']} job {json.dumps(job)[:300]}")
            if not line:
                raise RuntimeError("the DeepSpeed worker died")
            if line.startswith("@@"):
                return json.loads(line[2:])

    def close(self):
        with contextlib.suppress(Exception):
            self.proc.stdin.close()
            self.proc.wait(timeout=30)


@pytest.fixture(scope="module")
def worker():
    w = Worker()
    yield w
    w.close()


# The rule each of DeepSpeed's initialize-time errors belongs to (by message, or by the file that raised).
ERROR_RULES = [
    ("is not a supported DeepSpeed Optimizer", {"DS500"}),
    ("Hybrid Optimizer Only Supports DeepSpeedCPUAdam", {"DS500", "DS501"}),
    ("max_grad_norm", {"DS501"}),
    ("AMSGrad", {"DS501"}),
    ("ns_method must be", {"DS501"}),
    ("untested ZeRO Optimizer", {"DS502"}),
    ("requires dynamic loss scaling", {"DS503"}),
    ("Muon and reduce scatter", {"DS504"}),
    ("BF16 Muon currently requires", {"DS510"}),
    ("does not recognize LR scheduler", {"DS505"}),
    ("is not an Optimizer", {"DS505"}),
    ("nvme_path", {"DS303"}),
    ("expected str, bytes or os.PathLike object, not NoneType", {"DS303"}),
    ("compute_grad_norm=false", {"DS305"}),
    ("allgather_bucket_size must be a multiple", {"DS306"}),
    ("deprecated version of ZeRO Stage 1", {"DS307"}),
    ("incompatible with pipeline parallelism", {"DS309"}),
    ("managed_gradient_accumulation=False", {"DS310"}),
    ("gradient_predivide_factor != 1.0", {"DS311"}),
    ("pre-scale gradients", {"DS311"}),
    ("Master weights feature", {"DS404"}),
    ("mutually exclusive", {"DS404"}),
    ("fp32_optimizer_states=False", {"DS404"}),
    ("conflicts with the enabled precision mode", {"DS408"}),
    ("is not a valid DtypeEnum", {"DS408"}),
    ("unsupported mix of", {"DS408"}),
    ("torch autocast and zero quantized weights", {"DS409"}),
    ("Contiguous Checkpointing", {"DS600"}),
    ("number of layers with contiguous", {"DS600"}),
    ("does not match tensor_parallel.autotp_size", {"DS604"}),
    ("ZeRO-Offload with a client provided optimizer", {"DS308"}),
]
SCHEDULER_FILES = ("lr_schedules.py", "lr_scheduler.py")


def rules_of(result: dict) -> set[str]:
    error = result["error"]
    if error.startswith("TypeError: Optimizer.__init__()"):
        return {"DS500"}  # torch.optim.Optimizer itself: passes DeepSpeed's name check, then fails
    for text, rules in ERROR_RULES:
        if text in error:
            return rules
    schedulers = list(init.DS_SCHEDULERS) + list(init.TORCH_SCHEDULERS)
    if (any(f in SCHEDULER_FILES for f in result.get("files", ())) or "argument after ** must be a mapping" in error
            or any(f"{name}.__init__()" in error for name in schedulers)):
        return {"DS505", "DS506"}
    if error.startswith("AssertionError: ") and error == "AssertionError: ":
        return {"DS606"}
    if error.startswith("TypeError") and ("keyword argument" in error or "multiple values" in error):
        return {"DS501"}
    return set()


# What this CPU machine cannot run (no kernel for the CPU accelerator), not what the config gets wrong.
ENVIRONMENT_LIMITS = ("not been implemented on CPU backend", "only supports NVIDIA CUDA GPUs")


def agree(name: str, real: dict, mine: set[str]) -> None:
    """real raises an error we model <=> dsconfig reports an initialize-phase error, of that rule."""
    if real["phase"] and any(text in real["error"] for text in ENVIRONMENT_LIMITS):
        AGREEMENT.setdefault(name + " (skipped: needs a GPU)", [0, 0, 0])[0] += 1
        return
    stats = AGREEMENT.setdefault(name, [0, 0, 0])
    stats[0] += 1
    if real["phase"] is None:
        assert not mine, f"DeepSpeed accepts this config, dsconfig predicts {sorted(mine)}"
    else:
        stats[1] += 1
        expected = rules_of(real)
        assert expected, f"unclassified DeepSpeed error: {real['error']}"
        assert mine & expected, f"DeepSpeed raised {real['error']!r} ({sorted(expected)}); dsconfig: {sorted(mine)}"
    stats[2] += 1


# -- the hypothesis family ----------------------------------------------------------------------

# A mostly valid base config, then 0-3 "risky" edits, so that DeepSpeed accepts about a third of
# the family and each rule is exercised both ways.
GOOD_OPTIMIZERS = ["Adam", "adamw", "AdamW", "ADAM", "Adagrad", "Muon", "Lion", None]
GOOD_PARAMS = {"lr": 1e-3, "eps": 1e-8, "weight_decay": 0.01}
BAD_NAMES = ["sgd", "OneBitAdam", "Optimizer", "Adamx", "zerooneadam"]
BAD_PARAMS = {"foo": 1, "max_grad_norm": 1.0, "momentum": 0.9, "amsgrad": True, "adamw_mode": False,
              "adam_w_mode": False, "torch_adam": True, "fp32_optimizer_states": False, "bias_correction": True,
              "set_grad_none": True, "lr_decay": 0.0, "foreach": False, "ns_method": "newton", "nesterov": True,
              "betas": [0.9, 0.99]}
GOOD_SCHEDULERS = [("WarmupLR", {"warmup_num_steps": 10}), ("WarmupDecayLR", {"total_num_steps": 100}),
                   ("WarmupCosineLR", {"total_num_steps": 100, "warmup_num_steps": 5}),
                   ("OneCycle", {"cycle_min_lr": 1e-4, "cycle_max_lr": 1e-3}), ("LRRangeTest", {})]
SCHED_TYPES = ["WarmupLR", "WarmupDecayLR", "WarmupCosineLR", "OneCycle", "LRRangeTest", "StepLR", "ExponentialLR",
               "ReduceLROnPlateau", "warmupLR", "Nope"]
SCHED_PARAMS = {
    "warmup_num_steps": [10, 0, 10.0, -1, True], "total_num_steps": [100, 5, "100", None],
    "warmup_type": ["log", "cos"], "warmup_min_lr": [0.0, "0"], "warmup_max_lr": [1e-3, None],
    "cycle_first_step_size": [10, 0, "10", "ten"], "cycle_second_step_size": [None, -1, 5],
    "decay_step_size": [0, "1"], "decay_mom_rate": [0.0, "0"], "cycle_momentum": [True, False],
    "lr_range_test_step_size": [10, 10.5, 0], "step_size": [2], "gamma": [0.9], "bogus": [1],
}
REQUIRED = {"WarmupDecayLR": ["total_num_steps"], "WarmupCosineLR": ["total_num_steps"],
            "OneCycle": ["cycle_min_lr", "cycle_max_lr"], "StepLR": ["step_size"], "ExponentialLR": ["gamma"]}


def _risky_optimizer(draw, config, zero):
    choice = draw(st.sampled_from(["name", "param", "untested", "partial"]))
    optimizer = config.setdefault("optimizer", {"type": "Adam", "params": {}})
    if choice == "name":
        optimizer["type"] = draw(st.sampled_from(BAD_NAMES))
    elif choice == "param":
        key = draw(st.sampled_from(sorted(BAD_PARAMS)))
        optimizer.setdefault("params", {})[key] = BAD_PARAMS[key]
    elif choice == "untested":
        optimizer["type"] = draw(st.sampled_from(["SGD", "RMSprop", "Adamax"]))
        optimizer["params"] = {"lr": 1e-3}
        if draw(st.booleans()):
            config["zero_allow_untested_optimizer"] = True
    elif zero["stage"] == 3:
        zero["offload_optimizer"] = {"device": "cpu", "ratio": 0.5}
        if draw(st.booleans()):
            optimizer.setdefault("params", {})["torch_adam"] = True


def _risky_precision(draw, config, zero):
    choice = draw(st.sampled_from(["master", "dtypes", "autocast"]))
    if choice == "master" and zero["stage"]:
        if draw(st.booleans()):
            config["fp16"] = {"enabled": True, "fp16_master_weights_and_grads": True}
            config.pop("bf16", None)
        else:
            config["bf16"] = {"enabled": True, "bf16_master_weights_and_grads": True,
                              "bf16_optimizer_states": draw(st.booleans())}
            config.pop("fp16", None)
    elif choice == "dtypes":
        config["data_types"] = {draw(st.sampled_from(["param_dtype", "grad_accum_dtype", "buffer_dtype"])):
                                draw(st.sampled_from(["fp32", "bf16", "fp16", "FP32"]))}
    elif choice == "autocast":
        config["torch_autocast"] = {"enabled": True}
        zero["zero_quantized_weights"] = draw(st.booleans())


def _risky_zero(draw, config, zero):
    choice = draw(st.sampled_from(["scaling", "mga", "legacy", "nvme", "grad_norm", "allgather", "client"]))
    if choice == "scaling":
        config[draw(st.sampled_from(["gradient_predivide_factor", "prescale_gradients"]))] = draw(
            st.sampled_from([2.0, True]))
        if draw(st.booleans()):
            zero["reduce_scatter"] = False
    elif choice == "mga":
        config["managed_gradient_accumulation"] = False
        zero["overlap_comm"] = draw(st.booleans())
    elif choice == "legacy":
        zero["legacy_stage1"] = True
    elif choice == "nvme":
        zero[draw(st.sampled_from(["offload_optimizer", "offload_param"]))] = {"device": "nvme"}
    elif choice == "grad_norm" and zero["stage"] in (1, 2):
        zero["compute_grad_norm"] = False
        config["gradient_clipping"] = draw(st.sampled_from([0, 0, 1.0]))
    elif choice == "allgather":
        zero["allgather_bucket_size"] = 200000001
    elif choice == "client":
        config.pop("optimizer", None)
        zero["offload_optimizer"] = {"device": "cpu"}
        config.pop("zero_force_ds_cpu_optimizer", None)


def _risky_scheduler(draw, config, zero):
    kind = draw(st.sampled_from(SCHED_TYPES))
    scheduler = {"type": kind}
    if draw(st.integers(0, 6)):
        keys = [k for k in REQUIRED.get(kind, []) if draw(st.integers(0, 5))]
        keys += draw(st.lists(st.sampled_from(sorted(SCHED_PARAMS)), max_size=2, unique=True))
        scheduler["params"] = {k: draw(st.sampled_from(SCHED_PARAMS[k])) if k in SCHED_PARAMS else 1e-3 for k in keys}
    config["scheduler"] = scheduler


def _risky_pipeline(draw, config, zero):
    config["pipeline"] = {"pipe_partitioned": draw(st.sampled_from([True, "true"]))}
    if draw(st.booleans()):
        config["managed_gradient_accumulation"] = False


RISKS = [_risky_optimizer, _risky_precision, _risky_zero, _risky_scheduler, _risky_pipeline]


@st.composite
def engine_configs(draw):
    stage = draw(st.sampled_from([0, 1, 2, 3]))
    zero = {"stage": stage}
    config = {"train_batch_size": 1, "zero_optimization": zero}
    offload = draw(st.sampled_from(["none", "cpu"]))
    if offload == "cpu":
        zero["offload_optimizer"] = {"device": "cpu"}
    if stage == 3 and draw(st.integers(0, 3)) == 0:
        zero["offload_param"] = {"device": "cpu"}
    for key, values in (("reduce_scatter", [True, False]), ("overlap_comm", [True, False]),
                        ("allgather_bucket_size", [200000000])):
        if draw(st.integers(0, 3)) == 0:
            zero[key] = draw(st.sampled_from(values))
    name = draw(st.sampled_from(GOOD_OPTIMIZERS))
    if name == "Lion" and offload == "none":
        name = "AdamW"  # FusedLion has no CPU kernel
    if name is not None:
        config["optimizer"] = {"type": name, "params": dict(draw(st.sampled_from([{}, GOOD_PARAMS])))}
    elif offload == "cpu":
        config["zero_force_ds_cpu_optimizer"] = False  # the script's AdamW under offload
    precision = draw(st.sampled_from(["fp32", "fp16", "bf16"]))
    if precision != "fp32":
        config[precision] = {"enabled": True}
    if draw(st.booleans()):
        kind, params = draw(st.sampled_from(GOOD_SCHEDULERS))
        config["scheduler"] = {"type": kind, "params": dict(params)}
    if draw(st.booleans()):
        config["gradient_clipping"] = draw(st.sampled_from([0.0, 1.0]))
    for risk in draw(st.lists(st.sampled_from(RISKS), max_size=3)):
        risk(draw, config, zero)
    if config.get("optimizer", {}).get("type") == "Lion" and \
            zero.get("offload_optimizer", {}).get("device", "none") == "none":
        config["optimizer"]["type"] = "AdamW"
    pipeline = "pipeline" in config
    return config, pipeline


@pytest.mark.slow
@settings(max_examples=ENGINE_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(case=engine_configs())
def test_engine_agrees(worker, case):
    config, pipeline = case
    client = "optimizer" not in config  # the script passes a torch optimizer (AdamW) when the config has none
    real = worker.run(kind="engine", config=config, client=client, pipeline=pipeline)
    assume(real["phase"] != "parse")  # parse-time errors belong to another module
    mine = codes(config, "deepspeed", failing=True)
    agree("engine", real, mine)


PREPARE_EXAMPLES = int(os.environ.get("DSCONFIG_PREPARE_EXAMPLES", "60"))


@pytest.mark.slow
@settings(max_examples=PREPARE_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(case=engine_configs(), target=st.sampled_from(["accelerate", "hf-trainer"]))
def test_accelerate_prepare_agrees(worker, case, target):
    """The same family through Accelerate's real prepare(): the optimizer swap under offload, the
    untested-optimizer flag, and what reaches DeepSpeed."""
    config, _pipeline = case
    config = {key: value for key, value in config.items() if key not in ("train_batch_size", "pipeline")}
    config.update(train_batch_size="auto", train_micro_batch_size_per_gpu="auto", gradient_accumulation_steps=1)
    real = worker.run(kind="prepare", config=config)
    assume(real["phase"] != "parse")
    agree("accelerate prepare", real, codes(config, target, failing=True))


ENGINE_CASES = [case for case in CASES if case[1][1] == "deepspeed" and case[0] not in ("DS600", "DS604")]


@pytest.mark.parametrize("code,bad,good", ENGINE_CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(ENGINE_CASES)])
def test_rule_examples_against_engine(worker, code, bad, good):
    """The hand-written examples, replayed on the real engine (lamb, GPU lion and nvme swapping excepted)."""
    for config, _target in (bad, good):
        config = {"train_batch_size": 1, **config}
        name = str(config.get("optimizer", {}).get("type", "")).lower()
        offload = config.get(Z, {}).get("offload_optimizer", {}).get("device", "none")
        if name == "lamb" or (name == "lion" and offload == "none") or (offload == "nvme" and "nvme_path" in
                                                                          config[Z]["offload_optimizer"]):
            continue  # no CPU kernels (FusedLamb, FusedLion) or no NVMe swap space on this machine
        pipeline = "pipeline" in config
        real = worker.run(kind="engine", config=config, client="optimizer" not in config, pipeline=pipeline)
        assert real["phase"] != "parse", real
        agree("examples", real, codes(config, "deepspeed", failing=True))


@pytest.mark.parametrize("section,target", [
    ({"contiguous_memory_optimization": True}, "lightning"),
    ({"contiguous_memory_optimization": True, "partition_activations": True}, "lightning"),
    ({"contiguous_memory_optimization": True, "partition_activations": True, "number_checkpoints": 2}, "lightning"),
    ({"partition_activations": True}, "lightning"),
    ({"contiguous_memory_optimization": True}, "deepspeed"),
    ({"contiguous_memory_optimization": True, "partition_activations": True}, "deepspeed"),
    ({"contiguous_memory_optimization": True, "partition_activations": True, "number_checkpoints": 2}, "deepspeed"),
    ({"contiguous_memory_optimization": False}, "deepspeed"),
])
def test_activation_checkpointing_against_deepspeed(worker, section, target):
    config = {"train_batch_size": 1, "activation_checkpointing": section}
    real = worker.run(kind="checkpointing", config=config, how=target)
    agree("checkpointing", real, codes(config, target, failing=True))


@pytest.mark.parametrize("autotp,tp", [(4, 2), (4, 4), (4, 1), (2, 8), (0, 2), (1, 3)])
def test_tensor_parallel_against_deepspeed(worker, autotp, tp):
    config = {"train_batch_size": 1, "tensor_parallel": {"autotp_size": autotp, "tp": {"tp_size": tp}}}
    real = worker.run(kind="autotp", config=config)
    agree("autotp", real, codes(config, "deepspeed", failing=True))


# ---------------------------------------------------------------------------------------------
# Oracle 2: the real constructors, in-process
# ---------------------------------------------------------------------------------------------

def _param():
    return [torch.nn.Parameter(torch.zeros(2, 2))]


def _param_findings(config, target="deepspeed"):
    return {f.code for f in findings(config, target) if f.fails_in == INITIALIZE and f.code == "DS501"}


STRANGERS = ["foo", "adam_w_mode", "torch_adam", "params", "bias_correction", "momentum", "betas", "amsgrad",
             "eps_inside_sqrt", "warmup_steps", "optimizer", "last_epoch", "gamma"]


def _some_keys(data, own, *, stranger_odds=3):
    """A few of the constructor's own keys, and now and then one it does not take."""
    keys = data.draw(st.lists(st.sampled_from(sorted(own)), max_size=3, unique=True)) if own else []
    if data.draw(st.integers(0, stranger_odds)) == 0:
        keys.append(data.draw(st.sampled_from([k for k in STRANGERS if k not in own])))
    return keys


@settings(max_examples=CTOR_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(name=st.sampled_from(sorted(n for n in init.TORCH_OPTIMIZERS if n.lower() not in init.DEEPSPEED_OPTIMIZERS)),
       data=st.data())
def test_torch_optimizer_params_against_constructors(name, data):
    """DS501 for a torch optimizer <=> torch.optim.<name>(params, **kwargs) raises TypeError.
    (Adam, AdamW, Adagrad and Muon take DeepSpeed's own path: next test.)"""
    signature = inspect.signature(getattr(torch.optim, name).__init__).parameters
    keys = _some_keys(data, init.TORCH_OPTIMIZERS[name])
    params = {k: signature[k].default if k in signature else 1e-3 for k in keys}  # own defaults are valid
    try:
        getattr(torch.optim, name)(_param(), **params)
        real = {"phase": None}
    except TypeError as error:
        real = {"phase": "initialize", "error": f"TypeError: {error}"}
    agree("torch optimizers", real, _param_findings({"optimizer": {"type": name, "params": params}}))


DS_PARAM_VALUES = {"lr": 1e-3, "betas": (0.9, 0.99), "eps": 1e-8, "weight_decay": 0.0, "amsgrad": True,
                   "adamw_mode": False, "adam_w_mode": False, "bias_correction": True, "set_grad_none": True,
                   "fp32_optimizer_states": True, "foreach": None, "lr_decay": 0.0, "momentum": 0.9,
                   "eps_inside_sqrt": False, "model_params": None, "torch_adam": True}


def _real_deepspeed_optimizer(kind, cpu, params):
    """engine._configure_basic_optimizer + get_optimizer_configuration for adam/adamw/adagrad/lion."""
    from deepspeed.ops.adagrad import DeepSpeedCPUAdagrad
    from deepspeed.ops.adam import DeepSpeedCPUAdam, FusedAdam
    from deepspeed.ops.lion import DeepSpeedCPULion
    kwargs = dict(params)
    if kind == "adagrad":
        return (DeepSpeedCPUAdagrad if cpu else torch.optim.Adagrad)(_param(), **kwargs)
    if kind == "lion":
        return DeepSpeedCPULion(_param(), **kwargs)
    adam_w_mode = kwargs.pop("adam_w_mode", True)
    adam_w = kind == "adamw" or adam_w_mode
    use_torch = kwargs.pop("torch_adam", False)
    fp32 = kwargs.pop("fp32_optimizer_states", None)
    if use_torch:
        foreach = kwargs.pop("foreach", None)
        return (torch.optim.AdamW if adam_w else torch.optim.Adam)(_param(), **kwargs, foreach=foreach)
    if cpu:
        return DeepSpeedCPUAdam(_param(), **kwargs, adamw_mode=adam_w,
                                fp32_optimizer_states=True if fp32 is None else fp32)
    return FusedAdam(_param(), **kwargs, adam_w_mode=adam_w)


@settings(max_examples=CTOR_EXAMPLES // 2, deadline=None, suppress_health_check=list(HealthCheck))
@given(kind=st.sampled_from(["adam", "adamw", "adagrad", "lion"]), device=st.sampled_from(["none", "cpu"]),
       data=st.data())
def test_deepspeed_optimizer_params_against_constructors(kind, device, data):
    """DS501 <=> the constructor DeepSpeed picks raises (TypeError, or RuntimeError for AMSGrad)."""
    assume(not (kind == "lion" and device == "none"))  # FusedLion: no CPU kernel
    own = {"adam": ("lr", "betas", "eps", "weight_decay", "bias_correction", "adam_w_mode", "torch_adam"),
           "adagrad": ("lr", "eps", "weight_decay", "lr_decay"), "lion": ("lr", "betas", "weight_decay")}
    keys = _some_keys(data, own.get(kind, own["adam"]), stranger_odds=2)
    keys += [k for k in ("amsgrad", "fp32_optimizer_states", "foreach", "adamw_mode", "set_grad_none", "model_params")
             if data.draw(st.integers(0, 9)) == 0]
    params = {k: DS_PARAM_VALUES.get(k, 1e-3) for k in keys}
    try:
        _real_deepspeed_optimizer(kind, device == "cpu", params)
        real = {"phase": None}
    except (TypeError, RuntimeError) as error:
        real = {"phase": "initialize", "error": f"{type(error).__name__}: {error}"}
    config = {"optimizer": {"type": kind, "params": params},
              Z: {"stage": 1, **({"offload_optimizer": {"device": device}} if device != "none" else {})}}
    agree("deepspeed optimizers", real, _param_findings(config))


def test_lamb_and_fused_lion_signatures():
    """No CPU kernels: bind() on the real signatures stands in for the call."""
    from deepspeed.ops.lamb import FusedLamb
    from deepspeed.ops.lion import FusedLion
    for kind, cls in (("lamb", FusedLamb), ("lion", FusedLion)):
        for key in ("lr", "betas", "eps", "max_coeff", "set_grad_none", "adam_w_mode", "torch_adam", "foo"):
            try:
                inspect.signature(cls.__init__).bind(None, [], **{key: 1})
                binds = True
            except TypeError:
                binds = False
            config = {"optimizer": {"type": kind, "params": {key: 1}}, Z: {"stage": 0}}
            assert binds == (not _param_findings(config)), (kind, key)
    assert _param_findings({"optimizer": {"type": "lamb", "params": {"amsgrad": True}}})


# Valid values for DeepSpeed's schedulers, and the wrong ones a config can hold.
SCHED_GOOD = {"warmup_min_lr": 0.0, "warmup_max_lr": 1e-3, "warmup_num_steps": 10, "warmup_type": "linear",
              "total_num_steps": 100, "warmup_min_ratio": 0.0, "cos_min_ratio": 1e-4, "cycle_min_lr": 1e-4,
              "cycle_max_lr": 1e-3, "decay_lr_rate": 0.0, "cycle_first_step_size": 10, "cycle_second_step_size": 5,
              "cycle_first_stair_count": 0, "cycle_second_stair_count": 0, "decay_step_size": 0,
              "cycle_momentum": True, "cycle_min_mom": 0.8, "cycle_max_mom": 0.9, "decay_mom_rate": 0.0,
              "lr_range_test_min_lr": 1e-4, "lr_range_test_step_size": 10, "lr_range_test_step_rate": 1.0,
              "lr_range_test_staircase": False, "last_batch_iteration": -1}
SCHED_BAD = st.one_of(st.integers(-2, 50), st.floats(-1, 100, allow_nan=False), st.booleans(), st.none(),
                      st.sampled_from(["10", "x", "log", "linear", "cos", [1e-3], {"a": 1}]))


@settings(max_examples=CTOR_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(name=st.sampled_from(sorted(init.DS_SCHEDULERS)), optimizer=st.sampled_from(["SGD", "Adam"]), data=st.data())
def test_deepspeed_schedulers_against_constructors(name, optimizer, data):
    """DS506 <=> deepspeed.runtime.lr_schedules.<name>(optimizer, **params) raises. Values are
    valid, or (one in three) anything JSON can hold."""
    from deepspeed.runtime import lr_schedules
    required, optional = init.DS_SCHEDULERS[name]
    keys = [k for k in required if data.draw(st.integers(0, 7))] + _some_keys(data, optional, stranger_odds=5)
    params = {k: data.draw(SCHED_BAD) if data.draw(st.integers(0, 2)) == 0 else SCHED_GOOD.get(k, 1)
              for k in dict.fromkeys(keys)}
    torch_optimizer = torch.optim.SGD(_param(), lr=0.1) if optimizer == "SGD" else torch.optim.Adam(_param())
    try:
        getattr(lr_schedules, name)(torch_optimizer, **params)
        real = {"phase": None}
    except Exception as error:
        real = {"phase": "initialize", "error": f"{type(error).__name__}: {error}", "files": ["lr_schedules.py"]}
    config = {"optimizer": {"type": optimizer, "params": {"torch_adam": True} if optimizer == "Adam" else {}},
              "scheduler": {"type": name, "params": params}}
    mine = {f.code for f in findings(config) if f.fails_in == INITIALIZE and f.code in ("DS505", "DS506")}
    agree("deepspeed schedulers", real, mine)


TORCH_SCHED_GOOD = {"milestones": [2, 4], "T_0": 10, "T_max": 10, "step_size": 2, "total_iters": 5, "total_steps": 10,
                    "epochs": 2, "steps_per_epoch": 5, "threshold_mode": "rel", "anneal_strategy": "cos",
                    "scale_mode": "cycle", "three_phase": False, "cycle_momentum": False, "last_epoch": -1,
                    "T_mult": 1, "patience": 3, "cooldown": 0, "step_size_up": 5, "step_size_down": 5, "power": 1.0,
                    "factor": 0.5, "start_factor": 0.5, "end_factor": 1.0, "gamma": 0.9, "pct_start": 0.3,
                    "base_lr": 0.01, "max_lr": 0.1, "eta_min": 0.0, "min_lr": 0.0, "eps": 1e-8, "threshold": 1e-4,
                    "base_momentum": 0.85, "max_momentum": 0.95, "div_factor": 25.0, "final_div_factor": 1e4}


@settings(max_examples=CTOR_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(name=st.sampled_from(sorted(set(init.TORCH_SCHEDULERS) - set(init.NEEDS_PYTHON_OBJECTS))), data=st.data())
def test_torch_schedulers_against_constructors(name, data):
    """DS506 <=> torch.optim.lr_scheduler.<name>(torch optimizer, **params) raises TypeError / the
    OneCycleLR step-count ValueError (the only torch value check dsconfig models)."""
    required, optional = init.TORCH_SCHEDULERS[name]
    keys = [k for k in required if data.draw(st.integers(0, 7))]
    keys += _some_keys(data, [k for k in optional if k != "scale_fn"], stranger_odds=4)
    mode = {"ReduceLROnPlateau": "min", "CyclicLR": "triangular"}.get(name)
    params = {k: mode if k == "mode" else TORCH_SCHED_GOOD.get(k, 0.01) for k in dict.fromkeys(keys)}
    torch_optimizer = torch.optim.SGD(_param(), lr=0.1, momentum=0.9)
    try:
        getattr(torch.optim.lr_scheduler, name)(torch_optimizer, **params)
        real = {"phase": None}
    except (TypeError, ValueError) as error:
        if isinstance(error, ValueError) and "total_steps OR" not in str(error):
            pytest.fail(f"value problem in the test's own values: {error}")
        real = {"phase": "initialize", "error": f"{type(error).__name__}: {error}", "files": ["lr_scheduler.py"]}
    config = {"optimizer": {"type": "SGD"}, "scheduler": {"type": name, "params": params}}
    mine = {f.code for f in findings(config) if f.fails_in == INITIALIZE and f.code in ("DS505", "DS506")}
    agree("torch schedulers", real, mine)


def test_zero_optimizer_is_not_a_torch_optimizer():
    """Why DS505 fires for torch schedulers under ZeRO / fp16 / bf16: DeepSpeed's wrappers are not
    torch.optim.Optimizer subclasses, and torch's LRScheduler checks isinstance."""
    from deepspeed.runtime.bf16_optimizer import BF16_Optimizer
    from deepspeed.runtime.fp16.fused_optimizer import FP16_Optimizer
    from deepspeed.runtime.fp16.unfused_optimizer import FP16_UnfusedOptimizer
    from deepspeed.runtime.zero.stage3 import DeepSpeedZeroOptimizer_Stage3
    from deepspeed.runtime.zero.stage_1_and_2 import DeepSpeedZeroOptimizer
    for cls in (DeepSpeedZeroOptimizer, DeepSpeedZeroOptimizer_Stage3, FP16_Optimizer, FP16_UnfusedOptimizer,
                BF16_Optimizer):
        assert not issubclass(cls, torch.optim.Optimizer), cls
    source = inspect.getsource(torch.optim.lr_scheduler.LRScheduler.__init__)
    assert "is not an Optimizer" in source


def test_accelerate_swap_changes_the_class_and_keeps_the_param_groups():
    """DS308's trap, on the real accelerate function prepare() calls: SGD becomes Adam, a torch Adam becomes CPU
    Adam with L2 decay; the param groups (betas, eps included) carry over, so AdamW (the Trainer's) loses nothing."""
    accelerate_deepspeed = pytest.importorskip("accelerate.utils.deepspeed")
    sgd = torch.optim.SGD(_param(), lr=0.5, momentum=0.9, weight_decay=0.1)
    swapped = accelerate_deepspeed.map_pytorch_optim_to_deepspeed(sgd)
    assert type(swapped).__name__ == "DeepSpeedCPUAdam"
    assert swapped.defaults["lr"] == 0.5 and swapped.defaults["weight_decay"] == 0.1
    assert "momentum" not in swapped.defaults and swapped.fp32_optimizer_states  # DS404's bf16-states case
    adam = accelerate_deepspeed.map_pytorch_optim_to_deepspeed(torch.optim.Adam(_param()))
    assert adam.adam_w_mode is False
    adamw = accelerate_deepspeed.map_pytorch_optim_to_deepspeed(torch.optim.AdamW(_param(), betas=(0.9, 0.95),
                                                                                  eps=1e-5))
    assert adamw.adam_w_mode is True
    assert adamw.param_groups[0]["betas"] == (0.9, 0.95) and adamw.param_groups[0]["eps"] == 1e-5  # what step reads


def test_print_agreement(capsys):
    """Run last (-s to see it): the agreement table of every oracle above."""
    with capsys.disabled():
        for name, (examples, failures, agreeing) in sorted(AGREEMENT.items()):
            if name.endswith("(skipped: needs a GPU)"):
                print(f"\n{name}: {examples}", end="")
            else:
                print(f"\n{name}: {agreeing}/{examples} agree (DeepSpeed raises in {failures})", end="")
        print()
