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
from typing import Callable, Sequence

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


def bootstrap_interval(samples: Sequence[float], statistic: Callable[[list[float]], float], *,
                       resamples: int = 400, confidence: float = 0.95, seed: int = 0,
                       max_samples: int = 5000) -> tuple[float, float] | None:
    """Percentile bootstrap interval of `statistic` over `samples`.

    Records beyond `max_samples` are first thinned to an evenly spaced subset: the interval of a
    large run is already narrow, and the cost stays bounded (resamples × max_samples draws).
    None when there are fewer than two samples."""
    data = list(samples)
    if len(data) < 2:
        return None
    if len(data) > max_samples:
        step = len(data) / max_samples
        data = [data[int(i * step)] for i in range(max_samples)]
    rng = random.Random(seed)
    n = len(data)
    values = sorted(statistic(rng.choices(data, k=n)) for _ in range(resamples))
    alpha = (1.0 - confidence) / 2.0
    return (_quantile(values, alpha), _quantile(values, 1.0 - alpha))


def bootstrap_percentiles(samples: Sequence[float], ps: Sequence[float], *, resamples: int = 200,
                          confidence: float = 0.95, seed: int = 0,
                          max_samples: int = 5000) -> dict[float, tuple[float, float]]:
    """Percentile bootstrap intervals of several percentiles of `samples`, from the same resamples (one
    sort each). Thinned beyond `max_samples` as `bootstrap_interval`; {} below two samples."""
    data = list(samples)
    if len(data) < 2:
        return {}
    if len(data) > max_samples:
        step = len(data) / max_samples
        data = [data[int(i * step)] for i in range(max_samples)]
    rng = random.Random(seed)
    n = len(data)
    draws: dict[float, list[float]] = {p: [] for p in ps}
    for _ in range(resamples):
        resample = sorted(rng.choices(data, k=n))
        for p in ps:
            draws[p].append(_quantile(resample, p / 100.0))
    alpha = (1.0 - confidence) / 2.0
    out = {}
    for p, values in draws.items():
        values.sort()
        out[p] = (_quantile(values, alpha), _quantile(values, 1.0 - alpha))
    return out


def _quantile(sorted_values: Sequence[float], p: float) -> float:
    k = (len(sorted_values) - 1) * p
    f = math.floor(k)
    c = min(f + 1, len(sorted_values) - 1)
    return sorted_values[f] + (k - f) * (sorted_values[c] - sorted_values[f])


def percentile_of(p: float) -> Callable[[list[float]], float]:
    """A statistic: the p-th percentile (linear interpolation, as results/metrics.py)."""
    def stat(values: list[float]) -> float:
        return _quantile(sorted(values), p / 100.0)
    return stat


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
