"""Lint from a test the way the command does, with options written as on the command line
(`target="hf-trainer"`): one place that knows how the engine is called."""

from __future__ import annotations

from dsconfig import engine, targets


def options(**fields) -> engine.Options:
    """engine.Options, with `target` and `model` given by name."""
    if isinstance(fields.get("target"), str):
        fields["target"] = targets.BY_NAME[fields["target"]]
    if isinstance(fields.get("model"), str):
        from dsconfig.accelerate.model_layers import resolve
        fields["model"] = resolve(fields["model"])
    return engine.Options(**fields)


def truthful(findings: list) -> list:
    """The findings, after checking each names a phase its rule declares (the docs tell the truth)."""
    for finding in findings:
        assert finding.fails_in in finding.rule.fails_in, (finding, finding.rule.fails_in)
    return findings


def lint(*paths: str, **fields) -> list:
    """The findings `dsconfig lint PATHS` reports before selection and suppressions."""
    return truthful(engine.lint_files([str(path) for path in paths], options(**fields)).findings)


def lint_folder(*paths: str, **fields) -> list:
    """As `lint`, for folders and globs (collected as the command collects them)."""
    collection = engine.collect([str(path) for path in paths])
    opts = options(**fields)._replace(found=collection.found, boundary=collection.boundary)
    return truthful(collection.problems + engine.lint_files(collection.files, opts).findings)


def lint_text(text: str, path: str, **fields) -> list:
    """The findings for `text` as if it were the file `path` (which need not exist)."""
    opts = options(**fields)
    return truthful(engine.lint_document(engine.open_document(text, path, opts), opts))
