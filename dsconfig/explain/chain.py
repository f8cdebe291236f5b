"""The way a config travels to DeepSpeed, replayed layer by layer with who wrote each value.

    the DeepSpeed JSON  →  --set flags  →  Accelerate's DeepSpeedPlugin (from the YAML and launch flags)
                        →  the HF Trainer's "auto" fill (TrainingArguments, the model's hidden size)
                        →  Accelerate's prepare() fill  →  DeepSpeedConfig (defaults, derived values)

Which layers run depends on the target. With the HF Trainer and an Accelerate YAML there are two
orders, as in transformers 5.23: a script given `--deepspeed ds_config.json` fills the JSON first and
builds the plugin from it (TrainingArguments.__post_init__); a script launched with the YAML alone
gets the plugin's config first and the Trainer fills that (`propagate_args_to_deepspeed`).
"""

from __future__ import annotations

import copy
import json
import os
import re
from typing import NamedTuple

from .. import engine
from ..deepspeed import trainer
from ..pairs import resolve as resolve_config_file
from ..pointers import dotted as dotted_of
from ..pointers import pointer_from, pointer_join, pointer_tokens
from ..targets import ACCELERATE, BY_NAME, DEEPSPEED, HF_TRAINER, Target
from ..values import MAX_DEPTH, MAX_NODES, brief, is_auto, key_token, too_big
from . import accelerate_fill as plugin
from .ledger import ACCELERATE as BY_ACCELERATE
from .ledger import DEEPSPEED as BY_DEEPSPEED
from .ledger import (
    DEFAULT,
    FLAG,
    JSON,
    TRAINER,
    TRAINING_ARGS,
    YAML,
    Entry,
    Ledger,
    Origin,
)

ACCELERATE_PREFIX = "accelerate."  # --set accelerate.zero_stage=3: an `accelerate launch` flag
ARGS_PREFIX = "args."  # --set args.learning_rate=1e-5: a TrainingArguments command-line flag


class ExplainError(Exception):
    """An input dsconfig cannot explain: one line naming the file (and line and column)."""


class Request(NamedTuple):
    deepspeed_path: str | None = None
    accelerate_path: str | None = None
    training_args_path: str | None = None
    target: str | None = None
    world_size: int | None = None
    world_source: str = ""  # how the command line gave the world size
    model: str | None = None
    dataset_size: int | None = None
    settings: tuple[str, ...] = ()  # --set KEY=VALUE, as given
    deepspeed_version: str | None = None


class Explanation(NamedTuple):
    config: dict  # what DeepSpeedConfig resolves: every key, defaults included
    sources: dict[str, Entry]  # JSON pointer of each leaf -> who set it
    overridden: dict[str, list[Entry]]  # pointer -> earlier or lost values there
    unresolved: dict[str, str]  # pointer -> what would fill it
    ignored: dict[str, Entry]  # written but never read by DeepSpeed (unknown or removed keys)
    failed: list[str]  # where the real run stops before training: each one line
    findings: list  # dsconfig lint's findings for the same inputs
    stages: dict[str, dict | None]  # the config after each layer (for tests and --format json)
    facts: dict  # target, world size and where it came from, release, files, model


# -- reading the inputs ------------------------------------------------------------------------------

def _read(path: str, kind: str | None, beside: str | None = None):
    """The document, read through the reading boundary (`beside`: the folder of the YAML naming it)."""
    options = engine.Options(kind=kind)
    if not os.path.isfile(path):
        raise ExplainError(f"{path}: no such file" if not os.path.exists(path) else f"{path}: not a file")
    doc, problems = engine.read_document(path, options, beside=beside)
    if doc is None:
        raise ExplainError(f"{path}: {problems[0].message}" if problems else f"{path}: cannot be read")
    return doc


def _named_by_yaml(path: str, yaml_doc, written: str):
    """The ds_config.json the YAML names, read as `dsconfig lint` reads it: only inside the paths given or the
    YAML's own folder, never a special file (dsconfig.boundary); otherwise a one-line error at the YAML's key."""
    from .. import boundary
    beside = os.path.dirname(os.path.abspath(yaml_doc.path))
    why = boundary.refusal(path, beside=beside)
    if why is not None:
        line, column = yaml_doc.locate("/deepspeed_config/deepspeed_config_file")
        raise ExplainError(f"{yaml_doc.path}:{line}:{column}: deepspeed_config_file {written}: {why}; dsconfig reads "
                           "only the files it is given and those beside the YAML: give the JSON too, as in "
                           f"dsconfig explain JSON {yaml_doc.path}")
    boundary.admit_read([path])
    return _read(path, "deepspeed", beside)


