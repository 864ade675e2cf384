"""Finding 23.2: GitHub's collaborator-permission endpoint answers 404 for some users who are not
collaborators. That commenter has no permission (said so in the reply); the rest of the decision
stands: main's `reuse resolve` still reuses the pin of the maintainer who has write."""

from __future__ import annotations

from ci_tools.prbot.flow import handle_comment
from ci_tools.prbot.reuse.flow import resolve_reuse
from ci_tools.github.models import PERMISSION_NOT_FOUND
from gh_scenarios import SHA1, answer, authorise, comment_event, lazy, merge, pr_event, pr_with_sweep, push_event, settings


def test_a_404_for_one_use_commenter_does_not_fail_mains_resolution(fake):
    pr_with_sweep(fake, 1321)
    fake.add_run(9, head_sha=SHA1)
    authorise(fake, 1321, "/use 9")                        # a maintainer with write pins run 9
    fake.permission_not_found.add("drive-by")
    drive_by = fake.add_comment(1321, "/use", author="drive-by", association="NONE")   # newer: read first
    answer(fake, 1321, drive_by, PERMISSION_NOT_FOUND)     # the bot's reply records the 404 it got
    merge(fake, 1321)
    res = resolve_reuse(push_event(fake), settings(), lazy(fake))
    assert res.exit_code == 0, res.messages
    assert res.outputs["reuse-enabled"] == "true" and res.outputs["reuse-source-run-id"] == "9"
    ignored = "\n".join(res.messages)
    assert "@drive-by" in ignored and "404" in ignored and "counts as none" in ignored


def test_a_404_on_the_pr_side_counts_as_no_authorisation(fake):
    pr_with_sweep(fake, 5)
    fake.permission_not_found.add("drive-by")
    fake.add_comment(5, "/use", author="drive-by", association="NONE")
    res = resolve_reuse(pr_event(fake, 5, "synchronize"), settings(), lazy(fake))
    assert res.exit_code == 0 and res.outputs["skip-pr-sweep"] == "false"


def test_the_reply_to_a_commenter_github_answers_404_for_says_so(fake):
    pr_with_sweep(fake, 1)
    fake.permission_not_found.add("drive-by")
    c = fake.add_comment(1, "/use", author="drive-by", association="NONE")
    res = handle_comment(comment_event(fake, 1, c), settings(), lazy(fake))
    assert res.exit_code == 0 and res.outputs["reuse-authorised"] == "false"
    reply = next(b["body"] for b in fake.bot_comments(1) if b["body"].startswith(f"<!-- ci-tools:reply {c['id']} -->"))
    assert "answered 404" in reply and "counts as none" in reply and "write, maintain or admin" in reply
