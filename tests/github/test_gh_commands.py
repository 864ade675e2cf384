"""`comment handle`: replies, authorisation, /stage-results (spec §8 89-91), callbacks, and
re-running under faults without duplicate comments."""

from __future__ import annotations

import pytest

from ci_tools.github.client import GitHubError
from ci_tools.prbot.shell import Lazy
from ci_tools.prbot.flow import handle_comment
from ci_tools.prbot.staging.flow import stage_callback, stage_dispatch
from ci_tools.github.events import Event
from ci_tools.github.client import GitHub
from gh_scenarios import FULL, SHA1, SHA2, authorise, comment_event, lazy, pr_with_sweep, settings


def dispatcher(fake):
    return Lazy(lambda: GitHub(fake.repo, "dispatch-token", api_url=fake.url, seconds_between_writes=0))


def comment_jobs(fake, event, gh=None):
    """comment-commands.yml's two jobs: `comment handle`, then `stage dispatch` (with the results app's
    token, which only that job holds) when the handler decided a staging payload."""
    res = handle_comment(event, settings(), gh or lazy(fake))
    if res.outputs["stage-payload"]:
        sent = stage_dispatch(event, settings(), lazy(fake), dispatcher(fake), res.outputs["stage-payload"])
        assert sent.exit_code == 0 and sent.outputs["dispatched"] == "true", sent.messages
    return res


def handle(fake, event, **kw):
    gh = lazy(fake, **kw)
    return comment_jobs(fake, event, gh), gh


def reply_of(fake, pr, comment_id):
    found = [c for c in fake.bot_comments(pr) if c["body"].startswith(f"<!-- ci-tools:reply {comment_id} -->")]
    assert len(found) <= 1, "duplicate replies"
    return found[0]["body"] if found else None


def test_comments_without_commands_cost_nothing(fake):
    pr_with_sweep(fake, 1)
    c = fake.add_comment(1, "LGTM, but see `/use` docs\n> /use 5")
    res, gh = handle(fake, comment_event(fake, 1, c))
    assert res.outputs["handled"] == "false" and gh.calls == 0


def test_plain_issue_comments_and_bot_comments_cost_nothing(fake):
    pr_with_sweep(fake, 1)
    c = fake.add_comment(1, "/use 5", author=fake.bot, association="NONE", type_="Bot")
    res, gh = handle(fake, comment_event(fake, 1, c))
    assert gh.calls == 0
    ev = comment_event(fake, 1, fake.add_comment(1, "/use"))
    res, gh = handle(fake, Event(**{**ev.__dict__, "is_pull_request": False}))
    assert gh.calls == 0 and res.outputs["handled"] == "false"


@pytest.mark.parametrize("body,expected", [
    ("/use abc", "`/use <run_id>`"),
    ("/stage-results 123 please", "`/stage-results <run_id>`"),      # 89
    ("/sweep", "`/sweep plan`"),
    ("/USE 5", "`/use`"),
    ("/usee 9", "Did you mean `/use`?"),                 # issue 24: near misses got no reply at all
    ("/stage-result 9", "Did you mean `/stage-results`?"),
])
def test_usage_errors_get_the_right_form(fake, body, expected):
    pr_with_sweep(fake, 1)
    c = authorise(fake, 1, body)
    handle(fake, comment_event(fake, 1, c))
    assert expected in reply_of(fake, 1, c["id"])
    assert fake.dispatches == []


def test_use_by_an_authorised_writer_is_acknowledged_and_recorded_on_the_status_card(fake):
    pr_with_sweep(fake, 1)
    fake.add_run(9, head_sha=SHA1)
    c = authorise(fake, 1, "/use 9")
    res, _ = handle(fake, comment_event(fake, 1, c))
    assert res.outputs["reuse-authorised"] == "true"
    assert "run 9 is pinned" in reply_of(fake, 1, c["id"])
    card = [b for b in fake.bot_comments(1) if b["body"].startswith("<!-- ci-tools:status-card -->")]
    assert len(card) == 1 and '"maint":"write"' in card[0]["body"] and "pinned to run 9" in card[0]["body"]


def test_use_of_an_ineligible_run_warns_now_not_at_merge(fake):
    pr_with_sweep(fake, 1)
    fake.add_run(9, head_sha=SHA1, conclusion="failure", artifacts=("run-stats",))
    c = authorise(fake, 1, "/use 9")
    handle(fake, comment_event(fake, 1, c))
    assert "would be refused at merge" in reply_of(fake, 1, c["id"])


