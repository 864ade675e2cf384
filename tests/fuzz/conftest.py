"""Prints the fuzz tier's figures at the end of a session that ran it (with pytest-xdist, each worker
hands its figures to the controller, which adds them up)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from .harness import FIGURES, PROFILE, report


def pytest_sessionfinish(session):
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None and FIGURES:   # an xdist worker
        workeroutput["fuzz_figures"] = json.dumps({k: {**vars(f), "exits": dict(f.exits)} for k, f in FIGURES.items()})


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    for name, got in json.loads(getattr(node, "workeroutput", {}).get("fuzz_figures", "{}")).items():
        fig = FIGURES[name]
        fig.cases, fig.tracebacks, fig.hangs = fig.cases + got["cases"], fig.tracebacks + got["tracebacks"], \
            fig.hangs + got["hangs"]
        fig.max_s, fig.max_bytes = max(fig.max_s, got["max_s"]), max(fig.max_bytes, got["max_bytes"])
        for code, n in got["exits"].items():
            fig.exits[int(code) if code.lstrip("-").isdigit() else None] += n


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
                            "exits": dict(f.exits)} for k, f in sorted(FIGURES.items())}}, indent=2) + "\n")
