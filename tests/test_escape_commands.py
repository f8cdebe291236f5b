"""What `dsconfig explain`, `convert`, `estimate` and `generate` print of hostile files: every key, value,
file name and message taken from a file is escaped where it is placed (dsconfig.escape), so nothing a
terminal or a CI runner acts on is written, and the escaped text is still there to read. Each command runs
in its own process (as a CI job runs it: strict UTF-8, `dsconfig: internal error` when something escapes).

Also: the inputs `dsconfig explain` used to report as an internal error are one-line usage errors."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest
import yaml

from dsconfig.explain.render import KEY_WIDTH
from tests.fuzz_targets import check_rendered
from tests.hostile_cases import DSCONFIG, environment

# Keys (and values) a CI runner or a terminal acts on: a forged workflow command after a newline, an OSC
# title sequence, a carriage return, a bidi override, the runner's legacy command syntax, a lone surrogate.
HOSTILE = ("\n::warning::pwned", "\x1b]0;title\x07", "\r", "\u202e", "##[add-mask]x", "\ud800")
# ... and how a line shows each of them
SHOWN = {"\n::warning::pwned": "\\n::warning::pwned", "\x1b]0;title\x07": "\\x1b]0;title\\x07", "\r": "\\r",
         "\u202e": "\\u202e", "##[add-mask]x": "#\\x23[add-mask]x", "\ud800": "\\ud800"}
# A file name holding the same (and one byte that is not UTF-8: Python gives b"\xff" as "\udcff").
NAME = "ds\n::warning::name\x1b]0;t\x07\r\u202e##[add-mask]x\udcff"
NAME_SHOWN = "ds\\n::warning::name\\x1b]0;t\\x07\\r\\u202e#\\x23[add-mask]x\\udcff"


def hostile_json(**extra) -> str:
    """A ds_config.json holding every HOSTILE string as a key and a value, at the top level and inside
    zero_optimization (json.dumps writes the lone surrogate as the JSON escape \\ud800)."""
    config = {"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 2,
              **{key: key for key in HOSTILE},
              "zero_optimization": {"stage": 2, **{key: key for key in HOSTILE}}}
    config.update(extra)
    return json.dumps(config, indent=2)


def hostile_yaml(distributed_type: str = "DEEPSPEED") -> str:
    section = "deepspeed_config:\n  zero_stage: 2\n" if distributed_type == "DEEPSPEED" else \
        "fsdp_config:\n  fsdp_version: 2\n"
    keys = "".join(f"  {json.dumps(key)}: {json.dumps(key)}\n" for key in HOSTILE)
    return f"distributed_type: {distributed_type}\nnum_processes: 2\n{section}{keys}"


def dsconfig(cwd, *args: str) -> tuple[int, str, str]:
    """Run `python -m dsconfig ARGS` in `cwd`: (exit code, stdout, stderr), decoded strictly as UTF-8."""
    proc = subprocess.run([*DSCONFIG, *args], cwd=cwd, capture_output=True, timeout=120, env=environment())
    out, err = proc.stdout.decode("utf-8"), proc.stderr.decode("utf-8")
    assert "Traceback" not in err and "internal error" not in err, err
    return proc.returncode, out, err


def rendered(out: str, err: str, shape: str = "concise") -> None:
    check_rendered(shape, out)
    check_rendered("concise", err)


def table_rows(out: str) -> list[str]:
    """The rows of explain's table: from after the heading to the first blank line."""
    lines = out.split("\n")
    return lines[2:lines.index("", 2)]


# -- explain ---------------------------------------------------------------------------------------

def test_explain_text_escapes_keys_values_and_flags(tmp_path):
    (tmp_path / "ds_config.json").write_text(hostile_json())
    code, out, err = dsconfig(tmp_path, "explain", "ds_config.json", "--color", "never", "--world-size", "2",
                              "--set", "zero_optimization.\n::error::set=\x1b[2J")
    assert code == 1, err  # DeepSpeed rejects the unknown zero_optimization keys: findings, not a crash
    rendered(out, err)
    rows = table_rows(out)
    for key in HOSTILE:
        # one row per key, the key escaped, where the file says it is
        assert any(row.startswith(f"zero_optimization.{SHOWN[key]} ") for row in rows), key
        assert f"  {SHOWN[key]} = " in out, key  # written but never read by DeepSpeed (the top-level ones)
    assert "zero_optimization.\\n::error::set" in out and "--set zero_optimization.\\n::error::set=" in out
    # the widths are measured on what is shown: the `=` of every row whose key fits the column (60) in one column
    assert len({row.index(" = ") for row in rows if row.index(" = ") <= KEY_WIDTH}) == 1, rows
    assert "dsconfig lint finds:" in out and "`\\n::warning::pwned`" in out