def _loaded(doc, loader: str) -> dict:
    """The file as `loader` reads it ("hjson": DeepSpeed's own loader, "json": everyone else's, "yaml")."""
    loaded, value = doc.reading(loader)
    if not loaded:
        scan_error = getattr(doc, "scan_error", None)
        if loader == "hjson" and scan_error is not None:
            message, offset = scan_error.message, scan_error.offset
        elif doc.load_error is not None:
            message, offset = doc.load_error.message, doc.load_error.offset
        else:
            message, offset = "cannot be read", 0
        line, column = doc.position(offset)
        who = "DeepSpeed's hjson loader" if loader == "hjson" else "json.load" if loader == "json" else "YAML"
        raise ExplainError(f"{doc.path}:{line}:{column}: {who} fails: {message}")
    if not isinstance(value, dict):
        raise ExplainError(f"{doc.path}:1:1: the top level is not an object")
    return _shallow(value, f"{doc.path}:1:1")


# Real configs nest a handful of levels and hold a few hundred values; larger ones (YAML alias cycles and bombs)
# are refused before anything recurses over them (dsconfig.values.too_big).
def _shallow(value, where: str):
    """`value`, unless it nests deeper than MAX_DEPTH (a YAML alias cycle nests for ever) or holds more
    than MAX_NODES values (an alias bomb)."""
    over = too_big(value, MAX_NODES, MAX_DEPTH)
    if over == "nodes":
        raise ExplainError(f"{where}: holds more than {MAX_NODES:,} values (YAML aliases?); explain reads "
                           "configs up to that size (dsconfig lint reads any)")
    if over == "depth":
        raise ExplainError(f"{where}: nests more than {MAX_DEPTH} levels deep; explain reads configs up "
                           f"to {MAX_DEPTH} (dsconfig lint reads any)")
    return value


def _origin_in(doc, kind: str, detail: str = ""):
    def at(pointer: str) -> Origin:
        line, column = doc.locate(pointer)
        return Origin(kind, detail or dotted_of(pointer), doc.path, line, column)
    return at


def _parse_settings(settings) -> list[tuple[str, str, object]]:
    """--set KEY=VALUE -> (layer, key, value): VALUE is JSON when it parses, else text."""
    parsed = []
    for text in settings:
        key, equals, raw = text.partition("=")
        key = key.strip()
        if not equals or not key:
            raise ExplainError(f"--set {text!r}: write KEY=VALUE, e.g. zero_optimization.stage=3")
        if key.count(".") >= MAX_DEPTH:
            raise ExplainError(f"--set: the key nests more than {MAX_DEPTH} levels deep")
        try:
            value = _shallow(json.loads(raw), f"--set {key}")
        except (ValueError, RecursionError):
            value = raw
        # `accelerate launch` flags and TrainingArguments fields are names, not paths: a dotted one names
        # nothing (`args.per_device_train_batch_size.x` would silently do nothing)
        for prefix, what in ((ACCELERATE_PREFIX, ("an `accelerate launch` flag is one name, as in "
                                                  "accelerate.zero_stage=3")),
                             (ARGS_PREFIX, ("a TrainingArguments field is one name, as in args.learning_rate=1e-5 "
                                            "(an object is given whole: args.lr_scheduler_kwargs={...})"))):
            if key.startswith(prefix) and "." in key[len(prefix):]:
                raise ExplainError(f"--set {key}={brief(value, 40)}: {what}")
        if key.startswith(ACCELERATE_PREFIX):
            parsed.append(("accelerate", key[len(ACCELERATE_PREFIX):], value))
        elif key.startswith(ARGS_PREFIX):
            parsed.append(("args", key[len(ARGS_PREFIX):], value))
        else:
            parsed.append(("deepspeed", key, value))
    return parsed


