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
import subprocess
import sys
from pathlib import Path
from typing import Callable

import pytest

import gh_expr
import gh_runtime as rt
import wf_contract as wc
from wf_env import REPO, WORKFLOWS

sys.path.insert(0, str(REPO / "tests" / "github"))
from fake_github import LEVELS, FakeGitHub, Server  # noqa: E402
from tests.conftest import MERGE_GROUP_PAYLOAD, NVIDIA_SMI_H200

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
    if "ci-tools results publish " in step.get("run", "") and "--decide" not in step["run"]:
        return {("contents", "write")}      # a git push of the Pages branch (git, not the REST API)
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


# ---- payloads: the corpus's real ones, pointed at the fake's PRs -------------------------------------

def comment_payload(fake, pr: int, comment: dict, action: str = "created") -> dict:
    d = rt.webhook("issue_comment", f"{action}.payload.json")
    d["issue"] = {**d["issue"], "number": pr, "pull_request": {"url": f"https://api.github.com/repos/{fake.repo}/pulls/{pr}"}}
    d["comment"] = {k: v for k, v in comment.items() if not k.startswith("_")}
    return d


def pr_payload(fake, pr: int, action: str, **top) -> dict:
    d = rt.webhook("pull_request", f"{action}.payload.json")
    d["pull_request"] = copy.deepcopy(fake.pulls[pr])
    d.update(number=pr, **top)
    return d


def review_payload(fake, pr: int, review: dict) -> dict:
    d = rt.webhook("pull_request_review", "submitted.payload.json")
    d["pull_request"] = copy.deepcopy(fake.pulls[pr])
    d["review"] = {k: v for k, v in review.items() if not k.startswith("_")}
    return d


def run_payload(fake, run: dict) -> dict:
    d = rt.webhook("workflow_run", "completed.with-pull-requests.payload.json")
    d["workflow_run"] = copy.deepcopy(run)
    return d


def signoff_body(signer: str) -> str:
    from ci_tools import names
    from ci_tools.prbot.signoff import decide as signoff

    checklist = signoff.parse_checklist((REPO / names.REVIEW_CHECKLIST).read_text(), names.REVIEW_CHECKLIST)
    return "\n".join([signoff.PHRASE + ":"] + [f"- [x] {i}" for i in checklist.items] + ["", f"Signed: @{signer}"])


def signed_off_pr(fake, number=1, fork=None):
    pr = pr_with_sweep(fake, number, fork=fork)
    fake.pr_files[number] = ["inferencex-e2e/configs/amd-master.yaml"]
    if fork:  # a fork PR's sweep is a trusted one: its own pull_request run never counts (#15)
        from ci_tools import names
        from ci_tools.prbot.approval import decide as approval

        fake.add_run(9, head_sha="9" * 40, branch="main", event="workflow_dispatch",
                     path=f".github/workflows/{names.TRUSTED_WORKFLOW}",
                     display_title=approval.run_name(number, SHA1), name="trusted-sweep")
    else:
        fake.add_run(9, head_sha=SHA1, pull_requests=(number,))
    fake.teams[("SemiAnalysisAI", "amd-reviewers")] = {"amd-dev"}
    fake.teams[("SemiAnalysisAI", "core")] = {"core-dev"}
    fake.permissions.update({"amd-dev": "write", "core-dev": "write"})   # GitHub needs it of a code owner
    return pr


def writer(fake, login="maint"):
    fake.permissions[login] = "write"
    return login


def answered_use(fake, pr, body="/use 9"):
    """A writer's `/use` and the reply with which comment-commands.yml's handle job answered it (its
    record of the permission checked is what makes the `/use` count later)."""
    from gh_scenarios import answer

    c = fake.add_comment(pr, body, author=writer(fake))
    answer(fake, pr, c, "write")
    return c


# ---- the scenarios: each returns the JobRuns whose token it used --------------------------------

def handle(s, body, *, pr=1, fork=None, secrets=None):
    c = s.fake.add_comment(pr, body, author=writer(s.fake), association="CONTRIBUTOR")
    job = s.job("comment-commands.yml", "handle", "issue_comment", comment_payload(s.fake, pr, c), secrets=secrets or {})
    return job, ok(job.run("handle"))


def comment_use_pins_a_run(s):
    pr_with_sweep(s.fake, 1)
    s.fake.add_run(9, head_sha=SHA1, pull_requests=(1,))
    job, step = handle(s, "/use 9")
    assert step.outputs["reuse-authorised"] == "true"
    return [job]


def comment_stage_results(s):
    """The handler decides and acknowledges, holding no dispatch token; it sends nothing."""
    pr_with_sweep(s.fake, 1)
    s.fake.add_run(9, head_sha=SHA1, pull_requests=(1,))
    job, step = handle(s, "/stage-results 9", secrets={"RESULTS_DISPATCH_TOKEN": s.app_token("results", contents="write", actions="read")})
    assert step.outputs["stage-run-id"] == "9" and step.outputs["stage-payload"] and s.fake.dispatches == []
    s.handled = job
    return [job]


def stage_dispatch_sends_the_decided_payload(s):
    """Issue #15: only this job holds RESULTS_DISPATCH_TOKEN; it re-reads the acknowledgement and the run."""
    comment_stage_results(s)
    handled = s.handled
    job = s.job("comment-commands.yml", "stage-dispatch", "issue_comment", handled.payload,
                secrets={"RESULTS_DISPATCH_TOKEN": s.app_token("results", contents="write", actions="read")},
                needs={"handle": {"result": "success", "outputs": {"stage-payload": handled.steps["handle"].outputs["stage-payload"]}}})
    assert ok(job.run("dispatch")).outputs["dispatched"] == "true"
    [sent] = s.fake.dispatches
    assert sent["event_type"] == "stage-results" and sent["client_payload"]["run-id"] == "9"
    return [job]


