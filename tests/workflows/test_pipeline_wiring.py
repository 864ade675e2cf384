"""sweep-pipeline.yml's DAG (and the sweep-stages.yml it calls) under the plan's possible outputs: which jobs run.

The plan and release outputs here are hand-written (the planner, `--after-canary` included, is
tested in tests/policy); what is tested is the wiring: families start from the release job, which
runs whatever the canaries did (a failed canary of one family must not stop the others), a failed
plan stops everything (fail closed), reuse replaces the sweep, nothing is collected when nothing ran.
"""

from __future__ import annotations

import pytest

import gh_expr
import wf_contract as wc
from wf_env import WORKFLOWS

WORKFLOW = {wf.name: wf for wf in wc.load_workflows(WORKFLOWS)}
PIPELINE = WORKFLOW["sweep-pipeline.yml"]
STAGES = WORKFLOW["sweep-stages.yml"]


def needs_of(job: dict) -> list[str]:
    needs = job.get("needs") or []
    return [needs] if isinstance(needs, str) else list(needs)


def called_inputs(job: dict, context: dict) -> dict:
    """The `with:` of a job calling a workflow, expanded, typed as the called workflow declares."""
    declared = WORKFLOW[job["uses"].rsplit("/", 1)[-1]].on["workflow_call"]["inputs"]
    out = {}
    for name, spec in declared.items():
        raw = (job.get("with") or {}).get(name, spec.get("default"))
        value = gh_expr.interpolate(raw, context) if isinstance(raw, str) else raw
        out[name] = value in (True, "true") if spec["type"] == "boolean" else value
    return out


def run_dag(job_outputs: dict[str, dict[str, str]], outcomes: dict[str, str], event_name: str = "pull_request",
            wf: wc.Workflow = PIPELINE, inputs: dict | None = None, prefix: str = "") -> dict[str, str]:
    """Result of every job: 'skipped' when its if: is false, else outcomes.get(job, 'success'). A job
    calling sweep-stages.yml runs its jobs (named `stages/<job>`): it fails when one of them failed,
    and its `collect-result` output is the collect job's result, as GitHub passes them."""
    results: dict[str, str] = {}
    outputs = dict(job_outputs)
    pending = list(wf.jobs)
    while pending:
        for job_id in list(pending):
            job = wf.jobs[job_id]
            deps = needs_of(job)
            if any(d not in results for d in deps):
                continue
            pending.remove(job_id)
            needs = {d: {"result": results[d], "outputs": outputs.get(d, {}) if results[d] == "success" else {}}
                     for d in deps}
            context = {"needs": needs, "github": {"event_name": event_name}, "secrets": {}, "inputs": inputs or {}}
            status = gh_expr.Status(needs_results=tuple(results[d] for d in deps))
            runs = gh_expr.job_runs(job.get("if"), context, status)
            name = prefix + job_id
            if runs and job.get("uses", "").endswith("/sweep-stages.yml"):
                inner = run_dag(job_outputs, outcomes, event_name, STAGES, called_inputs(job, context), f"{job_id}/")
                results.update(inner)
                results[job_id] = "failure" if "failure" in inner.values() else "success"
                outputs[job_id] = {"collect-result": inner[f"{job_id}/collect"]}
                continue
            results[name if prefix else job_id] = outcomes.get(job_id, "success") if runs else "skipped"
            if prefix:
                results[job_id] = results[name]
    return {k: v for k, v in results.items() if not prefix or k.startswith(prefix)}


PLAN = {"sweep": "true", "reuse": "false", "has-canary": "true", "points": "7", "canary": '[{"runner": "b300"}]'}
RELEASED = {"sweep": "true", "buckets": '["single-node-agentic"]'}
BLOCKED = {"sweep": "false", "buckets": "[]"}
SWEEP = {"plan": PLAN, "release": RELEASED}
STAGED = {"stages", "stages/canary", "stages/release", "stages/family", "stages/collect"}


def ran(results: dict[str, str]) -> set[str]:
    return {job for job, result in results.items() if result != "skipped"}


