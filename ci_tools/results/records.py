"""Streaming reader of AIPerf's `profile_export.jsonl` (one JSON record per request).

A one-hour AgentX run writes hundreds of thousands of records of a few KB each, so the file is
never loaded whole: each line is read, the handful of numbers the metrics need are taken out, and
the line is dropped. Per-request values go into `array('d')` columns (8 bytes each, against ~32 for
a list of Python floats); sums, minima and maxima are kept as running scalars.

Two paths read a line, and tests check they agree on every record:
- a fast path that finds the compact keys AIPerf writes (`"time_to_first_token":{"value":12.5,`)
  with `bytes.find` and converts only those slices. A JSON key with unescaped quotes cannot occur
  inside a JSON string, so a match is always a real key;
- `json.loads` of the line, used whenever the fast path is not certain: an `error` that is not
  null, a missing key, another layout (spaces, scalar values, key order inside a metric).

Record filter (spec §2.2): phase = `metadata.benchmark_phase`; a record with a phase other than
"profiling" is warmup (dropped, counted); a truthy `error` is dropped and categorised; the rest are
the successful profiling requests S. Latency samples are kept only when finite and > 0.
"""

from __future__ import annotations

import json
import math
import os
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from ci_tools.errors import Finding, InputError

PROFILING = "profiling"
_PROFILING_B = PROFILING.encode()
_PROFILING_Q = _PROFILING_B + b'"'

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


@dataclass
class RecordScan:
    """What one pass over profile_export.jsonl yields (columns are per successful record)."""

    records_total: int = 0
    records_profiled: int = 0
    records_warmup_dropped: int = 0
    records_error_dropped: int = 0
    bad_lines: list[int] = field(default_factory=list)  # 1-based line numbers that are not JSON objects
    phases: dict[str, int] = field(default_factory=dict)  # every phase seen, with its count
    error_categories: dict[str, int] = field(default_factory=dict)
    ttft_ms: array = field(default_factory=lambda: array("d"))
    itl_ms: array = field(default_factory=lambda: array("d"))
    e2el_ms: array = field(default_factory=lambda: array("d"))
    e2e_per_token_ms: array = field(default_factory=lambda: array("d"))  # E2EL_i / OSL_i, same record
    isl_sum: float = 0.0
    osl_sum: float = 0.0
    isl_count: int = 0
    osl_count: int = 0
    start_ns_min: int | None = None
    end_ns_max: int | None = None
    fast_lines: int = 0  # how many lines the fast path handled (for the benchmark and tests)
    lines_read: int = 0  # blank lines included: the line-number offset of the next range

    @property
    def records_dropped_total(self) -> int:
        return self.records_warmup_dropped + self.records_error_dropped

    def accounting(self) -> dict:
        return {
            "records_total": self.records_total,
            "records_profiled": self.records_profiled,
            "records_dropped_total": self.records_dropped_total,
            "records_warmup_dropped": self.records_warmup_dropped,
            "records_error_dropped": self.records_error_dropped,
            "error_categories": dict(sorted(self.error_categories.items())),
            "phases": dict(sorted(self.phases.items())),
        }


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


def _metric_value(metrics: dict, name: str) -> float | None:
    value = metrics.get(name)
    if isinstance(value, dict):
        value = value.get("value")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


# ---- fast path -------------------------------------------------------------------------------
# AIPerf 0.13 writes a record as {"metadata":{...},"metrics":{...}[,"trace_data":..][,"error":{..}]}
# (pydantic field order of MetricRecordInfo), compact, with metadata keys and metric keys in a fixed
# order. Each key is searched from where the previous one ended (one pass over the line); a key
# found out of order is searched again from the start of its section, so order only affects speed.

_HEAD = b'{"metadata":{'
_ERROR_KEY = b'"error":'
_START_KEY = b'"request_start_ns":'
_END_KEY = b'"request_end_ns":'
_PHASE_KEY = b'"benchmark_phase":"'
_E2EL_KEY = b'"request_latency":{"value":'
_OSL_KEY = b'"output_sequence_length":{"value":'
_ISL_KEY = b'"input_sequence_length":{"value":'
_TTFT_KEY = b'"time_to_first_token":{"value":'
# written after the per-chunk latency array, whose length grows with the output: found from the end
_ITL_KEY = b'"inter_token_latency":{"value":'