def comment_sweep_approve_on_a_fork(s):
    pr_with_sweep(s.fake, 3, fork="someone/bench")
    job, step = handle(s, f"/sweep approve {SHA1}", pr=3)
    assert step.outputs["approve-sha"] == SHA1
    return [job]


def comment_sweep_plan(s):
    pr_with_sweep(s.fake, 1)
    job, _ = handle(s, "/sweep plan")
    return [job]


def opened(s, number=1):
    """signoff-verify.yml's after-push job for the PR's opening: its check is the bot's record that
    SHA1 was the PR's head before any sign-off comment (issue 25)."""
    ok(s.job("signoff-verify.yml", "after-push", "pull_request_target", pr_payload(s.fake, number, "opened")).run(2))


def signoff_check(s) -> dict:
    """The newest sign-off check run the jobs wrote."""
    return [c for c in s.fake.check_runs if c["name"] == "codeowner-signoff-verify"][-1]


def signoff_comment(s):
    signed_off_pr(s.fake)
    opened(s)
    c = s.fake.add_comment(1, signoff_body("amd-dev"), author="amd-dev")
    job = s.job("signoff-verify.yml", "verify", "issue_comment", comment_payload(s.fake, 1, c),
                secrets={"TEAM_MEMBERSHIP_TOKEN": s.app_token("teams", members="read")})
    ok(job.run("verify"))
    assert signoff_check(s)["conclusion"] == "success"
    return [job]


def signoff_with_a_minted_app_token(s):
    """#23.6: the App token minted by the job's create-github-app-token step (what it leaves: the
    `token` output) reads the teams; no TEAM_MEMBERSHIP_TOKEN secret is set."""
    signed_off_pr(s.fake)
    opened(s)
    c = s.fake.add_comment(1, signoff_body("amd-dev"), author="amd-dev")
    job = s.job("signoff-verify.yml", "verify", "issue_comment", comment_payload(s.fake, 1, c), secrets={})
    minted = s.app_token("minted", members="read")
    job.steps["team-token"] = rt.StepRun(subprocess.CompletedProcess([], 0), {"token": minted}, "")
    ok(job.run("verify"))
    assert signoff_check(s)["conclusion"] == "success"
    assert any(token == minted and "memberships" in call for token, call, _ in s.fake.authorised)
    return [job]


def signoff_carried_after_push(s):
    signoff_comment(s)                     # a verified sign-off, then a push with the same tree
    job = s.job("signoff-verify.yml", "after-push", "pull_request_target",
                pr_payload(s.fake, 1, "synchronize", before=SHA2, after=SHA1))
    ok(job.run(2))
    assert signoff_check(s)["conclusion"] == "success"
    return [job]


def review_signoff_two_phases(s, fork="someone/bench"):
    """#16.5: the review's own run (read-only on a fork) records; the workflow_run run verifies and posts."""
    signed_off_pr(s.fake, fork=fork)
    review = s.fake.add_review(1, signoff_body("amd-dev"), author="amd-dev")
    record = s.job("signoff-review.yml", "record", "pull_request_review", review_payload(s.fake, 1, review),
                   fork=bool(fork))
    ok(record.run(2))
    from ci_tools import names

    recorded = (record.tmp / "review" / names.REVIEW_FILE).read_text()
    run = s.fake.add_run(77, head_sha=SHA1, event="pull_request_review", path=f".github/workflows/{names.REVIEW_RECORD_WORKFLOW}",
                         artifacts=(names.REVIEW_ARTIFACT,), name="signoff-review")
    verify = s.job("signoff-review-verify.yml", "verify", "workflow_run", run_payload(s.fake, run),
                   secrets={"TEAM_MEMBERSHIP_TOKEN": s.app_token("teams", members="read")})
    (verify.tmp / "review").mkdir()
    (verify.tmp / "review" / names.REVIEW_FILE).write_text(recorded)      # what download-artifact leaves
    ok(verify.run("verify"))
    assert signoff_check(s)["conclusion"] == "success" and signoff_check(s)["_sha"] == SHA1
    s.record_jobs = [record]
    return [verify]


class Part:
    """Other jobs of another scenario's run: its run is shared (see `ran`), `jobs` picks from the
    Scenario it left the jobs whose calls this job's test counts."""

    def __init__(self, of: Callable[[Scenario], list], jobs: Callable[[Scenario], list]):
        self.of, self.jobs = of, jobs


review_record_only = Part(review_signoff_two_phases, lambda s: s.record_jobs)


def staging_callback(s):
    pr_with_sweep(s.fake, 1)
    s.fake.add_run(9, head_sha=SHA1, pull_requests=(1,))
    handle(s, "/stage-results 9")
    cid = next(c["id"] for c in s.fake.bot_comments(1) if c["body"].startswith("<!-- ci-tools:stage "))
    d = dict(rt.webhook("repository_dispatch", "payload.json"), action="stage-results-started",
             client_payload={"source-repository": "SemiAnalysisAI/InferenceX-app", "pr-number": "1", "run-id": "9",
                             "app-run-id": "555", "run-date": "2026-10-01", "requested-by": "maint",
                             "comment-id": str(cid)})
    job = s.job("staging-callback.yml", "callback", "repository_dispatch", d)
    assert ok(job.run(2)).outputs["updated"] == "true"
    return [job]


