"""Hostile inputs for `dsconfig lint`, shared by tests/test_hostile.py (messages, exit codes) and
bench/hostile.py (time and memory per case).

Each case builds its files in a scratch folder and says how to run dsconfig on them, which exit
code is right, and a fragment the one-line message must hold.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from typing import Callable, NamedTuple

CONFIG = b'{\n  "train_micro_batch_size_per_gpu": 4,\n  "gradient_accumulation_steps": 2\n}\n'
DSCONFIG = [sys.executable, "-m", "dsconfig"]
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def environment() -> dict:
    """The environment a case runs in: `python -m dsconfig` in the case's folder imports this
    checkout's dsconfig, not whichever one is installed."""
    paths = [ROOT, *filter(None, [os.environ.get("PYTHONPATH")])]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}


class Spec(NamedTuple):
    argv: list[str]
    stdin: str | None = None  # a file (in the case's folder) to feed on standard input
    shell: str | None = None  # a bash pipeline, for the closed-stdout case


class Case(NamedTuple):
    name: str
    make: Callable[[str], Spec | None]  # builds the files under a folder; None when it cannot here
    exit_code: int
    says: str  # the message (stderr, else stdout) holds this; "" when the run must be silent
    where: str | None = None  # the line must start with this path (and a line:col), when one exists


def _write(folder: str, name: str, data: bytes) -> str:
    path = os.path.join(folder, name)
    with open(path, "wb") as handle:
        handle.write(data)
    return path


def _lint(*args: str) -> list[str]:
    # infos shown: many cases prove a file was read by its DS509 note
    return [*DSCONFIG, "lint", "--show-info", *args]


def _file(name: str, data: bytes, *args: str):
    def make(folder: str) -> Spec:
        _write(folder, name, data)
        return Spec(_lint(name, *args))
    return make


def _walked(name: str, data: bytes):
    """The file found by walking its folder (a walk skips what is no config)."""
    def make(folder: str) -> Spec:
        _write(folder, name, data)
        return Spec(_lint(".", "--show-skipped"))
    return make


def _big(folder: str) -> Spec:
    # 200 MB of one JSON string: a valid document, far larger than any config.
    path = os.path.join(folder, "ds_config.json")
    with open(path, "wb") as handle:
        handle.write(b'{"train_batch_size": 8, "pad": "')
        block = b"x" * (1 << 20)
        for _ in range(200):
            handle.write(block)
        handle.write(b'"}\n')
    return Spec(_lint("ds_config.json"))


def _write_keys(path: str, head: str, count: int) -> None:
    with open(path, "w") as handle:
        handle.write("{" + head)
        for start in range(0, count, 10_000):
            handle.write(", ".join(f'"k{i}": {i}' for i in range(start, min(count, start + 10_000))))
            handle.write(", " if start + 10_000 < count else "}\n")


def _many_keys(folder: str) -> Spec:
    _write_keys(os.path.join(folder, "many_keys.json"), "", 1_000_000)
    return Spec(_lint(".", "--show-skipped"))  # found by a folder walk: no config, skipped (and listed)


def _many_keys_named(folder: str) -> Spec:
    _write_keys(os.path.join(folder, "many_keys.json"), "", 1_000_000)
    return Spec(_lint("many_keys.json"))


def _many_keys_config(folder: str) -> Spec:
    # a DeepSpeed config with a million unknown top-level keys: one finding for each would flood
    _write_keys(os.path.join(folder, "ds_config.json"), '"train_batch_size": 8, ', 1_000_000)
    return Spec(_lint("ds_config.json"))


def _limit_unknown_keys(folder: str) -> Spec:
    # just under the read limit, every key unknown: the most findings one file can produce
    from dsconfig.files import MAX_BYTES
    parts, size, i = ['{"train_batch_size": 8'], 24, 0
    while size < MAX_BYTES - 32:
        part = f', "unknown_key_{i}": {i}'
        parts.append(part)
        size += len(part)
        i += 1
    _write(folder, "ds_config.json", ("".join(parts) + "}").encode())
    return Spec(_lint("ds_config.json"))


def _limit_yaml(folder: str) -> Spec:
    from dsconfig.files import MAX_BYTES
    lines, size, i = ["compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\n"], 60, 0
    while size < MAX_BYTES - 32:
        line = f"unknown_key_{i}: {{nested: [{i}, {i}]}}\n"
        lines.append(line)
        size += len(line)
        i += 1
    _write(folder, "accelerate_config.yaml", "".join(lines).encode())
    return Spec(_lint("accelerate_config.yaml"))


def _deep_yaml(folder: str) -> Spec:
    depth = 100_000
    _write(folder, "accelerate_config.yaml", b"compute_environment: LOCAL_MACHINE\nfsdp_config: "
           + b"[" * depth + b"]" * depth + b"\n")
    return Spec(_lint("accelerate_config.yaml"))


def _model_config(data: bytes, command: str):
    def make(folder: str) -> Spec:
        _write(folder, "config.json", data)
        return Spec([*DSCONFIG, command, "--model", "config.json", "--gpus", "2", "--gpu-mem", "80GB",
                     *(["--stdout"] if command == "generate" else [])])
    return make


def _deep(folder: str) -> Spec:
    depth = 100_000
    _write(folder, "ds_config.json", b"[" * depth + b"]" * depth)
    return Spec(_lint("ds_config.json"))


def _deep_object(folder: str) -> Spec:
    depth = 35_000  # 100,000 levels of {"a": would pass the read limit; the array case has 100,000
    _write(folder, "deep.json", b'{"a": ' * depth + b"1" + b"}" * depth)
    return Spec(_lint(".", "--show-skipped"))  # found by a folder walk: no config, skipped (and listed)


def _deep_object_named(folder: str) -> Spec:
    _deep_object(folder)
    return Spec(_lint("deep.json"))


BILLION_LAUGHS = b"""compute_environment: LOCAL_MACHINE
distributed_type: DEEPSPEED
a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
num_processes: 2
"""

BOMB_INSIDE = BILLION_LAUGHS.replace(b"num_processes: 2\n", b"") .replace(b"a: &a", b"x: &a") \
    .replace(b"distributed_type: DEEPSPEED\n", b"distributed_type: DEEPSPEED\ndeepspeed_config:\n  zero_stage: 2\n") \
    + b"fsdp_config: {fsdp_sharding_strategy: *i, fsdp_offload_params: *i}\nnum_processes: 2\n"



def alias_chain(levels: int) -> list[str]:
    """`l0` to `l{levels}`: each level a mapping of two aliases to the one below, a few bytes per
    level whose expansion doubles with each: 25 levels are 2^25 leaves."""
    return ["z0: &l0 [1, 2]"] + [f"z{i}: &l{i} {{a: *l{i - 1}, b: *l{i - 1}}}" for i in range(1, levels + 1)]


ALIAS_CHAIN = ("\n".join(alias_chain(25) + [
    "compute_environment: LOCAL_MACHINE", "distributed_type: DEEPSPEED", "num_processes: *l25",
    "mixed_precision: *l25", "deepspeed_config:", "  zero_stage: *l25", "  gradient_clipping: *l25",
    "  zero3_init_flag: *l25", "  deepspeed_config_file: *l25", "fsdp_config: {fsdp_sharding_strategy: *l25}",
]) + "\n").encode()
# The same chain where a ds_config.json is paired: the values are compared across the two files.
ALIAS_CHAIN_PAIRED = ("\n".join(alias_chain(25) + [
    "compute_environment: LOCAL_MACHINE", "distributed_type: DEEPSPEED", "num_processes: 2", "deepspeed_config:",
    "  deepspeed_config_file: ds_config.json", "  zero_stage: *l25", "  zero3_init_flag: *l25",
    "  offload_param_device: *l25",
]) + "\n").encode()


def _alias_chain_paired(folder: str) -> Spec:
    _write(folder, "ds_config.json", b'{"train_micro_batch_size_per_gpu": 4, "zero_optimization": {"stage": 2}}\n')
    _write(folder, "accelerate_config.yaml", ALIAS_CHAIN_PAIRED)
    return Spec(_lint("accelerate_config.yaml", "--format", "full"))


def _yaml_naming(named: str, *, fifo: bool = False):
    """An Accelerate YAML in configs/ naming `named`; a secret next to the linted folder."""
    def make(folder: str) -> Spec:
        os.makedirs(os.path.join(folder, "configs"), exist_ok=True)
        _write(folder, "secret.env", b"TOKEN=hostile-secret\n")
        if fifo:
            os.mkfifo(os.path.join(folder, "configs", "pipe"))
        _write(folder, "configs/accelerate_config.yaml",
               b"compute_environment: LOCAL_MACHINE\ndistributed_type: DEEPSPEED\nnum_processes: 2\n"
               b"deepspeed_config:\n  deepspeed_config_file: " + named.encode() + b"\n")
        return Spec(_lint("configs", "--format", "full"))
    return make


def _named_link_to_environ(folder: str) -> Spec | None:
    """The pre-commit hook names a `ds_config.json` a pull request added as a link to the environment."""
    if not os.path.exists("/proc/self/environ"):
        return None
    os.symlink("/proc/self/environ", os.path.join(folder, "ds_config.json"))
    return Spec(_lint("ds_config.json", "--format", "full"))


