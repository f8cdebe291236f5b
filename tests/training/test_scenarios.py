"""The five batch failures of issue 13, reconstructed as projects (tests/fixtures/scenarios/) and linted with
the commands their users would type. Each test also lints the corrected project: it must come out clean.

The memory side of scenarios 2 and 5 (does the 850M UNet fit at 32 per GPU on 2 × H20; what fits the 1.27B
UNet on one GPU) is `estimate`/`generate --model-factory`, tested end to end in
tests/generate/test_generate_factory.py (test_scenario_2_..., test_scenario_5_...)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from dsconfig.cli import cli
from dsconfig.training import epochs

SCENARIOS = Path(__file__).resolve().parent.parent / "fixtures" / "scenarios"


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A copy of a scenario's project as the working directory (no dsconfig configuration file)."""
    def copy(name: str) -> Path:
        shutil.copytree(SCENARIOS / name, tmp_path / name)
        monkeypatch.chdir(tmp_path / name)
        return tmp_path / name
    return copy


def lint(*args):
    result = CliRunner().invoke(cli, ["lint", "--no-config", *args])
    assert "Traceback" not in result.output
    return result


def found(*args):
    result = lint(*args, "--show-info", "--format", "json")  # the scenarios read infos too
    assert result.exit_code in (0, 1), result.output
    items = json.loads(result.stdout)
    for item in items:  # a walk of "." names ./train.py
        item["file"] = item["file"].removeprefix("./")
        for where in item.get("related", ()):
            where["file"] = where["file"].removeprefix("./")
    return result.exit_code, items


def codes(items):
    return [(item["file"], item["code"]) for item in items]


def fix_webui(root: Path) -> None:
    """Scenario 3's fix: the web UI writes an integer."""
    webui = root / "webui.py"
    webui.write_text(webui.read_text().replace("return psutil.virtual_memory().total / 1024 ** 3 / 2 // 2",
                                               "return int(psutil.virtual_memory().total / 1024 ** 3 / 2) // 2"))


# -- 1. Lightning shards a rank-aware bucket sampler again ----------------------------------------------------


@pytest.mark.parametrize("gpus", [(1, 2, 3), (2, 4, 8)])
def test_lightning_tts_epochs_shrink_with_the_square_of_the_gpus(project, gpus):
    project("tts_lightning")
    status, items = found(".", "--world-size", ",".join(map(str, gpus)), "--dataset-size", "1000")
    assert status == 1
    [sharded] = [item for item in items if item["code"] == "DS800"]
    assert (sharded["file"], sharded["line"]) == ("train.py", 21) and sharded["severity"] == "error"
    shrunk = ", ".join(f"{w} → {epochs.sharded_twice(1000, 8, w)}" for w in gpus)
    expected = ", ".join(str(epochs.epoch("lightning", 1000, 8, w).batches_per_device) for w in gpus)
    assert f"{shrunk} (expected {expected})" in sharded["message"]
    assert "use_distributed_sampler=False" in sharded["message"]
    evidence = {(where["file"], where["line"]) for where in sharded["related"]}
    assert ("tts/data_module.py", 17) in evidence and ("tts/samplers.py", 5) in evidence
    if gpus == (1, 2, 3):  # the numbers the user reported
        assert "1 → 125, 2 → 32, 3 → 14 (expected 125, 63, 42)" in sharded["message"]


def test_lightning_tts_fixed_is_clean(project):
    root = project("tts_lightning")
    train = root / "train.py"
    train.write_text(train.read_text().replace('strategy="ddp",', 'strategy="ddp",\n        use_distributed_sampler=False,'))
    fix_webui(root)
    status, items = found(".", "--world-size", "2", "--dataset-size", "1000", "--framework", "lightning")
    assert status == 0 and "DS800" not in [item["code"] for item in items]
    table = next(item for item in items if item["code"] == "DS705")
    assert "2 → 63 batches" in table["message"]  # 1000 / 2 GPUs / batch 8, once sharded


def test_lightning_with_a_plain_loader_is_clean(project):
    """The same project without its own sampler: Lightning's one sharding is the right one."""
    root = project("tts_lightning")
    module = root / "tts" / "data_module.py"
    module.write_text(module.read_text().replace(
        "batch_sampler=sampler, persistent_workers=True", "batch_size=self.hps.train.batch_size, shuffle=True"))
    fix_webui(root)
    status, items = found(".", "--world-size", "2,3", "--dataset-size", "1000")
    assert status == 0 and "DS800" not in [item["code"] for item in items]


# -- 3. the web UI writes batch_size: 7.0 -----------------------------------------------------------------------


