"""`dsconfig lint .` reads the project's launches: each config a launch hands to training is checked at that
launch's world size, with its TrainingArguments flags when the entry script is a Trainer script.

The projects are written here in the shapes real ones have (LLaVA- and InternVL-style shell scripts with
variables and line continuations, a DeepSpeedExamples-style argparse script, a BELLE-style inference script
that parses its own dataclass); the expected failures are DeepSpeed's and the Trainer's own (the config
checks they come from are tested against the real programs elsewhere).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

# an HF Trainer script as LLaVA writes one (a TrainingArguments subclass, HfArgumentParser, a Trainer): the README
# example's own fixture
TRAINER_SCRIPT = (Path(__file__).resolve().parents[1] / "fixtures" / "scenarios" / "llava_launch" / "llava" / "train"
                  / "train.py").read_text(encoding="utf-8")

EXPLICIT = {"train_batch_size": 64, "train_micro_batch_size_per_gpu": 16, "gradient_accumulation_steps": 1,
            "bf16": {"enabled": True}, "zero_optimization": {"stage": 2}}
AUTO = {"train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto",
        "bf16": {"enabled": "auto"}, "fp16": {"enabled": "auto"}, "zero_optimization": {"stage": 3}}


def write(root: Path, files: dict) -> None:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(content, indent=2) + "\n" if isinstance(content, dict) else textwrap.dedent(content))


def lint(root: Path, *args: str) -> tuple[int, list[dict], str]:
    result = subprocess.run([sys.executable, "-m", "dsconfig", "lint", *args, "--format", "json"], cwd=root,
                            capture_output=True, text=True, env={**os.environ, "NO_COLOR": "1",
                                                                   "DSCONFIG_NO_CACHE": "1"})
    assert "Traceback" not in result.stderr, result.stderr
    return result.returncode, json.loads(result.stdout or "[]"), result.stderr


def llava_like(tmp_path: Path, launch: str, config: dict = EXPLICIT) -> Path:
    write(tmp_path, {
        "llava/__init__.py": "",
        "llava/train/__init__.py": "",
        "llava/train/train.py": TRAINER_SCRIPT,
        "llava/train/train_mem.py": "from llava.train.train import train\n\nif __name__ == '__main__':\n    train()\n",
        "scripts/zero2.json": config,
        "scripts/v1_5/finetune.sh": launch,
    })
    return tmp_path


FINETUNE = """\
    #!/bin/bash
    GPUS=${GPUS:-2}
    PER_DEVICE=16
    deepspeed --num_gpus $GPUS llava/train/train_mem.py \\
        --deepspeed ./scripts/zero2.json \\
        --model_name_or_path lmsys/vicuna-13b-v1.5 \\
        --bf16 True \\
        --per_device_train_batch_size ${PER_DEVICE} \\
        --gradient_accumulation_steps 1 \\
        --output_dir ./checkpoints/out
    """


def test_a_launch_decides_the_world_size_and_the_trainer_arguments(tmp_path):
    status, findings, _ = lint(llava_like(tmp_path, FINETUNE))
    assert status == 1
    by_code = {f["code"]: f for f in findings}
    assert set(by_code) == {"DS202", "DS703"}, findings
    batch = by_code["DS202"]
    assert batch["world_size"] == 2 and "64 != 16 * 1 * 2" in batch["message"]
    assert "(launched by ./scripts/v1_5/finetune.sh:4 on 2 GPUs)" in batch["message"]
    assert batch["related"] == [{"file": "./scripts/v1_5/finetune.sh", "line": 4, "column": 1,
                                 "message": "the launch"}]
    assert "world_size 2 × per_device_train_batch_size 16 × gradient_accumulation_steps 1 = 32" in \
        by_code["DS703"]["message"]


def test_the_same_config_right_for_its_launch_is_quiet(tmp_path):
    status, findings, _ = lint(llava_like(tmp_path, FINETUNE.replace("${GPUS:-2}", "${GPUS:-4}")))
    assert (status, findings) == (0, [])
    status, findings, _ = lint(llava_like(tmp_path, FINETUNE, AUTO))
    assert (status, findings) == (0, [])


def test_flags_decide_the_trainer_checks_when_the_machine_decides_the_world_size(tmp_path):
    launch = FINETUNE.replace("--num_gpus $GPUS ", "").replace("--bf16 True", "--fp16")
    status, findings, _ = lint(llava_like(tmp_path, launch))
    assert status == 1
    codes = sorted((f["code"], f["pointer"]) for f in findings)
    assert ("DS703", "/bf16/enabled") in codes
    assert all(f["code"] != "DS202" for f in findings)  # the batch needs the world size, which the machine has
    assert all("on an unknown number of GPUs" in f["message"] for f in findings if f["code"] == "DS703")


def test_flags_the_script_does_not_determine_leave_the_trainer_defaults_unused(tmp_path):
    launch = FINETUNE.replace("--gradient_accumulation_steps 1", "--gradient_accumulation_steps $1")
    config = dict(EXPLICIT, gradient_accumulation_steps=2, train_batch_size=64)  # 16 × 2 × 2: right at 2 GPUs
    status, findings, _ = lint(llava_like(tmp_path, launch, config))
    assert [f["code"] for f in findings if f["severity"] == "error"] == [], findings
    assert status == 0


def test_each_launch_of_a_shared_config_is_checked(tmp_path):
    project = llava_like(tmp_path, FINETUNE.replace("${GPUS:-2}", "4"))
    write(project, {"scripts/v1_5/small.sh": FINETUNE.replace("${GPUS:-2}", "1")})
    status, findings, _ = lint(project)
    assert status == 1
    launched = sorted((f["world_size"], f["related"][0]["file"]) for f in findings if f["code"] == "DS202")
    assert launched == [(1, "./scripts/v1_5/small.sh")]


def test_argparse_launch_with_deepspeed_config_is_plain_deepspeed(tmp_path):
    write(tmp_path, {
        "cifar/train.py": "import argparse, deepspeed\nparser = argparse.ArgumentParser()\n"
                          "parser = deepspeed.add_config_arguments(parser)\n",
        "cifar/ds_config.json": {"train_batch_size": 32, "train_micro_batch_size_per_gpu": 32,
                                 "fp16": {"enabled": True}},
        "cifar/run.sh": "export CUDA_VISIBLE_DEVICES=0,1\n"
                        "python -m torch.distributed.launch --nproc_per_node=2 train.py \\\n"
                        "  --deepspeed --deepspeed_config ds_config.json --per_device_train_batch_size 4\n",
    })
    status, findings, _ = lint(tmp_path)
    assert status == 1
    assert [(f["code"], f["world_size"]) for f in findings if f["severity"] == "error"] == [("DS202", 2)]
    assert all(f["code"] != "DS703" for f in findings)  # no Trainer: its flags are the script's own


def test_hf_argument_parser_alone_is_no_trainer(tmp_path):
    """BELLE's inference script parses its own dataclass with HfArgumentParser and calls deepspeed.initialize."""
    write(tmp_path, {
        "infer.py": "from dataclasses import dataclass\nfrom transformers import HfArgumentParser\nimport deepspeed\n"
                    "@dataclass\nclass Arguments:\n    deepspeed: str = None\n"
                    "args, = HfArgumentParser((Arguments,)).parse_args_into_dataclasses()\n",
        "configs/infer.json": {"fp16": {"enabled": True}, "zero_optimization": {"stage": 3},
                               "train_micro_batch_size_per_gpu": 1},
        "run.sh": 'devices="0,1,2,3,4,5,6,7"\ndeepspeed --include localhost:${devices} infer.py '
                  "--deepspeed configs/infer.json\n",
    })
    status, findings, _ = lint(tmp_path)
    assert status == 0 and all(f["severity"] != "error" for f in findings), findings


