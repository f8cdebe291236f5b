"""Output formats, one module per format, each imported only when asked for.

  concise  `path:line:col: CODE message` per finding (`[*]` marks a safe fix), for people and grep
  full     the concise line, the source lines with `^~~~` under the value, `help:` (the fix) and notes
  json     a list of objects with exactly the keys of Finding.as_dict (documented in the README)
  github   GitHub Actions workflow commands (::error/::warning/::notice), escaped as @actions/core does
  sarif    SARIF 2.1.0: rules with help URIs, results with regions, fixes as replacements

`--statistics` (statistics.py) prints counts per rule instead. The summary line goes to stderr.
"""

from __future__ import annotations

import importlib

FORMATS = ("concise", "full", "json", "github", "sarif")
_MODULES = {"concise": "concise", "full": "full", "json": "json_", "github": "github", "sarif": "sarif"}
SEVERITY_RANK = {"info": 0, "warning": 1, "error": 2}


class Context:
    """What a format may need beyond the findings."""

    def __init__(self, fixes: dict | None = None, texts: dict | None = None, color: bool = False,
                 unsafe_fixes: bool = False, extents: dict | None = None):
        self.fixes = fixes or {}  # id(finding) -> dsconfig.fix.FixInfo
        self.texts = texts or {}  # path -> text (newline-normalised), for source frames and regions
        self.extents = extents or {}  # id(finding) -> (start, end) offsets of the value or key it is about
        self.color = color
        self.unsafe_fixes = unsafe_fixes  # whether --unsafe-fixes was given (the [*] marker then counts them)
        self.release = None  # dsconfig.deepspeed.pins.Choice: the DeepSpeed release replayed, when a config needed one

    def fix(self, finding):
        return self.fixes.get(id(finding))

    def fixable(self, finding) -> bool:
        """A fix `--fix` (with the --unsafe-fixes given) would apply."""
        info = self.fixes.get(id(finding))
        return info is not None and info.edit is not None and (info.safe or self.unsafe_fixes)


def chunks(name: str, findings, context: Context | None = None):
    """The output of format `name`, piece by piece (a finding or a few at a time), so that a report over
    100,000 findings is written as it is made rather than held whole; SARIF is one piece."""
    module = importlib.import_module(f"{__name__}.{_MODULES[name]}")
    return module.chunks(findings, context or Context())


def render(name: str, findings, context: Context | None = None) -> str:
    return "".join(chunks(name, findings, context))


def summary(findings, files: int, context: Context | None = None) -> str:
    """`7 errors, 2 warnings, 1 info in 1 file`, plus what --fix would do."""
    counts = {"error": 0, "warning": 0, "info": 0}
    for f in findings:
        counts[f.severity] += 1
    parts = [f"{n} {name}{'' if n == 1 else 's'}" for name, n in counts.items() if n]
    what = ", ".join(parts) if parts else "no problems"
    line = f"{what} in {files} file{'' if files == 1 else 's'}"
    if context is not None and context.release is not None:
        line += f" (DeepSpeed {context.release.version}: {context.release.reason})"
    if context is not None and context.fixes:
        infos = [context.fixes.get(id(f)) for f in findings]
        infos = [i for i in infos if i is not None and i.edit is not None]
        safe = sum(1 for i in infos if i.safe)
        unsafe = len(infos) - safe
        if context.unsafe_fixes and infos:
            line += f"; {len(infos)} fixable with --fix --unsafe-fixes"
        elif safe or unsafe:
            line += f"; {safe} fixable with --fix" if safe else "; none fixable with --fix"
            if unsafe:
                line += f" ({unsafe} more with --unsafe-fixes)"
    return line


def failing(findings, fail_on: str) -> bool:
    threshold = SEVERITY_RANK[fail_on]
    return any(SEVERITY_RANK[f.severity] >= threshold for f in findings)
