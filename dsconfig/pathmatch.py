"""gitignore-style path patterns: `exclude`, `.gitignore` files, `per-file-ignores` and suppression globs.

What git matches (gitignore(5); git's dir.c and wildmatch.c), checked against `git check-ignore` by
tests/test_pathmatch.py:

- a pattern without a slash (other than a trailing one) matches a name at any depth
  (`*.bak`, `generated`); a pattern with a slash is anchored to the folder it is relative to
  (`configs/legacy/*.json`, `/build`);
- `*` and `?` never match `/`; `[...]` is a character class (`[abc]`, `[!a]`, `[^a]`, `[a-z]`,
  `[[:digit:]]`); `**` matches any number of folders (`**/zero3.json`, `configs/**`, `a/**/b`);
- a trailing `/` matches folders only; a leading `!` re-includes what an earlier pattern excluded
  (the last matching pattern wins); `#` starts a comment; `\\` makes the next character literal.

Matching takes time linear in the pattern's length times the path's, whatever the pattern: the
pattern is an automaton with one state per element, run over the path one character at a time (the
regex translation it replaces backtracked: 8 x `*a` then `*b` took 29 s against a 60-character name).
`PatternSet.excluded` reads a path once for all its folders, not once per folder (the depth squared).

git accepts every line of a .gitignore: an unclosed `[`, an unknown `[:class:]` or a trailing `\\`
make the pattern match nothing, and a reversed range such as `z-a` adds only its first character.
`problem()` says so, for the patterns of dsconfig's own configuration and command line, which are
usage errors rather than silently matching nothing.

A folder that matches excludes everything below it (callers prune the walk, and `PatternSet.excluded`
checks each ancestor of a path).
"""

from __future__ import annotations

import os
from collections.abc import Iterable

# the POSIX classes of wildmatch.c, as git's ASCII ctype defines them (its isspace has no \v or \f)
_POSIX = {
    "alnum": ("09", "AZ", "az"), "alpha": ("AZ", "az"), "blank": ("\t\t", "  "), "cntrl": ("\x00\x1f", "\x7f\x7f"),
    "digit": ("09",), "graph": ("!~",), "lower": ("az",), "print": (" ~",), "punct": ("!/", ":@", "[`", "{~"),
    "space": ("\t\n", "\r\r", "  "), "upper": ("AZ",), "xdigit": ("09", "AF", "af"),
}
_SPECIAL = "*?[\\"  # git's glob specials: the literal prefix of a pattern ends at the first
_NEVER = "so git matches nothing with this pattern"

# Pattern elements: a 1-character string is that character; a tuple (negated, ranges) is a class, `?`
# included (a negated empty class); STAR is `*` (never `/`), GLOBSTAR a `**` that crosses folders, and
# ZERO_FOLDERS, before the GLOBSTAR of a `**/`, reads nothing but lets the match skip the `**/` (`a/**/b`
# matches `a/b`).
STAR, GLOBSTAR, ZERO_FOLDERS = "star", "globstar", "zero-folders"
_ANY = (True, ())


class _BadPattern(Exception):
    """A pattern git matches nothing with."""


def _trim_trailing_spaces(line: str) -> str:
    """git's trim_trailing_spaces: unescaped trailing spaces go."""
    last_space, i = None, 0
    while i < len(line):
        if line[i] == " ":
            last_space = i if last_space is None else last_space
        else:
            if line[i] == "\\":
                i += 1
                if i == len(line):
                    return line
            last_space = None
        i += 1
    return line if last_space is None else line[:last_space]


