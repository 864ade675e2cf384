"""AIPerf's own summary recomputed from the records (pure; issue 25).

`profile_export_aiperf.json` holds AIPerf's statistics of the same successful profiling records
`profile_export.jsonl` lists, computed the way `metrics.py` computes them (mean, linear-interpolated
percentiles, min, max): on a real export both agree to the last digits. An edit of either file after the
run (a TTFT or ITL changed, a record dropped or added, a unit rewritten) makes them disagree, so every
headline statistic is recomputed here and compared within the policy's `summary-tolerance`; a
difference, a statistic the summary lacks or a unit no table holds makes the result invalid, naming
both values.

Compared: the per-request latencies (TTFT, ITL, request latency, decode duration), the per-user output
rate, the input and output lengths and the server's prompt and completion token counts (avg, p50, p90,
p95, p99, min, max and the count; the per-record checks hold each count equal to its length), the count
and sum of every chunk gap (`inter_chunk_latency`), the token totals, then AIPerf's input, output and
total token and request throughputs and its average effective concurrency against the records' totals
(tokens, requests, time in flight) over AIPerf's own window (`start_time`..`end_time`): a latency edited
with every value derived from it, the summary's statistics rewritten to match, still changes how long
requests were in flight.
"""

from __future__ import annotations

import math
from array import array
from datetime import datetime, timezone
from typing import Callable

import numpy as np

from ci_tools.errors import Failure
from ci_tools.results import units
from ci_tools.results.metrics import column
from ci_tools.results.scan import RecordScan


def decode_ms(scan: RecordScan) -> np.ndarray:
    """E2EL - TTFT of each record: what AIPerf's decode_duration is (computed when asked, not held)."""
    return column(scan.e2el_ms) - column(scan.ttft_ms)


_COLUMNS: dict = {}


def _column(name: str) -> Callable[[RecordScan], array | np.ndarray]:
    """The reader of one RecordScan column (one per name, so that compare() computes its statistics once)."""
    return _COLUMNS.setdefault(name, lambda scan: getattr(scan, name))


# AIPerf's summary key -> (the records' values of it, the scale of their unit)
COMPARED = (
    ("time_to_first_token", _column("ttft_ms"), units.MILLISECONDS),
    ("inter_token_latency", _column("itl_ms"), units.MILLISECONDS),
    ("request_latency", _column("e2el_ms"), units.MILLISECONDS),
    ("decode_duration", decode_ms, units.MILLISECONDS),
    ("output_token_throughput_per_user", _column("otpu"), units.TOKENS_PER_USER),
    ("output_sequence_length", _column("osl"), units.TOKENS),
    ("input_sequence_length", _column("isl"), units.TOKENS),
    # equal record by record to the lengths (invariants.py: record-isl, record-tokens)
    ("usage_prompt_tokens", _column("isl"), units.TOKENS),
    ("usage_completion_tokens", _column("osl"), units.TOKENS),
)
# AIPerf's totals -> the records' (scan attribute), in tokens
TOTALS = (("total_usage_prompt_tokens", "isl_sum"), ("total_usage_completion_tokens", "osl_sum"),
          ("total_output_tokens", "osl_sum"))
STATS = ("avg", "p50", "p90", "p95", "p99", "min", "max")
PERCENTILES = (("p50", 50.0), ("p90", 90.0), ("p95", 95.0), ("p99", 99.0))
RULE = "aiperf-summary"


def statistics(values: array | np.ndarray) -> dict[str, float] | None:
    """avg, p50..p99, min and max of a column as AIPerf computes them (numpy's mean and linear
    percentiles), its NaNs (absent values) left out; None when nothing is left."""
    x = np.asarray(values, dtype=np.float64)    # a float32 column (counts, rates) exactly as float64
    x = x[~np.isnan(x)]
    if len(x) == 0:
        return None
    ps = np.percentile(x, [p for _, p in PERCENTILES])
    out = {"avg": float(x.mean()), **{k: float(v) for (k, _), v in zip(PERCENTILES, ps)}}
    out.update(min=float(x.min()), max=float(x.max()), count=float(len(x)))
    return out


