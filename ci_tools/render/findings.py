"""Findings rendered as text, JSON or GitHub workflow annotations."""

from __future__ import annotations

import json

from ci_tools.errors import Finding

FORMATS = ("text", "json", "github")


def _escape_property(value: str) -> str:
    # GitHub workflow-command property escaping.
    return (value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
            .replace(":", "%3A").replace(",", "%2C"))


def _escape_data(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def github_annotation(f: Finding) -> str:
    props = [f"file={_escape_property(f.file)}"]
    if f.line is not None:
        props.append(f"line={f.line}")
    if f.col is not None:
        props.append(f"col={f.col}")
    text = f.message + (f" (hint: {f.hint})" if f.hint else "")
    return f"::{'warning' if f.severity == 'warning' else 'error'} {','.join(props)}::{_escape_data(text)}"


def render(findings: list[Finding], fmt: str, extra: dict | None = None) -> str:
    errors = [f for f in findings if f.severity != "warning"]
    warnings = [f for f in findings if f.severity == "warning"]
    if fmt == "json":
        body = {"ok": not errors, "errors": [f.as_dict() for f in errors],
                "warnings": [f.as_dict() for f in warnings]}
        body.update(extra or {})
        return json.dumps(body, indent=2, ensure_ascii=False)
    if fmt == "github":
        return "\n".join(github_annotation(f) for f in findings)
    lines = [f.as_text() for f in findings]
    lines.append(f"{len(errors)} error(s), {len(warnings)} warning(s)")
    return "\n".join(lines)
