"""Read the training scripts of a lint run: bytes, text, AST, and the Project that resolves imports.

A script named on the command line is always parsed, and one that cannot be read is reported (DS000
with line and column, DS007 past --max-file-size); a script a folder walk found is an entry only for the
checks that can start in it (training.prefilter), parsed when one of them asks, and is skipped
silently when it cannot be read or parsed. The others are parsed only if a check needs more of a
module a script imports than its import lines. A module a script imports that was not linted is read
only inside the run's boundary (the folders linted, a named script's folder), never a special file.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import NamedTuple

from ..boundary import Boundary, inside, special
from ..findings import Finding
from ..phases import LOAD
from ..rules.files import FILE_TOO_LARGE, PARSE_ERROR
from .prefilter import ALL, loader_names, shards, starts
from .pysource import Project, Source, Unreadable, decode_source, parse

class Scripts(NamedTuple):
    project: Project
    entries: list[Source]  # the scripts the checks start from
    checks: dict[str, frozenset[str]]  # real path -> the checks that can start there (named scripts: all)
    batchnorm: list[str]  # real paths of the scripts that mention BatchNorm, in the order given
    sharded: bool  # a world size was given and a script may split batches over devices (DS802 applies)
    problems: list[Finding]  # named scripts that cannot be read
    unreadable: list[tuple[str, str]]  # (path, why) for walked scripts that cannot be opened (DS008)
    trainers: list[tuple[str, str]] = []  # (path, text) of the scripts that may build a Trainer(devices=...)

    def all_sources(self) -> list[Source]:
        return list(self.project.sources.values()) + self.project.loaded()


def read_scripts(paths: list[str], sources: dict | None, max_bytes: int | None, is_named: Callable[[str], bool],
                 boundary: Boundary, world_sizes: bool, steps: bool = True) -> Scripts:
    """`world_sizes`: whether a world size was given (DS802 needs one; without it literal batch sizes
    are not worth reading); `steps`: whether a dataset size was given (the steps table)."""
    from .. import files

    limit = max_bytes or files.MAX_BYTES
    entries: dict[str, Source] = {}
    checks: dict[str, frozenset[str]] = {}  # real path -> the DS8xx checks that can start there
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
                data = files.read_bytes(path, limit, real=real)
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
    local = _module_names(real for _, real, _, _ in texts)
    batchnorm = []
    trainers = [(path, text) for path, _, text, _ in texts if "Trainer(" in text and "devices" in text]
    for path, real, text, named in texts:
        if "BatchNorm" in text:
            batchnorm.append(real)
        if named:  # parsed now: a named script Python cannot parse is reported
            try:
                entries[real] = Source(path, text, parse(text, path), real)
                checks[real] = ALL
            except Unreadable as error:
                problems.append(_placed(Finding(PARSE_ERROR, error.message, fails_in=LOAD), path, error.line,
                                        error.column))
            continue
        found = starts(text, sharded, loaders, steps, local)
        if found:  # parsed when a check asks (DS800 first looks for a loader among its imports)
            entries[real] = Source(path, text, real=real)
            checks[real] = found
        else:
            pending[real] = (path, text)
    roots = tuple(dict.fromkeys(root if os.path.isdir(root) else os.path.dirname(root) for root in boundary.roots))
    allowed = Boundary(roots)

    def load(real: str) -> Source | None:
        """A module a script imports: a walked script not parsed yet, or a file inside the boundary."""
        try:
            if real in pending:  # parsed when a check asks for more than its imports
                path, text = pending.pop(real)
                return Source(path, text, real=real)
            if not allowed.admits(real) or special(real) is not None:
                return None
            root = next(root for root in roots if inside(real, root))  # a named script's folder, say
            text = decode_source(files.read_bytes(real, limit, beside=root))
            return Source(os.path.relpath(real) if not os.path.isabs(paths[0]) else real, text, real=real)
        except (files.FileError, Unreadable):
            return None

    return Scripts(Project(entries, load, roots), list(entries.values()), checks, batchnorm, sharded, problems,
                   unreadable, trainers)


def _module_names(reals) -> frozenset[str]:
    """What `import name` may find among the run's scripts: their stems and the names of their folders."""
    names = set()
    for real in reals:
        folder, name = os.path.split(real)
        names.add(name[:-3] if name.endswith(".py") else name)
        names.update(part for part in folder.split(os.sep) if part)
    return frozenset(names)


def _placed(finding: Finding, path: str, line: int = 1, column: int = 1) -> Finding:
    finding.file, finding.line, finding.column = path, line, column
    return finding


def _size(error) -> str:
    from ..files import format_size
    return format_size(error.size) if error.size is not None else f"more than {format_size(error.limit)}"
