"""The DS8xx checks on training scripts (dsconfig.training.pysource reads them; nothing is imported or run).

  DS800  a Lightning Trainer left at use_distributed_sampler=True while a DataLoader of the script (or of
         a file it imports) gets a sampler that already shards by rank
  DS801  a batch size computed with true division reaching a DataLoader or a config's batch key
  DS802  a literal batch size a sharding JAX loader cannot split over --world-size devices
  DS803  a Lightning offload strategy while configure_optimizers builds a torch optimizer

Each finding carries evidence lines (Finding.related). The result also says whether a script builds
BatchNorm layers and which engine options each script's checks used.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Iterable
from typing import NamedTuple

from ..findings import Finding
from ..phases import INITIALIZE, STEP
from ..rules.scripts import (
    BATCH_INDIVISIBLE_DEVICES,
    FLOAT_BATCH_SIZE,
    LIGHTNING_OFFLOAD_TORCH_OPTIMIZER,
    LIGHTNING_SHARDED_TWICE,
)
from .epochs import epoch, sharded_twice
from .names import is_batch_key
from .pysource import (
    FLOAT,
    INT,
    Defined,
    External,
    Project,
    Source,
    argument,
    dotted_path,
    has_kwargs,
    reaching,
    value_of,
)
from .prefilter import ALL, shards

DEFAULT_WORLD_SIZES = (1, 2, 4, 8)
_MAX_IMPORTED = 2000  # files followed from one Trainer's script (a guard, far above any real project)

DATALOADERS = frozenset({"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"})
BATCH_SAMPLERS = frozenset({"torch.utils.data.BatchSampler", "torch.utils.data.sampler.BatchSampler"})
DISTRIBUTED_SAMPLERS = frozenset({"torch.utils.data.DistributedSampler",
                                  "torch.utils.data.distributed.DistributedSampler"})
# bases that are known not to shard: a class built only on these shards only if it reads the rank itself
_PLAIN_BASES = frozenset({"torch.utils.data.Sampler", "torch.utils.data.sampler.Sampler", "typing.Generic",
                          "typing.Iterator", "typing.Iterable", "collections.abc.Iterator"}) | BATCH_SAMPLERS
_RANK_CALLS = frozenset({"torch.distributed.get_rank", "torch.distributed.distributed_c10d.get_rank"})
_RANK_VARIABLES = frozenset({"RANK", "LOCAL_RANK", "SLURM_PROCID", "NODE_RANK"})
_LIGHTNING = ("lightning", "pytorch_lightning")
_SAMPLER_KEEPERS = ("use_distributed_sampler", "replace_sampler_ddp")
# calls that split a batch's leading axis over all devices
_SHARDING_CALLS = frozenset({"jax.make_array_from_process_local_data", "jax.device_put_sharded",
                             "flax.jax_utils.shard", "flax.training.common_utils.shard", "jax.pmap",
                             "jax.experimental.multihost_utils.host_local_array_to_global_array"})
_SHARDINGS = ("NamedSharding", "PositionalSharding", "PartitionSpec")

_BATCHNORMS = frozenset({"BatchNorm", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm", "LazyBatchNorm1d",
                         "LazyBatchNorm2d", "LazyBatchNorm3d"})
_BATCHNORM_PACKAGES = ("torch", "flax", "haiku", "equinox")

Evidence = tuple  # (file, line, column, note)


class ScriptsResult(NamedTuple):
    findings: list[Finding]  # placed: file, line and column set
    batchnorm: Evidence | None  # the first BatchNorm layer a script builds, or None
    used: dict[str, frozenset[str]]  # script path -> the options its checks used: world_sizes, dataset_size, batchnorm
    crashed: tuple[tuple[str, Exception], ...] = ()  # (script path, error): a check that crashed on that script


def check(project: Project, entries: Iterable[Source], mentions_batchnorm: Iterable[str],
          world_sizes: tuple[int, ...] | None, dataset_size: int | None, batchnorm: bool,
          config_values: dict[str, object], sharded: bool = True,
          starting: dict[str, frozenset[str]] | None = None) -> ScriptsResult:
    """Run the DS8xx checks over `entries` (the scripts worth reading), resolving through `project`;
    `mentions_batchnorm`: real paths of the scripts whose text mentions BatchNorm (read in turn until one
    builds a layer); `sharded`: whether any script splits batches over devices (else DS802 has nothing to do);
    `starting`: real path -> the checks that can start in that script (training.prefilter; default all)."""
    entries = list(entries)
    findings: list[Finding] = []
    used: dict[str, set[str]] = {}
    memo: dict = {}  # per file and per definition: what a walk of it found (the same file serves many scripts)
    crashed: list[tuple[str, Exception]] = []
    norm = _first_batchnorm(project, mentions_batchnorm, crashed)
    for source in entries:
        # a check that crashes on one script (dsconfig's bug) is reported for that script; the others go on
        runs = starting.get(source.real, ALL) if starting is not None else ALL
        try:
            found = []
            if "DS800" in runs:
                found += _sharded_twice(project, source, world_sizes, dataset_size, config_values, used, memo)
            if "DS801" in runs:
                found += _float_batch_sizes(project, source)
            # a test's batch runs on the test machine's devices, not the launch's; a BatchNorm some script builds
            # may not be the trained model's (--batchnorm says it is)
            if "DS803" in runs:
                found += _offload_torch_optimizer(project, source, memo)
            if "DS802" in runs and sharded and not _a_test(source.path):
                found += _indivisible(project, source, world_sizes, batchnorm, norm if batchnorm else None, used,
                                      memo)
        except Exception as error:  # noqa: BLE001 - reported as that script's internal error
            crashed.append((source.path, error))
            continue
        findings.extend(found)
    return ScriptsResult(findings, norm, {path: frozenset(names) for path, names in used.items()}, tuple(crashed))


def _first_batchnorm(project: Project, mentions: Iterable[str], crashed: list) -> Evidence | None:
    """The first BatchNorm layer the scripts that mention one build (a script whose walk crashes is noted)."""
    for real in mentions:
        source = project.source_at(real)
        if source is None:
            continue
        try:
            found = next(iter(_batchnorms(project, source)), None)
        except Exception as error:  # noqa: BLE001 - reported as that script's internal error
            crashed.append((source.path, error))
            continue
        if found is not None:
            return found
    return None


def _at(finding: Finding, source: Source, node: ast.AST) -> Finding:
    finding.file, finding.line, finding.column = source.path, node.lineno, node.col_offset + 1
    return finding


def _evidence(source: Source, node: ast.AST, note: str) -> Evidence:
    return (source.path, node.lineno, node.col_offset + 1, note)


def _where(source: Source, node: ast.AST) -> str:
    return f"{source.path}:{node.lineno}"


def _short(node: ast.AST, limit: int = 60) -> str:
    try:
        text = ast.unparse(node)
    except RecursionError:  # a hostile, deeply nested expression
        return "(expression)"
    return text if len(text) <= limit else text[:limit - 3] + "..."


# -- DS800 -----------------------------------------------------------------------------------------


class Sharding(NamedTuple):
    """Why a sampler shards by rank."""
    why: str
    evidence: Evidence
    distributed_sampler: bool | None  # a DistributedSampler (Lightning keeps it as `sampler=`); None: unknown


def _last_name(func: ast.AST) -> str:
    """`Trainer` for pl.Trainer, Trainer and lightning.pytorch.Trainer: a cheap test before resolving."""
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _lightning_trainers(project: Project, source: Source):
    """The script's calls of Lightning's Trainer (lightning.Trainer, pytorch_lightning.Trainer, ...)."""
    for call in source.calls:
        if _last_name(call.func) != "Trainer":
            continue
        name = project.qualified(source, call.func)
        if name and name.split(".")[0] in _LIGHTNING and name.endswith(".Trainer"):
            yield call


def _sharded_twice(project: Project, source: Source, world_sizes, dataset_size, config_values, used,
                   memo: dict) -> list[Finding]:
    findings = []
    if "Trainer" not in source.text:
        return findings
    if not source.parsed and not _loaders_reached(project, source, memo):
        return findings  # no loader to shard twice among what it imports: the script is not parsed for this
    for trainer in _lightning_trainers(project, source):
        if not _shards_its_loaders(trainer):
            continue
        loaders = _loaders_reached(project, source, memo)
        if not loaders:
            continue
        loader_source, loader, keyword, sampler_source, sampler, sharding = loaders[0]
        related = [_evidence(source, trainer, "Trainer(...) keeps use_distributed_sampler=True"),
                   _evidence(loader_source, loader, f"DataLoader(..., {keyword}=...) gets a sampler that shards by rank"),
                   _evidence(sampler_source, sampler, f"{_short(sampler.func)}(...) built here"),
                   sharding.evidence]
        for other in loaders[1:]:
            related.append(_evidence(other[0], other[1], f"DataLoader(..., {other[2]}=...) too"))
        batch, batch_how = _batch_size(project, sampler_source, sampler, loader_source, loader, keyword,
                                       config_values)
        kind = "batch sampler" if keyword == "batch_sampler" else "sampler"
        message = (f"Trainer keeps use_distributed_sampler=True (the default) while the DataLoader at "
                   f"{_where(loader_source, loader)} gets {_short(sampler.func)}, a {kind} that already shards by "
                   f"rank ({sharding.why}): on N GPUs Lightning shards its {'batches' if kind == 'batch sampler' else 'samples'} "
                   f"again and each GPU runs about 1/N² of the data instead of 1/N")
        message += _table(keyword, batch, batch_how, world_sizes, dataset_size, source, used)
        message += "; pass use_distributed_sampler=False to the Trainer (Lightning 1.x: replace_sampler_ddp=False)"
        finding = _at(Finding(LIGHTNING_SHARDED_TWICE, message), source, trainer)
        finding.related = tuple(dict.fromkeys(related))
        findings.append(finding)
    return findings


# Lightning's registered strategies that offload the optimizer (DeepSpeedStrategy.register_strategies, 2.6.6)
_OFFLOAD_STRATEGIES = frozenset({"deepspeed_stage_2_offload", "deepspeed_stage_3_offload",
                                 "deepspeed_stage_3_offload_nvme"})
_CPU_OPTIMIZERS = ("DeepSpeedCPUAdam", "DeepSpeedCPULion")


def _offload_torch_optimizer(project: Project, source: Source, memo: dict) -> list[Finding]:
    """DS803: a Trainer whose strategy offloads the optimizer, and a configure_optimizers of the script or of the
    files it imports (one level) building a torch.optim optimizer, none of them naming a DeepSpeed CPU optimizer."""
    trainers = []
    for trainer in _lightning_trainers(project, source):
        why = _offloading(project, source, argument(trainer, "strategy"))
        if why is not None:
            trainers.append((trainer, why))
    if not trainers:
        return []
    modules = [source, *_direct_imports(project, source, memo)]
    if any(name in module.text for module in modules for name in _CPU_OPTIMIZERS):
        return []  # a DeepSpeed CPU optimizer somewhere: which one the module builds is the run's
    optimizers = [(module, call, qualified) for module in modules if "configure_optimizers" in module.text
                  for call, qualified in _torch_optimizers(project, module)]
    if not optimizers:
        return []
    module, call, qualified = optimizers[0]
    findings = []
    for trainer, why in trainers:
        message = (f"Trainer(strategy={why}) offloads the optimizer to the CPU, and configure_optimizers at "
                   f"{_where(module, call)} builds {qualified}: deepspeed.initialize raises \"ZeRORuntimeException: You "
                   "are using ZeRO-Offload with a client provided optimizer\" before the first step (Lightning writes no "
                   "zero_force_ds_cpu_optimizer, which DeepSpeed defaults to true); build "
                   "deepspeed.ops.adam.DeepSpeedCPUAdam there, or use a strategy without offload")
        finding = _at(Finding(LIGHTNING_OFFLOAD_TORCH_OPTIMIZER, message, fails_in=INITIALIZE), source, trainer)
        finding.related = (_evidence(source, trainer, "the offloading strategy"),
                           _evidence(module, call, f"{qualified}(...) built here"))
        findings.append(finding)
    return findings


def _offloading(project: Project, source: Source, strategy) -> str | None:
    """How the strategy argument offloads the optimizer (its text), or None."""
    if isinstance(strategy, ast.Constant) and strategy.value in _OFFLOAD_STRATEGIES:
        return repr(strategy.value)
    if isinstance(strategy, ast.Call) and _last_name(strategy.func) == "DeepSpeedStrategy":
        name = project.qualified(source, strategy.func) or ""
        if name.split(".")[0] not in _LIGHTNING or has_kwargs(strategy) or strategy.args:
            return None
        if argument(strategy, "config") is not None:
            return None  # its own config may set zero_force_ds_cpu_optimizer or an optimizer block
        offload = argument(strategy, "offload_optimizer")
        if isinstance(offload, ast.Constant) and offload.value is True:
            return "DeepSpeedStrategy(offload_optimizer=True)"
    return None


def _torch_optimizers(project: Project, module: Source):
    """(call, qualified name) of the torch.optim optimizers built inside a configure_optimizers of the module."""
    for node in ast.walk(module.tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "configure_optimizers":
            for call in ast.walk(node):
                if isinstance(call, ast.Call):
                    name = project.qualified(module, call.func) or ""
                    if name.startswith("torch.optim.") and name.count(".") == 2 and name[12:13].isupper():
                        yield call, name


def _loaders_reached(project: Project, source: Source, memo: dict) -> list:
    """The rank-sharded DataLoaders of the script and of the project files it imports, transitively."""
    modules, complete = _imported(project, source, memo)
    found = [loader for module in modules for loader in _rank_sharded_loaders(project, module, memo)]
    if not found and complete:  # nothing below any of these: the next script's walk stops at them
        memo.setdefault(_BARREN, set()).update(module.real for module in modules)
    return found


def _shards_its_loaders(trainer: ast.Call) -> bool:
    """The Trainer leaves use_distributed_sampler at True on more than one device (as far as the call says)."""
    if has_kwargs(trainer) or trainer.args:
        return False  # **settings or positional arguments may hold it
    for keyword in _SAMPLER_KEEPERS:
        given = argument(trainer, keyword)
        if given is not None:
            return isinstance(given, ast.Constant) and given.value is True
    devices = argument(trainer, "devices")
    nodes = argument(trainer, "num_nodes")
    single = (isinstance(devices, ast.Constant) and devices.value in (1, "1")) or \
        (isinstance(devices, ast.List) and len(devices.elts) == 1)
    accelerator = argument(trainer, "accelerator")
    if devices is None and isinstance(accelerator, ast.Constant) and accelerator.value == "cpu":
        single = True  # devices="auto" on the CPU is one process
    many_nodes = nodes is not None and not (isinstance(nodes, ast.Constant) and nodes.value == 1)
    return not single or many_nodes


# memo key: the files whose imports, transitively, hold no rank-sharded DataLoader (found by an earlier walk). In a
# big tree a hundred Lightning scripts import the same packages: each file is walked through once, not once a script.
_BARREN = "barren"


def _imported(project: Project, source: Source, memo: dict) -> tuple[list[Source], bool]:
    """The script and the project files it imports, transitively (those known to reach no rank-sharded DataLoader
    left out: no file reached through one can hold one), and whether the walk was complete (not cut at
    _MAX_IMPORTED)."""
    barren = memo.get(_BARREN, ())
    if source.real in barren:
        return [], True
    seen = {source.real: source}
    queue = [source]
    while queue and len(seen) < _MAX_IMPORTED:
        for found in _direct_imports(project, queue.pop(), memo):
            if found.real not in seen and found.real not in barren:
                seen[found.real] = found
                queue.append(found)
    return list(seen.values()), not queue


def _direct_imports(project: Project, source: Source, memo: dict) -> list[Source]:
    key = ("imports", source.real)
    if key not in memo:
        found = {}
        for level, dotted in source.import_targets():
            parts = dotted.split(".")
            for cut in range(len(parts), max(len(parts) - 2, 0), -1):
                module = project.module(source, level, ".".join(parts[:cut]))
                if module is not None:
                    found[module.real] = module
        memo[key] = list(found.values())
    return memo[key]


def _rank_sharded_loaders(project: Project, module: Source, memo: dict) -> list:
    """(loader source, DataLoader call, keyword, sampler source, sampler call, Sharding) for every DataLoader
    of a file whose sampler Lightning would shard again."""
    key = ("loaders", module.real)
    if key in memo:
        return memo[key]
    found = memo[key] = []
    if not module.parsed and not _may_give_a_loader_a_sampler(module.text):
        return found  # no DataLoader(..., sampler=...) in it: not parsed for nothing
    for call in module.calls:
        if _last_name(call.func) != "DataLoader" or project.qualified(module, call.func) not in DATALOADERS:
            continue
        for keyword in ("batch_sampler", "sampler"):
            given = argument(call, keyword)
            if given is None:
                continue
            built = _construction(project, module, given)
            if built is None:
                continue
            sharding = _sharding(project, built[0], built[1])
            if sharding is None:
                continue
            # Lightning leaves a DistributedSampler given as `sampler=` alone (isinstance check)
            if keyword == "sampler" and sharding.distributed_sampler is not False:
                continue
            found.append((module, call, keyword, built[0], built[1], sharding))
    return found


# The calls looked for below are written `DataLoader(` (the last name is compared) with a `sampler=` or
# `batch_sampler=` keyword (a comment may sit between the name and `=` inside the parentheses).
_LOADER_CALL = re.compile(r"\bDataLoader\s*\(")
_SAMPLER_KEYWORD = re.compile(r"\b(?:batch_)?sampler\s*(?:#[^\n]*\s*)*=(?!=)")


def _may_give_a_loader_a_sampler(text: str) -> bool:
    """A cheap test of a file's text before it is parsed for its DataLoader calls: false only when it has none
    given a sampler by keyword."""
    return "DataLoader" in text and "sampler" in text and _LOADER_CALL.search(text) is not None \
        and _SAMPLER_KEYWORD.search(text) is not None


def _construction(project: Project, source: Source, node: ast.AST, depth: int = 0):
    """(source, call) that built the object an expression names: the call itself, the value last assigned
    to a local name, or to `self.<attr>` in the same class."""
    if depth > 8:
        return None
    if isinstance(node, ast.Call):
        return source, node
    if isinstance(node, ast.Name):
        found = reaching(project, source, node)
        return _construction(project, found[0], found[1], depth + 1) if found is not None else None
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        cls = source.enclosing(node, (ast.ClassDef,))
        if cls is None:
            return None
        values = [store.value for store in ast.walk(cls) if isinstance(store, ast.Assign)
                  for target in store.targets if isinstance(target, ast.Attribute)
                  and isinstance(target.value, ast.Name) and target.value.id == "self" and target.attr == node.attr]
        if len(values) == 1:
            return _construction(project, source, values[0], depth + 1)
    return None


def _sharding(project: Project, source: Source, call: ast.Call) -> Sharding | None:
    """Why the sampler a call builds shards by rank, or None when it does not (or it cannot be told)."""
    target = project.resolve(source, call.func)
    given = [kw.arg for kw in call.keywords if kw.arg in ("num_replicas", "rank")]
    if isinstance(target, External):
        if target.name in DISTRIBUTED_SAMPLERS:
            return Sharding("torch's DistributedSampler", _evidence(source, call, "DistributedSampler(...)"), True)
        if given:
            return Sharding(f"built with {' and '.join(given)}",
                            _evidence(source, call, f"built with {', '.join(given)}"), None)
        return None
    if not isinstance(target, Defined) or not isinstance(target.node, ast.ClassDef):
        return None
    classes = [target]
    known_plain = True
    for base in project.bases(target):
        if isinstance(base, External):
            if base.name in DISTRIBUTED_SAMPLERS:
                return Sharding("it subclasses torch's DistributedSampler",
                                _evidence(target.source, target.node, f"class {target.node.name} subclasses "
                                                                      "DistributedSampler"), True)
            if base.name not in _PLAIN_BASES:
                known_plain = False
        elif isinstance(base, Defined) and isinstance(base.node, ast.ClassDef):
            classes.append(base)
        else:
            known_plain = False
    distributed = False if known_plain else None
    for cls in classes:
        read = _reads_rank(project, cls)
        if read is not None:
            return Sharding(f"{cls.node.name} reads the rank: {_short(read)}",
                            _evidence(cls.source, read, f"{cls.node.name} reads the rank"), distributed)
    if given:
        return Sharding(f"built with {' and '.join(given)}",
                        _evidence(source, call, f"built with {', '.join(given)}"), distributed)
    return None


def _reads_rank(project: Project, cls: Defined) -> ast.AST | None:
    """The first place the class asks for the process's rank (torch.distributed.get_rank, $RANK, ...)."""
    for node in ast.walk(cls.node):
        if isinstance(node, ast.Call):
            if project.qualified(cls.source, node.func) in _RANK_CALLS:
                return node
            if _environ_rank(project, cls.source, node):
                return node
        elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) \
                and node.slice.value in _RANK_VARIABLES and project.qualified(cls.source, node.value) == "os.environ":
            return node
    return None


