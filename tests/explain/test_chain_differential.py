"""`dsconfig explain` against the real code, key by key, over the corpus.

For every DeepSpeed JSON of the corpus (the project's fixtures, and ../shared/corpus when it is there),
under several TrainingArguments files and world sizes, with a model's hidden size:

* the HF Trainer (transformers 5.23): `TrainingArguments(deepspeed=config)` (the real
  HfTrainerDeepSpeedConfig fill and DeepSpeedPlugin), `set_mixed_precision` as `Trainer(...)` calls it,
  `trainer_config_finalize` with the model and the step count, then the fill of Accelerate's
  `_prepare_deepspeed` (the real `deepspeed_config_process`, with the keyword arguments that function
  builds for a model, a DummyOptim and the Trainer's filled batch sizes);
* Accelerate (1.15) alone: `accelerate launch --config_file YAML` (`_validate_launch_command`,
  `prepare_deepspeed_cmd_env`), then `DeepSpeedPlugin` in that environment and `set_mixed_precision`;

and compares what they hand on with dsconfig's stages. Where the real code raises, dsconfig must say
the run stops. The last layer, DeepSpeedConfig's defaults, is compared in test_deepspeed_view.py; here
the real DeepSpeedConfig also reads what the real Trainer produced, and dsconfig's effective config of
the same inputs must equal it (test_deepspeed_view.compare: what DeepSpeedConfig holds), and
`dsconfig explain` must show that config.
"""

from __future__ import annotations

import copy
import json
import math
import os
from types import SimpleNamespace

import pytest

from dsconfig.explain.chain import Request, explain, leaves, same
from tests.conftest import corpus_files, quiet_and_restored

pytest.importorskip("transformers")
pytest.importorskip("accelerate")
pytest.importorskip("deepspeed")

from dsconfig.deepspeed.trainer import MISMATCH_HEAD  # noqa: E402
from dsconfig.explain.deepspeed_view import effective  # noqa: E402
from tests import oracle  # noqa: E402
from tests.deepspeed.test_trainer import OUTPUT_DIR, WorldArgs, real_steps  # noqa: E402
from tests.explain import test_deepspeed_view as view  # noqa: E402

MODEL = "llama-3-8b"
HIDDEN = 4096  # llama-3-8b's hidden_size

TRAINING_ARGS = {
    "defaults": {},
    "bf16-max-steps": {"per_device_train_batch_size": 4, "gradient_accumulation_steps": 8, "learning_rate": 3e-5,
                       "bf16": True, "max_steps": 500, "warmup_steps": 0.1, "weight_decay": 0.01,
                       "max_grad_norm": 0.5},
    "fp16-epochs": {"per_device_train_batch_size": 2, "gradient_accumulation_steps": 2, "fp16": True,
                    "num_train_epochs": 2, "warmup_steps": 10, "adam_beta2": 0.95},
}
WORLDS = (1, 2, 8)
DATASET_SIZE = 10_000


def _json_configs():
    found = []
    for path, label in corpus_files("deepspeed"):
        try:
            with open(path, encoding="utf-8") as handle:
                value = json.load(handle)
        except (ValueError, UnicodeDecodeError):
            continue  # not json.load-able: the Trainer cannot read it either (lint covers it)
        if isinstance(value, dict):
            found.append((str(path), f"{path.parent.name}/{path.name}", value))
    return found


CONFIGS = _json_configs()


class Failure:
    """The real code raised."""

    def __init__(self, text: str):
        self.text = text


def _plain(value):
    """JSON-comparable: tuples as lists (the Trainer writes betas as a list either way)."""
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def real_trainer(config: dict, targs: dict, world: int):
    """What the HF Trainer hands to deepspeed.initialize, or Failure."""
    WorldArgs.fake_world = world
    with quiet_and_restored():
        try:
            args = WorldArgs(output_dir=OUTPUT_DIR, use_cpu=True, report_to=[], deepspeed=copy.deepcopy(config),
                             **targs)
            plugin = args.deepspeed_plugin
            plugin.set_mixed_precision(args.mixed_precision)  # Trainer(...) → AcceleratorState
            steps = real_steps(args, DATASET_SIZE, world)
            model = SimpleNamespace(config=SimpleNamespace(hidden_size=HIDDEN))
            plugin.hf_ds_config.trainer_config_finalize(args, model, steps)
            after_trainer = copy.deepcopy(plugin.deepspeed_config)
            _prepare_fill(plugin, args, world)
        except Exception as error:  # noqa: BLE001 - whatever the real code raises is the verdict
            return Failure(f"{type(error).__name__}: {error}")
    final = copy.deepcopy(plugin.deepspeed_config)
    deepspeed_says = oracle.verdict(copy.deepcopy(final), world)  # deepspeed.initialize → DeepSpeedConfig
    if not deepspeed_says.ok:
        return Failure(deepspeed_says.error)
    return _plain(after_trainer), _plain(final)


