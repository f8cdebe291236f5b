"""`dsconfig generate` as a user runs it: the plan on the terminal, the files, exit codes, one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from dsconfig.generate import render, show
from dsconfig.generate.command import generate
from tests.helpers import lint as lint_paths

ROOT = Path(__file__).resolve().parents[2]


def run(*args, cwd=None):
    runner = CliRunner()
    old = os.getcwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        return runner.invoke(generate, list(args), catch_exceptions=False)
    finally:
        os.chdir(old)


def test_first_command_without_a_model(tmp_path):
    result = run("--gpus", "2", "--gpu-mem", "96GB", cwd=tmp_path)
    assert result.exit_code == 0, result.output
    out = result.output
    assert out.startswith("dsconfig generate: llama-3.1-8b, 8.03B parameters (no --model or --params given: sized "
                          "for the default, llama-3.1-8b)")
    for label in ("parameters", "gradients", "optimizer states", "activations", "buffers", "overhead", "headroom"):
        assert f"\n  {label:<17}" in out
    assert "█" in out
    assert "wrote ds_config.json, accelerate_config.yaml" in out
    assert "\n  accelerate launch --config_file accelerate_config.yaml train.py --deepspeed ds_config.json" in out
    assert sorted(os.listdir(tmp_path)) == ["accelerate_config.yaml", "ds_config.json"]
    config = json.loads((tmp_path / "ds_config.json").read_text())
    assert config["zero_optimization"]["stage"] == 3 and config["train_batch_size"] == "auto"


def test_seed_two_96gb_global_64_micro_32_as_the_user_sees_it(tmp_path):
    result = run("--gpus", "2", "--gpu-mem", "96GB", "--params", "125M", "--global-batch", "64", "--target",
                 "deepspeed", "--stdout", cwd=tmp_path)
    assert result.exit_code == 0
    config = json.loads(result.stdout)  # one file: printed as it is
    assert (config["train_batch_size"], config["train_micro_batch_size_per_gpu"],
            config["gradient_accumulation_steps"]) == (64, 32, 1)
    assert "global 64 = micro 32 × accumulation 1 × 2 GPUs × 1 node" in result.stderr
    assert os.listdir(tmp_path) == []


def test_never_overwrites_without_force(tmp_path):
    assert run("--gpus", "2", "--gpu-mem", "96GB", cwd=tmp_path).exit_code == 0
    before = (tmp_path / "ds_config.json").read_text()
    again = run("--gpus", "2", "--gpu-mem", "96GB", "--model", "gpt2", cwd=tmp_path)
    assert again.exit_code == 2
    assert again.stderr == "dsconfig generate: error: ds_config.json exists; pass --force to overwrite it (nothing " \
                           "was written)\n"
    assert (tmp_path / "ds_config.json").read_text() == before
    forced = run("--gpus", "2", "--gpu-mem", "96GB", "--model", "gpt2", "--force", cwd=tmp_path)
    assert forced.exit_code == 0 and (tmp_path / "ds_config.json").read_text() != before


def test_stdout_with_several_files(tmp_path):
    result = run("--gpus", "8", "--nodes", "2", "--gpu", "H100-80GB", "--model", "llama-3.1-70b", "--global-batch",
                 "128", "--stdout", cwd=tmp_path)
    assert result.exit_code == 0
    parts = result.stdout.split("==> ")
    assert [p.split(" <==")[0] for p in parts[1:]] == ["ds_config.json", "accelerate_config.yaml", "hostfile",
                                                        "slurm.sbatch"]
    assert os.listdir(tmp_path) == []
    assert "dsconfig generate: llama-3.1-70b" in result.stderr


def test_multi_node_files_and_launch_commands(tmp_path):
    result = run("--gpus", "8", "--nodes", "2", "--gpu", "A100-80GB", "--model", "llama-3.1-8b", "--global-batch",
                 "256", "--output-dir", "run1", cwd=tmp_path)
    assert result.exit_code == 0, result.output
    folder = tmp_path / "run1"
    assert sorted(os.listdir(folder)) == ["accelerate_config.yaml", "ds_config.json", "hostfile", "slurm.sbatch"]
    assert os.access(folder / "slurm.sbatch", os.X_OK)
    config = yaml.safe_load((folder / "accelerate_config.yaml").read_text())
    assert config["num_processes"] == 16 and config["num_machines"] == 2
    assert config["deepspeed_config"]["deepspeed_config_file"] == "run1/ds_config.json"  # from where you launch
    out = result.output
    for command in ("sbatch run1/slurm.sbatch", "accelerate launch --config_file run1/accelerate_config.yaml "
                    "--machine_rank $NODE_RANK", "deepspeed --hostfile run1/hostfile --num_nodes 2 --num_gpus 8",
                    "torchrun --nnodes 2 --nproc_per_node 8"):
        assert command in out
    # the printed check command, run as printed from the launch folder: clean
    check = out.split("\ncheck\n  ")[1].split("\n")[0]
    assert check == "dsconfig lint run1/ds_config.json run1/accelerate_config.yaml --target hf-trainer --gpus 8 " \
                    "--nodes 2"
    lint = subprocess.run([sys.executable, "-m", "dsconfig", *check.split()[1:]], capture_output=True, text=True,
                          cwd=tmp_path, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert lint.returncode == 0 and " DS" not in lint.stdout.replace(" DS704 ", ""), lint.stdout
    # lint, from the launch folder: the YAML finds its JSON and the pair is clean
    old = os.getcwd()
    os.chdir(tmp_path)
    try:
        findings = lint_paths("run1/accelerate_config.yaml", "run1/ds_config.json", target="hf-trainer", gpus=8,
                              nodes=2, world_sizes=(16,))
    finally:
        os.chdir(old)
    assert [f.code for f in findings if f.severity != "info"] == []


@pytest.mark.parametrize("args, message", [
    (["--gpus", "2"], "say how much memory each GPU has: --gpu-mem 80GB, or --gpu H100-80GB"),
    (["--gpu-mem", "lots"], "--gpu-mem: cannot read 'lots' as a memory size"),
    (["--gpu", "Z9000"], "--gpu: unknown GPU 'Z9000'"),
    (["--gpu-mem", "80GB", "--model", "nonsense"], "--model: 'nonsense' is neither a catalog model"),
    (["--gpu-mem", "80GB", "--model", "gpt2", "--params", "7B"], "give either --model or --params, not both"),
    (["--gpu-mem", "80GB", "--layers", "4"], "--layers goes with --params"),
    (["--gpu-mem", "80GB", "--gpus", "0"], "--gpus"),
    (["--gpu-mem", "80GB", "--target", "fsdp"], "--target"),
    (["--gpu-mem", "80GB", "--micro-batch", "1", "--batchnorm"], "BatchNorm layer needs at least 2"),
    (["--gpu", "V100-32GB", "--precision", "bf16"], "--precision bf16: V100-32GB has no bf16"),
    (["--gpu-mem", "80GB", "--template", "zero3_nvme"], "--template zero3_nvme needs --nvme-path"),
    (["--gpu-mem", "80GB", "--bogus"], "No such option '--bogus'"),
    # a name whose bytes are not UTF-8 (b"\xff" comes as "\udcff"): the generated files are UTF-8 text
    (["--gpu-mem", "80GB", "--output-dir", os.fsdecode(b"g\xffen")], "--output-dir 'g\\udcffen' is not UTF-8 text"),
    (["--gpu-mem", "80GB", "--script", os.fsdecode(b"tr\xffain.py")], "--script 'tr\\udcffain.py' is not UTF-8"),
    # a control character or a CI command: the generated files name these paths, each on its line
    (["--gpu-mem", "80GB", "--output-dir", "out\x1bdir"], "--output-dir 'out\\x1bdir' holds '\\x1b', a control"),
    (["--gpu-mem", "80GB", "--output-dir", "out\n::x"], "--output-dir 'out\\n::x' holds '\\n', a control"),
    (["--gpu-mem", "80GB", "--output-dir", "o##[x"], "--output-dir 'o#\\x23[x' holds '#\\x23[', which a CI log runs"),
    (["--gpu-mem", "80GB", "--script", "t\u202e.py"], "--script 't\\u202e.py' holds '\\u202e', a control"),
    (["--gpu-mem", "80GB", "--template", "zero3_nvme", "--nvme-path", "/nvme##vso[x"],
     "--nvme-path '/nvme#\\x23vso[x' holds '#\\x23vso[', which a CI log runs as a command"),
])
def test_errors_are_one_line_exit_2_and_write_nothing(tmp_path, args, message):
    result = run(*args, cwd=tmp_path)
    assert result.exit_code == 2
    assert result.stderr.startswith("dsconfig generate: error: ") and message in result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert os.listdir(tmp_path) == []


def test_model_config_json_and_params(tmp_path):
    from dsconfig.estimate import catalog
    path = tmp_path / "my-model" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps(catalog.CATALOG["qwen2.5-1.5b"].config))
    result = run("--gpu-mem", "24GB", "--model", str(path), "--stdout", cwd=tmp_path)
    assert result.exit_code == 0 and "dsconfig generate: my-model, 1.54B parameters" in result.stderr
    result = run("--gpu-mem", "80GB", "--params", "7B", "--gpus", "4", "--stdout", cwd=tmp_path)
    assert result.exit_code == 0 and "7B-parameter model, 7.00B parameters" in result.stderr


def test_not_exact_global_batch_is_said(tmp_path):
    result = run("--gpu-mem", "80GB", "--model", "gpt2", "--gpus", "3", "--global-batch", "64", "--stdout",
                 cwd=tmp_path)
    assert result.exit_code == 0
    assert "global batch 64 cannot be reached exactly (not a multiple of the 3 GPUs): using 63; the nearest " \
           "reachable are 63, 66" in result.stderr


def test_target_lightning_and_deepspeed_say_what_the_script_sets(tmp_path):
    result = run("--gpu-mem", "24GB", "--model", "llama-3.2-1b", "--gpus", "4", "--global-batch", "64",
                 "--target", "lightning", "--stdout", cwd=tmp_path)
    assert result.exit_code == 0
    assert "Trainer(strategy=DeepSpeedStrategy(config='ds_config.json'), accelerator=\"gpu\", devices=4, " \
           "num_nodes=1, precision=\"bf16-mixed\", accumulate_grad_batches=" in result.stderr
    assert "gradient_accumulation_steps" not in result.stdout
    result = run("--gpu-mem", "24GB", "--model", "llama-3.1-8b", "--gpus", "4", "--target", "deepspeed", "--stdout",
                 cwd=tmp_path)
    assert "pass deepspeed.ops.adam.DeepSpeedCPUAdam as the optimizer" in result.stderr


def test_ascii_terminal_gets_ascii_bars():
    from dsconfig.estimate import catalog, shapes
    from dsconfig.generate import planner
    plan = planner.plan(planner.Request(model=shapes.from_hf_config(catalog.CATALOG["gpt2"].config, "gpt2"),
                                        gpu_memory=80 * 10 ** 9))
    text = show.text(plan, render.Paths(), ["ds_config.json"], unicode=False)
    chart = text[text.index("per GPU"):text.index("CPU per node")]
    chart.encode("ascii")  # the bars and labels are ASCII
    assert "#" in chart


def test_self_check_failure_is_an_internal_error_and_writes_nothing(tmp_path, monkeypatch):
    real = render.files

    def broken(plan, paths=render.Paths()):
        files = real(plan, paths)
        config = json.loads(files[0].text)
        config["train_micro_batch_size_per_gpu"] = 0
        config.pop("train_batch_size", None)
        return [render.File(files[0].name, json.dumps(config)), *files[1:]]

    monkeypatch.setattr(render, "files", broken)
    result = run("--gpu-mem", "80GB", "--model", "gpt2", "--target", "deepspeed", cwd=tmp_path)
    assert result.exit_code == 2
    assert result.stderr.startswith("dsconfig generate: error: internal error: the generated ds_config.json fails "
                                    "dsconfig lint: DS201")
    assert os.listdir(tmp_path) == []


def test_a_generated_file_that_is_unsafe_to_print_is_an_internal_error(tmp_path, monkeypatch):
    """Every generated file prints as it is (--stdout): one holding a control character or a CI command is a
    dsconfig bug, caught by the self-check before anything is written or printed."""
    real = render.files

    def broken(plan, paths=render.Paths()):
        files = real(plan, paths)
        return [*files[:-1], render.File(files[-1].name, files[-1].text + "# \x1b]0;title\x07\n")]

    monkeypatch.setattr(render, "files", broken)
    for extra in ([], ["--stdout"]):
        result = run("--gpu-mem", "80GB", "--model", "gpt2", "--nodes", "2", *extra, cwd=tmp_path)
        assert result.exit_code == 2 and not result.stdout
        assert result.stderr.startswith("dsconfig generate: error: internal error: the generated slurm.sbatch holds a "
                                        "control character or a CI command on line "), result.stderr
        assert os.listdir(tmp_path) == []


def test_comment_text_is_one_printable_line():
    assert render.comment_text("llama-3.1-8b") == "llama-3.1-8b"
    assert render.comment_text("m\n::warning::x\x1b]0;t\x07") == "m\\n::warning::x\\x1b]0;t\\x07"
    assert render.comment_text("m##[add-mask]x\u202e") == "m#\\x23[add-mask]x\\u202e"
    assert render.comment_text("m\uffff\ufeff\xa0\U000e0001") == "m\\uffff\\ufeff\\xa0\\U000e0001"
    assert render.comment_text("modèle-日本") == "modèle-日本"  # printable text stays as it is


def test_module_entry_point_and_no_heavy_imports(tmp_path):
    probe = ("import sys, runpy\n"
             "sys.argv = ['dsconfig generate', '--gpus', '2', '--gpu-mem', '96GB', '--stdout']\n"
             "try:\n"
             "    runpy.run_module('dsconfig.generate', run_name='__main__')\n"
             "except SystemExit as exit:\n"
             "    assert exit.code in (0, None), exit.code\n"
             "print('HEAVY:' + ','.join(m for m in ('torch', 'transformers', 'deepspeed', 'accelerate') "
             "if m in sys.modules))\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=tmp_path, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.rstrip().endswith("HEAVY:")
    assert '"train_batch_size": "auto"' in out.stdout
    help_text = subprocess.run([sys.executable, "-m", "dsconfig.generate", "--help"], capture_output=True, text=True,
                               cwd=tmp_path, env=env).stdout
    assert "--global-batch" in help_text and "--target" in help_text


def test_runs_inside_the_dsconfig_group_once_registered(tmp_path):
    """The lead adds `"generate": "dsconfig.generate.command:generate"` to LazyGroup.lazy in cli.py."""
    import click

    from dsconfig.cli import LazyGroup

    class Registered(LazyGroup):
        lazy = dict(LazyGroup.lazy, generate="dsconfig.generate.command:generate")

    @click.group(cls=Registered)
    def cli():
        pass

    runner = CliRunner()
    result = runner.invoke(cli, ["generate", "--gpu-mem", "80GB", "--model", "gpt2", "--stdout"])
    assert result.exit_code == 0 and json.loads(result.stdout.split("==> accelerate_config.yaml <==")[0]
                                                .replace("==> ds_config.json <==\n", ""))
    bad = runner.invoke(cli, ["generate", "--gpu-mem", "80GB", "--gpus", "x"])
    assert bad.exit_code == 2 and bad.stderr.startswith("dsconfig generate: error: ")
    assert "generate" in runner.invoke(cli, ["--help"]).output


def test_the_example_in_docs_generate_md_is_real(tmp_path):
    doc = (ROOT / "docs" / "generate.md").read_text()
    command = "$ dsconfig generate --gpus 2 --gpu-mem 96GB --global-batch 64\n"
    start = doc.index(command) + len(command)
    shown = doc[start:doc.index("```", start)]
    result = run("--gpus", "2", "--gpu-mem", "96GB", "--global-batch", "64", cwd=tmp_path)
    assert result.exit_code == 0 and result.output == shown


def test_a_size_on_the_box_plans_as_the_catalog_card_does(tmp_path):
    """`--gpu-mem 96GB` and `--gpu H20-96GB` give the same plan, and the first line says which memory it used."""
    def plan(*gpu):
        result = run("--gpus", "2", *gpu, "--model", "llama-3.1-8b", "--stdout", cwd=tmp_path)
        assert result.exit_code == 0, result.output
        first, rest = result.stderr.split("\n", 1)
        return first, [line for line in rest.split("\n\n")[1].splitlines() if "precision" not in line]
    by_size, by_name, bare = plan("--gpu-mem", "96GB"), plan("--gpu", "H20-96GB"), plan("--gpu-mem", "96")
    assert by_size[1] == by_name[1] == bare[1]
    assert by_size[0].endswith("on 1 node × 2 GPUs of 95.6 GiB (a 96 GB card)")
    assert by_name[0].endswith("on 1 node × 2 GPUs of 95.6 GiB (H20-96GB)")
    assert plan("--gpu-mem", "90GiB")[0].endswith("2 GPUs of 90.0 GiB")


def test_nothing_fits_is_one_line_exit_1_and_writes_nothing(tmp_path):
    """As estimate says "fits: no" with exit 1; a stated --cpu-mem that an offload plan exceeds is the same."""
    for args, message in ((["--gpu-mem", "16GB", "--model", "llama-3.1-405b"], "llama-3.1-405b does not fit 1 node"),
                          (["--gpu", "RTX4090", "--model", "llama-3.1-70b", "--cpu-mem", "64GB"],
                           "needs 1,774.1 GiB of CPU memory per node, more than --cpu-mem 64.0 GiB")):
        result = run(*args, cwd=tmp_path)
        assert result.exit_code == 1, result.output
        assert result.stderr.startswith("dsconfig generate: error: ") and message in result.stderr
        assert result.stderr.count("\n") == 1 and os.listdir(tmp_path) == []


def test_an_offload_plan_beyond_this_machines_memory_is_a_loud_warning(tmp_path):
    """Without --cpu-mem the plan is compared with this machine's RAM (no machine here has 1.7 TiB)."""
    from dsconfig.estimate.gpus import this_machine_memory

    assert this_machine_memory() > 2 ** 30
    result = run("--gpus", "1", "--gpu", "RTX4090", "--model", "llama-3.1-70b", "--stdout", cwd=tmp_path)
    assert result.exit_code == 0
    warning = result.stderr.strip().splitlines()[-1]
    assert warning.startswith("dsconfig generate: warning: the plan keeps 1,774.12 GiB in CPU memory per node and "
                              "this machine has ")
    assert "  - warning: the plan keeps" in result.stderr  # first of the plan's notes too
    quiet = run("--gpus", "2", "--gpu-mem", "96GB", "--model", "llama-3.1-8b", "--stdout", cwd=tmp_path)
    assert "warning" not in quiet.stderr  # no offload, nothing to compare


