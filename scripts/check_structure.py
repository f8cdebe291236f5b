#!/usr/bin/env python3
"""Check the package's shape: one module per rule code, no import cycle, no ruledocs.py.

    python scripts/check_structure.py          # exit 1 and say what is wrong, else exit 0

* Every rule code (DS000, ACC019, ...) is declared in exactly one module under dsconfig/rules/:
  a module "declares" a code when the code appears in it as a string literal.
* No import cycle among dsconfig modules, counting every import statement wherever it sits
  (inside functions too). `from pkg import name` counts as an import of pkg.name when that is a
  module, else of pkg; a module's implicit import of its parent package does not count.
* dsconfig/ruledocs.py does not exist (the rule docs live in the rule declarations).

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
    return found


def main() -> int:
    found = problems()
    for problem in found:
        print(problem, file=sys.stderr)
    if not found:
        codes = len(declarations(modules()))
        print(f"ok: {codes} rule codes, each declared in one module; no import cycle; no ruledocs.py")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