@pytest.mark.parametrize("association,permission", [("OWNER", "read"), ("MEMBER", "read"), ("NONE", "none")])
def test_use_denied_says_who_may_and_never_acts(fake, association, permission):
    pr_with_sweep(fake, 1)
    c = authorise(fake, 1, "/use", association=association, permission=permission)
    res, _ = handle(fake, comment_event(fake, 1, c))
    body = reply_of(fake, 1, c["id"])
    assert "was not run" in body and f"has {permission} permission" in body and "write, maintain or admin" in body
    assert res.outputs["reuse-authorised"] == "false"
    assert not [b for b in fake.bot_comments(1) if "status-card" in b["body"]]


def test_permission_is_checked_once_for_the_whole_comment_and_nothing_runs(fake):
    """bors-ng's rule: the permission the comment's commands need is folded over all of them first; an
    author without it gets one denial naming them, and none runs (no plan reply, no card, no dispatch)."""
    pr_with_sweep(fake, 1)
    fake.add_run(9, head_sha=SHA1)
    c = authorise(fake, 1, "/sweep plan\n/use 9\n/stage-results\n/use abc", permission="read")
    res, gh = handle(fake, comment_event(fake, 1, c))
    body = reply_of(fake, 1, c["id"])
    assert body.count("was not run") == 0 and body.count("were not run") == 1
    assert "`/use 9`, `/stage-results` were not run: @maint has read permission" in body
    assert "`/use abc` is not a command I understand" in body            # usage help still comes
    assert "sweep plan" not in body.split("were not run")[1]
    assert res.outputs["reuse-authorised"] == "false" and fake.dispatches == []
    assert not [b for b in fake.bot_comments(1) if "status-card" in b["body"]]
    assert sum("/collaborators/maint/permission" in call for call in gh.client.log.calls) == 1


def test_a_comment_that_needs_no_permission_asks_for_none(fake):
    pr_with_sweep(fake, 1)
    c = fake.add_comment(1, "/sweep plan", author="viewer", association="NONE")
    _, gh = handle(fake, comment_event(fake, 1, c))
    assert "ci-tools plan" in reply_of(fake, 1, c["id"])
    assert not [call for call in gh.client.log.calls if "/permission" in call]


def test_sweep_plan_replies(fake):
    pr_with_sweep(fake, 1)
    c = fake.add_comment(1, "/sweep plan")
    handle(fake, comment_event(fake, 1, c))
    assert "ci-tools plan" in reply_of(fake, 1, c["id"])


# ---- /stage-results -----------------------------------------------------------------------------

def test_89_stage_results_needs_write_permission(fake):
    pr_with_sweep(fake, 1)
    c = authorise(fake, 1, "/stage-results", permission="read")
    handle(fake, comment_event(fake, 1, c))
    assert "needs write, maintain or admin permission" in reply_of(fake, 1, c["id"])
    assert fake.dispatches == []


def test_90_stage_results_needs_a_full_sweep_label(fake):
    pr_with_sweep(fake, 1, labels=("sweep-enabled",))
    fake.add_run(9, head_sha=SHA1)
    c = authorise(fake, 1, "/stage-results")
    handle(fake, comment_event(fake, 1, c))
    assert "full-sweep label" in reply_of(fake, 1, c["id"]) and fake.dispatches == []


def test_90_run_created_before_a_full_label_is_not_stageable(fake):
    pr_with_sweep(fake, 1, labels=())
    fake.add_run(9, head_sha=SHA1)
    fake.label(1, FULL)
    c = authorise(fake, 1, "/stage-results 9")
    handle(fake, comment_event(fake, 1, c))
    assert "not created while a full-sweep label was applied" in reply_of(fake, 1, c["id"])


def test_91_newest_failed_run_with_metadata_is_staged_and_acknowledged(fake):
    pr_with_sweep(fake, 1)
    fake.add_run(8, head_sha=SHA1)
    fake.add_run(9, head_sha=SHA1, conclusion="failure", artifacts=("changelog-metadata", "results_bmk"))
    c = authorise(fake, 1, "/stage-results")
    res, _ = handle(fake, comment_event(fake, 1, c))
    assert res.outputs["stage-run-id"] == "9"
    ack = [b for b in fake.bot_comments(1) if b["body"].startswith(f"<!-- ci-tools:stage {c['id']} -->")]
    assert len(ack) == 1 and "staging [run 9]" in ack[0]["body"]
    assert reply_of(fake, 1, c["id"]) is None
    (d,) = fake.dispatches
    assert d["repo"] == "SemiAnalysisAI/InferenceX-app" and d["event_type"] == "stage-results"
    assert d["client_payload"] == {"source-repository": fake.repo, "pr-number": "1", "run-id": "9",
                                   "run-attempt": "1", "run-date": fake.runs[9]["created_at"][:10],
                                   "requested-by": "maint", "comment-id": str(ack[0]["id"]),
                                   "dispatch-key": f"stage-results:{fake.repo}:9:1:{ack[0]['id']}"}


