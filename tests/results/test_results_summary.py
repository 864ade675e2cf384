"""Issue 25, finding 4 (1, 2): units honoured, AIPerf's own summary recomputed.

AIPerf's real export edited after the run: a value or a unit of the records, or a statistic of the
summary. Each edit that changes what the result says is invalid with both values named; the same
numbers written in another known unit read the same."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from ci_tools.results import summary, units
from ci_tools.results.policy import ResultsPolicy
from ci_tools.results.process import PointInfo, build_result, process_dir
from ci_tools.results.records import scan_file
from tests.aiperf_like import resummarise
from tests.conftest import AIPERF_EXPORT

POINT = PointInfo(name="stub", tp=4, conc=4, scenario="fixed-seq-len", model="stub")
EXPORT = AIPERF_EXPORT


@pytest.fixture
def real() -> tuple[list[dict], dict]:
    d = EXPORT
    recs = [json.loads(line) for line in (d / "profile_export.jsonl").read_text().splitlines()]
    return recs, json.loads((d / "profile_export_aiperf.json").read_text())


def judged(tmp_path: Path, recs: list[dict], agg: dict | None, policy: ResultsPolicy = ResultsPolicy()) -> dict:
    d = tmp_path / "run"
    d.mkdir(exist_ok=True)
    (d / "profile_export.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    target = d / "profile_export_aiperf.json"
    if agg is None:
        target.unlink(missing_ok=True)
    else:
        target.write_text(json.dumps(agg))
    return process_dir(d, POINT, policy=policy)


def rules(result: dict) -> dict[str, str]:
    out: dict[str, str] = {}
    for f in result["failures"]:
        out[f["rule"]] = out[f["rule"]] + " | " + f["message"] if f["rule"] in out else f["message"]
    return out


def test_the_real_export_agrees_with_its_summary(real, tmp_path):
    recs, agg = real
    result = judged(tmp_path, recs, agg)
    assert result["valid"], result["failures"]


# (edit of the records, edit of the summary, the rule that fails, words its message holds)
def _metric(i, name, fn):
    def edit(recs, agg):
        recs[i]["metrics"][name]["value"] = fn(recs[i]["metrics"][name]["value"])
    return edit


def _unit(name, unit, scale=1.0, which=None):
    def edit(recs, agg):
        for i, r in enumerate(recs):
            if which is None or i in which:
                r["metrics"][name] = {"value": r["metrics"][name]["value"] * scale, "unit": unit}
    return edit


def _summary(name, stat, value):
    def edit(recs, agg):
        agg[name][stat] = value
    return edit


CASES = {
    "one TTFT doubled": (_metric(3, "time_to_first_token", lambda v: v * 2), "aiperf-summary", "time_to_first_token"),
    "one ITL of 3600 s": (_metric(5, "inter_token_latency", lambda v: 3.6e6), "aiperf-summary", "inter_token_latency"),
    "every ITL read in s": (_unit("inter_token_latency", "s"), "aiperf-summary", "inter_token_latency"),
    "an ITL in furlongs": (_unit("inter_token_latency", "furlongs", which={2}), "units", "inter_token_latency in 'furlongs'"),
    "an OSL in ms": (_unit("output_sequence_length", "ms", which={0}), "units", "output_sequence_length in 'ms'"),
    "a unit that is a number": (_unit("time_to_first_token", 7, which={1}), "units", "time_to_first_token in 7"),
    "one request latency +10 %": (_metric(9, "request_latency", lambda v: v * 1.1), "aiperf-summary", "request_latency"),
    "one per-user rate halved": (_metric(4, "output_token_throughput_per_user", lambda v: v / 2), "aiperf-summary",
                                 "output_token_throughput_per_user"),
    "summary ITL p90 edited": (_summary("inter_token_latency", "p90", 2.0), "aiperf-summary", "p90: 2 in the summary, 2.55207"),
    "summary TTFT max edited": (_summary("time_to_first_token", "max", 26.0), "aiperf-summary", "max: 26 in the summary"),
    "summary ITL in s": (_summary("inter_token_latency", "unit", "s"), "aiperf-summary", "inter_token_latency"),
    "summary ITL in furlongs": (_summary("inter_token_latency", "unit", "furlongs"), "units", "inter_token_latency in 'furlongs'"),
    "summary count edited": (_summary("time_to_first_token", "count", 39), "aiperf-summary", "count: 39 in the summary"),
    "summary p99 not a number": (_summary("request_latency", "p99", "61"), "aiperf-summary", "p99: none in the summary"),
    "summary effective concurrency edited": (_summary("effective_concurrency", "avg", 3.9), "aiperf-summary",
                                             "effective_concurrency"),
    "summary throughput edited": (_summary("output_token_throughput", "avg", 1100.0), "aiperf-summary", "output_token_throughput"),
    "summary duration in weeks": (_summary("benchmark_duration", "unit", "weeks"), "units", "benchmark_duration in 'weeks'"),
    "summary window cut": (lambda recs, agg: agg.pop("end_time"), "aiperf-summary", "start_time..end_time"),
    "summary ITL statistics removed": (lambda recs, agg: agg.pop("inter_token_latency"), "aiperf-summary",
                                       "no inter_token_latency statistics"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_an_edit_after_the_run_is_invalid_with_both_values(real, tmp_path, case):
    edit, rule, words = CASES[case]
    recs, agg = copy.deepcopy(real)
    edit(recs, agg)
    result = judged(tmp_path, recs, agg)
    assert not result["valid"]
    assert rule in rules(result), result["failures"]
    assert words in rules(result)[rule], rules(result)[rule]


@pytest.mark.parametrize("unit,scale", [("s", 1e-3), ("sec", 1e-3), ("us", 1e3), ("ns", 1e6), ("ms", 1.0)])
def test_the_same_latencies_in_another_unit_read_the_same(real, tmp_path, unit, scale):
    recs, agg = copy.deepcopy(real)
    before = judged(tmp_path, recs, agg)
    for name in ("inter_token_latency", "time_to_first_token", "request_latency"):
        _unit(name, unit, scale)(recs, agg)
        agg[name] = {k: (v * scale if k not in ("count", "unit") else v) for k, v in agg[name].items()} | {"unit": unit}
    after = judged(tmp_path, recs, agg)
    assert after["valid"], after["failures"]
    for key in ("intvty_p90", "ttft_p90_s", "tok_s_gpu"):
        assert after["headline"][key] == pytest.approx(before["headline"][key], rel=1e-12)


def test_records_edited_with_a_summary_to_match_pass_this_check(real, tmp_path):
    """The summary check catches an edit of one file; records and summary rewritten together are the
    per-record cross-checks' business (crosscheck.py)."""
    recs, agg = copy.deepcopy(real)
    m = recs[3]["metrics"]
    m["time_to_first_token"]["value"] *= 1.2
    m["decode_duration"]["value"] = m["request_latency"]["value"] - m["time_to_first_token"]["value"]
    assert summary.compare(_scan(tmp_path, recs), resummarise(recs, agg), 0.001) == []


