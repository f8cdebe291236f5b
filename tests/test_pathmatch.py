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
from pathlib import Path

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


# -- repeated `**`: the same paths as one, in one pass over a path -----------------------------------------

# each with the single-`**` pattern git reads it as (`a/**/**/b` matches exactly what `a/**/b` does)
REPEATED = [("**/**/a", "**/a"), ("**/**/**/**/b", "**/b"), ("q/**/**/b", "q/**/b"), ("q/**/**/**", "q/**"),
            ("**/**/*.json", "**/*.json"), ("q/**/**/b/", "q/**/b/"), ("**/**/a/**/**/b", "**/a/**/b"),
            ("!**/**/a", "!**/a"), ("/**/**/z", "/**/z"), ("**/**/**/**/x*", "**/x*")]


@pytest.mark.parametrize("repeated, single", REPEATED)
def test_repeated_globstar_matches_what_one_does(repeated, single):
    tree = {}  # the paths of TREE_FILES and their folders (matching reads no disk)
    for name in TREE_FILES:
        parts = name.split("/")
        tree.update(("/".join(parts[:depth]), True) for depth in range(1, len(parts)))
        tree.setdefault(name, False)
    repeated, single = _lines(repeated), _lines(single)
    assert _ours(Path("/base"), repeated, tree.items()) == _ours(Path("/base"), single, tree.items())
    assert _ours(Path("/base"), repeated, tree.items())  # each matches something


@needs_git
@pytest.mark.parametrize("repeated, single", REPEATED)
def test_repeated_globstar_is_what_git_does(repeated, single, git_repo):
    root, tree = git_repo
    paths = [name for name, _ in tree]
    repeated, single = _lines(repeated), _lines(single)
    assert _ours(root, repeated, tree) == _git_ignores(root, repeated, paths) == _git_ignores(root, single, paths)


def _lines(pattern: str) -> list[str]:
    """The pattern, after `*` when it takes paths back."""
    return ["*", pattern] if pattern.startswith("!") else [pattern]


def test_repeated_globstar_on_a_deep_path():
    """150 folders and four `**`: the verdicts of one `**`, at every depth."""
    names = ["a"] * 150
    names[99] = "b"
    path = "/".join(names) + "/x.json"
    for repeated, single in [("**/**/**/**/b", "**/b"), ("**/**/**/**/b/**/**/x*", "**/b/**/x*"),
                             ("a/**/**/**/**/a/x.json", "a/**/a/x.json"), ("**/**/**/**/c", "**/c"),
                             ("**/**/a/**/**/a/**/**/*.json", "**/a/**/a/**/*.json")]:
        for pattern in (repeated, single):
            ours = PatternSet("/base", [pattern])
            expected = [_excluded_folder_by_folder(ours, "/".join(names[:depth]), True) for depth in range(1, 151)]
            assert [ours.excluded("/base/" + "/".join(names[:depth]), True) for depth in range(1, 151)] == expected
        assert PatternSet("/base", [repeated]).excluded("/base/" + path) == \
            PatternSet("/base", [single]).excluded("/base/" + path), repeated
    assert PatternSet("/base", ["**/**/**/**/b"]).excluded("/base/" + path)
    assert not PatternSet("/base", ["**/**/**/**/c"]).excluded("/base/" + path)


def _excluded_folder_by_folder(patterns: PatternSet, rel: str, is_dir: bool) -> bool:
    """What PatternSet.excluded says, as it said it before reading a path once: `match` on each folder."""
    parts = rel.split("/")
    return (any(patterns.match("/".join(parts[:depth]), True) for depth in range(1, len(parts)))
            or bool(patterns.match(rel, is_dir)))


path_names = st.lists(st.sampled_from(["a", "b", "ab", "z", "x.json", "a.json", "gen", "q"]), min_size=1, max_size=7)


@settings(FAST, max_examples=1500)
@given(lines=st.lists(patterns, min_size=1, max_size=3), names=path_names, is_dir=st.booleans())
def test_excluded_reads_each_folder_as_match_does(lines, names, is_dir):
    """One pass over the path gives each folder the verdict `match` gives it (the last pattern matching wins)."""
    ours = PatternSet("/base", lines)
    rel = "/".join(names)
    assert ours.excluded("/base/" + rel, is_dir) == _excluded_folder_by_folder(ours, rel, is_dir), (lines, rel)


# -- glob_paths: what glob.glob(recursive=True) returns, each path once --------------------------------------

GLOB_FILES = ["top.json", ".dot.json", "a/x.json", "a/b/y.json", "a/b/c/z.yaml", "a/.h/c/q.json", ".hid/x/r.json",
              "d/a/a/b/s.json", "d/a/t.yaml", "e/f.json", "w i/g.json", "node_modules/p/n.json", "f.json/inner.json"]


@pytest.fixture(scope="module")
def glob_tree(tmp_path_factory):
    """A tree with hidden files and folders, a link to a folder, a dangling link, a folder named like a file."""
    root = tmp_path_factory.mktemp("globs") / "sandbox" / "tree"  # `..` stays inside tmp_path
    for name in GLOB_FILES:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("{}")
    if os.sep == "/":
        os.symlink("../a", root / "d" / "link")
        os.symlink("nowhere", root / "e" / "dangle.json")
    return root


GLOBS = ["*", "**", "**/*", "**/**", "**/**/**", "*.json", "**/*.json", "**/**/*.json", "**/**/**/**/*.json",
         "./**/*.json", ".//**//*.json", "a/**", "a/**/**", "a/**/", "a/**/**/", "**/", "**/**/", "**/b/*",
         "**/b/**/*.yaml", "**/a/**/*.json", "**/a/**/a/**", "**/.h/**", "**/.*", ".*/**", "*/.*/**/*.json",
         "**/..", "**/../*.json", "a/*/../*", "*/link/**", "**/link/*", "**/[ab]/*", "**/?.json", "e/*",
         "e/dangle.json*", "**/*.json/", "f.json/**", "**/**/f.json", "nothing/**/*.json", "**/nothing",
         "a/**/**/b/**/**/c/**/**/*.yaml", "../tree/**/*.json", "*/", "*/*/", "[!a]*/**"]