def _class(body: str, start: int, notes: list[str]) -> tuple[tuple, int]:
    """The class opening at body[start] (`[`), read as wildmatch.c does: (element, index after it)."""
    unclosed = _BadPattern(f"the `[` at character {start + 1} is never closed, {_NEVER} (write `\\[` for a "
                           f"literal `[`)")
    n = len(body)
    i = start + 1
    negated = i < n and body[i] in "!^"
    i += negated
    ranges: list[tuple[str, str]] = []
    previous = None  # the character a `-` makes a range from
    first = True  # a `]` right after `[` or `[!` is literal
    close = -1  # the next `]`, where a `[:` looks for its `:]` (found once, not at every `[:`)
    while True:
        if i >= n:
            raise unclosed
        c = body[i]
        if c == "]" and not first:
            return (negated, tuple(ranges)), i + 1
        first = False
        if c == "\\":
            i += 1
            if i >= n:
                raise unclosed
            ranges.append((body[i], body[i]))
            previous = body[i]
        elif c == "-" and previous is not None and i + 1 < n and body[i + 1] != "]":
            i += 1
            if body[i] == "\\" and i + 1 < n:
                i += 1
            if previous <= body[i]:
                ranges.append((previous, body[i]))
            else:  # wildmatch tests `previous <= c <= body[i]`: nothing
                notes.append(f"the range {previous}-{body[i]} is reversed, so git reads it as {previous} alone "
                             f"(write {body[i]}-{previous})")
            previous = None
        elif c == "[" and body.startswith(":", i + 1):
            if close < i + 2:
                close = body.find("]", i + 2)
            end = close
            if end < 0:
                raise unclosed
            if end - i < 3 or body[end - 1] != ":":  # no `:]`: a literal `[`
                ranges.append(("[", "["))
                previous = "["
            else:
                name = body[i + 2:end - 1]
                if name not in _POSIX:
                    raise _BadPattern(f"`[:{name}:]` is not a character class ({', '.join(_POSIX)}), {_NEVER}")
                ranges.extend((pair[0], pair[1]) for pair in _POSIX[name])
                previous = None
                i = end
        else:
            ranges.append((c, c))
            previous = c
        i += 1


def _elements(body: str, anchored: bool, notes: list[str]) -> list:
    """The pattern's elements; `notes` collects what git reads differently from what was probably meant."""
    # wildmatch.c: a run of `*` crosses folders when it starts the pattern or follows a `/`, and ends it or
    # precedes a `/`; dir.c compares the literal prefix on its own first, so a run right after the prefix
    # starts the pattern too (`ab**/c` matches `abc` and `abx/y/c`).
    prefix = next((i for i, c in enumerate(body) if c in _SPECIAL), len(body))
    elements: list = []
    i, n = 0, len(body)
    while i < n:
        c = body[i]
        if c == "*":
            end = i
            while end < n and body[end] == "*":
                end += 1
            after = body[end:end + 1]
            crosses = (anchored and end - i > 1 and (i in (0, prefix) or body[i - 1] == "/")
                       and (end == n or after == "/" or body.startswith("\\/", end)))
            if not crosses:
                elements.append(STAR)
            elif after == "/":
                elements += [ZERO_FOLDERS, GLOBSTAR]
            else:
                elements.append(GLOBSTAR)
            i = end
        elif c == "?":
            elements.append(_ANY)
            i += 1
        elif c == "[":
            element, i = _class(body, i, notes)
            elements.append(element)
        elif c == "\\":
            if i + 1 == n:
                raise _BadPattern(f"it ends with a lone `\\`, {_NEVER} (write `\\\\` for a backslash)")
            elements.append(body[i + 1])
            i += 2
        else:
            elements.append(c)
            i += 1
    return elements


def _accepts(element, c: str) -> bool:
    if isinstance(element, str):
        return element == c
    negated, ranges = element
    return c != "/" and any(low <= c <= high for low, high in ranges) != negated


def _literal_tail(elements: list) -> str:
    """The characters every match ends with (not the `/` of a `**/`, which may be skipped)."""
    size = 0
    for i in range(len(elements) - 1, -1, -1):
        element = elements[i]
        if not (isinstance(element, str) and len(element) == 1) or (i >= 2 and elements[i - 2] == ZERO_FOLDERS):
            break
        size += 1
    return "".join(elements[len(elements) - size:])


