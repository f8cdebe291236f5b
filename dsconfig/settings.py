"""Configuration: `[tool.dsconfig]` in pyproject.toml, or the top level of `.dsconfig.toml`.

Found by walking up from the working directory (a `.dsconfig.toml` wins over a pyproject.toml in
the same folder; a pyproject.toml without a `tool.dsconfig` table is passed over), stopping at the
repository root; outside a repository only the working directory is looked in. `--config PATH`
names the file, `--no-config` ignores any. Command-line flags override what the file says. The file
is read through the reading boundary (dsconfig.boundary): never through a link out of the project
or into /proc, and its `allow-read` is not honoured (the settings come with the repository linted).

```toml
[tool.dsconfig]
target = "hf-trainer"                 # deepspeed | hf-trainer | accelerate | lightning
world-sizes = [8, 16]                 # check the batch arithmetic at these world sizes
deepspeed-version = "0.16.9"          # the release to replay (default: installed, else a pin, else the newest)
framework = "lightning"               # lightning | torchrun | accelerate | hf-trainer | deepspeed | jax
batchnorm = true                      # the model has BatchNorm layers: one sample per device is an error
select = ["DS", "ACC"]                # codes, prefixes (DS2, ACC) or rule names (batch-mismatch)
ignore = ["DS509"]
fail-on = "warning"                   # error (default) | warning | info
show-info = true                      # report informational findings (default: counted, not listed)
exclude = ["legacy/", "**/generated/*.json"]   # gitignore-style, relative to this file's folder
allow-read = ["../shared-configs"]    # not honoured: only --allow-read on the command line widens what is read

[tool.dsconfig.batch-keys]            # a training config's batch keys: per device or global
"/data/train_bs" = "per-device"       # a JSON pointer, or data.train_bs

[tool.dsconfig.per-file-ignores]      # glob -> selectors
"configs/old/*.json" = ["DS104"]

[[tool.dsconfig.suppress]]            # JSON has no comments: suppress by JSON pointer
files = "configs/ds_z3_offload.json"
pointer = "/zero_optimization/offload_param"   # covers this value and everything below it
rules = ["DS301"]
reason = "measured: the NVMe path is faster on our nodes"   # required
```

A per-file-ignores entry or a suppression that suppresses nothing is reported as DS900
(unused-suppression) at its line in this file. Anything else wrong with the file (an unknown key,
a wrong type, a missing reason, an unknown rule) is a usage error: exit 2 with a one-line message.

tomllib is imported only when a configuration file exists, so a project without one pays nothing.
"""

from __future__ import annotations

import os
import re
from typing import NamedTuple

from . import targets

CONFIG_NAME = ".dsconfig.toml"
PYPROJECT = "pyproject.toml"
SEVERITY_NAMES = ("error", "warning", "info")
KEYS = ("target", "world-sizes", "deepspeed-version", "framework", "batchnorm", "batch-keys", "select", "ignore", "fail-on", "show-info", "exclude", "allow-read", "per-file-ignores",
        "suppress")
SUPPRESS_KEYS = ("files", "pointer", "rules", "reason")


class ConfigError(Exception):
    """The configuration file is unreadable or wrong: exit code 2."""


class PerFileIgnore(NamedTuple):
    pattern: str
    selectors: tuple[str, ...]
    line: int
    column: int


class Suppression(NamedTuple):
    files: str
    pointer: str
    rules: tuple[str, ...]
    reason: str
    line: int
    column: int


class Settings:
    """What the configuration file says; every field None/empty when there is no file."""

    def __init__(self, path: str | None = None, root: str | None = None):
        self.path = path  # the configuration file, or None
        self.root = root or os.getcwd()  # the folder its globs are relative to
        self.text = ""  # its text (DS900 frames)
        self.target: targets.Target | None = None
        self.world_sizes: tuple[int, ...] | None = None
        self.deepspeed_version: str | None = None  # as written; checked when the version is chosen
        self.framework: str | None = None
        self.batchnorm: bool = False
        self.batch_keys: tuple[tuple[str, str], ...] = ()  # (JSON pointer, per-device | global)
        self.select: tuple[str, ...] | None = None
        self.ignore: tuple[str, ...] = ()
        self.fail_on: str | None = None
        self.show_info: bool = False
        self.exclude: tuple[str, ...] = ()
        self.allow_read: tuple[str, ...] = ()  # absolute paths
        self.per_file_ignores: list[PerFileIgnore] = []
        self.suppress: list[Suppression] = []

    @property
    def display_path(self) -> str:
        if self.path is None:
            return ""
        rel = os.path.relpath(self.path)
        return self.path if rel.startswith("..") else rel


