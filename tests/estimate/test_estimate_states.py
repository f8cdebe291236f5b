"""Model states against DeepSpeed's own estimators, to the byte.

DeepSpeed's `estimate_zero{2,3}_model_states_mem_needs_all_cold` print a table for a parameter
count; they compute each row with `estimate_zero{2,3}_model_states_mem_needs`. The tests call the
real `_all_cold` functions with a recorder around that inner function (the rows they print are
compared too), so every (offload, zero_init) row DeepSpeed shows is checked against
`memory.model_states` over a grid of parameter counts, largest layers, GPUs per node and nodes.
Stages 0 and 1 have no DeepSpeed estimator; they are checked against the autotuner's model.
"""

from __future__ import annotations

import itertools
import logging
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsconfig.estimate import memory
from dsconfig.estimate.shapes import ModelShape

stage_1_and_2 = pytest.importorskip("deepspeed.runtime.zero.stage_1_and_2")
stage3 = pytest.importorskip("deepspeed.runtime.zero.stage3")
logging.getLogger("DeepSpeed").setLevel(logging.ERROR)

PARAMS = [1, 7, 999, 124_439_808, 1_235_814_400, 6_738_415_616, 46_702_792_704, 70_553_706_496,
          176_247_271_424, 405_853_388_800, 1_000_000_000_003]
LARGEST = [1, 4_096, 131_072_000, 2_101_346_304]
GPUS = [1, 2, 3, 8, 16]
NODES = [1, 2, 3, 8, 64]
GRID = list(itertools.product(PARAMS, LARGEST, GPUS, NODES))


def _shape(total: int, largest: int) -> ModelShape:
    return ModelShape(family="generic", layers=0, hidden=4096, heads=32, kv_heads=32, head_dim=128,
                      intermediate=11008, vocab=32000, parameters=total, largest_layer_params=largest)


def _recorded(module, inner: str, cold: str, monkeypatch, capsys, **kwargs):
    """Call DeepSpeed's `_all_cold` printer; return [(inner kwargs, inner result)] and its printed rows."""
    calls = []
    original = getattr(module, inner)

    def recorder(**inner_kwargs):
        result = original(**inner_kwargs)
        calls.append((inner_kwargs, result))
        return result

    monkeypatch.setattr(module, inner, recorder)
    capsys.readouterr()
    getattr(module, cold)(**kwargs)
    printed = [line for line in capsys.readouterr().out.splitlines() if "GB |" in line]
    monkeypatch.setattr(module, inner, original)
    return calls, printed


def _row(cpu: int, gpu: int) -> str:
    return f" {cpu/2**30:7.2f}GB | {gpu/2**30:6.2f}GB"


def _check_zero2(total, gpus, nodes, monkeypatch, capsys):
    calls, printed = _recorded(stage_1_and_2, "estimate_zero2_model_states_mem_needs",
                               "estimate_zero2_model_states_mem_needs_all_cold", monkeypatch, capsys,
                               total_params=total, num_gpus_per_node=gpus, num_nodes=nodes)
    assert len(calls) == 2
    for (kwargs, (cpu, gpu)), line in zip(calls, printed):
        ours = memory.model_states(_shape(total, 1), precision="bf16", optimizer="adamw", stage=2, gpus=gpus,
                                   nodes=nodes, offload_optimizer="cpu" if kwargs["cpu_offload"] else "none")
        assert (ours.cpu_per_node, ours.gpu_total) == (cpu, gpu), kwargs
        assert line.startswith(_row(ours.cpu_per_node, ours.gpu_total))


def _check_zero3(total, largest, gpus, nodes, monkeypatch, capsys):
    calls, printed = _recorded(stage3, "estimate_zero3_model_states_mem_needs",
                               "estimate_zero3_model_states_mem_needs_all_cold", monkeypatch, capsys,
                               total_params=total, largest_layer_params=largest, num_gpus_per_node=gpus,
                               num_nodes=nodes)
    assert len(calls) == 6  # offload both / optimizer only / none, each with and without zero_init
    for (kwargs, (cpu, gpu, largest_memory)), line in zip(calls, printed):
        ours = memory.model_states(_shape(total, largest), precision="fp16", optimizer="adam", stage=3, gpus=gpus,
                                   nodes=nodes, offload_optimizer="cpu" if kwargs["cpu_offload"] else "none",
                                   offload_param="cpu" if kwargs["cpu_offload_params"] else "none",
                                   zero_init=kwargs["zero_init"])
        assert (ours.cpu_per_node, ours.gpu_total) == (cpu, gpu), kwargs
        assert line.startswith(_row(ours.cpu_per_node, ours.gpu_total))


@pytest.mark.parametrize("total,gpus,nodes", sorted({(p, g, n) for p, _, g, n in GRID}))
def test_zero2_equals_deepspeed(total, gpus, nodes, monkeypatch, capsys):
    _check_zero2(total, gpus, nodes, monkeypatch, capsys)


@pytest.mark.parametrize("total,largest,gpus,nodes", GRID)
def test_zero3_equals_deepspeed(total, largest, gpus, nodes, monkeypatch, capsys):
    _check_zero3(total, largest, gpus, nodes, monkeypatch, capsys)


@settings(max_examples=300, deadline=None)
@given(total=st.integers(1, 10 ** 13), largest=st.integers(1, 10 ** 10), gpus=st.integers(1, 64),
       nodes=st.integers(1, 512))