class _Automaton:
    """Elements as a nondeterministic automaton: bit i of a state is set when the first i elements can
    match what was read. Steps are cached per (state, character): a deterministic automaton built only
    as far as the paths read need it, and each step costs at most one pass over the elements."""

    CACHE = 4096  # steps kept per pattern; a hostile run of distinct paths empties the cache, no more

    def __init__(self, elements: list):
        self.elements = elements
        self.final = 1 << len(elements)
        self._skip1 = sum(1 << i for i, e in enumerate(elements) if e in (STAR, GLOBSTAR, ZERO_FOLDERS))
        self._skip3 = sum(1 << i for i, e in enumerate(elements) if e == ZERO_FOLDERS)
        self._masks: dict[str, tuple[int, int]] = {}  # character -> (elements it advances, stars it stays in)
        self.start = self._close(1)
        self._rows: dict[int, dict[str, int]] = {self.start: {}}  # state -> character -> next state
        self._learned = 0

    def _close(self, state: int) -> int:
        """Add what a `*` matching nothing reaches, and what a `**/` matching no folder does."""
        while True:
            wider = state | (state & self._skip1) << 1 | (state & self._skip3) << 3
            if wider == state:
                return state
            state = wider

    def _step(self, state: int, c: str) -> int:
        masks = self._masks.get(c)
        if masks is None:
            if len(self._masks) >= self.CACHE:
                self._masks.clear()
            advance = stay = 0
            for i, element in enumerate(self.elements):
                if element == GLOBSTAR or (element == STAR and c != "/"):
                    stay |= 1 << i
                elif element not in (STAR, ZERO_FOLDERS) and _accepts(element, c):
                    advance |= 1 << i
            masks = self._masks[c] = (advance, stay)
        advance, stay = masks
        return self._close((state & advance) << 1 | (state & stay))

    def matches(self, text: str) -> bool:
        rows = self._rows
        state = self.start
        for c in text:
            following = rows[state].get(c)
            if following is None:
                following = self._learn(state, c)
            if not following:
                return False
            state = following
        return bool(state & self.final)

    def accepting(self, text: str, start: int, ends: list[int]) -> list[int]:
        """The ends (ascending, each at least `start`) where text[start:end] matches: one pass over the text."""
        rows = self._rows
        state, position, found = self.start, start, []
        for end in ends:
            while position < end:
                c = text[position]
                following = rows[state].get(c)
                if following is None:
                    following = self._learn(state, c)
                if not following:
                    return found
                state = following
                position += 1
            if state & self.final:
                found.append(end)
        return found

    def _learn(self, state: int, c: str) -> int:
        following = self._step(state, c)
        if self._learned >= self.CACHE:
            self._rows.clear()
            self._rows[self.start] = {}
            self._learned = 0
        self._rows.setdefault(state, {})[c] = following
        self._rows.setdefault(following, {})
        self._learned += 1
        return following


class Pattern:
    """One gitignore line, compiled."""

    def __init__(self, text: str, body: str, negated: bool, dir_only: bool):
        self.text = text  # as written
        self.negated = negated
        self.dir_only = dir_only
        self.anchored = "/" in body  # else it matches the last name of a path
        if self.anchored:
            body = body.removeprefix("/")  # git strips one: `//a` matches nothing
        notes: list[str] = []
        try:
            elements = _elements(body, self.anchored, notes)
        except _BadPattern as bad:
            notes, elements = [str(bad)], None
        self.problem = notes[0] if notes else None  # why git does not match what was probably meant
        prefix = next((i for i, c in enumerate(body) if c in _SPECIAL), len(body))
        self.literal = body[:prefix]  # compared on its own, as git does
        self._automaton = None
        if elements is None:
            self._kind = "nothing"
        elif prefix == len(body):
            self._kind = "literal"
        elif not self.anchored and prefix == 0 and body[0] == "*" and not any(c in _SPECIAL for c in body[1:]):
            self._kind, self.literal = "suffix", body[1:]  # `*.bak`
        else:
            self._kind = "automaton"
            self._automaton = _Automaton(elements[prefix:])
            self._tail = _literal_tail(elements)  # most names fail on it, before the automaton runs

    def matches(self, rel: str) -> bool:
        """Whether `rel` (a `/`-separated path relative to the patterns' folder) matches, files or folders."""
        if self._kind == "nothing":
            return False
        name = rel if self.anchored else rel[rel.rfind("/") + 1:]
        if self._kind == "literal":
            return name == self.literal
        if self._kind == "suffix":
            return name.endswith(self.literal)
        return (name.startswith(self.literal) and name.endswith(self._tail)
                and self._automaton.matches(name[len(self.literal):]))

    def matching_prefixes(self, rel: str, ends: list[int]) -> list[int]:
        """The ends (ascending `/` positions of `rel`, then its length) where `rel[:end]` matches: what
        `matches` says of every folder of a path and of the path, in one pass over it rather than one per
        folder (which took the depth squared, times the pattern's length)."""
        if self._kind == "nothing":
            return []
        if not self.anchored:  # each prefix's name is one of the path's names: each is read once
            starts = [0] + [end + 1 for end in ends[:-1]]
            return [end for begin, end in zip(starts, ends) if self.matches(rel[begin:end])]
        if not rel.startswith(self.literal):
            return []
        if self._kind == "literal":
            return [end for end in ends if end == len(self.literal)]
        # the automaton reads the path once, saying at each end whether what it read so far matches
        candidates = [end for end in ends if end >= len(self.literal) and rel.endswith(self._tail, 0, end)]
        return self._automaton.accepting(rel, len(self.literal), candidates) if candidates else []


