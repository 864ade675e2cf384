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
from tests.conftest import NVIDIA_SMI_H200, REPO

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
    # points counted once each (tp4-c4 regressed on throughput and improved on interactivity: regressed),
    # the metric values behind them said apart
    assert h.verdicts == "7 points: 1 regressed, 3 improved, 3 new"
    assert h.values == "21 metric values: 9 compared with main (7 improved, 1 regressed, 1 equivalent), 12 new"
    assert (h.overall.word, h.overall.tone) == ("Regressed", "bad")
    # one sentence: how much of the interactivity range each side leads, where the one behind leads
    assert h.frontier == ("The PR's frontier offers more tok/s/GPU over 82% of the P90 interactivity range (up to "
                          "625.7 tok/s/user), main's over 18% (424.9–471.5, 505.9–569.7); the curves cross 4 times.")
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


def test_telemetry_job_of_the_recorded_h200():
    from ci_tools.results import telemetry

    samples, _ = telemetry.parse_csv((NVIDIA_SMI_H200 / "telemetry-load.csv").read_text())
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


P = {"config-key": "k", "tp": 4, "conc": 4}


@pytest.mark.parametrize("acceptance, want", [
    (None, None),                                                          # not a speculative row
    ({"simulated": False}, None),
    ({"synthetic": 3.51, "measured": 3.4, "measured-source": "s", "difference": -0.0313, "agrees": True},
     {"synthetic": 3.51, "measured": 3.4, "source": "s", "difference": -0.0313, "agrees": True, "why": None}),
    ({"synthetic": 3.51, "measured": None, "not-measured": "the job wrote no acceptance.json"},
     {"synthetic": 3.51, "measured": None, "source": None, "difference": None, "agrees": None,
      "why": "the job wrote no acceptance.json"}),
    ({"synthetic": None, "measured": 2.9, "measured-source": "vllm"},      # real speculation: nothing replayed
     {"synthetic": None, "measured": 2.9, "source": "vllm", "difference": None, "agrees": None, "why": None}),
    # a hand-edited --evals file: wrong types read as unknown, never a traceback in the page
    ({"synthetic": "3.51", "measured": 3.0, "difference": "big", "agrees": "no", "warning": 7, "measured-source": 1},
     {"synthetic": None, "measured": 3.0, "source": None, "difference": None, "agrees": None, "why": None}),
    ({"synthetic": float("nan"), "measured": True}, None),
])
def test_acceptance_rows(acceptance, want):
    rows = report.acceptance_rows([{"point": P, "scores": [], **({"acceptance": acceptance} if acceptance else {})}])
    assert rows == ([] if want is None else [{"point": rows[0]["point"], **want}])


def test_measured_acceptance_is_shown_beside_the_synthetic_and_a_disagreement_is_warned(tmp_path: Path):
    """The reviewer sees on the page what `results process` recorded on each speculative eval row
    (evals/acceptance.compare), and a disagreement reaches the JSON, the summary and an annotation."""
    from ci_tools.evals.acceptance import compare as acceptance

    def ev(tp, measured):
        return {"point": {"config-key": "k", "tp": tp, "conc": 4}, "scores": [],
                "acceptance": {"simulated": False, **acceptance(3.51, measured, 0.10)}}

    evals = [ev(4, {"acceptance-length": 3.4, "source": "sglang:/server_info"}),
             ev(8, {"acceptance-length": 2.9, "source": "sglang:/server_info"}),
             ev(2, None), {"point": {"config-key": "k", "tp": 1, "conc": 4}, "scores": []}]
    coll = tmp_path / "results.json"
    coll.write_text(json.dumps({"schema": "ci-tools/results/v1", "results": load_side(SEED / "pr-local-results.csv"),
                                "evals": evals, "eval-verdict": {"verdict": "passed"}}))
    out = tmp_path / "report.html"
    r = run(coll, "--baseline", SEED / "main-baseline.csv", "--out", out, "--format", "json")
    assert r.exit_code == 0, r.output
    warnings = json.loads(r.output)["acceptance-warnings"]
    assert len(warnings) == 1 and "2.9" in warnings[0] and "17.4% below the synthetic 3.51" in warnings[0]
    page = out.read_text()
    table = page[page.index('id="acceptance-table"'):]
    table = table[:table.index("</table>")]
    assert table.count("<tr>") == 4       # the head and the three checked rows; the non-speculative row is not one
    assert "DISAGREES" in table and "agrees" in table and "-17.4%" in table and "-3.1%" in table
    assert "not compared" in table and "the job wrote no acceptance.json" in table
    summary = tmp_path / "summary.md"
    outputs = tmp_path / "outputs.txt"
    r = CliRunner(env={"GITHUB_STEP_SUMMARY": str(summary), "GITHUB_OUTPUT": str(outputs)}).invoke(
        click.Command("ci-tools", callback=lambda: main(["results", "report", str(coll), "--baseline",
                                                            str(SEED / "main-baseline.csv"), "--out", str(out),
                                                            "--format", "github"])), [])
    assert r.exit_code == 0, r.output
    assert "::warning title=results report%3A acceptance::" in r.output
    assert "- acceptance: " in summary.read_text()


