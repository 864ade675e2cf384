"""AIPerf's own summary recomputed from the records (pure; issue 25).

`profile_export_aiperf.json` holds AIPerf's statistics of the same successful profiling records
`profile_export.jsonl` lists, computed the way `metrics.py` computes them (mean, linear-interpolated
percentiles, min, max): on a real export both agree to the last digits. An edit of either file after the
run (a TTFT or ITL changed, a record dropped or added, a unit rewritten) makes them disagree, so every
headline statistic is recomputed here and compared within the policy's `summary-tolerance`; a
difference, a statistic the summary lacks or a unit no table holds makes the result invalid, naming
both values.

Compared: the per-request latencies (TTFT, ITL, request latency), the per-user output rate and the
output length (avg, p50, p90, p95, p99, min, max and the count), then AIPerf's output token and request
throughputs and its average effective concurrency against the records' totals (tokens, requests, time
in flight) over AIPerf's own window (`start_time`..`end_time`): a latency edited with every value derived
from it, the summary's statistics rewritten to match, still changes how long requests were in flight.
"""

from __future__ import annotations

import math
from array import array
from datetime import datetime, timezone

from ci_tools.errors import Failure
from ci_tools.results import units
from ci_tools.results.metrics import _numpy, percentile
from ci_tools.results.scan import RecordScan

# AIPerf's summary key -> (the RecordScan column of the same values, the scale of our column's unit)
COMPARED = (
    ("time_to_first_token", "ttft_ms", units.MILLISECONDS),
    ("inter_token_latency", "itl_ms", units.MILLISECONDS),
    ("request_latency", "e2el_ms", units.MILLISECONDS),
    ("output_token_throughput_per_user", "otpu", units.TOKENS_PER_USER),
    ("output_sequence_length", "osl", units.TOKENS),
)
STATS = ("avg", "p50", "p90", "p95", "p99", "min", "max")
PERCENTILES = (("p50", 50.0), ("p90", 90.0), ("p95", 95.0), ("p99", 99.0))
RULE = "aiperf-summary"


def statistics(values: array) -> dict[str, float] | None:
    """avg, p50..p99, min and max as AIPerf reports them (numpy's linear percentiles) of a column, its
    NaNs (absent values) left out; None when nothing is left."""
    np = _numpy()
    if np is not None and len(values) > 1000:
        x = np.frombuffer(values, dtype=np.float32 if values.typecode == "f" else np.float64)
        if values.typecode == "f":
            x = x[~np.isnan(x)].astype(np.float64)
        if len(x) > 1000:
            ps = np.percentile(x, [p for _, p in PERCENTILES])
            out = {"avg": float(x.mean()), **{k: float(v) for (k, _), v in zip(PERCENTILES, ps)}}
            out.update(min=float(x.min()), max=float(x.max()), count=float(len(x)))
            return out
        values = array("d", x.tobytes())
    col = array("d", (v for v in values if not math.isnan(v))) if values.typecode == "f" else values
    n = len(col)
    if n == 0:
        return None
    ordered = sorted(col)
    out = {"avg": math.fsum(col) / n, **{k: percentile(ordered, p) for k, p in PERCENTILES}}
    out.update(min=ordered[0], max=ordered[-1], count=float(n))
    return out


def _num(value) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        value = float(value)
    except OverflowError:
        return None
    return value if math.isfinite(value) else None


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


def window_s(agg: dict) -> float | None:
    """The window's length in seconds (the zone cancels out)."""
    w = window(agg)
    return None if w is None else w[1] - w[0]


def compare(scan: RecordScan, agg: dict, tolerance: float) -> list[Failure]:
    """Every difference between AIPerf's summary and the same statistic of the records."""
    fails: list[Failure] = []
    for key, column, scale in COMPARED:
        ours = statistics(getattr(scan, column))
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
    fails += _throughputs(scan, agg, tolerance)
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
                                   ("request_throughput", scan.records_profiled / window, units.REQUESTS_PER_SECOND,
                                    "requests"),
                                   ("effective_concurrency", in_flight, units.REQUESTS, "requests' time in flight")):
        entry = agg.get(key)
        theirs = _num(entry.get("avg")) if isinstance(entry, dict) else None
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
