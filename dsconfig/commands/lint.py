"""`dsconfig lint PATH...`: findings for config files, and the exit code CI gates on.

Three steps: the configuration file and the command line become engine options and a rule
selection (`_selection`, `_options`), the engine lints (and `--fix` fixes) the files (`_run`), and
the findings are reported in the chosen format (`_report`).

Exit codes: 0 nothing at or above `--fail-on` (default: error), 1 findings at or above it (or, with
`--diff`, changes to make), 2 a usage or configuration error, or an internal error (a check that
crashed: the message names the file; please report it). `--exit-zero` turns 1 into 0, never 2.
"""

from __future__ import annotations

import os
import sys
from typing import NamedTuple

from .. import escape
from ..terminal import echo

MAX_WORLD_SIZE = 2**31 - 1  # torch.distributed holds the world size in a C int (as dsconfig.check bounds it)


class Selection(NamedTuple):
    """What the configuration file and the command line say about which findings count."""
    settings: object  # dsconfig.settings.Settings
    enabled: frozenset  # rule codes reported
    fail_on: str
    # Informational findings are opt-in, as in cfn-lint: shown with --show-info, --fail-on info, or when a
    # --select (or the configuration's select) names their rule, or the rule says so (Rule.infos_shown)
    show_info: bool = False
    infos_hidden: frozenset = frozenset()  # the codes whose infos are shown only when asked for

    def shows(self, finding) -> bool:
        return finding.severity != "info" or finding.code not in self.infos_hidden or self.show_info \
            or self.fail_on == "info"


class Inputs(NamedTuple):
    """The engine's options and where the files come from."""
    options: object  # dsconfig.engine.Options
    paths: tuple[str, ...]  # with `-` replaced by the standard input's name
    virtual: list[str]  # names that are not on disk (standard input)
    stdin_text: dict  # {name: text} for the standard input, when it is UTF-8
    allow_read: tuple[str, ...]  # --allow-read: more places a config may name files in


class Outcome(NamedTuple):
    files: list[str]  # the files collected from the paths
    findings: list  # reported: selected and not suppressed
    documents: dict  # path -> Document, for --fix, source frames and regions
    fixes: object  # dsconfig.fix.FixRun with --fix or --diff, else None
    missing: tuple[str, ...] = ()  # "path: why" for the paths given that are not there (exit 2 at the end)
    found: frozenset = frozenset()  # files a folder walk or a glob found (not named)
    skipped: int = 0  # files a walk or glob found that are no configs (DS005), not listed without --show-skipped
    crashed: tuple = ()  # engine.InternalError per file whose checks crashed: reported after the rest, exit 2
    linted: dict = {}  # path -> kind of every document linted (`documents` holds those with findings)
    gitignored: int = 0  # config files a walk or glob skipped because git ignores them (untracked)
    hidden_infos: int = 0  # informational findings not asked for (--show-info): counted in the summary


def _world_sizes(value: str | None) -> tuple[int, ...] | None:
    if value is None:
        return None
    sizes = []
    for part in value.split(","):
        part = part.strip()
        if not part.isascii() or not part.isdigit() or not part.strip("0"):
            shown = repr(part) if len(part) <= 40 else f"{part[:40]!r}..."
            raise _bad_parameter(f"{shown} is not a positive integer (use e.g. 8 or 1,2,4,8)",
                                 param_hint="--world-size")
        if len(part.lstrip("0")) > len(str(MAX_WORLD_SIZE)) or int(part) > MAX_WORLD_SIZE:
            _fail(f"--world-size: {part[:40]}{'...' if len(part) > 40 else ''} is more than {MAX_WORLD_SIZE:,}, the "
                  "most processes torch.distributed counts (a C int)")
        sizes.append(int(part))
    return tuple(dict.fromkeys(sizes))


def _selectors(values, option: str) -> tuple[str, ...] | None:
    """Comma-separated, repeatable selector lists; None when the option was not given."""
    if not values:
        return None
    from ..suppress import UnknownSelector, check_selectors
    items = tuple(item.strip() for value in values for item in value.split(",") if item.strip())
    try:
        check_selectors(items)
    except UnknownSelector as error:
        # the message quotes the selector: one line, whatever it holds
        raise _bad_parameter(escape.characters(str(error)), param_hint=option) from None
    return items


