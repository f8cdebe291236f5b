"""Lint one Accelerate config file the way Accelerate 1.15 reads it.

Phases, as `fails_in` reports them: "load" is `load_config_from_file` (unknown top-level keys,
missing or invalid distributed_type / compute_environment), "launch" is `accelerate launch`
before any process starts (replayed in launch.py), "initialize" is what each training process
raises later (DeepSpeedPlugin, the FSDP plugin, the HF Trainer), None is silently wrong.
Sub-dict typos never raise anywhere: `accelerate launch` copies every key onto its namespace
and nothing reads the ones that name no launch option.
"""

from __future__ import annotations

from functools import lru_cache

from ..deepspeed import schema as ds_schema
from ..findings import Finding
from ..phases import INITIALIZE, LAUNCH, LOAD
from ..pointers import pointer_join
from ..rules.accelerate_keys import (
    CONFIG_FILE_CONFLICT,
    DISTRIBUTED_TYPE,
    IGNORED_DEEPSPEED_KEY,
    IGNORED_SECTION_KEY,
    INVALID_SETTING,
    MIXED_PRECISION,
    UNKNOWN_TOP_LEVEL_KEY,
    YAML_BOOLEAN,
)
from ..rules.accelerate_launch import (
    GPU_IDS,
    HOSTFILE_MISSING,
    INLINE_GRADIENT_ACCUMULATION,
    MAIN_PROCESS_IP,
    NUM_PROCESSES_INDIVISIBLE,
    NUM_PROCESSES_PER_NODE,
    NVME_IN_YAML,
    SINGLE_PROCESS_TYPE,
    STAGE_IGNORED,
)
from ..rules.files import DUPLICATE_KEY, PARSE_ERROR
from ..targets import HF_TRAINER
from ..values import brief, closest, describe, key_token, printable, py_str, to_json
from . import schema
from .fsdp import fsdp_findings
from .launch import FALSE_WORDS, TRUE_WORDS, Replay

# DeepSpeedPlugin._deepspeed_config_checks refuses these next to deepspeed_config_file.
_REFUSED_MESSAGE = ("When using `deepspeed_config_file`, the following accelerate config variables will be ignored: "
                    "{names}.")
_HOSTFILE_LAUNCHERS = ("pdsh", "openmpi", "mvapich", "mpich", "slurm", "nossh")  # all but `standard`
_OFFLOAD_DEVICES = ("none", "cpu", "nvme")


def lint_accelerate(doc, options) -> list[Finding]:
    findings = load_findings(doc)
    loaded, config = doc.reading("json")  # json.load for .json files, yaml.safe_load for YAML
    if not loaded:
        return findings
    if not isinstance(config, dict):
        findings.append(Finding(PARSE_ERROR, f"the top level is {describe(config)}, not a mapping: Accelerate's loader "
                                             "fails with AttributeError (`.get` on a non-dict)", "", fails_in=LOAD))
        return findings
    booleans = doc.yaml11_booleans
    if config.get("compute_environment") == "AMAZON_SAGEMAKER":
        findings.extend(check_sagemaker(config, booleans))
    else:
        findings.extend(check_cluster(config, booleans, options))
    return findings


def load_findings(doc) -> list[Finding]:
    """DS000 when the loader raises, DS001 for duplicate keys (both loaders keep the last one silently)."""
    findings = []
    reader = "yaml.safe_load" if doc.format == "yaml" else "json.load"
    error = doc.load_error
    if error is not None:
        findings.append(Finding(PARSE_ERROR, f"{reader} fails: {error.message}", offset=error.offset, fails_in=LOAD))
    for dup in doc.duplicates:
        first_line, _ = doc.position(dup.first_key_start)
        key = dup.pointer.rsplit("/", 1)[-1]
        findings.append(Finding(DUPLICATE_KEY, f"duplicate key `{key}` (first at line {first_line}): {reader}, which "
                                               "Accelerate uses, silently keeps this last value",
                                offset=dup.key_start))
    return findings


# -- SageMaker ------------------------------------------------------------------------------