def test_a_named_launch_script_is_read_as_a_launch(tmp_path):
    write(tmp_path, {"train.py": TRAINER_SCRIPT, "ds.json": EXPLICIT,
                     "run.sh": "torchrun --nproc_per_node 8 train.py --deepspeed ds.json "
                               "--per_device_train_batch_size 16 --bf16\n"})
    status, findings, stderr = lint(tmp_path, "run.sh")
    assert status == 1
    assert {f["code"] for f in findings} == {"DS202", "DS703"}
    assert all(f["file"] == "ds.json" and f["world_size"] == 8 for f in findings)
    assert "hjson" not in stderr


@pytest.mark.parametrize("gpus, status", [("4", 0), ("2", 1)])
def test_lint_the_launch_command_about_to_run(tmp_path, gpus, status):
    write(tmp_path, {"train.py": TRAINER_SCRIPT, "ds.json": EXPLICIT})
    result = subprocess.run([sys.executable, "-m", "dsconfig", "lint", "--", "deepspeed", "--num_gpus", gpus,
                             "train.py", "--deepspeed", "ds.json", "--per_device_train_batch_size", "16", "--bf16"],
                            cwd=tmp_path, capture_output=True, text=True,
                            env={**os.environ, "NO_COLOR": "1", "DSCONFIG_NO_CACHE": "1"})
    assert result.returncode == status, result.stdout + result.stderr
    if status:
        assert "launched by the command line on 2 GPUs" in result.stdout


