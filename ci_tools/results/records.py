"""Streaming reader of AIPerf's `profile_export.jsonl` (one JSON record per request).

A one-hour AgentX run writes hundreds of thousands of records of a few KB each, so the file is
never loaded whole: lines are read in batches (BATCH_LINES), each record is decoded into a
small typed struct holding only the fields the metrics need, and the batch is dropped. Per-request
values go into `array('d')` columns (8 bytes each, against ~32 for a list of Python floats); sums,
minima and maxima are kept as running scalars.

Two paths read a record, and tests check they agree on every record:
- msgspec decodes each line into a struct of just the needed fields (metadata timestamps, phase,
  credit number and request id, the READ_METRICS values, the chunk gaps, error) and skips every other
  key in C. A batch of plain records
  (successful profiling requests with every value present, and plainly dropped ones) is then checked
  and turned into columns element-wise with numpy, no Python code per record; any other batch (and
  every batch where numpy is missing) goes record by record through the same rules as the json path.
  msgspec is as strict as `json.loads` about JSON syntax and stricter about types (an int where a
  float is expected is accepted, a bool or string is not; a unit other than the metric's usual one
  is refused), so what it rejects is unusual;
- `json.loads` of the line, for every line msgspec rejects (another value type, NaN, a scalar
  metric, a line that is not a JSON object, a blank line). Without msgspec installed, every line
  takes this path: same results, several times slower.
One known difference: msgspec does not validate UTF-8 inside strings it skips, so a record with
invalid UTF-8 in an unread field is counted where `json.loads` would report the line as bad.

Record filter (spec §2.2): phase = `metadata.benchmark_phase`; a record with a phase other than
"profiling" is warmup (dropped, counted); a truthy `error` is dropped and categorised. Every other
profiling record is range-checked (`record_problem`); one that fails is excluded from every metric and
counted under its reason in `excluded` (with `warmup` and `error`, so every record left out is counted
once by reason). The rest are the successful profiling requests S. Reasons in BROKEN mean the
measurement itself is wrong (the result is invalid when any occurs); those in DEGRADED invalidate it
above a small share (validity.py). A one-token response has no inter-token latency: it stays in S
and is counted in `itl_undefined`. Every record of S is held against the physical invariants of an
AIPerf record as it is read (invariants.py: by numpy on a plain batch, else one by one through the
same expressions); the records breaking each are counted in `violations` with the first one's figures.

Reading the chunk gaps costs: they are the one list decoded (about 50 ns a gap, the rest of a
record's keys are skipped), so a record of 250 gaps is read in about 4x the time of one whose gaps are
skipped (docs/performance.md).
"""

from __future__ import annotations

import json
import math
import itertools
import os
from array import array
from dataclasses import dataclass
from functools import reduce
from itertools import compress, islice, repeat
from operator import add, and_, attrgetter, eq, not_
from pathlib import Path
from typing import Any, BinaryIO, Callable, Iterable, Iterator, Literal

from ci_tools.errors import Finding, InputError
from ci_tools.results import invariants, units
from ci_tools.results.invariants import Limits
from ci_tools.results.metrics import _numpy
from ci_tools.results.scan import COLUMNS, RecordScan

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
_BOUND = {"usage_osl": MAX_TOKENS, "usage_isl": MAX_TOKENS, "otpu": MAX_RATE, "prefill": MAX_RATE,
          "e2e_rate": MAX_RATE, "decode": MAX_MS}
_COUNTS = ("usage_osl", "usage_isl")

# Lines decoded per batch: enough that the per-batch work is noise (measured: 64 to 4096 lines per
# batch run at the same speed), few enough that the held lines of multi-KB records stay a few MB.
BATCH_LINES = 1024


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
    unit = None
    if isinstance(value, dict):
        value, unit = value.get("value"), value.get("unit")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None, unit
    try:
        return float(value), unit
    except OverflowError:      # an integer beyond any float: not a measurement
        return math.inf, unit


def _in_units(out: dict, raw: Iterable[tuple[str, float | None, object]]) -> dict:
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


# ---- slow path -------------------------------------------------------------------------------