def test_the_hf_trainer_plan_names_the_batch_arguments_its_auto_file_needs(tmp_path):
    result = run("--gpus", "2", "--gpu-mem", "96GB", "--model", "llama-3.1-8b", "--global-batch", "64", "--stdout",
                 cwd=tmp_path)
    config = json.loads(result.stdout.split("==> ds_config.json <==\n", 1)[1].split("==>", 1)[0])
    assert config["train_micro_batch_size_per_gpu"] == config["gradient_accumulation_steps"] == "auto"
    assert ('give the Trainer --per_device_train_batch_size 1 --gradient_accumulation_steps 32 (ds_config.json says '
            '"auto")') in result.stderr
    deepspeed = run("--gpus", "2", "--gpu-mem", "96GB", "--model", "llama-3.1-8b", "--global-batch", "64",
                    "--target", "deepspeed", "--stdout", cwd=tmp_path)
    assert "give the Trainer" not in deepspeed.stderr  # the numbers are in the file


@pytest.mark.parametrize("changes, key, says", [
    ({"num_key_value_heads": 64}, "num_key_value_heads", "num_key_value_heads 64 is more than num_attention_heads 32"),
    ({"num_key_value_heads": 5}, "num_key_value_heads", "num_attention_heads 32 is not divisible by num_key_value_heads 5"),
    ({"hidden_size": -4096}, "hidden_size", "hidden_size must be a positive integer, not -4096"),
    ({"vocab_size": 0}, "vocab_size", "vocab_size must be a positive integer, not 0"),
    ({"model_type": "mixtral", "num_local_experts": 8, "num_experts_per_tok": 9}, "num_experts_per_tok",
     "num_experts_per_tok 9 is more than num_local_experts 8"),
])
def test_a_model_config_no_model_can_be_built_from_plans_nothing(tmp_path, changes, key, says):
    """It used to be planned as if fine (64 K/V heads made the K/V projections twice the Q one)."""
    from dsconfig.estimate import catalog
    values = {**catalog.CATALOG["llama-2-7b"].config, **changes}
    text = json.dumps(values, indent=2)
    (tmp_path / "config.json").write_text(text)
    line = next(i for i, row in enumerate(text.splitlines(), 1) if row.startswith(f'  "{key}":'))
    result = run("--gpu-mem", "80GB", "--model", "config.json", cwd=tmp_path)
    assert result.exit_code == 2
    assert result.stderr.startswith(f"dsconfig generate: error: --model: config.json:{line}:3: {says}"), result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert os.listdir(tmp_path) == ["config.json"]  # nothing written
