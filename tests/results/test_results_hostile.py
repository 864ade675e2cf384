"""`results process` on corrupt exports (issue 15, item 10; issue 11, item 6): AIPerf's real export,
edited the ways an adversarial pass edited it, is never judged VALID, never crashes, and every record
left out of the metrics is counted by reason."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

from ci_tools.results.process import PointInfo, process_dir
from tests.conftest import AIPERF_EXPORT

POINT = PointInfo(name="stub", tp=4, conc=4, scenario="fixed-seq-len", model="stub")
EXPORT = AIPERF_EXPORT


@pytest.fixture
def export(tmp_path: Path) -> Path:
    d = tmp_path / "run"
    shutil.copytree(EXPORT, d)
    for f in d.iterdir():
        f.chmod(0o644)
    return d


def edit_records(d: Path, fn, which=None) -> None:
    path = d / "profile_export.jsonl"
    recs = [json.loads(line) for line in path.read_text().splitlines()]
    for i, rec in enumerate(recs):
        if which is None or i in which:
            fn(rec)
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))


def edit_summary(d: Path, fn) -> None:
    path = d / "profile_export_aiperf.json"
    data = json.loads(path.read_text())
    fn(data)
    path.write_text(json.dumps(data))


def metric(name, value):
    def set_(rec):
        if value == "<del>":
            rec["metrics"].pop(name, None)
        else:
            rec["metrics"][name] = {"value": value, "unit": rec["metrics"].get(name, {}).get("unit")}
    return set_


def meta(name, value):
    def set_(rec):
        if value == "<del>":
            rec["metadata"].pop(name, None)
        else:
            rec["metadata"][name] = value
    return set_


def shift_end(rec):
    rec["metadata"]["request_end_ns"] += 3600 * 10**9


def summary(key, value):
    return lambda data: data.__setitem__(key, value)


# (records edit, which records (None: all), summary edit, a rule that must fail, an exclusion reason)
CORRUPT = {
    "one ISL of -1e8": (metric("input_sequence_length", -1e8), {3}, None, "records-broken", "bad-token-counts"),
    "one end +3600 s": (shift_end, {5}, None, "record-span", None),
    "one start at 0": (meta("request_start_ns", 0), {0}, None, "records-broken", "bad-timestamps"),
    "every OSL 0": (metric("output_sequence_length", 0), None, None, "records-missing", "zero-output"),
    "every TTFT missing": (metric("time_to_first_token", "<del>"), None, None, "records-missing", "missing-ttft"),
    "one ITL 0": (metric("inter_token_latency", 0.0), {7}, None, "records-broken", "nonpositive-itl"),
    "one ITL negative": (metric("inter_token_latency", -2.0), {7}, None, "records-broken", "nonpositive-itl"),
    "one TTFT above E2EL": (metric("time_to_first_token", 1e6), {2}, None, "records-broken", "bad-ttft"),
    "one record without a phase": (meta("benchmark_phase", "<del>"), {9}, None, "records-broken", "no-phase"),
    "a phase that is not text": (meta("benchmark_phase", {"x": 1}), {9}, None, "phases", "no-phase"),
    "a NaN latency": (metric("request_latency", float("nan")), {4}, None, "records-broken", "bad-latency"),
    "two timestamps missing": (meta("request_end_ns", "<del>"), {1, 2}, None, "records-missing", "missing-timestamps"),
    "is_complete null": (None, None, summary("is_complete", None), "aiperf-complete", None),
    "is_complete 0": (None, None, summary("is_complete", 0), "aiperf-complete", None),
    'is_complete "false"': (None, None, summary("is_complete", "false"), "aiperf-complete", None),
    "was_cancelled missing": (None, None, lambda d: d.pop("was_cancelled"), "aiperf-complete", None),
    "request_count NaN": (None, None, summary("request_count", {"avg": float("nan")}), "aiperf-count", None),
    "total_isl edited": (None, None, summary("total_isl", {"avg": 4001.0}), "aiperf-tokens", None),
    "total_osl missing": (None, None, lambda d: d.pop("total_osl"), "aiperf-tokens", None),
    "benchmark_duration x10": (None, None, summary("benchmark_duration", {"avg": 6.7}), "aiperf-duration", None),
    "input_config a list": (None, None, summary("input_config", [1]), "echo-streaming", None),
    "phase duration text": (None, None, lambda d: d["input_config"]["phases"][0].__setitem__("duration", "x"),
                            None, None),
}


def test_the_real_export_is_valid(export):
    result = process_dir(export, POINT)
    assert result["valid"], result["failures"]
    assert result["requests"]["accounting"]["excluded"] == {}


@pytest.mark.parametrize("name", list(CORRUPT))
def test_a_corrupt_export_is_never_valid(export, name):
    records_edit, which, summary_edit, rule, reason = CORRUPT[name]
    if records_edit:
        edit_records(export, records_edit, which)
    if summary_edit:
        edit_summary(export, summary_edit)
    result = process_dir(export, POINT)
    if rule is None:  # harmless to validity here, but it must not crash
        return
    assert not result["valid"], name
    assert rule in [f["rule"] for f in result["failures"]], result["failures"]
    excluded = result["requests"]["accounting"]["excluded"]
    if reason:
        assert excluded.get(reason), excluded
    # every record is in S or counted once under a reason
    acc = result["requests"]["accounting"]
    assert acc["records_profiled"] + sum(excluded.values()) + len(result["requests"]["bad_lines"]) == 40
    tput = result["throughput"].get("per_gpu", {}).get("total_tok_s_gpu")
    assert tput is None or (math.isfinite(tput) and tput > 0)


def test_a_one_token_response_stays_measured_without_an_itl(export):
    """A one-token response has no inter-token latency: it is not a broken record."""
    from tests.aiperf_like import resummarise

    def one_token(rec):
        # what AIPerf writes for a one-chunk response: its last content chunk is its first
        m = rec["metrics"]
        for name in ("output_sequence_length", "usage_completion_tokens", "output_token_count"):
            m[name]["value"] = 1
        m["usage_total_tokens"]["value"] = m["usage_prompt_tokens"]["value"] + 1
        for name in ("inter_token_latency", "output_token_throughput_per_user", "inter_chunk_latency",
                     "time_to_second_token"):
            m.pop(name)
        ttft = m["time_to_first_token"]["value"]
        m["request_latency"]["value"] = ttft
        m["decode_duration"]["value"] = 0.0
        m["e2e_output_token_throughput"]["value"] = 1000.0 / ttft
        rec["metadata"]["request_end_ns"] = rec["metadata"]["request_start_ns"] + round(ttft * 1e6) + 2_000_000
    edit_records(export, one_token, {0})
    recs = [json.loads(line) for line in (export / "profile_export.jsonl").read_text().splitlines()]
    edit_summary(export, lambda d: d.update(resummarise(recs, d)))
    result = process_dir(export, POINT)
    assert result["valid"], result["failures"]
    assert result["requests"]["accounting"]["itl_undefined"] == 1
    assert result["requests"]["accounting"]["excluded"] == {}


def test_a_broken_job_json_is_a_clean_error(export):
    from ci_tools.errors import InputError

    (export / "job.json").write_text(json.dumps({"point": {"name": "x"}}))
    with pytest.raises(InputError, match="job.json"):
        process_dir(export)