def _set_at(config: dict, pointer: str, value, *, flag: str | None = None) -> None:
    """Write `value` at `pointer`, making the objects on the way. For `--set KEY=VALUE` (`flag`: KEY) a key
    on the way that holds a value, not an object, is a usage error (ExplainError): replacing it would explain
    a config nobody wrote (`--set train_batch_size.x=1` over train_batch_size 8). null counts as unset."""
    *parents, last = pointer_tokens(pointer)
    node = config
    for depth, token in enumerate(parents, 1):
        child = node.get(token)
        if not isinstance(child, dict):
            if flag is not None and child is not None:
                raise ExplainError(f"--set {flag}={brief(value, 40)}: {'.'.join(parents[:depth])} is "
                                   f"{brief(child, 40)}, not an object")
            child = node[token] = {}
        node = child
    node[last] = value


def _get_at(config, pointer: str, missing=None):
    node = config
    for token in pointer_tokens(pointer):
        if not isinstance(node, dict) or token not in node:
            return missing
        node = node[token]
    return node


_MISSING = object()


def leaves(value, pointer: str = ""):
    """(pointer, value) of every leaf, in order: dicts are walked (an empty one is a leaf), lists are not.
    Iterative: a config nested as deep as a loader allows costs no recursion."""
    stack = [(pointer, value)]
    while stack:
        where, node = stack.pop()
        if isinstance(node, dict) and node:
            stack.extend(reversed([(pointer_join(where, str(key)), item) for key, item in node.items()]))
        elif where:
            yield where, node


