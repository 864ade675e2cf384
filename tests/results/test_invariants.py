"""The physical invariants of one AIPerf record (invariants.py, issue 35) as a table, each record's
verdict its own in a batch, and no false rejection of any real export (tests/data: a stub server's
and the H100 run's)."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ci_tools.results import invariants, records
from ci_tools.results.invariants import Limits, Values
from ci_tools.results.policy import ResultsPolicy
from ci_tools.results.process import PointInfo, process_dir
from tests.conftest import AIPERF_EXPORT

LIM = ResultsPolicy().limits()
NAN = math.nan


def base() -> dict:
    """One record as AIPerf 0.13 wrote it (line 1 of the recorded export), as the reader hands it over."""
    ttft, e2el, osl, isl = 33.213601, 66.711635, 16.0, 100.0
    dd = e2el - ttft
    return {"span_ms": e2el + 2.2, "ack_ms": 12.698, "lead_ms": 1.63, "ttft": ttft, "itl": dd / (osl - 1), "e2el": e2el,
            "isl": isl, "osl": osl, "usage_isl": isl, "usage_osl": osl, "otpu": 1000.0 * (osl - 1) / dd,
            "prefill": 1000.0 * isl / ttft, "e2e_rate": 1000.0 * osl / e2el, "decode": dd, "icl_sum": dd,
            "icl_len": osl - 1, "session": 0.0}


def case(**changes) -> dict:
    return {**base(), **changes}


B = base()
# name: (the record's figures, the rules it breaks, the figures it lacks)
CASES = {
    "as AIPerf wrote it": (case(), [], []),
    "ITL x0.7 alone": (case(itl=B["itl"] * 0.7), ["record-itl", "record-rate"], []),
    "ITL x1.000001 (within record-tolerance... just)": (case(itl=B["itl"] * (1 + 0.9e-6)), [], []),
    "ITL x1.00001": (case(itl=B["itl"] * 1.00001), ["record-itl", "record-rate"], []),
    "latencies x0.7, chunk gaps as measured": (case(**{k: B[k] * 0.7 for k in ("ttft", "itl", "e2el")},
                                                    otpu=B["otpu"] / 0.7, prefill=B["prefill"] / 0.7,
                                                    e2e_rate=B["e2e_rate"] / 0.7),
                                               ["record-decode", "record-span"], []),
    "decode_duration edited": (case(decode=B["decode"] + 1), ["record-decode"], []),
    "chunk gaps add up to less": (case(icl_sum=B["icl_sum"] - 0.5), ["record-decode"], []),
    "more chunk gaps than tokens": (case(icl_len=16.0), ["record-chunks"], []),
    "fewer chunk gaps (several tokens a chunk)": (case(icl_len=11.0), [], []),
    "the stream ends before its last chunk": (case(span_ms=B["e2el"] - 0.01), ["record-span"], []),
    "the stream ends 4 ms after": (case(span_ms=B["e2el"] + 4.0), [], []),
    "the stream ends 5 ms + 4 ITL after": (case(span_ms=B["e2el"] + 5.0 + 4 * B["itl"] - 1e-6), [], []),
    "the stream ends 20 ms after": (case(span_ms=B["e2el"] + 20.0), ["record-span"], []),
    "a one-token response ends 20 ms after": (case(itl=NAN, otpu=NAN, osl=1.0, usage_osl=1.0, e2el=B["ttft"], decode=0.0,
                                                   icl_sum=0.0, icl_len=0.0, e2e_rate=1000.0 / B["ttft"],
                                                   span_ms=B["ttft"] + 20.0), [], []),
    "acknowledged before it started": (case(ack_ms=-0.5), ["record-ack"], []),
    "acknowledged after its first token": (case(ack_ms=B["ttft"] + 0.5), ["record-ack"], []),
    "started before its credit": (case(lead_ms=-0.5), ["record-ack"], []),
    "no ack, no credit (optional)": (case(ack_ms=NAN, lead_ms=NAN), [], []),
    "ISL 400, usage 100": (case(isl=400.0, prefill=1000.0 * 400 / B["ttft"]), ["record-isl"], []),
    "ISL 400 and usage, prefill rate as measured": (case(isl=400.0, usage_isl=400.0), ["record-rate"], []),
    "OSL +4": (case(osl=20.0), ["record-tokens", "record-itl", "record-rate"], []),
    "per-user rate infinite": (case(otpu=math.inf), ["record-rate"], []),
    "prefill rate infinite": (case(prefill=math.inf), ["record-rate"], []),
    "E2E rate doubled": (case(e2e_rate=B["e2e_rate"] * 2), ["record-rate"], []),
    "no decode_duration": (case(decode=NAN), ["record-missing"], ["decode_duration"]),
    "no chunk gaps": (case(icl_len=0.0, icl_sum=0.0), ["record-missing"], ["inter_chunk_latency"]),
    "no server counts": (case(usage_isl=NAN, usage_osl=NAN), ["record-missing"],
                         ["usage_prompt_tokens", "usage_completion_tokens"]),
    "no rates": (case(otpu=NAN, prefill=NAN, e2e_rate=NAN), ["record-missing"],
                 ["output_token_throughput_per_user", "prefill_throughput_per_user", "e2e_output_token_throughput"]),
    "no session_num": (case(session=NAN), ["record-missing"], ["session_num"]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_invariants_table(name):
    values, rules, gone = CASES[name]
    assert invariants.record_verdicts(values, LIM) == (rules, gone)


def test_a_loose_policy_lets_what_it_says_through():
    values = case(itl=B["itl"] * 1.05, otpu=1000.0 / (B["itl"] * 1.05))
    assert invariants.record_verdicts(values, LIM)[0] == ["record-itl"]
    assert invariants.record_verdicts(values, Limits(relative=0.1, tail_ms=5.0, tail_itl=4.0))[0] == []
    assert invariants.record_verdicts(case(span_ms=B["e2el"] + 20.0), replace(LIM, tail_ms=15.0))[0] == []


def test_failures_name_both_values():
    tally: dict = {}
    values = case(decode=30.0, span_ms=B["e2el"] + 40.0)
    for rule in invariants.record_verdicts(values, LIM)[0]:
        invariants.note(tally, rule, 1, 7, {**values, "missing": ""})
    invariants.note(tally, "record-span", 2, 9, {})
    decode, span = invariants.failures(tally, LIM)
    assert decode.rule == "record-decode" and "line 7" in decode.message
    assert "decode_duration 30 ms" in decode.message and f"= {B['e2el'] - B['ttft']:.9g} ms" in decode.message
    assert span.message.startswith("3 records whose own timestamps") and "outside [0, 13.93" in span.message


number = st.one_of(st.floats(allow_nan=True, allow_infinity=True, width=64),
                   st.floats(0.01, 5000.0), st.sampled_from([0.0, 1.0, 2.0, 15.0, 16.0, -1.0, 1e308]))
positive = st.one_of(st.floats(min_value=1e-300, max_value=1e15), st.sampled_from([1.0, 2.0, 33.2136]))
# what the reader hands over (record_fields.record_problem): TTFT and E2EL finite and positive, an ITL
# finite and positive or none, an OSL of at least one token; any other figure may be anything
ROW = {name: number for name in invariants.FIELDS} | {"ttft": positive, "e2el": positive,
                                                       "itl": st.one_of(positive, st.just(NAN)),
                                                       "osl": st.sampled_from([1.0, 2.0, 16.0, 900.0])}


@settings(max_examples=300, deadline=None)
@given(st.lists(st.fixed_dictionaries(ROW), min_size=1, max_size=12),
       st.floats(1e-9, 0.01), st.floats(0.0, 1000.0), st.floats(0.0, 100.0))
def test_a_batch_gives_each_record_its_own_verdict(rows, rel, tail_ms, tail_itl):
    """Every rule is one element-wise expression over a batch: a record's verdict among others is its
    verdict alone, on any figures, NaN, infinities and zeros included (and the tally counts exactly
    the records that break each rule, its example the first of them)."""
    lim = Limits(relative=rel, tail_ms=tail_ms, tail_itl=tail_itl)
    arrays = Values(**{k: np.array([r[k] for r in rows], dtype=np.float64) for k in invariants.FIELDS})
    rules, _ = invariants.verdicts(arrays, lim)
    alone = [invariants.record_verdicts(r, lim) for r in rows]
    for i, r in enumerate(rows):
        assert [rule for rule, ok in rules if not ok[i]] == alone[i][0], r
    tally: dict = {}
    invariants.tally(tally, arrays, list(range(10, 10 + len(rows))), lim)
    for rule, _ in invariants.RULES:
        breaking = [i for i, (broken, _) in enumerate(alone) if rule in broken]
        assert (tally[rule][:2] if rule in tally else None) == ([len(breaking), 10 + breaking[0]] if breaking else None)


# ---- the real exports: no false rejection, with room to spare ------------------------------------------

def real_exports(h100_run: Path) -> list[Path]:
    """The recorded AIPerf 0.13 export of a stub server and the four H100 job directories of the real-GPU
    run (tests/data, laid out as the runner wrote them)."""
    runs = sorted(h100_run.glob("*/aiperf_artifacts"))
    assert [d.parent.name for d in runs] == ["agentic-c16", "agentic-c4", "cancel", "fixed-c16"], runs
    return [AIPERF_EXPORT, *runs]


def test_every_record_of_every_real_export_keeps_every_invariant(h100_run):
    """3,545 records of 5 real exports (a stub server and vLLM on an H100; warmup and the cancelled job's
    records go through the same rules when read as profiling ones)."""
    total = 0
    for d in real_exports(h100_run):
        lines = (d / "profile_export.jsonl").read_bytes().replace(b'"benchmark_phase":"warmup"',
                                                                  b'"benchmark_phase":"profiling"').splitlines(True)
        scan = records.scan_lines(lines)
        total += scan.records_profiled
        assert scan.violations == {}, (d, invariants.failures(scan.violations, LIM))
        assert scan.column_records == scan.records_profiled    # every real record read by columns
    assert total == 3544    # every record but the one AIPerf error of agentic-c16


def test_the_real_exports_keep_them_at_half_the_shipped_tolerances(h100_run):
    """The tolerances have room: the real exports pass with half of each (and record-tolerance 1000x
    tighter), so a slower machine's exports are not on the edge."""
    tight = Limits(relative=LIM.relative / 1000, tail_ms=LIM.tail_ms / 2, tail_itl=LIM.tail_itl / 2)
    for d in real_exports(h100_run):
        scan = records.scan_file(d / "profile_export.jsonl", limits=tight)
        assert scan.violations == {}, (d, invariants.failures(scan.violations, tight))