@pytest.mark.parametrize("pattern", GLOBS)
def test_glob_paths_are_those_of_glob_glob(pattern, glob_tree, monkeypatch):
    import glob

    from dsconfig.pathmatch import glob_paths
    monkeypatch.chdir(glob_tree)
    assert glob_paths(pattern) == sorted(set(glob.glob(pattern, recursive=True)))
    absolute = os.path.join(str(glob_tree), pattern)
    assert glob_paths(absolute) == sorted(set(glob.glob(absolute, recursive=True)))


glob_components = st.lists(st.sampled_from(["**", "**", "*", "a", "b", "c", "*.json", "?", "[ab]", ".*", ".h", "..",
                                            ".", "", "link", "d", "x*"]), min_size=1, max_size=5)


@settings(FAST, max_examples=300)
@given(components=glob_components, start=st.sampled_from(["", "./", "a/", "../tree/"]), slash=st.booleans())
def test_glob_paths_agree_with_glob_glob(components, start, slash, glob_tree, monkeypatch):
    import glob

    from dsconfig.pathmatch import glob_paths
    pattern = start + "/".join(components) + ("/" if slash else "")
    if components.count("**") > 3 or components.count("..") > 1 or pattern.startswith("/"):
        return  # glob.glob takes minutes there (depth^k), or reads the whole disk
    monkeypatch.chdir(glob_tree)
    assert glob_paths(pattern) == sorted(set(glob.glob(pattern, recursive=True))), pattern


def _deep_tree(root, depth: int = 150) -> list[str]:
    """a/a/.../a (depth folders) with a config at a few depths: the paths from `root`, sorted."""
    files = []
    for level in (1, 2, 75, depth):
        folder = os.path.join(*["a"] * level)
        os.makedirs(root / folder, exist_ok=True)
        (root / folder / "ds_config.json").write_text('{"train_micro_batch_size_per_gpu": 4}')
        files.append(os.path.join(folder, "ds_config.json"))
    return sorted(files)


def test_glob_paths_of_repeated_globstar_over_a_deep_tree(tmp_path, monkeypatch):
    """glob.glob yields the deepest file C(153, 3) times for four `**` (and takes hours): each path once here."""
    from dsconfig.pathmatch import glob_paths
    files = _deep_tree(tmp_path)
    monkeypatch.chdir(tmp_path)
    for pattern in ("**/**/**/**/*.json", "**/*.json", "**/**/a/**/**/ds_config.json", "a/**/**/**/**/*.json"):
        assert glob_paths(pattern) == files, pattern
    assert glob_paths("**/a/**/a/**/**/*.json") == [name for name in files if name != "a/ds_config.json"]
    assert glob_paths("./**/**/**/**/*.json") == ["./" + name for name in files]
    folders = glob_paths("**/**/**/**/")
    assert len(folders) == len(set(folders)) == 150


@pytest.mark.parametrize("pattern", ["./**/**/**/**/*.json", "**/**/**/**/*.json", "./**/**/**/**", "**/**/**/**",
                                     "**/**/a/**/**/*.json", "./**/**/**/**/"])
def test_expand_glob_of_a_deep_tree_finds_each_file_once(pattern, tmp_path, monkeypatch):
    from dsconfig.boundary import Boundary
    from dsconfig.engine import _expand_glob
    (tmp_path / ".git").mkdir()
    files = _deep_tree(tmp_path)
    monkeypatch.chdir(tmp_path)
    problems: list = []
    found = _expand_glob(pattern, None, True, problems, Boundary(()), [])
    assert sorted(os.path.normpath(path) for path in found) == files and len(found) == len(files)
    assert problems == []


def test_expand_glob_with_repeated_globstar_keeps_what_one_globstar_skips(tmp_path, monkeypatch):
    """Hidden and VCS folders, exclude, .gitignore, special files: `**/**/**` collects what `**` does."""
    from dsconfig.boundary import Boundary
    from dsconfig.engine import _expand_glob
    for name in ["ds.json", "c/ds.json", "c/d/ds.json", ".hidden/ds.json", "node_modules/p/ds.json", "build/ds.json",
                 "c/skip.json", "c/d/old/ds.json", "c/notes.txt"]:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("{}")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text("build/\nold/\n")
    if hasattr(os, "mkfifo"):
        os.mkfifo(tmp_path / "c" / "pipe.json")
    monkeypatch.chdir(tmp_path)
    exclude = PatternSet(str(tmp_path), ["**/skip.json"])

    def collected(pattern):
        problems: list = []
        found = _expand_glob(pattern, exclude, True, problems, Boundary(()), [])
        return found, [(problem.file, problem.message) for problem in problems]

    expected = collected("**/*.json")
    assert expected[0] == ["c/d/ds.json", "c/ds.json", "ds.json"]
    assert [file for file, _ in expected[1]] == (["c/pipe.json"] if hasattr(os, "mkfifo") else [])
    for pattern in ("**/**/*.json", "**/**/**/**/*.json", "**/**/**/*.json"):
        assert collected(pattern) == expected, pattern
    # folders matched: walked once, the walk of the top pruning what it does not lint
    assert sorted(collected("./**/**/**")[0]) == sorted(collected("./**")[0]) == ["./c/d/ds.json", "./c/ds.json",
                                                                                   "./ds.json"]
    assert collected("./**/**/**")[1] == collected("./**")[1]