def card_job(s, run: dict) -> rt.JobRun:
    """status-card.yml's card job, after its `pr` job resolved the PR (its outputs are the card's needs)."""
    which = s.job("status-card.yml", "pr", "workflow_run", run_payload(s.fake, run))
    outputs = ok(which.run("pr")).outputs
    return s.job("status-card.yml", "card", "workflow_run", run_payload(s.fake, run),
                 needs={"pr": {"outputs": outputs, "result": "success"}})


def status_card_of_a_pr_sweep(s, plan_json: dict | None = None):
    pr_with_sweep(s.fake, 1)
    run = s.fake.add_run(12, head_sha=SHA1, pull_requests=(1,))
    job = card_job(s, run)
    if plan_json is not None:                                      # what download-artifact leaves
        (job.tmp / "metadata").mkdir()
        (job.tmp / "metadata" / "plan.json").write_text(json.dumps(plan_json))
    assert ok(job.run("card")).outputs["comment"] == "create"
    return [job]


def status_card_with_the_runs_plan(s):
    """#16.10: the card's plan line comes from the run's own plan (the changelog-metadata artifact)."""
    plan = {"sweep": True, "reason": "x", "canaries": [{}], "totals": {"points": 7, "families": ["cluster:gb300-nv"],
                                                                      "gpu-hours": 17.33, "canary-gpu-hours": 1.33}}
    jobs = status_card_of_a_pr_sweep(s, plan)
    [card] = [c for c in s.fake.bot_comments(1) if c["body"].startswith("<!-- ci-tools:status-card")]
    assert "7 points on 1 runner label (`cluster:gb300-nv`), 17.33 GPU-h" in card["body"]
    return jobs


def status_card_of_a_trusted_sweep(s):
    from ci_tools import names
    from ci_tools.prbot.approval import decide as approval

    pr_with_sweep(s.fake, 3, fork="someone/bench")
    run = s.fake.add_run(13, head_sha=MERGE, branch="main", event="workflow_dispatch",
                         path=f".github/workflows/{names.TRUSTED_WORKFLOW}", display_title=approval.run_name(3, SHA1))
    job = card_job(s, run)
    assert ok(job.run("card")).outputs["comment"] == "create"
    return [job]


def gate_refuses_a_superseded_rerun(s):
    """#23.4: a re-run reads the PR once (its head moved on since the run's payload)."""
    pr_with_sweep(s.fake, 7, head=SHA2)
    d = pr_payload(s.fake, 7, "synchronize")
    d["pull_request"]["head"] = {**d["pull_request"]["head"], "sha": SHA1}
    job = s.job("run-sweep.yml", "gate", "pull_request", d, run_attempt=2)
    step = job.run("gate")
    assert step.done.returncode == 1 and "superseded" in step.outputs["reason"]
    return [job]


def reuse_on_a_push_after_use(s):
    pr_with_sweep(s.fake, 7)
    s.fake.add_run(9, head_sha=SHA1, pull_requests=(7,))
    answered_use(s.fake, 7)
    s.fake.compares[(SHA2, SHA1)] = ("ahead", ["README.md"])
    job = s.job("sweep-pipeline.yml", "plan", "pull_request", pr_payload(s.fake, 7, "synchronize", before=SHA2, after=SHA1))
    assert ok(job.run("reuse")).outputs["skip-pr-sweep"] == "true"
    return [job]


def reuse_at_merge(s):
    pr_with_sweep(s.fake, 7)
    s.fake.add_run(9, head_sha=SHA1, pull_requests=(7,))
    answered_use(s.fake, 7)
    merged(s.fake)
    job = s.job("sweep-pipeline.yml", "plan", "push", push_to_main())
    out = ok(job.run("reuse")).outputs
    assert out["reuse-enabled"] == "true" and out["reuse-source-run-id"] == "9"
    assert not gh_expr.job_runs(job.step("plan").get("if"), job.context(), gh_expr.Status())   # reused: no sweep
    return [job]


def reuse_refused_at_merge_lets_main_sweep(s):
    """Issue 23: a pin refused at merge (policy `on-refused-reuse: sweep`) passes the reuse step and the
    plan step's `if:` is then true: main plans and runs its own sweep instead of publishing nothing."""
    pr_with_sweep(s.fake, 7, labels=(FULL, "evals-only"))
    s.fake.add_run(9, head_sha=SHA1, pull_requests=(7,))
    answered_use(s.fake, 7)
    merged(s.fake)
    job = s.job("sweep-pipeline.yml", "plan", "push", push_to_main())
    out = ok(job.run("reuse")).outputs
    assert (out["reuse-refused"], out["reuse-enabled"]) == ("true", "false")
    assert gh_expr.job_runs(job.step("plan").get("if"), job.context(), gh_expr.Status())
    return [job]


def welcome_on_open(s):
    pr_with_sweep(s.fake, 1)
    job = s.job("welcome.yml", "welcome", "pull_request_target", pr_payload(s.fake, 1, "opened"))
    assert ok(job.run(2)).outputs["comment"] == "create"
    return [job]


def runner_digest(s):
    s.fake.add_runner("gb300-1", labels=("self-hosted", "cluster:gb300-nv"))
    job = s.job("runner-digest.yml", "digest", "schedule", {"schedule": "13 14 * * *"},
                secrets={"RUNNERS_TOKEN": s.app_token("runners", administration="read")})
    ok(job.run("digest"))
    return [job]