def _timestamp(value: Any) -> int | None:
    """A request timestamp as both paths judge it: None when absent, -1 when present but not a time
    (out of int64 ns, negative, not a number), so that a bad timestamp is never read as missing."""
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_NS:
        return value
    if isinstance(value, float) and math.isfinite(value) and 0 <= value <= MAX_NS:
        return int(value)
    return -1


def _session(value: Any) -> int | None:
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


def _slow_fields(rec: dict) -> dict:
    """The same numbers from a parsed record; absent values are None. `error` is returned as is."""
    meta = rec.get("metadata") if isinstance(rec.get("metadata"), dict) else {}
    metrics = rec.get("metrics") if isinstance(rec.get("metrics"), dict) else {}
    out: dict = {"error": rec.get("error"), "phase": meta.get("benchmark_phase"),
                 "rid": request_id_hash(meta.get("x_request_id")), "session": _session(meta.get("session_num"))}
    for name in ("start", "end", "ack", "credit"):
        key = "credit_issued_ns" if name == "credit" else f"request_{name}_ns"
        out[name] = _timestamp(meta.get(key))
    _chunks(out, metrics.get(CHUNKS))
    return _in_units(out, ((name, *_metric_value(metrics, name)) for name in READ_METRICS))


def _good(x: float | None) -> bool:
    return x is not None and math.isfinite(x) and x > 0


def _count(x: float | None) -> bool:
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
            or not all(_in_bound(f.get(k), bound) for k, bound in _BOUND.items()) \
            or not all(f.get(k) is None or f[k].is_integer() for k in _COUNTS):
        return "bad-value"
    return None


def _add_slow(s: RecordScan, f: dict, lineno: int, limits: Limits) -> None:
    phase = f.get("phase")
    pname = phase if isinstance(phase, str) else "<none>" if phase is None else "<not text>"
    s.phases[pname] = s.phases.get(pname, 0) + 1
    if isinstance(phase, str) and phase != PROFILING:
        s.records_warmup_dropped += 1
        s.excluded["warmup"] = s.excluded.get("warmup", 0) + 1
        return
    if f.get("error"):
        s.records_error_dropped += 1
        s.excluded["error"] = s.excluded.get("error", 0) + 1
        cat = error_category(f["error"])
        s.error_categories[cat] = s.error_categories.get(cat, 0) + 1
        return
    # AIPerf writes benchmark_phase on every record: without one, the record's origin is unknown
    reason = "no-phase" if phase is None or not isinstance(phase, str) else record_problem(f)
    if reason is not None:
        s.excluded[reason] = s.excluded.get(reason, 0) + 1
        if reason == "bad-unit":
            s.unit_problems[f["bad_unit"]] = s.unit_problems.get(f["bad_unit"], 0) + 1
        return
    s.records_profiled += 1
    ttft, itl, e2el = f["ttft_ms"], f.get("itl_ms"), f["e2el_ms"]
    isl, osl = f["isl"], f["osl"]
    s.ttft_ms.append(ttft)
    if itl is None:
        s.itl_undefined += 1
    else:
        s.itl_ms.append(itl)
    s.e2el_ms.append(e2el)
    s.isl_sum += isl
    s.isl_count += 1
    s.osl_sum += osl
    s.osl_count += 1
    start, end = f["start"], f["end"]
    s.osl.append(osl)
    s.isl.append(isl)
    s.otpu.append(_number_or_nan(f.get("otpu")))
    s.start_ns.append(start)
    s.end_ns.append(end)
    if f.get("rid") is None:
        s.ids_missing += 1
    else:
        s.request_ids.append(f["rid"])
    if f.get("session") is not None:
        s.sessions.append(f["session"])
    if s.start_ns_min is None or start < s.start_ns_min:
        s.start_ns_min = start
    if s.end_ns_max is None or end > s.end_ns_max:
        s.end_ns_max = end
    s.icl_count += f["icl_len"]
    s.icl_ns += round(f["icl_sum"] * 1e6)
    values = invariant_values(f)
    broken, gone = invariants.record_verdicts(values, limits)
    for rule in broken:
        invariants.note(s.violations, rule, 1, lineno, {**values, "missing": ", ".join(gone)})


