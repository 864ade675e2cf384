"""Consistency of an AIPerf export across its records and with what the run was asked for (pure;
issue 25, finding 4, and issue 35).

Each rule below is checked over the successful profiling records S (`RecordScan`'s aligned columns)
and every rule that fails is a `Failure` with the count and the first example; the thresholds are the
policy's (`results:`). The rules within one record (ITL, rates, token counts, decode duration, chunk
gaps, timestamps) are `invariants.py`'s, checked as the records are read; their failures are added here.

- `duplicate-ids`: no two records share an x_request_id, nor a session_num (AIPerf's number of the
  credit that sent the request: one record per credit);
- `outliers`: no ITL above `itl-outlier-factor` x the median ITL, no TTFT above
  `ttft-outlier-factor` x the median TTFT (robust: one edited record cannot move the median);
- `window`: every record lies inside AIPerf's own profiling window (start_time..end_time, which AIPerf
  writes in the machine's zone: the whole quarter-hours between it and the records' clock are the
  zone's offset) give or take `window-slack-s`; in a fixed-count window the records span at least
  `window-fill` of it and their count is the configured one;
- `aiperf-duration`: AIPerf's benchmark_duration is the records' first start to their latest start
  plus request latency (how AIPerf computes it), within `duration-slack-s`;
- `aiperf-command`: what `run_info.cli_command` asked AIPerf for (--request-count, --concurrency,
  --benchmark-duration) is what the export holds and what its configuration echoes;
- `planned-requests`: the request count the runner planned (job.json's client command, written where
  no container can write) is what AIPerf says it was asked for, what it echoes and what the export
  holds: an export whose records and every echo of their count were edited together still differs
  from the plan;
- `concurrency`: at no instant are more requests in flight than the configured concurrency plus
  `concurrency-slack`.
"""

from __future__ import annotations

import math
import shlex
from array import array
from dataclasses import dataclass, field
from typing import Callable, TypeVar

import numpy as np

from ci_tools.errors import Failure
from ci_tools.results import invariants
from ci_tools.results.metrics import column, percentiles
from ci_tools.results.policy import ResultsPolicy
from ci_tools.results.scan import RecordScan

ZONE_STEP_S = 900.0   # time zones are whole quarter-hours from UTC


@dataclass(frozen=True)
class Context:
    """What the run was asked to do and AIPerf's window, beside the records."""

    conc: int | None = None                      # configured concurrency (the point's, else AIPerf's echo)
    requests: int | None = None                  # a fixed-count window: the profiling requests configured
    window: tuple[float, float] | None = None    # AIPerf's start_time, end_time, read as UTC epoch seconds
    profiled: int = 0                            # every profiling record, successful, failed or left out
    duration_s: float | None = None              # AIPerf's benchmark_duration, in seconds
    command: str | None = None                   # AIPerf's run_info.cli_command
    planned: int | None = None                   # the profiling requests the runner planned (job.json), if any
    echo: dict = field(default_factory=dict)     # the run's configuration as AIPerf echoes it (validity.config_echo)
    summary: bool = False                        # whether there is an AIPerf summary to hold the records against


def check(scan: RecordScan, ctx: Context, policy: ResultsPolicy) -> list[Failure]:
    rules = (*invariants.failures(scan.violations, policy.limits()), *_duplicates(scan), *_outliers(scan, policy),
             *_window(scan, ctx, policy), _duration(scan, ctx, policy), *_command(scan, ctx), _planned(ctx),
             _concurrency(scan, ctx, policy))
    return [f for f in rules if f is not None]


def _count(what: str, n: int) -> str:
    return f"{n} record{'s' if n != 1 else ''} {what}"


def _g(x: float) -> str:
    return f"{x:.6g}"


CHUNK = 1 << 16   # numpy works on this many records at a time: its temporaries stay a few MB


def _ints(values: array) -> np.ndarray:
    return np.frombuffer(values, dtype=np.int64)


def _repeats(ids: array) -> int:
    """How many values of an int64 column repeat an earlier one."""
    x = np.sort(_ints(ids))
    return int((x[1:] == x[:-1]).sum())


def _duplicates(scan: RecordScan) -> list[Failure]:
    out = []
    dups = _repeats(scan.request_ids)
    if dups:
        out.append(Failure("duplicate-ids", f"{_count('repeating the x_request_id of another', dups)}: a request "
                                            "counted twice (records copied within the export, or two exports joined)"))
    dups = _repeats(scan.sessions)
    if dups:
        out.append(Failure("duplicate-ids", f"{_count('repeating the session_num of another', dups)}: AIPerf numbers "
                                            "the credits that send requests and writes one record per credit, so "
                                            "records were copied (their x_request_id rewritten) or two exports joined"))
    return out


