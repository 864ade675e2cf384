"""sweep-pipeline.yml's DAG under the plan's possible outputs: which jobs run, given job outcomes.

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

PIPELINE = next(wf for wf in wc.load_workflows(WORKFLOWS) if wf.name == "sweep-pipeline.yml")


def needs_of(job: dict) -> list[str]:
    needs = job.get("needs") or []
    return [needs] if isinstance(needs, str) else list(needs)


def run_dag(job_outputs: dict[str, dict[str, str]], outcomes: dict[str, str],
            event_name: str = "pull_request") -> dict[str, str]:
    """Result of every job: 'skipped' when its if: is false, else outcomes.get(job, 'success')."""
    results: dict[str, str] = {}
    pending = list(PIPELINE.jobs)
    while pending:
        for job_id in list(pending):
            job = PIPELINE.jobs[job_id]
            deps = needs_of(job)
            if any(d not in results for d in deps):
                continue
            pending.remove(job_id)
            needs = {d: {"result": results[d],
                         "outputs": job_outputs.get(d, {}) if results[d] == "success" else {}} for d in deps}
            context = {"needs": needs, "github": {"event_name": event_name}, "secrets": {}}
            status = gh_expr.Status(needs_results=tuple(results[d] for d in deps))
            runs = gh_expr.job_runs(job.get("if"), context, status)
            results[job_id] = outcomes.get(job_id, "success") if runs else "skipped"
    return results


PLAN = {"sweep": "true", "reuse": "false", "has-canary": "true"}
RELEASED = {"sweep": "true", "buckets": '["single-node-agentic"]'}
BLOCKED = {"sweep": "false", "buckets": "[]"}
SWEEP = {"plan": PLAN, "release": RELEASED}


def ran(results: dict[str, str]) -> set[str]:
    return {job for job, result in results.items() if result != "skipped"}


@pytest.mark.parametrize("outputs, outcomes, expected", [
    (SWEEP, {}, {"plan", "canary", "release", "family", "collect", "results-app"}),
    # one family's canary failed, another's passed: the release still runs and the passed family starts
    (SWEEP, {"canary": "failure"}, {"plan", "canary", "release", "family", "collect", "results-app"}),
    # every canary failed: the release holds back every family; the canaries are still collected
    ({"plan": PLAN, "release": BLOCKED}, {"canary": "failure"}, {"plan", "canary", "release", "collect",
                                                                  "results-app"}),
    # no canary planned (no canary label, or push): families released at once
    ({"plan": {**PLAN, "has-canary": "false"}, "release": RELEASED}, {},
     {"plan", "release", "family", "collect", "results-app"}),
    # planning (or canary selection) failed: nothing fans out
    (SWEEP, {"plan": "failure"}, {"plan"}),
    # the release step failed: fail closed, no family starts
    (SWEEP, {"release": "failure"}, {"plan", "canary", "release", "collect", "results-app"}),
    # the plan decided not to sweep ([skip-sweep], no appended entry): nothing runs, nothing collected
    ({"plan": {**PLAN, "sweep": "false"}}, {}, {"plan"}),
    # an authorised /use on a PR push: the plan step is skipped, nothing runs
    ({"plan": {"reuse": "false"}}, {}, {"plan"}),
    # main reuses the pinned run: import it, collect it, dispatch it
    ({"plan": {"reuse": "true", "reuse-source-run-id": "42"}}, {}, {"plan", "import-reused", "collect", "results-app"}),
    # a failed family still gets its results collected; the dispatch needs a successful collect
    (SWEEP, {"family": "failure", "collect": "failure"}, {"plan", "canary", "release", "family", "collect"}),
])
def test_jobs_that_run(outputs, outcomes, expected):
    assert ran(run_dag(outputs, outcomes)) == expected


def test_family_legs_read_the_released_matrices():
    family = PIPELINE.jobs["family"]
    assert "needs.release.outputs[format('matrix-{0}', matrix.bucket)]" in family["with"]["rows"]
    assert "needs.release.outputs[format('fail-fast-{0}', matrix.bucket)]" in family["with"]["fail-fast"]
    assert family["strategy"]["fail-fast"] is False, "one bucket's failure must not cancel the other buckets"


@pytest.mark.parametrize("has_canary, expected", [("true", "after-canary"), ("false", "no-canary"), ("", "no-canary")])
def test_release_runs_exactly_one_plan_step(has_canary, expected):
    context = {"needs": {"plan": {"result": "success", "outputs": {"has-canary": has_canary}},
                         "canary": {"result": "skipped"}}}
    ran_steps = [s["id"] for s in PIPELINE.jobs["release"]["steps"]
                 if s.get("id") and gh_expr.job_runs(s.get("if"), context, gh_expr.Status())]
    assert ran_steps == [expected]