def check_sagemaker(config: dict, booleans: dict) -> list[Finding]:
    """SageMaker configs: only what applies (keys, required fields, distributed_type)."""
    findings = unknown_top_level(config, schema.SAGEMAKER)
    for name in schema.required(schema.SAGEMAKER):
        if name not in config and name != "distributed_type":
            findings.append(Finding(INVALID_SETTING, f"`{name}` is required for a SageMaker config: Accelerate fails "
                                                     "with \"SageMakerConfig.__init__() missing 1 required positional "
                                                     f"argument: '{name}'\"", pointer_join("", name), fails_in=LOAD))
    findings.extend(distributed_type_findings(config, booleans, schema.SAGEMAKER))
    findings.append(Finding(
        DISTRIBUTED_TYPE,
        f"accelerate {schema.version()} cannot launch SageMaker configs: `accelerate launch` fails with "
        "\"AttributeError: 'SageMakerConfig' object has no attribute 'parallelism_config'\" before it reaches the "
        "SageMaker launcher (an Accelerate bug); use another Accelerate version",
        "/compute_environment", fails_in=LAUNCH))
    findings.extend(yaml11_text(config, booleans, schema.SAGEMAKER, reported=set()))
    return findings


# -- local machine --------------------------------------------------------------------------


def check_cluster(config: dict, booleans: dict, options) -> list[Finding]:
    findings = unknown_top_level(config, schema.CLUSTER)
    findings.extend(compute_environment_findings(config))
    findings.extend(distributed_type_findings(config, booleans, schema.CLUSTER))
    replay = Replay(config, booleans)
    findings.extend(replay.findings)
    if replay.launcher == "tpu":
        findings.extend(tpu_precision(replay))
    findings.extend(topology(replay, options))
    findings.extend(section_keys(config, replay))
    if replay.launcher == "deepspeed":
        findings.extend(deepspeed_settings(config, replay, options))
    if config.get("distributed_type") == "FSDP":
        findings.extend(fsdp_findings(replay, getattr(options, "model", None)))
    findings.extend(yaml11_text(config, booleans, schema.CLUSTER, reported={f.pointer for f in findings}))
    return findings


def unknown_top_level(config: dict, config_class: str) -> list[Finding]:
    """ACC001: `load_config_from_file` refuses any key that is not a field of the config class."""
    known = schema.fields(config_class)
    other = schema.fields(schema.SAGEMAKER if config_class == schema.CLUSTER else schema.CLUSTER)
    unknown = [key for key in config if key not in known]
    if not unknown:
        return []
    listed = sorted(py_str(key) for key in unknown)
    if len(listed) > 10:  # Accelerate lists them all; repeated in every finding, that grows with the square
        listed = f"[{', '.join(repr(key) for key in listed[:10])}, ... {len(listed) - 10} more]"
    findings = []
    for index, key in enumerate(unknown):
        message = (f"unknown key `{py_str(key)}`: Accelerate refuses to load the file (\"had unknown keys "
                   f"({listed})\")")
        # past a hundred unknown keys the file is no typo'd config: no did-you-mean (0.4 s for 9,000 keys)
        hint = _top_level_hint(key, known, other, config_class) if index < _HINTED else ""
        findings.append(Finding(UNKNOWN_TOP_LEVEL_KEY, message + (f"; {hint}" if hint else ""),
                                pointer_join("", key_token(key)),
                                fails_in=LOAD, on_key=True))
    return findings


_HINTED = 100


def _top_level_hint(key, known: dict, other: dict, config_class: str) -> str:
    if not isinstance(key, str):
        return "keys are text"
    guess = closest(key, known)
    if guess:
        return f"did you mean `{guess}`?"
    for name in schema.SECTIONS:
        if name in known and (key in schema.section_options(name) or schema.launch_name(name, key)
                              in schema.section_options(name)):
            return f"`{key}` belongs under `{name}`"
    if key in other:
        where = "SageMaker" if config_class == schema.CLUSTER else "local-machine (compute_environment: LOCAL_MACHINE)"
        return f"`{key}` is a {where} setting"
    if key in _deepspeed_json_keys():
        return "this is a ds_config.json key; put it in the JSON file"
    return ""


def compute_environment_findings(config: dict) -> list[Finding]:
    """ACC005: anything but LOCAL_MACHINE makes the loader read the file as a SageMaker config."""
    if "compute_environment" not in config or config["compute_environment"] == "LOCAL_MACHINE":
        return []
    value = config["compute_environment"]
    choices = ["LOCAL_MACHINE", "AMAZON_SAGEMAKER"]
    guess = closest(py_str(value).upper(), choices, cutoff=0.6)
    hint = f"; did you mean {guess}?" if guess else f"; use one of {', '.join(choices)}"
    if isinstance(value, str) or not _loads_as_sagemaker(config):
        return [Finding(DISTRIBUTED_TYPE, f"compute_environment {brief(value)} is not a ComputeEnvironment: "
                                          "Accelerate then loads the file as a SageMaker config and fails" + hint,
                        "/compute_environment", fails_in=LOAD)]
    return [Finding(DISTRIBUTED_TYPE, f"compute_environment {brief(value)} is not a ComputeEnvironment: the file "
                                      "loads as a SageMaker config and `accelerate launch` fails with "
                                      "AttributeError" + hint,
                    "/compute_environment", fails_in=LAUNCH)]


