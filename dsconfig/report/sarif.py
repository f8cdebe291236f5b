"""SARIF 2.1.0 (OASIS), for GitHub code scanning and other SARIF viewers. Hand-written dicts, json.dumps.

One run: `tool.driver.rules` lists the rules the results use (id, name, short and full description,
helpUri, default level); each result has ruleId/ruleIndex, level, message, a location with a
region (relative URIs against %SRCROOT%, the working directory), `relatedLocations` for the evidence
lines of a finding about a training script, and, when dsconfig can apply
the finding's fix, `fixes` with the replacement (`properties.applicability`: safe or unsafe).
tests/test_formats.py validates the output against the official SARIF 2.1.0 JSON schema.
"""

from __future__ import annotations

import json
import os
from urllib.parse import quote

from .. import __version__
from ..escape import json_text, os_bytes

SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
LEVELS = {"error": "error", "warning": "warning", "info": "note"}
SRCROOT = "%SRCROOT%"
INFORMATION_URI = "https://github.com/dsconfig/dsconfig"


def artifact(path: str) -> dict:
    """A relative URI against %SRCROOT% for a path below the working directory, else an absolute file URI."""
    absolute = os.path.abspath(path)
    rel = os.path.relpath(absolute)
    if rel.startswith(".." + os.sep) or rel == ".." or os.path.isabs(rel):
        return {"uri": "file://" + _uri_path(absolute)}
    return {"uri": _uri_path(rel), "uriBaseId": SRCROOT}


def _uri_path(path: str) -> str:
    """Percent-encoded bytes of the name as on disk (a name that is not UTF-8 keeps its bytes: %FF)."""
    return quote(os_bytes(path.replace(os.sep, "/")))


def _position(text: str | None, offset: int) -> tuple[int, int]:
    before = text[:offset]
    line = before.count("\n") + 1
    return line, offset - (before.rfind("\n") + 1) + 1


def region(finding, context) -> dict:
    out = {"startLine": finding.line, "startColumn": finding.column}
    extent = context.extents.get(id(finding))
    text = context.texts.get(finding.file)
    if extent is not None and text is not None:
        end_line, end_column = _position(text, extent[1])
        if (end_line, end_column) > (finding.line, finding.column):
            out["endLine"], out["endColumn"] = end_line, end_column
    return out


def _rule(rule) -> dict:
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": f"{rule.what} {rule.why}"},
        "helpUri": rule.url,
        "defaultConfiguration": {"level": LEVELS[rule.severity]},
        "properties": {"severity": rule.severity},
    }


def _fix(finding, context) -> list:
    info = context.fix(finding)
    text = context.texts.get(finding.file)
    if info is None or info.edit is None or text is None:
        return []
    start_line, start_column = _position(text, info.edit.start)
    end_line, end_column = _position(text, info.edit.end)
    return [{
        "description": {"text": info.description[:1].upper() + info.description[1:]},
        "artifactChanges": [{
            "artifactLocation": artifact(finding.file),
            "replacements": [{
                "deletedRegion": {"startLine": start_line, "startColumn": start_column,
                                  "endLine": end_line, "endColumn": end_column},
                "insertedContent": {"text": info.edit.text},
            }],
        }],
        "properties": {"applicability": "safe" if info.safe else "unsafe"},
    }]


def document(findings, context) -> dict:
    rules = sorted({f.rule for f in findings}, key=lambda rule: rule.code)
    index = {rule.code: i for i, rule in enumerate(rules)}
    results = []
    for f in findings:
        result = {
            "ruleId": f.code,
            "ruleIndex": index[f.code],
            "level": LEVELS[f.severity],
            "message": {"text": f.message},
            "locations": [{"physicalLocation": {"artifactLocation": artifact(f.file), "region": region(f, context)}}],
        }
        if f.related:
            result["relatedLocations"] = [
                {"id": i, "message": {"text": note},
                 "physicalLocation": {"artifactLocation": artifact(file),
                                      "region": {"startLine": line, "startColumn": column}}}
                for i, (file, line, column, note) in enumerate(f.related)]
        fixes = _fix(f, context)
        if fixes:
            result["fixes"] = fixes
        properties = {"pointer": f.pointer}
        if f.world_size is not None:
            properties["worldSize"] = f.world_size
        if f.fails_in is not None:
            properties["failsIn"] = f.fails_in
        result["properties"] = properties
        results.append(result)
    cwd = os.getcwd().replace(os.sep, "/").rstrip("/") + "/"
    run_properties = {}
    release = getattr(context, "release", None)
    if release is not None:
        run_properties = {"properties": {"deepspeedVersion": release.version, "deepspeedVersionReason": release.reason,
                                         "deepspeedVersionSource": release.source}}
    return {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "dsconfig", "version": __version__, "informationUri": INFORMATION_URI,
                                "rules": [_rule(rule) for rule in rules]}},
            "originalUriBaseIds": {SRCROOT: {"uri": "file://" + _uri_path(cwd if cwd.startswith("/") else "/" + cwd)}},
            "columnKind": "unicodeCodePoints",
            "results": results,
            **run_properties,
        }],
    }


def chunks(findings, context):
    yield json_text(json.dumps(document(findings, context), indent=2, ensure_ascii=False)) + "\n"