def compile_pattern(text: str) -> Pattern | None:
    """One gitignore line; None for blank lines and comments."""
    line = text.removesuffix("\n").removesuffix("\r")
    if not line or line.startswith("#"):
        return None
    line = _trim_trailing_spaces(line)
    negated = line.startswith("!")
    body = line[1:] if negated else line
    dir_only = body.endswith("/")
    body = body[:-1] if dir_only else body
    if not body:
        return None
    return Pattern(text, body, negated, dir_only)


def problem(text: str) -> str | None:
    """Why git would not match what `text` probably means (for the patterns dsconfig is given); None if fine."""
    pattern = compile_pattern(text)
    if pattern is None:
        return f"it is empty or a comment in gitignore syntax, {_NEVER} (write `\\#` for a literal `#`)"
    return pattern.problem


class PatternSet:
    """Patterns relative to one folder (`base`): a .gitignore file, or a configuration's globs."""

    def __init__(self, base: str, patterns: Iterable[str]):
        self.base = os.path.abspath(base)
        self.patterns = [p for p in (compile_pattern(t) for t in patterns) if p is not None]
        self._prefix = self.base.rstrip(os.sep) + os.sep
        # Without `!` patterns the order does not matter (any match excludes): names and suffixes are then
        # looked up at once, and only the other patterns are tried one by one (a 200-line .gitignore, 3,000 files)
        self._ordered = any(p.negated for p in self.patterns)
        self._names: tuple[set, set] = (set(), set())  # (any entry, folders only): unanchored literal names
        self._suffixes: tuple[list, list] = ([], [])
        self._others: list[Pattern] = []
        for pattern in self.patterns:
            if pattern._kind == "literal" and not pattern.anchored:
                self._names[pattern.dir_only].add(pattern.literal)
            elif pattern._kind == "suffix":
                self._suffixes[pattern.dir_only].append(pattern.literal)
            elif pattern._kind != "nothing":
                self._others.append(pattern)
        self._suffix_tuples = tuple(tuple(found) for found in self._suffixes)

    def __bool__(self) -> bool:
        return bool(self.patterns)

    def relative(self, path: str) -> str | None:
        """`path` relative to the base folder, with `/` separators; None when it is outside."""
        # (a string test, not os.path.relpath: it runs for every entry of a walk, once per .gitignore in force)
        full = path if path.startswith(os.sep) and f"{os.sep}." not in path else os.path.abspath(path)
        if not full.startswith(self._prefix) or len(full) == len(self._prefix):
            return None
        return full[len(self._prefix):].replace(os.sep, "/")

    def match(self, rel: str, is_dir: bool) -> bool | None:
        """True: excluded, False: re-included by a `!` pattern, None: no pattern matches `rel` itself."""
        if not self._ordered:
            name = rel[rel.rfind("/") + 1:]
            if name in self._names[False] or (is_dir and name in self._names[True]) \
                    or name.endswith(self._suffix_tuples[0]) or (is_dir and name.endswith(self._suffix_tuples[1])):
                return True
            for pattern in self._others:
                if (is_dir or not pattern.dir_only) and pattern.matches(rel):
                    return True
            return None
        verdict = None
        for pattern in self.patterns:
            if pattern.dir_only and not is_dir:
                continue
            if pattern.matches(rel):
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
        if "/" not in rel:
            return bool(self.match(rel, is_dir))
        ends, end = [], rel.find("/")
        while end >= 0:
            ends.append(end)
            end = rel.find("/", end + 1)
        ends.append(len(rel))
        # end of a prefix -> the verdict of the last pattern matching it (each pattern reads the path once)
        verdicts: dict[int, bool] = {}
        for pattern in self.patterns:
            for end in pattern.matching_prefixes(rel, ends):
                if end < len(rel) or is_dir or not pattern.dir_only:
                    verdicts[end] = not pattern.negated
        return any(verdicts.values())


# -- the paths a shell-style glob names (dsconfig lint 'configs/**/*.json') ----------------------------------


