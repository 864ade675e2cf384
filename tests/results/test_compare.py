"""PR points against main's: baseline assignment, verdicts (tables), frontier shift, the command."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from ci_tools.cli import main
from ci_tools.results import compare
from ci_tools.results.compare import (EQUIVALENT, IMPROVED, INCONCLUSIVE, NEW, REGRESSED, Policy, compare_points,
                                      frontier_shift)
from ci_tools.results.pareto import Point
from tests.conftest import REPO, assert_golden

SEED = REPO / "docs" / "examples" / "seed-compare"
GOLDEN = REPO / "tests" / "golden" / "results"


def res(name: str, tp: int, conc: int, *, tok=None, p90=None, p50=None, ttft=None, ep=1, dp=False,
        key="dsv41flash-fp4-gb300-sglang-agentic-dspark", valid=True, ci=None, gpus=None, scenario=None) -> dict:
    point = {"name": name, "config-key": key, "tp": tp, "ep": ep, "dp-attn": dp, "conc": conc}
    if scenario:
        point["scenario"] = scenario
    if gpus:
        point["gpus"] = gpus
    out = {"valid": valid, "point": point,
           "headline": {"tok_s_gpu": tok, "intvty_p90": p90, "intvty_p50": p50, "ttft_p90_s": ttft}}
    if ci:
        out["headline_ci"] = ci
    return out


def verdict(head: dict, main: list[dict], metric="tok_s_gpu", policy=Policy()):
    (pc,) = compare_points([head], main, policy)
    return pc.cells[metric].verdict


# ---- verdicts: one cell at a time --------------------------------------------------------------

H = lambda tok, **kw: res("tp4-c16", 4, 16, tok=tok, **kw)  # noqa: E731
HIST0 = [H(1000.0) for _ in range(5)]  # zero variance on main
NOISY = [H(v) for v in (1000.0, 1200.0, 850.0, 1100.0, 900.0)]  # ~14 % spread


@pytest.mark.parametrize("case, head, main, expected", [
    ("no baseline", H(1000.0), [], NEW),
    ("main only has an invalid result", H(1000.0), [H(1000.0, valid=False)], NEW),
    ("one baseline, identical", H(1000.0), [H(1000.0)], EQUIVALENT),
    ("one baseline, +30 %", H(1300.0), [H(1000.0)], IMPROVED),
    ("one baseline, -30 %", H(700.0), [H(1000.0)], REGRESSED),
    ("one baseline, +4 %: inside the noise, outside what TOST can show", H(1040.0), [H(1000.0)], INCONCLUSIVE),
    ("two baselines: still the assumed noise", H(1040.0), [H(1000.0), H(1000.0)], INCONCLUSIVE),
    ("zero-variance history, identical", H(1000.0), HIST0, EQUIVALENT),
    ("zero-variance history, precise +3 %: inside the margin", H(1030.0), HIST0, EQUIVALENT),
    ("zero-variance history, +8 %", H(1080.0), HIST0, IMPROVED),
    ("zero-variance history, -8 %", H(920.0), HIST0, REGRESSED),
    ("noisy history, +15 %", H(1150.0), NOISY, INCONCLUSIVE),
    ("noisy history, +80 %", H(1800.0), NOISY, IMPROVED),
    ("PR lacks the metric", H(None, p90=5.0), [H(1000.0)], None),
    ("main lacks the metric", H(1000.0), [H(None, p90=5.0)], None),
])
def test_throughput_verdicts(case, head, main, expected):
    assert verdict(head, main) == expected, case


def test_lower_is_better_for_ttft():
    base = [res("a", 2, 8, ttft=2.0)]
    assert verdict(res("a", 2, 8, ttft=1.0), base, "ttft_p90_s") == IMPROVED
    assert verdict(res("a", 2, 8, ttft=4.0), base, "ttft_p90_s") == REGRESSED
    (pc,) = compare_points([res("a", 2, 8, ttft=1.0)], base)
    assert pc.cells["ttft_p90_s"].change == pytest.approx(-0.5)
    assert pc.cells["ttft_p90_s"].better == pytest.approx(0.5)


def test_a_baseline_of_zero_has_no_relative_change():
    assert verdict(H(0.0), [H(0.0)]) == EQUIVALENT
    assert verdict(H(5.0), [H(0.0)]) == INCONCLUSIVE


def test_a_wide_bootstrap_interval_makes_a_change_inconclusive():
    base = [H(1000.0)]
    assert verdict(H(1100.0), base) == IMPROVED
    wide = {"tok_s_gpu": [880.0, 1320.0]}  # ±20 % on the PR side
    assert verdict(H(1100.0, ci=wide), base) == INCONCLUSIVE
    (pc,) = compare_points([H(1100.0, ci=wide)], base)
    assert "bootstrap" in pc.cells["tok_s_gpu"].noise


def test_noise_sources_are_named():
    (one,) = compare_points([H(1000.0)], [H(1000.0)])
    assert one.cells["tok_s_gpu"].noise == "assumed run noise (one main result)"
    (hist,) = compare_points([H(1000.0)], NOISY)
    assert hist.cells["tok_s_gpu"].noise == "spread of 5 main results"


def test_history_is_limited_to_the_newest_results():
    newest_first = [H(1000.0)] * 3 + [H(5000.0)] * 10  # old, wildly different results beyond `history`
    (pc,) = compare_points([H(1000.0)], newest_first, Policy(history=3))
    assert pc.baseline.results == tuple(newest_first[:3])
    assert pc.cells["tok_s_gpu"].verdict == EQUIVALENT


def test_the_false_discovery_control_spans_the_whole_sweep():
    # alone, a +4.7 % change on one baseline (p ~ 0.027) is a discovery ...
    alone = compare_points([H(1047.0)], [H(1000.0)])
    assert alone[0].cells["tok_s_gpu"].verdict == IMPROVED
    # ... among twelve unchanged values it is not: BH needs p <= 0.05/12 for the smallest
    heads = [H(1047.0)] + [res(f"p{i}", 8, i, tok=1000.0) for i in range(1, 12)]
    mains = [H(1000.0)] + [res(f"p{i}", 8, i, tok=1000.0) for i in range(1, 12)]
    crowd = compare_points(heads, mains)
    assert crowd[0].cells["tok_s_gpu"].verdict == INCONCLUSIVE


def test_invalid_pr_results_are_never_compared():
    assert compare_points([H(1000.0, valid=False)], [H(1000.0)]) == []


def test_policy_from_the_policy_file_section():
    p = Policy.from_mapping({"assumed-run-noise": 0.03, "fdr": 0.1, "equivalence-margin": 0.02})
    assert (p.assumed_run_noise, p.fdr, p.equivalence_margin, p.history) == (0.03, 0.1, 0.02, 5)
    assert Policy.from_mapping(None) == Policy()


# ---- which main point is the baseline ----------------------------------------------------------

@pytest.mark.parametrize("case, head, main, kind, name", [
    ("same point", res("tp2-c64", 2, 64), [res("tp2-c64", 2, 64, tok=1.0)], "same", "tp2-c64"),
    ("DEP2 replaces TP2 at the same concurrency and GPUs", res("dep2-c64", 2, 64, ep=2, dp=True),
     [res("tp2-c64", 2, 64, tok=1.0)], "replaced", "tp2-c64 (TP2)"),
    ("TP4 EP1 replaces TP4 EP4", res("tp4-c4", 4, 4), [res("tp4-c4", 4, 4, ep=4, tok=1.0)], "replaced",
     "tp4-c4 (TP4 EP4)"),
    ("other GPUs: a different trade-off, not a replacement", res("tp4-c1", 4, 1),
     [res("tp2-c1", 2, 1, tok=1.0)], "none", None),
    ("other concurrency", res("tp2-c64", 2, 64), [res("tp2-c32", 2, 32, tok=1.0)], "none", None),
    ("other config", res("tp2-c64", 2, 64, key="other"), [res("tp2-c64", 2, 64, tok=1.0)], "none", None),
    ("other scenario: another workload, not a baseline", res("tp2-c64", 2, 64, scenario="fixed-seq-len"),
     [res("tp2-c64", 2, 64, tok=1.0, scenario="agentic-coding")], "none", None),
    ("other scenario, other topology: not a replacement either", res("dep2-c64", 2, 64, ep=2, dp=True,
     scenario="fixed-seq-len"), [res("tp2-c64", 2, 64, tok=1.0, scenario="agentic-coding")], "none", None),
    ("a side that names no scenario (a CSV) matches", res("tp2-c64", 2, 64, scenario="agentic-coding"),
     [res("tp2-c64", 2, 64, tok=1.0)], "same", "tp2-c64"),
    ("the same scenario among two", res("tp2-c64", 2, 64, scenario="fixed-seq-len"),
     [res("tp2-c64", 2, 64, tok=1.0, scenario="agentic-coding"), res("tp2-c64", 2, 64, tok=2.0,
                                                                     scenario="fixed-seq-len")], "same", "tp2-c64"),
])
def test_baseline_assignment(case, head, main, kind, name):
    (pc,) = compare_points([head], main)
    assert (pc.baseline.kind, pc.baseline.name) == (kind, name), case


def test_a_replaced_point_is_the_baseline_of_one_pr_point_only_the_nearest():
    heads = [res("dep2-c64", 2, 64, ep=2, dp=True), res("tp2ep2-c64", 2, 64, ep=2)]
    main = [res("tp2-c64", 2, 64, tok=1.0)]
    dep, tpep = compare_points(heads, main)
    assert (tpep.baseline.kind, dep.baseline.kind) == ("replaced", "none")


def test_a_kept_main_point_is_not_also_a_replacement():
    heads = [res("tp2-c64", 2, 64), res("dep2-c64", 2, 64, ep=2, dp=True)]
    main = [res("tp2-c64", 2, 64, tok=1.0)]
    kept, dep = compare_points(heads, main)
    assert (kept.baseline.kind, dep.baseline.kind) == ("same", "none")


# ---- frontier shift ------------------------------------------------------------------------------

def test_frontier_shift_segments_crossings_and_dominance():
    pr = [Point("a", 100, 10), Point("b", 50, 30)]
    main = [Point("m1", 80, 20), Point("m2", 60, 12), Point("m3", 40, 25)]
    shift = frontier_shift(pr, main)
    assert shift.head_frontier == ["a", "b"]
    assert shift.main_frontier == ["m1", "m3"]  # m2 (60, 12) is dominated by m1 (80, 20)
    # best throughput at interactivity >= u: PR 100 up to 10, then 50 up to 30; main 80 up to 20,
    # then 40 up to 25
    assert shift.segments == [{"lead": "PR", "above": None, "up_to": 10},
                              {"lead": "main", "above": 10, "up_to": 20},
                              {"lead": "PR", "above": 20, "up_to": 30}]
    assert shift.crossings == [10, 20]
    dom = {d["point"]: d for d in shift.dominance}
    assert dom["a"]["dominates"] == [] and dom["a"]["dominated_by"] == []  # (100, 10) vs (60, 12)
    assert dom["b"]["dominates"] == ["m3"] and dom["b"]["dominated_by"] == []
    assert {c["point"] for c in shift.combined} == {"a", "m1", "b"}


def test_frontier_of_identical_curves_is_a_tie():
    pts = [Point("x", 10, 1), Point("y", 5, 2)]
    shift = frontier_shift(pts, [Point("x", 10, 1), Point("y", 5, 2)])
    assert [s["lead"] for s in shift.segments] == ["tie"]
    assert shift.crossings == []


# ---- the seed PR, end to end through the command --------------------------------------------------

def run(*args):
    """Through the entry point, so InputErrors become messages and exit codes as for a user."""
    argv = ["results", "compare", *map(str, args)]
    return CliRunner().invoke(click.Command("ci-tools", callback=lambda: main(argv)), [])


def test_seed_pr_against_its_own_published_numbers():
    r = run(SEED / "pr-local-results.csv", "--baseline", SEED / "main-baseline.csv", "--format", "json")
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    by = {p["name"]: p for p in data["points"]}
    v = lambda name, metric: by[name]["metrics"][metric]["verdict"]  # noqa: E731
    # what a reviewer writes: TP4 c16 on EP1 lifts interactivity at the same throughput ...
    assert v("tp4-c16", "intvty_p90") == IMPROVED
    assert v("tp4-c16", "tok_s_gpu") == EQUIVALENT
    # ... DEP2 c128 against the TP2 c128 it replaces: more throughput, TTFT from 51 s to 4.35 s
    assert by["dep2-c128"]["baseline"] == {"kind": "replaced", "name": "tp2-c128 (TP2)", "runs": 1}
    assert v("dep2-c128", "tok_s_gpu") == IMPROVED
    assert v("dep2-c128", "ttft_p90_s") == IMPROVED
    assert by["dep2-c128"]["metrics"]["ttft_p90_s"]["base"] == 51.0
    assert v("dep2-c64", "tok_s_gpu") == IMPROVED
    # TP4 c4 on EP1 trades 6.8 % of throughput for 7.3 % of interactivity against the published point
    assert (v("tp4-c4", "tok_s_gpu"), v("tp4-c4", "intvty_p90")) == (REGRESSED, IMPROVED)
    # points main never measured are new, not compared with a point on other GPUs
    assert v("tp4-c1", "tok_s_gpu") == NEW and by["tp4-c1"]["baseline"]["kind"] == "none"


def test_seed_claims_two_are_false_and_the_command_says_so():
    r = run(SEED / "pr-local-results.csv", "--baseline", SEED / "main-baseline.csv", "--claims",
            SEED / "claims.txt", "--format", "json")
    assert r.exit_code == 1
    claims = json.loads(r.output.split("\nerror:")[0])["claims"]
    assert [c["holds"] for c in claims] == [True, True, False, True, False]


def test_seed_card_golden():
    r = run(SEED / "pr-local-results.csv", "--baseline", SEED / "main-baseline.csv", "--claims",
            SEED / "claims.txt", "--format", "markdown")
    assert r.exit_code == 1
    assert_golden(GOLDEN / "seed-compare.md", r.stdout)


def test_fail_on_regression():
    r = run(SEED / "pr-local-results.csv", "--baseline", SEED / "main-baseline.csv", "--fail-on-regression")
    assert r.exit_code == 1 and "regressed" in r.output
    same = run(SEED / "pr-local-results.csv", "--baseline", SEED / "pr-local-results.csv", "--fail-on-regression")
    assert same.exit_code == 0, same.output
    assert "regressed" not in same.output


# ---- bad input -------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, message", [
    ("point,tp\nx,1\n", "missing column(s) conc"),
    ("point,tp,conc,tok_s_gpu\nx,1,4,fast\n", "x.csv:2: error: tok_s_gpu 'fast' is not a number"),
    ("point,tp,conc,tok/s\nx,1,4,5\n", "unknown column(s) tok/s"),
    ("point,tp,conc,dp-attn\nx,1,4,maybe\n", "dp-attn 'maybe' is not true or false"),
    ("point,tp,conc,tok_s_gpu\nx,1,4,nan\n", "must be a finite number"),
    ("point,tp,conc\n", "no points"),
    ("point,tp,conc\n" + "x" * 200_000 + ",1,4\n", "x.csv: not a readable CSV"),   # was a csv.Error traceback
])
def test_bad_csv_is_located(tmp_path: Path, text, message):
    bad = tmp_path / "x.csv"
    bad.write_text(text)
    r = run(bad, "--baseline", SEED / "main-baseline.csv")
    assert r.exit_code == 1
    assert message in r.output
    assert "Traceback" not in r.output


def test_missing_inputs(tmp_path: Path):
    r = run(SEED / "pr-local-results.csv")
    assert r.exit_code != 0 and "give --baseline" in r.output
    r = run(tmp_path / "nope.json", "--baseline", SEED / "main-baseline.csv")
    assert r.exit_code != 0 and "no such file" in r.output
    (tmp_path / "empty").mkdir()
    r = run(tmp_path / "empty", "--baseline", SEED / "main-baseline.csv")
    assert r.exit_code != 0 and "no result.json" in r.output
    (tmp_path / "x.json").write_text("[1, 2]")
    r = run(tmp_path / "x.json", "--baseline", SEED / "main-baseline.csv")
    assert r.exit_code != 0 and "not a result collection" in r.output


def test_collections_and_directories_are_read_like_results_collect(tmp_path: Path):
    head = {"schema": "ci-tools/results/v1", "results": [res("tp2-c64", 2, 64, tok=1300.0)]}
    (tmp_path / "head.json").write_text(json.dumps(head))
    job = tmp_path / "main-run" / "job1"
    job.mkdir(parents=True)
    main_result = res("tp2-c64", 2, 64, tok=1000.0) | {"schema": "ci-tools/result/v1"}
    (job / "result.json").write_text(json.dumps(main_result))
    r = run(tmp_path / "head.json", "--baseline", tmp_path / "main-run", "--format", "json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["points"][0]["metrics"]["tok_s_gpu"]["verdict"] == IMPROVED


def test_policy_file_section_is_used(tmp_path: Path):
    policy = (REPO / "inferencex-e2e" / "ci-policy.yaml").read_text()
    policy = policy.replace("assumed-run-noise: 0.015", "assumed-run-noise: 0.2")
    (tmp_path / "p.yaml").write_text(policy)
    r = run(SEED / "pr-local-results.csv", "--baseline", SEED / "main-baseline.csv", "--policy",
            tmp_path / "p.yaml", "--format", "json")
    by = {p["name"]: p for p in json.loads(r.output)["points"]}
    # with 20 % run noise the 6.8 % throughput drop of TP4 c4 can no longer be told from noise
    assert by["tp4-c4"]["metrics"]["tok_s_gpu"]["verdict"] == INCONCLUSIVE
    assert compare.Policy().assumed_run_noise == 0.015


def test_github_format_writes_the_summary_and_a_warning_per_regression(tmp_path: Path, monkeypatch):
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    r = run(SEED / "pr-local-results.csv", "--baseline", SEED / "main-baseline.csv", "--format", "github")
    assert r.exit_code == 0, r.output
    assert summary.read_text() == (GOLDEN / "seed-compare.md").read_text().split("\n**Claims**")[0].rstrip() + "\n"
    warnings = [line for line in r.stdout.splitlines() if line.startswith("::warning")]
    assert warnings == ["::warning title=Regressed against main::tp4-c4: throughput 9,338 against main's 10,017 "
                        "(-6.8%25, p=0.0014 after the false-discovery control)"]


def test_github_format_without_a_summary_file_is_a_usage_error(monkeypatch):
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    r = run(SEED / "pr-local-results.csv", "--baseline", SEED / "main-baseline.csv", "--format", "github")
    assert r.exit_code == 2 and "GITHUB_STEP_SUMMARY" in r.output


def test_plot_of_both_curves(tmp_path: Path):
    png = tmp_path / "compare.png"
    r = run(SEED / "pr-local-results.csv", "--baseline", SEED / "main-baseline.csv", "--plot", png,
            "--title", "seed PR vs main")
    assert r.exit_code == 0, r.output
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 20_000


def test_the_seed_example_is_the_seed_masters_points():
    """Issue 24: pr-local-results.csv said TP4 c1 is EP1 while the master entry says EP4."""
    import csv

    import yaml

    entry = yaml.safe_load((REPO / "inferencex-e2e/configs/nvidia-master.yaml").read_text())[
        "dsv41flash-fp4-gb300-sglang-agentic-dspark"]
    planned = {(s["tp"], s["ep"], bool(s.get("dp-attn")), c)
               for scenario in entry["scenarios"]["agentic-coding"] for s in scenario["search-space"]
               for c in s["conc-list"]}
    with open(SEED / "pr-local-results.csv", newline="") as fh:
        rows = {(int(r["tp"]), int(r["ep"]), r["dp-attn"] == "true", int(r["conc"])) for r in csv.DictReader(fh)}
    assert rows == planned


@pytest.mark.parametrize("p,text", [(0.0, "p<0.0001"), (3e-9, "p<0.0001"), (0.000583, "p=0.00058"),
                                    (0.0014, "p=0.0014"), (0.813, "p=0.81"), (1.0, "p=1")])
def test_p_values_never_read_zero(p, text):
    """Issue 24: a p-value too small to print said `p=0` (no test gives certainty)."""
    from ci_tools.render.numbers import p_value

    assert p_value(p) == text


def test_the_seed_comparison_says_no_p_of_zero():
    r = run(SEED / "pr-local-results.csv", "--baseline", SEED / "main-baseline.csv")
    assert "p=0 " not in r.output and "p<0.0001" in r.output