def _fail(message: str) -> None:
    echo(escape.line(f"dsconfig: error: {message}"), err=True)
    sys.exit(2)


# Usage errors are click's (its usage line, then `Error: ...`, exit 2), whichever way the run started: click is
# imported only when there is one.
def _usage_error(message: str):
    import click
    return click.UsageError(message)


def _bad_parameter(message: str, param_hint: str):
    import click
    return click.BadParameter(message, param_hint=param_hint)


def _is_stdout(path: str) -> bool:
    """`-o /dev/stdout` (or /proc/self/fd/1) is standard output, even when that is a file: `> out.txt`."""
    try:
        return os.path.samestat(os.stat(path), os.fstat(sys.stdout.fileno()))
    except (OSError, ValueError, AttributeError):  # no such path; stdout without a file descriptor (tests)
        return False


def _check_output(output_file: str | None, force: bool) -> None:
    """Before linting: -o names something dsconfig may write. A device or FIFO (/dev/null, /dev/stdout)
    is written into, as the shell's `>` does; anything else but a regular file is never replaced."""
    from .. import files
    if output_file is None or files.is_stream(output_file):
        return
    try:
        why = files.not_replaceable(output_file)
    except OSError as error:
        _fail(f"{output_file}: cannot write: {error.strerror or error}")
    if why is not None:
        _fail(f"{output_file}: {why}")
    if os.path.lexists(output_file) and not force:
        _fail(f"{output_file} exists; pass --force to overwrite it")


def run(params: dict) -> None:
    """`dsconfig lint` with the parameters of dsconfig/commands/lint_options.py, as click or the fast path
    (dsconfig.options.parse) read them from the command line; exits with the run's status."""
    _lint(params, **params)


def _lint(params, paths, target, world_size, gpus, nodes, training_args, dataset_size, deepspeed_version, framework,
         batchnorm, model, batch_keys,
         output_format, output_file, force, color,
         statistics, select, ignore, fail_on, exit_zero, config_path, no_config, exclude, respect_gitignore,
         show_info, show_skipped, apply_fixes, unsafe_fixes, diff, max_file_size, allow_read, stdin_filename, no_cache,
         launch_command=()):
    paths = paths or (() if launch_command else (".",))
    from .. import boundary
    # What this run may read: the paths and files the command line names, and --allow-read (never what a
    # linted repository's own settings say). The standard input is no path on disk.
    boundary.admit([p for p in paths if p != "-"] + [config_path, training_args, model], allow_read)
    if unsafe_fixes and not (apply_fixes or diff):
        raise _usage_error("--unsafe-fixes needs --fix or --diff")
    if statistics and output_format in ("github", "sarif"):
        # as ruff refuses it: a SARIF file or annotations hold findings, and the table would replace them
        raise _usage_error(f"--statistics prints a table of counts instead of the findings (as text, or with "
                               f"--format json); --format {output_format} cannot hold it: drop one of the two")
    if output_file == "-" or (output_file is not None and _is_stdout(output_file)):
        output_file = None
    _check_output(output_file, force)
    # a run that writes nothing but its report and reads no standard input may be replayed (dsconfig.cache)
    from .. import cache
    cache.abandon()
    if not (no_cache or apply_fixes or diff or output_file is not None or "-" in paths or deepspeed_version == "all"):
        _replay_or_record(params)
    links, checked = (), ()
    if launch_command:  # read after the cache starts recording: a rerun sees a changed entry script
        links, checked = _command_links(launch_command)
        named = tuple(os.path.relpath(link.config) for link in links)  # linted besides any path given
        named += tuple(launch.script for launch in checked)  # a GRPO script: the launch's findings go there
        boundary.admit(named)
        paths = tuple(dict.fromkeys((*paths, *named)))
    selection = _selection(config_path, no_config, select, ignore, fail_on)
    if show_info:
        selection = selection._replace(show_info=True)
    if selection.settings.allow_read:
        _warn(f"{selection.settings.display_path}: `allow-read` is not honoured: a repository's own settings cannot "
              "widen what dsconfig reads; give --allow-read PATH on the command line")
    inputs = _options(selection.settings, paths, target, world_size, gpus, nodes, training_args, dataset_size,
                      max_file_size, stdin_filename, allow_read)
    inputs = inputs._replace(options=_training_options(inputs.options, selection.settings, framework, batchnorm,
                                                       batch_keys)._replace(launch_links=links,
                                                                            launch_commands=checked))
    if model is not None:
        inputs = inputs._replace(options=inputs.options._replace(model=_model_layers(model)))
    release = choose_release(deepspeed_version, selection.settings, inputs.paths)
    if release.version == "all":
        from .releases_table import lint_all_releases
        outcomes = []

        def run_and_keep(*args, **kwargs):
            outcomes.append(_run(*args, **kwargs))
            return outcomes[-1]
        status = lint_all_releases(run_and_keep, inputs, selection, exclude, respect_gitignore, output_format,
                                   output_file)
        _exit_if_incomplete(next((o for o in outcomes if o.crashed), outcomes[-1]) if outcomes else None)
        sys.exit(status)
    inputs = inputs._replace(options=inputs.options._replace(deepspeed_version=release.version))
    outcome = _run(inputs, selection, exclude, respect_gitignore, fixing=apply_fixes or diff, unsafe=unsafe_fixes,
                   writing=apply_fixes and not diff)
    if not show_skipped:
        outcome = _quiet_about_skipped(outcome)
    outcome = _without_hidden_infos(outcome, selection)
    if diff:
        status = _print_diff(outcome.fixes)
        _exit_if_incomplete(outcome)
        sys.exit(status)
    unwritten = _write_fixes(outcome.fixes) if apply_fixes else 0
    _report(outcome, selection, output_format, output_file, color, statistics, unsafe_fixes,
            stdin=bool(inputs.stdin_text) and apply_fixes, release=release)
    _exit_if_incomplete(outcome)
    from .. import cache, report
    # a file another writer changed meanwhile was not fixed, and its findings were not all shown: exit 1
    status = 0 if exit_zero else 1 if report.failing(outcome.findings, selection.fail_on) or unwritten else 0
    cache.store(status)
    sys.exit(status)


