"""Mutation families of AIPerf's real export for `results process` (issue 25, finding 4; issue 35):
each family edits the records, the summary or both the way an adversarial pass edited them after the
run, so every mutant is corrupt. `measure` runs `results process` on each and counts how many are
judged VALID and by how much their headline moved from the unedited export's.

Three kinds of family: an edit alone (a value, a unit, a record, a timestamp, the summary); an edit with
what AIPerf derives from it and the summary rewritten to match (the FORGERIES of issue 35: each keeps
the summary consistent but leaves some physical reading of the export as it was); and the THOROUGH
forgeries, which rewrite every reading an export holds consistently. `broken_invariants` is a
reference implementation of the physical invariants of an export (docs/reference.md, "Result
checks"), independent of ci-tools' own: a mutant judged VALID whose headline moved is a miss when it
breaks one of them, and is counted apart as undetectable by any check of the data when it keeps them
all (only the chain of custody of the export can catch it).

Standalone on purpose (stdlib and the `ci-tools` entry point only): the same families measure an older
tree (`python -m tests.fuzz.results_mutations --count N` with that tree first on PYTHONPATH).
"""

from __future__ import annotations

import copy
import json
import math
import pickle
import random
import shlex
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Callable

HEADLINE = ("tok_s_gpu", "intvty_p90", "intvty_p50", "ttft_p90_s", "ttft_p50_s")
POINT = ["--tp", "4", "--conc", "4", "--scenario", "fixed-seq-len", "--model", "stub"]
CONC = 4
COMPARED = ("time_to_first_token", "inter_token_latency", "request_latency", "output_token_throughput_per_user",
            "output_sequence_length", "input_sequence_length", "usage_completion_tokens", "usage_prompt_tokens",
            "decode_duration", "prefill_throughput_per_user", "e2e_output_token_throughput")
LATENCY = ("time_to_first_token", "inter_token_latency", "request_latency")
# the shipped policy's tolerances (tests/fuzz/test_fuzz_results_mutations.py holds them equal)
RECORD_TOLERANCE = 1e-6
SPAN_TAIL = (5.0, 4.0)          # ms, x ITL
DURATION_SLACK_S = 0.001
SUMMARY_TOLERANCE = 0.001
WINDOW_SLACK_S = 0.001

Family = Callable[[random.Random, list, dict], None]


# ---- helpers: what an editor who knows AIPerf's derivations rewrites alongside --------------------------

def _v(rec, name):
    return rec["metrics"][name]["value"]


def _set(rec, name, value):
    rec["metrics"][name]["value"] = value


def _away(rng: random.Random) -> float:
    """A factor clearly away from 1 (a 5 % to 3x change, up or down)."""
    f = rng.uniform(1.05, 3.0)
    return f if rng.random() < 0.5 else 1 / f


def _rederive(rec) -> None:
    """Rewrite what AIPerf derives from TTFT, ITL and OSL: E2EL, the end time, the per-user rates."""
    ttft, itl, osl = _v(rec, "time_to_first_token"), _v(rec, "inter_token_latency"), _v(rec, "output_sequence_length")
    old = _v(rec, "request_latency")
    e2el = ttft + itl * (osl - 1)
    _set(rec, "request_latency", e2el)
    rec["metadata"]["request_end_ns"] += int((e2el - old) * 1e6)
    _set(rec, "output_token_throughput_per_user", 1000.0 / itl)
    for name in ("usage_completion_tokens", "output_token_count"):
        _set(rec, name, osl)


def _rederive_all(rec) -> None:
    """`_rederive`, and every other reading AIPerf derives from the record's TTFT, ITL, OSL and ISL: the
    decode duration, the chunk gaps (scaled to add up to it, no more of them than tokens after the
    first), the second token, the prefill and end-to-end rates, the server's usage counts, the
    acknowledgement (never after the first token)."""
    _rederive(rec)
    m, md = rec["metrics"], rec["metadata"]
    ttft, e2el, osl, isl = (_v(rec, k) for k in ("time_to_first_token", "request_latency", "output_sequence_length",
                                                  "input_sequence_length"))
    dd = e2el - ttft
    _set(rec, "decode_duration", dd)
    gaps = m["inter_chunk_latency"]["value"][:max(int(osl) - 1, 1)]
    total = sum(gaps)
    gaps = [g * dd / total for g in gaps] if total > 0 else [dd / len(gaps)] * len(gaps)
    m["inter_chunk_latency"]["value"] = gaps
    _set(rec, "time_to_second_token", gaps[0])
    _set(rec, "prefill_throughput_per_user", 1000.0 * isl / ttft)
    _set(rec, "e2e_output_token_throughput", 1000.0 * osl / e2el)
    _set(rec, "usage_prompt_tokens", isl)
    _set(rec, "usage_total_tokens", isl + osl)
    md["request_ack_ns"] = min(md["request_ack_ns"], md["request_start_ns"] + int(ttft * 1e6))


def _pct(xs: list, p: float) -> float:
    n = len(xs)
    k = (n - 1) * p / 100
    f = math.floor(k)
    c = min(f + 1, n - 1)
    return xs[f] + (k - f) * (xs[c] - xs[f])


def _stats(xs: list, entry: dict) -> None:
    xs = sorted(xs)
    n = len(xs)
    mean = math.fsum(xs) / n
    entry.update(avg=mean, min=xs[0], max=xs[-1], count=n, sum=math.fsum(xs),
                 std=math.sqrt(math.fsum((x - mean) ** 2 for x in xs) / n),
                 **{f"p{p}": _pct(xs, p) for p in (1, 5, 10, 25, 50, 75, 90, 95, 99)})


def _ok(recs: list) -> list:
    return [r for r in recs if r["metadata"].get("benchmark_phase") == "profiling" and not r.get("error")]


def _window_s(summary: dict) -> float:
    return (datetime.fromisoformat(summary["end_time"]) - datetime.fromisoformat(summary["start_time"])).total_seconds()


