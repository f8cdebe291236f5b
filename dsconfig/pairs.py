"""Lint files together: an Accelerate YAML and the ds_config.json it names are one launch.

`deepspeed_config.deepspeed_config_file` hands a JSON file to DeepSpeedPlugin in every
training process, so that JSON is linted as Accelerate will use it: target `accelerate`
(json.load, Accelerate's "auto" fills; `hf-trainer` when the file holds an "auto" only the
Trainer fills) at the world size the YAML launches, unless the user asked for a target or world
size. Each JSON is linted once, with the world sizes of every
YAML that names it, and never a second time standalone. What the two files disagree on is
reported in both, each message naming the other file's position.
"""

from __future__ import annotations

import os
from typing import NamedTuple

from . import engine
from .findings import INITIALIZE, Finding


class Side(NamedTuple):
    """A YAML that names a ds_config.json, and what `accelerate launch` makes of it."""
    doc: object
    config: dict
    replay: object  # accelerate.launch.Replay
    written: str  # deepspeed_config_file as written
    json_path: str | None  # resolved, or None when missing
    how: str  # "relative to the working directory" / "relative to the YAML's folder" / "absolute"


def lint_together(files: list[str], options: engine.Options) -> list[Finding]:
    findings: list[Finding] = []
    docs: dict[str, object] = {}
    spelled: dict[str, str] = {}  # real path -> the path as the user gave it
    for path in files:
        real = os.path.realpath(path)
        if real in spelled:
            continue
        spelled[real] = path
        doc, unreadable = engine.read_document(path, options)
        findings.extend(unreadable)
        if doc is not None:
            docs[real] = doc

    sides = [side for doc in docs.values() if (side := _yaml_side(doc)) is not None]
    paired: dict[str, list[Side]] = {}
    for side in sides:
        if side.json_path is not None:
            paired.setdefault(os.path.realpath(side.json_path), []).append(side)

    for real, doc in docs.items():
        if real not in paired:  # a paired JSON is linted below, in its pair's context
            findings.extend(engine.lint_document(doc, options))
    for side in sides:
        if side.json_path is None:
            findings.append(_missing(side))
    for real, users in paired.items():
        findings.extend(_lint_pair(real, spelled.get(real) or os.path.normpath(users[0].json_path), users, options))
    return _in_file_order(findings, files)


def _yaml_side(doc) -> Side | None:
    if doc.kind != "accelerate" or not engine.is_yaml(doc.path) or not doc.loaded:
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
        return (written if os.path.isfile(written) else None), "absolute"
    candidates = [(written, "relative to the working directory"),
                  (os.path.join(os.path.dirname(yaml_path), written), "relative to the YAML's folder")]
    for candidate, how in candidates:
        if os.path.isfile(candidate):
            return candidate, how
    return None, "relative to the working directory or the YAML's folder"


def _missing(side: Side) -> Finding:
    folder = os.path.dirname(os.path.abspath(side.doc.path))
    looked = "" if side.how == "absolute" else f" (looked {side.how}: {os.getcwd()} and {folder})"
    finding = Finding(
        "ACC020", f"deepspeed_config_file `{side.written}` does not exist{looked}: every process fails in DeepSpeedPlugin with \"ValueError: Expected a string path to an "
                  f"existing deepspeed config, or a dictionary, or a base64 encoded string. Received: "
                  f"{side.written}\". The path is opened relative to the directory `accelerate launch` runs in",
        "/deepspeed_config/deepspeed_config_file", fails_in=INITIALIZE)
    return engine.place(side.doc, [finding])[0]


def _lint_pair(real: str, json_path: str, users: list[Side], options: engine.Options) -> list[Finding]:
    from .accelerate.check import launched_world_size
    sizes = sorted({size for side in users if (size := launched_world_size(side.replay))})
    pair_options = options._replace(world_sizes=options.world_sizes or (tuple(sizes) or None), kind="deepspeed")
    doc, unreadable = engine.read_document(json_path, pair_options)
    if doc is None:
        return unreadable
    pair_options = pair_options._replace(target=options.target or _launched_program(doc))
    findings = engine.lint_document(doc, pair_options)
    loaded, ds_config = doc.reading("json")  # DeepSpeedPlugin reads the file with json.load
    if loaded and isinstance(ds_config, dict):
        for side in users:
            findings.extend(pair_findings(side, doc, ds_config))
    return findings


