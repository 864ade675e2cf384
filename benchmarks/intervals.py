#!/usr/bin/env python3
"""Cost of a result's bootstrap intervals (`headline_ci`), against resampling the records outright.

    python benchmarks/intervals.py [--requests 100000] [--runs 5]

Times `intervals.headline_intervals` on --requests lognormal ITLs and TTFTs (best of --runs), and the
baseline it replaces in this same process: every resample drawn whole from the thinned records
(MAX_SAMPLES of them) with numpy and its percentiles taken, as a textbook bootstrap does. Both give
intervals of the same bootstrap distribution; the figure is the cost of one result's.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def best_of(runs: int, fn) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(runs):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def resampled(values: list[float], ps: list[float]) -> dict:
    """The textbook bootstrap of the same percentiles: each resample drawn whole, then its percentiles."""
    import numpy as np

    from ci_tools.results import intervals

    x = np.asarray(values, dtype=np.float64)
    if len(x) > intervals.MAX_SAMPLES:
        x = x[(np.arange(intervals.MAX_SAMPLES) * (len(x) / intervals.MAX_SAMPLES)).astype(np.int64)]
    rng = np.random.default_rng(intervals.SEED)
    draws = np.percentile(rng.choice(x, size=(intervals.RESAMPLES, len(x))), ps, axis=1)
    alpha = (1 - intervals.CONFIDENCE) / 2 * 100
    return {p: tuple(np.percentile(d, [alpha, 100 - alpha])) for p, d in zip(ps, draws)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    from ci_tools.results import intervals

    rng = random.Random(1)
    itl = [rng.lognormvariate(3, 0.3) for _ in range(args.requests)]
    ttft = [rng.lognormvariate(6, 0.5) for _ in range(args.requests)]
    ours, ci = best_of(args.runs, lambda: intervals.headline_intervals(itl, ttft))
    base, _ = best_of(args.runs, lambda: (resampled(itl, [90.0, 50.0]), resampled(ttft, [90.0])))
    print(f"headline_intervals: {ours * 1000:8.1f} ms per result ({args.requests} requests): {ci}")
    print(f"baseline (each resample drawn whole): {base * 1000:8.1f} ms per result")
    print(f"ratio: {base / ours:.1f}x faster than resampling outright")
    return 0


if __name__ == "__main__":
    sys.exit(main())
