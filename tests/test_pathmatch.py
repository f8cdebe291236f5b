"""dsconfig.pathmatch: gitignore patterns read as git reads them, matched in linear time, and the patterns
git would not match as written named (dsconfig's own patterns are usage errors; tests/test_settings.py).

The oracles: `git check-ignore` on a real repository (skipped without git), and the regex translation
dsconfig used before, kept below, on the patterns it read right."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsconfig.pathmatch import PatternSet, compile_pattern, problem

FAST = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

# (pattern, path, is a folder, whether git 2.39 ignores the path); test_examples_are_what_git_does checks them
EXAMPLES = [
    ("*.bak", "a/x.bak", False, True),
    ("*.bak", "a/x.bak/y", False, True),  # the folder matches
    ("/build", "build/ds.json", False, True),
    ("/build", "src/build", True, False),
    ("//build", "build", True, False),  # git strips one leading slash
    ("build/", "build", False, False),
    ("build//", "build", True, False),  # and one trailing slash
    ("configs/*.json", "configs/a/b.json", False, False),
    ("**/gen", "x/y/gen", True, True),
    ("**/gen", "gen", True, True),
    ("**/a", "ba", False, False),
    ("a/**/b", "a/b", False, True),
    ("a/**/b", "a/x/y/b", False, True),
    ("a/**", "a", True, False),
    ("a/**", "a/b/c", False, True),
    ("a/**\\/b", "a/b", False, False),  # `**\/` skips at least one folder
    ("a/**\\/b", "a/x/b", False, True),
    ("***/c", "a/b/c", False, True),
    ("x/ab**/c", "x/abc", False, True),  # dir.c compares the literal prefix `x/ab` first: `**` then starts
    ("x/ab**/c", "x/abq/r/c", False, True),
    ("x/ab*/c", "x/abq/r/c", False, False),
    ("a**b", "ax/yb", False, False),
    ("x[!a]y", "x/y", False, False),  # a class never matches `/`
    ("a/x[!a]y", "a/x/y", False, False),
    ("[[:digit:]]*", "9lives", False, True),
    ("[[:space:]]", "\x0b", False, False),  # git's isspace has no \v
    ("[]a]", "]", False, True),
    ("[!]a]", "]", False, False),
    ("[!]a]", "b", False, True),
    ("[\\]]", "]", False, True),
    ("[a-]", "-", False, True),
    ("[z-a]", "z", False, True),  # a reversed range adds only its first character
    ("[z-a]", "m", False, False),
    ("[abc", "[abc", False, False),  # unclosed: matches nothing
    ("[[:foo:]]x", "ax", False, False),
    ("ab\\", "ab\\", False, False),
    ("\\*", "*", False, True),
    ("\\*", "a", False, False),
    ("\\#a", "#a", False, True),
    ("\\!a", "!a", False, True),
    ("a  ", "a", False, True),  # trailing spaces go
    ("a\\  ", "a ", False, True),  # an escaped one stays
    ("*", "any/depth", False, True),
]


@pytest.mark.parametrize("pattern, path, is_dir, ignored", EXAMPLES)
def test_examples(pattern, path, is_dir, ignored, tmp_path):
    assert PatternSet(str(tmp_path), [pattern]).excluded(str(tmp_path / path), is_dir) is ignored


# -- against git -----------------------------------------------------------------------------------------

# names chosen so that classes, escapes, stars and `**` have something to tell apart
TREE_FILES = ["a", "b", "ab", "abc", "ba", "a.json", "a b", "a*b", "a?", "[a]", "-", "]", "!", "#a", "a\\b", "z",
              "x/a", "x/ba", "x/abc/c", "x/abq/r/c", "x/ab/c", "q/a/b/c", "q/b/a", "q/a/a/a/b", "y/z/a.json",
              "d/[ab]/q", "d/ab/q", "e/a b/c", "f/a/b"]


def _git_tree(root) -> list[tuple[str, bool]]:
    """Make the tree in `root` (a git repository); every path in it, with whether it is a folder."""
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    paths = {}
    for name in TREE_FILES:
        parts = name.split("/")
        for depth in range(1, len(parts)):
            paths["/".join(parts[:depth])] = True
        paths.setdefault(name, False)
    for name, is_dir in sorted(paths.items()):
        if is_dir:
            os.makedirs(root / name, exist_ok=True)
        else:
            (root / name).write_text("")
    return sorted(paths.items())


def _git_ignores(root, lines: list[str], paths: list[str]) -> set[str]:
    (root / ".gitignore").write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    result = subprocess.run(["git", "check-ignore", "--no-index", "-z", "--stdin"], cwd=root, check=False,
                            input=("\0".join(paths) + "\0").encode(), capture_output=True, timeout=60)
    assert result.returncode in (0, 1), result.stderr
    return {name for name in result.stdout.decode().split("\0") if name}


def _ours(root, lines: list[str], tree) -> set[str]:
    patterns = PatternSet(str(root), lines)
    return {name for name, is_dir in tree if patterns.excluded(str(root / name), is_dir)}


needs_git = pytest.mark.skipif(shutil.which("git") is None or os.sep != "/",
                               reason="needs git, and file names holding `*`, `?` and `\\`")


@pytest.fixture(scope="module")
def git_repo(tmp_path_factory):
    root = tmp_path_factory.mktemp("gitignore")
    return root, _git_tree(root)


@needs_git
def test_examples_are_what_git_does(tmp_path):
    """Each example, in a repository of its own that holds its path."""
    for number, (pattern, path, is_dir, ignored) in enumerate(EXAMPLES):
        root = tmp_path / f"case{number}"
        subprocess.run(["git", "init", "-q", str(root)], check=True)
        target = root / path
        if is_dir:
            target.mkdir(parents=True)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text("")
        assert (path in _git_ignores(root, [pattern], [path])) is ignored, (pattern, path)


TOKENS = ["a", "b", "ab", "z", ".", "-", "/", "/", "*", "**", "?", "[ab]", "[!a]", "[^b]", "[a-b]", "[b-a]",
          "[]a]", "[", "]", "\\", "\\*", "\\/", "[[:alpha:]]", "[[:x:]]", " ", "!", "#", "json"]
patterns = st.lists(st.sampled_from(TOKENS), min_size=1, max_size=8).map("".join)


@needs_git
@settings(FAST, max_examples=400)
@given(lines=st.lists(patterns, min_size=1, max_size=3))
def test_matches_git_check_ignore(git_repo, lines):
    root, tree = git_repo
    assert _ours(root, lines, tree) == _git_ignores(root, lines, [name for name, _ in tree]), lines


# -- against the regex translation dsconfig used before ---------------------------------------------------


def _old_translate(body: str) -> str:
    """dsconfig's regex translation before the automaton (backtracks; read some patterns unlike git)."""
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
                if before_ok and after == "/":
                    out.append("(?:.*/)?")
                    i += 3
                    continue
                if before_ok and i + 2 == n:
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
            if j >= n:
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


