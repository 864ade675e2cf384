"""What the `config` commands say, as an `Output` for `cli/emit.py` (pure)."""

from __future__ import annotations

import json

from ci_tools import names
from ci_tools.render.output import Output


def bump_output(key: str, image: str, edits: list, entry: str) -> Output:
    """`config bump-image`: each edited line and the changelog entry to append; github: a notice per
    edited line and both in the job summary; json: the edits and the entry (null when nothing changed)."""
    lines = [f"{e.file}:{e.line}: image {e.old} -> {e.new}" for e in edits]
    doc = {"edits": [{"file": e.file, "line": e.line, "old": e.old, "new": e.new} for e in edits],
           "changelog-entry": entry if edits else None}
    if not edits:
        return Output(text=f"{key} already uses {image}; nothing to do", json=doc)
    return Output(text="\n".join(lines) + f"\n\nappend to {names.CHANGELOG} (after one empty line):\n" + entry, json=doc,
                  annotations=[("notice", f"image {e.old} -> {e.new}", f"config bump-image {e.file}:{e.line}")
                               for e in edits],
                  summary=(f"### config bump-image: {len(edits)} line(s) changed\n\n"
                           + "".join(f"- `{line}`\n" for line in lines)
                           + f"\nappend to `{names.CHANGELOG}`:\n\n```yaml\n{entry}\n```\n"))


def acceptance_matrix_output(rows: list[dict], unserved: list[str]) -> Output:
    """`config acceptance-matrix`: one line per measurement; github: the rows as the `matrix` output
    (compact JSON) with their `count`, and the list in the job summary."""
    lines = [f"{r['id']}: {r['model']} {r['engine']} {r['engine-version']}, thinking {'on' if r['thinking'] else 'off'}, "
             f"mtp {r['mtp']} (now {'%g' % r['current'] if r['current'] is not None else 'not measured'})" for r in rows]
    note = f"not measured (no single-node recipe serves them): {', '.join(unserved)}" if unserved else ""
    head = f"SPEED-Bench ({rows[0]['dataset'] if rows else 'no rows'}): {len(rows)} measurement(s)"
    return Output(text="\n".join([head, *lines]), json=rows, stderr=[f"warning: {note}"] if note else [],
                  outputs={"matrix": json.dumps(rows, separators=(",", ":")), "count": str(len(rows))},
                  summary=(f"### SPEED-Bench acceptance-length matrix: {len(rows)} row(s)\n\n"
                           + "".join(f"- `{line}`\n" for line in lines) + (f"\n{note}\n" if note else "")))


def acceptance_update_output(report, fmt: str) -> Output:
    """`config acceptance-update`: what changed; github: changed/missing/pr-url as step outputs, the PR
    body in the job summary and a warning annotation per warning."""
    return Output(text="\n".join(report.lines),
                  json={"outputs": report.outputs, "warnings": report.warnings, "lines": report.lines,
                        "body": report.body},
                  stderr=[f"warning: {w}" for w in report.warnings] if fmt == "text" else [],  # else: in the doc / annotated
                  annotations=[("warning", w, "config acceptance-update") for w in report.warnings],
                  outputs=report.outputs, summary="### Acceptance-length update\n\n" + report.body)


def validate_output(report, fmt: str) -> Output:
    """`config validate`: text: the notes, what was checked, then the findings; json: one document with
    the findings, notes and counts; github: the notes and each finding as annotations (in that order)
    and every finding in the job summary (GitHub shows only 10 annotations of each kind)."""
    from ci_tools.render.findings import counted, render, summary_markdown

    if fmt == "github":
        errors = counted(report.errors)
        verdict = (f"{errors} error(s)" if errors else "passed") + f", {counted(report.warnings)} warning(s)"
        return Output(annotations=[("notice", note, "config validate") for note in report.notes],
                      findings=list(report.findings), findings_title="config validate",
                      summary=summary_markdown("config validate", verdict, report.findings),
                      exit_code=0 if report.ok else 1)
    lines = [render(report.findings, fmt, {"notes": report.notes, "counts": report.counts} if fmt == "json" else None)]
    if fmt == "text":
        c = report.counts
        lines[:0] = [f"note: {note}" for note in report.notes] + [
            f"checked {c['master_files']} master file(s) with {c['entries']} entries, "
            f"{c['runners_files']} runners file, {c['recipes']} recipe(s)"]
    text = "\n".join(line for line in lines if line)
    return Output(text=text or None, exit_code=0 if report.ok else 1)
