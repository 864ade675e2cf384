"""A sweep with an eval row, through the workflow files as written: the plan's eval bucket reaches
benchmark.yml, whose steps serve the point (the stub server, no GPU) and run the policy's agentic eval
harness (a stub keeping the harness contract: mini-swe-agent and SWE-bench cannot run here), `results
process` scores it, the collect job judges it against the plan and names the verdict artifact, and
`/use` accepts that run only when the evals passed.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from pathlib import Path

import pytest

import gh_expr
from tests.engines.harness import dist_dir
from tests.ports import free_port
from ci_tools.evals import gate
from ci_tools import names
from test_sweep_end_to_end import event, planned, release, repo, run_step, step, workflow  # noqa: F401
from wf_env import REPO

DATA = REPO / "tests/runner/data/evals"
STUB = REPO / "tests/runner/stub_server.py"


# the collect job's context: only the eval job's artifacts are laid out here, so the completeness check
# over all planned points (`--expect`, tested with the benchmark rows elsewhere) is left out
COLLECT_NEEDS = {"inputs": {"sweep": False, "points": "0"}}




@pytest.fixture(scope="module")
def eval_rows(planned, repo, event, tmp_path_factory):  # noqa: F811
    """The family matrix of the eval bucket, after the canaries passed."""
    released = release(planned, list(range(len(json.loads(planned["canary"])))), repo,
                       tmp_path_factory.mktemp("rel"), event)
    buckets = json.loads(released["buckets"])
    assert "agentic-evals" in buckets, buckets
    family = workflow("sweep-stages.yml").jobs["family"]
    assert family["uses"].endswith("/.github/workflows/benchmark.yml")
    context = {"needs": {"release": {"outputs": released}}, "matrix": {"bucket": "agentic-evals"}}
    rows = json.loads(gh_expr.interpolate(family["with"]["rows"], context))
    assert rows and all(r["eval-only"] for r in rows)
    # the policy's agentic harness, pointed at the stub that keeps its contract
    policy = repo / "inferencex-e2e/ci-policy.yaml"
    text = policy.read_text()
    if "python3 -m ci_tools.evals.swebench" in text:
        policy.write_text(text.replace("python3 -m ci_tools.evals.swebench",
                                       f"{sys.executable} {DATA / 'stub_agentic_harness.py'}"))
    return rows


def eval_job(row: dict, repo: Path, tmp: Path, event: Path) -> tuple[dict, int]:  # noqa: F811
    """benchmark.yml's job for one row: write it, serve and run the harness, process. Returns the step
    outputs of `run` and the exit code of `process`."""
    bench = workflow("benchmark.yml")
    ctx = {"matrix": {"row": row}, "secrets": {"HF_TOKEN": ""}}
    done, _ = run_step(step(bench, "run", name="Write the row"), ctx, repo, tmp, event)
    assert done.returncode == 0, done.stderr
    serve = step(bench, "run", "run")
    server = f"{sys.executable} {STUB} --port {{port}} --model {{model}} --answers {DATA / 'agentic_answers.json'}"
    # the DEP point's router is a second stub on the client port (it answers like the engine)
    router = f"{sys.executable} {STUB} --port {{port}} --answers {DATA / 'agentic_answers.json'}"
    # the recipe declares engine-versions [0.5.21, 0.5.22]: the runner host has SGLang 0.5.21's real wheel,
    # whose metadata the runner's version check reads before it starts the stub in the engine's place
    host = os.pathsep.join(filter(None, [str(dist_dir("sglang", "0.5.21")), os.environ.get("PYTHONPATH")]))
    local = {**serve, "env": {**(serve.get("env") or {}), "PYTHONPATH": host},
             "run": serve["run"] + f" --backend process --port {free_port()} --ready-timeout 30 "
                                   "--skip-node-check --no-telemetry "
                                   f"--server-cmd {shlex.quote(server)} --router-cmd {shlex.quote(router)}"}
    done, outputs = run_step(local, ctx, repo, tmp, event)
    assert done.returncode == 0, done.stderr + done.stdout
    assert "SIMULATE_ACC" not in (tmp / "out/commands.txt").read_text()
    # the run step's output reaches `results process` as benchmark.yml wires it: the eval harness's files
    # are checked against the hashes taken when it exited
    assert outputs["export-sha256"] and (tmp / "out/client_exports.sha256").is_file()
    done, _ = run_step(step(bench, "run", "process"), {**ctx, "steps": {"run": {"outputs": outputs}}}, repo, tmp, event)
    result = json.loads((tmp / "out/eval_result.json").read_text())
    assert result["custody"]["checked"] and result["custody"]["anchored"], result["custody"]
    return outputs, done.returncode


def collect(outputs: dict, repo: Path, tmp: Path, event: Path) -> str:  # noqa: F811
    """The downloaded artifacts as download-artifact lays them out, then the collect job's step; the
    name the verdict artifact is uploaded under."""
    pipeline, stages = workflow("sweep-pipeline.yml"), workflow("sweep-stages.yml")
    done, _ = run_step(step(pipeline, "plan", "metadata"), {"steps": {"plan": {"outcome": "success"}}}, repo, tmp, event)
    assert done.returncode == 0, done.stderr
    arts = tmp / "artifacts"
    shutil.copytree(tmp / "metadata", arts / "changelog-metadata")
    shutil.copytree(tmp / "out", arts / outputs["artifact-job"])
    done, got = run_step(step(stages, "collect", "collect"), COLLECT_NEEDS, tmp, tmp, event)
    assert done.returncode == 0, done.stderr
    upload = next(s for s in stages.jobs["collect"]["steps"] if "eval-verdict.json" in str(s.get("with", {}).get("path")))
    name = gh_expr.interpolate(upload["with"]["name"], {"steps": {"collect": {"outputs": got}}})
    assert (tmp / "results/eval-verdict.json").is_file() and (tmp / "results/evals.md").is_file()
    return name


def test_eval_row_passes_and_its_run_is_reusable(eval_rows, repo, event, tmp_path):  # noqa: F811
    outputs, rc = eval_job(eval_rows[0], repo, tmp_path, event)
    assert rc == 0
    result = json.loads((tmp_path / "out" / names.EVAL_RESULT_JSON).read_text())
    assert result["valid"] and [(s["task"], s["score"], s["threshold-source"]) for s in result["scores"]] == [
        ("swebench_lite", 0.6, "default.swebench_lite")]
    name = collect(outputs, repo, tmp_path, event)
    assert name == "evals_passed"
    assert "| 0.6000 | 0.50 (default.swebench_lite) | pass |" in (tmp_path / "results/evals.md").read_text()
    assert gate.reuse_problem({names.COLLECTION_ARTIFACT, name}) is None


def test_eval_row_below_threshold_blocks_reuse(eval_rows, repo, event, tmp_path):  # noqa: F811
    th = repo / "inferencex-e2e/eval-thresholds.yaml"
    original = th.read_text()
    th.write_text(original.replace("models:\n", "models:\n  dsv41flash:\n    swebench_lite: 0.7\n"))
    try:
        outputs, rc = eval_job(eval_rows[0], repo, tmp_path, event)
    finally:
        th.write_text(original)
    assert rc == 1
    result = json.loads((tmp_path / "out" / names.EVAL_RESULT_JSON).read_text())
    assert [f["message"] for f in result["failures"]] == [
        "[conc=128] swebench_lite exact_match,resolved = 0.6000 is below 0.7000 (models.dsv41flash.swebench_lite)"]
    name = collect(outputs, repo, tmp_path, event)
    assert name == "evals_failed"
    assert "its eval rows failed" in gate.reuse_problem({names.COLLECTION_ARTIFACT, name})


def test_eval_row_that_never_ran_blocks_reuse(eval_rows, repo, event, tmp_path):  # noqa: F811
    pipeline, stages = workflow("sweep-pipeline.yml"), workflow("sweep-stages.yml")
    done, _ = run_step(step(pipeline, "plan", "metadata"), {}, repo, tmp_path, event)
    assert done.returncode == 0, done.stderr
    shutil.copytree(tmp_path / "metadata", tmp_path / "artifacts/changelog-metadata")
    # a benchmark result only: the eval job was cancelled before it uploaded anything
    (tmp_path / "artifacts/job_x").mkdir()
    (tmp_path / "artifacts/job_x/eval_result.json").write_text("{}")
    done, got = run_step(step(stages, "collect", "collect"), COLLECT_NEEDS, tmp_path, tmp_path, event)
    assert done.returncode == 1 and "no result could be collected" in done.stderr
    (tmp_path / "artifacts/job_x/eval_result.json").unlink()
    (tmp_path / "artifacts/job_x/result.json").write_text(json.dumps({"schema": "ci-tools/result/v1", "valid": True,
                                                                      "point": {"name": "tp4-c1", "config-key": "k"}}))
    done, got = run_step(step(stages, "collect", "collect"), COLLECT_NEEDS, tmp_path, tmp_path, event)
    assert done.returncode == 0, done.stderr
    assert got["eval-artifact"] == "evals_failed" and "did not run (no eval result)" in done.stdout
