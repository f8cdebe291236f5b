"""The per-release data (schemas/deepspeed-releases.json) as the lint path reads it, and
`--deepspeed-version` on the command line. What each release really does is checked against the
release itself in test_releases_differential.py; here, that the data is whole and the options behave."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from dsconfig.deepspeed import releases, schema
from tests.helpers import lint_text

DSCONFIG = [sys.executable, "-m", "dsconfig"]


def run(*args, cwd):
    return subprocess.run([*DSCONFIG, *args], capture_output=True, text=True, cwd=str(cwd))


def test_every_supported_release_has_data_and_the_newest_is_the_schema_file():
    data = json.loads(releases.data_path().read_text(encoding="utf-8"))
    assert list(data["releases"]) == list(releases.SUPPORTED)
    assert data["newest"] == releases.NEWEST == releases.SUPPORTED[-1]
    assert releases.patched(schema.load(), releases.NEWEST) == schema.load()
    names = set(releases.facts(releases.NEWEST))
    assert all(set(releases.facts(v)) == names for v in releases.SUPPORTED)


def test_groups_are_runs_of_consecutive_releases_that_cover_them_all():
    groups = releases.same_behaviour(releases.SUPPORTED)
    assert [v for group in groups for v in group] == list(releases.SUPPORTED)
    assert 1 < len(groups) < len(releases.SUPPORTED)


def test_a_release_schema_differs_where_the_release_did():
    schema.use("0.16.9")
    assert schema.model_branch(schema.property_of(schema.root(), "fp16")) is None  # read key by key then
    assert schema.removed() == ()  # nothing refused by name before 0.19.7
    schema.use("0.19.8")
    assert schema.model_branch(schema.property_of(schema.root(), "fp16")) is not None
    assert "/curriculum_learning" in dict(schema.removed())


def test_an_unknown_release_fails_when_chosen():
    with pytest.raises(releases.UnknownRelease):
        schema.use("0.16.10")


def test_spans_name_runs_of_releases():
    assert releases.spans(["0.14.0", "0.14.1", "0.14.2"]) == "0.14.0 to 0.14.2"
    assert releases.spans(["0.14.5", "0.15.0", "0.19.8"]) == "0.14.5 to 0.15.0, 0.19.8"
    assert releases.spans([]) == ""


def test_version_keys_compare_numerically():
    assert releases.key("0.16.9+cu121") == (0, 16, 9)
    assert releases.key("0.17.2.dev0") == (0, 17, 2)
    assert releases.key("0.9.5") < releases.key("0.14.0")


def test_findings_follow_the_release():
    text = json.dumps({"train_batch_size": 8, "bf16": {"enabled": True, "bf16_master_weights_and_grads": True},
                       "zero_optimization": {"stage": 2}, "amp": {"enabled": False}})
    codes = {v: {f.code for f in lint_text(text, "ds_config.json", deepspeed_version=v, world_sizes=(1,))}
             for v in ("0.16.9", "0.17.4", "0.19.8")}
    assert "DS101" in codes["0.17.4"] and "DS101" not in codes["0.16.9"] and "DS101" not in codes["0.19.8"]
    assert "DS100" in codes["0.19.8"] and "DS100" not in codes["0.17.4"]
    removed = next(f for f in lint_text(text, "ds_config.json", deepspeed_version="0.19.8") if f.code == "DS100")
    assert "DeepSpeed 0.14.0 to 0.19.7 accept it" in removed.message


def test_summary_json_and_sarif_name_the_release(tmp_path):
    (tmp_path / "ds_config.json").write_text('{"train_batch_size": 8, "gradient_clipping": 1.0}')
    done = run("lint", "ds_config.json", "--world-size", "2", "--deepspeed-version", "0.17.4", cwd=tmp_path)
    assert done.returncode == 0, done.stderr  # 8 = 4 x 1 x 2
    assert "(DeepSpeed 0.17.4: --deepspeed-version 0.17.4)" in done.stderr
    items = json.loads(run("lint", "ds_config.json", "--format", "json", "--show-info", "--deepspeed-version",
                           "0.15.0", cwd=tmp_path).stdout)
    assert items and {item["deepspeed_version"] for item in items} == {"0.15.0"}
    sarif = json.loads(run("lint", "ds_config.json", "--format", "sarif", "--deepspeed-version", "0.15.0",
                           cwd=tmp_path).stdout)
    assert sarif["runs"][0]["properties"]["deepspeedVersion"] == "0.15.0"


def test_the_setting_and_a_project_pin_choose_the_release(tmp_path):
    (tmp_path / "ds_config.json").write_text('{"train_batch_size": 8}')
    (tmp_path / ".dsconfig.toml").write_text('deepspeed-version = "0.16.9"\n')
    assert "(DeepSpeed 0.16.9:" in run("lint", "ds_config.json", cwd=tmp_path).stderr
    assert "(DeepSpeed 0.18.4:" in run("lint", "ds_config.json", "--deepspeed-version", "0.18.4",
                                       cwd=tmp_path).stderr


def test_all_prints_ranges_of_releases_and_fails_when_one_rejects(tmp_path):
    (tmp_path / "ds_config.json").write_text(json.dumps(
        {"train_batch_size": 8, "bf16": {"enabled": True, "bf16_master_weights_and_grads": True},
         "zero_optimization": {"stage": 2}}))
    done = run("lint", "ds_config.json", "--deepspeed-version", "all", cwd=tmp_path)
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    assert lines[0] == "ds_config.json"
    assert lines[1].split() == ["0.14.0", "to", "0.17.0", "accepts"]
    assert lines[2].startswith("  0.17.1 to 0.18.2") and "rejects  DS101" in lines[2]
    assert lines[3].split() == ["0.18.3", "to", "0.19.8", "accepts"]
    ranges = json.loads(run("lint", "ds_config.json", "--deepspeed-version", "all", "--format", "json",
                            cwd=tmp_path).stdout)[0]["releases"]
    assert [(r["from"], r["to"], r["accepts"]) for r in ranges] == [
        ("0.14.0", "0.17.0", True), ("0.17.1", "0.18.2", False), ("0.18.3", "0.19.8", True)]
    (tmp_path / "ds_config.json").write_text('{"train_batch_size": 8}')
    assert run("lint", "ds_config.json", "--deepspeed-version", "all", cwd=tmp_path).returncode == 0


@pytest.mark.parametrize("version", ["0.14.0", "0.16.9", "0.17.1"])
def test_generate_writes_a_config_its_release_accepts(tmp_path, version):
    done = run("generate", "--gpus", "2", "--gpu", "H100-80GB", "--model", "llama-2-7b", "--target", "deepspeed",
               "--deepspeed-version", version, "--output-dir", str(tmp_path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"written for DeepSpeed {version}" in done.stdout
    linted = run("lint", "ds_config.json", "--gpus", "2", "--deepspeed-version", version, "--target", "deepspeed",
                 cwd=tmp_path)
    assert " error" not in linted.stderr, linted.stdout


def test_a_key_another_release_spells_differently_gets_the_replayed_spelling():
    old = json.dumps({"train_batch_size": 8, "seq_parallel_comm_data_type": "bf16", "aio": {"thread_count": 2}})
    found = {f.pointer: f for f in lint_text(old, "ds_config.json", deepspeed_version="0.19.8") if f.code == "DS102"}
    assert json.loads(found["/seq_parallel_comm_data_type"].fix) == "seq_parallel_communication_data_type"
    assert json.loads(found["/aio/thread_count"].fix) == "intra_op_parallelism"
    # 0.14.0 reads those spellings, and refuses bf16 there (it spelled it bfp16), as the release does
    findings = lint_text(old, "ds_config.json", deepspeed_version="0.14.0")
    assert not [f for f in findings if f.code == "DS102"]
    assert [f.pointer for f in findings if f.code == "DS406"] == ["/seq_parallel_comm_data_type"]


@pytest.mark.parametrize("block, held, version", [
    ({"amp": {"enabled": True, "opt_level": "O1"}}, "amp_enabled", "0.19.5"),
    ({"progressive_layer_drop": {"enabled": True, "theta": 0.5, "gamma": 0.001}}, "pld_enabled", "0.17.1"),
    ({"curriculum_learning": {"enabled": True, "curriculum_type": "seqlen", "min_difficulty": 8,
                              "max_difficulty": 64, "schedule_type": "fixed_linear",
                              "schedule_config": {"total_curriculum_step": 10, "difficulty_step": 8}}},
     "curriculum_enabled_legacy", "0.14.0"),
])
def test_a_block_removed_later_is_read_by_the_older_release(block, held, version):
    """Not 'DeepSpeed ignores it' (DS102): the release reads it (its DeepSpeedConfig holds it on) and a later
    release refuses it (DS104 names that release; DS100 under it)."""
    from tests import releases as oracles
    release = oracles.release(version)
    if release is None:
        pytest.skip(f"DeepSpeed {version} could not be fetched")
    config = {"train_batch_size": 8, **block}
    answer = release.verdict(config, 1, True)
    assert answer["ok"] and answer["held"][held] is True
    key = next(iter(block))
    findings = {f.code: f for f in lint_text(json.dumps(config), "ds_config.json", deepspeed_version=version)}
    assert "DS102" not in findings and "DS100" not in findings
    assert findings["DS104"].pointer == f"/{key}"
    assert f"is read by DeepSpeed {version}, but DeepSpeed 0.19.8 removed it" in findings["DS104"].message
    assert "DS100" in {f.code for f in lint_text(json.dumps(config), "ds_config.json", deepspeed_version="0.19.8")}