def test_stage_pinned_historical_run_associated_through_pull_requests(fake):
    pr_with_sweep(fake, 1)
    fake.add_run(9, head_sha="d" * 40, pull_requests=(1,))
    c = authorise(fake, 1, "/stage-results 9")
    res, _ = handle(fake, comment_event(fake, 1, c))
    assert res.outputs["stage-run-id"] == "9"


def callback(fake, kind, pr, comment_id, **extra):
    payload = {"source-repository": "SemiAnalysisAI/InferenceX-app", "pr-number": str(pr), "run-id": "9",
               "app-run-id": "555", "run-date": "2026-10-01", "requested-by": "maint",
               "comment-id": str(comment_id), **extra}
    return Event(name="repository_dispatch", repo=fake.repo, dispatch_type=kind, client_payload=payload)


def test_w23_callbacks_update_the_same_comment_and_never_move_backwards(fake):
    """W23: completed then a late started must leave the completion in place."""
    pr_with_sweep(fake, 1)
    fake.add_run(9, head_sha=SHA1)
    c = authorise(fake, 1, "/stage-results 9")
    res, _ = handle(fake, comment_event(fake, 1, c))
    cid = int(res.outputs["stage-comment-id"])
    stage_callback(callback(fake, "stage-results-started", 1, cid), settings(), lazy(fake))
    assert "is running" in fake.comments[cid]["body"]
    stage_callback(callback(fake, "stage-results-completed", 1, cid, **{"stage-succeeded": "true"}), settings(),
                   lazy(fake))
    assert "staged run 9: https://" in fake.comments[cid]["body"] and "i_dates=2026-10-01~r9" in \
        fake.comments[cid]["body"].replace("%7E", "~")
    res = stage_callback(callback(fake, "stage-results-started", 1, cid), settings(), lazy(fake))
    assert res.outputs["updated"] == "false" and "staged run 9" in fake.comments[cid]["body"]
    assert len([b for b in fake.bot_comments(1) if "ci-tools:stage" in b["body"]]) == 1


@pytest.mark.parametrize("patch,problem", [
    ({"source-repository": "evil/app"}, "source-repository"),
    ({"run-id": "9; rm -rf"}, "run-id"),
    ({"run-date": "yesterday"}, "run-date"),
    ({"requested-by": "a b"}, "requested-by"),
    ({"stage-succeeded": "maybe"}, "stage-succeeded"),
])
def test_malformed_callbacks_are_refused_without_touching_anything(fake, patch, problem):
    pr_with_sweep(fake, 1)
    ev = callback(fake, "stage-results-completed", 1, 5, **{"stage-succeeded": "true", **patch})
    gh = lazy(fake)
    with pytest.raises(Exception, match=problem):
        stage_callback(ev, settings(), gh)
    assert gh.calls == 0


def test_callback_refuses_to_edit_a_comment_that_is_not_the_bots_stage_comment(fake):
    pr_with_sweep(fake, 1)
    human = fake.add_comment(1, "my notes")
    with pytest.raises(Exception, match="not the bot's staging comment"):
        stage_callback(callback(fake, "stage-results-started", 1, human["id"]), settings(), lazy(fake))
    assert fake.comments[human["id"]]["body"] == "my notes"


# ---- re-runs and faults -------------------------------------------------------------------------

@pytest.mark.parametrize("body", ["/use abc", "/use", "/stage-results", "/sweep plan", "/use 9\n/stage-results 9"])
def test_rerunning_a_command_twice_never_duplicates_comments(fake, body):
    pr_with_sweep(fake, 1)
    fake.add_run(9, head_sha=SHA1)
    c = authorise(fake, 1, body)
    for _ in range(3):
        handle(fake, comment_event(fake, 1, c))
    bodies = [b["body"].split("\n", 1)[0] for b in fake.bot_comments(1)]
    assert len(bodies) == len(set(bodies)), bodies


def test_a_failed_post_then_a_rerun_leaves_exactly_one_reply(fake):
    pr_with_sweep(fake, 1)
    fake.add_run(9, head_sha=SHA1)
    c = authorise(fake, 1, "/use 9")
    fake.fail("POST", r"/issues/1/comments$", 502, times=1)
    with pytest.raises(GitHubError):
        handle(fake, comment_event(fake, 1, c))
    for _ in range(2):
        fake.fail("GET", r"/timeline$", 500, times=1)
        fake.fail("GET", r"/permission$", 429, headers={"Retry-After": "1"})
        res, _ = handle(fake, comment_event(fake, 1, c))
        assert res.outputs["reuse-authorised"] == "true"
    assert reply_of(fake, 1, c["id"]) and len(fake.bot_comments(1)) == 2   # reply + status card