def glob_paths(pattern: str, enters=None) -> list[str]:
    """What `glob.glob(pattern, recursive=True)` returns, sorted, each path once (the same path strings).

    glob.glob lists the whole tree below every folder an earlier component yields, and yields a path once
    for each way of splitting it between the `**` (`**/**/**/*.json` reads a 150-deep tree about 150³/6
    times: minutes; four `**`, hours). Here each component's matches are a set, and a `**` does not list
    again a folder it listed below another: the time is the tree read times the number of components,
    whatever their order and repetition.
    Read as glob.glob reads them: split at the last folder without `*?[`; `*`, `?` and `[...]` as fnmatch,
    never matching a leading `.` unless the component starts with one; `**` alone in a component for zero or
    more folders (none hidden; links followed), files too when it is last; a component without `*?[` only
    checked to exist (`..` included); a trailing `/` for folders only.
    `enters(folder)`, when given, says whether a folder may be listed: one it refuses (a link out of the tree)
    can still match a component, but nothing below it is read.
    """
    import fnmatch
    import glob

    if not glob.has_magic(pattern):  # as written, when it is there
        folder, name = os.path.split(pattern)
        return [pattern] if pattern and (os.path.lexists(pattern) if name else os.path.isdir(folder)) else []
    components = []
    head = pattern
    while True:
        folder, name = os.path.split(head)
        components.append(name)
        if not folder or folder == head or not glob.has_magic(folder):
            break
        head = folder
    components.reverse()
    current = dict.fromkeys([folder])  # the paths matched so far, each once, in glob's spelling
    for index, name in enumerate(components):
        last = index == len(components) - 1
        following: dict[str, None] = {}
        if name == "**":
            listed: set[str] = set()  # folders a `**` of this component listed: their trees are read
            for path in sorted(current, key=len):  # a folder before the folders below it
                following[os.path.join(path, "")] = None  # zero folders
                if path in listed or (path.endswith(os.sep) and path[:-1] in listed):
                    continue
                stack = [path]
                while stack:
                    below = stack.pop()
                    if enters is not None and not enters(below):
                        continue
                    for entry in _entries(below, not last):
                        if not entry.startswith("."):
                            child = os.path.join(below, entry)
                            following[child] = None
                            listed.add(child)
                            stack.append(child)
        elif glob.has_magic(name):
            for path in current:
                if enters is not None and not enters(path):
                    continue
                entries = _entries(path, not last)
                if not name.startswith("."):
                    entries = [entry for entry in entries if not entry.startswith(".")]
                following.update(dict.fromkeys(os.path.join(path, entry) for entry in fnmatch.filter(entries, name)))
        else:
            for path in current:
                if os.path.lexists(os.path.join(path, name)) if name else os.path.isdir(path):
                    following[os.path.join(path, name)] = None
        current = following
    return sorted(path for path in current if path)  # glob.glob drops the "" a leading `**` matches


def _entries(folder: str, folders_only: bool) -> list[str]:
    """The names in a folder ("": the current one), as glob lists them: none when it cannot be read."""
    names = []
    try:
        with os.scandir(folder or os.curdir) as entries:
            for entry in entries:
                try:
                    if not folders_only or entry.is_dir():
                        names.append(entry.name)
                except OSError:
                    pass
    except OSError:
        pass
    return names


def read_gitignore(folder: str) -> PatternSet | None:
    """The folder's .gitignore patterns (None without one); files.TooLarge past files.MAX_BYTES, and
    files.FileError when there is one that cannot be read (no permission), which git warns about: its
    patterns not applied, more is linted, and the caller says so. It is project metadata, read through the
    reading boundary up to the project's ceiling (dsconfig.boundary): never through a link out of it."""
    from .boundary import project_ceiling
    from .files import Refused, read_bytes
    path = os.path.join(folder, ".gitignore")
    if not os.path.lexists(path) or os.path.isdir(path):
        return None
    try:
        text = read_bytes(path, metadata=project_ceiling(folder)).decode("utf-8", "replace")
    except Refused:  # a link out of the project, a FIFO: never read, as git does not follow such links
        return None
    # git splits at "\n" only (not at the other line breaks str.splitlines knows) and skips a UTF-8 BOM
    patterns = PatternSet(folder, text.removeprefix("\ufeff").split("\n"))
    return patterns or None
