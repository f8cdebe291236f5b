"""Lint files: collect, read, classify, pair, run the checks for each file's kind, locate every finding.

The data flows one way. The engine reads every file once, asks dsconfig.pairs which Accelerate
YAMLs name a ds_config.json (that JSON is then linted as the launch uses it), runs the checks of
each file's kind (dsconfig.deepspeed, dsconfig.accelerate, dsconfig.other), turns pointers into
lines and columns, and returns the findings in file order with the documents they are about.

Every file is read through dsconfig.files, inside the reading boundary of the run (dsconfig.boundary),
and checked inside its budget (dsconfig.budget). A file whose reading or checks crash is returned in
`crashed`, for the caller to report after the others: one file never hides the rest of a walk.
"""

from __future__ import annotations

import os
from typing import Iterable, NamedTuple

from . import budget, pairs
from .boundary import Boundary, inside, observe, repository_root, special, under_system_folder
from .document import DictDocument, Document, JsonDocument
from .files import os_reason
from .findings import Finding
from .launch import LAUNCH_SUFFIXES
from .phases import LOAD, PARSE, SILENT
from .rules.files import (
    FILE_TOO_LARGE,
    NOT_A_CONFIG,
    OPTION_UNUSED,
    PARSE_ERROR,
    REFERENCE_NOT_FOLLOWED,
    UNREADABLE_FILE,
)
from .targets import HF_TRAINER, Target

CONFIG_SUFFIXES = (".json", ".yaml", ".yml", ".toml")
SCRIPT_SUFFIX = ".py"  # training scripts, read statically (dsconfig.training.scripts)
LINTED_SUFFIXES = CONFIG_SUFFIXES + (SCRIPT_SUFFIX,) + LAUNCH_SUFFIXES
# A run over more files than this keeps each file's text but not its parse tree (Document.release: read again
# when needed), so memory follows the findings rather than the tree; a smaller one parses each file once.
KEEP_PARSED = 200
# The run options a DeepSpeed config's batch checks use (one set shared by every document that used them)
BATCH_OPTIONS = frozenset(("world_sizes", "dataset_size", "batchnorm"))
_SKIP_DIRS = {".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", ".tox", ".mypy_cache",
              ".pytest_cache", ".hypothesis", "site-packages"}


class Options(NamedTuple):
    target: Target | None = None  # None: hf-trainer when the file holds "auto", else deepspeed
    world_sizes: tuple[int, ...] | None = None
    kind: str | None = None  # None: detect; "deepspeed" forces DeepSpeed rules on a JSON file
    gpus: int | None = None  # --gpus (per machine) and --nodes, when given: Accelerate's num_processes is the total
    nodes: int | None = None
    training_args: dict | None = None  # --training-args: TrainingArguments values for the HF Trainer checks
    launch_links: tuple = ()  # `lint -- COMMAND`: the configs that command hands to training (launch.project.Link)
    launch_commands: tuple = ()  # `lint -- COMMAND`: the command's launch, when it is checked itself (DS706)
    dataset_size: int | None = None  # --dataset-size: adds the steps-per-epoch table
    # Text to lint instead of a file's bytes on disk, by real path: stdin, and `--fix` between passes.
    sources: dict | None = None
    max_bytes: int | None = None  # larger files are not read (DS007); None: files.MAX_BYTES
    # Files found by walking or globbing, not named: one that cannot be read is a finding (DS008), not exit 2.
    found: frozenset = frozenset()
    # Where a file a config names may be opened (with the naming YAML's folder); None: the files linted.
    boundary: Boundary | None = None
    # --framework: how the training loop iterates the data (dsconfig.training.epochs.FRAMEWORKS); None: unknown
    framework: str | None = None
    # --batchnorm, or a linted script builds BatchNorm layers: one sample per device is an error
    batchnorm: bool = False
    # --batch-key / [tool.dsconfig] batch-keys: ((JSON pointer, "per-device" | "global"), ...) over the name rules
    batch_keys: tuple[tuple[str, str], ...] = ()
    # Where world_sizes came from when no option gave them: "launched by accelerate_config.yaml" (training configs)
    world_source: str | None = None
    # The DeepSpeed release whose behaviour is replayed (dsconfig.deepspeed.releases.SUPPORTED); None: the newest
    deepspeed_version: str | None = None
    # --model: the model's module classes (dsconfig.accelerate.model_layers.ModelLayers), for FSDP's layer classes
    model: object = None
    # The input is a Python dict handed to DeepSpeed as it is (dsconfig.check(dict)): no loader reads it
    python_dict: bool = False


class LintResult(NamedTuple):
    findings: list[Finding]  # placed, in the order of the files given, each file's sorted
    documents: dict[str, Document]  # the documents a finding is about, by path as given (--fix, source frames)
    scripts: object = None  # dsconfig.training.scripts.ScriptsResult when .py files were linted, else None
    # Checks that crashed, one InternalError per file: that file is reported as not checked, the others are
    crashed: tuple = ()
    # path -> kind of every document linted: `documents` keeps only those a finding is about (each released of its
    # parse tree once checked), so that memory follows the findings, not the size of the tree walked
    linted: dict = {}
    # DS010 about the whole run (unplaced): run options that no check of any file used, while no file said so
    unused: Finding | None = None


class UsageError(Exception):
    """A problem with what the user asked for (missing path, unreadable file): exit code 2."""


class InternalError(Exception):
    """A check crashed on a file: dsconfig's bug, not the file's (exit code 2)."""

    def __init__(self, path: str, error: BaseException):
        super().__init__(f"{path}: {type(error).__name__}: {error}")
        self.path = path


class Collection(NamedTuple):
    files: list[str]  # to lint, in the order given
    found: frozenset[str]  # those found in a folder or by a glob rather than named: a failure to read one is DS008
    problems: list[Finding]  # entries of walked folders that cannot be linted (DS008, DS009), placed
    boundary: Boundary  # what was asked for: the folders and files given, the files globs matched
    missing: tuple[str, ...] = ()  # "path: why" for each path given that is not there; the others are linted
    gitignored: int = 0  # config files (.json, .yaml, .yml, .toml) a walk skipped because git ignores them


