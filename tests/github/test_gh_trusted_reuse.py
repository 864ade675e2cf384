"""W18 over real HTTP: a fork PR's trusted sweep (`/sweep approve` -> trusted-sweep.yml, a
workflow_dispatch run named for the PR and SHA) can be pinned, reused at merge, staged and shown on the
status card; same-repo PRs pay nothing for it."""

from __future__ import annotations

from ci_tools import names
from ci_tools.github.events import Event, WorkflowRun
from ci_tools.prbot.flow import handle_comment
from ci_tools.prbot.reuse.flow import resolve_reuse
from ci_tools.prbot.card.flow import status_card
from ci_tools.prbot.approval import decide as approval
from gh_scenarios import FULL, SHA1, SHA2, SHA3, authorise, comment_event, lazy, merge, pr_with_sweep, push_event, refused, \
    settings
from test_gh_commands import comment_jobs

FORK = "contributor/bench"
TRUSTED = f".github/workflows/{names.TRUSTED_WORKFLOW}"
MAIN_SHA = "9" * 40     # the default-branch commit a trusted sweep's workflow runs from


def trusted_run(fake, run_id, *, pr=1321, sha=SHA1, **kw):
    kw.setdefault("artifacts", ("results_bmk", "evals_passed", "changelog-metadata"))
    return fake.add_run(run_id, head_sha=MAIN_SHA, branch="main", event="workflow_dispatch", path=TRUSTED,
                        display_title=approval.run_name(pr, sha), name="trusted-sweep", **kw)


def fork_pr(fake, number=1321, commits=(SHA1,), **kw):
    return pr_with_sweep(fake, number, commits=commits, fork=FORK, head_ref="patch-1", **kw)


def merged(fake, command="/use", number=1321):
    authorise(fake, number, command)
    merge(fake, number)
    gh = lazy(fake)
    return resolve_reuse(push_event(fake), settings(), gh), gh


def test_pinned_trusted_run_is_reused_at_merge(fake):
    fork_pr(fake, commits=(SHA1, SHA2))
    trusted_run(fake, 41, sha=SHA1, conclusion="failure")     # pinned: a failed sweep's results may be reused
    fake.compares[(SHA1, SHA2)] = ("ahead", ["README.md"])
    res, _ = merged(fake, "/use 41")
    out = res.outputs
    assert res.exit_code == 0, out["reuse-reason"]
    assert (out["reuse-enabled"], out["reuse-source-run-id"], out["reuse-source-head-sha"]) == ("true", "41", SHA1)
    assert out["reuse-source-pr-number"] == "1321" and "pinned run 41" in out["reuse-reason"]
    assert not any("/workflows/" in r for r in fake.requests)      # pinned: fetched by id, nothing listed


def test_unpinned_fork_merge_reuses_the_newest_successful_trusted_sweep(fake):
    fork_pr(fake, commits=(SHA1, SHA2))
    fake.add_run(30, head_sha=SHA2, branch="patch-1", artifacts=("run-stats",))  # the fork's own PR run: no GPU
    trusted_run(fake, 31, sha=SHA1)
    trusted_run(fake, 32, sha=SHA2)
    trusted_run(fake, 33, sha=SHA2, conclusion="failure")
    trusted_run(fake, 34, pr=1400, sha=SHA3)                   # another PR's sweep, newest of all
    res, _ = merged(fake)
    assert res.exit_code == 0, res.outputs["reuse-reason"]
    assert (res.outputs["reuse-source-run-id"], res.outputs["reuse-source-head-sha"]) == ("32", SHA2)
    listed = [r for r in fake.requests if "/actions/workflows/" in r]
    assert any(names.TRUSTED_WORKFLOW in r and "branch=main" in r and "event=workflow_dispatch" in r
               for r in listed), listed
    assert not any("/runs/34/" in r or "/runs/33/" in r for r in fake.requests)   # 33 fails cheaply, 34 unexamined


def test_trusted_run_of_another_pr_is_refused_naming_it(fake):
    fork_pr(fake)
    trusted_run(fake, 41, pr=1400, sha=SHA1)
    res, _ = merged(fake, "/use 41")
    assert refused(res) and res.outputs["reuse-enabled"] == "false"
    assert ("run 41 cannot be used for reuse, because it is a trusted sweep of PR #1400 (commit "
            f"{SHA1[:12]}), not of PR #1321") in res.outputs["reuse-reason"]


