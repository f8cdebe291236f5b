"""Read the training scripts of a lint run: bytes, text, AST, and the Project that resolves imports.

A script named on the command line is always parsed, and one that cannot be read is reported (DS000
with line and column, DS007 past --max-file-size); a script a folder walk found is parsed only when
its text mentions something the checks look for (the rest are parsed later, only if a parsed script
imports them) and is skipped silently when it cannot be read. A module a script imports that was
not linted is read only inside the run's boundary (the folders linted, a named script's folder),
never a special file.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import NamedTuple

from ..boundary import Boundary, inside, special
from ..findings import Finding
from ..phases import LOAD
from ..rules.files import FILE_TOO_LARGE, PARSE_ERROR
from .pysource import Project, Source, Unreadable, decode_source, parse

# What makes a walked script worth parsing: what the checks start from. A file without any of it is
# parsed later only if a parsed script imports it (its sampler, its loader) or, for the BatchNorm
# evidence, when it is the first to mention BatchNorm.
_BATCH_WRITES = re.compile(
    r"(?:batch_?size|bs)\w*['\"]\s*(?:\]\s*=[^=]|:)"  # cfg["batch_size"] = ..., {"train_bs": ...}
    r"|\.\w*batch_?size\w*\s*=[^=]")  # hps.train.batch_size = ...
# DS802 starts from literal batch sizes, only worth reading in a project that shards batches over devices
SHARDING_WORDS = ("make_array_from_process_local_data", "device_put", "shard(", "pmap", "host_local_array_to_global")
_LITERAL_BATCH = re.compile(r"batch_?size\w*\s*=\s*\d")
# A function or class of a sharding file that takes a batch size (in its parameters, or its __init__'s): the
# loaders DS802 follows calls into
_LOADER_FUNCTION = re.compile(r"^def (\w+)\s*\(([^)]{0,4000})\)", re.MULTILINE)  # bounded: no quadratic scan
_LOADER_CLASS = re.compile(r"^class (\w+)\b[^\n]*\n((?:[ \t]+[^\n]*\n|[ \t]*\n)*)", re.MULTILINE)
_INIT = re.compile(r"def __init__\s*\(([^)]{0,4000})\)")
_BATCH_PARAMETER = re.compile(r"batch_?size")  # local_batch_size too


def loader_names(texts) -> frozenset[str]:
    """Names of the top-level functions and classes that take a batch size in the files that shard batches: a
    script with a literal batch size is worth parsing for DS802 only when it names one of them."""
    names = set()
    for text in texts:
        for match in _LOADER_FUNCTION.finditer(text):
            if _BATCH_PARAMETER.search(match.group(2)):
                names.add(match.group(1))
        for match in _LOADER_CLASS.finditer(text):
            init = _INIT.search(match.group(2))
            if init is not None and _BATCH_PARAMETER.search(init.group(1)):
                names.add(match.group(1))
    return frozenset(names)


# Python's strings and comments, cut before looking for a division (`"data/train"` divides nothing)
_STRINGS_AND_COMMENTS = re.compile(
    r'"""(?:\\.|[^\\])*?"""|\'\'\'(?:\\.|[^\\])*?\'\'\'|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|#[^\n]*',
    re.S)
_TRUE_DIVISION = re.compile(r"[\w)\]]\s*/(?![/=])|(?<!/)/=")
_BATCH_IMPORT = re.compile(r"^[ \t]*from[ \t]+[\w.]+[ \t]+import\b[^\n]{0,1000}?(?:batch|bs)", re.MULTILINE | re.IGNORECASE)


def makes_floats(text: str) -> bool:
    """The code divides with `/` (outside strings and comments), or imports a batch-named value from a module
    that may: without either, no float batch size (DS801) can start in this file."""
    if "/" in text and _TRUE_DIVISION.search(_STRINGS_AND_COMMENTS.sub("", text)):
        return True
    return bool(_BATCH_IMPORT.search(text))


def worth_parsing(text: str, sharded_project: bool, loaders: frozenset = frozenset(), steps: bool = True) -> bool:
    """`steps`: a --dataset-size was given (the steps table reads every loader); without it a loader call is
    worth parsing only where a float can reach it."""
    # a call, not a type hint or an import: `pl.Trainer(`, `DataLoader(`, `DistributedSampler(`, `MyLoader(`
    if "Trainer(" in text and "lightning" in text:
        return True
    if ("Loader(" in text or "Sampler(" in text) and (steps or makes_floats(text)):
        return True
    if ("batch" in text or "bs" in text) and _BATCH_WRITES.search(text):
        return True
    return sharded_project and (shards(text) or (bool(_LITERAL_BATCH.search(text))
                                                  and any(name in text for name in loaders)))


def shards(text: str) -> bool:
    """The text mentions JAX and a call that splits a batch over devices (a substring test: it runs on every
    script; DS802 is about JAX loaders, and PyTorch's FSDP also says `shard(`)."""
    return "jax" in text and any(word in text for word in SHARDING_WORDS)

class Scripts(NamedTuple):
    project: Project
    entries: list[Source]  # the scripts the checks start from
    batchnorm: list[str]  # real paths of the scripts that mention BatchNorm, in the order given
    sharded: bool  # a world size was given and a script may split batches over devices (DS802 applies)
    problems: list[Finding]  # named scripts that cannot be read
    unreadable: list[tuple[str, str]]  # (path, why) for walked scripts that cannot be opened (DS008)

    def all_sources(self) -> list[Source]:
        return list(self.project.sources.values()) + self.project.loaded()


def read_scripts(paths: list[str], sources: dict | None, max_bytes: int | None, is_named: Callable[[str], bool],
                 boundary: Boundary, world_sizes: bool, steps: bool = True) -> Scripts:
    """`world_sizes`: whether a world size was given (DS802 needs one; without it literal batch sizes
    are not worth reading); `steps`: whether a dataset size was given (the steps table)."""
    from .. import files

    limit = max_bytes or files.MAX_BYTES
    entries: dict[str, Source] = {}
    pending: dict[str, tuple[str, str]] = {}  # real path -> (path, text) read but not parsed yet
    problems: list[Finding] = []
    unreadable: list[tuple[str, str]] = []
    texts: list[tuple[str, str, str, bool]] = []  # (path, real, text, named)
    for path in paths:
        real = os.path.realpath(path)
        if real in entries or real in pending:
            continue
        named = is_named(path)
        data = sources.get(real) if sources else None
        try:
            if data is None:
                data = files.read_bytes(path, limit)
            elif isinstance(data, str):
                data = data.encode("utf-8")
            texts.append((path, real, decode_source(data), named))
        except files.TooLarge as error:
            if named:
                problems.append(_placed(Finding(FILE_TOO_LARGE, f"{_size(error)}: larger than dsconfig reads (at most "
                                                                f"{files.format_size(error.limit)}: --max-file-size); "
                                                                "not linted"), path))
        except files.FileError as error:
            if named:
                raise
            unreadable.append((path, str(error)))
        except Unreadable as error:
            if named:
                problems.append(_placed(Finding(PARSE_ERROR, error.message, fails_in=LOAD), path, error.line,
                                        error.column))
    # a named script may import its loader from a file that was not linted: always worth the look
    sharded = world_sizes and any(named or shards(text) for _, _, text, named in texts)
    loaders = loader_names(text for _, _, text, _ in texts if shards(text)) if sharded else frozenset()
    batchnorm = []
    for path, real, text, named in texts:
        if "BatchNorm" in text:
            batchnorm.append(real)
        if named or worth_parsing(text, sharded, loaders, steps):
            try:
                entries[real] = Source(path, text, parse(text, path))
            except Unreadable as error:
                if named:
                    problems.append(_placed(Finding(PARSE_ERROR, error.message, fails_in=LOAD), path, error.line,
                                            error.column))
        else:
            pending[real] = (path, text)
    roots = tuple(dict.fromkeys(root if os.path.isdir(root) else os.path.dirname(root) for root in boundary.roots))
    allowed = Boundary(roots)

    def load(real: str) -> Source | None:
        """A module a script imports: a walked script not parsed yet, or a file inside the boundary."""
        try:
            if real in pending:
                path, text = pending.pop(real)
                return Source(path, text, parse(text, path))
            if not allowed.admits(real) or special(real) is not None:
                return None
            root = next(root for root in roots if inside(real, root))  # a named script's folder, say
            text = decode_source(files.read_bytes(real, limit, beside=root))
            return Source(os.path.relpath(real) if not os.path.isabs(paths[0]) else real, text, parse(text, real))
        except (files.FileError, Unreadable):
            return None

    return Scripts(Project(entries, load, roots), list(entries.values()), batchnorm, sharded, problems, unreadable)


def _placed(finding: Finding, path: str, line: int = 1, column: int = 1) -> Finding:
    finding.file, finding.line, finding.column = path, line, column
    return finding


def _size(error) -> str:
    from ..files import format_size
    return format_size(error.size) if error.size is not None else f"more than {format_size(error.limit)}"
