"""The planner: the issue's seed scenarios, the batch split, precision, host RAM, NVMe, and the reasons.

The whole-grid checks (never worse than needed, the real DeepSpeed/Transformers/Accelerate) are in
test_generate_grid.py; these are the individual rules, each against `dsconfig.estimate` directly.
"""

from __future__ import annotations

import dataclasses
import functools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsconfig.estimate import Hardware, TrainingSetup, catalog, estimate, gpus as gpu_catalog, shapes
from dsconfig.generate import planner
from dsconfig.generate.planner import NoFit, PlanError, Request, plan

GB = 10 ** 9


@functools.lru_cache(maxsize=None)
def model(name: str) -> shapes.ModelShape:
    return shapes.from_hf_config(catalog.CATALOG[name].config, name)


def gpu(name: str) -> dict:
    g = gpu_catalog.lookup(name)
    return {"gpu_memory": g.memory_bytes, "gpu_name": g.name, "bf16_supported": g.bf16}


def total(shape: shapes.ModelShape, **setup) -> int:
    return estimate(shape, TrainingSetup(**setup), Hardware()).per_gpu["total"]


# -- the seed scenarios ---------------------------------------------------------------------

def test_seed_two_96gb_gpus_reach_global_64_with_micro_32():
    """2 x 96 GB, a small model, global batch 64: micro 32 x accumulation 1 x 2 GPUs."""
    for shape in (model("gpt2"), shapes.from_params(125_000_000, name="125M")):
        result = plan(Request(model=shape, gpu_memory=96 * GB, gpus=2, global_batch=64))
        assert (result.micro_batch, result.accumulation, result.global_batch) == (32, 1, 64)
        assert result.micro_batch * result.accumulation * 2 * 1 == 64
        assert result.shape.name == "zero0" and not result.checkpointing
        assert result.exact and result.reasons["batch"] == "global batch 64 as asked"


def test_seed_model_that_ooms_at_micro_6_reaches_its_global_batch():
    """Llama-3.2-1B at micro batch 6 needs 65.7 GB on one GPU (no ZeRO, no checkpointing): more than a
    40 GB GPU. Asked for global batch 6, the plan reaches it with accumulation; asked for micro batch 6
    as well, with checkpointing and ZeRO (optimizer offload: on one GPU no stage shards anything)."""
    shape = model("llama-3.2-1b")
    budget = int(40 * GB * 0.9)
    assert total(shape, micro_batch=6) > 40 * GB  # the premise: it OOMs at micro batch 6
    by_accumulation = plan(Request(model=shape, gpu_memory=40 * GB, global_batch=6))
    by_checkpointing = plan(Request(model=shape, gpu_memory=40 * GB, global_batch=6, micro_batch=6))
    for result in (by_accumulation, by_checkpointing):
        assert result.global_batch == 6 == result.micro_batch * result.accumulation
        assert result.estimate.per_gpu["total"] <= budget
        assert result.checkpointing or result.accumulation > 1 or result.shape.stage > 0
    assert (by_accumulation.micro_batch, by_accumulation.accumulation) == (1, 6)
    assert by_accumulation.shape.name == "zero0" and not by_accumulation.checkpointing
    assert total(shape, micro_batch=2) > budget  # why micro 2 x 3 is not it
    assert by_checkpointing.checkpointing and by_checkpointing.shape.offloads
    assert by_checkpointing.accumulation == 1


MODELS = ("gpt2", "qwen2.5-0.5b", "llama-3.2-1b", "llama-3.1-8b", "llama-2-13b", "llama-3.1-70b")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(MODELS), gpus=st.sampled_from((1, 2, 3, 4, 8, 16)), nodes=st.sampled_from((1, 2, 3)),
       memory=st.sampled_from((16, 24, 40, 80, 96, 141)), global_batch=st.none() | st.integers(1, 600),
       micro=st.none() | st.integers(1, 12))