def collect(paths: Iterable[str], exclude=None, virtual: Iterable[str] = (), gitignore: bool = True,
            allowed: Boundary = Boundary(())) -> Collection:
    """Expand folders and globs into the config-looking files below them; keep explicit files as given.

    Folders are walked recursively, skipping VCS, virtualenv and cache folders, hidden folders, what
    `exclude` (a pathmatch.PatternSet) matches and, with `gitignore`, what the .gitignore files of the
    walked folders (and of their parents up to the repository root) ignore. A path holding `*`, `?` or
    `[` that does not exist as written is a glob (`**` recurses), expanded the same way. `exclude` also
    applies to files named explicitly (so a pre-commit run honours it); .gitignore does not. `virtual`
    names inputs that are not on disk (stdin). A walk never follows a symbolic link out of the folder
    walked (unless into a place `allowed`), never opens a FIFO, socket or device, and reports an entry
    it cannot read instead of stopping (DS008, DS009). A path given that is missing, or a glob that
    matches nothing, goes to `missing` and the rest is collected; a folder that cannot be read or holds
    nothing to lint is a UsageError.
    """
    files: list[str] = []
    found: list[str] = []
    problems: list[Finding] = []
    roots: list[str] = []
    missing: list[str] = []
    ignored: list[str] = []  # config files skipped because git ignores them (said in the summary)
    virtual = set(virtual)
    for path in paths:
        if path in virtual:
            files.append(path)
        elif os.path.isdir(path):
            reported = len(problems)
            walked = _walk(path, exclude, gitignore, problems, allowed, ignored)
            if not walked and len(problems) == reported:
                raise UsageError(f"{path}: no .json, .yaml, .yml, .toml or .py file to lint in this folder or below it")
            files.extend(walked)
            found.extend(walked)
            roots.append(path)
        elif os.path.exists(path):
            if exclude and exclude.excluded(path):
                continue
            refused = _named_link(path, allowed)
            if refused is not None:
                problems.append(refused)
                continue
            files.append(path)
            roots.append(path)
        elif _is_glob(path):
            reported = len(problems)
            matched = _expand_glob(path, exclude, gitignore, problems, allowed, ignored)
            if not matched and len(problems) == reported:
                missing.append(f"{path}: no file matches this pattern")
            files.extend(matched)
            found.extend(matched)
            roots.extend(matched)
        else:
            missing.append(f"{path}: {_missing(path)}")
    named = set(files) - set(found)
    return Collection(list(dict.fromkeys(files)), frozenset(found) - named, problems, Boundary.of(roots),
                      tuple(missing), len(set(ignored)))


def _named_link(path: str, allowed: Boundary) -> Finding | None:
    """DS009 for a named file that is a symbolic link to a special file or out of the working tree.

    The pre-commit hook names every changed file, and a pull request can add `ds_config.json ->
    /proc/self/environ` or a link to a credentials file: such a link is not followed. A path the user
    wrote under /dev or /proc (`<(cat ds_config.json)`, /dev/stdin) is read as asked."""
    if not os.path.islink(path) or os.path.abspath(path).startswith(("/dev/", "/proc/")):
        return None
    real = os.path.realpath(path)
    why = special(path)
    if why is None:
        beside = os.path.realpath(os.path.dirname(os.path.abspath(path)))
        if inside(real, os.path.realpath(os.getcwd())) or inside(real, beside) or allowed.admits(real):
            return None
        why = "outside the working directory: not followed (dsconfig reads only the tree it is asked to lint; " \
              "--allow-read to lint it)"
    else:
        why += ": not followed (dsconfig never opens a special file a link leads to)"
    finding = Finding(REFERENCE_NOT_FOLLOWED, f"a symbolic link to {real}, {why}")
    finding.file = path
    return finding


def _missing(path: str) -> str:
    """Why a path that os.path.exists denies is not there: a symlink loop or a dangling link say so."""
    import errno

    try:
        os.stat(path)
    except OSError as error:
        if error.errno != errno.ENOENT or os.path.islink(path):
            return os_reason(path, error)
    return "no such file or directory"


def _is_glob(path: str) -> bool:
    return any(c in path for c in "*?[")


def _expand_glob(pattern: str, exclude, gitignore: bool, problems: list, allowed: Boundary,
                 ignored: list) -> list[str]:
    """The files the glob matches and those below the folders it matches, each once (glob.glob yields a path
    once per way of splitting it between repeated `**`: depth^k times)."""
    from .pathmatch import glob_paths
    found: list[str] = []
    walked: set[str] = set()  # the folders walked, each ending in a separator
    base = _glob_base(pattern)
    base_real = os.path.realpath(base)
    tracked = _Tracked(base)

    def admitted(real: str) -> bool:  # glob.glob follows links: nothing out of the base is listed or linted
        return inside(real, base_real) or allowed.admits(real)

    for match in glob_paths(pattern, lambda folder: admitted(os.path.realpath(folder or os.curdir))):
        real = os.path.realpath(match)
        if not admitted(real):
            if not os.path.isdir(match):  # a folder linked in from elsewhere is passed in silence, as in a walk
                problems.append(_link_out(match, real, base))
            continue
        if os.path.isdir(match):
            # a `**` matches a folder and each folder below it (and `x/`, none below `x`): one walk reads them
            # all, and pruned what it does not lint (a walk of each read the tree depth times, depth² paths)
            if not any(match[:i + 1] in walked for i, c in enumerate(match) if c == os.sep):
                walked.add(os.path.join(match, ""))
                found.extend(_walk(match, exclude, gitignore, problems, allowed, ignored))
            continue
        parts = os.path.normpath(match).split(os.sep)[:-1]
        if any(part in _SKIP_DIRS or (part.startswith(".") and part not in (".", "..")) for part in parts):
            continue
        if not match.endswith(LINTED_SUFFIXES) or (exclude and exclude.excluded(match)):
            continue
        if gitignore and _gitignored(match, problems) and not tracked.holds(match, False):
            if match.endswith(CONFIG_SUFFIXES):
                ignored.append(match)
            continue
        why = special(match)
        if why is not None:
            problems.append(_entry_problem(match, why))
            continue
        found.append(match)
    return list(dict.fromkeys(found))  # a file matched in a folder matched is found twice


def _glob_base(pattern: str) -> str:
    """The folder a glob starts from: its components before the first that holds `*`, `?` or `[` (`.`: none)."""
    parts = pattern.split(os.sep)
    literal = []
    for part in parts[:-1]:
        if _is_glob(part):
            break
        literal.append(part)
    return os.sep.join(literal) or (os.sep if pattern.startswith(os.sep) else ".")


