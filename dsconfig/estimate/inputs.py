"""The model and the GPU as `dsconfig estimate` and `dsconfig generate` take them on the command line.

Both commands accept the same model options (--model NAME or config.json, --params with shape
flags) and the same GPU options (--gpu NAME, --gpu-mem SIZE or NAME, --cpu-mem SIZE). Problems
are raised as InputProblem, which each command prints as its own one-line error.
"""

from __future__ import annotations

import os

import click

from . import catalog, gpus, limits, shapes


class InputProblem(ValueError):
    """A bad model or hardware option; the message names the option."""


class Count(click.ParamType):
    """A positive integer option no larger than its limits.Limit; the error says what the bound is."""

    name = "integer"

    def __init__(self, limit: limits.Limit):
        self.limit = limit

    def convert(self, value, param, ctx):
        option = param.opts[0] if param is not None and param.opts else "the value"
        if isinstance(value, str):
            text = value.strip()
            try:
                value = int(text)
            except ValueError:
                if not text.isdigit():
                    self.fail(f"{value!r} is not an integer", param, ctx)
                # past the 4,300 digits int() reads: far past any limit
                raise click.UsageError(limits.too_large(f"{option} is a {len(text.lstrip('0'))}-digit number",
                                                        self.limit), ctx) from None
        try:
            return limits.count(value, option, self.limit)
        except limits.LimitError as error:
            raise click.UsageError(str(error), ctx) from None


# --params and the shape flags that refine it, in the order `--help` shows them.
SHAPE_FLAGS = (
    ("--layers", "transformer layers."),
    ("--hidden", "hidden size."),
    ("--heads", "attention heads."),
    ("--kv-heads", "key/value heads (GQA)."),
    ("--intermediate", "MLP width (SwiGLU)."),
    ("--vocab", "vocabulary size."),
    ("--largest-layer", "parameters of the largest module (DeepSpeed's largest_layer_params)."),
)


_FLAG_LIMITS = {"--layers": limits.LAYERS, "--hidden": limits.WIDTH, "--heads": limits.WIDTH,
                "--kv-heads": limits.WIDTH, "--intermediate": limits.WIDTH, "--vocab": limits.VOCABULARY,
                "--largest-layer": limits.PARAMETERS}


def shape_options(command):
    """--params and the shape flags, for a click command."""
    for flag, what in reversed(SHAPE_FLAGS):
        command = click.option(flag, type=Count(_FLAG_LIMITS[flag]), help=f"With --params: {what}")(command)
    return click.option("--params", metavar="COUNT",
                        help="Parameter count for a model outside the catalog, e.g. 7B, 350M.")(command)


def size(value: str | None, option: str) -> int | None:
    if value is None:
        return None
    try:
        return gpus.parse_memory_size(value)
    except ValueError as error:
        raise InputProblem(f"{option}: {error}") from None


def gpu(gpu_name: str | None, gpu_mem: str | None):
    """(bytes per GPU or None, the catalog GPU or None) from --gpu and --gpu-mem (which may name a GPU)."""
    known = None
    if gpu_name is not None:
        known = gpus.lookup(gpu_name)
        if known is None:
            raise InputProblem(f"--gpu: unknown GPU {gpu_name!r} (known: {', '.join(gpus.names())}); "
                               "give its memory with --gpu-mem instead")
    memory = None
    if gpu_mem is not None:
        named = gpus.lookup(gpu_mem) if not gpu_mem.strip()[:1].isdigit() else gpus.nominal_card(gpu_mem)
        if named is not None:
            known = known or named
            memory = named.memory_bytes
        else:
            memory = size(gpu_mem, "--gpu-mem")
    if memory is None and known is not None:
        memory = known.memory_bytes
    return memory, known


def model(model_name: str | None, params: str | None, flags: dict, params_name: str) -> shapes.ModelShape | None:
    """The shape from --model or --params (named `params_name`, with "{params}" filled in); None when
    neither is given."""
    shape_flags = {k: v for k, v in flags.items() if v is not None}
    if model_name and params:
        raise InputProblem("give either --model or --params, not both")
    if model_name:
        if shape_flags:
            raise InputProblem(f"--{next(iter(shape_flags)).replace('_', '-')} goes with --params, not --model")
        entry = catalog.lookup(model_name)
        if entry is not None:
            return shapes.from_hf_config(entry.config, entry.name)
        if os.path.exists(model_name) or model_name.endswith(".json"):
            try:
                return shapes.from_config_file(model_name)
            except shapes.ShapeError as error:
                raise InputProblem(f"--model: {error}") from None
        raise InputProblem(f"--model: {model_name!r} is neither a catalog model (dsconfig estimate --list-models) "
                           "nor a config.json")
    if params:
        try:
            return shapes.from_params(shapes.parse_count(params), name=params_name.format(params=params),
                                      **shape_flags)
        except shapes.ShapeError as error:
            raise InputProblem(f"--params: {error}") from None
    if shape_flags:
        raise InputProblem(f"--{next(iter(shape_flags)).replace('_', '-')} goes with --params")
    return None


