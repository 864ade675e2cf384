"""The attack table (issues 15, 25, 35): each scenario an adversarial pass used against the fake GitHub, over
real HTTP, with the decision it must get. One test per row; each failed on the main of its issue's day
(2026-12-01; issue 35's rows on 2026-12-07), except the controls beside them (the right decision main
already made: "still", "the other side") and the approval-race rows not marked "(main)"."""

from __future__ import annotations

import json

import pytest

from ci_tools import names
from ci_tools.github.client import GitHub
from ci_tools.github.client import GitHubError
from ci_tools.github.events import Event
from ci_tools.github.models import check_run_from_json
from ci_tools.prbot.flow import handle_comment
from ci_tools.prbot.reuse.flow import resolve_reuse
from ci_tools.prbot.signoff import decide as signoff
from ci_tools.prbot.signoff.flow import verify_signoff
from ci_tools.prbot.staging.flow import stage_callback, stage_dispatch
from ci_tools.prbot.approval import decide as approval
from gh_scenarios import SHA1, SHA2, authorise, comment_event, lazy, merge, pr_with_sweep, push_event, settings
from test_gh_commands import comment_jobs, dispatcher
from test_gh_signoff import AMD, setup_pr, signoff_body, signoff_checks, verdict_checks

FORK = "mallory/bench"
TRUSTED = f".github/workflows/{names.TRUSTED_WORKFLOW}"


def fork_pr(fake, number=1321, commits=(SHA1,)):
    return pr_with_sweep(fake, number, commits=commits, fork=FORK, head_ref="patch-1")


def fork_run(fake, run_id, sha=SHA1):
    """The fork PR's own pull_request run: it executed the fork's edited workflow and uploaded made-up
    results under the right artifact names, and it succeeded."""
    return fake.add_run(run_id, head_sha=sha, branch="patch-1", head_repo=FORK,
                        artifacts=("results_bmk", "changelog-metadata"))


def reuse_at_merge(fake, number, command):
    authorise(fake, number, command)
    merge(fake, number)
    return resolve_reuse(push_event(fake), settings(), lazy(fake))


# ---- 1. a fork run as a source -------------------------------------------------------------------

@pytest.mark.parametrize("command", ["/use", "/use 66"])
def test_fork_run_is_never_reused(fake, command):
    fork_pr(fake)
    fork_run(fake, 66)
    res = reuse_at_merge(fake, 1321, command)
    out = res.outputs
    assert out["reuse-enabled"] == "false" and out["reuse-source-run-id"] == "", out["reuse-reason"]
    assert "the fork's own pull_request run" in out["reuse-reason"]


def test_fork_run_is_never_staged(fake):
    fork_pr(fake)
    fork_run(fake, 66)
    c = authorise(fake, 1321, "/stage-results 66")
    res = comment_jobs(fake, comment_event(fake, 1321, c))
    assert res.outputs.get("stage-run-id", "") == "" and fake.dispatches == []


# ---- 8. the dispatch job: only it holds RESULTS_DISPATCH_TOKEN, and it sends only what was decided --

def staged(fake):
    """`/stage-results 9` accepted by the handler (no token): the payload it decided, and its event."""
    pr_with_sweep(fake, 1)
    fake.add_run(9, head_sha=SHA1)
    fake.add_run(10, head_sha=SHA2, head_repo=FORK)
    c = authorise(fake, 1, "/stage-results 9")
    event = comment_event(fake, 1, c)
    res = handle_comment(event, settings(), lazy(fake))
    assert fake.dispatches == [] and res.outputs["stage-run-id"] == "9"
    return json.loads(res.outputs["stage-payload"]), event, c


def send(fake, event, payload):
    return stage_dispatch(event, settings(), lazy(fake), dispatcher(fake), json.dumps(payload))


def test_the_decided_payload_is_sent_once_by_the_dispatch_job(fake):
    payload, event, _ = staged(fake)
    assert send(fake, event, payload).outputs["dispatched"] == "true"
    assert [d["client_payload"] for d in fake.dispatches] == [payload]


@pytest.mark.parametrize("change,why", [
    ({"run-id": "10"}, "the acknowledgement is for run 9, the payload names run 10"),
    ({"pr-number": "2"}, "the payload names PR #2, the comment is on PR #1"),
    ({"requested-by": "mallory"}, "the payload names @mallory, the comment is by @maint"),
    ({"run-attempt": "2"}, "run 9 is attempt 1"),
    ({"comment-id": "the /stage-results comment itself"}, "is not the bot's staging acknowledgement of comment"),
])
def test_a_payload_that_does_not_match_what_github_says_is_not_sent(fake, change, why):
    from ci_tools.prbot.staging import decide as staging

    payload, event, c = staged(fake)
    if "comment-id" in change:
        change = {"comment-id": str(c["id"])}
    forged = {**payload, **change}
    # whoever forges the payload computes its key too: the checks below are GitHub's, not the key's
    forged["dispatch-key"] = staging.dispatch_key(staging.DISPATCH_EVENT, fake.repo, forged["run-id"],
                                                  forged["run-attempt"], forged["comment-id"])
    res = send(fake, event, forged)
    assert res.exit_code == 1 and res.outputs["dispatched"] == "false" and fake.dispatches == []
    assert why in res.messages[0]


@pytest.mark.parametrize("change,why", [
    ({"source-repository": "mallory/bench"}, "expected this repository"),
    ({"extra": "x"}, "expected source-repository, pr-number"),
    ({"run-id": "9 "}, "run-id must be a decimal number"),
    ({"requested-by": "a b"}, "requested-by must be a GitHub login"),
])
def test_a_malformed_payload_is_a_usage_error_and_not_sent(fake, change, why):
    from ci_tools.errors import InputError

    payload, event, _ = staged(fake)
    with pytest.raises(InputError, match=why):
        send(fake, event, {**payload, **change})
    assert fake.dispatches == []


def test_a_writer_demoted_before_the_dispatch_job_is_not_staged(fake):
    payload, event, _ = staged(fake)
    fake.permissions["maint"] = "read"
    res = send(fake, event, payload)
    assert res.exit_code == 1 and "@maint has read permission now" in res.messages[0] and fake.dispatches == []


def test_a_rerun_of_the_dispatch_job_after_the_app_started_does_not_stage_again(fake):
    from test_gh_commands import callback

    payload, event, _ = staged(fake)
    assert send(fake, event, payload).outputs["dispatched"] == "true"
    stage_callback(callback(fake, "stage-results-started", 1, int(payload["comment-id"])), settings(), lazy(fake))
    res = send(fake, event, payload)
    assert res.exit_code == 1 and "run 9 is already started" in res.messages[0] and len(fake.dispatches) == 1


def test_the_dispatch_job_refuses_an_edited_comments_event(fake):
    payload, _, c = staged(fake)
    res = send(fake, comment_event(fake, 1, c, action="edited"), payload)
    assert res.exit_code == 1 and "the comment was edited" in res.messages[0] and fake.dispatches == []


def test_another_repositorys_run_of_the_same_commit_is_not_a_same_repo_prs_sweep(fake):
    pr_with_sweep(fake, 7)
    fake.add_run(66, head_sha=SHA1, branch="feature", head_repo=FORK)   # a fork's branch of the same name
    res = reuse_at_merge(fake, 7, "/use")
    assert res.outputs["reuse-enabled"] == "false"
    assert f"its head commit is in {FORK}, not {fake.repo}" in res.outputs["reuse-reason"]


