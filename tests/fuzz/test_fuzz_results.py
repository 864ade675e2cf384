"""Fuzz tier: `results process` through the real CLI on AIPerf's real export, edited.

Two properties:
- corruption: every edit drawn from CORRUPT (a value no real request or summary can have, or one that
  disagrees with AIPerf's own totals) makes the result invalid (exit 1), whatever else is edited;
- garbling: random byte edits of either file end in exit 0, 1 or 2, never a traceback or a hang.
"""

from __future__ import annotations

import functools
import json
import shutil

import pytest
from hypothesis import given, strategies as st

from tests.conftest import AIPERF_EXPORT

from .harness import cli_case, fuzz_settings
from .hostile import byte_edit, mutate_bytes

POINT = ["--tp", "4", "--conc", "4", "--scenario", "fixed-seq-len", "--model", "stub"]


@functools.cache
def export() -> tuple[list[dict], dict]:
    d = AIPERF_EXPORT
    recs = [json.loads(line) for line in (d / "profile_export.jsonl").read_text().splitlines()]
    return recs, json.loads((d / "profile_export_aiperf.json").read_text())


NAN, INF = float("nan"), float("inf")
BAD_NUMBERS = [-1.0, -1e8, NAN, INF, -INF, 1e300, "12", None, True, [], {}]
# field -> values that no real record can hold (None = the key deleted as well, for metrics)
RECORD_CORRUPT = {
    ("metrics", "input_sequence_length"): [-1.0, -1e8, NAN, INF, 1e300, 0.5, "100", True, "<del>"],
    ("metrics", "output_sequence_length"): [-1.0, 0, NAN, INF, 1e300, 2.5, "16", "<del>"],
    ("metrics", "time_to_first_token"): [0.0, -1.0, NAN, INF, 1e12, "<del>"],
    ("metrics", "inter_token_latency"): [0.0, -2.0, NAN, INF, "<del>"],
    ("metrics", "request_latency"): [0.0, -5.0, NAN, INF, 1e12, "<del>"],
    ("metadata", "request_start_ns"): [0, -1, NAN, "x", None, "<del>", "+3600s", "-3600s"],
    ("metadata", "request_end_ns"): [0, -1, NAN, "x", None, "<del>", "+3600s", "-3600s"],
    ("metadata", "benchmark_phase"): [None, "<del>", 7, {"a": 1}, ["profiling"], "replay"],
}
SUMMARY_CORRUPT = {
    "is_complete": [None, 0, 1, "true", "false", False, "<del>"],
    "was_cancelled": [True, None, 0, "false", "<del>"],
    "request_count": [{"avg": NAN}, {"avg": 39.0}, {"avg": 41.0}, {"avg": "40"}, None, "<del>"],
    "total_isl": [{"avg": 4001.0}, {"avg": NAN}, {"avg": -4000.0}, None, "<del>"],
    "total_osl": [{"avg": 641.0}, {"avg": 0.0}, {"avg": INF}, "<del>"],
    "benchmark_duration": [{"avg": 67.4}, {"avg": 0.0}, {"avg": NAN}, "<del>"],
}


def _set(obj: dict, key: str, value) -> None:
    if value == "<del>":
        obj.pop(key, None)
    else:
        obj[key] = value


@st.composite
def corruption(draw):
    """(record edits [(index, field, value)], summary edits [(key, value)]), at least one edit."""
    recs, _ = export()
    rec_edits = draw(st.lists(st.tuples(st.integers(0, len(recs) - 1), st.sampled_from(sorted(RECORD_CORRUPT))),
                              max_size=3).map(lambda xs: [(i, f, None) for i, f in xs]))
    rec_edits = [(i, f, draw(st.sampled_from(RECORD_CORRUPT[f]))) for i, f, _ in rec_edits]
    sum_edits = draw(st.lists(st.sampled_from(sorted(SUMMARY_CORRUPT)), max_size=2))
    sum_edits = [(k, draw(st.sampled_from(SUMMARY_CORRUPT[k]))) for k in sum_edits]
    if not rec_edits and not sum_edits:
        key = draw(st.sampled_from(sorted(SUMMARY_CORRUPT)))
        sum_edits = [(key, draw(st.sampled_from(SUMMARY_CORRUPT[key])))]
    return rec_edits, sum_edits


