"""An Accelerate YAML and the ds_config.json it names are one launch: which files pair, and what they disagree on.

`deepspeed_config.deepspeed_config_file` hands a JSON file to DeepSpeedPlugin in every
training process, so the engine lints that JSON as Accelerate will use it: target `accelerate`
(json.load, Accelerate's "auto" fills; `hf-trainer` when the file holds an "auto" only the
Trainer fills) at the world size the YAML launches, unless the user asked for a target or world
size. Each JSON is linted once, with the world sizes of every YAML that names it, and never a
second time standalone. What the two files disagree on is reported in both, each message naming
the other file's position. This module only answers questions; dsconfig.engine does the linting.
"""

from __future__ import annotations

import os
from typing import NamedTuple

from . import targets
from .findings import Finding
from .phases import INITIALIZE
from .rules.accelerate_keys import CONFIG_FILE_MISSING
from .rules.accelerate_launch import PAIR_MISMATCH, STAGE_IGNORED
from .values import py_str


class Side(NamedTuple):
    """A YAML that names a ds_config.json, and what `accelerate launch` makes of it."""
    doc: object
    config: dict
    replay: object  # accelerate.launch.Replay
    written: str  # deepspeed_config_file as written
    json_path: str | None  # resolved, or None when missing
    how: str  # "relative to the working directory" / "relative to the YAML's folder" / "absolute"


def find_sides(docs) -> list[Side]:
    """Every Accelerate YAML among `docs` that launches DeepSpeed with a deepspeed_config_file."""
    return [side for doc in docs if (side := _yaml_side(doc)) is not None]


def _yaml_side(doc) -> Side | None:
    if doc.kind != "accelerate" or doc.format != "yaml" or not doc.loaded:
        return None
    from .accelerate.check import config_file
    from .accelerate.launch import Replay
    config = doc.value
    if not isinstance(config, dict) or config.get("compute_environment", "LOCAL_MACHINE") != "LOCAL_MACHINE":
        return None
    written = config_file(config)
    if written is None:
        return None
    replay = Replay(config, doc.yaml11_booleans)
    if replay.launcher != "deepspeed":
        return None  # the file is never used (ACC003 says the section is ignored)
    json_path, how = resolve(doc.path, written)
    return Side(doc, config, replay, written, json_path, how)


def resolve(yaml_path: str, written: str) -> tuple[str | None, str]:
    """Where the training processes will find the file: relative to the launch directory (assumed to
    be the current one), else relative to the YAML's folder, where such files usually sit."""
    if os.path.isabs(written):
        return (written if _exists(written) else None), "absolute"
    candidates = [(written, "relative to the working directory"),
                  (os.path.join(os.path.dirname(yaml_path), written), "relative to the YAML's folder")]
    # `accelerate launch` may run in any folder above the YAML (trlx's examples/summarize_rlhf runs with
    # configs/default_accelerate_config.yaml naming configs/ds_config.json): up to the repository's root
    from .boundary import repository_root
    folder = os.path.dirname(os.path.abspath(yaml_path))
    top = repository_root(folder)
    while top is not None and folder != top and os.path.dirname(folder) != folder:
        folder = os.path.dirname(folder)
        candidates.append((os.path.relpath(os.path.join(folder, written)), "relative to a folder above the YAML"))
    for candidate, how in candidates:
        if _exists(candidate):
            return candidate, how
    return None, "relative to the working directory or the YAML's folder"