def test_the_same_repos_own_run_still_reuses(fake):
    pr_with_sweep(fake, 7)
    fake.add_run(67, head_sha=SHA1, branch="feature")
    assert reuse_at_merge(fake, 7, "/use").outputs["reuse-source-run-id"] == "67"


# ---- 2. an edited sign-off -----------------------------------------------------------------------

def test_a_signoff_edited_by_someone_else_is_not_the_authors(fake):
    """A writer who owns none of the files rewrites an owner's old comment into the checklist."""
    setup_pr(fake, (AMD,))
    c = fake.add_comment(1, "LGTM", author="amd-dev")
    c["body"] = signoff_body("amd-dev")
    event = comment_event(fake, 1, c, action="edited")
    event = Event(**{**event.__dict__, "sender": "mallory"})
    res = verify_signoff(event, settings(), lazy(fake), lazy(fake))
    assert res.outputs["proceed"] == "false" and res.outputs["state"] == ""
    assert verdict_checks(fake) == []
    assert any("edited by @mallory" in m for m in res.messages)


def test_the_author_may_edit_their_own_signoff(fake):
    setup_pr(fake, (AMD,))
    c = fake.add_comment(1, "LGTM", author="amd-dev")
    c["body"] = signoff_body("amd-dev")
    event = comment_event(fake, 1, c, action="edited")
    event = Event(**{**event.__dict__, "sender": "amd-dev"})
    res = verify_signoff(event, settings(), lazy(fake), lazy(fake))
    assert res.outputs["state"] == "success"


# ---- 5. a slow POST ------------------------------------------------------------------------------

def test_a_slow_post_is_sent_once(fake):
    """GitHub creates the comment but answers after the client's read timeout: retrying would post twice."""
    pr_with_sweep(fake, 1)
    fake.slow("POST", r"/issues/1/comments$", 2.5)
    gh = GitHub(fake.repo, "test-token", api_url=fake.url, sleep=lambda s: None, seconds_between_writes=0, timeout=1)
    with pytest.raises(GitHubError, match="it was not sent again"):
        gh.create_comment(1, "status")
    assert [r for r in fake.requests if r.startswith("POST")] == [f"POST /repos/{fake.repo}/issues/1/comments"]
    assert [c["body"] for c in fake.comments.values() if c["_issue"] == 1] == ["status"]


def test_a_slow_get_is_still_retried(fake):
    pr_with_sweep(fake, 1)
    fake.slow("GET", r"/pulls/1$", 2.5)
    gh = GitHub(fake.repo, "test-token", api_url=fake.url, sleep=lambda s: None, seconds_between_writes=0, timeout=1)
    assert gh.pull_request(1).number == 1
    assert fake.requests.count(f"GET /repos/{fake.repo}/pulls/1") == 2


# ---- 6. decisions on partial lists ---------------------------------------------------------------

def test_a_pinned_run_followed_by_301_files_is_not_reused(fake):
    """GitHub's comparison lists 300 files; the 301st, under recipes/, is what changed the benchmark."""
    pr_with_sweep(fake, 7, commits=(SHA1, SHA2))
    fake.add_run(66, head_sha=SHA1)
    fake.compares[(SHA1, SHA2)] = ("ahead", [f"docs/f{i}.md" for i in range(300)] + ["recipes/x.yaml"])
    fake.tree_entries[f"tree-{SHA2}"] = {"inferencex-e2e": "t-e2e", "recipes": "t-recipes-v2"}
    res = reuse_at_merge(fake, 7, "/use 66")
    assert res.outputs["reuse-enabled"] == "false"
    assert "recipes/ (the comparison lists only its first 300 files" in res.outputs["reuse-reason"]


def test_a_push_of_301_files_sweeps_again(fake):
    from gh_scenarios import pr_event

    pr_with_sweep(fake, 7, commits=(SHA1, SHA2))
    authorise(fake, 7, "/use")
    fake.compares[(SHA1, SHA2)] = ("ahead", [f"docs/f{i}.md" for i in range(300)] + ["recipes/x.yaml"])
    fake.tree_entries[f"tree-{SHA2}"] = {"inferencex-e2e": "t-e2e", "recipes": "t-recipes-v2"}
    res = resolve_reuse(pr_event(fake, 7, "synchronize", before=SHA1, after=SHA2), settings(), lazy(fake))
    assert res.outputs["skip-pr-sweep"] == "false", res.messages


def test_a_signoff_is_not_verified_on_a_truncated_file_list(fake):
    """The PR files endpoint stops at 3,000: an owner of the first 3,000 does not sign off the 3,001st."""
    setup_pr(fake, [AMD] * 3000 + ["ci_tools/evil.py"])
    c = fake.add_comment(1, signoff_body("amd-dev"), author="amd-dev")
    with pytest.raises(GitHubError, match="listed 3000 of the 3001 files"):
        verify_signoff(comment_event(fake, 1, c), settings(), lazy(fake), lazy(fake))
    assert verdict_checks(fake) == []


# ---- 7. drive-by revoke, demoted writer, edited after merge, hidden commands, truncated lists -------

def test_a_drive_by_comment_cannot_revoke_a_carried_over_signoff(fake):
    """An owner's verified sign-off carries over a same-tree push; a NONE commenter then posts the phrase."""
    from gh_scenarios import pr_event

    setup_pr(fake, (AMD,))
    owner = fake.add_comment(1, signoff_body("amd-dev"), author="amd-dev")
    assert verify_signoff(comment_event(fake, 1, owner), settings(), lazy(fake), lazy(fake)).outputs["state"] == "success"
    fake.add_commit(1, SHA2, tree=fake.trees[SHA1])              # a rebase onto the same tree
    fake.pulls[1]["head"]["sha"] = SHA2
    fake.compares[(SHA1, SHA2)] = ("ahead", [])
    carried = verify_signoff(pr_event(fake, 1, "synchronize", before=SHA1, after=SHA2), settings(), lazy(fake))
    assert carried.outputs["state"] == "success"
    drive_by = fake.add_comment(1, signoff_body("randomer"), author="randomer", association="NONE")
    res = verify_signoff(comment_event(fake, 1, drive_by), settings(), lazy(fake), lazy(fake))
    assert res.outputs["state"] == "success"
    assert [c["conclusion"] for c in signoff_checks(fake, SHA2)] == ["success"]


def test_a_demoted_writer_can_no_longer_authorise_reuse(fake):
    """@maint's /use was checked while they had write (the status card records it); they were demoted."""
    pr_with_sweep(fake, 7)
    fake.add_run(67, head_sha=SHA1)
    authorise(fake, 7, "/use", author="maint", permission="write")
    fake.add_comment(7, '<!-- ci-tools:status-card -->\n<!-- ci-tools:state {"writers":{"maint":"write"}} -->',
                     author=fake.bot, association="NONE", type_="Bot")
    fake.permissions["maint"] = "read"
    merge(fake, 7)
    res = resolve_reuse(push_event(fake), settings(), lazy(fake))
    assert res.outputs["reuse-enabled"] == "false"
    assert "@maint has read permission" in "\n".join(res.messages)


def test_a_command_edited_after_the_merge_does_not_count_on_a_rerun(fake):
    pr_with_sweep(fake, 7)
    fake.add_run(9, head_sha=SHA1)
    fake.add_run(10, head_sha=SHA1)
    c = authorise(fake, 7, "/use 10")
    merge(fake, 7)
    c["body"], c["updated_at"] = "/use 9", fake.tick()            # edited after the merge, then the job re-run
    res = resolve_reuse(push_event(fake), settings(), lazy(fake))
    assert res.outputs["reuse-source-run-id"] != "9"
    assert res.outputs["reuse-enabled"] == "false"


