"""Rendering: every template, every target; strict JSON with integers, stable key order, quoted YAML,
a hostfile DeepSpeed parses, and files that say what the plan says."""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from dsconfig import targets
from dsconfig.deepspeed.schema import fill_targets
from dsconfig.estimate import Hardware, TrainingSetup, catalog, estimate, shapes
from dsconfig.estimate.deepspeed_config import from_dict
from dsconfig.generate import planner, render, templates

ROOT = Path(__file__).resolve().parents[2]
GB = 10 ** 9


@functools.lru_cache(maxsize=None)
def model(name: str) -> shapes.ModelShape:
    return shapes.from_hf_config(catalog.CATALOG[name].config, name)


def base_plan(target="hf-trainer", **changes) -> planner.Plan:
    request = planner.Request(model=model("llama-3.2-1b"), gpu_memory=80 * GB, gpus=4, nodes=2, global_batch=64,
                              target=target, nvme_path="/local_nvme")
    return planner.plan(dataclasses.replace(request, **changes))


def every_shape_and_target():
    for shape in planner.LADDER:
        for target in targets.NAMES:
            yield base_plan(target, template=shape.name)


def pointers(value, prefix=""):
    if isinstance(value, dict):
        for key, child in value.items():
            yield from pointers(child, f"{prefix}/{key}")
    else:
        yield prefix, value


# -- templates ------------------------------------------------------------------------------------------

def test_one_template_per_rung_and_all_plain_files():
    assert templates.names() == sorted(shape.name for shape in planner.LADDER)
    folder = templates.folder()
    assert folder == ROOT / "templates"
    for path in (folder / "deepspeed").glob("*.json"):
        json.loads(path.read_text())  # plain JSON
    for path in (folder / "accelerate").glob("*.yaml"):
        assert isinstance(yaml.safe_load(path.read_text()), dict)  # plain YAML
    for name in templates.names():
        config = templates.deepspeed(name)
        shape = planner.SHAPES[name]
        zero = config["zero_optimization"]
        assert zero["stage"] == shape.stage
        assert zero.get("offload_optimizer", {}).get("device", "none") == shape.offload_optimizer
        assert zero.get("offload_param", {}).get("device", "none") == shape.offload_param