def test_seed_batchnorm_never_gets_a_micro_batch_below_2(name, gpus, nodes, memory, global_batch, micro):
    request = Request(model=model(name), gpu_memory=memory * GB, gpus=gpus, nodes=nodes, global_batch=global_batch,
                      micro_batch=micro, batchnorm=True)
    try:
        result = plan(request)
    except PlanError:
        assert micro == 1  # --micro-batch 1 with --batchnorm is refused
        return
    except NoFit as error:
        assert "micro batch" in error.reason
        return
    assert result.micro_batch >= 2
    assert result.micro_batch * result.accumulation * gpus * nodes == result.global_batch
    if global_batch is not None and result.global_batch != global_batch:
        assert not result.exact and global_batch not in result.nearest and result.global_batch in result.nearest


def test_batchnorm_odd_share_goes_to_the_nearest_even_one():
    result = plan(Request(model=model("gpt2"), gpu_memory=80 * GB, gpus=2, global_batch=2, batchnorm=True))
    assert (result.micro_batch, result.global_batch) == (2, 4) and not result.exact
    assert result.nearest == (4,)
    without = plan(Request(model=model("gpt2"), gpu_memory=80 * GB, gpus=2, global_batch=2))
    assert (without.micro_batch, without.global_batch) == (1, 2) and without.exact
    assert any("BatchNorm" in note for note in without.notes)


# -- the batch split ---------------------------------------------------------------------------------

def test_global_batch_not_a_multiple_of_the_gpus_offers_the_nearest():
    result = plan(Request(model=model("gpt2"), gpu_memory=80 * GB, gpus=4, global_batch=50))
    assert not result.exact
    assert result.nearest == (48, 52)
    # equally near: the one with the larger micro batch (52 = 13 x 1 x 4 beats 48 = 12 x 1 x 4)
    assert (result.global_batch, result.micro_batch, result.accumulation) == (52, 13, 1)
    assert "cannot be reached exactly" in result.reasons["batch"] and "48, 52" in result.reasons["batch"]


def test_equally_near_prefers_the_larger_micro_batch():
    # 8B on 2 x 96 GB fits micro 2 with checkpointing: 62 = 1 x 31 x 2, 64 = 2 x 16 x 2
    result = plan(Request(model=model("llama-3.1-8b"), gpu_memory=96 * GB, gpus=2, global_batch=63))
    assert result.nearest == (62, 64)
    assert (result.global_batch, result.micro_batch, result.accumulation) == (64, 2, 16)


def test_fixed_micro_batch_rounds_to_a_multiple_of_micro_times_gpus():
    result = plan(Request(model=model("gpt2"), gpu_memory=80 * GB, gpus=4, global_batch=60, micro_batch=8))
    assert result.micro_batch == 8 and result.nearest == (32, 64) and result.global_batch == 64
    exact = plan(Request(model=model("gpt2"), gpu_memory=80 * GB, gpus=4, global_batch=64, micro_batch=8))
    assert exact.exact and exact.accumulation == 2


def test_without_global_batch_a_language_model_steps_about_262k_tokens():
    small = plan(Request(model=model("gpt2"), gpu_memory=141 * GB, gpus=2))
    assert small.global_batch == 128 == small.micro_batch * small.accumulation * 2
    assert "128 sequences of 2048 tokens, 262,144 tokens per optimizer step" in small.reasons["batch"]
    assert plan(Request(model=model("gpt2"), gpu_memory=141 * GB, gpus=2, seq_len=8192)).global_batch == 32
    assert plan(Request(model=model("gpt2"), gpu_memory=141 * GB, gpus=3)).global_batch == 129  # a multiple of 3
    # images are no token sequences: the largest micro batch that fits, up to 32, no accumulation
    vit = plan(Request(model=model("vit-base-patch16-224"), gpu_memory=141 * GB, gpus=2))
    assert (vit.micro_batch, vit.accumulation, vit.global_batch) == (32, 1, 64)


