"""A Makefile's recipes as the shell text make hands to the shell, line for line (dsconfig.launch.shell reads it).

make expands its own variables in a recipe line (`$(NAME)`, `${NAME}`, `$$` for the shell's `$`) before the
shell sees it. The variables are the Makefile's assignments (`NAME = value`, `:=`, `::=`, `?=`, `+=`,
`export NAME = value`), expanded when used; a reference to anything else (`$(shell nvidia-smi ...)`, a variable
from the command line or the environment, an automatic variable) becomes a shell variable the script never
sets: unknown. Recipe prefixes (`@`, `-`, `+`) are dropped. Lines that are not recipe lines are left blank so
that line numbers stay the Makefile's.
"""

from __future__ import annotations

import re

NAMES = ("Makefile", "makefile", "GNUmakefile")
_ASSIGNMENT = re.compile(r"^(?:export\s+|override\s+)*([A-Za-z_][A-Za-z0-9_.-]*)\s*(::?=|\?=|\+=|=)\s*(.*)$")
_REFERENCE = re.compile(r"\$(?:\(([^()$]*)\)|\{([^{}$]*)\}|(.))")
_UNKNOWN = "${_dsconfig_make_unknown}"  # a shell variable no script sets
_MAX_DEPTH = 20
_MAX_VALUE = 10_000  # an expansion longer than this is unknown (`A = $(B)$(B)`, `B = $(C)$(C)`, ... doubles)


def as_shell(text: str) -> str:
    variables: dict[str, str] = {}
    expanded: dict[str, str] = {}  # a variable's expansion, once computed (cleared when an assignment changes it)
    out: list[str] = []
    lines = text.split("\n")
    in_recipe = False
    continued = False
    for line in lines:
        if continued or line.startswith("\t") and in_recipe:
            body = line[1:] if line.startswith("\t") else line
            if not continued:
                body = body.lstrip("@-+ ")
            out.append(_expand(body, variables, 0, expanded))
            continued = line.endswith("\\")
            continue
        continued = False
        stripped = line.split("#", 1)[0].rstrip()
        match = _ASSIGNMENT.match(stripped)
        if match and not stripped.startswith("\t"):
            name, operator, value = match.groups()
            expanded.clear()
            if operator == "?=" and name in variables:
                pass
            elif operator == "+=":
                variables[name] = (variables.get(name, "") + " " + value).strip()
            elif operator in (":=", "::="):
                variables[name] = _expand_make(value, variables)  # what the names it uses hold now
            else:
                variables[name] = value
            in_recipe = False
        elif stripped and not stripped.startswith((" ", "\t")) and ":" in stripped:
            in_recipe = True  # a rule: the tab-indented lines after it are its recipe
        elif stripped and not line.startswith("\t"):
            in_recipe = False
        out.append("")
    return "\n".join(out)


def _expand_make(value: str, variables: dict) -> str:
    """A `:=` value: each variable it names replaced by what that variable holds now (itself expanded when the
    recipe uses it), unknown references kept as make wrote them."""
    def replace(match):
        name = match.group(1) if match.group(1) is not None else match.group(2)
        if name is not None and name in variables:
            return variables[name] if len(variables[name]) <= _MAX_VALUE else _UNKNOWN
        return match.group(0)
    return _REFERENCE.sub(replace, value)


def _expand(line: str, variables: dict, depth: int, memo: dict) -> str:
    """A recipe line as the shell receives it."""
    def replace(match):
        name = match.group(1) if match.group(1) is not None else match.group(2)
        single = match.group(3)
        if single == "$":
            return "$"
        if name is None or name not in variables or depth >= _MAX_DEPTH:
            return _UNKNOWN
        if name not in memo:
            value = _expand(variables[name], variables, depth + 1, memo)
            memo[name] = value if len(value) <= _MAX_VALUE else _UNKNOWN
        return memo[name]
    return _REFERENCE.sub(replace, line)