def test_command_errors_read_like_a_reviewer(tmp_path: Path):
    r = run(SEED / "pr-local-results.csv", "--out", tmp_path / "r.html")     # a first run: drawn alone
    assert r.exit_code == 0 and r.output.splitlines()[0] == (     # the verdict word once, then the sentence
        "No baseline: 7 points measured, nothing compared. "
        "The run's frontier is dep2-c128, dep2-c64, tp2-c32, tp2-c16, tp4-c16, tp4-c4, tp4-c1.")
    r = run(tmp_path / "nope.csv", "--out", tmp_path / "r.html")      # HEAD's absence first, not the baseline's
    assert r.exit_code == 2 and "nope.csv: no such file or directory" in r.output
    r = run(SEED / "pr-local-results.csv", "--baseline", SEED / "main-baseline.csv", "--evals", SEED / "claims.txt",
            "--out", tmp_path / "r.html")
    assert r.exit_code == 1 and "not readable JSON" in r.output and "Traceback" not in r.output


def test_a_garbled_job_telemetry_file_is_a_note_not_silence(tmp_path: Path):
    corpus = (NVIDIA_SMI_H200 / "telemetry-load.csv").read_text().splitlines()
    (tmp_path / "tel/a").mkdir(parents=True)
    (tmp_path / "tel/b").mkdir()
    (tmp_path / "tel/a/gpu_telemetry.csv").write_text("\n".join(corpus[:5] + ['garbage,"', "\x00,1"]) + "\n")
    (tmp_path / "tel/b/gpu_telemetry.csv").write_text("nonsense\n1,2\n")
    (tmp_path / "tel/b/other.csv").write_text("a,b\n1,2\n")          # not telemetry, not a job's file: ignored
    r = run(SEED / "pr-local-results.csv", "--baseline", SEED / "main-baseline.csv", "--telemetry", tmp_path / "tel",
            "--out", tmp_path / "r.html", "--format", "json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output[r.output.index("{"):])
    notes = " | ".join(doc["notes"])
    assert doc["telemetry-jobs"] == ["a"] and "a/gpu_telemetry.csv: line 6" in notes
    assert "b/gpu_telemetry.csv: not a CSV of the GPU sampler's query" in notes and "other.csv" not in notes


# ---- where the pages live ---------------------------------------------------------------------

def test_pages_layout_and_pruning():
    from ci_tools.results import pages

    assert pages.url("https://octo.github.io/bench/", 7, 50) == "https://octo.github.io/bench/pr-7/run-50/"
    assert pages.parse("main/run-9") == (None, 9) and pages.parse("pr-7/run-50/") == (7, 50)
    assert pages.parse("assets") is None and pages.parse("pr-x/run-1") is None
    dirs = [f"pr-7/run-{i}" for i in (50, 51, 52, 53)] + ["pr-8/run-60", "main/run-1", "main/run-2", "index.html"]
    assert pages.prune(dirs) == ["pr-7/run-50"]                       # the newest 3 of a PR stay
    assert pages.prune(dirs, open_prs={7}) == ["pr-7/run-50", "pr-8/run-60"]   # a closed PR's pages go
    assert pages.prune(dirs, keep_main=1) == ["main/run-1", "pr-7/run-50"]
    index = pages.index_html(dirs)
    assert index.index("main, run 2") < index.index("main, run 1") < index.index("PR #8, run 60")


def test_the_card_links_the_pages_report_when_the_repository_publishes_them():
    from ci_tools.prbot.card.flow import report_url
    from ci_tools.prbot.shell import Settings

    run = {"id": 50, "url": "https://github.com/octo/bench/actions/runs/50"}
    published = Settings.from_env(Path("."), {"CI_TOOLS_REPORT_SITE": "https://octo.github.io/bench"})
    assert report_url(published, 7, run) == "https://octo.github.io/bench/pr-7/run-50/"
    assert report_url(Settings.from_env(Path("."), {}), 7, run) == run["url"] + "#artifacts"
    # Pages on, no custom domain: Pages' own address of the repository, where `results publish` deploys it
    on = Settings.from_env(Path("."), {"CI_TOOLS_REPORT_PAGES": "true", "GITHUB_REPOSITORY": "Octo/bench"})
    assert report_url(on, 7, run) == "https://octo.github.io/bench/pr-7/run-50/"


@pytest.mark.parametrize("given, enabled, repo, want", [
    ("", "true", "octo/bench", "https://octo.github.io/bench/"),
    ("", "true", "Octo/octo.github.io", "https://octo.github.io/"),       # the owner's own site is the root
    ("https://bench.example.org/", "true", "octo/bench", "https://bench.example.org/"),   # a custom domain
    ("", "", "octo/bench", ""),                                           # off: the card links the artifact
])
def test_where_the_reports_are_published(given, enabled, repo, want):
    from ci_tools.results import pages

    assert pages.site_of(given, enabled, repo) == want