def test_templates_found_in_an_installed_wheel_layout(tmp_path):
    """An installed wheel has dsconfig/templates and dsconfig/schemas (pyproject force-include); the lookup
    (dsconfig/package_data.py) finds them there."""
    package = tmp_path / "site" / "dsconfig"
    package.mkdir(parents=True)
    shutil.copy(ROOT / "dsconfig" / "package_data.py", package / "package_data.py")
    shutil.copytree(ROOT / "templates", package / "templates")
    shutil.copytree(ROOT / "schemas", package / "schemas")
    spec = importlib.util.spec_from_file_location("installed_package_data", package / "package_data.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.templates_folder() == package / "templates"
    assert module.schema_path("deepspeed.schema.json") == package / "schemas" / "deepspeed.schema.json"
    shutil.rmtree(package / "templates")
    with pytest.raises(FileNotFoundError, match="templates"):
        module.templates_folder()


def test_every_placeholder_has_a_value_for_every_target():
    for plan in every_shape_and_target():
        text = render.ds_config_text(plan)
        assert "{{" not in text
        for file in render.files(plan):
            assert "{{" not in file.text, file.name


def test_unknown_placeholder_is_a_template_error():
    with pytest.raises(render.TemplateError, match="nope"):
        render.fill({"a": "{{nope}}"}, {})
    with pytest.raises(render.TemplateError, match="longer string"):
        render.fill({"a": "x{{nope}}"}, {"nope": 1})
    with pytest.raises(render.TemplateError):
        render.fill_text("a: {{nope}}\n", {}, quote=str)


# -- ds_config.json ---------------------------------------------------------------------------------------

INTEGER_KEYS = re.compile(r"(_size|_batch_size_per_gpu|_steps|_threshold|_parameters|_distance|stage|_count)$")


def test_strict_json_integer_literals_stable_order():
    for plan in every_shape_and_target():
        text = render.ds_config_text(plan)
        config = json.loads(text, parse_constant=lambda c: pytest.fail(f"non-strict JSON constant {c}"))
        assert render.ds_config_text(plan) == text  # stable
        template_keys = list(templates.deepspeed(plan.shape.name))
        assert [k for k in template_keys if k in config] == list(config)  # the template's order
        for pointer, value in pointers(config):
            if INTEGER_KEYS.search(pointer) and value != "auto":
                assert type(value) is int, (pointer, value)
            assert not isinstance(value, float) or pointer == "/gradient_clipping" or pointer.startswith("/fp16")


def test_auto_only_for_the_trainer_and_only_where_it_fills():
    for plan in every_shape_and_target():
        config = render.ds_config(plan)
        autos = [p for p, v in pointers(config) if v == "auto"]
        if plan.request.target != "hf-trainer":
            assert autos == []
            continue
        assert {"/train_batch_size", "/train_micro_batch_size_per_gpu", "/gradient_accumulation_steps",
                "/gradient_clipping"} <= set(autos)
        for pointer in autos:
            assert "hf-trainer" in fill_targets(pointer), pointer


def test_target_specific_keys():
    hf, acc, ds, light = (render.ds_config(base_plan(t, template="zero3_offload_optimizer"))
                          for t in ("hf-trainer", "accelerate", "deepspeed", "lightning"))
    plan = base_plan("deepspeed", template="zero3_offload_optimizer")
    # HF Trainer + optimizer offload: DeepSpeed's CPU Adam with the Trainer's hyper-parameters
    assert hf["optimizer"] == {"type": "AdamW", "params": {"lr": "auto", "betas": "auto", "eps": "auto",
                                                           "weight_decay": "auto"}}
    assert "zero_force_ds_cpu_optimizer" not in hf
    # the others keep the script's optimizer
    for config in (acc, ds, light):
        assert "optimizer" not in config and config["zero_force_ds_cpu_optimizer"] is False
    assert ds["train_batch_size"] == plan.global_batch == plan.micro_batch * plan.accumulation * 8
    assert (ds["train_micro_batch_size_per_gpu"], ds["gradient_accumulation_steps"]) == \
        (plan.micro_batch, plan.accumulation)
    assert ds == acc
    # Lightning sets these itself (and refuses gradient_accumulation_steps)
    for key in ("train_batch_size", "gradient_accumulation_steps", "gradient_clipping"):
        assert key not in light
    assert light["train_micro_batch_size_per_gpu"] == plan.micro_batch
    # Adam (not AdamW) keeps adam_w_mode off; other optimizers are allowed explicitly
    adam = render.ds_config(base_plan("hf-trainer", template="zero2_offload_optimizer", optimizer="adam"))
    assert adam["optimizer"]["type"] == "Adam" and adam["optimizer"]["params"]["adam_w_mode"] is False
    lion = render.ds_config(base_plan("hf-trainer", template="zero2", optimizer="lion"))
    assert lion["zero_allow_untested_optimizer"] is True and "optimizer" not in lion
    assert "zero_allow_untested_optimizer" not in render.ds_config(base_plan("hf-trainer", template="zero2"))


def test_precision_blocks():
    bf16 = render.ds_config(base_plan("deepspeed", template="zero2"))
    assert bf16["bf16"] == {"enabled": True} and "fp16" not in bf16
    fp16 = render.ds_config(base_plan("deepspeed", template="zero2", precision="fp16"))
    assert fp16["fp16"]["enabled"] is True and fp16["fp16"]["loss_scale"] == 0 and "bf16" not in fp16
    fp32 = render.ds_config(base_plan("deepspeed", template="zero2", precision="fp32"))
    assert "fp16" not in fp32 and "bf16" not in fp32


def test_nvme_buffer_holds_the_largest_parameter_partition():
    plan = base_plan("deepspeed", model=model("llama-3.1-70b"), gpus=1, nodes=1, template="zero3_nvme")
    config = render.ds_config(plan)
    param = config["zero_optimization"]["offload_param"]
    assert param["nvme_path"] == "/local_nvme" == config["zero_optimization"]["offload_optimizer"]["nvme_path"]
    assert param["buffer_size"] >= plan.request.model.largest_layer_params  # one GPU: the partition is the layer
    assert planner.nvme_param_buffer(model("gpt2"), 8) == planner.NVME_PARAM_BUFFER


def test_the_file_says_what_the_plan_says():
    """`dsconfig estimate ds_config.json` on the written file (target deepspeed: concrete numbers) gives
    the plan's own per-GPU figures, for every rung."""
    for shape in planner.LADDER:
        plan = base_plan("deepspeed", template=shape.name)
        values, notes = from_dict(render.ds_config(plan))
        assert notes == []
        values.setdefault("optimizer", plan.request.optimizer)
        buckets = planner.Buckets(**values.pop("buckets", {}))
        r = plan.request
        setup = TrainingSetup(seq_len=r.seq_len, gpus=r.gpus, nodes=r.nodes, buckets=buckets,
                              gradient_checkpointing=plan.checkpointing, **values)
        assert estimate(r.model, setup, Hardware()).per_gpu == plan.estimate.per_gpu


# -- accelerate_config.yaml ----------------------------------------------------------------------------

def test_accelerate_yaml_quoted_total_processes_no_conflicting_keys():
    for nodes in (1, 2):
        plan = base_plan("accelerate", nodes=nodes, template="zero3")
        text = render.accelerate_text(plan, render.Paths(ds_config="out/ds_config.json"))
        config = yaml.safe_load(text)
        assert config["num_processes"] == 4 * nodes and config["num_machines"] == nodes
        assert config["distributed_type"] == "DEEPSPEED" and config["downcast_bf16"] == "no"
        section = config["deepspeed_config"]
        assert section["deepspeed_config_file"] == "out/ds_config.json"
        assert section["zero3_init_flag"] is True
        # nothing Accelerate refuses next to deepspeed_config_file, no mixed_precision
        assert set(section) <= {"deepspeed_config_file", "zero3_init_flag", "deepspeed_multinode_launcher"}
        assert "mixed_precision" not in config
        assert "'no'" in text and "'out/ds_config.json'" in text
        assert text.startswith("# dsconfig generate: ZeRO-3 for llama-3.2-1b on ")
        assert f"# global batch 64 = micro {plan.micro_batch} x accumulation {plan.accumulation}" in text
        if nodes > 1:
            assert section["deepspeed_multinode_launcher"] == "standard"
            assert config["main_process_ip"] == render.MAIN_HOST and config["main_process_port"] == render.PORT
        else:
            assert "main_process_ip" not in config and "deepspeed_multinode_launcher" not in section
    assert yaml.safe_load(render.accelerate_text(base_plan("accelerate", template="zero2")))[
        "deepspeed_config"]["zero3_init_flag"] is False


def test_yaml_scalars():
    assert render.yaml_scalar("no") == "'no'" and yaml.safe_load("a: " + render.yaml_scalar("NO"))["a"] == "NO"
    assert render.yaml_scalar("it's") == "'it''s'" and yaml.safe_load("a: " + render.yaml_scalar("it's"))["a"] == "it's"
    assert render.yaml_scalar(True) == "true" and render.yaml_scalar(8) == "8"


def test_which_files():
    names = lambda plan: [f.name for f in render.files(plan)]  # noqa: E731
    assert names(base_plan("hf-trainer", nodes=1)) == ["ds_config.json", "accelerate_config.yaml"]
    assert names(base_plan("deepspeed", nodes=1)) == ["ds_config.json"]
    assert names(base_plan("lightning", nodes=2)) == ["ds_config.json", "hostfile", "slurm.sbatch"]
    assert names(base_plan("accelerate", nodes=2)) == ["ds_config.json", "accelerate_config.yaml", "hostfile",
                                                      "slurm.sbatch"]


# -- multi-node ------------------------------------------------------------------------------------------

def test_hostfile_parses_with_deepspeeds_own_parser():
    pytest.importorskip("deepspeed")
    from deepspeed.launcher.runner import _parse_hostfile
    plan = base_plan("deepspeed", nodes=3)
    pool = _parse_hostfile(render.hostfile_text(plan).splitlines())
    assert dict(pool) == {"node-1": 4, "node-2": 4, "node-3": 4}


@pytest.mark.parametrize("target", targets.NAMES)
def test_slurm_script_is_valid_bash(target, tmp_path):
    plan = base_plan(target, nodes=2)
    text = render.slurm_text(plan)
    script = tmp_path / "job.sbatch"
    script.write_text(text)
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0
    assert "#SBATCH --nodes=2" in text and "#SBATCH --gpus-per-node=4" in text
    assert ("--ntasks-per-node=4" if target == "lightning" else "--ntasks-per-node=1") in text
    if target in ("hf-trainer", "deepspeed"):
        assert "srun torchrun --nnodes $SLURM_NNODES --nproc_per_node 4" in text
    if target == "hf-trainer":
        assert "--deepspeed ds_config.json" in text and f"--per_device_train_batch_size {plan.micro_batch}" in text


def test_launch_commands_per_target():
    single = render.launch_commands(base_plan("hf-trainer", nodes=1), render.Paths())
    assert [c.label for c in single] == ["accelerate launch", "or deepspeed", "or torchrun"]
    assert single[0].text.startswith("accelerate launch --config_file accelerate_config.yaml train.py --deepspeed "
                                     "ds_config.json --per_device_train_batch_size ")
    multi = render.launch_commands(base_plan("hf-trainer", nodes=2), render.Paths())
    texts = " | ".join(c.text for c in multi)
    for part in ("sbatch slurm.sbatch", "--machine_rank $NODE_RANK", "deepspeed --hostfile hostfile --num_nodes 2",
                 "torchrun --nnodes 2 --nproc_per_node 4 --node_rank $NODE_RANK"):
        assert part in texts
    lightning = render.launch_commands(base_plan("lightning", nodes=1), render.Paths())
    assert lightning[0].text == "python train.py"
    paths = render.Paths(ds_config="my dir/ds_config.json", script="my train.py")
    quoted = render.launch_commands(base_plan("deepspeed", nodes=1), paths)[0].text
    assert quoted == "deepspeed --num_gpus 4 'my train.py'"


def test_trainer_arguments():
    plan = base_plan("hf-trainer", model=model("llama-3.1-8b"), nodes=1, gpus=2, gpu_memory=96 * GB)
    assert render.trainer_arguments(plan) == {"per_device_train_batch_size": plan.micro_batch,
                                              "gradient_accumulation_steps": plan.accumulation, "bf16": True,
                                              "gradient_checkpointing": True}


def test_render_is_standard_library_only():
    heavy = ("yaml", "torch", "deepspeed", "transformers", "accelerate")
    code = ("import sys; import dsconfig.generate.render, dsconfig.generate.planner, dsconfig.generate.write; "
            f"print(','.join(m for m in {heavy!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0 and out.stdout.strip() == ""
