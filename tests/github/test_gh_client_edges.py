"""The client at GitHub's edges (issue 23): a primary rate limit is named as one with its reset time
(never as a missing permission), an expired artifact as expired, and `ENDPOINTS` lists every endpoint
the client calls: the test walks every public call of the client against the fake."""

from __future__ import annotations

import inspect
import time
from types import GeneratorType

import pytest

from ci_tools.errors import InputError
from ci_tools.github import endpoints, rest
from ci_tools.github.client import GitHub, GitHubError


@pytest.mark.parametrize("status", [403, 429])
def test_a_primary_rate_limit_is_reported_with_its_reset_not_as_a_permission(fake, gh, slept, status):
    fake.add_pr(1, head_sha="a" * 40)
    reset = int(time.time()) + 3600
    fake.rate_limited("GET", r"/pulls/1$", reset=reset, status=status, times=9)
    with pytest.raises(GitHubError) as err:
        gh.pull_request(1)
    msg = err.value.message
    assert "rate limit is used up" in msg and time.strftime("%H:%M:%S UTC", time.gmtime(reset)) in msg
    assert "in 60 min" in msg and "Re-running will not help" not in msg and "permission" in msg
    assert err.value.status == status
    assert slept == [] and len(fake.requests) == 1      # no retry can succeed before the reset


def test_a_primary_rate_limit_that_resets_soon_is_waited_for(fake, gh, slept):
    fake.add_pr(1, head_sha="a" * 40)
    fake.rate_limited("GET", r"/pulls/1$", reset=int(time.time()) + 20)
    assert gh.pull_request(1).number == 1
    assert len(slept) == 1 and 19 <= slept[0] <= 22 and len(fake.requests) == 2


def test_an_expired_artifact_download_says_it_expired(fake, gh):
    fake.add_run(5, head_sha="a" * 40, artifacts=())
    art = fake.add_artifact_files(5, "results_bmk", {"r.json": b"{}"})
    assert gh.artifact_zip(art["id"])
    fake.expire(5)
    with pytest.raises(GitHubError) as err:
        gh.artifact_zip(art["id"])
    assert err.value.status == 410 and "expired" in err.value.message


def test_an_artifact_download_sends_the_token_to_the_api_only_never_to_the_storage_host(fake, gh):
    """Issue 27: GitHub redirects the download to blob storage on another host (here 127.0.0.2, which
    refuses a request carrying Authorization, as signed-URL storage does); the token stays at the API."""
    fake.add_run(5, head_sha="a" * 40, artifacts=())
    art = fake.add_artifact_files(5, "results_bmk", {"r.json": b"{}"})
    assert gh.artifact_zip(art["id"])[:2] == b"PK"
    assert fake.leaked_tokens == []
    assert [r for r in fake.requests if "/zip" in r or "/_blob/" in r] == [
        f"GET /repos/{fake.repo}/actions/artifacts/{art['id']}/zip", f"GET /_blob/{art['id']}?sig=signed"]


@pytest.mark.parametrize("location", ["http://127.0.0.2:1/_blob/9", "//evil.example/_blob/9"])
def test_a_redirect_to_another_host_never_gets_the_token(location):
    import httpx

    seen = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append((request.url.host, request.headers.get("authorization")))
        if request.url.host == "api.test":
            return httpx.Response(302, headers={"location": location})
        return httpx.Response(200, content=b"PK-zip")

    real = httpx.Client
    gh = GitHub("o/r", "secret", api_url="https://api.test", sleep=lambda s: None)
    try:
        httpx.Client = lambda **kw: real(transport=httpx.MockTransport(answer), **kw)
        assert gh.artifact_zip(1) == b"PK-zip"
    finally:
        httpx.Client = real
    assert seen[0] == ("api.test", "Bearer secret") and len(seen) == 2 and seen[1][1] is None