def same(a, b) -> bool:
    """Equal as JSON values: 1, 1.0 and true differ; NaN equals NaN."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float) and a != a:
        return b != b
    return a == b


def _record(ledger: Ledger, before: dict | None, after: dict, origin_of) -> None:
    """Every leaf `after` holds that `before` did not, or held differently, as written by origin_of(pointer)."""
    for pointer, value in leaves(after):
        old = _get_at(before, pointer, _MISSING) if before is not None else _MISSING
        if old is _MISSING or not same(old, value):
            ledger.write(pointer, value, origin_of(pointer))


# -- the model -----------------------------------------------------------------------------------------

def model_of(text: str):
    """--model: a catalog name or a Hugging Face config.json (dsconfig.accelerate.model_layers.ModelLayers)."""
    from ..accelerate.model_layers import ModelProblem, resolve
    try:
        return resolve(text)
    except ModelProblem as error:
        raise ExplainError(str(error)) from None


# -- the chain ---------------------------------------------------------------------------------------------

class _Launch(NamedTuple):
    env: dict  # what `accelerate launch` exports for DeepSpeed
    origins: dict  # launch option -> Origin
    replay: object  # dsconfig.accelerate.launch.Replay
    config_file: str | None  # deepspeed_config_file, as written


def _launch(yaml_doc, yaml_value: dict, flags: list[tuple[str, object]]) -> _Launch:
    from ..accelerate.check import config_file
    from ..accelerate.launch import Replay

    replay = Replay(yaml_value, yaml_doc.yaml11_booleans)
    if replay.launcher != "deepspeed":
        raise ExplainError(f"{yaml_doc.path}:1:1: distributed_type is {brief(yaml_value.get('distributed_type'))}, "
                           "neither DEEPSPEED nor FSDP: nothing to explain")
    origins = {}
    at = _origin_in(yaml_doc, YAML)
    for option, pointer in replay.source.items():
        origins[option] = at(pointer)._replace(detail=option)
    for option, value in flags:
        replay.args[option] = value
        origins[option] = Origin(FLAG, f"accelerate launch --{option} {value}")
    section = yaml_value.get("deepspeed_config")
    fields = [str(key_token(key)) for key in section] if isinstance(section, dict) else []
    flagged = {option for option, _ in flags}
    if replay.fields.get("mixed_precision") is not None and "mixed_precision" not in flagged:
        fields.append("mixed_precision")
    return _Launch(plugin.launch_environment(replay.args, fields), origins, replay, config_file(yaml_value))


def _option_origin(launch: _Launch | None, attribute: str, value) -> Origin:
    if launch is not None and attribute in launch.origins and attribute in plugin.ENVIRONMENT:
        return launch.origins[attribute]
    return Origin(BY_ACCELERATE, f"DeepSpeedPlugin's default {attribute}={brief(value)}")


_MAPPED_POINTERS = {pointer_from(d.split(".")): a for a, d in plugin.MAPPED.items()}


def _plugin_step(config: dict | None, launch: _Launch | None, ledger: Ledger, mixed: str,
                 failed: list[str]) -> dict | None:
    """DeepSpeedPlugin.__post_init__ and set_mixed_precision, recorded."""
    env = launch.env if launch is not None else {}
    try:
        settings = plugin.plugin_settings(env)
    except plugin.PluginError as error:
        failed.append(f"DeepSpeedPlugin raises {error}")
        return config
    if config is not None and launch is not None:
        for attribute, dotted in plugin.MAPPED.items():  # a YAML or flag value the JSON's concrete value beats
            pointer = pointer_from(dotted.split("."))
            current = _get_at(config, pointer, _MISSING)
            if attribute in launch.origins and current is not _MISSING and not is_auto(current):
                ledger.lose(pointer, settings.get(attribute), launch.origins[attribute],
                            "DeepSpeedPlugin fills only \"auto\": the JSON's value wins")
    before = copy.deepcopy(config)
    try:
        after = plugin.post_init(config, settings, env)
    except plugin.PluginError as error:
        failed.append(f"DeepSpeedPlugin raises {error}")
        return config

    def origin_of(pointer: str) -> Origin:
        if pointer == "/steps_per_print":
            return Origin(BY_ACCELERATE, "DeepSpeedPlugin sets steps_per_print to infinity (DeepSpeed stays quiet)")
        if pointer == "/gradient_accumulation_steps" and config is not None \
                and _get_at(config, pointer, _MISSING) is _MISSING:
            return Origin(BY_ACCELERATE, "DeepSpeedPlugin adds gradient_accumulation_steps: 1 when it is missing")
        attribute = _MAPPED_POINTERS.get(pointer)
        if attribute is None and pointer.startswith("/zero_optimization/offload_"):
            device = pointer.rsplit("/", 2)[-2].removeprefix("offload_")  # optimizer | param
            attribute = f"offload_{device}_device"
        if attribute is not None:
            return _option_origin(launch, attribute, settings.get(attribute))
        return Origin(BY_ACCELERATE, "DeepSpeedPlugin builds the config from the YAML")
    _record(ledger, before, after, origin_of)
    _mixed_precision(after, mixed, ledger, failed)
    return after


def _mixed_precision(config: dict, mixed: str, ledger: Ledger, failed: list[str]) -> None:
    before = copy.deepcopy(config)
    error = trainer._set_mixed_precision(config, mixed)
    if error:
        failed.append(f"Accelerate raises ValueError: {error}")
    _record(ledger, before, config, lambda pointer: Origin(
        BY_ACCELERATE, f"set_mixed_precision({mixed!r}): the mixed precision of the run"))


def _args_origin(args_doc, name: str) -> Origin:
    if args_doc is not None and isinstance(args_doc.as_written, dict) and name in args_doc.as_written:
        line, column = args_doc.locate(pointer_join("", name))
        return Origin(TRAINING_ARGS, name, args_doc.path, line, column)
    return Origin(TRAINING_ARGS, f"{name} (the transformers {trainer.TRANSFORMERS_VERSION} default)")


_NAME = re.compile(r"[a-z][a-z0-9_]*")


def _trainer_step(config: dict, args: dict, args_doc, args_flags: dict, world: int, dataset_size, mixed: str,
                  hidden_size, model_given: bool, ledger: Ledger, failed: list[str]) -> tuple[dict, dict[str, str]]:
    """TrainingArguments → Trainer(...) → deepspeed_init, recorded; returns (config, unresolved)."""
    run = trainer.replay(config, args, world, dataset_size, launched_mixed_precision=mixed)
    steps = {pointer_from(o.step.key.split(".")): o.step for o in run.fills}
    values = trainer.effective_args(args)
    mixed = "fp16" if values["fp16"] else "bf16" if values["bf16"] else mixed

    def origin_of(pointer: str) -> Origin:
        step = steps.get(pointer)
        if step is None:
            if pointer == "/gradient_accumulation_steps":
                return Origin(BY_ACCELERATE, "DeepSpeedPlugin adds gradient_accumulation_steps: 1 when it is missing")
            if pointer.startswith("/checkpoint/"):
                return Origin(TRAINER, "save_on_each_node: the Trainer sets checkpoint.use_node_local_storage")
            return Origin(BY_ACCELERATE, f"set_mixed_precision({mixed!r}), the mixed precision of the run")
        words = _NAME.findall(f"{step.hf_key or ''} {step.how} {step.source}")
        names = [n for n in dict.fromkeys(words) if n in trainer.TRAINING_ARGS_FIELDS]
        written = [n for n in names if n in args_flags or (args_doc is not None and n in (args_doc.as_written or {}))]
        if written:
            name = written[0]
            base = Origin(FLAG, f"--{name}") if name in args_flags else _args_origin(args_doc, name)
        else:
            base = Origin(TRAINING_ARGS)
        how = step.how or step.source
        return base._replace(kind=TRAINER, detail=f"the Trainer's fill: {how}"
                             + ("" if written or not names else f" (transformers {trainer.TRANSFORMERS_VERSION} "
                                                                "defaults)"))
    _record(ledger, config, run.config, origin_of)
    filled = run.config
    unresolved = {}
    for outcome in run.fills:
        if outcome.step.value is trainer.UNKNOWN:
            pointer = pointer_from(outcome.step.key.split("."))
            unresolved[pointer] = _unknown_reason(outcome.step)
            _set_at(filled, pointer, "auto")
    for outcome in run.mismatches:
        pointer = pointer_from(outcome.step.key.split("."))
        names = [n for n in _NAME.findall(outcome.step.hf_key or "") if n in trainer.TRAINING_ARGS_FIELDS]
        origin = _args_origin(args_doc, names[0]) if names else Origin(TRAINING_ARGS, outcome.step.source)
        ledger.lose(pointer, outcome.step.value, origin, "mismatch: the Trainer raises")
    crash = next((o for o in run.outcomes + run.fills if o.status == "crash"), None)
    if crash is not None:
        failed.append(f"the HF Trainer raises AttributeError looking up {crash.step.key}: a parent of it is no object")
    if run.early_error:
        failed.append(f"Accelerate raises ValueError: {run.early_error[1]}")
    if run.mismatches:
        lines = " ".join(trainer.mismatch_line(o) for o in run.mismatches)
        failed.append("the HF Trainer raises ValueError: Please correct the following DeepSpeed config values that "
                      "mismatch TrainingArguments values: " + lines)
    unresolved.update(_hidden_fills(filled, hidden_size, model_given, ledger, failed))
    return filled, unresolved


def _unknown_reason(step) -> str:
    if step.key.startswith("scheduler.params."):
        return ("the Trainer fills it from the number of optimizer steps: give max_steps in the training arguments, "
                "or --dataset-size with num_train_epochs")
    return f"the Trainer fills it with {step.source}"


def _hidden_fills(config: dict, hidden_size, model_given: bool, ledger: Ledger, failed: list[str]) -> dict[str, str]:
    """trainer_config_finalize's bucket sizes from the model's hidden size."""
    from ..deepspeed import hidden_fills
    try:
        fills = hidden_fills.bucket_fills(config, hidden_size)
    except hidden_fills.NoHiddenSize as error:
        if model_given:
            failed.append(f"the HF Trainer raises ValueError: {error}")
            return {}
        return {pointer_from(key.split(".")): "the Trainer fills it from the model's hidden_size: give --model"
                for key in error.keys}
    for key, value in fills:
        pointer = pointer_from(key.split("."))
        _set_at(config, pointer, value)
        ledger.write(pointer, value, Origin(TRAINER, f"the Trainer's fill from the model's hidden_size {hidden_size}"))
    return {}


def _prepare_step(config: dict, launch: _Launch | None, world: int, hidden_size, ledger: Ledger) -> dict[str, str]:
    """Accelerate's prepare() fill without the Trainer; returns what stays unresolved."""
    gas = None
    if launch is not None and launch.replay.args.get("gradient_accumulation_steps") is not None:
        try:
            gas = int(launch.replay.args["gradient_accumulation_steps"])
        except (TypeError, ValueError):
            gas = None
    else:
        gas = 1  # Accelerator(gradient_accumulation_steps=1), unless the script passes another
    unresolved = {}
    for fill in plugin.apply_fills(config, plugin.prepare_fills(config, world, gas, hidden_size)):
        pointer = pointer_from(fill.dotted.split("."))
        if fill.value is plugin.UNRESOLVED:
            unresolved[pointer] = f"prepare() fills it with {fill.how}"
        else:
            ledger.write(pointer, fill.value, Origin(BY_ACCELERATE, f"prepare() fills it: {fill.how}"))
    return unresolved