def test_explain_json_parses_back_to_the_same_strings(tmp_path):
    (tmp_path / "ds_config.json").write_text(hostile_json())
    code, out, err = dsconfig(tmp_path, "explain", "ds_config.json", "--format", "json")
    assert code == 1, err
    rendered(out, err, "json")
    data = json.loads(out)
    for key in HOSTILE:
        assert "/" + key in data["ignored"], key  # the pointer of an unknown top-level key, as written
        assert data["ignored"]["/" + key]["value"] == key
        assert data["received"]["zero_optimization"][key] == key
    assert "##[" not in out and "#\\u0023[add-mask]x" in out


def test_explain_diff_text_and_json(tmp_path):
    (tmp_path / "ds_config.json").write_text(hostile_json())
    (tmp_path / "plain.json").write_text(json.dumps({"train_micro_batch_size_per_gpu": 4,
                                                     "gradient_accumulation_steps": 2,
                                                     "zero_optimization": {"stage": 2}}))
    code, out, err = dsconfig(tmp_path, "explain", "ds_config.json", "--diff", "plain.json", "--color", "never")
    rendered(out, err)
    assert code in (0, 1), err
    for key in HOSTILE:
        assert f"zero_optimization.{SHOWN[key]}" in out, key
    code, out, err = dsconfig(tmp_path, "explain", "ds_config.json", "--diff", "plain.json", "--format", "json")
    rendered(out, err, "json")
    assert json.loads(out)["left"]["received"]["zero_optimization"]["\x1b]0;title\x07"] == "\x1b]0;title\x07"


def test_explain_plan_against_an_fsdp_config(tmp_path):
    """`explain ds_config.json --diff fsdp.yaml`: the plan quotes values of the files and their names."""
    config = {"train_micro_batch_size_per_gpu": 4, "zero_optimization": {
        "stage": 3, "offload_param": {"device": "\n::warning::device\x1b[2J"}}}
    ds, fsdp = NAME + ".json", NAME + ".yaml"
    (tmp_path / ds).write_text(json.dumps(config))
    (tmp_path / fsdp).write_text(hostile_yaml("FSDP"))
    code, out, err = dsconfig(tmp_path, "explain", ds, "--diff", fsdp, "--color", "never")
    assert code == 1, err
    rendered(out, err)
    assert out.startswith(f"--- {NAME_SHOWN}.json (DeepSpeed ")
    assert f"- \\n::warning::device\\x1b[2J {NAME_SHOWN}.json:1:" in out
    # --format json: values JSON cannot hold as numbers are text ("NaN"), not an internal error
    code, out, err = dsconfig(tmp_path, "explain", ds, "--diff", fsdp, "--set", "gradient_clipping=NaN",
                              "--format", "json")
    assert code == 1, err
    rendered(out, err, "json")
    plan = {row["what"]: row for row in json.loads(out)["plan"]}
    assert plan["parameters offloaded to"]["left"] == "\n::warning::device\x1b[2J"
    assert plan["gradient clipping"]["left"] == "NaN"


def test_explain_accelerate_yamls_with_hostile_keys(tmp_path):
    (tmp_path / "accelerate_config.yaml").write_text(hostile_yaml() + '"\\n::warning::top": 1\n')
    code, out, err = dsconfig(tmp_path, "explain", "accelerate_config.yaml", "--color", "never")
    assert code == 1, err  # Accelerate refuses the unknown top-level key
    rendered(out, err)
    assert "`\\n::warning::pwned`" in out and "`\\n::warning::top`" in out
    (tmp_path / "fsdp.yaml").write_text(hostile_yaml("FSDP"))
    for form in ("text", "json"):
        code, out, err = dsconfig(tmp_path, "explain", "fsdp.yaml", "--format", form, "--color", "never")
        assert code in (0, 1), err
        rendered(out, err, "json" if form == "json" else "concise")