def _command_links(words: tuple[str, ...]) -> tuple[tuple, tuple]:
    """The configs the launch command after `--` hands to training, each with its launch (paths from here), and
    the launch itself when it runs a GRPO script whose arguments it decides (checked on its own, DS706)."""
    from ..boundary import Boundary
    from ..engine import read_launch_text
    from ..launch import launchers, project, shell
    environment = {name: value for name, value in os.environ.items()
                   if name == "CUDA_VISIBLE_DEVICES" or name.startswith("PET_")}
    command = shell.Command(0, 0, tuple(words), environment, " ".join(words))
    launch = launchers.find(command, "")
    if launch is None:
        raise _usage_error(f"`{escape.characters(' '.join(words))}` after -- is no launch dsconfig reads: give a "
                           "deepspeed, torchrun, python -m torch.distributed.run, accelerate launch or python "
                           "command")
    from .. import boundary
    boundary.admit([word for word in words if isinstance(word, str) and os.path.isfile(word)])
    here = Boundary.of([os.getcwd()])
    launch = project.with_config_world(launch, here, read_launch_text)
    links = project.link(launch, here, read_launch_text)
    checked = ()
    if launch.world_size is not None and not launch.module and isinstance(launch.script, str) \
            and os.path.isfile(launch.script) and project.grpo_values(launch, here, read_launch_text, {}) is not None:
        checked = (launch,)
    if not links and not checked:
        raise _usage_error("the launch after -- names no DeepSpeed config found here (--deepspeed FILE or "
                           "--deepspeed_config FILE, relative to this folder), nor a GRPO script at a world size it "
                           "fixes")
    return tuple(links), checked


