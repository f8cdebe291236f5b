"""Accelerate YAML rules: each rule failing and passing, YAML traps, positions, pairing, and the real
DeepSpeedPlugin / Trainer as oracles for what fails in the training processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsconfig.boundary import Boundary
from dsconfig.phases import INITIALIZE, LAUNCH, LOAD
from tests import helpers

yaml = pytest.importorskip("yaml")
ROOT = Path(__file__).resolve().parents[2]


def lint(tmp_path, text, name="accelerate_config.yaml", **options):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return helpers.lint(path, **options)


def only(findings, code):
    found = [f for f in findings if f.code == code]
    assert found, f"no {code} in {findings}"
    return found


def has(findings, code) -> bool:
    return any(f.code == code for f in findings)


DS = "distributed_type: DEEPSPEED\nnum_processes: 8\n"

# code, failing YAML, pointer, fails_in, passing YAML (the same mistake fixed)
RULES = [
    ("ACC001", DS + "num_process: 8\n", "/num_process", LOAD, DS),
    ("ACC002", DS + "deepspeed_config:\n  zero_stag: 3\n", "/deepspeed_config/zero_stag", None,
     DS + "deepspeed_config:\n  zero_stage: 3\n"),
    ("ACC003", "distributed_type: FSDP\nnum_processes: 8\nfsdp_config:\n  sharding_strategi: FULL_SHARD\n",
     "/fsdp_config/sharding_strategi", None,
     "distributed_type: FSDP\nnum_processes: 8\nfsdp_config:\n  sharding_strategy: FULL_SHARD\n"),
    ("ACC004", DS + "deepspeed_config:\n  deepspeed_config_file: ds.json\n  zero_stage: 3\n",
     "/deepspeed_config/zero_stage", INITIALIZE,
     DS + "deepspeed_config:\n  deepspeed_config_file: ds.json\n  zero3_init_flag: true\n"),
    ("ACC005", "num_processes: 8\ncompute_environment: LOCAL_MACHINE\n", "/distributed_type", LOAD, DS),
    ("ACC006", DS + "mixed_precision: bfloat16\n", "/mixed_precision", LAUNCH, DS + "mixed_precision: bf16\n"),
    ("ACC007", "distributed_type: MULTI_GPU\n", "/num_processes", LAUNCH, "distributed_type: 'NO'\n"),
    ("ACC008", "distributed_type: MULTI_GPU\nnum_processes: 12\nnum_machines: 5\nmain_process_ip: 10.0.0.1\n",
     "/num_processes", None, "distributed_type: MULTI_GPU\nnum_processes: 10\nnum_machines: 5\n"
                               "main_process_ip: 10.0.0.1\n"),
    ("ACC009", "distributed_type: MULTI_GPU\nnum_processes: 2\nnum_machines: 4\nmain_process_ip: 10.0.0.1\n",
     "/num_processes", None, "distributed_type: MULTI_GPU\nnum_processes: 8\nnum_machines: 4\n"
                               "main_process_ip: 10.0.0.1\n"),
    ("ACC010", "distributed_type: MULTI_GPU\nnum_processes: 2\ngpu_ids: '0'\n", "/gpu_ids", LAUNCH,
     "distributed_type: MULTI_GPU\nnum_processes: 2\ngpu_ids: '0,1'\n"),
    ("ACC011", "distributed_type: 'NO'\nnum_processes: 8\n", "/num_processes", None,
     "distributed_type: 'NO'\nnum_processes: 1\n"),
    ("ACC012", DS.replace("8", "16") + "num_machines: 2\n", "/num_machines", None,
     DS.replace("8", "16") + "num_machines: 2\ndeepspeed_config:\n  deepspeed_hostfile: /job/hostfile\n"),
    ("ACC013", "distributed_type: MULTI_GPU\nnum_processes: 16\nnum_machines: 2\n", "/main_process_ip", None,
     "distributed_type: MULTI_GPU\nnum_processes: 16\nnum_machines: 2\nmain_process_ip: 10.0.0.1\n"),
    ("ACC014", DS + "deepspeed_config:\n  zero_stage: 3\n  offload_param_device: nvme\n",
     "/deepspeed_config/offload_param_device", None,
     DS + "deepspeed_config:\n  zero_stage: 3\n  offload_param_device: cpu\n"),
    ("ACC015", DS + "deepspeed_config:\n  zero_stage: 2\n  offload_param_device: cpu\n",
     "/deepspeed_config/offload_param_device", None,
     DS + "deepspeed_config:\n  zero_stage: 3\n  offload_param_device: cpu\n"),
    ("ACC016", DS + "mixed_precision: no\n", "/mixed_precision", LAUNCH, DS + "mixed_precision: 'no'\n"),
    ("ACC019", DS + "deepspeed_config:\n  zero_stage: three\n", "/deepspeed_config/zero_stage", INITIALIZE,
     DS + "deepspeed_config:\n  zero_stage: 3\n"),
]


@pytest.mark.parametrize("code,failing,pointer,fails_in,passing", RULES, ids=[r[0] for r in RULES])
def test_rule_fails_and_passes(tmp_path, code, failing, pointer, fails_in, passing):
    found = only(lint(tmp_path, failing), code)
    assert any(f.pointer == pointer and f.fails_in == fails_in for f in found), found
    assert not has(lint(tmp_path, passing), code)


def test_acc017_only_for_the_trainer(tmp_path):
    text = DS + "deepspeed_config:\n  gradient_accumulation_steps: 1\n"
    finding = only(lint(tmp_path, text, target="hf-trainer"), "ACC017")[0]
    assert finding.fails_in == INITIALIZE and "TrainingArguments" in finding.message
    assert not has(lint(tmp_path, text, target="accelerate"), "ACC017")


def test_acc020_missing_config_file(tmp_path):
    finding = only(lint(tmp_path, DS + "deepspeed_config:\n  deepspeed_config_file: nowhere.json\n"), "ACC020")[0]
    assert finding.fails_in == INITIALIZE and finding.line == 4


def test_did_you_mean_and_json_keys(tmp_path):
    findings = lint(tmp_path, DS + "deepspeed_config:\n  overlap_comm: true\n  train_micro_batch_size_per_gpu: 4\n"
                                   "  bf16: {enabled: true}\n  seq_parallel_communication_data_type: bf16\n")
    messages = [f.message for f in only(findings, "ACC002")]
    assert len(messages) == 4
    assert all("this is a ds_config.json key" in m or "is a ds_config.json key" in m for m in messages)
    typo = only(lint(tmp_path, DS + "num_machine: 2\n"), "ACC001")[0]
    assert "did you mean `num_machines`" in typo.message
    misplaced = only(lint(tmp_path, DS + "zero_stage: 3\n"), "ACC001")[0]
    assert "belongs under `deepspeed_config`" in misplaced.message


def test_prefix_rules(tmp_path):
    """fsdp_/dynamo_/fp8_ sub-dict keys are accepted with or without the prefix; the others as written."""
    text = ("distributed_type: FSDP\nnum_processes: 2\nfsdp_config:\n  fsdp_version: 2\n  reshard_after_forward: true\n"
            "fp8_config:\n  backend: TE\n  amax_history_len: 16\n  amax_history_length: 16\n"
            "dynamo_config:\n  backend: inductor\n  dynamo_mode: default\n"
            "parallelism_config:\n  parallelism_config_tp_size: 2\n  tp_size: 2\n")
    unknown = {f.pointer for f in lint(tmp_path, text) if f.code == "ACC003"}
    # `accelerate config` writes amax_history_length; the runtime reads amax_history_len.
    assert unknown == {"/fp8_config/amax_history_length", "/parallelism_config/tp_size"}


def test_distributed_type_messages(tmp_path):
    bad = only(lint(tmp_path, "distributed_type: deepspeed\nnum_processes: 2\n"), "ACC005")[0]
    assert bad.fails_in == LOAD and "did you mean DEEPSPEED" in bad.message and bad.fix == '"DEEPSPEED"'
    env = only(lint(tmp_path, DS + "compute_environment: LOCAL\n"), "ACC005")[0]
    assert env.fails_in == LOAD and env.pointer == "/compute_environment"


def test_sagemaker_configs_are_recognised(tmp_path):
    text = ("compute_environment: AMAZON_SAGEMAKER\ndistributed_type: DATA_PARALLEL\nec2_instance_type: ml.p3\n"
            "num_processes: 8\n")
    findings = lint(tmp_path, text)
    assert {(f.code, f.pointer, f.fails_in) for f in findings if f.severity == "error"} == {
        ("ACC001", "/num_processes", LOAD),  # a local-machine key
        ("ACC019", "/iam_role_name", LOAD),  # required
        ("ACC005", "/compute_environment", LAUNCH),  # accelerate 1.15 cannot launch SageMaker configs
    }
    assert "local-machine" in only(findings, "ACC001")[0].message


# -- the world size ---------------------------------------------------------------------------


def test_gpus_and_nodes(tmp_path):
    base = "distributed_type: MULTI_GPU\nnum_machines: 2\nmain_process_ip: 10.0.0.1\n"
    per_node = only(lint(tmp_path, base + "num_processes: 8\n", gpus=8, nodes=2, world_sizes=(16,)), "ACC009")[0]
    assert "per-machine" in per_node.message and per_node.fix == "16" and per_node.world_size == 8
    too_many = only(lint(tmp_path, base + "num_processes: 32\n", gpus=8, nodes=2, world_sizes=(16,)), "ACC010")[0]
    assert too_many.fails_in == INITIALIZE and "16 processes but has 8 GPUs" in too_many.message
    # a YAML's own launch (12 processes) is not "corrected" to a --world-size: the YAML says its world size
    assert not has(lint(tmp_path, base + "num_processes: 12\n", world_sizes=(16,)), "ACC009")
    assert not has(lint(tmp_path, "distributed_type: 'NO'\nnum_processes: 1\n", gpus=8, world_sizes=(8,)), "ACC009")
    assert not has(lint(tmp_path, base + "num_processes: 16\n", gpus=8, nodes=2, world_sizes=(16,)), "ACC009")


def test_gpu_ids_fail_only_for_multi_gpu_at_launch(tmp_path):
    """Accelerate raises for MULTI_GPU with one id; for DeepSpeed the ranks fail later, in the processes."""
    text = "num_processes: 4\ngpu_ids: '0,1'\n"
    deepspeed = only(lint(tmp_path, "distributed_type: DEEPSPEED\n" + text), "ACC010")[0]
    assert deepspeed.fails_in == INITIALIZE
    multi = only(lint(tmp_path, "distributed_type: MULTI_GPU\nnum_processes: 2\ngpu_ids: '1'\n"), "ACC010")[0]
    assert multi.fails_in == LAUNCH and "Less than two GPU ids" in multi.message


@pytest.mark.parametrize("launcher", ["pdsh", "openmpi", "mvapich", "mpich", "slurm", "nossh"])
def test_every_launcher_but_standard_needs_a_hostfile(tmp_path, launcher):
    text = (DS.replace("8", "16") + f"num_machines: 2\nmain_process_ip: 10.0.0.1\n"
            f"deepspeed_config:\n  deepspeed_multinode_launcher: {launcher}\n")
    assert "world size of 8 instead of 16" in only(lint(tmp_path, text), "ACC012")[0].message
    assert not has(lint(tmp_path, text.replace(launcher, "standard")), "ACC012")


def test_deepspeed_runner_needs_a_hostfile():
    """ACC012's claim, on DeepSpeed's own runner: no hostfile means local resources only."""
    runner = pytest.importorskip("deepspeed.launcher.runner")
    assert runner.fetch_hostfile("None") is None


# -- YAML: traps, positions, duplicates, anything ----------------------------------------------


def test_yaml11_booleans(tmp_path):
    # `distributed_type: NO` reads as False, which launches what 'NO' launches once num_processes is written
    # (test_an_unquoted_no_distributed_type_launches_what_no_launches): nothing to report
    assert not has(lint(tmp_path, "distributed_type: NO\nnum_processes: 1\n"), "ACC016")
    missing = lint(tmp_path, "distributed_type: NO\n")  # not defaulted to 1 process: launch fails
    no = only(missing, "ACC016")[0]
    assert no.fix == '"NO"' and no.pointer == "/distributed_type"
    assert only(missing, "ACC007")[0].fails_in == LAUNCH
    for text in ("gpu_ids: no\n", "dynamo_config:\n  dynamo_backend: no\n", "dynamo_backend: off\n"):
        findings = lint(tmp_path, "distributed_type: MULTI_GPU\nnum_processes: 2\n" + text)
        assert only(findings, "ACC016")[0].fails_in == LAUNCH, text
    # Where Accelerate wants a boolean, `no` is just that.
    assert not has(lint(tmp_path, DS + "use_cpu: no\ndeepspeed_config:\n  zero3_init_flag: off\n"), "ACC016")
    quoted = lint(tmp_path, DS + "mixed_precision: 'no'\ndowncast_bf16: 'no'\n")
    assert not [f for f in quoted if f.severity == "error"]


@pytest.mark.parametrize("processes", [1, 2])
def test_an_unquoted_no_distributed_type_launches_what_no_launches(tmp_path, processes):
    """On Accelerate's own launcher: `NO` (False) and `'NO'` give the same launch when num_processes is written."""
    launch = pytest.importorskip("accelerate.commands.launch")
    seen = []
    for word in ("NO", "'NO'"):
        path = tmp_path / f"{len(seen)}.yaml"
        path.write_text(f"compute_environment: LOCAL_MACHINE\ndistributed_type: {word}\nnum_processes: {processes}\n"
                        "mixed_precision: 'no'\n")
        args = launch.launch_command_parser().parse_args(["--config_file", str(path), "train.py"])
        args, _, _ = launch._validate_launch_command(args)
        seen.append({name: getattr(args, name) for name in ("multi_gpu", "use_deepspeed", "use_fsdp", "tpu",
                                                            "num_processes", "num_machines", "mixed_precision")})
    assert seen[0] == seen[1]
    assert not has(lint(tmp_path, f"distributed_type: NO\nnum_processes: {processes}\n"), "ACC016")