def discover(start: str | None = None) -> str | None:
    """The nearest configuration file from `start` (default: the working directory) up to the project's
    ceiling: the repository root, or without one the working directory itself (dsconfig.boundary), so that
    a stray pyproject.toml above an unversioned tree never decides what is linted in it."""
    from .boundary import folders_up_to_ceiling, observe
    for folder in folders_up_to_ceiling(start):
        candidate = os.path.join(folder, CONFIG_NAME)
        observe(candidate)  # one that appears here later changes what a rerun reads
        if os.path.lexists(candidate):
            return candidate
        candidate = os.path.join(folder, PYPROJECT)
        observe(candidate)
        if os.path.lexists(candidate) and _mentions_tool_table(candidate):
            return candidate
    return None


def _mentions_tool_table(path: str) -> bool:
    """Whether the pyproject.toml has a `tool.dsconfig` table, however it is written (`[tool.dsconfig]`,
    `tool.dsconfig.ignore = [...]`, `[tool]` with `dsconfig = {...}`). One that cannot be read or parsed but
    mentions dsconfig is chosen, so that `load` says what is wrong with it rather than passing it over."""
    data = _read(path, prefix=True)
    if b"dsconfig" not in data:
        return False
    from .files import MAX_BYTES
    if len(data) > MAX_BYTES:
        return True  # too large to be read: load() says so
    try:
        parsed = _parse_toml(data)
    except ConfigError:
        return True
    tool = parsed.get("tool")
    return isinstance(tool, dict) and "dsconfig" in tool


def _read(path: str, prefix: bool = False) -> bytes:
    """The settings file's bytes, through the reading boundary: a discovered file is project metadata (read
    up to the project's ceiling, never through a link out of it or into /proc); `--config` names its own."""
    from . import files
    from .boundary import project_ceiling
    try:
        return files.read_bytes(path, files.MAX_BYTES, metadata=project_ceiling(), prefix=prefix)
    except files.TooLarge:
        raise ConfigError(f"{_shown(path)}: is larger than {files.format_size(files.MAX_BYTES)}, more than any "
                          "configuration file holds; not read") from None
    except files.FileError as error:
        raise ConfigError(_relative_message(path, str(error))) from None


def _relative_message(path: str, message: str) -> str:
    return _shown(path) + message[len(path):] if message.startswith(path) else message


def _parse_toml(data: bytes) -> dict:
    import tomllib
    try:
        return tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise ConfigError("not UTF-8 text") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"invalid TOML: {error}") from None
    except (ValueError, RecursionError) as error:  # an integer past 4,300 digits; nesting past the stack
        raise ConfigError(f"invalid TOML: {str(error).split(';')[0]}") from None


def resolve(config: str | None = None, no_config: bool = False) -> Settings:
    """Settings from `--config`, else the discovered file, else defaults (no file read, no tomllib)."""
    if no_config:
        return Settings()
    path = config if config is not None else discover()
    if path is None:
        return Settings()
    if not os.path.lexists(path):
        raise ConfigError(f"{path}: no such configuration file")
    return load(path)


def load(path: str) -> Settings:
    shown = _shown(path)
    raw = _read(path)
    try:
        data = _parse_toml(raw)
    except ConfigError as error:
        raise ConfigError(f"{shown}: {error}") from None
    text = raw.decode("utf-8")

    is_pyproject = os.path.basename(path) == PYPROJECT
    if is_pyproject:
        tool = data.get("tool", {})
        table = tool.get("dsconfig") if isinstance(tool, dict) else None
        if table is None:
            table = {}
        where = f"{shown}: [tool.dsconfig]"
    else:
        table = data
        where = shown
    if not isinstance(table, dict):
        raise ConfigError(f"{where} must be a table")
    settings = Settings(os.path.abspath(path), os.path.dirname(os.path.abspath(path)))
    settings.text = text.replace("\r\n", "\n").replace("\r", "\n")
    _fill(settings, table, where, "tool.dsconfig." if is_pyproject else "")
    return settings


def _shown(path: str) -> str:
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


def _did_you_mean(word: str, choices) -> str:
    from .values import closest
    match = closest(word, choices, 0.6)
    return f"; did you mean `{match}`?" if match else ""