# -- --model-factory: any torch.nn.Module ---------------------------------------------------------

FACTORY_OPTIONS = "--model-factory MODULE:FUNCTION"
MAX_INPUT_DIMS = 8  # the batch and up to seven more: 3-D video with channels and time is five


def input_shape(text: str | None) -> tuple[int, ...]:
    """--input-shape B,D1,...: the batch and a sample's sizes (positive integers, each within limits)."""
    if not text:
        raise InputProblem("--model-factory needs --input-shape, e.g. --input-shape 8,3,224,224 (batch first)")
    parts = text.replace("x", ",").split(",")
    if len(parts) < 2 or len(parts) > MAX_INPUT_DIMS:
        raise InputProblem(f"--input-shape: {text!r} needs a batch and 1 to {MAX_INPUT_DIMS - 1} sizes "
                           "(e.g. 8,3,224,224)")
    dims = []
    for index, part in enumerate(parts):
        if not part.strip().isdigit():
            raise InputProblem(f"--input-shape: {text!r} is not a list of positive integers (e.g. 8,3,224,224)")
        name, limit = ("the batch", limits.MICRO_BATCH) if index == 0 else (f"size {index}", limits.WIDTH)
        digits = part.strip().lstrip("0")
        if len(digits) > 30:  # past what int() reads quickly, and far past any limit
            raise InputProblem(limits.too_large(f"--input-shape {name} is a {len(digits)}-digit number", limit))
        try:
            dims.append(limits.count(int(part), f"--input-shape {name}", limit))
        except limits.LimitError as error:
            raise InputProblem(str(error)) from None
    return tuple(dims)


def factory_spec(spec: str) -> str:
    module_name, _, function = spec.partition(":")
    if not module_name or not function or not all(part.isidentifier() for part in (*module_name.split("."), function)):
        raise InputProblem(f"--model-factory takes MODULE:FUNCTION (e.g. mymodels:build_unet), got {spec!r}")
    return spec


def module_profile(spec: str, sample_shape: tuple[int, ...], *, batches: tuple[int, ...], precision: str,
                   input_dtype: str, attention: str, checkpointing: tuple[bool, ...]):
    """Measure the module `spec` returns (profile.profile_factory); torch is imported only here."""
    import importlib.util
    import sys

    factory_spec(spec)
    if importlib.util.find_spec("torch") is None:
        raise InputProblem("--model-factory needs torch installed (pip install torch)")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # `mymodels:build` next to the user
    module_name = spec.partition(":")[0]
    try:
        found = importlib.util.find_spec(module_name)
    except (ImportError, ValueError) as error:  # a parent package that is missing or fails to import
        raise InputProblem(f"--model-factory {spec}: {type(error).__name__}: {error}") from None
    if found is None:  # said before torch is imported, which takes a second or two
        raise InputProblem(f"--model-factory {spec}: no module named {module_name!r} (from {os.getcwd()} or "
                           "the installed packages)")
    from . import profile
    try:
        return profile.profile_factory(spec, sample_shape, batches=batches, precision=precision,
                                       input_dtype=input_dtype, attention=attention, checkpointing=checkpointing)
    except Exception as error:  # the user's code, or torch refusing the input: one line
        message = " ".join(str(error).split()) or "(no message)"
        raise InputProblem(f"--model-factory {spec}: {type(error).__name__}: {message}") from None


def params_note(params: str | None, flags: dict) -> list[str]:
    """--params without shape flags is sized as a decoder-only LLM: say so."""
    if params and not any(value is not None for value in flags.values()):
        note = (f"--params {params} alone assumes a Llama-style decoder-only LLM (layers, widths and vocabulary "
                "guessed from the count, activations from that shape); for another model (a UNet, a CNN) use "
                "--model-factory MODULE:FUNCTION --input-shape B,...")
        return [note]
    return []
