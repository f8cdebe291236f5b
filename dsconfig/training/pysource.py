"""Python training scripts read statically: parsed with `ast`, never imported or executed.

A Project holds the scripts of one lint run. It resolves what a name in a script stands for (a class
or function defined in a linted file, a module of the project, or an outside name such as
`torch.utils.data.DataLoader`), following `import` and `from ... import` between the files the way
Python finds them from the script's folder: a dotted module is looked for next to the importing file
and in the folders above it. A file that was not linted is read only when the lint run's boundary
admits it; nothing outside is ever opened.

Values are inferred just far enough for the rules: whether an expression is an integer literal, a
float (true division, a float literal, arithmetic on one), or unknown, following a name to its
nearest assignment before the use in the same function, then to the module's globals and to the
globals of a module it was imported from.
"""

from __future__ import annotations

import ast
import codecs
import io
import os
import re
import tokenize
from collections.abc import Callable, Iterator
from typing import NamedTuple

from ..document import Document

MAX_DEPTH = 40  # how far a value or a name is followed (assignments, imports, base classes)


class Unreadable(Exception):
    """The file cannot be parsed as Python: (message, line, column)."""

    def __init__(self, message: str, line: int = 1, column: int = 1):
        super().__init__(message)
        self.message, self.line, self.column = message, line, column


# The codings a declared `# coding:` cookie may name: those Python source in the wild is written in, each
# decoded by a C codec in time linear in the file (measured on 256 KiB of text and of random bytes: at most
# ~20 ms, four times the 64 KiB time). Any other coding Python knows is refused, not decoded: punycode's
# decoder is quadratic (seconds per 64 KiB), and idna, utf-7, the *_escape codecs, "undefined" and the
# like are no source text encodings (Python's codecs.lookup names; aliases such as latin-1 or sjis map
# onto them).
SAFE_CODINGS = frozenset({
    "utf-8", "utf-8-sig", "ascii",
    *(f"iso8859-{n}" for n in (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 14, 15, 16)),
    *(f"cp125{n}" for n in range(9)),
    "euc_jp", "shift_jis", "cp932", "gbk", "gb2312", "gb18030", "big5", "cp950", "euc_kr", "cp949",
    "koi8-r", "koi8-u", "koi8-t",
})


def _declared_coding(data: bytes) -> tuple[str, int, int] | None:
    """The coding a cookie names, with its line and column, found where Python looks (PEP 263): the first
    line, else the second when the first is blank or a comment. None without one."""
    lines = data.split(b"\n", 2)[:2]
    if lines and lines[0].startswith(codecs.BOM_UTF8):
        lines[0] = lines[0][len(codecs.BOM_UTF8):]
    for number, line in enumerate(lines, 1):
        try:
            match = tokenize.cookie_re.match(line.decode("utf-8"))
        except UnicodeDecodeError:
            return None  # Python refuses the line: detect_encoding says so
        if match:
            return match.group(1), number, match.start(1) + 1
        if not tokenize.blank_re.match(line):
            return None
    return None


def _safe_coding(name: str) -> bool:
    try:
        return codecs.lookup(name).name in SAFE_CODINGS
    except LookupError:
        return False


def _refused(name: str, line: int = 1, column: int = 1) -> Unreadable:
    return Unreadable(f"declares the coding {name}, which dsconfig does not decode; save the script as UTF-8 "
                      "(or another common source coding such as latin-1, cp1252, shift_jis or gbk) to have it "
                      "checked", line, column)


def decode_source(data: bytes) -> str:
    """The text as Python reads it: the coding cookie or UTF-8 (a BOM skipped), universal newlines.
    A declared coding is decoded only when it is one of SAFE_CODINGS. Raises Unreadable with the position
    of the cookie naming another coding, or of the first undecodable byte."""
    declared = _declared_coding(data)
    if declared is not None and not _safe_coding(declared[0]):
        raise _refused(*declared)
    if declared is None and _utf8_by_default(data):
        encoding = "utf-8"
    else:
        try:
            encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        except SyntaxError as error:
            raise Unreadable(f"cannot be read as Python source: {error.msg}", error.lineno or 1) from None
        if not _safe_coding(encoding):  # a cookie found where _declared_coding did not look: refused all the same
            raise _refused(encoding)
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as error:
        prefix = data[:error.start].decode(encoding, errors="replace")
        line = prefix.count("\n") + 1
        column = len(prefix) - (prefix.rfind("\n") + 1) + 1
        raise Unreadable(f"not {encoding} text (byte 0x{data[error.start]:02x}): Python cannot read it",
                         line, column) from None
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


