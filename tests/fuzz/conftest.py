"""Prints the fuzz tier's figures at the end of a session that ran it (with pytest-xdist, each worker
hands its figures to the controller, which adds them up)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from .harness import FIGURES, PROFILE, TALLIES, report


def pytest_sessionfinish(session):
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None and FIGURES:   # an xdist worker
        workeroutput["fuzz_figures"] = json.dumps({k: {**vars(f), "exits": dict(f.exits)} for k, f in FIGURES.items()})
        workeroutput["fuzz_tallies"] = json.dumps({k: dict(v) for k, v in TALLIES.items()})


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    for name, got in json.loads(getattr(node, "workeroutput", {}).get("fuzz_figures", "{}")).items():
        fig = FIGURES[name]
        fig.cases, fig.tracebacks, fig.hangs = fig.cases + got["cases"], fig.tracebacks + got["tracebacks"], \
            fig.hangs + got["hangs"]
        fig.max_s, fig.max_bytes = max(fig.max_s, got["max_s"]), max(fig.max_bytes, got["max_bytes"])
        for code, n in got["exits"].items():
            fig.exits[int(code) if code.lstrip("-").isdigit() else None] += n
    for target, counts in json.loads(getattr(node, "workeroutput", {}).get("fuzz_tallies", "{}")).items():
        for label, n in counts.items():
            TALLIES[target][label] = TALLIES[target].get(label, 0) + n


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