def test_explain_file_names_are_escaped(tmp_path):
    (tmp_path / (NAME + ".json")).write_text(hostile_json())
    code, out, err = dsconfig(tmp_path, "explain", NAME + ".json", "--color", "never")
    assert code == 1, err
    rendered(out, err)
    assert f"files: {NAME_SHOWN}.json" in out.split("\n")[0]
    assert f"{NAME_SHOWN}.json:3:" in out  # a source column names the file too
    code, out, err = dsconfig(tmp_path, "explain", NAME + ".json", "--format", "json")
    rendered(out, err, "json")
    assert json.loads(out)["context"]["files"] == [NAME + ".json"]
    code, out, err = dsconfig(tmp_path, "explain", NAME + ".missing.json")
    assert code == 2 and err == f"dsconfig: error: {NAME_SHOWN}.missing.json: no such file\n"


# -- explain: usage errors, never "internal error" --------------------------------------------------

USAGE = [
    # --set args.*: TrainingArguments values the Trainer refuses or train() fails on
    (["ds_config.json", "--set", "args.num_train_epochs=NaN", "--dataset-size", "100"],
     "--set args.num_train_epochs: num_train_epochs is NaN"),
    (["ds_config.json", "--set", "args.num_train_epochs=1e308", "--dataset-size", "100"],
     "--set args.num_train_epochs: num_train_epochs is 1e+308"),
    (["ds_config.json", "--set", "args.warmup_steps=NaN"], "--set args.warmup_steps: warmup_steps is NaN"),
    (["ds_config.json", "--set", "args.per_device_train_batch_size=four"],
     "per_device_train_batch_size must be an integer, not \"four\""),
    (["ds_config.json", "--training-args", "args.json", "--set", "args.fp16=true"], "fp16 and bf16 are both true"),
    (["ds_config.json", "--set", "novalue"], "--set 'novalue': write KEY=VALUE"),
    # a --set an FSDP config has nothing to apply to
    (["fsdp.yaml", "--set", "zero_optimization.stage=3"], "--set zero_optimization.stage=3: fsdp.yaml is an FSDP"),
    (["fsdp.yaml", "--set", "args.learning_rate=1e-5"], "--set args.learning_rate=1e-5: fsdp.yaml is an FSDP"),
    # --diff: the option and the file
    (["ds_config.json", "--diff", "missing.json"], "--diff missing.json: no such file"),
    (["ds_config.json", "--diff", "folder"], "--diff folder: not a file"),
    (["ds_config.json", "--diff", "broken.json"], "--diff broken.json:1:"),
    (["ds_config.json", "--diff", "broken.yaml"], "--diff broken.yaml:"),
    (["ds_config.json", "--diff", "deepspeed=="], "--diff deepspeed==: give a release such as deepspeed==0.16.9"),
    (["ds_config.json", "--diff", "deepspeed==all"], "--diff deepspeed==all: give a release such as deepspeed=="),
    # --set KEY=VALUE through a value that is not an object: refused, named, never replaced by an object
    (["ds_config.json", "--set", "scheduler.type.x=1"],
     "--set scheduler.type.x=1: scheduler.type is \"WarmupLR\", not an object"),
    (["ds_config.json", "--set", "train_micro_batch_size_per_gpu.\n::error::x=1"],
     "--set train_micro_batch_size_per_gpu.\\n::error::x=1: train_micro_batch_size_per_gpu is \"auto\", not an object"),
    (["ds_config.json", "accelerate.yaml", "--set", "accelerate.zero_stage.x=1"],
     "--set accelerate.zero_stage.x=1: an `accelerate launch` flag is one name"),
    (["ds_config.json", "--set", "args.learning_rate.x=1"], "--set args.learning_rate.x=1: a TrainingArguments field"),
    # paths and files
    (["folder"], "folder: not a file"),
    (["ds_config.json", "--training-args", "args.yaml"], "training arguments args.yaml:2:1: not valid YAML"),
    (["ds_config.json", "--training-args", "folder"], "'--training-args': File 'folder' is a directory"),
    (["ds_config.json", "plain.json"], "give one DeepSpeed JSON (and, optionally, one Accelerate YAML), not"),
    (["fsdp.yaml", "accelerate.yaml"], "give one Accelerate YAML, not fsdp.yaml and accelerate.yaml"),
    # options, click's own errors included
    (["ds_config.json", "--world-size", "2", "--gpus", "2"], "give either --world-size or --gpus/--nodes"),
    (["ds_config.json", "--nodes", "2"], "--nodes needs --gpus"),
    (["ds_config.json", "--world-size", "0"], "'--world-size': 0 is not in the range"),
    (["ds_config.json", "--target", "nope"], "'--target': 'nope' is not one of"),
    (["ds_config.json", "--no-such-option"], "No such option '--no-such-option'"),
    ([], "give a ds_config.json, an Accelerate YAML, or both"),
]


