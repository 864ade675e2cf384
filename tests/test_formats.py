"""What `--format json` and `--format github` give, on the commands that gained them for the one
vocabulary (docs/reference.md, "Output, everywhere"): json is one document on stdout, github puts every finding in
the step summary and annotates with a title. The vocabulary itself is checked on every command by
tests/test_conventions.py."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from ci_tools.cli import cli
from tests.conftest import AIPERF_EXPORT

ROOT = Path(__file__).resolve().parents[1]
SEED = ROOT / "docs" / "seed-points.csv"


@pytest.fixture
def actions(tmp_path, monkeypatch) -> dict[str, Path]:
    files = {"summary": tmp_path / "summary.md", "output": tmp_path / "output.txt"}
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(files["summary"]))
    monkeypatch.setenv("GITHUB_OUTPUT", str(files["output"]))
    return files


def invoke(*args):
    return CliRunner().invoke(cli, list(args))


def test_results_process_github_puts_every_failed_rule_in_the_summary(tmp_path, actions):
    bad = tmp_path / "bad"
    shutil.copytree(AIPERF_EXPORT, bad / "aiperf_artifacts")
    res = invoke("results", "process", str(bad), "--tp", "2", "--conc", "32", "--model", "other", "--duration", "3600",
                 "--name", "tp2-c32", "--format", "github")
    assert res.exit_code == 1
    failures = json.loads((bad / "result.json").read_text())["failures"]
    assert len(failures) >= 4
    summary = actions["summary"].read_text()
    assert "### results process: tp2-c32: INVALID" in summary
    for fail in failures:
        assert f"- `{fail['rule']}`: {fail['message']}" in summary
        assert f"::error title=results process%3A {fail['rule']}::tp2-c32: " in res.output


def test_results_process_json_is_one_document(tmp_path):
    good = tmp_path / "good"
    shutil.copytree(AIPERF_EXPORT, good / "aiperf_artifacts")
    res = CliRunner().invoke(cli, ["results", "process", str(good), "--tp", "4", "--conc", "4",
                                                   "--scenario", "fixed-seq-len", "--model", "stub", "--format", "json"])
    assert res.exit_code == 0 and json.loads(res.stdout)["valid"] is True


def test_results_collect_json(tmp_path):
    good = tmp_path / "runs" / "good"
    shutil.copytree(AIPERF_EXPORT, good / "aiperf_artifacts")
    assert invoke("results", "process", str(good), "--tp", "4", "--conc", "4", "--scenario", "fixed-seq-len",
                  "--model", "stub").exit_code == 0
    res = CliRunner().invoke(cli, ["results", "collect", str(tmp_path / "runs"), "--out",
                                                   str(tmp_path / "r.json"), "--expect", "2", "--format", "json"])
    body = json.loads(res.stdout)
    assert res.exit_code == 1  # one planned point of two: incomplete
    assert (body["results"], body["valid"], body["invalid"]) == (1, 1, 0) and "1 valid" in body["incomplete"]


def test_results_collect_github_says_an_incomplete_sweep_in_the_summary(tmp_path, actions):
    good = tmp_path / "runs" / "good"
    shutil.copytree(AIPERF_EXPORT, good / "aiperf_artifacts")
    assert invoke("results", "process", str(good), "--tp", "4", "--conc", "4", "--scenario", "fixed-seq-len",
                  "--model", "stub").exit_code == 0
    res = invoke("results", "collect", str(tmp_path / "runs"), "--out", str(tmp_path / "r.json"), "--expect", "3",
                 "--format", "github")
    assert res.exit_code == 1
    summary = actions["summary"].read_text()
    assert summary.startswith("### results collect: INCOMPLETE\n") and "1 result(s): 1 valid, 0 invalid" in summary
    assert "::error title=results collect::the sweep is incomplete: " in res.output
    assert "eval-verdict=none" in actions["output"].read_text()


def test_results_pareto_text_and_github(tmp_path, actions):
    text = invoke("results", "pareto", str(SEED))
    assert text.exit_code == 0 and text.output == invoke("results", "pareto", str(SEED), "--format", "text").output
    csv, claims = tmp_path / "points.csv", tmp_path / "claims.txt"
    csv.write_text("point,tok_s_gpu,intvty_p90\nA,200,50\nB,100,40\nC,50,90\n")
    claims.write_text("A dominates B\nB dominates A\n")  # the first holds, the second not
    res = invoke("results", "pareto", str(csv), "--claims", str(claims), "--format", "github")
    assert res.exit_code == 1
    summary = actions["summary"].read_text()
    markdown = invoke("results", "pareto", str(csv), "--format", "markdown").output
    assert markdown in summary and summary.count("FALSE") == 1
    assert res.output.count("::error title=results pareto%3A false claim::") == 1


def test_matrix_formats(actions, monkeypatch):
    monkeypatch.chdir(ROOT)
    args = ["matrix", "test-config", "--config-key", "dsv41flash-*-dspark", "--no-evals"]
    rows = json.loads(invoke(*args, "--format", "json").output)
    text = invoke(*args).output.splitlines()
    assert len(text) == len(rows) + 1 and text[-1] == f"{len(rows)} row(s)"
    assert all(f"conc {r['conc']}" in line and r["runner"] in line for r, line in zip(rows, text))
    gh = invoke(*args, "--format", "github")
    assert json.loads(gh.output) == rows
    assert f"matrix={json.dumps(rows)}\n" in actions["output"].read_text()
    assert f"### matrix: {len(rows)} row(s)" in actions["summary"].read_text()


def test_runner_dry_run_json(tmp_path):
    key = "dsv41flash-fp4-gb300-sglang-agentic-dspark"
    row = json.loads(CliRunner().invoke(cli, ["matrix", "test-config", "--config-key", key, "--no-evals",
                                              "--format", "json"]).output)[0]
    (tmp_path / "row.json").write_text(json.dumps({**row, "config-key": key}))
    res = CliRunner().invoke(cli, ["runner", "run", "--row", str(tmp_path / "row.json"), "--root",
                                                   str(ROOT), "--dry-run", "--format", "json"])
    assert res.exit_code == 0, res.stderr
    body = json.loads(res.stdout)
    text = CliRunner().invoke(cli, ["runner", "run", "--row", str(tmp_path / "row.json"), "--root",
                                                    str(ROOT), "--dry-run"]).stdout
    assert body["dry-run"] is True and body["commands"] == text
    assert body["outputs"]["result-filename"] and body["outputs"]["artifact-result"]


def test_runner_cleanup_json(tmp_path):
    res = CliRunner().invoke(cli, ["runner", "cleanup", "--out", str(tmp_path / "none"),
                                                   "--runner-name", "", "--format", "json"])
    body = json.loads(res.stdout)
    assert res.exit_code == 0 and body["ok"] is True and body["stopped"] == [] and body["wrote-status"] is False


def test_runner_evals_refuses_a_job_that_is_not_an_eval_job(tmp_path):
    (tmp_path / "job.json").write_text("{}")
    res = CliRunner().invoke(cli, ["runner", "evals", str(tmp_path), "--format", "json"])
    assert res.exit_code == 2 and res.stdout == ""


def test_runner_run_outcome_in_json_and_text(tmp_path):
    from ci_tools.runner import render
    from ci_tools.runner.spec import JobFailed

    status = tmp_path / "status.json"
    ok = render.outcome("r.json", Path("out"), status)
    assert ok.json == {"ok": True, "result-filename": "r.json", "out-dir": "out", "status": str(status)}
    assert ok.text == "done: r.json; next: ci-tools results process out" and ok.exit_code == 0
    failed = render.outcome("r.json", Path("out"), status, JobFailed("ready", "never ready", "last line", 3),
                            stopped="all processes of this job were stopped")
    body = failed.json
    assert (body["ok"], body["phase"], body["message"], body["exit-code"]) == (False, "ready", "never ready", 3)
    assert failed.text is None and failed.exit_code == 3   # text: nothing on stdout, the error on stderr
    assert failed.stderr[0] == "error: ready: never ready" and "last line" in failed.stderr[1]
    assert failed.stderr[-1] == f"all processes of this job were stopped; see {status}"


def _eval_job(tmp_path: Path) -> Path:
    import sys

    job = tmp_path / "job"
    (job / "evals").mkdir(parents=True)
    ok = ("import json, sys; print('harness noise'); "
          f"json.dump({{'results': {{'gsm8k': {{'exact_match': 0.9}}}}}}, open({str(job / 'out.json')!r}, 'w'))")
    runs = [{"conc": 4, "task": "gsm8k", "argv": [sys.executable, "-c", ok], "output": str(job / "out.json")},
            {"conc": 8, "task": "gsm8k", "argv": [sys.executable, "-c", "raise SystemExit(3)"],
             "output": str(job / "none.json")}]
    spec = {"concurrencies": [4, 8], "runs": runs, "harness": {"type": "custom", "name": "stub"}}
    (job / "job.json").write_text(json.dumps({"evals": spec}))
    return job


def test_runner_evals_json_is_the_manifest_alone_on_stdout(tmp_path):
    import subprocess
    import sys

    job = _eval_job(tmp_path)
    out = subprocess.run([sys.executable, "-m", "ci_tools", "runner", "evals", str(job), "--format", "json"],
                         capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    manifest = json.loads(out.stdout)  # the harness's own output went to stderr
    assert manifest == json.loads((job / "evals" / "meta_env.json").read_text())
    assert (manifest["completed_eval_concs"], manifest["failed_eval_concs"]) == ([4], [8])
    assert "harness noise" in out.stderr and "eval: conc 8 failed" in out.stderr


def test_runner_evals_github_annotates_each_failed_concurrency(tmp_path, actions):
    job = _eval_job(tmp_path)
    res = invoke("runner", "evals", str(job), "--format", "github")
    assert res.exit_code == 0
    assert "::error title=runner evals%3A conc 8 failed::" in res.output
    summary = actions["summary"].read_text()
    assert "### runner evals: 1 of 2 concurrencies completed" in summary and "- conc 8: " in summary
