"""The ONLY writer of what GitHub Actions reads from a step: step outputs ($GITHUB_OUTPUT), the job
summary ($GITHUB_STEP_SUMMARY) and workflow commands (annotations: `::error`, `::warning`,
`::notice`). One multi-line rule, one size check, one escaper; every command goes through here
(`tests/test_layers.py` checks that no other module spells these).
"""

from __future__ import annotations

import json
import os
import uuid

import click

from ci_tools.errors import Finding, InputError, UsageError

# GitHub keeps at most 1 MB of a job's outputs, counted as UTF-16; more is cut without a word.
MAX_OUTPUTS_BYTES = 1_000_000
KINDS = ("error", "warning", "notice")


# ---- step outputs ---------------------------------------------------------------------------------

def output_size(text: str) -> int:
    """The size GitHub counts outputs at: their UTF-16 encoding."""
    return len(text.encode("utf-16-le"))


def outputs_text(outputs: dict[str, str], *, what: str = "the step's outputs", hint: str = "") -> str:
    """The $GITHUB_OUTPUT lines of `outputs`: `name=value`, or a heredoc with a random delimiter when a
    value spans lines (so a value can never end the block early). InputError when GitHub would cut
    them (`what` and `hint` word the message: which outputs, and what to do)."""
    lines = []
    for name, value in outputs.items():
        if not name or any(c in name for c in "=\n\r<"):
            raise ValueError(f"not a step output name: {name!r}")
        if "\n" in value or "\r" in value:
            delim = f"ghadelim_{uuid.uuid4().hex}"
            lines.append(f"{name}<<{delim}\n{value}\n{delim}\n")
        else:
            lines.append(f"{name}={value}\n")
    text = "".join(lines)
    size = output_size(text)
    if size > MAX_OUTPUTS_BYTES:
        raise InputError(f"{what} are {size:,} bytes as GitHub counts them (UTF-16); GitHub keeps at most "
                         f"{MAX_OUTPUTS_BYTES:,} per job." + (f" {hint}" if hint else ""))
    return text


def append_outputs(outputs: dict[str, str], *, what: str = "the step's outputs", hint: str = "") -> None:
    """Append step outputs to $GITHUB_OUTPUT (see `outputs_text`). The one writer for commands that
    take `--format github`; UsageError outside Actions."""
    text = outputs_text(outputs, what=what, hint=hint)
    path = os.environ.get("GITHUB_OUTPUT")
    if not path:
        raise UsageError("--format github needs $GITHUB_OUTPUT (set by GitHub Actions)")
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(text)


def write_outputs(outputs: dict[str, str], fmt: str, messages: list[str] | None = None,
                  data: dict | None = None) -> None:
    """`text`: messages for people; `json`: one JSON object on stdout (`outputs`, `messages` and the
    keys of `data`); `github`: also append the outputs to $GITHUB_OUTPUT."""
    if fmt == "json" or fmt == "github":
        doc = {"outputs": outputs, "messages": messages or [], **(data or {})}
        click.echo(json.dumps(doc, indent=2, ensure_ascii=False))
    else:
        for m in messages or []:
            click.echo(m)
        for k, v in outputs.items():
            click.echo(f"{k}: {v}")
    if fmt == "github":
        append_outputs(outputs)


# ---- job summary ----------------------------------------------------------------------------------

def append_summary(markdown: str, *, required: bool = True) -> bool:
    """Append Markdown to the job's step summary ($GITHUB_STEP_SUMMARY, 1 MiB per step). Outside
    Actions (no file named): UsageError, or False with `required=False` (gates write every finding
    there when they can: GitHub shows at most 10 annotations of each kind per step)."""
    path = os.environ.get("GITHUB_STEP_SUMMARY")
    if not path:
        if required:
            raise UsageError("--format github needs $GITHUB_STEP_SUMMARY (set by GitHub Actions)")
        return False
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(markdown if markdown.endswith("\n") else markdown + "\n")
    return True


def append_step_summary(markdown: str) -> bool:
    """`append_summary(markdown, required=False)`: False outside Actions."""
    return append_summary(markdown, required=False)


# ---- workflow commands (annotations) ----------------------------------------------------------------

def escape_data(value: str) -> str:
    """A workflow command's message: `%`, CR and LF escaped (GitHub's rule)."""
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(value: str) -> str:
    """A workflow command's property value (`file=`, `title=`): also `:` and `,`."""
    return escape_data(value).replace(":", "%3A").replace(",", "%2C")


def annotation(kind: str, message: str, *, file: str | None = None, line: int | None = None,
               col: int | None = None, title: str | None = None) -> str:
    """One workflow command line: `::<kind> file=..,line=..,col=..,title=..::<message>`."""
    if kind not in KINDS:
        raise ValueError(f"not an annotation kind: {kind!r}")
    props = []
    if file is not None:
        props.append(f"file={escape_property(file)}")
    if line is not None:
        props.append(f"line={int(line)}")
    if col is not None:
        props.append(f"col={int(col)}")
    if title:
        props.append(f"title={escape_property(title)}")
    return f"::{kind}{' ' + ','.join(props) if props else ''}::{escape_data(message)}"


def finding_annotation(f: Finding, title: str | None = None) -> str:
    """A finding as an annotation on its file and line; `title` (the command, e.g. "changelog lint")
    heads it on the PR."""
    text = f.message + (f" (hint: {f.hint})" if f.hint else "")
    return annotation("warning" if f.severity == "warning" else "error", text, file=f.file, line=f.line,
                      col=f.col, title=title)


def annotate(kind: str, message: str, *, title: str | None = None) -> None:
    """Print one annotation (stdout is where the runner reads workflow commands); `title` heads it on
    the PR."""
    click.echo(annotation(kind, message, title=title))