@pytest.mark.parametrize("written,fixed", [("7.0", 7), ('"8"', 8), ("3.0", 3)])
def test_web_ui_float_batch_size_in_json_and_yaml(project, written, fixed):
    root = project("tts_lightning")
    (root / "configs" / "s2.json").write_text(f'{{\n  "train": {{\n    "batch_size": {written},\n    "epochs": 8\n  }}\n}}\n')
    base = root / "configs" / "base.yaml"
    base.write_text(base.read_text().replace("batch_size: 8", f"batch_size: {written}"))
    status, items = found("configs")
    assert status == 1
    assert [(item["file"], item["code"], item["pointer"], item["fix"]) for item in items] == [
        ("configs/base.yaml", "DS006", "/train/batch_size", str(fixed)),
        ("configs/s2.json", "DS006", "/train/batch_size", str(fixed))]
    assert lint("--fix", "configs").exit_code == 0
    assert json.loads((root / "configs" / "s2.json").read_text())["train"]["batch_size"] == fixed
    assert f"batch_size: {fixed}\n" in base.read_text()
    assert lint("configs").exit_code == 0


def test_web_ui_script_that_writes_the_float(project):
    root = project("tts_lightning")
    status, items = found("webui.py")
    assert status == 1 and [(item["code"], item["line"]) for item in items] == [("DS801", 20), ("DS801", 25)]
    fix_webui(root)
    assert found("webui.py") == (0, [])


# -- 4. JAX normalisation statistics with a hard-coded batch of 1 -----------------------------------------------


def test_jax_batch_of_one_over_two_devices(project):
    project("robot_policy")
    status, items = found(".", "--world-size", "2")
    assert status == 1 and codes(items) == [("scripts/compute_norm_stats.py", "DS802")]
    assert "use 2 (1 per device) or 4 (2 per device)" in items[0]["message"]
    assert found(".", "--world-size", "1") == (0, [])


def test_jax_batch_of_two_is_one_sample_per_device_with_batchnorm(project):
    root = project("robot_policy")
    script = root / "scripts" / "compute_norm_stats.py"
    script.write_text(script.read_text().replace("batch_size=1,", "batch_size=2,"))
    assert found(".", "--world-size", "2") == (0, [])  # divides, and no BatchNorm anywhere
    status, items = found(".", "--world-size", "2", "--batchnorm")
    assert status == 1 and codes(items) == [("scripts/compute_norm_stats.py", "DS802")]
    assert "use 4 (2 per device)" in items[0]["message"]
    # a BatchNorm layer somewhere in the project is not known to be the trained model's: no error without
    # --batchnorm (it may be a test's, a metric's or a demo's; BatchNorm2d on (1, C, H, W) trains)
    (root / "src" / "policy" / "model.py").write_text(
        "from torch import nn\n\n\nclass Head(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.norm = nn.BatchNorm1d(32)\n")
    assert found(".", "--world-size", "2")[0] == 0
    status, items = found(".", "--world-size", "2", "--batchnorm")
    assert status == 1 and codes(items) == [("scripts/compute_norm_stats.py", "DS802")]


def test_jax_batch_per_device_count_is_clean(project):
    root = project("robot_policy")
    script = root / "scripts" / "compute_norm_stats.py"
    script.write_text(script.read_text().replace("batch_size=1,", "batch_size=8,"))
    assert found(".", "--world-size", "1,2,4,8") == (0, [])


# -- 2. and 5. the lip-sync UNets: batch sizes in the project's own YAML -----------------------------------------


def test_lipsync_global_batch_on_two_h20(project):
    project("lipsync_accelerate")
    status, items = found("configs")
    assert status == 0
    [note] = [item for item in items if item["code"] == "DS209"]
    assert note["file"] == "configs/unet/stage1.yaml" and note["pointer"] == "/data/train_bs"
    assert "launched by accelerate_config.yaml): 64 on 2 GPUs (32 × 1 × 2)" in note["message"]
    # the YAML still launches 2 on a 3-GPU machine: its own launch, not a mistake to "correct" (no ACC009)
    status, items = found("configs", "--gpus", "3")
    assert [item["code"] for item in items if item["severity"] != "info"] == []


def test_lipsync_ddp_batch_and_steps(project):
    project("lipsync_ddp")
    status, items = found("configs", "--world-size", "1,2", "--dataset-size", "5000", "--framework", "torchrun")
    assert status == 0
    table = next(item for item in items if item["code"] == "DS705")
    assert "1 → 1000 batches; 2 → 500 batches" in table["message"]
