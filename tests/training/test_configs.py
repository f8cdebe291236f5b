"""A project's own training configs: batch keys anywhere in JSON, YAML and TOML, as the training code uses them."""

from __future__ import annotations

import json
import os

import pytest
from click.testing import CliRunner
from hypothesis import given, settings, strategies as st

from dsconfig.cli import cli
from dsconfig.training import epochs
from dsconfig.training.configs import batch_entries
from dsconfig.training.names import GLOBAL, PER_DEVICE, default_kind, is_batch_key, parse_batch_key

from ..helpers import lint


def codes(findings, keep_global_batch=False):
    """The codes, without the DS209 note on the global batch that every per-device key gets at a world size."""
    return [f.code for f in findings if keep_global_batch or f.code != "DS209"]


def write(tmp_path, name, text):
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


# -- which keys -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("key,kind", [
    ("batch_size", PER_DEVICE), ("train_bs", PER_DEVICE), ("micro_batch_size", PER_DEVICE),
    ("per_device_train_batch_size", PER_DEVICE), ("batch_size_per_gpu", PER_DEVICE), ("bs", PER_DEVICE),
    ("train_batch_size", PER_DEVICE),  # diffusers / HF example scripts: per device outside a ds_config.json
    ("global_batch_size", GLOBAL), ("total_batch_size", GLOBAL), ("effective_batch_size", GLOBAL), ("gbs", GLOBAL),
])
def test_batch_keys_and_their_default_kind(key, kind):
    assert is_batch_key(key) and default_kind(key) == kind


@pytest.mark.parametrize("key", ["max_batch_size", "num_batches", "auto_find_batch_size", "batch_sampler",
                                 "bs_type", "embs", "batches", "batch_first", "min_batch_size"])
def test_not_batch_sizes(key):
    assert not is_batch_key(key)


def test_plain_batch_size_is_global_under_jax():
    assert default_kind("batch_size", "jax") == GLOBAL and default_kind("batch_size_per_device", "jax") == PER_DEVICE


def test_batch_key_option_takes_pointers_and_dotted_paths():
    assert parse_batch_key("data.train_bs=global") == ("/data/train_bs", GLOBAL)
    assert parse_batch_key("/a~1b/bs=per-device") == ("/a~1b/bs", PER_DEVICE)
    with pytest.raises(ValueError):
        parse_batch_key("data.train_bs=sometimes")


def test_entries_are_found_at_any_depth_and_in_lists():
    tree = {"stages": [{"data": {"train_bs": 32}}, {"data": {"train_bs": 16}}], "model": {"depth": 4}}
    assert [(e.pointer, e.value) for e in batch_entries(tree)] == [("/stages/0/data/train_bs", 32),
                                                                    ("/stages/1/data/train_bs", 16)]


# -- DS006: values no DataLoader takes ---------------------------------------------------------------------


@pytest.mark.parametrize("value,fix", [("7.0", "7"), ('"8"', "8"), ("3.0", "3"), ("7.5", None), ('"7.5"', None)])
@pytest.mark.parametrize("form", ["yaml", "json", "toml"])
def test_bad_batch_values_in_every_format(tmp_path, value, fix, form):
    if form == "yaml":
        path = write(tmp_path, "configs/train.yaml", f"train:\n  batch_size: {value}\n  epochs: 100\n")
    elif form == "json":
        path = write(tmp_path, "configs/train.json", f'{{"train": {{\n  "batch_size": {value}, "epochs": 100}}}}\n')
    else:
        path = write(tmp_path, "configs/train.toml", f"[train]\nbatch_size = {value}\nepochs = 100\n")
    found = lint(path)
    assert codes(found) == ["DS006"]
    assert found[0].pointer == "/train/batch_size" and found[0].line == 2 and found[0].severity == "error"
    assert found[0].fails_in == "step"
    if fix is not None:
        assert f"write {fix}" in found[0].message
    assert found[0].fix == (fix if form != "toml" else None)


def test_the_fix_is_written_in_yaml_and_json(tmp_path):
    yaml_path = write(tmp_path, "train.yaml", "train:\n  batch_size: 7.0  # from the web UI\n  epochs: 10\n")
    json_path = write(tmp_path, "train.json", '{"train": {"batch_size": 7.0, "epochs": 10}}\n')
    result = CliRunner().invoke(cli, ["lint", "--no-config", "--fix", str(yaml_path), str(json_path)])
    assert result.exit_code == 0, result.output
    assert yaml_path.read_text() == "train:\n  batch_size: 7  # from the web UI\n  epochs: 10\n"
    assert json.loads(json_path.read_text()) == {"train": {"batch_size": 7, "epochs": 10}}