def choose_target(request: Request, config: dict | None, args_given: bool, yaml_given: bool) -> Target:
    if request.target:
        return BY_NAME[request.target]
    if args_given:
        return HF_TRAINER
    if yaml_given:
        return ACCELERATE
    from ..deepspeed.target import auto_pointers
    return HF_TRAINER if config is not None and auto_pointers(config) else DEEPSPEED


def explain(request: Request) -> Explanation:
    from ..deepspeed import releases, schema
    version = request.deepspeed_version or releases.NEWEST
    schema.use(version)
    settings = _parse_settings(request.settings)
    flags_ds = [(key, value) for layer, key, value in settings if layer == "deepspeed"]
    flags_accelerate = [(key, value) for layer, key, value in settings if layer == "accelerate"]
    args_flags = {key: value for layer, key, value in settings if layer == "args"}

    yaml_doc = yaml_value = launch = None
    if request.accelerate_path is not None:
        yaml_doc = _read(request.accelerate_path, None)
        if yaml_doc.format != "yaml":
            raise ExplainError(f"{request.accelerate_path}:1:1: not a YAML file (an Accelerate config)")
        yaml_value = _loaded(yaml_doc, "yaml")
        if yaml_value.get("distributed_type") == "FSDP":
            if request.deepspeed_path is not None or request.training_args_path is not None:
                raise ExplainError(f"{yaml_doc.path}:1:1: an FSDP config: explain it alone (or compare it with a "
                                   "DeepSpeed config with --diff)")
            return _explain_fsdp(request, yaml_doc, yaml_value, flags_accelerate, version)
        launch = _launch(yaml_doc, yaml_value, flags_accelerate)
    elif flags_accelerate:
        raise ExplainError("--set accelerate.*: give the Accelerate YAML too")

    ds_path = request.deepspeed_path
    if ds_path is None and launch is not None and launch.config_file is not None:
        ds_path, _ = resolve_config_file(request.accelerate_path, launch.config_file)
        if ds_path is None:
            line, column = yaml_doc.locate("/deepspeed_config/deepspeed_config_file")
            raise ExplainError(f"{yaml_doc.path}:{line}:{column}: deepspeed_config_file {launch.config_file}: no such "
                               "file here or beside the YAML (Accelerate opens it from the folder the job is launched "
                               "in); give the JSON too: dsconfig explain ds_config.json "
                               f"{request.accelerate_path}")
        ds_doc = _named_by_yaml(ds_path, yaml_doc, launch.config_file)
    else:
        ds_doc = _read(ds_path, "deepspeed") if ds_path is not None else None

    args_doc, args = None, None
    if request.training_args_path is not None:
        try:
            args = _shallow(trainer.load_training_args(request.training_args_path), request.training_args_path)
        except ValueError as error:
            raise ExplainError(str(error)) from None
        args_doc = _read(request.training_args_path, "deepspeed")
    file_args = args  # lint is given the file's values, as `dsconfig lint --training-args FILE` would be
    if args_flags:
        args = dict(args or {}, **args_flags)

    raw = ds_doc.tree[1] if ds_doc is not None else None  # whichever reading works, to choose the target
    target = choose_target(request, raw if isinstance(raw, dict) else None, args is not None, yaml_doc is not None)
    config = _loaded(ds_doc, target.loader) if ds_doc is not None else None
    if target is HF_TRAINER and args is None:
        args = {}

    world, world_source = request.world_size, request.world_source
    if world is None and launch is not None:
        from ..accelerate.check import launched_world_size
        world = launched_world_size(launch.replay)
        world_source = f"the processes {request.accelerate_path} launches" if world else ""
    if world is None:
        world, world_source = 1, "1: DeepSpeedConfig's fallback without a process group (give --world-size)"

    model, hidden_size, trainer_hidden = None, None, None
    if request.model is not None:
        from ..deepspeed import hidden_fills
        model = model_of(request.model)
        hidden_size = hidden_fills.accelerate_hidden_size(model.config)
        trainer_hidden = hidden_fills.hidden_size_of(model.config)

    ledger, failed, unresolved, stages = Ledger(), [], {}, {}
    if config is not None:
        config = copy.deepcopy(config)
        ledger.write_tree("", config, _origin_in(ds_doc, JSON))
    for key, value in flags_ds:
        if config is None:
            config = {}
        pointer = pointer_from(key.split("."))
        _set_at(config, pointer, value, flag=key)
        ledger.write(pointer, value, Origin(FLAG, f"--set {key}={json.dumps(value)}"))
    stages["written"] = copy.deepcopy(config)

    launched_mixed = launch.env["ACCELERATE_MIXED_PRECISION"] if launch is not None else "no"
    if target is HF_TRAINER:
        effective_args = trainer.effective_args(args)
        mixed = "fp16" if effective_args["fp16"] else "bf16" if effective_args["bf16"] else launched_mixed
        plugin_first = launch is not None and (request.deepspeed_path is None or (
            launch.config_file is not None and "deepspeed" not in args))
        if plugin_first:  # the script gets the plugin's config; propagate_args_to_deepspeed fills it
            config = _plugin_step(config, launch, ledger, mixed, failed)
            stages["accelerate"] = copy.deepcopy(config)
        config, unresolved = _trainer_step(config if config is not None else {}, args, args_doc, args_flags, world,
                                           request.dataset_size, launched_mixed, trainer_hidden,
                                           request.model is not None, ledger, failed)
        stages["trainer"] = copy.deepcopy(config)
        if not plugin_first:
            config = _plugin_step(config, launch, ledger, mixed, failed)
            stages["accelerate"] = copy.deepcopy(config)
        if config is not None:  # the Trainer's accelerator.prepare(model, optimizer) fills what is left
            for pointer, why in _prepare_step(config, launch, world, hidden_size, ledger).items():
                unresolved.setdefault(pointer, why)
    elif target is ACCELERATE:
        mixed = launched_mixed
        config = _plugin_step(config, launch, ledger, mixed, failed)
        stages["accelerate"] = copy.deepcopy(config)
        if config is not None:
            unresolved = _prepare_step(config, launch, world, hidden_size, ledger)
    if config is None:
        raise ExplainError("nothing to explain: give a ds_config.json, or an Accelerate YAML with deepspeed_config")
    for pointer, value in leaves(config):
        if is_auto(value) and pointer not in unresolved:
            if target.fills_auto:
                key = dotted_of(pointer)
                failed.append(f"Accelerate's prepare() raises ValueError: `{key}` not found in kwargs. Please specify "
                              f"`{key}` without `auto` (set to correct value) in the DeepSpeed config file or pass it "
                              "in kwargs.")
            else:
                unresolved[pointer] = f"nothing fills it for {target.who}: DeepSpeed receives the text \"auto\""
    stages["final"] = copy.deepcopy(config)
    findings = _lint(request, ds_doc, yaml_doc, file_args, target, world, version, model)
    return _resolve(config, ledger, unresolved, failed, stages, target, world, world_source, version, yaml_doc,
                    ds_doc, args_doc, model, trainer_hidden if target is HF_TRAINER else hidden_size, findings)