def _write(d, recs, summary) -> None:
    d.mkdir(parents=True, exist_ok=True)
    (d / "profile_export.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    (d / "profile_export_aiperf.json").write_text(json.dumps(summary))


def test_the_unedited_export_is_valid(tmp_path):
    recs, summary = export()
    _write(tmp_path / "run", recs, summary)
    outcome = cli_case("results-process", ["results", "process", str(tmp_path / "run"), *POINT])
    assert outcome.code == 0, outcome.err


@fuzz_settings(60)
@given(corruption())
def test_fuzz_corrupt_exports_are_never_valid(tmp_path_factory, edits):
    recs, summary = export()
    recs, summary = json.loads(json.dumps(recs)), json.loads(json.dumps(summary))
    rec_edits, sum_edits = edits
    for i, (section, key), value in rec_edits:
        if value in ("+3600s", "-3600s"):
            recs[i][section][key] += (3600 if value == "+3600s" else -3600) * 10**9
        else:
            _set(recs[i][section], key, value)
    for key, value in sum_edits:
        _set(summary, key, value)
    d = tmp_path_factory.mktemp("corrupt") / "run"
    _write(d, recs, summary)
    outcome = cli_case("results-process", ["results", "process", str(d), *POINT])
    assert outcome.code == 1, f"a corrupt export was judged valid: {edits}\n{outcome.out}"


@fuzz_settings(40)
@given(st.lists(byte_edit, min_size=1, max_size=4), st.booleans())
def test_fuzz_garbled_exports_end_cleanly(tmp_path_factory, edits, in_summary):
    src = AIPERF_EXPORT
    d = tmp_path_factory.mktemp("garbled") / "run"
    shutil.copytree(src, d)
    target = d / ("profile_export_aiperf.json" if in_summary else "profile_export.jsonl")
    target.chmod(0o644)
    target.write_bytes(mutate_bytes(target.read_bytes(), edits))
    cli_case("results-process", ["results", "process", str(d), *POINT, "--out", str(d / "r.json")])


# ---- issue 25, 5: hostile lines are bad lines, and nothing non-finite reaches result.json --------------

def _no_constants(name):
    raise AssertionError(f"result.json holds {name}, which is not JSON")


HOSTILE_LINES = {
    "arrays nested 1,000 deep": lambda rec: "[" * 1000 + "]" * 1000,
    "an object nested 5,000 deep in a metric": lambda rec: rec.replace(
        '"metrics":{', '"metrics":{"deep":' + "[" * 5000 + "]" * 5000 + ",", 1),
    "a 400-digit token count": lambda rec: rec.replace(
        '"input_sequence_length":{"value":', '"input_sequence_length":{"value":1' + "0" * 400 + ',"was":', 1),
    "a 1e309 output count": lambda rec: rec.replace(
        '"output_sequence_length":{"value":', '"output_sequence_length":{"value":1e309,"was":', 1),
    "a 30-digit timestamp": lambda rec: rec.replace('"request_start_ns":', '"request_start_ns":1' + "0" * 29 + ',"was":', 1),
    "a line of 2 MB": lambda rec: rec.replace('"metadata":{', '"metadata":{"pad":"' + "x" * (2 << 20) + '",', 1),
}


@fuzz_settings(40)
@given(st.lists(st.tuples(st.sampled_from(sorted(HOSTILE_LINES)), st.integers(0, 39)), min_size=1, max_size=3),
       st.sampled_from([None, 1e308, 5e307]))
def test_fuzz_hostile_lines_are_bad_lines_and_nothing_non_finite_is_written(tmp_path_factory, edits, every_isl):
    """`results process` exited 3 on a line nested 1,000 deep (RecursionError) or a count beyond a
    float (OverflowError), and 3 of 400 runs wrote `Infinity` (token counts of 1e308 summed)."""
    recs, summary = export()
    lines = [json.dumps(r, separators=(",", ":")) for r in recs]
    if every_isl is not None:                                   # each count fine alone, the sum is not
        lines = [json.dumps({**r, "metrics": {**r["metrics"], "input_sequence_length": {"value": every_isl}}},
                            separators=(",", ":")) for r in recs]
    for name, i in edits:
        lines[i % len(lines)] = HOSTILE_LINES[name](lines[i % len(lines)])
    d = tmp_path_factory.mktemp("hostile") / "run"
    d.mkdir(parents=True)
    (d / "profile_export.jsonl").write_text("\n".join(lines) + "\n")
    (d / "profile_export_aiperf.json").write_text(json.dumps(summary))
    outcome = cli_case("results-process", ["results", "process", str(d), *POINT, "--out", str(d / "r.json")])
    assert outcome.code == 1, f"{edits}: {outcome.out}{outcome.err}"
    result = json.loads((d / "r.json").read_text(), parse_constant=_no_constants)
    assert result["valid"] is False


def test_a_non_finite_figure_becomes_null_and_invalidates_the_result():
    from ci_tools.results.process import refuse_non_finite

    out = refuse_non_finite({"valid": True, "failures": [], "tokens": {"isl": NAN, "ok": 1.0}, "l": [INF, 2]})
    assert out["valid"] is False and out["tokens"] == {"isl": None, "ok": 1.0} and out["l"] == [None, 2]
    assert out["failures"][-1]["rule"] == "non-finite" and "tokens.isl, l[0]" in out["failures"][-1]["message"]
    assert refuse_non_finite({"valid": True, "failures": [], "x": 1.5}) == {"valid": True, "failures": [], "x": 1.5}
