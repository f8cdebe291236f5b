"""gitignore-style path patterns: `exclude`, `.gitignore` files, `per-file-ignores` and suppression globs.

A small matcher with git's semantics (gitignore(5)), stdlib `re` only:

- a pattern without a slash (other than a trailing one) matches a name at any depth
  (`*.bak`, `generated`); a pattern with a slash is anchored to the folder it is relative to
  (`configs/legacy/*.json`, `/build`);
- `*` and `?` never match `/`; `[...]` is a character class; `**` matches any number of folders
  (`**/zero3.json`, `configs/**`, `a/**/b`);
- a trailing `/` matches folders only; a leading `!` re-includes what an earlier pattern excluded
  (the last matching pattern wins); `#` starts a comment, `\\#` and `\\!` are literal.

A folder that matches excludes everything below it (callers prune the walk, and `PatternSet.excluded`
checks each ancestor of a path).
"""

from __future__ import annotations

import os
import re
from typing import Iterable, NamedTuple


class Pattern(NamedTuple):
    text: str  # as written
    regex: re.Pattern
    negated: bool
    dir_only: bool


def _translate(body: str) -> str:
    """Regex source for one pattern body (no `!`, no trailing `/`), matching a whole relative path."""
    anchored = "/" in body
    body = body.lstrip("/") if anchored else body
    out = []
    i, n = 0, len(body)
    while i < n:
        c = body[i]
        if c == "*":
            if body.startswith("**", i):
                before_ok = i == 0 or body[i - 1] == "/"
                after = body[i + 2:i + 3]
                if before_ok and after == "/":  # `**/`: zero or more folders
                    out.append("(?:.*/)?")
                    i += 3
                    continue
                if before_ok and i + 2 == n:  # trailing `/**`: everything inside
                    out.append(".*")
                    i += 2
                    continue
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[":
            j = i + 1
            if j < n and body[j] in "!^":
                j += 1
            if j < n and body[j] == "]":
                j += 1
            while j < n and body[j] != "]":
                j += 1
            if j >= n:  # no closing bracket: a literal `[`
                out.append(re.escape(c))
                i += 1
                continue
            inner = body[i + 1:j]
            if inner[:1] in ("!", "^"):
                inner = "^" + inner[1:]
            out.append("[" + inner.replace("\\", "\\\\") + "]")
            i = j + 1
        elif c == "\\" and i + 1 < n:
            out.append(re.escape(body[i + 1]))
            i += 2
        else:
            out.append(re.escape(c))
            i += 1
    prefix = "" if anchored else "(?:.*/)?"
    return prefix + "".join(out)


def compile_pattern(text: str) -> Pattern | None:
    """One gitignore line; None for blank lines and comments."""
    line = text.rstrip("\n").rstrip("\r")
    if not line.endswith("\\ "):
        line = line.rstrip(" ")
    if not line or line.startswith("#"):
        return None
    negated = line.startswith("!")
    if negated:
        line = line[1:]
    elif line.startswith(("\\!", "\\#")):
        line = line[1:]
    dir_only = line.endswith("/")
    body = line.rstrip("/")
    if not body:
        return None
    return Pattern(text, re.compile(_translate(body) + r"\Z", re.DOTALL), negated, dir_only)


class PatternSet:
    """Patterns relative to one folder (`base`): a .gitignore file, or a configuration's globs."""

    def __init__(self, base: str, patterns: Iterable[str]):
        self.base = os.path.abspath(base)
        self.patterns = [p for p in (compile_pattern(t) for t in patterns) if p is not None]

    def __bool__(self) -> bool:
        return bool(self.patterns)

    def relative(self, path: str) -> str | None:
        """`path` relative to the base folder, with `/` separators; None when it is outside."""
        rel = os.path.relpath(os.path.abspath(path), self.base)
        if rel == "." or rel.startswith(".." + os.sep) or rel == ".." or os.path.isabs(rel):
            return None
        return rel.replace(os.sep, "/")

    def match(self, rel: str, is_dir: bool) -> bool | None:
        """True: excluded, False: re-included by a `!` pattern, None: no pattern matches `rel` itself."""
        verdict = None
        for pattern in self.patterns:
            if pattern.dir_only and not is_dir:
                continue
            if pattern.regex.match(rel):
                verdict = not pattern.negated
        return verdict

    def matches(self, path: str, is_dir: bool = False) -> bool:
        """Whether `path` itself matches (ignores its folders): for per-file globs."""
        rel = self.relative(path)
        return rel is not None and bool(self.match(rel, is_dir))

    def excluded(self, path: str, is_dir: bool = False) -> bool:
        """Whether `path`, or one of its folders below the base, is excluded."""
        rel = self.relative(path)
        if rel is None:
            return False
        parts = rel.split("/")
        for depth in range(1, len(parts)):
            if self.match("/".join(parts[:depth]), True):
                return True
        return bool(self.match(rel, is_dir))


def read_gitignore(folder: str) -> PatternSet | None:
    """The folder's .gitignore patterns (None without one); files.TooLarge past files.MAX_BYTES."""
    from .files import FileError, TooLarge, read_bytes
    try:
        lines = read_bytes(os.path.join(folder, ".gitignore")).decode("utf-8", "replace").splitlines()
    except TooLarge:
        raise
    except FileError:
        return None
    patterns = PatternSet(folder, lines)
    return patterns or None