def test_positions_of_keys_and_values(tmp_path):
    findings = lint(tmp_path, "# comment\n" + DS + "mixed_precision:   bfloat16\nbogus: 1\n")
    precision = only(findings, "ACC006")[0]
    assert (precision.line, precision.column) == (4, 20)  # the value
    unknown = only(findings, "ACC001")[0]
    assert (unknown.line, unknown.column) == (5, 1)  # the key
    nested = only(lint(tmp_path, DS + "deepspeed_config:\n    zero_stag: 3\n"), "ACC002")[0]
    assert (nested.line, nested.column) == (4, 5)


def test_syntax_error_and_duplicates(tmp_path):
    error = only(lint(tmp_path, DS + "deepspeed_config: [1,\n"), "DS000")[0]
    assert error.fails_in == LOAD and (error.line, error.column) == (4, 1)
    duplicate = only(lint(tmp_path, DS + "num_processes: 4\n"), "DS001")[0]
    assert duplicate.fails_in is None and duplicate.line == 3 and "first at line 2" in duplicate.message
    merged = lint(tmp_path, "distributed_type: DEEPSPEED\ndeepspeed_config: &ds\n  zero_stage: 2\n"
                            "num_processes: 2\nfsdp_config:\n  <<: *ds\n  zero_stage: 3\n")
    assert not has(merged, "DS001")  # an explicit key next to a merge key is an override, not a duplicate