def _utf8_by_default(data: bytes) -> bool:
    """What tokenize.detect_encoding answers without looking (the walk reads thousands of scripts): with no
    BOM and first two lines of ASCII that hold no cookie, the coding is UTF-8."""
    first = data.find(b"\n")
    second = data.find(b"\n", first + 1) if first >= 0 else -1
    return not data.startswith(codecs.BOM_UTF8) and (data if second < 0 else data[:second]).isascii()


def parse(text: str, path: str) -> ast.Module:
    """The module's AST; Unreadable for a syntax error or a nesting Python itself refuses. The compiler's
    SyntaxWarnings (`1if x`, an invalid escape sequence) are the script's business, not lint output."""
    import warnings
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(text, filename=path)
    except SyntaxError as error:
        line = error.lineno or 1
        column = error.offset or 1
        raise Unreadable(f"Python cannot parse it: {error.msg}", line, max(column, 1)) from None
    except (RecursionError, MemoryError):
        raise Unreadable("nested too deeply for Python to parse") from None
    except ValueError as error:  # a NUL byte
        raise Unreadable(f"Python cannot parse it: {error}") from None


class ScriptDocument(Document):
    """A script's text, for the source frames of `--format full` and SARIF regions (no pointers: findings
    about a script carry their own line and column)."""

    format = "python"

    def __init__(self, path: str, text: str):
        super().__init__(path, text)
        self.kind = "script"

    def extent(self, pointer: str, on_key: bool = False):
        return None


# Import statements read from the text (strings and comments cut first): `import a.b as c, d` and
# `from ..pkg import (x, y as z)`, each on lines of its own
STRINGS_AND_COMMENTS = re.compile(
    r'"""(?:\\.|[^\\])*?"""|\'\'\'(?:\\.|[^\\])*?\'\'\'|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|#[^\n]*',
    re.DOTALL)
_IMPORT_LINE = re.compile(r"^[ \t]*import[ \t]+([^\n;]+)", re.MULTILINE)
_FROM_LINE = re.compile(r"^[ \t]*from[ \t]+(\.*)[ \t]*([\w.]*)[ \t]+import[ \t]*(\([^)]*\)|[^\n;]+)", re.MULTILINE)


def text_imports(text: str) -> set[tuple[int, str]]:
    """(relative level, dotted target) of the imports written on lines of their own, as Source.imports has them."""
    if "import" not in text:
        return set()
    code = STRINGS_AND_COMMENTS.sub(lambda m: "" if m.group(0)[0] == "#" else '""', text).replace("\\\n", " ")
    found = set()
    for match in _IMPORT_LINE.finditer(code):
        for part in match.group(1).split(","):
            words = part.split()
            if len(words) == 3 and words[1] == "as":
                found.add((0, words[0]))
            elif len(words) == 1:
                found.add((0, words[0].split(".")[0]))
    for match in _FROM_LINE.finditer(code):
        level, module = len(match.group(1)), match.group(2)
        for part in match.group(3).strip().strip("()").split(","):
            words = part.split()
            if words and words[0] != "*" and (len(words) == 1 or (len(words) == 3 and words[1] == "as")):
                found.add((level, f"{module}.{words[0]}" if module else words[0]))
    return found


