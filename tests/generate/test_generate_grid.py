"""`dsconfig generate` over the whole grid, against the real DeepSpeed, Transformers and Accelerate.

The grid: GPUs per node {1, 2, 4, 8, 16} × nodes {1, 2} × GPU memory {16, 24, 40, 80, 96, 141 GB}
× ten models from 124M to 70.6B parameters (GPT-2, Qwen2.5, Llama 3.2/3.1/2, Phi-3, Mixtral) × the
four targets, each asked for a global batch of 256 at sequence length 2048. For every point:

* the choice is never worse than needed: the rendered config, read back by `dsconfig estimate`'s own
  reader, fits the GPU (less the headroom); the next less sharded rung, rendered the same way, does
  not fit at the smallest micro batch even with checkpointing; checkpointing is on only when the
  chosen rung does not fit without it; and no larger micro batch that splits the global batch fits
  (`test_never_worse_than_needed`);
* DeepSpeed 0.19.8's `DeepSpeedConfig` accepts the config at the world size, with
  train_batch_size = micro × accumulation × GPUs × nodes exactly — after the target has done what it
  does to the file: the HF Trainer's "auto" fill (the real `HfTrainerDeepSpeedConfig` and
  `DeepSpeedPlugin` with TrainingArguments for the plan's micro batch, accumulation and precision,
  in the environment `accelerate launch` gives the processes), Accelerate's `DeepSpeedPlugin` in
  that environment, Lightning's `_format_batch_size_and_grad_accum_config` (replayed: Lightning is
  not installed), nothing for plain DeepSpeed (`test_deepspeed_accepts`);
* Accelerate's `load_config_from_file` loads the YAML and `accelerate launch` accepts it up to
  starting the processes, with num_processes the total (`test_accelerate_loads`);
* `dsconfig lint` on the generated files, paired, with the target, the world size and (HF Trainer)
  the TrainingArguments, reports no error and no warning (`test_lints_clean`).

The real-library calls are shared: identical configs at the same world size are checked once.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import functools
import json
import os
import tempfile
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import pytest

from dsconfig import targets
from dsconfig.estimate import Hardware, TrainingSetup, catalog, estimate, shapes
from dsconfig.estimate import gpus as gpu_catalog
from dsconfig.estimate.deepspeed_config import from_dict
from dsconfig.generate import planner, render
from tests.conftest import quiet_and_restored
from tests.helpers import lint

GPUS = (1, 2, 4, 8, 16)
NODES = (1, 2)
MEMORY_GB = (16, 24, 40, 80, 96, 141)
MODELS = ("gpt2", "gpt2-medium", "qwen2.5-0.5b", "llama-3.2-1b", "phi-3-mini", "llama-3.1-8b", "llama-2-13b",
          "qwen2.5-32b", "mixtral-8x7b", "llama-3.1-70b")
TARGETS = targets.NAMES
GLOBAL_BATCH = 256
GB = 10 ** 9


@functools.lru_cache(maxsize=None)
def model(name: str) -> shapes.ModelShape:
    return shapes.from_hf_config(catalog.CATALOG[name].config, name)


def request(name: str, gpus: int, nodes: int, memory_gb: int, target: str = "hf-trainer", **extra) -> planner.Request:
    return planner.Request(model=model(name), gpu_memory=memory_gb * GB, gpus=gpus, nodes=nodes,
                           global_batch=GLOBAL_BATCH, target=target, **extra)


POINTS = [(m, g, n, mem) for m in MODELS for g in GPUS for n in NODES for mem in MEMORY_GB]


@functools.lru_cache(maxsize=None)
def grid_plan(name: str, gpus: int, nodes: int, memory_gb: int, target: str = "hf-trainer"):
    """The Plan, or the NoFit, for one grid point and target."""
    try:
        return planner.plan(request(name, gpus, nodes, memory_gb, target))
    except planner.NoFit as error:
        return error


def all_plans():
    for point in POINTS:
        for target in TARGETS:
            yield point, target, grid_plan(*point, target)


def test_grid_size_and_every_point_planned():
    plans = list(all_plans())
    assert len(POINTS) == 5 * 2 * 6 * 10 == 600
    assert len(plans) == 2400
    fitted = [p for _, _, p in plans if isinstance(p, planner.Plan)]
    assert len(fitted) == len(plans)  # without --cpu-mem, ZeRO-3 + full offload fits every point
    shapes_used = Counter(p.shape.name for p in fitted)
    # the grid reaches every rung but NVMe (which needs --nvme-path)
    assert set(shapes_used) == {s.name for s in planner.LADDER} - {"zero3_nvme"}


# -- never worse than needed -----------------------------------------------------------------------

def read_back(plan: planner.Plan, shape: planner.Shape, checkpointing: bool, micro: int) -> TrainingSetup:
    """The TrainingSetup `dsconfig estimate ds_config.json` reads from `shape`'s template rendered for
    the plan's request (target deepspeed: concrete numbers), at `micro`."""
    other = dataclasses.replace(plan, shape=shape, buckets=planner.buckets_for(shape, plan.request.model),
                                request=dataclasses.replace(plan.request, target="deepspeed"),
                                micro_batch=micro)
    values, _ = from_dict(render.ds_config(other))
    values.setdefault("optimizer", plan.request.optimizer)  # the script's optimizer: not in the config
    buckets = values.pop("buckets", {})
    r = plan.request
    setup = TrainingSetup(seq_len=r.seq_len, attention=r.attention, gpus=r.gpus, nodes=r.nodes,
                          gradient_checkpointing=checkpointing, buckets=planner.Buckets(**buckets), **values)
    assert setup.zero_stage == shape.stage and setup.micro_batch == micro
    assert (setup.offload_optimizer, setup.offload_param) == (shape.offload_optimizer, shape.offload_param)
    return setup


