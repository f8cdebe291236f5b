"""`dsconfig lint PATH...`: findings for config files, and the exit code CI gates on."""

from __future__ import annotations

import sys

import click

from ..engine import TARGETS


def _world_sizes(value: str | None) -> tuple[int, ...] | None:
    if value is None:
        return None
    sizes = []
    for part in value.split(","):
        part = part.strip()
        if not part.isdigit() or int(part) < 1:
            raise click.BadParameter(f"{part!r} is not a positive integer (use e.g. 8 or 1,2,4,8)",
                                     param_hint="--world-size")
        sizes.append(int(part))
    return tuple(dict.fromkeys(sizes))


@click.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("--target", type=click.Choice(TARGETS),
              help="Who loads the config. Default: hf-trainer when the file holds \"auto\", else deepspeed.")
@click.option("--world-size", "world_size", metavar="N[,N...]",
              help="World size(s) to check the batch arithmetic at, e.g. 8 or 1,2,4,8.")
@click.option("--gpus", type=click.IntRange(min=1), help="GPUs per node (world size = gpus x nodes).")
@click.option("--nodes", type=click.IntRange(min=1), help="Number of nodes (with --gpus).")
@click.option("--training-args", "training_args", type=click.Path(dir_okay=False), metavar="FILE",
              help="JSON file of TrainingArguments values: check what the HF Trainer fills and rejects.")
@click.option("--dataset-size", type=click.IntRange(min=1), metavar="N",
              help="Training samples: add optimizer steps per epoch at each world size.")
@click.option("--format", "output_format", type=click.Choice(("concise", "json")), default="concise",
              show_default=True, help="Output format.")
@click.option("--color", type=click.Choice(("auto", "always", "never")), default="auto", show_default=True,
              help="Colour the codes in concise output (honours NO_COLOR).")
def lint(paths, target, world_size, gpus, nodes, training_args, dataset_size, output_format, color):
    """Lint DeepSpeed and Accelerate config files (or every config below a folder)."""
    from .. import engine, report

    sizes = _world_sizes(world_size)
    if gpus is not None or nodes is not None:
        if sizes is not None:
            raise click.UsageError("give either --world-size or --gpus/--nodes, not both")
        if gpus is None:
            raise click.UsageError("--nodes needs --gpus (GPUs per node)")
        sizes = (gpus * (nodes or 1),)
    args = None
    if training_args is not None:
        from ..deepspeed.trainer import load_training_args
        try:
            args = load_training_args(training_args)
        except ValueError as error:
            raise click.UsageError(str(error)) from None
    options = engine.Options(target=target, world_sizes=sizes, gpus=gpus, nodes=nodes, training_args=args,
                             dataset_size=dataset_size)
    try:
        files = engine.collect(paths)
        findings = engine.lint_files(files, options)  # pairs each Accelerate YAML with its ds_config.json
    except engine.UsageError as error:
        click.echo(f"dsconfig: error: {error}", err=True)
        sys.exit(2)
    except Exception as error:  # never a traceback for the user; ask for a report instead
        click.echo(f"dsconfig: internal error: {type(error).__name__}: {error} "
                   "(please report this with the file that caused it)", err=True)
        sys.exit(2)

    if output_format == "json":
        click.echo(report.as_json(findings), nl=False)
    else:
        use_color = color == "always" or (color == "auto" and sys.stdout.isatty() and not _no_color())
        click.echo(report.concise(findings, color=use_color), nl=False)
        linted = len(set(files) | {f.file for f in findings})  # plus the ds_config.json files YAMLs named
        click.echo(report.summary(findings, linted), err=True)
    sys.exit(1 if any(f.severity == "error" for f in findings) else 0)


def _no_color() -> bool:
    import os
    return bool(os.environ.get("NO_COLOR"))
