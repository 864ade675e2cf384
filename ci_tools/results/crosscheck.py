"""Per-record consistency of an AIPerf export (pure; issue 25, finding 4).

AIPerf derives several figures of one record from the same clock readings, so a record edited after the
run (one value changed, the others not) contradicts itself. Each rule below is checked over the
successful profiling records S (`RecordScan`'s aligned columns) and every rule that fails is a
`Failure` with the count and the first example; the thresholds are the policy's (`results:`):

- `record-itl`: ITL_i = (E2EL_i - TTFT_i) / (OSL_i - 1) within `record-tolerance` (AIPerf computes it so);
- `record-rate`: output_token_throughput_per_user_i = 1000 / ITL_i (ms) within `record-tolerance`;
- `record-tokens`: OSL_i = usage_completion_tokens_i (the runs count tokens on the server);
- `duplicate-ids`: no two records share an x_request_id;
- `outliers`: no ITL above `itl-outlier-factor` x the median ITL, no TTFT above
  `ttft-outlier-factor` x the median TTFT (robust: one edited record cannot move the median);
- `window`: every record lies inside AIPerf's own profiling window (start_time..end_time, which AIPerf
  writes in the machine's zone: the whole quarter-hours between it and the records' clock are the
  zone's offset) give or take `window-slack-s`; in a fixed-count window the records span at least
  `window-fill` of it and their count is the configured one;
- `concurrency`: at no instant are more requests in flight than the configured concurrency plus
  `concurrency-slack`.
"""

from __future__ import annotations

import math
from array import array
from dataclasses import dataclass

from ci_tools.errors import Failure
from ci_tools.results.metrics import _numpy, percentile
from ci_tools.results.policy import ResultsPolicy
from ci_tools.results.scan import RecordScan

ZONE_STEP_S = 900.0   # time zones are whole quarter-hours from UTC


@dataclass(frozen=True)
class Context:
    """What the run was asked to do and AIPerf's window, beside the records."""

    conc: int | None = None                      # configured concurrency (the point's, else AIPerf's echo)
    requests: int | None = None                  # a fixed-count window: the profiling requests configured
    window: tuple[float, float] | None = None    # AIPerf's start_time, end_time, read as UTC epoch seconds
    errors: int = 0                              # profiling records with an error (they count in a fixed window)


def check(scan: RecordScan, ctx: Context, policy: ResultsPolicy) -> list[Failure]:
    rules = (_itl(scan, policy), _rate(scan, policy), _tokens(scan), _duplicates(scan), *_outliers(scan, policy),
             *_window(scan, ctx, policy), _concurrency(scan, ctx, policy))
    return [f for f in rules if f is not None]


def _count(what: str, n: int) -> str:
    return f"{n} record{'s' if n != 1 else ''} {what}"


def _g(x: float) -> str:
    return f"{x:.6g}"


CHUNK = 1 << 16   # numpy works on this many records at a time: its temporaries stay a few MB


def _flagged(columns: tuple, bad_one, bad_many) -> tuple[int | None, int]:
    """(index of the first record a rule flags, how many it flags) over aligned columns: `bad_one(*values)`
    per record in Python, or `bad_many(*arrays)` (the same IEEE operations, element-wise) on chunks with
    numpy for a big run."""
    n = len(columns[0])
    np = _numpy()
    if np is None or n <= 1000:
        first, count = None, 0
        for i, values in enumerate(zip(*columns)):
            if bad_one(*values):
                first = i if first is None else first
                count += 1
        return first, count
    views = [np.frombuffer(c, dtype=np.float32 if c.typecode == "f" else np.float64) for c in columns]
    first, count = None, 0
    with np.errstate(all="ignore"):
        for lo in range(0, n, CHUNK):
            bad = bad_many(*(v[lo:lo + CHUNK].astype(np.float64) for v in views))
            k = int(bad.sum())
            if k and first is None:
                first = lo + int(bad.argmax())
            count += k
    return first, count


def _itl(scan: RecordScan, policy: ResultsPolicy) -> Failure | None:
    tol = policy.record_tolerance
    cols = (scan.itl_rec, scan.e2el_ms, scan.ttft_ms, scan.osl)

    def bad_one(itl, e2el, ttft, osl):
        if osl > 1 and not math.isnan(itl):
            expected = (e2el - ttft) / (osl - 1)
            return abs(itl - expected) > tol * abs(expected) + 1e-6
        return False

    def bad_many(itl, e2el, ttft, osl):
        expected = (e2el - ttft) / (osl - 1)
        return (osl > 1) & ~_numpy().isnan(itl) & (abs(itl - expected) > tol * abs(expected) + 1e-6)

    first, n = _flagged(cols, bad_one, bad_many)
    if not n:
        return None
    itl, e2el, ttft, osl = (c[first] for c in cols)
    example = (f"ITL {_g(itl)} ms where (E2EL - TTFT) / (OSL - 1) = ({_g(e2el)} - {_g(ttft)}) / "
               f"{_g(osl - 1)} = {_g((e2el - ttft) / (osl - 1))} ms")
    return Failure("record-itl", f"{_count('whose ITL disagrees with its other values', n)}: e.g. {example}; AIPerf "
                                 f"computes the ITL from those values (tolerance {tol:g} relative), so one of them was edited")


