"""Statistics for comparing a PR's benchmark points with main's (pure).

Serving benchmarks are noisy in two ways: a run's headline metric is an estimate over its requests
(a P90 over a few thousand requests moves when other requests are drawn), and the same point
measured twice on the same hardware differs from run to run (thermal state, placement, a noisy
neighbour). The comparison therefore combines, on a relative scale:

- the spread of the point's own history on main (its last N valid results), the direct measure of
  run-to-run noise where there is one;
- a bootstrap interval of each side's metric over its per-request records, where the result
  carries one (`results process` computes it);
- a floor taken from the policy file when neither is known (one result on each side), so a single
  pair of runs is never read as noise-free.

Every function here is deterministic: bootstrap resampling uses its own seeded generator (numpy's,
at the version the installs pin).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Sequence

import numpy as np

_SQRT2 = math.sqrt(2.0)
_STANDARD = NormalDist()


def normal_cdf(x: float) -> float:
    return 0.5 * (1.0 + math.erf(x / _SQRT2))


def normal_quantile(p: float) -> float:
    """Inverse of the standard normal CDF."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"normal_quantile needs 0 < p < 1, not {p}")
    return _STANDARD.inv_cdf(p)


def two_sided_p(z: float) -> float:
    """P(|Z| >= |z|) for a standard normal Z."""
    if math.isinf(z):
        return 0.0
    return max(0.0, min(1.0, 2.0 * (1.0 - normal_cdf(abs(z)))))


def benjamini_hochberg(pvalues: Sequence[float], q: float) -> list[bool]:
    """Which hypotheses to reject with the false-discovery rate controlled at q (BH step-up).

    Sort p ascending; the largest rank k with p_(k) <= k·q/m rejects ranks 1..k. Ties and order
    of the input are handled: the result is aligned with `pvalues`."""
    m = len(pvalues)
    if m == 0:
        return []
    order = sorted(range(m), key=lambda i: pvalues[i])
    cutoff = -1
    for rank, i in enumerate(order, 1):
        if pvalues[i] <= rank * q / m:
            cutoff = rank
    rejected = [False] * m
    for rank, i in enumerate(order, 1):
        if rank <= cutoff:
            rejected[i] = True
    return rejected


@dataclass(frozen=True)
class Spread:
    """Location and run-to-run spread of a metric over a point's history."""

    n: int
    mean: float
    sd: float | None  # sample standard deviation (n-1); None below two values

    @property
    def rel_sd(self) -> float | None:
        if self.sd is None or self.mean == 0:
            return None
        return self.sd / abs(self.mean)


def spread(values: Sequence[float]) -> Spread:
    n = len(values)
    if n == 0:
        raise ValueError("spread of no values")
    mean = math.fsum(values) / n
    if n < 2:
        return Spread(n, mean, None)
    var = math.fsum((v - mean) ** 2 for v in values) / (n - 1)
    return Spread(n, mean, math.sqrt(var))


def bootstrap_percentiles(samples: Sequence[float], ps: Sequence[float], *, resamples: int = 1000,
                          confidence: float = 0.95, seed: int = 0,
                          max_samples: int = 5000) -> dict[float, tuple[float, float]]:
    """Percentile bootstrap intervals of several percentiles of `samples`, from the same resamples.

    Records beyond `max_samples` are first thinned to an evenly spaced subset (intervals.py says why);
    {} below two samples. A resample's percentile only needs the two order statistics around it, so
    each resample draws those ranks directly instead of n values and a sort: the k-th smallest of n
    draws with replacement from the sorted data is the value at index floor(n·U₍ₖ₎), U₍ₖ₎ the k-th order
    statistic of n uniforms, and the next ranks follow from the previous one by the Beta law of
    uniform order statistics. Same bootstrap distribution as resampling, a cost independent of n (a
    sort, then 2·len(ps) vectors of `resamples` Beta draws from a generator seeded with `seed`)."""
    if len(samples) < 2:
        return {}
    x = np.asarray(samples, dtype=np.float64)
    if len(x) > max_samples:
        # thinned straight from the column: evenly spaced indices, no copy of the whole
        x = x[(np.arange(max_samples) * (len(x) / max_samples)).astype(np.int64)]
    data = np.sort(x)
    n = len(data)
    # the 0-based ranks each percentile interpolates between, as _quantile reads them
    spots = {}
    for p in ps:
        k = (n - 1) * p / 100.0
        f = math.floor(k)
        spots[p] = (f, min(f + 1, n - 1), k - f)
    ranks = sorted({r for f, c, _ in spots.values() for r in (f, c)})
    rng = np.random.default_rng(seed)
    at: dict[int, np.ndarray] = {}
    u, prev = np.zeros(resamples), -1
    for r in ranks:
        # the (r - prev)-th smallest of the n - prev - 1 uniforms above u, for every resample at once
        u = u + (1.0 - u) * rng.beta(r - prev, n - r, size=resamples)
        at[r] = data[np.minimum((u * n).astype(np.int64), n - 1)]
        prev = r
    alpha = (1.0 - confidence) / 2.0
    out = {}
    for p, (f, c, w) in spots.items():
        values = np.sort(at[f] + w * (at[c] - at[f])).tolist()
        out[p] = (_quantile(values, alpha), _quantile(values, 1.0 - alpha))
    return out


def _quantile(sorted_values: Sequence[float], p: float) -> float:
    k = (len(sorted_values) - 1) * p
    f = math.floor(k)
    c = min(f + 1, len(sorted_values) - 1)
    return sorted_values[f] + (k - f) * (sorted_values[c] - sorted_values[f])


def interval_rel_se(interval: tuple[float, float] | None, value: float, confidence: float = 0.95) -> float | None:
    """The relative standard error a two-sided interval of `value` implies (half-width / z)."""
    if interval is None or value == 0:
        return None
    lo, hi = interval
    z = normal_quantile(0.5 + confidence / 2.0)
    return (hi - lo) / 2.0 / z / abs(value)


def tost_equivalent(delta: float, se: float, margin: float, alpha: float = 0.05) -> bool:
    """Two one-sided tests: the change lies within ±margin with both tests significant at alpha,
    i.e. the (1 − 2·alpha) interval delta ± z·se is inside (−margin, margin)."""
    if se < 0 or margin <= 0:
        raise ValueError("se must be >= 0 and margin > 0")
    z = normal_quantile(1.0 - alpha)
    return delta - z * se > -margin and delta + z * se < margin