def profile_authorize(s):
    """profile.yml's GitHub-hosted check: a maintainer who dispatched the run passes, a reader who
    re-ran it is refused before the rows are listed and a GPU runner is held."""
    s.fake.permissions.update(lead="maintain", visitor="read")
    payload = dict(rt.webhook("workflow_dispatch", "payload.json"), ref="refs/heads/main",
                   workflow=".github/workflows/profile.yml")
    inputs = {"config-key": "dsv41flash-fp4-b300-sglang", "conc": "64"}
    lead = s.job("profile.yml", "authorize", "workflow_dispatch", payload, inputs=inputs, actor="lead")
    assert "lead may request profiling (maintain permission)" in ok(lead.run("authorize")).done.stdout
    visitor = s.job("profile.yml", "authorize", "workflow_dispatch", payload, inputs=inputs, actor="visitor")
    refused = visitor.run("authorize")
    assert refused.done.returncode == 1 and "Traceback" not in refused.done.stderr
    assert "visitor may not request profiling: visitor has read permission" in refused.done.stderr
    return [lead, visitor]


def ready_job(s, event_name: str, payload: dict, **kw) -> tuple[rt.JobRun, rt.JobRun]:
    """merge-ready.yml's ready job after its `pr` job resolved the PR and group (the ready job's needs)."""
    which = s.job("merge-ready.yml", "pr", event_name, payload, **kw)
    outputs = ok(which.run("pr")).outputs
    job = s.job("merge-ready.yml", "ready", event_name, payload, needs={"pr": {"outputs": outputs, "result": "success"}},
                **kw)
    assert job.would_run() and gh_expr.interpolate(job.job["concurrency"]["group"], job.context()) == outputs["group"]
    return which, job


def merge_ready_on_a_push_to_the_pr(s: Scenario):
    """Issue 23: the readiness check run (checks: write) and the card line (a comment), from the pin's run,
    its artifacts (actions: read) and the PR's files (pull-requests)."""
    pr_with_sweep(s.fake, 7)
    s.fake.pr_files[7] = ["inferencex-e2e/perf-changelog.yaml"]
    s.fake.add_run(9, head_sha=SHA1, pull_requests=(7,))
    answered_use(s.fake, 7)
    which, job = ready_job(s, "pull_request_target", pr_payload(s.fake, 7, "synchronize"))
    out = ok(job.run("ready")).outputs
    assert out["state"] == "success" and [c["name"] for c in s.fake.check_runs] == ["ci-tools / ready to merge"]
    return [job]


def merge_ready_pr_of_a_push_and_a_sweep_end(s: Scenario):
    """The pr job's reads: a push's merged PR, a trusted sweep's run name."""
    from ci_tools.prbot.approval import decide as approval

    pr_with_sweep(s.fake, 7)
    merged(s.fake)
    push = s.job("merge-ready.yml", "pr", "push", push_to_main())
    assert ok(push.run("pr")).outputs["group"] == "merge-ready-pr-7"
    run = s.fake.add_run(13, head_sha=MERGE, branch="main", event="workflow_dispatch",
                         path=".github/workflows/trusted-sweep.yml", display_title=approval.run_name(7, SHA1))
    trusted = s.job("merge-ready.yml", "pr", "workflow_run", run_payload(s.fake, run))
    assert ok(trusted.run("pr")).outputs["group"] == "merge-ready-pr-7"
    return [push, trusted]


def merge_ready_pr_of_a_fork_sweep_end(s: Scenario):
    """A fork PR's own run lists no pull_requests: the commit's open PR (pull-requests: read)."""
    pr_with_sweep(s.fake, 8, head=SHA2, fork="someone/bench")
    s.fake.commit_pulls[SHA2] = [8]
    run = s.fake.add_run(14, head_sha=SHA2, branch="feature", head_repo="someone/bench")
    job = s.job("merge-ready.yml", "pr", "workflow_run", run_payload(s.fake, run))
    assert ok(job.run("pr")).outputs["group"] == "merge-ready-pr-8"
    return [job]


def merge_ready_after_the_merge(s: Scenario):
    pr_with_sweep(s.fake, 7, labels=(FULL, "evals-only"))
    s.fake.add_run(9, head_sha=SHA1, pull_requests=(7,))
    answered_use(s.fake, 7)
    merged(s.fake)
    _, job = ready_job(s, "push", push_to_main())
    ok(job.run("ready"))
    assert any("reuse was refused" in c["body"] for c in s.fake.bot_comments(7))
    return [job]


def merge_group_payload(pr: int = 7, head: str = "f" * 40) -> dict:
    """GitHub's example merge_group payload (checks_requested), its queue branch naming PR `pr` at SHA1."""
    d = json.loads(MERGE_GROUP_PAYLOAD.read_text())
    d["merge_group"].update(head_sha=head, head_ref=f"refs/heads/gh-readonly-queue/main/pr-{pr}-{SHA1}")
    return d


def merge_ready_of_a_merge_group(s: Scenario):
    """A merge queue's group: the PR's readiness, on the group's commit too (checks: write)."""
    pr_with_sweep(s.fake, 7)
    s.fake.pr_files[7] = ["README.md"]
    _, job = ready_job(s, "merge_group", merge_group_payload())
    ok(job.run("ready"))
    assert {c["_sha"] for c in s.fake.check_runs} == {SHA1, "f" * 40}
    return [job]


def signoff_of_a_merge_group(s: Scenario):
    """The PR head's sign-off check (read on the PR's head, written on the group's commit: checks: write)."""
    pr_with_sweep(s.fake, 7)
    job = s.job("signoff-verify.yml", "merge-group", "merge_group", merge_group_payload())
    ok(job.run("queue"))
    assert signoff_check(s)["_sha"] == "f" * 40 and signoff_check(s)["conclusion"] == "failure"
    return [job]


