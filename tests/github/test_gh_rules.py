"""GitHub's rules that the fake enforces and the client must live with (issue #16): token scopes from
GitHub's permission table, GITHUB_TOKEN and organization endpoints, the API version, PyGithub's floor."""

from __future__ import annotations

import json
import re
import tomllib

import pytest

from ci_tools.github.client import GitHub, GitHubError
from ci_tools.errors import InputError
from ci_tools.github import endpoints, rest
from fake_github import API_VERSIONS, PERMISSIONS_FILE, permission_table
from gh_scenarios import REPO_ROOT


def client(fake, token):
    return GitHub(fake.repo, token, api_url=fake.url, sleep=lambda s: None, seconds_between_writes=0)


def test_the_permission_table_names_its_source_version():
    data = json.loads(PERMISSIONS_FILE.read_text())
    src = data["_source"]
    assert src["repository"] == "github/docs" and re.fullmatch(r"[0-9a-f]{40}", src["commit"])
    assert src["path"].startswith("src/github-apps/data/fpt-2022-11-28/") and src["api_version"] == "2022-11-28"


def test_every_endpoint_the_client_calls_is_in_githubs_table_with_the_permission_the_client_names():
    table = {(e.verb, e.template): e for e in permission_table()}
    for (verb, template), permission in endpoints.ENDPOINTS.items():
        assert (verb, template) in table, f"{verb} {template} is not in {PERMISSIONS_FILE.name}"
        name, access = permission.split(": ")
        assert (name, access) in table[(verb, template)].needs, (verb, template, table[(verb, template)].needs)


def test_the_client_sends_an_api_version_and_the_fake_answers_with_it(fake):
    fake.add_pr(1, head_sha="a" * 40)
    gh = client(fake, "t")
    gh.pull_request(1)
    assert fake.api_versions == [rest.API_VERSION] and rest.API_VERSION in API_VERSIONS


def test_an_unsupported_api_version_is_refused_like_github_does(fake):
    import httpx

    fake.add_pr(1, head_sha="a" * 40)
    r = httpx.get(f"{fake.url}/repos/{fake.repo}/pulls/1", headers={"X-GitHub-Api-Version": "2019-01-01"})
    assert r.status_code == 400 and "X-GitHub-Api-Version" in r.json()["message"]
    ok = httpx.get(f"{fake.url}/repos/{fake.repo}/pulls/1", headers={"X-GitHub-Api-Version": "2022-11-28"})
    assert ok.headers["X-GitHub-Api-Version-Selected"] == "2022-11-28"


def test_a_missing_scope_is_a_403_naming_it_and_not_retried(fake):
    """#16.4's second half: a permission error says which scope to grant, never "re-run later"."""
    fake.commit_pulls["e" * 40] = []
    token = fake.grant("ghs_job", "github_token", {"actions": "read", "contents": "read"})
    with pytest.raises(GitHubError) as err:
        client(fake, token).pulls_for_commit("e" * 40)
    assert err.value.status == 403 and "`pull-requests: read`" in err.value.message
    assert "Re-running will not help" in err.value.message and "recovers" not in err.value.message
    assert len(fake.requests) == 1
    fake.grant(token, "github_token", {"pull-requests": "read"})
    assert client(fake, token).pulls_for_commit("e" * 40) == []


def test_write_implies_read_and_metadata_is_always_readable(fake):
    fake.add_pr(1, head_sha="a" * 40)
    token = fake.grant("ghs_w", "github_token", {"pull-requests": "write"})
    gh = client(fake, token)
    assert gh.pull_request(1).number == 1 and gh.permission("alice") == "none"


def test_a_github_token_gets_404_from_organization_endpoints_and_the_client_says_why(fake):
    """#16.2: a GITHUB_TOKEN cannot hold organization permissions; GitHub answers 404, which the
    client must not read as "not a member"."""
    fake.teams[("org", "core")] = {"alice"}
    token = fake.grant("ghs_job", "github_token", {"contents": "write", "pull-requests": "write"})
    with pytest.raises(rest.TeamUnreadable, match="cannot read team membership with this token"):
        client(fake, token).team_member("org", "core", "alice")


def test_an_app_token_with_members_read_reads_membership(fake):
    fake.teams[("org", "core")] = {"alice"}
    token = fake.grant("ghs_app", "app", {"members": "read"})
    gh = client(fake, token)
    assert gh.team_member("org", "core", "alice") is True
    assert gh.team_member("org", "core", "mallory") is False          # the team is readable: a real "no"
    with pytest.raises(rest.TeamUnreadable):
        gh.team_member("org", "no-such-team", "alice")                 # 404 for the team itself: cannot tell
    no_members = fake.grant("ghs_app2", "app", {"contents": "read"})
    with pytest.raises(rest.TeamUnreadable, match="403"):
        client(fake, no_members).team_member("org", "core", "alice")


def test_an_endpoint_missing_from_the_table_is_a_test_failure(fake):
    import httpx

    httpx.get(f"{fake.url}/repos/{fake.repo}/branches", headers={"X-GitHub-Api-Version": "2022-11-28"})
    assert fake.schema_errors and "not in GitHub's permission table" in fake.schema_errors[0]
    fake.schema_errors.clear()


def test_pygithub_lower_bound_is_the_version_the_suite_runs_against():
    """#16.6: the floor in pyproject.toml, MIN_PYGITHUB and the pinned constraint are one version."""
    deps = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    [spec] = [d for d in deps if d.lower().startswith("pygithub")]
    floor = tuple(int(x) for x in re.search(r">=\s*([\d.]+)", spec).group(1).split("."))
    pinned = re.search(r"(?im)^pygithub==([\d.]+)$", (REPO_ROOT / ".github/constraints.txt").read_text())
    assert floor == rest.MIN_PYGITHUB == tuple(int(x) for x in pinned.group(1).split("."))


def test_retries_go_through_public_hooks_only():
    """Issue 27: no library's private retry internals are overridden (urllib3's `_is_read_error`,
    `_sleep_backoff`, PyGithub's GithubRetry internals): a dependency update cannot break them quietly."""
    import ast

    tree = ast.parse((REPO_ROOT / "ci_tools/github/rest.py").read_text())
    [retry] = [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == "_Retry"]
    assert [ast.unparse(b) for b in retry.bases] == ["Retry"]
    overridden = sorted(f.name for f in retry.body if isinstance(f, ast.FunctionDef))
    assert overridden == ["increment", "is_retry", "sleep"]
    used = {n.attr for n in ast.walk(retry) if isinstance(n, ast.Attribute)}
    assert not [a for a in used if a.startswith("_") and not a.startswith("__")]


@pytest.mark.parametrize("version,ok", [("2.9.1", False), ("2.3.0", False), ("2.10.0", True), ("3.0.0", True)])
def test_an_older_pygithub_is_a_clear_error_not_a_type_error(version, ok):
    if ok:
        rest.check_pygithub(version)
        return
    with pytest.raises(InputError, match=r"PyGithub .* is too old: ci-tools needs PyGithub >= 2\.10\.0"):
        rest.check_pygithub(version)
