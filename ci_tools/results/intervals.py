"""Bootstrap intervals of a run's headline latency metrics, from its per-request records (pure).

`results process` stores them in `result.json` as `headline_ci` (95 %, [low, high]) so that a
comparison with main knows how precisely each side measured its percentiles. Requests are resampled
with replacement; runs above `MAX_SAMPLES` requests are thinned evenly first: one run's requests are
not independent draws (they share a server's state), so the interval of a very large run would claim
a precision its run-to-run noise does not have. Throughput is a run total over
the run's duration, not a per-request statistic: its uncertainty is the run-to-run noise
`results compare` takes from main's history, so it gets no interval here.

The generator is seeded and the method is one: the same records give the same intervals on every
machine with the numpy the installs pin (numpy keeps a seeded generator's stream within a release).
The ITL percentiles share their resamples. Each resample draws only the order statistics its
percentiles need (`stats.bootstrap_percentiles`), a vector of draws per order statistic, so a result
costs a sort and a few thousand draws (`benchmarks/intervals.py`).
"""

from __future__ import annotations

from typing import Sequence

from ci_tools.results import stats

SEED = 20261201
RESAMPLES = 1000
MAX_SAMPLES = 5000
CONFIDENCE = 0.95


def percentile_intervals(values: Sequence[float], ps: Sequence[float]) -> dict[float, tuple[float, float]]:
    """95 % bootstrap intervals of the ps-th percentiles of `values` ({} below two values)."""
    return stats.bootstrap_percentiles(values, ps, resamples=RESAMPLES, confidence=CONFIDENCE, seed=SEED,
                                       max_samples=MAX_SAMPLES)


def percentile_interval(values: Sequence[float], p: float) -> tuple[float, float] | None:
    """95 % bootstrap interval of the p-th percentile of `values` (None below two values)."""
    return percentile_intervals(values, [p]).get(p)


def headline_intervals(itl_ms: Sequence[float], ttft_ms: Sequence[float]) -> dict:
    """`headline_ci` of a result: interactivity (1 / ITL percentile) and TTFT, in headline units."""
    out: dict = {}
    itl = percentile_intervals(itl_ms, [90.0, 50.0])
    for key, p in (("intvty_p90", 90.0), ("intvty_p50", 50.0)):
        ci = itl.get(p)
        if ci is not None and ci[0] > 0:
            # interactivity falls as ITL rises: the interval's ends swap
            out[key] = [1000.0 / ci[1], 1000.0 / ci[0]]
    ci = percentile_interval(ttft_ms, 90.0)
    if ci is not None:
        out["ttft_p90_s"] = [ci[0] / 1000.0, ci[1] / 1000.0]
    return out