def invariant_values(f: dict) -> dict:
    """The figures invariants.py reads, from one record's fields (NaN where it has none)."""
    start, ack, credit = f["start"], f.get("ack"), f.get("credit")
    return {"span_ms": (f["end"] - start) / 1e6, "ack_ms": NAN if ack is None else (ack - start) / 1e6,
            "lead_ms": NAN if credit is None else (start - credit) / 1e6, "ttft": f["ttft_ms"],
            "itl": _number_or_nan(f.get("itl_ms")), "e2el": f["e2el_ms"], "isl": f["isl"], "osl": f["osl"],
            **{k: _number_or_nan(f.get(k)) for k in ("usage_isl", "usage_osl", "otpu", "prefill", "e2e_rate", "decode")},
            "icl_sum": f["icl_sum"], "icl_len": float(f["icl_len"]),
            "session": NAN if f.get("session") is None else float(f["session"])}


def _number_or_nan(x: float | None) -> float:
    return NAN if x is None else x


# ---- fast path (msgspec) -----------------------------------------------------------------------

_DECODER: list = []  # [(decode, DecodeError)] or [None] when msgspec is not installed


def _msgspec_decoder() -> tuple[Callable[[bytes], Any], type[Exception]] | None:
    """msgspec's decoder of a record, built once; None without msgspec (the json path is used)."""
    if not _DECODER:
        try:
            import msgspec
        except ImportError:
            _DECODER.append(None)
            return None

        # Only these keys are decoded; msgspec skips the others (HTTP timings, other ids, the other
        # per-record metrics) without building objects for them. A value of another type than declared
        # raises, and the line goes to the json path, which has the general rules. (defstruct, not
        # class syntax: this module's annotations are strings msgspec could not resolve here.)
        # Absent keys decode to shared empty (frozen) structs, so every path below a record
        # exists and one attrgetter reads them all; an explicit null goes to the json path.
        opt = msgspec.defstruct
        # A metric's unit is declared as its usual unit (or absent): a record in any other unit, even a
        # convertible one, is refused here and read by the json path, which converts or refuses it; so
        # the columns never carry units and a batch never needs checking for them (AIPerf always writes
        # the usual units).
        metric_of = {usual: opt("Metric", [("value", float | None, None), ("unit", Literal[usual] | None, None)],
                                gc=False, frozen=True) for usual in set(USUAL_UNITS)}
        # the chunk gaps are the one list read: absent, they decode to an empty tuple (no list built)
        chunks = opt("Chunks", [("value", list[float], ()), ("unit", Literal[units.RECORD_UNITS[CHUNKS].usual] | None, None)],
                     gc=False, frozen=True)
        metadata = opt("Metadata", [("request_start_ns", int | None, None), ("request_end_ns", int | None, None),
                                    ("request_ack_ns", int | None, None), ("credit_issued_ns", int | None, None),
                                    ("session_num", int | None, None),
                                    ("benchmark_phase", str | None, None), ("x_request_id", str | None, None)],
                       gc=False, frozen=True)
        metrics = opt("Metrics", [*((name, metric_of[usual], metric_of[usual]())
                                    for name, usual in zip(READ_METRICS, USUAL_UNITS)), (CHUNKS, chunks, chunks())],
                      gc=False, frozen=True)
        record = opt("Record", [("metadata", metadata, metadata()), ("metrics", metrics, metrics()),
                                ("error", Any, None)], gc=False)
        _DECODER.append((msgspec.json.Decoder(record).decode, msgspec.DecodeError))
    return _DECODER[0]


# one C-level call per record for every field the checks and metrics need, in the order of FIELD_NAMES
# (metric values in their usual units: the decoder accepts no other)
FIELD_NAMES = ("phase", "error", "start", "end", "ack", "credit", "session", "rid", *READ_METRICS.values(), "icl")
_FIELDS = attrgetter("metadata.benchmark_phase", "error", "metadata.request_start_ns", "metadata.request_end_ns",
                     "metadata.request_ack_ns", "metadata.credit_issued_ns", "metadata.session_num",
                     "metadata.x_request_id", *(f"metrics.{name}.value" for name in READ_METRICS),
                     f"metrics.{CHUNKS}.value")