def _prepare_fill(plugin, args, world: int) -> None:
    """Accelerator._prepare_deepspeed's fill for the Trainer's prepare(model, optimizer): its keyword
    arguments as that function builds them (no DataLoader: the batch size is the config's)."""
    micro = plugin.get_value("train_micro_batch_size_per_gpu")
    kwargs = {"gradient_clipping": 1.0, "zero_optimization.stage3_gather_16bit_weights_on_model_save": False}
    if micro is not None:
        kwargs["train_micro_batch_size_per_gpu"] = micro
        kwargs["train_batch_size"] = micro * plugin.get_value("gradient_accumulation_steps") * world
    kwargs.update({"zero_optimization.reduce_bucket_size": HIDDEN * HIDDEN,
                   "zero_optimization.stage3_prefetch_bucket_size": int(0.9 * HIDDEN * HIDDEN),
                   "zero_optimization.stage3_param_persistence_threshold": 10 * HIDDEN})
    if "optimizer" in plugin.deepspeed_config:  # the Trainer passes a DummyOptim
        kwargs.update({"optimizer.params.lr": args.learning_rate, "optimizer.params.weight_decay": args.weight_decay})
    plugin.deepspeed_config_process(must_match=False, **kwargs)


def _deepspeed_layer(final: dict, ours, world: int) -> list[str]:
    """The last layer: DeepSpeedConfig reading what the real code handed on holds what dsconfig's effective
    config of it says (test_deepspeed_view.compare), and that is the config explain shows."""
    problem = view.compare(view.Installed, view.INSTALLED, final, world)
    if problem:
        return [problem]
    shown = differences(effective(final, world).config, ours.config)
    return ["explain shows " + "; ".join(shown[:3])] if shown else []


def mine(path: str, targs: dict, world: int, tmp_path):
    args_file = tmp_path / "args.json"
    args_file.write_text(json.dumps(targs))
    return explain(Request(deepspeed_path=path, training_args_path=str(args_file), target="hf-trainer",
                           world_size=world, model=MODEL, dataset_size=DATASET_SIZE))


def differences(real: dict, ours: dict, skip=()) -> list[str]:
    a, b = dict(leaves(real)), dict(leaves(ours))
    out = []
    for pointer in sorted(set(a) | set(b)):
        if pointer in skip:
            continue
        x, y = a.get(pointer, "<absent>"), b.get(pointer, "<absent>")
        if isinstance(x, float) and isinstance(y, float) and math.isinf(x) and math.isinf(y):
            continue
        if not same(_plain(x), _plain(y)):
            out.append(f"{pointer}: real {x!r} vs dsconfig {y!r}")
    return out