def test_not_a_config_and_empty_files(tmp_path):
    assert [f.code for f in lint(tmp_path, "steps: [train, eval]\n", name="workflow.yml")] == ["DS005"]
    # broken YAML: skipped when a walk finds it, an error when it is named (the user says it is a config)
    lint(tmp_path, "a: [\n", name="workflow.yml")
    assert [f.code for f in helpers.lint_folder(tmp_path)] == ["DS005"]
    assert [f.code for f in lint(tmp_path, "a: [\n", name="workflow.yml")] == ["DS000"]
    empty = only(lint(tmp_path, ""), "DS000")[0]
    assert empty.fails_in == LOAD  # Accelerate: 'NoneType' object has no attribute 'get'


@pytest.mark.parametrize("text", [
    "a: &x [1, 2]\nb: *x\nc: {<<: {d: 1}, e: 2}\n",
    "a: !!binary aGVsbG8=\nb: 2001-12-14t21:59:43.10-05:00\nc: !!set {x, y}\n",
    "a: 2001-13-45\n",  # the timestamp resolver matches, the constructor raises ValueError
    "a: !!python/object:os.system x\n",
    "[" * 2000 + "]" * 2000,
    "a: b\n---\nc: d\n",
    "\ufeffa: 1\n",
    "a: \x07\n",
    "? [a, b]\n: c\n",
])
def test_yaml_reads_like_safe_load(text):
    from dsconfig.yamldoc import YamlDocument
    doc = YamlDocument("x.yaml", text)
    try:
        expected = yaml.safe_load(text)
    except Exception:
        assert not doc.loaded and doc.error is not None
    else:
        assert doc.loaded and doc.value == expected


