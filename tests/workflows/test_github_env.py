"""Every workflow step that can call GitHub, run as GitHub runs it, against a fake that enforces
GitHub's permission rules (issue #16).

Each job below runs its `ci-tools` steps (`gh_runtime.JobRun`: the trigger's real payload, the job's
token scopes, $GITHUB_OUTPUT, $GITHUB_STEP_SUMMARY) in scenarios that reach every GitHub call the job
can make. The fake answers 403 to a call the job's `permissions:` do not grant and 404 to an
organization endpoint for a GITHUB_TOKEN, so:
- a call without its permission fails the scenario (0 called without);
- a granted scope that no call of the job needs, and no `uses:` step needs, fails `test_job`
  (0 granted and unused; a call that either of two scopes allows counts as needing the pair, and a
  scope is unused when every call is still allowed without it);
- a job whose steps receive a token must be listed here (`test_every_token_holding_step_is_run`).
"""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

import pytest

import gh_runtime as rt
import wf_contract as wc
from wf_env import REPO, WORKFLOWS

sys.path.insert(0, str(REPO / "tests" / "github"))
from fake_github import LEVELS, FakeGitHub, Server  # noqa: E402

REPO_NAME = "octo/bench"
FULL = "full-sweep-fail-fast"
SHA1, SHA2, MERGE = "a" * 40, "b" * 40, "e" * 40
TOKEN_ENV = ("GITHUB_TOKEN", "GH_TOKEN")

# What the `uses:` steps need from the job token (GitHub's actions, as they document it): a checkout
# of a private repository reads contents; downloading another run's artifacts lists and downloads them.
def action_needs(step: dict) -> set[tuple[str, str]]:
    uses = step.get("uses", "")
    if uses.startswith("actions/checkout@"):
        return {("contents", "read")}
    if uses.startswith("actions/download-artifact@") and "run-id" in (step.get("with") or {}):
        return {("actions", "read")}
    return set()


def shell_needs(step: dict) -> set[tuple[str, str]]:
    """`gh` commands in run: scripts (the only non-ci-tools API client our workflows use)."""
    if "gh workflow run " in step.get("run", ""):
        return {("actions", "write")}       # POST /repos/{o}/{r}/actions/workflows/{id}/dispatches
    return set()


# ---- the scenarios -------------------------------------------------------------------------------

class Scenario:
    """A fresh fake GitHub, one job, the steps the scenario runs; collects the calls made with the
    job token."""

    def __init__(self, shared: Path, tmp: Path):
        self.fake = FakeGitHub(shared / "corpus", repo=REPO_NAME)
        self.server = Server(self.fake)
        self.tmp = tmp

    def __enter__(self):
        self.server.__enter__()
        self.fake.url = self.server.url
        return self

    def __exit__(self, *exc):
        self.server.__exit__(*exc)

    def job(self, wf: str, job_id: str, event_name: str, payload: dict, **kw) -> rt.JobRun:
        n = len(list(self.tmp.glob("job-*")))
        return rt.JobRun(rt.workflow(wf), job_id, self.fake, event_name, rt.adjust(payload, REPO_NAME),
                         self.tmp / f"job-{n}", **kw)

    def app_token(self, name: str, **permissions) -> str:
        return self.fake.grant(f"ghs_{name}", "app", permissions)


def pr_with_sweep(fake, number=7, *, labels=(FULL,), head=SHA1, fork=None):
    pr = fake.add_pr(number, head_sha=head, fork=fork)
    pr["labels"] = []
    for label in labels:
        fake.label(number, label)
    return pr


def merged(fake, number=7):
    fake.pulls[number].update(merged_at=fake.tick(), merged=True, state="closed")
    fake.commit_pulls[MERGE] = [number]


def push_to_main() -> dict:
    return dict(rt.webhook("push", "payload.json"), ref="refs/heads/main", before=SHA1, after=MERGE)


def ok(step: rt.StepRun) -> rt.StepRun:
    assert step.ok, f"exit {step.done.returncode}\n{step.done.stdout}\n{step.done.stderr}"
    assert "Traceback" not in step.done.stderr
    return step