# the same fields a batch at a time, in two hops (a record's metadata and metrics, then their fields):
# measured 20 % faster than one attrgetter of every dotted path per record
_META = attrgetter("metadata")
_METRICS = attrgetter("metrics")
_ERROR = attrgetter("error")
_META_FIELDS = attrgetter("benchmark_phase", "request_start_ns", "request_end_ns", "request_ack_ns", "credit_issued_ns",
                          "session_num", "x_request_id")
_VALUES = [attrgetter(f"{name}.value") for name in (*READ_METRICS, CHUNKS)]


def _columns_of(recs: list) -> list:
    """FIELD_NAMES' values of a batch of decoded records, one sequence per field."""
    phase, *meta = zip(*map(_META_FIELDS, map(_META, recs)))
    metrics = list(map(_METRICS, recs))
    return [phase, list(map(_ERROR, recs)), *meta, *(list(map(get, metrics)) for get in _VALUES)]


def _struct_fields(r: Any) -> dict:
    """The `_slow_fields` dict of a decoded struct (the same rules then apply to both paths)."""
    phase, error, start, end, ack, credit, session, rid, *values, icl = _FIELDS(r)
    out = {"error": error, "phase": phase, "start": _timestamp(start), "end": _timestamp(end),
           "ack": _timestamp(ack), "credit": _timestamp(credit), "session": _session(session),
           "rid": request_id_hash(rid)}
    # msgspec refuses NaN and numbers beyond a float, so every gap is finite
    out.update(icl_len=len(icl), icl_sum=sum(icl))
    return _in_units(out, zip(READ_METRICS, values, repeat(None)))


_FLOATS = ("ttft_ms", "itl_ms", "e2el_ms", "isl", "osl", "usage_osl", "usage_isl", "otpu", "prefill", "e2e_rate",
           "decode")


def _plain_columns(np: Any, c: dict) -> dict | None:
    """A batch's value columns as numpy arrays (keys of FIELD_NAMES, and the invariants' FIELDS), when
    record_problem() passes every record and each has every figure the checks read; None when some
    record needs the general rules (a value or timestamp missing, out of range or inconsistent). The
    same IEEE comparisons as record_problem, element-wise."""
    if not all(c["icl"]):       # a response without chunk gaps: one content chunk
        return None
    try:
        st, en, ack, cr, session = (np.array(c[k], dtype=np.int64) for k in ("start", "end", "ack", "credit", "session"))
    except (TypeError, OverflowError, ValueError):   # a missing timestamp, or one beyond int64
        return None
    # a missing value becomes NaN here, which the finiteness test below refuses
    f = {k: np.array(c[k], dtype=np.float64) for k in _FLOATS}
    icl = c["icl"]
    chunks = {"icl_sum": np.fromiter(map(sum, icl), np.float64, len(icl)),
              "icl_len": np.fromiter(map(len, icl), np.float64, len(icl))}
    ttft, itl, e2el, isl, osl = f["ttft_ms"], f["itl_ms"], f["e2el_ms"], f["isl"], f["osl"]
    with np.errstate(all="ignore"):
        if not all(np.isfinite(x).all() for x in (*f.values(), chunks["icl_sum"])):
            return None
        if not (st.min() > 0 and (st < en).all() and ack.min() >= 0 and cr.min() >= 0
                and isl.min() >= 0 and osl.min() >= 1
                and ttft.min() > 0 and itl.min() > 0 and e2el.min() > 0 and (ttft <= e2el).all()
                and (isl == np.floor(isl)).all() and (osl == np.floor(osl)).all()
                and isl.max() <= MAX_TOKENS and osl.max() <= MAX_TOKENS
                and e2el.max() <= MAX_MS and itl.max() <= MAX_MS and chunks["icl_sum"].max() <= MAX_MS
                and all(f[k].min() >= 0 and f[k].max() <= bound for k, bound in _BOUND.items())
                and all((f[k] == np.floor(f[k])).all() for k in _COUNTS)):
            return None
        return {"start": st, "end": en, "session": session, **f, **chunks,
                "span_ms": (en - st) / 1e6, "ack_ms": (ack - st) / 1e6, "lead_ms": (st - cr) / 1e6}