@pytest.mark.parametrize("argv, says", USAGE, ids=[" ".join(argv) or "(nothing)" for argv, _ in USAGE])
def test_explain_usage_errors_are_one_line(argv, says, tmp_path):
    (tmp_path / "ds_config.json").write_text(json.dumps({"train_micro_batch_size_per_gpu": "auto",
                                                         "scheduler": {"type": "WarmupLR", "params": {
                                                             "warmup_num_steps": "auto"}}}))
    (tmp_path / "plain.json").write_text('{"train_batch_size": 8}')
    (tmp_path / "args.json").write_text('{"bf16": true}')
    (tmp_path / "args.yaml").write_text("bf16: [true\n")  # YAML is read as parse_yaml_file reads it: broken here
    (tmp_path / "broken.json").write_text('{"train_batch_size": ')
    (tmp_path / "broken.yaml").write_text("distributed_type: [DEEPSPEED\n")
    (tmp_path / "fsdp.yaml").write_text("distributed_type: FSDP\nnum_processes: 2\nfsdp_config:\n  fsdp_version: 2\n")
    (tmp_path / "accelerate.yaml").write_text("distributed_type: DEEPSPEED\n")
    (tmp_path / "folder").mkdir()
    code, out, err = dsconfig(tmp_path, "explain", *argv)
    assert code == 2, (out, err)
    assert err.startswith("dsconfig: error: ") and err.count("\n") == 1, err
    assert says in err, err
    assert not out


def test_explain_an_unreadable_file_is_a_usage_error(tmp_path):
    (tmp_path / "ds_config.json").write_text('{"train_batch_size": 8}')
    (tmp_path / "other.json").write_text('{"train_batch_size": 8}')
    os.chmod(tmp_path / "other.json", 0)
    prefix = []
    if os.geteuid() == 0:  # root reads anything; without the capabilities that let it, mode 000 refuses root too
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("root without setpriv reads any file")
        prefix = [setpriv, "--bounding-set=-dac_override,-dac_read_search"]
    for argv, says in ((["other.json"], "dsconfig: error: other.json: cannot read"),
                       (["ds_config.json", "--diff", "other.json"], "dsconfig: error: --diff other.json: cannot read")):
        proc = subprocess.run([*prefix, *DSCONFIG, "explain", *argv], cwd=tmp_path, capture_output=True, text=True,
                              timeout=120, env=environment())
        assert proc.returncode == 2 and proc.stderr.startswith(says), proc.stderr
        assert len(proc.stderr.splitlines()) == 1


# -- convert ---------------------------------------------------------------------------------------

def test_convert_table_escapes_keys_and_file_names(tmp_path):
    name = NAME + ".json"
    (tmp_path / name).write_text(hostile_json())
    code, out, err = dsconfig(tmp_path, "convert", name, "--to", "fsdp", "--stdout")
    assert code == 0, err  # was: "internal error: the converted accelerate_fsdp.yaml fails dsconfig lint"
    rendered(out, err)
    # the file: its header comment names the source on one line, and it is the YAML it should be
    assert out.startswith(f"# dsconfig convert: from {NAME_SHOWN}.json\n# check: ")
    assert yaml.safe_load(out)["distributed_type"] == "FSDP"
    # the table (on stderr with --stdout): a title, then two lines per row, each row's key on its line
    lines = err.rstrip("\n").split("\n")
    assert lines[0] == f"{NAME_SHOWN}.json -> FSDP2 (accelerate_fsdp.yaml)"
    assert len(lines) % 2 == 0 and all(line.startswith("  ") for line in lines[1:-1])
    assert "  no equivalent  zero_optimization.\\n::warning::pwned, \\x1b]0;title\\x07, \\r, \\u202e, " \
           "#\\x23[add-mask]x, \\ud800 -> -" in lines

    code, out, err = dsconfig(tmp_path, "convert", name, "--to", "fsdp", "--format", "json", "-o", "out")
    assert code == 0, err
    rendered(out, err, "json")
    table = json.loads(out)
    assert table["from"] == [name]
    assert ", ".join(HOSTILE) in {row["source"] for row in table["rows"]}  # the same strings, parsed back


