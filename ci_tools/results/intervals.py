"""Bootstrap intervals of a run's headline latency metrics, from its per-request records (pure).

`results process` stores them in `result.json` as `headline_ci` (95 %, [low, high]) so that a
comparison with main knows how precisely each side measured its percentiles. Requests are resampled
with replacement; runs above `MAX_SAMPLES` requests are thinned evenly first (their intervals are
already narrow), so the cost is bounded whatever the run's size. Throughput is a run total over
the run's duration, not a per-request statistic: its uncertainty is the run-to-run noise
`results compare` takes from main's history, so it gets no interval here.

The generator is seeded: the same records always give the same intervals. numpy, when installed,
draws the resamples in one array (the same method, another generator); without it the interval is
computed in Python with fewer resamples.
"""

from __future__ import annotations

from typing import Sequence

from ci_tools.results import stats

SEED = 20261201
RESAMPLES = 400
RESAMPLES_PURE = 150
MAX_SAMPLES = 5000
CONFIDENCE = 0.95


def _thin(values: Sequence[float]) -> list[float]:
    n = len(values)
    if n <= MAX_SAMPLES:
        return list(values)
    step = n / MAX_SAMPLES
    return [values[int(i * step)] for i in range(MAX_SAMPLES)]


def percentile_interval(values: Sequence[float], p: float) -> tuple[float, float] | None:
    """95 % bootstrap interval of the p-th percentile of `values` (None below two values)."""
    data = _thin(values)
    if len(data) < 2:
        return None
    try:
        import numpy as np
    except ImportError:
        return stats.bootstrap_interval(data, stats.percentile_of(p), resamples=RESAMPLES_PURE,
                                        confidence=CONFIDENCE, seed=SEED, max_samples=MAX_SAMPLES)
    x = np.asarray(data, dtype=float)
    rng = np.random.default_rng(SEED)
    draws = np.percentile(x[rng.integers(0, len(x), size=(RESAMPLES, len(x)))], p, axis=1)
    alpha = (1.0 - CONFIDENCE) / 2.0
    lo, hi = np.quantile(draws, [alpha, 1.0 - alpha])
    return float(lo), float(hi)


def headline_intervals(itl_ms: Sequence[float], ttft_ms: Sequence[float]) -> dict:
    """`headline_ci` of a result: interactivity (1 / ITL percentile) and TTFT, in headline units."""
    out: dict = {}
    for key, p in (("intvty_p90", 90.0), ("intvty_p50", 50.0)):
        ci = percentile_interval(itl_ms, p)
        if ci is not None and ci[0] > 0:
            # interactivity falls as ITL rises: the interval's ends swap
            out[key] = [1000.0 / ci[1], 1000.0 / ci[0]]
    ci = percentile_interval(ttft_ms, 90.0)
    if ci is not None:
        out["ttft_p90_s"] = [ci[0] / 1000.0, ci[1] / 1000.0]
    return out