def _walk_entries(folder: str) -> Spec | None:
    """A walked folder holding a dangling link, a loop of links and a FIFO named like configs."""
    if not hasattr(os, "mkfifo"):
        return None
    configs = os.path.join(folder, "configs")
    os.makedirs(configs)
    _write(folder, "configs/bad.json", b'{"train_batch_size": 7.0}\n')
    os.symlink("missing.json", os.path.join(configs, "ds_config.json"))
    os.symlink("b.json", os.path.join(configs, "a.json"))
    os.symlink("a.json", os.path.join(configs, "b.json"))
    os.mkfifo(os.path.join(configs, "zero3.json"))
    return Spec(_lint("configs"))


TAGS = b"""compute_environment: LOCAL_MACHINE
distributed_type: !!python/object/apply:os.system ["echo pwned > pwned.txt"]
num_processes: 2
"""


def _directory(folder: str) -> Spec:
    os.mkdir(os.path.join(folder, "ds_config.json"))
    return Spec(_lint(os.path.join("ds_config.json", "")))


def _directory_empty(folder: str) -> Spec:
    os.mkdir(os.path.join(folder, "configs"))
    return Spec(_lint("configs"))


def _symlink_loop(folder: str) -> Spec:
    os.symlink("b.json", os.path.join(folder, "a.json"))
    os.symlink("a.json", os.path.join(folder, "b.json"))
    return Spec(_lint("a.json"))


def _unreadable(folder: str) -> Spec | None:
    path = _write(folder, "ds_config.json", CONFIG)
    os.chmod(path, 0)
    if os.geteuid() != 0:
        return Spec(_lint("ds_config.json"))
    # root reads anything; without the capabilities that let it, mode 000 refuses root too
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return None
    return Spec([setpriv, "--bounding-set=-dac_override,-dac_read_search", *_lint("ds_config.json")])


def _closed_stdout(folder: str) -> Spec | None:
    if shutil.which("head") is None or shutil.which("bash") is None:
        return None
    body = ", ".join(f'"unknown_{i}": {i}' for i in range(2000))
    _write(folder, "ds_config.json", ('{"train_batch_size": 7.0, ' + body + "}").encode())
    command = " ".join(shlex.quote(part) for part in DSCONFIG + ["lint", "ds_config.json"])
    return Spec([], shell=f"set -o pipefail; {command} | head -0")


def _stdin_binary(folder: str) -> Spec:
    _write(folder, "input.bin", bytes(range(256)) * 64)
    return Spec(_lint("-", "--stdin-filename", "ds_config.json"), stdin="input.bin")


def _stdin_too_large(folder: str) -> Spec:
    _write(folder, "input.bin", b" " * (300 << 10))
    return Spec(_lint("-", "--stdin-filename", "ds_config.json"), stdin="input.bin")


# A glob that backtracks exponentially as a regex (8 x `*a` then `*b` against a 60-character name of a's),
# and a reversed range, which Python's re rejects and git reads as its first character.
SLOW_GLOB = "*a" * 8 + "*b"
LONG_NAME = "a" * 55 + ".json"


def _glob_from(source: str, pattern: str):
    """LONG_NAME, linted as part of its folder, with `pattern` given by `source`: `--exclude`, a
    .gitignore in the folder, `exclude` in .dsconfig.toml or `per-file-ignores` in pyproject.toml."""
    def make(folder: str) -> Spec:
        _write(folder, LONG_NAME, CONFIG)
        os.mkdir(os.path.join(folder, ".git"))  # the repository root: no configuration is looked for above
        quoted = pattern.replace("\\", "\\\\").replace('"', '\\"')
        if source == "--exclude":
            return Spec(_lint(".", "--exclude", pattern))
        if source == ".gitignore":
            _write(folder, ".gitignore", f"{pattern}\n".encode())
        elif source == ".dsconfig.toml":
            _write(folder, ".dsconfig.toml", f'exclude = ["{quoted}"]\n'.encode())
        else:
            _write(folder, "pyproject.toml", f'[tool.dsconfig.per-file-ignores]\n"{quoted}" = ["DS509"]\n'.encode())
        return Spec(_lint("."))
    return make


# 150 nested folders and patterns repeating `**`: Python's glob.glob yields the deepest file once per way of
# splitting its folders between the `**` (C(153, 3) times for four: hours), and a pattern read at each folder
# of each path walked costs the depth squared per path.
DEEP_FOLDERS = 150
DEEP_CONFIG = "./" + "a/" * DEEP_FOLDERS + "ds_config.json"
GLOBSTARS = "**/**/**/**/"


def _deep_globstar(source: str, pattern: str):
    """DEEP_CONFIG, linted through the glob `pattern` (`source` "path"), or as part of its folder with `pattern`
    given by `source` as in _glob_from (which adds LONG_NAME at the top)."""
    def make(folder: str) -> Spec:
        deep = os.path.join(folder, *["a"] * DEEP_FOLDERS)
        os.makedirs(deep)
        _write(deep, "ds_config.json", CONFIG)
        if source != "path":
            return _glob_from(source, pattern)(folder)
        os.mkdir(os.path.join(folder, ".git"))
        return Spec(_lint(pattern))
    return make


FORMATS = ("concise", "full", "json", "github", "sarif")
# Lone surrogates as JSON and YAML escapes, in a key and in a value quoted by the message.
SURROGATES_JSON = (b'{"train_batch_size": 8, "gradient_clipping": 1.0, "\\ud800": 1, '
                   b'"communication_data_type": "\\udcff"}\n')
SURROGATES_YAML = (b'compute_environment: LOCAL_MACHINE\ndistributed_type: DEEPSPEED\nnum_processes: 2\n'
                   b'"\\ud800": 1\nmixed_precision: "\\udcff"\n')
# the key "\ud800" as each format shows it: a Python-style escape in text, a JSON escape in the pointer
SURROGATE_SHOWN = {"concise": "`\\ud800`", "full": "`\\ud800`", "github": "`\\ud800`", "json": '"/\\ud800"',
                   "sarif": '"/\\ud800"'}
# A file name that is not UTF-8 (the byte 0xff; Python gives it as "\udcff") and how each format names it.
UNDECODABLE = "ds\udcff_config.json"
UNDECODABLE_SHOWN = {"concise": "ds\\udcff_config.json:1:22", "full": "ds\\udcff_config.json:1:22",
                     "github": "file=ds\\udcff_config.json,", "json": '"file": "ds\\udcff_config.json"',
                     "sarif": '"uri": "ds%FF_config.json"'}
# A newline and a forged workflow command, an escape sequence, a carriage return, C1 CSI, a bidi override.
CONTROL_NAME = "ds_config\n::error file=x::\x1b[31m\r\x9b\u202e.json"
CONTROL_SHOWN = "ds_config\\n::error file=x::\\x1b[31m\\r\\x9b\\u202e.json:1:22"


def _fifo_output(folder: str) -> Spec | None:
    """-o at a named pipe: written into (a reader gets the findings), the pipe stays a pipe."""
    if shutil.which("bash") is None or not hasattr(os, "mkfifo"):
        return None
    _write(folder, "ds_config.json", b'{"train_batch_size": 7.0}\n')
    os.mkfifo(os.path.join(folder, "out.fifo"))
    command = shlex.join(_lint("ds_config.json", "--format", "json", "-o", "out.fifo", "--force"))
    return Spec([], shell=f"cat out.fifo > got.txt & {command}; status=$?; wait; "
                          "[ -p out.fifo ] && grep -q DS201 got.txt || exit 99; exit $status")


def _missing_control_name(folder: str) -> Spec:
    return Spec(_lint("nowhere/\x1b]0;title\x07\n::error::x.json"))
def _command(command: str, *args: str):
    def make(folder: str) -> Spec:
        return Spec([*DSCONFIG, command, *args, *(["--stdout"] if command == "generate" else [])])
    return make


def _estimate_ds_config(data: bytes):
    def make(folder: str) -> Spec:
        _write(folder, "ds_config.json", data)
        return Spec([*DSCONFIG, "estimate", "ds_config.json", "--model", "gpt2", "--gpu-mem", "80GB"])
    return make


def _estimate_fsdp_yaml(data: bytes):
    def make(folder: str) -> Spec:
        _write(folder, "fsdp.yaml", data)
        return Spec([*DSCONFIG, "estimate", "fsdp.yaml", "--model", "gpt2", "--gpu-mem", "80GB"])
    return make


FSDP_BOMB = BILLION_LAUGHS.replace(b"distributed_type: DEEPSPEED\n", b"distributed_type: FSDP\n") \
    .replace(b"num_processes: 2\n", b"fsdp_config: {fsdp_version: 1, fsdp_sharding_strategy: *i}\nnum_processes: 2\n")


def _factory(command: str, spec: str, shape: str):
    def make(folder: str) -> Spec:
        return Spec([*DSCONFIG, command, "--model-factory", spec, "--input-shape", shape, "--gpu-mem", "80GB"])
    return make


def _training_args(data: bytes):
    def make(folder: str) -> Spec:
        _write(folder, "ds_config.json", b'{"train_micro_batch_size_per_gpu": "auto", "zero_optimization": {}, '
               b'"scheduler": {"type": "WarmupDecayLR", "params": {"total_num_steps": "auto"}}}')
        _write(folder, "args.json", data)
        return Spec(_lint("ds_config.json", "--training-args", "args.json", "--world-size", "2", "--dataset-size",
                          "1000"))
    return make