def _fast_fields(line: bytes) -> tuple | None:
    """(phase, start_ns, end_ns, e2el_ms, osl, isl, ttft_ms, itl_ms) of a plain record without error,
    or None when the slow path must decide (any key missing or out of the expected order, any value
    that is not a plain number followed by `,"unit"`, an `"error":` key after the metrics)."""
    if not line.startswith(_HEAD):
        return None
    find = line.find
    pos = find(_START_KEY, 13)
    if pos < 0:
        return None
    a = pos + 19
    b = a + 19  # nanosecond timestamps have 19 digits until 2286; check, else search
    if line[b:b + 1] != b",":
        b = find(b",", a)
    pos = find(_END_KEY, b)
    if pos < 0:
        return None
    c = pos + 17
    d = c + 19
    if line[d:d + 1] != b",":
        d = find(b",", c)
    pos = find(_PHASE_KEY, d)
    if pos < 0:
        return None
    e = pos + 19
    if line.startswith(_PROFILING_Q, e):
        phase = _PROFILING_B
        f = e + 9
    else:
        f = find(b'"', e)
        phase = line[e:f]
    # usually in this order, one pass; AIPerf may order metrics differently from run to run, so a
    # key not found after the previous one is searched again from the end of the metadata
    p1 = find(_E2EL_KEY, f)
    if p1 < 0:
        return None
    p1 += 27
    q1 = find(b",", p1)
    p2 = find(_OSL_KEY, q1)
    if p2 < 0:
        p2 = find(_OSL_KEY, f)
        if p2 < 0:
            return None
    p2 += 34
    q2 = find(b",", p2)
    p3 = find(_ISL_KEY, q2)
    if p3 < 0:
        p3 = find(_ISL_KEY, f)
        if p3 < 0:
            return None
    p3 += 33
    q3 = find(b",", p3)
    p4 = find(_TTFT_KEY, q3)
    if p4 < 0:
        p4 = find(_TTFT_KEY, f)
        if p4 < 0:
            return None
    p4 += 31
    q4 = find(b",", p4)
    p5 = line.rfind(_ITL_KEY, f)
    if p5 < 0:
        return None
    p5 += 31
    q5 = find(b",", p5)
    # `error` is written after every metric (MetricRecordInfo's field order), so after q5
    if find(_ERROR_KEY, q5) >= 0:
        return None
    try:
        # token counts are integers in AIPerf's output; int() of a short ASCII number is the cheapest
        # conversion, and a float-looking count falls back to the slow path via ValueError
        return (phase, int(line[a:b]), int(line[c:d]), float(line[p1:q1]),
                int(line[p2:q2]), int(line[p3:q3]), float(line[p4:q4]), float(line[p5:q5]))
    except ValueError:
        return None


# ---- slow path -------------------------------------------------------------------------------

def _slow_fields(rec: dict) -> dict:
    """The same numbers from a parsed record; absent values are None. `error` is returned as is."""
    meta = rec.get("metadata") if isinstance(rec.get("metadata"), dict) else {}
    metrics = rec.get("metrics") if isinstance(rec.get("metrics"), dict) else {}
    out: dict = {"error": rec.get("error"), "phase": meta.get("benchmark_phase")}
    for name in ("start", "end"):
        value = meta.get(f"request_{name}_ns")
        out[name] = int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
    for name, col in [*LATENCY_METRICS.items(), *TOKEN_METRICS.items()]:
        out[col] = _metric_value(metrics, name)
    return out


def _good(x: float | None) -> bool:
    return x is not None and math.isfinite(x) and x > 0