class Source:
    """One script: its text, and once something asks for them its AST, imports, top-level definitions, calls,
    assignments and dict literals (a module only followed through for its imports is never parsed whole)."""

    def __init__(self, path: str, text: str, tree: ast.Module | None = None, real: str | None = None):
        self.path = path  # as given or found (messages)
        self.real = real or os.path.realpath(path)
        self.folder = os.path.dirname(self.real)
        self.text = text
        self._tree = tree
        self._indexed = False

    @property
    def parsed(self) -> bool:
        return self._indexed

    @property
    def tree(self) -> ast.Module:
        self._index()
        return self._tree

    @property
    def imports(self) -> dict[str, tuple[int, str]]:
        """local name -> (relative level, dotted target)"""
        self._index()
        return self._imports

    @property
    def defs(self) -> dict[str, ast.AST]:
        """top-level class and function definitions"""
        self._index()
        return self._defs

    @property
    def parents(self) -> dict[int, ast.AST]:
        """id(node) -> its parent"""
        self._index()
        return self._parents

    @property
    def calls(self) -> list[ast.Call]:
        self._index()
        return self._calls

    @property
    def stores(self) -> list[ast.AST]:
        """assignments and augmented assignments, anywhere"""
        self._index()
        return self._stores

    @property
    def dicts(self) -> list[ast.Dict]:
        self._index()
        return self._dicts

    def import_targets(self) -> list[tuple[int, str]]:
        """(relative level, dotted target) of every import, sorted; read from the text while the file is not
        parsed (what the AST's imports give, unless an import shares its line with other code)."""
        return sorted(set(self._imports.values()) if self._indexed else text_imports(self.text))

    def _index(self) -> None:
        if self._indexed:
            return
        self._indexed = True
        if self._tree is None:
            try:
                self._tree = parse(self.text, self.path)
            except Unreadable:  # an imported file Python cannot parse: nothing in it is followed
                self._tree = ast.Module(body=[], type_ignores=[])
        tree = self._tree
        self._imports: dict[str, tuple[int, str]] = {}
        self._defs: dict[str, ast.AST] = {}
        self._parents: dict[int, ast.AST] = {}
        self._calls: list[ast.Call] = []
        self._stores: list[ast.AST] = []
        self._dicts: list[ast.Dict] = []
        stack: list[ast.AST] = [tree]  # one pass over the tree, without recursion (ast.walk plus the parents)
        parents = self._parents
        AST = ast.AST
        while stack:
            node = stack.pop()
            for field in node._fields:  # ast.iter_child_nodes, inlined: this loop is most of the reading time
                child = getattr(node, field, None)
                if isinstance(child, list):
                    for item in child:
                        if isinstance(item, AST):
                            parents[id(item)] = node
                            stack.append(item)
                elif isinstance(child, AST):
                    parents[id(child)] = node
                    stack.append(child)
            if isinstance(node, ast.Call):
                self._calls.append(node)
            elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                self._stores.append(node)
            elif isinstance(node, ast.Dict):
                self._dicts.append(node)
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        self._imports[alias.asname] = (0, alias.name)
                    else:
                        top = alias.name.split(".")[0]
                        self._imports.setdefault(top, (0, top))
            elif isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    if alias.name != "*":
                        dotted = f"{node.module}.{alias.name}" if node.module else alias.name
                        self._imports[alias.asname or alias.name] = (node.level, dotted)
        for node in tree.body:
            if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                self._defs[node.name] = node
        # in source order (the stack visited them backwards): the first finding of a kind is the first written
        for nodes in (self._calls, self._stores, self._dicts):
            nodes.sort(key=lambda n: (n.lineno, n.col_offset))

    def parent(self, node: ast.AST) -> ast.AST | None:
        return self.parents.get(id(node))

    def enclosing(self, node: ast.AST, kinds=(ast.FunctionDef, ast.AsyncFunctionDef)) -> ast.AST | None:
        """The nearest enclosing function (or class, with `kinds`), None at module level."""
        current = self.parent(node)
        while current is not None and not isinstance(current, kinds):
            current = self.parent(current)
        return current


# What a name stands for.
class External(NamedTuple):
    name: str  # dotted, e.g. torch.utils.data.DataLoader


class Defined(NamedTuple):
    source: Source
    node: ast.AST  # a ClassDef or FunctionDef


class Module(NamedTuple):
    source: Source