def fits(plan: planner.Plan, shape: planner.Shape, checkpointing: bool, micro: int) -> bool:
    r = plan.request
    result = estimate(r.model, read_back(plan, shape, checkpointing, micro), Hardware())
    gpu_ok = result.per_gpu["total"] <= r.gpu_memory * (1 - r.headroom)
    return gpu_ok and (r.cpu_memory is None or result.cpu_per_node <= r.cpu_memory)


def check_never_worse(plan: planner.Plan) -> None:
    r = plan.request
    rungs = [s for s in planner.LADDER if s.offload_optimizer != "nvme" or r.nvme_path]
    index = rungs.index(plan.shape)
    low = r.micro_batch or r.min_micro  # the micro batch the rung must fit at
    # the chosen one fits, as written
    assert fits(plan, plan.shape, plan.checkpointing, plan.micro_batch)
    assert plan.estimate.per_gpu["total"] <= r.budget
    # every less sharded rung does not fit even at the smallest micro batch with checkpointing
    allowed = True if r.checkpointing is None else r.checkpointing
    for weaker in rungs[:index]:
        assert not fits(plan, weaker, allowed, low), (weaker.name, plan.shape.name)
    # checkpointing only when needed
    if plan.checkpointing and r.checkpointing is None:
        assert not fits(plan, plan.shape, False, low)
    # the micro batch is the largest that splits the global batch and fits
    share = plan.global_batch // r.world_size
    assert plan.micro_batch * plan.accumulation * r.world_size == plan.global_batch
    bigger = [d for d in planner.divisors(share) if d > plan.micro_batch]
    if r.global_batch is None:
        bigger = [plan.micro_batch + 1] if plan.micro_batch < planner.DEFAULT_MAX_MICRO else []
    if bigger and r.micro_batch is None:
        assert not fits(plan, plan.shape, plan.checkpointing, bigger[0])


def test_never_worse_than_needed():
    checked = Counter()
    for point in POINTS:
        result = grid_plan(*point)
        check_never_worse(result)
        checked[result.shape.name] += 1
    assert sum(checked.values()) == len(POINTS)


def test_plan_does_not_depend_on_target():
    """The target changes how the file is written, never the sizing."""
    for point in POINTS:
        first = grid_plan(*point, "hf-trainer")
        for target in TARGETS:
            other = grid_plan(*point, target)
            assert (other.shape, other.checkpointing, other.micro_batch, other.accumulation) == \
                (first.shape, first.checkpointing, first.micro_batch, first.accumulation)
            assert other.estimate.per_gpu == first.estimate.per_gpu


