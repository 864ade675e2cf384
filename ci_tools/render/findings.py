"""Findings rendered as text, JSON or the job-summary table (annotations: `ci_tools.github.actions`)."""

from __future__ import annotations

import json

from ci_tools.errors import Finding
from ci_tools.render import markdown as md

FORMATS = ("text", "json", "github")




def counted(findings: list[Finding]) -> int:
    """How many findings `findings` stand for: one that counts the rest of its file (`omitted`) counts them."""
    return sum(f.omitted or 1 for f in findings)


def summary_markdown(title: str, verdict: str, findings: list[Finding]) -> str:
    """The job-summary section of a gate: its verdict and every finding (annotations stop at 10)."""
    return "\n".join([f"### {title}: {verdict}", "", *findings_table(findings)]) + "\n"


def findings_table(findings: list[Finding]) -> list[str]:
    """Every finding as the rows of one Markdown table (and an empty line), or nothing."""
    if not findings:
        return []
    rows, blocks = [], []
    for f in findings:
        hint, block = f.hint, None
        if "\n" in hint:          # a suggested file fragment (YAML): verbatim below the table, not in a cell
            hint, block = hint.split("\n", 1)
            hint = (hint + " " if hint else "") + "(below)"
            blocks += [f"`{md.cell(f.location())}`:", "", md.fenced(block, "yaml"), ""]
        rows.append(f"| `{md.cell(f.location())}` | {f.severity} | {md.cell(f.message)} | {md.cell(hint)} |")
    return ["| where | | what | how to fix |", "|---|---|---|---|", *rows, "", *blocks]


def render(findings: list[Finding], fmt: str, extra: dict | None = None) -> str:
    """`json` or `text` (the `github` format's annotations are `github.actions.finding_annotation`'s)."""
    errors = [f for f in findings if f.severity != "warning"]
    warnings = [f for f in findings if f.severity == "warning"]
    if fmt == "json":
        body = {"ok": not errors, "errors": [f.as_dict() for f in errors],
                "warnings": [f.as_dict() for f in warnings]}
        body.update(extra or {})
        return json.dumps(body, indent=2, ensure_ascii=False)
    lines = [f.as_text() for f in findings]
    lines.append(f"{counted(errors)} error(s), {counted(warnings)} warning(s)")
    return "\n".join(lines)