def test_billion_laughs_stays_cheap():
    from dsconfig.yamldoc import YamlDocument
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 9)]
    doc = YamlDocument("x.yaml", "\n".join(lines) + "\n")
    assert doc.loaded and len(doc.spans) < 200


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(alphabet=st.sampled_from(list("ab:-[]{}&*!#|>'\",? \n\t.0no\\%@`~<")), max_size=60))
def test_any_text_reads_like_safe_load_and_never_raises(text):
    from dsconfig.yamldoc import YamlDocument
    doc = YamlDocument("accelerate_config.yaml", text)
    try:
        expected = yaml.safe_load(text)
    except Exception:
        assert not doc.loaded
    else:
        assert doc.loaded and doc.value == expected
    findings = helpers.lint_text(text, "accelerate_config.yaml")
    assert all(f.line >= 1 and f.column >= 1 for f in findings)


# -- pairing -----------------------------------------------------------------------------------

PAIR_YAML = ("distributed_type: DEEPSPEED\nnum_processes: 13\nnum_machines: 2\nmain_process_ip: 10.0.0.1\n"
             "deepspeed_config:\n  deepspeed_multinode_launcher: standard\n  deepspeed_config_file: ds_config.json\n"
             "  zero3_init_flag: true\n")
PAIR_JSON = {"train_batch_size": 64, "train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 2,
             "fp16": {"enabled": True}, "zero_optimization": {"stage": 3, "sub_group_size": "auto"}}