def _add_structs(s: RecordScan, recs: list, first_lineno: int, limits: Limits) -> None:
    """Add a batch of decoded records, in file order (the first on line `first_lineno`). The common
    batch (successful profiling records with every value present, and records that are plainly
    dropped) is added column by column, checked element-wise; any other batch record by record with
    the general rules."""
    n = len(recs)
    if not n:
        return
    phase, error, *values = _columns_of(recs)
    lines: Any = range(first_lineno, first_lineno + n)
    good: Any = recs
    dropped: Any = ()
    if phase.count(PROFILING) != n or error.count(None) != n:
        keep = list(map(and_, map(eq, phase, repeat(PROFILING)), map(not_, error)))
        # a record without a phase and without an error is excluded as "no-phase": rare, so its
        # batch goes record by record rather than the columns learning that rule
        if any(p is None and not e for p, e in compress(zip(phase, error), map(not_, keep))):
            for lineno, r in zip(lines, recs):
                _add_slow(s, _struct_fields(r), lineno, limits)
            return
        good = list(compress(recs, keep))
        dropped = list(zip(compress(lines, map(not_, keep)), compress(recs, map(not_, keep))))
        lines = list(compress(lines, keep))
        values = [list(compress(col, keep)) for col in values]
    if good:
        c = dict(zip(FIELD_NAMES[2:], values))
        np = _numpy()
        columns = None if np is None else _plain_columns(np, c)
        if columns is None:  # some record needs record_problem's verdict: the general rules, one by one
            for lineno, r in zip(lines, good):
                _add_slow(s, _struct_fields(r), lineno, limits)
        else:
            _add_columns(s, np, columns, c, lines, limits)
    for lineno, r in dropped:  # warmup and error records touch only counters
        _add_slow(s, _struct_fields(r), lineno, limits)


def _add_columns(s: RecordScan, np: Any, columns: dict, c: dict, lines: Any, limits: Limits) -> None:
    """Add a plain batch (`_plain_columns`) to the scan, and the records that break an invariant."""
    k = len(columns["start"])
    s.records_profiled += k
    s.column_records += k
    s.phases[PROFILING] = s.phases.get(PROFILING, 0) + k
    for name, key, kind in (("start_ns", "start", None), ("end_ns", "end", None), ("ttft_ms", "ttft_ms", None),
                            ("itl_ms", "itl_ms", None), ("e2el_ms", "e2el_ms", None), ("osl", "osl", np.float32),
                            ("isl", "isl", np.float32), ("otpu", "otpu", np.float32), ("sessions", "session", None)):
        col = columns[key]
        getattr(s, name).frombytes((col if kind is None else col.astype(kind)).tobytes())
    rids = c["rid"]
    missing = rids.count(None)
    s.ids_missing += missing
    s.request_ids.extend(array("q", map(hash, rids if not missing else [r for r in rids if r is not None])))
    # one addition at a time in file order, as _add_slow does (sum() may round differently)
    s.isl_sum = reduce(add, c["isl"], s.isl_sum)
    s.osl_sum = reduce(add, c["osl"], s.osl_sum)
    s.isl_count += k
    s.osl_count += k
    s.icl_count += int(columns["icl_len"].sum())
    s.icl_ns += int(np.rint(columns["icl_sum"] * 1e6).astype(np.int64).sum())
    smin, emax = int(columns["start"].min()), int(columns["end"].max())
    if s.start_ns_min is None or smin < s.start_ns_min:
        s.start_ns_min = smin
    if s.end_ns_max is None or emax > s.end_ns_max:
        s.end_ns_max = emax
    v = invariants.Values(**{name: columns[_COLUMN_OF.get(name, name)] for name in invariants.FIELDS})
    v.session = v.session.astype(np.float64)
    with np.errstate(all="ignore"):
        for rule, ok in invariants.checks(v, np, limits):
            bad = ~ok
            count = int(bad.sum())
            if count:
                i = int(bad.argmax())
                example = {name: float(getattr(v, name)[i]) for name in invariants.FIELDS}
                invariants.note(s.violations, rule, count, lines[i], {**example, "missing": ""})