def _loads_as_sagemaker(config: dict) -> bool:
    fields = schema.fields(schema.SAGEMAKER)
    kind = config.get("distributed_type")
    return (all(key in fields for key in config)
            and all(name in config for name in schema.required(schema.SAGEMAKER))
            and (not isinstance(kind, str) or kind in schema.enum(schema.CLUSTER, "distributed_type")))


def distributed_type_findings(config: dict, booleans: dict, config_class: str) -> list[Finding]:
    """ACC005 (and ACC016 for an unquoted NO): the loader requires the key and checks text values."""
    pointer = "/distributed_type"
    choices = schema.enum(config_class, "distributed_type")
    if "distributed_type" not in config:
        return [Finding(DISTRIBUTED_TYPE, "distributed_type is missing: Accelerate fails with \"A `distributed_type` "
                                          f"must be specified in the config file.\"; use one of {', '.join(choices)}",
                        pointer,
                        fails_in=LOAD)]
    value = config["distributed_type"]
    if isinstance(value, str):
        if value in choices:
            return []
        enum_name = "SageMakerDistributedType" if config_class == schema.SAGEMAKER else "DistributedType"
        guess = next((c for c in choices if c == value.upper()), None) or closest(value.upper(), choices)
        hint = f"; did you mean {guess}?" if guess else f"; use one of {', '.join(choices)}"
        return [Finding(DISTRIBUTED_TYPE, f"Accelerate fails with \"'{value}' is not a valid {enum_name}\"" + hint,
                        pointer, fails_in=LOAD, fix=to_json(guess) if guess else None)]
    outcome = ("a single process is launched" if config_class == schema.CLUSTER
               else "the SageMaker launcher gets no distributed mode")
    if pointer in booleans:
        if config_class == schema.CLUSTER and value is False and "num_processes" in config:
            # `accelerate launch` runs exactly what 'NO' runs (one process; ACC011 says when more were asked for):
            # only the default of num_processes is lost, and it is written here
            return []
        extra = "" if config_class == schema.SAGEMAKER or "num_processes" in config else \
            ", and num_processes is no longer defaulted to 1"
        return [Finding(YAML_BOOLEAN, f"YAML 1.1 reads the unquoted `{booleans[pointer]}` as {value}: Accelerate skips "
                                      f"the distributed_type check, {outcome}{extra}; write \"NO\" in quotes", pointer,
                        fix='"NO"')]
    return [Finding(DISTRIBUTED_TYPE, f"distributed_type is {describe(value)}, not one of {', '.join(choices)}: "
                                      f"Accelerate does not check it and {outcome}", pointer)]


def tpu_precision(replay: Replay) -> list[Finding]:
    """ACC006: the TPU launcher never checks mixed_precision; anything but bf16 means full precision."""
    value = replay.args["mixed_precision"]
    if isinstance(value, str) and value.lower() in schema.enum(schema.CLUSTER, "mixed_precision"):
        return []
    return [Finding(MIXED_PRECISION, f"mixed_precision {brief(value)} is not one of no, fp16, bf16, fp8: the TPU "
                                     "launcher does not check it and trains in full precision",
                    replay.where("mixed_precision"))]


def yaml11_text(config: dict, booleans: dict, config_class: str, reported: set) -> list[Finding]:
    """ACC016 for unquoted yes/no/on/off where Accelerate expects text and nothing else reported the value."""
    findings = []
    for pointer, word in sorted(booleans.items()):
        if pointer in reported or pointer == "/distributed_type":
            continue
        prop = _property_at(pointer, config_class)
        if prop is None or "boolean" in _types(prop):
            continue
        findings.append(Finding(YAML_BOOLEAN, f"YAML 1.1 reads the unquoted `{word}` as a boolean, but Accelerate "
                                              "expects text here; quote it", pointer, fix=to_json(word)))
    return findings


def _property_at(pointer: str, config_class: str) -> dict | None:
    parts = pointer.split("/")[1:]
    fields = schema.fields(config_class)
    if len(parts) == 1:
        return fields.get(parts[0])
    if len(parts) == 2 and parts[0] in schema.SECTIONS:
        return schema.section_options(parts[0]).get(schema.launch_name(parts[0], parts[1]))
    return None