def write_pair(folder: Path, yaml_text=PAIR_YAML, ds=None) -> tuple[Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "accelerate_config.yaml").write_text(yaml_text)
    (folder / "ds_config.json").write_text(json.dumps(ds or PAIR_JSON, indent=2))
    return folder / "accelerate_config.yaml", folder / "ds_config.json"


def test_folder_pairing_lints_the_json_once_in_context(tmp_path):
    yaml_path, json_path = write_pair(tmp_path / "configs")
    findings = helpers.lint_folder(tmp_path)
    on_json = [f for f in findings if f.file == str(json_path)]
    # 13 processes on 2 machines: 6 per machine, world size 12 (ACC008 on the YAML says so).
    assert only(findings, "ACC008")[0].world_size == 12
    batch = only(on_json, "DS202")
    assert {f.world_size for f in batch} == {12}
    # Linted for target accelerate: prepare() refuses an "auto" it has no value for.
    auto = only(on_json, "DS700")[0]
    assert auto.fails_in == "initialize" and "not found in kwargs" in auto.message
    keys = [(f.code, f.pointer, f.world_size, f.message) for f in on_json]
    assert len(keys) == len(set(keys)), "the JSON was linted twice"


def test_the_yamls_launch_wins_over_world_size(tmp_path):
    """The YAML states the world size its launch runs the JSON at (13 processes on 2 machines: 6 each, 12);
    --world-size is for files that do not say (a walk's other configs), and no ACC009 tells the YAML to write it."""
    yaml_path, json_path = write_pair(tmp_path)
    findings = helpers.lint(yaml_path, target="hf-trainer", world_sizes=(32,))
    on_json = [f for f in findings if f.file == str(json_path)]
    assert {f.world_size for f in on_json if f.code == "DS202"} == {12}
    assert not any("Accelerate's prepare()" in f.message for f in on_json)  # the target given still counts
    assert not has(findings, "ACC009")
    unsaid = write_pair(tmp_path / "unsaid", PAIR_YAML.replace("num_processes: 13\nnum_machines: 2\n"
                                                               "main_process_ip: 10.0.0.1\n", ""))
    on_json = [f for f in helpers.lint(unsaid[0], world_sizes=(32,)) if f.file == str(unsaid[1])]
    assert {f.world_size for f in on_json if f.code == "DS202"} == {32}


def test_pair_findings_in_both_files(tmp_path):
    yaml_text = PAIR_YAML.replace("  zero3_init_flag: true\n", "  zero3_init_flag: true\n  zero_stage: 2\n") \
        + "mixed_precision: bf16\n"
    yaml_path, json_path = write_pair(tmp_path, yaml_text)
    findings = helpers.lint(yaml_path)
    pair = [f for f in findings if f.code == "ACC018"]
    precision = [f for f in pair if "mixed_precision" in f.message and "fp16.enabled" in f.message]
    assert {f.file for f in precision} == {str(yaml_path), str(json_path)}
    in_yaml = next(f for f in precision if f.file == str(yaml_path))
    in_json = next(f for f in precision if f.file == str(json_path))
    assert f"{json_path}:{in_json.line}:{in_json.column}" in in_yaml.message
    assert f"{yaml_path}:{in_yaml.line}:{in_yaml.column}" in in_json.message
    assert in_yaml.fails_in == INITIALIZE and in_yaml.pointer == "/mixed_precision"
    stage = [f for f in pair if "zero_stage" in f.message]
    assert {f.file for f in stage} == {str(yaml_path), str(json_path)}
    assert has(findings, "ACC004")  # zero_stage and mixed_precision are refused next to the file anyway