def _median(values: array) -> float | None:
    return percentiles(column(values), [50.0])[0] if len(values) else None


def _outliers(scan: RecordScan, policy: ResultsPolicy) -> list[Failure]:
    out = []
    for name, col, factor in (("ITL", scan.itl_ms, policy.itl_outlier_factor),
                              ("TTFT", scan.ttft_ms, policy.ttft_outlier_factor)):
        median = _median(col)
        if median is None or median <= 0:
            continue
        limit = factor * median
        x = column(col)
        high = x[x > limit].tolist()
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
    if ctx.requests is not None and ctx.profiled != ctx.requests:
        out.append(Failure("window", f"the run was asked for {ctx.requests} profiling requests, the export holds "
                                     f"{ctx.profiled} (successful and failed)"))
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


def last_response_ns(scan: RecordScan) -> int | None:
    """The latest request_start_ns + request_latency of the records (AIPerf's last response, on the
    records' clock), None without records."""
    n = len(scan.start_ns)
    if n == 0:
        return None
    starts, e2el = _ints(scan.start_ns), column(scan.e2el_ms)
    # in chunks: the temporaries stay a few MB
    return max(int((starts[lo:lo + CHUNK] + np.rint(e2el[lo:lo + CHUNK] * 1e6).astype(np.int64)).max())
               for lo in range(0, n, CHUNK))


def _duration(scan: RecordScan, ctx: Context, policy: ResultsPolicy) -> Failure | None:
    """AIPerf's benchmark_duration = last response - first request (aiperf's BenchmarkDurationMetric);
    a missing or unreadable one is validity.py's finding."""
    last = last_response_ns(scan)
    if ctx.duration_s is None or last is None or scan.start_ns_min is None:
        return None
    ours = (last - scan.start_ns_min) / 1e9
    if abs(ours - ctx.duration_s) <= policy.duration_slack_s:
        return None
    return Failure("aiperf-duration", f"AIPerf's benchmark_duration is {ctx.duration_s:.9g} s, the records' first "
                                      f"start to their latest start plus request latency (how AIPerf computes it) is "
                                      f"{ours:.9g} s (duration-slack-s {policy.duration_slack_s:g}); a timestamp, a "
                                      "latency or the summary was edited")


# AIPerf's options for what a run is asked to do (aiperf/config/flags/cli_config.py): the first name is
# the one shown
ASKED = {"requests": ("--request-count", "--num-requests"), "concurrency": ("--concurrency",),
         "duration": ("--benchmark-duration",)}
MAX_COMMAND_CHARS = 65_536   # far beyond any AIPerf command line; longer is not one


def asked(command: str) -> dict[str, str] | str:
    """The ASKED options' values in an AIPerf command line (`option value` or `option=value`; the last
    one counts, as AIPerf's parser takes it), or why the line cannot be read."""
    if len(command) > MAX_COMMAND_CHARS:
        return f"it is {len(command):,} characters long"
    try:
        words = shlex.split(command)
    except ValueError as exc:
        return f"it is not a shell command line ({exc})"
    out: dict[str, str] = {}
    for i, word in enumerate(words):
        for key, names in ASKED.items():
            for name in names:
                if word == name and i + 1 < len(words):
                    out[key] = words[i + 1]
                elif word.startswith(name + "="):
                    out[key] = word[len(name) + 1:]
    return out


def _credits(scan: RecordScan, n: int) -> list[Failure]:
    """A run of n requests numbers its credits 0..n-1 (session_num; AIPerf writes one record per credit):
    a record numbered outside them was added, or the count re-echoed after records were dropped. Only
    fixed-count runs: a duration run's agentic replay leaves context-overflow records out of the export."""
    if not scan.sessions:
        return []
    lo, hi = min(scan.sessions), max(scan.sessions)
    if 0 <= lo and hi < n:
        return []
    return [Failure("aiperf-command", f"records numbered {lo}..{hi} (session_num) in a run asked for {n} requests, "
                                      f"which AIPerf numbers 0..{n - 1}: records were added, or dropped and the count "
                                      "rewritten")]


N = TypeVar("N", int, float)


def _number(text: str, kind: Callable[[str], N]) -> N | None:
    """A positive whole number (kind int) or finite number of the command line; None otherwise."""
    try:
        value = kind(text)
    except (ValueError, OverflowError):
        return None
    # math.isfinite of an int beyond any float raises: a whole number is finite by its kind
    return value if value > 0 and (isinstance(value, int) or math.isfinite(value)) else None


