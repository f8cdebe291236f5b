"""Launch commands in the shapes real scripts write them, read into launcher, world size and script arguments.

Each expectation follows the launcher's own code (the differential tests run the real parsers and runners on
generated command lines); these pin the shapes around them: wrappers, SLURM jobs, modules, variables.
"""

from __future__ import annotations

from dsconfig.launch import project, slurm
from dsconfig.launch.shell import UNKNOWN


def only(text: str):
    launches = project.launches("run.sh", text)
    assert len(launches) == 1, launches
    return launches[0]


def test_wrappers_and_device_prefixes():
    launch = only("CUDA_VISIBLE_DEVICES=0,1,2 nohup deepspeed train.py --deepspeed ds.json > log 2>&1 &\n")
    assert (launch.launcher, launch.world_size, launch.script) == ("deepspeed", 3, "train.py")
    assert launch.args == ("--deepspeed", "ds.json")
    launch = only("env NCCL_DEBUG=INFO CUDA_VISIBLE_DEVICES=4,5 deepspeed train.py\n")
    assert launch.world_size == 2


def test_the_machine_decides_and_it_is_said():
    launch = only("deepspeed train.py --deepspeed ds.json\n")
    assert launch.world_size is None and "takes every GPU the machine shows" in launch.unknown_why
    launch = only("torchrun --nproc_per_node=gpu train.py\n")
    assert launch.world_size is None and "one process per device" in launch.unknown_why
    launch = only("torchrun --nnodes 1:4 --nproc_per_node 8 train.py\n")
    assert launch.world_size is None and "elastic" in launch.unknown_why
    launch = only("NPROC=$(nvidia-smi -L | wc -l)\ntorchrun --nproc_per_node $NPROC train.py\n")
    assert launch.world_size is None
    launch = only("accelerate launch train.py\n")
    assert launch.world_size is None and "default config" in launch.unknown_why


def test_modules_and_launcher_modules():
    launch = only("python3 -m torch.distributed.launch --nproc_per_node 4 --use_env train.py --fp16\n")
    assert (launch.launcher, launch.world_size, launch.args) == ("torch.distributed.launch", 4, ("--fp16",))
    launch = only("python -m deepspeed.launcher.runner --num_gpus 2 train.py\n")
    assert (launch.launcher, launch.world_size) == ("deepspeed", 2)
    launch = only("python -u -m trainer.main --deepspeed ds.json\n")
    assert (launch.launcher, launch.world_size, launch.script, launch.module) == ("python", 1, "trainer.main", True)
    assert project.launches("run.sh", "python -c 'import torch'\npython tools/prepare.sh\n") == []


def test_accelerate_launch_counts_processes_over_machines():
    launch = only("accelerate launch --num_machines 2 --num_processes 16 --config_file acc.yaml train.py --bf16\n")
    assert (launch.world_size, launch.nodes, launch.per_node, launch.size_words()) == (16, 2, 8, "2 × 8 GPUs")
    assert launch.options["config_file"] == "acc.yaml" and launch.args == ("--bf16",)


def test_variables_continuations_and_arithmetic():
    launch = only("NNODES=${NNODES:-2}\nGPUS_PER_NODE=8\nWORLD=$((NNODES*GPUS_PER_NODE))\n"
                  "DISTRIBUTED_ARGS=\"--nproc_per_node $GPUS_PER_NODE --nnodes $NNODES\"\n"
                  "torchrun $DISTRIBUTED_ARGS \\\n  finetune.py --per_device_train_batch_size $((WORLD / 4))\n")
    assert (launch.world_size, launch.nodes, launch.per_node) == (16, 2, 8)
    assert launch.args == ("--per_device_train_batch_size", "4")


def test_a_value_set_in_a_branch_is_not_guessed():
    launch = only("if [ \"$MODE\" = big ]; then GPUS=8; else GPUS=2; fi\ndeepspeed --num_gpus $GPUS train.py\n")
    assert launch.world_size is None