class Project:
    """The scripts of one lint run, and the files of the tree they import (read on demand)."""

    def __init__(self, sources: dict[str, Source], load: Callable[[str], Source | None], roots: tuple[str, ...]):
        self.sources = sources  # real path -> Source
        self._load = load  # reads and parses a file the run did not name: None when refused or unreadable
        self._roots = roots  # real folders imports are looked for up to (the linted roots)
        self._files: dict[str, Source | None] = {}
        self._modules: dict[tuple, Source | None] = {}  # (folder, level, dotted) -> the file it means there
        self._absolutes: dict[tuple, Source | None] = {}  # (folder, dotted) -> that file, for an absolute import
        # folder -> its names (one listdir, not a stat a try); None for a folder outside the roots
        self._listings: dict[str, frozenset[str] | None] = {}

    def loaded(self) -> list[Source]:
        """The files read on demand (imported by a linted script), in the order they were read."""
        return [source for source in self._files.values() if source is not None]

    def source_at(self, real: str) -> Source | None:
        if real in self.sources:
            return self.sources[real]
        if real not in self._files:
            self._files[real] = self._load(real)
        return self._files[real]

    def module(self, importer: Source, level: int, dotted: str) -> Source | None:
        """The project file a module name means from `importer`, or None (an outside package)."""
        key = (importer.folder, level, dotted)
        if key not in self._modules:
            self._modules[key] = self._find_module(importer, level, dotted)
        return self._modules[key]

    def _find_module(self, importer: Source, level: int, dotted: str) -> Source | None:
        parts = dotted.split(".")
        if level:
            base = importer.folder
            for _ in range(level - 1):
                base = os.path.dirname(base)
            return self._in_folder(base, parts)
        return self._absolute(importer.folder, dotted, parts)

    def _absolute(self, folder: str, dotted: str, parts: list[str]) -> Source | None:
        """An absolute import from a file of `folder`: looked for there and in its src/ (the src layout), then in
        each folder above, up to the highest linted root holding it. Every folder's answer is kept: in a big tree
        thousands of files import the same modules from folders that share their ancestors."""
        visited, found, top = [], None, None
        current = folder
        while True:
            known = self._absolutes.get((current, dotted), self)
            if known is not self:
                found = known
                break
            visited.append(current)
            found = self._in_folder(current, parts)
            if found is None and self._may_hold(current, "src"):
                found = self._in_folder(os.path.join(current, "src"), parts)
            if found is not None:
                break
            top = self._top(folder) if top is None else top
            if current == top or os.path.dirname(current) == current:
                break
            current = os.path.dirname(current)
        for seen in visited:  # the folders below share the answer of the one above that had it (or none)
            self._absolutes[(seen, dotted)] = found
        return found

    def _in_folder(self, base: str, parts: list[str]) -> Source | None:
        listing = self._listing(base)
        if listing is not None and parts[0] not in listing and parts[0] + ".py" not in listing:
            return None  # `import torch` from a folder without torch/ or torch.py: most imports, most folders
        stem = os.path.join(base, *parts)
        for candidate in (stem + ".py", os.path.join(stem, "__init__.py")):
            if candidate in self.sources or os.path.isfile(candidate):
                found = self.source_at(candidate)
                if found is not None:
                    return found
        return None

    def _may_hold(self, folder: str, name: str) -> bool:
        """Whether `name` may be in the folder: it is in its listing, or the folder is not listed (outside the roots)."""
        listing = self._listing(folder)
        return listing is None or name in listing

    def _listing(self, folder: str) -> frozenset[str] | None:
        """The names in a linted folder; None for a folder outside the roots (never opened: stat them)."""
        listing = self._listings.get(folder, self)
        if listing is not self:
            return listing
        if not any(folder == root or folder.startswith(root.rstrip(os.sep) + os.sep) for root in self._roots):
            self._listings[folder] = None
            return None
        from ..boundary import observe
        observe(folder)  # which modules exist decides what an import means: a rerun from the cache checks it
        try:
            self._listings[folder] = frozenset(os.listdir(folder))
        except OSError:
            self._listings[folder] = frozenset()
        return self._listings[folder]

    def _top(self, folder: str) -> str:
        """The highest linted root holding the folder (the folder itself when none does): absolute imports are
        looked for up to it."""
        holding = [root for root in self._roots if folder == root or folder.startswith(root.rstrip(os.sep) + os.sep)]
        return min(holding, key=len, default=folder)

    def resolve(self, source: Source, node: ast.AST, depth: int = 0):
        """External, Defined, Module or None for a Name or an Attribute chain."""
        if depth > MAX_DEPTH:
            return None
        if isinstance(node, ast.Name):
            return self.lookup(source, node.id, depth + 1)
        if isinstance(node, ast.Attribute):
            base = self.resolve(source, node.value, depth + 1)
            if isinstance(base, External):
                return External(f"{base.name}.{node.attr}")
            if isinstance(base, Module):
                return self.lookup(base.source, node.attr, depth + 1)
        return None

    def lookup(self, source: Source, name: str, depth: int = 0):
        """What a module-level name of `source` stands for."""
        if depth > MAX_DEPTH:
            return None
        if name in source.defs:
            return Defined(source, source.defs[name])
        if name not in source.imports:
            return None
        level, dotted = source.imports[name]
        parts = dotted.split(".")
        for cut in range(len(parts), 0, -1):
            found = self.module(source, level, ".".join(parts[:cut]))
            if found is None:
                continue
            rest = parts[cut:]
            if not rest:
                return Module(found)
            if len(rest) == 1 and found is not source:
                inner = self.lookup(found, rest[0], depth + 1)
                if inner is not None:
                    return inner
                # `from pkg import sub`: a submodule of a package
                return Module(sub) if (sub := self.module(found, 1, rest[0])) is not None else None
            return None
        if level:
            return None  # a relative import of a file that is not there
        return External(dotted)

    def qualified(self, source: Source, node: ast.AST) -> str | None:
        """The dotted name of an outside callee (`torch.utils.data.DataLoader`), else None."""
        found = self.resolve(source, node)
        return found.name if isinstance(found, External) else None

    def bases(self, cls: Defined, depth: int = 0) -> Iterator[object]:
        """Every base class of a project class, transitively: Defined or External entries."""
        if depth > MAX_DEPTH:
            return
        for base in cls.node.bases:
            if isinstance(base, ast.Subscript):  # Sampler[int]
                base = base.value
            found = self.resolve(cls.source, base)
            if found is None:
                continue
            yield found
            if isinstance(found, Defined) and isinstance(found.node, ast.ClassDef):
                yield from self.bases(found, depth + 1)


