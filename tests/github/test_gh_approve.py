"""`/sweep approve <sha>` through `comment handle`, and `comment check-approval`, against the fake GitHub.

Request budgets: a denied approval costs the timeline, one permission look-up and the reply; an accepted
one adds the PR and one page of the trusted workflow's runs (the duplicate check)."""

from __future__ import annotations

import pytest

from ci_tools import names
from ci_tools.prbot.approval.flow import check_approval
from ci_tools.prbot.flow import handle_comment
from ci_tools.prbot.approval import decide as approval
from gh_scenarios import FULL, SHA1, SHA2, authorise, comment_event, lazy, pr_with_sweep, settings
from test_gh_bots import golden
from test_gh_cli import ci, outputs
from test_gh_commands import reply_of

FORK_REPO = "someone/bench"


def fork_pr(fake, number=3, **kw):
    pr = pr_with_sweep(fake, number, **kw)
    pr["head"]["repo"] = {**pr["head"]["repo"], "full_name": FORK_REPO}
    return pr


def approve(fake, body, *, action="created", between=None, **kw):
    """`body` commented on fork PR #3 and handled; `between(fake)` happens after the comment, before its job."""
    c = authorise(fake, 3, body, **kw)
    if between:
        between(fake)
    gh = lazy(fake)
    res = handle_comment(comment_event(fake, 3, c, action=action), settings(), gh)
    return res, gh, reply_of(fake, 3, c["id"])


def running_sweep(fake, run_id, pr, sha, status="in_progress"):
    run = fake.add_run(run_id, head_sha=sha, branch="main", event="workflow_dispatch", status=status,
                       conclusion=None if status != "completed" else "success",
                       path=f".github/workflows/{names.TRUSTED_WORKFLOW}", artifacts=())
    run["display_title"] = approval.run_name(pr, sha)
    return run


@pytest.mark.parametrize("given", [SHA1, SHA1.upper()])
def test_authorised_approval_of_the_head_sets_the_outputs(fake, given):
    fork_pr(fake)
    res, gh, body = approve(fake, f"/sweep approve {given}")
    assert res.outputs["approve-sha"] == SHA1 and res.outputs["approve-pr"] == "3"
    assert f"approved commit `{SHA1}`" in body and "never the merge commit" in body
    assert gh.calls <= 5, fake.requests          # timeline, permission, PR, runs page, reply
    assert any(names.TRUSTED_WORKFLOW in r and "event=workflow_dispatch" in r for r in fake.requests)


def test_a_private_org_member_with_write_permission_may_approve(fake):
    """#16.3: GitHub reports CONTRIBUTOR for members whose org membership is private."""
    fork_pr(fake)
    res, _, _ = approve(fake, f"/sweep approve {SHA1}", association="CONTRIBUTOR", permission="write")
    assert res.outputs["approve-sha"] == SHA1


@pytest.mark.parametrize("association,permission", [("OWNER", "read"), ("MEMBER", "read"),
                                                    ("COLLABORATOR", "triage"), ("NONE", "none")])
def test_denied_approval_starts_nothing_and_says_who_may(fake, association, permission):
    fork_pr(fake)
    res, gh, body = approve(fake, f"/sweep approve {SHA1}", association=association, permission=permission)
    assert res.outputs["approve-sha"] == "" and res.outputs["approve-pr"] == ""
    assert "was not run" in body and "write, maintain or admin" in body
    # only the PR's comment count, which the timeline is checked against (#15)
    assert [r for r in fake.requests if "/pulls/" in r or "/actions/" in r] == [f"GET /repos/{fake.repo}/pulls/3"]
    assert gh.calls <= 4


def test_a_stale_sha_is_refused_naming_the_head(fake):
    fork_pr(fake, commits=(SHA1, SHA2))
    res, gh, body = approve(fake, f"/sweep approve {SHA1}")
    assert res.outputs["approve-sha"] == ""
    assert f"`{SHA1}` is not the head of PR #3, which is now `{SHA2}`" in body
    assert not any("/actions/" in r for r in fake.requests)      # no duplicate check needed to refuse
    assert gh.calls <= 4