def _replay_or_record(params: dict) -> None:
    """Print and exit with what the same run printed last time when nothing it looked at changed; else record
    this run's output for the next."""
    from .. import cache
    if cache.folder() is None:
        return
    digest = cache.key(params)
    stored = cache.replay(digest)
    if stored is None:
        cache.start(digest)
        return
    stdout, stderr, status = stored
    try:
        for block in stdout:
            echo(block, nl=False, color=True)
        sys.stdout.flush()
    except BrokenPipeError:
        _reader_gone()
    for line in stderr:
        echo(line, err=True)
    sys.exit(status)


# -- settings -> options --------------------------------------------------------------------------------


def _selection(config_path, no_config, select, ignore, fail_on) -> Selection:
    """The configuration file, then the command line's --select/--ignore/--fail-on over it."""
    from .. import settings as settings_module
    from ..rules import BY_NAME, RULES
    from ..suppress import enabled_codes

    try:
        settings = settings_module.resolve(config_path, no_config)
    except settings_module.ConfigError as error:
        _fail(str(error))
    layers = [(settings.select, settings.ignore)]
    cli_select, cli_ignore = _selectors(select, "--select"), _selectors(ignore, "--ignore")
    if cli_select is not None or cli_ignore is not None:
        layers.append((cli_select, cli_ignore or ()))
    # a select naming a rule by its code or name shows its infos; a prefix (DS, ACC0) or ALL does not
    named = {BY_NAME[word].code if word in BY_NAME else word
             for chosen in (settings.select, cli_select) if chosen for word in chosen}
    infos_hidden = frozenset(code for code, rule in RULES.items() if not rule.infos_shown and code not in named)
    return Selection(settings, enabled_codes(layers), fail_on or settings.fail_on or "error",
                     show_info=settings.show_info, infos_hidden=infos_hidden)


def _options(settings, paths, target, world_size, gpus, nodes, training_args, dataset_size, max_file_size,
             stdin_filename, allow_read=()) -> Inputs:
    from .. import engine, targets
    from .. import files as files_module

    sizes = _world_sizes(world_size)
    if gpus is not None or nodes is not None:
        if sizes is not None:
            raise _usage_error("give either --world-size or --gpus/--nodes, not both")
        if gpus is None:
            raise _usage_error("--nodes needs --gpus (GPUs per node)")
        sizes = (gpus * (nodes or 1),)
    if sizes is None:
        sizes = settings.world_sizes
    args = None
    if training_args is not None:
        from ..deepspeed.trainer import load_training_args
        try:
            args = load_training_args(training_args)
        except ValueError as error:  # the file's problem, not the command line's: one line naming it
            _fail(str(error))
    max_bytes = files_module.MAX_BYTES
    if max_file_size is not None:
        try:
            max_bytes = files_module.parse_file_size(max_file_size)
        except ValueError as error:
            raise _bad_parameter(str(error), param_hint="--max-file-size") from None

    sources, stdin_text, virtual = {}, {}, []
    if paths.count("-") > 1:
        raise _usage_error("`-` (standard input) can be given once")
    if stdin_filename is not None and "-" not in paths:
        raise _usage_error("--stdin-filename names standard input: give `-` as a path too")
    if "-" in paths:
        name = stdin_filename or "-"
        stream = getattr(sys.stdin, "buffer", None)
        try:
            data = files_module.read_stream(stream, name, max_bytes) if stream is not None \
                else sys.stdin.read().encode("utf-8")
        except files_module.TooLarge as error:
            _fail(str(error))
        sources[os.path.realpath(name)] = data
        try:
            stdin_text[name] = data.decode("utf-8")
        except UnicodeDecodeError:
            pass
        virtual.append(name)
        paths = tuple(name if p == "-" else p for p in paths)
    options = engine.Options(target=targets.BY_NAME[target] if target else settings.target, world_sizes=sizes,
                             gpus=gpus, nodes=nodes, training_args=args, dataset_size=dataset_size,
                             sources=sources or None, max_bytes=max_bytes)
    return Inputs(options, paths, virtual, stdin_text, tuple(allow_read))


def _model_layers(text: str):
    """--model: the model's module classes; a name or file that gives none is a one-line usage error."""
    from ..accelerate.model_layers import ModelProblem, resolve
    try:
        return resolve(text)
    except ModelProblem as error:
        _fail(escape.characters(str(error)))


