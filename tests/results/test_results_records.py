"""The streaming reader: fast path and json path agree on every record shape (hypothesis)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ci_tools.results import records

METRICS = ["request_latency", "output_sequence_length", "input_sequence_length", "time_to_first_token",
           "inter_token_latency"]
finite = st.floats(min_value=-10, max_value=1e6, allow_nan=False, allow_infinity=False)
value = st.one_of(finite, st.integers(min_value=-5, max_value=10**6), st.just(float("nan")), st.none())


@st.composite
def record_line(draw) -> bytes:
    meta = {"session_num": draw(st.integers(0, 9)), "request_start_ns": draw(st.integers(0, 10**19)),
            "request_end_ns": draw(st.integers(0, 10**19))}
    phase = draw(st.sampled_from(["profiling", "warmup", "other", None]))
    if phase is not None:
        meta["benchmark_phase"] = phase
    names = draw(st.permutations(METRICS + ["inter_chunk_latency", "usage_total_tokens"]))
    metrics = {}
    for name in names:
        if draw(st.booleans()) or name not in METRICS:
            v = [1.5, 2.5] if name == "inter_chunk_latency" else draw(value)
            metrics[name] = v if draw(st.integers(0, 9)) == 0 else {"value": v, "unit": "ms"}
        if draw(st.integers(0, 19)) == 0 and name in METRICS:
            metrics[name] = {"unit": "ms", "value": draw(finite)}  # another key order inside
    rec = {"metadata": meta, "metrics": metrics}
    err = draw(st.sampled_from([None, "absent", {"type": "HTTPStatusError", "message": "x"}, {"message": "Timeout: y"}]))
    if err != "absent":
        rec["error"] = err
    compact = draw(st.booleans())
    text = json.dumps(rec, separators=(",", ":") if compact else (", ", ": "))
    return text.encode() + b"\n"


def same(a: records.RecordScan, b: records.RecordScan) -> None:
    assert a.accounting() == b.accounting()
    for col in ("ttft_ms", "itl_ms", "e2el_ms", "e2e_per_token_ms"):
        assert list(getattr(a, col)) == list(getattr(b, col)), col
    assert (a.isl_sum, a.osl_sum, a.start_ns_min, a.end_ns_max) == (b.isl_sum, b.osl_sum, b.start_ns_min, b.end_ns_max)
    assert a.bad_lines == b.bad_lines


@settings(max_examples=150, deadline=None)
@given(st.lists(record_line(), max_size=8))
def test_fast_path_equals_json_path(lines):
    same(records.scan_lines(lines), records.scan_lines(lines, fast=False))


def test_real_exports_take_the_fast_path(shared: Path):
    lines = (shared / "corpus/aiperf-0.13-export/profile_export.jsonl").read_bytes().splitlines(keepends=True)
    fast = records.scan_lines(lines)
    assert fast.fast_lines == len(lines)
    same(fast, records.scan_lines(lines, fast=False))


@pytest.mark.parametrize("line", [b"not json\n", b"[1, 2]\n", b'"text"\n'])
def test_bad_lines_reported_with_numbers(line):
    ok = json.dumps({"metadata": {"benchmark_phase": "profiling"}, "metrics": {}}).encode() + b"\n"
    scan = records.scan_lines([ok, line, b"\n", ok])
    assert scan.bad_lines == [2]
    assert scan.records_profiled == 2 and scan.records_total == 3


def test_missing_file_is_clean(tmp_path):
    from ci_tools.errors import InputError

    with pytest.raises(InputError, match="file not found"):
        records.scan_file(tmp_path / "nope.jsonl")


@pytest.mark.parametrize("workers", [2, 3, 7])
def test_parallel_scan_equals_sequential(tmp_path, shared, workers):
    lines = (shared / "corpus/aiperf-0.13-export/profile_export.jsonl").read_bytes().splitlines(keepends=True)
    body = lines[:10] + [b"oops\n", b"\n"] + lines[10:] + [lines[0].rstrip(b"\n")]  # no final newline
    path = tmp_path / "p.jsonl"
    path.write_bytes(b"".join(body))
    seq = records.scan_file(path, workers=1)
    par = records.scan_file(path, workers=workers)
    same(par, seq)
    assert seq.bad_lines == [11] and seq.records_total == 42