def _scan(tmp_path, recs):
    path = tmp_path / "p.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return scan_file(path)


def test_the_tolerance_comes_from_the_policy(real, tmp_path):
    recs, agg = copy.deepcopy(real)
    agg["time_to_first_token"]["p90"] *= 1.01
    assert "aiperf-summary" in rules(judged(tmp_path, recs, agg))
    assert judged(tmp_path, recs, agg, ResultsPolicy(summary_tolerance=0.02))["valid"]


def test_an_absent_summary_is_invalid(real, tmp_path):
    recs, _ = real
    assert "aiperf-summary" in rules(judged(tmp_path, recs, None))


def test_build_result_takes_the_summary_checks_from_its_policy(real, tmp_path):
    recs, agg = copy.deepcopy(real)
    agg["inter_token_latency"]["avg"] *= 1.0005
    scan = _scan(tmp_path, recs)
    assert build_result(scan, agg, POINT)["valid"]
    assert not build_result(scan, agg, POINT, policy=ResultsPolicy(summary_tolerance=0.0001))["valid"]


@pytest.mark.parametrize("scale,unit,factor", [
    (units.MILLISECONDS, "ms", 1.0), (units.MILLISECONDS, "s", 1e3), (units.MILLISECONDS, "us", 1e-3),
    (units.MILLISECONDS, None, 1.0), (units.MILLISECONDS, "MS", None), (units.MILLISECONDS, 1, None),
    (units.SECONDS, "sec", 1.0), (units.SECONDS, "ms", 1e-3), (units.TOKENS, "tokens", 1.0), (units.TOKENS, "ms", None),
    (units.TOKENS_PER_USER, "tokens/sec/user", 1.0), (units.TOKENS_PER_USER, "tokens/sec", None),
])
def test_units_table(scale, unit, factor):
    assert scale.factor(unit) == factor


