"""The generated DeepSpeed JSON Schema of the release being replayed, plus the lookups the validator needs.

schemas/deepspeed.schema.json is produced by scripts/build_schema.py from the newest release's
models; it is the single source of truth for keys, types, defaults, aliases and deprecations. An
older release's schema is that one patched with the release's generated differences
(`releases.patched`); `use(version)` chooses the release every lookup answers for.
Stdlib only: this module is on the lint path.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

from ..pointers import pointer_join, pointer_tokens
from . import releases

if TYPE_CHECKING:
    from pathlib import Path

SCHEMA_FILE = "deepspeed.schema.json"


def schema_path() -> Path:
    return releases.data_path(SCHEMA_FILE)


@lru_cache(maxsize=1)
def load() -> dict:
    """The newest release's schema, as written in deepspeed.schema.json."""
    from .. import package_data
    return package_data.schema_json(SCHEMA_FILE)


_active = releases.NEWEST


def use(version: str) -> None:
    """Answer for DeepSpeed `version` from now on (one of releases.SUPPORTED)."""
    global _active
    _of_release(version)  # an unknown release fails here, not in the middle of a lint
    _active = version


def active() -> str:
    return _active


@lru_cache(maxsize=None)
def _of_release(version: str) -> dict:
    return load() if version == releases.NEWEST else releases.patched(load(), version)


def root() -> dict:
    return _of_release(_active)


def facts() -> dict:
    """The probed behaviour of the active release (scripts/release_probe.py)."""
    return releases.facts(_active)


def property_of(obj: dict, key: str) -> dict | None:
    """The schema of `key` inside an object schema (looking through anyOf branches)."""
    branch = object_branch(obj)
    if branch is None:
        return None
    return branch.get("properties", {}).get(key)


def object_branch(node: dict) -> dict | None:
    """The part of a property schema that describes an object with properties."""
    if not isinstance(node, dict):
        return None
    if "properties" in node or "x-deepspeed-model" in node:
        return node
    for branch in node.get("anyOf", ()):
        if isinstance(branch, dict) and ("properties" in branch or "x-deepspeed-model" in branch):
            return branch
    return None


def model_branch(node: dict) -> dict | None:
    """The pydantic model schema inside a property schema, or None for loose sections."""
    branch = object_branch(node)
    if branch is not None and "x-deepspeed-model" in branch:
        return branch
    return None


def model_name(model: dict) -> str:
    return model["x-deepspeed-model"]["class"].rsplit(".", 1)[-1]


def removed_message(obj: dict, key: str) -> str | None:
    prop = property_of(obj, key)
    return prop.get("x-deepspeed-removed") if prop else None


def known_keys(obj: dict) -> list[str]:
    """Keys a user may write in this object (removed ones excluded). Schema nodes live as long as the process,
    so the answer is kept per node: it is asked once per unknown key."""
    found = _KNOWN_KEYS.get(id(obj))
    if found is None or found[0] is not obj:
        branch = object_branch(obj) or {}
        found = _KNOWN_KEYS[id(obj)] = (obj, [k for k, v in branch.get("properties", {}).items()
                                              if "x-deepspeed-removed" not in v])
    return list(found[1])


_KNOWN_KEYS: dict[int, tuple[dict, list[str]]] = {}


def accepted_kinds(prop: dict) -> tuple[set[str], list] | None:
    """JSON types a loose property accepts (+ allowed constants), or None when it takes anything."""
    kinds: set[str] = set()
    consts: list = []
    open_ended = _collect(prop, kinds, consts)
    if open_ended or (not kinds and not consts):
        return None
    return kinds, consts


def _collect(node: dict, kinds: set, consts: list) -> bool:
    """Gather type names and constants; True when some branch accepts anything."""
    typed = False
    kind = node.get("type")
    if isinstance(kind, str):
        kinds.add(kind)
        typed = True
    elif isinstance(kind, list):
        kinds.update(kind)
        typed = True
    if "const" in node:
        consts.append(node["const"])
        typed = True
    if "enum" in node and not typed:
        consts.extend(node["enum"])
        typed = True
    branches = node.get("anyOf")
    if branches:
        open_ended = [_collect(b, kinds, consts) for b in branches]  # visit every branch
        return any(open_ended)
    return not typed and "not" not in node


# -- lookups by JSON pointer -----------------------------------------------------------------------


def property_at(pointer: str) -> dict | None:
    """The schema of the value at `pointer` (None for keys the schema does not know)."""
    return _property_in(root(), pointer)


def fill_targets(pointer: str) -> frozenset:
    """Names of the targets that replace an "auto" at `pointer` before DeepSpeed sees it."""
    prop = property_at(pointer)
    return frozenset(prop.get("x-dsconfig-fill", ())) if prop else frozenset()


def fill_pointers() -> tuple[tuple[str, frozenset], ...]:
    """(pointer, target names) for every value the HF Trainer or Accelerate may fill."""
    return _fill_pointers(_active)