# the invariants' name of a figure -> the key _plain_columns gives it under
_COLUMN_OF = {"ttft": "ttft_ms", "itl": "itl_ms", "e2el": "e2el_ms"}


def _add_lines(s: RecordScan, lines: list[bytes], first_lineno: int, decoder: tuple | None, limits: Limits) -> None:
    """Add a batch line by line: msgspec where it accepts the line, else json.loads."""
    for lineno, line in enumerate(lines, first_lineno):
        if len(line) > MAX_LINE_BYTES:
            s.records_total += 1
            s.bad_lines.append(lineno)
            continue
        if decoder is not None:
            try:
                rec = decoder[0](line)
            except (decoder[1], RecursionError):
                pass
            else:
                s.records_total += 1
                s.fast_lines += 1
                _add_structs(s, [rec], lineno, limits)
                continue
        if not line.strip():
            continue
        s.records_total += 1
        try:
            obj = json.loads(line) if not too_deep(line) else None
        except (ValueError, RecursionError):
            obj = None
        if not isinstance(obj, dict):
            s.bad_lines.append(lineno)
            continue
        _add_slow(s, _slow_fields(obj), lineno, limits)


def too_deep(line: bytes, limit: int = MAX_DEPTH) -> bool:
    """Whether a JSON line nests arrays and objects deeper than `limit` (brackets inside strings do not
    count). Only lines msgspec refused come here, so the Python loop is rare."""
    depth, in_string, escaped = 0, False, False
    for ch in line:
        if in_string:
            if escaped:
                escaped = False
            elif ch == 0x5C:        # backslash
                escaped = True
            elif ch == 0x22:        # quote
                in_string = False
        elif ch == 0x22:
            in_string = True
        elif ch in (0x5B, 0x7B):    # [ {
            depth += 1
            if depth > limit:
                return True
        elif ch in (0x5D, 0x7D):
            depth -= 1
    return False


def scan_batches(batches: Iterable[list[bytes]], *, fast: bool = True, spill: BinaryIO | None = None,
                 limits: Limits = Limits()) -> RecordScan:
    """Scan JSONL lines (bytes) given in consecutive batches. `fast=False` forces json.loads. With
    `spill`, the columns are written to it every SPILL_RECORDS records (`_spill_chunk`) and the
    scan returned holds none: a worker's memory stays that of a few batches. `limits`: the
    tolerances of the per-record invariants (the policy's)."""
    s = RecordScan()
    decoder = _msgspec_decoder() if fast else None
    lineno = 1
    for lines in batches:
        recs = None
        if decoder is not None and max(map(len, lines), default=0) <= MAX_LINE_BYTES:
            try:
                recs = list(map(decoder[0], lines))
            except (decoder[1], RecursionError):   # msgspec too raises RecursionError on deep nesting
                pass  # some line needs the json path (or is blank): this batch goes line by line
        if recs is not None:
            s.records_total += len(recs)
            s.fast_lines += len(recs)
            _add_structs(s, recs, lineno, limits)
        else:
            _add_lines(s, lines, lineno, decoder, limits)
        lineno += len(lines)
        if spill is not None and len(s.ttft_ms) >= SPILL_RECORDS:
            _spill_chunk(s, spill)
    if spill is not None:
        _spill_chunk(s, spill)
    s.lines_read = lineno - 1
    return s


def _batched(lines: Iterable[bytes]) -> Iterator[list[bytes]]:
    it = iter(lines)
    while batch := list(islice(it, BATCH_LINES)):
        yield batch


def scan_lines(lines: Iterable[bytes], *, fast: bool = True, limits: Limits = Limits()) -> RecordScan:
    """Scan an iterable of JSONL lines (bytes). `fast=False` forces json.loads on every line."""
    return scan_batches(_batched(lines), fast=fast, limits=limits)


# Files at least this big are scanned by one process per usable CPU (at most MAX_WORKERS), the
# calling process taking the first range: the decode is CPU-bound (0.5 to 0.8 GB/s per core on a
# 2.1 GHz Xeon vCPU) and a one-hour export is gigabytes. Smaller files (and every test export) take one process.
PARALLEL_MIN_BYTES = 256 * 1024 * 1024
MAX_WORKERS = 4