def test_lint_after_double_dash_refuses_what_is_no_launch(tmp_path):
    write(tmp_path, {"ds.json": EXPLICIT})
    for command in (["ls", "-la"], ["deepspeed", "train.py", "--deepspeed", "missing.json"]):
        result = subprocess.run([sys.executable, "-m", "dsconfig", "lint", "--", *command], cwd=tmp_path,
                                capture_output=True, text=True, env={**os.environ, "DSCONFIG_NO_CACHE": "1"})
        assert result.returncode == 2 and "Traceback" not in result.stderr
        assert result.stderr.strip().splitlines()[-1].startswith("Error: ")


def test_arguments_built_in_code_or_redefaulted_are_not_read_from_the_flags(tmp_path):
    """mPLUG-Owl builds TrainingArguments in code from its own argparse options; a subclass may give a field
    another default. Either way the Trainer's default is not the value: the Trainer checks say nothing."""
    own_parser = ("import argparse\nfrom transformers import TrainingArguments, Trainer\n"
                  "parser = argparse.ArgumentParser()\nparser.add_argument('--micro-batch-size', type=int)\n"
                  "args = parser.parse_args()\n"
                  "Trainer(args=TrainingArguments(per_device_train_batch_size=args.micro_batch_size))\n")
    redefaulted = TRAINER_SCRIPT.replace("    model_max_length: int = 2048",
                                         "    gradient_accumulation_steps: int = 2")
    config = dict(EXPLICIT, gradient_accumulation_steps=2, train_batch_size=64)  # 16 × 2 × 2 at 2 GPUs
    for script in (own_parser, redefaulted):
        write(tmp_path, {"train.py": script, "ds.json": config,
                         "run.sh": "deepspeed --num_gpus 2 train.py --deepspeed ds.json --bf16\n"})
        status, findings, _ = lint(tmp_path)
        assert (status, [f["code"] for f in findings]) == (0, []), script


