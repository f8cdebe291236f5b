"""Where a project pins deepspeed (or another package: transformers), file by file: `pins_in(folder)` lists
the pins a folder's files hold.

Requirements files (`requirements*.txt`, `requirements/*.txt`, with their `-r`/`-c` includes), uv.lock
and poetry.lock, conda's environment.yml, pyproject.toml (PEP 621, PEP 735 and Poetry tables), setup.cfg
and setup.py. A file's pin is its first requirement on the package. Files are read, never run (setup.py
is parsed with ast), each up to a bounded size, and never a special file (a FIFO would block); a file
that cannot be read holds no pin. Stdlib only: this module is on the lint path.
"""

from __future__ import annotations

import os
import re
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, NamedTuple


if TYPE_CHECKING:  # imported on first use at run time: most runs find the installed deepspeed and read no pin
    from . import specifiers

# Real files are a few KB; requirements with pip-compile's hashes a few hundred, a large project's uv.lock
# a few MB. A lock is searched with one regex; the files parsed with tomllib and ast get the tightest bound.
LINES_BYTES = 1 << 20
PARSED_BYTES = 256 << 10
LOCK_BYTES = 16 << 20
MAX_REQUIREMENT_FILES = 32  # per folder, `-r` includes counted: more than real trees hold, bounded for hostile ones

# The lines of a requirements file that matter: includes, and those naming the package ({name}).
CANDIDATE = r"(?im)^[ \t]*(?:-[rc]|--requirement|--constraint).*|^.*{name}.*"
CONDA = r"(?i)(?:\S+::)?{name}(?![\w.-])(.*)"  # `conda-forge::deepspeed=0.16`
INCLUDE = r"(?:-r|-c|--requirement|--constraint)(?:\s*=\s*|\s+|(?<=[rc]))(\S+)"
# `version` follows `name` in the same [[package]] table (uv.lock, poetry.lock); a few lines at most are
# searched, so a hostile lock costs linear time.
LOCKED = r'(?im)^name\s*=\s*"{name}"\s*\n(?:(?!\[).*\n){{0,8}}?version\s*=\s*"([^"\n]*)"'
POETRY_KEY = r"(?im)^[ \t]*[\"']?{name}[\"']?[ \t]*="
DEEPSPEED = "deepspeed"


class Pin(NamedTuple):
    spec: str  # as written, for the reason: "deepspeed>=0.10.0,<=0.18.4"
    constraint: specifiers.Constraint
    file: str
    line: int
    rank: int  # 0 locked, 1 constrained, 2 any version


class Search(NamedTuple):
    seen: set  # requirement files read, shared by the `-r` includes
    ceiling: str | None  # the project folder every file read must lie in (dsconfig.boundary.project_ceiling)
    package: str = DEEPSPEED  # the distribution's name, lower case

    def pattern(self, template: str) -> str:
        return template.format(name=re.escape(self.package))


def pins_in(folder: str, ceiling: str | None = None, package: str = DEEPSPEED) -> list[Pin]:
    """The pins of `package` in the folder's files, in `READERS` order; no file is read outside `ceiling`
    (default: the folder's project ceiling), whatever a link or a `-r` include says."""
    if ceiling is None:
        from ..boundary import project_ceiling
        ceiling = project_ceiling(folder)
    listings: dict[str, list[str]] = {}
    search = Search(set(), ceiling, package)
    pins: list[Pin] = []
    for pattern, reader in READERS:
        place, _, name_pattern = pattern.rpartition("/")
        place = os.path.join(folder, place)
        if place not in listings:
            listings[place] = listing(place)
        for name in listings[place]:
            if fnmatchcase(name, name_pattern):
                pins += reader(os.path.join(place, name), search)
    return pins


def listing(folder: str) -> list[str]:
    from ..boundary import observe
    observe(folder)  # a pin file added here changes the release a rerun replays
    try:
        return sorted(os.listdir(folder))
    except OSError:
        return []


def _pin(spec: str, constraint: specifiers.Constraint | None, path: str, line: int, locked: bool = False) -> list[Pin]:
    from . import specifiers
    if constraint is None:
        return []
    relative = os.path.relpath(path)  # shown as the other messages show paths
    rank = 0 if locked else 2 if constraint == specifiers.ANY else 1
    return [Pin(cut(without_credentials(spec)), constraint, path if relative.startswith("..") else relative, line,
                rank)]