@pytest.mark.parametrize("body", [
    "<!--\n/use 9\n-->", "thanks!\n<details><summary>log</summary>\n\n/use 9\n\n</details>",
    "the log:\n<pre>\n/use 9\n</pre>", "<PRE class=x>\n/use 9\n</PRE>",          # issue 25: <pre> is code
    "/use\u00a09", "/use\u20039", "\u2003/use 9",
])
def test_hidden_commands_are_not_commands(fake, body):
    pr_with_sweep(fake, 7)
    fake.add_run(9, head_sha=SHA1)
    authorise(fake, 7, body)
    merge(fake, 7)
    res = resolve_reuse(push_event(fake), settings(), lazy(fake))
    assert res.outputs["reuse-enabled"] == "false" and res.outputs["reuse-authorised"] == "false"


def test_a_list_cut_short_without_link_next_is_not_complete(fake):
    """A proxy drops `Link: next`: the runs listing ends after one page although GitHub counts more."""
    pr_with_sweep(fake, 7)
    fake.page_size = 2
    for run_id in (1, 2):
        fake.add_run(run_id, head_sha=SHA1, conclusion="failure")
    fake.add_run(3, head_sha=SHA1, created_at="2026-09-01T00:00:00Z")   # the only success, on page 2
    fake.drop_next = r"/actions/workflows/"
    authorise(fake, 7, "/use")
    merge(fake, 7)
    with pytest.raises(GitHubError, match="the list ended after 2 of its 3 items"):   # fails closed
        resolve_reuse(push_event(fake), settings(), lazy(fake))


# The timeline and the comment list carry no total_count: the PR's `comments` count is what proves
# them complete (read before the list, so comments posted meanwhile only lengthen it).

def test_a_timeline_cut_short_does_not_hide_a_later_use(fake):
    """`/use 9`, then `/use 10` (the last one wins); a proxy drops `Link: next` after the first page."""
    pr_with_sweep(fake, 7)
    fake.add_run(9, head_sha=SHA1)
    fake.add_run(10, head_sha=SHA1)
    authorise(fake, 7, "/use 9")
    authorise(fake, 7, "/use 10")
    merge(fake, 7)
    fake.page_size, fake.drop_next = 3, r"/timeline"          # committed, labeled, `/use 9`: then nothing
    with pytest.raises(GitHubError, match="the list holds 1 of the 4 comments PR #7 counts"):   # and 2 replies
        resolve_reuse(push_event(fake), settings(), lazy(fake))


def test_a_timeline_cut_after_the_last_comment_does_not_hide_a_label(fake):
    """No count covers the timeline after its last comment: `evals-only` is applied after `/use 9`, run 9
    starts under it, the label is removed again, and a proxy drops `Link: next` after the first full
    page, so neither label event is listed. Replayed, the history said "a full sweep only" and main
    reused an evals-only run; a full last page without `Link: next` is now checked for a next page."""
    from ci_tools.github.rest import PER_PAGE

    pr_with_sweep(fake, 7, filler=PER_PAGE - 3)              # committed, labeled, fillers: then `/use 9`
    authorise(fake, 7, "/use 9")
    fake.label(7, "evals-only")
    fake.add_run(9, head_sha=SHA1)
    fake.label(7, "evals-only", added=False)
    merge(fake, 7)
    fake.drop_next = r"/timeline"
    with pytest.raises(GitHubError, match="page 1 came full without `Link: next`, yet page 2 has items"):
        resolve_reuse(push_event(fake), settings(), lazy(fake))
    fake.drop_next = None                                     # the same PR, read whole: run 9 is refused
    res = resolve_reuse(push_event(fake), settings(), lazy(fake))
    assert res.outputs["reuse-enabled"] == "false" and "evals-only" in " ".join(res.messages)


def test_a_comment_list_cut_short_does_not_duplicate_the_status_card(fake):
    from ci_tools.prbot import sticky
    from ci_tools.prbot.card import decide as card
    from ci_tools.prbot.card.shell import write_section

    pr_with_sweep(fake, 1, filler=2)
    fake.add_comment(1, sticky.marker(card.KIND) + "\n", author=fake.bot, association="NONE", type_="Bot")
    fake.page_size, fake.drop_next = 2, r"/issues/1/comments"  # the card is on the page never reached
    gh = GitHub(fake.repo, "test-token", api_url=fake.url, sleep=lambda s: None, seconds_between_writes=0)
    with pytest.raises(GitHubError, match="the list holds 2 of the 3 comments PR #1 counts"):
        write_section(gh, 1, "sweep", "run 5 passed", bot=fake.bot, settle=0)
    assert [c for c in fake.bot_comments(1)] and len(fake.bot_comments(1)) == 1   # no second card


def test_a_comment_list_may_lose_only_what_this_client_deleted(fake):
    pr_with_sweep(fake, 1, filler=3)
    gh = GitHub(fake.repo, "test-token", api_url=fake.url, sleep=lambda s: None, seconds_between_writes=0)
    assert len(gh.issue_comments(1)) == 3      # the PR counts 3 (read and kept)
    gh.delete_comment(min(fake.comments))
    assert len(gh.issue_comments(1, fresh=True)) == 2


# ---- issue 25, 1: a sign-off counts only as its author wrote it (GitHub's edit history) ----------

def recorded_review(fake, tmp_path, review, run_head=SHA1):
    """The two review phases: the record run (its head: the PR head when the review event came) names
    `review`; the trusted workflow_run verifies it."""
    from test_gh_signoff import review_run_event
    from ci_tools.prbot.signoff.flow import verify_review

    (tmp_path / "r.json").write_text(json.dumps({"pr": 1, "review": review["id"]}))
    event = review_run_event(fake)
    event = Event(**{**event.__dict__, "workflow_run": type(event.workflow_run)(
        **{**event.workflow_run.__dict__, "head_sha": run_head})})
    return verify_review(event, settings(), lazy(fake), lazy(fake), tmp_path / "r.json")


def test_an_edited_review_does_not_forge_an_owners_signoff(fake, tmp_path):
    """The owner's review said "LGTM"; a writer who owns no files rewrote its body into the checklist.
    The review path read the body back and called the event "submitted": main verified it as the
    owner's sign-off. The edit history GitHub keeps names the editor."""
    setup_pr(fake, (AMD,))
    review = fake.add_review(1, "LGTM", author="amd-dev")
    fake.edit(review, signoff_body("amd-dev"), editor="mallory")
    res = recorded_review(fake, tmp_path, review)
    assert res.outputs["proceed"] == "false" and verdict_checks(fake) == []
    assert "its body was edited by @mallory" in res.messages[-1]
    assert "not counted" in fake.bot_comments(1)[-1]["body"]


def test_a_signoff_edited_by_someone_else_stays_void_after_its_authors_own_edit(fake):
    """@mallory ticks the owner's missing items (that edit event is dropped: its sender is not the author);
    the owner then fixes a typo, and that edit event's sender is the author."""
    setup_pr(fake, (AMD,))
    c = fake.add_comment(1, signoff_body("amd-dev", untick=3), author="amd-dev")
    fake.edit(c, signoff_body("amd-dev"), editor="mallory")
    fake.edit(c, signoff_body("amd-dev") + "\n(typo)", editor="amd-dev")
    event = Event(**{**comment_event(fake, 1, c, action="edited").__dict__, "sender": "amd-dev"})
    res = verify_signoff(event, settings(), lazy(fake), lazy(fake))
    assert res.outputs["proceed"] == "false" and verdict_checks(fake) == []
    assert "edited by @mallory" in res.messages[-1]