def _sparse(name: str):
    # 30 GiB that take no disk space: read() sized its buffer from st_size and raised MemoryError
    def make(folder: str) -> Spec:
        _write(folder, "ds_config.json", CONFIG)
        with open(os.path.join(folder, name), "wb") as handle:
            handle.truncate(30 << 30)
        return Spec(_lint("."))
    return make


def _llama(**sizes) -> bytes:
    import json
    config = {"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32, **sizes}
    return json.dumps(config).encode()  # NaN and Infinity as JSON's readers take them


def _stdin_large_limit(folder: str) -> Spec:
    _write(folder, "input.json", CONFIG)
    return Spec(_lint("-", "--stdin-filename", "ds_config.json", "--max-file-size", "30G"), stdin="input.json")



# -- training scripts (.py), read statically ----------------------------------------------------------

_LOADER_HEAD = b"from torch.utils.data import DataLoader\n"


def _script_tree(folder: str, count: int) -> Spec:
    # many small scripts that import each other in a ring, each with a Trainer and a DataLoader: the
    # imports are followed once, the ring never loops
    for i in range(count):
        _write(folder, f"mod{i}.py", (f"import lightning as L\nfrom torch.utils.data import DataLoader\n"
                                      f"import mod{(i + 1) % count}\n\n\ndef make(ds):\n"
                                      f"    L.Trainer(devices=2)\n    return DataLoader(ds, batch_size={i % 7 + 1})\n")
               .encode())
    return Spec(_lint(".", "--world-size", "2"))


def _script_import_link_out(folder: str) -> Spec:
    # the script imports a module that is a link to a file outside the folder linted: never read
    outside = os.path.join(os.path.dirname(folder), "outside_" + os.path.basename(folder))
    os.makedirs(outside, exist_ok=True)
    _write(outside, "secret.py", b"import torch.utils.data\n\n\nclass S(torch.utils.data.distributed."
                                 b"DistributedSampler):\n    pass\n")
    project = os.path.join(folder, "project")
    os.mkdir(project)
    os.symlink(os.path.join(outside, "secret.py"), os.path.join(project, "secret.py"))
    _write(project, "train.py", b"import lightning as L\nfrom torch.utils.data import DataLoader\n"
                                b"from secret import S\n\n\ndef main(ds, m):\n"
                                b"    L.Trainer(devices=2).fit(m, DataLoader(ds, batch_sampler=S(ds)))\n")
    return Spec(_lint("project/train.py"))


def _big_script(folder: str) -> Spec:
    _write(folder, "train.py", b"x = 1\n" * 2_000_000)  # 12 MB
    return Spec(_lint("train.py"))


def _big_script_walked(folder: str) -> Spec:
    _write(folder, "train.py", b"x = 1\n" * 2_000_000)
    return Spec(_lint("."))



def _convert(name: str, data: bytes, to: str):
    def make(folder: str) -> Spec:
        _write(folder, name, data)
        return Spec([*DSCONFIG, "convert", name, "--to", to])
    return make


def _convert_big(folder: str) -> Spec:
    _big(folder)
    return Spec([*DSCONFIG, "convert", "ds_config.json", "--to", "fsdp"])

# -- FSDP (fsdp_config, lint --model) ------------------------------------------------------------------

_FSDP_HEAD = (b"distributed_type: FSDP\nnum_processes: 2\nfsdp_config:\n  fsdp_version: 2\n"
              b"  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP\n")


def _fsdp_alias_bomb() -> bytes:
    """Layer classes that expand to 2**25 names: the launcher's str() of it would be gigabytes."""
    lines = [b"  fsdp_ignored_modules: &a0 [x, x]"]
    lines += [b"  fsdp_backward_prefetch%d: &a%d [*a%d, *a%d]" % (i, i, i - 1, i - 1) for i in range(1, 25)]
    lines.append(b"  fsdp_transformer_layer_cls_to_wrap: [*a24, *a24]")
    return _FSDP_HEAD + b"\n".join(lines) + b"\n"


def _model_file(data: bytes, name: str = "config.json"):
    """--model naming a config.json next to a valid FSDP YAML."""
    def make(folder: str) -> Spec:
        _write(folder, "accelerate_config.yaml", _FSDP_HEAD + b"  fsdp_transformer_layer_cls_to_wrap: X\n")
        _write(folder, name, data)
        return Spec(_lint("accelerate_config.yaml", "--model", name))
    return make


# dsconfig.check from a script: the documented exceptions (ConfigError, TypeError, ValueError, OSError),
# one line each, are the script's `dsconfig...` error line and exit code; anything else is a traceback.
_API_SCRIPT = """import sys
import dsconfig
{setup}
try:
    found = dsconfig.check({call})
except (dsconfig.ConfigError, TypeError, ValueError, OSError) as error:
    print(f"dsconfig.check: {{type(error).__name__}}: {{str(error).splitlines()[0]}}", file=sys.stderr)
    sys.exit(1 if isinstance(error, dsconfig.ConfigError) else 2)
print("\\n".join(map(str, found)))
sys.exit(1 if any(f.severity == "error" for f in found) else 0)
"""


def _api(call: str, setup: str = "", files: tuple[tuple[str, bytes], ...] = ()):
    def make(folder: str) -> Spec:
        for name, data in files:
            _write(folder, name, data)
        return Spec([sys.executable, "-c", _API_SCRIPT.format(setup=setup, call=call)])
    return make


def _model_ds(ds_config: bytes, model: bytes, *args: str):
    """--model naming a config.json, for a ds_config.json (lint's model-aware checks, DS95x)."""
    def make(folder: str) -> Spec:
        _write(folder, "ds_config.json", ds_config)
        _write(folder, "config.json", model)
        return Spec(_lint("ds_config.json", "--model", "config.json", *args))
    return make


_ZERO3_AUTO = (b'{"train_micro_batch_size_per_gpu": "auto", "zero_optimization": {"stage": 3, '
               b'"reduce_bucket_size": "auto", "stage3_prefetch_bucket_size": "auto"%s}%s}')
_DIGITS_4200 = b"1" + b"0" * 4200


def _explain_file(name: str, data: bytes, *args: str):
    """`dsconfig explain NAME ARGS...` on one file."""
    def make(folder: str) -> Spec:
        _write(folder, name, data)
        return Spec([*DSCONFIG, "explain", name, *args])
    return make


_NESTED_600 = b'{"train_batch_size": 8, "optimizer": ' + b'{"a": ' * 600 + b"1" + b"}" * 600 + b"}"
_ALIAS_BOMB = (b"distributed_type: DEEPSPEED\nnum_processes: 2\nx0: &a0 [1,1,1,1,1,1,1,1,1]\n"
               + b"".join(b"x%d: &a%d [" % (i, i) + b",".join([b"*a%d" % (i - 1)] * 9) + b"]\n" for i in range(1, 9)))


def _outside_and_fifo(folder: str, named: str, fifo: bool) -> bool:
    """`../outside-secret.json` beside the case's folder, and `named` made a FIFO with `fifo`; False when this
    machine cannot build the case (no mkfifo, no /proc)."""
    if (fifo and not hasattr(os, "mkfifo")) or (named.startswith("/proc") and not os.path.exists(named)):
        return False
    _write(os.path.dirname(folder), "outside-secret.json",
           b'{"train_batch_size": 8, "registry_token": "hostile-secret"}')
    if fifo:
        os.mkfifo(os.path.join(folder, named))
    return True


def _naming_outside(command: str, named: str, *, fifo: bool = False, link: bool = False):
    """`dsconfig explain|convert` on what a pull request could add: an Accelerate YAML naming `named` (or, with
    `link`, a ds_config.json that is a symbolic link to it); `../outside-secret.json` beside the case's folder."""
    def make(folder: str) -> Spec | None:
        if not _outside_and_fifo(folder, named, fifo):
            return None
        if link:
            os.symlink(named, os.path.join(folder, "ds_config.json"))
            given = "ds_config.json"
        else:
            _write(folder, "accelerate_config.yaml", b"compute_environment: LOCAL_MACHINE\ndistributed_type: DEEPSPEED\n"
                   b"num_processes: 2\ndeepspeed_config:\n  deepspeed_config_file: " + named.encode() + b"\n")
            given = "accelerate_config.yaml"
        return Spec([*DSCONFIG, command, given] + (["--to", "fsdp", "--stdout"] if command == "convert" else []))
    return make


def _launch_naming(named: str, *, fifo: bool = False):
    """A launch script a pull request could add, handing `named` to training as its DeepSpeed config (with an
    outside file holding a secret beside the case's folder): never opened, never quoted."""
    def make(folder: str) -> Spec | None:
        if not _outside_and_fifo(folder, named, fifo):
            return None
        _write(folder, "train.py", b"from transformers import TrainingArguments, Trainer, HfArgumentParser\n")
        _write(folder, "run.sh", b"deepspeed --num_gpus 2 train.py --deepspeed " + named.encode() + b" --bf16\n")
        return Spec(_lint("run.sh"))
    return make


def _launch_nested(folder: str) -> Spec:
    """A launch script of nested defaults and arithmetic (the shell reader recurses on neither)."""
    _write(folder, "run.sh", ("GPUS=$((" + "(" * 3000 + "2" + ")" * 3000 + "))\ndeepspeed --num_gpus $GPUS "
                              + "${A:-" * 3000 + "t.py" + "}" * 3000 + " --deepspeed ds.json\n").encode())
    _write(folder, "ds.json", CONFIG)
    return Spec(_lint("."))


def _all_releases(folder: str) -> Spec:
    """`--deepspeed-version all` over the costliest config a file can hold: each release group relints it."""
    _limit_unknown_keys(folder)
    return Spec(_lint("ds_config.json", "--deepspeed-version", "all"))


CASES = [
    Case("empty", _file("ds_config.json", b""), 1, "DS200", "ds_config.json:1:1"),
    Case("empty-yaml", _file("accelerate_config.yaml", b""), 1, "accelerate_config.yaml", "accelerate_config.yaml:1:1"),
    Case("binary", _file("ds_config.json", bytes(range(256)) * 64), 1, "not UTF-8", "ds_config.json:2:118"),
    Case("binary-other", _walked("weights.json", b"\x00\x01PK\x03\x04" * 100), 0, "DS005", "./weights.json:1:1"),
    # named on the command line, the same file is checked as the config the user says it is
    Case("binary-named", _file("weights.json", b"\x00\x01PK\x03\x04" * 100), 1, "DS004", "weights.json:1:1"),
    Case("invalid-utf8", _file("ds_config.json", b'{"train_batch_size": 8, "x": "\xff\xfe"}'), 1,
         "byte 0xff", "ds_config.json:1:"),
    Case("utf8-bom", _file("ds_config.json", b"\xef\xbb\xbf" + CONFIG), 0, "BOM", "ds_config.json:1:1"),
    Case("utf8-bom-hf", _file("ds_config.json", b"\xef\xbb\xbf" + CONFIG, "--target", "hf-trainer"), 1, "BOM",
         "ds_config.json:1:1"),
    Case("utf16-bom", _file("ds_config.json", b"\xff\xfe" + CONFIG.decode().encode("utf-16-le")), 1,
         "not UTF-8", "ds_config.json:1:1"),
    Case("crlf", _file("ds_config.json", CONFIG.replace(b"\n", b"\r\n")), 0, "DS509", "ds_config.json:1:1"),
    Case("crlf-error", _file("ds_config.json", b'{\r\n  "train_batch_size": 7.0\r\n}\r\n'), 1, "DS",
         "ds_config.json:2:23"),
    Case("200mb", _big, 1, "200 MiB", "ds_config.json:1:1"),
    Case("deep-array", _deep, 1, "DS000", "ds_config.json:1:"),
    Case("deep-object", _deep_object, 0, "DS005", "./deep.json:1:1"),
    Case("deep-object-named", _deep_object_named, 1, "DS000", "deep.json:1:"),
    Case("million-keys", _many_keys, 0, "DS005", "./many_keys.json:1:1"),
    Case("million-keys-named", _many_keys_named, 1, "DS007", "many_keys.json:1:1"),
    Case("million-unknown-keys", _many_keys_config, 1, "DS", "ds_config.json:1:"),
    Case("huge-integer", _file("ds_config.json", b'{"train_batch_size": ' + b"9" * 5000 + b"}"), 1, "DS000",
         "ds_config.json:1:"),
    Case("huge-float", _file("ds_config.json", b'{"train_batch_size": 1e400}'), 1, "train_batch_size",
         "ds_config.json:1:"),
    Case("nan", _file("ds_config.json", b'{"train_micro_batch_size_per_gpu": NaN}'), 1, "train_micro_batch_size",
         "ds_config.json:1:"),
    Case("billion-laughs", _file("accelerate_config.yaml", BILLION_LAUGHS), 1, "ACC001",
         "accelerate_config.yaml:"),
    Case("billion-laughs-inside", _file("accelerate_config.yaml", BOMB_INSIDE), 1, "ACC",
         "accelerate_config.yaml:"),
    Case("deep-yaml", _deep_yaml, 1, "DS000", "accelerate_config.yaml:1:1"),
    Case("limit-unknown-keys", _limit_unknown_keys, 0, "DS102", "ds_config.json:1:"),
    Case("limit-yaml", _limit_yaml, 1, "ACC001", "accelerate_config.yaml:3:1"),
    Case("estimate-binary-model", _model_config(bytes(range(256)), "estimate"), 2, "config.json:2:118"),
    Case("estimate-deep-model", _model_config(b"[" * 100_000 + b"]" * 100_000, "estimate"), 2, "config.json"),
    Case("generate-huge-model", _model_config(b'{"hidden_size": 1' + b"0" * 5000 + b"}", "generate"), 2,
         "config.json"),
    Case("yaml-tags", _file("accelerate_config.yaml", TAGS), 1, "tag", "accelerate_config.yaml:2:"),
    Case("directory-as-file", _directory, 2, "ds_config.json"),
    Case("empty-directory", _directory_empty, 2, "configs"),
    Case("missing", lambda folder: Spec(_lint("nowhere/ds_config.json")), 2, "nowhere/ds_config.json"),
    Case("symlink-loop", _symlink_loop, 2, "symbolic links"),
    Case("unreadable", _unreadable, 2, "ermission denied"),
    Case("closed-stdout", _closed_stdout, 1, "1 error"),  # the summary still reaches stderr
    Case("stdin-binary", _stdin_binary, 1, "not UTF-8", "ds_config.json:2:118"),
    Case("stdin-too-large", _stdin_too_large, 2, "ds_config.json: is larger than 256 KiB"),
    Case("yaml-alias-chain", _file("accelerate_config.yaml", ALIAS_CHAIN), 1, "ACC020", "accelerate_config.yaml:"),
    Case("yaml-alias-chain-paired", _alias_chain_paired, 1, "ACC", "accelerate_config.yaml:"),
    Case("names-proc-environ", _yaml_naming("/proc/self/environ"), 1, "ACC020", "configs/accelerate_config.yaml:5:"),
    Case("names-file-outside", _yaml_naming("../secret.env"), 1, "DS009", "configs/accelerate_config.yaml:5:"),
    Case("names-fifo", lambda folder: hasattr(os, "mkfifo") and _yaml_naming("pipe", fifo=True)(folder) or None, 1,
         "FIFO", "configs/accelerate_config.yaml:5:"),
    Case("walk-bad-entries", _walk_entries, 1, "DS008", "configs/"),
    Case("named-link-environ", _named_link_to_environ, 1, "DS009", "ds_config.json:1:1"),
    Case("null-root", _file("ds_config.json", b"null\n"), 1, "DS004", "ds_config.json:1:1"),
    Case("glob-slow-exclude", _glob_from("--exclude", SLOW_GLOB), 0, "DS509", f"./{LONG_NAME}:1:1"),
    Case("glob-slow-gitignore", _glob_from(".gitignore", SLOW_GLOB), 0, "DS509", f"./{LONG_NAME}:1:1"),
    Case("glob-slow-config-exclude", _glob_from(".dsconfig.toml", SLOW_GLOB), 0, "DS509", f"./{LONG_NAME}:1:1"),
    Case("glob-slow-per-file-ignores", _glob_from("pyproject.toml", SLOW_GLOB), 0, "DS509", f"./{LONG_NAME}:1:1"),
    # ending in a class, so no comparison of the literal end decides it before the automaton runs
    Case("glob-slow-class-exclude", _glob_from("--exclude", SLOW_GLOB[:-1] + "[b]"), 0, "DS509", f"./{LONG_NAME}:1:1"),
    Case("glob-reversed-exclude", _glob_from("--exclude", "[z-a]*"), 2, '--exclude "[z-a]*": the range z-a'),
    Case("glob-reversed-gitignore", _glob_from(".gitignore", "[z-a]*"), 0, "DS509", f"./{LONG_NAME}:1:1"),
    Case("glob-reversed-config-exclude", _glob_from(".dsconfig.toml", "[z-a]*"), 2,
         '.dsconfig.toml:1:12: `exclude`: "[z-a]*": the range z-a'),
    Case("glob-reversed-per-file-ignores", _glob_from("pyproject.toml", "[z-a]*"), 2,
         'pyproject.toml:2:1: [tool.dsconfig] `per-file-ignores`: "[z-a]*": the range z-a'),
    Case("glob-repeated-globstar", _deep_globstar("path", "./" + GLOBSTARS + "*.json"), 0, "DS509",
         f"{DEEP_CONFIG}:1:1"),
    Case("glob-repeated-globstar-folders", _deep_globstar("path", "./" + GLOBSTARS), 0, "DS509",
         f"{DEEP_CONFIG}:1:1"),
    Case("glob-alternating-globstar", _deep_globstar("path", "./**/a/**/a/**/a/**/*.json"), 0, "DS509",
         f"{DEEP_CONFIG}:1:1"),
    *[Case(f"glob-repeated-globstar-{name}", _deep_globstar(source, GLOBSTARS + "x*"), 0, "DS509", f"{DEEP_CONFIG}:1:1")
      for name, source in (("exclude", "--exclude"), ("gitignore", ".gitignore"), ("config-exclude", ".dsconfig.toml"),
                           ("per-file-ignores", "pyproject.toml"))],
    *[Case(f"surrogates-json-{fmt}", _file("ds_config.json", SURROGATES_JSON, "--world-size", "8", "--format", fmt),
           1, SURROGATE_SHOWN[fmt]) for fmt in FORMATS],
    *[Case(f"surrogates-yaml-{fmt}", _file("accelerate_config.yaml", SURROGATES_YAML, "--format", fmt), 1,
           SURROGATE_SHOWN[fmt]) for fmt in FORMATS],
    *[Case(f"undecodable-name-{fmt}", _file(UNDECODABLE, b'{"train_batch_size": 7.0}\n', "--format", fmt), 1,
           UNDECODABLE_SHOWN[fmt]) for fmt in FORMATS],
    Case("undecodable-name-output", _file(UNDECODABLE, b'{"train_batch_size": 7.0}\n', "--format", "sarif", "-o",
                                          "report.sarif"), 1, ""),
    Case("control-name", _file(CONTROL_NAME, b'{"train_batch_size": 7.0}\n'), 1, CONTROL_SHOWN, CONTROL_SHOWN),
    Case("control-name-full", _file(CONTROL_NAME, b'{"train_batch_size": 7.0}\n', "--format", "full"), 1,
         CONTROL_SHOWN, CONTROL_SHOWN),
    Case("control-name-github", _file(CONTROL_NAME, b'{"train_batch_size": 7.0}\n', "--format", "github"), 1,
         "file=ds_config%0A%3A%3Aerror file=x%3A%3A\x1b[31m%0D\x9b\u202e.json,line=1,col=22,"),
    Case("command-name", _file("::add-mask::ds_config.json", b'{"train_batch_size": 7.0}\n'), 1,
         "./::add-mask::ds_config.json:1:22", "./::add-mask::ds_config.json:1:22"),
    Case("command-key", _file("ds_config.json", b'{"train_batch_size": 8, "##[add-mask]secret": 1}\n'), 0,
         "`#\\x23[add-mask]secret`", "ds_config.json:1:"),
    Case("control-name-missing", _missing_control_name, 2,
         "dsconfig: error: nowhere/\\x1b]0;title\\x07\\n::error::x.json: no such file or directory"),
    Case("estimate-control-name", lambda folder: Spec([*DSCONFIG, "estimate", "--model", "\x1b]0;t\x07::x.json",
                                                      "--gpus", "2", "--gpu-mem", "80GB"]), 2,
         "--model: \\x1b]0;t\\x07::x.json"),
    Case("generate-undecodable-output-dir", lambda folder: Spec([*DSCONFIG, "generate", "--gpus", "2", "--gpu-mem",
                                                                "80GB", "--output-dir", "g\udcffen"]), 2,
         "--output-dir 'g\\udcffen' is not UTF-8 text"),
    Case("output-fifo", _fifo_output, 1, ""),
    Case("output-dev-null", _file("ds_config.json", b'{"train_batch_size": 7.0}\n', "--format", "json", "-o",
                                  "/dev/null", "--force"), 1, ""),
    Case("output-dash", _file("ds_config.json", b'{"train_batch_size": 7.0}\n', "-o", "-"), 1, "DS201",
         "ds_config.json:1:22"),
    Case("output-folder", _file("ds_config.json", b'{"train_batch_size": 7.0}\n', "-o", ".", "--force"), 2,
         ".: a folder, not a regular file; not replaced"),
    Case("step-string-clipping", _file("ds_config.json", b'{"train_batch_size": 8, "gradient_clipping": "1.0"}'), 1,
         "DS111", "ds_config.json:1:46"),
    Case("step-hjson-nan-clipping", _file("ds_config.json", b'{\n  "train_batch_size": 8,\n  "gradient_clipping": NaN\n}'),
         1, "first optimizer step", "ds_config.json:3:24"),
    Case("step-huge-list-clipping", _file("ds_config.json", b'{"train_batch_size": 8, "gradient_clipping": ['
                                          + b"0, " * 80_000 + b"0]}"), 1, "array [0, 0, 0", "ds_config.json:1:46"),
    # --max-file-size is a limit, not a buffer size: read(limit + 1) allocated 30 GiB up front
    Case("max-file-size-30g", _file("ds_config.json", CONFIG, "--max-file-size", "30G"), 0, "DS509",
         "ds_config.json:1:1"),
    Case("max-file-size-30g-stdin", _stdin_large_limit, 0, "DS509", "ds_config.json:1:1"),
    Case("sparse-gitignore-30g", _sparse(".gitignore"), 2, ".gitignore: is 30 GiB"),
    Case("sparse-settings-30g", _sparse(".dsconfig.toml"), 2, ".dsconfig.toml: is larger than 256 KiB"),
    # estimate / generate sizes: one line naming the option, or the file and the key
    Case("estimate-params-1e39", _command("estimate", "--params", "999999999999999999999999999T", "--gpu-mem",
                                          "80GB"), 2, "--params: 999999999999999999999999999T is 1e+39 parameters"),
    Case("estimate-billion-layers", _command("estimate", "--params", "7B", "--layers", "1000000000"), 2,
         "--layers is 1000000000, more than 10,000 layers"),
    Case("generate-huge-seq-len", _command("generate", "--gpu-mem", "80GB", "--seq-len", "9" * 400), 2,
         "--seq-len is a 400-digit number"),
    Case("generate-huge-gpu-mem", _command("generate", "--gpu-mem", "9" * 400 + "GB"), 2,
         "more memory than any machine has"),
    Case("estimate-model-1e12-layers", _model_config(_llama(num_hidden_layers=1e12), "estimate"), 2,
         "config.json: num_hidden_layers is 1000000000000.0, more than 10,000 layers"),
    Case("generate-model-10-12-layers", _model_config(_llama(num_hidden_layers=10 ** 12), "generate"), 2,
         "config.json: num_hidden_layers is 1000000000000, more than 10,000 layers"),
    Case("generate-model-float-layers", _model_config(_llama(num_hidden_layers=32.0), "generate"), 2,
         "config.json: num_hidden_layers must be an integer, not 32.0"),
    Case("generate-model-nan-head-dim", _model_config(_llama(head_dim=float("nan")), "generate"), 2,
         "config.json: head_dim must be a positive integer, not NaN"),
    Case("estimate-model-infinite-vocab", _model_config(_llama(vocab_size=float("inf")), "estimate"), 2,
         "config.json: vocab_size must be a positive integer, not Infinity"),
    Case("estimate-model-bool-intermediate", _model_config(_llama(intermediate_size=True), "estimate"), 2,
         "config.json: intermediate_size must be a positive integer, not true"),
    Case("estimate-ds-config-huge-micro-batch", _estimate_ds_config(b'{"train_micro_batch_size_per_gpu": 1'
                                                                    + b"0" * 400 + b"}"), 2,
         "ds_config.json: train_micro_batch_size_per_gpu is a 401-digit number"),
    # TrainingArguments that the Trainer accepts and train() fails on: one line naming the file and the key
    Case("training-args-nan-epochs", _training_args(b'{"num_train_epochs": NaN}'), 2,
         "training arguments args.json: num_train_epochs is NaN"),
    Case("training-args-infinite-epochs", _training_args(b'{"num_train_epochs": Infinity}'), 2,
         "training arguments args.json: num_train_epochs is Infinity"),
    Case("training-args-1e308-epochs", _training_args(b'{"num_train_epochs": 1e308}'), 2,
         "training arguments args.json: num_train_epochs is 1e+308"),
    Case("training-args-nan-warmup", _training_args(b'{"warmup_steps": NaN}'), 2,
         "training arguments args.json: warmup_steps is NaN"),
    # a project's training configs: TOML and YAML read as training configs, never a traceback or a stall
    Case("toml-deep-arrays", _file("train.toml", b"batch_size = " + b"[" * 100_000 + b"]" * 100_000 + b"\n"), 1,
         "DS000", "train.toml:1:"),
    Case("toml-binary", _file("train.toml", b"\x00\xff\xfe" * 300), 1, "DS000", "train.toml:1:"),
    Case("toml-million-batch-keys", _file("train.toml", b"".join(b"run%d_bs = 1.0\n" % i for i in range(15_000))), 1,
         "DS006", "train.toml:1:"),
    Case("yaml-alias-batch-bomb", _file("train.yaml", b"a0: &a0 {batch_size: 1.0}\n" + b"".join(
        b"a%d: &a%d {x: *a%d, y: *a%d}\n" % (i, i, i - 1, i - 1) for i in range(1, 30)), "--world-size", "2",
        "--dataset-size", "100"), 1, "DS006", "train.yaml:"),
    Case("yaml-interpolation-loop", _file("train.yaml", b"a:\n  batch_size: ${b.batch_size}\nb:\n  batch_size: "
                                                        b"${a.batch_size}\n", "--world-size", "2"), 0, "no problems in 1 file"),
    Case("training-huge-global-batch", _file("train.yaml", b"global_batch_size: 1" + b"0" * 4000 + b"\n",
                                             "--world-size", "3", "--dataset-size", "1000", "--batchnorm"), 1,
         "4001-digit number", "train.yaml:1:"),
    # the deepest model accepted, planned through every rung and node count: the work is not per layer
    Case("generate-model-10000-layers", _model_config(_llama(num_hidden_layers=10_000, hidden_size=8192,
                                                             intermediate_size=28672), "generate"), 1,
         "does not fit 1 node × 2 GPUs of 79.6 GiB: even ZeRO-3"),
    # training scripts: never imported or run; a named one that Python cannot read is DS000 at its position
    Case("script-syntax-error", _file("train.py", b"def main(:\n    pass\n"), 1,
         "DS000 Python cannot parse it: invalid syntax", "train.py:1:10:"),
    Case("script-syntax-error-walked", _walked("train.py", b"def main(:\n    pass\n"), 0, "no problems in 1 file"),
    Case("script-not-utf8", _file("train.py", b"x = 1\ny = '\xff\xfe'\n"), 1,
         "DS000 not utf-8 text (byte 0xff): Python cannot read it", "train.py:2:6:"),
    Case("script-nul-byte", _file("train.py", b"x = 1\x00\n"), 1, "DS000 Python cannot parse it", "train.py:"),
    Case("script-nesting-100000", _file("train.py", b"x = " + b"(" * 100_000 + b")" * 100_000 + b"\n"), 1,
         "DS000 Python cannot parse it: too many nested parentheses", "train.py:1:"),
    Case("script-division-chain-20000", _file("train.py", _LOADER_HEAD + b"bs = " + b"8 / " * 20_000
                                              + b"1\nDataLoader(d, batch_size=bs)\n"), 1,
         "DS000 nested too deeply for Python to parse", "train.py:1:1:"),
    Case("script-division-chain-900", _file("train.py", _LOADER_HEAD + b"bs = " + b"8 / " * 900
                                            + b"1\nDataLoader(d, batch_size=bs)\n"), 1,
         "DS801 DataLoader(batch_size=...) gets a float", "train.py:3:26:"),
    Case("script-12mb-named", _big_script, 1, "DS007 11 MiB: larger than dsconfig reads", "train.py:1:1:"),
    Case("script-12mb-walked", _big_script_walked, 0, "no problems in 1 file"),
    Case("script-ring-of-400-imports", lambda folder: _script_tree(folder, 400), 0,
         "1 warning in 400 files"),  # DS010 for the run: --world-size 2 bears on none of them
    Case("script-import-link-outside", _script_import_link_out, 0, "no problems in 1 file"),
    # --model-factory: a bad spec, shape or module is one line, found before torch is imported
    Case("factory-spec-without-function", _factory("estimate", "os.path", "1,3"), 2,
         "--model-factory takes MODULE:FUNCTION"),
    Case("factory-missing-module", _factory("generate", "no_such_module_here:build", "2,3,32,32"), 2,
         "no module named 'no_such_module_here'"),
    Case("factory-5000-digit-input-size", _factory("generate", "models:build", "2,3," + "9" * 5000), 2,
         "--input-shape size 2 is a 5000-digit number"),
    Case("factory-input-shape-negative", _factory("estimate", "models:build", "2,-3,32"), 2,
         "is not a list of positive integers"),
    # a list deeper than Python's recursion limit inside a validated section (json.load reads it)
    Case("list-600-deep-in-comms-logger", _file("ds_config.json", b'{"train_batch_size": 8, "comms_logger": '
                                                b'{"prof_ops": ' + b"[" * 600 + b"]" * 600 + b"}}"), 1,
         "DS000 DeepSpeed's hjson loader fails: nesting too deep", "ds_config.json:1:"),
    Case("list-600-deep-in-weight-quantization", _file("ds_config.json", b'{"train_batch_size": 8, '
                                                       b'"weight_quantization": {"quantized_initialization": '
                                                       + b"[" * 600 + b"]" * 600 + b"}}"), 1,
         "Input should be a valid dictionary (got [[[[", "ds_config.json:1:"),
    # --deepspeed-version: outside the supported range, a one-line usage error
    Case("deepspeed-version-too-old", _file("ds_config.json", b'{"train_batch_size": 8}',
                                            "--deepspeed-version", "0.13.5"), 2,
         "DeepSpeed 0.13.5 is not supported: dsconfig replays 0.14.0 to 0.19.8"),
    # estimate / generate --backend fsdp: an Accelerate FSDP YAML as input, a deep model planned
    Case("estimate-fsdp-alias-bomb-strategy", _estimate_fsdp_yaml(FSDP_BOMB), 2,
         "fsdp.yaml:11:4: fsdp_sharding_strategy is a JSON array, not a single value"),
    Case("estimate-fsdp-1e12-processes", _estimate_fsdp_yaml(b"distributed_type: FSDP\nnum_processes: "
                                                              b"1000000000000\n"), 2,
         "fsdp.yaml:2:16: num_processes is 1000000000000, more than 65,536 processes"),
    Case("estimate-fsdp-binary-yaml", _estimate_fsdp_yaml(b"\xff\xfe\x00distributed_type: FSDP\n"), 2,
         "fsdp.yaml:1:1: not UTF-8 text (byte 0xff)"),
    Case("estimate-fsdp-deepspeed-yaml", _estimate_fsdp_yaml(b"distributed_type: DEEPSPEED\n"), 2,
         'fsdp.yaml:1:19: distributed_type is "DEEPSPEED", not FSDP'),
    Case("generate-fsdp-10000-layers-nothing-fits", _command("generate", "--backend", "fsdp", "--params", "70B",
                                                             "--layers", "10000", "--gpus", "8", "--gpu-mem", "4GB"),
         1, "70B-parameter model does not fit 1 node × 8 GPUs"),
    # dsconfig convert: bad input is one line naming the file (line:col), the files are never written
    Case("convert-json-nesting-100000", _convert("ds_config.json", b'{"a": ' + b"[" * 100_000 + b"]" * 100_000
                                                 + b"}", "fsdp"), 2, "DeepSpeed cannot load it", "dsconfig convert: "
         "error: ds_config.json:1:"),
    Case("convert-yaml-nesting-100000", _convert("fsdp.yaml", b"distributed_type: FSDP\nfsdp_config: "
                                                 + b"[" * 100_000 + b"]" * 100_000 + b"\n", "deepspeed"), 2,
         "not valid YAML", "dsconfig convert: error: fsdp.yaml:"),
    Case("convert-200mb-json", _convert_big, 2, "more than any config holds; not read"),
    Case("convert-5000-digit-num-processes", _convert("fsdp.yaml", b"distributed_type: FSDP\nnum_processes: 1"
                                                      + b"0" * 5000 + b"\n", "deepspeed"), 2,
         "Exceeds the limit (4300 digits)", "dsconfig convert: error: fsdp.yaml:"),
    Case("convert-num-processes-string", _convert("fsdp.yaml", b"distributed_type: FSDP\nnum_processes: '8'\n",
                                                  "deepspeed"), 2, "num_processes '8' is not a whole number",
         "dsconfig convert: error: fsdp.yaml:2:16:"),
    Case("convert-fsdp-config-10000-keys", _convert("fsdp.yaml", b"distributed_type: FSDP\nfsdp_config:\n"
                                                    + b"".join(b"  key_%d: %d\n" % (i, i) for i in range(10_000)),
                                                    "deepspeed"), 0, "fsdp_key_9999 9999 -> -"),
    # FSDP: the launcher's str() of an alias bomb, 30,000 layer classes, numbers int() cannot read
    Case("fsdp-layer-classes-alias-bomb", _file("accelerate_config.yaml", _fsdp_alias_bomb()), 1,
         "ACC029 prepare() fails in every process", "accelerate_config.yaml:"),
    Case("fsdp-30000-layer-classes-with-model",
         _file("accelerate_config.yaml", _FSDP_HEAD + b"  fsdp_transformer_layer_cls_to_wrap: "
               + b",".join(b"L%d" % i for i in range(30000)) + b"\n", "--model", "llama-3-8b"), 1,
         "29999 more of the names are not in it either)", "accelerate_config.yaml:6:"),
    Case("fsdp-version-inf", _file("accelerate_config.yaml", b"distributed_type: FSDP\nnum_processes: 2\n"
                                   b"fsdp_config:\n  fsdp_version: .inf\n"), 1,
         "ACC021 the FSDP plugin fails in every process: ValueError: invalid literal for int() with base 10: 'inf'",
         "accelerate_config.yaml:4:"),
    # --model: a name or file that gives no architecture is a one-line usage error
    Case("fsdp-model-unknown-name", _file("accelerate_config.yaml", _FSDP_HEAD, "--model", "llama-9"), 2,
         "--model: 'llama-9' is neither a catalog model"),
    Case("fsdp-model-config-cut-short", _model_file(b'{"model_type": '), 2,
         "--model: config.json:1:16: not valid JSON"),
    Case("fsdp-model-config-a-list", _model_file(b"[1, 2]"), 2, "--model: config.json: not a JSON object"),
    Case("fsdp-model-config-unknown-architecture", _model_file(b'{"architectures": ["NoSuchForCausalLM"]}'), 2,
         "no `model_type` and no known class in `architectures`"),
    Case("fsdp-model-config-binary", _model_file(b"\xff\xfe\x00{"), 2, "--model: config.json:1:1: not UTF-8"),
    # Trainer FSDP (training arguments): a 600-deep list as an `fsdp` word, fsdp_config naming a device,
    # an infinite version, a YAML alias loop as fsdp_config
    Case("trainer-fsdp-600-deep-list", _file("training_args.json", b'{"output_dir": "o", "fsdp": ['
                                             + b"[" * 600 + b"]" * 600 + b"]}"), 1,
         "ACC040 TrainingArguments(...) raises: `fsdp` holds [[[[", "training_args.json:1:"),
    Case("trainer-fsdp-config-dev-zero", _file("training_args.json", b'{"output_dir": "o", "fsdp": true, '
                                               b'"fsdp_config": "/dev/zero"}'), 1,
         "DS009 fsdp_config names /dev/zero, which dsconfig does not open", "training_args.json:1:"),
    Case("trainer-fsdp-version-infinity", _file("training_args.json", b'{"output_dir": "o", "fsdp": true, '
                                                b'"fsdp_config": {"version": Infinity}}'), 1,
         "int() raises OverflowError", "training_args.json:1:"),
    Case("trainer-fsdp-config-alias-loop", _file("training_args.yaml", b"output_dir: o\nfsdp: true\n"
                                                 b"fsdp_config: &a {x: *a}\n"), 0,
         "ACC041 `x` is not a key the Trainer reads", "training_args.yaml:3:"),
    # dsconfig.check (the Python API): a dict that is no JSON data (a cycle, nesting past the stack, an
    # integer past int()'s digit limit), one of megabytes, a key holding an escape sequence; TrainingArguments
    # values that loop (a YAML alias), or a device as their file; a NaN world size
    Case("api-dict-cycle", _api("config", "config = {'zero_optimization': {}}\n"
                                          "config['zero_optimization']['x'] = config"), 2,
         "TypeError: config dict: not JSON data: Circular reference detected"),
    Case("api-dict-100000-deep", _api("config", "config = {}\nfor _ in range(100_000):\n    config = {'a': config}"),
         2, "TypeError: config dict: not JSON data: maximum recursion depth exceeded"),
    Case("api-dict-900-deep", _api("config", "config = {'train_batch_size': 8}\nfor _ in range(900):\n"
                                             "    config = {'a': config}"), 1, "DS102 Unknown key `a`", "<dict>:1:"),
    Case("api-dict-huge-int", _api("{'train_batch_size': 10 ** 5000}"), 2,
         "TypeError: config dict: not JSON data: Exceeds the limit"),
    Case("api-dict-50-megabytes", _api("{'train_batch_size': 8, 'pad': 'x' * 50_000_000}"), 1,
         "DS007", "<dict>:1:1:"),
    Case("api-dict-escape-in-key", _api("{'train_batch_size': 8, '\\x1b]0;owned\\x07\\u202e': 1}"), 0,
         "DS102 Unknown key `\\x1b]0;owned\\x07\\u202e`", "<dict>:3:3:"),
    Case("api-training-args-yaml-alias-loop",
         _api("{'train_batch_size': 'auto'}, training_args='args.yaml'", files=(("args.yaml", b"a: &a [*a]\n"),)),
         2, "TypeError: training_args: not JSON data: Circular reference detected"),
    Case("api-training-args-dev-zero", _api("{'train_batch_size': 'auto'}, training_args='/dev/zero'"), 2,
         "ValueError: training arguments /dev/zero: is larger than"),
    Case("api-world-size-nan", _api("{'train_batch_size': 8}, world_size=float('nan')"), 2,
         "TypeError: world_size must be an int or a sequence of ints, not float"),
    # lint --model (DS95x): a 4,000-digit hidden_size (its square has too many digits to print), 4,200-digit
    # expert-parallel sizes whose product would too, leaf_module and quantization_config of the wrong shapes
    Case("model-hidden-size-4000-digits", _model_ds(_ZERO3_AUTO % (b"", b""), b'{"model_type": "mixtral", '
         b'"hidden_size": 1' + b"0" * 4000 + b', "num_local_experts": 8}', "--target", "hf-trainer"), 1,
         "DS953 config.json (model_type mixtral) has no hidden size in its config", "ds_config.json:1:"),
    Case("model-expert-parallel-4200-digits", _model_ds(b'{"train_micro_batch_size_per_gpu": 2, "expert_parallel": '
         b'{"enabled": true, "autoep_size": ' + _DIGITS_4200 + b', "expert_tensor_parallel_size": ' + _DIGITS_4200
         + b'}}', b'{"model_type": "mixtral", "hidden_size": 64, "num_local_experts": ' + _DIGITS_4200 + b'}',
         "--world-size", "8"), 0, "1 info in 1 file"),
    Case("model-leaf-module-garbage", _model_ds(_ZERO3_AUTO % (b', "leaf_module": {"classes": [1, null, {}], '
         b'"names": 5}', b', "expert_parallel": []'), b'{"model_type": "deepseek_v3", "hidden_size": 7168, '
         b'"n_routed_experts": 256, "text_config": [1], "quantization_config": {"quant_method": ["gptq"], '
         b'"load_in_4bit": "yes"}}', "--target", "hf-trainer"), 1,
         "DS103 `zero_optimization.leaf_module.classes`", "ds_config.json:1:"),
    # dsconfig explain: nesting past hjson's and json's recursion, a YAML alias cycle and an alias bomb, a
    # --set key thousands of levels deep, a 5,000-digit integer, a YAML that launches neither backend
    Case("explain-600-deep", _explain_file("ds_config.json", _NESTED_600, "--target", "hf-trainer"), 2,
         "ds_config.json:1:1: nests more than 100 levels deep"),
    Case("explain-600-deep-hjson", _explain_file("ds_config.json", _NESTED_600), 2,
         "DeepSpeed's hjson loader fails: nesting too deep"),  # the column: where hjson's stack would run out
    Case("explain-yaml-alias-cycle", _explain_file("accelerate_config.yaml", b"distributed_type: DEEPSPEED\n"
                                                   b"deepspeed_config: &a {x: [*a, *a]}\nnum_processes: 2\n"), 2,
         "accelerate_config.yaml:1:1: nests more than 100 levels deep"),
    Case("explain-yaml-alias-bomb", _explain_file("accelerate_config.yaml", _ALIAS_BOMB), 2,
         "accelerate_config.yaml:1:1: holds more than 100,000 values"),
    Case("explain-set-5000-levels", _explain_file("ds_config.json", CONFIG, "--set", "a." * 5000 + "b=1"), 2,
         "--set: the key nests more than 100 levels deep"),
    Case("explain-5000-digit-integer", _explain_file("ds_config.json", b'{"train_batch_size": 1' + b"0" * 5000
                                                     + b"}", "--target", "hf-trainer"), 2,
         "ds_config.json:1:22: json.load fails: ValueError: Exceeds the limit (4300 digits)"),
    Case("explain-multi-gpu-yaml", _explain_file("accelerate_config.yaml", b"distributed_type: MULTI_GPU\n"), 2,
         "accelerate_config.yaml:1:1: distributed_type is \"MULTI_GPU\", neither DEEPSPEED nor FSDP"),
    # explain / convert print keys, values and names from files: escaped (a newline and a forged workflow command,
    # an OSC sequence, a CR, a bidi override, the runner's legacy `##[`, a lone surrogate), keys at the top level
    # and in zero_optimization; and what explain called an internal error is a one-line usage error
    *[Case(f"explain-hostile-keys-{fmt}", _explain_file(
        "ds_config.json", b'{"train_micro_batch_size_per_gpu": 4, "\\n::warning::pwned": "\\u001b]0;title\\u0007", '
        b'"\\r": "\\u202e", "##[add-mask]x": "\\ud800", "\\ud800": 1, "zero_optimization": {"stage": 2, '
        b'"\\n::warning::pwned": "\\r", "\\u001b]0;title\\u0007": 1, "\\u202e": "##[add-mask]x", "\\ud800": 2}}',
        "--format", fmt, "--color", "never"), 1, says)
      for fmt, says in (("text", "zero_optimization.\\n::warning::pwned "), ("json", '"/\\n::warning::pwned"'))],
    Case("explain-hostile-yaml-keys", _explain_file("accelerate_config.yaml", b'distributed_type: DEEPSPEED\n'
                                                    b'num_processes: 2\ndeepspeed_config:\n  zero_stage: 2\n'
                                                    b'  "\\n::warning::pwned": "\\e]0;t\\a"\n  "\\u202e": "##[x]"\n'
                                                    b'"\\r": 1\n', "--color", "never"), 1,
         "`\\n::warning::pwned` is not an `accelerate launch` option"),
    Case("explain-hostile-fsdp-keys", _explain_file("fsdp.yaml", b'distributed_type: FSDP\nnum_processes: 2\n'
                                                    b'fsdp_config:\n  fsdp_version: 2\n  "\\n::warning::pwned": '
                                                    b'"\\e]0;t\\a"\n  "\\u202e": "##[add-mask]x"\n', "--color",
                                                    "never"), 0, "`\\n::warning::pwned` is not an `accelerate launch`"),
    Case("explain-control-name", _explain_file(CONTROL_NAME, CONFIG, "--color", "never"), 0,
         "files: ds_config\\n::error file=x::\\x1b[31m\\r\\x9b\\u202e.json"),
    Case("explain-set-args-nan-epochs", _explain_file("ds_config.json", b'{"train_micro_batch_size_per_gpu": "auto"}',
                                                      "--set", "args.num_train_epochs=NaN", "--dataset-size", "100"),
         2, "--set args.num_train_epochs: num_train_epochs is NaN"),
    Case("explain-fsdp-set-deepspeed-key", _explain_file("fsdp.yaml", b"distributed_type: FSDP\nnum_processes: 2\n",
                                                         "--set", "zero_optimization.stage=3"), 2,
         "--set zero_optimization.stage=3: fsdp.yaml is an FSDP config"),
    Case("explain-diff-missing", _explain_file("ds_config.json", CONFIG, "--diff", "missing.json"), 2,
         "dsconfig: error: --diff missing.json: no such file"),
    Case("explain-world-size-0", _explain_file("ds_config.json", CONFIG, "--world-size", "0"), 2,
         "dsconfig: error: Invalid value for '--world-size'"),
    Case("convert-hostile-keys", _convert("ds_config.json", b'{"train_micro_batch_size_per_gpu": 4, '
                                          b'"\\n::warning::pwned": 1, "zero_optimization": {"stage": 2, '
                                          b'"\\n::warning::pwned": 1, "\\u001b]0;t\\u0007": 2, "##[x]": 3}}', "fsdp"),
         0, "no equivalent  zero_optimization.\\n::warning::pwned, \\x1b]0;t\\x07, #\\x23[x] -> -"),
    Case("convert-control-name", _convert(CONTROL_NAME, CONFIG, "fsdp"), 0,
         "ds_config\\n::error file=x::\\x1b[31m\\r\\x9b\\u202e.json -> FSDP1 (accelerate_fsdp.yaml)"),
    Case("convert-main-process-ip-escape", _convert("fsdp.yaml", b'distributed_type: FSDP\nnum_processes: 4\n'
                                                    b'num_machines: 2\nmain_process_ip: "\\e]0;t\\a"\n', "deepspeed"),
         2, "fsdp.yaml:4:18: main_process_ip '\\x1b]0;t\\x07' is not a host name"),
    # parsers (tests/test_parsers_hostile.py): a script declaring a coding dsconfig does not decode (punycode's
    # decoder is quadratic: 256 KiB of it took seconds; `undefined` raised), named and found by a walk next to a
    # broken config whose findings must still show; YAML 0x integers too long for str() and !!binary keys; a
    # decimal TOML integer past int()'s limit; a 25-level YAML alias chain as training arguments
    Case("script-coding-punycode-256k", lambda folder: (_write(folder, "train.py", (
        "# coding: punycode\n#" + "x" * (128 * 1024 - 30) + "\n#" + "\xe9" * (128 * 1024 - 10) + "\n").encode(
        "punycode")), Spec(_lint("train.py")))[-1], 1, "DS000 declares the coding punycode, which dsconfig does not "
         "decode", "train.py:1:11"),
    Case("script-coding-punycode-walked",
         lambda folder: (_write(folder, "ds_config.json", b'{"train_batch_size": 7.0}'),
                         _write(folder, "train.py", b"# coding: punycode\nimport torch\n"), Spec(_lint(".")))[-1],
         1, "DS201", "./ds_config.json:1:22"),
    Case("script-coding-undefined", _file("train.py", b"# -*- coding: undefined -*-\nimport torch\n"), 1,
         "DS000 declares the coding undefined", "train.py:1:15"),
    Case("yaml-hex-4000-digit-num-processes", _file("accelerate_config.yaml", b"distributed_type: MULTI_GPU\n"
                                                    b"num_processes: 0x" + b"f" * 4000 + b"\n"), 1,
         "ACC019 `accelerate launch` fails: ValueError: Exceeds the limit (4300 digits)",
         "accelerate_config.yaml:2:16"),
    Case("yaml-hex-batch-size-walked", lambda folder: (_write(folder, "ds_config.json", b'{"train_batch_size": 7.0}'),
                                                       _write(folder, "train.yaml", b"train:\n  batch_size: 0x"
                                                              + b"f" * 4000 + b"\n  gradient_accumulation_steps: 0b"
                                                              + b"1" * 20000 + b"\n"),
                                                       Spec(_lint(".", "--world-size", "2")))[-1], 1,
         "DS006 train.batch_size is a 4817-digit number", "./train.yaml:2:15"),
    Case("yaml-binary-key-holding-a-mapping", _file("accelerate_config.yaml", b"distributed_type: DEEPSPEED\n"
                                                    b"num_processes: 2\n? !!binary aGVsbG8=\n: {a: 1}\n"
                                                    b"deepspeed_config:\n  !!binary aGk=: {x: 1}\n"), 1,
         "ACC001 unknown key `b'hello'`", "accelerate_config.yaml:3:3"),
    Case("toml-5000-digit-integer", _file("train.toml", b"[train]\nbatch_size = 1" + b"0" * 5000 + b"\n"), 1,
         "DS000 not valid TOML: tomllib raises ValueError: Exceeds the limit (4300 digits)", "train.toml:2:14"),
    Case("api-training-args-yaml-alias-chain-25",
         _api("{'train_batch_size': 'auto'}, training_args='args.yaml'", files=(("args.yaml", "\n".join(
             ["z0: &l0 [1, 2]"] + [f"z{i}: &l{i} {{a: *l{i - 1}, b: *l{i - 1}}}" for i in range(1, 26)]
             + ["per_device_train_batch_size: *l25"]).encode() + b"\n"),)),
         2, "ValueError: training_args: the values hold more than 100,000 values once YAML aliases are expanded"),
    # --model config.json holding what no model can be built from (a size that is not positive, more K/V heads than
    # attention heads, more experts per token than experts): every command, one line naming the key's line:column
    Case("lint-model-kv-heads-over-heads", _model_ds(CONFIG, _llama(num_key_value_heads=64)), 2,
         "num_key_value_heads 64 is more than num_attention_heads 32: attention repeats each key/value head 32 // 64 = 0 "
         "times", "dsconfig: error: --model: config.json:1:73: "),
    Case("generate-model-negative-hidden-size", _model_config(_llama(hidden_size=-4096), "generate"), 2,
         "hidden_size must be a positive integer, not -4096", "dsconfig generate: error: --model: config.json:1:25: "),
    Case("estimate-model-experts-per-token", _model_config(b'{"model_type": "mixtral", "hidden_size": 4096, '
         b'"num_attention_heads": 32, "num_key_value_heads": 8, "num_local_experts": 4, "num_experts_per_tok": 8}',
         "estimate"), 2, "num_experts_per_tok 8 is more than num_local_experts 4",
         "dsconfig estimate: error: --model: config.json:1:125: "),
    Case("fsdp-model-zero-layers", _model_file(_llama(num_hidden_layers=0)), 2,
         "num_hidden_layers must be a positive integer, not 0: the model would have no layers",
         "dsconfig: error: --model: config.json:1:73: "),
    # dsconfig.check: a float NaN in the dict (what DeepSpeed receives), a NUL byte in a path, 10**12 world sizes, a
    # model config with more experts per token than experts
    Case("api-dict-nan", _api("{'train_batch_size': float('nan')}"), 1,
         "DS201 train_batch_size is nan, which is no batch size: DeepSpeed raises AssertionError: Train batch size: "
         "nan has to be greater than 0"),
    Case("api-nul-path", _api("'ds\\x00.json'"), 2, "ValueError: config: 'ds\\x00.json' holds a NUL byte"),
    Case("api-world-size-range-10-12", _api("{'train_batch_size': 8}, world_size=range(1, 10**12)"), 2,
         "ValueError: world_size: more than 23,696 world sizes"),
    Case("api-model-experts-per-token", _api("{'train_batch_size': 8}, model='config.json'", files=(("config.json",
         b'{"model_type": "mixtral", "num_local_experts": 4, "num_experts_per_tok": 8}'),)), 2,
         "ValueError: model: --model: config.json:1:51: num_experts_per_tok 8 is more than num_local_experts 4"),
    # explain and convert read through the same boundary as lint: never /proc, a FIFO, a link out, or a file outside
    *[Case(f"{command}-names-proc-environ", _naming_outside(command, "/proc/self/environ"), 2,
           "deepspeed_config_file /proc/self/environ: under /proc") for command in ("explain", "convert")],
    *[Case(f"{command}-names-outside", _naming_outside(command, "../outside-secret.json"), 2,
           "is outside the paths given to dsconfig: not opened") for command in ("explain", "convert")],
    *[Case(f"{command}-names-fifo", _naming_outside(command, "pipe.json", fifo=True), 2,
           "deepspeed_config_file pipe.json: a FIFO (named pipe)") for command in ("explain", "convert")],
    *[Case(f"{command}-named-link-environ", _naming_outside(command, "/proc/self/environ", link=True), 2,
           "ds_config.json: under /proc: not followed") for command in ("explain", "convert")],
    *[Case(f"{command}-named-link-outside", _naming_outside(command, "../outside-secret.json", link=True), 2,
           "outside the working directory: not followed") for command in ("explain", "convert")],
    Case("launch-names-proc-environ", _launch_naming("/proc/self/environ"), 0, "no problems in 1 file"),
    Case("launch-names-outside", _launch_naming("../outside-secret.json"), 0, "no problems in 1 file"),
    Case("launch-names-fifo", _launch_naming("pipe.json", fifo=True), 0, "no problems in 1 file"),
    Case("launch-nested-shell", _launch_nested, 0, "in 2 files"),
    Case("all-releases-limit-unknown-keys", _all_releases, 0, "1 DeepSpeed config against 47 releases"),
    Case("world-size-5000-digits", _file("ds_config.json", CONFIG, "--world-size", "9" * 5000), 2,
         "is more than 2,147,483,647, the most processes torch.distributed counts"),
]


def by_name(name: str) -> Case:
    return next(case for case in CASES if case.name == name)


def build(case: Case, folder: str) -> tuple[Spec | None, str]:
    """Make the case's files in a fresh subfolder of `folder`: (how to run it there, the subfolder)."""
    where = os.path.join(folder, case.name)
    os.mkdir(where)
    return case.make(where), where