def test_training_args_in_yaml_read_as_hf_argument_parser_reads_them(tmp_path):
    """--training-args takes a YAML file (TRL recipes, LLaMA-Factory argument files) as parse_yaml_file does."""
    from transformers import HfArgumentParser, TrainingArguments

    from dsconfig.deepspeed.trainer import load_training_args
    text = ("output_dir: out\nper_device_train_batch_size: 16\ngradient_accumulation_steps: 1\nfp16: false\n"
            "learning_rate: 2.0e-5\nnum_train_epochs: 3\n")  # bf16 true would fail on this CPU-only machine
    write(tmp_path, {"args.yaml": text, "args.json": yaml.safe_load(text), "ds.json": EXPLICIT})
    (real,) = HfArgumentParser(TrainingArguments).parse_yaml_file(str(tmp_path / "args.yaml"))
    ours = load_training_args(str(tmp_path / "args.yaml"))
    assert all(getattr(real, key) == value for key, value in ours.items())
    runs = [lint(tmp_path, "ds.json", "--training-args", name, "--world-size", "2", "--target", "hf-trainer")
            for name in ("args.yaml", "args.json")]
    assert runs[0] == runs[1] and runs[0][0] == 1
    assert {f["code"] for f in runs[0][1]} == {"DS202", "DS703"}  # 16 × 1 × 2 = 32, not 64; bf16 config, no --bf16


def test_llamafactory_cli_arguments_file_is_the_trainer_s_arguments(tmp_path):
    """LLaMA-Factory: `llamafactory-cli train args.yaml` runs its Trainer with the file's TrainingArguments, under
    torchrun with NNODES × NPROC_PER_NODE processes when FORCE_TORCHRUN is on (src/llamafactory/launcher.py)."""
    write(tmp_path, {
        "examples/deepspeed/ds_z2.json": {"train_batch_size": 16, "train_micro_batch_size_per_gpu": 2,
                                          "gradient_accumulation_steps": 4, "fp16": {"enabled": "auto"},
                                          "zero_optimization": {"stage": 2}},
        "examples/train_full/sft.yaml": "stage: sft\ndeepspeed: examples/deepspeed/ds_z2.json\n"
                                        "per_device_train_batch_size: 2\ngradient_accumulation_steps: 4\n"
                                        "bf16: true\noutput_dir: saves/sft\n",
        "scripts/two_gpus.sh": "CUDA_VISIBLE_DEVICES=0,1 llamafactory-cli train examples/train_full/sft.yaml\n",
    })
    status, findings, _ = lint(tmp_path)
    assert (status, findings) == (0, [])  # 2 × 4 × 2 = 16
    write(tmp_path, {"scripts/two_nodes.sh": "FORCE_TORCHRUN=1 NNODES=2 NPROC_PER_NODE=8 llamafactory-cli train "
                                             "examples/train_full/sft.yaml gradient_accumulation_steps=1\n"})
    status, findings, _ = lint(tmp_path)
    assert status == 1
    # 2 × 1 × 16 = 32 samples per step, the config says 16; and accumulation 1 (the override) against its 4
    assert sorted((f["code"], f["pointer"]) for f in findings) == [
        ("DS202", "/train_micro_batch_size_per_gpu"), ("DS703", "/gradient_accumulation_steps"),
        ("DS703", "/train_batch_size")]
    assert all("launched by ./scripts/two_nodes.sh:1 on 2 × 8 GPUs" in f["message"] for f in findings)


def test_a_training_config_a_launch_names_is_checked_at_its_world_size(tmp_path):
    """The issue's shape: 4 GPUs in the launch, a global batch of 30 in the training config it names."""
    write(tmp_path, {"configs/train.yaml": "model:\n  global_batch_size: 30\n  micro_batch_size: 1\n",
                     "scripts/train.sh": "torchrun --nproc_per_node 4 train.py --config configs/train.yaml\n"})
    status, findings, _ = lint(tmp_path)
    assert status == 1
    (finding,) = findings
    assert (finding["code"], finding["world_size"]) == ("DS208", 4)
    assert finding["message"].endswith("(launched by ./scripts/train.sh:1 on 4 GPUs)")
    write(tmp_path, {"scripts/train.sh": "torchrun --nproc_per_node 6 train.py --config configs/train.yaml\n"})
    assert lint(tmp_path)[:2] == (0, [])  # 30 = 5 × 1 × 6
    assert lint(tmp_path, "--world-size", "8")[:2] == (0, [])  # the launch, not --world-size, decides its world


