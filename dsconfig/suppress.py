"""Which findings are reported: select/ignore, per-file ignores, and suppressions by JSON pointer.

Selectors are a code (`DS202`), a prefix of codes (`DS2`, `ACC`, `DS`), a rule name
(`batch-mismatch`) or `ALL`. Selection is layered as in ruff: the configuration file first, then
the command line. A layer with `select` starts afresh from what it selects; its `ignore` then removes
codes, and within a layer the more specific selector wins (`select = ["DS2"]`, `ignore = ["DS202"]`
keeps every DS2xx but DS202; `select = ["DS202"]`, `ignore = ["DS2"]` keeps DS202); a layer with
only `ignore` removes from what the layers before it enabled.

JSON files cannot carry `# noqa` comments (and the hjson comments DeepSpeed accepts break json.load
in the HF Trainer and Accelerate), so a finding is suppressed from the configuration: by file glob
(`per-file-ignores`) or by file glob plus JSON pointer (`[[suppress]]`, with a required reason; a
pointer covers its value and everything below it). A per-file ignore or suppression entry that
suppresses nothing in the files it covers is reported as DS900 (unused-suppression) at its line in
the configuration file; entries whose files were not linted in this run, or whose rules are all
deselected, are not judged.
"""

from __future__ import annotations

from .findings import Finding
from .rules import BY_NAME, RULES
from .rules.files import UNUSED_SUPPRESSION
from .values import closest


class UnknownSelector(Exception):
    def __init__(self, selector: str):
        self.selector = selector
        choices = list(RULES) + list(BY_NAME)
        self.suggestion = closest(selector, choices, 0.6) or closest(selector.upper(), choices, 0.6)
        hint = f"; did you mean `{self.suggestion}`?" if self.suggestion else ""
        super().__init__(f"unknown rule selector `{selector}`{hint} (use a code such as DS202, a prefix such "
                         f"as DS2 or ACC, a rule name such as batch-mismatch, or ALL)")


def expand(selector: str) -> tuple[frozenset, int]:
    """The codes a selector names, and how specific it is (the longer, the more specific)."""
    if selector == "ALL":
        return frozenset(RULES), 0
    rule = BY_NAME.get(selector)
    if rule is not None:
        return frozenset({rule.code}), len(rule.code)
    prefix = selector.strip().upper()
    codes = frozenset(code for code in RULES if code.startswith(prefix)) if prefix else frozenset()
    if not codes:
        raise UnknownSelector(selector)
    return codes, len(prefix)


def check_selectors(selectors) -> None:
    for selector in selectors:
        expand(selector)


def enabled_codes(layers) -> frozenset:
    """`layers`: (select or None, ignore) pairs, lowest precedence first."""
    enabled = set(RULES)
    for select, ignore in layers:
        ignored = _best(ignore)
        if select is not None:
            chosen = _best(select)
            enabled = {code for code, rank in chosen.items() if rank > ignored.get(code, -1)}
        else:
            enabled -= set(ignored)
    return frozenset(enabled)


def _best(selectors) -> dict:
    best: dict[str, int] = {}
    for selector in selectors or ():
        codes, rank = expand(selector)
        for code in codes:
            best[code] = max(best.get(code, -1), rank)
    return best


def _covers(pointer: str, scope: str) -> bool:
    return not scope or pointer == scope or pointer.startswith(scope + "/")


class Suppressor:
    """Apply the selection and the configuration's suppressions; remember which entries were used."""

    def __init__(self, settings, enabled: frozenset):
        if settings.per_file_ignores or settings.suppress:
            from .pathmatch import PatternSet

        self.settings = settings
        self.enabled = enabled
        root = settings.root
        self._per_file = [(entry, PatternSet(root, [entry.pattern]), frozenset().union(*(expand(s)[0] for s in
                                                                                        entry.selectors)))
                          for entry in settings.per_file_ignores]
        self._suppress = [(entry, PatternSet(root, [entry.files]), frozenset().union(*(expand(s)[0] for s in
                                                                                      entry.rules)))
                          for entry in settings.suppress]
        self.used: set[int] = set()  # id() of entries that suppressed something
        self.covered: set[int] = set()  # id() of entries whose files were linted
        self.suppressed = 0

    def selected(self, finding: Finding) -> bool:
        return finding.code in self.enabled

    def keep(self, finding: Finding) -> bool:
        """Whether a finding is reported (selected and not suppressed); records which entries it used."""
        if finding.code not in self.enabled:
            return False
        hidden = False
        for entry, files, codes in self._per_file:
            if finding.code in codes and files.excluded(finding.file):
                self.used.add(id(entry))
                hidden = True
        if hidden:
            self.suppressed += 1
            return False
        for entry, files, codes in self._suppress:
            if finding.code in codes and _covers(finding.pointer, entry.pointer) and files.excluded(finding.file):
                self.used.add(id(entry))
                hidden = True
        if hidden:
            self.suppressed += 1
        return not hidden

    def filter(self, findings: list[Finding]) -> list[Finding]:
        return [f for f in findings if self.keep(f)]

    def see_files(self, paths) -> None:
        """The files linted in this run: only entries that cover one of them are judged."""
        for path in paths:
            for entry, files, _ in self._per_file:
                if files.excluded(path):
                    self.covered.add(id(entry))
            for entry, files, _ in self._suppress:
                if files.excluded(path):
                    self.covered.add(id(entry))

    def unused(self) -> list[Finding]:
        """DS900 for every entry that covered a linted file, could have applied, and suppressed nothing."""
        if UNUSED_SUPPRESSION.code not in self.enabled or self.settings.path is None:
            return []
        where = self.settings.display_path
        findings = []
        for entry, _, codes in self._per_file:
            if id(entry) in self.used or id(entry) not in self.covered or not codes & self.enabled:
                continue
            rules = ", ".join(entry.selectors)
            message = (f"per-file-ignores \"{entry.pattern}\" = [{rules}] suppressed nothing in the files linted; "
                       "remove it")
            findings.append(_at(Finding(UNUSED_SUPPRESSION, message), where, entry.line, entry.column))
        for entry, _, codes in self._suppress:
            if id(entry) in self.used or id(entry) not in self.covered or not codes & self.enabled:
                continue
            rules = ", ".join(entry.rules)
            scope = f" at {entry.pointer}" if entry.pointer else ""
            message = (f"suppression of {rules}{scope} in \"{entry.files}\" suppressed nothing (reason: "
                       f"{entry.reason}); remove it")
            findings.append(_at(Finding(UNUSED_SUPPRESSION, message), where, entry.line, entry.column))
        return findings


def _at(finding: Finding, path: str, line: int, column: int) -> Finding:
    finding.file, finding.line, finding.column = path, line, column
    return finding


def apply(findings: list[Finding], linted, settings, enabled: frozenset | None = None) -> list[Finding]:
    """What `dsconfig lint` reports: the selected, unsuppressed findings, then DS900 for unused entries.

    `linted`: the paths linted in this run (entries covering none of them are not judged); `enabled`
    defaults to the configuration's own select/ignore.
    """
    if enabled is None:
        enabled = enabled_codes([(settings.select, settings.ignore)])
    suppressor = Suppressor(settings, enabled)
    suppressor.see_files(set(linted) | {f.file for f in findings})
    kept = suppressor.filter(findings)
    return kept + sorted(suppressor.unused(), key=lambda f: (f.line, f.column))