def _walk(top: str, exclude, gitignore: bool, problems: list, allowed: Boundary, ignored: list) -> list[str]:
    """The config-looking files below `top`; what cannot be linted goes to `problems`, the config files git
    ignores to `ignored`. A file git tracks is linted whatever a .gitignore says, as git keeps it."""
    inherited = _parent_gitignores(top, problems) if gitignore else []
    tracked = _Tracked(top)
    top_real = os.path.realpath(top)
    found: list[str] = []
    visited = {top_real}  # real folders entered: a link back up would otherwise loop forever
    # (folder, the .gitignore pattern sets in force there, whether the folder itself is ignored: entered for
    # the files git tracks in it)
    stack = [(top, top_real, inherited, False)]
    while stack:
        root, root_real, ignores, ignored_folder = stack.pop()
        if gitignore:
            own = _read_gitignore(root, problems)
            if own is not None:
                ignores = ignores + [own]
        observe(root_real)  # its listing decides what is linted: a rerun from the cache checks it
        try:
            entries = sorted(os.scandir(root), key=lambda e: e.name)
        except OSError as error:
            if root == top:
                raise UsageError(f"{root}: cannot read folder: {error.strerror or error}") from None
            problems.append(_entry_problem(root, f"cannot read folder: {error.strerror or error}"))
            continue
        folders, ignored_folders = [], []
        for entry in entries:
            path = os.path.join(root, entry.name)
            try:
                is_link = entry.is_symlink()
                is_dir = entry.is_dir()  # follows a link
            except OSError as error:
                problems.append(_entry_problem(path, os_reason(path, error)))
                continue
            if is_dir:
                if entry.name in _SKIP_DIRS or entry.name.startswith("."):
                    continue
            elif not entry.name.endswith(LINTED_SUFFIXES):
                continue
            if exclude and exclude.excluded(path, is_dir):
                continue
            if gitignore and (ignored_folder or _ignored_by(ignores, path, is_dir)):
                if not tracked.holds(path, is_dir):
                    if not is_dir and entry.name.endswith(CONFIG_SUFFIXES):
                        ignored.append(path)
                    continue
                if is_dir:
                    real = os.path.join(root_real, entry.name)
                    if not is_link and real not in visited:
                        visited.add(real)
                        ignored_folders.append((path, real))
                    continue
            # the real path of an entry that is no link is its real folder's and its name (no lstat per part)
            real = os.path.realpath(path) if is_link else os.path.join(root_real, entry.name)
            if is_link:
                if os.path.exists(path) and not (inside(real, top_real) or allowed.admits(real)):
                    if not is_dir:  # a folder linked in from elsewhere (`data -> /datasets`) is passed in silence
                        problems.append(_link_out(path, real, top))
                    continue
            if is_dir:
                if real not in visited:
                    visited.add(real)
                    folders.append((path, real))
                continue
            # a dangling link, a loop, a FIFO, a device: never opened (the folder listing says a plain file is one)
            plain = not is_link and entry.is_file(follow_symlinks=False)
            why = under_system_folder(real) if plain else special(path)
            if why is not None:
                problems.append(_entry_problem(path, why))
                continue
            found.append(path)
        below = [(folder, real, ignores, ignored_folder) for folder, real in folders]
        below += [(folder, real, ignores, True) for folder, real in ignored_folders]
        stack.extend(sorted(below, reverse=True))
    return found


class _Tracked:
    """What git tracks in the work tree holding a walked folder (dsconfig.gitindex), read the first time a
    .gitignore pattern matches: a walk nothing ignores never reads the index."""

    def __init__(self, top: str):
        self.top = top
        self.index = None
        self.read = False

    def holds(self, path: str, is_dir: bool) -> bool:
        if not self.read:
            from . import gitindex
            root = repository_root(os.path.abspath(self.top))
            self.index = gitindex.tracked(root) if root is not None else None
            self.read = True
        return self.index is not None and self.index.holds(path, is_dir)


def _entry_problem(path: str, why: str) -> Finding:
    """DS008 for an entry of a walked folder that cannot be linted."""
    from . import detect
    named = detect.named_like_deepspeed(path) or detect.named_like_accelerate(path)
    finding = Finding(UNREADABLE_FILE, f"{why}; not linted", fails_in=LOAD if named else SILENT)
    finding.file = path
    return finding


def _link_out(path: str, real: str, top: str) -> Finding:
    finding = Finding(REFERENCE_NOT_FOLLOWED, f"a symbolic link to {real}, outside {top}: not followed (dsconfig "
                                              "opens only what it is asked to lint; give that path too, or "
                                              "--allow-read it)")
    finding.file = path
    return finding


def _ignored_by(ignores, path: str, is_dir: bool) -> bool:
    """The deepest .gitignore that has a say wins, as in git."""
    verdict = None
    for patterns in ignores:
        rel = patterns.relative(path)
        if rel is None:
            continue
        said = patterns.match(rel, is_dir)
        if said is not None:
            verdict = said
    return bool(verdict)


def _read_gitignore(folder: str, problems: list | None):
    """The folder's .gitignore patterns, or None; one that cannot be read is reported (DS008), as git warns."""
    from .files import FileError, TooLarge
    from .pathmatch import read_gitignore
    try:
        return read_gitignore(folder)
    except TooLarge:
        raise
    except FileError as error:
        if problems is not None:
            path = os.path.join(folder, ".gitignore")
            problems.append(_entry_problem(path, _without_path(path, UsageError(str(error))) + "; its patterns are "
                                                 "not applied, so what it ignores is linted"))
        return None


def _parent_gitignores(folder: str, problems: list | None = None) -> list:
    """The .gitignore files above `folder`, up to the repository root (the folder holding .git)."""
    current = os.path.abspath(folder)
    root = repository_root(current)
    if root is None:
        return []  # not inside a repository: only the walked folders' own .gitignore files count
    chain = []
    while current != root:
        current = os.path.dirname(current)
        chain.append(current)
    return [patterns for folder_ in reversed(chain) if (patterns := _read_gitignore(folder_, problems)) is not None]


def _gitignored(path: str, problems: list | None = None) -> bool:
    folder = os.path.dirname(os.path.abspath(path))
    ignores = _parent_gitignores(folder, problems)
    own = _read_gitignore(folder, problems)
    if own is not None:
        ignores.append(own)
    if not ignores:
        return False
    # a file is ignored when it or any folder between it and a .gitignore is
    parts = os.path.abspath(path).split(os.sep)
    for depth in range(2, len(parts) + 1):
        candidate = os.sep.join(parts[:depth]) or os.sep
        if _ignored_by(ignores, candidate, depth < len(parts)):
            return True
    return False


def lint_files(files: list[str], options: Options, config_values: dict | None = None) -> LintResult:
    """Lint files together, so an Accelerate YAML and its ds_config.json are linted as one launch, and
    training scripts together, so imports between them resolve. `config_values`: dotted batch keys of the
    project's training configs ("train.batch_size" -> 8), for the scripts' steps-per-epoch table."""
    with budget.alarm_ready():  # each file's time limit only sets its timer
        return _lint_files(files, options, config_values)