def merge_ready_daily_pass(s: Scenario):
    """The schedule lists the open PRs (pull-requests: read) and checks each."""
    pr_with_sweep(s.fake, 7)
    s.fake.pr_files[7] = ["inferencex-e2e/perf-changelog.yaml"]
    _, job = ready_job(s, "schedule", {"schedule": "17 6 * * *"})
    out = ok(job.run("ready")).outputs
    assert out["ready"] == "false" and [c["conclusion"] for c in s.fake.check_runs] == ["failure"]
    return [job]


def recover_checks_before_dispatching(s: Scenario):
    """The dry run makes every read the real one does; the merge commit is not in this checkout, so the
    inputs check fails and nothing is sent (the end-to-end dispatch: tests/github/test_gh_merge_ready.py)."""
    pr_with_sweep(s.fake, 7)
    s.fake.permissions["lead"] = "maintain"
    s.fake.add_run(9, head_sha=SHA1, pull_requests=(7,))
    s.fake.add_run(50, head_sha=MERGE, branch="main", event="push")
    merged(s.fake)
    payload = dict(rt.webhook("workflow_dispatch", "payload.json"), ref="refs/heads/main",
                   inputs={"merge-commit": MERGE, "run-id": "9", "dry-run": True})
    job = s.job("recover-ingest.yml", "recover", "workflow_dispatch", payload,
                inputs={"merge-commit": MERGE, "run-id": "9", "dry-run": True},
                secrets={"RESULTS_DISPATCH_TOKEN": s.app_token("results", contents="write")}, actor="lead")
    step = job.run("recover")
    said = step.done.stdout + step.done.stderr
    assert not step.ok and "[pass] requested by" in said and "[pass] run" in said and "[FAIL] inputs" in said, said
    assert s.fake.dispatches == [] and "Traceback" not in step.done.stderr
    return [job]


# Each scenario: (workflow, job, function(s: Scenario) -> list of JobRuns it ran). One list per job.
def results_app_ingests_this_run(s: Scenario):
    """#16.4: `GET commits/{sha}/pulls` needs pull-requests: read, which the job must grant."""
    pr_with_sweep(s.fake)
    merged(s.fake)
    s.fake.add_run(4242, head_sha=MERGE, branch="main", event="push", artifacts=("results_bmk", "changelog-metadata"))
    job = s.job("sweep-pipeline.yml", "results-app", "push", push_to_main(),
                secrets={"RESULTS_DISPATCH_TOKEN": s.app_token("results", contents="write", actions="read")},
                needs={"plan": {"outputs": {"reuse-source-run-id": ""}}, "stages": {"result": "success", "outputs": {"collect-result": "success"}}})
    step = ok(job.run("dispatch"))
    assert step.outputs["dispatched"] == "true" and s.fake.dispatches[0]["client_payload"]["pr-number"] == "7"
    return [job]


def results_app_ingests_the_reused_run(s: Scenario):
    pr_with_sweep(s.fake)
    merged(s.fake)
    s.fake.add_run(9, head_sha=SHA1, pull_requests=(7,))
    job = s.job("sweep-pipeline.yml", "results-app", "push", push_to_main(),
                secrets={"RESULTS_DISPATCH_TOKEN": s.app_token("results", contents="write", actions="read")},
                needs={"plan": {"outputs": {"reuse-source-run-id": "9"}}, "stages": {"result": "success", "outputs": {"collect-result": "success"}}})
    assert ok(job.run("dispatch")).outputs["ingest-run-id"] == "9"
    return [job]


def trusted_sweep_checks_the_approval(s: Scenario):
    """#16.1: the check step runs under workflow_dispatch (whose payload ci-tools does not parse)."""
    pr = pr_with_sweep(s.fake, 3, fork="someone/bench")
    pr["base"]["sha"] = SHA2
    comment = s.fake.add_comment(3, f"/sweep approve {SHA1}", author="maint")["id"]
    payload = dict(rt.webhook("workflow_dispatch", "payload.json"), inputs={"pr": "3", "sha": SHA1, "comment": str(comment)},
                   ref="refs/heads/main")
    job = s.job("trusted-sweep.yml", "plan", "workflow_dispatch", payload, inputs={"pr": 3, "sha": SHA1, "comment": comment})
    step = ok(job.run("check"))
    assert step.outputs["proceed"] == "true" and step.outputs["base-sha"] == SHA2
    return [job]


def collect_compares_with_main(s: Scenario):
    """The collect job's comparison reads main's latest sweeps' results_bmk with the job token."""
    import json

    point = {"name": "tp2-c64", "config-key": "k", "tp": 2, "ep": 1, "dp-attn": False, "conc": 64}
    result = lambda tok: {"valid": True, "point": point, "headline": {"tok_s_gpu": tok, "intvty_p90": 100.0}}  # noqa: E731
    s.fake.add_run(500, head_sha=MERGE, branch="main", event="push", artifacts=())
    s.fake.add_artifact_files(500, "results_bmk", {"results/results.json": json.dumps({"results": [result(1000.0)]}).encode()})
    work = s.tmp / "workspace"
    (work / "results").mkdir(parents=True)
    (work / "results" / "results.json").write_text(json.dumps({"results": [result(1300.0)]}))
    # what download-artifact put there: a job's directory with its nvidia-smi samples (a real H200's)
    job_dir = work / "artifacts" / "job_tp2-c64"
    job_dir.mkdir(parents=True)
    (job_dir / "job.json").write_text(json.dumps({"point": point}))
    # results process wrote the job's result.json beside its samples: the report matches them by it
    (job_dir / "result.json").write_text(json.dumps(result(1300.0)))
    (job_dir / "gpu_telemetry.csv").write_text((NVIDIA_SMI_H200 / "telemetry-load.csv").read_text())
    pr_with_sweep(s.fake, 1)
    job = s.job("sweep-stages.yml", "collect", "pull_request", pr_payload(s.fake, 1, "synchronize"), cwd=work,
                inputs={"sweep": True, "points": "0"})
    step = ok(job.run(4))
    assert "| tp2-c64 |" in step.summary and "improved" in step.summary
    assert (work / "results" / "compare.png").is_file()
    step = ok(job.run("report"))
    page = (work / "report" / "sweep-report.html").read_text()
    assert "1 point: 1 improved" in step.summary and "<script src" not in page
    assert 'data-job="tp2-c64"' in page and "sw power cap" in page
    return [job]