# -- the real libraries ---------------------------------------------------------------------------

def unique_files():
    """{(target, ds_config text, yaml text or None, gpus, nodes): plan} — one plan per distinct file set."""
    out = {}
    for _, target, plan in all_plans():
        texts = {f.name: f.text for f in render.files(plan)}
        key = (target, texts[render.DS_CONFIG], texts.get(render.ACCELERATE_CONFIG), plan.request.gpus,
               plan.request.nodes)
        out.setdefault(key, plan)
    return out


def write_folder(folder: Path, plan: planner.Plan) -> Path:
    folder.mkdir(parents=True)
    for file in render.files(plan):
        (folder / file.name).write_text(file.text, encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def files_on_disk(tmp_path_factory):
    """Every distinct generated file set of the grid written to its own folder: [(folder, plan)]."""
    root = tmp_path_factory.mktemp("generated")
    return [(write_folder(root / f"{i:04d}", plan), plan) for i, plan in enumerate(unique_files().values())]


def lint_findings(folder: Path, plan: planner.Plan):
    """`dsconfig lint` on the generated files, paired, with the target, world size and TrainingArguments."""
    r = plan.request
    args = render.trainer_arguments(plan) if r.target == "hf-trainer" else None
    paths = [folder / name for name in (render.ACCELERATE_CONFIG, render.DS_CONFIG) if (folder / name).exists()]
    return lint(*paths, target=r.target, world_sizes=(r.world_size,), gpus=r.gpus, nodes=r.nodes, training_args=args)


# Infos that may remain on generated files: DS205 (micro batch 1: a BatchNorm model would fail; the plan
# says so too) and DS704 (hf-trainer: what the Trainer fills each "auto" with, for these TrainingArguments).
ALLOWED_INFOS = {"DS205", "DS704"}


def check_lint(folder: Path, plan: planner.Plan) -> Counter:
    findings = lint_findings(folder, plan)
    bad = [f"{f.file}:{f.line}: {f.code} {f.message}" for f in findings
           if f.severity != "info" or f.code not in ALLOWED_INFOS]
    assert not bad, (plan.request.target, plan.shape.name, bad)
    return Counter(f.code for f in findings)


def test_lints_clean(files_on_disk):
    infos = Counter()
    for folder, plan in files_on_disk:
        infos.update(check_lint(folder, plan))
    assert set(infos) <= ALLOWED_INFOS, infos


# DeepSpeed ----------------------------------------------------------------------------------------


def deepspeed_config(config: dict, world: int):
    """DeepSpeedConfig(config) at `world` (rank 0), as deepspeed.initialize builds it."""
    from deepspeed.runtime.config import DeepSpeedConfig

    from tests import oracle
    with oracle.world(world), quiet_and_restored():
        return DeepSpeedConfig(copy.deepcopy(config))


def check_deepspeed(ds, plan: planner.Plan) -> None:
    r = plan.request
    assert ds.train_batch_size == plan.global_batch == plan.micro_batch * plan.accumulation * r.gpus * r.nodes
    assert ds.train_micro_batch_size_per_gpu == plan.micro_batch
    assert ds.gradient_accumulation_steps == plan.accumulation
    assert ds.zero_optimization_stage == plan.shape.stage
    assert ds.bfloat16_config.enabled == (plan.precision == "bf16")
    assert ds.float16_config.enabled == (plan.precision == "fp16")
    if plan.precision == "fp16":
        assert ds.float16_config.loss_scale == 0  # dynamic loss scaling
    zero = ds.zero_config
    assert _device(zero.offload_optimizer) == plan.shape.offload_optimizer
    assert _device(zero.offload_param) == plan.shape.offload_param
    if plan.shape.stage == 3:
        assert zero.reduce_bucket_size == plan.buckets.reduce_bucket_size
        assert zero.prefetch_bucket_size == plan.buckets.prefetch_bucket_size
        assert zero.param_persistence_threshold == plan.buckets.param_persistence_threshold


def _device(section) -> str:
    if section is None:
        return "none"
    return str(getattr(section.device, "value", section.device))


def lightning_view(config: dict, plan: planner.Plan) -> dict:
    """What Lightning's DeepSpeedStrategy._format_batch_size_and_grad_accum_config does to the config
    (lightning/pytorch/strategies/deepspeed.py) for Trainer(accumulate_grad_batches=A, gradient_clip_val=1.0)."""
    config = copy.deepcopy(config)
    if "gradient_accumulation_steps" in config:
        raise AssertionError("Do not set `gradient_accumulation_steps` in the DeepSpeed config as this will be set "
                             "with the `accumulate_grad_batches` argument passed via the Lightning Trainer.")
    config["gradient_accumulation_steps"] = plan.accumulation
    if "train_micro_batch_size_per_gpu" not in config:
        config["train_micro_batch_size_per_gpu"] = plan.micro_batch  # from the DataLoader
    if "gradient_clipping" not in config:
        config["gradient_clipping"] = 1.0
    return config


def launch_env(folder: Path, plan: planner.Plan) -> dict | None:
    """The environment `accelerate launch --config_file accelerate_config.yaml train.py` gives each process
    (None when there is no YAML). Raises what accelerate launch raises."""
    yaml_path = folder / render.ACCELERATE_CONFIG
    if not yaml_path.exists():
        return None
    from accelerate.commands.launch import _validate_launch_command, launch_command_parser
    from accelerate.utils import launch as env_builders
    with quiet_and_restored(), contextlib.chdir(folder):
        args = launch_command_parser().parse_args(["--config_file", str(yaml_path), "train.py"])
        args, defaults, mp_from_config = _validate_launch_command(args)
        assert args.use_deepspeed
        fields = list(defaults.deepspeed_config.keys()) if defaults else []
        if mp_from_config:
            fields.append("mixed_precision")
        args.deepspeed_fields_from_accelerate_config = ",".join(fields)
        args.main_process_port = 0 if plan.request.nodes == 1 else args.main_process_port
        try:
            _, env = env_builders.prepare_deepspeed_cmd_env(args)
        except ConnectionError:  # the multi-node port is busy on this machine: the env does not depend on it
            args.main_process_port = 0
            _, env = env_builders.prepare_deepspeed_cmd_env(args)
        world = int(args.num_processes) // int(args.num_machines) * int(args.num_machines)
        assert world == plan.request.world_size
        return dict(env)


class WorldArgs:
    """TrainingArguments whose world_size is the plan's (the only thing the DeepSpeed fill reads from
    the process group); built once per world size and precision, then given each plan's micro batch
    and accumulation, and the DeepSpeed part of TrainingArguments.__post_init__ run again."""

    cache: dict = {}

    @classmethod
    def get(cls, world: int, precision: str):
        from transformers import TrainingArguments

        key = (world, precision)
        if key not in cls.cache:
            class Args(TrainingArguments):
                @property
                def world_size(self):
                    return world

            flags = {precision: True} if precision in ("bf16", "fp16") else {}
            with quiet_and_restored():
                cls.cache[key] = Args(output_dir=tempfile.gettempdir(), use_cpu=True, report_to=[], **flags)
        return cls.cache[key]


def trainer_filled(folder: Path, plan: planner.Plan, env: dict | None) -> dict:
    """The config as the HF Trainer hands it to deepspeed.initialize, for TrainingArguments with the
    plan's per_device_train_batch_size, gradient_accumulation_steps, bf16/fp16, gradient_checkpointing:
    TrainingArguments.__post_init__ (HfTrainerDeepSpeedConfig + trainer_config_process + DeepSpeedPlugin),
    then Trainer → AcceleratorState → set_mixed_precision, then trainer_config_finalize with the model."""
    from accelerate.utils import DeepSpeedPlugin
    from transformers.integrations.deepspeed import HfTrainerDeepSpeedConfig

    args = WorldArgs.get(plan.request.world_size, plan.precision)
    for key, value in render.trainer_arguments(plan).items():
        setattr(args, key, value)
    with quiet_and_restored(env), contextlib.chdir(folder):  # --deepspeed ds_config.json, launched in the folder
        hf = HfTrainerDeepSpeedConfig(render.DS_CONFIG)
        hf.trainer_config_process(args)
        plugin = DeepSpeedPlugin(hf_ds_config=hf)
        plugin.set_mixed_precision(args.mixed_precision)
        model = SimpleNamespace(config=SimpleNamespace(hidden_size=plan.request.model.hidden))
        hf.trainer_config_finalize(args, model, 1000)
    return plugin.deepspeed_config


def accelerate_filled(folder: Path, plan: planner.Plan, env: dict) -> dict:
    """The config Accelerate's DeepSpeedPlugin builds in a process `accelerate launch` started, with the
    mixed precision the launcher exports; prepare() fills nothing (no "auto" for this target)."""
    from accelerate.utils import DeepSpeedPlugin

    with quiet_and_restored(env), contextlib.chdir(folder):
        plugin = DeepSpeedPlugin()
        plugin.set_mixed_precision(os.environ.get("ACCELERATE_MIXED_PRECISION", "no"))
    config = plugin.deepspeed_config
    assert "auto" not in json.dumps(config)
    return config


def target_view(folder: Path, plan: planner.Plan) -> dict:
    """The config as the target hands it to DeepSpeed."""
    r = plan.request
    config = json.loads((folder / render.DS_CONFIG).read_text())
    if r.target == "hf-trainer":
        return trainer_filled(folder, plan, launch_env(folder, plan))
    if r.target == "accelerate":
        return accelerate_filled(folder, plan, launch_env(folder, plan))
    if r.target == "lightning":
        return lightning_view(config, plan)
    assert "auto" not in json.dumps(config)
    return config


class DeepSpeedOracle:
    """DeepSpeedConfig once per distinct (config, world size)."""

    def __init__(self):
        pytest.importorskip("deepspeed")
        pytest.importorskip("transformers")
        pytest.importorskip("accelerate")
        self.seen = {}

    def check(self, folder: Path, plan: planner.Plan) -> None:
        config = target_view(folder, plan)
        key = (json.dumps(config, sort_keys=True), plan.request.world_size)
        if key not in self.seen:
            self.seen[key] = deepspeed_config(config, plan.request.world_size)
        check_deepspeed(self.seen[key], plan)


def test_deepspeed_accepts(files_on_disk):
    oracle = DeepSpeedOracle()
    for folder, plan in files_on_disk:
        oracle.check(folder, plan)
    assert len(oracle.seen) > 300  # the grid really exercises DeepSpeed


def test_trainer_fill_shortcut_matches_training_arguments(files_on_disk):
    """The shared TrainingArguments above give the same filled config as building TrainingArguments
    for the plan from scratch (the real __post_init__), for one plan of every rung and precision."""
    from transformers import TrainingArguments
    picked = {}
    for folder, plan in files_on_disk:
        if plan.request.target == "hf-trainer":
            picked.setdefault((plan.shape.name, plan.precision, plan.request.nodes), (folder, plan))
    assert len(picked) >= 14
    for folder, plan in picked.values():
        env = launch_env(folder, plan)
        world = plan.request.world_size

        class Args(TrainingArguments):
            @property
            def world_size(self):
                return world

        with quiet_and_restored(env), contextlib.chdir(folder):
            args = Args(output_dir=tempfile.gettempdir(), use_cpu=True, report_to=[], deepspeed=render.DS_CONFIG,
                        **render.trainer_arguments(plan))
            args.deepspeed_plugin.set_mixed_precision(args.mixed_precision)
            args.hf_deepspeed_config.trainer_config_finalize(
                args, SimpleNamespace(config=SimpleNamespace(hidden_size=plan.request.model.hidden)), 1000)
        assert args.deepspeed_plugin.deepspeed_config == trainer_filled(folder, plan, env)


# Accelerate ---------------------------------------------------------------------------------------

class AccelerateOracle:
    """load_config_from_file and the `accelerate launch` replay, once per distinct YAML text."""

    def __init__(self):
        pytest.importorskip("accelerate")
        self.seen = set()

    def check(self, folder: Path, plan: planner.Plan) -> None:
        from accelerate.commands.config.config_args import load_config_from_file

        from tests.accelerate.test_accelerate_differential import accelerate_verdict
        yaml_path = folder / render.ACCELERATE_CONFIG
        if plan.request.target not in ("hf-trainer", "accelerate"):
            assert not yaml_path.exists()
            return
        text = yaml_path.read_text()
        if text in self.seen:
            return
        self.seen.add(text)
        with quiet_and_restored():
            loaded = load_config_from_file(str(yaml_path))
        r = plan.request
        assert loaded.distributed_type.value == "DEEPSPEED"
        assert loaded.num_processes == r.world_size and loaded.num_machines == r.nodes
        assert loaded.deepspeed_config["deepspeed_config_file"] == render.DS_CONFIG
        assert loaded.deepspeed_config["zero3_init_flag"] == (plan.shape.stage == 3)
        assert loaded.mixed_precision is None  # the precision lives in the JSON only
        with contextlib.chdir(folder):
            verdict = accelerate_verdict(str(yaml_path))
        assert verdict.load_error is None
        assert verdict.launch_error is None or verdict.machine_dependent, verdict


def test_accelerate_loads(files_on_disk):
    oracle = AccelerateOracle()
    for folder, plan in files_on_disk:
        oracle.check(folder, plan)
    assert len(oracle.seen) >= 30


# -- beyond the grid: fp16 GPUs, fp32, other optimizers, NVMe, every template, the batch options -------

def extra_requests():
    out = []
    for gpu in ("V100-16GB", "V100-32GB", "T4"):
        memory = gpu_catalog.lookup(gpu)
        for name in ("gpt2", "llama-3.2-1b", "llama-3.1-8b", "qwen2.5-32b"):
            for gpus, nodes in ((1, 1), (4, 1), (8, 2)):
                out.append(planner.Request(model=model(name), gpu_memory=memory.memory_bytes, gpu_name=memory.name,
                                           bf16_supported=memory.bf16, gpus=gpus, nodes=nodes, global_batch=64))
    base = dict(model=model("llama-3.2-1b"), gpu_memory=24 * GB, gpus=4, nodes=1, global_batch=64)
    for optimizer in ("adam", "sgd", "lion", "adafactor", "adamw-8bit"):
        out.append(planner.Request(optimizer=optimizer, **base))
        out.append(planner.Request(optimizer=optimizer, **dict(base, model=model("llama-3.1-8b"))))
    out.append(planner.Request(precision="fp32", **base))
    out.append(planner.Request(batchnorm=True, **dict(base, global_batch=48)))
    out.append(planner.Request(micro_batch=3, **dict(base, global_batch=60)))
    out.append(planner.Request(**dict(base, global_batch=None)))
    out.append(planner.Request(**dict(base, global_batch=50)))  # not a multiple of 4: the nearest
    out.append(planner.Request(**dict(base, global_batch=None, gpus=3, nodes=3)))
    out.append(planner.Request(checkpointing=True, **base))
    # host RAM too small for CPU offload: NVMe
    out.append(planner.Request(model=model("qwen2.5-32b"), gpu_memory=96 * GB, gpus=1, cpu_memory=512 * GB,
                               nvme_path="/local_nvme", global_batch=16))
    for template in planner.SHAPES:
        out.append(planner.Request(model=model("gpt2-medium"), gpu_memory=80 * GB, gpus=4, nodes=2, global_batch=64,
                                   template=template, nvme_path="/local_nvme"))
    return [dataclasses.replace(r, target=t) for r in out for t in TARGETS]


def test_beyond_the_grid_every_oracle(tmp_path):
    plans = [planner.plan(r) for r in extra_requests()]
    used = Counter(p.shape.name for p in plans)
    assert set(used) == set(planner.SHAPES)
    assert {p.precision for p in plans} == {"bf16", "fp16", "fp32"}
    assert any(p.shape.name == "zero3_nvme" and p.request.template is None for p in plans)
    deepspeed_oracle, accelerate_oracle = DeepSpeedOracle(), AccelerateOracle()
    for i, plan in enumerate(plans):
        check_never_worse(plan) if plan.request.template is None else None
        folder = write_folder(tmp_path / f"{i:04d}", plan)
        check_lint(folder, plan)
        deepspeed_oracle.check(folder, plan)
        accelerate_oracle.check(folder, plan)