def test_path_resolution_prefers_the_working_directory(tmp_path, monkeypatch):
    yaml_path, json_path = write_pair(tmp_path / "configs", ds=dict(PAIR_JSON, zero_optimization={"stage": 2}))
    launch_dir = tmp_path / "launch"
    launch_dir.mkdir()
    (launch_dir / "ds_config.json").write_text(json.dumps({"zero_optimization": {"stage": 3}, "bf16": {"enabled": True},
                                                           "train_micro_batch_size_per_gpu": 1}))
    monkeypatch.chdir(launch_dir)
    # the launch directory's file is outside what was linted: not opened until the user allows it
    refused = only([f for f in helpers.lint(yaml_path) if f.file == str(yaml_path)], "DS009")[0]
    assert str(launch_dir / "ds_config.json") in refused.message and "--allow-read" in refused.message
    findings = helpers.lint(yaml_path, boundary=Boundary.of([yaml_path, launch_dir]))
    assert {f.file for f in findings} - {str(yaml_path)} == {"ds_config.json"}
    monkeypatch.chdir(tmp_path)
    relative = helpers.lint(yaml_path, world_sizes=(8,))
    assert str(json_path) in {f.file for f in relative}
    note = only([f for f in relative if f.file == str(yaml_path)], "ACC015")[0]
    assert "found relative to the YAML's folder" in note.message


