"""Finding 23.3: the status card's concurrency group is one per PR. status-card.yml's `pr` job runs
`ci-tools bot card-pr` on the real workflow_run payload and the card job takes its `group`; runs of
different PRs (two trusted sweeps dispatched on main, a same-repo PR's run) get different groups, so
GitHub's one-pending-job rule can no longer drop one PR's card update for another PR's run; a push
to main and a fork PR's own run resolve no PR and write no card."""

from __future__ import annotations

import copy

import pytest

import gh_expr
import gh_runtime as rt
from ci_tools import names
from ci_tools.prbot.approval import decide as approval


SHA1, SHA2, MAIN = "a" * 40, "b" * 40, "e" * 40
TRUSTED = f".github/workflows/{names.TRUSTED_WORKFLOW}"


@pytest.fixture
def fake(shared):
    with rt.served_fake(shared, "octo/bench") as fake:
        yield fake
        assert fake.requests == [], "resolving the card's PR needs no API"


def card_group(fake, tmp, run: dict) -> tuple[str, str | None]:
    """(the pr job's `pr` output, the card job's concurrency group as GitHub evaluates it, None when
    the card job is skipped)."""
    payload = copy.deepcopy(rt.webhook("workflow_run", "completed.with-pull-requests.payload.json"))
    payload["workflow_run"] = copy.deepcopy(run)
    wf = rt.workflow("status-card.yml")
    step = rt.JobRun(wf, "pr", fake, "workflow_run", rt.adjust(payload, fake.repo), tmp / str(run["id"])).run("pr")
    assert step.ok, step.done.stderr
    card = rt.JobRun(wf, "card", fake, "workflow_run", rt.adjust(payload, fake.repo), tmp / f"card-{run['id']}",
                     needs={"pr": {"outputs": step.outputs, "result": "success"}})
    if not card.would_run():
        return step.outputs["pr"], None
    return step.outputs["pr"], gh_expr.interpolate(wf.jobs["card"]["concurrency"]["group"], card.context())


def test_each_pr_has_its_own_card_group(fake, tmp_path):
    trusted_3 = fake.add_run(13, head_sha=MAIN, branch="main", event="workflow_dispatch", path=TRUSTED,
                             display_title=approval.run_name(3, SHA1))
    trusted_4 = fake.add_run(14, head_sha=MAIN, branch="main", event="workflow_dispatch", path=TRUSTED,
                             display_title=approval.run_name(4, SHA2))
    same_repo = fake.add_run(15, head_sha=SHA1, branch="feature", pull_requests=(5,))
    rerun_3 = fake.add_run(16, head_sha=MAIN, branch="main", event="workflow_dispatch", path=TRUSTED,
                           display_title=approval.run_name(3, SHA2))
    groups = {r["id"]: card_group(fake, tmp_path, r) for r in (trusted_3, trusted_4, same_repo, rerun_3)}
    assert groups == {13: ("3", "status-card-pr-3"), 14: ("4", "status-card-pr-4"), 15: ("5", "status-card-pr-5"),
                      16: ("3", "status-card-pr-3")}


def test_runs_without_a_pr_write_no_card(fake, tmp_path):
    push = fake.add_run(20, head_sha=MAIN, branch="main", event="push")
    fork_own = fake.add_run(21, head_sha=SHA1, branch="feature", head_repo="someone/bench")   # no pull_requests
    assert card_group(fake, tmp_path, push) == ("", None)
    assert card_group(fake, tmp_path, fork_own) == ("", None)


def test_the_old_branch_group_put_two_prs_trusted_sweeps_in_one_group():
    """What the finding was: the group main had, evaluated for two PRs' trusted sweeps."""
    old = "status-card-${{ github.event.workflow_run.head_branch }}-${{ github.event.workflow_run.head_repository.full_name }}"
    runs = [{"head_branch": "main", "head_repository": {"full_name": "octo/bench"}, "display_title": approval.run_name(n, SHA1)}
            for n in (3, 4)]
    assert len({gh_expr.interpolate(old, {"github": {"event": {"workflow_run": r}}}) for r in runs}) == 1
    current = rt.workflow("status-card.yml").jobs["card"]["concurrency"]["group"]
    assert current != old and "needs.pr.outputs.group" in current
