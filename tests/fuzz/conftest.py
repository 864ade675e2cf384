"""Prints the fuzz tier's figures at the end of a session that ran it."""

from __future__ import annotations

import json
import os
from pathlib import Path

from .harness import FIGURES, PROFILE, TALLIES, report


def pytest_terminal_summary(terminalreporter):
    if not FIGURES:
        return
    terminalreporter.write_line(report())
    target = os.environ.get("CI_TOOLS_FUZZ_REPORT")
    if target:
        Path(target).write_text(json.dumps({
            "profile": PROFILE,
            "targets": {k: {"cases": f.cases, "tracebacks": f.tracebacks, "hangs": f.hangs,
                            "max_seconds": round(f.max_s, 4), "max_mib": round(f.max_bytes / 2**20, 2),
                            "exits": dict(f.exits)} for k, f in sorted(FIGURES.items())},
            "tallies": {k: dict(v) for k, v in sorted(TALLIES.items())}}, indent=2) + "\n")
