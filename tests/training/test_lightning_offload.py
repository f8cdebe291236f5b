"""DS803 against Lightning 2.6.6 and DeepSpeed 0.19.8: the strategies that offload the optimizer are the ones
Lightning registers so, and the config each builds, given a torch optimizer, makes the real engine raise."""

from __future__ import annotations

import pytest

from dsconfig.training import scripts
from tests.deepspeed.test_initialize import Worker


def _offloading_strategies() -> dict[str, dict]:
    from lightning.pytorch.strategies import StrategyRegistry
    return {name: entry["init_params"] for name, entry in StrategyRegistry.items()
            if entry["init_params"].get("offload_optimizer")}


def test_the_offload_strategies_are_lightning_s():
    assert set(_offloading_strategies()) == scripts._OFFLOAD_STRATEGIES


@pytest.fixture(scope="module")
def worker():
    engine = Worker()
    yield engine
    engine.close()


@pytest.mark.parametrize("strategy", sorted(scripts._OFFLOAD_STRATEGIES))
def test_the_engine_refuses_a_torch_optimizer_under_each(worker, strategy):
    from lightning.pytorch.strategies import DeepSpeedStrategy
    # without the NVMe strategy's devices (no NVMe here): the engine's check, zero_use_cpu_optimizer, holds the
    # cpu and nvme devices alike (deepspeed/runtime/engine.py)
    params = {key: value for key, value in _offloading_strategies()[strategy].items()
              if key not in ("remote_device", "offload_params_device", "offload_optimizer_device")}
    config = DeepSpeedStrategy(**params).config  # the config Lightning hands to deepspeed.initialize
    config["train_micro_batch_size_per_gpu"] = 1
    real = worker.run(kind="engine", config=config, client=True, pipeline=False)
    assert real["phase"] == "initialize", real
    assert "ZeRO-Offload with a client provided optimizer" in real["error"]


SCRIPT = """\
import lightning as L
import torch
from lightning.pytorch.strategies import DeepSpeedStrategy


class Model(L.LightningModule):
    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-4)


trainer = L.Trainer(devices=4, strategy={strategy})
"""


@pytest.mark.parametrize("strategy, codes", [
    ('"deepspeed_stage_3_offload"', ["DS803"]),
    ("DeepSpeedStrategy(stage=2, offload_optimizer=True)", ["DS803"]),
    ("DeepSpeedStrategy(stage=2, offload_optimizer=True, config='ds.json')", []),  # its config may allow it
    ('"deepspeed_stage_2"', []),
    ("strategy_name", []),
])
def test_which_strategies_offload(tmp_path, strategy, codes):
    import json
    import subprocess
    import sys
    (tmp_path / "train.py").write_text(SCRIPT.format(strategy=strategy))
    result = subprocess.run([sys.executable, "-m", "dsconfig", "lint", "train.py", "--format", "json"],
                            cwd=tmp_path, capture_output=True, text=True)
    assert [f["code"] for f in json.loads(result.stdout)] == codes, result.stderr