def test_random_points_equal_deepspeed(total, largest, gpus, nodes):
    # the inner functions directly (what _all_cold prints), at random sizes
    for offload in (True, False):
        cpu, gpu = stage_1_and_2.estimate_zero2_model_states_mem_needs(total, gpus, nodes, cpu_offload=offload)
        ours = memory.model_states(_shape(total, largest), precision="bf16", optimizer="adamw", stage=2, gpus=gpus,
                                   nodes=nodes, offload_optimizer="cpu" if offload else "none")
        assert (ours.cpu_per_node, ours.gpu_total) == (cpu, gpu)
    for offload, params, zero_init in ((True, True, True), (True, True, False), (True, False, True),
                                       (True, False, False), (False, False, True), (False, False, False)):
        cpu, gpu, _ = stage3.estimate_zero3_model_states_mem_needs(total, largest, gpus, nodes, cpu_offload=offload,
                                                                  cpu_offload_params=params, zero_init=zero_init)
        ours = memory.model_states(_shape(total, largest), precision="bf16", optimizer="adamw", stage=3, gpus=gpus,
                                   nodes=nodes, offload_optimizer="cpu" if offload else "none",
                                   offload_param="cpu" if params else "none", zero_init=zero_init)
        assert (ours.cpu_per_node, ours.gpu_total) == (cpu, gpu)


def test_breakdown_adds_up_and_names_the_states():
    shape = _shape(6_738_415_616, 131_072_000)
    s2 = memory.model_states(shape, precision="bf16", optimizer="adamw", stage=2, gpus=8, nodes=1)
    assert s2.parameters == 2 * shape.parameters  # 16-bit weights, replicated
    assert s2.gradients == int(6 * shape.parameters / 8)  # 16-bit + fp32 gradient partitions
    s3 = memory.model_states(shape, precision="bf16", optimizer="adamw", stage=3, gpus=8, nodes=1)
    assert s3.parameters == 2 * shape.largest_layer_params + int(2 * shape.parameters / 8)
    assert s3.gpu_total == 4 * shape.largest_layer_params + int(18 * shape.parameters / 8)


class _FakeAutotuner(SimpleNamespace):
    pass


@pytest.mark.parametrize("stage", [0, 1, 2])
@pytest.mark.parametrize("precision", ["fp16", "fp32"])
@pytest.mark.parametrize("total,gpus,nodes", [(124_439_808, 1, 1), (6_738_415_616, 8, 1), (70_553_706_496, 8, 4)])
def test_stages_0_to_2_match_the_autotuner(stage, precision, total, gpus, nodes):
    """DeepSpeed's only ZeRO-0/1 formula: the autotuner's (2 + 2 + 16 B/param for fp16 Adam).

    It divides in floats where we floor per term, so the two differ by less than a byte per term.
    """
    autotuner = pytest.importorskip("deepspeed.autotuning.autotuner")
    fake = _FakeAutotuner(get_model_num_params=lambda: total, exp_num_nodes=nodes, exp_num_gpus=gpus,
                          fp16_enabled=lambda: precision == "fp16", mp_size=lambda: 1)
    theirs = autotuner.Autotuner.get_instantiation_memory_required_per_gpu(fake, stage)
    ours = memory.model_states(_shape(total, 1), precision=precision, optimizer="adam", stage=stage, gpus=gpus,
                               nodes=nodes)
    assert abs(ours.gpu_total - theirs) < 3


@pytest.mark.parametrize("optimizer,bytes_per_param", [("adamw", 8), ("sgd", 4), ("lion", 4)])
def test_other_optimizers_change_only_the_states(optimizer, bytes_per_param):
    shape = _shape(1_000_000_000, 1)
    adam = memory.model_states(shape, precision="bf16", optimizer="adamw", stage=0, gpus=1, nodes=1)
    other = memory.model_states(shape, precision="bf16", optimizer=optimizer, stage=0, gpus=1, nodes=1)
    assert other.parameters == adam.parameters and other.gradients == adam.gradients
    assert other.optimizer_states == 4 * shape.parameters + bytes_per_param * shape.parameters


def test_8bit_adam_keeps_about_two_bytes():
    shape = _shape(1_000_000_000, 1)
    states = memory.optimizer_state_bytes("adamw-8bit", shape, shape.parameters)
    assert 2 * shape.parameters < states < 2.1 * shape.parameters


@pytest.mark.parametrize("stage", [1, 2, 3])
@pytest.mark.parametrize("precision", ["bf16", "fp32"])
@pytest.mark.parametrize("optimizer", memory.OPTIMIZERS)
def test_every_combination_is_sane(stage, precision, optimizer):
    shape = _shape(6_738_415_616, 131_072_000)
    plain = memory.model_states(shape, precision=precision, optimizer=optimizer, stage=stage, gpus=8, nodes=2)
    for opt_device, param_device in itertools.product(("none", "cpu", "nvme"), repeat=2):
        states = memory.model_states(shape, precision=precision, optimizer=optimizer, stage=stage, gpus=8,
                                     nodes=2, offload_optimizer=opt_device, offload_param=param_device)
        assert min(states.parameters, states.gradients, states.optimizer_states, states.cpu_per_node) >= 0
        assert states.gpu_total <= plain.gpu_total  # offloading never adds GPU memory
    lower = memory.model_states(shape, precision=precision, optimizer=optimizer, stage=stage - 1, gpus=8, nodes=2)
    assert plain.gpu_total <= lower.gpu_total  # each stage shards more
