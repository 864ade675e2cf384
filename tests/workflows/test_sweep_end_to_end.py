"""The sweep's steps run as the workflow files write them, on a real repository, outputs passed on
the way GitHub passes them: plan → the inputs of sweep-stages.yml → canary rows → the runner's dry
run → canary markers → release → family matrices.

The repository is the example change (the seed PR: examples/demo.py builds it with real git), the
event a real `labeled` payload from the webhook corpus pointed at its commits. Each `run:` script is
executed with bash the way GitHub does (`bash --noprofile --norc -eo pipefail`), with the step's
`env:` expanded from the job's context, and its $GITHUB_OUTPUT read back through the job's
`outputs:`. Only the GPU work is left out: `runner run` is called with `--dry-run`.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import gh_expr
import wf_contract as wc
from ci_tools.sweep.load import load_policy
from wf_env import REPO, WORKFLOWS
from wf_contract import read_github_output

POLICY = load_policy(REPO)
PRIMARY = next(name for name, p in POLICY.primary.items() if p.recommended)
BIN = str(Path(sys.executable).parent)


def workflow(name: str) -> wc.Workflow:
    return next(wf for wf in wc.load_workflows(WORKFLOWS) if wf.name == name)


def step(wf: wc.Workflow, job: str, step_id: str | None = None, name: str | None = None) -> dict:
    return next(s for s in wf.jobs[job]["steps"] if (step_id and s.get("id") == step_id)
                or (name and s.get("name") == name))


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    spec = importlib.util.spec_from_file_location("demo", REPO / "examples" / "demo.py")
    demo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(demo)
    dest = tmp_path_factory.mktemp("seed")
    demo.build_scratch_repo(dest)
    # what benchmark.yml's second checkout leaves (the workflow's own commit, here the same tree): the
    # policy whose image allowlist `runner run --image-policy` reads
    trusted = dest / ".ci-tools-trusted" / "inferencex-e2e"
    trusted.mkdir(parents=True)
    shutil.copy(dest / "inferencex-e2e" / "ci-policy.yaml", trusted / "ci-policy.yaml")
    return dest


@pytest.fixture(scope="module")
def event(repo, tmp_path_factory) -> Path:
    shared = Path(os.environ.get("CI_TOOLS_SHARED", REPO.parent / "shared"))
    payload = json.loads((shared / "corpus/github-webhooks/pull_request/labeled.payload.json").read_text())
    payload = copy.deepcopy(payload)
    rev = lambda ref: subprocess.run(["git", "rev-parse", ref], cwd=repo, capture_output=True, text=True,
                                     check=True).stdout.strip()
    payload["pull_request"]["base"]["sha"] = rev("base")
    payload["pull_request"]["head"]["sha"] = rev("head")
    template = payload["pull_request"]["labels"][0]
    payload["pull_request"]["labels"] = [{**template, "name": PRIMARY}]
    payload["label"] = {**payload["label"], "name": PRIMARY}
    path = tmp_path_factory.mktemp("event") / "event.json"
    path.write_text(json.dumps(payload))
    return path


def run_step(s: dict, context: dict, cwd: Path, tmp: Path, event: Path) -> tuple[subprocess.CompletedProcess, dict]:
    """Run one `run:` step like GitHub: bash -eo pipefail, step env expanded, $GITHUB_OUTPUT read back."""
    out = tmp / f"output-{len(list(tmp.glob('output-*')))}"
    out.write_text("")
    env = {k: v for k, v in os.environ.items() if k not in ("GITHUB_TOKEN", "GH_TOKEN", "GITHUB_STEP_SUMMARY")}
    env.update(PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}", GITHUB_EVENT_NAME="pull_request",
               GITHUB_EVENT_PATH=str(event), GITHUB_OUTPUT=str(out), RUNNER_TEMP=str(tmp),
               GITHUB_REPOSITORY="Codertocat/Hello-World")
    env.update({k: gh_expr.interpolate(str(v), context) for k, v in (s.get("env") or {}).items()})
    done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", s["run"]], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)
    return done, read_github_output(out.read_text())


def stage_inputs(caller: wc.Workflow, job_id: str, context: dict) -> dict:
    """The inputs a caller's job hands the workflow it calls (sweep-stages.yml), expanded from the
    caller's context and typed as the called workflow declares them (defaults for the rest)."""
    job = caller.jobs[job_id]
    declared = workflow(job["uses"].rsplit("/", 1)[-1]).on["workflow_call"]["inputs"]
    out = {}
    for name, spec in declared.items():
        raw = (job.get("with") or {}).get(name, spec.get("default"))
        value = gh_expr.interpolate(raw, context) if isinstance(raw, str) else raw
        out[name] = value in (True, "true") if spec["type"] == "boolean" else value
    return out


