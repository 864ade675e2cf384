"""The streaming reader: the msgspec path (by columns or record by record) and the json path agree on
every record shape and every way of cutting the file into batches (hypothesis)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ci_tools.results import record_batches, records
from ci_tools.results.scan import COLUMNS
from tests.conftest import AIPERF_EXPORT

METRICS = ["request_latency", "output_sequence_length", "input_sequence_length", "time_to_first_token",
           "inter_token_latency"]
# read only to check a record against itself (invariants.py)
WITNESSES = ["usage_completion_tokens", "usage_prompt_tokens", "output_token_throughput_per_user",
             "prefill_throughput_per_user", "e2e_output_token_throughput", "decode_duration"]
# the unit AIPerf writes beside each (a token count in "ms" is refused: test_units.py)
UNIT = {m: "tokens" if m.endswith(("sequence_length", "tokens")) else "tokens/sec/user" if "throughput" in m else "ms"
        for m in METRICS + WITNESSES + ["inter_chunk_latency"]}
finite = st.floats(min_value=-10, max_value=1e6, allow_nan=False, allow_infinity=False)
value = st.one_of(finite, st.integers(min_value=-5, max_value=10**6), st.just(float("nan")), st.none(), st.just(1e308))
chunk_gaps = st.one_of(st.lists(st.one_of(finite, st.integers(0, 9)), max_size=5), st.just([1.5, 2.5]), st.none(),
                       st.just([1.0, "x"]), st.just([float("inf")]), st.just(3.0), st.just([True]))


@st.composite
def record_line(draw) -> bytes:
    meta = {"session_num": draw(st.one_of(st.integers(0, 9), st.none(), st.just(2**70), st.just("7"))),
            "request_start_ns": draw(st.integers(0, 10**19)), "request_end_ns": draw(st.integers(0, 10**19))}
    for key in ("request_ack_ns", "credit_issued_ns"):
        if draw(st.booleans()):
            meta[key] = draw(st.one_of(st.integers(-5, 10**19), st.none()))
    phase = draw(st.sampled_from(["profiling", "profiling", "warmup", "other", None, "null"]))
    if phase == "null":
        meta["benchmark_phase"] = None
    elif phase is not None:
        meta["benchmark_phase"] = phase
    names = draw(st.permutations(METRICS + WITNESSES + ["inter_chunk_latency", "usage_total_tokens"]))
    metrics: dict | None = {}
    for name in names:
        if draw(st.booleans()) or name not in METRICS:
            v = draw(chunk_gaps) if name == "inter_chunk_latency" else draw(value)
            shape = draw(st.integers(0, 19))
            unit = UNIT.get(name, "ms") if shape > 3 else draw(st.sampled_from(["s", "us", "ns", "sec", "tokens", "x", None, 5]))
            metrics[name] = v if shape == 0 else None if shape == 1 else {"value": v, "unit": unit}
        if draw(st.integers(0, 19)) == 0 and name in METRICS:
            metrics[name] = {"unit": UNIT[name], "value": draw(finite)}  # another key order inside
    rec: dict = {"metadata": meta, "metrics": metrics}
    odd = draw(st.integers(0, 29))
    if odd == 0:
        rec["metadata"] = None
    elif odd == 1:
        rec["metrics"] = None
    elif odd == 2:
        del rec["metrics"]
    err = draw(st.sampled_from([None, None, "absent", "absent", {"type": "HTTPStatusError", "message": "x"},
                                {"message": "Timeout: y"}, False, "", "boom: z"]))
    if err != "absent":
        rec["error"] = err
    compact = draw(st.booleans())
    text = json.dumps(rec, separators=(",", ":") if compact else (", ", ": "))
    return text.encode() + b"\n"


@st.composite
def plain_line(draw) -> bytes:
    """A record as AIPerf 0.13 writes it, every figure its checks read present: mostly consistent, now
    and then one figure off (the column path must flag it as the record-by-record path does)."""
    start = draw(st.integers(1, 10**18))
    ttft, itl = draw(st.floats(0.5, 500.0)), draw(st.floats(0.1, 50.0))
    osl = draw(st.integers(2, 40))
    gaps = [itl] * (osl - 1)
    e2el = ttft + sum(gaps)
    v = {"time_to_first_token": ttft, "inter_token_latency": (e2el - ttft) / (osl - 1), "request_latency": e2el,
         "output_sequence_length": osl, "input_sequence_length": 100, "usage_completion_tokens": osl,
         "usage_prompt_tokens": 100, "output_token_throughput_per_user": 1000.0 / ((e2el - ttft) / (osl - 1)),
         "prefill_throughput_per_user": 1000.0 * 100 / ttft, "e2e_output_token_throughput": 1000.0 * osl / e2el,
         "decode_duration": e2el - ttft}
    tail = draw(st.sampled_from([0, 2_000_000, 10**9]))
    meta = {"request_start_ns": start, "request_end_ns": start + round(e2el * 1e6) + tail,
            "request_ack_ns": start + draw(st.sampled_from([1000, -1000, round(ttft * 1e6) + 10**6])),
            "credit_issued_ns": start - 500, "session_num": draw(st.integers(0, 50)), "benchmark_phase": "profiling"}
    off = draw(st.sampled_from([None] * 6 + list(v)))
    if off is not None:
        v[off] = v[off] * 1.5 if not off.endswith(("length", "tokens")) else v[off] + 1
    metrics = {m: {"value": x, "unit": UNIT[m]} for m, x in v.items()}
    metrics["inter_chunk_latency"] = {"value": gaps if draw(st.integers(0, 5)) else gaps[:-1] + [-1.0], "unit": "ms"}
    return json.dumps({"metadata": meta, "metrics": metrics}, separators=(",", ":")).encode() + b"\n"


any_line = st.one_of(plain_line(), plain_line(), plain_line(), record_line(),
                     st.sampled_from([b"\n", b"  \n", b"oops\n", b"[1]\n", b'{"a": NaN}\n', b'{"metadata": 1}\n']))


def same(a: records.RecordScan, b: records.RecordScan) -> None:
    assert a.accounting() == b.accounting()
    assert list(a.e2e_per_token_ms) == list(b.e2e_per_token_ms)
    for col in COLUMNS:   # as bytes: NaN-safe, and every column RecordScan has
        assert getattr(a, col).tobytes() == getattr(b, col).tobytes(), col
    assert (a.unit_problems, a.ids_missing) == (b.unit_problems, b.ids_missing)
    assert repr(sorted(a.violations.items())) == repr(sorted(b.violations.items()))   # repr: NaN-safe
    assert (a.icl_count, a.icl_ns) == (b.icl_count, b.icl_ns)
    assert (a.isl_sum, a.osl_sum, a.start_ns_min, a.end_ns_max) == (b.isl_sum, b.osl_sum, b.start_ns_min, b.end_ns_max)
    assert a.bad_lines == b.bad_lines


@settings(max_examples=150, deadline=None)
@given(st.lists(record_line(), max_size=8))
def test_fast_path_equals_json_path(lines):
    same(records.scan_lines(lines), records.scan_lines(lines, fast=False))


@settings(max_examples=150, deadline=None)
@given(st.lists(any_line, max_size=30), st.lists(st.integers(1, 12), min_size=1, max_size=30))
def test_any_batching_equals_json_path(lines, cuts):
    """The same lines cut into batches anywhere: a batch with one odd line goes line by line, the
    others by columns; totals, columns (in file order) and line numbers stay those of json.loads."""
    batches, i = [], 0
    for k in cuts * 30:
        if i >= len(lines):
            break
        batches.append(lines[i:i + k])
        i += k
    same(records.scan_batches(batches), records.scan_lines(lines, fast=False))


def test_a_timestamp_beyond_int64_is_a_bad_timestamp_on_both_paths():
    """Hypothesis found it: 2**63 ns passed the fast path's decode and was judged by the next rule
    (bad-token-counts) while the json path called it a bad timestamp."""
    lines = [b'{"metadata": {"session_num": 0, "request_start_ns": 1, "request_end_ns": 9223372036854775808,'
             b' "benchmark_phase": "profiling"}, "error": null}\n']
    for scan in (records.scan_batches([lines]), records.scan_lines(lines), records.scan_lines(lines, fast=False)):
        assert scan.accounting()["excluded"] == {"bad-timestamps": 1}


PLAIN = {"metadata": {"request_start_ns": 10, "request_end_ns": 20, "benchmark_phase": "profiling", "session_num": 1,
                      "request_ack_ns": 11, "credit_issued_ns": 9},
         "metrics": {**{m: {"value": 7.5, "unit": UNIT[m]} for m in METRICS + WITNESSES},
                     "inter_chunk_latency": {"value": [1.0, 2.0], "unit": "ms"}}}


def _variant(path: str, value) -> bytes:
    rec = json.loads(json.dumps(PLAIN))
    *parents, key = path.split(".")
    node = rec
    for part in parents:
        node = node[part]
    if value == "<del>":
        del node[key]
    else:
        node[key] = value
    return json.dumps(rec).encode() + b"\n"


@pytest.mark.parametrize("odd", [
    _variant("metadata.benchmark_phase", "<del>"),           # no phase: excluded as no-phase
    _variant("metadata.benchmark_phase", None),
    _variant("error", False),                                # falsy error: a successful request
    _variant("error", ""),
    _variant("error", {"type": "Timeout"}),
    _variant("metadata.benchmark_phase", "warmup"),
    _variant("metrics.time_to_first_token", None),           # null metric
    _variant("metrics.time_to_first_token", "<del>"),        # missing metric
    _variant("metrics.inter_token_latency.value", None),
    _variant("metrics.request_latency.value", -3.0),         # excluded: bad-latency
    _variant("metrics.inter_token_latency.value", 1e308),    # excluded: bad-value
    _variant("metrics.usage_completion_tokens.value", 7.25), # not a count: bad-value
    _variant("metrics.inter_chunk_latency.value", [1.0, "x"]),
    _variant("metrics.inter_chunk_latency.value", []),
    _variant("metrics.inter_chunk_latency", "<del>"),        # record-missing
    _variant("metrics.decode_duration", "<del>"),
    _variant("metadata.request_ack_ns", -1),                 # bad-timestamps
    _variant("metadata.session_num", 2**70),
    _variant("metrics.output_sequence_length.value", 0),
    _variant("metrics.input_sequence_length", 12),           # scalar metric
    _variant("metadata.request_start_ns", None),
    _variant("metadata.request_end_ns", 1.5e19),             # a float timestamp
    _variant("metadata", None),
    _variant("metrics", None),
    b'{"metadata": {"benchmark_phase": "profiling"}, "metrics": {"request_latency": {"value": NaN}}}\n',
    b"\n", b"not json\n", b"[1]\n",
])
def test_odd_record_between_plain_ones(odd):
    """Each odd line inside a batch of plain records: same counts, columns in file order and line
    numbers as json.loads, whichever path the batch takes."""
    plain = json.dumps(PLAIN).encode() + b"\n"
    lines = [plain, plain.replace(b"7.5", b"2.25"), odd, plain.replace(b"7.5", b"9.0"), plain]
    same(records.scan_lines(lines), records.scan_lines(lines, fast=False))


def corpus_lines() -> list[bytes]:
    return (AIPERF_EXPORT / "profile_export.jsonl").read_bytes().splitlines(keepends=True)


def test_without_msgspec_the_scan_is_the_same(monkeypatch):
    lines = corpus_lines()
    fast = records.scan_lines(lines)
    monkeypatch.setattr(record_batches, "_DECODER", [None])    # every line takes the json path
    plain = records.scan_lines(lines)
    assert plain.fast_lines == 0 and plain.column_records == 0
    same(plain, fast)


def test_real_exports_take_the_fast_path():
    lines = corpus_lines()
    fast = records.scan_lines(lines)
    assert fast.fast_lines == len(lines)
    assert fast.column_records == fast.records_profiled > 0   # every successful record added by columns
    same(fast, records.scan_lines(lines, fast=False))


@pytest.mark.parametrize("unit,factor", [("s", 1e3), ("us", 1e-3)])
def test_a_convertible_unit_leaves_the_fast_path_and_is_converted(unit, factor):
    """The decoder accepts only each metric's usual unit, so a record in another one is read by
    json.loads and converted there, never added by columns as if it were milliseconds."""
    rec = json.loads(json.dumps(PLAIN))
    for name in ("input_sequence_length", "output_sequence_length", "usage_prompt_tokens", "usage_completion_tokens"):
        rec["metrics"][name]["value"] = 100
    rec["metrics"]["request_latency"]["value"] = 10_000.0   # longer than any ITL below: a measurable record
    rec["metadata"]["request_end_ns"] = rec["metadata"]["request_start_ns"] + 10_000 * 10**6
    plain = json.dumps(rec).encode() + b"\n"
    rec["metrics"]["inter_token_latency"]["unit"] = unit
    odd = json.dumps(rec).encode() + b"\n"
    scan = records.scan_lines([plain, odd, plain])
    assert scan.fast_lines == scan.column_records == 2   # the odd line alone went to json.loads
    assert list(scan.itl_ms) == [7.5, 7.5 * factor, 7.5]
    same(scan, records.scan_lines([plain, odd, plain], fast=False))


@pytest.mark.parametrize("line", [b"not json\n", b"[1, 2]\n", b'"text"\n'])
def test_bad_lines_reported_with_numbers(line):
    ok = json.dumps({"metadata": {"benchmark_phase": "profiling"}, "metrics": {}}).encode() + b"\n"
    scan = records.scan_lines([ok, line, b"\n", ok])
    assert scan.bad_lines == [2]
    assert scan.records_total == 3
    # records without timestamps or metrics are not measurements: excluded, and counted by reason
    assert scan.records_profiled == 0 and scan.excluded == {"missing-timestamps": 2}


def test_missing_file_is_clean(tmp_path):
    from ci_tools.errors import InputError

    with pytest.raises(InputError, match="file not found"):
        records.scan_file(tmp_path / "nope.jsonl")


@pytest.mark.parametrize("workers,batch", [(2, 1024), (3, 4), (7, 3)])
def test_parallel_scan_equals_sequential(tmp_path, workers, batch, monkeypatch):
    monkeypatch.setattr(records, "BATCH_LINES", batch)  # ranges ending inside a batch, too
    monkeypatch.setattr(records, "SPILL_RECORDS", 5)    # each worker's columns come back in several chunks
    lines = (AIPERF_EXPORT / "profile_export.jsonl").read_bytes().splitlines(keepends=True)
    body = lines[:10] + [b"oops\n", b"\n"] + lines[10:] + [lines[0].rstrip(b"\n")]  # no final newline
    path = tmp_path / "p.jsonl"
    path.write_bytes(b"".join(body))
    seq = records.scan_file(path, workers=1)
    par = records.scan_file(path, workers=workers)
    same(par, seq)
    assert seq.bad_lines == [11] and seq.records_total == 42


def test_merging_scans_combines_every_counter():
    """The parallel reader merges per-range scans: every count and tally of a range must survive
    (the `excluded` reasons and `itl_undefined` were once dropped, so a 2-process run reported half
    the error records a 1-process run did)."""
    from dataclasses import fields

    from ci_tools.results.records import RecordScan, merge_scans

    def part(n: int) -> RecordScan:
        s = RecordScan(records_total=n, records_profiled=n, records_warmup_dropped=n, records_error_dropped=n,
                       itl_undefined=n, isl_sum=n, osl_sum=n, isl_count=n, osl_count=n, fast_lines=n, column_records=n,
                       lines_read=n, ids_missing=n, icl_count=n, icl_ns=n)
        s.violations = {"record-span": [n, n, {"part": n}], f"rule-{n}": [n, n, {}]}
        s.phases, s.error_categories, s.excluded = {"profiling": n}, {"HTTP 500": n}, {"error": n, "warmup": n}
        s.unit_problems = {"inter_token_latency in 'x'": n}
        return s

    merged = merge_scans([part(1), part(2)])
    assert merged.unit_problems == {"inter_token_latency in 'x'": 3}
    # counts added, the first example kept, a later part's line made absolute (after the 1 line of the first)
    assert merged.violations == {"record-span": [3, 1, {"part": 1}], "rule-1": [1, 1, {}], "rule-2": [2, 3, {}]}
    for f in fields(RecordScan):
        value = getattr(merged, f.name)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and f.name not in ("start_ns_min", "end_ns_max"):
            assert value == 3, f.name
        elif isinstance(value, dict) and f.name != "violations":
            assert all(v == 3 for v in value.values()) and value, f.name


@pytest.mark.parametrize("where", ["no temp dir", "full disk", "cut short"])
def test_a_worker_that_cannot_spill_leaves_the_scan_to_one_process(tmp_path, monkeypatch, where):
    """The workers' columns go through a temp dir: without one, on a full disk (/dev/full) or when a
    spill file is cut short, the scan is the one-process scan, not an "unreadable export" and never
    a column with values missing."""
    path = tmp_path / "p.jsonl"
    path.write_bytes((AIPERF_EXPORT / "profile_export.jsonl").read_bytes())
    seq = records.scan_file(path, workers=1)
    if where == "no temp dir":
        import tempfile

        def refuse(*args, **kwargs):
            raise PermissionError(13, "Permission denied")
        monkeypatch.setattr(tempfile, "TemporaryDirectory", refuse)
    elif where == "full disk":
        monkeypatch.setattr(records, "_spill_path", lambda spill_dir, part: "/dev/full")
    else:   # the corpus export is one chunk: the worker's only write loses its last 3 bytes
        spill = records._spill_chunk

        def cut(s, fh):
            spill(s, fh)
            fh.flush()
            fh.truncate(fh.tell() - 3)
        monkeypatch.setattr(records, "_spill_chunk", cut)
    same(records.scan_file(path, workers=2), seq)