@pytest.mark.parametrize("value", ["auto", "???", "null", "${oc.env:BS,8}", "${missing.key}"])
def test_values_someone_else_fills_are_left_alone(tmp_path, value):
    assert lint(write(tmp_path, "train.yaml", f"data:\n  batch_size: '{value}'\n" if value != "null"
                      else "data:\n  batch_size: null\n")) == []


@pytest.mark.parametrize("text", [
    "data:\n  pad_samples_to_global_batch_size: false\n  batch_size: 8\n",  # nanotron: a flag, not a batch
    "train:\n  batch_size: 8\n  code_eval_test_batch_size: -1\n",  # open-r1: -1 is "all at once"
    "train:\n  batch_size: 8\neval:\n  per_device_batch_size: 0\n",  # 0: "as in training"
    "model:\n  validation_ds:\n    batch_size: '??'\n",  # a placeholder someone fills
    '{"batch_size": "Batch Size", "learning_rate": "Learning rate"}\n',  # a translation table
    '{"args": {"per_device_train_batch_size": "2", "output_dir": "out"}}\n',  # a dump of arguments as text
    '{"args": {"per_device_train_batch_size": "2", "max_steps": "50", "report_to": "none"}, "loss": [0.5, 0.4]}\n',
])
def test_another_programs_flags_sentinels_and_text_are_left_alone(tmp_path, text):
    """Which program reads a training config is unknown: what is no batch size there is not reported."""
    assert codes(lint(write(tmp_path, "train.yaml" if not text.startswith("{") else "train.json", text))) == []


def test_interpolations_resolve_within_the_file(tmp_path):
    text = "train:\n  batch_size: 7.0\ndata:\n  bs: ${train.batch_size}\n  local_bs: ${.bs}\n"
    found = lint(write(tmp_path, "train.yaml", text))
    assert [(f.code, f.pointer, f.fix) for f in found] == [
        ("DS006", "/train/batch_size", "7"), ("DS006", "/data/bs", None), ("DS006", "/data/local_bs", None)]
    assert "(from \"${train.batch_size}\")" in found[1].message
    assert lint(write(tmp_path, "ok.yaml", "train:\n  batch_size: 8\ndata:\n  bs: ${train.batch_size}\n")) == []


def test_a_file_without_batch_keys_is_skipped_and_a_walk_skips_toml_quietly(tmp_path):
    assert codes(lint(write(tmp_path, "a.yaml", "lr: 0.1\n"))) == ["DS005"]
    from ..helpers import lint_folder
    write(tmp_path / "walk", "pyproject.toml", "[project]\nname = 'x'\n")
    write(tmp_path / "walk", "configs/train.toml", "[train]\nbatch_size = 8.0\n")
    assert [(f.file.rsplit("/", 1)[-1], f.code) for f in lint_folder(tmp_path / "walk")] == [("train.toml", "DS006")]


def test_a_named_toml_that_does_not_parse_is_a_load_error(tmp_path):
    found = lint(write(tmp_path, "train.toml", "[train]\nbatch_size = \n"))
    assert codes(found) == ["DS000"] and found[0].fails_in == "load" and found[0].line == 2


# -- DS208 / DS207: the global batch over the GPUs ------------------------------------------------------------


def test_a_global_batch_that_does_not_split(tmp_path):
    path = write(tmp_path, "train.yaml", "data:\n  global_batch_size: 30\n")
    assert lint(path) == []  # no world size given: nothing to split over
    found = lint(path, world_sizes=(4,))
    assert codes(found) == ["DS208"] and found[0].world_size == 4 and found[0].fix == "32"
    assert "28 (7 per GPU) or 32 (8 per GPU)" in found[0].message
    assert codes(lint(path, world_sizes=(2, 3, 5, 6))) == []


def test_global_against_per_device_and_accumulation(tmp_path):
    path = write(tmp_path, "train.yaml", "global_batch_size: 64\nmicro_batch_size: 8\ngradient_accumulation_steps: 2\n")
    assert codes(lint(path, world_sizes=(4,))) == []  # 8 × 2 × 4 = 64
    found = lint(path, world_sizes=(2,))
    assert codes(found) == ["DS208"] and "8 × gradient_accumulation_steps 2 × 2 GPUs = 32" in found[0].message
    # the advice never offers the value already written: each choice makes the three agree
    assert found[0].message.endswith("To agree: set global_batch_size to 32, or micro_batch_size to 16")
    assert "global_batch_size to 64" not in found[0].message
    # Megatron style: no accumulation written, the loop derives it as global / (micro × world)
    megatron = write(tmp_path, "m.yaml", "global_batch_size: 64\nmicro_batch_size: 8\n")
    assert codes(lint(megatron, world_sizes=(1, 2, 4, 8))) == []
    assert codes(lint(megatron, world_sizes=(3,))) == ["DS208"]