def job_outputs(job: dict, steps: dict[str, dict]) -> dict[str, str]:
    context = {"steps": {sid: {"outputs": outs} for sid, outs in steps.items()}}
    return {name: gh_expr.interpolate(expr, context) for name, expr in job["outputs"].items()}


def runs(s_or_job: dict, context: dict) -> bool:
    return gh_expr.job_runs(s_or_job.get("if"), context, gh_expr.Status())


@pytest.fixture(scope="module")
def planned(repo, event, tmp_path_factory):
    """The plan job, step by step: reuse (no API for a label event), then the plan."""
    pipeline = workflow("sweep-pipeline.yml")
    tmp = tmp_path_factory.mktemp("plan-job")
    steps: dict[str, dict] = {}
    for sid in ("reuse", "plan"):
        s = step(pipeline, "plan", sid)
        assert runs(s, {"steps": {k: {"outputs": v} for k, v in steps.items()}}), f"step {sid} would not run"
        done, outputs = run_step(s, {"github": {"token": ""}}, repo, tmp, event)
        assert done.returncode == 0, f"step {sid}: {done.stderr}"
        steps[sid] = outputs
    return job_outputs(pipeline.jobs["plan"], steps)


def pipeline_inputs(planned) -> dict:
    """What sweep-pipeline.yml's `stages` job hands sweep-stages.yml after this plan job."""
    needs = {"needs": {"plan": {"result": "success", "outputs": planned}, "import-reused": {"result": "skipped"}}}
    assert gh_expr.job_runs(workflow("sweep-pipeline.yml").jobs["stages"]["if"], needs,
                            gh_expr.Status(needs_results=("success", "skipped")))
    return stage_inputs(workflow("sweep-pipeline.yml"), "stages", needs)


def test_plan_job_plans_a_canaried_sweep(planned):
    assert planned["sweep"] == "true" and planned["has-canary"] == "true" and planned["reuse"] == "false"
    inputs = pipeline_inputs(planned)
    assert inputs["sweep"] is True and inputs["has-canary"] is True and inputs["ref"] == ""
    assert inputs["points"] == planned["points"] != "0"
    assert runs(workflow("sweep-stages.yml").jobs["canary"], {"inputs": inputs})
    assert json.loads(inputs["canary"]) == json.loads(planned["canary"]), "a canaried sweep with no canary rows"


def test_canary_and_family_rows_are_accepted_by_the_runner(planned, repo, tmp_path, event):
    """The rows the plan hands the template are rows `runner run` understands (dry run: no GPU)."""
    bench = workflow("benchmark.yml")
    write_row, serve = step(bench, "run", name="Write the row"), step(bench, "run", "run")
    for row in json.loads(planned["canary"]):
        done, _ = run_step(write_row, {"matrix": {"row": row}}, repo, tmp_path, event)
        assert done.returncode == 0, done.stderr
        assert json.loads((tmp_path / "row.json").read_text()) == row
        dry = {**serve, "run": serve["run"] + " --dry-run"}
        done, _ = run_step(dry, {"matrix": {"row": row}, "secrets": {"HF_TOKEN": ""}}, repo, tmp_path, event)
        assert done.returncode == 0, f"runner run refused the planned row: {done.stderr}"
        assert "sglang" in done.stdout


