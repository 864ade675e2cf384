"""Metric definitions (spec §2.2) as tables, and on the real AIPerf 0.13 export."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from ci_tools.results import metrics as m
from ci_tools.results import record_fields, records
from ci_tools.results.process import PointInfo, build_result
from tests.conftest import AIPERF_EXPORT


def rec(phase="profiling", ttft=30.0, itl=18.0, e2el=1000.0, isl=100, osl=50, start=1.0, end=2.0, error=None):
    r = {"metadata": {"request_start_ns": int(start * 1e9), "request_end_ns": int(end * 1e9),
                      "benchmark_phase": phase},
         "metrics": {"request_latency": {"value": e2el, "unit": "ms"},
                     "output_sequence_length": {"value": osl, "unit": "tokens"},
                     "input_sequence_length": {"value": isl, "unit": "tokens"},
                     "time_to_first_token": {"value": ttft, "unit": "ms"},
                     "inter_token_latency": {"value": itl, "unit": "ms"}}}
    if error is not None:
        r["error"] = error
    return json.dumps(r, separators=(",", ":")).encode() + b"\n"


@pytest.mark.parametrize("values,p,expected", [
    ([1.0], 90, 1.0),
    ([1.0, 2.0], 50, 1.5),
    ([10.0, 20.0, 100.0], 90, 84.0),     # spec case 29: k = 1.8
    ([10.0, 20.0, 100.0], 50, 20.0),
    ([5.0, 4.0, 5.469791], 75, None),    # unsorted input is the caller's bug: sorted below
])
def test_percentile_linear(values, p, expected):
    got = m.percentile(sorted(values), p)
    if expected is not None:
        assert got == pytest.approx(expected)
    else:
        assert got == pytest.approx(5.2348955)  # spec case 35


def test_interactivity_is_inverse_of_itl_percentile():  # spec case 29
    out = m.inverse_stats([10, 20, 100], 1e-3)
    assert out["p90"] == pytest.approx(11.904762, rel=1e-6)
    assert out["p50"] == pytest.approx(50.0)
    assert out["p90"] < 20


def test_e2e_norm_case_30():
    scan = records.scan_lines([rec(e2el=1000, osl=50), rec(e2el=2000, osl=50)])
    e = m.compute_metrics(scan, 4)["e2e_norm_intvty"]
    assert e["mean"] == pytest.approx(1 / 0.03)
    assert e["p75"] == pytest.approx(1 / 0.035)
    assert e["p90"] == pytest.approx(1 / 0.038)
    assert e["std"] == pytest.approx(12.5)
    assert e["p50"] >= e["p75"] >= e["p90"] >= e["p95"] and "p99" not in e


def test_invalid_pairs_case_32():
    bad = [(0, 50), (-1, 50), (float("nan"), 50), (float("inf"), 50), (1000, 0), (1000, -1)]
    lines = [rec(e2el=e, osl=o) for e, o in bad] + [rec(e2el=1000, osl=50)]
    e = m.compute_metrics(records.scan_lines(lines), 1)["e2e_norm_intvty"]
    assert e == {"mean": 50.0, "p50": 50.0, "p75": 50.0, "p90": 50.0, "p95": 50.0, "std": 0.0}


def test_accounting_case_39():
    lines = [rec(), rec(phase="warmup", isl=10000), rec(error={"type": "HTTPStatusError", "message": "x"})]
    scan = records.scan_lines(lines)
    assert scan.accounting() | {"phases": None} == {
        "records_total": 3, "records_profiled": 1, "records_dropped_total": 2, "records_warmup_dropped": 1,
        "records_error_dropped": 1, "error_categories": {"HTTPStatusError": 1}, "phases": None,
        "excluded": {"error": 1, "warmup": 1}, "itl_undefined": 0}
    got = m.compute_metrics(scan, 1)
    assert got["tokens"]["input_total"] == 100  # warmup tokens not counted (case 46)
    assert got["e2e_norm_intvty"]["mean"] == pytest.approx(50)
    assert got["requests"]["error_rate"] == pytest.approx(0.5)


def test_throughput_case_72():
    # AG fixture: five requests, TP=4
    spans = [(1.0, 2.0), (2.5, 3.7), (1.5, 2.3), (3.0, 4.5), (4.0, 5.1)]
    isl = [100, 180, 120, 200, 240]
    osl = [50, 60, 40, 70, 55]
    lines = [rec(isl=i, osl=o, start=s, end=e) for (s, e), i, o in zip(spans, isl, osl)]
    got = m.compute_metrics(records.scan_lines(lines), m.gpu_count(4))
    t = got["throughput"]
    assert got["duration_s"] == pytest.approx(4.1)
    assert t["input_tok_s"] == pytest.approx(204.878, rel=1e-5)
    assert t["output_tok_s"] == pytest.approx(67.073, rel=1e-4)
    assert t["total_tok_s"] == pytest.approx(271.951, rel=1e-5)
    assert t["per_gpu"]["total_tok_s_gpu"] == pytest.approx(67.988, rel=1e-4)


@pytest.mark.parametrize("kw,expected", [
    ({"tp": 4}, 4), ({"tp": 2}, 2), ({"tp": 4, "pp": 2, "pcp": 2}, 16),
    ({"tp": 0, "prefill": (1, 4), "decode": (2, 8)}, 20), ({"tp": 0, "prefill": (2, 4), "decode": (0, 8)}, 8),
])
def test_gpu_count(kw, expected):
    assert m.gpu_count(**kw) == expected


@pytest.mark.parametrize("err,cat", [
    ({"type": "HTTPStatusError"}, "HTTPStatusError"), ({"code": 500, "message": "boom"}, "500"),
    ({"message": "ReadTimeout: the server did not answer\nmore"}, "ReadTimeout"), ("", "unknown"),
    ({"type": "x" * 200}, "x" * 120),
])
def test_error_category(err, cat):
    assert record_fields.error_category(err) == cat


def test_real_export_matches_aiperf_own_summary():
    """On AIPerf's own export, our percentiles equal AIPerf's (same linear definition)."""
    d = AIPERF_EXPORT
    agg = json.loads((d / "profile_export_aiperf.json").read_text())
    scan = records.scan_file(d / "profile_export.jsonl")
    assert scan.fast_lines == scan.records_total == 40  # the fast path reads AIPerf's real layout
    result = build_result(scan, agg, PointInfo(name="stub", tp=4, conc=4, scenario="fixed-seq-len", model="stub"))
    assert result["valid"], result["failures"]
    lat = result["latency_s"]
    for ours, theirs in (("ttft", "time_to_first_token"), ("itl", "inter_token_latency"), ("e2el", "request_latency")):
        for k in ("p50", "p75", "p90", "p95"):
            assert lat[ours][k] * 1000 == pytest.approx(agg[theirs][k], rel=1e-9), (ours, k)
        assert lat[ours]["mean"] * 1000 == pytest.approx(agg[theirs]["avg"], rel=1e-9)
    assert result["requests"]["successful"] == agg["request_count"]["avg"]
    assert result["tokens"]["input_total"] == agg["total_isl"]["avg"]
    assert result["tokens"]["output_total"] == agg["total_osl"]["avg"]
    h = result["headline"]
    assert h["intvty_p90"] == pytest.approx(1000 / agg["inter_token_latency"]["p90"])
    assert h["intvty_p50"] == pytest.approx(1000 / agg["inter_token_latency"]["p50"])
    assert h["ttft_p90_s"] == pytest.approx(agg["time_to_first_token"]["p90"] / 1000)
    # throughput uses the request span, independent of AIPerf's own duration definition
    total = (agg["total_isl"]["avg"] + agg["total_osl"]["avg"]) / result["duration_s"] / 4
    assert h["tok_s_gpu"] == pytest.approx(total)
    assert math.isclose(result["duration_s"], agg["benchmark_duration"]["avg"], rel_tol=0.05)


@pytest.mark.parametrize("n", [1, 2, 7, 1000, 5001])
def test_stats_are_the_definitions_to_the_last_bit(n):
    """The module's definitions written out in Python floats (percentile on the sorted values, the
    exact sum's mean, the population std of the exact sums), and numpy's partial sort and element-wise
    arithmetic: the same numbers for every size, not merely close ones."""
    import random

    rng = random.Random(n)
    values = [rng.lognormvariate(3, 0.5) for _ in range(n)]
    ordered = sorted(values)
    mean = math.fsum(values) / n
    want = {"mean": mean, **{k: m.percentile(ordered, p) for k, p in m.PERCENTILES},
            "std": math.sqrt(math.fsum((v - mean) * (v - mean) for v in values) / n)}
    assert m.stats(values) == want
    rates = [1.0 / 1e-3 / v for v in values]
    rate_mean = math.fsum(rates) / n
    assert m.inverse_stats(values, 1e-3)["std"] == math.sqrt(math.fsum((r - rate_mean) * (r - rate_mean) for r in rates) / n)