def finite(value) -> float | None:
    """A JSON number as a finite float; None for anything else (a bool, text, NaN, infinity, or an
    integer beyond any float: a huge value is then a finding, never an OverflowError)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        value = float(value)
    except OverflowError:
        return None
    return value if math.isfinite(value) else None


_num = finite


def _statistics_of(agg: dict, key: str) -> dict:
    """AIPerf's statistics of `key`; empty when it has none (or something else under that key)."""
    entry = agg.get(key)
    return entry if isinstance(entry, dict) else {}


def _differs(ours: float, theirs: float, tolerance: float) -> bool:
    return abs(ours - theirs) > tolerance * max(abs(theirs), abs(ours)) + 1e-12


def _show(x: float) -> str:
    return f"{x:.6g}"


def window(agg: dict) -> tuple[float, float] | None:
    """AIPerf's profiling window (start_time, end_time) as epoch seconds, each read as if UTC (AIPerf
    writes both in the machine's zone, without saying which); None when unreadable or empty."""
    try:
        start, end = (datetime.fromisoformat(str(agg.get(k))).replace(tzinfo=timezone.utc).timestamp()
                      for k in ("start_time", "end_time"))
    except (TypeError, ValueError, OverflowError):
        return None
    return (start, end) if end > start else None


def benchmark_duration_s(agg: dict) -> float | None:
    """AIPerf's benchmark_duration in seconds; None when missing, not a finite number or in a unit
    ci-tools does not read (validity.py reports each)."""
    entry = agg.get("benchmark_duration")
    if not isinstance(entry, dict):
        return None
    value, f = _num(entry.get("avg")), units.SECONDS.factor(entry.get("unit"))
    return None if value is None or f is None else value * f


def window_s(agg: dict) -> float | None:
    """The window's length in seconds (the zone cancels out)."""
    w = window(agg)
    return None if w is None else w[1] - w[0]


def compare(scan: RecordScan, agg: dict, tolerance: float) -> list[Failure]:
    """Every difference between AIPerf's summary and the same statistic of the records."""
    fails: list[Failure] = []
    memo: dict = {}     # the lengths' statistics serve the usage counts too: computed once
    for key, read, scale in COMPARED:
        if read not in memo:
            memo[read] = statistics(read(scan))
        ours = memo[read]
        entry = agg.get(key)
        if entry is None and ours is None:
            continue
        if not isinstance(entry, dict):
            fails.append(Failure(RULE, f"profile_export_aiperf.json has no {key} statistics, though the records "
                                       f"hold {0 if ours is None else int(ours['count'])} values of it; AIPerf "
                                       "writes them for every run"))
            continue
        f = scale.factor(entry.get("unit"))
        if f is None:
            fails.append(Failure("units", f"profile_export_aiperf.json gives {key} in {units.shown(entry.get('unit'))}, "
                                          f"not a unit ci-tools reads for it ({', '.join(u for u, _ in scale.factors)}); "
                                          "refused rather than read as " + scale.usual))
            continue
        if ours is None:
            fails.append(Failure(RULE, f"profile_export_aiperf.json has {key} statistics, the records hold no value of it"))
            continue
        wrong = []
        for stat in (*STATS, "count"):
            theirs = _num(entry.get(stat))
            if stat == "count" and theirs is None and "count" not in entry:
                continue  # AIPerf writes a count beside each per-record metric; a missing one is only less to check
            if theirs is None:
                wrong.append(f"{stat}: none in the summary ({entry.get(stat)!r}), {_show(ours[stat])} from the records")
                continue
            theirs *= 1.0 if stat == "count" else f
            if (theirs != ours[stat]) if stat == "count" else _differs(ours[stat], theirs, tolerance):
                wrong.append(f"{stat}: {_show(theirs)} in the summary, {_show(ours[stat])} from the records")
        if wrong:
            unit = "" if scale is units.TOKENS else f" (in {scale.usual})"
            fails.append(Failure(RULE, f"AIPerf's summary of {key} disagrees with the records{unit}: "
                                       + "; ".join(wrong) + f" (tolerance {tolerance:g} relative)"))
    fails += _totals(scan, agg, tolerance)
    fails += _throughputs(scan, agg, tolerance)
    return fails