def report_pages_of_a_pr_sweep(s: Scenario):
    """A finished PR sweep's report goes to the Pages branch (a local bare repository stands in for
    github.com's git server); with the variable unset nothing is downloaded or pushed. The pages of a
    PR that closed since are pruned (the job lists the open PRs: pull-requests: read)."""
    import subprocess

    server = s.tmp / "git-server"
    bare = server / REPO_NAME
    bare = bare.with_name(bare.name + ".git")
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)

    def publish(pr: int, run_id: int):
        run = s.fake.add_run(run_id, head_sha=SHA1, pull_requests=(pr,))
        decide = s.job("report-pages.yml", "decide", "workflow_run", run_payload(s.fake, run),
                       vars={"CI_TOOLS_REPORT_PAGES": "true"})
        decided = ok(decide.run("decide")).outputs
        assert decided["publish"] == "true"
        job = s.job("report-pages.yml", "publish", "workflow_run", run_payload(s.fake, run),
                    vars={"CI_TOOLS_REPORT_PAGES": "true"}, extra_env={"GITHUB_SERVER_URL": str(server)},
                    needs={"decide": {"outputs": decided, "result": "success"}})
        (job.tmp / "report").mkdir()                                  # what download-artifact leaves
        (job.tmp / "report" / "sweep-report.html").write_text("<!DOCTYPE html><title>Sweep report</title>")
        step = ok(job.run("publish"))
        assert step.outputs["published"] == "true" and step.outputs["path"] == f"pr-{pr}/run-{run_id}"
        # the deployment's address: Pages' own for the repository, this PR's run
        owner, name = s.fake.repo.split("/")
        assert step.outputs["url"] == f"https://{owner.lower()}.github.io/{name}/pr-{pr}/run-{run_id}/"
        listed = subprocess.run(["git", "--git-dir", str(bare), "ls-tree", "-r", "--name-only", "gh-pages"],
                                check=True, capture_output=True, text=True).stdout.split()
        return job, listed

    pr_with_sweep(s.fake, 1)
    pr_with_sweep(s.fake, 2)
    off = s.job("report-pages.yml", "decide", "workflow_run", run_payload(s.fake, s.fake.add_run(12, head_sha=SHA1,
                                                                                                   pull_requests=(1,))))
    assert ok(off.run("decide")).outputs["publish"] == "false" and "publishing is off" in off.steps["decide"].summary
    first, listed = publish(2, 11)
    assert "pr-2/run-11/index.html" in listed
    s.fake.pulls[2].update(state="closed")
    job, listed = publish(1, 12)
    assert "pr-1/run-12/index.html" in listed and "index.html" in listed
    assert not any(f.startswith("pr-2/") for f in listed), listed        # the closed PR's pages went
    return [off, first, job]


def speedbench_al_update(s: Scenario):
    """The collection's update job: the cells the measure jobs uploaded (one failed: a partial matrix,
    allowed by the input) become the references file on a branch and a PR (contents: write for the ref
    and the commit, pull-requests: write for the PR, actions: read for this run)."""
    import shutil

    root = s.tmp / "checkout"
    for d in ("inferencex-e2e", "recipes"):
        shutil.copytree(REPO / d, root / d)
    refs = (root / "inferencex-e2e" / "acceptance-lengths.yaml").read_text()
    s.fake.add_branch("main", SHA1, {"inferencex-e2e/acceptance-lengths.yaml": refs})
    s.fake.add_run(4242, head_sha=SHA1, branch="main", event="workflow_dispatch",
                   path=".github/workflows/speedbench-al.yml", artifacts=(), plan_labels=None)
    cells = ["dsv41flash-sglang-nextn3-thinking-on", "deepseek-v4.1-flash-sglang-mtp2-thinking-on"]
    inputs = {"thinking": "on", "dry-run": False, "open-pr": True, "allow-partial": True}
    payload = dict(rt.webhook("workflow_dispatch", "payload.json"), ref="refs/heads/main", inputs=inputs,
                   workflow=".github/workflows/speedbench-al.yml")
    job = s.job("speedbench-al.yml", "update", "workflow_dispatch", payload, inputs=inputs, cwd=root,
                needs={"matrix": {"outputs": {"matrix": json.dumps([{"id": c} for c in cells]), "count": "2"},
                                  "result": "success"},
                       "measure": {"result": "failure"}})
    cell = job.tmp / "cells" / f"acceptance_{cells[0]}"                     # what download-artifact leaves
    cell.mkdir(parents=True)
    (cell / "acceptance.json").write_text(json.dumps({
        "acceptance-version": 1, "id": cells[0], "model": "deepseek-ai/DeepSeek-V4.1-Flash", "engine": "sglang",
        "engine-version": "nightly-dev-cu13-20261012-e6072935", "dataset": "speed-bench-qualitative-coding",
        "thinking": True, "mtp": 3, "acceptance-length": 3.4, "source": "sglang /server_info",
        "run": f"https://github.com/{REPO_NAME}/actions/runs/4242"}))
    ok(job.run(3))                                                          # the matrix file
    out = ok(job.run("update")).outputs
    assert out["changed"] == "1" and out["missing"] == "1" and out["pr-url"].endswith("/pull/1")
    assert "3.4" in s.fake.files[("acceptance-lengths/run-4242", "inferencex-e2e/acceptance-lengths.yaml")]
    return [job]


