"""`dsconfig explain [ds_config.json] [accelerate.yaml]`: the config DeepSpeed finally receives.

Exit codes: 0 the run gets to training as far as dsconfig can tell; 1 something on the way raises
(Accelerate, the HF Trainer or DeepSpeedConfig) or lint reports an error; 2 a usage error or an input
that cannot be read (one line, `dsconfig: error: ...`, naming the option or the file, line and column;
click's own errors too), or an internal error (dsconfig's bug: `dsconfig: internal error: ...`).

What is printed comes from files: dsconfig.explain.render and .plan escape it as they place it.
"""

from __future__ import annotations

import os
import sys

import click

from .. import escape
from ..commands.oneline import one_line_errors
from ..targets import NAMES as TARGET_NAMES
from ..training.epochs import MAX_DATASET_SIZE

RELEASE_PREFIX = "deepspeed=="
DIFF = "--diff"
# click's own usage errors (a bad --target, --world-size 0, an unknown option) as one line too
_InputError, _OneLineErrors = one_line_errors("dsconfig")


def _fail(message: str) -> None:
    click.echo(escape.line(f"dsconfig: error: {message}"), err=True)
    sys.exit(2)


def _split_paths(paths) -> tuple[str | None, str | None]:
    deepspeed_path = accelerate_path = None
    for path in paths:
        if path.lower().endswith((".yaml", ".yml")):
            if accelerate_path is not None:
                _fail(f"give one Accelerate YAML, not {accelerate_path} and {path}")
            accelerate_path = path
        else:
            if deepspeed_path is not None:
                _fail(f"give one DeepSpeed JSON (and, optionally, one Accelerate YAML), not {deepspeed_path} and "
                      f"{path}")
            deepspeed_path = path
    return deepspeed_path, accelerate_path


def _check_training_flags(request, parsed) -> None:
    """`--set args.KEY=VALUE`: TrainingArguments values, refused as a --training-args file holding them is
    (a batch size that is no integer, NaN epochs), checked over the file's values when there is one."""
    from .chain import ARGS_PREFIX
    flags = {key: value for layer, key, value in parsed if layer == "args"}
    if not flags:
        return
    from ..deepspeed import trainer
    given = {}
    if request.training_args_path is not None:
        try:
            given = trainer.load_training_args(request.training_args_path)
        except ValueError:
            return  # the file's own problem: explain reports it, naming the file
    errors = trainer.training_args_errors(dict(given, **flags))
    if errors:
        _fail(f"--set {', '.join(ARGS_PREFIX + key for key in flags)}: " + "; ".join(errors))


def _check_fsdp_flags(result, settings, parsed) -> None:
    """An FSDP config has no DeepSpeed keys and no TrainingArguments fill: such a --set would do nothing."""
    if result.facts.get("backend") != "fsdp":
        return
    for text, (layer, _, _) in zip(settings, parsed):
        if layer != "accelerate":
            _fail(f"--set {text}: {' + '.join(result.facts['files'])} is an FSDP config: only --set "
                  "accelerate.KEY=VALUE (an `accelerate launch` flag) applies to it")


def _release(explicit: str | None, paths, option: str = "--deepspeed-version") -> str:
    from ..deepspeed import pins
    start = next((p for p in paths if p and os.path.exists(p)), None)
    try:
        version = pins.choose(explicit, start).version
    except pins.VersionError as error:
        _fail(f"{option}: {error}" if explicit is not None else str(error))  # "" was given too: name the option
    if version == "all":  # lint replays every release; explain shows what one receives
        _fail(f"{option} all is for lint; explain replays one release: give one such as 0.16.9")
    return version


@click.command(cls=_OneLineErrors)
@click.argument("paths", nargs=-1, type=click.Path(readable=False))
@click.option("--training-args", "training_args", type=click.Path(dir_okay=False), metavar="FILE",
              help="JSON or YAML file of TrainingArguments values: replay the HF Trainer's \"auto\" fill.")