def test_a_re_run_of_a_created_event_reads_the_edit_history_too(fake):
    """A re-run carries the first run's payload ("created"), whatever happened to the comment since."""
    setup_pr(fake, (AMD,))
    c = fake.add_comment(1, signoff_body("amd-dev"), author="amd-dev")
    event = comment_event(fake, 1, c)
    fake.edit(c, signoff_body("amd-dev"), editor="maint")
    res = verify_signoff(event, settings(), lazy(fake), lazy(fake))
    assert res.outputs["proceed"] == "false" and "edited by @maint" in res.messages[-1]


def test_edits_by_the_author_alone_count_over_several_pages(fake):
    setup_pr(fake, (AMD,))
    c = fake.add_comment(1, signoff_body("amd-dev", untick=1), author="amd-dev")
    for n in range(4):
        fake.edit(c, signoff_body("amd-dev") + "\n" * n, editor="amd-dev")
    fake.page_size = 2                           # six history entries on three GraphQL pages
    event = Event(**{**comment_event(fake, 1, c, action="edited").__dict__, "sender": "amd-dev"})
    res = verify_signoff(event, settings(), lazy(fake), lazy(fake))
    assert res.outputs["state"] == "success", res.messages
    assert fake.requests.count("POST /graphql") == 3


def test_an_edit_history_the_token_cannot_read_fails_closed(fake):
    setup_pr(fake, (AMD,))
    c = fake.add_comment(1, signoff_body("amd-dev"), author="amd-dev")
    token = fake.grant("ghs_no_pr", "github_token", {"contents": "read", "checks": "write", "actions": "read"})
    gh = GitHub(fake.repo, token, api_url=fake.url, sleep=lambda s: None, seconds_between_writes=0)
    with pytest.raises(GitHubError, match="FORBIDDEN"):
        gh.edit_history(c["node_id"])


def test_the_fake_graphql_endpoint_refuses_what_githubs_schema_does_not_have(fake):
    """The fake runs each query against GitHub's published schema, so a made-up field fails as on GitHub."""
    setup_pr(fake, (AMD,))
    c = fake.add_comment(1, "x", author="amd-dev")
    gh = GitHub(fake.repo, "test-token", api_url=fake.url, sleep=lambda s: None, seconds_between_writes=0)
    with pytest.raises(GitHubError, match="Cannot query field 'editors'"):
        gh.graphql("query($id: ID!) { node(id: $id) { ... on Comment { editors { login } } } }", {"id": c["node_id"]})


# ---- issue 25, 2: a sign-off is bound to the tree its author reviewed -------------------------------

def push(fake, sha, tree=None, *, force=False, after_push=True):
    """A push to PR #1, and (unless it has not run yet) signoff-verify.yml's after-push job for it."""
    from gh_scenarios import pr_event

    before = fake.pulls[1]["head"]["sha"]
    if force:
        fake.force_push(1, sha, tree)
    else:
        fake.add_commit(1, sha, tree)
        fake.pulls[1]["head"]["sha"] = sha
    if after_push:
        verify_signoff(pr_event(fake, 1, "synchronize", before=before, after=sha), settings(), lazy(fake))


def test_a_review_of_one_commit_does_not_sign_off_another(fake, tmp_path):
    """The owner reviewed SHA1; SHA2 changes an owned file. The record run came after the push (its head
    is SHA2), so only the review's `commit_id` tells: main set `success` on SHA2."""
    setup_pr(fake, (AMD,))
    review = fake.add_review(1, signoff_body("amd-dev"), author="amd-dev", commit=SHA1)
    push(fake, SHA2)
    fake.compares[(SHA1, SHA2)] = ("ahead", [AMD])
    res = recorded_review(fake, tmp_path, review, run_head=SHA2)
    assert res.outputs["proceed"] == "false" and verdict_checks(fake) == []
    assert f"it reviewed commit {SHA1[:12]}; later commits change owned files (`{AMD}`)" in res.messages[-1]
    assert signoff_checks(fake)[-1]["_sha"] == SHA2 and signoff_checks(fake)[-1]["conclusion"] == "action_required"


def test_a_review_of_a_commit_with_the_heads_tree_counts(fake, tmp_path):
    setup_pr(fake, (AMD,))
    review = fake.add_review(1, signoff_body("amd-dev"), author="amd-dev", commit=SHA1)
    push(fake, SHA2, tree=fake.trees[SHA1])                          # a rebase onto the same tree
    fake.compares[(SHA1, SHA2)] = ("ahead", [])
    res = recorded_review(fake, tmp_path, review, run_head=SHA2)
    assert res.outputs["state"] == "success" and verdict_checks(fake)[-1]["_sha"] == SHA2


def test_a_review_of_a_force_pushed_away_commit_does_not_count(fake, tmp_path):
    setup_pr(fake, (AMD,))
    review = fake.add_review(1, signoff_body("amd-dev"), author="amd-dev", commit=SHA1)
    push(fake, SHA2, force=True)
    res = recorded_review(fake, tmp_path, review, run_head=SHA2)
    assert res.outputs["proceed"] == "false" and "no longer in the PR's history" in res.messages[-1]


def test_a_stale_record_run_is_not_counted(fake, tmp_path):
    """The record run's head (the PR's head when the review event came) is not the PR's head now."""
    setup_pr(fake, (AMD,))
    review = fake.add_review(1, signoff_body("amd-dev"), author="amd-dev", commit=SHA1)
    push(fake, SHA2, tree=fake.trees[SHA1])
    res = recorded_review(fake, tmp_path, review, run_head=SHA1)
    assert res.outputs["proceed"] == "false" and "the event is for head" in res.messages[-1]


def test_a_rerun_for_an_owners_old_comment_after_a_push_does_not_sign_off_the_new_head(fake):
    """Finding 7 of the pass: the owner's comment was verified on SHA1; after a push (new tree) the
    sign-off job is re-run for that comment, and main set `success` on SHA2."""
    setup_pr(fake, (AMD,))
    c = fake.add_comment(1, signoff_body("amd-dev"), author="amd-dev")
    assert verify_signoff(comment_event(fake, 1, c), settings(), lazy(fake), lazy(fake)).outputs["state"] == "success"
    push(fake, SHA2)
    res = verify_signoff(comment_event(fake, 1, c), settings(), lazy(fake), lazy(fake))
    assert res.outputs["proceed"] == "false"
    assert f"the head {SHA2[:12]} became this PR's head after it was written" in res.messages[-1]
    assert [c["conclusion"] for c in signoff_checks(fake, SHA2)] == ["action_required"]


def test_a_push_racing_a_signoff_comment_is_not_signed_off(fake):
    """A writer pushes SHA2 between the owner's comment and its verification (the after-push job for SHA2
    has not run yet): the comment signed off SHA1, not SHA2."""
    setup_pr(fake, (AMD,))
    c = fake.add_comment(1, signoff_body("amd-dev"), author="amd-dev")
    push(fake, SHA2, after_push=False)
    res = verify_signoff(comment_event(fake, 1, c), settings(), lazy(fake), lazy(fake))
    assert res.outputs["proceed"] == "false" and signoff_checks(fake)[-1]["_sha"] == SHA1


