"""Files that are neither DeepSpeed nor Accelerate configs: a project's training config, or skipped.

A JSON, YAML or TOML file holding a batch-size key is a training config and gets the checks of
dsconfig.training.configs; a file of HF TrainingArguments also gets the Trainer's FSDP checks
(dsconfig.fsdp.trainer_args); anything else is skipped with a note (DS005).
"""

from __future__ import annotations

from . import detect
from .boundary import Boundary
from .findings import Finding
from .rules.files import NOT_A_CONFIG


def lint_other(doc, options) -> list[Finding]:
    """The training-config findings, or DS005. Records on `doc.checked_with` the run options used."""
    loaded, value = doc.tree
    walked = doc.path in options.found
    if doc.format == "json" and doc.json_error is not None:
        filled = detect.placeholders(doc.text)
        if filled:  # Megatron-DeepSpeed's ds_config_gpt_TEMPLATE.json: a script writes the real config
            shown = ", ".join(filled[:3]) + (", ..." if len(filled) > 3 else "")
            return [Finding(NOT_A_CONFIG, f"a template, not a config: a script fills its placeholders ({shown}) "
                                          "before DeepSpeed reads the result; lint the file it writes; skipped")]
    if not loaded:
        if doc.format == "toml":
            return []  # a named TOML that does not parse is DS000 (engine); a walk passes it in silence
        if doc.format == "yaml":
            return [Finding(NOT_A_CONFIG, "not valid YAML and not recognisable as a config; skipped")]
        why = "it is nested too deeply to read" if "nesting too deep" in doc.load_error.message \
            else "it is not valid JSON"
        return [Finding(NOT_A_CONFIG, f"not recognised as a DeepSpeed or Accelerate config ({why}); skipped")]
    framework = detect.foreign(value) if isinstance(value, dict) else None
    if framework:
        # its batch keys are that framework's; the DeepSpeed sections it hands on are checked where it writes them
        return [Finding(NOT_A_CONFIG, f"a {framework} config, not a DeepSpeed one; skipped")]
    from .training import configs
    outcome = configs.check(value, options, fixable=doc.format != "toml")
    trainer = _trainer_fsdp(doc, value, options) if doc.format != "toml" and detect.training_arguments(value) else None
    if trainer is not None:
        if outcome is None:
            return trainer
        doc.checked_with = outcome.used
        return outcome.findings + trainer
    if outcome is None:
        if doc.format == "toml" and walked:
            return []  # pyproject.toml, .dsconfig.toml: a walk passes TOML without a batch size in silence
        return [Finding(NOT_A_CONFIG, "not a DeepSpeed or Accelerate config, and no batch size in it; skipped")]
    doc.checked_with = outcome.used
    return outcome.findings


def _trainer_fsdp(doc, value: dict, options) -> list[Finding]:
    """The Trainer's FSDP findings for a TrainingArguments file (dsconfig.fsdp.trainer_args); an info instead when
    the project pins a transformers those checks do not replay."""
    from .fsdp import trainer_args
    pinned = trainer_args.other_transformers(doc.path)
    if pinned is not None:  # another Trainer reads these arguments: say so where FSDP is set, else nothing
        fsdp = next((key for key in value if isinstance(key, str) and (key == "fsdp" or key.startswith("fsdp_"))), None)
        if fsdp is None:
            return []
        from .pointers import pointer_join
        from .rules.trainer_fsdp import TRAINER_RELEASE_NOT_REPLAYED
        major = trainer_args.REPLAYED_MAJOR
        return [Finding(TRAINER_RELEASE_NOT_REPLAYED, f"the project pins {pinned}: dsconfig checks the Trainer's FSDP "
                        f"settings as transformers {major}.x reads them (FSDP2 by default, `fsdp` strings "
                        "deprecated), which this pin rules out; not checked", pointer_join("", fsdp))]
    boundary = options.boundary or Boundary.of([doc.path])
    return trainer_args.replay(value, read_config=trainer_args.read_config_file(boundary, doc.path)).findings