@click.option("--target", type=click.Choice(TARGET_NAMES),
              help="Who hands the config to DeepSpeed. Default: hf-trainer with --training-args, accelerate with a "
                   "YAML, hf-trainer when the JSON holds \"auto\", else deepspeed.")
@click.option("--world-size", "world_size", type=click.IntRange(min=1), metavar="N",
              help="Data-parallel world size. Default: what the Accelerate YAML launches, else 1.")
@click.option("--gpus", type=click.IntRange(min=1), help="GPUs per node (world size = gpus x nodes).")
@click.option("--nodes", type=click.IntRange(min=1), help="Number of nodes (with --gpus).")
@click.option("--model", metavar="NAME|config.json",
              help="The model (a catalog name or a Hugging Face config.json): its hidden_size fills the \"auto\" "
                   "bucket sizes.")
@click.option("--dataset-size", type=click.IntRange(min=1, max=MAX_DATASET_SIZE), metavar="N",
              help="Training samples: with num_train_epochs, the scheduler's total steps.")
@click.option("--set", "settings", multiple=True, metavar="KEY=VALUE",
              help="Override a value on the command line: a DeepSpeed key (zero_optimization.stage=3), an "
                   "`accelerate launch` flag (accelerate.zero_stage=3) or a TrainingArguments flag "
                   "(args.learning_rate=1e-5). VALUE is JSON, else text. Repeatable.")
@click.option("--deepspeed-version", "deepspeed_version", metavar="X.Y.Z",
              help="The DeepSpeed release whose defaults apply (0.14.0 to 0.19.8). Default: the installed "
                   "deepspeed, else a pin in the project, else the newest.")
@click.option("--diff", "other", metavar="OTHER|deepspeed==X.Y.Z",
              help="Compare with another config (a JSON or YAML replacing the one of the same kind) or with the "
                   "same inputs under another DeepSpeed release.")
@click.option("--no-defaults", is_flag=True, help="Leave out the keys at DeepSpeed's defaults.")
@click.option("--format", "output_format", type=click.Choice(("text", "json")), default="text", show_default=True)
@click.option("--color", type=click.Choice(("auto", "always", "never")), default="auto", show_default=True,
              help="Strike through overridden values with terminal colours (auto: on a terminal, unless NO_COLOR).")