def _add_slow(s: RecordScan, f: dict) -> None:
    phase = f.get("phase")
    pname = phase if phase is not None else "<none>"
    s.phases[pname] = s.phases.get(pname, 0) + 1
    if phase is not None and phase != PROFILING:
        s.records_warmup_dropped += 1
        return
    if f.get("error"):
        s.records_error_dropped += 1
        cat = error_category(f["error"])
        s.error_categories[cat] = s.error_categories.get(cat, 0) + 1
        return
    s.records_profiled += 1
    ttft, itl, e2el = f.get("ttft_ms"), f.get("itl_ms"), f.get("e2el_ms")
    isl, osl = f.get("isl"), f.get("osl")
    if _good(ttft):
        s.ttft_ms.append(ttft)
    if _good(itl):
        s.itl_ms.append(itl)
    if _good(e2el):
        s.e2el_ms.append(e2el)
        if _good(osl):
            s.e2e_per_token_ms.append(e2el / osl)
    if isl is not None and math.isfinite(isl):
        s.isl_sum += isl
        s.isl_count += 1
    if osl is not None and math.isfinite(osl):
        s.osl_sum += osl
        s.osl_count += 1
    start, end = f.get("start"), f.get("end")
    if start is not None and (s.start_ns_min is None or start < s.start_ns_min):
        s.start_ns_min = start
    if end is not None and (s.end_ns_max is None or end > s.end_ns_max):
        s.end_ns_max = end


_NO_MIN = 1 << 128  # above any nanosecond timestamp


def _no_fast(line: bytes) -> None:
    return None


def scan_lines(lines: Iterable[bytes], *, fast: bool = True) -> RecordScan:
    """Scan an iterable of JSONL lines (bytes). `fast=False` forces json.loads on every line.

    The loop is written flat (locals, no per-record objects) because it runs once per request of
    an hour-long run; `_add_slow` holds the same rules in readable form for the rare slow lines.
    """
    s = RecordScan()
    ttft_a, itl_a, e2el_a, norm_a = s.ttft_ms.append, s.itl_ms.append, s.e2el_ms.append, s.e2e_per_token_ms.append
    parse = _fast_fields if fast else _no_fast
    inf = math.inf
    slow = profiled = 0
    isl_sum = osl_sum = 0.0
    smin, emax = _NO_MIN, -1
    other_phase: list[str] = []
    lineno = 0
    for lineno, line in enumerate(lines, 1):
        f = parse(line)
        if f is None:
            if not line.strip():
                continue
            slow += 1
            try:
                rec = json.loads(line)
            except ValueError:
                rec = None
            if not isinstance(rec, dict):
                s.bad_lines.append(lineno)
                continue
            _add_slow(s, _slow_fields(rec))
            continue
        phase, start, end, e2el, osl, isl, ttft, itl = f
        if phase != _PROFILING_B:
            other_phase.append(phase.decode(errors="replace"))
            continue
        profiled += 1
        # `0 < x < inf` is False for NaN, inf and non-positive values: the rule of _good()
        if 0.0 < ttft < inf:
            ttft_a(ttft)
        if 0.0 < itl < inf:
            itl_a(itl)
        if 0.0 < e2el < inf:
            e2el_a(e2el)
            if osl > 0:
                norm_a(e2el / osl)
        isl_sum += isl
        osl_sum += osl
        if start < smin:
            smin = start
        if end > emax:
            emax = end
    fast_n = profiled + len(other_phase)
    s.lines_read = lineno
    s.records_total += slow + fast_n
    s.fast_lines += fast_n
    s.records_profiled += profiled
    s.isl_sum += isl_sum
    s.osl_sum += osl_sum
    s.isl_count += profiled
    s.osl_count += profiled
    if profiled:
        s.phases[PROFILING] = s.phases.get(PROFILING, 0) + profiled
    for phase in other_phase:
        s.phases[phase] = s.phases.get(phase, 0) + 1
    s.records_warmup_dropped += len(other_phase)
    if smin is not _NO_MIN and (s.start_ns_min is None or smin < s.start_ns_min):
        s.start_ns_min = smin
    if emax >= 0 and (s.end_ns_max is None or emax > s.end_ns_max):
        s.end_ns_max = emax
    return s