def _explain_fsdp(request: Request, yaml_doc, yaml_value: dict, flags: list, version: str) -> Explanation:
    from ..accelerate.check import launched_world_size
    from ..accelerate.launch import Replay
    from ..targets import ACCELERATE as ACCELERATE_TARGET
    from .fsdp_view import plugin_settings

    replay = Replay(yaml_value, yaml_doc.yaml11_booleans)
    for option, value in flags:
        replay.args[option] = value
    settings, sources, failed = plugin_settings(replay, _origin_in(yaml_doc, YAML), dict(flags))
    world, world_source = request.world_size, request.world_source
    if world is None:
        world = launched_world_size(replay)
        world_source = f"the processes {request.accelerate_path} launches" if world else ""
    if world is None:
        world, world_source = 1, "1: give --world-size"
    linted = engine.lint_files([yaml_doc.path], engine.Options(target=ACCELERATE_TARGET, world_sizes=(world,),
                                                              deepspeed_version=version))
    if linted.crashed:
        raise linted.crashed[0]
    findings = linted.findings
    facts = {"target": "fsdp", "who": f"Accelerate's FSDP{settings.get('fsdp_version')} plugin", "world_size": world,
             "world_size_from": world_source or "--world-size", "deepspeed_version": version,
             "transformers_version": None, "files": [yaml_doc.path], "model": None, "hidden_size": None,
             "backend": "fsdp"}
    return Explanation(settings, sources, {}, {}, {}, failed, findings, {"fsdp": settings}, facts)


