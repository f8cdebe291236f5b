"""`--fix` and `--diff`: a finding's `fix` applied as a text edit at the position the scanner recorded.

A finding's `fix` is the replacement JSON text for the value at its pointer (or for the key, when
`on_key`). An Edit replaces exactly that span of the file (jsonscan spans for JSON, PyYAML token
marks for YAML), so every byte outside it - comments, indentation, key order, line endings - stays
as it was. A fix for a key that is absent (an unsafe fix only) is inserted after the last member of
its object, indented like its siblings.

Fix safety
----------
`dsconfig lint --fix` applies *safe* fixes only: a safe fix writes what DeepSpeed (or Accelerate)
already reads, or the one spelling of the value the author evidently meant, so the training run does
what it did before (or what it plainly was meant to do instead of failing to start). Everything that
changes what the run does - a batch size at some world size, a ZeRO stage, a flag DeepSpeed reads
differently from how it is written, a did-you-mean guess - is *unsafe* and needs `--unsafe-fixes`.
Each rule declares its policy and why (`Rule.autofix`, dsconfig.rules); a rule that declares none
never carries a fix, and is treated as unsafe if it ever does.

Some safe rules demote single findings to unsafe (`Autofix.demoted_when`, checked here): a DS201
fix from `true` (which number was meant?), a DS103 fix that is a guess rather than a re-spelling, a
DS104 rename of a key whose value DeepSpeed migrates into a different shape (`cpu_offload: true` is
not `offload_optimizer: true`).

Applying
--------
Non-overlapping edits are applied bottom-up, the files re-linted, and the loop repeats until nothing
is left to fix (at most MAX_PASSES passes). A pass whose edits write something rejected where it was
written (a new invalid-value, wrong-type or unknown-key finding at the value or key an edit touched) or
break the file (a new load error anywhere) is undone, and its edits are retried one by one; an edit that
still does harm is dropped. New findings of other kinds are what the old value hid (a batch size that
finally parses can be checked against the world size) and stay reported. Files are written
atomically: a temporary file in the same folder, the original file mode, then os.replace. A
symbolic link is never written through (nor replaced): it is reported and left alone. `--diff`
prints a unified diff and writes nothing.
"""

from __future__ import annotations

import json
import os
from functools import lru_cache
from typing import Callable, NamedTuple

from .boundary import Boundary, digest, read_digest, special
from .boundary import current as current_run
from .files import FileError
from .findings import Finding
from .pointers import MISSING, pointer_from, pointer_join, pointer_tokens, value_at
from .rules.accelerate_keys import (
    DISTRIBUTED_TYPE,
    INVALID_SETTING,
    MIXED_PRECISION,
    UNKNOWN_TOP_LEVEL_KEY,
    YAML_BOOLEAN,
)
from .rules.batch import BATCH_TYPE
from .rules.files import DUPLICATE_KEY, NOT_AN_OBJECT, PARSE_ERROR
from .rules.keys import CONFLICTING_KEYS, INVALID_VALUE, STEP_VALUE, UNKNOWN_KEY, WRONG_TYPE
from .rules.precision import COMMUNICATION_DTYPE, GRADIENT_ALLREDUCE_OP, QUOTED_BOOL, WALL_CLOCK_TYPE
from .rules.rule import CHANGED_VALUE, CONVERTED_ON_MIGRATION, LEGACY_ALLGATHER, SAFE
from .rules.sections import PIPELINE_FLAGS, SECTION_TYPE

MAX_PASSES = 10
# New findings of these rules mean an edit broke the file itself.
_STRUCTURAL = frozenset({PARSE_ERROR, DUPLICATE_KEY, NOT_AN_OBJECT})
# New findings of these rules at a value an edit wrote mean the edit wrote something the reader rejects
# (a wrong type, an unknown key, an invalid value). New findings of other rules there are consequences the
# old value hid (a batch size that parses at last can now be checked against the world size), not harm.
_INVALID = frozenset({UNKNOWN_KEY, INVALID_VALUE, CONFLICTING_KEYS, WRONG_TYPE, BATCH_TYPE, COMMUNICATION_DTYPE,
                      GRADIENT_ALLREDUCE_OP, QUOTED_BOOL, WALL_CLOCK_TYPE, SECTION_TYPE, PIPELINE_FLAGS,
                      UNKNOWN_TOP_LEVEL_KEY, DISTRIBUTED_TYPE, MIXED_PRECISION, YAML_BOOLEAN, INVALID_SETTING,
                      STEP_VALUE})


