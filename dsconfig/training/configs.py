"""A project's own training configs (YAML, JSON, TOML): batch sizes as the training code will use them.

Any file that is neither a DeepSpeed nor an Accelerate config and holds a batch-size key somewhere
in its tree (dsconfig.training.names) is a training config. Its batch sizes must be positive
integers (DS006); at the world sizes given a global batch must split over the GPUs and agree with
the per-device batch and accumulation written next to it (DS208); with BatchNorm no device may
get one sample (DS207); with `--dataset-size` the steps per epoch of `--framework` are listed
(DS705). OmegaConf/Hydra `${a.b}` interpolations are resolved within the file; `???`, `"auto"`
and null are left to whoever fills them.
"""

from __future__ import annotations

import math
import re
from typing import NamedTuple

from ..findings import Finding
from ..phases import SILENT, STEP
from ..pointers import MISSING, dotted, pointer_from, pointer_join, pointer_tokens, value_at
from ..rules.batch import BATCHNORM_ONE_SAMPLE, GLOBAL_BATCH, GLOBAL_BATCH_INDIVISIBLE, MICRO_BATCH_ONE
from ..rules.files import NON_INTEGER_BATCH_SIZE
from ..rules.integration import STEPS_PER_EPOCH
from ..values import brief, digits, key_token
from . import epochs
from .names import GLOBAL, PER_DEVICE, default_kind, is_batch_key

ACCUMULATION_KEYS = frozenset({
    "gradient_accumulation_steps", "accumulate_grad_batches", "grad_accum", "grad_accum_steps",
    "gradient_accumulation", "accumulation_steps", "accum_steps", "accum_iter", "update_freq",
})
# batches that are not the training batch: no steps table for them
_NOT_TRAINING = re.compile(r"(?:^|_)(?:eval|evaluation|val|valid|validation|test|predict|inference|infer)(?:_|$)")
_INTERPOLATION = re.compile(r"^\$\{(\.*)([A-Za-z0-9_.\[\]-]+)\}$")
_MAX_DEPTH = 200  # deeper trees are not training configs anyone wrote; the walk stops there
DEFAULT_WORLD_SIZES = (1, 2, 4, 8)


class Entry(NamedTuple):
    pointer: str
    key: str
    written: object  # the value in the file
    value: object  # the value the program gets: an interpolation resolved, else as written
    kind: str  # per-device | global
    set_by_option: bool  # kind given by --batch-key / batch-keys


class Outcome(NamedTuple):
    findings: list[Finding]
    used: frozenset[str]  # the run options a check used: world_sizes, dataset_size, batchnorm


def batch_entries(root, framework: str | None = None, batch_keys=()) -> list[Entry]:
    """Every batch-size key in the tree, in file order, with its kind (per device or global)."""
    overrides = dict(batch_keys)
    entries = []
    stack = [(root, "", 0)]
    seen: set[int] = set()  # YAML aliases share a node: walk it once (twenty nested aliases are a million paths)
    while stack:
        node, where, depth = stack.pop()
        if depth > _MAX_DEPTH or id(node) in seen:
            continue
        seen.add(id(node))
        children = []
        if isinstance(node, dict):
            for key, child in node.items():
                pointer = pointer_join(where, key_token(key))
                if isinstance(key, str) and (pointer in overrides or is_batch_key(key)) \
                        and not isinstance(child, (dict, list)):
                    kind = overrides.get(pointer) or default_kind(key, framework)
                    entries.append(Entry(pointer, key, child, _resolve(root, pointer, child), kind,
                                         pointer in overrides))
                elif isinstance(child, (dict, list)):
                    children.append((child, pointer, depth + 1))
        elif isinstance(node, list):
            children = [(child, pointer_join(where, i), depth + 1) for i, child in enumerate(node)
                        if isinstance(child, (dict, list))]
        stack.extend(reversed(children))
    return entries