# -- values ----------------------------------------------------------------------------------------

INT = "int"
FLOAT = "float"


class Value(NamedTuple):
    kind: str | None  # INT, FLOAT or None (unknown)
    number: object = None  # the literal, when known
    source: Source | None = None  # where the float was made (a true division, a float literal)
    node: ast.AST | None = None


UNKNOWN = Value(None)
_INT_CALLS = frozenset({"int", "len", "round", "math.floor", "math.ceil", "math.trunc", "math.isqrt", "math.gcd",
                        "math.lcm", "math.comb", "math.perm", "math.factorial"})


def value_of(project: Project, source: Source, node: ast.AST, depth: int = 0) -> Value:
    """Whether an expression is an int (with its value when literal), a float, or unknown."""
    if depth > MAX_DEPTH:
        return UNKNOWN
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool):
            return UNKNOWN
        if isinstance(node.value, int):
            return Value(INT, node.value)
        if isinstance(node.value, float):
            return Value(FLOAT, node.value, source, node)
        return UNKNOWN
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        inner = value_of(project, source, node.operand, depth + 1)
        if inner.kind == INT and isinstance(inner.number, int) and isinstance(node.op, ast.USub):
            return Value(INT, -inner.number)
        return inner
    if isinstance(node, ast.BinOp):
        return _binary(project, source, node, depth)
    if isinstance(node, ast.IfExp):
        branches = [value_of(project, source, n, depth + 1) for n in (node.body, node.orelse)]
        floats = [v for v in branches if v.kind == FLOAT]
        if floats:
            return floats[0]
        return Value(INT) if all(v.kind == INT for v in branches) else UNKNOWN
    if isinstance(node, ast.BoolOp):  # `batch_size or default_batch_size()`: either operand may be the value
        values = [value_of(project, source, n, depth + 1) for n in node.values]
        floats = [v for v in values if v.kind == FLOAT]
        if floats:
            return floats[0]
        return Value(INT) if all(v.kind == INT for v in values) else UNKNOWN
    if isinstance(node, ast.Call):
        return _call(project, source, node, depth)
    if isinstance(node, ast.Name):
        assigned = reaching(project, source, node, depth + 1)
        return value_of(project, assigned[0], assigned[1], depth + 1) if assigned is not None else UNKNOWN
    return UNKNOWN


