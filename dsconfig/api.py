"""`dsconfig.check`: lint one config from a training script, before the model loads.

The findings are `dsconfig lint --no-config`'s for the same file and options: this module turns
Python arguments into the engine's options and the engine's findings into immutable values; it holds
no check of its own. A bad argument is a TypeError or ValueError (a missing file a FileNotFoundError)
with one line that names it. Nothing heavy is imported: the engine comes with the first call, and
PyYAML only for a YAML file.
"""

from __future__ import annotations

import operator
import os
from typing import NamedTuple

# A DeepSpeed config dict has no file: findings name this instead, at lines of the dict as JSON.
DICT_NAME = "<dict>"


class Finding(NamedTuple):
    """One problem, as `dsconfig lint --format json` reports it (the same keys, in the same order).

    `severity` is "error", "warning" or "info"; `pointer` the JSON pointer of the value ("" for the
    whole file); `world_size` the world size it holds at (None: at every one); `fails_in` the phase in
    which the run fails ("load", "parse", "initialize", "step", ...) or None for advice; `fix` the
    suggested replacement (JSON text) or None. str() gives lint's concise line.
    """
    code: str
    name: str
    severity: str
    message: str
    file: str
    line: int
    column: int
    pointer: str
    world_size: int | None
    fails_in: str | None
    fix: str | None

    def __str__(self) -> str:
        from .report import Context
        from .report.concise import header
        return header(self, Context())


class ConfigError(Exception):
    """`check(..., raise_on_error=True)` found errors: the message is one concise line per error."""

    def __init__(self, findings: list[Finding]):
        self.findings = findings  # every finding of the check, in lint's order
        errors = [f for f in findings if f.severity == "error"]
        super().__init__("\n".join(str(f) for f in errors))


def check(config, world_size=None, target=None, training_args=None, *, raise_on_error: bool = False,
          deepspeed_version: str | None = None, dataset_size: int | None = None,
          model: str | None = None) -> list[Finding]:
    """The findings `dsconfig lint --no-config` reports for `config` with these options.

    config: a path (str or os.PathLike) to a ds_config.json, an Accelerate YAML (with the ds_config.json
        it names) or a training config; or a DeepSpeed config dict, as given to
        `TrainingArguments(deepspeed=...)` or `deepspeed.initialize(config=...)`.
    world_size: an int or a sequence of ints (`--world-size`).
    target: "deepspeed", "hf-trainer", "accelerate", "lightning" or a dsconfig.targets.Target; None:
        hf-trainer when the config holds "auto", else deepspeed.
    training_args: a dict, a path to a JSON or YAML file, or a transformers.TrainingArguments
        (`--training-args`).
    raise_on_error: raise ConfigError when any finding is an error.
    deepspeed_version, dataset_size, model: as `--deepspeed-version`, `--dataset-size`, `--model`.
    """
    from . import boundary

    # What the check may read: the paths given here, as `dsconfig lint` reads those on its command line.
    named = [os.fspath(value) for value in (config, training_args, model) if isinstance(value, (str, os.PathLike))]
    with boundary.scope(boundary.Boundary.named_paths([p for p in named if isinstance(p, str)])):
        return _check(config, world_size, target, training_args, raise_on_error, deepspeed_version, dataset_size,
                      model)


def _check(config, world_size, target, training_args, raise_on_error, deepspeed_version, dataset_size, model):
    from . import engine

    options = engine.Options(target=_target(target), world_sizes=_world_sizes(world_size),
                             training_args=_training_args(training_args), dataset_size=_dataset_size(dataset_size),
                             model=_model(model))
    if isinstance(config, dict):
        path, options = DICT_NAME, options._replace(kind="deepspeed", python_dict=True, sources={
            os.path.realpath(DICT_NAME): _dict_bytes(config)})
    else:
        path = _path(config, "config")
    options = options._replace(deepspeed_version=_release(deepspeed_version, None if path == DICT_NAME else path))
    findings = [Finding(**f.as_dict()) for f in _lint(path, options)]
    if raise_on_error and any(f.severity == "error" for f in findings):
        raise ConfigError(findings)
    return findings


