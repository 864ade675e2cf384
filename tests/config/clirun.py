"""Run the real `ci-tools` entry point (ci_tools.cli.main) in-process and capture what it prints."""

from __future__ import annotations

import os
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from io import StringIO
from pathlib import Path

from ci_tools.cli import main


@dataclass
class Result:
    code: int
    out: str
    err: str


def run(args: list[str], cwd: Path | None = None) -> Result:
    out, err = StringIO(), StringIO()
    old = os.getcwd()
    try:
        if cwd is not None:
            os.chdir(cwd)
        with redirect_stdout(out), redirect_stderr(err):
            try:
                main(args)
                code = 0
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        os.chdir(old)
    return Result(code, out.getvalue(), err.getvalue())