def test_cli_pairs_and_counts_files(tmp_path):
    yaml_path, json_path = write_pair(tmp_path)
    result = subprocess.run([sys.executable, "-m", "dsconfig", "lint", str(yaml_path), "--format", "json"],
                            capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 1, result.stderr
    files = {f["file"] for f in json.loads(result.stdout)}
    assert files == {str(yaml_path), str(json_path)}
    missing = subprocess.run([sys.executable, "-m", "dsconfig", "lint", str(tmp_path / "nope.yaml")],
                             capture_output=True, text=True, cwd=ROOT)
    assert missing.returncode == 2 and "no such file" in missing.stderr


# -- the real DeepSpeedPlugin and Trainer --------------------------------------------------------


def plugin_environment(yaml_path: Path) -> dict:
    """The ACCELERATE_* variables `accelerate launch` exports to every DeepSpeed process."""
    from accelerate.commands.launch import _validate_launch_command, launch_command_parser
    from accelerate.utils import launch as env_builders

    from tests.conftest import quiet_and_restored
    with quiet_and_restored():
        args = launch_command_parser().parse_args(["--config_file", str(yaml_path), "train.py"])
        args, defaults, mp_from_config = _validate_launch_command(args)
        fields = list(defaults.deepspeed_config) + (["mixed_precision"] if mp_from_config else [])
        args.deepspeed_fields_from_accelerate_config = ",".join(fields)
        _, env = env_builders.prepare_deepspeed_cmd_env(args)
    return {key: value for key, value in env.items() if key.startswith("ACCELERATE_")}


def build_plugin(yaml_path: Path, cwd: Path):
    """(plugin or None, error text or None, warnings) as each training process builds it."""
    pytest.importorskip("deepspeed")
    from accelerate.utils import DeepSpeedPlugin, patch_environment
    env = plugin_environment(yaml_path)
    saved = os.getcwd()
    os.chdir(cwd)
    try:
        with warnings.catch_warnings(record=True) as caught, patch_environment(**env):
            warnings.simplefilter("always")
            try:
                plugin = DeepSpeedPlugin()
                plugin.set_mixed_precision(env["ACCELERATE_MIXED_PRECISION"])  # what AcceleratorState does
            except Exception as error:
                return None, f"{type(error).__name__}: {error}", [str(w.message) for w in caught]
        return plugin, None, [str(w.message) for w in caught]
    finally:
        os.chdir(saved)


@pytest.mark.parametrize("extra,message", [
    ("  zero_stage: 3\n", "following accelerate config variables will be ignored"),
    ("mixed_precision: 'no'\n", "following accelerate config variables will be ignored"),
])
def test_acc004_against_deepspeed_plugin(tmp_path, extra, message):
    # An indented line lands under deepspeed_config, the other at the top level.
    yaml_path, _ = write_pair(tmp_path, DS + "deepspeed_config:\n  deepspeed_config_file: ds_config.json\n" + extra)
    finding = only(helpers.lint(yaml_path), "ACC004")[0]
    _, error, _ = build_plugin(yaml_path, tmp_path)
    assert error and message in error and finding.fails_in == INITIALIZE
    assert error.split(": ", 1)[1].split(".")[0] in finding.message  # the same words, quoted


def test_acc018_precision_against_deepspeed_plugin(tmp_path):
    yaml_path, _ = write_pair(tmp_path, PAIR_YAML.replace("num_machines: 2", "num_machines: 1")
                              + "mixed_precision: bf16\n")
    finding = next(f for f in helpers.lint(yaml_path)
                   if f.code == "ACC018" and f.file == str(yaml_path))
    # With mixed_precision in the YAML the plugin stops at ACC004 first; passed on the command line, the
    # precision conflict itself surfaces:
    plugin_text = PAIR_YAML.replace("num_machines: 2", "num_machines: 1")
    yaml_path.write_text(plugin_text)
    plugin, error, _ = build_plugin(yaml_path, tmp_path)
    assert plugin is not None
    with pytest.raises(ValueError) as raised:
        plugin.set_mixed_precision("bf16")
    assert str(raised.value) in finding.message


def test_acc015_zero3_init_against_deepspeed_plugin(tmp_path):
    yaml_path, _ = write_pair(tmp_path, PAIR_YAML.replace("num_machines: 2", "num_machines: 1"),
                              ds=dict(PAIR_JSON, zero_optimization={"stage": 2}))
    finding = only(helpers.lint(yaml_path), "ACC015")[0]
    plugin, error, caught = build_plugin(yaml_path, tmp_path)
    assert error is None and plugin.zero3_init_flag is False
    assert caught and caught[0] in finding.message


@pytest.mark.parametrize("section,expected", [
    ("  zero_stage: three\n", "ValueError"),
    ("  gradient_clipping: none\n", "could not convert string to float: 'none'"),
    ("  zero3_init_flag: maybe\n", "invalid truth value maybe"),
    ("  offload_optimizer_device: disk\n", None),  # DeepSpeed itself rejects it, when it parses the config
])
def test_acc019_against_deepspeed_plugin(tmp_path, section, expected):
    yaml_path = tmp_path / "accelerate_config.yaml"
    yaml_path.write_text(DS + "deepspeed_config:\n" + section)
    finding = only(helpers.lint(yaml_path), "ACC019")[0]
    assert finding.fails_in == INITIALIZE
    plugin, error, _ = build_plugin(yaml_path, tmp_path)
    if expected is not None:
        assert error and expected in error
    else:
        from dsconfig.deepspeed.models import check_sections
        errors = [f for f in check_sections(plugin.deepspeed_config).findings if f.fails_in]
        assert errors, "DeepSpeed should reject the offload device"


def test_acc014_nvme_path_never_reaches_deepspeed(tmp_path):
    yaml_path = tmp_path / "accelerate_config.yaml"
    yaml_path.write_text(DS + "deepspeed_config:\n  zero_stage: 3\n  offload_param_device: nvme\n"
                              "  offload_param_nvme_path: /local_nvme\n")
    assert has(helpers.lint(yaml_path), "ACC014")
    plugin, error, _ = build_plugin(yaml_path, tmp_path)
    assert plugin.deepspeed_config["zero_optimization"]["offload_param"]["nvme_path"] == "none"


def test_acc017_against_the_trainer(tmp_path):
    pytest.importorskip("transformers")
    from transformers import TrainingArguments
    from transformers.integrations.deepspeed import HfTrainerDeepSpeedConfig
    yaml_path = tmp_path / "accelerate_config.yaml"
    yaml_path.write_text(DS + "deepspeed_config:\n  zero_stage: 2\n  gradient_accumulation_steps: 1\n")
    assert has(helpers.lint(yaml_path, target="hf-trainer"), "ACC017")
    plugin, error, _ = build_plugin(yaml_path, tmp_path)
    config = HfTrainerDeepSpeedConfig(plugin.deepspeed_config)
    arguments = TrainingArguments(output_dir=str(tmp_path / "out"), gradient_accumulation_steps=8,
                                  use_cpu=True, report_to=[])
    config.trainer_config_process(arguments)
    with pytest.raises(ValueError, match="ds gradient_accumulation_steps=1 vs hf gradient_accumulation_steps=8"):
        config.trainer_config_finalize(arguments, model=None, num_training_steps=10)


# -- the schema ---------------------------------------------------------------------------------


def test_schema_is_draft7_and_accepts_real_configs():
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((ROOT / "schemas" / "accelerate.schema.json").read_text())
    jsonschema.Draft7Validator.check_schema(schema)
    validator = jsonschema.Draft7Validator(schema)
    good = yaml.safe_load("compute_environment: LOCAL_MACHINE\ndistributed_type: DEEPSPEED\ndebug: false\n"
                          "deepspeed_config:\n  deepspeed_multinode_launcher: standard\n  zero3_init_flag: true\n"
                          "  zero_stage: 3\ndowncast_bf16: 'no'\nmachine_rank: 0\nmain_training_function: main\n"
                          "mixed_precision: bf16\nnum_machines: 1\nnum_processes: 8\nrdzv_backend: static\n"
                          "same_network: true\ntpu_env: []\ntpu_use_cluster: false\ntpu_use_sudo: false\n"
                          "use_cpu: false\nfsdp_config:\n  fsdp_version: 2\n  reshard_after_forward: true\n")
    assert list(validator.iter_errors(good)) == []
    assert list(validator.iter_errors({"distributed_type": "DEEPSPEED", "bogus": 1}))
    assert list(validator.iter_errors({"distributed_type": "DEEPSPEED", "deepspeed_config": {"zero_stage": 5}}))
    sagemaker = {"compute_environment": "AMAZON_SAGEMAKER", "distributed_type": "DATA_PARALLEL",
                 "ec2_instance_type": "ml.p3.2xlarge", "iam_role_name": "role"}
    assert list(validator.iter_errors(sagemaker)) == []
    assert list(validator.iter_errors(dict(sagemaker, num_processes=8)))


def test_schema_is_up_to_date():
    pytest.importorskip("accelerate")
    result = subprocess.run([sys.executable, str(ROOT / "scripts" / "build_accelerate_schema.py"), "--check"],
                            capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stderr


def test_json_lint_never_imports_yaml(tmp_path):
    (tmp_path / "ds_config.json").write_text('{"train_batch_size": 8, "zero_optimization": {"stage": 3}}')
    (tmp_path / "accelerate.json").write_text('{"distributed_type": "MULTI_GPU", "num_processes": 2}')
    probe = ("import sys\nfrom dsconfig import engine\n"
             f"engine.lint_files(engine.collect([{str(tmp_path)!r}]).files, engine.Options())\n"
             "print('yaml' in sys.modules)\n")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT)
    assert result.stdout.strip() == "False", result.stderr


def test_accelerate_json_config_is_linted(tmp_path):
    """Accelerate reads .json configs with json.load; the same rules apply."""
    path = tmp_path / "accelerate.json"
    path.write_text('{"distributed_type": "MULTI_GPU", "num_processes": 2, "mixed_precision": "bfloat16"}')
    assert only(helpers.lint(path), "ACC006")[0].fails_in == LAUNCH


def test_classification_of_yaml_files():
    from dsconfig import detect
    assert detect.classify("x.yaml", {"compute_environment": "LOCAL_MACHINE"}, is_yaml=True) == "accelerate"
    assert detect.classify("x.yaml", {"distributed_type": "NO"}, is_yaml=True) == "accelerate"
    # One Accelerate key is enough when the name promises a launcher config (distributed_type forgotten).
    assert detect.classify("configs/accelerate_zero3.yaml", {"num_processes": 8}, is_yaml=True) == "accelerate"
    assert detect.classify("configs/train.yaml", {"num_processes": 8}, is_yaml=True) == "other"
    assert detect.classify(".github/workflows/ci.yml", {"on": {"push": None}, "jobs": {}}, is_yaml=True) == "other"


@pytest.mark.parametrize("gpus", [1, 4])
def test_distributed_type_no_runs_one_process_however_many_gpus(tmp_path, gpus):
    """ACC011's claim, on the real launcher: with a config file, NO stays single-process (no multi-GPU switch)
    whether one GPU or four are visible, and num_processes 8 is left unused."""
    torch = pytest.importorskip("torch")
    from unittest import mock

    from accelerate.commands.launch import _validate_launch_command, launch_command_parser
    text = "compute_environment: LOCAL_MACHINE\ndistributed_type: 'NO'\nnum_processes: 8\nmixed_precision: 'no'\n"
    (tmp_path / "single_gpu.yaml").write_text(text)
    args = launch_command_parser().parse_args(["--config_file", str(tmp_path / "single_gpu.yaml"), "train.py"])
    with mock.patch.object(torch.cuda, "is_available", return_value=True), \
            mock.patch.object(torch.cuda, "device_count", return_value=gpus):
        args, _, _ = _validate_launch_command(args)
    assert not (args.multi_gpu or args.use_deepspeed or args.use_fsdp)  # launch_command -> simple_launcher
    found = helpers.lint_text(text, "single_gpu.yaml")
    assert [f.code for f in found if f.code == "ACC011"] == ["ACC011"]
    assert "runs one process: num_processes 8 is ignored" in next(f for f in found if f.code == "ACC011").message
