"""`generate --backend fsdp` over a grid, against the real Accelerate 1.15 on CPU.

The grid: ten catalog models (GPT-2 to Llama 3.1 70B, Mixtral, Gemma 2, T5, ViT) × GPUs per node
{1, 2, 8} × nodes {1, 2} × GPU memory {24, 40, 80 GB} × FSDP {1, 2} × targets {hf-trainer, accelerate},
global batch 64. Every plan's YAML, as `generate --stdout` prints it, goes through what `accelerate
launch` runs before it starts a process: `load_config_from_file`, `_validate_launch_command`,
`prepare_multi_gpu_env`; then `FullyShardedDataParallelPlugin()` is built from that environment,
as `Accelerator()` builds it in each process. No exception, no warning (Python warnings or
Accelerate's log, where the plugin reports obsolete or ignored keys), and the plugin holds what the
plan chose. `dsconfig lint` on the YAML reports no error and no warning.

The plugin looks up the current CUDA device when sync_module_states is on (FSDP1); this CPU machine
has none, so that lookup alone answers device 0.
"""

from __future__ import annotations

import functools
import logging
import os
import warnings
from collections import Counter

import pytest

from dsconfig.estimate import catalog, shapes
from dsconfig.generate import fsdp_render, planner
from dsconfig.generate.render import Paths
from tests.conftest import quiet_and_restored
from tests.helpers import lint

pytest.importorskip("accelerate")
pytest.importorskip("yaml")

MODELS = ("gpt2", "qwen2.5-0.5b", "llama-3.2-1b", "phi-3-mini", "gemma-2-9b", "llama-3.1-8b", "mixtral-8x7b",
          "t5-large", "vit-large-patch16-224", "llama-3.1-70b")
GPUS = (1, 2, 8)
NODES = (1, 2)
MEMORY_GB = (24, 40, 80)
VERSIONS = (1, 2)
TARGETS = ("hf-trainer", "accelerate")
GB = 10 ** 9


@functools.cache
def model(name: str) -> shapes.ModelShape:
    return shapes.from_hf_config(catalog.CATALOG[name].config, name)


@functools.cache
def grid() -> tuple[list, int]:
    """([(plan, yaml text)], how many points nothing fits)."""
    plans, no_fit = [], 0
    for name in MODELS:
        for gpus in GPUS:
            for nodes in NODES:
                for memory in MEMORY_GB:
                    for version in VERSIONS:
                        for target in TARGETS:
                            request = planner.Request(model=model(name), gpu_memory=memory * GB, gpus=gpus,
                                                      nodes=nodes, global_batch=64, target=target, backend="fsdp",
                                                      fsdp_version=version)
                            try:
                                plan = planner.plan(request)
                            except planner.NoFit:
                                no_fit += 1
                                continue
                            plans.append((plan, fsdp_render.files(plan, Paths())[0].text))
    return plans, no_fit


class _Records(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record):
        self.messages.append(record.getMessage())


def accelerate_reads(path: str, monkeypatch) -> tuple[dict, object, list[str], int]:
    """(the launcher's FSDP environment, the plugin built from it, warnings, the processes launched) for
    the YAML at `path`."""
    import torch
    from accelerate.commands.config.config_args import load_config_from_file
    from accelerate.commands.launch import (
        _validate_launch_command,
        launch_command_parser,
    )
    from accelerate.utils import dataclasses as accelerate_dataclasses
    from accelerate.utils import launch as env_builders

    records = _Records()
    logging.getLogger("accelerate").addHandler(records)
    try:
        with quiet_and_restored(), warnings.catch_warnings(record=True) as caught, monkeypatch.context() as patch:
            warnings.simplefilter("always")
            load_config_from_file(path)
            args = launch_command_parser().parse_args(["--config_file", path, "train.py"])
            args, _, _ = _validate_launch_command(args)
            env = env_builders.prepare_multi_gpu_env(args)
            launched = {k: v for k, v in env.items() if k.startswith(("FSDP_", "ACCELERATE_"))}
            for key in [k for k in os.environ if k.startswith(("FSDP_", "ACCELERATE_"))]:
                patch.delenv(key)
            for key, value in launched.items():
                patch.setenv(key, value)
            patch.setattr(accelerate_dataclasses, "is_cuda_available", lambda: True)
            patch.setattr(torch.cuda, "current_device", lambda: 0)
            plugin = accelerate_dataclasses.FullyShardedDataParallelPlugin()
    finally:
        logging.getLogger("accelerate").removeHandler(records)
    return launched, plugin, [str(w.message) for w in caught] + records.messages, args.num_processes