def _range_batches(path: str, start: int, end: int) -> Iterator[list[bytes]]:
    """Batches of the lines of path whose first byte lies in [start, end) (start is a line start).

    Buffered line iteration (readline finds b"\\n" with memchr) measured faster than splitting big
    blocks with bytes.split, which compares byte by byte."""
    with open(path, "rb", buffering=1 << 20) as fh:
        fh.seek(start)
        pos = start
        while pos < end:
            batch = list(islice(fh, BATCH_LINES))
            if not batch:
                return
            size = sum(map(len, batch))
            if pos + size > end:  # the range ends inside this batch (only with several workers)
                keep = []
                for line in batch:
                    if pos >= end:
                        break
                    keep.append(line)
                    pos += len(line)
                yield keep
                return
            pos += size
            yield batch


def _line_starts(path: str, size: int, parts: int) -> list[int]:
    """parts+1 offsets, each at the start of a line, splitting the file into near-equal ranges."""
    offsets = [0]
    with open(path, "rb") as fh:
        for i in range(1, parts):
            fh.seek(max(offsets[-1], size * i // parts))
            fh.readline()  # to the start of the next line
            offsets.append(min(fh.tell(), size))
    offsets.append(size)
    return offsets


def _scan_range(args: tuple[str, int, int, bool, Limits]) -> RecordScan:
    path, start, end, fast, limits = args
    return scan_batches(_range_batches(path, start, end), fast=fast, limits=limits)


SPILL_RECORDS = 1 << 16   # a worker writes its columns out this many records at a time (4 MB)


@dataclass
class Spilled:
    """A worker's scan whose columns went to the file at `path` as they grew: pickled, a part's
    columns were held three times at once (the worker's bytes, the parent's received bytes and the
    rebuilt arrays) and the worker held all of its part until the end."""

    scan: RecordScan
    path: str


def _spill_chunk(s: RecordScan, fh: BinaryIO) -> None:
    """Append the scan's columns to fh as one chunk (their lengths, then each column's raw values)
    and empty them."""
    columns = [getattr(s, col) for col in COLUMNS]
    array("q", map(len, columns)).tofile(fh)
    for col, values in zip(COLUMNS, columns):
        values.tofile(fh)
        setattr(s, col, array(values.typecode))


class SpillFailed(Exception):
    """A worker could not write its columns (the temp dir is full) or read its range: the scan is
    redone in one process, which reports an unreadable export with its own message."""


def _spill_path(spill_dir: str, part: int) -> str:
    return os.path.join(spill_dir, f"part-{part}")


def _scan_range_spilled(args: tuple[str, int, int, bool, Limits, str]) -> Spilled:
    path, start, end, fast, limits, spill = args
    try:
        with open(spill, "wb") as fh:
            return Spilled(scan_batches(_range_batches(path, start, end), fast=fast, spill=fh, limits=limits), spill)
    except OSError as exc:
        # the spill file (a full disk fails at a write or at the close's flush), or the export: the
        # one-process scan that follows reports an unreadable export as such
        raise SpillFailed(str(exc)) from None


def _extend_from(out: RecordScan, part: RecordScan | Spilled) -> None:
    """Append a part's columns to out's; a spilled part's are read from its file a chunk at a time."""
    if isinstance(part, RecordScan):
        for col in COLUMNS:
            getattr(out, col).extend(getattr(part, col))
            setattr(part, col, None)  # freed as soon as copied: the merge holds one part's column at a time
        return
    try:
        with open(part.path, "rb") as fh:
            while header := fh.read(8 * len(COLUMNS)):
                for col, n in zip(COLUMNS, array("q", header)):
                    if n:
                        getattr(out, col).fromfile(fh, n)
        os.unlink(part.path)
    except (OSError, EOFError, ValueError) as exc:   # unreadable or cut short: never half a column
        raise SpillFailed(f"{part.path}: {exc}") from None


def merge_scans(parts: Iterable[RecordScan | Spilled]) -> RecordScan:
    """Scans of consecutive ranges, in order -> one scan (line numbers made absolute). Consumed one
    at a time so each part's columns are freed once copied."""
    it = iter(parts)
    first = next(it, None)
    if first is None:
        return RecordScan()
    # the first part becomes the result: its columns are extended in place, not copied
    if isinstance(first, Spilled):   # only later parts are spilled; this one reads into a fresh scan
        _extend_from(first.scan, first)
        first = first.scan
    out = first
    for part in it:
        _extend_from(out, part)
        s = part if isinstance(part, RecordScan) else part.scan
        offset = out.lines_read
        out.records_total += s.records_total
        out.records_profiled += s.records_profiled
        out.records_warmup_dropped += s.records_warmup_dropped
        out.records_error_dropped += s.records_error_dropped
        out.bad_lines.extend(n + offset for n in s.bad_lines)
        out.itl_undefined += s.itl_undefined
        for src, dst in ((s.phases, out.phases), (s.error_categories, out.error_categories),
                         (s.excluded, out.excluded)):
            for k, v in src.items():
                dst[k] = dst.get(k, 0) + v
        out.ids_missing += s.ids_missing
        for k, v in s.unit_problems.items():
            out.unit_problems[k] = out.unit_problems.get(k, 0) + v
        invariants.merge(out.violations, s.violations, offset)
        out.icl_count += s.icl_count
        out.icl_ns += s.icl_ns
        out.isl_sum += s.isl_sum
        out.osl_sum += s.osl_sum
        out.isl_count += s.isl_count
        out.osl_count += s.osl_count
        out.fast_lines += s.fast_lines
        out.column_records += s.column_records
        if s.start_ns_min is not None and (out.start_ns_min is None or s.start_ns_min < out.start_ns_min):
            out.start_ns_min = s.start_ns_min
        if s.end_ns_max is not None and (out.end_ns_max is None or s.end_ns_max > out.end_ns_max):
            out.end_ns_max = s.end_ns_max
        out.lines_read += s.lines_read
    return out


def _usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def scan_file(path: Path | str, *, fast: bool = True, workers: int | None = None,
              limits: Limits = Limits()) -> RecordScan:
    """Scan a profile_export.jsonl. Big files are split at line starts into `workers` ranges: the
    calling process scans the first, forked processes the others (no idle parent holding memory)."""
    p = Path(path)
    try:
        size = p.stat().st_size
        if workers is None:
            workers = min(_usable_cpus(), MAX_WORKERS) if size >= PARALLEL_MIN_BYTES else 1
        if workers <= 1:
            return _scan_range((str(p), 0, size, fast, limits))
        import multiprocessing
        import tempfile

        bounds = _line_starts(str(p), size, workers)
        jobs = [(str(p), a, b, fast, limits) for a, b in zip(bounds, bounds[1:]) if b > a]
        if len(jobs) <= 1:
            return _scan_range((str(p), 0, size, fast, limits))
        try:
            spill_dir = tempfile.TemporaryDirectory(prefix="ci-tools-scan-")
        except OSError:   # no temp dir for the workers' columns: one process needs none
            return _scan_range((str(p), 0, size, fast, limits))
        try:
            with spill_dir:
                spills = [(*job, _spill_path(spill_dir.name, i)) for i, job in enumerate(jobs[1:], 1)]
                # fork: the children share the already-imported code; nothing else is inherited that matters
                with multiprocessing.get_context("fork").Pool(len(jobs) - 1) as pool:
                    pending = pool.map_async(_scan_range_spilled, spills)
                    first = _scan_range(jobs[0])
                    rest = pending.get()
                # the workers have exited: only this process holds columns while they are joined
                return merge_scans(itertools.chain([first], rest))
        except SpillFailed:   # no room for the workers' columns (a full temp dir)
            return _scan_range((str(p), 0, size, fast, limits))
    except FileNotFoundError:
        raise InputError(f"{p}: file not found", findings=[Finding(
            str(p), None, None, "AIPerf's per-request export is missing",
            "the client did not finish, or the directory is not an AIPerf artifact directory")]) from None
    except OSError as exc:
        raise InputError(f"{p}: cannot read: {exc.strerror}") from None
