"""Adding AIPerf records to a `RecordScan`, a batch of lines at a time (pure: bytes in, the scan out).

Two paths read a record, and tests check they agree on every record:
- msgspec decodes each line into a struct of just the needed fields (metadata timestamps, phase,
  credit number and request id, the READ_METRICS values, the chunk gaps, error) and skips every other
  key in C. A batch of plain records (successful profiling requests with every value present, and
  plainly dropped ones) is then checked and turned into columns element-wise with numpy, no Python
  code per record; any other batch goes record by record through the same rules as the json path.
  msgspec is as strict as `json.loads` about JSON syntax and stricter about types (an int where a
  float is expected is accepted, a bool or string is not; a unit other than the metric's usual one
  is refused), so what it rejects is unusual;
- `json.loads` of the line, for every line msgspec rejects (another value type, NaN, a scalar
  metric, a line that is not a JSON object, a blank line). Without msgspec installed, every line
  takes this path: same results, several times slower.
One known difference: msgspec does not validate UTF-8 inside strings it skips, so a record with
invalid UTF-8 in an unread field is counted where `json.loads` would report the line as bad.

Every record of S is held against the invariants of `invariants.py` with the rest of its batch,
whichever path read it, in file order.
"""

from __future__ import annotations

import json
from array import array
from functools import reduce
from itertools import compress, repeat
from operator import add, and_, attrgetter, eq, not_
from typing import Any, Callable, Iterable, Literal

import numpy as np

from ci_tools.results import invariants, units
from ci_tools.results.invariants import Limits
from ci_tools.results.record_fields import (CHECK_BOUNDS, CHUNKS, COUNT_FIELDS, MAX_DEPTH, MAX_LINE_BYTES, MAX_MS,
                                            MAX_TOKENS, PROFILING, READ_METRICS, USUAL_UNITS, error_category,
                                            in_units, invariant_values, json_fields, number_or_nan, record_problem,
                                            request_id_hash, session_number, timestamp_ns)
from ci_tools.results.scan import RecordScan


def add_batch(s: RecordScan, lines: list[bytes], lineno: int, decoder: tuple | None, limits: Limits) -> None:
    """Add a batch of lines, the first on line `lineno`: all at once when msgspec decodes every line,
    else line by line."""
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


def _add_slow(s: RecordScan, f: dict) -> dict | None:
    """Add one record by the general rules; a record of S returns the figures its invariants are
    checked on (`_check_rows`, with the rest of its batch), any other None."""
    phase = f.get("phase")
    pname = phase if isinstance(phase, str) else "<none>" if phase is None else "<not text>"
    s.phases[pname] = s.phases.get(pname, 0) + 1
    if isinstance(phase, str) and phase != PROFILING:
        s.records_warmup_dropped += 1
        s.excluded["warmup"] = s.excluded.get("warmup", 0) + 1
        return None
    if f.get("error"):
        s.records_error_dropped += 1
        s.excluded["error"] = s.excluded.get("error", 0) + 1
        cat = error_category(f["error"])
        s.error_categories[cat] = s.error_categories.get(cat, 0) + 1
        return None
    # AIPerf writes benchmark_phase on every record: without one, the record's origin is unknown
    reason = "no-phase" if phase is None or not isinstance(phase, str) else record_problem(f)
    if reason is not None:
        s.excluded[reason] = s.excluded.get(reason, 0) + 1
        if reason == "bad-unit":
            s.unit_problems[f["bad_unit"]] = s.unit_problems.get(f["bad_unit"], 0) + 1
        return None
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
    s.otpu.append(number_or_nan(f.get("otpu")))
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
    return invariant_values(f)


def _check_rows(s: RecordScan, rows: list[tuple[int, dict]], limits: Limits) -> None:
    """The invariants of records added one by one, (line, figures) each, checked together."""
    if rows:
        v = invariants.Values(**{name: np.array([r[name] for _, r in rows], dtype=np.float64)
                                 for name in invariants.FIELDS})
        invariants.tally(s.violations, v, [line for line, _ in rows], limits)


_DECODER: list = []  # [(decode, DecodeError)] or [None] when msgspec is not installed


def msgspec_decoder() -> tuple[Callable[[bytes], Any], type[Exception]] | None:
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
    """The `json_fields` dict of a decoded struct (the same rules then apply to both paths)."""
    phase, error, start, end, ack, credit, session, rid, *values, icl = _FIELDS(r)
    out = {"error": error, "phase": phase, "start": timestamp_ns(start), "end": timestamp_ns(end),
           "ack": timestamp_ns(ack), "credit": timestamp_ns(credit), "session": session_number(session),
           "rid": request_id_hash(rid)}
    # msgspec refuses NaN and numbers beyond a float, so every gap is finite
    out.update(icl_len=len(icl), icl_sum=sum(icl))
    return in_units(out, zip(READ_METRICS, values, repeat(None)))


_FLOATS = ("ttft_ms", "itl_ms", "e2el_ms", "isl", "osl", "usage_osl", "usage_isl", "otpu", "prefill", "e2e_rate",
           "decode")


def _plain_columns(c: dict) -> dict | None:
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
                and all(f[k].min() >= 0 and f[k].max() <= bound for k, bound in CHECK_BOUNDS.items())
                and all((f[k] == np.floor(f[k])).all() for k in COUNT_FIELDS)):
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
            _add_one_by_one(s, zip(lines, recs), limits)
            return
        good = list(compress(recs, keep))
        dropped = list(zip(compress(lines, map(not_, keep)), compress(recs, map(not_, keep))))
        lines = list(compress(lines, keep))
        values = [list(compress(col, keep)) for col in values]
    if good:
        c = dict(zip(FIELD_NAMES[2:], values))
        columns = _plain_columns(c)
        if columns is None:  # some record needs record_problem's verdict: the general rules, one by one
            _add_one_by_one(s, zip(lines, good), limits)
        else:
            _add_columns(s, columns, c, lines, limits)
    for _, r in dropped:  # warmup and error records touch only counters
        _add_slow(s, _struct_fields(r))


def _add_one_by_one(s: RecordScan, numbered: Iterable[tuple[int, Any]], limits: Limits) -> None:
    """Decoded records (line, struct) by the general rules, their invariants checked together."""
    rows = []
    for lineno, r in numbered:
        values = _add_slow(s, _struct_fields(r))
        if values is not None:
            rows.append((lineno, values))
    _check_rows(s, rows, limits)


def _add_columns(s: RecordScan, columns: dict, c: dict, lines: Any, limits: Limits) -> None:
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
    invariants.tally(s.violations, v, lines, limits)


# the invariants' name of a figure -> the key _plain_columns gives it under
_COLUMN_OF = {"ttft": "ttft_ms", "itl": "itl_ms", "e2el": "e2el_ms"}


def _add_lines(s: RecordScan, lines: list[bytes], first_lineno: int, decoder: tuple | None, limits: Limits) -> None:
    """Add a batch line by line: msgspec where it accepts the line, else json.loads (the invariants of
    those records checked together, in file order with the others)."""
    rows: list[tuple[int, dict]] = []
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
                _check_rows(s, rows, limits)    # the records before it first: examples stay the first ones
                rows = []
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
        values = _add_slow(s, json_fields(obj))
        if values is not None:
            rows.append((lineno, values))
    _check_rows(s, rows, limits)


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
