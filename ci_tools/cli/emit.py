"""Writes a command's `Output` (ci_tools/render/output.py) for its --format, then exits with its code."""

from __future__ import annotations

import json
import sys

import click

from ci_tools.render.output import NO_DOCUMENT, Output


def emit(out: Output, fmt: str) -> None:
    if fmt == "json" and out.json is not NO_DOCUMENT:
        click.echo(json.dumps(out.json, indent=2))
    elif out.text is not None:
        click.echo(out.text)
    from ci_tools.cli import echo_err

    for line in out.stderr:
        echo_err(line)
    if fmt == "github":
        from ci_tools.github.actions import annotate, append_outputs, append_step_summary, finding_annotation

        if out.outputs:
            append_outputs(out.outputs)
        for kind, message, title in out.annotations:
            annotate(kind, message, title=title)
        for finding in out.findings:
            click.echo(finding_annotation(finding, out.findings_title or None))
        if out.summary:
            append_step_summary(out.summary)
    if out.exit_code:
        sys.exit(out.exit_code)