def _binary(project: Project, source: Source, node: ast.BinOp, depth: int) -> Value:
    left = value_of(project, source, node.left, depth + 1)
    right = value_of(project, source, node.right, depth + 1)
    if isinstance(node.op, ast.Div):
        # `/` of numbers is a float (the values asked about are batch sizes: no tensors); `root / "x"` is a path
        if any(isinstance(n, ast.Constant) and isinstance(n.value, str) for n in (node.left, node.right)):
            return UNKNOWN
        return Value(FLOAT, None, source, node)
    if not isinstance(node.op, (ast.FloorDiv, ast.Mult, ast.Add, ast.Sub, ast.Mod, ast.Pow)):
        return UNKNOWN
    for side in (left, right):
        if side.kind == FLOAT:
            return side  # float // int is still a float: 14.0 // 2 == 7.0
    if left.kind == INT and right.kind == INT:
        if isinstance(left.number, int) and isinstance(right.number, int) and not isinstance(node.op, ast.Pow):
            try:
                number = {ast.FloorDiv: lambda a, b: a // b, ast.Mult: lambda a, b: a * b, ast.Add: lambda a, b: a + b,
                          ast.Sub: lambda a, b: a - b, ast.Mod: lambda a, b: a % b}[type(node.op)](left.number,
                                                                                                 right.number)
            except ZeroDivisionError:
                return UNKNOWN
            return Value(INT, number if abs(number) < 10 ** 18 else None)
        return Value(INT)
    return UNKNOWN