@lru_cache(maxsize=None)
def _fill_pointers(version: str) -> tuple[tuple[str, frozenset], ...]:
    found = []
    stack = [("", root())]
    while stack:
        pointer, node = stack.pop()
        if node.get("x-dsconfig-fill"):
            found.append((pointer, frozenset(node["x-dsconfig-fill"])))
        branch = object_branch(node) or {}
        stack.extend((pointer_join(pointer, key), prop) for key, prop in branch.get("properties", {}).items())
    return tuple(sorted(found))


def default_at(pointer: str):
    """DeepSpeed's default for the value at `pointer` (None when it has none, or the key is unknown)."""
    prop = property_at(pointer)
    return prop.get("default") if prop else None


def removed() -> tuple[tuple[str, str], ...]:
    """(pointer, DeepSpeed's message) for every block the active release refuses to load."""
    return _removed(_active)


def removed_in_newest() -> tuple[tuple[str, str], ...]:
    """(pointer, message) for every block the newest supported release refuses to load."""
    return _removed(releases.NEWEST)


@lru_cache(maxsize=None)
def _removed(version: str) -> tuple[tuple[str, str], ...]:
    found = []
    for parent in ("", "/zero_optimization"):
        node = _property_in(_of_release(version), parent) if parent else _of_release(version)
        branch = object_branch(node) or {}
        for key, prop in branch.get("properties", {}).items():
            if "x-deepspeed-removed" in prop:
                found.append((pointer_join(parent, key), prop["x-deepspeed-removed"]))
    return tuple(found)


@lru_cache(maxsize=None)
def accepted_by(pointer: str) -> list[str]:
    """The supported releases that take the key at `pointer`: they know it, or the section holding it
    ignores keys it does not know (a dict.get section, fp16 before 0.17.1); for messages that say which
    releases accept what the replayed one rejects."""
    return _releases_where(lambda version: _takes(_of_release(version), pointer_tokens(pointer)))


def _releases_where(test) -> list[str]:
    """The supported releases for which test(release) holds, asked once per group that behaves alike."""
    return [version for group in releases.same_behaviour(releases.SUPPORTED) if test(group[-1]) for version in group]


def _takes(node: dict, tokens: list[str]) -> bool:
    for token in tokens[:-1]:
        node = property_of(node, token)
        if node is None:
            return True  # a section this release does not read at all
    prop = property_of(node, tokens[-1]) if tokens else node
    if prop is not None:
        return "x-deepspeed-removed" not in prop and "not" not in prop
    model = (object_branch(node) or {}).get("x-deepspeed-model") or {}
    return model.get("extra") != "forbid"


def _property_in(node: dict, pointer: str) -> dict | None:
    for token in pointer_tokens(pointer):
        node = property_of(node, token)
        if node is None:
            return None
    return node


@lru_cache(maxsize=None)
def not_removed_in(pointer: str) -> list[str]:
    """The supported releases that do not refuse the block at `pointer` by name."""
    return _releases_where(lambda version: pointer not in dict(_removed(version)))


def removed_later(pointer: str) -> tuple[str, str] | None:
    """(the first release that refuses it, its message) for a block the active release still reads but a
    later one removed; None otherwise."""
    return _removed_later(_active).get(pointer)


@lru_cache(maxsize=None)
def _removed_later(active: str) -> dict[str, tuple[str, str]]:
    """pointer -> (the first release after `active` that refuses it, its message), for what `active` reads: asked
    once per unknown top-level key, so a table rather than a walk over the releases each time."""
    read_now = dict(_removed(active))
    table: dict[str, tuple[str, str]] = {}
    for version in releases.SUPPORTED[releases.SUPPORTED.index(active) + 1:]:
        for pointer, message in _removed(version):
            if pointer not in read_now:
                table.setdefault(pointer, (version, message))
    return table


def other_releases_note(pointer: str, removed_block: bool = False) -> str:
    """"; DeepSpeed 0.14.0 to 0.19.6 accept it" (empty when no supported release does)."""
    versions = not_removed_in(pointer) if removed_block else accepted_by(pointer)
    return f"; DeepSpeed {releases.spans(versions)} accept it" if versions else ""


def respelled(pointer: str) -> str | None:
    """The active release's spelling of the key at `pointer` when other releases spell that key this way
    (`seq_parallel_comm_data_type` before 0.16.5, `seq_parallel_communication_data_type` after); None
    otherwise. From the generated x-deepspeed-spelled of every release."""
    tokens = pointer_tokens(pointer)
    path = _spellings().get((tuple(tokens[:-1]), tokens[-1]))
    mine = root().get("x-deepspeed-spelled", {}).get(path) if path else None
    return mine if mine and mine != tokens[-1] else None


@lru_cache(maxsize=1)
def _spellings() -> dict:
    """(parent tokens, a spelling some release uses) -> the key's path in lenient.json."""
    table = {}
    for group in releases.same_behaviour(releases.SUPPORTED):
        for path, spelled in _of_release(group[-1]).get("x-deepspeed-spelled", {}).items():
            if spelled:
                table[tuple(path.split("/")[:-1]), spelled] = path
    return table