def _resolve(root, pointer: str, value, hops: int = 0):
    """An OmegaConf interpolation `${train.batch_size}` (or relative `${..batch_size}`) resolved within the
    file; anything else as it is. An interpolation that cannot be resolved stays a string."""
    if not isinstance(value, str) or hops > 10:
        return value
    match = _INTERPOLATION.match(value.strip())
    if not match or ":" in value:  # ${oc.env:BS,8}: a resolver dsconfig cannot run
        return value
    dots, path = match.groups()
    tokens = re.split(r"\.|\[|\]\.?", path)
    tokens = [t for t in tokens if t != ""]
    if dots:  # relative: one dot is the node's own mapping, each further dot one level up
        base = pointer_tokens(pointer)[:-1]
        base = base[:len(base) - (len(dots) - 1)] if len(dots) > 1 else base
        tokens = base + tokens
    node = value_at(root, tokens)
    if node is MISSING:
        return value
    return _resolve(root, pointer_from(tokens), node, hops + 1)


def config_values(root, framework: str | None = None, batch_keys=()) -> dict[str, object]:
    """Dotted key path -> value of every batch key (for a script reading `hps.train.batch_size`)."""
    return {dotted(entry.pointer): entry.value for entry in batch_entries(root, framework, batch_keys)}


# -- the checks ------------------------------------------------------------------------------------------