def _lint_files(files: list[str], options: Options, config_values: dict | None) -> LintResult:
    _use_release(options)
    findings: list[Finding] = []
    documents: dict[str, Document] = {}
    docs: dict[str, Document] = {}
    spelled: dict[str, str] = {}  # real path -> the path as the user gave it
    crashed: list[InternalError] = []
    many = len(files) > KEEP_PARSED
    # A DeepSpeed config is checked as soon as it is read, while its parse tree is at hand; the result stands
    # unless the rest of the run changes its context (an Accelerate YAML pairs it, a script builds BatchNorm).
    checked_early: dict[str, list[Finding] | InternalError] = {}
    used: set[str] = set()  # the run options some check used (for DS010 about the whole run)
    scripts = [path for path in files if path.endswith(SCRIPT_SUFFIX) and options.kind is None]
    launch_scripts = [path for path in files if path.endswith(LAUNCH_SUFFIXES) and options.kind is None]
    for path in files:
        if path.endswith((SCRIPT_SUFFIX,) + LAUNCH_SUFFIXES) and options.kind is None:
            continue
        real = os.path.realpath(path)
        if real in spelled:
            continue
        spelled[real] = path
        try:
            with budget.per_file():
                doc, unreadable = read_document(path, options, real=real)
                if doc is not None and doc.kind == "deepspeed":
                    checked_early[real] = _checked(doc, options)
        except UsageError as error:
            if path not in options.found:
                raise
            doc, unreadable = None, [_entry_problem(path, _without_path(path, error))]
        except (Exception, budget.Overrun) as error:  # reading this one file crashed: dsconfig's bug, reported
            crashed.append(InternalError(path, error))
            continue
        findings.extend(unreadable)
        if doc is not None:
            docs[real] = doc
            if doc.kind != "accelerate" and len(docs) > KEEP_PARSED:
                doc.release()  # a large walk: read again if checked again, so that one parse tree at a time is held

    # Scripts read the training configs' batch sizes (hps.train.batch_size); the configs are checked
    # knowing whether a script builds BatchNorm layers.
    script_result = None
    asked = options  # what the user gave: DS010 is about these, not what the scripts revealed
    shell_launched: dict[str, list] = {}  # training config real path -> the launches that name it
    if scripts:
        values = config_values if config_values is not None else _config_values(docs.values(), options)
        try:
            found, script_docs, script_result, trainers = _lint_scripts(scripts, options, values)
            _lightning_launches(trainers, options.boundary or Boundary.of(spelled), shell_launched, crashed)
        except InternalError as error:
            crashed.append(error)
        else:
            findings.extend(found)
            crashed.extend(InternalError(path, error) for path, error in script_result.crashed)
            documents.update(script_docs)
            findings.extend(_unused_by_scripts(script_result, options))

    sides = pairs.find_sides(docs.values())
    paired: dict[str, list[pairs.Side]] = {}
    boundary = options.boundary
    for side in sides:
        if side.json_path is None:
            continue
        boundary = boundary or Boundary.of(spelled)  # the files linted (real paths), when no roots were given
        refused = pairs.refusal(side, boundary, docs)
        if refused is not None:
            findings.extend(place(side.doc, [refused]))
        else:
            paired.setdefault(os.path.realpath(side.json_path), []).append(side)

    launching = {os.path.realpath(side.doc.path) for users in paired.values() for side in users}
    launches = () if options.world_sizes else pairs.launches(docs.values())
    linked = _launch_links(launch_scripts, options, boundary or Boundary.of(spelled), crashed,
                           shell_launched, findings) if launch_scripts else {}
    for link in options.launch_links:
        linked.setdefault(link.config, []).append(link)
    for launch in options.launch_commands:  # its findings are placed on the script it runs, a file named
        for finding in _launch_findings(launch, Boundary.of([os.getcwd()]), read_launch_text, {}):
            finding.file, finding.line, finding.column = launch.script, 1, 1
            findings.append(finding)
    for real, links in linked.items():  # a config a named launch script hands over, beside it: read it too
        if real in docs or real in paired:
            continue
        launch_file = links[0].launch.file
        if not launch_file or launch_file in options.found:
            continue  # a walk left it out (excluded, ignored): so does the launch
        shown = os.path.relpath(real) if inside(real, os.path.realpath(os.getcwd())) else real
        try:
            with budget.per_file():
                doc, unreadable = read_document(shown, options, beside=os.path.dirname(os.path.realpath(launch_file)),
                                                real=real)
        except (Exception, budget.Overrun) as error:
            crashed.append(InternalError(real, error))
            continue
        findings.extend(unreadable)
        if doc is not None and doc.kind == "deepspeed":
            docs[real] = doc
    for real, doc in docs.items():
        if real not in paired:  # a paired JSON is linted below, in its pair's context
            found = checked_early.pop(real, None) if options is asked else None
            if real in linked and doc.kind == "deepspeed":
                try:
                    with budget.per_file():
                        found = _lint_launched(doc, linked[real], options, found)
                except budget.Overrun as error:
                    found = InternalError(doc.path, error)
            if found is None:
                try:
                    with budget.per_file():
                        found = _checked(doc, _launched_by(launches, doc.path, options, shell_launched.get(real))
                                         if doc.kind == "other" else options)
                except budget.Overrun as error:  # the timer's repeat, after the check had caught the first
                    found = InternalError(doc.path, error)
            if isinstance(found, InternalError):
                crashed.append(found)
                continue
            if doc.kind == "other" and real in shell_launched:  # a finding the launch's world size decides: its line
                first = shell_launched[real][0]
                for finding in found:
                    if "(launched by " in finding.message and not finding.related:
                        finding.related = ((first.file, first.line, first.column, "the launch"),)
            findings.extend(found)
            used |= _options_used(doc, asked)
            documents[doc.path] = doc
            if many:
                doc.release()
            if real in launching:
                doc.checked_with = BATCH_OPTIONS  # through its JSON
            findings.extend(place(doc, unused_options(doc, asked, found)))
    for side in sides:
        if side.json_path is None:
            findings.extend(place(side.doc, [pairs.missing_file(side)]))
    for real, users in paired.items():
        path = spelled.get(real) or os.path.normpath(users[0].json_path)
        try:
            with budget.per_file():
                found, doc = _lint_pair(path, users, options)
        except InternalError as error:
            crashed.append(error)
            continue
        except (Exception, budget.Overrun) as error:  # reading or comparing the pair crashed
            crashed.append(InternalError(path, error))
            continue
        findings.extend(found)
        if doc is not None:
            used |= doc.checked_with
            documents[doc.path] = doc
            if many:
                doc.release()
    if script_result is not None:
        for names in script_result.used.values():
            used |= names
    if script_result is not None and script_result.batchnorm is not None and not asked.batchnorm:
        _cite_batchnorm(findings, script_result.batchnorm)
    linted = {path: doc.kind for path, doc in documents.items()}
    reported = {finding.file for finding in findings}
    documents = {path: doc for path, doc in documents.items() if path in reported}
    unused = None
    if not any(finding.rule is OPTION_UNUSED for finding in findings):
        unused = next(iter(_option_warning(asked, used, "run", "any file of this run")), None)
    return LintResult(_in_file_order(findings, files), documents, script_result, tuple(crashed), linted, unused)