@pytest.mark.skipif(not CONFIGS, reason="no corpus")
@pytest.mark.parametrize("args_name", sorted(TRAINING_ARGS))
def test_trainer_fill_equals_the_real_trainer(args_name, tmp_path, capsys):
    targs = TRAINING_ARGS[args_name]
    checked = agreed_failures = 0
    problems = []
    for path, label, config in CONFIGS:
        for world in WORLDS:
            real = real_trainer(config, targs, world)
            ours = mine(path, targs, world, tmp_path)
            if isinstance(real, Failure):
                if not ours.failed:
                    problems.append(f"{label} @ {world}: the real run raises {real.text[:200]}; dsconfig says nothing")
                elif MISMATCH_HEAD in real.text:  # the Trainer's own list of mismatches, line for line
                    real_lines = [line for line in real.text.splitlines() if line.startswith("- ds ")]
                    said = " ".join(ours.failed)
                    missing = [line for line in real_lines if line not in said]
                    if missing:
                        problems.append(f"{label} @ {world}: dsconfig misses the Trainer's {missing}")
                agreed_failures += 1
                continue
            if ours.failed:
                problems.append(f"{label} @ {world}: dsconfig says the run stops ({ours.failed[0][:200]}); the real "
                                "one does not")
                continue
            after_trainer, final = real
            for stage, real_value in (("accelerate", after_trainer), ("final", final)):
                diff = differences(real_value, ours.stages[stage])
                if diff:
                    problems.append(f"{label} @ {world} [{stage}]: " + "; ".join(diff[:5]))
            problems.extend(f"{label} @ {world} [DeepSpeedConfig]: {p}" for p in _deepspeed_layer(final, ours, world))
            checked += 1
    with capsys.disabled():
        print(f"\nHF Trainer ({args_name}): {checked} config × world size runs equal key by key, "
              f"{agreed_failures} failures agreed")
    assert not problems, f"{len(problems)} disagreements:\n" + "\n".join(problems[:20])
    assert checked + agreed_failures == len(CONFIGS) * len(WORLDS)
    assert checked > 0


# -- Accelerate alone: the YAML's launch environment and DeepSpeedPlugin ---------------------------------------

def _deepspeed_yamls():
    import yaml
    found = []
    for path, _ in corpus_files("accelerate"):
        try:
            value = yaml.safe_load(path.read_text(encoding="utf-8"))
        except Exception:  # noqa: BLE001 - unreadable YAMLs are lint's business
            continue
        if isinstance(value, dict) and value.get("distributed_type") == "DEEPSPEED":
            found.append(path)
    return found


YAMLS = _deepspeed_yamls()
# JSONs a script might hand to DeepSpeedPlugin(hf_ds_config=...) next to an inline YAML
SCRIPT_CONFIGS = [c for c in CONFIGS if isinstance(c[2].get("zero_optimization"), dict)][:12]


class LaunchFailed(Exception):
    """`accelerate launch` refused the YAML."""


def launched_env(yaml_path, flags=()) -> dict:
    """`accelerate launch --config_file YAML [--flag value ...] x.py` up to the training process: os.environ
    with exactly the launcher's ACCELERATE_* variables (`_validate_launch_command`, `prepare_deepspeed_cmd_env`)."""
    from accelerate.commands.launch import _validate_launch_command, launch_command_parser
    from accelerate.utils.launch import prepare_deepspeed_cmd_env

    argv = ["--config_file", str(yaml_path)]
    for flag in flags:
        name, value = flag.split("=")
        argv += [f"--{name}", value]
    with quiet_and_restored():
        try:
            args, defaults, from_config = _validate_launch_command(launch_command_parser().parse_args(argv + ["x.py"]))
            fields = list(defaults.deepspeed_config.keys()) if defaults else []
            if from_config:
                fields.append("mixed_precision")
            args.deepspeed_fields_from_accelerate_config = ",".join(fields)
            _, env = prepare_deepspeed_cmd_env(args)
        except Exception as error:  # noqa: BLE001 - whatever the launcher raises is the verdict
            raise LaunchFailed(f"launch: {type(error).__name__}: {error}") from None
    clean = {k: v for k, v in os.environ.items() if not k.startswith("ACCELERATE_")}
    clean.update({k: v for k, v in env.items() if k.startswith("ACCELERATE_")})
    return clean


def real_plugin(yaml_path, config: dict | None = None, flags=()):
    """DeepSpeedPlugin's config after __post_init__ and set_mixed_precision in the launcher's environment, for
    `config` handed to it by a script (None: DeepSpeedPlugin() alone), or Failure."""
    from accelerate.utils import DeepSpeedPlugin

    try:
        env = launched_env(yaml_path, flags)
    except LaunchFailed as error:
        return Failure(str(error))
    with quiet_and_restored(env):  # exactly the launcher's variables, for the plugin only
        try:
            plugin = DeepSpeedPlugin(hf_ds_config=copy.deepcopy(config)) if config is not None else DeepSpeedPlugin()
            plugin.set_mixed_precision(env["ACCELERATE_MIXED_PRECISION"])
        except Exception as error:  # noqa: BLE001
            return Failure(f"{type(error).__name__}: {error}")
    return _plain(plugin.deepspeed_config)


