"""Files that are neither DeepSpeed nor Accelerate configs: a project's training config, or skipped.

A JSON, YAML or TOML file holding a batch-size key is a training config and gets the checks of
dsconfig.training.configs; anything else is skipped with a note (DS005).
"""

from __future__ import annotations

from .findings import Finding
from .rules.files import NOT_A_CONFIG


def lint_other(doc, options) -> list[Finding]:
    """The training-config findings, or DS005. Records on `doc.checked_with` the run options used."""
    if doc.format == "json":
        loaded = doc.scan is not None or doc.json_error is None
        value = doc.json_value if doc.json_error is None else doc.hjson_value
    else:
        loaded, value = doc.reading(doc.format)
    if not loaded:
        if doc.format == "toml" and doc.path in options.found:
            return []
        why = "it is nested too deeply to read" if "nesting too deep" in str(getattr(doc, "json_error", "")) \
            else f"it is not valid {doc.format.upper()}"
        if doc.format == "yaml":
            why = "not valid YAML and not recognisable as a config"
            return [Finding(NOT_A_CONFIG, f"{why}; skipped")]
        return [Finding(NOT_A_CONFIG, f"not recognised as a DeepSpeed or Accelerate config ({why}); skipped")]
    from .training import configs
    outcome = configs.check(value, options, fixable=doc.format != "toml")
    if outcome is None:
        if doc.format == "toml" and doc.path in options.found:
            return []  # pyproject.toml, .dsconfig.toml: a walk passes TOML without a batch size in silence
        return [Finding(NOT_A_CONFIG, "not a DeepSpeed or Accelerate config, and no batch size in it; skipped")]
    doc.checked_with = outcome.used
    return outcome.findings