def _environ_rank(project: Project, source: Source, call: ast.Call) -> bool:
    """os.environ.get("RANK") or os.getenv("LOCAL_RANK")."""
    name = project.qualified(source, call.func)
    if name not in ("os.environ.get", "os.getenv") or not call.args:
        return False
    first = call.args[0]
    return isinstance(first, ast.Constant) and first.value in _RANK_VARIABLES


def _batch_size(project: Project, sampler_source: Source, sampler: ast.Call, loader_source: Source,
                loader: ast.Call, keyword: str, config_values: dict) -> tuple[int | None, str]:
    """The per-device batch size (and where it comes from): the batch sampler's `batch_size`, else the
    DataLoader's; a literal, or a training config's value for `hps.train.batch_size`-like reads."""
    candidates = [(sampler_source, argument(sampler, "batch_size",
                                            _position(project, sampler_source, sampler, "batch_size")))]
    if keyword == "sampler":
        candidates.insert(0, (loader_source, argument(loader, "batch_size", 1)))
    for source, node in candidates:
        if node is None:
            continue
        for _ in range(8):
            value = value_of(project, source, node)
            if value.kind == INT and isinstance(value.number, int) and value.number > 0:
                return value.number, f"batch {value.number} ({_where(source, node)})"
            if isinstance(node, ast.Name):
                found = reaching(project, source, node)
                if found is None:
                    break
                source, node = found
                continue
            path = dotted_path(node)
            if path is not None:
                for start in range(len(path)):
                    key = ".".join(path[start:])
                    configured = config_values.get(key)
                    if isinstance(configured, int) and not isinstance(configured, bool) and configured > 0:
                        return configured, f"batch {configured} ({key} in the training config)"
                return None, f"the batch size {_short(node)}"
            break
    return None, "the batch size"