def test_slurm_job_variables_and_srun():
    text = ("#!/bin/bash\n#SBATCH --nodes=4\n#SBATCH --ntasks-per-node=1\n#SBATCH --gres=gpu:a100:8\n"
            "#SBATCH --time=48:00:00\n")
    assert slurm.variables(text) == {"SLURM_NNODES": "4", "SLURM_JOB_NUM_NODES": "4", "SLURM_NTASKS_PER_NODE": "1",
                                     "SLURM_NTASKS": "4", "SLURM_NPROCS": "4", "SLURM_GPUS_ON_NODE": "8",
                                     "SLURM_GPUS_PER_NODE": "8"}
    launch = only(text + "srun torchrun --nnodes $SLURM_NNODES --nproc_per_node $SLURM_GPUS_ON_NODE train.py\n")
    assert (launch.world_size, launch.size_words()) == (32, "4 × 8 GPUs")
    launch = only(text + "srun --ntasks-per-node 8 python train.py --deepspeed ds.json\n")
    assert (launch.launcher, launch.world_size) == ("srun", 32)  # srun runs on the job's 4 nodes
    launch = only("#SBATCH -N 2\n#SBATCH --ntasks-per-node=8\nsrun python train.py\n")
    assert (launch.launcher, launch.world_size, launch.size_words()) == ("srun", 16, "16 tasks")
    launch = only("#SBATCH --nodes=2-4\nsrun python train.py\n")
    assert launch.world_size is None


def test_unknown_words_among_the_options_make_every_option_uncertain():
    launch = only("deepspeed $LAUNCHER_ARGS train.py --deepspeed ds.json\n")
    assert launch.world_size is None and launch.script == "train.py"
    launch = only("torchrun --nproc_per_node=$1 $(dirname $0)/train.py\n")
    assert launch.world_size is None and launch.script is UNKNOWN


def test_a_job_submitter_hands_its_launch_over_after_double_dash():
    launch = only("python mason.py --cluster ai2/jupiter --budget ai2 -- accelerate launch --num_processes 8 "
                  "--num_machines 1 open_instruct/finetune.py --per_device_train_batch_size 1\n")
    assert (launch.launcher, launch.world_size, launch.script) == ("accelerate launch", 8, "open_instruct/finetune.py")


def test_an_unknown_value_after_an_option_is_that_option_s_value():
    launch = only("MASTER_PORT=$(shuf -n 1 -i 10000-65535)\n"
                  "deepspeed --num_gpus=4 --master_port $MASTER_PORT main.py --deepspeed deepspeed.json\n")
    assert (launch.world_size, launch.script) == (4, "main.py")


def test_makefile_recipes_with_make_variables():
    text = ("GPUS ?= 4\nCONFIG := configs/ds.json\nARGS = --deepspeed $(CONFIG) --bf16\n\n"
            "train: data\n\t@echo training\n\tdeepspeed --num_gpus $(GPUS) train.py $(ARGS) \\\n"
            "\t\t--per_device_train_batch_size $$PER_DEVICE\n\nsweep:\n\tdeepspeed --num_gpus $(shell nproc) train.py\n")
    first, second = project.launches("Makefile", text)
    assert (first.line, first.world_size, first.args[:3]) == (7, 4, ("--deepspeed", "configs/ds.json", "--bf16"))
    assert first.args[4] is not None and not isinstance(first.args[4], str)  # the shell's $PER_DEVICE: unknown
    assert (second.line, second.world_size) == (11, None)


def test_accelerate_launch_takes_the_processes_of_its_config_file(tmp_path):
    from dsconfig.boundary import Boundary

    (tmp_path / "zero3.yaml").write_text("distributed_type: DEEPSPEED\nnum_machines: 2\nnum_processes: 16\n")
    (tmp_path / "single.yaml").write_text("distributed_type: 'NO'\nnum_processes: 4\n")  # the simple launcher: one

    def world(command: str):
        (launch,) = project.launches(str(tmp_path / "run.sh"), command)
        launch = project.with_config_world(launch, Boundary.of([str(tmp_path)]), lambda path: open(path).read())
        return launch.world_size, launch.nodes, launch.per_node

    assert world("accelerate launch --config_file zero3.yaml train.py\n") == (16, 2, 8)
    assert world("accelerate launch --config_file single.yaml train.py\n") == (1, 1, 1)
    assert world("accelerate launch --config_file zero3.yaml --num_processes 4 train.py\n") == (4, 1, 4)
    assert world("accelerate launch --config_file zero3.yaml --multi_gpu train.py\n") == (None, None, None)
    assert world("accelerate launch --config_file missing.yaml train.py\n") == (None, None, None)