class Edit(NamedTuple):
    start: int  # offsets into the (newline-normalised) text, end exclusive
    end: int
    text: str


class FixInfo(NamedTuple):
    """A finding's fix as an edit of its file, or edit None when dsconfig cannot place it."""
    edit: Edit | None
    safe: bool
    touched: str  # the pointer the edit writes (a renamed key's new pointer)
    description: str  # "replace `32.0` with `32`", "rename `bfloat16` to `bf16`", ...
    old: str  # the text replaced
    kind: str  # "replace" | "rename" | "insert" | "none"


# -- from a finding to an edit ------------------------------------------------------------------------------------


def describe(findings, documents: dict) -> dict[int, FixInfo]:
    """FixInfo by id(finding) for every finding that carries a fix."""
    infos = {}
    with _one_reading_at_a_time(len(documents)) as reading:
        for finding in findings:
            if finding.fix is None:
                continue
            doc = reading(documents.get(finding.file))
            infos[id(finding)] = plan(finding, doc) if doc is not None else _no_edit(finding)
    return infos


class _one_reading_at_a_time:
    """Findings come file by file: over more documents than the engine keeps parsed (engine.KEEP_PARSED), a
    document's readings are released once the next file's are needed, so a report over thousands of files holds
    one parse tree at a time (dsconfig.document.JsonDocument.release)."""

    def __init__(self, documents: int):
        from .engine import KEEP_PARSED
        self.releasing = documents > KEEP_PARSED

    def __enter__(self):
        self.current = None
        return self.reading

    def reading(self, doc):
        if doc is not self.current:
            if self.current is not None and self.releasing:
                self.current.release()
            self.current = doc
        return doc

    def __exit__(self, *exc):
        if self.current is not None and self.releasing:
            self.current.release()
        return False


def _no_edit(finding: Finding) -> FixInfo:
    return FixInfo(None, False, finding.pointer, f"write `{_short(finding.fix)}`", "", "none")


def plan(finding: Finding, doc) -> FixInfo:
    """How a finding's fix edits its document."""
    if finding.fix is None:
        return _no_edit(finding)
    try:
        new_value = json.loads(finding.fix)
    except ValueError:
        return _no_edit(finding)
    is_yaml = doc.format == "yaml"
    root = doc.as_written
    pointer = finding.pointer
    tokens = pointer_tokens(pointer)
    if finding.on_key:
        if not tokens or not isinstance(new_value, str):
            return _no_edit(finding)
        parent_pointer = pointer[:pointer.rfind("/")]
        parent = value_at(root, tokens[:-1])
        if isinstance(parent, dict) and new_value in parent and new_value != tokens[-1]:
            return _no_edit(finding)  # the new key is there already: a rename would duplicate it
        located = _yaml_key(doc, pointer, new_value) if is_yaml else _json_key(doc, pointer, new_value)
        if located is None:
            return _no_edit(finding)
        edit, old = located
        touched = pointer_join(parent_pointer, new_value)
        safe = _is_safe(finding, value_at(root, tokens), new_value, root)
        return FixInfo(edit, safe, touched, f"rename `{old}` to `{edit.text}`", old, "rename")
    located = _yaml_value(doc, pointer, new_value, finding.fix) if is_yaml else _json_value(doc, pointer, finding.fix)
    if located is not None:
        edit, old = located
        safe = _is_safe(finding, value_at(root, tokens), new_value, root)
        if old == edit.text:
            return FixInfo(None, safe, pointer, f"write `{_short(finding.fix)}`", old, "none")
        return FixInfo(edit, safe, pointer, f"replace `{_short(old)}` with `{_short(edit.text)}`", old, "replace")
    if not is_yaml and tokens:
        edit = _json_insert(doc, root, tokens, finding.fix)
        if edit is not None:
            safe = _is_safe(finding, MISSING, new_value, root)
            return FixInfo(edit, safe, pointer, f"add `{_short(edit.text.strip().lstrip(','). strip())}`", "", "insert")
    return _no_edit(finding)


