"""Accelerate config files, what gets launched: processes, machines, GPU ids and the rendezvous, and the
DeepSpeed settings the YAML hands to DeepSpeedPlugin (or disagrees with its ds_config.json on).

Checked by dsconfig.accelerate.check, dsconfig.accelerate.launch and dsconfig.pairs.
"""

from __future__ import annotations

from ..phases import INITIALIZE, LAUNCH, SILENT
from .rule import ACC_DEEPSPEED, ERROR, UNSAFE, WARNING, Autofix, Rule, acc

NUM_PROCESSES_MISSING = Rule(
    "ACC007", "num-processes-missing", WARNING,
    summary="No num_processes for a distributed launch: the launch command must give --num_processes",
    what="""Reports a distributed launch (any `distributed_type` but `NO`) without `num_processes`. A warning, not an
    error: a launch script may give `--num_processes` (Accelerate's own SLURM example does), and dsconfig does not
    see the command.""",
    why="""Without `--num_processes` on its command line, `accelerate launch` fails with `ValueError`: "You need to
    manually pass in `--num_processes` using this config yaml.\"""",
    fails_in=(LAUNCH,),
    failing=acc("""
        compute_environment: LOCAL_MACHINE
        distributed_type: MULTI_GPU
        mixed_precision: bf16
        """),
    passing=acc("""
        compute_environment: LOCAL_MACHINE
        distributed_type: MULTI_GPU
        num_processes: 8
        mixed_precision: bf16
        """),
    fix="Set `num_processes` to the total number of processes over all machines.",
)

NUM_PROCESSES_INDIVISIBLE = Rule(
    "ACC008", "num-processes-indivisible", ERROR,
    summary="num_processes is not a multiple of num_machines; Accelerate silently floors the per-node count",
    what="Reports `num_processes` that is not a multiple of `num_machines`.",
    why="""Accelerate starts `num_processes // num_machines` processes per machine without a warning: 16 processes
    on 3 machines run as 3 × 5 = 15, and every batch size computed for 16 is off.""",
    fails_in=(SILENT,),
    failing=acc("""
        compute_environment: LOCAL_MACHINE
        distributed_type: MULTI_GPU
        num_machines: 3
        num_processes: 16
        main_process_ip: 10.0.0.1
        """),
    passing=acc("""
        compute_environment: LOCAL_MACHINE
        distributed_type: MULTI_GPU
        num_machines: 3
        num_processes: 24
        main_process_ip: 10.0.0.1
        """),
    fix="Set `num_processes` to GPUs per machine × `num_machines`.",
)

NUM_PROCESSES_PER_NODE = Rule(
    "ACC009", "num-processes-per-node", WARNING,
    summary="num_processes looks like a per-node count; it is the total",
    what="""Reports `num_processes` that looks like a per-machine count: smaller than `num_machines`, or, with
    `--gpus` and `--nodes`, equal to the GPUs of one machine.""",
    why="""`num_processes` is the total over all machines. 8 on 2 machines of 8 GPUs starts 4 processes per
    machine: half the GPUs stay idle and the world size is 8, not 16, with no error.""",
    fails_in=(SILENT,),
    failing=acc("""
        compute_environment: LOCAL_MACHINE
        distributed_type: MULTI_GPU
        num_machines: 2
        num_processes: 8
        main_process_ip: 10.0.0.1
        """, gpus=8, nodes=2, world_sizes=(16,)),
    passing=acc("""
        compute_environment: LOCAL_MACHINE
        distributed_type: MULTI_GPU
        num_machines: 2
        num_processes: 16
        main_process_ip: 10.0.0.1
        """, gpus=8, nodes=2, world_sizes=(16,)),
    fix="Set `num_processes` to the total: GPUs per machine × `num_machines`.",
    autofix=Autofix(
        UNSAFE,
        "num_processes changes the world size Accelerate launches.",
    ),
)

GPU_IDS = Rule(
    "ACC010", "gpu-ids", ERROR,
    summary="gpu_ids do not cover the processes launched per machine",
    what="""Reports `gpu_ids` that cannot serve the processes started on one machine (fewer ids than processes per
    machine), or, with `--gpus`, more processes per machine than the machine has GPUs.""",
    why="""For MULTI_GPU `accelerate launch` fails: "Less than two GPU ids were configured and tried to run on
    multiple GPUs. Please ensure at least two are specified for `--gpu_ids`, or use `--gpu_ids='all'`." For the
    other types the processes without a GPU fail later, when they select their device.""",
    fails_in=(LAUNCH, INITIALIZE),
    failing=acc("""
        compute_environment: LOCAL_MACHINE
        distributed_type: MULTI_GPU
        num_processes: 4
        gpu_ids: '0'
        """),
    passing=acc("""
        compute_environment: LOCAL_MACHINE
        distributed_type: MULTI_GPU
        num_processes: 4
        gpu_ids: all
        """),
    fix="List one id per process on a machine, or write `all`.",
)

