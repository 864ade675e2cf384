"""Issue 35, findings 2 to 4: AIPerf's real export edited together with its summary, so that the two
agree, and the hostile numbers that silenced a check or ended in a traceback. Each was judged VALID
(or exit 3) before the physical invariants of an export were checked; each is now INVALID, naming the
rule that sees it. The mutation fuzz (tests/fuzz/results_mutations.py) runs the same families at scale."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ci_tools.results.process import PointInfo, process_dir
from tests.conftest import RECORDINGS
from tests.fuzz import results_mutations as mutations

POINT = PointInfo(name="stub", tp=4, conc=4, scenario="fixed-seq-len", model="stub")


@pytest.fixture
def export() -> tuple[list, dict]:
    return mutations.load_export(RECORDINGS)


def judged(tmp_path: Path, recs: list, agg: dict) -> dict:
    mutations.write(tmp_path / "run", recs, agg)
    return process_dir(tmp_path / "run", POINT)


# family of results_mutations.py -> a rule that must be among the failures
FORGED = {
    # every ISL 400 and total_isl 16000: 6,857 -> 24,591 tok/s/GPU (per GPU of TP1), VALID before
    "forge-isl-400": "record-isl",
    # latencies x0.7, the per-user rate with them: P90 interactivity 392 -> 560
    "forge-latencies-x0.7": "record-decode",
    # timestamps squeezed x0.75 with the window: +33 % tok/s/GPU
    "forge-timestamps-squeezed": "record-span",
    # the slowest records dropped, the count re-echoed in the configuration: +1.7 %
    "forge-slowest-dropped": "aiperf-command",
    "forge-osl-inflated": "record-rate",
    "forge-ttft-halved": "record-decode",
    "forge-fastest-duplicated": "duplicate-ids",
    "forge-itl-tail-to-median": "record-decode",
    "forge-edges-trimmed": "aiperf-command",
    "forge-latencies-rederived": "record-span",
    "forge-last-requests-shortened": "record-decode",
}


@pytest.mark.parametrize("family", sorted(FORGED))
def test_a_forgery_that_keeps_the_summary_consistent_is_invalid(export, tmp_path, family):
    recs, agg = mutations.mutant(export, family, 0)
    clean = judged(tmp_path / "clean", *export)
    result = judged(tmp_path, recs, agg)
    assert mutations.moved(clean["headline"], result["headline"]) > 0.005   # it would move the headline
    assert not result["valid"]
    assert FORGED[family] in {f["rule"] for f in result["failures"]}, result["failures"]


def test_the_cheapest_forgery_names_both_values(export, tmp_path):
    recs, agg = mutations.mutant(export, "forge-isl-400", 0)
    result = judged(tmp_path, recs, agg)
    messages = {f["rule"]: f["message"] for f in result["failures"]}
    isl = recs[0]["metrics"]["input_sequence_length"]["value"]
    assert f"ISL {isl} where the server's usage says 100 prompt tokens" in messages["record-isl"]


@pytest.mark.parametrize("edit,rule", [
    # an ITL of 1e308 in two records: exit 3 (OverflowError in the mean) before
    (lambda recs, agg: [r["metrics"]["inter_token_latency"].update(value=1e308) for r in recs[:2]], "records-broken"),
    # an infinite per-user rate compared as equal to any
    (lambda recs, agg: recs[3]["metrics"]["output_token_throughput_per_user"].update(value=float("inf")), "records-broken"),
    # a NaN token count read as absent
    (lambda recs, agg: recs[5]["metrics"]["usage_completion_tokens"].update(value=float("nan")), "records-broken"),
    # benchmark_duration 2 s off on a 0.68 s run (the old slack: 10 % plus 2 s)
    (lambda recs, agg: agg["benchmark_duration"].update(avg=agg["benchmark_duration"]["avg"] + 1.9), "aiperf-duration"),
    # a request count beyond any float in the summary
    (lambda recs, agg: agg["request_count"].update(avg=10 ** 400), "aiperf-count"),
    # ... and in the command AIPerf echoes: exit 3 (OverflowError in math.isfinite of an int) before
    (lambda recs, agg: agg["run_info"].update(cli_command=re.sub(r"--request-count \S+", "--request-count 1" + "0" * 400,
                                                                 agg["run_info"]["cli_command"])), "aiperf-command"),
])
def test_a_hostile_number_is_a_finding(export, tmp_path, edit, rule):
    recs, agg = json.loads(json.dumps(export[0])), json.loads(json.dumps(export[1]))
    edit(recs, agg)
    result = judged(tmp_path, recs, agg)
    assert not result["valid"] and rule in {f["rule"] for f in result["failures"]}, result["failures"]


def test_thorough_forgeries_keep_every_invariant(export):
    """What the checks cannot see: every reading rewritten consistently. The reference implementation
    of the invariants finds nothing wrong with them, as with the real export (tests/fuzz counts them
    apart; only the chain of custody of the export can catch them)."""
    assert mutations.broken_invariants(*export) == []
    for family in mutations.THOROUGH:
        recs, agg = mutations.mutant(export, family, 0)
        assert mutations.broken_invariants(recs, agg) == [], family


def test_every_forgery_breaks_an_invariant_of_the_reference(export):
    for family in FORGED:
        for seed in range(3):
            recs, agg = mutations.mutant(export, family, seed)
            assert mutations.broken_invariants(recs, agg), (family, seed)
