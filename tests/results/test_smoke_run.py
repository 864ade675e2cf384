"""The real H100 smoke run (tests/data/h100: vLLM, an agentic c4 and c16 job, a fixed-seq-len c16 job, a
cancelled c16 job) through `results collect`, `pareto`, `compare` and `report` (issue 37, gaps 4 and 5).

One collection holds an agentic and a fixed-seq-len result of the same point `tp1-c16`: they are two
workloads, keyed apart by configuration, scenario and point, never one the other's baseline, never on
one frontier. A first or smoke run has no baseline: its report draws it alone. Each job's GPU telemetry
belongs to that job, never to another job of the same point name.
"""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from ci_tools.cli import main
from ci_tools.results import report_flow
from ci_tools.results.sources import load_side


def run(*args):
    argv = [*map(str, args)]
    return CliRunner().invoke(click.Command("ci-tools", callback=lambda: main(argv)), [])


@pytest.fixture
def runs(h100_run: Path) -> Path:
    return h100_run


@pytest.fixture
def collection(runs: Path, tmp_path: Path) -> Path:
    out = tmp_path / "results.json"
    r = run("results", "collect", runs, "--out", out)
    assert r.exit_code == 0, r.output
    assert json.loads(out.read_text())["valid"] == 3
    return out


def test_pareto_keeps_the_agentic_and_the_fixed_seq_result_of_one_point_apart(collection: Path):
    r = run("results", "pareto", collection, "--format", "json")
    assert r.exit_code == 0, r.output
    points = {p["point"]: p for p in json.loads(r.output)["points"]}
    assert set(points) == {"tp1-c4", "tp1-c16 (agentic-coding)", "tp1-c16 (fixed-seq-len)"}
    # one frontier per workload: the fixed-seq-len job (12,583 tok/s/GPU at 368.5) would dominate the
    # agentic tp1-c4 (7,225 at 346.3) on one frontier; they measure different benchmarks
    assert all(p["frontier"] and not p["dominated_by"] for p in points.values())


def test_a_claim_across_two_workloads_does_not_hold(collection: Path, tmp_path: Path):
    claims = tmp_path / "claims.txt"
    claims.write_text("tp1-c16 (fixed-seq-len) dominates tp1-c4\n")
    r = run("results", "pareto", collection, "--claims", claims, "--format", "json")
    assert r.exit_code == 1
    [claim] = json.loads(r.output[: r.output.rindex("}") + 1])["claims"]
    assert claim["holds"] is False and "different workloads" in claim["why"]


def test_compare_matches_each_result_with_the_same_scenario(collection: Path):
    r = run("results", "compare", collection, "--baseline", collection, "--format", "json")
    assert r.exit_code == 0, r.output
    points = {p["name"]: p for p in json.loads(r.output)["points"]}
    assert set(points) == {"tp1-c4", "tp1-c16 (agentic-coding)", "tp1-c16 (fixed-seq-len)"}
    for name, p in points.items():
        tok = p["metrics"]["tok_s_gpu"]
        assert p["baseline"]["kind"] == "same" and tok["head"] == tok["base"], name   # itself, not the other scenario


def test_report_draws_a_run_without_a_baseline_and_says_so(collection: Path, runs: Path, tmp_path: Path):
    out = tmp_path / "report.html"
    r = run("results", "report", collection, "--telemetry", runs, "--out", out, "--format", "json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output[r.output.index("{"):])
    assert doc["points"] == 3 and out.is_file()
    assert "no baseline" in " ".join(doc["notes"]).lower()
    page = out.read_text()
    assert "No baseline" in page


def test_report_says_no_baseline_once_in_each_format(collection: Path, tmp_path: Path, monkeypatch):
    """The verdict word, then the sentence: "No baseline: No baseline: 3 points…" was printed before."""
    r = run("results", "report", collection, "--out", tmp_path / "r.html")
    assert r.exit_code == 0, r.output
    assert r.output.splitlines()[0] == ("No baseline: 3 points measured, nothing compared. The run's frontiers: "
                                        "agentic-coding tp1-c16 (agentic-coding), tp1-c4; "
                                        "fixed-seq-len tp1-c16 (fixed-seq-len).")
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    assert run("results", "report", collection, "--out", tmp_path / "r.html", "--format", "github").exit_code == 0
    assert summary.read_text().startswith("### ⚪ No baseline: sweep report\n\n**3 points measured, nothing compared.** ")


def test_telemetry_is_matched_by_job_never_by_point_name(collection: Path, runs: Path, tmp_path: Path):
    head = load_side(collection)
    jobs, notes = report_flow.load_telemetry(runs, head)
    assert not notes and len(jobs) == 4
    own = {d: json.loads((runs / d / "result.json").read_text())["energy"] for d in ("agentic-c16", "fixed-c16")}
    # three jobs wrote a result: each shows its own energy (the fixed-seq-len job drew 255 W, the agentic
    # c16 job 237 W); the cancelled job wrote none and shows none
    powers = sorted(round(j.energy["avg_power_w"], 1) for j in jobs if j.energy)
    assert powers == sorted(round(e["avg_power_w"], 1) for e in [*own.values(), json.loads(
        (runs / "agentic-c4" / "result.json").read_text())["energy"]])
    [cancelled] = [j for j in jobs if not j.energy]
    assert "cancel" in cancelled.name and "cancelled (SIGINT)" in cancelled.name
    # the page names each job as its table names the point
    r = run("results", "report", collection, "--telemetry", runs, "--out", tmp_path / "r.html", "--format", "json")
    names = json.loads(r.output[r.output.index("{"):])["telemetry-jobs"]
    assert sorted(names) == sorted(["tp1-c4", "tp1-c16 (agentic-coding)", "tp1-c16 (fixed-seq-len)", cancelled.name])
