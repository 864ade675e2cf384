"""What one command says, for every `--format`, as plain data (pure): `cli/emit.py` writes it.

A command's body is options -> one flow -> one render function that returns an `Output`; the
emitter does the mechanics every command shares (stdout or one JSON document, stderr lines, and
for `--format github` the annotations, the job summary and the step outputs, then the exit code),
so no command writes them in its own order.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

NO_DOCUMENT = object()   # `json` when --format json prints the same as text


@dataclass
class Output:
    text: str | None = None                 # stdout for text and github (a newline is added); None: nothing
    json: Any = NO_DOCUMENT                 # the one document --format json prints instead of `text`
    stderr: list[str] = field(default_factory=list)       # every format: notes and errors for people
    annotations: list[tuple[str, str, str]] = field(default_factory=list)   # github: (kind, message, title)
    findings: list[Any] = field(default_factory=list)   # github: each `Finding` annotated on its file:line,
    findings_title: str = ""                            # after `annotations`, headed by this title
    summary: str = ""                       # github: appended to $GITHUB_STEP_SUMMARY where Actions has one
    outputs: dict[str, str] = field(default_factory=dict)   # github: appended to $GITHUB_OUTPUT
    exit_code: int = 0
