"""DS800-DS802 on training scripts written in the shapes real projects use, and on the correct scripts of
the same shapes (a false alarm on a correct script is a bug): scripts_fixtures.py holds them."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from dsconfig import engine
from dsconfig.commands.lint_cli import lint as lint_command
from tests.helpers import options, truthful
from tests.training import scripts_fixtures as fx


def run(folder: Path, files: dict, paths=(".",), config_values=None, **fields) -> engine.LintResult:
    """Write the project, then lint `paths` (relative to it) as the command collects them."""
    fx.write(folder, files)
    previous = os.getcwd()
    os.chdir(folder)
    try:
        collection = engine.collect(list(paths))
        opts = options(**fields)._replace(found=collection.found, boundary=collection.boundary)
        result = engine.lint_files(collection.files, opts, config_values)
    finally:
        os.chdir(previous)
    truthful(result.findings)
    return result


def codes(result, prefix="DS8") -> list[str]:
    return [f.code for f in result.findings if f.code.startswith(prefix)]


def only(result, code: str):
    found = [f for f in result.findings if f.code == code]
    assert len(found) == 1, result.findings
    return found[0]


# -- DS800 lightning-sharded-twice -------------------------------------------------------------------


def test_bucket_batch_sampler_under_default_trainer_with_the_steps_table(tmp_path):
    result = run(tmp_path, fx.tts_project(), ["train.py"], {"train.batch_size": 8}, dataset_size=1000,
                 world_sizes=(1, 2, 3))
    finding = only(result, "DS800")
    assert (finding.file, finding.line, finding.column) == ("train.py", 11, 15)
    assert "batches per epoch by GPU count: 1 → 125, 2 → 32, 3 → 14 (expected 125, 63, 42)" in finding.message
    assert "train.batch_size in the training config" in finding.message
    assert "use_distributed_sampler=False" in finding.message and "replace_sampler_ddp=False" in finding.message
    assert finding.severity == "error" and finding.fails_in is None
    # evidence: the DataLoader and the sampler in data_module.py, the class in text/data_utils.py (not linted:
    # found through the imports, inside the named script's folder)
    assert finding.related[1:] == (
        ("data_module.py", 16, 16, "DataLoader(..., batch_sampler=...) gets a sampler that shards by rank"),
        ("data_module.py", 14, 19, "DistributedBucketSampler(...) built here"),
        ("text/data_utils.py", 5, 1, "class DistributedBucketSampler subclasses DistributedSampler"),
    )
    assert result.scripts.used == {"train.py": frozenset({"dataset_size", "world_sizes"})}


def test_default_world_sizes_and_a_literal_batch(tmp_path):
    files = fx.tts_project()
    files["data_module.py"] = fx.DATA_MODULE.replace("self.hps.train.batch_size", "16")
    finding = only(run(tmp_path, files, dataset_size=1000), "DS800")
    assert "1 → 63, 2 → 16, 4 → 4, 8 → 1 (expected 63, 32, 16, 8)" in finding.message


def test_without_dataset_size_the_effect_is_said_in_words(tmp_path):
    finding = only(run(tmp_path, fx.tts_project()), "DS800")
    assert "1/N² of the data instead of 1/N" in finding.message
    assert "ceil(ceil(N / (W × B)) / W) batches per GPU instead of ceil(N / (W × B))" in finding.message
    assert "give --dataset-size N" in finding.message


def test_rank_reading_sampler_given_as_sampler(tmp_path):
    result = run(tmp_path, fx.semantic_project(), dataset_size=1000, world_sizes=(1, 2, 3))
    finding = only(result, "DS800")
    assert finding.file == "./s1_train.py"
    assert "BucketSampler reads the rank: dist.get_rank()" in finding.message
    assert "config['train']['batch_size']" not in finding.message
    assert finding.related[-1][:2] == ("./AR/data/bucket_sampler.py", 13)


def test_rank_reading_sampler_takes_the_batch_from_the_config(tmp_path):
    result = run(tmp_path, fx.semantic_project(), config_values={"train.batch_size": 8}, dataset_size=1000,
                 world_sizes=(1, 2, 3))
    # DistributedSamplerWrapper: ceil(ceil(N / W) / W) indices per rank, then batches of 8
    assert "1 → 125, 2 → 32, 3 → 14 (expected 125, 63, 42)" in only(result, "DS800").message


@pytest.mark.parametrize("fixed", [", use_distributed_sampler=False", ", replace_sampler_ddp=False"])
def test_the_fix_silences_it(tmp_path, fixed):
    assert codes(run(tmp_path, fx.tts_project(fixed), dataset_size=1000)) == []
    assert codes(run(tmp_path / "s1", fx.semantic_project(fixed), dataset_size=1000)) == []


def test_lightning_1x_import_is_recognised(tmp_path):
    files = fx.tts_project(imports="import pytorch_lightning as pl")
    assert codes(run(tmp_path, files)) == ["DS800"]


@pytest.mark.parametrize("arguments, reported", [
    (', use_distributed_sampler=True', True),  # explicit True is the same mistake
    (', use_distributed_sampler=args.distributed_sampler', False),  # not known statically
    (', **extra', False),
])
def test_what_the_trainer_call_says(tmp_path, arguments, reported):
    assert codes(run(tmp_path, fx.tts_project(arguments))) == (["DS800"] if reported else [])


def test_one_device_trainer_shards_nothing(tmp_path):
    files = fx.tts_project()
    files["train.py"] = files["train.py"].replace("devices=-1", "devices=1")
    assert codes(run(tmp_path, files)) == []


def test_correct_scripts_of_the_same_shapes(tmp_path):
    files = {"plain.py": fx.LIGHTNING_PLAIN, "own_sampler.py": fx.LIGHTNING_OWN_DISTRIBUTED_SAMPLER,
             "torchrun_train.py": fx.TORCHRUN_DISTRIBUTED, "hf_train.py": fx.HF_TRAINER,
             "text/data_utils.py": fx.BUCKET_SAMPLER}
    assert codes(run(tmp_path, files, dataset_size=1000, world_sizes=(1, 2))) == []


def test_a_distributed_sampler_subclass_given_as_sampler_is_left_alone(tmp_path):
    files = fx.tts_project()
    files["data_module.py"] = fx.DATA_MODULE.replace("batch_sampler=sampler", "sampler=sampler")
    assert codes(run(tmp_path, files)) == []


def test_only_the_trainers_own_imports_count(tmp_path):
    """GPT-SoVITS' layout: a Lightning stage with use_distributed_sampler=False next to a torchrun stage whose
    bucket sampler shards by rank; a default Trainer in an unrelated script does not import that loader."""
    files = {**fx.semantic_project(", use_distributed_sampler=False"), "s2_train.py": fx.TORCHRUN_DISTRIBUTED,
             "text/data_utils.py": fx.BUCKET_SAMPLER, "finetune.py": fx.LIGHTNING_PLAIN}
    assert codes(run(tmp_path, files)) == []


@pytest.mark.parametrize("first", ["a_eval.py", "z_eval.py"])
def test_a_file_walked_for_another_script_still_leads_to_the_loader(tmp_path, first):
    """A script whose imports reach no sharded loader marks what it walked as reaching none; a script linted before
    or after it that reaches the loader through one of those same packages is still reported."""
    files = {**fx.semantic_project(), "AR/__init__.py": "from AR import data\n",
             first: "import lightning as L\nimport AR\n\n\ndef main(model):\n    L.Trainer(devices=4).fit(model)\n"}
    result = run(tmp_path, files)
    assert [(f.code, f.file) for f in result.findings if f.code == "DS800"] == [("DS800", "./s1_train.py")]


def test_an_import_outside_the_linted_tree_is_never_read(tmp_path):
    fx.write(tmp_path, {"data_module.py": fx.DATA_MODULE, "text/data_utils.py": fx.BUCKET_SAMPLER + fx.COLLATE})
    files = {"train.py": fx.train_script()}
    # the script imports data_module from its folder's parent: outside what was named, so not followed
    assert codes(run(tmp_path / "run", files, ["train.py"])) == []
    # given the whole tree it is read: Python finds data_module next to the script or above it (`-m run.train`)
    assert codes(run(tmp_path, {}, ["."])) == ["DS800"]


# -- DS801 float-batch-size ----------------------------------------------------------------------------


def test_webui_writes_a_float_into_both_configs(tmp_path):
    result = run(tmp_path, {"webui.py": fx.WEBUI_FLOAT})
    found = [f for f in result.findings if f.code == "DS801"]
    assert [(f.line, f.column, f.fails_in) for f in found] == [(13, 35, "step"), (22, 35, "step")]
    assert all(f.related == (("./webui.py", 7, 22, "true division: psutil.virtual_memory().total / 1024 ..."),)
               for f in found)
    assert "data['train']['batch_size'] gets a float" in found[0].message


def test_the_int_webui_is_clean(tmp_path):
    assert codes(run(tmp_path, {"webui.py": fx.WEBUI_INT})) == []


def test_float_batch_size_from_another_file_reaches_a_dataloader(tmp_path):
    files = {
        "settings.py": "import os\n\nbatch_size = os.cpu_count() / 2\n",
        "train.py": "from torch.utils.data import DataLoader\n\nfrom settings import batch_size\n\n\n"
                    "def loader(ds):\n    return DataLoader(ds, batch_size)\n",
    }
    finding = only(run(tmp_path, files), "DS801")
    assert (finding.file, finding.line, finding.fails_in) == ("./train.py", 7, "initialize")
    assert finding.related == (("./settings.py", 3, 14, "true division: os.cpu_count() / 2"),)


@pytest.mark.parametrize("body, reported", [
    ("bs = n / 2\n    DataLoader(ds, batch_size=bs)", True),
    ("hps.train.batch_size = n / world", True),
    ('return {"global_batch_size": num_samples / gas, "dp_size": dp}', False),  # tensors, maybe: OpenRLHF
    ('return {"global_batch_size": num_samples / 2}', True),
    ("cfg = {'batch_size': n / 4}", True),
    ("bs = n / 2\n    bs = int(bs)\n    DataLoader(ds, batch_size=bs)", False),
    ("DataLoader(ds, batch_size=int(n / 2))", False),
    ("DataLoader(ds, batch_size=n // 2)", False),
    ("DataLoader(ds, batch_size=max(1, round(n / 2)))", False),
    ("self.batch_size = n / 2", False),  # an attribute of the object, not a config
    ("lr = 1e-4 * n / 256\n    DataLoader(ds, batch_size=n)", False),
    ("path = root / 'batch'\n    cfg = {'batch_size': 8, 'path': path}", False),
    ("cfg['batch_size'] = math.ceil(n / 8)", False),
    ("json.dump({'train': {'batch_size': n / 2}}, handle)", True),
    ("wandb.log({'avg_batch_size': n / world})", False),  # a metric, not a config
    # augmented assignments: `x op= y` is `x = x op y`, the left x the one assigned before
    ("bs = n\n    bs /= 2\n    DataLoader(ds, batch_size=bs)", True),
    ("bs = n\n    bs //= 2\n    DataLoader(ds, batch_size=bs)", False),
    ("k = 4\n    k += 2\n    DataLoader(ds, batch_size=n // k)", False),  # once a crash that ended the run
])
def test_float_batch_sizes_and_correct_ones(tmp_path, body, reported):
    text = f"import math\n\nfrom torch.utils.data import DataLoader\n\n\ndef f(ds, n, hps, cfg, self, world, root):\n" \
           f"    {body}\n"
    result = run(tmp_path, {"script.py": text})
    assert not result.crashed
    assert codes(result) == (["DS801"] if reported else [])


def test_a_check_that_crashes_on_one_script_is_reported_for_it_and_the_run_goes_on(tmp_path, monkeypatch):
    """dsconfig's own bug in one script's checks: that script's internal error, with its path; the other scripts
    and the configs keep their findings."""
    from dsconfig.training import scripts

    real = scripts._float_batch_sizes

    def crashing_on_one(project, source):
        if source.path.endswith("broken.py"):
            raise AttributeError("a bug in a check")
        return real(project, source)

    monkeypatch.setattr(scripts, "_float_batch_sizes", crashing_on_one)
    loader = "from torch.utils.data import DataLoader\n\n\ndef f(ds, n):\n    DataLoader(ds, batch_size=n / 2)\n"
    result = run(tmp_path, {"broken.py": loader, "fine.py": loader, "ds_config.json": '{"train_batch_size": 8.0}'})
    assert [(error.path, str(error)) for error in result.crashed] == \
        [("./broken.py", "./broken.py: AttributeError: a bug in a check")]
    assert {(f.file, f.code) for f in result.findings if f.code in ("DS801", "DS201")} == \
        {("./fine.py", "DS801"), ("./ds_config.json", "DS201")}


# -- DS802 batch-indivisible-devices ---------------------------------------------------------------------


def test_norm_stats_batch_of_one_on_two_devices(tmp_path):
    result = run(tmp_path, fx.jax_project(1), world_sizes=(1, 2))
    finding = only(result, "DS802")
    assert (finding.file, finding.line, finding.world_size, finding.fails_in) == \
        ("./scripts/compute_norm_stats.py", 10, 2, "step")
    assert "batch size 1 is split over 2 devices by TorchDataLoader" in finding.message
    assert "use 2 (1 per device) or 4 (2 per device)" in finding.message
    splits = "TorchDataLoader splits each batch over all devices with jax.make_array_from_process_local_data"
    assert finding.related == (("./openpi_lite/training/data_loader.py", 18, 42, splits),)
    assert result.scripts.used["./scripts/compute_norm_stats.py"] == {"world_sizes", "batchnorm"}
    assert result.scripts.batchnorm is None


def test_a_batch_of_two_splits_unless_a_batchnorm_layer_is_built(tmp_path):
    assert codes(run(tmp_path / "a", fx.jax_project(2), world_sizes=(2,))) == []
    # a BatchNorm layer the scripts build is found, but only --batchnorm says the trained model has it
    result = run(tmp_path / "b", fx.jax_project(2, fx.TORCH_BATCHNORM_MODEL), world_sizes=(2,))
    assert codes(result) == []
    assert result.scripts.batchnorm == ("./openpi_lite/models/policy.py", 7, 21,
                                        "nn.BatchNorm1d builds a BatchNorm layer")
    result = run(tmp_path / "d", fx.jax_project(2, fx.TORCH_BATCHNORM_MODEL), world_sizes=(2,), batchnorm=True)
    finding = only(result, "DS802")
    assert "each device gets 1 sample" in finding.message and "use 4 (2 per device)" in finding.message
    assert finding.related[-1] == result.scripts.batchnorm
    # --batchnorm says the same without a layer in the scripts
    assert codes(run(tmp_path / "c", fx.jax_project(2), world_sizes=(2,), batchnorm=True)) == ["DS802"]


def test_no_world_size_no_report(tmp_path):
    result = run(tmp_path, fx.jax_project(1))
    assert codes(result) == [] and result.scripts.used == {}


def test_batches_that_split(tmp_path):
    assert codes(run(tmp_path, fx.jax_project(32), world_sizes=(1, 2, 4, 8))) == []


def test_a_loader_that_does_not_shard_is_quiet(tmp_path):
    files = fx.jax_project(1)
    files["openpi_lite/training/data_loader.py"] = fx.JAX_DATA_LOADER.replace(
        "jax.make_array_from_process_local_data(self._sharding, x)", "np.asarray(x)")
    assert codes(run(tmp_path, files, world_sizes=(2,))) == []


def test_flax_shard_next_to_a_literal_dataloader(tmp_path):
    text = """
        from flax.jax_utils import shard
        from torch.utils.data import DataLoader


        def train(ds, p_step, state):
            for batch in DataLoader(ds, batch_size=3, drop_last=True):
                state = p_step(state, shard(batch))
        """
    finding = only(run(tmp_path, {"train_flax.py": text}, world_sizes=(2, 3)), "DS802")
    assert finding.world_size == 2 and "use 2 (1 per device) or 4 (2 per device)" in finding.message


def test_named_script_finds_its_loader_beside_it(tmp_path):
    files = {"norm.py": fx.NORM_STATS.replace("{batch}", "1").replace("openpi_lite.training.", ""),
             "data_loader.py": fx.JAX_DATA_LOADER, "config.py": fx.JAX_CONFIG}
    assert codes(run(tmp_path, files, ["norm.py"], world_sizes=(2,))) == ["DS802"]


# -- reading -----------------------------------------------------------------------------------------------


def test_named_script_that_does_not_parse_is_ds000_with_its_position(tmp_path):
    result = run(tmp_path, {"train.py": "def main(:\n    pass\n"}, ["train.py"])
    finding = only(result, "DS000")
    assert (finding.line, finding.column, finding.fails_in) == (1, 10, "load")
    assert "Python cannot parse it" in finding.message


def test_walked_script_that_does_not_parse_is_skipped(tmp_path):
    result = run(tmp_path, {"broken.py": "def main(:\n", "webui.py": fx.WEBUI_FLOAT})
    assert [f.code for f in result.findings] == ["DS801", "DS801"]


def test_named_script_not_utf8(tmp_path):
    (tmp_path / "train.py").write_bytes(b"x = 1\ny = '\xff'\n")
    finding = only(run(tmp_path, {}, ["train.py"]), "DS000")
    assert (finding.line, finding.column) == (2, 6) and "byte 0xff" in finding.message


def test_coding_cookie_is_honoured(tmp_path):
    text = "# -*- coding: latin-1 -*-\nfrom torch.utils.data import DataLoader\nDataLoader(d, batch_size=8 / 2)  # \xe9\n"
    (tmp_path / "train.py").write_bytes(text.encode("latin-1"))
    assert codes(run(tmp_path, {}, ["train.py"])) == ["DS801"]


def test_no_ds005_for_scripts(tmp_path):
    result = run(tmp_path, {"util.py": "print('hello')\n", "train.py": fx.LIGHTNING_PLAIN}, ["util.py", "train.py"])
    assert result.findings == []


def test_too_large_named_script_and_walked_one(tmp_path):
    big = "x = 1\n" * 50_000
    assert [f.code for f in run(tmp_path, {"train.py": big}, ["train.py"]).findings] == ["DS007"]
    assert run(tmp_path, {"train.py": big}, ["."]).findings == []


# -- the command line and the formats ---------------------------------------------------------------------------


def test_exit_codes_and_evidence_in_every_format(tmp_path, monkeypatch):
    fx.write(tmp_path, fx.tts_project())
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    result = runner.invoke(lint_command, ["train.py", "--no-config", "--dataset-size", "1000", "--world-size", "1,2,3"])
    assert result.exit_code == 1
    assert result.stdout.startswith("train.py:11:15: error DS800 Trainer keeps use_distributed_sampler=True")
    full = runner.invoke(lint_command, ["train.py", "--no-config", "--format", "full"]).stdout
    assert "  = note: data_module.py:16:16: DataLoader(..., batch_sampler=...) gets a sampler that shards by rank" \
        in full
    assert "11 |     trainer = pl.Trainer(" in full
    items = json.loads(runner.invoke(lint_command, ["train.py", "--no-config", "--format", "json"]).stdout)
    assert items[0]["related"][3] == {"file": "text/data_utils.py", "line": 5, "column": 1,
                                      "message": "class DistributedBucketSampler subclasses DistributedSampler"}
    sarif = json.loads(runner.invoke(lint_command, ["train.py", "--no-config", "--format", "sarif"]).stdout)
    related = sarif["runs"][0]["results"][0]["relatedLocations"]
    assert related[2]["physicalLocation"]["artifactLocation"]["uri"] == "data_module.py"
    assert related[2]["physicalLocation"]["region"] == {"startLine": 14, "startColumn": 19}

    fx.write(tmp_path, fx.tts_project(", use_distributed_sampler=False"))
    clean = runner.invoke(lint_command, ["train.py", "--no-config"])
    assert clean.exit_code == 0 and clean.stdout == ""


def test_a_folder_of_scripts_only_is_linted(tmp_path, monkeypatch):
    fx.write(tmp_path, {"src/train.py": fx.LIGHTNING_PLAIN})
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(lint_command, ["src", "--no-config"])
    assert result.exit_code == 0, result.output


def test_the_compilers_syntax_warnings_are_not_printed(tmp_path):
    """`1if x` and "\\d" make Python warn while it parses; a lint run prints only its own lines."""
    import subprocess
    import sys
    script = tmp_path / "train.py"
    script.write_text('from torch.utils.data import DataLoader\nx = 1if True else 2\ny = "\\\\d"\n'
                      "DataLoader(d, batch_size=8)\n")
    result = subprocess.run([sys.executable, "-W", "default", "-m", "dsconfig", "lint", "--no-config", str(script)],
                            capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode == 0 and "Warning" not in result.stderr, result.stderr
    assert result.stderr.strip() == "no problems in 1 file"