def test_batch_key_overrides_the_name(tmp_path):
    path = write(tmp_path, "stage1.yaml", "data:\n  train_bs: 30\n")
    assert codes(lint(path, world_sizes=(4,))) == []  # per device by its name
    assert codes(lint(path, world_sizes=(4,), batch_keys=(("/data/train_bs", GLOBAL),))) == ["DS208"]
    glob = write(tmp_path, "g.yaml", "data:\n  global_batch_size: 30\n")
    assert codes(lint(glob, world_sizes=(4,), batch_keys=(("/data/global_batch_size", PER_DEVICE),))) == []


def test_jax_framework_makes_batch_size_global(tmp_path):
    path = write(tmp_path, "config.json", '{"batch_size": 1, "num_workers": 2}\n')
    assert codes(lint(path, world_sizes=(2,))) == []
    found = lint(path, world_sizes=(2,), framework="jax")
    assert codes(found) == ["DS208"] and "2 (1 per GPU)" in found[0].message


def test_one_sample_per_device_with_batchnorm(tmp_path):
    path = write(tmp_path, "train.yaml", "data:\n  global_batch_size: 2\n")
    assert codes(lint(path, world_sizes=(2,))) == ["DS205"]  # an info without BatchNorm
    found = lint(path, world_sizes=(2,), batchnorm=True)
    assert codes(found) == ["DS207"] and found[0].fix == "4" and "4 (2 per GPU)" in found[0].message
    # with BatchNorm the choices offered for an indivisible batch never go below 2 per GPU
    odd = lint(write(tmp_path, "odd.yaml", "global_batch_size: 5\n"), world_sizes=(4,), batchnorm=True)
    assert codes(odd) == ["DS208"] and odd[0].fix == "8" and "(1 per GPU)" not in odd[0].message
    per_device = write(tmp_path, "p.yaml", "train:\n  batch_size: 1\n")
    assert codes(lint(per_device, batchnorm=True)) == ["DS207"]
    assert codes(lint(per_device, batchnorm=True, world_sizes=(2,))) == ["DS207"]  # at any world size
    # evaluation batches are exempt: BatchNorm in eval mode normalises with its running statistics
    evaluation = write(tmp_path, "e.yaml", "train:\n  batch_size: 8\n  eval_batch_size: 1\nval:\n  global_batch_size: 2\n")
    assert codes(lint(evaluation, batchnorm=True, world_sizes=(2,))) == []


def test_global_batch_at_the_world_size_launched(tmp_path):
    """Scenario 2's question: stage1.yaml's per-GPU batch and the processes the Accelerate YAML launches."""
    write(tmp_path, "configs/unet/stage1.yaml", "data:\n  train_bs: 32\n  val_bs: 8\noptimization:\n"
                                                "  gradient_accumulation_steps: 1\n")
    write(tmp_path, "configs/accelerate_config.yaml", "compute_environment: LOCAL_MACHINE\ndistributed_type: "
                                                      "DEEPSPEED\ndeepspeed_config:\n  zero_stage: 2\n"
                                                      "num_processes: 2\nnum_machines: 1\ngpu_ids: '5, 7'\n")
    from ..helpers import lint_folder
    found = [f for f in lint_folder(tmp_path / "configs") if f.code == "DS209"]
    assert len(found) == 1 and found[0].pointer == "/data/train_bs"  # not the validation batch
    assert "(launched by accelerate_config.yaml): 64 on 2 GPUs (32 × 1 × 2)" in found[0].message
    found = lint(tmp_path / "configs/unet/stage1.yaml", world_sizes=(2, 8))
    assert codes(found, keep_global_batch=True) == ["DS209"] and "256 on 8 GPUs (32 × 1 × 8)" in found[0].message
    assert codes(lint(tmp_path / "configs/unet/stage1.yaml"), keep_global_batch=True) == []  # no world size known


# -- DS705: steps per epoch per framework ---------------------------------------------------------------------


@pytest.mark.parametrize("framework", epochs.FRAMEWORKS)
def test_steps_table_follows_the_framework(tmp_path, framework):
    path = write(tmp_path, "train.yaml", "train:\n  batch_size: 8\n  epochs: 100\nval:\n  batch_size: 16\n")
    sizes = (1, 2, 4) if framework == "jax" else (1, 2, 3)  # under JAX plain batch_size is the global batch
    found = lint(path, dataset_size=1000, framework=framework, world_sizes=sizes)
    found = [f for f in found if f.code != "DS209"]
    assert codes(found) == ["DS705"] and found[0].pointer == "/train/batch_size"  # not the validation batch
    for world in sizes:
        per_device = 8 // world if framework == "jax" else 8
        plan = epochs.epoch(framework, 1000, per_device, world)
        assert f"{world} → {plan.batches_per_device} batches" in found[0].message
    assert epochs.HOW[framework] in found[0].message


