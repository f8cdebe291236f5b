"""`dsconfig generate`: a DeepSpeed config sized to the GPUs, with the plan that justifies it.

    dsconfig generate --gpus 2 --gpu-mem 96GB [--model NAME|config.json | --params 7B] [--nodes 2]
        [--global-batch 64] [--target hf-trainer|accelerate|deepspeed|lightning] [--output-dir DIR]

The lead registers it as `"generate": "dsconfig.generate.command:generate"`; `python -m
dsconfig.generate` runs it alone. Only the standard library, click and dsconfig's own estimate
and lint modules are imported (no torch, DeepSpeed or transformers).

Exit status: 0 the files were written (or printed), 1 nothing fits these GPUs (and host memory), as
`dsconfig estimate` says "does not fit", 2 a usage or input error, or a file would be overwritten
without --force. 1 and 2 print one line on stderr (`dsconfig generate: ...`) and write nothing.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import replace

import click

from .. import escape
from ..commands.oneline import one_line_errors
from ..deepspeed import releases
from ..estimate import catalog, inputs, limits, measured, shapes
from ..estimate.inputs import Count, shape_options
from ..estimate.memory import OPTIMIZERS
from ..targets import NAMES as TARGET_NAMES
from .planner import BACKENDS, DEFAULT_MODEL, PRECISIONS, SHAPES

PROG = "dsconfig generate"


# A bad option or input file, a file in the way: one line, exit status 2.
InputError, _OneLineErrors = one_line_errors(PROG)


class DoesNotFit(InputError):
    """Nothing fits: one line, exit status 1 (as `dsconfig estimate`'s "fits: no")."""
    exit_code = 1


@click.command("generate", cls=_OneLineErrors, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--gpus", type=Count(limits.GPUS_PER_NODE), default=1, show_default=True, help="GPUs per node.")
@click.option("--nodes", type=Count(limits.NODES), default=1, show_default=True, help="Nodes.")
@click.option("--gpu-mem", metavar="SIZE|NAME", help="Memory per GPU: the size on the box (96GB or 96: the catalog's usable memory for "
              "cards of that size), an exact 90GiB, or a GPU name.")
@click.option("--gpu", "gpu_name", metavar="NAME",
              help="GPU model (H100-80GB, A100-40GB, V100-32GB, H20-96GB, ...): its memory and bf16 support.")
@click.option("--cpu-mem", metavar="SIZE", help="CPU memory per node; checked when offloading. [default: not checked]")
@click.option("--model", "model_name", metavar="NAME|config.json",
              help=f"A catalog model (dsconfig estimate --list-models) or a Hugging Face config.json. "
                   f"[default: {DEFAULT_MODEL}]")
@shape_options
@click.option("--seq-len", type=Count(limits.SEQUENCE), default=2048, show_default=True, help="Tokens per sample.")
@click.option("--global-batch", type=Count(limits.GLOBAL_BATCH),
              help="Samples per optimizer step over all GPUs. [default: the largest micro batch that fits (at most "
                   "32) × the GPUs]")
@click.option("--micro-batch", type=Count(limits.MICRO_BATCH), help="Fix the samples per GPU per step. [default: the "
                                                                "largest that fits]")
@click.option("--precision", type=click.Choice(PRECISIONS), default="auto", show_default=True,
              help="auto: bf16 where the GPU has it, else fp16 with loss scaling.")
@click.option("--target", type=click.Choice(TARGET_NAMES), default="hf-trainer", show_default=True,
              help="Who hands the config to DeepSpeed.")
@click.option("--optimizer", type=click.Choice(OPTIMIZERS), default="adamw", show_default=True,
              help="The optimizer (its states decide the memory).")
@click.option("--attention", type=click.Choice(("flash", "eager")), default="flash", show_default=True,
              help="Attention kernel.")
@click.option("--model-factory", metavar="MODULE:FUNCTION",
              help="Size for any torch.nn.Module the function returns, measured with torch (needs --input-shape).")
@click.option("--input-shape", metavar="B,D1,...",
              help="With --model-factory: the input's shape, batch first (the batch is only an example: the plan "
                   "chooses the micro batch).")
@click.option("--input-dtype", type=click.Choice(("float", "long")), default="float", show_default=True,
              help="With --model-factory: float inputs (in the training precision) or token ids.")
@click.option("--batchnorm", is_flag=True, help="The model has BatchNorm layers: never a micro batch below 2 "
                                                "(found by itself with --model-factory).")
@click.option("--gradient-checkpointing/--no-gradient-checkpointing", default=None,
              help="Force gradient checkpointing on or off. [default: on only when needed]")
@click.option("--headroom", type=click.IntRange(0, 90), default=10, show_default=True, metavar="PERCENT",
              help="GPU memory kept free (allocator fragmentation is not in the estimate).")
@click.option("--nvme-path", metavar="PATH", help="A local NVMe folder: allows ZeRO-3 + NVMe offload as a last resort.")
@click.option("--template", type=click.Choice(tuple(SHAPES)), help="Use this ZeRO/offload shape instead of choosing.")
@click.option("--backend", type=click.Choice(BACKENDS), default="deepspeed", show_default=True,
              help="deepspeed: a ds_config.json (ZeRO); fsdp: an Accelerate FSDP config (PyTorch FSDP).")
@click.option("--fsdp-version", type=click.Choice(("1", "2")), default="2", show_default=True,
              help="With --backend fsdp: FSDP2 (fully_shard) or FSDP1 (FullyShardedDataParallel).")
@click.option("--deepspeed-version", "deepspeed_version", metavar="X.Y.Z",
              help="Write only what this DeepSpeed release understands (0.14.0 to 0.19.8). Default: the installed "
                   "deepspeed, else a pin in the output folder's project, else the newest.")
@click.option("--script", default="train.py", show_default=True, metavar="PATH",
              help="The training script, as the launch commands name it.")
@click.option("--output-dir", default=".", show_default=True, type=click.Path(file_okay=False),
              help="Where the files go.")
@click.option("--force", is_flag=True, help="Overwrite existing files.")
@click.option("--stdout", "to_stdout", is_flag=True, help="Print the files instead of writing them (the plan goes to "
                                                          "stderr).")
def generate(gpus, nodes, gpu_mem, gpu_name, cpu_mem, model_name, params, layers, hidden, heads, kv_heads,
             intermediate, vocab, largest_layer, seq_len, global_batch, micro_batch, precision, target, optimizer,
             attention, model_factory, input_shape, input_dtype, batchnorm, gradient_checkpointing, headroom, nvme_path,
             template, backend, fsdp_version, deepspeed_version, script, output_dir, force, to_stdout):
    """Generate ds_config.json (and accelerate_config.yaml, a hostfile, a SLURM script) sized to the GPUs.

    Chooses the least ZeRO sharding (with --backend fsdp: FSDP sharding strategy) that fits with
    headroom, offload and gradient checkpointing only when needed, bf16 where the GPU has it, and the
    largest micro batch that splits the global batch exactly; prints the plan with the per-GPU memory
    and the launch command.
    """
    from .. import boundary
    from . import planner, render, show
    boundary.admit([model_name])

    _check_text(("--output-dir", output_dir), ("--script", script), ("--nvme-path", nvme_path))
    memory, name, bf16 = _hardware(gpu_name, gpu_mem)
    fsdp = backend == "fsdp"
    if fsdp:
        for option, value in (("--deepspeed-version", deepspeed_version), ("--nvme-path", nvme_path),
                              ("--template", template)):
            if value is not None:
                raise InputError(f"{option} goes with --backend deepspeed, not fsdp")
    release = None if fsdp else _release(deepspeed_version, output_dir)
    flags = {"layers": layers, "hidden": hidden, "heads": heads, "kv_heads": kv_heads, "intermediate": intermediate,
             "vocab": vocab, "largest_layer": largest_layer}
    if model_factory is not None:
        if model_name or params:
            raise InputError("give --model-factory alone, without --model or --params")
        sample_shape = _factory_input(model_factory, input_shape)
        model, default_model = None, False
    else:
        model, default_model = _model(model_name, params, flags)
    request = planner.Request(
        model=model, gpu_memory=memory, gpus=gpus, nodes=nodes, gpu_name=name, bf16_supported=bf16,
        cpu_memory=_cpu_memory(cpu_mem), seq_len=seq_len, global_batch=global_batch, micro_batch=micro_batch,
        precision=precision, optimizer=optimizer, attention=attention, target=target, batchnorm=batchnorm,
        checkpointing=gradient_checkpointing, headroom=headroom / 100, nvme_path=nvme_path, template=template,
        default_model=default_model, deepspeed_version=release.version if release else None, backend=backend,
        fsdp_version=int(fsdp_version))
    notes = inputs.params_note(params, flags)
    try:
        if model_factory is not None:
            request = _measured(request, model_factory, sample_shape, input_dtype)
        result = planner.plan(request)
    except planner.PlanError as error:
        raise InputError(str(error)) from None
    except planner.NoFit as error:
        raise DoesNotFit(error.reason) from None
    result.notes[:0] = notes
    if release is not None and release.version != releases.NEWEST:  # the newest needs no word
        result.notes.append(f"written for DeepSpeed {release.version} ({release.reason})")

    warning = _host_memory_warning(result, request)
    if warning:
        result.notes.insert(0, warning)
    paths = _paths(output_dir, script)
    _check_paths(output_dir, paths)
    if fsdp:
        from . import fsdp_render
        result.notes += fsdp_render.notes(result)
        files = fsdp_render.files(result, paths)
    else:
        files = render.files(result, paths)
    problems = self_check(result, files)
    if problems:
        raise InputError(f"internal error: the generated {problems[0]} (please report this)")

    unicode = _can_print("█▏")
    if to_stdout:
        click.echo(escape.lines(show.text(result, paths, None, unicode=_can_print("█▏", err=True))), err=True,
                   nl=False)
        for file in files:
            if len(files) > 1:
                click.echo(f"==> {file.name} <==")
            click.echo(escape.lines(file.text), nl=False)  # the file as written (self_check: nothing to escape)
        if warning:
            click.echo(escape.line(f"{PROG}: {warning}"), err=True)
        return
    from .write import WriteError, write_all
    try:
        written = write_all(output_dir, files, force=force)
    except WriteError as error:
        raise InputError(str(error)) from None
    click.echo(escape.lines(show.text(result, paths, written, unicode=unicode)), nl=False)  # paths: --output-dir
    if warning:
        click.echo(escape.line(f"{PROG}: {warning}"), err=True)


def _host_memory_warning(result, request) -> str | None:
    """Without --cpu-mem, an offload plan is compared with this machine's RAM: it may be where the job runs."""
    if request.cpu_memory is not None or not result.shape.offloads:
        return None
    from ..estimate.gpus import this_machine_memory
    from ..estimate.report import gib
    here, needed = this_machine_memory(), result.estimate.cpu_per_node
    if here is None or needed <= here:
        return None
    return (f"warning: the plan keeps {gib(needed)} in CPU memory per node and this machine has {gib(here)}: it "
            "cannot train here. For other nodes, give their memory with --cpu-mem (a plan that does not fit it "
            "exits 1)")


# -- inputs -------------------------------------------------------------------------------------------

def _release(explicit: str | None, output_dir: str):
    from ..deepspeed import pins
    try:
        return pins.choose_one(explicit, output_dir if os.path.isdir(output_dir) else None, "generate")
    except pins.VersionError as error:
        raise InputError(str(error)) from None


# What no path named in a generated file may hold: what dsconfig.escape escapes (control characters, bidi
# overrides and isolates, line separators), and U+FFFE/U+FFFF, which YAML cannot hold at all.
_UNSAFE_PATH = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ufffe\uffff]")
_CI_COMMAND = re.compile(r"(?i)##(?:vso)?\[")


def _check_text(*options) -> None:
    """The generated files and commands name these paths in UTF-8 text, each on its line: a name whose
    bytes are not UTF-8 (Python gives b"\\xff" as "\\udcff") cannot be written there, and one holding a
    control character (a newline ends a YAML comment or value, an escape sequence reaches the terminal
    of whoever prints the file) or a CI command (`##[`, `##vso[`) is refused: a usage error, never a
    generated file that fails dsconfig lint or a `--stdout` line a CI runner acts on."""
    for option, value in options:
        problem = _path_problem(value or "")
        if problem:
            raise InputError(f"{option} {value!r} {problem}")


def _path_problem(value: str) -> str | None:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "is not UTF-8 text, which the generated files are"
    unsafe = _UNSAFE_PATH.search(value)
    if unsafe:
        return f"holds {unsafe.group()!r}, a control or non-printing character the generated files cannot carry"
    command = _CI_COMMAND.search(value)
    if command:
        return f"holds {command.group()!r}, which a CI log runs as a command: the generated files cannot carry it"
    return None


def _check_paths(output_dir: str, paths) -> None:
    """The same for the files as the launch names them: under --output-dir, made absolute when it is
    outside the current folder (so the names of the folders above it are in them then)."""
    folder = os.path.dirname(paths.ds_config)
    problem = _path_problem(folder)
    if problem:
        raise InputError(f"--output-dir {output_dir!r}: the generated files name it {folder!r}, and that {problem}")


def _hardware(gpu_name: str | None, gpu_mem: str | None) -> tuple[int, str | None, bool | None]:
    """(bytes per GPU, GPU name, bf16 support) from --gpu and --gpu-mem (which may name a GPU)."""
    try:
        memory, gpu = inputs.gpu(gpu_name, gpu_mem)
    except inputs.InputProblem as error:
        raise InputError(str(error)) from None
    if memory is None:
        raise InputError("say how much memory each GPU has: --gpu-mem 80GB, or --gpu H100-80GB")
    return memory, gpu.name if gpu else None, gpu.bf16 if gpu else None


def _model(model_name, params, flags) -> tuple[shapes.ModelShape, bool]:
    """(shape, is the default model)."""
    try:
        shape = inputs.model(model_name, params, flags, params_name="{params}-parameter model")
    except inputs.InputProblem as error:
        raise InputError(str(error)) from None
    if shape is not None:
        return shape, False
    entry = catalog.CATALOG[DEFAULT_MODEL]
    return shapes.from_hf_config(entry.config, entry.name), True


def _factory_input(spec: str, input_shape: str | None) -> tuple[int, ...]:
    """A sample's shape from --input-shape (its batch is only an example: the plan chooses the micro batch)."""
    try:
        inputs.factory_spec(spec)
        return inputs.input_shape(input_shape)[1:]
    except inputs.InputProblem as error:
        raise InputError(str(error)) from None


def _measured(request, spec: str, sample_shape: tuple[int, ...], input_dtype: str):
    """The request with the module measured in the precision the plan will choose, at micro batches 2 and 4
    (the planner reads every other micro batch off the line through them, measured.Line), with and
    without gradient checkpointing unless it is forced."""
    from . import planner
    precision, _ = planner.choose_precision(request)
    checkpointing = (False, True) if request.checkpointing is None else (request.checkpointing,)
    try:
        module = inputs.module_profile(spec, sample_shape, batches=(2, 4), precision=precision,
                                       input_dtype=input_dtype, attention=request.attention,
                                       checkpointing=checkpointing)
    except inputs.InputProblem as error:
        raise InputError(str(error)) from None
    return replace(request, model=measured.module_shape(module), module=module)


def _cpu_memory(cpu_mem: str | None) -> int | None:
    try:
        return inputs.size(cpu_mem, "--cpu-mem")
    except inputs.InputProblem as error:
        raise InputError(str(error)) from None


def _paths(output_dir: str, script: str):
    """The generated files as the launch (run from the current folder) names them."""
    from .render import ACCELERATE_CONFIG, DS_CONFIG, HOSTFILE, SLURM, Paths

    def where(name: str) -> str:
        full = os.path.abspath(os.path.join(output_dir, name))
        relative = os.path.relpath(full)
        return full if relative.startswith("..") else relative

    return Paths(where(DS_CONFIG), where(ACCELERATE_CONFIG), where(HOSTFILE), where(SLURM), script)


def _can_print(text: str, err: bool = False) -> bool:
    stream = sys.stderr if err else sys.stdout
    try:
        text.encode(getattr(stream, "encoding", None) or "ascii")
        return True
    except (UnicodeEncodeError, LookupError):
        return False


# -- self-check ---------------------------------------------------------------------------------------

def self_check(plan, files) -> list[str]:
    """Lint what was generated, as `dsconfig lint` would (target, world size, the Trainer's arguments).

    Returns "file: CODE message" for every error; warnings and infos are left to the tests (which
    require none but the documented infos). A non-empty result is a dsconfig bug. Every file is also
    safe to print as it is (`--stdout`): no line holds what dsconfig.escape would change (a control
    character, a bidi override, a CI command), as the inputs that reach them are checked or escaped.
    """
    from .. import engine, targets
    from .render import ACCELERATE_CONFIG, DS_CONFIG, trainer_arguments

    request = plan.request
    target = targets.BY_NAME[request.target]
    training_args = trainer_arguments(plan) if target is targets.HF_TRAINER else None
    options = engine.Options(target=target, world_sizes=(request.world_size,), gpus=request.gpus,
                             nodes=request.nodes, training_args=training_args,
                             deepspeed_version=request.deepspeed_version)
    problems = []
    for file in files:
        unsafe = [number for number, line in enumerate(file.text.split("\n"), 1) if escape.line(line) != line]
        if unsafe:
            problems.append(f"{file.name} holds a control character or a CI command on line {unsafe[0]}")
        if file.name not in (DS_CONFIG, ACCELERATE_CONFIG):
            continue
        for finding in engine.lint_document(engine.open_document(file.text, file.name, options), options):
            if finding.severity == "error":
                problems.append(f"{file.name} fails dsconfig lint: {finding.code} {finding.message}")
    return problems