def without_credentials(spec: str) -> str:
    """A requirement as shown: the user and password of a URL in it (`git+https://token@host/...`) left out."""
    return re.sub(r"(?i)(\b[a-z][a-z0-9+.-]*://)[^/@\s]*@", r"\1***@", spec)


def _requirement(text: str, path: str, line: int, package: str = DEEPSPEED) -> list[Pin]:
    from . import specifiers
    found = specifiers.requirement(text, package)
    return _pin(found[0], found[1], path, line) if found else []


def cut(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def read_text(path: str, limit: int = LINES_BYTES, *, ceiling: str | None = None,
              environment: bool = False) -> str | None:
    """The file's text; None when it is missing, refused by the reading boundary (a FIFO would block; a
    `-r` include out of the project is not followed), too large or not text. `environment`: a file of the
    Python installation (the installed deepspeed's metadata) rather than of the project."""
    from .. import files
    try:
        data = files.read_bytes(path, limit, metadata=ceiling, environment=environment)
        codec = "utf-16" if data[:2] in (b"\xff\xfe", b"\xfe\xff") else "utf-8-sig"  # PowerShell writes UTF-16
        return data.decode(codec)
    except (files.FileError, UnicodeDecodeError):
        return None


# -- readers: each takes a path and the requirement files read so far, and returns the file's pin, if any -----

def _requirements(path: str, search: Search) -> list[Pin]:
    path = os.path.abspath(path)  # not realpath: a system call per `-r` line costs seconds on 200,000 of them
    if len(search.seen) >= MAX_REQUIREMENT_FILES or path in search.seen:
        return []  # too many files, or read already (an include cycle)
    search.seen.add(path)
    text = read_text(path, ceiling=search.ceiling) or ""
    number, position = 1, 0
    for candidate in re.finditer(search.pattern(CANDIDATE), text):
        number, position = number + text.count("\n", position, candidate.start()), candidate.start()
        line = re.split(r"(?:^|\s)#", candidate.group())[0].strip().rstrip("\\")
        include = re.fullmatch(INCLUDE, line)
        if include:  # pip reads an included file relative to the including one
            pins = _requirements(os.path.join(os.path.dirname(path), include.group(1)), search)
        else:
            pins = _requirement(re.split(r"\s-", line)[0], path, number, search.package)  # before ` --hash=...`
        if pins:
            return pins
    return []


def _locked(path: str, search: Search) -> list[Pin]:
    from . import specifiers
    text = read_text(path, LOCK_BYTES, ceiling=search.ceiling) or ""
    match = re.search(search.pattern(LOCKED), text) if search.package in text.lower() else None
    if match is None:
        return []
    line = text.count("\n", 0, match.start(1)) + 1
    return _pin(f"{search.package} {match.group(1)}", specifiers.exact(match.group(1)), path, line, locked=True)


def _environment(path: str, search: Search) -> list[Pin]:
    """conda's `dependencies:` and the `pip:` list inside it, read by lines."""
    from . import specifiers
    text = read_text(path, ceiling=search.ceiling) or ""
    pip_indent = None  # the indent of `- pip:` while in its list
    for number, line in enumerate(text.splitlines() if search.package in text.lower() else (), 1):
        line = re.split(r"(?:^|\s)#", line)[0].rstrip()
        indent = len(line) - len(line.lstrip())
        if pip_indent is not None and line and indent <= pip_indent:
            pip_indent = None
        item = re.match(r"\s*-\s*['\"]?([^'\"]*)", line)
        entry = item.group(1).strip() if item else ""
        if re.fullmatch(r"pip\s*:", entry):
            pip_indent = indent
            continue
        conda = re.fullmatch(search.pattern(CONDA), entry) if pip_indent is None else None
        pins = (_pin(entry, specifiers.conda(conda.group(1)), path, number) if conda
                else _requirement(entry, path, number, search.package) if pip_indent is not None else [])
        if pins:
            return pins
    return []


def _pyproject(path: str, search: Search) -> list[Pin]:
    """[project] dependencies and optional-dependencies, [dependency-groups], Poetry's dependency tables."""
    from . import specifiers
    text = read_text(path, PARSED_BYTES, ceiling=search.ceiling) or ""
    if search.package not in text.lower():
        return []
    import tomllib
    try:
        data = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError):
        return []
    project, poetry = _table(data, "project"), _table(_table(data, "tool"), "poetry")
    lists = [project.get("dependencies"), *_table(project, "optional-dependencies").values(),
             *_table(data, "dependency-groups").values()]
    for item in (item for items in lists if isinstance(items, list) for item in items if isinstance(item, str)):
        if search.package in item.lower() and (pins := _requirement(item, path, _line_of(text, text.find(item), search),
                                                                     search.package)):
            return pins
    tables = [poetry.get("dependencies"), poetry.get("dev-dependencies"),
              *(_table(group, "dependencies") for group in _table(poetry, "group").values())]
    for table in tables:
        for name, value in (table.items() if isinstance(table, dict) else ()):
            if name.lower() == search.package:  # "^0.16", {version = "^0.16"}, or a list of those with markers
                values = [item.get("version", "*") if isinstance(item, dict) else item
                          for item in (value if isinstance(value, list) else [value])]
                parsed = [specifiers.poetry(item) if isinstance(item, str) else None for item in values]
                if values and None not in parsed:
                    spec, found = f"{name} = {' || '.join(values)}", re.search(search.pattern(POETRY_KEY), text)
                    return _pin(spec, tuple(terms for constraint in parsed for terms in constraint), path,
                                _line_of(text, found.start() if found else -1, search))
    return []