def choose_release(explicit, settings, paths):
    """The DeepSpeed release to replay and why (dsconfig.deepspeed.pins); a bad version is a usage error."""
    from ..deepspeed import pins
    start = next((p for p in paths if p != "-" and os.path.exists(p)), None)
    try:
        return pins.choose(explicit, start, settings_value=settings.deepspeed_version,
                           settings_file=settings.display_path or None)
    except pins.VersionError as error:  # one line, as for every other usage error of a value
        _fail(f"--deepspeed-version: {error}" if explicit else str(error))


def _training_options(options, settings, framework, batchnorm, batch_keys):
    """--framework, --batchnorm and --batch-key over what the configuration file says."""
    parsed = []
    for text in batch_keys:
        from ..training.names import parse_batch_key
        try:
            parsed.append(parse_batch_key(text))
        except ValueError as error:
            raise _bad_parameter(escape.characters(str(error)), param_hint="--batch-key") from None
    # the command line's keys come last: they win over the configuration's for the same pointer
    return options._replace(framework=framework or settings.framework,
                            batchnorm=settings.batchnorm if batchnorm is None else batchnorm,
                            batch_keys=settings.batch_keys + tuple(parsed))


# -- run ---------------------------------------------------------------------------------------------------


def _run(inputs: Inputs, selection: Selection, exclude, respect_gitignore: bool, fixing: bool,
         unsafe: bool, writing: bool = False, only: frozenset | None = None) -> Outcome:
    """Collect the files, lint them (and fix them), keep what is selected and not suppressed. `only`: the real
    paths of the files to lint among those collected (the release table relints only what releases change)."""
    from .. import engine
    from ..files import FileError
    from ..suppress import Suppressor, apply

    settings = selection.settings
    patterns = None
    if exclude or settings.exclude:
        from ..pathmatch import PatternSet, problem
        for pattern in exclude:
            if why := problem(pattern):
                import json
                _fail(f"--exclude {json.dumps(pattern, ensure_ascii=False)}: {why}")
        patterns = PatternSet(os.getcwd(), exclude) if exclude else PatternSet(settings.root, settings.exclude)
    fixes = None
    try:
        allowed = _allowed(inputs.allow_read, settings)
        collection = engine.collect(inputs.paths, exclude=patterns, virtual=inputs.virtual, gitignore=respect_gitignore,
                                    allowed=allowed)
        files = collection.files
        if only is not None:
            files = [path for path in files if os.path.realpath(path) in only]
        if collection.missing and not files and not collection.problems:
            _fail("; ".join(collection.missing))  # nothing else to lint
        from .. import boundary
        boundary.admit_found(collection.boundary.roots)  # what the walks and globs found
        options = inputs.options._replace(found=collection.found, boundary=collection.boundary + allowed)
        if fixing:
            from .. import fix
            suppressor = Suppressor(settings, selection.enabled)

            def keep(finding) -> bool:  # what is reported is what is fixed
                return suppressor.keep(finding) and selection.shows(finding)
            fixes = fix.run(files, options, keep, unsafe=unsafe, stdin=inputs.stdin_text, writing=writing)
            found, documents, crashed, linted = fixes.findings, fixes.documents, fixes.crashed, fixes.linted
            unused = fixes.unused
        else:
            result = engine.lint_files(files, options)
            found, documents, crashed, linted = result.findings, result.documents, result.crashed, result.linted
            unused = result.unused
        found = collection.problems + found
        if unused is not None and inputs.paths:  # an option no file used: said on the first path given
            unused.file = inputs.paths[0]
            found.append(unused)
    except engine.UsageError as error:
        _fail(str(error))
    except FileError as error:  # a .gitignore larger than any
        _fail(str(error))
    except engine.InternalError as error:
        _internal_error(str(error))
    except Exception as error:  # never a traceback for the user; ask for a report instead
        _internal_error(f"{type(error).__name__}: {error}")
    findings = apply(found, set(files) | set(linted), settings, selection.enabled)
    return Outcome(files, findings, documents, fixes, collection.missing, collection.found, crashed=crashed,
                   linted=linted, gitignored=collection.gitignored)