def _totals(scan: RecordScan, agg: dict, tolerance: float) -> list[Failure]:
    """AIPerf's token totals and its count and sum of the chunk gaps against the records'."""
    fails = []
    for key, attr in TOTALS:
        entry = _statistics_of(agg, key)
        theirs = _num(entry.get("avg"))
        ours = getattr(scan, attr)
        if theirs is None:
            fails.append(Failure(RULE, f"profile_export_aiperf.json has no numeric {key}.avg"))
        elif units.TOKENS.factor(entry.get("unit")) != 1.0 or _differs(ours, theirs, tolerance):
            fails.append(Failure(RULE, f"AIPerf's {key} is {_show(theirs)} {units.shown(entry.get('unit'))}, the "
                                       f"records add up to {_show(ours)} tokens"))
    icl = agg.get("inter_chunk_latency")
    if not isinstance(icl, dict):
        if scan.icl_count:
            fails.append(Failure(RULE, "profile_export_aiperf.json has no inter_chunk_latency statistics, though the "
                                       f"records hold {scan.icl_count} chunk gaps"))
        return fails
    f = units.MILLISECONDS.factor(icl.get("unit"))
    count, total = _num(icl.get("count")), _num(icl.get("sum"))
    if f is None:
        fails.append(Failure("units", f"profile_export_aiperf.json gives inter_chunk_latency in "
                                      f"{units.shown(icl.get('unit'))}; refused"))
    elif count != scan.icl_count or total is None or _differs(scan.icl_ns / 1e6, total * f, tolerance):
        fails.append(Failure(RULE, f"AIPerf's inter_chunk_latency holds {icl.get('count')!r} chunk gaps adding up to "
                                   f"{icl.get('sum')!r} {units.shown(icl.get('unit'))}, the records {scan.icl_count} "
                                   f"adding up to {_show(scan.icl_ns / 1e6)} ms (tolerance {tolerance:g} relative)"))
    return fails


def _throughputs(scan: RecordScan, agg: dict, tolerance: float) -> list[Failure]:
    window = window_s(agg)
    if window is None:
        return [Failure(RULE, "profile_export_aiperf.json has no readable start_time..end_time window "
                              f"({agg.get('start_time')!r}..{agg.get('end_time')!r})")]
    fails = []
    # requests in flight, averaged over the window: the records' time in flight over its length
    in_flight = (sum(scan.end_ns) - sum(scan.start_ns)) / 1e9 / window
    for key, ours, scale, what in (("output_token_throughput", scan.osl_sum / window, units.TOKENS_PER_SECOND,
                                    "output tokens"),
                                   ("input_token_throughput", scan.isl_sum / window, units.TOKENS_PER_SECOND,
                                    "input tokens"),
                                   ("total_token_throughput", (scan.isl_sum + scan.osl_sum) / window,
                                    units.TOKENS_PER_SECOND, "input and output tokens"),
                                   ("request_throughput", scan.records_profiled / window, units.REQUESTS_PER_SECOND,
                                    "requests"),
                                   ("effective_concurrency", in_flight, units.REQUESTS, "requests' time in flight")):
        entry = _statistics_of(agg, key)
        theirs = _num(entry.get("avg"))
        if theirs is None:
            fails.append(Failure(RULE, f"profile_export_aiperf.json has no numeric {key}.avg"))
            continue
        f = scale.factor(entry.get("unit"))
        if f is None:
            fails.append(Failure("units", f"profile_export_aiperf.json gives {key} in {units.shown(entry.get('unit'))}, "
                                          f"not {scale.usual}; refused"))
        elif _differs(ours, theirs * f, tolerance):
            fails.append(Failure(RULE, f"AIPerf's {key} is {_show(theirs * f)} {scale.usual}, the records' {what} over "
                                       f"AIPerf's {window:.6g} s window give {_show(ours)} (tolerance {tolerance:g} relative)"))
    return fails