SCENARIOS = {
    ("speedbench-al.yml", "update"): [speedbench_al_update],
    ("comment-commands.yml", "handle"): [comment_use_pins_a_run, comment_stage_results, comment_sweep_approve_on_a_fork,
                                         comment_sweep_plan],
    ("comment-commands.yml", "stage-dispatch"): [stage_dispatch_sends_the_decided_payload],
    ("run-sweep.yml", "gate"): [gate_refuses_a_superseded_rerun],
    ("runner-digest.yml", "digest"): [runner_digest],
    ("profile.yml", "authorize"): [profile_authorize],
    ("report-pages.yml", "publish"): [report_pages_of_a_pr_sweep],
    ("report-pages.yml", "decide"): [report_pages_of_a_pr_sweep],
    ("signoff-verify.yml", "verify"): [signoff_comment, signoff_with_a_minted_app_token],
    ("signoff-verify.yml", "after-push"): [signoff_carried_after_push],
    ("signoff-review.yml", "record"): [review_record_only],
    ("signoff-review-verify.yml", "verify"): [review_signoff_two_phases, lambda s: review_signoff_two_phases(s, None)],
    ("staging-callback.yml", "callback"): [staging_callback],
    ("status-card.yml", "card"): [status_card_of_a_pr_sweep, status_card_with_the_runs_plan,
                                  status_card_of_a_trusted_sweep],
    ("sweep-pipeline.yml", "plan"): [reuse_on_a_push_after_use, reuse_at_merge, reuse_refused_at_merge_lets_main_sweep],
    ("sweep-stages.yml", "collect"): [collect_compares_with_main],
    ("sweep-pipeline.yml", "results-app"): [results_app_ingests_this_run, results_app_ingests_the_reused_run],
    ("trusted-sweep.yml", "plan"): [trusted_sweep_checks_the_approval],
    ("welcome.yml", "welcome"): [welcome_on_open],
    ("merge-ready.yml", "ready"): [merge_ready_on_a_push_to_the_pr, merge_ready_after_the_merge,
                                   merge_ready_daily_pass, merge_ready_of_a_merge_group],
    ("signoff-verify.yml", "merge-group"): [signoff_of_a_merge_group],
    ("merge-ready.yml", "pr"): [merge_ready_pr_of_a_push_and_a_sweep_end, merge_ready_pr_of_a_fork_sweep_end],
    ("recover-ingest.yml", "recover"): [recover_checks_before_dispatching],
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


_RAN: dict[Callable, tuple[Scenario, list]] = {}


def ran(scenario: Callable[[Scenario], list], shared: Path, tmp: pytest.TempPathFactory) -> tuple[Scenario, list]:
    """A scenario run once per test process, with the jobs it returned. Two jobs' tests that share a
    scenario (report-pages.yml's decide and publish; the review's record and verify: a `Part`) each
    count their own calls of that one run: running it again would make the same requests with the
    same answers. A scenario that fails is not kept: the next test that needs it runs it again."""
    if scenario not in _RAN:
        with Scenario(shared, tmp.mktemp("scenario")) as s:
            jobs = scenario(s)
        _RAN[scenario] = (s, jobs)
    return _RAN[scenario]


@pytest.mark.parametrize("wf_name,job_id", sorted(SCENARIOS), ids=lambda v: v)
def test_job(shared, tmp_path_factory, wf_name, job_id):
    wf = rt.workflow(wf_name)
    granted = rt.job_permissions(wf, job_id)
    calls: list[tuple] = []
    for scenario in SCENARIOS[(wf_name, job_id)]:
        if isinstance(scenario, Part):
            s, _ = ran(scenario.of, shared, tmp_path_factory)
            jobs = scenario.jobs(s)
        else:
            s, jobs = ran(scenario, shared, tmp_path_factory)
        tokens = {j.token for j in jobs}
        assert not [r for r in s.fake.refused if r[0] in tokens], "called without the permission"
        calls += [needs for token, _, needs in s.fake.authorised if token in tokens]
        assert not s.fake.schema_errors, s.fake.schema_errors
    steps_need = set().union(*(action_needs(st) | shell_needs(st) for st in wf.jobs[job_id]["steps"]))
    assert unused_scopes(granted, calls, steps_need) == [], f"{wf_name}: {job_id}: granted and never needed"


# ---- jobs without GitHub calls of ci-tools, and callers of reusable workflows ---------------------

# The variables ci-tools reads a GitHub token from (HF_TOKEN, say, is not one).
GITHUB_TOKEN_VARS = ("GITHUB_TOKEN", "GH_TOKEN", "RESULTS_DISPATCH_TOKEN", "TEAM_MEMBERSHIP_TOKEN", "RUNNERS_TOKEN")


def token_env(step: dict) -> list[str]:
    """The env vars through which a step receives a GitHub token."""
    return [k for k, v in (step.get("env") or {}).items() if k in GITHUB_TOKEN_VARS or "github.token" in str(v)]


def all_jobs():
    return [(wf, job_id) for wf in wc.load_workflows(WORKFLOWS) for job_id in wf.jobs]


def test_every_token_holding_ci_tools_step_is_run_here():
    """A ci-tools step that is given a token can call GitHub, so its job must have scenarios above;
    every other job's scopes are checked against its `uses:` and `gh` steps alone (below)."""
    missing = []
    for wf, job_id in all_jobs():
        for i, step in enumerate(wf.jobs[job_id].get("steps") or []):
            if "ci-tools " in step.get("run", "") and token_env(step) and (wf.name, job_id) not in SCENARIOS:
                missing.append(f"{wf.name}: {job_id}: step {step.get('id') or i}")
    assert missing == []


@pytest.mark.parametrize("wf_name,job_id", sorted((wf.name, j) for wf, j in all_jobs()
                                                  if (wf.name, j) not in SCENARIOS
                                                  and "uses" not in wf.jobs[j]))
def test_jobs_without_api_steps_grant_only_what_their_actions_need(wf_name, job_id):
    wf = rt.workflow(wf_name)
    steps = wf.jobs[job_id].get("steps") or []
    steps_need = set().union(*(action_needs(st) | shell_needs(st) for st in steps))
    assert unused_scopes(rt.job_permissions(wf, job_id), [], steps_need) == [], f"{wf_name}: {job_id}"
    granted = rt.job_permissions(wf, job_id)
    assert all(satisfied(((p, a),), granted) for p, a in steps_need), f"{wf_name}: {job_id} lacks {steps_need}"


@pytest.mark.parametrize("wf_name,job_id", sorted((wf.name, j) for wf, j in all_jobs() if "uses" in wf.jobs[j]))
def test_a_reusable_workflow_caller_grants_exactly_what_the_called_jobs_ask(wf_name, job_id):
    """A caller's `permissions:` cap the called workflow's jobs: no less than their union (they would
    fail), no more (unused scopes, e.g. writes nobody below makes)."""
    wf = rt.workflow(wf_name)
    called = rt.workflow(wf.jobs[job_id]["uses"].rsplit("/", 1)[-1])
    union: dict[str, str] = {}
    for j in called.jobs:
        for scope, level in rt.job_permissions(called, j).items():
            union[scope] = max(union.get(scope, "none"), level, key=LEVELS.__getitem__)
    assert rt.job_permissions(wf, job_id) == union


def test_no_job_a_fork_review_starts_is_expected_to_write():
    """#16.5: a fork PR's pull_request_review run gets a read-only token and no secrets, so a job it
    starts may not be the one posting verdicts: it only records (signoff-review.yml), and the
    workflow_run of the default branch verifies and writes (signoff-review-verify.yml)."""
    writers = []
    for wf in wc.load_workflows(WORKFLOWS):
        if "pull_request_review" not in wf.on:
            continue
        for job_id, job in wf.jobs.items():
            for step in job.get("steps") or []:
                if "ci-tools " in step.get("run", "") and token_env(step):
                    writers.append(f"{wf.name}: {job_id}")
    assert writers == []


def test_the_two_review_phases_name_each_other_as_paths_py_says():
    from ci_tools import names

    record, verify = rt.workflow(names.REVIEW_RECORD_WORKFLOW), rt.workflow(names.REVIEW_VERIFY_WORKFLOW)
    assert set(record.on) == {"pull_request_review"} and set(verify.on) == {"workflow_run"}
    assert verify.on["workflow_run"]["workflows"] == [record.data["name"]]
    [upload] = [s for s in record.jobs["record"]["steps"] if s.get("uses", "").startswith("actions/upload-artifact@")]
    [download] = [s for s in verify.jobs["verify"]["steps"] if s.get("uses", "").startswith("actions/download-artifact@")]
    assert upload["with"]["name"] == download["with"]["name"] == names.REVIEW_ARTIFACT
    assert download["with"]["run-id"] == "${{ github.event.workflow_run.id }}"
    assert f'/review/{names.REVIEW_FILE}"' in verify.jobs["verify"]["steps"][-1]["run"]


def test_the_results_dispatch_token_reaches_only_the_steps_that_dispatch():
    """Issue #15: every comment used to run with RESULTS_DISPATCH_TOKEN in its environment. Now only the
    two steps that send a repository_dispatch receive it (a workflow or job `env:` would hand it to
    every step, so neither may name it), and each runs in a job of its own."""
    holders, wide = [], []
    for wf in wc.load_workflows(WORKFLOWS):
        if "RESULTS_DISPATCH_TOKEN" in str(wf.data.get("env") or {}):
            wide.append(f"{wf.name}: env")
        for job_id, job in wf.jobs.items():
            if "RESULTS_DISPATCH_TOKEN" in str(job.get("env") or {}):
                wide.append(f"{wf.name}: {job_id}: env")
            for step in job.get("steps") or []:
                if "RESULTS_DISPATCH_TOKEN" in str(step.get("env") or {}) or "RESULTS_DISPATCH_TOKEN" in str(step.get("with") or {}):
                    holders.append((wf.name, job_id, step.get("id")))
                    assert len(job["steps"]) <= 3, f"{wf.name}: {job_id}: a dispatch job is checkout, setup, dispatch"
    assert wide == []
    assert sorted(holders) == [("comment-commands.yml", "stage-dispatch", "dispatch"),
                               ("recover-ingest.yml", "recover", "recover"),
                               ("sweep-pipeline.yml", "results-app", "dispatch")]
