"""Writing results where GitHub Actions reads them: step outputs, the job summary, annotations."""

from __future__ import annotations

import json
import os
import uuid

import click

from ci_tools.errors import UsageError


def write_outputs(outputs: dict[str, str], fmt: str, messages: list[str] | None = None) -> None:
    """`text`: messages for people; `json`: one JSON object on stdout; `github`: also append the
    outputs to $GITHUB_OUTPUT (multi-line values with a random heredoc delimiter)."""
    if fmt == "json" or fmt == "github":
        click.echo(json.dumps({"outputs": outputs, "messages": messages or []}, indent=2, ensure_ascii=False))
    else:
        for m in messages or []:
            click.echo(m)
        for k, v in outputs.items():
            click.echo(f"{k}: {v}")
    if fmt == "github":
        append_outputs(outputs)


def append_outputs(outputs: dict[str, str]) -> None:
    """Append step outputs to $GITHUB_OUTPUT; multi-line values get a random heredoc delimiter so a
    value can never end the block early. The one writer for commands that take `--format github`."""
    path = os.environ.get("GITHUB_OUTPUT")
    if not path:
        raise UsageError("--format github needs $GITHUB_OUTPUT (set by GitHub Actions)")
    with open(path, "a", encoding="utf-8") as fh:
        for k, v in outputs.items():
            if "\n" in v or "\r" in v:
                delim = f"ghadelim_{uuid.uuid4().hex}"
                fh.write(f"{k}<<{delim}\n{v}\n{delim}\n")
            else:
                fh.write(f"{k}={v}\n")


def append_summary(markdown: str) -> None:
    """Append Markdown to the job's step summary ($GITHUB_STEP_SUMMARY, 1 MiB per step)."""
    path = os.environ.get("GITHUB_STEP_SUMMARY")
    if not path:
        raise UsageError("--format github needs $GITHUB_STEP_SUMMARY (set by GitHub Actions)")
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(markdown if markdown.endswith("\n") else markdown + "\n")


def annotate(level: str, message: str, *, title: str | None = None) -> None:
    """One workflow annotation (`error`, `warning` or `notice`); `title` heads it on the PR."""
    props = " title=" + title.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A") \
        .replace(":", "%3A").replace(",", "%2C") if title else ""
    click.echo(f"::{level}{props}::" + message.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A"))


def append_step_summary(markdown: str) -> bool:
    """Append Markdown to the job summary ($GITHUB_STEP_SUMMARY); False outside Actions (no file named).
    Gates write every finding there: GitHub shows at most 10 annotations of each kind per step."""
    path = os.environ.get("GITHUB_STEP_SUMMARY")
    if not path:
        return False
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(markdown if markdown.endswith("\n") else markdown + "\n")
    return True