def yaml_naming(tmp_path, index: int, path: str, extra: str = ""):
    """An Accelerate YAML launching 4 processes whose deepspeed_config_file is `path`."""
    yaml_path = tmp_path / f"accelerate_{index}.yaml"
    yaml_path.write_text("compute_environment: LOCAL_MACHINE\ndistributed_type: DEEPSPEED\ndeepspeed_config:\n"
                         f"  deepspeed_config_file: {json.dumps(os.path.abspath(path))}\n{extra}"
                         "num_machines: 1\nnum_processes: 4\n")
    return yaml_path


def _cases():
    cases = []
    for yaml_path in YAMLS:
        text = yaml_path.read_text(encoding="utf-8")
        if "deepspeed_config_file" in text:
            continue  # the file it names is relative to where the job is launched: not in the corpus
        cases.append((yaml_path, None))
        cases += [(yaml_path, (path, config)) for path, _, config in SCRIPT_CONFIGS]
    return cases


@pytest.mark.skipif(not YAMLS, reason="no Accelerate DeepSpeed YAMLs in the corpus")
def test_plugin_equals_the_real_deepspeed_plugin(capsys):
    checked = failures = 0
    problems = []
    for yaml_path, script in _cases():
        config = script[1] if script else None
        real = real_plugin(yaml_path, config)
        if isinstance(real, Failure) and real.text.startswith("launch:"):
            continue  # accelerate launch refuses the YAML: dsconfig lint's business (ACC rules)
        try:
            ours = explain(Request(deepspeed_path=script[0] if script else None, accelerate_path=str(yaml_path),
                                   target="accelerate"))
        except Exception as error:  # noqa: BLE001 - an ExplainError is a disagreement too
            problems.append(f"{yaml_path.name} + {script[0] if script else '-'}: dsconfig {error}")
            continue
        label = f"{yaml_path.parent.name}/{yaml_path.name} + {os.path.basename(script[0]) if script else 'inline'}"
        if isinstance(real, Failure):
            failures += 1
            if not ours.failed:
                problems.append(f"{label}: the real plugin raises {real.text[:200]}; dsconfig says nothing")
            continue
        diff = differences(real, ours.stages["accelerate"])
        if diff:
            problems.append(f"{label}: " + "; ".join(diff[:5]))
        checked += 1
    with capsys.disabled():
        print(f"\nDeepSpeedPlugin: {checked} YAML/config pairs equal key by key, {failures} failures agreed")
    assert not problems, f"{len(problems)} disagreements:\n" + "\n".join(problems[:20])
    assert checked > 0


FLAG_SETS = {"no flags": [], "launch flags": ["zero_stage=3", "mixed_precision=bf16", "gradient_clipping=0.5"]}


@pytest.mark.skipif(not CONFIGS, reason="no corpus")
@pytest.mark.parametrize("flag_set", sorted(FLAG_SETS))
def test_yaml_naming_the_json_equals_the_real_plugin(flag_set, tmp_path, capsys):
    """Every corpus JSON behind an Accelerate YAML's deepspeed_config_file, with and without launch flags."""
    flags = FLAG_SETS[flag_set]
    checked = failures = 0
    problems = []
    for index, (path, label, _) in enumerate(CONFIGS):
        yaml_path = yaml_naming(tmp_path, index, path, "  zero3_init_flag: true\n")
        real = real_plugin(yaml_path, flags=flags)
        ours = explain(Request(accelerate_path=str(yaml_path), target="accelerate",
                               settings=tuple(f"accelerate.{flag}" for flag in flags)))
        if isinstance(real, Failure):
            failures += 1
            if not ours.failed:
                problems.append(f"{label}: the real plugin raises {real.text[:200]}; dsconfig says nothing")
            continue
        diff = differences(real, ours.stages["accelerate"])
        if diff:
            problems.append(f"{label}: " + "; ".join(diff[:5]))
        if any(line.startswith("DeepSpeedPlugin") or line.startswith("Accelerate raises") for line in ours.failed):
            problems.append(f"{label}: dsconfig says the plugin raises ({ours.failed[0][:150]}); the real one does not")
        checked += 1
    with capsys.disabled():
        print(f"\nYAML → JSON ({flag_set}): {checked} equal key by key, {failures} failures agreed")
    assert not problems, f"{len(problems)} disagreements:\n" + "\n".join(problems[:20])
    assert checked > len(CONFIGS) // 2