def test_sticky_reply_is_found_beyond_the_first_page(fake):
    pr_with_sweep(fake, 1)
    c = authorise(fake, 1, "/use abc")
    handle(fake, comment_event(fake, 1, c))
    for i in range(120):
        fake.add_comment(1, f"chatter {i}", author="viewer", association="NONE")
    fake.comments[c["id"]]["body"] = "/use xyz"
    handle(fake, comment_event(fake, 1, fake.comments[c["id"]], action="edited"))
    assert "`/use xyz`" in reply_of(fake, 1, c["id"])


def test_deleting_the_authorising_comment_updates_the_card(fake):
    pr_with_sweep(fake, 1)
    c = authorise(fake, 1, "/use")
    handle(fake, comment_event(fake, 1, c))
    del fake.comments[c["id"]]
    handle(fake, comment_event(fake, 1, {**c}, action="deleted"))
    (card,) = [b for b in fake.bot_comments(1) if "status-card" in b["body"]]
    assert "not authorised" in card["body"]


def test_editing_a_stage_comment_does_not_stage_again(fake):
    pr_with_sweep(fake, 1)
    fake.add_run(9, head_sha=SHA1)
    c = authorise(fake, 1, "/stage-results 9")
    handle(fake, comment_event(fake, 1, c))
    handle(fake, comment_event(fake, 1, c, action="edited"))
    assert len(fake.dispatches) == 1


def test_commands_in_review_bodies_are_not_acted_on(fake):
    pr_with_sweep(fake, 1)
    c = authorise(fake, 1, "/use")
    res, gh = handle(fake, comment_event(fake, 1, c, kind="pull_request_review"))
    assert gh.calls == 0 and res.outputs["handled"] == "false"


def test_w4_use_after_merge_is_answered_not_recorded(fake):
    pr_with_sweep(fake, 1)
    fake.pulls[1]["merged_at"] = fake.tick()
    c = authorise(fake, 1, "/use 9")
    handle(fake, comment_event(fake, 1, c))
    assert "already merged" in reply_of(fake, 1, c["id"])
    assert not [b for b in fake.bot_comments(1) if "status-card" in b["body"]]


@pytest.mark.parametrize("run,why", [
    (None, "no run 12345 exists in this repository"),
    (dict(path=".github/workflows/benchmark.yml"), "run 12345 is a run of .github/workflows/benchmark.yml, not a sweep"),
    (dict(event="push"), "run 12345 is a push run, not a pull_request sweep or a trusted sweep"),
    (dict(repository="someone/else"), "run 12345 ran in someone/else, not "),
])
def test_use_of_a_run_that_is_no_sweep_of_this_repository_is_refused_and_authorises_nothing(fake, run, why):
    """Issue 24: `/use 12345` of a run that does not exist was "noted: run 12345 is pinned",
    reuse-authorised true, and stopped the PR's sweeps until the merge failed."""
    from ci_tools.prbot.reuse.flow import resolve_reuse
    from gh_scenarios import merge, pr_event, push_event

    pr_with_sweep(fake, 1, commits=(SHA1, SHA2))
    if run is not None:
        repository = run.pop("repository", None)
        fake.add_run(12345, head_sha=SHA1, **run)
        if repository:
            fake.runs[12345]["repository"]["full_name"] = repository
    c = authorise(fake, 1, "/use 12345")
    res, _ = handle(fake, comment_event(fake, 1, c))
    body = reply_of(fake, 1, c["id"])
    assert res.outputs["reuse-authorised"] == "false"
    assert "`/use 12345` was not run" in body and why in body and "run 12345 is pinned" not in body
    assert not [b for b in fake.bot_comments(1) if "pinned to run 12345" in b["body"]]
    # ... and nothing downstream counts it: a push still sweeps, and the merge sweeps main instead of failing.
    fake.compares[(SHA1, SHA2)] = ("ahead", ["README.md"])
    pushed = resolve_reuse(pr_event(fake, 1, "synchronize", before=SHA1, after=SHA2), settings(), lazy(fake))
    assert pushed.outputs["skip-pr-sweep"] == "false" and pushed.exit_code == 0
    merge(fake, 1)
    merged = resolve_reuse(push_event(fake), settings(), lazy(fake))
    assert merged.exit_code == 0 and merged.outputs["reuse-enabled"] == "false", merged.messages
    assert merged.outputs["reuse-authorised"] == "false"


def test_a_refused_use_leaves_an_earlier_pin_in_place(fake):
    pr_with_sweep(fake, 1)
    fake.add_run(9, head_sha=SHA1)
    handle(fake, comment_event(fake, 1, authorise(fake, 1, "/use 9")))
    c = authorise(fake, 1, "/use 12345")
    res, _ = handle(fake, comment_event(fake, 1, c))
    assert res.outputs["reuse-authorised"] == "false" and "was not run" in reply_of(fake, 1, c["id"])
    card = [b for b in fake.bot_comments(1) if b["body"].startswith("<!-- ci-tools:status-card -->")]
    assert "pinned to run 9" in card[0]["body"]                  # the earlier /use 9 still stands