def _short(text: str, limit: int = 60) -> str:
    text = text.replace("\n", " ")
    return text if len(text) <= limit else text[:limit - 3] + "..."


# JSON ------------------------------------------------------------------------------------------------------------


def _json_key(doc, pointer: str, new_key: str):
    span = doc.spans.get(pointer)
    if span is None or span.key_start is None:
        return None
    start, end = doc.extent(pointer, on_key=True)
    return Edit(start, end, json.dumps(new_key, ensure_ascii=False)), doc.text[start:end]


def _json_value(doc, pointer: str, fix: str):
    located = doc.extent(pointer)
    if located is None:
        return None
    start, end = located
    return Edit(start, end, fix), doc.text[start:end]


def _json_insert(doc, root, tokens: list[str], fix: str) -> Edit | None:
    """`"key": fix` after the last member of the parent object (absent key, parent present)."""
    parent_tokens, key = tokens[:-1], tokens[-1]
    parent = value_at(root, parent_tokens)
    if not isinstance(parent, dict) or key in parent:
        return None
    parent_pointer = pointer_from(parent_tokens)
    spans = doc.spans
    parent_span = spans.get(parent_pointer)
    if parent_span is None or doc.text[parent_span.start:parent_span.start + 1] != "{":
        return None
    member = json.dumps(key, ensure_ascii=False) + ": " + fix
    children = [spans.get(pointer_join(parent_pointer, k)) for k in parent]
    children = [c for c in children if c is not None]
    if not children:
        return Edit(parent_span.start + 1, parent_span.start + 1, member)
    last = max(children, key=lambda s: s.start)
    key_at = last.key_start if last.key_start is not None else last.start
    line_start = doc.text.rfind("\n", 0, key_at) + 1
    indent = doc.text[line_start:key_at]
    if indent.strip() == "" and "\n" in doc.text[parent_span.start:key_at]:
        return Edit(last.end, last.end, ",\n" + indent + member)
    return Edit(last.end, last.end, ", " + member)


# YAML ------------------------------------------------------------------------------------------------------------


def _yaml_text(value, fix: str, style) -> str | None:
    """The YAML spelling of a JSON fix, keeping a plain scalar plain where the value allows it."""
    if isinstance(value, str):
        if style is None and _plain_ok(value):
            return value
        if style == "'" and "'" not in value and "\n" not in value:
            return f"'{value}'"
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, float) and "." not in fix:
        return None  # YAML 1.1 reads 1e-05 as a string
    return fix


def _plain_ok(text: str) -> bool:
    import re
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_./-]*", text):
        return False
    import yaml
    try:
        return yaml.safe_load(text) == text
    except yaml.YAMLError:
        return False


def _yaml_key(doc, pointer: str, new_key: str):
    span = doc.spans.get(pointer)
    if span is None:
        return None
    found = doc.scalar_at(span.key_start)
    if found is None:
        return None
    end, style = found
    text = _yaml_text(new_key, json.dumps(new_key), style)
    return Edit(span.key_start, end, text), doc.text[span.key_start:end]


def _yaml_value(doc, pointer: str, value, fix: str):
    span = doc.spans.get(pointer)
    if span is None:
        return None
    found = doc.scalar_at(span.start)
    if found is None:
        return None
    end, style = found
    text = _yaml_text(value, fix, style)
    if text is None:
        return None
    return Edit(span.start, end, text), doc.text[span.start:end]


def extent(finding: Finding, doc) -> tuple[int, int] | None:
    """Offsets of the value (or key) a finding is about, when its pointer names one: for carets and regions."""
    if finding.offset is not None or doc is None:
        return None
    return doc.extent(finding.pointer, finding.on_key)


def extents(findings, documents: dict) -> dict:
    out = {}
    with _one_reading_at_a_time(len(documents)) as reading:
        for finding in findings:
            located = extent(finding, reading(documents.get(finding.file)))
            if located is not None:
                out[id(finding)] = located
    return out


# -- safety ----------------------------------------------------------------------------------------------------------