def test_a_small_global_batch_for_a_language_model_is_said():
    tiny = plan(Request(model=model("llama-3.1-8b"), gpu_memory=96 * GB, gpus=2, global_batch=4))
    assert tiny.notes[0].startswith("global batch 4 × seq 2048 = 8,192 tokens per optimizer step is small")
    usual = plan(Request(model=model("llama-3.1-8b"), gpu_memory=96 * GB, gpus=2, global_batch=64))
    assert not any("is small" in note for note in usual.notes)


def test_micro_batch_is_the_largest_divisor_that_fits():
    result = plan(Request(model=model("llama-3.2-1b"), gpu_memory=80 * GB, gpus=1, global_batch=96))
    assert 96 % result.micro_batch == 0
    budget = int(80 * GB * 0.9)
    larger = [d for d in planner.divisors(96) if d > result.micro_batch]
    assert not planner.trial(result.request, result.shape, result.checkpointing, result.precision, larger[0]).fits
    assert result.estimate.per_gpu["total"] <= budget


def test_checkpointing_note_when_it_would_allow_a_much_larger_micro_batch():
    result = plan(Request(model=model("llama-3.1-70b"), gpu_memory=96 * GB, gpus=1, global_batch=256))
    assert result.shape.name == "zero3_offload_all" and not result.checkpointing and result.micro_batch == 1
    assert any("with --gradient-checkpointing the micro batch could be" in n and "PCIe" in n for n in result.notes)
    forced = plan(dataclasses.replace(result.request, checkpointing=True))
    assert forced.checkpointing and forced.micro_batch > 1


# -- the ladder, host RAM, NVMe -------------------------------------------------------------------------

def test_stage_order_small_to_large_models():
    names = [plan(Request(model=model(n), gpu_memory=80 * GB, gpus=8, global_batch=64)).shape.name
             for n in ("gpt2", "llama-3.1-8b", "llama-2-13b", "qwen2.5-32b", "llama-3.1-405b")]
    # 8 x 80 GB: Qwen2.5-32B's ZeRO-3 states alone are 18 B x 32.8B / 8 = 73.7 GB, over the 72 GB budget
    assert names == ["zero0", "zero1", "zero2", "zero3_offload_optimizer", "zero3_offload_all"]


def test_llamafactory_5977_8b_on_8x24gb_needs_offload():
    """LLaMA-Factory #5977: an 8B full fine-tune OOMs with ZeRO-3 on 8 x 24 GB and runs with ZeRO-3 offload."""
    result = plan(Request(model=model("llama-3.1-8b"), gpu_memory=24 * GB, gpus=8, global_batch=64))
    assert result.shape.stage == 3 and result.shape.offload_optimizer == "cpu"
    assert "ZeRO-3 needs" in result.reasons["offload"] or "ZeRO-3 needs" in result.reasons["zero"]


def test_host_ram_is_checked_and_nvme_is_the_last_resort():
    """LLaMA-Factory #6755: 32B with ZeRO-3 offload on 1 x 96 GB with 744 GB of RAM dies with a CPU OOM."""
    request = Request(model=model("qwen2.5-32b"), gpu_memory=96 * GB, gpus=1, cpu_memory=744 * GB, global_batch=16)
    with pytest.raises(NoFit) as raised:
        plan(request)
    reason = raised.value.reason
    assert "of CPU memory per node, more than --cpu-mem" in reason and "--nvme-path" in reason
    assert "\n" not in reason
    nvme = plan(dataclasses.replace(request, nvme_path="/local_nvme"))
    assert nvme.shape.name == "zero3_nvme"
    assert nvme.estimate.cpu_per_node <= 744 * GB
    assert "CPU memory per node" in nvme.reasons["offload"]
    unchecked = plan(dataclasses.replace(request, cpu_memory=None))  # ZeRO-2 + offload keeps 2 B/param = 65.5 GB
    assert unchecked.shape.name == "zero2_offload_optimizer"
    assert any("--cpu-mem" in note for note in unchecked.notes)


