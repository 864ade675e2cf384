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


def github_annotation(f: Finding, title: str | None = None) -> str:
    """A workflow command; `title` (e.g. the command, "changelog lint") heads the annotation on the PR."""
    props = [f"file={_escape_property(f.file)}"]
    if f.line is not None:
        props.append(f"line={f.line}")
    if f.col is not None:
        props.append(f"col={f.col}")
    if title:
        props.append(f"title={_escape_property(title)}")
    text = f.message + (f" (hint: {f.hint})" if f.hint else "")
    return f"::{'warning' if f.severity == 'warning' else 'error'} {','.join(props)}::{_escape_data(text)}"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", "<br>")


def summary_markdown(title: str, verdict: str, findings: list[Finding]) -> str:
    """The job-summary section of a gate: its verdict and every finding (annotations stop at 10)."""
    lines = [f"### {title}: {verdict}", ""]
    if findings:
        lines += ["| where | | what | how to fix |", "|---|---|---|---|"]
        lines += [f"| `{_cell(f.location())}` | {f.severity} | {_cell(f.message)} | {_cell(f.hint)} |" for f in findings]
        lines.append("")
    return "\n".join(lines) + "\n"


def render(findings: list[Finding], fmt: str, extra: dict | None = None, title: str | None = None) -> str:
    errors = [f for f in findings if f.severity != "warning"]
    warnings = [f for f in findings if f.severity == "warning"]
    if fmt == "json":
        body = {"ok": not errors, "errors": [f.as_dict() for f in errors],
                "warnings": [f.as_dict() for f in warnings]}
        body.update(extra or {})
        return json.dumps(body, indent=2, ensure_ascii=False)
    if fmt == "github":
        return "\n".join(github_annotation(f, title) for f in findings)
    lines = [f.as_text() for f in findings]
    lines.append(f"{len(errors)} error(s), {len(warnings)} warning(s)")
    return "\n".join(lines)