@pytest.mark.parametrize("given", [SHA1[:7], SHA1[:12].upper(), SHA1[:39]])
def test_a_prefix_is_refused_showing_the_full_head_sha_to_copy(fake, given):
    """Issue 35: a prefix could name a commit ground to share it and pushed after the review."""
    fork_pr(fake)
    res, gh, body = approve(fake, f"/sweep approve {given}")
    assert res.outputs["approve-sha"] == "" and res.outputs["approve-pr"] == ""
    assert f"is {len(given)} hex digits, not a full commit SHA" in body
    assert f"comment `/sweep approve {SHA1}`" in body
    assert not any("/actions/" in r for r in fake.requests) and gh.calls <= 4


def test_a_same_repo_pr_needs_no_approval(fake):
    pr_with_sweep(fake, 3)
    res, _, body = approve(fake, f"/sweep approve {SHA1}")
    assert res.outputs["approve-sha"] == "" and "sweeps from its labels" in body


def test_without_a_sweep_label_the_approval_is_refused(fake):
    fork_pr(fake, labels=())
    res, _, body = approve(fake, f"/sweep approve {SHA1}")
    assert res.outputs["approve-sha"] == "" and "exactly one sweep label" in body


def test_a_duplicate_while_the_sweep_runs_starts_nothing(fake):
    fork_pr(fake)
    running_sweep(fake, 77, 3, SHA1, status="queued")
    res, gh, body = approve(fake, f"/sweep approve {SHA1}")
    assert res.outputs["approve-sha"] == ""
    assert "started nothing" in body and "actions/runs/77" in body
    assert gh.calls <= 5


def test_a_finished_sweep_of_the_sha_does_not_block_a_new_approval(fake):
    fork_pr(fake)
    running_sweep(fake, 77, 3, SHA1, status="completed")
    running_sweep(fake, 78, 4, SHA1)                              # another PR's sweep
    res, _, _ = approve(fake, f"/sweep approve {SHA1}")
    assert res.outputs["approve-sha"] == SHA1


def test_editing_an_approval_comment_starts_no_second_sweep(fake):
    fork_pr(fake)
    res, _, body = approve(fake, f"/sweep approve {SHA1}", action="edited")
    assert res.outputs["approve-sha"] == "" and body is None
    assert any("edited comment" in m for m in res.messages)


# ---- the trusted sweep's first step: the approval's rule again ------------------------------------------

def approved(fake, **kw) -> int:
    """`/sweep approve SHA1` on fork PR #3, handled and accepted: the approving comment's id."""
    fork_pr(fake, **kw)
    res, _, _ = approve(fake, f"/sweep approve {SHA1}")
    assert res.outputs["approve-sha"] == SHA1
    return int(res.outputs["approve-comment"])


def test_check_approval_passes_at_the_approved_head_and_reads_the_labels_now(fake):
    comment = approved(fake, labels=(FULL, "all-evals"))
    fake.label(3, "bug")
    gh = lazy(fake)
    res = check_approval(settings(), gh, pr=3, sha=SHA1, comment=comment)
    assert res.exit_code == 0 and res.outputs["proceed"] == "true", res.messages
    assert res.outputs["labels"] == f"all-evals\n{FULL}"                   # policy labels only
    assert res.outputs["base-sha"] == fake.pulls[3]["base"]["sha"]
    assert gh.calls <= 3                                                   # the timeline (and its count), the PR


def test_check_approval_refuses_after_a_push(fake):
    comment = approved(fake)
    fake.add_commit(3, SHA2)
    fake.pulls[3]["head"]["sha"] = SHA2
    res = check_approval(settings(), lazy(fake), pr=3, sha=SHA1, comment=comment)
    assert res.exit_code == 1 and res.outputs["proceed"] == "false"
    assert f"`{SHA1}` is not the head of PR #3, which is now `{SHA2}`" in res.messages[0]