def _rate(scan: RecordScan, policy: ResultsPolicy) -> Failure | None:
    tol = policy.record_tolerance
    cols = (scan.itl_rec, scan.otpu)

    def bad_one(itl, rate):
        return not (math.isnan(itl) or math.isnan(rate)) and itl > 0 and abs(rate - 1000.0 / itl) > tol * abs(rate) + 1e-6

    def bad_many(itl, rate):
        return (itl > 0) & ~_numpy().isnan(rate) & (abs(rate - 1000.0 / itl) > tol * abs(rate) + 1e-6)

    first, n = _flagged(cols, bad_one, bad_many)
    if not n:
        return None
    itl, rate = scan.itl_rec[first], scan.otpu[first]
    example = f"a per-user rate of {_g(rate)} tokens/s with an ITL of {_g(itl)} ms (1000 / ITL = {_g(1000.0 / itl)})"
    return Failure("record-rate", f"{_count('whose per-user rate disagrees with its ITL', n)}: e.g. {example} "
                                  f"(tolerance {tol:g} relative)")


def _tokens(scan: RecordScan) -> Failure | None:
    cols = (scan.osl, scan.usage_osl)
    first, n = _flagged(cols, lambda osl, usage: not math.isnan(usage) and usage != osl,
                        lambda osl, usage: ~_numpy().isnan(usage) & (usage != osl))
    if not n:
        return None
    example = f"OSL {_g(scan.osl[first])} where the server's usage says {_g(scan.usage_osl[first])} completion tokens"
    return Failure("record-tokens", f"{_count('whose output length disagrees with the server', n)}: e.g. {example}")


def _duplicates(scan: RecordScan) -> Failure | None:
    ids = scan.request_ids
    np = _numpy()
    if np is not None and len(ids) > 1000:
        x = np.sort(np.frombuffer(ids, dtype=np.int64))
        dups = int((x[1:] == x[:-1]).sum())
    else:
        ordered = sorted(ids)
        dups = sum(1 for a, b in zip(ordered, ordered[1:]) if a == b)
    if not dups:
        return None
    return Failure("duplicate-ids", f"{_count('repeating the x_request_id of another', dups)}: a request counted twice "
                                    "(records copied within the export, or two exports joined)")


def _median(values: array) -> float | None:
    np = _numpy()
    if np is not None and len(values) > 1000:
        return float(np.median(np.frombuffer(values, dtype=np.float64)))
    return percentile(sorted(values), 50.0) if len(values) else None


def _outliers(scan: RecordScan, policy: ResultsPolicy) -> list[Failure]:
    out = []
    for name, col, factor in (("ITL", scan.itl_ms, policy.itl_outlier_factor),
                              ("TTFT", scan.ttft_ms, policy.ttft_outlier_factor)):
        median = _median(col)
        if median is None or median <= 0:
            continue
        limit = factor * median
        np = _numpy()
        if np is not None and len(col) > 1000:
            x = np.frombuffer(col, dtype=np.float64)
            high = x[x > limit].tolist()
        else:
            high = [v for v in col if v > limit]
        if high:
            out.append(Failure("outliers", f"{_count(f'with a {name} above {factor:g} x the median', len(high))} "
                                           f"({_g(median)} ms): the largest is {_g(max(high))} ms; no real request "
                                           "is that much slower than its run, so a value was edited"))
    return out


def zone_offset_s(window_start: float, first_start: float) -> float:
    """The whole quarter-hours between AIPerf's start_time (read as UTC) and the records' first start:
    the zone start_time was written in (`datetime.fromtimestamp` without a zone)."""
    return round((window_start - first_start) / ZONE_STEP_S) * ZONE_STEP_S


def _window(scan: RecordScan, ctx: Context, policy: ResultsPolicy) -> list[Failure]:
    out = []
    if ctx.requests is not None and scan.records_profiled + ctx.errors != ctx.requests:
        out.append(Failure("window", f"the run was asked for {ctx.requests} profiling requests, the export holds "
                                     f"{scan.records_profiled + ctx.errors} (successful and failed)"))
    if ctx.window is None or scan.start_ns_min is None or scan.end_ns_max is None:
        return out
    first, last = scan.start_ns_min / 1e9, scan.end_ns_max / 1e9
    zone = zone_offset_s(ctx.window[0], first)
    start, end = ctx.window[0] - zone, ctx.window[1] - zone
    slack = policy.window_slack_s
    if first < start - slack or last > end + slack:
        out.append(Failure("window", f"records lie outside AIPerf's profiling window: they span "
                                     f"{_g(first - start)} s to {_g(last - start)} s of a {_g(end - start)} s window "
                                     f"(slack {slack:g} s); a timestamp was edited"))
    elif ctx.requests is not None and (last - first) < policy.window_fill * (end - start):
        out.append(Failure("window", f"the records span {_g(last - first)} s of AIPerf's {_g(end - start)} s "
                                     f"fixed-count window, less than {policy.window_fill:g} of it; a timestamp was "
                                     "edited or records are missing"))
    return out


def max_in_flight(starts, ends) -> int:
    """Most requests in flight at once (a request ending at the instant another starts is not counted
    with it)."""
    n = len(starts)
    if n == 0:
        return 0
    np = _numpy()
    if np is not None and n > 1000:
        s = np.sort(np.frombuffer(starts, dtype=np.int64))
        e = np.sort(np.frombuffer(ends, dtype=np.int64))
        return int((np.arange(1, n + 1) - np.searchsorted(e, s, side="right")).max())
    from bisect import bisect_right

    s, e = sorted(starts), sorted(ends)
    return max(i + 1 - bisect_right(e, t) for i, t in enumerate(s))


def _concurrency(scan: RecordScan, ctx: Context, policy: ResultsPolicy) -> Failure | None:
    if not ctx.conc:
        return None
    most = max_in_flight(scan.start_ns, scan.end_ns)
    if most <= ctx.conc + policy.concurrency_slack:
        return None
    return Failure("concurrency", f"{most} requests were in flight at once, the run's concurrency is {ctx.conc}: "
                                  "timestamps were edited or another client's records were joined in")