def _fill(settings: Settings, table: dict, where: str, prefix: str) -> None:
    from .suppress import UnknownSelector, check_selectors

    for key in table:
        if key not in KEYS:
            raise ConfigError(f"{where}: unknown key `{key}`{_did_you_mean(key, KEYS)} "
                              f"(known keys: {', '.join(KEYS)})")

    def strings(key, value, context=None):
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise ConfigError(f"{where}: `{context or key}` must be a list of strings")
        return tuple(value)

    def selectors(key, value, context=None):
        items = strings(key, value, context)
        try:
            check_selectors(items)
        except UnknownSelector as error:
            raise ConfigError(f"{where}: `{context or key}`: {error}") from None
        return items

    if "target" in table:
        target = table["target"]
        if target not in targets.NAMES:
            raise ConfigError(f"{where}: `target` must be one of {', '.join(targets.NAMES)}, not {target!r}"
                              f"{_did_you_mean(str(target), targets.NAMES)}")
        settings.target = targets.BY_NAME[target]
    if "world-sizes" in table:
        sizes = table["world-sizes"]
        if isinstance(sizes, int) and not isinstance(sizes, bool):
            sizes = [sizes]
        if not isinstance(sizes, list) or not sizes or not all(
                isinstance(s, int) and not isinstance(s, bool) and s > 0 for s in sizes):
            raise ConfigError(f"{where}: `world-sizes` must be a list of positive integers, e.g. [1, 2, 4, 8]")
        settings.world_sizes = tuple(dict.fromkeys(sizes))
    if "deepspeed-version" in table:
        if not isinstance(table["deepspeed-version"], str):
            raise ConfigError(f'{where}: `deepspeed-version` must be a string such as "0.16.9"')
        settings.deepspeed_version = table["deepspeed-version"]
    if "framework" in table:
        from .training.epochs import FRAMEWORKS
        if table["framework"] not in FRAMEWORKS:
            raise ConfigError(f"{where}: `framework` must be one of {', '.join(FRAMEWORKS)}, not "
                              f"{table['framework']!r}{_did_you_mean(str(table['framework']), FRAMEWORKS)}")
        settings.framework = table["framework"]
    if "batchnorm" in table:
        if not isinstance(table["batchnorm"], bool):
            raise ConfigError(f"{where}: `batchnorm` must be true or false")
        settings.batchnorm = table["batchnorm"]
    if "batch-keys" in table:
        from .training.names import parse_batch_key
        keys = table["batch-keys"]
        if not isinstance(keys, dict) or not all(isinstance(v, str) for v in keys.values()):
            raise ConfigError(f'{where}: `batch-keys` must be a table of "POINTER" = "per-device" | "global"')
        try:
            settings.batch_keys = tuple(parse_batch_key(f"{key}={kind}") for key, kind in keys.items())
        except ValueError as error:
            raise ConfigError(f"{where}: `batch-keys`: {error}") from None
    if "select" in table:
        settings.select = selectors("select", table["select"])
    if "ignore" in table:
        settings.ignore = selectors("ignore", table["ignore"])
    if "fail-on" in table:
        fail_on = table["fail-on"]
        if fail_on not in SEVERITY_NAMES:
            raise ConfigError(f"{where}: `fail-on` must be error, warning or info, not {fail_on!r}")
        settings.fail_on = fail_on
    if "show-info" in table:
        if not isinstance(table["show-info"], bool):
            raise ConfigError(f"{where}: `show-info` must be true or false")
        settings.show_info = table["show-info"]

    def glob(pattern: str, label: str, position: tuple[int, int]) -> None:
        """A pattern git would not match as written is a usage error, not a glob that silently matches nothing."""
        from .pathmatch import problem
        why = problem(pattern)
        if why:
            import json
            table_name = " [tool.dsconfig]" if prefix else ""
            raise ConfigError(f"{settings.display_path}:{position[0]}:{position[1]}:{table_name} {label}: "
                              f"{json.dumps(pattern, ensure_ascii=False)}: {why}")

    if "exclude" in table:
        settings.exclude = strings("exclude", table["exclude"])
        for pattern in settings.exclude:
            glob(pattern, "`exclude`", _item_line(settings.text, prefix.rstrip("."), "exclude", pattern))
    if "allow-read" in table:
        allowed = strings("allow-read", table["allow-read"])
        settings.allow_read = tuple(os.path.join(settings.root, path) for path in allowed)

    if "per-file-ignores" in table:
        pfi = table["per-file-ignores"]
        if not isinstance(pfi, dict):
            raise ConfigError(f"{where}: `per-file-ignores` must be a table of glob = [selectors]")
        for pattern, value in pfi.items():
            items = selectors("per-file-ignores", value, f"per-file-ignores.{_toml_key(pattern)}")
            line, column = _key_line(settings.text, prefix + "per-file-ignores", pattern)
            glob(pattern, "`per-file-ignores`", (line, column))
            settings.per_file_ignores.append(PerFileIgnore(pattern, items, line, column))

    if "suppress" in table:
        entries = table["suppress"]
        if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
            raise ConfigError(f"{where}: `suppress` must be an array of tables ([[{prefix}suppress]])")
        lines = _entry_lines(settings.text, prefix + "suppress", len(entries))
        for number, entry in enumerate(entries, 1):
            context = f"suppress entry {number}"
            for key in entry:
                if key not in SUPPRESS_KEYS:
                    raise ConfigError(f"{where}: {context}: unknown key `{key}`{_did_you_mean(key, SUPPRESS_KEYS)} "
                                      f"(known keys: {', '.join(SUPPRESS_KEYS)})")
            files = entry.get("files")
            if not isinstance(files, str) or not files:
                raise ConfigError(f"{where}: {context}: `files` (a glob) is required")
            pointer = entry.get("pointer", "")
            if not isinstance(pointer, str) or (pointer and not pointer.startswith("/")):
                raise ConfigError(f"{where}: {context}: `pointer` must be a JSON pointer such as "
                                  f"\"/zero_optimization/offload_param\" (or \"\" for the whole file)")
            if "rules" not in entry:
                raise ConfigError(f"{where}: {context}: `rules` (the codes it suppresses) is required")
            rules = selectors("rules", entry["rules"], f"{context}: rules")
            if not rules:
                raise ConfigError(f"{where}: {context}: `rules` must name at least one rule")
            reason = entry.get("reason")
            if not isinstance(reason, str) or not reason.strip():
                raise ConfigError(f"{where}: {context}: `reason` is required: say why the finding does not apply")
            line, column = lines[number - 1]
            glob(files, f"{context}: `files`", (line, column))
            settings.suppress.append(Suppression(files, pointer, rules, reason.strip(), line, column))