def _checked(doc: Document, options: Options) -> list[Finding] | InternalError:
    """The document's findings, or the InternalError of a check that crashed or overran its budget."""
    try:
        return lint_document(doc, options)
    except InternalError as error:
        return error
    except budget.Overrun as error:
        return InternalError(doc.path, error)


def _config_values(docs, options: Options) -> dict[str, object]:
    """The training configs' batch keys by dotted path ("train.batch_size" -> 8), for the scripts; a key
    two configs give different values is left out (which one the script reads is unknown)."""
    from .training.configs import config_values
    merged: dict[str, object] = {}
    clashes: set[str] = set()
    for doc in docs:
        if doc.kind != "other":
            continue
        loaded, value = doc.tree
        if len(docs) > KEEP_PARSED:
            doc.release()
        if not loaded or not isinstance(value, dict):
            continue
        for key, item in config_values(value, options.framework, options.batch_keys).items():
            if key in merged and merged[key] != item:
                clashes.add(key)
            merged.setdefault(key, item)
    return {key: item for key, item in merged.items() if key not in clashes}


def _unused_by_scripts(result, options: Options) -> list[Finding]:
    """DS010 for a script named on the command line whose checks used none of the run options given."""
    out = []
    for path, used in result.used.items():
        if path in options.found:
            continue
        for finding in _option_warning(options, used, "script"):
            finding.file = path  # file-level: line 1, column 1
            out.append(finding)
    return out


def _cite_batchnorm(findings: list[Finding], evidence) -> None:
    """A DS205 note (one sample per device) cites the BatchNorm layer a linted script builds. It stays a note:
    the layer may belong to a test, a metric or a demo rather than the model trained, and BatchNorm fails
    only on one value per channel (BatchNorm1d on (1, C)); BatchNorm2d on (1, C, H, W) trains. --batchnorm
    says the trained model has such a layer, and makes it DS207."""
    file, line, column, _ = evidence
    for finding in findings:
        if finding.code == "DS205" and not finding.related:
            finding.message += (f" (a linted script builds BatchNorm at {file}:{line}; it fails only where it sees "
                                "one value per channel, as BatchNorm1d on a (1, C) batch: if the trained model "
                                "does, --batchnorm makes this an error)")
            finding.related = ((file, line, column, "BatchNorm layer built here"),)


def _lint_scripts(paths: list[str], options: Options, config_values: dict):
    """(findings, documents, ScriptsResult) for the training scripts of the run, read together."""
    from .files import FileError
    from .training import pysource
    from .training import scripts as checks
    from .training.reading import read_scripts
    try:
        read = read_scripts(paths, options.sources, options.max_bytes, lambda path: named(path, options),
                            options.boundary or Boundary.of(paths), bool(options.world_sizes), bool(options.dataset_size))
    except FileError as error:  # a script named on the command line that cannot be opened
        raise UsageError(str(error)) from None
    try:
        result = checks.check(read.project, read.entries, read.batchnorm, options.world_sizes, options.dataset_size,
                              options.batchnorm, config_values, sharded=read.sharded, starting=read.checks)
    except RecursionError as error:  # every walk is bounded; a crash here is dsconfig's bug, said as such
        raise InternalError(paths[0], error) from error
    findings = read.problems + [_entry_problem(path, _without_path(path, UsageError(why)))
                                for path, why in read.unreadable] + result.findings
    reported = {f.file for f in findings}
    documents = {source.path: pysource.ScriptDocument(source.path, source.text) for source in read.all_sources()
                 if source.path in reported}
    return findings, documents, result, read.trainers


def _lightning_launches(trainers: list, roots: Boundary, named: dict, crashed: list) -> None:
    """The training configs a Lightning script names, with the world size its Trainer(devices=..., num_nodes=...)
    fixes (dsconfig.launch.lightning), into `named`."""
    if not trainers:
        return
    from .launch import lightning
    for path, text in trainers:
        try:
            with budget.per_file():
                if lightning.worth_reading(text):
                    for launch, configs in lightning.launches(path, text, roots):
                        for real in configs:
                            named.setdefault(real, []).append(launch)
        except (Exception, budget.Overrun) as error:  # reading this script crashed: dsconfig's bug, reported
            crashed.append(InternalError(path, error))


def _launch_links(paths: list[str], options: Options, roots: Boundary, crashed: list,
                  named: dict | None = None, findings: list | None = None) -> dict[str, list]:
    """Config real path -> the launches (dsconfig.launch.project.Link) that hand it to training. `named`
    receives, for each other file a launch of known world size names in its arguments (a training config),
    those launches; `findings` what the launches themselves break (a GRPO launch's generation batch)."""
    from .files import FileError, TooLarge
    from .launch import project
    texts: dict[tuple, str | None] = {}

    def reader(beside: str | None):
        def read_text(path: str) -> str | None:  # each file once per run
            if (path, beside) not in texts:
                texts[path, beside] = read_launch_text(path, beside)
            return texts[path, beside]
        return read_text

    linked: dict[str, list] = {}
    entries: dict = {}  # entry scripts read for Trainer marks, by script and launch folder
    for path in paths:
        # a script named on the command line leads to the files of its own folder, as a YAML to its JSON
        folder = None if path in options.found else os.path.dirname(os.path.realpath(path))
        admitted = roots if folder is None else roots + Boundary.of([folder])
        read_text = reader(folder)
        try:
            with budget.per_file():
                data = read_bytes(path, options.max_bytes)
                if not project.worth_reading(data):
                    continue
                for launch in project.launches(path, decode(data)):
                    launch = project.with_config_world(launch, admitted, read_text)
                    for link in project.link(launch, admitted, read_text, entries):
                        linked.setdefault(link.config, []).append(link)
                    if named is not None and launch.world_size is not None:
                        for real in project.named_files(launch, admitted):
                            named.setdefault(real, []).append(launch)
                    if findings is not None and launch.world_size is not None:
                        findings.extend(_launch_findings(launch, admitted, read_text, entries))
        except (FileError, TooLarge, UsageError, UnicodeDecodeError):
            continue  # a launch script that cannot be read links nothing; it is no config to report on
        except (Exception, budget.Overrun) as error:  # reading this script crashed: dsconfig's bug, reported
            crashed.append(InternalError(path, error))
    return linked


