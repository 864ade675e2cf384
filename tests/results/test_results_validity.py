"""Validity rules: every failing rule is reported, together, with a readable message."""

from __future__ import annotations

import pytest

from ci_tools.results.validity import Requirements, check


def measured(ok=100, errors=0, duration=3600.0, phases=None, bad=None, excluded=None, isl=1000.0, osl=500.0):
    phases = phases or {"profiling": ok + errors, "warmup": 10}
    return {"requests": {"successful": ok, "errors": errors,
                         "error_rate": errors / (ok + errors) if ok + errors else None,
                         "accounting": {"error_categories": {"HTTPStatusError": errors} if errors else {},
                                        "phases": phases, "excluded": excluded or {}},
                         "bad_lines": bad or []},
            "duration_s": duration, "tokens": {"input_total": isl, "output_total": osl}}


def agg(count=100, conc=4, duration=3600.0, model="m", token_count=True, streaming=True, cancelled=False,
        complete=True, isl=1000.0, osl=500.0, bench=3600.0):
    return {"request_count": {"avg": count}, "was_cancelled": cancelled, "is_complete": complete,
            "total_isl": {"avg": isl}, "total_osl": {"avg": osl}, "benchmark_duration": {"avg": bench},
            "input_config": {"models": {"items": [{"name": model}]},
                             "endpoint": {"streaming": streaming, "use_server_token_count": token_count},
                             "phases": [{"name": "warmup", "kind": "warmup", "concurrency": conc},
                                        {"name": "profiling", "kind": "profiling", "concurrency": conc,
                                         "duration": duration}]}}


REQ = Requirements(scenario="agentic-coding", conc=4, duration_s=3600, model="m")


def rules(fails):
    return [f.rule for f in fails]


def test_good_run_is_valid():
    assert check(measured(), agg(), REQ) == []


@pytest.mark.parametrize("m_kw,a_kw,req_kw,expected", [
    ({"ok": 90, "errors": 10}, {"count": 90}, {}, []),                       # exactly 10 %: inclusive
    ({"ok": 89, "errors": 11}, {"count": 89}, {}, ["error-rate"]),
    ({"ok": 0, "errors": 0}, {"count": 0}, {}, ["completed", "min-requests"]),
    ({"ok": 5}, {"count": 5}, {}, ["min-requests"]),                          # 2 per lane at conc 4
    ({"duration": 3000.0}, {"bench": 3000.0}, {}, ["min-duration"]),
    ({"duration": None}, {}, {}, ["min-duration"]),
    ({"phases": {"profiling": 100, "replay": 3}}, {}, {}, ["phases"]),
    ({"bad": [7]}, {}, {}, ["records"]),
    ({}, {"count": 99}, {}, ["aiperf-count"]),
    ({}, {"cancelled": True}, {}, ["aiperf-complete"]),
    ({}, {"complete": False}, {}, ["aiperf-complete"]),
    ({}, {"complete": None}, {}, ["aiperf-complete"]),                      # not said: not complete
    ({}, {"complete": 1}, {}, ["aiperf-complete"]),
    ({}, {"complete": "false"}, {}, ["aiperf-complete"]),
    ({}, {"cancelled": None}, {}, ["aiperf-complete"]),
    ({}, {"count": float("nan")}, {}, ["aiperf-count"]),
    ({"excluded": {"nonpositive-itl": 1}}, {}, {}, ["records-broken"]),      # one zero ITL: broken clock
    ({"excluded": {"bad-token-counts": 1, "warmup": 10}}, {}, {}, ["records-broken"]),
    ({"excluded": {"no-phase": 1}}, {}, {}, ["records-broken"]),
    ({"excluded": {"missing-timestamps": 1}}, {}, {}, []),                    # 1 in 101: under 1 %
    ({"excluded": {"missing-timestamps": 2}}, {}, {}, ["records-missing"]),
    ({"excluded": {"missing-ttft": 1, "zero-output": 1}}, {}, {}, ["records-missing"]),
    ({"isl": -1e8}, {}, {}, ["aiperf-tokens"]),                               # the records disagree with AIPerf
    ({}, {"osl": 0.0}, {}, ["aiperf-tokens"]),
    ({}, {"isl": None}, {}, ["aiperf-tokens"]),
    # benchmark_duration's value against the records is crosscheck.py's (tests/results/test_crosscheck.py)
    ({"duration": 7200.0}, {}, {}, []),
    ({}, {"bench": None}, {}, ["aiperf-duration"]),
    ({}, {"conc": 8}, {}, ["echo-concurrency"]),
    ({}, {"model": "other"}, {}, ["echo-model"]),
    ({}, {"duration": 1200.0}, {}, ["echo-duration"]),
    ({}, {"token_count": False}, {}, ["echo-token-count"]),
    ({}, {"streaming": False}, {}, ["echo-streaming"]),
    ({"ok": 1}, {"count": 1}, {"scenario": "fixed-seq-len", "duration_s": None}, ["min-requests"]),
    ({"ok": 20}, {"count": 20}, {"scenario": "fixed-seq-len", "duration_s": None}, []),
    ({"ok": 89, "errors": 11}, {"count": 89}, {"max_error_rate": 0.2}, []),
])
def test_rules(m_kw, a_kw, req_kw, expected):
    req = Requirements(**{**REQ.__dict__, **req_kw})
    assert rules(check(measured(**m_kw), agg(**a_kw), req)) == expected


def test_all_failures_reported_together():
    fails = check(measured(ok=50, errors=50, duration=100.0, phases={"profiling": 100, "x": 1}),
                  agg(count=49, conc=2, model="z", token_count=False, cancelled=True), REQ)
    assert rules(fails) == ["error-rate", "min-duration", "phases", "aiperf-count",
                            "aiperf-complete", "echo-concurrency", "echo-model", "echo-token-count"]
    assert "error rate 50.0% (50 of 100) is above 10% [HTTPStatusError: 50]" in fails[0].message


def test_missing_summary_is_a_failure():
    assert rules(check(measured(), None, REQ)) == ["aiperf-summary"]


def test_big_counts_read_as_numbers_people_write():
    """Issue 24: "AIPerf counted 1.20102e+10 input tokens ..., the records add up to 196999"."""
    fails = check(measured(isl=196999.0), agg(isl=12010200000.0), REQ)
    (tokens,) = [f.message for f in fails if f.rule == "aiperf-tokens"]
    assert "AIPerf counted 12,010,200,000 input tokens (total_isl), the records add up to 196,999" in tokens
    (count,) = [f.message for f in check(measured(ok=12345), agg(count=1234567), REQ) if f.rule == "aiperf-count"]
    assert "AIPerf counted 1,234,567 successful profiling requests, the export has 12,345" in count