def resummarise(recs: list, summary: dict) -> None:
    """The summary AIPerf would have written for these records (numpy's definitions, in Python): every
    statistic, total and throughput, the chunk gaps, the benchmark duration and the time in flight."""
    ok = _ok(recs)
    for name in COMPARED:
        xs = [float(_v(r, name)) for r in ok if isinstance(r["metrics"].get(name), dict)]
        if xs:
            _stats(xs, summary.setdefault(name, {"unit": "ms"}))
    gaps = [g for r in ok for g in r["metrics"].get("inter_chunk_latency", {}).get("value", [])]
    if gaps:
        _stats(gaps, summary.setdefault("inter_chunk_latency", {"unit": "ms"}))
    window = _window_s(summary)
    osl = sum(_v(r, "output_sequence_length") for r in ok)
    isl = sum(_v(r, "input_sequence_length") for r in ok)
    summary["request_count"]["avg"] = float(len(ok))
    for key, total in (("total_osl", osl), ("total_isl", isl), ("total_output_tokens", osl),
                       ("total_usage_completion_tokens", osl), ("total_usage_prompt_tokens", isl)):
        summary.setdefault(key, {"unit": "tokens"})["avg"] = float(total)
    summary["output_token_throughput"]["avg"] = osl / window
    summary["input_token_throughput"]["avg"] = isl / window
    summary["total_token_throughput"]["avg"] = (isl + osl) / window
    summary["request_throughput"]["avg"] = len(ok) / window
    if ok:
        first = min(r["metadata"]["request_start_ns"] for r in ok)
        last = max(r["metadata"]["request_start_ns"] + round(_v(r, "request_latency") * 1e6) for r in ok)
        summary["benchmark_duration"]["avg"] = (last - first) / 1e9
        in_flight = sum(r["metadata"]["request_end_ns"] - r["metadata"]["request_start_ns"] for r in ok) / 1e9
        summary["effective_concurrency"]["avg"] = in_flight / window


def _echo_count(recs: list, agg: dict) -> None:
    """The request count re-echoed everywhere AIPerf writes it: its configuration and its command line."""
    n = len([r for r in recs if r["metadata"].get("benchmark_phase") == "profiling"])
    for phase in agg["input_config"]["phases"]:
        if phase.get("kind") == "profiling" and "requests" in phase:
            phase["requests"] = n
    words = shlex.split(agg["run_info"]["cli_command"])
    words[words.index("--request-count") + 1] = str(n)
    agg["run_info"]["cli_command"] = shlex.join(words)


def _renumber(recs: list) -> None:
    """Credit numbers (session_num) 0..n-1 again, in start order, as if no record were missing or added."""
    for i, r in enumerate(sorted(recs, key=lambda r: r["metadata"]["request_start_ns"])):
        r["metadata"]["session_num"] = i


def _stamp(ns: int) -> str:
    return datetime.fromtimestamp(ns / 1e9, tz=timezone.utc).replace(tzinfo=None).isoformat()


def _rewindow(recs: list, agg: dict) -> None:
    """AIPerf's window around the records as it writes it: from just before the first start to just after
    the last end (the offsets of the unedited export, 2.8 ms and 0.3 ms)."""
    first = min(r["metadata"]["request_start_ns"] for r in recs)
    last = max(r["metadata"]["request_end_ns"] for r in recs)
    agg["start_time"] = _stamp(first - 2_805_000)
    agg["end_time"] = _stamp(last + 329_000)


def _one(rng, recs):
    return recs[rng.randrange(len(recs))]


def _scale(name: str, consistent: bool = False, every: bool = False, summary: bool = False) -> Family:
    def fam(rng, recs, agg):
        f = _away(rng)
        for rec in (recs if every else [_one(rng, recs)]):
            _set(rec, name, _v(rec, name) * f)
            if consistent:
                _rederive(rec)
        if summary:
            resummarise(recs, agg)
    return fam


def _value(name: str, value, consistent=False, summary=False) -> Family:
    def fam(rng, recs, agg):
        rec = _one(rng, recs)
        _set(rec, name, value)
        if consistent:
            _rederive(rec)
        if summary:
            resummarise(recs, agg)
    return fam


def _unit(name: str, units: tuple, every=False) -> Family:
    def fam(rng, recs, agg):
        unit = rng.choice(units)
        for rec in (recs if every else [_one(rng, recs)]):
            rec["metrics"][name]["unit"] = unit
    return fam


def _osl(summary=False) -> Family:
    def fam(rng, recs, agg):
        rec = _one(rng, recs)
        _set(rec, "output_sequence_length", _v(rec, "output_sequence_length") + rng.choice([-8, -3, 2, 5, 20]))
        if summary:
            resummarise(recs, agg)
    return fam


def _isl(rng, recs, agg):
    rec = _one(rng, recs)
    _set(rec, "input_sequence_length", _v(rec, "input_sequence_length") * _away(rng))


def _drop(summary=False) -> Family:
    def fam(rng, recs, agg):
        for _ in range(rng.randint(1, 5)):
            recs.pop(rng.randrange(len(recs)))
        if summary:
            resummarise(recs, agg)
    return fam


def _duplicate(summary=False) -> Family:
    def fam(rng, recs, agg):
        for _ in range(rng.randint(1, 3)):
            recs.insert(rng.randrange(len(recs)), copy.deepcopy(_one(rng, recs)))
        if summary:
            resummarise(recs, agg)
    return fam


def _same_id(rng, recs, agg):
    a, b = rng.sample(range(len(recs)), 2)
    recs[b]["metadata"]["x_request_id"] = recs[a]["metadata"]["x_request_id"]


def _shift(which: str, summary=False) -> Family:
    def fam(rng, recs, agg):
        rec = _one(rng, recs)
        d = int(rng.choice([-1, 1]) * rng.uniform(0.005, 0.4) * 1e9)
        if which in ("start", "both"):
            rec["metadata"]["request_start_ns"] += d
        if which in ("end", "both"):
            rec["metadata"]["request_end_ns"] += d
        if summary:
            resummarise(recs, agg)
    return fam


