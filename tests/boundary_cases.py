"""The hostile repository every command is walked over (tests/test_reading_boundary.py, with an audit hook;
bench/strace_reads.py, under strace), and the command lines that walk it: each way dsconfig can be made
to read a file outside what it was given, as an attacker with a pull request would set it up."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

SECRET = "hunter2-" + "5ec2e7"
PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the checkout: dsconfig/, schemas/

DS_CONFIG = {"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 2, "gradient_clipping": 1.0,
             "zero_optimization": {"stage": 2}}


def _accelerate(config_file: str) -> str:
    return ("compute_environment: LOCAL_MACHINE\ndistributed_type: DEEPSPEED\nnum_processes: 2\n"
            f"deepspeed_config:\n  deepspeed_config_file: {config_file}\n")


def build(top: Path) -> Path:
    """top/outside: what must never be read; top/repo: the repository a pull request controls. Returns top."""
    outside, repo = top / "outside", top / "repo"
    outside.mkdir()
    (repo / ".git").mkdir(parents=True)  # the project's ceiling
    (outside / "secret.json").write_text(json.dumps({**DS_CONFIG, "registry_token": SECRET, SECRET: 1}))
    (outside / "fsdp.json").write_text(json.dumps({"transformer_layer_cls_to_wrap": [SECRET], "xla": SECRET}))
    (outside / "requirements.txt").write_text(f"deepspeed @ git+https://{SECRET}@example.com/deepspeed.git\n")
    (outside / "model.py").write_text(f"TOKEN = '{SECRET}'\nimport torch\nbatch_size = 3\n")
    (outside / "config.json").write_text(json.dumps({"model_type": "llama", "hidden_size": 4096, SECRET: 1}))

    (repo / "ds_config.json").write_text(json.dumps(DS_CONFIG, indent=2))
    os.symlink("/proc/self/environ", repo / "environ.json")
    os.symlink("../outside/secret.json", repo / "outside.json")
    os.symlink("../outside/config.json", repo / "model_config.json")
    os.symlink("../outside", repo / "shared")  # a folder link out of the repository (`data -> /datasets`)
    if hasattr(os, "mkfifo"):
        os.mkfifo(repo / "pipe.json")
    (repo / "acc_environ.yaml").write_text(_accelerate("/proc/self/environ"))
    (repo / "acc_outside.yaml").write_text(_accelerate("../outside/secret.json"))
    (repo / "acc_fifo.yaml").write_text(_accelerate("pipe.json"))
    (repo / "acc_link.yaml").write_text(_accelerate("outside.json"))
    (repo / "acc_shared.yaml").write_text(_accelerate("shared/secret.json"))
    (repo / "args.json").write_text(json.dumps({
        "output_dir": "out", "per_device_train_batch_size": 4, "gradient_accumulation_steps": 2,
        "fsdp": "full_shard", "fsdp_config": "../outside/fsdp.json", "deepspeed": "../outside/secret.json"}))
    (repo / "train.py").write_text("from shared.model import batch_size\nfrom torch.utils.data import DataLoader\n"
                                   "loader = DataLoader(range(10), batch_size=batch_size)\n")
    (repo / "requirements.txt").write_text("-r ../outside/requirements.txt\n")
    (repo / "pyproject.toml").write_text('[tool.dsconfig]\nallow-read = ["/"]\n')
    os.symlink("/proc/self/environ", repo / ".gitignore")
    return top


# (case id, arguments: a `dsconfig` command line, or ("--api", an expression of `dsconfig`))
NAMED = ["environ.json", "outside.json", "acc_environ.yaml", "acc_outside.yaml", "acc_fifo.yaml", "acc_link.yaml",
         "acc_shared.yaml"]
CASES = [
    *[(f"lint-{fmt}", ["lint", ".", "--format", fmt]) for fmt in ("concise", "full", "json", "sarif", "github")],
    ("lint-named", ["lint", *NAMED, "args.json", "train.py", "--format", "full"]),
    ("lint-world-size", ["lint", ".", "--world-size", "8", "--format", "full"]),
    ("lint-training-args", ["lint", "ds_config.json", "--training-args", "args.json", "--format", "full"]),
    ("lint-model", ["lint", "ds_config.json", "--model", "model_config.json"]),
    ("lint-fix", ["lint", ".", "--fix", "--unsafe-fixes"]),
    ("lint-diff", ["lint", ".", "--diff", "--unsafe-fixes"]),
    ("lint-all-releases", ["lint", "acc_outside.yaml", "acc_link.yaml", "--deepspeed-version", "all"]),
    ("lint-glob", ["lint", "**/*.json", "--format", "full"]),
    *[(f"explain-{name}", ["explain", name]) for name in NAMED],
    ("explain-training-args", ["explain", "ds_config.json", "--training-args", "args.json"]),
    ("explain-diff", ["explain", "ds_config.json", "--diff", "outside.json"]),
    ("explain-model", ["explain", "ds_config.json", "--model", "model_config.json", "--format", "json"]),
    *[(f"convert-{name}", ["convert", name, "--to", "fsdp", "--stdout"]) for name in NAMED],
    ("convert-model", ["convert", "ds_config.json", "--to", "fsdp", "--model", "model_config.json", "--stdout"]),
    *[(f"estimate-{name}", ["estimate", name, "--params", "7B", "--gpu-mem", "80GB"]) for name in NAMED],
    ("estimate-model", ["estimate", "--model", "model_config.json", "--gpu-mem", "80GB"]),
    ("generate-model", ["generate", "--model", "model_config.json", "--gpus", "2", "--gpu-mem", "80GB", "--stdout"]),
    ("rule", ["rule", "DS009"]),
    ("rules", ["rules"]),
    *[(f"api-{name}", ["--api", f"dsconfig.check({name!r})"]) for name in NAMED],
    ("api-training-args", ["--api", "dsconfig.check('ds_config.json', training_args='args.json')"]),
    ("api-model", ["--api", "dsconfig.check('ds_config.json', model='model_config.json')"]),
    ("api-dict", ["--api", "dsconfig.check({'train_batch_size': 8}, world_size=[1, 2])"]),
]


def allowed_places(top: Path) -> list[str]:
    """Where a run may open files: the repository, the Python installation, dsconfig's own package, and its own
    temporary folder (top/tmp, as $TMPDIR: `dsconfig rule` lints its examples there)."""
    places = {os.path.realpath(top / "repo"), os.path.realpath(top / "tmp"), os.path.realpath(PACKAGE_ROOT),
              "/dev/null"}
    for prefix in (sys.prefix, sys.base_prefix, sys.exec_prefix, *sys.path):
        if prefix and os.path.isabs(prefix) and os.path.realpath(prefix) != "/":
            places.add(os.path.realpath(prefix))
    return sorted(places)


def outside(path: str, places: list[str]) -> bool:
    real = os.path.realpath(path)
    return not any(real == place or real.startswith(place.rstrip("/") + "/") for place in places)


def forbidden(opened: list[str], top: Path, places: list[str]) -> list[str]:
    """The paths among `opened` that no run may open: outside the allowed places, under /proc or /sys, the FIFO."""
    fifo = os.path.realpath(top / "repo" / "pipe.json")
    return [path for path in opened if outside(path, places) or os.path.realpath(path).startswith(("/proc/", "/sys/"))
            or os.path.realpath(path) == fifo]