def _without_hidden_infos(outcome: Outcome, selection: Selection) -> Outcome:
    """The infos not asked for are counted, not listed (Selection.shows)."""
    shown = [f for f in outcome.findings if selection.shows(f)]
    if len(shown) == len(outcome.findings):
        return outcome
    return outcome._replace(findings=shown, hidden_infos=len(outcome.findings) - len(shown))


def _quiet_about_skipped(outcome: Outcome) -> Outcome:
    """Files a walk or glob found that are no configs (package.json, tsconfig.json) are counted, not listed;
    DS005 stays for a file named on the command line."""
    from ..rules.files import NOT_A_CONFIG
    quiet = {id(f) for f in outcome.findings if f.rule is NOT_A_CONFIG and f.file in outcome.found}
    if not quiet:
        return outcome
    skipped = {f.file for f in outcome.findings if id(f) in quiet}
    return outcome._replace(findings=[f for f in outcome.findings if id(f) not in quiet], skipped=len(skipped))


def _exit_if_incomplete(outcome: Outcome | None) -> None:
    """After the others were reported: the paths that were not there, and the files whose checks crashed,
    one line each, then exit 2 (a usage error, or an internal error: the file was not checked)."""
    if outcome is None or not (outcome.missing or outcome.crashed):
        return
    for line in outcome.missing:
        echo(escape.line(f"dsconfig: error: {line}"), err=True)
    for error in outcome.crashed:
        echo(escape.line(f"dsconfig: internal error: {error}: this file was not checked (please report this "
                               "with the file that caused it)"), err=True)
    sys.exit(2)


def _allowed(allow_read: tuple[str, ...], settings):
    """--allow-read: where a config may name files. A configuration's own `allow-read` is not honoured: the
    settings come with the repository being linted, and a pull request could widen what dsconfig reads on
    the CI runner with them (say, to the runner's credentials)."""
    from ..boundary import Boundary
    return Boundary.of(allow_read)


def _internal_error(what: str) -> None:
    echo(escape.line(f"dsconfig: internal error: {what} (please report this with the file that caused it)"),
               err=True)
    sys.exit(2)


# -- report ------------------------------------------------------------------------------------------------


def _blocks(pieces, size: int = 1 << 16):
    """The pieces joined into blocks of about `size` characters: one write per block, not per line."""
    block, length = [], 0
    for piece in pieces:
        block.append(piece)
        length += len(piece)
        if length >= size:
            yield "".join(block)
            block, length = [], 0
    if block:
        yield "".join(block)