def _first_or_last(rng, recs, agg):
    """Stretch the run: the first request starts earlier or the last ends later (throughput moves)."""
    key = rng.choice(["request_start_ns", "request_end_ns"])
    pick = min if key == "request_start_ns" else max
    rec = pick(recs, key=lambda r: r["metadata"][key])
    rec["metadata"][key] += int((-1 if key == "request_start_ns" else 1) * rng.uniform(0.002, 0.2) * 1e9)


def _overlap(rng, recs, agg):
    """One request moved to run beside others: five in flight at concurrency 4."""
    a, b = rng.sample(range(len(recs)), 2)
    span = recs[b]["metadata"]["request_end_ns"] - recs[b]["metadata"]["request_start_ns"]
    recs[b]["metadata"]["request_start_ns"] = recs[a]["metadata"]["request_start_ns"] + 1000
    recs[b]["metadata"]["request_end_ns"] = recs[b]["metadata"]["request_start_ns"] + span


def _swap(rng, recs, agg):
    rec = _one(rng, recs)
    t, i = _v(rec, "time_to_first_token"), _v(rec, "inter_token_latency")
    _set(rec, "time_to_first_token", i)
    _set(rec, "inter_token_latency", t)


def _phase(rng, recs, agg):
    _one(rng, recs)["metadata"]["benchmark_phase"] = "warmup"


def _error(rng, recs, agg):
    _one(rng, recs)["error"] = {"type": "HTTPStatusError", "message": "500"}


def _summary_stat(rng, recs, agg):
    name = rng.choice(COMPARED[:5])
    stat = rng.choice(["avg", "p50", "p90", "p95", "p99", "min", "max"])
    agg[name][stat] *= _away(rng)


def _summary_unit(rng, recs, agg):
    agg[rng.choice(COMPARED[:3] + ("benchmark_duration",))]["unit"] = rng.choice(["s", "us", "ns", "sec", "x"])


def _summary_scalar(key: str) -> Family:
    def fam(rng, recs, agg):
        agg[key]["avg"] *= _away(rng)
    return fam


def _summary_window(stretch: bool) -> Family:
    def fam(rng, recs, agg):
        d = timedelta(seconds=rng.uniform(0.01, 0.5))
        if stretch:
            agg["end_time"] = (datetime.fromisoformat(agg["end_time"]) + d).isoformat()
        else:
            for key in ("start_time", "end_time"):
                agg[key] = (datetime.fromisoformat(agg[key]) + d * rng.choice([-1, 1])).isoformat()
    return fam


def _summary_remove(rng, recs, agg):
    agg.pop(rng.choice(COMPARED[:5] + ("output_token_throughput", "request_throughput", "start_time")))


def _summary_concurrency(rng, recs, agg):
    agg["input_config"]["phases"][0]["concurrency"] = rng.choice([2, 3, 8, 64])


def _summary_flag(rng, recs, agg):
    key = rng.choice(["is_complete", "was_cancelled"])
    agg[key] = not agg[key]


def _stretch_run(rng, recs, agg):
    """Every timestamp spread out by a factor (throughput down), the window edited to match."""
    t0 = min(r["metadata"]["request_start_ns"] for r in recs)
    f = rng.uniform(1.02, 1.5)
    for r in recs:
        for key in ("request_start_ns", "request_end_ns"):
            r["metadata"][key] = t0 + int((r["metadata"][key] - t0) * f)
    resummarise(recs, agg)



# ---- hostile numbers: bounded parsing (issue 35, finding 3 and 4) --------------------------------------

def _huge_itl(rng, recs, agg):
    """An ITL of 1e308 in two records (an OverflowError in the mean, exit 3, before)."""
    for rec in rng.sample(recs, 2):
        _set(rec, "inter_token_latency", 1e308)


def _infinite_rate(rng, recs, agg):
    """Infinity as a per-user rate, which compared as equal to anything (and NaN as a count, absent)."""
    rec = _one(rng, recs)
    _set(rec, rng.choice(["output_token_throughput_per_user", "prefill_throughput_per_user",
                          "e2e_output_token_throughput"]), float("inf"))


def _nan_count(rng, recs, agg):
    _set(_one(rng, recs), rng.choice(["usage_completion_tokens", "usage_prompt_tokens"]), float("nan"))


def _huge_number(rng, recs, agg):
    """A number beyond any measurement where a record or the summary holds one."""
    value = rng.choice([1e308, -1e308, float("inf"), 10 ** 400, 1e-320])
    if rng.random() < 0.5:
        rec = _one(rng, recs)
        name = rng.choice(sorted(k for k, v in rec["metrics"].items() if isinstance(v.get("value"), (int, float))))
        _set(rec, name, value)
    else:
        key = rng.choice(["benchmark_duration", "request_count", "total_isl", "total_osl", "output_token_throughput",
                          "time_to_first_token", "inter_chunk_latency"])
        agg[key][rng.choice(["avg", "max", "sum", "count"] if "count" in agg[key] else ["avg"])] = value


def _gaps_edited(rng, recs, agg):
    """One record's chunk gaps edited: scaled, one negative, one removed, or all removed."""
    rec = _one(rng, recs)
    gaps = rec["metrics"]["inter_chunk_latency"]["value"]
    how = rng.randrange(4)
    if how == 0:
        rec["metrics"]["inter_chunk_latency"]["value"] = [g * _away(rng) for g in gaps]
    elif how == 1:
        gaps[rng.randrange(len(gaps))] *= -1
    elif how == 2:
        gaps.append(gaps.pop(0) * 0)
        gaps.extend([0.0] * 3)
    else:
        del rec["metrics"]["inter_chunk_latency"]


def _witness_removed(rng, recs, agg):
    """A figure the checks hold the others against, deleted from every record."""
    name = rng.choice(["decode_duration", "inter_chunk_latency", "usage_prompt_tokens", "usage_completion_tokens",
                       "prefill_throughput_per_user", "e2e_output_token_throughput"])
    for rec in recs:
        rec["metrics"].pop(name, None)


