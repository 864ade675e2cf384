"""sweep-pipeline.yml's DAG under the plan's possible outputs: which jobs run, given job outcomes.

The plan outputs here are hand-written (the plan itself is tested in tests/policy); what is tested
is the wiring: a failed canary stops the families, no canary lets them run, a failed plan stops
everything (fail closed), reuse replaces the sweep, nothing is collected when nothing ran.
"""

from __future__ import annotations

import pytest

import gh_expr
import wf_contract as wc
from conftest import WORKFLOWS

PIPELINE = next(wf for wf in wc.load_workflows(WORKFLOWS) if wf.name == "sweep-pipeline.yml")


def needs_of(job: dict) -> list[str]:
    needs = job.get("needs") or []
    return [needs] if isinstance(needs, str) else list(needs)


def run_dag(plan_outputs: dict[str, str], outcomes: dict[str, str], event_name: str = "pull_request") -> dict[str, str]:
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
            needs = {d: {"result": results[d], "outputs": plan_outputs if d == "plan" and results[d] == "success" else {}}
                     for d in deps}
            context = {"needs": needs, "github": {"event_name": event_name}, "secrets": {}}
            status = gh_expr.Status(needs_results=tuple(results[d] for d in deps))
            runs = gh_expr.job_runs(job.get("if"), context, status)
            results[job_id] = outcomes.get(job_id, "success") if runs else "skipped"
    return results


SWEEP = {"sweep": "true", "reuse": "false", "has-canary": "true", "buckets": '["single-node-agentic"]'}


def ran(results: dict[str, str]) -> set[str]:
    return {job for job, result in results.items() if result != "skipped"}


@pytest.mark.parametrize("outputs, outcomes, expected", [
    (SWEEP, {}, {"plan", "canary", "family", "collect", "results-app"}),
    # a failed canary stops the families; what ran is still collected
    (SWEEP, {"canary": "failure"}, {"plan", "canary", "collect", "results-app"}),
    # no canary planned (no canary label, or push): families run directly
    ({**SWEEP, "has-canary": "false"}, {}, {"plan", "family", "collect", "results-app"}),
    # planning (or canary selection) failed: nothing fans out
    (SWEEP, {"plan": "failure"}, {"plan"}),
    # the plan decided not to sweep ([skip-sweep], no appended entry): nothing runs, nothing collected
    ({**SWEEP, "sweep": "false"}, {}, {"plan"}),
    # an authorised /use on a PR push: the plan step is skipped, nothing runs
    ({"reuse": "false"}, {}, {"plan"}),
    # main reuses the pinned run: import it, collect it, dispatch it
    ({"reuse": "true", "reuse-source-run-id": "42"}, {}, {"plan", "import-reused", "collect", "results-app"}),
    # a failed family still gets its results collected; the dispatch needs a successful collect
    (SWEEP, {"family": "failure", "collect": "failure"}, {"plan", "canary", "family", "collect"}),
])
def test_jobs_that_run(outputs, outcomes, expected):
    assert ran(run_dag(outputs, outcomes)) == expected


def test_family_legs_read_outputs_the_plan_job_exports():
    """The family matrix indexes plan outputs by bucket name; every bucket's outputs must exist."""
    family = PIPELINE.jobs["family"]
    assert "needs.plan.outputs[format('matrix-{0}', matrix.bucket)]" in family["with"]["rows"]
    assert "needs.plan.outputs[format('fail-fast-{0}', matrix.bucket)]" in family["with"]["fail-fast"]
    assert family["strategy"]["fail-fast"] is False, "one bucket's failure must not cancel the other buckets"