def _is_safe(finding: Finding, original, new_value, root) -> bool:
    """The rule's policy, and for a safe rule whether this fix is demoted (`Autofix.demoted_when`)."""
    policy = finding.rule.autofix
    if policy is None or policy.applicability != SAFE:
        return False
    if policy.demoted_when == CHANGED_VALUE:
        return _same_value(original, new_value)
    if policy.demoted_when == CONVERTED_ON_MIGRATION:
        tokens = pointer_tokens(finding.pointer)
        return bool(tokens) and tokens[-1] not in _migrated_keys()
    if policy.demoted_when == LEGACY_ALLGATHER:
        return not (original is True and isinstance(root, dict) and "allgather_size" in root)
    return True


def _same_value(original, new) -> bool:
    """Whether `new` is a re-spelling of `original`: the same number, or the same word in another case."""
    if original is MISSING or isinstance(original, bool) or isinstance(new, bool):
        return False
    if isinstance(original, str) and isinstance(new, str):
        return original.strip().lower() == new.lower()
    if isinstance(original, str) and isinstance(new, (int, float)):
        try:
            return float(original.strip()) == new
        except ValueError:
            return False
    if isinstance(original, (int, float)) and isinstance(new, (int, float)):
        return original == new
    return False


def _migrated_keys() -> frozenset:
    """Deprecated DeepSpeed keys whose value is converted while migrated (cpu_offload: true -> a block)."""
    from .deepspeed import schema
    return _migrated_keys_of(schema.active())


@lru_cache(maxsize=None)
def _migrated_keys_of(version: str) -> frozenset:
    from .deepspeed import schema
    keys = set()
    stack = [schema.root()]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for key, prop in (node.get("properties") or {}).items():
                if isinstance(prop, dict) and (prop.get("x-deepspeed-deprecated") or {}).get("migrate"):
                    keys.add(key)
            stack.extend(v for v in node.values() if isinstance(v, (dict, list)))
        elif isinstance(node, list):
            stack.extend(v for v in node if isinstance(v, (dict, list)))
    return frozenset(keys)


# -- applying, to a fixpoint ---------------------------------------------------------------------------------------


class FileResult:
    """One file touched by --fix: its original and fixed text (raw: line endings as in the file)."""

    def __init__(self, path: str, real: str, original: str, stdin: bool = False, read: bytes | None = None):
        self.path = path
        self.real = real
        self.original = original
        self.read = read  # the bytes read from disk, which the file must still hold when it is replaced
        self.text = original
        self.stdin = stdin
        self.fixed = 0  # findings fixed
        self.applied: list[tuple[Finding, FixInfo]] = []  # the fixes applied, in the order applied

    @property
    def changed(self) -> bool:
        return self.text != self.original


class FixRun(NamedTuple):
    findings: list  # after the last pass, unfiltered
    documents: dict
    files: dict  # real path -> FileResult (only files some edit was tried on, plus stdin)
    skipped: list  # (path, why): files not written (links, outside the paths linted, read-only, hard-linked)
    crashed: tuple = ()  # engine.InternalError of the last pass, one per file whose checks crashed
    linted: dict = {}  # path -> kind of every document the last pass linted
    unused: Finding | None = None  # engine.LintResult.unused of the last pass