def explain(paths, training_args, target, world_size, gpus, nodes, model, dataset_size, settings, deepspeed_version,
            other, no_defaults, output_format, color):
    """Show the config DeepSpeed finally receives: every key, defaults included, and where each value came
    from (the JSON, the Accelerate YAML, TrainingArguments, a --set flag, Accelerate's or the Trainer's
    fill, or DeepSpeed's default). Values another source overrode are shown struck through."""
    from ..engine import UsageError as ReadError
    from ..files import FileError
    from . import render
    from .chain import ExplainError, Request, _parse_settings
    from .chain import explain as run

    if not paths:
        _fail("give a ds_config.json, an Accelerate YAML, or both")
    from .. import boundary
    boundary.admit([*paths, training_args, model, None if other is None or other.startswith(RELEASE_PREFIX)
                    else other])
    deepspeed_path, accelerate_path = _split_paths(paths)
    world_source = "--world-size"
    if gpus is not None or nodes is not None:
        if world_size is not None:
            _fail("give either --world-size or --gpus/--nodes, not both")
        if gpus is None:
            _fail("--nodes needs --gpus (GPUs per node)")
        world_size, world_source = gpus * (nodes or 1), f"--gpus {gpus} × --nodes {nodes or 1}"
    version = _release(deepspeed_version, paths)
    request = Request(deepspeed_path, accelerate_path, training_args, target, world_size, world_source, model,
                      dataset_size, tuple(settings), version)
    # Usage problems are one line (exit 2): what explain refuses (ExplainError), a file a reader cannot or may
    # not open (engine.UsageError, files.FileError). Anything else reaches dsconfig.program.guarded as what it
    # is, an internal error.
    compared = None
    try:
        parsed = _parse_settings(request.settings)
        _check_training_flags(request, parsed)
        result = run(request)
        _check_fsdp_flags(result, request.settings, parsed)
    except (ExplainError, ReadError, FileError) as error:
        _fail(str(error))
    if other is not None:
        try:
            compared = run(_other_request(request, other))
        except (ExplainError, ReadError, FileError) as error:
            message = str(error)  # about OTHER ("OTHER:3:4: ..."), or about the inputs under another release
            _fail(f"{DIFF} {message}" if message.startswith(other) else f"{DIFF} {other}: {message}")
    use_color = color == "always" or (color == "auto" and sys.stdout.isatty() and not os.environ.get("NO_COLOR"))
    if compared is not None and compared.facts["backend"] != result.facts["backend"]:
        from . import plan
        if output_format == "json":
            text = plan.plan_json(result, compared)
        else:
            text = plan.plan_text(result, compared, _name(request, result), _name(_other_request(request, other),
                                                                                      compared))
        click.echo(text, nl=False)
        sys.exit(1 if any(differs for *_, differs in plan.plan_rows(result, compared)) else 0)
    if compared is not None:
        if output_format == "json":
            text = render.diff_json(result, compared)
        else:
            text = render.diff_text(result, compared, _name(request, result),
                                    _name(_other_request(request, other), compared), use_color)
        click.echo(text, nl=False)
        sys.exit(1 if render.differences(result, compared) else 0)
    if output_format == "json":
        click.echo(render.as_json(result), nl=False)
    else:
        click.echo(render.text(result, use_color, defaults=not no_defaults), nl=False)
        if result.findings:
            from .. import report
            click.echo("\ndsconfig lint finds:")
            click.echo(report.render("concise", result.findings), nl=False)
    errors = any(f.severity == "error" for f in result.findings)
    sys.exit(1 if result.failed or errors else 0)


def _other_request(request, other: str):
    """--diff OTHER: a release (deepspeed==X.Y.Z), or a file replacing the input of its kind."""
    if other.startswith(RELEASE_PREFIX):
        if other[len(RELEASE_PREFIX):].strip().lower() in ("", "all"):  # no release after it, or every release
            _fail(f"--diff {other}: give a release such as {RELEASE_PREFIX}0.16.9")
        version = _release(other[len(RELEASE_PREFIX):], (), "--diff")
        return request._replace(deepspeed_version=version)
    if other.lower().endswith((".yaml", ".yml")):
        if _is_fsdp(other):  # an FSDP YAML stands alone: no DeepSpeed JSON, no Trainer fill
            return request._replace(accelerate_path=other, deepspeed_path=None, training_args_path=None, settings=())
        return request._replace(accelerate_path=other)
    if request.accelerate_path is not None and _is_fsdp(request.accelerate_path):
        return request._replace(deepspeed_path=other, accelerate_path=None, settings=())
    return request._replace(deepspeed_path=other)


def _is_fsdp(path: str) -> bool:
    """Whether an Accelerate YAML launches FSDP (unreadable: no; explain then reports it as it is)."""
    from .. import engine
    try:
        doc, _ = engine.read_document(path, engine.Options())
    except Exception:  # noqa: BLE001 - explain reads it again and reports what is wrong with it
        return False
    if doc is None or doc.format != "yaml":
        return False
    loaded, value = doc.reading("yaml")
    return loaded and isinstance(value, dict) and value.get("distributed_type") == "FSDP"


def _name(request, result) -> str:
    files = [p for p in (request.deepspeed_path, request.accelerate_path) if p]
    if result.facts.get("backend") == "fsdp":
        return " + ".join(files) + " (FSDP)"
    return " + ".join(files) + f" (DeepSpeed {request.deepspeed_version})"