def _resolve(config, ledger, unresolved, failed, stages, target, world, world_source, version, yaml_doc, ds_doc,
             args_doc, model, hidden_size, findings) -> Explanation:
    from .deepspeed_view import effective
    view = effective(config, world)
    for key, value in config.items():  # a section DeepSpeed fails on: show what was written there
        if view.config.get(key) is None and isinstance(value, dict) and value and view.failed:
            view.config[key] = copy.deepcopy(value)
    batch_first = ("train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps")
    ordered = {key: view.config[key] for key in batch_first if key in view.config}
    ordered.update((key, value) for key, value in view.config.items() if key not in ordered)
    view = view._replace(config=ordered)
    stages["effective"] = view.config
    sources, overridden, ignored = {}, {}, {}
    for pointer, value in leaves(view.config):
        if pointer in unresolved:
            view_value = _get_at(config, pointer, "auto")
            _set_at(view.config, pointer, view_value)
            continue
        entry = ledger.last(pointer)
        history = ledger.history(pointer)
        if entry is not None and same(entry.value, value):
            sources[pointer] = entry
        elif entry is not None:
            sources[pointer] = Entry(value, Origin(BY_DEEPSPEED, "converted by DeepSpeed"))
            history = history + [entry]
        elif pointer in view.derived:
            sources[pointer] = Entry(value, Origin(BY_DEEPSPEED, view.derived[pointer]))
        elif pointer in view.defaulted:
            sources[pointer] = Entry(value, Origin(DEFAULT, f"DeepSpeed {version}'s default"))
        else:
            sources[pointer] = Entry(value, Origin(BY_DEEPSPEED, "as DeepSpeed reads the section written"))
        if history:
            overridden[pointer] = history
    for pointer, entries in ledger.writes.items():
        if _get_at(view.config, pointer, _MISSING) is _MISSING and not _has_leaf_below(view.config, pointer) \
                and not _covered(view.config, pointer):
            ignored[pointer] = entries[-1]
    for pointer in unresolved:
        sources.setdefault(pointer, Entry("auto", Origin(BY_DEEPSPEED, "unresolved")))
    if view.failed and not unresolved:
        failed.append(f"DeepSpeedConfig raises: {view.failed}")
    facts = {
        "target": target.name,
        "who": target.who,
        "world_size": world,
        "world_size_from": world_source or "--world-size",
        "deepspeed_version": version,
        "transformers_version": trainer.TRANSFORMERS_VERSION if target is HF_TRAINER else None,
        "files": [d.path for d in (ds_doc, yaml_doc, args_doc) if d is not None],
        "model": model.name if model is not None else None,
        "hidden_size": hidden_size,
        "backend": "deepspeed",
    }
    return Explanation(view.config, sources, overridden, unresolved, ignored, failed, findings, stages, facts)


def _has_leaf_below(config, pointer: str) -> bool:
    node = _get_at(config, pointer, _MISSING)
    return isinstance(node, dict)


def _covered(config, pointer: str) -> bool:
    """A leaf inside a value the effective config holds whole (optimizer params, a list)."""
    tokens = pointer_tokens(pointer)
    for end in range(len(tokens) - 1, 0, -1):
        node = _get_at(config, pointer_from(tokens[:end]), _MISSING)
        if node is not _MISSING and not isinstance(node, dict):
            return True
    return False


def _lint(request, ds_doc, yaml_doc, training_args, target, world, version, model) -> list:
    """dsconfig lint's findings for the same inputs and options (the model-aware ones with --model)."""
    paths = [d.path for d in (ds_doc, yaml_doc) if d is not None]
    options = engine.Options(target=target, world_sizes=(world,), training_args=training_args,
                             dataset_size=request.dataset_size, deepspeed_version=version, model=model)
    result = engine.lint_files(paths, options)
    if result.crashed:
        raise result.crashed[0]
    return result.findings