def _launched_program(doc) -> str:
    """Who reads the JSON under `accelerate launch`: the HF Trainer when the file leaves an "auto"
    that only the Trainer fills (optimizer betas/eps, ...), else the script's own prepare()."""
    from .deepspeed.check import fill_targets
    from .deepspeed.target import auto_pointers
    loaded, value = doc.reading("json")
    if loaded and any(fill_targets(p) == {"hf-trainer"} for p in auto_pointers(value)):
        return "hf-trainer"
    return "accelerate"


# -- what the two files must agree on --------------------------------------------------------


class Disagreement(NamedTuple):
    code: str
    yaml_pointer: str
    yaml_text: str  # what the YAML says, e.g. "mixed_precision bf16"
    json_pointer: str
    json_text: str
    consequence: str
    fails_in: str | None


def pair_findings(side: Side, json_doc, ds_config: dict) -> list[Finding]:
    """One Finding in each file per disagreement, each naming the other file's path:line:col."""
    findings = []
    for issue in disagreements(side, ds_config):
        yaml_at = _where(side.doc, issue.yaml_pointer)
        json_at = _where(json_doc, issue.json_pointer)
        how = "" if side.how == "relative to the working directory" else f", found {side.how}"
        yaml_finding = Finding(issue.code, f"{issue.yaml_text} disagrees with {json_at} ({issue.json_text}{how}): "
                                           f"{issue.consequence}", issue.yaml_pointer, fails_in=issue.fails_in)
        json_finding = Finding(issue.code, f"{issue.json_text} disagrees with {yaml_at} ({issue.yaml_text}): "
                                           f"{issue.consequence}", issue.json_pointer, fails_in=issue.fails_in)
        findings.extend(engine.place(side.doc, [yaml_finding]) + engine.place(json_doc, [json_finding]))
    return findings


def _where(doc, pointer: str) -> str:
    line, column = doc.locate(pointer, False)
    return f"{doc.path}:{line}:{column}"


def disagreements(side: Side, ds_config: dict) -> list[Disagreement]:
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
                "ACC018", replay.where("mixed_precision"), f"mixed_precision {mode}", f"/{other}/enabled",
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
        mine, theirs = str(section[key]).lower(), str(node[json_key]).lower()
        if mine != theirs:
            issues.append(Disagreement(
                "ACC018", f"/deepspeed_config/{key}", f"{key} {section[key]}", json_pointer,
                f"{json_pointer.lstrip('/').replace('/', '.')} {node[json_key]}",
                "the JSON's concrete value wins (DeepSpeedPlugin only fills \"auto\"), and the YAML key is refused "
                "next to deepspeed_config_file anyway; keep the setting in the JSON only", None))
    init = section.get("zero3_init_flag")
    stage = zero.get("stage")
    if str(init).lower() in TRUE_WORDS and isinstance(stage, int) \
            and not isinstance(stage, bool) and stage != 3:
        issues.append(Disagreement(
            "ACC015", "/deepspeed_config/zero3_init_flag", "zero3_init_flag true", "/zero_optimization/stage",
            f"zero_optimization.stage {stage}", "Accelerate warns \"DeepSpeed Zero3 Init flag is only applicable for "
            "ZeRO Stage 3. Setting it to False.\"", None))
    return issues


def _child(node: dict, key: str):
    value = node.get(key)
    return value if isinstance(value, dict) else None


def _in_file_order(findings: list[Finding], files: list[str]) -> list[Finding]:
    """Files in the order given (a named JSON that was not given comes last), each file's findings sorted
    and without repeats (two YAMLs naming one JSON agree on most of it)."""
    by_file: dict[str, dict] = {path: {} for path in files}
    for f in findings:
        by_file.setdefault(f.file, {}).setdefault((f.line, f.column, f.code, f.message, f.world_size), f)
    return [f for found in by_file.values() for f in sorted(found.values(), key=Finding.sort_key)]
