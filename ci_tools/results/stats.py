"""Statistics for comparing a PR's benchmark points with main's (pure; stdlib only).

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

Every function here is deterministic: bootstrap resampling uses its own seeded generator.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from statistics import NormalDist
from typing import Sequence

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
    {} below two samples. A resample's
    percentile only needs the two order statistics around it, so each resample draws those ranks
    directly instead of n values and a sort: the k-th smallest of n draws with replacement from the
    sorted data is the value at index floor(n·U₍ₖ₎), U₍ₖ₎ the k-th order statistic of n uniforms,
    and the next ranks follow from the previous one by the Beta law of uniform order statistics.
    Same bootstrap distribution as resampling, a cost independent of n (a sort, then
    resamples × 2·len(ps) draws), and only `random.Random.random()` underneath (`_beta`), whose
    sequence Python keeps fixed per seed across versions and platforms."""
    if len(samples) < 2:
        return {}
    if len(samples) > max_samples:
        # thinned straight from the column: a list of a million-record column first was 32 MB
        step = len(samples) / max_samples
        data = [samples[int(i * step)] for i in range(max_samples)]
    else:
        data = list(samples)
    data.sort()
    n = len(data)
    # the 0-based ranks each percentile interpolates between, as _quantile reads them
    spots = {}
    for p in ps:
        k = (n - 1) * p / 100.0
        f = math.floor(k)
        spots[p] = (f, min(f + 1, n - 1), k - f)
    ranks = sorted({r for f, c, _ in spots.values() for r in (f, c)})
    rng = random.Random(seed)
    draws: dict[float, list[float]] = {p: [] for p in ps}
    for _ in range(resamples):
        at: dict[int, float] = {}
        u, prev = 0.0, -1
        for r in ranks:
            # the (r - prev)-th smallest of the n - prev - 1 uniforms above u
            m = r - prev
            u += (1.0 - u) * _beta(rng, m, n - r)
            at[r] = data[min(int(u * n), n - 1)]
            prev = r
        for p, (f, c, w) in spots.items():
            draws[p].append(at[f] + w * (at[c] - at[f]))
    alpha = (1.0 - confidence) / 2.0
    out = {}
    for p, values in draws.items():
        values.sort()
        out[p] = (_quantile(values, alpha), _quantile(values, 1.0 - alpha))
    return out


def _gamma(rng: random.Random, shape: float) -> float:
    """Gamma(shape, 1) for shape >= 1 (Marsaglia and Tsang), normals by Box-Muller, from rng.random()."""
    d = shape - 1.0 / 3.0
    c = 1.0 / math.sqrt(9.0 * d)
    while True:
        x = math.sqrt(-2.0 * math.log(1.0 - rng.random())) * math.cos(2.0 * math.pi * rng.random())
        v = 1.0 + c * x
        if v <= 0.0:
            continue
        v = v * v * v
        if math.log(1.0 - rng.random()) < 0.5 * x * x + d - d * v + d * math.log(v):
            return d * v


def _beta(rng: random.Random, a: float, b: float) -> float:
    """Beta(a, b) for a, b >= 1, as Gamma(a) / (Gamma(a) + Gamma(b))."""
    x = _gamma(rng, a)
    return x / (x + _gamma(rng, b))


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