def test_no_real_export_is_rejected(h100_run, repo_root):
    """Every real export with a summary judged VALID by `results process` with the shipped policy."""
    from ci_tools.results.flow import load_results_policy

    policy = load_results_policy(repo_root / "inferencex-e2e/ci-policy.yaml")
    corpus = process_dir(AIPERF_EXPORT,
                         PointInfo(name="stub", tp=4, conc=4, scenario="fixed-seq-len", model="stub"), policy=policy)
    assert corpus["valid"], corpus["failures"]
    for d in real_exports(h100_run)[1:]:
        if not (d / "profile_export_aiperf.json").is_file():   # the cancelled job: no summary, nothing to judge
            continue
        result = process_dir(d.parent, policy=policy)
        assert result["valid"], (d, result["failures"])


def test_the_measured_figures_the_docs_give(h100_run):
    """docs/reference.md derives each tolerance from these figures of the real exports; recomputed here
    so that the page stays true."""
    tail_ms = tail_per_itl = decode = itl = rate = 0.0
    fewest = ack_after = ack_before = lead = math.inf
    for d in real_exports(h100_run):
        for line in (d / "profile_export.jsonl").read_text().splitlines():
            r = json.loads(line)
            if r.get("error"):
                continue
            md, v = r["metadata"], {k: x["value"] for k, x in r["metrics"].items()}
            tail = (md["request_end_ns"] - md["request_start_ns"]) / 1e6 - v["request_latency"]
            tail_ms = max(tail_ms, tail)
            tail_per_itl = max(tail_per_itl, tail / v["inter_token_latency"])
            dd = v["request_latency"] - v["time_to_first_token"]
            decode = max(decode, abs(sum(v["inter_chunk_latency"]) - dd) / dd, abs(v["decode_duration"] - dd) / dd)
            itl = max(itl, abs(v["inter_token_latency"] - dd / (v["output_sequence_length"] - 1)) / v["inter_token_latency"])
            rate = max(rate, abs(v["output_token_throughput_per_user"] * v["inter_token_latency"] / 1000 - 1),
                       abs(v["prefill_throughput_per_user"] * v["time_to_first_token"] / 1000 / v["input_sequence_length"] - 1))
            fewest = min(fewest, v["output_sequence_length"] - 1 - len(v["inter_chunk_latency"]))
            ack = (md["request_ack_ns"] - md["request_start_ns"]) / 1e6
            ack_after, ack_before = min(ack_after, ack), min(ack_before, v["time_to_first_token"] - ack)
            lead = min(lead, (md["request_start_ns"] - md["credit_issued_ns"]) / 1e6)
    assert round(tail_ms, 2) == 7.97 and round(tail_per_itl, 2) == 2.41
    assert decode < 3e-15 and itl < 4e-16 and rate < 5e-16
    assert fewest == 0 and round(ack_after, 1) == 0.7 and round(ack_before, 1) == 14.4 and round(lead, 1) == 0.5