def _ack_before_start(rng, recs, agg):
    rec = _one(rng, recs)
    md = rec["metadata"]
    which = rng.randrange(3)
    if which == 0:
        md["request_ack_ns"] = md["request_start_ns"] - rng.randrange(1, 10**7)
    elif which == 1:
        md["request_ack_ns"] = md["request_start_ns"] + int(_v(rec, "time_to_first_token") * 1e6) + rng.randrange(10**5, 10**7)
    else:
        md["credit_issued_ns"] = md["request_start_ns"] + rng.randrange(10**5, 10**7)


def _session_repeated(rng, recs, agg):
    """A record copied with a fresh x_request_id and correlation id (its credit number kept), and the
    summary and count rewritten for it."""
    rec = copy.deepcopy(_one(rng, recs))
    rec["metadata"]["x_request_id"] = str(uuid.UUID(int=rng.getrandbits(128)))
    rec["metadata"]["x_correlation_id"] = str(uuid.UUID(int=rng.getrandbits(128)))
    recs.insert(rng.randrange(len(recs)), rec)
    resummarise(recs, agg)
    _echo_count(recs, agg)


def _command_edited(rng, recs, agg):
    words = shlex.split(agg["run_info"]["cli_command"])
    which = rng.randrange(4)
    if which == 0:
        words[words.index("--request-count") + 1] = str(rng.choice([36, 39, 41, 80]))
    elif which == 1:
        words[words.index("--concurrency") + 1] = str(rng.choice([2, 8, 64]))
    elif which == 2:
        del agg["run_info"]["cli_command"]
        return
    else:
        agg["run_info"]["cli_command"] = "aiperf profile --request-count '40"
        return
    agg["run_info"]["cli_command"] = shlex.join(words)


def _duration_off(rng, recs, agg):
    """benchmark_duration moved by 2 ms to 2 s (2 s passed before, on a 0.68 s run)."""
    agg["benchmark_duration"]["avg"] += rng.choice([-1, 1]) * rng.uniform(0.002, 2.0)


# ---- forgeries: records edited with AIPerf's summary, so that the two agree (issue 35, finding 2) -------

def _forge_isl(rng, recs, agg):
    """Every record's ISL set to 400, total_isl (and the ISL statistics) to match: 6,857 -> 24,591 tok/s/GPU."""
    isl = rng.choice([400, 250, 1000])
    for rec in recs:
        _set(rec, "input_sequence_length", isl)
    resummarise(recs, agg)


def _forge_latencies(rng, recs, agg):
    """TTFT, ITL and request latency x0.7 (the per-user rate with them), the summary to match: P90
    interactivity 392 -> 560."""
    f = rng.uniform(0.6, 0.8)
    for rec in recs:
        for name in LATENCY:
            _set(rec, name, _v(rec, name) * f)
        _set(rec, "output_token_throughput_per_user", 1000.0 / _v(rec, "inter_token_latency"))
    resummarise(recs, agg)


def _forge_squeeze(rng, recs, agg):
    """Every timestamp squeezed x0.75 towards the first (the run 25 % shorter: +33 % tok/s/GPU), the
    window, duration and throughputs to match."""
    f = rng.uniform(0.7, 0.8)
    t0 = min(r["metadata"]["request_start_ns"] for r in recs)
    for r in recs:
        for key in ("request_start_ns", "request_end_ns"):
            r["metadata"][key] = t0 + int((r["metadata"][key] - t0) * f)
    _rewindow(recs, agg)
    resummarise(recs, agg)


def _forge_drop_slowest(rng, recs, agg):
    """The slowest records (by ITL or TTFT) dropped, the summary rewritten and the count re-echoed in
    the configuration (+1.7 %)."""
    key = rng.choice(["inter_token_latency", "time_to_first_token", "request_latency"])
    for rec in sorted(recs, key=lambda r: _v(r, key))[-rng.randint(1, 4):]:
        recs.remove(rec)
    resummarise(recs, agg)
    for phase in agg["input_config"]["phases"]:
        if phase.get("kind") == "profiling":
            phase["requests"] = len(recs)


def _forge_osl(rng, recs, agg):
    """Every OSL raised by a quarter in the same time (ITL, the server's count and the per-user rate
    derived again, each request's timestamps and latency kept), summary to match: more tokens, faster."""
    for rec in recs:
        osl = round(_v(rec, "output_sequence_length") * 1.25)
        _set(rec, "output_sequence_length", osl)
        _set(rec, "inter_token_latency", (_v(rec, "request_latency") - _v(rec, "time_to_first_token")) / (osl - 1))
        _rederive(rec)
    resummarise(recs, agg)


def _forge_ttft(rng, recs, agg):
    """Every TTFT halved within the same request latency (ITL and rate derived again), summary to match."""
    for rec in recs:
        _set(rec, "time_to_first_token", _v(rec, "time_to_first_token") * 0.5)
        osl = _v(rec, "output_sequence_length")
        _set(rec, "inter_token_latency", (_v(rec, "request_latency") - _v(rec, "time_to_first_token")) / (osl - 1))
        _rederive(rec)
    resummarise(recs, agg)


def _forge_duplicate_fastest(rng, recs, agg):
    """The fastest records copied in with fresh ids after the run's end (as if more requests had been
    sent), window, summary and count to match."""
    end = max(r["metadata"]["request_end_ns"] for r in recs)
    for rec in sorted(recs, key=lambda r: _v(r, "inter_token_latency"))[:rng.randint(2, 6)]:
        twin = copy.deepcopy(rec)
        twin["metadata"]["x_request_id"] = str(uuid.UUID(int=rng.getrandbits(128)))
        shift = end + 1000 - rec["metadata"]["request_start_ns"]
        for key in ("request_start_ns", "request_end_ns", "request_ack_ns", "credit_issued_ns"):
            twin["metadata"][key] += shift
        recs.append(twin)
    _rewindow(recs, agg)
    resummarise(recs, agg)
    _echo_count(recs, agg)