def real_trainer_launched(yaml_path, targs: dict, world: int):
    """A Trainer script started by `accelerate launch --config_file YAML` without --deepspeed: TrainingArguments
    build DeepSpeedPlugin() from the launcher's environment, Trainer(...) fills it (propagate_args_to_deepspeed)."""
    from transformers.integrations.deepspeed import propagate_args_to_deepspeed

    try:
        env = launched_env(yaml_path)
    except LaunchFailed as error:
        return Failure(str(error))
    WorldArgs.fake_world = world
    with quiet_and_restored(env):
        try:
            targs_real = WorldArgs(output_dir=OUTPUT_DIR, use_cpu=True, report_to=[], **targs)
            plugin = targs_real.deepspeed_plugin
            propagate_args_to_deepspeed(SimpleNamespace(state=SimpleNamespace(deepspeed_plugin=plugin)), targs_real)
            steps = real_steps(targs_real, DATASET_SIZE, world)
            model = SimpleNamespace(config=SimpleNamespace(hidden_size=HIDDEN))
            plugin.hf_ds_config.trainer_config_finalize(targs_real, model, steps)
            _prepare_fill(plugin, targs_real, world)
        except Exception as error:  # noqa: BLE001
            return Failure(f"{type(error).__name__}: {error}")
    final = copy.deepcopy(plugin.deepspeed_config)
    deepspeed_says = oracle.verdict(copy.deepcopy(final), world)
    if not deepspeed_says.ok:
        return Failure(deepspeed_says.error)
    return _plain(final)


@pytest.mark.skipif(not CONFIGS, reason="no corpus")
@pytest.mark.parametrize("args_name", ["bf16-max-steps", "defaults"])
def test_trainer_launched_with_a_yaml_equals_the_real_one(args_name, tmp_path, capsys):
    """The plugin first, then the Trainer's fill: every corpus JSON behind a YAML, and the inline YAMLs."""
    targs = TRAINING_ARGS[args_name]
    (tmp_path / "args.json").write_text(json.dumps(targs))
    yamls = [path for path in YAMLS if "deepspeed_config_file" not in path.read_text(encoding="utf-8")]
    for index, (path, _, _) in enumerate(CONFIGS):
        yamls.append(yaml_naming(tmp_path, index, path))
    checked = failures = 0
    problems = []
    for yaml_path in yamls:
        try:
            ours = explain(Request(accelerate_path=str(yaml_path), training_args_path=str(tmp_path / "args.json"),
                                   target="hf-trainer", model=MODEL, dataset_size=DATASET_SIZE))
        except Exception as error:  # noqa: BLE001
            problems.append(f"{yaml_path.name}: dsconfig {error}")
            continue
        real = real_trainer_launched(yaml_path, targs, ours.facts["world_size"])
        if isinstance(real, Failure):
            if real.text.startswith("launch:"):
                continue
            failures += 1
            if not ours.failed:
                problems.append(f"{yaml_path.name}: the real run raises {real.text[:200]}; dsconfig says nothing")
            continue
        if ours.failed:
            problems.append(f"{yaml_path.name}: dsconfig says the run stops ({ours.failed[0][:150]}); the real one "
                            "does not")
            continue
        diff = differences(real, ours.stages["final"])
        if diff:
            problems.append(f"{yaml_path.name}: " + "; ".join(diff[:5]))
        world = ours.facts["world_size"]
        problems.extend(f"{yaml_path.name} [DeepSpeedConfig]: {p}" for p in _deepspeed_layer(real, ours, world))
        checked += 1
    with capsys.disabled():
        print(f"\nHF Trainer launched with a YAML ({args_name}): {checked} equal key by key, {failures} failures "
              "agreed")
    assert not problems, f"{len(problems)} disagreements:\n" + "\n".join(problems[:20])
    assert checked > 0
