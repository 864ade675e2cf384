#!/usr/bin/env python3
"""Cost of a result's bootstrap intervals (`headline_ci`), with and without numpy installed.

    python benchmarks/intervals.py [--requests 100000] [--runs 5]

Times `intervals.headline_intervals` on --requests lognormal ITLs and TTFTs (best of --runs) in a
child process each way (numpy importable / numpy hidden) and checks both gave the same intervals.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, random, sys, time
if sys.argv[2] == "hidden":
    sys.modules["numpy"] = None
from ci_tools.results import intervals
n, runs = int(sys.argv[1]), int(sys.argv[3])
rng = random.Random(1)
itl = [rng.lognormvariate(3, 0.3) for _ in range(n)]
ttft = [rng.lognormvariate(6, 0.5) for _ in range(n)]
best, ci = float("inf"), None
for _ in range(runs):
    t = time.perf_counter()
    ci = intervals.headline_intervals(itl, ttft)
    best = min(best, time.perf_counter() - t)
print(json.dumps({"seconds": best, "ci": ci}))
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    got = {}
    for numpy in ("importable", "hidden"):
        out = subprocess.run([sys.executable, "-c", CHILD, str(args.requests), numpy, str(args.runs)],
                             cwd=REPO, check=True, capture_output=True, text=True).stdout
        got[numpy] = json.loads(out)
        print(f"numpy {numpy:10}  {got[numpy]['seconds'] * 1000:8.1f} ms per result "
              f"({args.requests} requests)")
    same = got["importable"]["ci"] == got["hidden"]["ci"]
    print("intervals identical with and without numpy:", same)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