def _call(project: Project, source: Source, node: ast.Call, depth: int) -> Value:
    name = _callee_name(project, source, node.func)
    if name in _INT_CALLS:
        if name == "round" and len(node.args) > 1:
            return UNKNOWN
        return Value(INT)
    if name == "float":
        return Value(FLOAT, None, source, node)
    if name in ("max", "min", "abs") and node.args and not node.keywords:
        values = [value_of(project, source, arg, depth + 1) for arg in node.args]
        floats = [v for v in values if v.kind == FLOAT]
        if floats:
            return floats[0]
        if all(v.kind == INT for v in values):
            numbers = [v.number for v in values]
            if all(isinstance(n, int) for n in numbers):
                return Value(INT, {"max": max, "min": min}.get(name, lambda *a: abs(a[0]))(*numbers))
            return Value(INT)
    found = project.resolve(source, node.func) if name is None else None
    if isinstance(found, Defined) and isinstance(found.node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return _returned(project, found, depth)
    return UNKNOWN


def _returned(project: Project, function: Defined, depth: int) -> Value:
    """What a project function returns: a float when any `return` gives one (`ram / 2 // 2`), an int when
    all do; its own nested functions and classes are not its returns."""
    values = []
    stack = list(function.node.body)
    while stack and len(values) < 32:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(node, ast.Return) and node.value is not None:
            values.append(value_of(project, function.source, node.value, depth + 1))
        stack.extend(ast.iter_child_nodes(node))
    floats = [v for v in values if v.kind == FLOAT]
    if floats:
        return floats[0]
    return Value(INT) if values and all(v.kind == INT for v in values) else UNKNOWN


def _callee_name(project: Project, source: Source, func: ast.AST) -> str | None:
    """`int`, `math.floor`: a builtin (not shadowed by an import or definition) or an outside dotted name."""
    if isinstance(func, ast.Name) and func.id not in source.imports and func.id not in source.defs:
        return func.id
    return project.qualified(source, func)


def reaching(project: Project, source: Source, name: ast.Name, depth: int = 0) -> tuple[Source, ast.AST] | None:
    """The expression last assigned to `name` before its use: in the enclosing function, else at module
    level, else in the module it was imported from. None when it is a parameter, a loop variable or unknown."""
    if depth > MAX_DEPTH:
        return None
    scope = source.enclosing(name)
    where = (name.lineno, name.col_offset)
    if scope is not None:
        args = scope.args
        params = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
        found = _last_assignment(source, scope, name.id, where)
        if found is not None:
            return source, found
        if name.id in params or _bound_otherwise(scope, name.id):
            return None
    found = _last_assignment(source, None, name.id, where if scope is None else None)
    if found is not None:
        return source, found
    if name.id in source.imports:
        target = project.lookup(source, name.id, depth + 1)
        level, dotted = source.imports[name.id]
        module = project.module(source, level, dotted.rpartition(".")[0]) if "." in dotted or level else None
        if target is None and module is not None and module is not source:
            found = _last_assignment(module, None, dotted.rpartition(".")[2], None)
            if found is not None:
                return module, found
    return None


def _last_assignment(source: Source, scope: ast.AST | None, name: str, before: tuple | None) -> ast.AST | None:
    """The value of the last `name = ...` (or `name /= ...`, as a BinOp) directly in `scope` (None: module
    level, outside functions and classes) placed before `before` (None: anywhere)."""
    best = None
    best_at = None
    for store in source.stores:
        if source.enclosing(store, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)) is not scope:
            continue
        at = (store.lineno, store.col_offset)
        if before is not None and at >= before:
            continue
        value = _assigned(store, name)
        if value is not None and (best_at is None or at > best_at):
            best, best_at = value, at
    return best


def _assigned(store: ast.AST, name: str) -> ast.AST | None:
    if isinstance(store, ast.Assign):
        for target in store.targets:
            if isinstance(target, ast.Name) and target.id == name:
                return store.value
        return None
    if isinstance(store, ast.AnnAssign):
        if isinstance(store.target, ast.Name) and store.target.id == name and store.value is not None:
            return store.value
        return None
    if isinstance(store, ast.AugAssign) and isinstance(store.target, ast.Name) and store.target.id == name:
        # `x //= n` is `x = x // n`, the left `x` being the one assigned before: the target itself stands for it
        # (it has a place in the tree, so its scope and the assignments before it are found)
        return ast.copy_location(ast.BinOp(left=store.target, op=store.op, right=store.value), store)
    return None


def _bound_otherwise(scope: ast.AST, name: str) -> bool:
    """Bound by a loop, a with, an exception handler, a walrus or a tuple unpacking in the function."""
    for node in ast.walk(scope):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.id == name:
            return True
    return False


def dotted_path(node: ast.AST) -> list[str] | None:
    """`hps.train.batch_size` and `config["train"]["batch_size"]` as ["hps", "train", "batch_size"] and
    ["config", "train", "batch_size"]; None for anything else (a call, a computed key)."""
    parts: list[str] = []
    while True:
        if isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) \
                and isinstance(node.slice.value, str):
            parts.append(node.slice.value)
            node = node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" \
                and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            parts.append(node.args[0].value)  # config["train"].get("batch_size", 8)
            node = node.func.value
        elif isinstance(node, ast.Name):
            parts.append(node.id)
            return parts[::-1]
        else:
            return None


def argument(call: ast.Call, keyword: str, position: int | None = None) -> ast.AST | None:
    """The expression passed for a parameter, by keyword or at a position (None when not given, or
    when a *args / **kwargs might hold it)."""
    for kw in call.keywords:
        if kw.arg == keyword:
            return kw.value
    if position is not None and position < len(call.args):
        if any(isinstance(a, ast.Starred) for a in call.args[:position + 1]):
            return None
        return call.args[position]
    return None


def has_kwargs(call: ast.Call) -> bool:
    return any(kw.arg is None for kw in call.keywords)
