"""Under fault injection every flow reaches the same decision and leaves the same comments as
without faults, and running each twice never duplicates a comment."""

from __future__ import annotations

import pytest

from ci_tools.prbot.flow import handle_comment
from ci_tools.prbot.reuse.flow import resolve_reuse
from ci_tools.prbot.signoff.flow import verify_signoff
from ci_tools.prbot.welcome.flow import welcome
from gh_scenarios import SHA1, authorise, comment_event, lazy, merge, pr_event, pr_with_sweep, push_event, settings
from test_gh_signoff import setup_pr, signoff_body, signoff_checks


def world(fake):
    """A PR with history, a /use, a sign-off and a merge: enough for every flow."""
    setup_pr(fake)
    for i in range(100):
        fake.add_comment(1, f"chatter {i}", author="viewer", association="NONE")
    use = authorise(fake, 1, "/use 9")
    sign = fake.add_comment(1, signoff_body("amd-dev"), author="amd-dev")
    return use, sign


def run_all(fake, use, sign):
    s = settings()
    outputs = [
        welcome(pr_event(fake, 1, "opened"), s, lazy(fake)).outputs["comment"] != "",
        handle_comment(comment_event(fake, 1, use), s, lazy(fake)).outputs,
        verify_signoff(comment_event(fake, 1, sign), s, lazy(fake), lazy(fake)).outputs,
    ]
    merge(fake, 1)
    outputs.append(resolve_reuse(push_event(fake), s, lazy(fake)).outputs)
    fake.pulls[1].update(merged_at=None, merged=False, state="open")   # so the re-run sees the same world
    return outputs


def final_comments(fake):
    return sorted((c["body"].split("\n", 1)[0], c["body"]) for c in fake.bot_comments(1))


@pytest.mark.parametrize("fault", [500, 502, 503, 429, 403])
def test_faults_change_nothing_and_reruns_duplicate_nothing(shared, fault):
    from fake_github import FakeGitHub, Server

    results = {}
    for flaky in (None, fault):
        fake = FakeGitHub(shared / "corpus", flaky=flaky)
        with Server(fake) as server:
            fake.url = server.url
            use, sign = world(fake)
            first = run_all(fake, use, sign)
            second = run_all(fake, use, sign)
            assert first == second
            comments = final_comments(fake)
            assert len({head for head, _ in comments}) == len(comments), "a duplicate bot comment"
            results[flaky] = (first, comments, [c["conclusion"] for c in signoff_checks(fake)])
        assert not fake.schema_errors
    assert results[None] == results[fault]
    assert results[None][0][3]["reuse-enabled"] == "true" and results[None][2] == ["action_required", "success", "success"]   # opened, then the sign-off twice