def _position(project: Project, source: Source, call: ast.Call, name: str) -> int | None:
    """Where a parameter sits among the positional arguments of a call to a project class or function."""
    target = project.resolve(source, call.func)
    if not isinstance(target, Defined):
        return None
    function, skip = target.node, 0
    if isinstance(function, ast.ClassDef):
        function = next((n for n in function.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
        skip = 1
    if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    names = [a.arg for a in function.args.posonlyargs + function.args.args][skip:]
    return names.index(name) if name in names else None


def _table(keyword: str, batch: int | None, batch_how: str, world_sizes, dataset_size, source: Source,
           used: dict) -> str:
    sizes = world_sizes or DEFAULT_WORLD_SIZES
    if dataset_size is None or batch is None:
        what = "--dataset-size N" if dataset_size is None else "a literal batch size or its training config"
        b = batch if batch is not None else "B"
        if keyword == "batch_sampler":
            formula = f"ceil(ceil(N / (W × {b})) / W) batches per GPU instead of ceil(N / (W × {b}))"
        else:
            formula = f"ceil(ceil(ceil(N / W) / W) / {b}) batches per GPU instead of ceil(ceil(N / W) / {b})"
        return f"; with N samples on W GPUs that is {formula} (give {what} for the table)"
    used.setdefault(source.path, set()).update(("dataset_size", "world_sizes") if world_sizes else ("dataset_size",))
    got, meant = [], []
    for w in sizes:
        if keyword == "batch_sampler":
            got.append(sharded_twice(dataset_size, batch, w))
        else:
            # Lightning wraps the sampler in a DistributedSamplerWrapper: ceil(N / W) indices, sharded again
            got.append(epoch("lightning", -(-dataset_size // w), batch, w).batches_per_device)
        meant.append(epoch("torchrun", dataset_size, batch, w).batches_per_device)
    shown = ", ".join(f"{w} → {n}" for w, n in zip(sizes, got))
    return (f"; {dataset_size} samples at {batch_how}: batches per epoch by GPU count: {shown} "
            f"(expected {', '.join(str(n) for n in meant)})")


# -- DS801 -----------------------------------------------------------------------------------------


def _float_batch_sizes(project: Project, source: Source) -> list[Finding]:
    findings = []
    for node, what, phase, literal in _batch_sinks(project, source):
        value = value_of(project, source, node)
        if value.kind != FLOAT or (literal and not _numbers_divided(project, value)):
            continue
        made = _short(value.node) if value.node is not None else _short(node)
        if phase == INITIALIZE:
            fails = ("DataLoader raises ValueError: batch_size should be a positive integer value" if "DataLoader" in what
                     or "BatchSampler" in what else "a sampler that computes with it gets a float")
        else:
            fails = ("a DataLoader reading it raises ValueError (batch_size should be a positive integer value), a "
                     "bucket sampler TypeError: can't multiply sequence by non-int of type 'float'")
        message = (f"{what} gets a float: {made} is true division, and `//` after it keeps the float (28 / 2 // 2 == "
                   f"7.0); {fails}; make it an int (int(...), or // on integers)")
        finding = _at(Finding(FLOAT_BATCH_SIZE, message, fails_in=phase), source, node)
        if value.node is not None and value.source is not None and \
                (value.source is not source or value.node.lineno != node.lineno):
            finding.related = (_evidence(value.source, value.node, f"true division: {_short(value.node, 40)}"),)
        findings.append(finding)
    return findings


def _a_test(path: str) -> bool:
    """pytest's file names (test_*.py, *_test.py) or a file under a tests/ or test/ folder."""
    parts = path.replace(os.sep, "/").split("/")
    name = parts[-1]
    return name.startswith("test_") or name.endswith("_test.py") or any(p in ("tests", "test") for p in parts[:-1])


def _numbers_divided(project: Project, value) -> bool:
    """A float made by dividing something known to be a number (`num_samples / 2`, `cfg.batch / world` with the
    config's integer). In a dict literal a division of two unknowns may be of tensors: OpenRLHF returns
    `{"global_batch_size": num_samples / gas}`, a loss normaliser, with its other statistics."""
    node = value.node
    if not isinstance(node, ast.BinOp) or value.source is None:
        return True  # a float literal
    return any(value_of(project, value.source, side).kind in (INT, FLOAT) for side in (node.left, node.right))


def _batch_sinks(project: Project, source: Source):
    """(expression, what it is, phase, in a dict literal) for every place a batch size goes: DataLoader,
    BatchSampler and project sampler arguments; stores into config batch keys."""
    for call in source.calls:
        if not _last_name(call.func).endswith(("Loader", "Sampler")):
            continue
        target = project.resolve(source, call.func)
        if isinstance(target, External) and target.name in DATALOADERS | BATCH_SAMPLERS:
            given = argument(call, "batch_size", 1)
            if given is not None:
                yield given, f"{target.name.rpartition('.')[2]}(batch_size=...)", INITIALIZE, False
        elif isinstance(target, Defined) and isinstance(target.node, ast.ClassDef):
            for kw in call.keywords:
                if kw.arg and is_batch_key(kw.arg):
                    yield kw.value, f"{target.node.name}({kw.arg}=...)", INITIALIZE, False
    for store in source.stores:
        if not isinstance(store, ast.Assign):
            continue
        for target in store.targets:
            if isinstance(target, ast.Subscript) and isinstance(target.slice, ast.Constant) \
                    and isinstance(target.slice.value, str) and is_batch_key(target.slice.value):
                yield store.value, f"the config key {_short(target)}", STEP, False
            elif isinstance(target, ast.Attribute) and is_batch_key(target.attr):
                path = dotted_path(target)
                if path is not None and len(path) >= 2 and path[0] not in ("self", "cls"):
                    yield store.value, f"the config key {_short(target)}", STEP, False
    for literal in source.dicts:
        if not _config_literal(source, literal):
            continue
        for key, value in zip(literal.keys, literal.values):
            if isinstance(key, ast.Constant) and isinstance(key.value, str) and is_batch_key(key.value):
                yield value, f"the config key {key.value!r}", STEP, True


# where a dict literal is a config: assigned, or handed to a writer; not a metric logged (wandb.log({...}))
_CONFIG_WRITERS = frozenset({"dump", "dumps", "safe_dump", "save", "write", "update", "create", "Namespace",
                             "dict", "DictConfig", "EasyDict", "AttrDict", "HParams"})


def _config_literal(source: Source, literal: ast.Dict) -> bool:
    node, parent = literal, source.parent(literal)
    while isinstance(parent, (ast.Dict, ast.List, ast.Tuple)):  # nested: {"train": {"batch_size": ...}}
        node, parent = parent, source.parent(parent)
    if isinstance(parent, (ast.Assign, ast.AnnAssign, ast.Return)):
        return True
    return isinstance(parent, ast.Call) and node is not parent.func and _last_name(parent.func) in _CONFIG_WRITERS


# -- DS802 -----------------------------------------------------------------------------------------


class Loader(NamedTuple):
    """A project function or class that splits every batch over all devices."""
    source: Source
    node: ast.AST  # FunctionDef or ClassDef
    parameter: str  # its batch-size parameter
    position: int | None  # the parameter's position in a call (self excluded)
    shard: ast.AST  # the call that shards


def _sharding_call(project: Project, source: Source, scope: ast.AST) -> ast.AST | None:
    text_markers = None
    for node in ast.walk(scope):
        if not isinstance(node, ast.Call):
            continue
        name = project.qualified(source, node.func)
        if name in _SHARDING_CALLS:
            return node
        if name == "jax.device_put" and len(node.args) + len(node.keywords) >= 2:
            if text_markers is None:
                text_markers = any(isinstance(n, (ast.Attribute, ast.Name)) and getattr(n, "attr", getattr(n, "id", ""))
                                   in _SHARDINGS for n in ast.walk(scope))
            if text_markers:
                return node
    return None


def _loader(project: Project, target: Defined) -> Loader | None:
    node = target.node
    if isinstance(node, ast.ClassDef):
        init = next((n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
        if init is None:
            return None
        function, skip = init, 1
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        function, skip = node, 0
    else:
        return None
    shard = _sharding_call(project, target.source, node)
    if shard is None:
        return None
    args = function.args
    for index, param in enumerate((args.posonlyargs + args.args)[skip:]):
        if is_batch_key(param.arg):
            return Loader(target.source, node, param.arg, index, shard)
    for param in args.kwonlyargs:
        if is_batch_key(param.arg):
            return Loader(target.source, node, param.arg, None, shard)
    return None


def _indivisible(project: Project, source: Source, world_sizes, batchnorm: bool, norm: Evidence | None,
                 used: dict, memo: dict) -> list[Finding]:
    if not world_sizes:
        return []
    findings = []
    for call, batch, loader_what, evidence in _literal_sharded_batches(project, source, memo):
        used.setdefault(source.path, set()).update(("world_sizes", "batchnorm"))
        for w in world_sizes:
            problem = _split_problem(batch, w, batchnorm)
            if problem is None:
                continue
            least = 2 if batchnorm else 1
            message = (f"batch size {batch} is split over {w} devices by {loader_what}: {problem}; use "
                       f"{_nearest(batch, w, least)}")
            layer = norm if batchnorm and batch % w == 0 else None  # the BatchNorm layer is why 1 per device fails
            finding = _at(Finding(BATCH_INDIVISIBLE_DEVICES, message, fails_in=STEP, world_size=w), source, call)
            finding.related = tuple(e for e in (evidence, layer) if e is not None)
            findings.append(finding)
    return findings


def _split_problem(batch: int, devices: int, batchnorm: bool) -> str | None:
    if batch % devices:
        return (f"{batch} is not a multiple of {devices} and JAX raises a ValueError when the first batch is sharded "
                "(the batch dimension must be divisible by the number of devices)")
    if batchnorm and batch // devices < 2:
        return ("each device gets 1 sample and BatchNorm has no batch statistics (PyTorch: ValueError: Expected "
                "more than 1 value per channel when training)")
    return None


def _nearest(batch: int, devices: int, least_per_device: int) -> str:
    """The multiples of `devices` nearest to `batch`, at least `least_per_device` samples per device."""
    low = (batch // devices) * devices
    high = low + devices if low < batch else low
    options = []
    for size in (low, high, high + devices):
        if size // devices >= least_per_device and size not in options:
            options.append(size)
    options = options[:2]
    return " or ".join(f"{size} ({size // devices} per device)" for size in options)


def _may_pass_literal_batch(call: ast.Call) -> bool:
    """A batch-size keyword, an int literal or a batch-named variable among the arguments: worth resolving."""
    if any(kw.arg and is_batch_key(kw.arg) for kw in call.keywords):
        return True
    return any((isinstance(arg, ast.Constant) and type(arg.value) is int)
               or (isinstance(arg, ast.Name) and is_batch_key(arg.id)) for arg in call.args)


def _literal_sharded_batches(project: Project, source: Source, memo: dict):
    """(call, literal batch, what shards it, evidence) for calls of sharding loaders with a literal batch
    size, and DataLoaders with a literal batch size in a function that shards what they yield."""
    for call in source.calls:
        if not _may_pass_literal_batch(call):
            continue
        target = project.resolve(source, call.func)
        if isinstance(target, Defined):
            key = ("loader", id(target.node))
            if key not in memo:
                memo[key] = _loader(project, target) if shards(target.source.text) else None
            loader = memo[key]
            if loader is None:
                continue
            given = argument(call, loader.parameter, loader.position)
            if given is None:
                continue
            value = value_of(project, source, given)
            if value.kind == INT and isinstance(value.number, int) and value.number > 0:
                shard_name = _short(loader.shard.func)
                yield (call, value.number, f"{loader.node.name} ({_where(loader.source, loader.shard)}: {shard_name})",
                       _evidence(loader.source, loader.shard, f"{loader.node.name} splits each batch over all "
                                                              f"devices with {shard_name}"))
        elif isinstance(target, External) and target.name in DATALOADERS and shards(source.text):
            given = argument(call, "batch_size", 1)
            if given is None:
                continue
            scope = source.enclosing(call)
            shard = _sharding_call(project, source, scope) if scope is not None else None
            if shard is None:
                continue
            value = value_of(project, source, given)
            if value.kind == INT and isinstance(value.number, int) and value.number > 0:
                shard_name = _short(shard.func)
                yield (call, value.number, f"{shard_name} ({_where(source, shard)})",
                       _evidence(source, shard, f"{shard_name} splits each batch over all devices"))


# -- BatchNorm -------------------------------------------------------------------------------------


def _batchnorms(project: Project, source: Source):
    if "BatchNorm" not in source.text:
        return
    for call in source.calls:
        name = project.qualified(source, call.func)
        if name and name.split(".")[0] in _BATCHNORM_PACKAGES:
            last = name.rpartition(".")[2]
            if last in _BATCHNORMS or (last == "convert_sync_batchnorm" and "SyncBatchNorm" in name):
                yield _evidence(source, call, f"{_short(call.func)} builds a BatchNorm layer")