def test_convert_bad_launch_values_are_input_errors(tmp_path):
    (tmp_path / "fsdp.yaml").write_text("distributed_type: FSDP\nnum_processes: 4\nnum_machines: 2\n"
                                        'main_process_ip: "\\n::warning::ip\\e"\nfsdp_config:\n  fsdp_version: 2\n')
    code, out, err = dsconfig(tmp_path, "convert", "fsdp.yaml", "--to", "deepspeed", "--stdout")
    assert code == 2 and not out
    assert err == ("dsconfig convert: error: fsdp.yaml:4:18: main_process_ip '\\n::warning::ip\\x1b' is not a host "
                   "name or IP address\n")
    (tmp_path / "fsdp.yaml").write_text("distributed_type: FSDP\nnum_processes: 2\nfsdp_config:\n  fsdp_version: 2\n")
    code, out, err = dsconfig(tmp_path, "convert", "fsdp.yaml", "--to", "deepspeed", "-o", "out\x1b[2J")
    assert code == 2 and err.startswith("dsconfig convert: error: --output-dir 'out\\x1b[2J': "), err
    assert not (tmp_path / "out\x1b[2J").exists()


# -- estimate and generate -------------------------------------------------------------------------

LLAMA = {"model_type": "llama", "hidden_size": 1024, "num_attention_heads": 16, "num_hidden_layers": 4,
         "intermediate_size": 4096, "vocab_size": 32000}


def test_estimate_escapes_a_model_named_by_its_folder(tmp_path):
    folder = "m\n::warning::pwned\x1b]0;t\x07\u202e##[add-mask]x"
    (tmp_path / folder).mkdir()
    (tmp_path / folder / "config.json").write_text(json.dumps(LLAMA))
    model = os.path.join(folder, "config.json")
    code, out, err = dsconfig(tmp_path, "estimate", "--model", model, "--gpus", "2", "--gpu-mem", "80GB")
    assert code == 0, err
    rendered(out, err)
    assert out.startswith("m\\n::warning::pwned\\x1b]0;t\\x07\\u202e#\\x23[add-mask]x: ")  # one line, escaped
    code, out, err = dsconfig(tmp_path, "estimate", "--model", model, "--gpus", "2", "--gpu-mem", "80GB",
                              "--format", "json")
    rendered(out, err, "json")
    assert json.loads(out)["model"]["name"] == folder


def test_generate_escapes_a_model_named_by_its_folder(tmp_path):
    folder = "::warning::m\u202e##[add-mask]x"
    (tmp_path / folder).mkdir()
    (tmp_path / folder / "config.json").write_text(json.dumps(LLAMA))
    code, out, err = dsconfig(tmp_path, "generate", "--model", os.path.join(folder, "config.json"), "--gpus", "2",
                              "--gpu-mem", "80GB", "--output-dir", "out")
    assert code == 0, err
    rendered(out, err)
    assert out.startswith("dsconfig generate: ::warning::m\\u202e#\\x23[add-mask]x, ")


# A model's folder name goes into the comments of the generated YAML and SLURM script: each comment stays one
# line with the name escaped, so the YAML parses (it used to fail dsconfig's own self-check, an "internal
# error"), and `--stdout` prints the files as they are written, nothing in them a CI command.
FOLDERS = {"m\n::warning::x": "m\\n::warning::x", "m\x1b]0;t\x07": "m\\x1b]0;t\\x07",
           "m##[add-mask]x": "m#\\x23[add-mask]x", "m\u202ex": "m\\u202ex",
           "m\uffff\u200bx": "m\\uffff\\u200bx"}  # U+FFFF: YAML cannot hold it; U+200B: invisible


@pytest.mark.parametrize("backend", ["deepspeed", "fsdp"])
@pytest.mark.parametrize("folder", list(FOLDERS), ids=list(FOLDERS.values()))
def test_generate_writes_a_hostile_model_name_as_one_escaped_comment(folder, backend, tmp_path):
    (tmp_path / folder).mkdir()
    (tmp_path / folder / "config.json").write_text(json.dumps(LLAMA))
    argv = ["generate", "--model", os.path.join(folder, "config.json"), "--gpus", "2", "--nodes", "2",
            "--gpu-mem", "80GB", "--backend", backend, "--output-dir", "out"]
    code, printed, err = dsconfig(tmp_path, *argv, "--stdout")
    assert code == 0, err
    rendered(printed, err)
    assert not (tmp_path / "out").exists()
    code, out, err = dsconfig(tmp_path, *argv)
    assert code == 0, err
    rendered(out, err)
    names = ["accelerate_config.yaml", "slurm.sbatch"] if backend == "fsdp" else \
        ["ds_config.json", "accelerate_config.yaml", "hostfile", "slurm.sbatch"]
    assert sorted(os.listdir(tmp_path / "out")) == sorted(names)
    texts = {name: (tmp_path / "out" / name).read_text(encoding="utf-8") for name in names}
    # --stdout printed exactly the files written
    assert printed == "".join(f"==> {name} <==\n{texts[name]}" for name in names)
    shown = FOLDERS[folder]
    for text in texts.values():
        check_rendered("concise", text)
    head = texts["accelerate_config.yaml"].split("\n")
    assert head[0].startswith("# dsconfig generate: ") and f" for {shown} on 2 nodes x 2 GPUs " in head[0]
    assert head[1].startswith("# global batch ")
    config = yaml.safe_load(texts["accelerate_config.yaml"])
    assert config["num_processes"] == 4 and config["num_machines"] == 2
    summary = [line for line in texts["slurm.sbatch"].split("\n") if line.startswith("# dsconfig generate: ")]
    assert len(summary) == 1 and f" for {shown} on " in summary[0] and "; global batch " in summary[0]


