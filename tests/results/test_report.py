"""`results report` without a browser: the headline, the frontier sentence, hover lines, evals and
telemetry jobs (report.py), and the command's files and messages."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from ci_tools.cli import main
from ci_tools.results import compare, report
from ci_tools.results.sources import load_side
from tests.conftest import REPO

SEED = REPO / "docs" / "examples" / "seed-compare"


def seed():
    head, main_ = load_side(SEED / "pr-local-results.csv"), load_side(SEED / "main-baseline.csv")
    comparisons = compare.compare_points(head, main_)
    shift = compare.frontier_shift(compare.points_of(head), compare.points_of(compare.latest_per_point(main_)))
    return head, main_, comparisons, shift


def run(*args):
    argv = ["results", "report", *map(str, args)]
    return CliRunner().invoke(click.Command("ci-tools", callback=lambda: main(argv)), [])


def test_seed_headline_and_frontier_sentence():
    _, _, comparisons, shift = seed()
    h = report.headline(comparisons, shift)
    assert h.verdicts == "7 improved, 1 regressed, 1 equivalent, 0 inconclusive (12 new)"
    assert h.frontier == ("The PR offers more tok/s/GPU at P90 interactivity up to 424.9, 471.5–505.9, "
                          "569.7–625.7 tok/s/user, main at 424.9–471.5, 505.9–569.7.")
    assert h.regressed == ["tp4-c4 throughput -6.8%"]


@pytest.mark.parametrize("segments, want", [
    ([{"lead": "PR", "above": None, "up_to": 100.0}], "The PR's frontier is ahead of main's at every P90 interactivity."),
    ([{"lead": "main", "above": None, "up_to": 100.0}], "main's frontier is ahead of the PR's at every P90 interactivity."),
    ([{"lead": "tie", "above": None, "up_to": 100.0}], "The two frontiers are level."),
])
def test_frontier_sentence(segments, want):
    shift = compare.FrontierShift(["a"], ["b"], [], [], segments, [])
    assert report.frontier_sentence(shift) == want


def test_hover_of_tp4_c16_gives_topology_values_interval_and_verdicts():
    _, _, comparisons, _ = seed()
    [row] = [r for r in report.rows(comparisons) if r["name"] == "tp4-c16"]
    lines = report.hover_lines(row)
    assert lines[0] == "tp4-c16: TP4, concurrency 16" and lines[1] == "vs main: replaces tp4-c16 (TP4 EP4)"
    assert lines[2].startswith("throughput: 28,838 tok/s/GPU (main 28,694, +0.5%, 95% ") and lines[2].endswith(": equivalent")
    assert lines[3].startswith("P90 interactivity: 424.9 tok/s/user (main 222.2, +91.2%") and lines[3].endswith(": improved")
    lo, hi = row["cells"][1]["interval"]
    assert lo < 0.912 < hi


def test_telemetry_job_of_the_recorded_h200(shared):
    from ci_tools.runner import telemetry

    samples, _ = telemetry.parse_csv((shared / "corpus/nvidia-smi-h200/telemetry-load.csv").read_text())
    job = report.telemetry_job("seed", samples)
    [gpu] = job.gpus
    assert len(gpu["t"]) == 158 and gpu["t"][0] == 0 and max(gpu["power_w"]) > 680
    assert job.reasons[0].startswith("sw power cap") and job.summary["power_capped"] is True


def test_command_writes_one_page_with_evals_from_a_collection(tmp_path: Path):
    coll = tmp_path / "results.json"
    head = load_side(SEED / "pr-local-results.csv")
    evals = [{"point": {"config-key": "k", "tp": 4, "conc": 4}, "scores": [
        {"task": "gsm8k", "conc": 4, "metric": "exact_match,strict-match", "score": 0.91, "threshold": 0.85,
         "threshold-source": "default", "passed": True}]}]
    coll.write_text(json.dumps({"schema": "ci-tools/results/v1", "results": head, "evals": evals,
                                "eval-verdict": {"verdict": "passed"}}))
    out = tmp_path / "site" / "report.html"
    r = run(coll, "--baseline", SEED / "main-baseline.csv", "--out", out, "--format", "json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    page = out.read_text()
    assert doc["bytes"] == len(page.encode()) and doc["points"] == 7 and doc["telemetry-jobs"] == []
    assert "gsm8k" in page and "0.9100" in page and "Eval verdict: <b>passed</b>" in page
    # self-contained: no script, style or image from anywhere else
    assert "<script src" not in page and "<link" not in page and "<img" not in page


def test_command_errors_read_like_a_reviewer(tmp_path: Path):
    r = run(SEED / "pr-local-results.csv", "--out", tmp_path / "r.html")
    assert r.exit_code == 2 and "nothing to compare with" in r.output
    r = run(SEED / "pr-local-results.csv", "--baseline", SEED / "main-baseline.csv", "--evals", SEED / "claims.txt",
            "--out", tmp_path / "r.html")
    assert r.exit_code == 1 and "not readable JSON" in r.output and "Traceback" not in r.output
