"""`dsconfig convert`: a DeepSpeed setup as an Accelerate FSDP config, or an FSDP config as DeepSpeed.

    dsconfig convert ds_config.json [accelerate.yaml] --to fsdp [--fsdp-version 1|2] [--model NAME|config.json]
    dsconfig convert accelerate_fsdp.yaml --to deepspeed [--target hf-trainer|accelerate|deepspeed|lightning]

Prints a table of every setting: mapped, approximated, no equivalent, or for the user to decide,
with the reason. The files are written atomically and never over an existing one without --force
(dsconfig.generate.write); they are linted in-process before anything is written.

Exit status: 0 converted, 2 a usage or input error (one line on stderr: `dsconfig convert: error: ...`,
naming the file, line and column where there is one).
"""

from __future__ import annotations

import os
import re

import click

from .. import escape
from ..commands.oneline import one_line_errors
from ..targets import BY_NAME
from ..targets import NAMES as TARGET_NAMES

PROG = "dsconfig convert"
InputError, _OneLineErrors = one_line_errors(PROG)


@click.command("convert", cls=_OneLineErrors, context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("inputs", nargs=-1, metavar="FILE...")
@click.option("--to", "to", type=click.Choice(("fsdp", "deepspeed")), required=True,
              help="fsdp: a ds_config.json (and/or the Accelerate YAML launching it) becomes an Accelerate FSDP "
                   "YAML. deepspeed: an Accelerate FSDP YAML becomes ds_config.json + an Accelerate YAML.")
@click.option("--fsdp-version", type=click.Choice(("1", "2")), default="2", show_default=True,
              help="--to fsdp: the FSDP version written.")
@click.option("--model", "model", metavar="NAME|config.json",
              help="--to fsdp: a catalog model or a Hugging Face config.json, for the layer class to wrap.")
@click.option("--gpus", type=click.IntRange(1, 1 << 16), help="--to fsdp: GPUs per machine, when no YAML says it.")
@click.option("--nodes", type=click.IntRange(1, 1 << 16), help="--to fsdp: machines, when no YAML says it.")
@click.option("--target", type=click.Choice(TARGET_NAMES), default="hf-trainer", show_default=True,
              help="--to deepspeed: who hands the config to DeepSpeed (hf-trainer: \"auto\" values).")
@click.option("--micro-batch", type=click.IntRange(1, 1 << 16), default=1, show_default=True,
              help="--to deepspeed with a target that does not fill \"auto\": samples per GPU per step.")
@click.option("-o", "--output-dir", default=".", show_default=True, type=click.Path(file_okay=False),
              help="Where the files go.")
@click.option("--force", is_flag=True, help="Overwrite existing files.")
@click.option("--stdout", "to_stdout", is_flag=True, help="Print the files instead of writing them (the table goes "
                                                          "to stderr).")
@click.option("--format", "form", type=click.Choice(("text", "json")), default="text", show_default=True,
              help="The table's format.")
def convert(inputs, to, fsdp_version, model, gpus, nodes, target, micro_batch, output_dir, force, to_stdout, form):
    """Convert between DeepSpeed ZeRO and FSDP configs, with a table of what mapped and what did not."""
    from . import output
    from .reading import ConvertError

    if not inputs:
        raise InputError("give the file(s) to convert")
    from .. import boundary
    boundary.admit([*inputs, model])
    try:
        if to == "fsdp":
            _only(to, target=target != "hf-trainer", micro_batch=micro_batch != 1)
            files, rows, title, world = _to_fsdp(inputs, int(fsdp_version), model, gpus, nodes, output_dir)
        else:
            _only(to, fsdp_version=fsdp_version != "2", model=model, gpus=gpus, nodes=nodes)
            _check_named_dir(output_dir, BY_NAME[target])
            files, rows, title, world = _to_deepspeed(inputs, BY_NAME[target], micro_batch, output_dir)
    except ConvertError as error:
        raise InputError(str(error)) from None
    problems = self_check(files, to, target, world)
    if problems:
        raise InputError(f"internal error: the converted {problems[0]} (please report this)")

    if to_stdout:
        for file in files:
            if len(files) > 1:
                click.echo(f"==> {file.name} <==")
            click.echo(file.text, nl=False)
        names = [file.name for file in files]
    else:
        from ..generate.write import WriteError, write_all
        try:
            names = write_all(output_dir, files, force=force)
        except WriteError as error:
            raise InputError(str(error)) from None
    # escaped where each piece is placed (dsconfig.convert.output): JSON that parses back to the same strings
    if form == "json":
        text = output.table_json(rows, sources=list(inputs), to=to, files=names)
    else:
        text = output.table_text(rows, title) + "".join(escape.line(f"wrote {name}") + "\n" for name in names
                                                        if not to_stdout)
    click.echo(text, nl=False, err=to_stdout)


def _only(to: str, **given) -> None:
    """Options of the other direction are refused: they would silently do nothing."""
    for name, present in given.items():
        if present:
            raise InputError(f"--{name.replace('_', '-')} does not go with --to {to}")


def _shown(output_dir: str, name: str) -> str:
    """A file as the launch (run from the current folder) names it."""
    full = os.path.abspath(os.path.join(output_dir, name))
    relative = os.path.relpath(full)
    return full if relative.startswith("..") else relative


def _to_fsdp(inputs, version, model, gpus, nodes, output_dir):
    from ..fsdp.settings import layer_class
    from . import mapping, output, reading
    source = reading.deepspeed_source(tuple(inputs))
    layer_cls = None
    if model:
        model_type, _ = reading.model_type(model)
        layer_cls = layer_class(model_type)
    settings, launch, rows = mapping.to_fsdp(source, version=version, layer_cls=layer_cls, model=model, gpus=gpus,
                                             nodes=nodes)
    _check_host(source.doc, launch.main_process_ip)
    files = output.fsdp_files(settings, launch, " + ".join(inputs), _shown(output_dir, output.FSDP_CONFIG))
    title = f"{' + '.join(map(escape.path, inputs))} -> FSDP{settings.version} ({output.FSDP_CONFIG})"
    return files, rows, title, launch.num_processes


def _to_deepspeed(inputs, target, micro_batch, output_dir):
    from ..generate.render import ACCELERATE_CONFIG, DS_CONFIG
    from . import mapping, output, reading
    if len(inputs) != 1 or not reading.is_yaml(inputs[0]):
        raise reading.ConvertError("--to deepspeed takes one Accelerate FSDP YAML (.yaml or .yml)")
    source = reading.fsdp_source(inputs[0])
    choice, rows = mapping.to_deepspeed(source)
    _check_host(source.doc, choice.main_process_ip)
    if not target.fills_auto:
        rows.append(mapping.Row("(batch sizes)", f"train_micro_batch_size_per_gpu {micro_batch}", mapping.YOU_DECIDE,
                                f"{target.who} fills no \"auto\": --micro-batch, accumulation 1, clipping 1.0"))
    files = output.deepspeed_files(choice, target, micro_batch, inputs[0], _shown(output_dir, DS_CONFIG),
                                   _shown(output_dir, ACCELERATE_CONFIG))
    title = f"{escape.path(inputs[0])} -> DeepSpeed ZeRO-{choice.stage} ({', '.join(f.name for f in files)})"
    return files, rows, title, choice.num_processes


def _check_named_dir(output_dir: str, target) -> None:
    """--to deepspeed for a launcher that reads the Accelerate YAML: it names ds_config.json by its path under
    --output-dir, and YAML holds no control character (a newline would fold into a space and name another
    file) and no lone surrogate (a name that is not UTF-8)."""
    if target.fills_auto and re.search("[\x00-\x08\x0a-\x1f\x7f-\x84\x86-\x9f\ud800-\udfff]", output_dir):
        raise InputError(f"--output-dir {output_dir!r}: the converted accelerate_config.yaml names ds_config.json by "
                         "this path, and YAML text cannot hold its control characters or bytes that are not UTF-8")


# What a main_process_ip can be: a host name, an IPv4 address, an IPv6 one (brackets, a %zone)
_HOST = re.compile(r"[A-Za-z0-9._:%\[\]-]+")


def _check_host(doc, ip: str | None) -> None:
    """main_process_ip is carried into the converted YAML: text no host has (a newline, an escape sequence, a
    quote, `##[`) is the input's problem, said at its line and column, not a converted file that fails
    dsconfig lint (reported as dsconfig's own bug) or a line `--stdout` prints as a CI command."""
    from .reading import ConvertError
    if ip is None or _HOST.fullmatch(ip):
        return
    line, column = doc.locate("/main_process_ip")
    raise ConvertError(f"{doc.path}:{line}:{column}: main_process_ip {ip[:60]!r} is not a host name or IP address")


def self_check(files, to: str, target_name: str, world: int) -> list[str]:
    """Lint the converted files as `dsconfig lint` would at the world size they launch; "file fails dsconfig
    lint: CODE message" per error (a dsconfig bug)."""
    from .. import engine, targets
    from ..generate.render import ACCELERATE_CONFIG, DS_CONFIG
    target = targets.BY_NAME[target_name] if to == "deepspeed" else None
    options = engine.Options(target=target, world_sizes=(world,)) if target else engine.Options()
    problems = []
    for file in files:
        name = ACCELERATE_CONFIG if file.name.endswith(".yaml") else DS_CONFIG
        for finding in engine.lint_document(engine.open_document(file.text, name, options), options):
            if finding.severity == "error":
                problems.append(f"{file.name} fails dsconfig lint: {finding.code} {finding.message}")
    return problems