def _forge_tail_itl(rng, recs, agg):
    """The slow tail's ITLs (the top 10 %) set to the median, every derived figure but the chunk gaps
    rewritten, summary to match: P90 interactivity up."""
    itls = sorted(_v(r, "inter_token_latency") for r in recs)
    median = itls[len(itls) // 2]
    for rec in recs:
        if _v(rec, "inter_token_latency") > itls[int(len(itls) * 0.9)]:
            _set(rec, "inter_token_latency", median)
            _rederive(rec)
            _set(rec, "decode_duration", _v(rec, "request_latency") - _v(rec, "time_to_first_token"))
    resummarise(recs, agg)


def _forge_edges_trimmed(rng, recs, agg):
    """The first and last requests dropped (the run shorter at both ends), window, summary and count
    re-echoed everywhere."""
    recs.sort(key=lambda r: r["metadata"]["request_start_ns"])
    del recs[:rng.randint(1, 3)]
    del recs[-rng.randint(1, 3):]
    _rewindow(recs, agg)
    resummarise(recs, agg)
    _echo_count(recs, agg)


def _forge_latencies_rederived(rng, recs, agg):
    """Latencies x0.8 with every figure derived from them (chunk gaps, decode duration, rates), the
    summary to match; the request's own timestamps are left as the run wrote them."""
    f = rng.uniform(0.75, 0.85)
    for rec in recs:
        end = rec["metadata"]["request_end_ns"]
        for name in LATENCY:
            _set(rec, name, _v(rec, name) * f)
        _rederive_all(rec)
        rec["metadata"]["request_end_ns"] = end
    resummarise(recs, agg)


def _forge_window_stretch(rng, recs, agg):
    """Idle time cut: the later half of the run moved earlier by 5 to 20 % of its length, the summary to
    match (every record's own readings untouched)."""
    recs.sort(key=lambda r: r["metadata"]["request_start_ns"])
    t0, t1 = recs[0]["metadata"]["request_start_ns"], recs[-1]["metadata"]["request_end_ns"]
    cut = int((t1 - t0) * rng.uniform(0.05, 0.2))
    for r in recs[len(recs) // 2:]:
        for key in ("request_start_ns", "request_end_ns", "request_ack_ns", "credit_issued_ns"):
            r["metadata"][key] -= cut
    _rewindow(recs, agg)
    resummarise(recs, agg)


def _forge_last_shortened(rng, recs, agg):
    """The requests that end the run made faster (ITL x0.6, request latency and end time derived
    again): the run ends earlier and decodes faster; window and summary to match."""
    for rec in sorted(recs, key=lambda r: r["metadata"]["request_end_ns"])[-rng.randint(3, 6):]:
        _set(rec, "inter_token_latency", _v(rec, "inter_token_latency") * rng.uniform(0.5, 0.7))
        _rederive(rec)
    _rewindow(recs, agg)
    resummarise(recs, agg)


# ---- thorough forgeries: every reading rewritten consistently (only custody can catch these) ------------

def _thorough_isl(rng, recs, agg):
    """ISL, the server's prompt count, its total and the prefill rate all set as if the prompts were longer."""
    isl = rng.choice([400, 250, 1000])
    for rec in recs:
        _set(rec, "input_sequence_length", isl)
        _rederive_all(rec)
    resummarise(recs, agg)


def _thorough_squeeze(rng, recs, agg):
    """Time itself squeezed: every timestamp and every latency x0.75 and everything derived from them."""
    f = rng.uniform(0.7, 0.8)
    t0 = min(r["metadata"]["request_start_ns"] for r in recs)
    for r in recs:
        for key in ("request_start_ns", "request_end_ns", "request_ack_ns", "credit_issued_ns"):
            r["metadata"][key] = t0 + int((r["metadata"][key] - t0) * f)
        for name in LATENCY:
            _set(r, name, _v(r, name) * f)
        r["metrics"]["inter_chunk_latency"]["value"] = [g * f for g in r["metrics"]["inter_chunk_latency"]["value"]]
        _rederive_all(r)
        # the end is where the squeeze put it: keep the stream's tail after its last chunk as it was
        r["metadata"]["request_end_ns"] = r["metadata"]["request_start_ns"] + round(_v(r, "request_latency") * 1e6) + 2_500_000
    _rewindow(recs, agg)
    resummarise(recs, agg)


def _thorough_drop(rng, recs, agg):
    """The slowest records dropped, credit numbers renumbered, the count re-echoed in the configuration
    and in the command line."""
    for rec in sorted(recs, key=lambda r: _v(r, "inter_token_latency"))[-rng.randint(1, 4):]:
        recs.remove(rec)
    _renumber(recs)
    resummarise(recs, agg)
    _echo_count(recs, agg)


FORGERIES = ("forge-isl-400", "forge-latencies-x0.7", "forge-timestamps-squeezed", "forge-slowest-dropped",
             "forge-osl-inflated", "forge-ttft-halved", "forge-fastest-duplicated", "forge-itl-tail-to-median",
             "forge-edges-trimmed", "forge-latencies-rederived", "forge-last-requests-shortened")
THOROUGH = ("thorough-isl", "thorough-time-squeezed", "thorough-slowest-dropped")


FAMILIES: dict[str, Family] = {
    # records edited, the summary left as AIPerf wrote it
    "ttft-one-scaled": _scale("time_to_first_token"),
    "itl-one-scaled": _scale("inter_token_latency"),
    "itl-one-3600s": _value("inter_token_latency", 3.6e6),
    "e2el-one-scaled": _scale("request_latency"),
    "ttft-every-scaled": _scale("time_to_first_token", every=True),
    "itl-every-scaled": _scale("inter_token_latency", every=True),
    "otpu-one-scaled": _scale("output_token_throughput_per_user"),
    "usage-one-scaled": _scale("usage_completion_tokens"),
    "osl-one-changed": _osl(),
    "isl-one-scaled": _isl,
    "itl-one-unit": _unit("inter_token_latency", ("s", "us", "ns", "sec")),
    "itl-every-unit-s": _unit("inter_token_latency", ("s",), every=True),
    "ttft-every-unit": _unit("time_to_first_token", ("s", "us", "ns")),
    "e2el-one-unit": _unit("request_latency", ("s", "us", "x")),
    "osl-one-unit": _unit("output_sequence_length", ("ms", "kilotokens", "")),
    "unit-bogus": _unit("inter_token_latency", ("furlongs", "MS", "ms ", "seconds")),
    "records-dropped": _drop(),
    "records-duplicated": _duplicate(),
    "request-id-repeated": _same_id,
    "start-shifted": _shift("start"),
    "end-shifted": _shift("end"),
    "request-moved": _shift("both"),
    "run-stretched-at-an-edge": _first_or_last,
    "requests-overlapping": _overlap,
    "ttft-itl-swapped": _swap,
    "profiling-marked-warmup": _phase,
    "error-added": _error,
    # records edited with every value AIPerf derives from them, the summary left alone
    "itl-one-scaled-rederived": _scale("inter_token_latency", consistent=True),
    "ttft-one-scaled-rederived": _scale("time_to_first_token", consistent=True),
    "itl-one-3600s-rederived": _value("inter_token_latency", 3.6e6, consistent=True),
    # records edited and the summary rewritten to match them
    "itl-one-scaled-resummarised": _scale("inter_token_latency", summary=True),
    "ttft-one-scaled-resummarised": _scale("time_to_first_token", summary=True),
    "itl-one-rederived-resummarised": _scale("inter_token_latency", consistent=True, summary=True),
    "ttft-one-rederived-resummarised": _scale("time_to_first_token", consistent=True, summary=True),
    "itl-3600s-rederived-resummarised": _value("inter_token_latency", 3.6e6, consistent=True, summary=True),
    "ttft-every-rederived-resummarised": _scale("time_to_first_token", consistent=True, every=True, summary=True),
    "osl-one-resummarised": _osl(summary=True),
    "records-dropped-resummarised": _drop(summary=True),
    "records-duplicated-resummarised": _duplicate(summary=True),
    "request-moved-resummarised": _shift("both", summary=True),
    "run-stretched-resummarised": _stretch_run,
    # the summary edited
    "summary-statistic": _summary_stat,
    "summary-unit": _summary_unit,
    "summary-output-throughput": _summary_scalar("output_token_throughput"),
    "summary-request-throughput": _summary_scalar("request_throughput"),
    "summary-request-count": _summary_scalar("request_count"),
    "summary-total-osl": _summary_scalar("total_osl"),
    "summary-duration": _summary_scalar("benchmark_duration"),
    "summary-window-shifted": _summary_window(False),
    "summary-window-stretched": _summary_window(True),
    "summary-metric-removed": _summary_remove,
    "summary-concurrency": _summary_concurrency,
    "summary-flag": _summary_flag,
    # hostile numbers and witnesses
    "itl-1e308-in-two": _huge_itl,
    "rate-infinite": _infinite_rate,
    "count-nan": _nan_count,
    "number-huge": _huge_number,
    "chunk-gaps-edited": _gaps_edited,
    "witness-removed": _witness_removed,
    "ack-or-credit-moved": _ack_before_start,
    "session-repeated-resummarised": _session_repeated,
    "command-edited": _command_edited,
    "summary-duration-slack": _duration_off,
    # forgeries that keep AIPerf's summary consistent (issue 35)
    "forge-isl-400": _forge_isl,
    "forge-latencies-x0.7": _forge_latencies,
    "forge-timestamps-squeezed": _forge_squeeze,
    "forge-slowest-dropped": _forge_drop_slowest,
    "forge-osl-inflated": _forge_osl,
    "forge-ttft-halved": _forge_ttft,
    "forge-fastest-duplicated": _forge_duplicate_fastest,
    "forge-itl-tail-to-median": _forge_tail_itl,
    "forge-edges-trimmed": _forge_edges_trimmed,
    "forge-latencies-rederived": _forge_latencies_rederived,
    "forge-last-requests-shortened": _forge_last_shortened,
    "idle-time-cut-resummarised": _forge_window_stretch,
    # every reading rewritten: what no check of the data can see
    "thorough-isl": _thorough_isl,
    "thorough-time-squeezed": _thorough_squeeze,
    "thorough-slowest-dropped": _thorough_drop,
}


def mutant(export: tuple[list, dict], family: str, seed: int) -> tuple[list, dict]:
    # a pickle round trip is the same deep copy of JSON data, three times faster than copy.deepcopy,
    # which was a fifth of the fuzz tier's time over 3,120 mutants
    recs, agg = pickle.loads(pickle.dumps(export, pickle.HIGHEST_PROTOCOL))
    rng = random.Random(f"{family}:{seed}")
    FAMILIES[family](rng, recs, agg)
    if rng.random() < 0.15 and family not in THOROUGH:   # now and then a second family on top
        try:
            FAMILIES[rng.choice(sorted(set(FAMILIES) - set(THOROUGH)))](rng, recs, agg)
        except (KeyError, TypeError, ValueError, ZeroDivisionError, IndexError, OverflowError, AttributeError):
            pass                                  # it needs what the first took away: the first alone

    return recs, agg


# ---- the reference implementation of an export's invariants ------------------------------------------

def _num(x) -> float | None:
    if not isinstance(x, (int, float)) or isinstance(x, bool):
        return None
    try:
        x = float(x)
    except OverflowError:
        return None
    return x if math.isfinite(x) else None


def _close(a: float, b: float, rel: float) -> bool:
    return abs(a - b) <= rel * abs(b) + 1e-6


def _record_invariants(r: dict) -> list[str]:
    """What one successful record breaks (tolerances: the shipped policy's)."""
    m, md = r["metrics"], r["metadata"]
    get = {k: _num(v.get("value")) if isinstance(v, dict) else None for k, v in m.items()}
    ttft, itl, e2el = get.get("time_to_first_token"), get.get("inter_token_latency"), get.get("request_latency")
    isl, osl = get.get("input_sequence_length"), get.get("output_sequence_length")
    if None in (ttft, e2el, isl, osl):
        return ["a reading missing"]
    out = []
    dd = e2el - ttft
    gaps = m.get("inter_chunk_latency", {}).get("value")
    for name in ("decode_duration", "usage_prompt_tokens", "usage_completion_tokens", "prefill_throughput_per_user",
                 "e2e_output_token_throughput") + (("output_token_throughput_per_user",) if itl is not None else ()):
        if get.get(name) is None:
            out.append(f"no {name}")
    if gaps is None and dd > 0:
        out.append("no chunk gaps")
    if get.get("decode_duration") is not None and not _close(get["decode_duration"], dd, RECORD_TOLERANCE):
        out.append("decode duration")
    if gaps is not None and (not _close(sum(gaps), dd, RECORD_TOLERANCE) or len(gaps) > osl - 1):
        out.append("chunk gaps")
    tail = (md["request_end_ns"] - md["request_start_ns"]) / 1e6 - e2el
    if not -1e-3 <= tail <= SPAN_TAIL[0] + SPAN_TAIL[1] * (itl if itl is not None else ttft):
        out.append("stream tail")
    ack, credit = md.get("request_ack_ns"), md.get("credit_issued_ns")
    if ack is not None and not (-1e-3 <= (ack - md["request_start_ns"]) / 1e6 <= ttft + 1e-3):
        out.append("acknowledged")
    if credit is not None and md["request_start_ns"] - credit < -1000:
        out.append("credit")
    if get.get("usage_prompt_tokens") is not None and get["usage_prompt_tokens"] != isl:
        out.append("ISL vs usage")
    if get.get("usage_completion_tokens") is not None and get["usage_completion_tokens"] != osl:
        out.append("OSL vs usage")
    if itl is not None and osl > 1 and not _close(itl, dd / (osl - 1), RECORD_TOLERANCE):
        out.append("ITL")
    for name, want in (("output_token_throughput_per_user", 1000.0 / itl if itl else None),
                       ("prefill_throughput_per_user", 1000.0 * isl / ttft),
                       ("e2e_output_token_throughput", 1000.0 * osl / e2el)):
        if want is not None and get.get(name) is not None and not _close(get[name], want, RECORD_TOLERANCE):
            out.append(name)
    return out


def broken_invariants(recs: list, agg: dict) -> list[str]:
    """Every physical invariant of an AIPerf 0.13 export the mutant breaks (empty: it is as consistent
    as a real export), written apart from ci-tools' own checks."""
    try:
        return _broken(recs, agg)
    except (KeyError, TypeError, ValueError, ZeroDivisionError, OverflowError, AttributeError, IndexError) as exc:
        return [f"unreadable ({type(exc).__name__}: {exc})"]


def _broken(recs: list, agg: dict) -> list[str]:
    out: list[str] = []
    ok = _ok(recs)
    for r in ok:
        out += _record_invariants(r)
    for key in ("x_request_id", "session_num"):
        values = [r["metadata"].get(key) for r in ok if r["metadata"].get(key) is not None]
        if len(values) != len(set(values)):
            out.append(f"repeated {key}")
    if not ok:
        return out + ["no records"]
    first = min(r["metadata"]["request_start_ns"] for r in ok)
    last = max(r["metadata"]["request_start_ns"] + round(_v(r, "request_latency") * 1e6) for r in ok)
    bd = agg.get("benchmark_duration", {}).get("avg")
    if not isinstance(bd, (int, float)) or abs((last - first) / 1e9 - bd) > DURATION_SLACK_S:
        out.append("benchmark duration")
    profiled = len([r for r in recs if r["metadata"].get("benchmark_phase") == "profiling"])
    try:
        words = shlex.split(agg["run_info"]["cli_command"])
        asked = int(words[words.index("--request-count") + 1]) if "--request-count" in words else profiled
        conc = int(words[words.index("--concurrency") + 1])
    except (KeyError, TypeError, ValueError, IndexError):
        return out + ["command line"]
    if asked != profiled or conc != CONC:
        out.append("command line")
    if "--request-count" in words and not all(0 <= r["metadata"].get("session_num", -1) < asked for r in ok):
        out.append("credit numbers beyond the count")
    for phase in agg.get("input_config", {}).get("phases", []):
        if phase.get("kind") == "profiling" and phase.get("requests", profiled) != profiled:
            out.append("echoed count")
    # the summary is AIPerf's of these records
    fresh = copy.deepcopy(agg)
    resummarise(recs, fresh)
    for key in COMPARED + ("inter_chunk_latency",):
        for stat in ("avg", "p50", "p90", "p99", "min", "max", "count"):
            a, b = agg.get(key, {}).get(stat), fresh.get(key, {}).get(stat)
            if (a is None) != (b is None) or (b is not None and not _close(a, b, SUMMARY_TOLERANCE)):
                out.append(f"summary {key}")
                break
    for key in ("request_count", "total_isl", "total_osl", "output_token_throughput", "input_token_throughput",
                "total_token_throughput", "request_throughput", "effective_concurrency"):
        a, b = agg.get(key, {}).get("avg"), fresh[key]["avg"]
        if not isinstance(a, (int, float)) or not _close(a, b, SUMMARY_TOLERANCE):
            out.append(f"summary {key}")
    # AIPerf's window holds every record, and no more than the concurrency are in flight at once
    try:
        w0, w1 = (datetime.fromisoformat(agg[k]).replace(tzinfo=timezone.utc).timestamp() for k in ("start_time", "end_time"))
    except (KeyError, TypeError, ValueError):
        return out + ["window"]
    zone = round((w0 - first / 1e9) / 900) * 900
    if first / 1e9 < w0 - zone - WINDOW_SLACK_S or max(r["metadata"]["request_end_ns"] for r in ok) / 1e9 > w1 - zone + WINDOW_SLACK_S:
        out.append("window")
    events = sorted([(r["metadata"]["request_start_ns"], 1) for r in ok] + [(r["metadata"]["request_end_ns"], -1) for r in ok])
    level = most = 0
    for _, d in events:
        level += d
        most = max(most, level)
    if most > CONC:
        out.append("concurrency")
    return out


def write(d: Path, recs: list, agg: dict) -> None:
    d.mkdir(parents=True, exist_ok=True)
    (d / "profile_export.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    (d / "profile_export_aiperf.json").write_text(json.dumps(agg))


def moved(clean: dict, judged: dict) -> float:
    """The largest relative change of a headline figure (inf when one disappeared)."""
    worst = 0.0
    for key in HEADLINE:
        a, b = clean.get(key), judged.get(key)
        if a is None:
            continue
        if b is None or not math.isfinite(b):
            return math.inf
        worst = max(worst, abs(b - a) / abs(a))
    return worst


@dataclass
class Tally:
    cases: int = 0
    exits: dict = field(default_factory=dict)        # exit code -> mutants
    tracebacks: list = field(default_factory=list)
    valid: list = field(default_factory=list)        # (family, seed, headline moved, invariants it breaks)

    def valid_moved(self, tolerance: float) -> list:
        return [v for v in self.valid if v[2] > tolerance]

    def undetectable(self, tolerance: float) -> list:
        """Judged VALID with the headline moved, keeping every invariant: no check of the data can see them."""
        return [v for v in self.valid_moved(tolerance) if not v[3]]

    def missed(self, tolerance: float) -> list:
        """Judged VALID with the headline moved although an invariant is broken: a hole in the checks."""
        return [v for v in self.valid_moved(tolerance) if v[3]]


def measure(export: tuple[list, dict], count: int, work: Path, run: Callable[[list[str]], tuple[int | None, str]],
            extra: list[str] = ()) -> Tally:
    """`count` mutants, the families in turn; `run(argv)` runs ci-tools and returns (exit code, stderr)."""
    d = work / "run"
    out = d / "r.json"
    write(d, *export)
    code, err = run(["results", "process", str(d), *POINT, "--out", str(out), *extra])
    clean = json.loads(out.read_text())
    assert code == 0 and clean["valid"], f"the unedited export is not valid: {err}"
    assert not broken_invariants(*export), broken_invariants(*export)
    names = sorted(FAMILIES)
    tally = Tally()
    for i in range(count):
        family = names[i % len(names)]
        recs, agg = mutant(export, family, i // len(names))
        write(d, recs, agg)
        out.unlink(missing_ok=True)
        code, err = run(["results", "process", str(d), *POINT, "--out", str(out), *extra])
        tally.cases += 1
        tally.exits[code] = tally.exits.get(code, 0) + 1
        if code not in (0, 1, 2) or "Traceback" in err or "internal error" in err:
            tally.tracebacks.append((family, i, err[-500:]))
            continue
        if code == 0:
            result = json.loads(out.read_text())
            tally.valid.append((family, i, moved(clean["headline"], result["headline"]), broken_invariants(recs, agg)))
    return tally


def in_process(argv: list[str]) -> tuple[int | None, str]:
    from contextlib import redirect_stderr, redirect_stdout
    from io import StringIO

    from ci_tools.cli import main

    err = StringIO()
    code: int | None = 0
    try:
        with redirect_stdout(StringIO()), redirect_stderr(err):
            main(argv)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException as exc:  # noqa: BLE001 - a traceback is what is counted
        return 3, f"Traceback: {type(exc).__name__}: {exc}"
    return code, err.getvalue()


def load_export(corpus: Path) -> tuple[list, dict]:
    d = corpus / "aiperf-0.13-export"
    return ([json.loads(line) for line in (d / "profile_export.jsonl").read_text().splitlines()],
            json.loads((d / "profile_export_aiperf.json").read_text()))


if __name__ == "__main__":
    import argparse
    import tempfile
    import time

    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=3000)
    ap.add_argument("--corpus", type=Path, default=Path(__file__).resolve().parents[1] / "data",
                    help="the folder holding aiperf-0.13-export/ (default: tests/data)")
    ap.add_argument("--tolerance", type=float, default=0.005, help="headline move counted (compare.min-run-noise)")
    ap.add_argument("--extra", nargs="*", default=[])
    ap.add_argument("--families", nargs="*", help="only these families")
    args = ap.parse_args()
    if args.families:
        FAMILIES = {k: v for k, v in FAMILIES.items() if k in args.families}
    t = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        tally = measure(load_export(args.corpus), args.count, Path(tmp), in_process, args.extra)
    tol = args.tolerance
    print(f"{tally.cases} mutants of {len(FAMILIES)} families in {time.perf_counter() - t:.0f} s: exits "
          f"{dict(sorted(tally.exits.items(), key=str))}, {len(tally.tracebacks)} tracebacks, {len(tally.valid)} judged "
          f"VALID, {len(tally.valid_moved(tol))} of them with a headline moved > {tol:g}: "
          f"{len(tally.missed(tol))} breaking an invariant (missed), {len(tally.undetectable(tol))} keeping every "
          f"invariant (undetectable by data)")
    by_family: dict = {}
    for family, _, m, broken in tally.valid:
        by_family.setdefault(family, []).append((m, broken))
    for family, ms in sorted(by_family.items()):
        moved_n = [x for x in ms if x[0] > tol]
        print(f"  {family:<36} {len(ms):>4} valid, max headline move {max(x[0] for x in ms):.4f}, "
              f"{len(moved_n)} moved > {tol:g} ({sum(1 for x in moved_n if x[1])} breaking an invariant)"
              + (f" e.g. {moved_n[0][1][:3]}" if moved_n and moved_n[0][1] else ""))
    for tb in tally.tracebacks[:5]:
        print("  traceback:", tb)