def read_launch_text(path: str, beside: str | None = None) -> str | None:
    """A file a launch leads to (the script it runs, a module that imports, its --config file), or None when it
    cannot be read: a launch that cannot be followed checks less, it is no finding of its own."""
    from .files import FileError, TooLarge
    from .launch.project import MAX_SCRIPT
    try:
        return decode(read_bytes(path, MAX_SCRIPT, beside=beside, real=os.path.realpath(path)))
    except (FileError, TooLarge, UsageError, UnicodeDecodeError):
        return None


def _launch_findings(launch, roots: Boundary, read_text, entries: dict) -> list[Finding]:
    """What a launch of known world size breaks by itself: TRL's GRPOConfig refusing its generation batch."""
    from .launch import grpo, project
    from .rules.integration import GRPO_GENERATION_BATCH
    values = project.grpo_values(launch, roots, read_text, entries)
    if values is None:
        return []
    found = []
    for problem in grpo.problems(values, launch.world_size):
        how = f" ({problem.how})" if problem.how else ""
        finding = Finding(GRPO_GENERATION_BATCH, f"on {launch.size_words()}, GRPOConfig raises \"ValueError: "
                                                 f"{problem.message}\"{how} as the script parses its arguments; "
                                                 f"choose {problem.fix}", fails_in=PARSE,
                          world_size=launch.world_size)
        finding.file, finding.line, finding.column = launch.file, launch.line, launch.column
        found.append(finding)
    return found


def _lint_launched(doc: Document, links: list, options: Options, standalone) -> list[Finding] | InternalError:
    """A DeepSpeed config checked in the context of each launch that hands it to training: at that launch's
    world size, for its program, with its TrainingArguments flags. What no launch changes is reported once
    as it stands; what a launch makes appear says which launch (message and related location)."""
    contexts: dict[tuple, list] = {}
    for link in links:
        launch = link.launch
        args = _launch_training_args(link)
        if launch.world_size is None and args is None:
            continue
        key = (launch.world_size, repr(sorted(args.items())) if args is not None else None, link.trainer)
        contexts.setdefault(key, []).append((link, args))
    if not contexts:
        return standalone if standalone is not None else _checked(doc, options)
    base = standalone if standalone is not None else _checked(doc, options)
    if isinstance(base, InternalError):
        return base
    results = []
    for (world, _, trainer), group in contexts.items():
        link, args = group[0]
        context = options._replace(world_sizes=(world,) if world else options.world_sizes,
                                   training_args=args if args is not None else options.training_args,
                                   target=options.target or (HF_TRAINER if trainer else None))
        found = _checked(doc, context)
        if isinstance(found, InternalError):
            return found
        results.append(([item for item, _ in group], found))
    every = set.intersection(*({_same(f) for f in found} for _, found in results))
    standing = {_same(f) for f in base}
    out = [f for f in base if _same(f) in every]
    shown = {_same(f) for f in out}
    for group, found in results:
        for finding in found:
            key = _same(finding)
            if key in shown:
                continue
            shown.add(key)
            if key not in every or key not in standing:
                _cite_launch(finding, group)
            out.append(finding)
    return out


def _same(finding: Finding) -> tuple:
    return finding.code, finding.pointer, finding.message, finding.world_size


def _launch_training_args(link) -> dict | None:
    """The TrainingArguments a Trainer launch's flags give, or None when they are not all known (a value the
    script does not determine, words that may hold any flag, a field its code sets): the Trainer's defaults
    would stand in for them."""
    from .deepspeed.trainer import REPLAYED_FIELDS, training_args_errors
    flags = link.flags
    if not link.trainer or flags is None or flags.unknown & REPLAYED_FIELDS or flags.uncertain or flags.errors:
        return None
    if link.changed - set(flags.values):
        return None  # a field the scripts set or re-default, which no flag gives: the Trainer's default is not it
    # what the replay reads (launches that differ elsewhere are one context), of the types it reads them in
    values = {name: value for name, value in flags.values.items() if name in REPLAYED_FIELDS}
    return None if training_args_errors(values) else values


def _cite_launch(finding: Finding, group: list) -> None:
    launch = group[0].launch
    more = f" and {len(group) - 1} more" if len(group) > 1 else ""
    finding.message += f" (launched by {launch.where()}{more} on {launch.size_words()})"
    if launch.file:  # not the command line of `lint -- COMMAND`
        finding.related = (*(finding.related or ()), (launch.file, launch.line, launch.column, "the launch"))


def _launched_by(launches, path: str, options: Options, shell_launches=None) -> Options:
    """A training config a launch names in its arguments (`torchrun --nproc_per_node 8 train.py --cfg-path
    train.yaml`) is checked at that launch's world size, whatever --world-size says (it is for the files no
    launch names). Else, without a world size given, at the world size the Accelerate YAMLs of its project
    launch (`num_processes`): those in its folder or a folder above it (a root accelerate_config.yaml and
    configs/train.yaml), not a YAML of a sibling example."""
    if shell_launches:
        sizes = tuple(sorted({launch.world_size for launch in shell_launches}))
        first = shell_launches[0]
        more = f" and {len(shell_launches) - 1} more" if len(shell_launches) > 1 else ""
        on = first.size_words() if len(sizes) == 1 else f"{' or '.join(map(str, sizes))} GPUs"
        return options._replace(world_sizes=sizes, world_source=f"launched by {first.where()}{more} on {on}")
    if options.world_sizes or not launches:
        return options
    folder = os.path.dirname(os.path.abspath(path))
    near = [(yaml, size) for yaml, size in launches
            if inside(folder, os.path.dirname(os.path.abspath(yaml)))]
    if not near:
        return options
    sizes = tuple(sorted({size for _, size in near}))
    names = ", ".join(dict.fromkeys(os.path.basename(yaml) for yaml, _ in near))
    return options._replace(world_sizes=sizes, world_source=f"launched by {names}")