# ---- the policy: `results:` of ci-policy.yaml, every key schema-checked ------------------------------

def _process(args: list[str]):
    r = CliRunner().invoke(click.Command("ci-tools", callback=lambda: __import__("ci_tools.cli").cli.main(args)), [])
    return r.exit_code, r.output


def test_results_process_reads_the_policy_it_is_given(tmp_path):
    d = tmp_path / "run"
    shutil.copytree(EXPORT, d)
    for f in d.iterdir():
        f.chmod(0o644)
    agg = json.loads((d / "profile_export_aiperf.json").read_text())
    agg["time_to_first_token"]["p50"] *= 1.005
    (d / "profile_export_aiperf.json").write_text(json.dumps(agg))
    point = ["--tp", "4", "--conc", "4", "--scenario", "fixed-seq-len", "--model", "stub", "--format", "json"]
    code, out = _process(["results", "process", str(d), *point])
    assert code == 1 and "aiperf-summary" in out
    loose = tmp_path / "loose.yaml"
    loose.write_text("results:\n  summary-tolerance: 0.01\n")
    code, out = _process(["results", "process", str(d), *point, "--policy", str(loose)])
    assert code == 0, out
    bad = tmp_path / "bad.yaml"
    bad.write_text("results:\n  summary-tolerence: 0.05\n")
    code, out = _process(["results", "process", str(d), *point, "--policy", str(bad)])
    assert code == 1 and "summary-tolerence" in out and "Traceback" not in out
    code, out = _process(["results", "process", str(d), *point, "--policy", str(tmp_path / "none.yaml")])
    assert code == 2 and "no such policy file" in out


def test_the_shipped_policy_holds_the_defaults(repo_root):
    from ci_tools.results.policy import section_findings
    from ci_tools.yaml.located import load_yaml_text

    doc = load_yaml_text((repo_root / "inferencex-e2e/ci-policy.yaml").read_text(), "ci-policy.yaml")
    assert section_findings(doc) == []
    assert ResultsPolicy.from_mapping(doc.data["results"]) == ResultsPolicy()
    schema = json.loads((repo_root / "ci_tools/schemas/ci-policy.schema.json").read_text())
    assert set(schema["$defs"]["results"]["properties"]) == set(doc.data["results"])


@pytest.mark.parametrize("section,words", [
    ("results: {summary-tolerance: 2}", "summary-tolerance"),
    ("results: {summary-tolerance: '0.1'}", "summary-tolerance"),
    ("results: {summary-tolerance: 0.05}", "at most 0.01"),      # beyond it, an edited summary passes
    ("results: {record-tolerance: 0.5}", "at most 0.01"),
    ("results: {span-tail-ms: 100000}", "at most 1000"),
    ("results: {span-tail-itl: 1000}", "at most 100"),
    ("results: {duration-slack-s: 60}", "at most 1"),
    ("results: {tolerance: 0.1}", "tolerance"),
    ("results: 3", "results"),
])
def test_config_validate_checks_every_results_key(repo_root, tmp_path, section, words):
    for part in ("inferencex-e2e", "recipes"):
        shutil.copytree(repo_root / part, tmp_path / part)
    policy = tmp_path / "inferencex-e2e/ci-policy.yaml"
    text = policy.read_text()
    policy.write_text(text[:text.index("\nresults:")] + "\n" + section + "\n")
    code, out = _process(["config", "validate", "--root", str(tmp_path), "--format", "json"])
    found = [f for f in json.loads(out)["errors"] if f["file"].endswith("ci-policy.yaml")]
    assert code == 1 and found and any(words in f["message"] for f in found), out