def check(root, options, fixable: bool = True) -> Outcome | None:
    """The findings for a training config's tree, or None when it holds no batch key (no training config)."""
    entries = batch_entries(root, options.framework, options.batch_keys)
    if not entries:
        return None
    findings: list[Finding] = []
    good: list[Entry] = []
    dump = _all_strings(root)  # a translation table or a dump of arguments as text: no program's batch size
    texts: dict[int, bool] = {}  # id(mapping) -> _text_mapping (once per mapping: 15,000 keys in one is linear)
    for entry in entries:
        parent = _parent(root, entry)
        if id(parent) not in texts:
            texts[id(parent)] = _text_mapping(parent)
        problem = None if dump or texts[id(parent)] else _type_problem(entry, fixable)
        if problem is not None:
            findings.append(problem)
        elif _positive_int(entry.value):
            good.append(entry)
    used = {"world_sizes", "batchnorm"}  # every world size and BatchNorm was checked against each batch
    world_sizes, source = options.world_sizes, options.world_source
    own = _own_world_size(root)
    if own is not None:  # the file states its launch (Lightning's trainer.devices × num_nodes, litgpt's devices)
        world_sizes, source = (own[0],), f"the file's own {own[1]}"
    parallel = _model_parallel(root)
    if parallel > 1 and world_sizes:  # Megatron / NeMo: the batch splits over the data-parallel ranks only
        world_sizes = tuple(world // parallel for world in world_sizes if world % parallel == 0 and world >= parallel)
    for entry in good:
        if entry.kind == GLOBAL and world_sizes:
            split = _split(root, entry, world_sizes, options.batchnorm, parallel)
            if source and source.startswith("launched by "):  # the launch that decides the world size, named
                for finding in split:
                    finding.message += f" ({source})"
            findings.extend(split)
        elif entry.kind == PER_DEVICE and world_sizes and _training(entry):
            findings.append(_global_batch(root, entry, world_sizes, source, parallel))
        # evaluation batches are exempt: BatchNorm in eval mode uses its running statistics
        if entry.kind == PER_DEVICE and entry.value == 1 and options.batchnorm and _training(entry):
            findings.append(Finding(BATCHNORM_ONE_SAMPLE, f"{dotted(entry.pointer)} is 1 per device and the model has "
                                                          "BatchNorm layers: the first training step fails with "
                                                          "\"Expected more than 1 value per channel when training\"; "
                                                          "use at least 2", entry.pointer, fails_in=STEP))
    if options.dataset_size:
        used.add("dataset_size")
        findings.extend(_steps_tables(root, good, options))
    return Outcome(findings, frozenset(used))


_DEVICE_KEYS = ("devices", "num_gpus", "n_gpus", "gpus", "nproc_per_node")
_NODE_KEYS = ("num_nodes", "nodes", "nnodes")
_PARALLEL_KEYS = ("tensor_model_parallel_size", "pipeline_model_parallel_size", "context_parallel_size")


def _own_world_size(root) -> tuple[int, str] | None:
    """(world size, how the file says it) when the file states its own launch as whole numbers: `devices`
    (with `num_nodes`) at its top or under `trainer`. `devices: auto` or a list of ids says nothing certain."""
    for where in (root, root.get("trainer") if isinstance(root, dict) else None):
        if not isinstance(where, dict):
            continue
        devices = next(((key, where[key]) for key in _DEVICE_KEYS if _positive_int(where.get(key))), None)
        if devices is None or devices[1] >= IMPLAUSIBLE:
            continue
        nodes = next(((key, where[key]) for key in _NODE_KEYS if _positive_int(where.get(key))), None)
        prefix = "trainer." if where is not root else ""
        if nodes is not None and nodes[1] < IMPLAUSIBLE:
            return devices[1] * nodes[1], f"{prefix}{devices[0]} {devices[1]} × {prefix}{nodes[0]} {nodes[1]}"
        return devices[1], f"{prefix}{devices[0]} {devices[1]}"
    return None


def _model_parallel(root) -> int:
    """The GPUs one model replica spans (tensor × pipeline × context parallel), written at the top or under
    `model`, as Megatron and NeMo configs write them; 1 when none is written."""
    product = 1
    for where in (root, root.get("model") if isinstance(root, dict) else None):
        if isinstance(where, dict):
            for key in _PARALLEL_KEYS:
                if _positive_int(where.get(key)) and where[key] < 1 << 20:
                    product *= where[key]
    return product


def _positive_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _skipped(value) -> bool:
    """Values someone else fills: null, "auto", OmegaConf's mandatory `???`, an unresolved interpolation."""
    if value is None:
        return True
    return isinstance(value, str) and (value.strip() in ("auto", "???") or value.strip().startswith("${"))


# More samples per step than any data set holds (sixty times the tokens Llama 3 saw): a typo, not a batch.
IMPLAUSIBLE = 10 ** 15


def _type_problem(entry: Entry, fixable: bool) -> Finding | None:
    value, name = entry.value, dotted(entry.pointer)
    if _positive_int(value) and value >= IMPLAUSIBLE:
        return Finding(NON_INTEGER_BATCH_SIZE, f"{name} is a {digits(value)}-digit number: more samples per step "
                                               "than any data set holds; a typo?", entry.pointer, fails_in=SILENT)
    if _positive_int(value) or _skipped(value) or _sentinel(value):
        return None
    fix = None
    if isinstance(value, float):
        what = "a float"
        if math.isfinite(value) and value.is_integer() and value > 0:
            fix = int(value)
    elif isinstance(value, str):
        what = "a string"
        fix = _integer_text(value)
    else:
        what = f"a {type(value).__name__}"
    via = f" (from {brief(entry.written)})" if entry.written is not value else ""
    message = (f"{name} is {brief(value)}{via}: {what}. PyTorch's DataLoader raises \"ValueError: batch_size should "
               f"be a positive integer value\", and code that multiplies a list by it raises TypeError")
    if fix is not None:
        message += f"; write {fix}"
    pointer_fix = str(fix) if fix is not None and fixable and entry.written is value else None
    return Finding(NON_INTEGER_BATCH_SIZE, message, entry.pointer, fails_in=STEP, fix=pointer_fix)


def _all_strings(root) -> bool:
    """Every scalar of the tree is a string (`{"batch_size": "Batch Size"}`, a test's dump of command-line
    arguments as text: `{"max_steps": "50", "per_device_train_batch_size": "2", "report_to": "none"}`)."""
    stack, seen, scalars = [root], set(), 0
    while stack:
        node = stack.pop()
        if isinstance(node, (dict, list)):
            if id(node) in seen:
                continue
            seen.add(id(node))
            stack.extend(node.values() if isinstance(node, dict) else node)
        elif node is not None:
            if not isinstance(node, str):
                return False
            scalars += 1
    return scalars > 1


def _text_mapping(mapping) -> bool:
    """A mapping of three or more values that are all text, none an interpolation: command-line arguments
    dumped as strings (trl's test references), where "2" was never a batch size a loader got."""
    if not isinstance(mapping, dict):
        return False
    values = [value for value in mapping.values() if not isinstance(value, (dict, list))]
    return len(values) >= 3 and all(isinstance(value, str) and not value.startswith("${") for value in values)


def _sentinel(value) -> bool:
    """What the file's own program means by a non-batch: a boolean (`pad_samples_to_global_batch_size: false` is
    a flag), zero or a negative number (0 "as in training", -1 "all at once"), a word (`"??"`, `"full"`). Which
    program reads the file is unknown, so these are left alone; a float or a number in quotes is not."""
    if isinstance(value, bool) or (isinstance(value, int) and value <= 0):
        return True
    return isinstance(value, str) and _integer_text(value) is None and not _number_text(value)


def _number_text(text: str) -> bool:
    try:
        float(text.strip())
    except ValueError:
        return False
    return True


def _integer_text(text: str) -> int | None:
    try:
        number = float(text.strip())
    except ValueError:
        return None
    return int(number) if math.isfinite(number) and number.is_integer() and number > 0 else None


def _sibling(root, entry: Entry, keys) -> tuple[str, object] | None:
    """A key of `keys` next to the entry (in the same mapping), with its value."""
    for key, value in _parent(root, entry).items():
        if key in keys and key != entry.key:
            return key, value
    return None


def _accumulation(root, entry: Entry) -> tuple[str, object] | None:
    """The accumulation steps for a batch key: written next to it, else the file's only accumulation key
    (`optimization.gradient_accumulation_steps` beside `data.train_bs`)."""
    near = _sibling(root, entry, ACCUMULATION_KEYS)
    if near is not None:
        return near
    found = []
    stack, seen = [(root, 0)], set()
    while stack and len(found) < 2:
        node, depth = stack.pop()
        if not isinstance(node, dict) or depth > _MAX_DEPTH or id(node) in seen:
            continue
        seen.add(id(node))
        for key, value in node.items():
            if key in ACCUMULATION_KEYS and not isinstance(value, (dict, list)):
                found.append((key, value))
            elif isinstance(value, dict):
                stack.append((value, depth + 1))
    return found[0] if len(found) == 1 else None


def _usable(accumulation: tuple[str, object] | None) -> bool:
    """An accumulation the arithmetic can use: a positive integer below IMPLAUSIBLE. More steps than that is
    no run (and a YAML `0x` integer can be too long for any message to print)."""
    return accumulation is not None and _positive_int(accumulation[1]) and accumulation[1] < IMPLAUSIBLE


def _per_device_sibling(root, entry: Entry) -> tuple[str, int] | None:
    """The training per-device batch written next to a global one."""
    for key, value in _parent(root, entry).items():
        if isinstance(key, str) and key != entry.key and is_batch_key(key) and not _NOT_TRAINING.search(key.lower()) \
                and default_kind(key) == PER_DEVICE and _positive_int(value) and value < IMPLAUSIBLE:
            return key, value  # (a larger one is reported as a typo, and is no factor to compute with)
    return None


def _parent(root, entry: Entry) -> dict:
    return value_at(root, pointer_tokens(entry.pointer)[:-1])  # the mapping batch_entries found the key in


def _ranks(ranks: int, parallel: int) -> str:
    """What a batch splits over: GPUs, or with model parallelism the data-parallel ranks of the GPUs."""
    if parallel == 1:
        return f"{ranks} GPU{'s' if ranks != 1 else ''}"
    return (f"{ranks} data-parallel rank{'s' if ranks != 1 else ''} ({ranks * parallel} GPUs, {parallel} per model "
            "replica)")


def _split(root, entry: Entry, world_sizes, batchnorm: bool, parallel: int = 1) -> list[Finding]:
    """DS208 / DS207 / DS205 for a global batch at each world size (`world_sizes`: data-parallel ranks when a
    model replica spans `parallel` GPUs)."""
    name, total = dotted(entry.pointer), entry.value
    # An accumulation written beside the batches is what the loop uses; one elsewhere in the file may be
    # derived by it (NeMo's trainer.accumulate_grad_batches: 1 next to model.global_batch_size)
    accumulation = _sibling(root, entry, ACCUMULATION_KEYS)
    accum = accumulation[1] if _usable(accumulation) else None
    per_device = _per_device_sibling(root, entry)
    training = _training(entry)  # evaluation batches: BatchNorm in eval mode uses its running statistics
    least = 2 if batchnorm and training else 1
    findings = []
    for world in world_sizes:
        if per_device is not None and accum is not None:
            expected = per_device[1] * accum * world
            if expected != total:
                findings.append(Finding(
                    GLOBAL_BATCH_INDIVISIBLE,
                    f"{name} is {total}, but {per_device[0]} {per_device[1]} × {accumulation[0]} {accum} × "
                    f"{_ranks(world, parallel)} = {expected} at world size {world * parallel}: one of them is not what "
                    f"the training loop does. {_agreeing(name, total, per_device, accumulation[0], accum, world, least)}",
                    entry.pointer, fails_in=STEP, world_size=world * parallel, fix=str(expected)))
            continue
        # without accumulation written, the loop derives it (Megatron-style: global / (micro × world))
        step = world * (accum or 1) * (per_device[1] if per_device and accum is None else 1)
        if total % step:
            parts = [_ranks(world, parallel)]
            if accum:
                parts.append(f"{accumulation[0]} {accum}")
            if per_device and accum is None:
                parts.append(f"{per_device[0]} {per_device[1]}")
            findings.append(Finding(
                GLOBAL_BATCH_INDIVISIBLE,
                f"{name} {total} does not split evenly over {' × '.join(parts)} (a multiple of {step} does): JAX "
                "fails with \"batch size must be divisible by the number of devices\" and PyTorch code computing "
                f"{total} // {world} per {'GPU' if parallel == 1 else 'rank'} trains a smaller batch than written. "
                f"{_choices(total, accum or 1, world, least, name, step, parallel)}",
                entry.pointer, fails_in=STEP, world_size=world * parallel,
                fix=str(_nearest(total, step, least * world * (accum or 1)))))
            continue
        each = total // (world * (accum or 1))
        if each == 1 and per_device is None and training:  # a per-device key next to it is checked on its own
            message = (f"{name} {total} over {_ranks(world, parallel)}" + (f" × {accum} accumulation steps" if accum else "")
                       + " leaves 1 sample per device per step")
            if batchnorm:
                findings.append(Finding(BATCHNORM_ONE_SAMPLE, message + ": with BatchNorm layers the first step fails "
                                        "with \"Expected more than 1 value per channel when training\". "
                                        f"{_choices(total, accum or 1, world, 2, name, None, parallel)}",
                                        entry.pointer, fails_in=STEP, world_size=world * parallel,
                                        fix=str(2 * world * (accum or 1))))
            else:
                findings.append(Finding(MICRO_BATCH_ONE, message + "; a model with BatchNorm layers fails on it "
                                        "(--batchnorm makes this an error)", entry.pointer, world_size=world * parallel))
    return findings


def _agreeing(name: str, total: int, per_device: tuple[str, int], accum_key: str, accum: int, world: int,
              least: int) -> str:
    """The values that make global = per-device × accumulation × world hold, never the value already written:
    the global batch the other two make, and the per-device batch (or accumulation) that keeps the global one."""
    options = [f"set {name} to {per_device[1] * accum * world}"]
    if total % (accum * world) == 0 and total // (accum * world) >= least:
        options.append(f"{per_device[0]} to {total // (accum * world)}")
    elif total % (per_device[1] * world) == 0:
        options.append(f"{accum_key} to {total // (per_device[1] * world)}")
    return "To agree: " + ", or ".join(options)


def _nearest(total: int, step: int, floor: int) -> int:
    """The multiple of `step` nearest `total` (upwards on a tie), never below `floor`."""
    below = total // step * step
    above = below + step
    best = above if total - below >= above - total or below < max(floor, 1) else below
    return max(best, -(-floor // step) * step)


def _choices(total: int, accum: int, world: int, least: int, name: str, step: int | None = None,
             parallel: int = 1) -> str:
    """The nearest global batches that split, with what each GPU (data-parallel rank) then gets (never fewer
    than `least`)."""
    step = step or world * accum
    floor = least * world * accum
    below = total // step * step
    options = [v for v in (below, below + step) if v >= floor and v > 0]
    if not options:
        options = [-(-floor // step) * step]
    unit = "GPU" if parallel == 1 else "rank"
    said = " or ".join(f"{v} ({v // (world * accum)} per {unit})" for v in dict.fromkeys(options))
    return f"Set {name} to {said}"


def _training(entry: Entry) -> bool:
    """A training batch, not an evaluation one (`val_bs`, `eval.batch_size`)."""
    return not any(_NOT_TRAINING.search(token.lower()) for token in pointer_tokens(entry.pointer))


def _global_batch(root, entry: Entry, world_sizes, source: str | None, parallel: int = 1) -> Finding:
    """DS209: what the per-device batch makes per optimizer step at each world size (data-parallel ranks when a
    model replica spans `parallel` GPUs)."""
    accumulation = _accumulation(root, entry)
    accum = accumulation[1] if _usable(accumulation) else 1
    how = f"{accumulation[0]} {accum}" if _usable(accumulation) else \
        "no accumulation key in this file: 1"
    each = "; ".join(f"{entry.value * accum * world} on {_ranks(world, parallel)} "
                     f"({entry.value} × {accum} × {world})" for world in world_sizes)
    where = f" ({source})" if source else ""
    return Finding(GLOBAL_BATCH, f"global batch per optimizer step{where}: {each}; {dotted(entry.pointer)} "
                                 f"{entry.value} per GPU, {how}", entry.pointer)


def _steps_tables(root, good: list[Entry], options) -> list[Finding]:
    """DS705: batches and optimizer steps per epoch at each world size, for each training batch key."""
    framework = options.framework or "torchrun"
    sizes = options.world_sizes or DEFAULT_WORLD_SIZES
    findings = []
    for entry in good:
        if not _training(entry):
            continue
        accumulation = _accumulation(root, entry)
        accum = accumulation[1] if _usable(accumulation) else 1
        row = []
        for world in sizes:
            per_device = entry.value
            if entry.kind == GLOBAL:
                if entry.value % (world * accum):
                    row.append(f"{world} → ? ({entry.value} does not split)")
                    continue
                per_device = entry.value // (world * accum)
            plan = epochs.epoch(framework, options.dataset_size, per_device, world, accum)
            steps = plan.optimizer_steps
            shown = str(int(steps)) if float(steps).is_integer() else f"{steps:.2f}".rstrip("0")
            text = f"{world} → {plan.batches_per_device} batches"
            if accum > 1:
                text += f", {shown} optimizer steps"
            row.append(text)
        assumed = "" if options.framework else " (assumed: give --framework)"
        kind = "global" if entry.kind == GLOBAL else "per device"
        message = (f"{options.dataset_size} samples, {dotted(entry.pointer)} {entry.value} {kind}"
                   + (f", {accumulation[0]} {accum}" if accumulation and accum > 1 else "")
                   + f", {framework}{assumed}: per GPU per epoch by GPU count: {'; '.join(row)}. "
                   f"{framework}: {epochs.HOW[framework]}. Steps should fall as 1/GPUs; steps that fall with the "
                   "square of the GPU count mean the data is sharded twice")
        findings.append(Finding(STEPS_PER_EPOCH, message, entry.pointer))
    return findings
