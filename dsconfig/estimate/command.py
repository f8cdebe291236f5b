"""`dsconfig estimate`: per-GPU training memory, and whether it fits.

The lead registers `estimate` with `cli.add_command(estimate)`; `python -m dsconfig.estimate`
runs it alone. Without --profile / --model-factory only the standard library and click are
imported (the command starts in well under 150 ms); torch and transformers are imported only to
measure.

Exit status: 0 it fits (or no memory was given), 1 it does not fit, 2 usage or input error (a
one-line message on stderr).
"""

from __future__ import annotations

import dataclasses
import os
import sys
from dataclasses import replace

import click

from .. import escape
from ..commands.oneline import one_line_errors
from . import catalog, fsdp_memory, gpus, inputs, limits, shapes
from . import measured as measured_module
from .estimator import ATTENTIONS, OFFLOAD_DEVICES, PRECISIONS, Hardware, TrainingSetup
from .inputs import Count, shape_options
from .memory import OPTIMIZERS, Buckets

PROG = "dsconfig estimate"
BACKENDS = ("deepspeed", "fsdp")


# A bad option or input file: one line on stderr, exit status 2.
InputError, _OneLineErrors = one_line_errors(PROG)


@click.command("estimate", cls=_OneLineErrors, context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("ds_config", metavar="[CONFIG]", required=False, type=click.Path(dir_okay=False))
@click.option("--backend", type=click.Choice(BACKENDS),
              help="DeepSpeed ZeRO or PyTorch FSDP (as Accelerate sets it up). [default: fsdp for an Accelerate "
                   "YAML, else deepspeed]")
@click.option("--model", "model_name", metavar="NAME|config.json",
              help="A catalog model (see --list-models) or a Hugging Face config.json.")
@shape_options
@click.option("--seq-len", type=Count(limits.SEQUENCE), default=2048, show_default=True, help="Tokens per sample.")
@click.option("--micro-batch", type=Count(limits.MICRO_BATCH), help="Samples per GPU per step. [default: 1]")
@click.option("--precision", type=click.Choice(PRECISIONS), help="Training dtype. [default: bf16]")
@click.option("--gradient-checkpointing/--no-gradient-checkpointing", default=None,
              help="Checkpoint every layer (HF gradient checkpointing). [default: off]")
@click.option("--attention", type=click.Choice(ATTENTIONS), default="flash", show_default=True,
              help="Attention kernel: flash (flash_attention_2 / SDPA flash) or eager.")
@click.option("--optimizer", type=click.Choice(OPTIMIZERS), help="Optimizer. [default: adamw]")
@click.option("--gpus", type=Count(limits.GPUS_PER_NODE), default=1, show_default=True, help="GPUs per node.")
@click.option("--nodes", type=Count(limits.NODES), default=1, show_default=True, help="Nodes.")
@click.option("--zero-stage", type=click.IntRange(0, 3), help="ZeRO stage. [default: 0]")
@click.option("--offload-optimizer", type=click.Choice(OFFLOAD_DEVICES), help="ZeRO-Offload the optimizer.")
@click.option("--offload-param", type=click.Choice(OFFLOAD_DEVICES), help="ZeRO-3: offload the parameters.")
@click.option("--no-zero-init", is_flag=True,
              help="ZeRO-3: the model is loaded whole on each rank before partitioning (no zero.Init).")
@click.option("--sharding-strategy", type=click.Choice(fsdp_memory.STRATEGIES),
              help="FSDP: how the model states are sharded. [default: FULL_SHARD]")
@click.option("--fsdp-version", type=click.Choice(("1", "2")),
              help="FSDP: 1 (FullyShardedDataParallel, flat parameters) or 2 (fully_shard, per-parameter). [default: 2]")
@click.option("--offload-params/--no-offload-params", default=None,
              help="FSDP: parameters, gradients and optimizer states in CPU memory (fsdp_offload_params).")
@click.option("--gpu", "gpu_name", metavar="NAME", help="GPU model, e.g. H100-80GB, A100-40GB, V100-32GB, RTX4090.")
@click.option("--gpu-mem", metavar="SIZE|NAME", help="Memory per GPU: the size on the box (96GB or 96: the catalog's usable memory for cards of that size), "
                   "an exact 79.6GiB, or a GPU name.")
@click.option("--cpu-mem", metavar="SIZE", help="CPU memory per node (e.g. 1TB, 512GiB).")
@click.option("--headroom", type=click.IntRange(0, 90), default=10, show_default=True, metavar="PERCENT",
              help="GPU memory kept free for fragmentation; it fits when the total stays below the rest (as in "
                   "`dsconfig generate`).")
@click.option("--profile", is_flag=True,
              help="Measure the activations with torch + transformers on the meta device (no GPU needed).")
@click.option("--model-factory", metavar="MODULE:FUNCTION",
              help="Measure any torch.nn.Module the function returns (needs --input-shape): activations, "
                   "trainable and frozen parameters, BatchNorm layers, gradient checkpointing.")
@click.option("--input-shape", metavar="B,D1,...", help="With --model-factory: the input's shape, batch first.")
@click.option("--input-dtype", type=click.Choice(("float", "long")), default="float", show_default=True,
              help="With --model-factory: float inputs (in --precision) or token ids.")
@click.option("--deepspeed-version", "deepspeed_version", metavar="X.Y.Z",
              help="Read DS_CONFIG's defaults as this DeepSpeed release does (0.14.0 to 0.19.8). Default: the "
                   "installed deepspeed, else a pin in DS_CONFIG's project, else the newest.")
@click.option("--format", "output_format", type=click.Choice(("table", "json")), default="table",
              show_default=True, help="Output format.")
@click.option("--list-models", is_flag=True, help="List the model catalog and exit.")
@click.option("--list-gpus", is_flag=True, help="List the GPU catalog and exit.")
def estimate(ds_config, backend, sharding_strategy, fsdp_version, offload_params, model_name, params, layers, hidden, heads, kv_heads, intermediate, vocab, largest_layer,
             seq_len, micro_batch, precision, gradient_checkpointing, attention, optimizer, gpus, nodes, zero_stage,
             offload_optimizer, offload_param, no_zero_init, gpu_name, gpu_mem, cpu_mem, headroom, profile,
             model_factory, input_shape, input_dtype, deepspeed_version, output_format, list_models, list_gpus):
    """Estimate per-GPU memory for training a model with DeepSpeed or FSDP, and whether it fits.

    CONFIG, when given, is a ds_config.json (the ZeRO stage, offload devices, precision, micro batch,
    optimizer, bucket sizes and activation checkpointing) or an Accelerate FSDP YAML (the sharding
    strategy, FSDP version, offload, precision, processes and activation checkpointing); options
    given explicitly win.
    """
    from .. import boundary
    from . import estimator, report
    boundary.admit([ds_config, model_name])

    if list_models:
        for entry in catalog.CATALOG.values():
            shape = shapes.from_hf_config(entry.config, entry.name)
            click.echo(f"{entry.name:24} {report.count(shape.parameters):>8}  {entry.source}")
        return
    if list_gpus:
        for gpu in _gpu_catalog():
            click.echo(f"{gpu.name:14} {gpu.memory_mib:>7} MiB  bf16 {'yes' if gpu.bf16 else 'no ':3}  {gpu.description}")
        return

    values, notes = {}, []
    backend = _backend(backend, ds_config)
    fsdp_options = {"--sharding-strategy": sharding_strategy, "--fsdp-version": fsdp_version,
                    "--offload-params": offload_params}
    deepspeed_options = {"--zero-stage": zero_stage, "--offload-optimizer": offload_optimizer,
                         "--offload-param": offload_param, "--no-zero-init": no_zero_init or None,
                         "--deepspeed-version": deepspeed_version}
    wrong = next((name for name, value in (deepspeed_options if backend == "fsdp" else fsdp_options).items()
                  if value is not None), None)
    if wrong is not None:
        raise InputError(f"{wrong} is a {'DeepSpeed' if backend == 'fsdp' else 'FSDP'} option; it does not go with "
                         f"--backend {backend}")
    if backend == "fsdp":
        values, notes = _fsdp_values(ds_config, sharding_strategy, fsdp_version, offload_params)
        for name in ("gpus", "nodes"):
            if name in values and click.get_current_context().get_parameter_source(name).name != "DEFAULT":
                del values[name]  # the command line wins over the YAML's processes
        gpus, nodes = values.pop("gpus", gpus), values.pop("nodes", nodes)
    elif ds_config is not None:
        from ..deepspeed import pins, schema
        from . import deepspeed_config
        try:
            release = pins.choose_one(deepspeed_version, ds_config if os.path.exists(ds_config) else None, "estimate")
        except pins.VersionError as error:
            raise InputError(str(error)) from None
        schema.use(release.version)
        try:
            values, notes = deepspeed_config.read(ds_config)
        except deepspeed_config.ConfigError as error:
            raise InputError(str(error)) from None
    given = {"micro_batch": micro_batch, "precision": precision, "gradient_checkpointing": gradient_checkpointing,
             "optimizer": optimizer, "zero_stage": zero_stage, "offload_optimizer": offload_optimizer,
             "offload_param": offload_param}
    for key, value in given.items():
        if value is not None:
            values[key] = value
    bucket_values = values.pop("buckets", {})
    auto_buckets = values.pop("auto_buckets", [])
    if model_factory is not None:
        if model_name or params:
            raise InputError("give --model-factory alone, without --model or --params")
        try:
            inputs.factory_spec(model_factory)
            shape_dims = inputs.input_shape(input_shape)
        except inputs.InputProblem as error:
            raise InputError(str(error)) from None
        if micro_batch is not None and micro_batch != shape_dims[0]:
            raise InputError(f"--micro-batch {micro_batch} differs from the batch of --input-shape ({shape_dims[0]})")
        values["micro_batch"] = shape_dims[0]
    try:
        setup = TrainingSetup(seq_len=seq_len, attention=attention, gpus=gpus, nodes=nodes,
                              zero_init=not no_zero_init, buckets=Buckets(**bucket_values), **values)
        setup.check()
    except (TypeError, ValueError) as error:
        raise InputError(str(error)) from None

    hardware = _hardware(gpu_name, gpu_mem, cpu_mem, headroom / 100)
    measured = module = None
    if model_factory is not None:
        module = _measure_factory(model_factory, shape_dims, setup, input_dtype)
        shape = measured_module.module_shape(module)
        notes.append(f"activations measured on the module (torch, meta device) at micro batches "
                     f"{', '.join(str(b) for b, _ in module.plain.kept.points)}; other micro batches on the line "
                     "through the two largest")
    else:
        flags = {"layers": layers, "hidden": hidden, "heads": heads, "kv_heads": kv_heads,
                 "intermediate": intermediate, "vocab": vocab, "largest_layer": largest_layer}
        shape = _model(model_name, params, flags)
        notes += inputs.params_note(params, flags)
        if auto_buckets and setup.zero_stage == 3 and shape.hidden:
            deepspeed_config.fill_trainer_buckets(auto_buckets, shape.hidden, bucket_values, notes)
            setup = dataclasses.replace(setup, buckets=Buckets(**bucket_values))
        if profile:
            measured = _measure_hf(shape, setup)
            notes.append("activations measured with torch + transformers (--profile)")
    try:
        result = estimator.estimate(shape, setup, hardware, measured_activations=measured, module=module)
    except ValueError as error:
        raise InputError(str(error)) from None
    result.notes[:0] = notes
    from .remedies import remedies
    result.remedies = remedies(result, measured)
    if output_format == "json":
        click.echo(escape.json_text(report.as_json(result)), nl=False)
    else:
        click.echo(escape.lines(report.table(result)), nl=False)  # the model's name may be a file's
    sys.exit(1 if result.fits is False or result.errors else 0)


def _backend(backend: str | None, config: str | None) -> str:
    yaml_file = config is not None and config.lower().endswith((".yaml", ".yml"))
    if backend is None:
        return "fsdp" if yaml_file else "deepspeed"
    if backend == "deepspeed" and yaml_file:
        raise InputError(f"{config}: with --backend deepspeed give the ds_config.json (an Accelerate YAML is read "
                         "with --backend fsdp)")
    if backend == "fsdp" and config is not None and not yaml_file:
        raise InputError(f"{config}: --backend fsdp reads an Accelerate FSDP config (.yaml or .yml)")
    return backend


def _fsdp_values(config, strategy, version, offload) -> tuple[dict, list[str]]:
    """TrainingSetup values for FSDP: the Accelerate YAML's (when given), then the options'."""
    from . import accelerate_config
    values, notes = {"fsdp": fsdp_memory.Fsdp()}, []
    if config is not None:
        try:
            values, notes = accelerate_config.read(config)
        except accelerate_config.ConfigError as error:
            raise InputError(str(error)) from None
    changes = {"strategy": strategy, "version": int(version) if version else None, "offload_params": offload}
    values["fsdp"] = replace(values["fsdp"], **{k: v for k, v in changes.items() if v is not None})
    try:
        values["fsdp"].check()
    except ValueError as error:
        raise InputError(str(error)) from None
    return values, notes


def _gpu_catalog():
    return [gpus.GPUS[name] for name in gpus.names()]


def _hardware(gpu_name, gpu_mem, cpu_mem, headroom: float) -> Hardware:
    try:
        memory, gpu = inputs.gpu(gpu_name, gpu_mem)
        cpu_memory = inputs.size(cpu_mem, "--cpu-mem")
    except inputs.InputProblem as error:
        raise InputError(str(error)) from None
    return Hardware(gpu_memory=memory, cpu_memory=cpu_memory,
                    gpu_name=gpu.name if gpu else None, bf16=gpu.bf16 if gpu else None, headroom=headroom)


def _model(model_name, params, flags) -> shapes.ModelShape:
    try:
        shape = inputs.model(model_name, params, flags, params_name="{params} parameters")
    except inputs.InputProblem as error:
        raise InputError(str(error)) from None
    if shape is None:
        raise InputError("say which model: --model NAME, --model config.json, --params 7B or --model-factory")
    return shape


def _require_torch(what: str):
    import importlib.util
    missing = [name for name in ("torch", "transformers") if importlib.util.find_spec(name) is None]
    if missing:
        raise InputError(f"{what} needs {' and '.join(missing)} installed (pip install {' '.join(missing)})")


def _measure_hf(shape: shapes.ModelShape, setup: TrainingSetup) -> int:
    if shape.config is None:
        raise InputError("--profile needs a model config (--model NAME or config.json), not --params")
    _require_torch("--profile")
    from . import profile
    try:
        measured = profile.measure_hf(shape.config, batch=setup.micro_batch, seq_len=setup.seq_len,
                                      precision=setup.precision, attention=setup.attention,
                                      checkpointing=setup.gradient_checkpointing)
    except Exception as error:  # transformers or torch refusing the config: say so in one line
        raise InputError(f"--profile: measuring failed: {type(error).__name__}: {error}") from None
    return measured.activation_bytes


def _measure_factory(spec: str, dims: tuple[int, ...], setup: TrainingSetup, input_dtype: str):
    """The module measured at the micro batch asked for and at two more (see measured.Line)."""
    batch = dims[0]
    batches = (1, 2, 4) if batch == 1 else (batch, 2 * batch)
    try:
        return inputs.module_profile(spec, dims[1:], batches=batches, precision=setup.precision,
                                     input_dtype=input_dtype, attention=setup.attention,
                                     checkpointing=(setup.gradient_checkpointing,))
    except inputs.InputProblem as error:
        raise InputError(str(error)) from None
