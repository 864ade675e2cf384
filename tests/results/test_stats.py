"""Statistics of the PR-vs-main comparison: table tests with known answers."""

from __future__ import annotations

import math
import random
import statistics

import pytest

from ci_tools.results import stats


@pytest.mark.parametrize("p", [1e-9, 0.001, 0.02, 0.025, 0.05, 0.3, 0.5, 0.7, 0.95, 0.975, 0.999, 1 - 1e-9])
def test_normal_quantile_inverts_the_cdf(p):
    assert stats.normal_cdf(stats.normal_quantile(p)) == pytest.approx(p, rel=1e-9, abs=1e-15)
    assert stats.normal_quantile(p) == pytest.approx(statistics.NormalDist().inv_cdf(p), abs=1e-9)


@pytest.mark.parametrize("p", [0, 1, -0.1, 1.5])
def test_normal_quantile_refuses_outside_the_open_interval(p):
    with pytest.raises(ValueError):
        stats.normal_quantile(p)


@pytest.mark.parametrize("z, p", [(0, 1.0), (1.959963984540054, 0.05), (-1.959963984540054, 0.05),
                                  (2.5758293035489, 0.01), (math.inf, 0.0), (40, 0.0)])
def test_two_sided_p(z, p):
    assert stats.two_sided_p(z) == pytest.approx(p, abs=1e-12)


@pytest.mark.parametrize("pvalues, q, expected", [
    ([], 0.05, []),
    ([0.2], 0.05, [False]),
    ([0.01], 0.05, [True]),
    # the classic step-up: rank 3 (0.039 <= 3*0.05/5 = 0.03)? no; rank 2 (0.02 <= 0.02) yes -> ranks 1, 2
    ([0.01, 0.02, 0.039, 0.5, 0.9], 0.05, [True, True, False, False, False]),
    # step-up, not step-down: rank 1 fails alone (0.012 > 0.01) but rank 2 passes, rejecting both
    ([0.012, 0.018, 0.8, 0.9, 0.95], 0.05, [True, True, False, False, False]),
    # order of the input does not matter
    ([0.5, 0.01, 0.9, 0.02, 0.039], 0.05, [False, True, False, True, False]),
    ([0.0, 0.0, 0.0], 0.05, [True, True, True]),
    ([0.04, 0.04, 0.04], 0.05, [True, True, True]),
    ([1.0, 1.0], 0.05, [False, False]),
])
def test_benjamini_hochberg(pvalues, q, expected):
    assert stats.benjamini_hochberg(pvalues, q) == expected


@pytest.mark.parametrize("values, n, mean, sd", [
    ([5.0], 1, 5.0, None),
    ([2.0, 2.0, 2.0], 3, 2.0, 0.0),
    ([1.0, 2.0, 3.0, 4.0], 4, 2.5, statistics.stdev([1.0, 2.0, 3.0, 4.0])),
])
def test_spread(values, n, mean, sd):
    s = stats.spread(values)
    assert (s.n, s.mean) == (n, mean)
    assert s.sd == (None if sd is None else pytest.approx(sd))


def test_spread_relative_sd_and_edges():
    assert stats.spread([100.0, 110.0, 90.0]).rel_sd == pytest.approx(0.1)
    assert stats.spread([0.0, 0.0]).rel_sd is None
    assert stats.spread([3.0]).rel_sd is None
    with pytest.raises(ValueError):
        stats.spread([])


def test_bootstrap_covers_the_estimate_and_narrows_with_more_data():
    data = [float(i % 97) for i in range(2000)]
    (lo, hi), = stats.bootstrap_percentiles(data, [90.0], seed=3).values()
    p90 = stats._quantile(sorted(data), 0.9)
    assert lo <= p90 <= hi and hi - lo < 10    # 2000 records: the P90 is pinned to a few units
    small = stats.bootstrap_percentiles([float(i % 10) for i in range(40)], [50.0])[50.0]
    large = stats.bootstrap_percentiles([float((i * 7) % 10) + i / 4000 for i in range(4000)], [50.0])[50.0]
    assert (large[1] - large[0]) < (small[1] - small[0]) / 4


@pytest.mark.parametrize("interval, value, expected", [
    ((95.0, 105.0), 100.0, 5.0 / 1.959963984540054 / 100.0),
    ((100.0, 100.0), 100.0, 0.0),
    (None, 100.0, None),
    ((1.0, 2.0), 0.0, None),
])
def test_interval_rel_se(interval, value, expected):
    got = stats.interval_rel_se(interval, value)
    assert got == (None if expected is None else pytest.approx(expected))


@pytest.mark.parametrize("delta, se, margin, equivalent", [
    (0.0, 0.01, 0.05, True),       # interval ±1.6 % inside ±5 %
    (0.0, 0.04, 0.05, False),      # ±6.6 %: too noisy to claim no change
    (0.04, 0.001, 0.05, True),     # a precise 4 % change is still inside the margin
    (0.049, 0.01, 0.05, False),    # the upper test fails
    (-0.03, 0.01, 0.05, True),
    (0.0, 0.0, 0.05, True),        # zero noise, no change
    (0.06, 0.0, 0.05, False),      # zero noise, outside the margin
])
def test_tost(delta, se, margin, equivalent):
    assert stats.tost_equivalent(delta, se, margin) is equivalent


def test_tost_refuses_nonsense():
    with pytest.raises(ValueError):
        stats.tost_equivalent(0.0, -1.0, 0.05)
    with pytest.raises(ValueError):
        stats.tost_equivalent(0.0, 0.1, 0.0)


def _resampled_percentiles(data, ps, resamples, seed):
    """The textbook bootstrap: draw n values with replacement, sort, read the percentile."""
    rng = random.Random(seed)
    draws = {p: [] for p in ps}
    for _ in range(resamples):
        resample = sorted(rng.choices(data, k=len(data)))
        for p in ps:
            draws[p].append(stats._quantile(resample, p / 100.0))
    return {p: sorted(v) for p, v in draws.items()}


@pytest.mark.parametrize("n", [12, 60, 400])
def test_bootstrap_percentiles_match_resampling_with_replacement(n):
    """bootstrap_percentiles draws a resample's order statistics directly (Beta law) instead of
    resampling: its intervals must be those of the textbook bootstrap, within Monte Carlo error."""
    rng = random.Random(n)
    data = [rng.lognormvariate(1.5, 0.5) for _ in range(n)]
    ps = [10.0, 50.0, 90.0, 99.0]
    textbook = _resampled_percentiles(data, ps, 6000, seed=1)
    got = stats.bootstrap_percentiles(data, ps, resamples=6000, seed=2)
    for p in ps:
        spread = textbook[p][-1] - textbook[p][0]
        for q, end in ((0.025, got[p][0]), (0.975, got[p][1])):
            want = textbook[p][int(q * 6000)]
            assert abs(end - want) < 0.05 * spread, (p, q, end, want)


def test_bootstrap_percentiles_are_deterministic_and_thinned():
    data = [float(i % 97) for i in range(20_000)]
    a = stats.bootstrap_percentiles(data, [50.0, 90.0], seed=3, max_samples=1000)
    assert a == stats.bootstrap_percentiles(data, [50.0, 90.0], seed=3, max_samples=1000)
    assert a == stats.bootstrap_percentiles(data[::20], [50.0, 90.0], seed=3, max_samples=1000)
    assert stats.bootstrap_percentiles([3.0], [50.0]) == {}
    assert stats.bootstrap_percentiles([7.0] * 9, [50.0, 90.0]) == {50.0: (7.0, 7.0), 90.0: (7.0, 7.0)}