@pytest.mark.parametrize("outputs, outcomes, expected", [
    (SWEEP, {}, {"plan", *STAGED, "results-app"}),
    # one family's canary failed, another's passed: the release still runs and the passed family starts;
    # the missing points fail collect (--expect), so the sweep is not ingested
    (SWEEP, {"canary": "failure", "collect": "failure"}, {"plan", *STAGED}),
    # every canary failed: the release holds back every family; the canaries are still collected
    ({"plan": PLAN, "release": BLOCKED}, {"canary": "failure", "collect": "failure"},
     {"plan", *STAGED - {"stages/family"}}),
    # no canary planned (no canary label, or push): families released at once
    ({"plan": {**PLAN, "has-canary": "false"}, "release": RELEASED}, {}, {"plan", *STAGED - {"stages/canary"},
                                                                          "results-app"}),
    # planning (or canary selection) failed: nothing fans out
    (SWEEP, {"plan": "failure"}, {"plan"}),
    # the release step failed: fail closed, no family starts
    (SWEEP, {"release": "failure", "collect": "failure"}, {"plan", *STAGED - {"stages/family"}}),
    # the plan decided not to sweep ([skip-sweep], no appended entry): nothing runs, nothing collected
    ({"plan": {**PLAN, "sweep": "false"}}, {}, {"plan"}),
    # an authorised /use on a PR push: the plan step is skipped, nothing runs
    ({"plan": {"reuse": "false"}}, {}, {"plan"}),
    # main reuses the pinned run: import it, collect it, dispatch it
    ({"plan": {"reuse": "true", "reuse-source-run-id": "42"}}, {},
     {"plan", "import-reused", "stages", "stages/collect", "results-app"}),
    # a failed family still gets its results collected; the dispatch needs a successful collect
    (SWEEP, {"family": "failure", "collect": "failure"}, {"plan", *STAGED}),
])
def test_jobs_that_run(outputs, outcomes, expected):
    assert ran(run_dag(outputs, outcomes)) == expected


@pytest.mark.parametrize("plan, points, sweep", [(PLAN, "7", True), ({"reuse": "true"}, "0", False)])
def test_collect_expects_every_planned_point_of_a_sweep_and_none_of_a_reused_run(plan, points, sweep):
    context = {"needs": {"plan": {"result": "success", "outputs": plan}, "import-reused": {"result": "success"}}}
    inputs = called_inputs(PIPELINE.jobs["stages"], context)
    assert (inputs["points"], inputs["sweep"]) == (points, sweep)
    [collect] = [s for s in STAGES.jobs["collect"]["steps"] if s.get("id") == "collect"]
    assert '--expect "$POINTS"' in collect["run"] and collect["env"]["POINTS"] == "${{ inputs.points }}"


def test_family_legs_read_the_released_matrices():
    family = STAGES.jobs["family"]
    assert "needs.release.outputs[format('matrix-{0}', matrix.bucket)]" in family["with"]["rows"]
    assert "needs.release.outputs[format('fail-fast-{0}', matrix.bucket)]" in family["with"]["fail-fast"]
    assert family["strategy"]["fail-fast"] is False, "one bucket's failure must not cancel the other buckets"


@pytest.mark.parametrize("has_canary, ref, downloads, trusted_tree", [
    (True, "", True, False), (False, "", False, False), (True, "a" * 40, True, True), (False, "a" * 40, False, True)])
def test_release_downloads_markers_only_after_canaries_and_reads_the_approved_commit_as_data(
        has_canary, ref, downloads, trusted_tree):
    context = {"inputs": {"sweep": True, "has-canary": has_canary, "ref": ref}, "needs": {"canary": {"result": "skipped"}}}
    steps = [s for s in STAGES.jobs["release"]["steps"] if gh_expr.job_runs(s.get("if"), context, gh_expr.Status())]
    uses = [s.get("uses", "").split("@")[0] for s in steps]
    assert ("actions/download-artifact" in uses) is downloads
    assert any((s.get("with") or {}).get("path") == "pr" for s in steps) is trusted_tree
    assert steps[-1]["id"] == "release" and "--canary-dir" in steps[-1]["run"]