def test_nothing_fits_says_why_in_one_line():
    with pytest.raises(NoFit) as raised:
        plan(Request(model=model("llama-3.1-405b"), gpu_memory=16 * GB, gpus=1))
    reason = raised.value.reason
    assert reason.startswith("llama-3.1-405b does not fit 1 node × 1 GPU of 14.9 GiB: even ZeRO-3 + optimizer and "
                             "parameter offload to CPU with gradient checkpointing needs")
    assert "\n" not in reason and "--seq-len" in reason
    with pytest.raises(NoFit) as raised:
        plan(Request(model=model("llama-3.1-405b"), gpu_memory=80 * GB, gpus=8, cpu_memory=1000 * GB))
    assert "nodes (ZeRO-3 fits there)" in raised.value.reason


def test_template_forces_a_shape_and_says_when_it_does_not_fit():
    forced = plan(Request(model=model("gpt2"), gpu_memory=80 * GB, gpus=2, template="zero3_offload_all"))
    assert forced.shape.name == "zero3_offload_all" and "as asked" in forced.reasons["zero"]
    with pytest.raises(NoFit) as raised:
        plan(Request(model=model("llama-3.1-70b"), gpu_memory=80 * GB, gpus=2, template="zero2"))
    assert "no --template" in raised.value.reason
    with pytest.raises(PlanError):
        plan(Request(model=model("gpt2"), gpu_memory=80 * GB, template="zero3_nvme"))


# -- precision --------------------------------------------------------------------------------------------

def test_precision_bf16_where_the_gpu_has_it_else_fp16():
    shape = model("gpt2")
    assert plan(Request(model=shape, **gpu("H100-80GB"))).precision == "bf16"
    v100 = plan(Request(model=shape, **gpu("V100-32GB")))
    assert v100.precision == "fp16" and "loss scaling" in v100.reasons["precision"]
    unknown = plan(Request(model=shape, gpu_memory=32 * GB))
    assert unknown.precision == "bf16" and "--gpu NAME" in unknown.reasons["precision"]
    with pytest.raises(PlanError, match="no bf16"):
        plan(Request(model=shape, precision="bf16", **gpu("T4")))
    assert plan(Request(model=shape, precision="fp32", **gpu("T4"))).precision == "fp32"
    # fp16 and bf16 weigh the same; fp32 doubles the weights and drops the master copy
    assert plan(Request(model=shape, precision="fp16", **gpu("H100-80GB"))).estimate.per_gpu == \
        plan(Request(model=shape, **gpu("H100-80GB"))).estimate.per_gpu


# -- bad requests --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("changes, message", [
    ({"micro_batch": 1, "batchnorm": True}, "BatchNorm"),
    ({"headroom": 1.0}, "--headroom"),
    ({"target": "fsdp"}, "--target"),
    ({"precision": "int8"}, "--precision"),
    ({"template": "zero4"}, "--template"),
])
def test_bad_requests(changes, message):
    with pytest.raises(PlanError, match=message):
        plan(dataclasses.replace(Request(model=model("gpt2"), gpu_memory=80 * GB), **changes))


def test_reasons_name_the_rung_that_did_not_fit():
    result = plan(Request(model=model("llama-3.1-8b"), gpu_memory=96 * GB, gpus=2, global_batch=64))
    assert result.shape.name == "zero3" and result.checkpointing
    assert result.reasons["zero"].startswith("ZeRO-3: ZeRO-2 needs ")
    assert "even with checkpointing" in result.reasons["zero"]
    assert result.reasons["offload"] == "none: the model states fit on the GPUs"
    assert result.reasons["checkpointing"].startswith("on: without it ZeRO-3 needs ")
    first = plan(Request(model=model("gpt2"), gpu_memory=96 * GB, gpus=2))
    assert first.reasons["zero"] == "ZeRO-0 (plain data parallel): the least sharding, and it fits"
    assert first.reasons["checkpointing"] == "off: the activations fit without it"
