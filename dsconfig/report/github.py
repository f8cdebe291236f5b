"""GitHub Actions workflow commands: one annotation per finding, shown on the file in the pull request.

    ::error file=ds_config.json,line=3,col=37,title=dsconfig DS202::at world size 4. ...

error -> ::error, warning -> ::warning, info -> ::notice. Escaping is @actions/core's
(packages/core/src/command.ts, in dsconfig.escape): in the message `%`, `\\r`, `\\n` become `%25`, `%0D`,
`%0A`; property values additionally escape `:` and `,` as `%3A` and `%2C`, so the file is the real one.
"""

from __future__ import annotations

from ..escape import workflow_data, workflow_property

COMMANDS = {"error": "error", "warning": "warning", "info": "notice"}


def annotation(finding) -> str:
    properties = {
        "file": finding.file,
        "line": str(finding.line),
        "col": str(finding.column),
        "title": f"dsconfig {finding.code}",
    }
    joined = ",".join(f"{key}={workflow_property(value)}" for key, value in properties.items())
    return f"::{COMMANDS[finding.severity]} {joined}::{workflow_data(finding.message)}"


def chunks(findings, context):
    for finding in findings:
        yield annotation(finding) + "\n"