# Each scenario: (workflow, job, function(s: Scenario) -> list of JobRuns it ran). One list per job.
def results_app_ingests_this_run(s: Scenario):
    """#16.4: `GET commits/{sha}/pulls` needs pull-requests: read, which the job must grant."""
    pr_with_sweep(s.fake)
    merged(s.fake)
    s.fake.add_run(4242, head_sha=MERGE, branch="main", event="push", artifacts=("results_bmk", "changelog-metadata"))
    job = s.job("sweep-pipeline.yml", "results-app", "push", push_to_main(),
                secrets={"RESULTS_DISPATCH_TOKEN": s.app_token("results", contents="write")},
                needs={"plan": {"outputs": {"reuse-source-run-id": ""}}, "collect": {"result": "success"}})
    step = ok(job.run("dispatch"))
    assert step.outputs["dispatched"] == "true" and s.fake.dispatches[0]["client_payload"]["pr-number"] == "7"
    return [job]


def results_app_ingests_the_reused_run(s: Scenario):
    pr_with_sweep(s.fake)
    merged(s.fake)
    s.fake.add_run(9, head_sha=SHA1, pull_requests=(7,))
    job = s.job("sweep-pipeline.yml", "results-app", "push", push_to_main(),
                secrets={"RESULTS_DISPATCH_TOKEN": s.app_token("results", contents="write")},
                needs={"plan": {"outputs": {"reuse-source-run-id": "9"}}, "collect": {"result": "success"}})
    assert ok(job.run("dispatch")).outputs["ingest-run-id"] == "9"
    return [job]


def trusted_sweep_checks_the_approval(s: Scenario):
    """#16.1: the check step runs under workflow_dispatch (whose payload ci-tools does not parse)."""
    pr = pr_with_sweep(s.fake, 3, fork="someone/bench")
    pr["base"]["sha"] = SHA2
    payload = dict(rt.webhook("workflow_dispatch", "payload.json"), inputs={"pr": "3", "sha": SHA1},
                   ref="refs/heads/main")
    job = s.job("trusted-sweep.yml", "plan", "workflow_dispatch", payload, inputs={"pr": 3, "sha": SHA1})
    step = ok(job.run("check"))
    assert step.outputs["proceed"] == "true" and step.outputs["base-sha"] == SHA2
    return [job]


SCENARIOS = {
    ("sweep-pipeline.yml", "results-app"): [results_app_ingests_this_run, results_app_ingests_the_reused_run],
    ("trusted-sweep.yml", "plan"): [trusted_sweep_checks_the_approval],
}


# ---- the checks ------------------------------------------------------------------------------------

def satisfied(needs: tuple, grants: dict[str, str]) -> bool:
    return any(LEVELS[grants.get(p, "read" if p == "metadata" else "none")] >= LEVELS[a] for p, a in needs)


def unused_scopes(granted: dict[str, str], calls: list[tuple], steps_need: set[tuple[str, str]]) -> list[str]:
    """Scopes no call and no `uses:` step needs, and writes where read would do."""
    def enough(scope: str, level: str) -> bool:
        grants = {**granted, scope: level}
        return all(satisfied(c, grants) for c in calls) and \
            all(LEVELS[level] >= LEVELS[a] for p, a in steps_need if p == scope)

    out = []
    for scope, level in granted.items():
        if enough(scope, "none"):
            out.append(f"{scope}: {level} (never needed)")
        elif level == "write" and enough(scope, "read"):
            out.append(f"{scope}: write (read is enough)")
    return out


@pytest.mark.parametrize("wf_name,job_id", sorted(SCENARIOS), ids=lambda v: v)
def test_job(shared, tmp_path, wf_name, job_id):
    wf = rt.workflow(wf_name)
    granted = rt.job_permissions(wf, job_id)
    calls: list[tuple] = []
    for n, scenario in enumerate(SCENARIOS[(wf_name, job_id)]):
        with Scenario(shared, tmp_path / f"s{n}") as s:
            jobs = scenario(s)
            tokens = {j.token for j in jobs}
            assert not [r for r in s.fake.refused if r[0] in tokens], "called without the permission"
            calls += [needs for token, _, needs in s.fake.authorised if token in tokens]
            assert not s.fake.schema_errors, s.fake.schema_errors
    steps_need = set().union(*(action_needs(st) | shell_needs(st) for st in wf.jobs[job_id]["steps"]))
    assert unused_scopes(granted, calls, steps_need) == [], f"{wf_name}: {job_id}: granted and never needed"
