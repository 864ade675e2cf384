"""merge-ready.yml: one concurrency group per PR. The `pr` job runs `ci-tools reuse ready-pr` on each
event's real payload and the ready job takes its `group`; every event of one PR (a push to it, a `/use`
comment, its sweep's end, its trusted sweep's end, its merge) lands in the same group, so the newest
event decides and no older evaluation can finish last. The old group keyed a sweep's end by its head
SHA and everything else by the PR number."""

from __future__ import annotations

import copy

import pytest

import gh_expr
import gh_runtime as rt
from ci_tools import names
from ci_tools.prbot.approval import decide as approval

SHA1, MAIN = "a" * 40, "e" * 40
PR = 7


@pytest.fixture
def fake(shared):
    with rt.served_fake(shared, "octo/bench") as fake:
        yield fake


def group(fake, tmp, event_name: str, payload: dict) -> str:
    wf = rt.workflow("merge-ready.yml")
    which = rt.JobRun(wf, "pr", fake, event_name, rt.adjust(payload, fake.repo), tmp / f"pr-{len(list(tmp.iterdir()))}")
    step = which.run("pr")
    assert step.ok, step.done.stderr
    ready = rt.JobRun(wf, "ready", fake, event_name, rt.adjust(payload, fake.repo), tmp / f"r-{len(list(tmp.iterdir()))}",
                      needs={"pr": {"outputs": step.outputs, "result": "success"}})
    assert ready.would_run()
    return gh_expr.interpolate(wf.jobs["ready"]["concurrency"]["group"], ready.context())


def run_event(run: dict) -> dict:
    p = copy.deepcopy(rt.webhook("workflow_run", "completed.with-pull-requests.payload.json"))
    p["workflow_run"] = copy.deepcopy(run)
    return p


def test_every_event_of_one_pr_has_one_group(fake, tmp_path):
    fake.add_pr(PR, head_sha=SHA1)
    pr_event = copy.deepcopy(rt.webhook("pull_request", "synchronize.payload.json"))
    pr_event["pull_request"] = copy.deepcopy(fake.pulls[PR])
    pr_event["number"] = PR
    comment = copy.deepcopy(rt.webhook("issue_comment", "created.payload.json"))
    comment["issue"] = {**comment["issue"], "number": PR, "pull_request": {"url": f"{fake.url}/repos/{fake.repo}/pulls/{PR}"}}
    sweep = fake.add_run(12, head_sha=SHA1, pull_requests=(PR,))
    trusted = fake.add_run(13, head_sha=MAIN, branch="main", event="workflow_dispatch",
                           path=f".github/workflows/{names.TRUSTED_WORKFLOW}", display_title=approval.run_name(PR, SHA1))
    fake.pulls[PR].update(merged_at=fake.tick(), merged=True, state="closed")
    fake.commit_pulls[MAIN] = [PR]
    push = dict(rt.webhook("push", "payload.json"), ref="refs/heads/main", before=SHA1, after=MAIN)
    groups = {group(fake, tmp_path, "pull_request_target", pr_event), group(fake, tmp_path, "issue_comment", comment),
              group(fake, tmp_path, "workflow_run", run_event(sweep)),
              group(fake, tmp_path, "workflow_run", run_event(trusted)), group(fake, tmp_path, "push", push)}
    assert groups == {names.READY_GROUP.format(pr=PR)}


def test_the_old_group_split_one_pr_in_two():
    """What the finding was: the group main had, evaluated for a PR event and its sweep's end."""
    old = ("merge-ready-${{ github.event.pull_request.number || github.event.issue.number || inputs.pr || "
           "github.event.workflow_run.head_sha || github.sha }}")
    contexts = [{"github": {"event": {"pull_request": {"number": PR}}, "sha": MAIN}, "inputs": {}},
                {"github": {"event": {"workflow_run": {"head_sha": SHA1, "pull_requests": [{"number": PR}]}},
                            "sha": MAIN}, "inputs": {}}]
    assert len({gh_expr.interpolate(old, c) for c in contexts}) == 2
    assert "needs.pr.outputs.group" in rt.workflow("merge-ready.yml").jobs["ready"]["concurrency"]["group"]