def _table(data, name: str) -> dict:
    value = data.get(name) if isinstance(data, dict) else None
    return value if isinstance(value, dict) else {}


def _line_of(text: str, index: int, search: Search) -> int:
    """The line of `index` in the text; for -1 (not found: written with escapes), of the package's first mention."""
    index = index if index >= 0 else text.lower().find(search.package)
    return text.count("\n", 0, max(index, 0)) + 1


def _setup_cfg(path: str, search: Search) -> list[Pin]:
    """`install_requires` in [options] and every entry of [options.extras_require], read by lines."""
    text = read_text(path, ceiling=search.ceiling) or ""
    section, option = "", ""
    for number, line in enumerate(text.splitlines() if search.package in text.lower() else (), 1):
        stripped = line.strip()
        if not stripped or stripped[0] in "#;":
            continue
        if stripped.startswith("["):
            section, option = stripped.strip("[] ").lower(), ""
            continue
        assignment = re.match(r"([^=:]+)[=:](.*)", line) if not line[0].isspace() else None
        if assignment:  # `key = value`; an indented line continues the value
            option, stripped = assignment.group(1).strip().lower(), assignment.group(2)
        in_requirements = (section, option) == ("options", "install_requires") or section == "options.extras_require"
        if in_requirements and (pins := _requirement(stripped, path, number, search.package)):
            return pins
    return []


def _setup_py(path: str, search: Search) -> list[Pin]:
    """A literal `install_requires=[...]` or `extras_require={...}`, or a module-level name bound to one."""
    text = read_text(path, PARSED_BYTES, ceiling=search.ceiling) or ""
    if search.package not in text.lower():
        return []
    import ast
    import warnings
    try:
        with warnings.catch_warnings():  # the compiler's SyntaxWarnings are the file's business
            warnings.simplefilter("ignore")
            tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    names = {target.id: node.value for node in tree.body if isinstance(node, ast.Assign)
             for target in node.targets if isinstance(target, ast.Name)}
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg in ("install_requires", "extras_require"):
            value = names.get(node.value.id) if isinstance(node.value, ast.Name) else node.value
            for item in _strings(value, ast):
                if pins := _requirement(item.value, path, item.lineno, search.package):
                    return pins
    return []


def _strings(node, ast) -> list:
    """The string constants of a literal list, tuple or set, or of a dict's values (extras_require)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node]
    items = node.values if isinstance(node, ast.Dict) else getattr(node, "elts", [])
    return [found for item in items for found in _strings(item, ast)]


READERS = (("uv.lock", _locked), ("poetry.lock", _locked), ("requirements*.txt", _requirements),
           ("requirements/*.txt", _requirements), ("environment.yml", _environment),
           ("environment.yaml", _environment), ("pyproject.toml", _pyproject), ("setup.cfg", _setup_cfg),
           ("setup.py", _setup_py))
