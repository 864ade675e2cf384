"""Findings and the two exceptions every command turns into a clean exit code.

A `Finding` is a problem located in a file (file:line:col), with a hint saying how to fix it.
`InputError` means the user's input is wrong (exit 1 for findings, or 2 for usage); the CLI prints it
without a traceback. Nothing else should reach the user as an exception.
"""

from __future__ import annotations

from dataclasses import dataclass, field


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
        return {"file": self.file, "line": self.line, "col": self.col,
                "message": self.message, "hint": self.hint}


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
