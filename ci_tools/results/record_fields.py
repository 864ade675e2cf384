"""What the reader takes from one AIPerf record, and whether the record can be measured (pure).

Both decoders of `record_batches.py` hand a record over as the same dict of fields (`json_fields` from
a record `json.loads` parsed; the msgspec path builds the same dict, or the same figures as columns):
its phase, error, timestamps, credit number, request id, the READ_METRICS values converted into
ci-tools' units, and the length and sum of its chunk gaps. `record_problem` says why a successful
profiling record cannot be measured (a BROKEN or DEGRADED reason of `scan.py`), `invariant_values` the
figures `invariants.py` holds it to. The limits below bound what a record may hold (issue 25, 35).
"""

from __future__ import annotations

import math
from typing import Any, Iterable, TypeGuard

from ci_tools.results import units

PROFILING = "profiling"

# metric name in the record -> column name in RecordScan
LATENCY_METRICS = {
    "time_to_first_token": "ttft_ms",
    "inter_token_latency": "itl_ms",
    "request_latency": "e2el_ms",
}
TOKEN_METRICS = {
    "input_sequence_length": "isl",
    "output_sequence_length": "osl",
}
# read for the cross-checks only (invariants.py, crosscheck.py, summary.py), never for a metric
CHECK_METRICS = {
    "usage_completion_tokens": "usage_osl",
    "output_token_throughput_per_user": "otpu",
    "usage_prompt_tokens": "usage_isl",
    "prefill_throughput_per_user": "prefill",
    "e2e_output_token_throughput": "e2e_rate",
    "decode_duration": "decode",
}
READ_METRICS = {**LATENCY_METRICS, **TOKEN_METRICS, **CHECK_METRICS}
# each read metric's usual unit: a batch whose units are all these (or absent) is read by columns
USUAL_UNITS = tuple(units.RECORD_UNITS[name].usual for name in READ_METRICS)
# the gaps between a response's content chunks: a list, of which the reader keeps the length and sum
CHUNKS = "inter_chunk_latency"
NAN = float("nan")

# Input limits (issue 25): an AIPerf record is a few KB with objects nested 3 deep. A line longer than
# MAX_LINE_BYTES or nested deeper than MAX_DEPTH is a bad line (counted, never parsed further: a
# nesting of 1,000 made json.loads raise RecursionError); a token count above MAX_TOKENS is not a count
# (1e308 of them summed to inf), nor is a timestamp outside an int64 of nanoseconds.
MAX_LINE_BYTES = 1 << 20
MAX_DEPTH = 64
MAX_TOKENS = 10 ** 9
MAX_NS = (1 << 63) - 1
# Bounds of the other figures of a record (issue 35): a latency or duration above a day, or a per-user
# rate above 10^9 tokens/s, is no measurement (an ITL of 1e308 in two records overflowed the mean into
# a traceback); the record is left out as `bad-value`, like a NaN or an infinity where a number belongs.
MAX_MS = 86_400_000
MAX_RATE = 10 ** 9
# which bound each CHECK_METRICS figure has (the latencies and counts of the metrics have theirs in
# record_problem's own rules)
CHECK_BOUNDS = {"usage_osl": MAX_TOKENS, "usage_isl": MAX_TOKENS, "otpu": MAX_RATE, "prefill": MAX_RATE,
          "e2e_rate": MAX_RATE, "decode": MAX_MS}
COUNT_FIELDS = ("usage_osl", "usage_isl")


def error_category(err: Any) -> str:
    """Short category of an AIPerf error: first non-empty of type/error_type/code/class/status, else the
    message's first line up to ':'; at most 120 characters; "unknown" when nothing is usable."""
    if isinstance(err, dict):
        for key in ("type", "error_type", "code", "class", "status"):
            value = err.get(key)
            if value not in (None, ""):
                return str(value)[:120]
        err = err.get("message") or err.get("detail") or ""
    text = str(err).strip()
    if not text or text in ("True", "true"):
        return "unknown"
    return text.splitlines()[0].split(":")[0].strip()[:120] or "unknown"


def _metric_value(metrics: dict, name: str) -> tuple[float | None, object]:
    """(value, unit) of one metric as written: the value None when absent or not a number."""
    value = metrics.get(name)
    unit: object = None
    if isinstance(value, dict):
        unit = value.get("unit")
        value = value.get("value")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None, unit
    try:
        return float(value), unit
    except OverflowError:      # an integer beyond any float: not a measurement
        return math.inf, unit


def in_units(out: dict, raw: Iterable[tuple[str, float | None, object]]) -> dict:
    """Each (metric, value, unit) into `out[column]`, converted into ci-tools' unit (units.py). The first
    unit that is not one of its metric's is kept in `out["bad_unit"]` (the record is then refused)."""
    for name, value, unit in raw:
        f = units.RECORD_UNITS[name].factor(unit)
        if f is None:
            out.setdefault("bad_unit", f"{name} in {units.shown(unit)}")
            out[READ_METRICS[name]] = value
        else:
            out[READ_METRICS[name]] = value if value is None or f == 1.0 else value * f
    return out


def request_id_hash(value: Any) -> int | None:
    """A 64-bit hash of a record's x_request_id (duplicates are found among these), None without one."""
    if value is None:
        return None
    return hash(value if isinstance(value, str) else repr(value))


