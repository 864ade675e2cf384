"""The per-record consistency rules (crosscheck.py) as a table: a run of 20 consistent records, one
thing changed per case, and the rule that must fail (None: the run stays consistent)."""

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
    return {"ttft": ttft, "itl": itl, "e2el": e2el, "osl": float(osl), "usage": float(osl), "otpu": 1000.0 / itl,
            "start": start, "end": start + int(e2el * 1e6) + 2_000_000, "rid": hash(f"req-{i}")}


def scan_of(rows: list[dict]) -> RecordScan:
    s = RecordScan()
    for r in rows:
        s.records_profiled += 1
        s.ttft_ms.append(r["ttft"])
        s.e2el_ms.append(r["e2el"])
        if not math.isnan(r["itl"]):
            s.itl_ms.append(r["itl"])
        s.itl_rec.append(r["itl"])
        s.osl.append(r["osl"])
        s.usage_osl.append(r["usage"])
        s.otpu.append(r["otpu"])
        s.start_ns.append(r["start"])
        s.end_ns.append(r["end"])
        if r["rid"] is not None:
            s.request_ids.append(r["rid"])
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


def copy_of(i: int, j: int):
    def fn(rows):
        rows[j]["rid"] = rows[i]["rid"]
    return fn


def nothing(rows):
    pass


def drop(k: int):
    def fn(rows):
        del rows[-k:]
    return fn


CTX = Context(conc=4, requests=20, window=WINDOW)
P = ResultsPolicy()

# name: (edit of the rows, context, policy, the rule that fails or None)
CASES = {
    "consistent run": (nothing, CTX, P, None),
    "no context": (nothing, Context(), P, None),
    "ITL edited +10 %": (edit_by(3, "itl", lambda v: v * 1.1), CTX, P, "record-itl"),
    "ITL edited -10 %": (edit_by(3, "itl", lambda v: v * 0.9), CTX, P, "record-itl"),
    "ITL of 3600 s": (edit_by(5, "itl", lambda v: 3.6e6), CTX, P, ("record-itl", "outliers")),
    "ITL within the tolerance": (edit_by(3, "itl", lambda v: v * 1.0005), CTX, P, None),
    "ITL alone edited: the rate disagrees too": (lambda r: r[3].update(itl=r[3]["itl"] * 1.2), CTX, P,
                                                 ("record-itl", "record-rate")),
    "ITL 5 % off, loose policy": (edit_by(3, "itl", lambda v: v * 1.05), CTX, replace(P, record_tolerance=0.1), None),
    "E2EL edited": (edit_by(7, "e2el", lambda v: v * 1.5), CTX, P, "record-itl"),
    "TTFT edited": (edit_by(7, "ttft", lambda v: v + 5), CTX, P, "record-itl"),
    "OSL edited": (edit_by(8, "osl", lambda v: v + 4), CTX, P, ("record-itl", "record-tokens")),
    "OSL and usage edited": (lambda r: r[8].update(osl=r[8]["osl"] + 4, usage=r[8]["osl"] + 4), CTX, P, "record-itl"),
    "one-token record without ITL": (edit(2, osl=1.0, usage=1.0, itl=math.nan, otpu=math.nan), CTX, P, None),
    "record without an ITL": (edit(2, itl=math.nan, otpu=math.nan), CTX, P, None),
    "per-user rate halved": (edit_by(4, "otpu", lambda v: v / 2), CTX, P, "record-rate"),
    "per-user rate doubled": (edit_by(4, "otpu", lambda v: v * 2), CTX, P, "record-rate"),
    "per-user rate absent": (edit(4, otpu=math.nan), CTX, P, None),
    "usage tokens differ": (edit_by(6, "usage", lambda v: v + 1), CTX, P, "record-tokens"),
    "usage tokens absent": (edit(6, usage=math.nan), CTX, P, None),
    "duplicated x_request_id": (copy_of(1, 9), CTX, P, "duplicate-ids"),
    "three copies of one id": (lambda r: (copy_of(1, 9)(r), copy_of(1, 10)(r)), CTX, P, "duplicate-ids"),
    "records without ids": (lambda r: [x.update(rid=None) for x in r], CTX, P, None),
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
    "records dropped from a fixed window": (drop(2), CTX, P, "window"),
    "dropped records counted as errors": (drop(1), replace(CTX, errors=1), P, None),
    "slack raised": (shift(19, 1.5), CTX, replace(P, window_slack_s=5.0), None),
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
    got = {f.rule for f in crosscheck.check(scan_of(rows), ctx, policy)}
    want = set(rule) if isinstance(rule, tuple) else {rule} if rule else set()
    assert got == want, [f.message for f in crosscheck.check(scan_of(rows), ctx, policy)]


def test_a_failure_names_the_values():
    rows = base()
    rows[5]["itl"] = 3.6e6
    (f,) = [f for f in crosscheck.check(scan_of(rows), CTX, P) if f.rule == "record-itl"]
    assert f.message.startswith("1 record whose ITL disagrees") and "ITL 3.6e+06 ms" in f.message


@pytest.mark.parametrize("n", [50, 3000])   # the pure path and numpy's
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


def test_numpy_and_pure_paths_flag_the_same_records(monkeypatch):
    """A big run goes through numpy in chunks; the same rules record by record must flag the same."""
    from ci_tools.results import metrics, summary

    rows = [row(i, conc=4000) for i in range(3000)]
    for i in (5, 1200, 2999):
        rows[i]["itl"] *= 1.3
    rows[70]["otpu"] *= 2
    rows[2500]["usage"] += 1
    rows[9].update(osl=1.0, usage=1.0, itl=math.nan, otpu=math.nan)
    scan = scan_of(rows)
    ctx = Context(conc=4000)
    fast = [(f.rule, f.message) for f in crosscheck.check(scan, ctx, P)]
    stats_fast = summary.statistics(scan.otpu)
    monkeypatch.setattr(metrics, "_NUMPY", [None])
    assert [(f.rule, f.message) for f in crosscheck.check(scan, ctx, P)] == fast
    assert {r for r, _ in fast} == {"record-itl", "record-rate", "record-tokens"}
    assert "4 records whose per-user rate" in dict(fast)["record-rate"]
    slow = summary.statistics(scan.otpu)
    assert slow.keys() == stats_fast.keys() and all(math.isclose(slow[k], stats_fast[k], rel_tol=1e-12) for k in slow)