def _lint(path: str, options) -> list:
    """`dsconfig lint --no-config PATH`'s findings (commands/lint.py `_run` without fixes and settings)."""
    from . import engine
    from .files import MAX_BYTES, FileError, TooLarge
    from .settings import Settings
    from .suppress import apply

    if options.sources and (size := len(options.sources[os.path.realpath(path)])) > MAX_BYTES:
        # as a file that large is (DS007): a dict of megabytes is no config, and is not linted
        return engine.too_large(path, TooLarge(path, size, MAX_BYTES), named=True)
    virtual = [path] if options.sources else []
    try:
        collection = engine.collect([path], virtual=virtual)
        if not collection.missing:
            options = options._replace(found=collection.found, boundary=collection.boundary)
            result = engine.lint_files(collection.files, options)
    except (engine.UsageError, FileError) as error:  # cannot be read: no permission
        raise OSError(str(error)) from None
    except engine.InternalError as error:
        raise RuntimeError(f"dsconfig internal error: {error} (please report this with the config)") from None
    except Exception as error:  # noqa: BLE001 - as lint: one line, and a report asked for
        raise RuntimeError(f"dsconfig internal error: {path}: {type(error).__name__}: {error} (please report "
                           "this with the config)") from None
    if collection.missing:  # "PATH: no such file or directory" (or a dangling link, a loop of links)
        raise FileNotFoundError(collection.missing[0])
    if result.crashed:
        raise RuntimeError(f"dsconfig internal error: {result.crashed[0]} (please report this with the config)")
    return apply(collection.problems + result.findings, set(collection.files) | set(result.linted), Settings())


# -- arguments -> engine options ------------------------------------------------------------------------


def _path(value, name: str) -> str:
    if not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"{name} must be a path (str or os.PathLike) or a dict, not {type(value).__name__}")
    path = os.fspath(value)
    if not isinstance(path, str):
        raise TypeError(f"{name} must be a str path, not {type(path).__name__}")
    _no_nul(path, name)
    if os.path.isdir(path):
        raise IsADirectoryError(f"{path}: is a folder; dsconfig.check takes one config file (dsconfig lint walks "
                                "folders)")
    return path


def _no_nul(path: str, name: str) -> str:
    """The path, unless it holds a NUL byte: no file name can (open() and os.stat() raise ValueError)."""
    if "\0" in path:
        raise ValueError(f"{name}: {path!r:.80} holds a NUL byte, which no file name can hold")
    return path


def _dict_bytes(config: dict) -> bytes:
    """The dict as the JSON file the checks read (DeepSpeed and the Trainer take the dict as is): indented,
    so findings have lines, unless that makes it larger than a config file may be (indentation grows with
    the square of the nesting); then compact, and measured as such."""
    from .files import MAX_BYTES
    compact = _dict_text(config).encode("utf-8")
    if len(compact) > MAX_BYTES:
        return compact
    indented = _dict_text(config, indent=2).encode("utf-8")
    return indented if len(indented) <= MAX_BYTES else compact


def _dict_text(values: dict, name: str = "config dict", indent: int | None = None) -> str:
    import json
    try:
        return json.dumps(values, indent=indent, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError) as error:  # a tensor, a cycle, nesting past the stack
        raise TypeError(f"{name}: not JSON data: {error}") from None


# As many world sizes as one `dsconfig lint --world-size 1,2,3,...` can list: Linux caps one command-line
# argument at 128 KiB (MAX_ARG_STRLEN), and 1,2,...,23696 is the longest list of distinct sizes that fits.
MAX_WORLD_SIZES = 23_696
# torch.distributed keeps the world size in a C int (ProcessGroup(store, rank, size) refuses 2**31).
MAX_WORLD_SIZE = 2**31 - 1


def _world_sizes(value) -> tuple[int, ...] | None:
    """An int (or an integer with __index__, as numpy's) or a sequence of them; repeats dropped. At most
    MAX_WORLD_SIZES of them, read lazily: range(1, 10**12) is refused, not listed."""
    import itertools
    if value is None:
        return None
    if isinstance(value, (str, bytes, dict)):
        raise TypeError(f"world_size must be an int or a sequence of ints, not {type(value).__name__}")
    if hasattr(value, "__iter__"):
        items = tuple(itertools.islice(value, MAX_WORLD_SIZES + 1))
        if len(items) > MAX_WORLD_SIZES:
            raise ValueError(f"world_size: more than {MAX_WORLD_SIZES:,} world sizes, as many as `dsconfig lint "
                             "--world-size` can list in one command-line argument; give the sizes you launch")
    elif hasattr(value, "__index__"):
        items = (value,)
    else:
        raise TypeError(f"world_size must be an int or a sequence of ints, not {type(value).__name__}")
    if not items:
        raise ValueError("world_size: an empty sequence; give at least one world size")
    sizes = []
    for item in items:
        try:
            if isinstance(item, bool):
                raise TypeError
            size = operator.index(item)
        except TypeError:
            raise TypeError(f"world_size must hold ints, not {type(item).__name__} ({item!r:.40})") from None
        if size < 1:
            raise ValueError(f"world_size must be at least 1, not {size}")
        if size > MAX_WORLD_SIZE:
            from .estimate.limits import shown
            raise ValueError(f"world_size must be at most {MAX_WORLD_SIZE:,} (2**31 - 1: torch.distributed holds "
                             f"the world size in a C int), not {shown(size)}")
        sizes.append(size)
    return tuple(dict.fromkeys(sizes))


