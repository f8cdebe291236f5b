#!/usr/bin/env python3
"""Check the package's shape: one module per rule code, no import cycle, no ruledocs.py.

    python scripts/check_structure.py          # exit 1 and say what is wrong, else exit 0

* Every rule code (DS000, ACC019, ...) is declared in exactly one module under dsconfig/rules/:
  a module "declares" a code when the code appears in it as a string literal.
* No import cycle among dsconfig modules, counting every import statement wherever it sits
  (inside functions too). `from pkg import name` counts as an import of pkg.name when that is a
  module, else of pkg; a module's implicit import of its parent package does not count.
* dsconfig/ruledocs.py does not exist (the rule docs live in the rule declarations).
* No module opens a file but those in OPENERS: a call of `open`, `io.open`, `os.open` or a path's `open`,
  `read_text`, `read_bytes`, `write_text` or `write_bytes` anywhere else is reported. The user's files are
  read through dsconfig.files (which asks dsconfig.boundary), so a new module cannot read one another way.

tests/rules/test_structure.py runs it.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "dsconfig"
CODE_LITERAL = re.compile(r"""["']((?:DS|ACC)\d{3})["']""")
# The modules that may open files, and why: every other one goes through them.
OPENERS = {
    "dsconfig.files": "the reader of the user's bytes (through dsconfig.boundary) and the atomic writer",
    "dsconfig.package_data": "dsconfig's own schemas and templates",
    "dsconfig.rules.rule": "writes a rule's example files into the temporary folder `dsconfig rule` lints",
}
OPENING_CALLS = {"open", "read_text", "read_bytes", "write_text", "write_bytes"}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def _absolute(module: str, is_package: bool, level: int, target: str | None) -> str:
    """The absolute name of a relative import's base."""
    if not level:
        return target or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    if level > 1:
        base = base[:len(base) - (level - 1)]
    return ".".join(base + ([target] if target else []))


def imports(known: dict[str, Path]) -> dict[str, set[str]]:
    """module -> the dsconfig modules it imports anywhere in its body."""
    graph: dict[str, set[str]] = {}
    for name, path in known.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        is_package = path.name == "__init__.py"
        edges: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name in known:
                        edges.add(alias.name)
            elif isinstance(node, ast.ImportFrom):
                base = _absolute(name, is_package, node.level, node.module)
                for alias in node.names:
                    child = f"{base}.{alias.name}"
                    if child in known:
                        edges.add(child)
                    elif base in known:
                        edges.add(base)
        edges.discard(name)
        graph[name] = edges
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def declarations(known: dict[str, Path]) -> dict[str, list[str]]:
    """rule code -> the modules under dsconfig/rules/ that hold it as a string literal."""
    where: dict[str, list[str]] = {}
    for name, path in known.items():
        if not name.startswith("dsconfig.rules"):
            continue
        for code in sorted(set(CODE_LITERAL.findall(path.read_text(encoding="utf-8")))):
            where.setdefault(code, []).append(name)
    return where


def file_openings(known: dict[str, Path]) -> list[str]:
    """`module:line: call` for each call that opens a file outside OPENERS: the builtin `open`, `io.open`,
    `os.open`, `codecs.open`, and a path's own `open`, `read_text`, `read_bytes`, `write_text`, `write_bytes`
    (told from dsconfig's functions of those names by their arguments: a path's take no path)."""
    found = []
    for name, path in sorted(known.items()):
        if name in OPENERS:
            continue
        calls = [node for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))) if isinstance(node, ast.Call)]
        for node in sorted(calls, key=lambda call: (call.lineno, call.col_offset)):
            if _opens(node):
                found.append(f"{name}:{node.lineno}: this call opens a file; only {', '.join(sorted(OPENERS))} may")
    return found


def _opens(call: ast.Call) -> bool:
    function = call.func
    if isinstance(function, ast.Name):
        return function.id == "open"
    if not isinstance(function, ast.Attribute):
        return False
    owner = function.value.id if isinstance(function.value, ast.Name) else None
    if function.attr == "open":
        return owner in ("os", "io", "codecs") or owner is None or not call.args or _is_mode(call.args[0])
    positional = len(call.args)
    if function.attr in ("read_text", "read_bytes"):
        return positional == 0
    if function.attr in ("write_text", "write_bytes"):
        return positional == 1 and owner not in ("files",)
    return False


def _is_mode(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and bool(re.fullmatch(r"[rwxab+t]+",
                                                                                                node.value))


def problems() -> list[str]:
    known = modules()
    found = []
    if (PACKAGE / "ruledocs.py").exists():
        found.append("dsconfig/ruledocs.py still exists")
    where = declarations(known)
    if not where:
        found.append("no rule code is declared under dsconfig/rules/")
    for code, names in sorted(where.items()):
        if len(names) != 1:
            found.append(f"{code} is declared in {len(names)} modules: {', '.join(names)}")
    for component in cycles(imports(known)):
        found.append(f"import cycle among {len(component)} modules: {', '.join(component)}")
    found.extend(file_openings(known))
    return found


def main() -> int:
    found = problems()
    for problem in found:
        print(problem, file=sys.stderr)
    if not found:
        codes = len(declarations(modules()))
        print(f"ok: {codes} rule codes, each declared in one module; no import cycle; no ruledocs.py; files opened "
              f"only by {', '.join(sorted(OPENERS))}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