def _report(outcome: Outcome, selection: Selection, output_format: str, output_file, color: str, statistics: bool,
            unsafe_fixes: bool, stdin: bool, release=None) -> None:
    """The findings (or statistics) to stdout or -o, then the summary line on stderr."""
    from .. import cache, report

    findings, documents, settings = outcome.findings, outcome.documents, selection.settings
    to_terminal = output_file is None and not stdin
    stream_tty = sys.stdout.isatty() if to_terminal else False
    use_color = color == "always" or (color == "auto" and stream_tty and not os.environ.get("NO_COLOR"))
    context = report.Context(color=use_color, unsafe_fixes=unsafe_fixes)
    if release is not None and any(kind in ("deepspeed", "accelerate") for kind in outcome.linted.values()):
        context.release = release
    if any(f.fix is not None for f in findings):
        from .. import fix
        context.fixes = fix.describe(findings, documents)
    if output_format in ("full", "sarif") and not statistics:
        from .. import fix
        context.texts = {path: doc.text for path, doc in documents.items()}
        if settings.path is not None:
            context.texts.setdefault(settings.display_path, settings.text)
        context.extents = fix.extents(findings, documents)
    if statistics:
        from ..report import statistics as stats
        pieces = iter([stats.render(findings, context, as_json=output_format == "json")])
    else:
        pieces = report.chunks(output_format, findings, context)  # written as made: never the whole report at once
    if output_file is not None:
        from .. import files
        try:
            if files.is_stream(output_file):
                files.write_into(output_file, pieces)
            else:
                files.write_atomic(output_file, pieces)
        except OSError as error:
            _fail(f"{output_file}: cannot write: {error.strerror or error}")
    else:
        # color=True: click would otherwise strip what looks like colour codes off a pipe, and change a
        # GitHub annotation's file= (the real name, escape sequence included); every other one is escaped
        try:
            for block in _blocks(pieces):  # with --fix on stdin, stdout carries the fixed text
                echo(block, nl=False, color=True, err=stdin)
                cache.printed(block, err=stdin)
            (sys.stderr if stdin else sys.stdout).flush()
        except BrokenPipeError:
            _reader_gone()
    if output_format in ("concise", "full") or statistics:
        crashed = {error.path for error in outcome.crashed}
        linted = len((set(outcome.files) | set(outcome.linted)) - crashed) - outcome.skipped
        line = report.summary(findings, linted, context)
        if crashed:
            line += f"; {len(crashed)} file{'' if len(crashed) == 1 else 's'} not checked (an internal error, below)"
        if outcome.skipped:
            line += (f"; {outcome.skipped} other file{'' if outcome.skipped == 1 else 's'} skipped (no DeepSpeed or "
                     "Accelerate config; --show-skipped lists them)")
        if outcome.hidden_infos:
            many = outcome.hidden_infos != 1
            line += (f"; {outcome.hidden_infos} info{'s' if many else ''} not shown (--show-info shows "
                     f"{'them' if many else 'it'})")
        if outcome.gitignored:  # never a bare "no problems" over configs that were not read
            many = outcome.gitignored != 1
            line += (f"; {outcome.gitignored} untracked .json/.yaml/.toml file{'s' if many else ''} that git "
                     f"ignore{'' if many else 's'} not linted (--no-respect-gitignore lints them)")
        run = outcome.fixes
        if run is not None:
            fixed = sum(result.fixed for result in run.files.values() if result.changed)
            changed = sum(1 for result in run.files.values() if result.changed)
            if changed:
                line = f"fixed {fixed} problem{'' if fixed == 1 else 's'} in {changed} " \
                       f"file{'' if changed == 1 else 's'}; {'remaining: ' if findings else ''}{line}"
        echo(escape.line(line), err=True)
        cache.printed(escape.line(line), err=True)


def _reader_gone() -> None:
    """`dsconfig lint | head -1`: the reader left. The rest of the output goes nowhere, and the exit
    status still says whether errors were found (click would exit 1 whatever was found)."""
    from .. import cache, files
    cache.abandon()  # what was printed is not all there is
    files.discard_into(sys.stdout.fileno())  # the interpreter's last flush then has somewhere to go


def _print_diff(run) -> int:
    from .. import fix
    changed = [result for result in run.files.values() if result.changed]
    for result in changed:
        echo(fix.unified_diff(result), nl=False)
    fixes = sum(result.fixed for result in changed)
    if changed:
        echo(f"would fix {fixes} problem{'' if fixes == 1 else 's'} in {len(changed)} "
                   f"file{'' if len(changed) == 1 else 's'}", err=True)
    else:
        echo("no fixes to apply", err=True)
    for path, why in run.skipped:
        _warn(f"not fixing {path}: {why}")
    return 1 if changed else 0


def _warn(message: str) -> None:
    from .. import cache
    echo(escape.line(f"dsconfig: warning: {message}"), err=True)
    cache.printed(escape.line(f"dsconfig: warning: {message}"), err=True)


def _write_fixes(run) -> int:
    """Write the fixed files; the number of files left unwritten because they changed on disk meanwhile."""
    from .. import files, fix
    unwritten = 0
    for path, why in run.skipped:
        _warn(f"not fixing {path}: {why}")
    for result in run.files.values():
        if result.stdin:
            echo(result.text, nl=False)  # the whole (fixed) input, as ruff does
            continue
        if not result.changed:
            continue
        try:
            fix.write_atomic(result.path, result.text, expected=result.read)
        except files.Changed as error:
            _warn(f"not fixing {result.path}: {error.strerror}")
            result.text, result.fixed = result.original, 0  # the summary counts only what was written
            unwritten += 1
        except OSError as error:
            _fail(f"cannot write {result.path}: {error.strerror or error}")
    return unwritten