# -- where an entry sits in the file (tomllib keeps no positions) -------------------------------------------

_HEADER = re.compile(r"^[ \t]*(\[\[?)[ \t]*([^\]#]+?)[ \t]*\]\]?[ \t]*(?:#.*)?$")


def _normal_table_name(name: str) -> str:
    parts = [p.strip().strip('"').strip("'") for p in name.split(".")]
    return ".".join(parts)


def _entry_lines(text: str, table: str, count: int) -> list[tuple[int, int]]:
    """(line, column) of each `[[table]]` header; the `suppress =` line for an inline array."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        match = _HEADER.match(line)
        if match and match.group(1) == "[[" and _normal_table_name(match.group(2)) == table:
            found.append((number, line.index("[") + 1))
    if len(found) == count:
        return found
    fallback = _key_line(text, table.rsplit(".", 1)[0] if "." in table else "", table.rsplit(".", 1)[-1])
    return [fallback] * count


def _item_line(text: str, table: str, key: str, item: str) -> tuple[int, int]:
    """(line, column) of the string `item` in the array `key = [...]` of `table`; else of the key."""
    line, column = _key_line(text, table, key)
    spellings = ('"' + item.replace("\\", "\\\\").replace('"', '\\"') + '"', "'" + item + "'")
    lines = text.splitlines()
    for number in range(line, len(lines) + 1):
        if number > line and _HEADER.match(lines[number - 1]):
            break
        after = column - 1 if number == line else 0
        found = [at for spelling in spellings if (at := lines[number - 1].find(spelling, after)) >= 0]
        if found:
            return number, min(found) + 1
    return line, column


def _toml_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else '"' + key.replace('"', '\\"') + '"'


def _key_line(text: str, table: str, key: str) -> tuple[int, int]:
    """(line, column) of `key =` inside `[table]`; for an inline table (`name = { ... }`), of `key =` after
    the line that opens it; else the table's header, else the first line naming the table, else 1:1."""
    lines = text.splitlines()
    spellings = {re.escape(key), re.escape('"' + key.replace("\\", "\\\\").replace('"', '\\"') + '"'),
                 re.escape("'" + key + "'")}
    key_re = re.compile(r"(?:^|[{,\s])(" + "|".join(spellings) + r")[ \t]*=")
    current = ""
    header_at = None
    for number, line in enumerate(lines, 1):
        match = _HEADER.match(line)
        if match:
            current = _normal_table_name(match.group(2))
            if current == table and header_at is None:
                header_at = (number, line.index("[") + 1)
            continue
        if current == table and (hit := key_re.search(line)):
            return number, hit.start(1) + 1
    if header_at is not None:
        return header_at
    name = table.rsplit(".", 1)[-1]
    opener = re.compile(r"(?:^|[\s.{,])" + re.escape(name) + r"[ \t]*[=.]")
    for number, line in enumerate(lines, 1):
        if opener.search(line) and not _HEADER.match(line):
            for later in range(number, len(lines) + 1):
                text_line = lines[later - 1]
                if later > number and _HEADER.match(text_line):
                    break
                segment = text_line[opener.search(text_line).end():] if later == number else text_line
                offset = len(text_line) - len(segment)
                if (hit := key_re.search(segment)):
                    return later, offset + hit.start(1) + 1
            return number, line.index(name) + 1
    return 1, 1