def _types(prop: dict) -> list[str]:
    kind = prop.get("type", [])
    return [kind] if isinstance(kind, str) else list(kind)


# -- processes and machines -----------------------------------------------------------------


def _count(value) -> int | None:
    """An integer setting as a count; None for anything else, and for an integer too long for str() (YAML reads
    `0x` and thousands of hex digits as one): `accelerate launch` fails on it, which the replay reports, and no
    message or world size can hold it."""
    if not isinstance(value, int) or isinstance(value, bool):
        return None
    return value if printable(value) else None


def launched_world_size(replay: Replay) -> int | None:
    """The world size `accelerate launch` starts: (num_processes // num_machines) × num_machines."""
    processes, machines = _count(replay.args["num_processes"]), _count(replay.args["num_machines"])
    if replay.launcher == "simple":
        return processes if replay.args["mpirun_hostfile"] is not None else 1
    if processes is None or machines is None or processes < 1:
        return None
    return (processes // machines) * machines if machines > 1 else processes


def topology(replay: Replay, options) -> list[Finding]:
    """ACC008-ACC013: what nothing checks about processes, machines, GPUs and the rendezvous."""
    args, findings = replay.args, []
    processes, machines = _count(args["num_processes"]), _count(args["num_machines"])
    torch_like = replay.launcher in ("deepspeed", "torchrun")
    if replay.launcher == "simple" and replay.fields.get("distributed_type") in ("NO", False) \
            and processes is not None and processes > 1 and args["mpirun_hostfile"] is None:
        # with a config file, accelerate launch runs the simple launcher (one process) however many GPUs are
        # visible (tests/accelerate/test_accelerate_rules.py replays it with 1 and with 4)
        findings.append(Finding(SINGLE_PROCESS_TYPE, f"distributed_type NO runs one process: num_processes {processes} "
                                                     f"is ignored. If {processes} processes were meant, write MULTI_GPU "
                                                     "(or DEEPSPEED / FSDP); if one, write num_processes: 1 so the file "
                                                     "says what runs",
                                replay.where("num_processes")))
    if torch_like and processes is not None and machines is not None and machines > 1:
        per_machine = processes // machines
        if processes % machines:
            findings.append(Finding(NUM_PROCESSES_INDIVISIBLE, f"num_processes {processes} is not a multiple of "
                                                               f"num_machines {machines}: Accelerate starts "
                                                               f"{processes} // {machines} = {per_machine} per "
                                                               f"machine, a world size of {per_machine * machines}, "
                                                               "without a warning",
                                    replay.where("num_processes"), world_size=per_machine * machines))
        if processes < machines:
            findings.append(Finding(NUM_PROCESSES_PER_NODE, f"num_processes {processes} is smaller than num_machines "
                                                            f"{machines}: num_processes is the TOTAL over all machines "
                                                            f"(here 0 per machine); for {processes} GPU(s) per machine "
                                                            f"write {processes * machines}",
                                    replay.where("num_processes"), fix=str(processes * machines)))
    findings.extend(_against_requested_size(replay, options))
    findings.extend(_gpu_ids_cover(replay))
    if replay.launcher == "deepspeed" and machines is not None and machines > 1:
        findings.extend(_deepspeed_multinode(replay))
    elif replay.launcher == "torchrun" and machines is not None and machines > 1:
        findings.extend(_rendezvous(replay, "torchrun"))
    return findings


def _against_requested_size(replay: Replay, options) -> list[Finding]:
    """ACC009/ACC010 against --gpus/--nodes or a single --world-size: num_processes is the total."""
    gpus, nodes = getattr(options, "gpus", None), getattr(options, "nodes", None)
    sizes = options.world_sizes or ()
    wanted = gpus * (nodes or 1) if gpus else (sizes[0] if len(sizes) == 1 else None)
    launched = launched_world_size(replay)
    if wanted is None or launched is None or launched == wanted:
        return []
    processes, machines = _count(replay.args["num_processes"]), _count(replay.args["num_machines"]) or 1
    asked = f"--gpus {gpus} --nodes {nodes or 1}" if gpus else f"--world-size {wanted}"
    pointer = replay.where("num_processes")
    if gpus and processes is not None and machines and processes // machines > gpus:
        return [Finding(GPU_IDS, f"each machine starts {processes // machines} processes but has {gpus} GPUs "
                                 f"({asked}): local ranks {gpus} and above find no device (torch.cuda.set_device "
                                 "fails with \"invalid device ordinal\")", pointer, fails_in=INITIALIZE,
                        world_size=launched)]
    if gpus and nodes and nodes > 1 and processes == gpus:
        return [Finding(NUM_PROCESSES_PER_NODE, f"num_processes {processes} looks like a per-machine count: it is the "
                                                f"TOTAL over all machines, so {asked} needs num_processes {wanted} "
                                                f"(now {launched} processes run)",
                        pointer, fix=str(wanted), world_size=launched)]
    # Any other difference is the file's own launch (a single-GPU debugging YAML, a 2 × 8 two-node one): the YAML
    # states its world size, and --world-size is for the files that do not
    return []


def _gpu_ids_cover(replay: Replay) -> list[Finding]:
    """ACC010: gpu_ids is CUDA_VISIBLE_DEVICES; processes beyond the visible GPUs find no device."""
    gpu_ids = replay.args["gpu_ids"]
    processes, machines = _count(replay.args["num_processes"]), _count(replay.args["num_machines"])
    if not isinstance(gpu_ids, str) or gpu_ids == "all" or replay.launcher not in ("deepspeed", "torchrun") \
            or processes is None or machines is None or machines < 1:
        return []
    if any(f.rule is GPU_IDS and f.pointer == "/gpu_ids" for f in replay.findings):
        return []
    visible = [part for part in gpu_ids.split(",") if part.strip()]
    per_machine = processes // machines if machines > 1 else processes
    if len(visible) >= per_machine:
        return []
    return [Finding(GPU_IDS, f"gpu_ids {gpu_ids!r} makes {len(visible)} GPU(s) visible but each machine starts "
                             f"{per_machine} processes: local ranks {len(visible)} and above find no device "
                             "(torch.cuda.set_device fails with \"invalid device ordinal\")", "/gpu_ids",
                    fails_in=INITIALIZE)]


def _deepspeed_multinode(replay: Replay) -> list[Finding]:
    """ACC012: every DeepSpeed launcher but `standard` needs deepspeed_hostfile."""
    args = replay.args
    launcher = args["deepspeed_multinode_launcher"] or "pdsh"
    findings = []
    if launcher == "standard":
        return _rendezvous(replay, "torchrun (deepspeed_multinode_launcher: standard)")
    if args["deepspeed_hostfile"] is None and launcher in _HOSTFILE_LAUNCHERS:
        per_machine = _count(args["num_processes"]) // args["num_machines"] if _count(args["num_processes"]) \
            else None
        size = f": a world size of {per_machine} instead of {per_machine * args['num_machines']}" if per_machine \
            else ""
        findings.append(Finding(
            HOSTFILE_MISSING,
            f"{args['num_machines']} machines with the `{launcher}` launcher but no deepspeed_hostfile: Accelerate "
            "runs `deepspeed --hostfile None`, DeepSpeed logs \"Unable to find hostfile, will proceed with training "
            f"with local resources only.\" and trains on this machine alone{size}. Set deepspeed_hostfile, or "
            "deepspeed_multinode_launcher: standard",
            replay.where("deepspeed_multinode_launcher") if "deepspeed_multinode_launcher" in replay.source
            else "/num_machines"))
    if launcher == "nossh":
        findings.extend(_rendezvous(replay, "deepspeed --no_ssh", ip_only=True))
    return findings


def _rendezvous(replay: Replay, who: str, ip_only: bool = False) -> list[Finding]:
    """ACC013: the machines meet at main_process_ip; machine_rank must name one of them."""
    args, findings = replay.args, []
    if args["main_process_ip"] is None:
        findings.append(Finding(MAIN_PROCESS_IP, f"{args['num_machines']} machines but no main_process_ip: {who} gets "
                                                 "the address `None` and the machines never meet; set main_process_ip "
                                                 "to the rank-0 machine's address", replay.where("main_process_ip")))
    rank = _count(args["machine_rank"])
    if not ip_only and rank is not None and not 0 <= rank < args["num_machines"]:
        findings.append(Finding(MAIN_PROCESS_IP, f"machine_rank {rank} is outside 0..{args['num_machines'] - 1}: {who} "
                                                 "waits for machines that never join", replay.where("machine_rank")))
    return findings


# -- sub-dicts ------------------------------------------------------------------------------


def section_keys(config: dict, replay: Replay) -> list[Finding]:
    """ACC002 / ACC003: keys `accelerate launch` copies onto its namespace but nothing reads."""
    findings = []
    all_options = schema.launch_defaults()
    for name in schema.SECTIONS:
        value = config.get(name)
        if not isinstance(value, dict):
            if value is not None and not (name == "deepspeed_config" and replay.launcher == "deepspeed"):
                findings.append(Finding(INVALID_SETTING, f"{name} is {describe(value)}, not a mapping: Accelerate "
                                                         "ignores it",
                                        pointer_join("", name)))
            continue
        options = schema.section_options(name)
        for key in value:
            if not isinstance(key, str):
                continue  # the launch replay reports it
            option = schema.launch_name(name, key)
            if option in options:
                continue
            findings.append(_unknown_section_key(name, key, option, options, all_options))
        findings.extend(_section_unused(name, value, replay))
    return findings


def _unknown_section_key(section: str, key: str, option: str, options: dict, all_options: dict) -> Finding:
    pointer = pointer_join(pointer_join("", section), key)
    rule = IGNORED_DEEPSPEED_KEY if section == "deepspeed_config" else IGNORED_SECTION_KEY
    message = f"`{key}` is not an `accelerate launch` option of {section}: Accelerate silently ignores it"
    spelled = [k for k in schema.section(section)["properties"]]
    guess = closest(key, spelled)
    json_place = _deepspeed_json_keys().get(key) if section == "deepspeed_config" else None
    if json_place:
        message += (f". `{key}` is a ds_config.json key ({json_place}); put it in the JSON file "
                    "(deepspeed_config_file)")
        if guess:
            message += f", or did you mean `{guess}`?"
    elif guess:
        message += f"; did you mean `{guess}`?"
    elif option in all_options and option not in options:
        message += f" (it does overwrite the `--{option}` launch option)"
    return Finding(rule, message, pointer, on_key=True)


def _section_unused(name: str, value: dict, replay: Replay) -> list[Finding]:
    """ACC003: a whole sub-dict the chosen launcher never passes on."""
    if not value:
        return []
    kind = replay.fields.get("distributed_type")
    unused = {
        "deepspeed_config": kind != "DEEPSPEED",
        "fsdp_config": kind != "FSDP",
        "megatron_lm_config": kind != "MEGATRON_LM",
        # prepare_deepspeed_cmd_env exports no ACCELERATE_DYNAMO_* variable.
        "dynamo_config": replay.launcher == "deepspeed" and py_str(value.get("dynamo_backend", "no")).lower() != "no",
    }.get(name, False)
    if not unused:
        return []
    why = ("the DeepSpeed launcher does not pass dynamo settings to the processes" if name == "dynamo_config"
           else f"distributed_type is {brief(kind)}")
    return [Finding(IGNORED_SECTION_KEY, f"{name} is ignored: {why}", pointer_join("", name), on_key=True)]


@lru_cache(maxsize=1)
def _deepspeed_json_keys() -> dict[str, str]:
    """ds_config.json key -> where it goes (top level or zero_optimization)."""
    root = ds_schema.root()
    places = {key: "top level" for key in (ds_schema.object_branch(root) or {}).get("properties", {})}
    zero = ds_schema.object_branch(ds_schema.property_of(root, "zero_optimization") or {}) or {}
    for key in zero.get("properties", {}):
        places.setdefault(key, "under zero_optimization")
    return places


# -- DeepSpeed ------------------------------------------------------------------------------


def config_file(config: dict):
    """deepspeed_config.deepspeed_config_file as DeepSpeedPlugin sees it (str(value); "none" means none)."""
    section = config.get("deepspeed_config")
    if not isinstance(section, dict) or section.get("deepspeed_config_file") is None:
        return None
    path = py_str(section["deepspeed_config_file"])
    return None if path == "none" else path


def deepspeed_settings(config: dict, replay: Replay, options) -> list[Finding]:
    section = config.get("deepspeed_config")
    section = section if isinstance(section, dict) else {}
    if config_file(config) is not None:
        return _refused_with_file(config, section, replay)
    findings = _inline_values(section)
    stage = _stage(section)
    findings.extend(_nvme(section))
    if stage is not None:
        findings.extend(_stage_ignored(section, stage))
    if options.target is HF_TRAINER and "gradient_accumulation_steps" in section:
        findings.append(Finding(
            INLINE_GRADIENT_ACCUMULATION,
            f"gradient_accumulation_steps {brief(section['gradient_accumulation_steps'])} replaces the \"auto\" the "
            "HF Trainer fills: unless it equals TrainingArguments.gradient_accumulation_steps the Trainer raises "
            "\"Please correct the following DeepSpeed config values that mismatch TrainingArguments values: - ds "
            "gradient_accumulation_steps=... vs hf gradient_accumulation_steps=...\"; remove the key and pass "
            "--gradient_accumulation_steps to the script",
            "/deepspeed_config/gradient_accumulation_steps", fails_in=INITIALIZE,
            on_key=True))
    return findings


def _refused_with_file(config: dict, section: dict, replay: Replay) -> list[Finding]:
    """ACC004: DeepSpeedPlugin._deepspeed_config_checks, on ACCELERATE_CONFIG_DS_FIELDS (lower-cased)."""
    names = schema.section("deepspeed_config")["x-accelerate-refused-with-config-file"]
    refused = [name for name in names if name != "mixed_precision"]  # the top-level key counts too
    quoted = _REFUSED_MESSAGE.format(names=names)
    findings = []
    for key in section:
        if isinstance(key, str) and key.lower() in refused:
            findings.append(Finding(CONFIG_FILE_CONFLICT, f"`{key}` next to deepspeed_config_file: DeepSpeedPlugin "
                                                          f"raises \"{quoted}\"; set it in the JSON file instead and "
                                                          "remove it here",
                                    pointer_join("/deepspeed_config", key), fails_in=INITIALIZE, on_key=True))
    if replay.fields.get("mixed_precision") is not None:
        pointer = replay.where("mixed_precision")
        findings.append(Finding(CONFIG_FILE_CONFLICT, "mixed_precision next to deepspeed_config_file (even 'no'): "
                                                      f"DeepSpeedPlugin raises \"{quoted}\"; enable fp16/bf16 in the "
                                                      "JSON file (or pass --mixed_precision on the command line) and "
                                                      "remove it here",
                                pointer, fails_in=INITIALIZE, on_key=True))
    return findings


def _stage(section: dict) -> int | None:
    """The ZeRO stage DeepSpeedPlugin uses: int(str(value)), 2 when absent; None when that fails."""
    if section.get("zero_stage") is None:
        return 2
    try:
        return int(py_str(section["zero_stage"]))
    except ValueError:
        return None


def _inline_values(section: dict) -> list[Finding]:
    """ACC019: values DeepSpeedPlugin (or DeepSpeed) rejects in every process, or silently misreads."""
    findings, base = [], "/deepspeed_config"
    stage = section.get("zero_stage")
    if stage is not None and _stage(section) not in (0, 1, 2, 3):
        findings.append(Finding(INVALID_SETTING, f"zero_stage {brief(stage)}: DeepSpeedPlugin reads "
                                                 f"int(\"{py_str(stage, 120)}\") and DeepSpeed accepts 0, 1, 2 or 3; the "
                                                 "processes fail when they build the plugin", f"{base}/zero_stage", fails_in=INITIALIZE))
    for key in ("offload_optimizer_device", "offload_param_device"):
        value = section.get(key)
        if value is not None and py_str(value).lower() not in _OFFLOAD_DEVICES:
            findings.append(Finding(INVALID_SETTING, f"{key} {brief(value)}: DeepSpeed accepts none, cpu or nvme and "
                                                     "fails while parsing its config",
                                    f"{base}/{key}", fails_in=INITIALIZE))
    steps = section.get("gradient_accumulation_steps")
    if steps is not None and py_str(steps) != "auto" and (not py_str(steps).isdigit() or int(py_str(steps)) < 1):
        findings.append(Finding(INVALID_SETTING, f"gradient_accumulation_steps {brief(steps)}: DeepSpeedPlugin keeps "
                                                 "anything but digits as text and DeepSpeed fails on it; write a "
                                                 "positive integer or remove the key",
                                f"{base}/gradient_accumulation_steps",
                                fails_in=INITIALIZE))
    clipping = section.get("gradient_clipping")
    if clipping is not None and py_str(clipping).lower() != "auto":
        try:
            float(py_str(clipping).lower())
        except ValueError:
            findings.append(Finding(INVALID_SETTING, f"gradient_clipping {brief(clipping)}: DeepSpeedPlugin fails "
                                                     "with \"ValueError: could not convert string to float: "
                                                     f"'{py_str(clipping, 120).lower()}'\"", f"{base}/gradient_clipping",
                                    fails_in=INITIALIZE))
    findings.extend(_flag_values(section))
    launcher = section.get("deepspeed_multinode_launcher")
    if launcher is not None and launcher not in schema.section_options("deepspeed_config")[
            "deepspeed_multinode_launcher"]["enum"]:
        findings.append(Finding(INVALID_SETTING, f"deepspeed_multinode_launcher {brief(launcher)} is not one of "
                                                 f"{', '.join(_launchers())}: on a multi-machine run the DeepSpeed "
                                                 "runner fails with \"Unknown launcher\" (one machine: unused)",
                                f"{base}/deepspeed_multinode_launcher", fix=_fix(closest(py_str(launcher),
                                                                                         _launchers()))))
    return findings


def _flag_values(section: dict) -> list[Finding]:
    findings, base = [], "/deepspeed_config"
    init = section.get("zero3_init_flag")
    if init is not None and py_str(init).lower() not in TRUE_WORDS + FALSE_WORDS:
        findings.append(Finding(INVALID_SETTING, f"zero3_init_flag {brief(init)}: DeepSpeedPlugin fails with "
                                                 f"\"ValueError: invalid truth value {py_str(init, 120).lower()}\"",
                                f"{base}/zero3_init_flag",
                                fails_in=INITIALIZE, fix="true"))
    save = section.get("zero3_save_16bit_model")
    if save is not None and py_str(save).lower() != "true" and py_str(save).lower() not in FALSE_WORDS:
        findings.append(Finding(INVALID_SETTING, f"zero3_save_16bit_model {brief(save)}: DeepSpeedPlugin turns it on "
                                                 "only for 'true'; this value silently means false",
                                f"{base}/zero3_save_16bit_model",
                                fix="true"))
    return findings


def _launchers() -> list[str]:
    return schema.section_options("deepspeed_config")["deepspeed_multinode_launcher"]["enum"]


def _fix(value) -> str | None:
    return to_json(value) if value is not None else None


def _nvme(section: dict) -> list[Finding]:
    """ACC014: the launcher has the nvme_path options but never exports them (accelerate 1.15)."""
    findings, base = [], "/deepspeed_config"
    for what in ("optimizer", "param"):
        device, path = f"offload_{what}_device", f"offload_{what}_nvme_path"
        if py_str(section.get(device)).lower() == "nvme":
            findings.append(Finding(NVME_IN_YAML, f"{device}: nvme in the Accelerate YAML: `accelerate launch` never "
                                                  f"exports {path}, so DeepSpeed gets nvme_path \"none\" (a folder "
                                                  "named `none` in the working directory). Configure NVMe offload in "
                                                  "a ds_config.json (zero_optimization.offload_" + what + ".nvme_path) "
                                                  "and point deepspeed_config_file at it", f"{base}/{device}"))
        elif section.get(path) is not None:
            findings.append(Finding(NVME_IN_YAML, f"{path} is never exported by `accelerate launch`: the value is "
                                                  "lost. Set nvme_path in a ds_config.json instead", f"{base}/{path}",
                                    on_key=True))
    return findings


def _stage_ignored(section: dict, stage: int) -> list[Finding]:
    """ACC015: settings this ZeRO stage ignores."""
    findings, base = [], "/deepspeed_config"
    stage_note = " (the default)" if section.get("zero_stage") is None else ""
    if stage < 3 and py_str(section.get("offload_param_device", "none")).lower() not in ("none", "nvme"):
        findings.append(Finding(STAGE_IGNORED, f"offload_param_device only works at ZeRO stage 3; at stage {stage}"
                                               f"{stage_note} DeepSpeed ignores it and the parameters stay on the GPU",
                                f"{base}/offload_param_device"))
    if stage == 0 and py_str(section.get("offload_optimizer_device", "none")).lower() not in ("none", "nvme"):
        findings.append(Finding(STAGE_IGNORED, "offload_optimizer_device needs ZeRO stage 1-3; at stage 0 there is no "
                                               "ZeRO optimizer to offload", f"{base}/offload_optimizer_device"))
    if stage < 3 and py_str(section.get("zero3_save_16bit_model")).lower() == "true":
        findings.append(Finding(STAGE_IGNORED, f"zero3_save_16bit_model only applies at ZeRO stage 3 (stage {stage}): "
                                               "it is ignored", f"{base}/zero3_save_16bit_model"))
    if stage != 3 and py_str(section.get("zero3_init_flag")).lower() in TRUE_WORDS:
        findings.append(Finding(STAGE_IGNORED, f"zero3_init_flag at ZeRO stage {stage}: Accelerate warns \"DeepSpeed "
                                               "Zero3 Init flag is only applicable for ZeRO Stage 3. Setting it to "
                                               "False.\"",
                                f"{base}/zero3_init_flag", fix="false"))
    return findings