def run(paths: list[str], options, keep: Callable[[Finding], bool], unsafe: bool = False,
        stdin: dict | None = None, writing: bool = False) -> FixRun:
    """Lint, apply the applicable fixes, re-lint, until nothing more applies (at most MAX_PASSES).

    `keep` tells which findings are reported (selection and suppressions): only those are fixed.
    `stdin`: {display path: text} for input read from standard input. `writing` (--fix, not --diff):
    files that will not be written (read-only, hard-linked) are left as they are.
    """
    from . import engine

    results: dict[str, FileResult] = {}
    skipped: list = []
    refused: set = set()  # (real, code, pointer, fix) that did harm
    sources = dict(options.sources or {})
    for path, text in (stdin or {}).items():
        real = os.path.realpath(path)
        results[real] = FileResult(path, real, text, stdin=True)
        sources[real] = text

    crashed, linted, unused = [], {}, [None]

    def lint(current_sources):
        result = engine.lint_files(paths, options._replace(sources=current_sources))
        crashed[:] = result.crashed
        unused[0] = result.unused
        linted.clear()
        linted.update(result.linted)
        return result.findings, result.documents

    findings, documents = lint(sources)
    # Written: only files under the paths the command line named (dsconfig.boundary: not --allow-read, not a
    # YAML's folder); without a command's scope (dsconfig's functions called directly), under `paths`.
    run_scope = current_run()
    boundary = run_scope.boundary if run_scope is not None else Boundary.of(paths)._replace(
        writable=Boundary.of(paths).roots)
    seen_states = set()
    for _ in range(MAX_PASSES):
        chosen: dict[str, list] = {}
        for finding, info in _applicable(findings, documents, keep, unsafe, refused):
            real = os.path.realpath(finding.file)
            if real not in results:
                why = _not_writable(finding.file, real, boundary, writing)
                if why is not None:
                    if all(p != finding.file for p, _ in skipped):
                        skipped.append((finding.file, why))
                    continue
                try:
                    data = _read_raw(finding.file, options.max_bytes)
                    results[real] = FileResult(finding.file, real, data.decode("utf-8"), read=data)
                except ChangedOnDisk as error:
                    if all(p != finding.file for p, _ in skipped):
                        skipped.append((finding.file, str(error)))
                    continue
                except (OSError, UnicodeDecodeError, FileError):
                    continue
            chosen.setdefault(real, []).append((finding, info))
        chosen = {real: _non_overlapping(items) for real, items in chosen.items()}
        if not chosen:
            break
        trial = dict(sources)
        for real, items in chosen.items():
            trial[real] = apply_edits(results[real].text, [info.edit for _, info in items])
        state = tuple(sorted(trial.items()))
        if state in seen_states:
            break  # the edits go round in a circle
        seen_states.add(state)
        new_findings, new_documents = lint(trial)
        harmed = _harmed(findings, new_findings, chosen)
        for real in harmed:
            # Undo this file's edits, then try them one by one (bottom-up, so offsets stay valid).
            trial[real] = results[real].text
            done: set = set()
            for finding, info in sorted(chosen[real], key=lambda item: item[1].edit.start, reverse=True):
                if info.edit in done:
                    results[real].fixed += 1
                    results[real].applied.append((finding, info))
                    continue
                attempt = dict(trial)
                attempt[real] = apply_edits(trial[real], [info.edit])
                found, _ = lint(attempt)
                if _harmed(findings, found, {real: [(finding, info)]}):
                    refused.add((real, finding.code, finding.pointer, finding.fix))
                else:
                    trial = attempt
                    done.add(info.edit)
                    results[real].fixed += 1
                    results[real].applied.append((finding, info))
        if harmed:
            new_findings, new_documents = lint(trial)
        for real, items in chosen.items():
            if real not in harmed:
                results[real].fixed += len(items)
                results[real].applied.extend(items)
            results[real].text = trial[real]
        sources = trial
        findings, documents = new_findings, new_documents
    return FixRun(findings, documents, results, skipped, tuple(crashed), dict(linted), unused[0])


def _not_writable(path: str, real: str, boundary: Boundary, writing: bool) -> str | None:
    """Why --fix must not write the file, or None. Only a regular file under the paths linted, every
    symbolic link resolved (a linked folder on the way included), and when `writing`, with one name
    and write permission."""
    import stat

    if os.path.islink(path):
        return "a symbolic link; fix the file it points to"
    if not boundary.may_write(real):
        return f"its real path {real} is not under a path given on the command line; name it to fix it"
    why = special(real)
    if why is not None:
        return f"{why}, not a regular file"
    if not writing:
        return None
    status = os.stat(real)
    if not status.st_mode & stat.S_IWUSR or not os.access(real, os.W_OK):
        return "read-only; make it writable to fix it"
    if status.st_nlink > 1:
        # the fix replaces the file (write, then rename): the other names would keep the old text
        return f"it has {status.st_nlink} hard links, which a fix would split; fix it by hand"
    return None


class ChangedOnDisk(Exception):
    """The file is no longer what the lint read (another --fix, an editor saving): not fixed."""