_NOTHING_USES = {
    "accelerate": "an Accelerate YAML without a DeepSpeed config file holds no batch size",
    "other": "the file holds no batch size",
    "script": "no check of this script depends on it: no sharded loader, Lightning Trainer or batch size it bears on",
    "run": "no DeepSpeed config, Accelerate YAML that launches one, or training script with a batch size was found",
}


def unused_options(doc: Document, options: Options, findings: list[Finding]) -> list[Finding]:
    """DS010 for each run option given that no check of this file used: never a silent pass.

    A file skipped as no config (DS005) is left alone: DS005 already says nothing was checked, and the
    pre-commit hook, which names every staged JSON/YAML file, ignores DS005 to pass those in silence."""
    walked = doc.path in options.found
    if any(f.rule is NOT_A_CONFIG for f in findings) or (walked and doc.kind == "other" and not doc.checked_with):
        return []  # what is no config (a package.json, a pyproject.toml) passes in silence
    return _option_warning(options, _options_used(doc, options), doc.kind)


def _options_used(doc: Document, options: Options) -> set[str]:
    """The run options a check of the document used (world_sizes, dataset_size, batchnorm)."""
    checked = set(doc.checked_with)
    if doc.kind == "accelerate" and (options.gpus or len(options.world_sizes or ()) == 1):
        checked.add("world_sizes")  # compared with the processes the YAML launches
    return checked


def _option_warning(options: Options, checked, kind: str, what: str = "this file") -> list[Finding]:
    """DS010 naming the run options given that are not in `checked` (unplaced), or nothing."""
    given = []
    if options.world_sizes:
        given.append(("world_sizes", f"--gpus {options.gpus}" + (f" --nodes {options.nodes}" if options.nodes else "")
                      if options.gpus else f"world size {','.join(map(str, options.world_sizes))}"))
    if options.dataset_size:
        given.append(("dataset_size", f"--dataset-size {options.dataset_size}"))
    if options.batchnorm:
        given.append(("batchnorm", "--batchnorm"))
    unused = [words for option, words in given if option not in checked]
    if not unused:
        return []
    why = _NOTHING_USES.get(kind, "no check of this kind of file uses it")
    it = "it" if len(unused) == 1 else "them"
    return [Finding(OPTION_UNUSED, f"{' and '.join(unused)} {'was' if len(unused) == 1 else 'were'} given, but no check "
                                   f"of {what} uses {it} ({why}): nothing here was checked against {it}")]


def _lint_pair(json_path: str, users: list, options: Options) -> tuple[list[Finding], Document | None]:
    """The ds_config.json that Accelerate YAMLs name: at the world sizes they launch, for the program
    that reads it, then what the files disagree on (reported in both). Returns the findings and the
    JSON document (None when it could not be read)."""
    sizes = pairs.launched_world_sizes(users)
    # the world size the YAMLs launch: --world-size only where they do not say
    pair_options = options._replace(world_sizes=sizes or options.world_sizes or None, kind="deepspeed")
    beside = os.path.dirname(os.path.abspath(users[0].doc.path))  # pairs.refusal admitted the YAML's folder
    try:
        doc, unreadable = read_document(json_path, pair_options, beside=beside)
    except UsageError as error:  # no read permission: the YAMLs' files are not the user's command line
        return [_entry_problem(json_path, _without_path(json_path, error))], None
    if doc is None:
        return unreadable, None
    pair_options = pair_options._replace(target=options.target or pairs.launched_target(doc))
    findings = lint_document(doc, pair_options)
    if options.model is not None:
        from .deepspeed.model_checks import launch_marks_moe_leaves
        from .rules.model import MOE_NOT_LEAF
        if all(launch_marks_moe_leaves(side.replay.args, options.model) for side in users):
            findings = [f for f in findings if f.rule is not MOE_NOT_LEAF]
    loaded, ds_config = doc.reading("json")  # DeepSpeedPlugin reads the file with json.load
    if loaded and isinstance(ds_config, dict):
        for side in users:
            for where, finding in pairs.disagreements(side, doc, ds_config):
                findings.extend(place(where, [finding]))
    return findings, doc


def read_document(path: str, options: Options, beside: str | None = None,
                  real: str | None = None) -> tuple[Document | None, list[Finding]]:
    """(document, []) for a readable file, or (None, findings) when it is too large, not UTF-8 text, or
    refused by the reading boundary (`beside`: a folder it admits too, dsconfig.boundary.refusal). `real`:
    its real path, when the caller has it."""
    from . import files
    data = None
    if options.sources:
        data = options.sources.get(real or os.path.realpath(path))
    if data is None:
        try:
            data = read_bytes(path, options.max_bytes, beside=beside, real=real)
        except files.TooLarge as error:
            return None, too_large(path, error, named=options.kind is not None or named(path, options))
        except files.Refused as error:
            finding = Finding(REFERENCE_NOT_FOLLOWED, _without_path(path, UsageError(str(error))) + " (dsconfig "
                              "reads only what it is asked to lint; give that path too, or --allow-read it)")
            finding.file, finding.line, finding.column = path, 1, 1
            return None, [finding]
    elif isinstance(data, str):
        data = data.encode("utf-8")
    try:
        text = decode(data)
    except UnicodeDecodeError as error:
        return None, undecodable(path, data, error, named(path, options))
    return open_document(text, path, options), []


def named(path: str, options: Options) -> bool:
    """A file the user named (on the command line, by the pre-commit hook), not one a folder walk or a
    glob found: it is checked as a config, never skipped. Walks skip what is no config."""
    return path not in options.found


def read_bytes(path: str, limit: int | None = None, beside: str | None = None, real: str | None = None) -> bytes:
    """The file's bytes; files.TooLarge past `limit`, files.Refused when the reading boundary refuses it,
    UsageError when it cannot be read. `real`: its real path, when the caller has it."""
    from . import files
    try:
        return files.read_bytes(path, limit or files.MAX_BYTES, beside=beside, real=real)
    except (files.TooLarge, files.Refused):
        raise
    except files.FileError as error:
        raise UsageError(str(error)) from None


def _without_path(path: str, error: UsageError) -> str:
    """The reason in a "PATH: reason" message, for a finding that is already about PATH."""
    text = str(error)
    return text[len(path) + 2:] if text.startswith(path + ": ") else text


def decode(data: bytes) -> str:
    """Text as DeepSpeed's `open(path)` and json.load see it: UTF-8, universal newlines.

    Raises UnicodeDecodeError like they do.
    """
    return data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")