def test_trusted_run_of_a_sha_outside_the_pr_is_refused(fake):
    fork_pr(fake)
    trusted_run(fake, 41, sha=SHA3)
    res, _ = merged(fake, "/use 41")
    assert refused(res)
    assert f"its head commit {SHA3[:12]} is not one of PR #1321's commits" in res.outputs["reuse-reason"]


def test_trusted_run_created_before_the_full_sweep_label_is_refused(fake):
    fork_pr(fake, labels=())
    trusted_run(fake, 41, sha=SHA1)
    fake.label(1321, FULL)
    res, _ = merged(fake, "/use 41")
    assert refused(res) and "not created while a full-sweep label" in res.outputs["reuse-reason"]


def api_requests(fake):
    return [r for r in fake.requests if not r.startswith("GET /_blob/")]


def test_same_repo_budget_is_unchanged_by_trusted_runs(fake):
    pr_with_sweep(fake, 1321, filler=150)
    fake.add_run(1, head_sha=SHA1)
    trusted_run(fake, 2, sha=SHA1)                             # a (hand-dispatched) trusted run is not looked for
    fake.add_comment(1321, '<!-- ci-tools:status-card -->\n<!-- ci-tools:state {"writers":{"maint":"write"}} -->',
                     author=fake.bot, association="NONE", type_="Bot")
    res, gh = merged(fake)
    assert res.outputs["reuse-source-run-id"] == "1"
    # incl. the permission, re-checked, and the PR's comment count the timeline is checked against (#15),
    # and the run's recorded plan (#25; its zip's storage on another host is not an API request)
    assert len(api_requests(fake)) == gh.calls == 8, fake.requests
    assert not any(names.TRUSTED_WORKFLOW in r for r in fake.requests)


def test_fork_budget_is_one_listing_more(fake):
    fork_pr(fake, filler=150)
    trusted_run(fake, 2, sha=SHA1)
    fake.add_comment(1321, '<!-- ci-tools:status-card -->\n<!-- ci-tools:state {"writers":{"maint":"write"}} -->',
                     author=fake.bot, association="NONE", type_="Bot")
    res, gh = merged(fake)
    assert res.outputs["reuse-source-run-id"] == "2"
    assert len(api_requests(fake)) == gh.calls == 9, fake.requests


def test_use_on_a_fork_pr_reports_the_trusted_run_it_would_reuse(fake):
    fork_pr(fake)
    trusted_run(fake, 41, sha=SHA1)
    c = authorise(fake, 1321, "/use")
    handle_comment(comment_event(fake, 1321, c), settings(), lazy(fake))
    (reply,) = [b["body"] for b in fake.bot_comments(1321) if b["body"].startswith(f"<!-- ci-tools:reply {c['id']}")]
    assert "As of now that is [run 41]" in reply and SHA1[:12] in reply


def test_stage_results_stages_a_fork_prs_trusted_sweep(fake):
    fork_pr(fake)
    trusted_run(fake, 41, sha=SHA1, conclusion="cancelled")
    c = authorise(fake, 1321, "/stage-results")
    res = comment_jobs(fake, comment_event(fake, 1321, c))
    assert res.outputs["stage-run-id"] == "41"
    (d,) = fake.dispatches
    assert d["client_payload"]["run-id"] == "41" and d["client_payload"]["pr-number"] == "1321"


def test_status_card_follows_a_trusted_sweep(fake):
    fork_pr(fake)
    trusted_run(fake, 41, sha=SHA1)
    wr = Event(name="workflow_run", repo=fake.repo, workflow_run=WorkflowRun(
        id=41, event="workflow_dispatch", path=TRUSTED, status="completed", conclusion="success",
        head_sha=MAIN_SHA, html_url=f"https://github.com/{fake.repo}/actions/runs/41"))
    res = status_card(wr, settings(), lazy(fake), pr=None, run=None, plan=None)
    assert res.outputs["comment"] == "create"
    (card,) = [b["body"] for b in fake.bot_comments(1321) if b["body"].startswith("<!-- ci-tools:status-card")]
    assert "41" in card and SHA1[:12] in card and MAIN_SHA[:12] not in card


def test_status_card_ignores_other_dispatches_at_zero_cost(fake):
    gh = lazy(fake)
    wr = Event(name="workflow_run", workflow_run=WorkflowRun(id=5, event="workflow_dispatch",
                                                             path=".github/workflows/runner-digest.yml"))
    assert status_card(wr, settings(), gh, pr=None, run=None, plan=None).outputs["comment"] == "none"
    assert gh.calls == 0