def refusal(side: Side, boundary, docs: dict) -> Finding | None:
    """Why the file the YAML names is not linted with it, or None: a special file or one outside what
    dsconfig may open (ACC020, DS009: never opened), a file that is not JSON (ACC020), or JSON that is no
    DeepSpeed config (DS009: read, never quoted). `docs`: the documents already read, by real path."""
    from . import detect
    from .boundary import inside, special
    from .rules.files import REFERENCE_NOT_FOLLOWED

    pointer = "/deepspeed_config/deepspeed_config_file"
    written = _shown(side.written)
    why = special(side.json_path)
    if why is not None:  # a FIFO blocks json.load for ever, /proc/self/environ is no JSON: a broken launch
        return Finding(CONFIG_FILE_MISSING, f"deepspeed_config_file `{written}` is {why}, not a JSON file: every "
                                            "process fails in DeepSpeedPlugin (dsconfig never opens such a file)",
                       pointer, fails_in=INITIALIZE)
    real = os.path.realpath(side.json_path)
    folder = os.path.realpath(os.path.dirname(os.path.abspath(side.doc.path)))
    if not (boundary.admits(real) or inside(real, folder)):
        return Finding(REFERENCE_NOT_FOLLOWED,
                       f"deepspeed_config_file `{written}` is {real}, outside the paths given to dsconfig lint and "
                       "this YAML's folder: not opened, so the pair is not checked (lint a folder holding both, or "
                       f"--allow-read {os.path.dirname(real)})", pointer)
    if real == os.path.realpath(side.doc.path):
        return Finding(CONFIG_FILE_MISSING, "deepspeed_config_file names this YAML itself: every process fails in "
                                            "DeepSpeedPlugin, whose json.load raises \"JSONDecodeError: Expecting "
                                            "value: line 1 column 1 (char 0)\"", pointer, fails_in=INITIALIZE)
    if side.json_path.endswith(".json") and detect.named_like_deepspeed(side.json_path):
        return None  # a config by its name: linted, its syntax errors shown where they are
    # Any other file is linted only if it reads as a DeepSpeed config; its text is never quoted otherwise.
    loaded, value = _json_reading(real, docs, beside=folder)
    if not loaded and value is not None:
        return Finding(CONFIG_FILE_MISSING, f"deepspeed_config_file `{written}` is not JSON: every process fails "
                                            f"in DeepSpeedPlugin, whose json.load raises \"{value}\"", pointer,
                       fails_in=INITIALIZE)
    if loaded and detect.classify(side.json_path, value, is_yaml=False) != "deepspeed":
        return Finding(REFERENCE_NOT_FOLLOWED,
                       f"deepspeed_config_file `{written}` holds no DeepSpeed setting: not linted, so the pair is not "
                       "checked (dsconfig quotes no file that is not a config)", pointer)
    return None


def _json_reading(real: str, docs: dict, beside: str) -> tuple[bool, object]:
    """(True, value) when json.load reads the file; (False, "JSONDecodeError: ...") when it fails;
    (False, None) when the file cannot be read (linting the pair says why)."""
    import json

    from . import files
    doc = docs.get(real)
    if doc is not None:
        text = doc.text
    else:
        try:
            text = files.read_bytes(real, beside=beside).decode("utf-8")
        except (files.FileError, UnicodeDecodeError):
            return False, None
    try:
        return True, json.loads(text)
    except json.JSONDecodeError as error:
        return False, f"JSONDecodeError: {error}"
    except (ValueError, RecursionError):
        return False, None


def _shown(written: str) -> str:
    return written if len(written) <= 200 else written[:200] + "..."


def _exists(path: str) -> bool:
    """A file or anything else that is not a folder (a FIFO or device is then refused, not "missing")."""
    from .boundary import observe
    observe(path)  # the file a YAML names appearing or leaving changes what a rerun pairs
    try:
        return os.path.exists(path) and not os.path.isdir(path)
    except (OSError, ValueError):  # a name too long, a NUL byte
        return False


def missing_file(side: Side) -> Finding:
    """ACC020 in the YAML, for a deepspeed_config_file that is not there (not yet placed)."""
    folder = os.path.dirname(os.path.abspath(side.doc.path))
    written = _shown(side.written)
    looked = "" if side.how == "absolute" else f" (looked {side.how}: {os.getcwd()} and {folder})"
    return Finding(
        CONFIG_FILE_MISSING,
        f"deepspeed_config_file `{written}` does not exist{looked}: every process fails in DeepSpeedPlugin with "
        "\"ValueError: Expected a string path to an existing deepspeed config, or a dictionary, or a base64 encoded "
        f"string. Received: {written}\". The path is opened relative to the directory `accelerate launch` runs in",
        "/deepspeed_config/deepspeed_config_file", fails_in=INITIALIZE)


def launched_world_sizes(sides: list[Side]) -> tuple[int, ...]:
    """The world sizes the YAMLs naming one JSON launch, ascending."""
    from .accelerate.check import launched_world_size
    return tuple(sorted({size for side in sides if (size := launched_world_size(side.replay))}))


def launches(docs) -> list[tuple[str, int]]:
    """(path, world size) for every Accelerate YAML among `docs` that says how many processes it launches."""
    found = []
    for doc in docs:
        if doc.kind != "accelerate" or doc.format != "yaml" or not doc.loaded or not isinstance(doc.value, dict):
            continue
        from .accelerate.check import launched_world_size  # only when there is an Accelerate YAML
        from .accelerate.launch import Replay
        size = launched_world_size(Replay(doc.value, doc.yaml11_booleans))
        if size:
            found.append((doc.path, size))
    return found


def launched_target(doc) -> targets.Target:
    """Who reads the JSON under `accelerate launch`: the HF Trainer when the file leaves an "auto"
    that only the Trainer fills (optimizer betas/eps, ...), else the script's own prepare()."""
    from .deepspeed.schema import fill_targets
    from .deepspeed.target import auto_pointers
    loaded, value = doc.reading("json")
    if loaded and any(fill_targets(p) == {targets.HF_TRAINER.name} for p in auto_pointers(value)):
        return targets.HF_TRAINER
    return targets.ACCELERATE


