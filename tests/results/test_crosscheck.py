"""The rules across records (crosscheck.py) as a table: a run of 20 consistent records, one thing
changed per case, and the rule that must fail (None: the run stays consistent). The rules within one
record are invariants.py's (tests/results/test_invariants.py); crosscheck reports what the reader
tallied."""

from __future__ import annotations

import math
from array import array
from dataclasses import replace

import pytest

from ci_tools.results import crosscheck
from ci_tools.results.crosscheck import Context
from ci_tools.results.policy import ResultsPolicy
from ci_tools.results.scan import RecordScan

T0 = 1_796_000_000_000_000_000          # ns


def row(i: int, conc: int = 4) -> dict:
    """Record i of a run at concurrency `conc`: four lanes, each request 80 ms after the last."""
    ttft, osl, itl = 20.0 + i % 3, 16 + i % 5, 2.0 + (i % 7) / 10
    e2el = ttft + itl * (osl - 1)
    start = T0 + (i // conc) * 100_000_000 + (i % conc) * 1000
    return {"ttft": ttft, "itl": itl, "e2el": e2el, "osl": float(osl), "isl": 100.0, "otpu": 1000.0 / itl,
            "start": start, "end": start + int(e2el * 1e6) + 2_000_000, "rid": hash(f"req-{i}"), "session": i}


def scan_of(rows: list[dict]) -> RecordScan:
    s = RecordScan()
    for r in rows:
        s.records_profiled += 1
        s.ttft_ms.append(r["ttft"])
        s.e2el_ms.append(r["e2el"])
        if not math.isnan(r["itl"]):
            s.itl_ms.append(r["itl"])
        s.osl.append(r["osl"])
        s.isl.append(r["isl"])
        s.otpu.append(r["otpu"])
        s.start_ns.append(r["start"])
        s.end_ns.append(r["end"])
        if r["rid"] is not None:
            s.request_ids.append(r["rid"])
        if r["session"] is not None:
            s.sessions.append(r["session"])
    s.start_ns_min = min(r["start"] for r in rows) if rows else None
    s.end_ns_max = max(r["end"] for r in rows) if rows else None
    return s


def base() -> list[dict]:
    return [row(i) for i in range(20)]


# AIPerf's window around the base run: it opens a little before the first request, closes at the last end
WINDOW = (T0 / 1e9 - 0.0005, max(r["end"] for r in base()) / 1e9 + 0.0002)
SPAN = WINDOW[1] - WINDOW[0]


def edit(i: int, **values):
    def fn(rows):
        rows[i].update(values)
    return fn


def edit_by(i: int, key: str, f):
    def fn(rows):
        rows[i][key] = f(rows[i][key])
        if key == "itl":             # the per-user rate edited with it: only the ITL rule can see this
            rows[i]["otpu"] = 1000.0 / rows[i]["itl"]
    return fn


def shift(i: int, seconds: float):
    def fn(rows):
        rows[i]["start"] += int(seconds * 1e9)
        rows[i]["end"] += int(seconds * 1e9)
    return fn


def copy_of(i: int, j: int, key: str = "rid"):
    def fn(rows):
        rows[j][key] = rows[i][key]
    return fn


def duration(rows: list[dict]) -> float:
    """AIPerf's benchmark_duration of these rows: first start to latest start plus request latency."""
    return (max(r["start"] + round(r["e2el"] * 1e6) for r in rows) - min(r["start"] for r in rows)) / 1e9


def with_duration(d: float):
    def fn(rows):
        rows[0]["duration"] = d
    return fn


def command(text: str) -> Context:
    return replace(CTX, command=text, summary=True)


def nothing(rows):
    pass


def drop(k: int):
    def fn(rows):
        del rows[-k:]
    return fn


CTX = Context(conc=4, requests=20, window=WINDOW, profiled=20)
P = ResultsPolicy()
AIPERF = "aiperf profile --model 'stub' --streaming --concurrency 4 --request-count 20 --use-server-token-count"

# name: (edit of the rows, context, policy, the rule that fails or None)
CASES = {
    "consistent run": (nothing, CTX, P, None),
    "no context": (nothing, Context(), P, None),
    "duplicated x_request_id": (copy_of(1, 9), CTX, P, "duplicate-ids"),
    "three copies of one id": (lambda r: (copy_of(1, 9)(r), copy_of(1, 10)(r)), CTX, P, "duplicate-ids"),
    "records without ids": (lambda r: [x.update(rid=None) for x in r], CTX, P, None),
    "a repeated session_num (a copy with a new x_request_id)": (copy_of(2, 11, "session"), CTX, P, "duplicate-ids"),
    "records without a session_num": (lambda r: [x.update(session=None) for x in r], CTX, P, None),
    "ITL 200x the median, consistent": (lambda r: r[5].update(itl=500.0, otpu=2.0, e2el=r[5]["ttft"] + 500.0 * (r[5]["osl"] - 1)),
                                        replace(CTX, window=None), P, "outliers"),
    "ITL 50x the median, consistent": (lambda r: r[5].update(itl=110.0, otpu=1000 / 110.0, e2el=r[5]["ttft"] + 110.0 * (r[5]["osl"] - 1)),
                                       Context(conc=None), P, None),
    "ITL outlier, factor raised": (lambda r: r[5].update(itl=500.0, otpu=2.0, e2el=r[5]["ttft"] + 500.0 * (r[5]["osl"] - 1)),
                                   Context(), replace(P, itl_outlier_factor=1000), None),
    "TTFT 2000x the median": (lambda r: r[5].update(ttft=42000.0, e2el=42000.0 + r[5]["itl"] * (r[5]["osl"] - 1)),
                              Context(), P, "outliers"),
    "TTFT 500x the median": (lambda r: r[5].update(ttft=10500.0, e2el=10500.0 + r[5]["itl"] * (r[5]["osl"] - 1)),
                             Context(), P, None),
    "a record an hour before the window": (shift(0, -3600), CTX, P, "window"),
    "a record a second after the window": (shift(19, 1.5), CTX, P, "window"),
    "the window in another zone (UTC+5:30)": (nothing, replace(CTX, window=(WINDOW[0] + 19800, WINDOW[1] + 19800)), P, None),
    "the window in another zone (UTC-8)": (nothing, replace(CTX, window=(WINDOW[0] - 28800, WINDOW[1] - 28800)), P, None),
    "zone offset plus an edit": (shift(19, 1.5), replace(CTX, window=(WINDOW[0] - 28800, WINDOW[1] - 28800)), P, "window"),
    "a fixed window 99 % filled": (nothing, replace(CTX, window=(WINDOW[0], WINDOW[0] + SPAN / 0.99)), P, None),
    "records fill 90 % of the window": (nothing, replace(CTX, window=(WINDOW[0], WINDOW[0] + SPAN / 0.9)), P, "window"),
    "a duration window need not be filled": (nothing, replace(CTX, window=(WINDOW[0], WINDOW[0] + SPAN / 0.9), requests=None),
                                             P, None),
    "fill lowered in the policy": (nothing, replace(CTX, window=(WINDOW[0], WINDOW[0] + SPAN / 0.9)),
                                   replace(P, window_fill=0.8), None),
    "the last record ends 5 ms early": (lambda r: r[-1].update(end=r[-1]["end"] - 5_000_000), CTX, P, None),
    "records dropped from a fixed window": (drop(2), CTX, P, None),   # the count is the reader's: below
    "fewer profiling records than asked for": (nothing, replace(CTX, profiled=18), P, "window"),
    "slack raised": (shift(19, 1.5), CTX, replace(P, window_slack_s=5.0), None),
    "benchmark_duration as AIPerf computes it": (with_duration(0), CTX, P, None),
    "benchmark_duration 1.5 ms longer": (with_duration(0.0015), CTX, P, "aiperf-duration"),
    "benchmark_duration 0.5 ms shorter": (with_duration(-0.0005), CTX, P, None),
    "benchmark_duration 2 s longer (the old slack)": (with_duration(2.0), CTX, P, "aiperf-duration"),
    "benchmark_duration off, slack raised": (with_duration(0.0015), CTX, replace(P, duration_slack_s=0.002), None),
    "the last request's latency edited": (lambda r: (with_duration(0)(r), r[-1].update(e2el=r[-1]["e2el"] * 0.7)), CTX, P,
                                          "aiperf-duration"),
    "the command asked for what the export holds": (nothing, command(AIPERF), P, None),
    "the command asked for more requests": (nothing, command(AIPERF.replace("20", "24")), P, "aiperf-command"),
    "the command's count as --num-requests=N": (nothing, command(AIPERF.replace("--request-count 20", "--num-requests=19")),
                                                P, "aiperf-command"),
    "the echo has no count": (nothing, replace(command(AIPERF), requests=None), P, None),
    "a record numbered beyond the count": (lambda r: r[3].update(session=20), command(AIPERF), P, "aiperf-command"),
    "a record numbered below 0": (lambda r: r[3].update(session=-1), command(AIPERF), P, "aiperf-command"),
    "a duration run numbers its credits as it likes": (lambda r: r[3].update(session=2000),
                                                       command(AIPERF.replace("--request-count 20", "")), P, None),
    "the echo's count differs from the command's": (nothing, replace(command(AIPERF), requests=22), P,
                                                    ("window", "aiperf-command")),
    "a duration run asks for no count": (nothing, command(AIPERF.replace("--request-count 20", "--benchmark-duration 60")),
                                         P, None),
    "the command asked for another concurrency": (nothing, command(AIPERF.replace("--concurrency 4", "--concurrency 8")), P,
                                                  "aiperf-command"),
    "a count that is not one": (nothing, command(AIPERF.replace("20", "20,40")), P, "aiperf-command"),
    "a command line that does not parse": (nothing, command("aiperf profile --model 'stub"), P, "aiperf-command"),
    "no command in the summary": (nothing, replace(CTX, summary=True), P, "aiperf-command"),
    "a command of a megabyte": (nothing, command(AIPERF + " x" * 600_000), P, "aiperf-command"),
    # issue 35's leftover: the count the runner planned (job.json's client command), against every count
    # the export gives
    "the plan asked for what the export holds": (nothing, replace(command(AIPERF), planned=20), P, None),
    "no plan (a bare AIPerf directory)": (nothing, replace(command(AIPERF), planned=None), P, None),
    "the plan asked for more than every count says": (nothing, replace(command(AIPERF), planned=24), P,
                                                      "planned-requests"),
    "records dropped, command and echo rewritten": (drop(2), replace(command(AIPERF.replace("20", "18")), requests=18,
                                                                     profiled=18, planned=20), P, "planned-requests"),
    "the plan against the records alone (no summary)": (nothing, replace(CTX, requests=None, planned=24), P,
                                                        "planned-requests"),
    "five requests in flight at concurrency 4": (lambda r: r[4].update(start=r[0]["start"] + 10, end=r[0]["end"]),
                                                 CTX, P, "concurrency"),
    "concurrency with slack": (lambda r: r[4].update(start=r[0]["start"] + 10, end=r[0]["end"]), CTX,
                               replace(P, concurrency_slack=1), None),
    "a request ending as the next starts": (lambda r: r[0].update(end=r[4]["start"]), CTX, P, None),
    "concurrency unknown": (lambda r: r[4].update(start=r[0]["start"] + 10, end=r[0]["end"]), replace(CTX, conc=None),
                            P, None),
    "no records": (lambda r: r.clear(), Context(conc=4, window=WINDOW), P, None),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_crosscheck_table(name):
    fn, ctx, policy, rule = CASES[name]
    rows = base()
    fn(rows)
    if rows and "duration" in rows[0]:      # AIPerf's benchmark_duration of the unedited run, plus the case's offset
        ctx = replace(ctx, duration_s=duration(base()) + rows[0].pop("duration"))
    got = {f.rule for f in crosscheck.check(scan_of(rows), ctx, policy)}
    want = set(rule) if isinstance(rule, tuple) else {rule} if rule else set()
    assert got == want, [f.message for f in crosscheck.check(scan_of(rows), ctx, policy)]


def test_a_failure_names_both_values():
    rows = base()
    ctx = replace(CTX, duration_s=duration(rows) + 2.0)
    (f,) = crosscheck.check(scan_of(rows), ctx, P)
    assert f.rule == "aiperf-duration" and f"{duration(rows) + 2.0:.9g} s" in f.message and f"{duration(rows):.9g} s" in f.message
    (f,) = crosscheck.check(scan_of(rows), command(AIPERF.replace("20", "24")), P)
    assert "asked for 24 profiling requests" in f.message and "the export holds 20" in f.message


@pytest.mark.parametrize("n", [1, 20, 3000])
def test_the_last_response_is_the_latest_start_plus_latency_in_whole_nanoseconds(n):
    """AIPerf's last response (start + request latency, in ns), computed element-wise: the integer
    Python's own arithmetic gives record by record."""
    rows = [row(i, conc=4000) for i in range(n)]
    assert crosscheck.last_response_ns(scan_of(rows)) == max(r["start"] + round(r["e2el"] * 1e6) for r in rows)
    assert crosscheck.last_response_ns(scan_of([])) is None


@pytest.mark.parametrize("n", [1, 50, 3000])
def test_in_flight_counts_agree_on_both_paths(n):
    import random

    rng = random.Random(n)
    starts = array("q", sorted(rng.randrange(10**9) for _ in range(n)))
    ends = array("q", (s + rng.randrange(1, 10**7) for s in starts))
    events = sorted([(s, 1) for s in starts] + [(e, -1) for e in ends], key=lambda x: (x[0], x[1]))
    most = level = 0
    for _, d in events:
        level += d
        most = max(most, level)
    assert crosscheck.max_in_flight(starts, ends) == most


def test_zone_offset_is_whole_quarter_hours():
    assert crosscheck.zone_offset_s(1000.0 + 19800.002, 1000.0) == 19800.0
    assert crosscheck.zone_offset_s(1000.0 - 0.003, 1000.0) == 0.0


@pytest.mark.parametrize("ids,repeats", [([], 0), ([4], 0), ([5, 5], 1), (list(range(3000)) + [5, 7, 7], 3),
                                         ([9, 9, 9, 1], 2)])
def test_repeats_count_each_value_seen_before(ids, repeats):
    assert crosscheck._repeats(array("q", ids)) == repeats


def test_a_planned_count_that_differs_names_every_value():
    ctx = replace(command(AIPERF.replace("20", "18")), requests=18, profiled=18, planned=20)
    [f] = [f for f in crosscheck.check(scan_of(base()[:18]), ctx, P) if f.rule == "planned-requests"]
    assert f.message.startswith("the runner planned 20 profiling requests (job.json's client command: "
                                "--request-count 20), but run_info.cli_command asks for 18; the configuration "
                                "AIPerf echoes says 18; the export holds 18 (successful and failed)")


@pytest.mark.parametrize("argv,count", [
    (["aiperf", "profile", "--request-count", "160"], 160),
    (["aiperf", "profile", "--request-count=40", "--concurrency", "4"], 40),
    (["aiperf", "profile", "--benchmark-duration", "600"], None),              # a duration run plans no count
    (["aiperf", "profile", "--num-requests", "7", "--request-count", "9"], 9),  # the last one, as AIPerf reads it
    pytest.param(["aiperf", "profile", "--request-count", "1" + "0" * 400], 10 ** 400, id="beyond-any-float"),
])
def test_the_planned_count_is_the_client_commands(argv, count):
    assert crosscheck.planned_requests(argv) == count


@pytest.mark.parametrize("argv", [["aiperf", "--request-count", "x"], ["aiperf", "--request-count", "0"],
                                  ["aiperf", "--request-count", "1e3"]])
def test_a_planned_count_that_is_not_one_is_refused(argv):
    with pytest.raises(ValueError, match="not one count"):
        crosscheck.planned_requests(argv)