def release(planned, passed: list[int], repo: Path, tmp: Path, event: Path, inputs: dict | None = None,
            marker=None, plant: dict[str, str] | None = None) -> dict[str, str]:
    """Markers written by benchmark.yml's own step for each passed canary (by its index in the canary
    matrix), then the release job of sweep-stages.yml. `marker(index, text)` may rewrite a marker;
    `plant` adds artifact folders no canary wrote."""
    bench, stages = workflow("benchmark.yml"), workflow("sweep-stages.yml")
    inputs = inputs or pipeline_inputs(planned)
    rows = json.loads(inputs["canary"])
    mark = step(bench, "run", name="Mark the canary passed")
    downloads = tmp / "canaries"
    downloads.mkdir()
    for index in passed:
        leg = tmp / f"leg-{index}"
        leg.mkdir()
        context = {"inputs": {"canary": True}, "matrix": {"row": rows[index]}}
        assert runs(mark, context)
        done, _ = run_step(mark, context, repo, leg, event)
        assert done.returncode == 0, done.stderr
        if marker:
            (leg / "canary" / "family").write_text(marker(index, (leg / "canary" / "family").read_text()))
        # upload-artifact `canary-passed-<index>` then download-artifact into canaries/<name>/
        shutil.copytree(leg / "canary", downloads / f"canary-passed-{index}")
    for name, text in (plant or {}).items():
        (downloads / name).mkdir()
        (downloads / name / "family").write_text(text)
    job = stages.jobs["release"]
    context = {"inputs": inputs, "needs": {"canary": {"result": "success" if passed else "failure"}}}
    assert gh_expr.job_runs(job["if"], context, gh_expr.Status(needs_results=("success",)))
    ran = [s.get("id") or s["uses"].split("@")[0] for s in job["steps"] if runs(s, context)]
    assert "actions/download-artifact" in ran and ran[-1] == "release"
    done, outputs = run_step(step(stages, "release", "release"), context, repo, tmp, event)
    assert done.returncode == 0, f"release: {done.stderr}"
    release.stderr = done.stderr
    return job_outputs(job, {"release": outputs})


def test_passed_canary_releases_its_family(planned, repo, tmp_path, event):
    canaries = json.loads(planned["canary"])
    released = release(planned, list(range(len(canaries))), repo, tmp_path, event)
    family = workflow("sweep-stages.yml").jobs["family"]
    assert runs(family, {"needs": {"release": {"result": "success", "outputs": released}}})
    buckets = json.loads(released["buckets"])
    assert buckets
    families = {row["runner"] for row in canaries}
    for bucket in buckets:
        context = {"needs": {"release": {"outputs": released}}, "matrix": {"bucket": bucket}}
        rows = json.loads(gh_expr.interpolate(family["with"]["rows"], context))
        assert rows and {row["runner"] for row in rows} <= families
        assert gh_expr.interpolate(family["with"]["fail-fast"], context) in ("true", "false")
    # the canary rows are not run again
    all_rows = [json.dumps(r, sort_keys=True) for b in buckets for r in json.loads(released[f"matrix-{b}"])]
    assert not {json.dumps(c, sort_keys=True) for c in canaries} & set(all_rows)


def test_failed_canary_holds_its_family_back(planned, repo, tmp_path, event):
    released = release(planned, [], repo, tmp_path, event)
    assert released["sweep"] == "false" and json.loads(released["buckets"]) == []
    family = workflow("sweep-stages.yml").jobs["family"]
    assert not runs(family, {"needs": {"release": {"result": "success", "outputs": released}}})


@pytest.mark.parametrize("forge", [
    lambda index, text: "cluster:some-other-family\n",     # a marker naming another family
    lambda index, text: text + "cluster:gb300-nv\n",       # two lines
])
def test_a_marker_that_is_not_its_canarys_releases_nothing(planned, repo, tmp_path, event, forge):
    """The release reads each marker against the canary that wrote it (ci_tools/sweep/canary.py)."""
    released = release(planned, [0], repo, tmp_path, event, marker=forge)
    assert released["sweep"] == "false" and json.loads(released["buckets"]) == []
    assert "canary-passed-0: names" in release.stderr and "ignored" in release.stderr


def test_a_marker_of_no_planned_canary_is_ignored(planned, repo, tmp_path, event):
    family = json.loads(planned["canary"])[0]["runner"]
    released = release(planned, [], repo, tmp_path, event, plant={"canary-passed-7": family + "\n"})
    assert released["sweep"] == "false"
    assert "canary-passed-7: not the marker of a planned canary" in release.stderr