def test_a_force_push_back_to_an_old_head_after_a_signoff_does_not_inherit_it(fake):
    """SHA1, force-pushed to SHA2, the owner signs SHA2, force-pushed back to SHA1 (whose after-push
    check predates the comment): the comment signed SHA2's tree."""
    from gh_scenarios import SHA3

    setup_pr(fake, (AMD,))
    push(fake, SHA2, force=True)
    c = fake.add_comment(1, signoff_body("amd-dev"), author="amd-dev")
    push(fake, SHA3, force=True, after_push=False)
    fake.trees[SHA3] = fake.trees[SHA1]
    fake.add_run(10, head_sha=SHA3)
    res = verify_signoff(comment_event(fake, 1, c), settings(), lazy(fake), lazy(fake))
    assert res.outputs["proceed"] == "false" and "force-pushed after it was written" in res.messages[-1]


def test_a_signoff_check_of_another_pr_does_not_vouch_for_the_head(fake):
    """SHA2 was another PR's head first (its after-push check names PR #2); pushed to PR #1 after the
    owner's comment, it was not PR #1's head when the comment was written."""
    from gh_scenarios import pr_event

    setup_pr(fake, (AMD,))
    fake.add_pr(2, head_sha=SHA2, head_ref="other")
    verify_signoff(pr_event(fake, 2, "opened"), settings(), lazy(fake))
    c = fake.add_comment(1, signoff_body("amd-dev"), author="amd-dev")
    push(fake, SHA2, tree=fake.trees[SHA2], after_push=False)
    res = verify_signoff(comment_event(fake, 1, c), settings(), lazy(fake), lazy(fake))
    assert res.outputs["proceed"] == "false" and "became this PR's head after it was written" in res.messages[-1]


def test_still_another_apps_backdated_check_does_not_vouch_for_the_head(fake):
    """Still, with the sign-off a check run (issue 39): another GitHub App installed on the repository
    (checks: write) writes a `codeowner-signoff-verify` check on SHA2 naming PR #1, its `started_at` set
    before the owner's comment (the creator's to choose): not the bot's record, so the comment, written
    while SHA1 was the head, does not sign off SHA2; and its green check is no sign-off for a merge queue."""
    import httpx

    setup_pr(fake, (AMD,))
    c = fake.add_comment(1, signoff_body("amd-dev"), author="amd-dev")
    push(fake, SHA2, after_push=False)
    token = fake.grant("ghs_other_ci", "app", {"checks": "write"}, app="other-ci")
    made = httpx.post(f"{fake.url}/repos/{fake.repo}/check-runs", headers={"Authorization": f"token {token}"},
                      json={"name": signoff.CHECK, "head_sha": SHA2, "status": "completed", "conclusion": "success",
                            "started_at": "2000-01-01T00:00:00Z", "details_url": signoff.pr_url(fake.repo, 1),
                            "output": {"title": "verified", "summary": "verified"}})
    assert made.status_code == 201 and made.json()["started_at"] == "2000-01-01T00:00:00Z"
    res = verify_signoff(comment_event(fake, 1, c), settings(), lazy(fake), lazy(fake))
    assert res.outputs["proceed"] == "false" and "became this PR's head after it was written" in res.messages[-1]
    on_head = [check_run_from_json(r) for r in fake.check_runs if r["_sha"] == SHA2]
    assert signoff.queue_state([r for r in on_head if signoff.by_bot(r, settings().bot)],
                               pr_head=SHA2, queued_head="")[0] == "failure"


def test_still_a_fork_prs_token_cannot_write_the_signoff_check(fake):
    """Still: a fork PR's own pull_request run gets a read-only token, so it can neither write a sign-off
    check nor the after-push record the anti-backdating rule reads (GitHub: only a GitHub App's token
    with checks: write creates a check run)."""
    token = fake.grant("ghs_fork_run", "github_token", {"checks": "read", "contents": "read", "pull-requests": "read"})
    gh = GitHub(fake.repo, token, api_url=fake.url, sleep=lambda s: None, seconds_between_writes=0)
    with pytest.raises(GitHubError, match="checks: write"):
        gh.create_check_run(SHA1, name=signoff.CHECK, conclusion="success", title="verified", summary="verified",
                            details_url=signoff.pr_url(fake.repo, 1))
    assert fake.check_runs == []


# ---- issue 25, 3: a run is bound to its PR, and judged by the plan it recorded -------------------------

def other_prs_run(fake, run_id=66, *, sha=SHA1, labels=("full-sweep-fail-fast", "evals-only")):
    """PR #8 on its own branch has the same head commit (or one PR #7 also has); its run swept evals only."""
    fake.add_pr(8, head_sha=sha, head_ref="other-pr", commits=[sha])
    return fake.add_run(run_id, head_sha=sha, branch="other-pr", pull_requests=(8,), plan_labels=labels)


def test_another_prs_run_of_the_same_head_is_not_reused(fake):
    """`/use 66` on PR #7 pinned PR #8's evals-only run of the same commit; judged by PR #7's label history
    (full sweep the whole time), main reused it as a full sweep."""
    pr_with_sweep(fake, 7)
    other_prs_run(fake)
    res = reuse_at_merge(fake, 7, "/use 66")
    assert res.outputs["reuse-enabled"] == "false"
    assert "ran on branch other-pr, not this PR's branch feature" in res.outputs["reuse-reason"]


def test_another_prs_run_of_an_earlier_commit_is_not_reused(fake):
    from gh_scenarios import SHA3

    pr_with_sweep(fake, 7, commits=(SHA3, SHA1))               # PR #7 was branched from PR #8's commit SHA3
    other_prs_run(fake, sha=SHA3)
    fake.compares[(SHA3, SHA1)] = ("ahead", ["docs/x.md"])
    res = reuse_at_merge(fake, 7, "/use 66")
    assert res.outputs["reuse-enabled"] == "false" and "not this PR's branch" in res.outputs["reuse-reason"]


def test_another_prs_run_is_not_staged(fake):
    pr_with_sweep(fake, 7)
    other_prs_run(fake)
    c = authorise(fake, 7, "/stage-results 66")
    res = comment_jobs(fake, comment_event(fake, 7, c))
    assert res.outputs.get("stage-run-id", "") == "" and fake.dispatches == []
    assert "not this PR's branch" in fake.bot_comments(7)[-1]["body"]


def test_a_run_is_judged_by_the_plan_it_recorded_not_the_prs_label_history(fake):
    """PR #7's own run on its branch, but it swept with evals-only; the label event that says so is gone
    from the history (a label deleted from the repository leaves no `unlabeled` event to replay)."""
    pr_with_sweep(fake, 7)
    fake.add_run(67, head_sha=SHA1, plan_labels=("full-sweep-fail-fast", "evals-only"))
    res = reuse_at_merge(fake, 7, "/use 67")
    assert res.outputs["reuse-enabled"] == "false"
    assert "its recorded plan ran with evals-only, which is not a full sweep" in res.outputs["reuse-reason"]


def test_a_run_without_a_recorded_plan_is_not_reused(fake):
    pr_with_sweep(fake, 7)
    fake.add_run(67, head_sha=SHA1, plan_labels=None)
    res = reuse_at_merge(fake, 7, "/use 67")
    assert res.outputs["reuse-enabled"] == "false" and "has no recorded plan" in res.outputs["reuse-reason"]


# ---- issue 25, 6: a dispatch whose answer was lost is not sent twice by a re-run -------------------------

def app_client(fake, timeout=1):
    return lambda: GitHub(fake.repo, "dispatch-token", api_url=fake.url, sleep=lambda s: None,
                          seconds_between_writes=0, timeout=timeout)


LOST_ANSWERS = {
    "timeout after the write": lambda fake: fake.slow("POST", r"/dispatches$", 2.5),
    "502 after the write": lambda fake: fake.fail_after_write("POST", r"/dispatches$", 502),
    "garbled 200 after the write": lambda fake: fake.fail_after_write("POST", r"/dispatches$", 200, raw=b"<html>oops"),
    "502 before the write": lambda fake: fake.fail("POST", r"/dispatches$", 502),
}


