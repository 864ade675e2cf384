"""The adapter against the fake: pagination, caching, retries, fail-closed, schema-checked fake."""

from __future__ import annotations

import pytest

from ci_tools.github.client import GitHub, GitHubError


def _prs_with_comments(fake, n: int):
    fake.add_pr(1, head_sha="a" * 40)
    for i in range(n):
        fake.add_comment(1, f"comment {i}")


def test_timeline_pages_follow_link_headers_and_are_fetched_once(fake, gh):
    _prs_with_comments(fake, 151)
    assert len(gh.timeline(1).comments) == 151
    assert gh.timeline(1) is not None and gh.log.count == 3   # cached: nothing fetched twice
    assert fake.requests == [f"GET /repos/{fake.repo}/pulls/1",    # its comment count, read first
                             f"GET /repos/{fake.repo}/issues/1/timeline?per_page=100",
                             f"GET /repos/{fake.repo}/issues/1/timeline?page=2&per_page=100"]


def test_short_pages_are_followed_not_taken_as_the_end(fake, gh):
    _prs_with_comments(fake, 25)
    fake.page_size = 10    # the server returns fewer than asked, with a next link
    assert len(gh.timeline(1).comments) == 25
    assert gh.log.count == 4    # the PR, then three pages


@pytest.mark.parametrize("status,headers,body,expected_sleep", [
    (502, {}, {"message": "Bad Gateway"}, None),
    (503, {"Retry-After": "7"}, {"message": "unavailable"}, 7.0),
    (429, {"Retry-After": "3"}, {"message": "Too Many Requests"}, 3.0),
    (403, {"Retry-After": "11"}, {"message": "You have exceeded a secondary rate limit."}, 11.0),
    (403, {}, {"message": "You have exceeded a secondary rate limit. Please wait."}, 60.0),
])
def test_transient_failures_are_retried_with_backoff(fake, gh, slept, status, headers, body, expected_sleep):
    fake.add_pr(1, head_sha="a" * 40)
    fake.fail("GET", r"/pulls/1$", status, times=2, headers=headers, body=body)
    assert gh.pull_request(1).number == 1
    assert gh.log.retries == 2 and len(slept) == 2 and all(s > 0 for s in slept)
    if expected_sleep is not None:
        assert slept[0] == expected_sleep     # Retry-After / secondary-limit wait honoured
    assert len([r for r in fake.requests if r.endswith("/pulls/1")]) == 3


def test_exhausted_retries_fail_closed_with_the_call_named(fake, gh):
    fake.add_pr(1, head_sha="a" * 40)
    fake.fail("GET", r"/pulls/1$", 500, times=99)
    with pytest.raises(GitHubError) as err:
        gh.pull_request(1)
    assert "GET /repos/octo/bench/pulls/1 failed: HTTP 500" in err.value.message
    assert "re-run" in err.value.message


def test_a_post_is_not_retried_after_a_5xx(fake, gh):
    fake.add_pr(1, head_sha="a" * 40)
    fake.fail("POST", r"/issues/1/comments$", 502)
    with pytest.raises(GitHubError):
        gh.create_comment(1, "hello")
    assert len([r for r in fake.requests if r.startswith("POST")]) == 1


def test_a_post_is_retried_after_a_rate_limit(fake, gh, slept):
    fake.add_pr(1, head_sha="a" * 40)
    fake.fail("POST", r"/issues/1/comments$", 429, headers={"Retry-After": "2"})
    gh.create_comment(1, "hello")
    assert slept == [2.0] and len(fake.bot_comments(1)) == 1


def test_a_wait_longer_than_the_cap_fails_closed(fake, gh, slept):
    fake.add_pr(1, head_sha="a" * 40)
    fake.fail("GET", r"/pulls/1$", 429, headers={"Retry-After": "3600"})
    with pytest.raises(GitHubError, match="wait"):
        gh.pull_request(1)
    assert slept == []


def test_permission_denied_is_not_retried(fake, gh):
    fake.fail("GET", r"/pulls/9$", 403, body={"message": "Resource not accessible by integration"})
    with pytest.raises(GitHubError, match="HTTP 403"):
        gh.pull_request(9)
    assert gh.log.count == 1 and len(fake.requests) == 1


def test_token_and_base_url_come_from_the_environment(fake):
    gh = GitHub.from_env(env={"GH_TOKEN": "x", "GITHUB_REPOSITORY": fake.repo, "GITHUB_API_URL": fake.url})
    assert gh.permission("nobody") == "none"
    with pytest.raises(Exception, match="GITHUB_TOKEN"):
        GitHub.from_env(env={"GITHUB_REPOSITORY": fake.repo})


def test_check_runs_with_a_summary_as_github_serves_them(fake, gh):
    """A completed check run with its title and Markdown summary, read back newest first; GitHub's
    schema holds both ways, and a token without `checks: write` is refused."""
    sha = "c" * 40
    made = gh.create_check_run(sha, name="ci-tools / ready to merge", conclusion="failure", title="not ready",
                               summary="**Not ready**: the pinned run's artifacts expired.", details_url="https://x/pr/7")
    assert made.status == "completed" and made.app == "github-actions"
    gh.create_check_run(sha, name="other", conclusion="success", title="t", summary="s")
    [run] = gh.check_runs(sha, "ci-tools / ready to merge")
    assert run.conclusion == "failure" and run.summary.startswith("**Not ready**") and run.title == "not ready"
    assert [r.name for r in gh.check_runs(sha)] == ["other", "ci-tools / ready to merge"]
    # GitHub's default `filter=latest`: the newest of a name; `every` (filter=all): each one ever created
    gh.create_check_run(sha, name="ci-tools / ready to merge", conclusion="success", title="ready", summary="s")
    assert [r.title for r in gh.check_runs(sha, "ci-tools / ready to merge")] == ["ready"]
    assert [r.title for r in gh.check_runs(sha, "ci-tools / ready to merge", every=True)] == ["ready", "not ready"]
    fake.grant("ro", "github_token", {"checks": "read"})
    from ci_tools.github.client import GitHub, GitHubError

    ro = GitHub(fake.repo, "ro", api_url=fake.url, sleep=lambda s: None, seconds_between_writes=0)
    with pytest.raises(GitHubError, match="checks: write"):
        ro.create_check_run(sha, name="x", conclusion="success", title="t", summary="s")