SINGLE_PROCESS_TYPE = Rule(
    "ACC011", "single-process-type", WARNING,
    summary="distributed_type NO with more than one process runs one",
    what="Reports `distributed_type: 'NO'` with `num_processes` above 1.",
    why="""`NO` means a single process: `accelerate launch` starts one and ignores `num_processes`, however many
    GPUs the machine has. A job meant for 8 GPUs trains on one, slowly, without an error; a single-GPU template that
    writes `num_processes: 8` runs as meant but tells its readers, and every tool that counts GPUs from the file,
    the wrong number.""",
    fails_in=(SILENT,),
    failing=acc("""
        compute_environment: LOCAL_MACHINE
        distributed_type: 'NO'
        num_processes: 8
        """),
    passing=acc("""
        compute_environment: LOCAL_MACHINE
        distributed_type: MULTI_GPU
        num_processes: 8
        """),
    fix="Use MULTI_GPU (or DEEPSPEED / FSDP) for several processes, or `num_processes: 1`.",
)

HOSTFILE_MISSING = Rule(
    "ACC012", "hostfile-missing", ERROR,
    summary="Multi-node DeepSpeed launch without a hostfile runs on one node",
    what="""Reports a multi-machine DeepSpeed launch with a launcher that needs a hostfile (`pdsh`, the default,
    and openmpi, mvapich, mpich, slurm, nossh) but no `deepspeed_hostfile`.""",
    why="""Accelerate runs `deepspeed --hostfile None`; DeepSpeed logs "Unable to find hostfile, will proceed with
    training with local resources only." and trains on the launching machine alone: a world size of 8 instead of
    16, and a batch arithmetic that no longer matches.""",
    fails_in=(SILENT,),
    failing=acc(ACC_DEEPSPEED + """
        num_machines: 2
        num_processes: 16
        main_process_ip: 10.0.0.1
        deepspeed_config:
          zero_stage: 2
        """),
    passing=acc(ACC_DEEPSPEED + """
        num_machines: 2
        num_processes: 16
        main_process_ip: 10.0.0.1
        deepspeed_config:
          zero_stage: 2
          deepspeed_multinode_launcher: standard
        """),
    fix="""Set `deepspeed_hostfile` to a hostfile listing the machines, or use `deepspeed_multinode_launcher:
    standard` and run `accelerate launch` on every machine with its own `machine_rank`.""",
)

MAIN_PROCESS_IP = Rule(
    "ACC013", "main-process-ip", ERROR,
    summary="Multi-node launch without main_process_ip, or machine_rank out of range",
    what="""Reports a multi-machine launch without `main_process_ip`, or a `machine_rank` outside 0 …
    `num_machines` − 1.""",
    why="""torchrun gets the rendezvous address `None` and the machines never meet: the rendezvous fails or hangs
    until it times out; a machine with a rank out of range never joins.""",
    fails_in=(LAUNCH, SILENT),
    failing=acc("""
        compute_environment: LOCAL_MACHINE
        distributed_type: MULTI_GPU
        num_machines: 2
        num_processes: 16
        """),
    passing=acc("""
        compute_environment: LOCAL_MACHINE
        distributed_type: MULTI_GPU
        num_machines: 2
        num_processes: 16
        main_process_ip: 10.0.0.1
        main_process_port: 29500
        """),
    fix="Set `main_process_ip` to the address of the rank-0 machine, and `machine_rank` per machine.",
)

NVME_IN_YAML = Rule(
    "ACC014", "nvme-in-yaml", ERROR,
    summary="NVMe offload set in the Accelerate YAML; the path never reaches DeepSpeed",
    what="Reports `offload_optimizer_device: nvme` or `offload_param_device: nvme` in the Accelerate YAML.",
    why="""`accelerate launch` never exports the `*_nvme_path` keys to the training processes, so DeepSpeed gets
    the path "none" and swaps to a folder named `none` in the working directory, usually not on the NVMe drive.""",
    fails_in=(SILENT,),
    failing=acc(ACC_DEEPSPEED + """
        num_processes: 8
        deepspeed_config:
          zero_stage: 3
          offload_param_device: nvme
          offload_param_nvme_path: /local_nvme
        """),
    passing=acc(ACC_DEEPSPEED + """
        num_processes: 8
        deepspeed_config:
          deepspeed_config_file: ds_config.json
          zero3_init_flag: true
        """, """
        {
          "train_micro_batch_size_per_gpu": "auto",
          "gradient_accumulation_steps": "auto",
          "zero_optimization": {
            "stage": 3,
            "offload_param": {"device": "nvme", "nvme_path": "/local_nvme"}
          }
        }
        """),
    fix="""Configure NVMe offload in a ds_config.json (`zero_optimization.offload_param.nvme_path`) and name it
    with `deepspeed_config_file`.""",
)