def stage_job(fake, event, payload):
    from ci_tools.prbot.shell import Lazy

    return stage_dispatch(event, settings(), lazy(fake), Lazy(app_client(fake)), json.dumps(payload))


def ingest_job(fake, attempt):
    from ci_tools.prbot.shell import Lazy
    from ci_tools.prbot.staging.flow import results_dispatch
    from test_gh_results_dispatch import RUN

    return results_dispatch(push_event(fake), settings(), lazy(fake), Lazy(app_client(fake)), source_run_id=None,
                            collect_result="success", run_id=RUN, run_attempt=attempt)


@pytest.mark.parametrize("fault", sorted(LOST_ANSWERS))
def test_a_rerun_of_the_stage_dispatch_job_after_a_lost_answer_sends_nothing_twice(fake, fault):
    payload, event, _ = staged(fake)
    LOST_ANSWERS[fault](fake)
    try:
        first = stage_job(fake, event, payload).outputs["dispatched"]
    except GitHubError as exc:
        first = "error"
        assert "a re-run of this job first looks for the app's run" in exc.message
    rerun = stage_job(fake, event, payload)                     # the job re-run: same event, same payload
    assert rerun.outputs["dispatched"] == "true" and len(fake.dispatches) == 1, (first, rerun.messages)
    assert fake.dispatches[0]["client_payload"]["dispatch-key"] == payload["dispatch-key"]


@pytest.mark.parametrize("fault", sorted(LOST_ANSWERS))
def test_a_rerun_of_the_ingest_job_after_a_lost_answer_sends_nothing_twice(fake, fault):
    from test_gh_results_dispatch import merged_pr

    merged_pr(fake)
    LOST_ANSWERS[fault](fake)
    try:
        ingest_job(fake, 2)
    except GitHubError as exc:
        assert "dispatch-key" in exc.message
    rerun = ingest_job(fake, 3)                                 # a re-run is the run's next attempt
    assert rerun.outputs["dispatched"] == "true" and len(fake.dispatches) == 1, rerun.messages


def test_an_app_that_has_not_listed_its_run_yet_gets_the_same_key_twice(fake):
    """The one case a re-run cannot see: the app's run is not listed yet. It is sent again with the
    same key, which the app's contract de-duplicates on (what this repository can check is the key)."""
    payload, event, _ = staged(fake)
    fake.app_acknowledges = False
    fake.fail_after_write("POST", r"/dispatches$", 502)
    with pytest.raises(GitHubError):
        stage_job(fake, event, payload)
    stage_job(fake, event, payload)
    assert [d["client_payload"]["dispatch-key"] for d in fake.dispatches] == [payload["dispatch-key"]] * 2


# ---- issue 25, 9: what a reader does not see does not count ----------------------------------------------

def test_boxes_ticked_inside_an_html_comment_are_not_ticked(fake):
    """The visible checklist is unticked; a copy with every box ticked sits in `<!-- -->`, which GitHub
    renders as nothing: main counted the hidden ticks and verified the sign-off."""
    setup_pr(fake, (AMD,))
    visible = signoff_body("amd-dev").replace("- [x]", "- [ ]")
    hidden = "\n".join(line for line in signoff_body("amd-dev").splitlines() if line.startswith("- [x]"))
    c = fake.add_comment(1, visible + "\n<!--\n" + hidden + "\n-->\n", author="amd-dev")
    res = verify_signoff(comment_event(fake, 1, c), settings(), lazy(fake), lazy(fake))
    assert res.outputs["state"] == "failure"
    assert "13 of 13 items not ticked" in verdict_checks(fake)[-1]["output"]["title"]


def test_a_readers_old_use_does_not_count_once_they_are_promoted(fake):
    """@reader's `/use 9` was refused (read permission); they were given write later, and at the merge
    main counted the old comment with their permission then."""
    pr_with_sweep(fake, 7)
    fake.add_run(9, head_sha=SHA1)
    c = authorise(fake, 7, "/use 9", author="reader", permission="read")
    handle_comment(comment_event(fake, 7, c), settings(), lazy(fake))
    assert "not run" in fake.bot_comments(7)[-1]["body"]
    fake.permissions["reader"] = "write"
    merge(fake, 7)
    res = resolve_reuse(push_event(fake), settings(), lazy(fake))
    assert res.outputs["reuse-authorised"] == "false" and res.outputs["reuse-enabled"] == "false"
    assert "when it was handled its author had read permission" in "\n".join(res.messages)


def test_a_promoted_writer_who_says_it_again_is_counted(fake):
    pr_with_sweep(fake, 7)
    fake.add_run(9, head_sha=SHA1)
    old = authorise(fake, 7, "/use 9", author="reader", permission="read")
    handle_comment(comment_event(fake, 7, old), settings(), lazy(fake))
    new = authorise(fake, 7, "/use 9", author="reader", permission="write")
    handle_comment(comment_event(fake, 7, new), settings(), lazy(fake))
    merge(fake, 7)
    assert resolve_reuse(push_event(fake), settings(), lazy(fake)).outputs["reuse-source-run-id"] == "9"


# ---- issue 35, 1: an approval names the commit that was reviewed -----------------------------------------
# The maintainer reviewed SHA1. A fork grinds a commit sharing its first 7 hex digits (2^28 SHA-1 tries)
# and pushes it before or after the `/sweep approve` comment; the job handles the comment afterwards.
# Main approved whatever head matched the prefix at handling time; the rows marked "main" failed there.

COLLIDING = SHA1[:7] + "f" * 33


def force_push(sha):
    return lambda fake: fake.force_push(1321, sha)


def plain_push(sha):
    def push(fake):
        fake.add_commit(1321, sha)
        fake.pulls[1321]["head"]["sha"] = sha
    return push


def away_and_back(fake):
    fake.force_push(1321, SHA2)
    fake.force_push(1321, SHA1)


def deleted_and_restored(fake):
    fake.branch_event(1321, "head_ref_deleted")
    fake.branch_event(1321, "head_ref_restored", commit=SHA1)


APPROVAL_RACE = [
    # (what happened before the comment, the SHA it names, what happened after it, the SHA swept or "")
    ("prefix, ground commit force-pushed after (main)", None, SHA1[:7], force_push(COLLIDING), ""),
    ("prefix, ground commit pushed after (main)", None, SHA1[:7], plain_push(COLLIDING), ""),
    ("prefix, nothing pushed (main)", None, SHA1[:7], None, ""),
    ("prefix of a commit pushed before (main)", force_push(SHA2), SHA2[:7], None, ""),
    ("full SHA, ground commit force-pushed after", None, SHA1, force_push(COLLIDING), ""),
    ("full SHA, pushed away and back after (main)", None, SHA1, away_and_back, ""),
    ("full SHA, branch deleted and restored after (main)", None, SHA1, deleted_and_restored, ""),
    ("full SHA, plain push after", None, SHA1, plain_push(SHA2), ""),
    ("full SHA of a commit force-pushed before", force_push(SHA2), SHA2, None, SHA2),
    ("full SHA, nothing pushed", None, SHA1, None, SHA1),
]


@pytest.mark.parametrize("before,given,after,swept", [row[1:] for row in APPROVAL_RACE],
                         ids=[row[0] for row in APPROVAL_RACE])