# Files at least this big are scanned by several processes (one per core, at most 4): the scan is
# CPU-bound pure Python, and a one-hour export is gigabytes.
PARALLEL_MIN_BYTES = 256 * 1024 * 1024
MAX_WORKERS = 4


def _iter_range(path: str, start: int, end: int) -> Iterable[bytes]:
    """Lines of path whose first byte lies in [start, end) (start is a line start).

    Plain buffered line iteration: measured several times faster than reading big blocks and
    splitting them (each fresh multi-MB block costs page faults)."""
    with open(path, "rb", buffering=1 << 20) as fh:
        fh.seek(start)
        pos = start
        for line in fh:
            if pos >= end:
                break
            pos += len(line)
            yield line


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


def _scan_range(args: tuple[str, int, int, bool]) -> RecordScan:
    path, start, end, fast = args
    if end >= os.path.getsize(path):
        # the last (or only) range runs to EOF: iterate the file itself, one generator hop less
        with open(path, "rb", buffering=1 << 20) as fh:
            fh.seek(start)
            return scan_lines(fh, fast=fast)
    return scan_lines(_iter_range(path, start, end), fast=fast)


def merge_scans(parts: Iterable[RecordScan]) -> RecordScan:
    """Scans of consecutive ranges, in order -> one scan (line numbers made absolute). Consumed one
    at a time so each part's columns are freed once copied."""
    it = iter(parts)
    first = next(it, None)
    if first is None:
        return RecordScan()
    # the first part becomes the result: its columns are extended in place, not copied
    out = first
    for s in it:
        offset = out.lines_read
        out.records_total += s.records_total
        out.records_profiled += s.records_profiled
        out.records_warmup_dropped += s.records_warmup_dropped
        out.records_error_dropped += s.records_error_dropped
        out.bad_lines.extend(n + offset for n in s.bad_lines)
        for src, dst in ((s.phases, out.phases), (s.error_categories, out.error_categories)):
            for k, v in src.items():
                dst[k] = dst.get(k, 0) + v
        for col in ("ttft_ms", "itl_ms", "e2el_ms", "e2e_per_token_ms"):
            getattr(out, col).extend(getattr(s, col))
        out.isl_sum += s.isl_sum
        out.osl_sum += s.osl_sum
        out.isl_count += s.isl_count
        out.osl_count += s.osl_count
        out.fast_lines += s.fast_lines
        if s.start_ns_min is not None and (out.start_ns_min is None or s.start_ns_min < out.start_ns_min):
            out.start_ns_min = s.start_ns_min
        if s.end_ns_max is not None and (out.end_ns_max is None or s.end_ns_max > out.end_ns_max):
            out.end_ns_max = s.end_ns_max
        out.lines_read += s.lines_read
    return out


def scan_file(path: Path | str, *, fast: bool = True, workers: int | None = None) -> RecordScan:
    """Scan a profile_export.jsonl; big files are split by line boundaries over worker processes."""
    p = Path(path)
    try:
        size = p.stat().st_size
        if workers is None:
            workers = min(os.cpu_count() or 1, MAX_WORKERS) if size >= PARALLEL_MIN_BYTES else 1
        if workers <= 1:
            return _scan_range((str(p), 0, size, fast))
        import multiprocessing

        bounds = _line_starts(str(p), size, workers)
        jobs = [(str(p), a, b, fast) for a, b in zip(bounds, bounds[1:]) if b > a]
        # fork: the workers share the already-imported code; nothing else is inherited that matters
        with multiprocessing.get_context("fork").Pool(len(jobs)) as pool:
            return merge_scans(pool.imap(_scan_range, jobs))
    except FileNotFoundError:
        raise InputError(f"{p}: file not found", findings=[Finding(
            str(p), None, None, "AIPerf's per-request export is missing",
            "the client did not finish, or the directory is not an AIPerf artifact directory")]) from None
    except OSError as exc:
        raise InputError(f"{p}: cannot read: {exc.strerror}") from None