def check_plugin(plan, env: dict, plugin, processes: int) -> None:
    fsdp, settings = plan.shape.fsdp, fsdp_render.settings(plan)
    assert processes == plan.world_size  # num_processes is the total over the machines
    assert env["ACCELERATE_MIXED_PRECISION"] == settings.mixed_precision
    assert env["FSDP_VERSION"] == str(fsdp.version)
    assert plugin.fsdp_version == fsdp.version
    if fsdp.version == 1:
        assert plugin.sharding_strategy.name == fsdp.strategy
    else:
        assert plugin.reshard_after_forward is (fsdp.strategy == "FULL_SHARD")
    assert bool(plugin.cpu_offload.offload_params if fsdp.version == 1 else
                type(plugin.cpu_offload).__name__ == "CPUOffloadPolicy") == fsdp.offload_params
    assert plugin.activation_checkpointing == plan.checkpointing
    assert plugin.transformer_cls_names_to_wrap == [fsdp_render.layer_class(plan)]
    assert plugin.state_dict_type.name == "SHARDED_STATE_DICT"


def test_grid_is_accepted_by_accelerate(tmp_path, monkeypatch, capsys):
    plans, no_fit = grid()
    failures, texts = [], {}
    for plan, text in plans:
        texts.setdefault(text, plan)
    for index, (text, plan) in enumerate(texts.items()):
        path = tmp_path / f"config_{index}.yaml"
        path.write_text(text)
        try:
            env, plugin, said, processes = accelerate_reads(str(path), monkeypatch)
            assert not said, said
            check_plugin(plan, env, plugin, processes)
        except Exception as error:  # noqa: BLE001 - every failure is listed below
            failures.append(f"{plan.shape.label} {plan.request.model.name} {plan.request.gpus}x{plan.request.nodes}: "
                            f"{type(error).__name__}: {error}")
    with capsys.disabled():
        print(f"\ngenerate --backend fsdp: {len(texts) - len(failures)} of {len(texts)} distinct YAMLs "
              f"({len(plans)} plans, {no_fit} points where nothing fits) accepted by Accelerate")
    assert not failures, failures[:5]
    assert len(plans) > 300


def test_grid_uses_every_rung_and_both_versions():
    plans, _ = grid()
    rungs = Counter((plan.shape.fsdp.version, plan.shape.name) for plan, _ in plans)
    expected = {(1, "fsdp_no_shard"), (1, "fsdp_shard_grad_op"), (1, "fsdp_hybrid_shard"), (1, "fsdp_full_shard"),
                (1, "fsdp_full_shard_offload"), (2, "fsdp_shard_grad_op"), (2, "fsdp_full_shard"),
                (2, "fsdp_full_shard_offload")}
    assert set(rungs) == expected, rungs
    assert any(plan.checkpointing for plan, _ in plans) and not all(plan.checkpointing for plan, _ in plans)


def test_grid_lints_clean(tmp_path):
    plans, _ = grid()
    seen = set()
    for plan, text in plans:
        key = (text, plan.request.gpus, plan.request.nodes)
        if key in seen:
            continue
        seen.add(key)
        folder = tmp_path / str(len(seen))
        folder.mkdir()
        (folder / "accelerate_config.yaml").write_text(text)
        findings = lint(folder / "accelerate_config.yaml", target=plan.request.target, gpus=plan.request.gpus,
                        nodes=plan.request.nodes)
        bad = [f"{f.code} {f.message}" for f in findings if f.severity in ("error", "warning")]
        assert not bad, (plan.shape.label, plan.request.model.name, bad)


def test_least_sharding_that_fits():
    """Every rung below the chosen one does not fit, even with checkpointing, at micro batch 1."""
    plans, _ = grid()
    for plan, _ in plans[::7]:
        rungs = planner.ladder(plan.request)
        for rung in rungs[:rungs.index(plan.shape)]:
            tried = planner.trial(plan.request, rung, True, plan.precision, 1)
            assert not tried.fits, (plan.shape.label, rung.label, plan.request.model.name)
        assert planner.trial(plan.request, plan.shape, plan.checkpointing, plan.precision, plan.micro_batch).fits