def test_the_approval_race(fake, before, given, after, swept):
    fork_pr(fake)
    if before:
        before(fake)
    c = authorise(fake, 1321, f"/sweep approve {given}")
    if after:
        after(fake)
    res = handle_comment(comment_event(fake, 1321, c), settings(), lazy(fake))
    assert res.outputs["approve-sha"] == swept and res.outputs["approve-pr"] == ("1321" if swept else "")
    reply = fake.bot_comments(1321)[-1]["body"]
    if len(given) < 40:
        head = fake.pulls[1321]["head"]["sha"]
        assert "not a full commit SHA" in reply and f"`/sweep approve {head}`" in reply


# The same race after the approval was handled, before the trusted sweep starts: `comment check-approval`,
# the sweep's first step, applies the approval's rule again. Main compared the head with the approved SHA
# only, so a head moved away and back (the rows marked "main") started the sweep.
SWEEP_START_RACE = [
    # (what happened after the accepted approval, does the sweep start?)
    ("force-pushed away and back (main)", away_and_back, False),
    ("branch deleted and restored (main)", deleted_and_restored, False),
    ("ground commit force-pushed", force_push(COLLIDING), False),
    ("plain push", plain_push(SHA2), False),
    ("nothing moved", None, True),
]


@pytest.mark.parametrize("after,starts", [row[1:] for row in SWEEP_START_RACE], ids=[row[0] for row in SWEEP_START_RACE])
def test_the_approval_race_at_the_sweeps_start(fake, after, starts):
    from ci_tools.prbot.approval.flow import check_approval

    fork_pr(fake)
    c = authorise(fake, 1321, f"/sweep approve {SHA1}")
    handled = handle_comment(comment_event(fake, 1321, c), settings(), lazy(fake))
    assert handled.outputs["approve-sha"] == SHA1 and handled.outputs["approve-comment"] == str(c["id"])
    if after:
        after(fake)
    res = check_approval(settings(), lazy(fake), pr=1321, sha=SHA1, comment=c["id"])
    assert (res.outputs["proceed"] == "true") is starts and (res.exit_code == 0) is starts, res.messages


# ---- issue 35, 3: a rename, an owner without write access, a command the bot never answered ---------------

def test_a_move_of_an_owned_file_needs_the_old_paths_owner(fake):
    """@nvidia-dev owns recipes/gb300-*/ but not amd-master.yaml; the PR moves amd-master.yaml there. GitHub
    lists the move under its new name with `previous_filename`; main checked only the new path and
    verified the sign-off."""
    moved = "recipes/gb300-x/amd-master.yaml"
    setup_pr(fake, [(AMD, moved)])
    fake.teams[("SemiAnalysisAI", "nvidia-reviewers")] = {"nvidia-dev"}
    fake.permissions["nvidia-dev"] = "write"
    c = fake.add_comment(1, signoff_body("nvidia-dev"), author="nvidia-dev")
    res = verify_signoff(comment_event(fake, 1, c), settings(), lazy(fake), lazy(fake))
    assert res.outputs["state"] == "failure", res.messages
    assert f"@nvidia-dev does not own `{AMD}`" in fake.bot_comments(1)[-1]["body"]
    core = fake.add_comment(1, signoff_body("core-dev"), author="core-dev")       # owns both paths
    assert verify_signoff(comment_event(fake, 1, core), settings(), lazy(fake), lazy(fake)).outputs["state"] == "success"


@pytest.mark.parametrize("permission", ["read", "none", "not found"])
def test_an_owner_team_member_without_write_access_does_not_sign_off(fake, permission):
    """@amd-dev is in @SemiAnalysisAI/amd-reviewers, which CODEOWNERS lists, but has read (or no)
    access to the repository: GitHub ignores such a code owner; main verified the sign-off."""
    setup_pr(fake, (AMD,))
    if permission == "not found":
        fake.permission_not_found.add("amd-dev")
    else:
        fake.permissions["amd-dev"] = permission
    c = fake.add_comment(1, signoff_body("amd-dev"), author="amd-dev")
    res = verify_signoff(comment_event(fake, 1, c), settings(), lazy(fake), lazy(fake))
    assert res.outputs["state"] == "failure", res.messages
    assert "GitHub counts a code owner only with write access" in fake.bot_comments(1)[-1]["body"]


@pytest.mark.parametrize("lost", ["its job never ran", "its reply got a 502"])
def test_a_readers_unanswered_use_does_not_count_once_they_are_promoted(fake, lost):
    """@reader's `/use 9` was never answered, so no record says they lacked write then; they were promoted,
    and at the merge main counted the old comment with their permission now."""
    pr_with_sweep(fake, 7)
    fake.add_run(9, head_sha=SHA1)
    c = authorise(fake, 7, "/use 9", author="reader", permission="read", answered=False)
    if lost == "its reply got a 502":
        fake.fail("POST", r"/issues/7/comments$", 502)
        with pytest.raises(GitHubError):
            handle_comment(comment_event(fake, 7, c), settings(), lazy(fake))
    assert fake.bot_comments(7) == []
    fake.permissions["reader"] = "write"
    merge(fake, 7)
    res = resolve_reuse(push_event(fake), settings(), lazy(fake))
    assert res.outputs["reuse-authorised"] == "false" and res.outputs["reuse-enabled"] == "false"
    assert "the bot never answered it" in "\n".join(res.messages)


def test_a_writers_answered_use_counts_and_its_record_is_the_bots(fake):
    """The other side: `comment handle` records the permission it found in its reply, and that record is
    what makes a `/use` count at the merge."""
    pr_with_sweep(fake, 7)
    fake.add_run(9, head_sha=SHA1)
    c = authorise(fake, 7, "/use 9", answered=False)
    handle_comment(comment_event(fake, 7, c), settings(), lazy(fake))
    record = [b["body"] for b in fake.bot_comments(7) if b["body"].startswith(f"<!-- ci-tools:reply {c['id']} -->")]
    assert len(record) == 1 and '"checked":["/use 9"],"permission":"write"' in record[0]
    merge(fake, 7)
    assert resolve_reuse(push_event(fake), settings(), lazy(fake)).outputs["reuse-source-run-id"] == "9"


def test_a_use_edited_after_its_answer_does_not_count(fake):
    """Answered as `/use 10` (write); edited to `/use 9` and that edit's job never ran."""
    pr_with_sweep(fake, 7)
    fake.add_run(9, head_sha=SHA1)
    fake.add_run(10, head_sha=SHA1)
    c = authorise(fake, 7, "/use 10")
    c["body"], c["updated_at"] = "/use 9", fake.tick()
    merge(fake, 7)
    res = resolve_reuse(push_event(fake), settings(), lazy(fake))
    assert res.outputs["reuse-authorised"] == "false"
    assert "checked `/use 10`, not this command" in "\n".join(res.messages)


# ---- issue 35, 4: what nobody sees does nothing ------------------------------------------------------------

INVISIBLE = {
    "a multi-line <img alt>": '<img alt="\n{cmd}\n" src="https://example.com/x.png">',
    "a link reference definition": "Thanks!\n\n[//]: # (\n{cmd}\n)\n",
    "a link's title": 'see [the run](https://example.com/r "\n{cmd}\n")',
    "raw HTML left open": '<div title="\n\n{cmd}\n',
}


@pytest.mark.parametrize("kind", sorted(INVISIBLE))
def test_an_invisible_approval_dispatches_nothing(fake, kind):
    fork_pr(fake)
    c = authorise(fake, 1321, INVISIBLE[kind].format(cmd=f"/sweep approve {SHA1}"))
    res = handle_comment(comment_event(fake, 1321, c), settings(), lazy(fake))
    assert res.outputs["approve-sha"] == "" and res.outputs["handled"] == "false"
    assert fake.bot_comments(1321) == []


