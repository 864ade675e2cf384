"""Findings and the two exceptions every command turns into a clean exit code.

A `Finding` is a problem located in a file (file:line:col), with a hint saying how to fix it.
`InputError` means the user's input is wrong (exit 1 for findings, or 2 for usage); the CLI prints it
without a traceback. Nothing else should reach the user as an exception.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

# The most findings one file shows; past it one finding counts the rest. A 10 MB master of unknown
# fields made 700,008 findings (190 MB of JSON, 49 s of hints nobody reads): the first screen of a
# file's errors says what to fix, the next run shows the next ones.
MAX_FINDINGS_PER_FILE = 50


@dataclass(frozen=True)
class Failure:
    """A rule a result or an eval row broke, and why (`results.validity`, `evals.score`): no place in a
    file, unlike a `Finding`; the row is judged invalid, the command goes on."""

    rule: str
    message: str

    def as_dict(self) -> dict:
        return {"rule": self.rule, "message": self.message}


@dataclass(frozen=True, order=True)
class Finding:
    file: str
    line: int | None
    col: int | None
    message: str
    hint: str = ""
    severity: str = field(default="error", compare=False)  # "error" | "warning"
    # > 0: this finding stands for that many findings of its file that were counted, not shown
    omitted: int = field(default=0, compare=False)

    def location(self) -> str:
        loc = self.file or "<input>"
        if self.line is not None:
            loc += f":{self.line}"
            if self.col is not None:
                loc += f":{self.col}"
        return loc

    def as_text(self) -> str:
        text = f"{self.location()}: {self.severity}: {self.message}"
        if self.hint:
            text += f"\n  hint: {self.hint}"
        return text

    def as_dict(self) -> dict:
        out = {"file": self.file, "line": self.line, "col": self.col, "message": self.message, "hint": self.hint}
        if self.omitted:
            out["omitted"] = self.omitted
        return out


def more_findings(file: str, line: int | None, col: int | None, count: int, severity: str = "error",
                  limit: int = MAX_FINDINGS_PER_FILE) -> Finding:
    """The finding that stands for `count` findings of `file` not shown, from `line` on."""
    return Finding(file, line, col, f"… and {count} more finding{'s' if count != 1 else ''} in this file",
                   f"only the first {limit} of a file are shown: fix these and run again", severity, omitted=count)


def cap_per_file(findings: Iterable[Finding], limit: int = MAX_FINDINGS_PER_FILE) -> list[Finding]:
    """The first `limit` findings of each file (in the order given), then one `more_findings` that
    counts the rest, including what producers already counted without building (`omitted`); an error
    among the rest makes it an error, so the verdict is the same as with every finding shown."""
    by_file: dict[str, list[Finding]] = {}
    for f in findings:
        by_file.setdefault(f.file, []).append(f)
    out: list[Finding] = []
    for file, found in by_file.items():
        first: Finding | None = None
        count, error = 0, False
        shown = 0
        for f in found:
            if not f.omitted and shown < limit:
                out.append(f)
                shown += 1
                continue
            first = first or f
            count += f.omitted or 1
            error = error or f.severity != "warning"
        if first is not None:
            out.append(more_findings(file, first.line, first.col, count, "error" if error else "warning", limit))
    return out


class InputError(Exception):
    """Bad input the user must fix. `exit_code` 1 = rejected input, 2 = usage error."""

    def __init__(self, message: str, *, exit_code: int = 1, findings: list[Finding] | None = None):
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code
        self.findings = findings or []


class UsageError(InputError):
    def __init__(self, message: str):
        super().__init__(message, exit_code=2)