def timestamp_ns(value: Any) -> int | None:
    """A request timestamp as both paths judge it: None when absent, -1 when present but not a time
    (out of int64 ns, negative, not a number), so that a bad timestamp is never read as missing."""
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_NS:
        return value
    if isinstance(value, float) and math.isfinite(value) and 0 <= value <= MAX_NS:
        return int(value)
    return -1


def session_number(value: Any) -> int | None:
    """AIPerf's credit number of a record (session_num), None when absent or not an int64."""
    if isinstance(value, int) and not isinstance(value, bool) and -MAX_NS <= value <= MAX_NS:
        return value
    return None


def _chunks(out: dict, value: Any) -> dict:
    """inter_chunk_latency (a list of ms, or another unit's) -> its length and its sum in ms;
    a list holding anything but finite numbers makes `icl_bad` true (the record is left out as bad-value)."""
    unit = None
    if isinstance(value, dict):
        value, unit = value.get("value"), value.get("unit")
    if value is None:
        out.update(icl_len=0, icl_sum=0.0)
        return out
    f = units.RECORD_UNITS[CHUNKS].factor(unit)
    if f is None:
        out.setdefault("bad_unit", f"{CHUNKS} in {units.shown(unit)}")
        f = 1.0
    ok = isinstance(value, list) and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in value)
    try:
        gaps = [float(x) * f for x in value] if ok else []
    except OverflowError:     # an integer beyond any float
        ok, gaps = False, []
    out.update(icl_len=len(gaps), icl_sum=sum(gaps),
               icl_bad=not ok or not all(map(math.isfinite, gaps)))
    return out


def json_fields(rec: dict) -> dict:
    """The same numbers from a parsed record; absent values are None. `error` is returned as is."""
    meta = m if isinstance(m := rec.get("metadata"), dict) else {}
    metrics = m if isinstance(m := rec.get("metrics"), dict) else {}
    out: dict = {"error": rec.get("error"), "phase": meta.get("benchmark_phase"),
                 "rid": request_id_hash(meta.get("x_request_id")), "session": session_number(meta.get("session_num"))}
    for name in ("start", "end", "ack", "credit"):
        key = "credit_issued_ns" if name == "credit" else f"request_{name}_ns"
        out[name] = timestamp_ns(meta.get(key))
    _chunks(out, metrics.get(CHUNKS))
    return in_units(out, ((name, *_metric_value(metrics, name)) for name in READ_METRICS))


def _good(x: float | None) -> bool:
    return x is not None and math.isfinite(x) and x > 0


def _count(x: float | None) -> TypeGuard[float]:
    return x is not None and math.isfinite(x) and 0 <= x <= MAX_TOKENS and x.is_integer()


def _in_bound(x: float | None, bound: float) -> bool:
    """An optional figure: absent, or a finite number in [0, bound] (NaN and infinity fail)."""
    return x is None or 0 <= x <= bound


def record_problem(f: dict) -> str | None:
    """Why a successful profiling record cannot be measured (a BROKEN or DEGRADED reason), or None.

    How a record's own figures agree with each other is not judged here (the record stays measured):
    that is invariants.py's, with the policy's tolerances."""
    if f.get("bad_unit") is not None:
        return "bad-unit"
    start, end = f.get("start"), f.get("end")
    if start is None or end is None:
        return "missing-timestamps"
    if start <= 0 or end <= start or f.get("ack") == -1 or f.get("credit") == -1:
        return "bad-timestamps"
    isl, osl = f.get("isl"), f.get("osl")
    if not (_count(isl) and _count(osl)):
        return "bad-token-counts"
    if osl == 0:
        return "zero-output"
    e2el = f.get("e2el_ms")
    if e2el is None:
        return "missing-latency"
    if not _good(e2el):
        return "bad-latency"
    ttft = f.get("ttft_ms")
    if ttft is None:
        return "missing-ttft"
    if not _good(ttft) or ttft > e2el:
        return "bad-ttft"
    itl = f.get("itl_ms")
    if itl is None and osl > 1:
        return "missing-itl"
    if itl is not None and not _good(itl):
        return "nonpositive-itl"
    if e2el > MAX_MS or (itl is not None and itl > MAX_MS) or f.get("icl_bad") or f.get("icl_sum", 0.0) > MAX_MS \
            or not all(_in_bound(f.get(k), bound) for k, bound in CHECK_BOUNDS.items()) \
            or not all(f.get(k) is None or f[k].is_integer() for k in COUNT_FIELDS):
        return "bad-value"
    return None


def invariant_values(f: dict) -> dict:
    """The figures invariants.py reads, from one record's fields (NaN where it has none)."""
    start, ack, credit = f["start"], f.get("ack"), f.get("credit")
    return {"span_ms": (f["end"] - start) / 1e6, "ack_ms": NAN if ack is None else (ack - start) / 1e6,
            "lead_ms": NAN if credit is None else (start - credit) / 1e6, "ttft": f["ttft_ms"],
            "itl": number_or_nan(f.get("itl_ms")), "e2el": f["e2el_ms"], "isl": f["isl"], "osl": f["osl"],
            **{k: number_or_nan(f.get(k)) for k in ("usage_isl", "usage_osl", "otpu", "prefill", "e2e_rate", "decode")},
            "icl_sum": f["icl_sum"], "icl_len": float(f["icl_len"]),
            "session": NAN if f.get("session") is None else float(f["session"])}


def number_or_nan(x: float | None) -> float:
    return NAN if x is None else x
