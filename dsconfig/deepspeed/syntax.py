"""Findings about how the file reads: load failures, duplicate keys, hjson-only syntax.

Which of these are fatal depends on who loads the file. DeepSpeed itself uses hjson and
rejects duplicate keys; the HF Trainer, Accelerate and Lightning use `json.load`, which
rejects hjson syntax and silently keeps the last duplicate.
"""

from __future__ import annotations

from ..findings import Finding
from ..phases import LOAD
from ..pointers import dotted
from ..rules.files import DUPLICATE_KEY, HJSON_SYNTAX, HJSON_VALUE_TRAP, PARSE_ERROR
from ..targets import Target
from . import step

_NOTE_WORDS = {
    "comment": ("comment", "comments"),
    "trailing-comma": ("trailing comma", "trailing commas"),
    "missing-comma": ("member without a separating comma", "members without separating commas"),
    "unquoted-key": ("unquoted key", "unquoted keys"),
    "single-quotes": ("single-quoted string", "single-quoted strings"),
    "quoteless-string": ("quoteless string value", "quoteless string values"),
    "multiline-string": ("''' multiline string", "''' multiline strings"),
    "braceless-root": ("top-level object without braces", "top-level objects without braces"),
    "empty-document": ("empty document (hjson reads it as {})", "empty documents"),
    "byte-order-mark": ("UTF-8 byte-order mark (BOM) at the start", "byte-order marks"),
}

JSON_READERS = "json.load (HF Trainer, Accelerate, Lightning)"


def load_findings(doc, target: Target) -> list[Finding]:
    """DS000-DS003 for one document and target."""
    findings: list[Finding] = []
    strict = target.loader == "json"
    if doc.scan is None:
        error = doc.scan_error
        if not strict:
            findings.append(Finding(PARSE_ERROR, f"DeepSpeed's hjson loader fails: {error.message}",
                                    offset=error.offset,
                                    fails_in=LOAD))
            return findings
    if strict and doc.json_error is not None:
        error = doc.json_error
        also = ("" if doc.scan is None
                else "; DeepSpeed's own hjson loader would accept it, the " + target.name + " target does not")
        findings.append(Finding(PARSE_ERROR, f"{JSON_READERS} fails: {error.msg}{also}", offset=error.pos,
                                fails_in=LOAD))
    if doc.scan is None:
        return findings

    if not strict:
        by_kind: dict[str, list] = {}
        for note in doc.scan.notes:
            by_kind.setdefault(note.kind, []).append(note)
        for kind, notes in by_kind.items():
            one, many = _NOTE_WORDS.get(kind, (kind, kind))
            count = len(notes)
            words = one if count == 1 else f"{count} {many}"
            findings.append(Finding(
                HJSON_SYNTAX,
                f"{words}: DeepSpeed's hjson loader accepts this, but {JSON_READERS} rejects the file",
                offset=notes[0].start))
        for trap in doc.scan.traps:
            message = f"{dotted(trap.pointer)}: hjson reads {trap.text!r} as a string: {trap.reason}"
            outcome = step.failure(trap.pointer, doc.hjson_value, target)  # None: no step-time value
            findings.append(Finding(HJSON_VALUE_TRAP, message + (f"; {outcome.how}" if outcome else ""),
                                    trap.pointer, fails_in=outcome.phase if outcome else None))

    for dup in doc.scan.duplicates:
        key = dotted(dup.pointer)
        first_line, _ = doc.position(dup.first_key_start)
        if strict:
            message = (f"duplicate key `{key}` (first at line {first_line}): {JSON_READERS} silently keeps the last "
                       "value; DeepSpeed's own loader rejects the file")
            findings.append(Finding(DUPLICATE_KEY, message, offset=dup.key_start))
        else:
            message = (f"duplicate key `{key}` (first at line {first_line}): DeepSpeed fails with "
                       f"\"ValueError: Duplicate keys in DeepSpeed config: ['{key.rsplit('.', 1)[-1]}']\"")
            findings.append(Finding(DUPLICATE_KEY, message, offset=dup.key_start, fails_in=LOAD))
    return findings