def _old_match(line: str, rel: str, is_dir: bool) -> bool | None:
    negated = line.startswith("!")
    line = line[1:] if negated else line
    dir_only = line.endswith("/")
    body = line.rstrip("/")
    if dir_only and not is_dir:
        return None
    return (not negated) if re.match(_old_translate(body) + r"\Z", rel, re.DOTALL) else None


def _old_read_it_as_git_does(pattern: str, rel: str) -> bool:
    """Where the old translation was wrong: `***`, a `**` after a literal prefix (dir.c's quirk), more than
    one leading or trailing `/`, and a negated class, which could match a `/`."""
    runs = [m for m in re.finditer(r"\*+", pattern) if len(m.group()) > 1]
    return (all(len(m.group()) == 2 and (m.start() == 0 or pattern[m.start() - 1] == "/") for m in runs)
            and not pattern.lstrip("!").startswith("//") and not pattern.endswith("//")
            and not ("[!" in pattern and "/" in rel))


OLD_TOKENS = ["a", "b", ".", "/", "*", "**", "?", "[ab]", "[a-b]", "[!a]", "\\*", "json"]
segments = st.lists(st.text(alphabet="ab.*", min_size=1, max_size=4), min_size=1, max_size=4)


@settings(FAST, max_examples=1500)
@given(pattern=st.lists(st.sampled_from(OLD_TOKENS), min_size=1, max_size=7).map("".join),
       negated=st.booleans(), parts=segments, is_dir=st.booleans())
def test_agrees_with_the_old_translation(pattern, negated, parts, is_dir):
    rel = "/".join(parts)
    line = ("!" if negated else "") + pattern
    if not _old_read_it_as_git_does(pattern, rel) or not pattern.strip("/"):
        return
    assert PatternSet("/base", [line]).match(rel, is_dir) == _old_match(line, rel, is_dir), (line, rel)


# -- time ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("pattern", ["*a" * 8 + "*b", "*a" * 8 + "*[b]", "*a" * 40 + "*?b*", "**/" + "*a" * 20 + "*[b]",
                                     "a/**/" * 20 + "[b]", "[!b]*" * 30 + "[b]", "x/a**/" + "**/*a" * 20 + "*[b]"])
def test_matching_time_is_linear(pattern):
    """A backtracking regex translation takes minutes to hours on these (8 x `*a`: 29 s on a 60-character name)."""
    patterns = PatternSet("/base", [pattern, "!" + pattern + "/"])
    name = "a" * 255
    start = time.perf_counter()
    for path in (name, "/".join([name] * 16), "x/" + "/".join(["a"] * 2000)):
        assert patterns.match(path, True) is None
    assert time.perf_counter() - start < 1.0


def test_the_step_cache_is_bounded():
    pattern = compile_pattern("**/*[0-9]*.json")
    for number in range(20_000):
        assert pattern.matches(f"run{number}/model_{number}.json")
    rows = pattern._automaton._rows
    assert sum(len(row) for row in rows.values()) <= pattern._automaton.CACHE + 1


# -- patterns git would not match as written ---------------------------------------------------------------


@pytest.mark.parametrize("pattern, says", [
    ("[z-a]*.json", "the range z-a is reversed, so git reads it as z alone (write a-z)"),
    ("conf[igs/*.json", "the `[` at character 5 is never closed, so git matches nothing with this pattern"),
    ("[!]", "the `[` at character 1 is never closed"),
    ("[a\\", "the `[` at character 1 is never closed"),
    ("[[:word:]]", "`[:word:]` is not a character class (alnum, alpha, blank,"),
    ("[[::]]", "`[::]` is not a character class"),
    ("configs\\", "it ends with a lone `\\`, so git matches nothing with this pattern"),
    ("# old configs", "it is empty or a comment in gitignore syntax"),
    ("", "it is empty or a comment in gitignore syntax"),
])
def test_problem_says_what_git_would_not_match(pattern, says):
    assert says in problem(pattern)


@pytest.mark.parametrize("pattern", ["*.json", "configs/**", "/build/", "!keep.json", "[a-z]*", "[]]", "[!]a]",
                                     "\\[literal]", "[[:digit:]]*", "[[:]", "a\\ ", "\\#notes", "**/gen/*.json"])
def test_good_patterns_have_no_problem(pattern):
    assert problem(pattern) is None