@pytest.mark.parametrize("moved", ["force-pushed away and back", "deleted and restored"])
def test_check_approval_refuses_a_head_branch_moved_after_the_approval(fake, moved):
    """Issue 35: between the approval and the sweep's start the fork force-pushes another commit and then
    the approved one again (or deletes and restores the branch): the head is the approved SHA again, so
    main's check (the head alone) let the sweep run. The approval's rule refuses it, as it would have
    refused the comment had the push come before its handling."""
    comment = approved(fake)
    if moved == "deleted and restored":
        fake.branch_event(3, "head_ref_deleted")
        fake.branch_event(3, "head_ref_restored", commit=SHA1)
    else:
        fake.force_push(3, SHA2)
        fake.force_push(3, SHA1)
    assert fake.pulls[3]["head"]["sha"] == SHA1
    res = check_approval(settings(), lazy(fake), pr=3, sha=SHA1, comment=comment)
    assert res.exit_code == 1 and res.outputs["proceed"] == "false"
    assert f"the approval in comment {comment} on PR #3 no longer holds" in res.messages[0]
    assert "after this comment was written" in res.messages[0]


def test_check_approval_refuses_a_deleted_or_edited_approval(fake):
    comment = approved(fake)
    edited = fake.comments[comment]
    edited["body"], edited["updated_at"] = "never mind", fake.tick()
    res = check_approval(settings(), lazy(fake), pr=3, sha=SHA1, comment=comment)
    assert res.exit_code == 1 and f"no longer says `/sweep approve {SHA1}`" in res.messages[0]
    other = check_approval(settings(), lazy(fake), pr=3, sha=SHA1, comment=comment + 1000)
    assert other.exit_code == 1 and f"comment {comment + 1000} is no longer on PR #3" in other.messages[0]


def test_check_approval_cli_fails_closed_with_an_annotation(fake, env, tmp_path):
    comment = approved(fake)
    fake.add_commit(3, SHA2)
    fake.pulls[3]["head"]["sha"] = SHA2
    result = ci(["comment", "check-approval", "--pr", "3", "--sha", SHA1, "--comment", str(comment),
                 "--format", "github"], env)
    assert result.returncode == 1, result.stderr
    assert f"::error title=ci-tools comment check-approval::the approval in comment {comment} on PR #3" in result.stdout
    assert outputs(env)["proceed"] == "false"
    short = ci(["comment", "check-approval", "--pr", "3", "--sha", SHA1[:7], "--comment", str(comment)], env)
    assert short.returncode == 2 and "full 40-digit head SHA" in short.stderr and "Traceback" not in short.stderr
    missing = ci(["comment", "check-approval", "--pr", "3", "--sha", SHA1], env)
    assert missing.returncode == 2 and "--comment" in missing.stderr and "Traceback" not in missing.stderr


# ---- reply bodies as golden files -----------------------------------------------------------------

@pytest.mark.parametrize("name,body,kw,setup", [
    ("reply-approve-accepted", f"/sweep approve {SHA1}", {}, lambda fake: None),
    ("reply-approve-stale", f"/sweep approve {SHA1}", {}, lambda fake: fake.add_commit(3, SHA2)),
    ("reply-approve-prefix", f"/sweep approve {SHA1[:7]}", {}, lambda fake: None),
    ("reply-approve-moved", f"/sweep approve {SHA1}",                           # away and back after the comment
     {"between": lambda fake: (fake.force_push(3, SHA2), fake.force_push(3, SHA1))}, lambda fake: None),
    ("reply-approve-denied", f"/sweep approve {SHA1}", {"permission": "read"}, lambda fake: None),
    ("reply-approve-duplicate", f"/sweep approve {SHA1}", {}, lambda fake: running_sweep(fake, 77, 3, SHA1)),
])
def test_approve_goldens(fake, name, body, kw, setup):
    fork_pr(fake)
    setup(fake)
    if name == "reply-approve-stale":
        fake.pulls[3]["head"]["sha"] = SHA2
    golden(name, approve(fake, body, **kw)[2])


def test_the_output_registry_names_what_the_flows_write(fake):
    from ci_tools.cli.comment import GITHUB_OUTPUTS

    fork_pr(fake)
    res, _, _ = approve(fake, f"/sweep approve {SHA1}")
    assert tuple(res.outputs) == GITHUB_OUTPUTS["comment handle"]
    assert tuple(check_approval(settings(), lazy(fake), pr=3, sha=SHA1, comment=int(res.outputs["approve-comment"])
                                ).outputs) == GITHUB_OUTPUTS["comment check-approval"]