def test_lint_double_dash_the_same_through_click(tmp_path):
    """`-o -` is left to click (dsconfig.options steps aside): the launch after -- reaches the run either way."""
    write(tmp_path, {"train.py": TRAINER_SCRIPT, "ds.json": EXPLICIT})
    command = ["deepspeed", "--num_gpus", "2", "train.py", "--deepspeed", "ds.json", "--per_device_train_batch_size",
               "16", "--bf16"]
    runs = [subprocess.run([sys.executable, "-m", "dsconfig", "lint", *extra, "--", *command], cwd=tmp_path,
                           capture_output=True, text=True, env={**os.environ, "DSCONFIG_NO_CACHE": "1"})
            for extra in ([], ["-o", "-"])]
    assert runs[0].returncode == runs[1].returncode == 1
    assert runs[0].stdout == runs[1].stdout and "launched by the command line on 2 GPUs" in runs[0].stdout


LIGHTNING_SCRIPT = """\
import yaml
import lightning as L

config = yaml.safe_load(open("configs/train.yaml"))
trainer = L.Trainer(devices={devices}, accelerator="gpu", strategy="ddp")
"""


@pytest.mark.parametrize("devices, world", [("4", 4), ("[0, 1, 2, 3]", 4), ('"auto"', None), ("-1", None),
                                             ("n_gpus", None)])
def test_a_lightning_trainer_s_devices_are_the_world_size_of_the_config_it_reads(tmp_path, devices, world):
    """The issue's own example: Trainer(devices=4) and a training YAML whose global batch is 30."""
    write(tmp_path, {"configs/train.yaml": "train:\n  global_batch_size: 30\n  batch_size: 1\n",
                     "train.py": LIGHTNING_SCRIPT.format(devices=devices)})
    status, findings, _ = lint(tmp_path)
    if world is None:  # what the machine or the run decides is not guessed
        assert (status, findings) == (0, [])
        return
    assert status == 1
    (finding,) = findings
    assert (finding["code"], finding["world_size"]) == ("DS208", world)
    assert finding["message"].endswith(f"(launched by ./train.py:5 on {world} devices)")
    assert finding["related"] == [{"file": "./train.py", "line": 5, "column": 11, "message": "the launch"}]


def test_hydra_s_config_is_the_one_a_lightning_script_reads(tmp_path):
    write(tmp_path, {"conf/train.yaml": "data:\n  global_batch_size: 30\n",
                     "train.py": "import hydra\nimport pytorch_lightning as pl\n\n"
                                 "@hydra.main(config_path='conf', config_name='train', version_base=None)\n"
                                 "def main(cfg):\n    pl.Trainer(devices=8, num_nodes=2).fit(None)\n"})
    status, findings, _ = lint(tmp_path)
    assert [(f["code"], f["world_size"]) for f in findings] == [("DS208", 16)]
    assert findings[0]["message"].endswith("(launched by ./train.py:6 on 2 × 8 GPUs)")


def test_the_readme_example_reproduces():
    """README's launch example, run on its fixture (tests/fixtures/scenarios/llava_launch), line for line."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    command = "$ cd tests/fixtures/scenarios && dsconfig lint llava_launch\n"
    shown = readme.split(command, 1)[1].split("```", 1)[0]
    scenarios = Path(__file__).resolve().parents[1] / "fixtures" / "scenarios"
    result = subprocess.run([sys.executable, "-m", "dsconfig", "lint", "llava_launch"], cwd=scenarios,
                            capture_output=True, text=True, env={**os.environ, "NO_COLOR": "1",
                                                                   "DSCONFIG_NO_CACHE": "1"})
    assert result.returncode == 1 and result.stdout == shown