def _target(value):
    from . import targets
    if value is None or isinstance(value, targets.Target):
        return value
    if not isinstance(value, str):
        raise TypeError(f"target must be a name or a dsconfig.targets.Target, not {type(value).__name__}")
    if value not in targets.BY_NAME:
        raise ValueError(f"target {value!r:.60} is none of {', '.join(targets.NAMES)}")
    return targets.BY_NAME[value]


def _dataset_size(value) -> int | None:
    from .training.epochs import MAX_DATASET_SIZE
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"dataset_size must be an int, not {type(value).__name__}")
    if not 1 <= value <= MAX_DATASET_SIZE:
        raise ValueError(f"dataset_size must be between 1 and {MAX_DATASET_SIZE:,}, not {value}")
    return value


def _release(value, start: str | None) -> str:
    """The DeepSpeed release to replay, chosen as lint chooses it (deepspeed/pins.py)."""
    from .deepspeed import pins
    if value is not None and not isinstance(value, str):
        raise TypeError(f"deepspeed_version must be a str such as \"0.16.9\", not {type(value).__name__}")
    try:
        choice = pins.choose(value, start)
    except pins.VersionError as error:
        raise ValueError(f"deepspeed_version: {error}") from None
    if choice.version == "all":
        raise ValueError("deepspeed_version: \"all\" is for `dsconfig lint`; check replays one release")
    return choice.version


def _model(value):
    if value is None:
        return None
    if not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"model must be a catalog name or a path to a config.json, not {type(value).__name__}")
    from .accelerate.model_layers import ModelProblem, resolve
    text = os.fspath(value)
    if not isinstance(text, str):
        raise TypeError(f"model must be a str path, not {type(text).__name__}")
    try:
        return resolve(_no_nul(text, "model"))
    except ModelProblem as error:
        raise ValueError(f"model: {error}") from None


def _training_args(value) -> dict | None:
    """TrainingArguments values as `--training-args` gives them: a dict, a JSON or YAML file, or the object."""
    from .deepspeed.trainer import load_training_args, training_args_errors
    if value is None:
        return None
    if isinstance(value, (str, os.PathLike)):
        path = _path(value, "training_args")
        if not os.path.exists(path):
            raise FileNotFoundError(f"training_args {path}: no such file or directory")
        if not path.endswith((".yaml", ".yml")):
            try:
                return load_training_args(path)
            except ValueError as error:
                raise ValueError(str(error)) from None
        values = _yaml_values(path)
    elif isinstance(value, dict):
        values = value
    else:
        values = _dataclass_values(value)
    errors = training_args_errors(values)
    if errors:
        raise ValueError("training_args: " + "; ".join(errors))
    _dict_text(values, "training_args")  # the checks read JSON values, as from --training-args FILE
    return values


def _dataclass_values(value) -> dict:
    """A TrainingArguments (or any dataclass instance) without importing transformers: its `to_dict()`,
    which writes enums as their values as `to_json_string` does, else its init fields."""
    import dataclasses
    if not dataclasses.is_dataclass(value) or isinstance(value, type):
        raise TypeError("training_args must be a dict, a path to a JSON or YAML file, or a "
                        f"transformers.TrainingArguments, not {type(value).__name__}")
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        try:
            values = to_dict()
        except Exception as error:  # noqa: BLE001 - the caller's object raised: say so in one line
            raise TypeError(f"training_args: {type(value).__name__}.to_dict() raised {type(error).__name__}: "
                            f"{error}") from None
        if isinstance(values, dict):
            return values
    return {field.name: getattr(value, field.name) for field in dataclasses.fields(value) if field.init}


def _yaml_values(path: str):
    """A YAML file of TrainingArguments, as HfArgumentParser.parse_yaml_file reads it (yaml.safe_load)."""
    from .deepspeed.trainer import read_yaml_file
    from .files import FileError, Refused, TooLarge
    try:
        return read_yaml_file(path)
    except TooLarge as error:
        raise ValueError(f"training_args {error}") from None
    except Refused as error:
        raise PermissionError(f"training_args {error}") from None
    except FileError as error:
        raise OSError(f"training_args {error}") from None
    except ValueError as error:
        raise ValueError(f"training_args {error}") from None