def undecodable(path: str, data: bytes, error: UnicodeDecodeError, named: bool = False) -> list[Finding]:
    from . import detect
    prefix = data[:error.start].decode("utf-8", errors="replace")
    line = prefix.count("\n") + 1
    column = len(prefix) - (prefix.rfind("\n") + 1) + 1
    if named or detect.named_like_deepspeed(path) or is_yaml(path):
        finding = Finding(PARSE_ERROR, f"not UTF-8 text (byte 0x{data[error.start]:02x}): DeepSpeed's loader and "
                                       "json.load both fail with UnicodeDecodeError", fails_in=LOAD)
    else:
        finding = Finding(NOT_A_CONFIG, "not UTF-8 text; not recognised as a config; skipped")
        line, column = 1, 1
    finding.file, finding.line, finding.column = path, line, column
    return [finding]


def too_large(path: str, error, named: bool = False) -> list[Finding]:
    """DS007 for a file named like a config, or forced to be one (the user expects it checked); DS005
    (skipped) otherwise: a 200 MB dataset.json found in a folder is no config."""
    from . import detect
    from .files import format_size
    size = f"{format_size(error.size)}" if error.size is not None else f"more than {format_size(error.limit)}"
    if named or detect.named_like_deepspeed(path) or detect.named_like_accelerate(path):
        finding = Finding(FILE_TOO_LARGE, f"{size}: larger than any DeepSpeed or Accelerate config; not linted "
                                          f"(dsconfig reads at most {format_size(error.limit)}: --max-file-size)")
    else:
        finding = Finding(NOT_A_CONFIG, f"{size}: too large for a config; skipped")
    finding.file, finding.line, finding.column = path, 1, 1
    return [finding]


def is_yaml(path: str) -> bool:
    return path.endswith((".yaml", ".yml"))


def open_document(text: str, path: str, options: Options) -> Document:
    """Read and classify: a YamlDocument for YAML (PyYAML is imported only then), else a JsonDocument."""
    if path.endswith(".toml") and options.kind != "deepspeed":
        from .tomldoc import TomlDocument
        doc = TomlDocument(path, text)
        doc.kind = "other"  # a training config or nothing: DeepSpeed and Accelerate never read TOML
        return doc
    if is_yaml(path) and options.kind != "deepspeed":  # DeepSpeed reads any file as JSON, a .yaml too
        from .yamldoc import YamlDocument
        doc = YamlDocument(path, text)
        doc.kind = _classify_yaml(doc, named(path, options))
        return doc
    doc = DictDocument(path, text) if options.python_dict else JsonDocument(path, text)
    doc.kind = options.kind or _classify(doc, named(path, options))
    return doc


def _use_release(options: Options) -> None:
    from .deepspeed import releases, schema
    schema.use(options.deepspeed_version or releases.NEWEST)


def lint_document(doc: Document, options: Options) -> list[Finding]:
    """The checks for the document's kind, every finding located. A check that crashes is an InternalError."""
    _use_release(options)
    try:
        if doc.kind == "accelerate":
            from .accelerate import lint_accelerate
            findings = lint_accelerate(doc, options)
            if options.training_args is not None and doc.loaded and isinstance(doc.value, dict):
                # the launch and the Trainer's own FSDP arguments, when the project runs the Trainer replayed
                from .fsdp.trainer_args import other_transformers, yaml_conflicts
                if other_transformers(doc.path) is None:
                    findings += yaml_conflicts(doc.value, options.training_args)
        elif doc.kind == "deepspeed":
            from .deepspeed.check import lint_deepspeed
            findings = lint_deepspeed(doc, options)
            doc.checked_with = BATCH_OPTIONS
        elif doc.format == "toml" and not doc.loaded and named(doc.path, options):
            findings = [Finding(PARSE_ERROR, f"not valid TOML: {doc.load_error.message}", fails_in=LOAD,
                                offset=doc.load_error.offset)]
        else:
            from .other import lint_other
            findings = lint_other(doc, options)
    except Exception as error:
        raise InternalError(doc.path, error) from error
    return place(doc, findings)


def _classify_yaml(doc, named: bool = False) -> str:
    from . import detect
    if not doc.loaded or not isinstance(doc.value, dict):
        # A parse error, an empty file or a root that is no mapping is reported for files named on the
        # command line, named like a config or written like one; a walk skips it.
        like = detect.named_like_accelerate(doc.path) or (not doc.loaded and detect.written_like_accelerate(doc.text))
        return "accelerate" if like or named else "other"
    kind = detect.classify(doc.path, doc.value, is_yaml=True)
    return kind if kind == "accelerate" else "other"  # DeepSpeed never reads YAML


def _classify(doc: JsonDocument, named: bool = False) -> str:
    from . import detect
    if named and not doc.text.strip():
        return "deepspeed"  # empty: DeepSpeed's hjson reads {}, then finds no batch size
    if _template(doc, named):
        return "other"  # lint_other says why it is skipped
    if doc.scan is not None or doc.json_error is None:
        value = doc.hjson_value if doc.scan is not None else doc.json_value
        if named and not isinstance(value, dict):
            return "deepspeed"  # a list, a number, null: DeepSpeed fails on each (DS004)
        return detect.classify(doc.path, value, is_yaml=False)
    # Unreadable by both loaders: a file named on the command line or like a DeepSpeed config gets the
    # load error reported; a walk skips it.
    return "deepspeed" if named or detect.named_like_deepspeed(doc.path) else "other"


def _template(doc: JsonDocument, named: bool) -> bool:
    """A walked JSON file that json.load rejects because of bare placeholders (a script fills them)."""
    from . import detect
    return not named and doc.json_error is not None and bool(detect.placeholders(doc.text))


def place(doc: Document, findings: list[Finding]) -> list[Finding]:
    """Fill in file, line and column, then sort."""
    for finding in findings:
        finding.file = doc.path
        if finding.offset is not None:
            finding.line, finding.column = doc.position(finding.offset)
        else:
            finding.line, finding.column = doc.locate(finding.pointer, finding.on_key)
    findings.sort(key=Finding.sort_key)
    return findings


def _in_file_order(findings: list[Finding], files: list[str]) -> list[Finding]:
    """Files in the order given (a named JSON that was not given comes last), each file's findings sorted
    and without repeats (two YAMLs naming one JSON agree on most of it)."""
    by_file: dict[str, dict] = {path: {} for path in files}
    for f in findings:
        by_file.setdefault(f.file, {}).setdefault((f.line, f.column, f.code, f.message, f.world_size), f)
    return [f for found in by_file.values() for f in sorted(found.values(), key=Finding.sort_key)]