def test_generated_files_with_a_hostile_model_name_lint_clean(tmp_path):
    folder = "m\n::warning::x\x1b]0;t\x07##[add-mask]x"
    (tmp_path / folder).mkdir()
    (tmp_path / folder / "config.json").write_text(json.dumps(LLAMA))
    code, out, err = dsconfig(tmp_path, "generate", "--model", os.path.join(folder, "config.json"), "--gpus", "2",
                              "--gpu-mem", "80GB")
    assert code == 0, err
    check = out.split("\ncheck\n  ")[1].split("\n")[0]
    assert check == "dsconfig lint ds_config.json accelerate_config.yaml --target hf-trainer --gpus 2 --nodes 1"
    code, out, err = dsconfig(tmp_path, *check.split()[1:])
    assert code == 0, out + err
    rendered(out, err)


# --output-dir (and --script, --nvme-path) are named in the generated files: a control character or a CI
# command in one is a one-line usage error naming the option, and nothing is written.
REFUSED = [
    (["--output-dir", "out\x1bdir"], "--output-dir 'out\\x1bdir' holds '\\x1b', a control or non-printing character"),
    (["--output-dir", "out\n::warning::x"], "--output-dir 'out\\n::warning::x' holds '\\n', a control"),
    (["--output-dir", "out\u202edir"], "--output-dir 'out\\u202edir' holds '\\u202e', a control"),
    (["--output-dir", "out##[add-mask]x"],
     "--output-dir 'out#\\x23[add-mask]x' holds '#\\x23[', which a CI log runs as a command"),
    (["--output-dir", "o##vso[task.setvariable]x"],
     "--output-dir 'o#\\x23vso[task.setvariable]x' holds '#\\x23vso[', which a CI log"),
    (["--script", "train\r::error::x.py"], "--script 'train\\r::error::x.py' holds '\\r', a control"),
    (["--template", "zero3_nvme", "--nvme-path", "/nvme\x9b2J"], "--nvme-path '/nvme\\x9b2J' holds '\\x9b', a control"),
]


@pytest.mark.parametrize("stdout", [False, True], ids=["write", "stdout"])
@pytest.mark.parametrize("argv, says", REFUSED, ids=[says.split(" holds")[0] for _, says in REFUSED])
def test_generate_refuses_unsafe_paths_as_one_line_naming_the_option(argv, says, stdout, tmp_path):
    code, out, err = dsconfig(tmp_path, "generate", "--gpu-mem", "80GB", *argv, *(["--stdout"] if stdout else []))
    assert code == 2, (out, err)
    rendered(out, err)
    assert err.startswith(f"dsconfig generate: error: {says}") and err.count("\n") == 1, err
    assert not out and os.listdir(tmp_path) == []


def test_generate_refuses_an_output_dir_the_current_folder_makes_unsafe(tmp_path):
    """Outside the current folder the files are named by their absolute path: the folders above hold a newline."""
    here = tmp_path / "w\n::warning::x" / "run"
    here.mkdir(parents=True)
    code, out, err = dsconfig(here, "generate", "--gpu-mem", "80GB", "--output-dir", "../out")
    assert code == 2, (out, err)
    rendered(out, err)
    assert err.startswith("dsconfig generate: error: --output-dir '../out': the generated files name it '") and \
        "w\\n::warning::x/out', and that holds '\\n', a control" in err and err.count("\n") == 1, err
    assert not (here.parent / "out").exists()