# Values for the client's parameters, by name: a new call with a parameter not named here fails the
# walk below until it is given one (and so until its endpoint is listed).
ARGS = {"number": 1, "sha": "a" * 40, "comment_id": None, "body": "hello", "login": "maint", "org": "octo",
        "team": "perf", "review_id": None, "run_id": 5, "workflow": "run-sweep.yml", "branch": "feature",
        "event": "pull_request", "base": "a" * 40, "head": "b" * 40, "state": "success", "context": "ci",
        "description": "d", "repo": "octo/bench", "event_type": "e", "client_payload": {"k": 1},
        "artifact_id": None, "node_id": None, "query": "query { viewer { login } }", "variables": {},
        "path": "configs/al.yaml", "ref": "main", "text": "a: 1\n", "message": "m", "title": "t", "name": "ci",
        "conclusion": "success", "summary": "s", "color": "0e8a16"}


def public_calls():
    return [(name, fn) for name, fn in inspect.getmembers(GitHub, inspect.isfunction)
            if not name.startswith("_") and name != "from_env"]


def test_endpoints_lists_every_endpoint_the_client_calls(fake):
    fake.add_pr(1, head_sha="a" * 40)
    fake.teams[("octo", "perf")] = {"other"}     # not a member: the team itself is read too
    fake.add_run(5, head_sha="a" * 40)
    fake.add_job(5, "plan")
    fake.add_runner("gb300-1")
    art = fake.add_artifact_files(5, "results_bmk", {"r.json": b"{}"})
    used: set[tuple[str, str]] = set()
    for name, fn in public_calls():
        comment = fake.add_comment(1, "x")
        ARGS.update(comment_id=comment["id"], review_id=fake.add_review(1, "ok")["id"], artifact_id=art["id"],
                    node_id=comment["node_id"])
        params = [p for p in list(inspect.signature(fn).parameters.values())[1:] if p.default is p.empty]
        missing = [p.name for p in params if p.name not in ARGS]
        assert not missing, f"GitHub.{name} takes {missing}: give them values in ARGS so the walk calls it"
        gh = GitHub(fake.repo, "t", api_url=fake.url, sleep=lambda s: None, seconds_between_writes=0)
        try:
            result = fn(gh, **{p.name: ARGS[p.name] for p in params})
            if isinstance(result, GeneratorType):
                list(result)
        except GitHubError:
            pass    # the request was sent all the same
        assert gh.log.calls, f"GitHub.{name} sent no request"
        for call in gh.log.calls:
            verb, url = call.split(" ", 1)
            if (verb, url.split("?")[0].replace(fake.url, "")) == endpoints.GRAPHQL:
                continue    # one endpoint for every query: what it may read is the token's REST permissions
            found = endpoints.endpoint_of(verb, url)
            assert found, f"GitHub.{name} calls {verb} {url}, which endpoints.ENDPOINTS does not list"
            used.add((verb, found[0]))
    assert set(endpoints.ENDPOINTS) - used == set(), "ENDPOINTS lists endpoints no call of the client uses"


@pytest.mark.parametrize("raw,seconds", [(None, 1.0), ("", 1.0), ("0", 0.0), ("0.25", 0.25), ("3", 3.0),
                                         ("-1", "not a number of seconds >= 0"), ("soon", "not a number of seconds"),
                                         ("nan", "not a number"), ("inf", "not a number")])
def test_the_pause_between_writes_is_githubs_advice_unless_the_environment_says(raw, seconds):
    env = {} if raw is None else {rest.WRITE_INTERVAL_ENV: raw}
    if isinstance(seconds, float):
        assert rest.write_interval_from_env(env) == seconds
    else:
        with pytest.raises(InputError, match=seconds):
            rest.write_interval_from_env(env)


def test_a_client_built_without_a_write_interval_pauses_between_writes(fake, monkeypatch):
    """What every command's client does on GitHub (the workflow tests against the fake set 0)."""
    monkeypatch.delenv(rest.WRITE_INTERVAL_ENV, raising=False)
    fake.add_pr(1, head_sha="a" * 40)
    gh = GitHub(fake.repo, "t", api_url=fake.url, sleep=lambda s: None)
    first = gh.create_comment(1, "one")
    t0 = time.monotonic()
    gh.update_comment(first.id, "two")
    assert time.monotonic() - t0 >= rest.WRITE_INTERVAL_S * 0.9