def _read_raw(path: str, limit: int | None) -> bytes:
    """The file's bytes, which must be those the lint pass read: the edits are offsets into that text."""
    from .files import MAX_BYTES, read_bytes
    seen = read_digest(path)  # before reading: the read records what it read
    data = read_bytes(path, limit or MAX_BYTES)
    if seen is not None and digest(data) != seen:
        raise ChangedOnDisk("it changed on disk while dsconfig was reading it; not fixed (run again)")
    return data


def _applicable(findings, documents, keep, unsafe: bool, refused: set):
    batch = []
    for finding in findings:
        if finding.fix is None or not keep(finding):
            continue
        doc = documents.get(finding.file)
        if doc is None:
            continue
        info = plan(finding, doc)
        if info.edit is None or not (info.safe or unsafe):
            continue
        if (os.path.realpath(finding.file), finding.code, finding.pointer, finding.fix) in refused:
            continue
        batch.append((finding, info))
    return batch


def _non_overlapping(items):
    """Edits that do not overlap, first come first served (findings are sorted by position and code);
    the same edit wanted by two findings is applied once and fixes both."""
    chosen, taken = [], []
    for finding, info in items:
        edit = info.edit
        if edit in taken:
            chosen.append((finding, info))
        elif not any(_overlap(edit, other) for other in taken):
            taken.append(edit)
            chosen.append((finding, info))
    return chosen


def _overlap(a: Edit, b: Edit) -> bool:
    if a.start == a.end or b.start == b.end:  # an insertion conflicts with anything at or around its point
        return a.start <= b.end and b.start <= a.end
    return a.start < b.end and b.start < a.end


def _harmed(before, after, chosen) -> set:
    """Files where the edits broke the file, or wrote a value (or key) that is rejected where it was written."""
    known = {(os.path.realpath(f.file), f.code, f.pointer) for f in before}
    touched = {real: [info.touched for _, info in items] for real, items in chosen.items()}
    harmed = set()
    for f in after:
        real = os.path.realpath(f.file)
        if real not in touched or (real, f.code, f.pointer) in known:
            continue
        if f.rule in _STRUCTURAL or (f.rule in _INVALID and any(_covers(f.pointer, t) for t in touched[real])):
            harmed.add(real)
    return harmed


def _covers(pointer: str, scope: str) -> bool:
    return not scope or pointer == scope or pointer.startswith(scope + "/")


def apply_edits(raw: str, edits: list[Edit]) -> str:
    """Apply edits (offsets into the newline-normalised text) to the raw text, bottom-up."""
    mapping = _offset_map(raw)
    newline = "\r\n" if "\r\n" in raw else ("\r" if "\r" in raw else "\n")
    out = raw
    for edit in sorted(edits, key=lambda e: (e.start, e.end), reverse=True):
        start = mapping[edit.start] if mapping else edit.start
        end = mapping[edit.end] if mapping else edit.end
        text = edit.text.replace("\n", newline) if newline != "\n" else edit.text
        out = out[:start] + text + out[end:]
    return out


def _offset_map(raw: str) -> list[int] | None:
    """For text with \\r\\n or \\r line ends: the raw offset of each offset of the normalised text."""
    if "\r" not in raw:
        return None
    mapping = []
    i, n = 0, len(raw)
    while i < n:
        mapping.append(i)
        i += 2 if raw[i] == "\r" and i + 1 < n and raw[i + 1] == "\n" else 1
    mapping.append(n)
    return mapping


# -- output ------------------------------------------------------------------------------------------------------


def unified_diff(result: FileResult) -> str:
    import difflib

    from .escape import inline
    name = inline(result.path)  # a header is one line, in UTF-8, whatever the file's name holds
    lines = difflib.unified_diff(result.original.splitlines(keepends=True), result.text.splitlines(keepends=True),
                                 fromfile=name, tofile=name)
    out = []
    for line in lines:
        if not line.endswith(("\n", "\r")):
            line += "\n\\ No newline at end of file\n"
        out.append(line)
    return "".join(out)


def write_atomic(path: str, text: str, expected: bytes | None = None) -> None:
    """Replace `path` with `text` atomically, keeping its mode; refuse symbolic links, and refuse (files.Changed)
    when the file no longer holds `expected`, the bytes the fixes were computed from."""
    from .files import write_atomic as write
    write(path, text, expected=expected)