def test_steps_table_without_framework_says_what_it_assumed(tmp_path):
    found = lint(write(tmp_path, "train.yaml", "batch_size: 8\n"), dataset_size=1000)
    assert "torchrun (assumed: give --framework)" in found[0].message


# -- DS010: options that nothing used --------------------------------------------------------------------------


def test_an_option_no_check_uses_is_a_warning(tmp_path):
    path = write(tmp_path, "accelerate_config.yaml", "distributed_type: MULTI_GPU\nnum_processes: 2\n")
    found = lint(path, dataset_size=100, batchnorm=True)
    assert codes(found) == ["DS010"] and found[0].severity == "warning"
    assert "--dataset-size 100 and --batchnorm were given" in found[0].message
    # A named file that is no config at all says so (DS005) and nothing more: the pre-commit hook names every
    # staged YAML and ignores DS005 to pass them in silence.
    path = write(tmp_path, "train.yaml", "optimizer:\n  lr: 0.0002\n")
    assert codes(lint(path, world_sizes=(3,), dataset_size=100, batchnorm=True)) == ["DS005"]
    assert codes(lint(write(tmp_path, "t.yaml", "batch_size: 8\n"), world_sizes=(3,))) == []
    ds = write(tmp_path, "ds_config.json", '{"train_micro_batch_size_per_gpu": 2, "gradient_clipping": 1.0}\n')
    assert "DS010" not in codes(lint(ds, world_sizes=(3,), dataset_size=100, batchnorm=True))


def test_a_walk_does_not_warn_about_files_it_skips(tmp_path):
    from ..helpers import lint_folder
    write(tmp_path, "p/package.json", '{"name": "x"}\n')
    write(tmp_path, "p/train.yaml", "batch_size: 8\n")
    assert "DS010" not in codes(lint_folder(tmp_path / "p", world_sizes=(3,)))


def test_a_walk_in_which_no_file_used_an_option_says_so_once(tmp_path):
    """Not a silent pass: `lint . --world-size 8` over a tree that holds nothing a world size bears on."""
    from click.testing import CliRunner

    from dsconfig.cli import cli
    write(tmp_path, "p/package.json", '{"name": "x"}\n')
    write(tmp_path, "p/util.py", "import os\n\nprint(os.getcwd())\n")
    write(tmp_path, "p/sub/settings.json", '{"lr": 0.1}\n')
    previous = os.getcwd()
    os.chdir(tmp_path / "p")
    try:
        result = CliRunner().invoke(cli, ["lint", "--no-config", ".", "--world-size", "8"])
        assert result.exit_code == 0, result.output
        assert result.stdout.splitlines() == [
            ".:1:1: warning DS010 world size 8 was given, but no check of any file of this run uses it (no DeepSpeed "
            "config, Accelerate YAML that launches one, or training script with a batch size was found): nothing "
            "here was checked against it"]
        write(tmp_path, "p/sub/ds_config.json", '{"train_batch_size": 16, "gradient_clipping": 1.0}\n')
        result = CliRunner().invoke(cli, ["lint", "--no-config", ".", "--world-size", "8"])
        assert result.exit_code == 0 and "DS010" not in result.stdout, result.output
        result = CliRunner().invoke(cli, ["lint", "--no-config", "."])
        assert "DS010" not in result.stdout
    finally:
        os.chdir(previous)


# -- DS202 fixes with BatchNorm, against DeepSpeed -------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(tbs=st.integers(1, 64), mbs=st.one_of(st.none(), st.integers(1, 8)), gas=st.one_of(st.none(), st.integers(1, 4)),
       world=st.integers(1, 16))
def test_batchnorm_fixes_never_go_below_two_per_gpu(tbs, mbs, gas, world):
    """Every DS202/DS207 fix dsconfig offers with --batchnorm, applied, is accepted by DeepSpeed and gives a micro
    batch of 2 or more."""
    from dsconfig.deepspeed.batch import BATCH_KEYS
    from ..oracle import DeepSpeedConfig, world as ds_world
    config = {"train_batch_size": tbs, "gradient_clipping": 1.0}
    if mbs is not None:
        config["train_micro_batch_size_per_gpu"] = mbs
    if gas is not None:
        config["gradient_accumulation_steps"] = gas
    from dsconfig.deepspeed import check
    from ..helpers import options
    fixes = [f for f in check.config_findings(config, check.targets.DEEPSPEED, options(world_sizes=(world,),
                                                                                          batchnorm=True))
             if f.code in ("DS202", "DS207") and f.fix is not None]
    for finding in fixes:
        key = finding.pointer.lstrip("/")
        assert key in BATCH_KEYS
        fixed = dict(config, **{key: int(finding.fix)})
        with ds_world(world):
            resolved = DeepSpeedConfig(fixed)  # a fix that needs two keys changed carries none
        assert resolved.train_micro_batch_size_per_gpu >= 2, (config, world, finding.message)