STAGE_IGNORED = Rule(
    "ACC015", "stage-ignored", WARNING,
    summary="Settings this ZeRO stage ignores (offload_param, zero3 flags below stage 3)",
    what="""Reports settings the ZeRO stage ignores: `offload_param_device` below stage 3, optimizer offload at
    stage 0, `zero3_init_flag` or `zero3_save_16bit_model` below stage 3 (also when the stage comes from the
    ds_config.json).""",
    why="""Nothing fails: below stage 3 the parameters stay on the GPU, and Accelerate warns "DeepSpeed Zero3 Init
    flag is only applicable for ZeRO Stage 3. Setting it to False." The memory you planned for is not freed.""",
    fails_in=(SILENT,),
    failing=acc(ACC_DEEPSPEED + """
        num_processes: 8
        deepspeed_config:
          zero_stage: 2
          offload_optimizer_device: cpu
          offload_param_device: cpu
        """),
    passing=acc(ACC_DEEPSPEED + """
        num_processes: 8
        deepspeed_config:
          zero_stage: 3
          offload_optimizer_device: cpu
          offload_param_device: cpu
        """),
    fix="Use stage 3 for these settings, or remove them.",
    autofix=Autofix(
        UNSAFE,
        "Which ZeRO-3-only flags matter depends on the stage, which may be the value to change instead.",
    ),
)

INLINE_GRADIENT_ACCUMULATION = Rule(
    "ACC017", "inline-gradient-accumulation", WARNING,
    summary="gradient_accumulation_steps in the YAML conflicts with the Trainer's value unless they agree",
    what="""Reports `deepspeed_config.gradient_accumulation_steps` in a YAML used to launch an HF Trainer script
    (`--target hf-trainer`).""",
    why="""The YAML value replaces the `"auto"` the Trainer would fill, and unless it equals the script's
    `--gradient_accumulation_steps` the Trainer fails at the start of `train()`: "Please correct the following
    DeepSpeed config values that mismatch TrainingArguments values: - ds gradient_accumulation_steps=4 vs hf
    gradient_accumulation_steps=1".""",
    fails_in=(INITIALIZE,),
    failing=acc(ACC_DEEPSPEED + """
        num_processes: 8
        deepspeed_config:
          zero_stage: 2
          gradient_accumulation_steps: 4
        """, target="hf-trainer"),
    passing=acc(ACC_DEEPSPEED + """
        num_processes: 8
        deepspeed_config:
          zero_stage: 2
        """, target="hf-trainer", note="Pass --gradient_accumulation_steps 4 to the training script."),
    fix="Remove the key and pass `--gradient_accumulation_steps` to the training script.",
)

PAIR_MISMATCH = Rule(
    "ACC018", "pair-mismatch", ERROR,
    summary="The Accelerate YAML and its ds_config.json disagree",
    what="""Reports where the Accelerate YAML and the ds_config.json it names (`deepspeed_config_file`) disagree:
    on mixed precision, or on a setting both give (`zero_stage`, the accumulation steps, the offload devices).
    Reported in both files, each pointing at the other.""",
    why="""For precision every process fails in the DeepSpeedPlugin: "`--mixed_precision` arg cannot be set to
    `fp16` when `bf16` is set in the DeepSpeed config file." For the other settings the JSON's concrete value wins
    (and the YAML key is refused anyway, ACC004).""",
    fails_in=(INITIALIZE, SILENT),
    failing=acc(ACC_DEEPSPEED + """
        num_processes: 8
        mixed_precision: fp16
        deepspeed_config:
          deepspeed_config_file: ds_config.json
        """, """
        {
          "train_micro_batch_size_per_gpu": "auto",
          "gradient_accumulation_steps": "auto",
          "bf16": {"enabled": true},
          "zero_optimization": {"stage": 3}
        }
        """),
    passing=acc(ACC_DEEPSPEED + """
        num_processes: 8
        deepspeed_config:
          deepspeed_config_file: ds_config.json
        """, """
        {
          "train_micro_batch_size_per_gpu": "auto",
          "gradient_accumulation_steps": "auto",
          "bf16": {"enabled": true},
          "zero_optimization": {"stage": 3}
        }
        """),
    fix="Choose the setting in the JSON only and remove it from the YAML.",
)

RULES = (
    NUM_PROCESSES_MISSING, NUM_PROCESSES_INDIVISIBLE, NUM_PROCESSES_PER_NODE, GPU_IDS, SINGLE_PROCESS_TYPE,
    HOSTFILE_MISSING, MAIN_PROCESS_IP, NVME_IN_YAML, STAGE_IGNORED, INLINE_GRADIENT_ACCUMULATION,
    PAIR_MISMATCH,
)