@pytest.mark.parametrize("kind", sorted(INVISIBLE))
def test_an_invisible_use_does_not_count_even_with_a_record(fake, kind):
    """A writer's hidden `/use 9` that an older bot answered (its record says write): still not said."""
    from gh_scenarios import answer

    pr_with_sweep(fake, 7)
    fake.add_run(9, head_sha=SHA1)
    c = authorise(fake, 7, INVISIBLE[kind].format(cmd="/use 9"))
    answer(fake, 7, {**c, "body": "/use 9"}, "write")
    merge(fake, 7)
    res = resolve_reuse(push_event(fake), settings(), lazy(fake))
    assert res.outputs["reuse-enabled"] == "false" and res.outputs["reuse-authorised"] == "false"


def test_boxes_ticked_inside_a_code_fence_are_not_ticked(fake):
    """The visible checklist is unticked; a ticked copy sits in a code fence, which shows as code, not as
    ticked boxes: main counted the fenced ticks and verified the sign-off."""
    setup_pr(fake, (AMD,))
    visible = signoff_body("amd-dev").replace("- [x]", "- [ ]")
    ticked = "\n".join(line for line in signoff_body("amd-dev").splitlines() if line.startswith("- [x]"))
    c = fake.add_comment(1, visible + "\n```\n" + ticked + "\n```\n", author="amd-dev")
    res = verify_signoff(comment_event(fake, 1, c), settings(), lazy(fake), lazy(fake))
    assert res.outputs["state"] == "failure"
    assert "13 of 13 items not ticked" in verdict_checks(fake)[-1]["output"]["title"]


@pytest.mark.parametrize("before", ["", "\n"], ids=["after a paragraph", "after a blank line"])
def test_boxes_indented_four_spaces_are_not_ticked(fake, before):
    """The ticked copy is indented four spaces: GitHub shows it as a paragraph's text or as an indented code
    block, never as ticked boxes; main counted it and verified the sign-off."""
    setup_pr(fake, (AMD,))
    body = signoff_body("amd-dev")
    ticked = [line for line in body.splitlines() if line.startswith("- [x]")]
    first = body.index(ticked[0])
    hidden = body[:first] + before + "\n".join("    " + line for line in ticked) + body[first + len("\n".join(ticked)):]
    c = fake.add_comment(1, hidden, author="amd-dev")
    res = verify_signoff(comment_event(fake, 1, c), settings(), lazy(fake), lazy(fake))
    assert res.outputs["state"] == "failure"
    assert "13 of 13 items not ticked" in verdict_checks(fake)[-1]["output"]["title"]


def test_a_signed_line_inside_a_code_fence_does_not_sign(fake):
    setup_pr(fake, (AMD,))
    body = signoff_body("amd-dev", signed="someone-else") + "\n```\nSigned: @amd-dev\n```\n"
    c = fake.add_comment(1, body, author="amd-dev")
    res = verify_signoff(comment_event(fake, 1, c), settings(), lazy(fake), lazy(fake))
    assert res.outputs["state"] == "failure" and "not signed by @amd-dev" in verdict_checks(fake)[-1]["output"]["title"]


def test_a_dismissed_review_is_not_a_signoff(fake, tmp_path):
    """The owner's review carries the whole ticked checklist but was dismissed: main verified it."""
    setup_pr(fake, (AMD,))
    review = fake.add_review(1, signoff_body("amd-dev"), author="amd-dev", state="dismissed")
    res = recorded_review(fake, tmp_path, review)
    assert res.outputs["proceed"] == "false" and verdict_checks(fake) == []
    assert "only a review that approves or comments signs off" in res.messages[-1]


def direct_review(fake, review):
    """A same-repository PR's review event, verified straight from its payload (state lower-case there)."""
    event = comment_event(fake, 1, {**review, "state": review["state"].lower(), "created_at": review["submitted_at"]},
                          kind="pull_request_review")
    return verify_signoff(event, settings(), lazy(fake), lazy(fake))


def verified_signoff(fake):
    """@amd-dev's verified sign-off comment on PR #1: the check is green."""
    setup_pr(fake, (AMD,))
    c = fake.add_comment(1, signoff_body("amd-dev"), author="amd-dev")
    assert verify_signoff(comment_event(fake, 1, c), settings(), lazy(fake), lazy(fake)).outputs["state"] == "success"
    return c


@pytest.mark.parametrize("path", ["recorded", "direct"])
@pytest.mark.parametrize("body", ["The recipe must use the upstream image.", None], ids=["a note", "the checklist"])
def test_an_owners_request_for_changes_revokes_the_signoff(fake, tmp_path, path, body):
    """After @amd-dev's verified sign-off, @core-dev (who owns amd-master.yaml too) requests changes. GitHub
    blocks the merge on an owner's requested changes; main kept codeowner-signoff-verify green (a review
    without the sign-off phrase was not read, one with it was \"not counted\")."""
    verified_signoff(fake)
    fake.permissions["core-dev"] = "write"
    review = fake.add_review(1, body or signoff_body("core-dev"), author="core-dev", state="changes_requested")
    res = recorded_review(fake, tmp_path, review) if path == "recorded" else direct_review(fake, review)
    assert res.outputs["state"] == "failure", res.messages
    check = verdict_checks(fake)[-1]
    assert check["conclusion"] == "failure" and check["output"]["title"] == "Sign-off revoked: @core-dev requested changes"
    assert "GitHub blocks the merge until that review is dismissed" in check["output"]["summary"]
    assert any(b["body"].startswith("<!-- ci-tools:signoff-verdict -->") and "revoked" in b["body"]
               for b in fake.bot_comments(1))


def test_a_later_owners_signoff_counts_again(fake, tmp_path):
    """The other side: after the request for changes, an owner's approving review with the checklist signs
    off again; a re-run of the old request does not revoke it; a re-run of the sign-off made before the
    request does not count (the check stays as the last decision left it)."""
    first = verified_signoff(fake)
    asked = fake.add_review(1, "Please fix the image.", author="amd-dev", state="changes_requested")
    assert recorded_review(fake, tmp_path, asked).outputs["state"] == "failure"
    old = verify_signoff(comment_event(fake, 1, first), settings(), lazy(fake), lazy(fake))
    assert old.outputs["proceed"] == "false" and verdict_checks(fake)[-1]["conclusion"] == "failure"
    assert "requested changes at" in old.messages[-1]
    again = fake.add_review(1, signoff_body("amd-dev"), author="amd-dev", state="approved")
    assert recorded_review(fake, tmp_path, again).outputs["state"] == "success"
    rerun = recorded_review(fake, tmp_path, asked)
    assert rerun.outputs["state"] == "" and verdict_checks(fake)[-1]["conclusion"] == "success"
    assert "was written after it" in rerun.messages[-1]


def test_a_request_for_changes_from_a_non_owner_changes_nothing(fake, tmp_path):
    """Still: a drive-by review requesting changes cannot undo an owner's verified sign-off."""
    verified_signoff(fake)
    fake.permissions["mallory"] = "write"
    review = fake.add_review(1, "no", author="mallory", state="changes_requested")
    res = recorded_review(fake, tmp_path, review)
    assert res.outputs["state"] == "" and verdict_checks(fake)[-1]["conclusion"] == "success"


def test_an_approving_review_still_signs_off(fake, tmp_path):
    setup_pr(fake, (AMD,))
    review = fake.add_review(1, signoff_body("amd-dev"), author="amd-dev", state="approved")
    assert recorded_review(fake, tmp_path, review).outputs["state"] == "success"
