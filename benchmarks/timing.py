"""One timed child process, for the benchmark scripts beside this file (each run as `python3 benchmarks/X.py`,
so this folder is first on sys.path)."""

from __future__ import annotations

import resource
import subprocess
import time
from pathlib import Path


def run_timed(argv: list[str], cwd: Path | None = None, env: dict[str, str] | None = None,
              text: bool = False) -> tuple[float, float, subprocess.CompletedProcess]:
    """(wall seconds, CPU seconds of the child, the finished process). CPU time is far less sensitive than
    wall time to other work on a shared machine, so the scripts report it beside wall time."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=text)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime), proc