def _command(scan: RecordScan, ctx: Context) -> list[Failure]:
    if not ctx.summary:
        return []
    rule = "aiperf-command"
    if not isinstance(ctx.command, str):
        return [Failure(rule, "profile_export_aiperf.json has no run_info.cli_command (AIPerf 0.13 writes the command "
                              "it ran there), so what the run was asked for cannot be held against the records")]
    found = asked(ctx.command)
    if isinstance(found, str):
        return [Failure(rule, f"run_info.cli_command cannot be read: {found}")]
    out = []
    if "requests" in found:
        n = _number(found["requests"], int)
        if n is None:
            out.append(Failure(rule, f"run_info.cli_command asks for {found['requests']!r} requests, not one count"))
        elif n != ctx.profiled:
            out.append(Failure(rule, f"AIPerf was asked for {n} profiling requests (run_info.cli_command: "
                                     f"--request-count {n}), the export holds {ctx.profiled} (successful and failed): "
                                     "records were dropped or added"))
        elif ctx.requests is not None and ctx.requests != n:
            out.append(Failure(rule, f"run_info.cli_command asks for {n} profiling requests, the configuration AIPerf "
                                     f"echoes says {ctx.requests}"))
        else:
            out += _credits(scan, n)
    if "concurrency" in found:
        c = _number(found["concurrency"], int)
        if c is None or (ctx.conc is not None and c != ctx.conc):
            out.append(Failure(rule, f"run_info.cli_command asks for concurrency {found['concurrency']}, the run's is "
                                     f"{ctx.conc}"))
    echoed = ctx.echo.get("duration")
    if "duration" in found and echoed is not None:
        d = _number(found["duration"], float)
        if d is None or not isinstance(echoed, (int, float)) or isinstance(echoed, bool) or float(echoed) != d:
            out.append(Failure(rule, f"run_info.cli_command asks for a benchmark duration of {found['duration']} s, "
                                     f"the configuration AIPerf echoes says {echoed!r}"))
    return out


def planned_requests(argv: list[str]) -> int | None:
    """The profiling requests an AIPerf command line asks for (`--request-count`), None where it asks
    for none (a duration run). Raises ValueError when the count is not one positive whole number."""
    found = asked(shlex.join(argv))
    if isinstance(found, str):
        raise ValueError(f"the client command cannot be read: {found}")
    if "requests" not in found:
        return None
    n = _number(found["requests"], int)
    if not isinstance(n, int):
        raise ValueError(f"the client command asks for {found['requests']!r} requests, not one count")
    return n


def _planned(ctx: Context) -> Failure | None:
    """What the runner planned against every count the export gives: AIPerf's command line, its echo
    and the records themselves. One failure naming each value that differs from the plan."""
    if ctx.planned is None:
        return None
    found = asked(ctx.command) if isinstance(ctx.command, str) else {}
    differ = []
    if isinstance(found, dict) and "requests" in found and _number(found["requests"], int) != ctx.planned:
        differ.append(f"run_info.cli_command asks for {found['requests']}")
    if ctx.requests is not None and ctx.requests != ctx.planned:
        differ.append(f"the configuration AIPerf echoes says {ctx.requests}")
    if ctx.profiled != ctx.planned:
        differ.append(f"the export holds {ctx.profiled} (successful and failed)")
    if not differ:
        return None
    return Failure("planned-requests", f"the runner planned {ctx.planned} profiling requests (job.json's client "
                                       f"command: --request-count {ctx.planned}), but {'; '.join(differ)}: records "
                                       "were dropped or added and their count rewritten, or this is another run's export")


def max_in_flight(starts, ends) -> int:
    """Most requests in flight at once (a request ending at the instant another starts is not counted
    with it)."""
    n = len(starts)
    if n == 0:
        return 0
    s, e = np.sort(_ints(starts)), np.sort(_ints(ends))
    most = 0
    for lo in range(0, n, CHUNK):   # in chunks: the two sorted copies are the only big arrays
        chunk = s[lo:lo + CHUNK]
        most = max(most, int((np.arange(lo + 1, lo + 1 + len(chunk)) - np.searchsorted(e, chunk, side="right")).max()))
    return most


def _concurrency(scan: RecordScan, ctx: Context, policy: ResultsPolicy) -> Failure | None:
    if not ctx.conc:
        return None
    most = max_in_flight(scan.start_ns, scan.end_ns)
    if most <= ctx.conc + policy.concurrency_slack:
        return None
    return Failure("concurrency", f"{most} requests were in flight at once, the run's concurrency is {ctx.conc}: "
                                  "timestamps were edited or another client's records were joined in")