# -- what the two files must agree on --------------------------------------------------------


class Disagreement(NamedTuple):
    rule: object  # dsconfig.rules.Rule
    yaml_pointer: str
    yaml_text: str  # what the YAML says, e.g. "mixed_precision bf16"
    json_pointer: str
    json_text: str
    consequence: str
    fails_in: str | None


def disagreements(side: Side, json_doc, ds_config: dict) -> list[tuple[object, Finding]]:
    """(document, finding) twice per disagreement, once in each file, each naming the other file's
    path:line:col. The findings are not placed yet."""
    findings = []
    for issue in _disagreements(side, ds_config):
        yaml_at = _where(side.doc, issue.yaml_pointer)
        json_at = _where(json_doc, issue.json_pointer)
        how = "" if side.how == "relative to the working directory" else f", found {side.how}"
        yaml_finding = Finding(issue.rule, f"{issue.yaml_text} disagrees with {json_at} ({issue.json_text}{how}): "
                                           f"{issue.consequence}", issue.yaml_pointer, fails_in=issue.fails_in)
        json_finding = Finding(issue.rule, f"{issue.json_text} disagrees with {yaml_at} ({issue.yaml_text}): "
                                           f"{issue.consequence}", issue.json_pointer, fails_in=issue.fails_in)
        findings += [(side.doc, yaml_finding), (json_doc, json_finding)]
    return findings


def _where(doc, pointer: str) -> str:
    line, column = doc.locate(pointer, False)
    return f"{doc.path}:{line}:{column}"


def _disagreements(side: Side, ds_config: dict) -> list[Disagreement]:
    from .accelerate.launch import TRUE_WORDS
    issues = []
    section = side.config.get("deepspeed_config") or {}
    replay = side.replay
    precision = replay.fields.get("mixed_precision")
    if isinstance(precision, str) and precision.lower() in ("fp16", "bf16", "fp8"):
        mode = precision.lower()
        other = "bf16" if mode == "fp16" else "fp16"  # DeepSpeedPlugin.set_mixed_precision
        block = ds_config.get(other)
        if isinstance(block, dict) and str(block.get("enabled", "False")).lower() == "true":
            issues.append(Disagreement(
                PAIR_MISMATCH, replay.where("mixed_precision"), f"mixed_precision {mode}", f"/{other}/enabled",
                f"{other}.enabled true", f"DeepSpeedPlugin raises \"`--mixed_precision` arg cannot be set to `{mode}` "
                f"when `{other}` is set in the DeepSpeed config file.\"; choose the precision in the JSON only",
                INITIALIZE))
    zero = ds_config.get("zero_optimization") if isinstance(ds_config.get("zero_optimization"), dict) else {}
    compared = [
        ("gradient_accumulation_steps", ds_config, "gradient_accumulation_steps", "/gradient_accumulation_steps"),
        ("zero_stage", zero, "stage", "/zero_optimization/stage"),
        ("offload_optimizer_device", _child(zero, "offload_optimizer"), "device",
         "/zero_optimization/offload_optimizer/device"),
        ("offload_param_device", _child(zero, "offload_param"), "device", "/zero_optimization/offload_param/device"),
    ]
    for key, node, json_key, json_pointer in compared:
        if key not in section or not isinstance(node, dict) or json_key not in node or node[json_key] == "auto":
            continue
        mine, theirs = py_str(section[key]).lower(), py_str(node[json_key]).lower()
        if mine != theirs:
            issues.append(Disagreement(
                PAIR_MISMATCH, f"/deepspeed_config/{key}", f"{key} {py_str(section[key], 120)}", json_pointer,
                f"{json_pointer.lstrip('/').replace('/', '.')} {node[json_key]}",
                "the JSON's concrete value wins (DeepSpeedPlugin only fills \"auto\"), and the YAML key is refused "
                "next to deepspeed_config_file anyway; keep the setting in the JSON only", None))
    init = section.get("zero3_init_flag")
    stage = zero.get("stage")
    if py_str(init).lower() in TRUE_WORDS and isinstance(stage, int) \
            and not isinstance(stage, bool) and stage != 3:
        issues.append(Disagreement(
            STAGE_IGNORED, "/deepspeed_config/zero3_init_flag", "zero3_init_flag true", "/zero_optimization/stage",
            f"zero_optimization.stage {stage}", "Accelerate warns \"DeepSpeed Zero3 Init flag is only applicable for "
            "ZeRO Stage 3. Setting it to False.\"", None))
    return issues


def _child(node: dict, key: str):
    value = node.get(key)
    return value if isinstance(value, dict) else None
