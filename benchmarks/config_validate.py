#!/usr/bin/env python3
"""Whole-process cost of `ci-tools config validate` on the InferenceX corpus (208 entries).

Runs the command and a baseline (`ci-tools --version`: interpreter + CLI start-up) alternately in
child processes, N times each, and prints the median wall time, the peak RSS and the ratio of the
median to the baseline's, so numbers from machines of different speed can be compared.

    python3 benchmarks/config_validate.py [--runs 7] [--shared ../shared]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def measure(argv: list[str], cwd: Path) -> tuple[float, int]:
    """Wall seconds and peak RSS (KiB) of one child process."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_maxrss


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--shared", type=Path, default=Path(os.environ.get("CI_TOOLS_SHARED", ROOT.parent / "shared")))
    args = ap.parse_args()
    corpus = args.shared / "corpus" / "inferencex"
    if not (corpus / "configs" / "nvidia-master.yaml").is_file():
        print(f"corpus not found under {corpus}", file=sys.stderr)
        return 2
    cmd = [sys.executable, "-m", "ci_tools", "config", "validate", "--master", "configs/nvidia-master.yaml",
           "--master", "configs/amd-master.yaml", "--runners", "configs/runners.yaml", "--format", "json"]
    base = [sys.executable, "-m", "ci_tools", "--version"]
    runs: dict[str, list[tuple[float, int]]] = {"validate": [], "baseline": []}
    measure(cmd, corpus)  # warm the file cache and .pyc files
    for _ in range(args.runs):
        runs["validate"].append(measure(cmd, corpus))
        runs["baseline"].append(measure(base, corpus))
    med = {k: statistics.median(w for w, _ in v) for k, v in runs.items()}
    rss = {k: max(r for _, r in v) for k, v in runs.items()}
    print(f"config validate on the corpus (208 entries): median {med['validate']:.3f} s, "
          f"peak RSS {rss['validate'] / 1024:.1f} MiB")
    print(f"baseline (ci-tools --version):                median {med['baseline']:.3f} s, "
          f"peak RSS {rss['baseline'] / 1024:.1f} MiB")
    print(f"ratio validate / baseline: {med['validate'] / med['baseline']:.1f}x over {args.runs} runs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
