"""The GitHub REST adapter: exactly the calls ci-tools makes, nothing else.

PyGithub's `Requester` does the API's HTTP (auth headers, API version, JSON, error mapping); artifact
archives come through httpx, because PyGithub refuses hosts outside GitHub's domains and GitHub
redirects a download to its blob storage. Both apply one retry policy (`http_policy.decide`, pure),
through public hooks only (urllib3's `Retry`, `transport.Transport`). This module adds:

- bounded retries with backoff on 5xx, 429 and secondary rate limits, honouring `Retry-After`, with
  the sleep injectable so tests stay fast; a write is never sent again once it may have reached GitHub
  (a retry could post a second comment); the token only ever goes to the API's own origin;
- pagination by following `Link: rel="next"` (never by guessing from a short page), and a list that
  ended early refused: against `total_count` where GitHub gives one, against the PR's `comments`
  count for the timeline and the comment list, which have none;
- a per-process cache so no list is fetched twice, and a request counter tests assert budgets on;
- fail closed: every failure becomes a `GitHubError` naming the call, never a partial answer.
"""

from __future__ import annotations

import json
import os
import re
import time
from typing import Any, Callable, Iterator

from ci_tools.errors import InputError
from ci_tools.github import http_policy as policy
from ci_tools.github.http_policy import MAX_RETRIES, MAX_WAIT_SECONDS, rate_limit_reset
from ci_tools.github.events import _Reader, pull_request_from
from ci_tools.github.transport import CallLog, GaveUp, Transport
from ci_tools.github.models import (PERMISSION_NOT_FOUND, Artifact, Comment, Comparison, EditHistory, Job,
                                    PullRequest, WorkflowRun, artifact_from_json, comment_from_json,
                                    comparison_from_json, job_from_json, named_artifact, run_from_json)

DEFAULT_API_URL = "https://api.github.com"
# Sent on every request (X-GitHub-Api-Version), so GitHub answers with the shapes ci-tools was written
# and tested against rather than whatever becomes the default later.
API_VERSION = "2022-11-28"
# The PyGithub the suite runs against (.github/constraints.txt); an older one is refused with a clear
# message rather than trusted untested. pyproject.toml's lower bound is this version (a test checks).
MIN_PYGITHUB = (2, 10, 0)
PER_PAGE = 100
MAX_REDIRECTS = 5       # GitHub's artifact download redirects once, to its blob storage
MAX_PAGES = 50            # 5,000 items: beyond that we refuse rather than decide on a partial list
# GitHub links a fresh merge commit to its pull request a few seconds late; asking again after these
# pauses (a push with no PR at all costs ~9 s more) keeps main from running a full sweep for lack of it.
ASSOCIATION_WAITS = (3.0, 6.0)


class GitHubError(InputError):
    """A GitHub API call failed after bounded retries; the command made no decision from partial data."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message, exit_code=1)
        self.status = status


class TeamUnreadable(GitHubError):
    """The token cannot tell whether someone is in a team (GitHub answers 404 both for "not a member"
    and for "this token may not see the team"); callers must fail closed with this reason."""


# Every endpoint ci-tools calls, with the token permission it needs: GitHub's per-endpoint table for
# installation tokens (a GITHUB_TOKEN is one), `tests/github/data/github-permissions.json`, is checked
# against this in the tests. Used to say which permission a 403 is missing; the docs list it per job.
# the run statuses of a run not yet completed that `active_runs` lists (a run is `in_progress` once any
# of its jobs is; its other jobs can still wait for a runner)
ACTIVE_RUN_STATUSES = ("queued", "in_progress")
MAX_CHECK_SUMMARY = 65_535   # characters of a check run's output.summary (GitHub's limit)

ENDPOINTS: dict[tuple[str, str], str] = {
    ("GET", "/repos/{owner}/{repo}/commits/{commit_sha}/pulls"): "pull-requests: read",
    ("GET", "/repos/{owner}/{repo}/pulls"): "pull-requests: read",
    ("GET", "/repos/{owner}/{repo}/pulls/{pull_number}"): "pull-requests: read",
    ("GET", "/repos/{owner}/{repo}/pulls/{pull_number}/files"): "pull-requests: read",
    ("GET", "/repos/{owner}/{repo}/pulls/{pull_number}/reviews/{review_id}"): "pull-requests: read",
    ("GET", "/repos/{owner}/{repo}/issues/{issue_number}/timeline"): "issues: read",
    ("GET", "/repos/{owner}/{repo}/issues/comments/{comment_id}"): "issues: read",
    ("GET", "/repos/{owner}/{repo}/issues/{issue_number}/comments"): "issues: read",
    ("DELETE", "/repos/{owner}/{repo}/issues/comments/{comment_id}"): "issues: write",
    ("POST", "/repos/{owner}/{repo}/issues/{issue_number}/comments"): "issues: write",
    ("PATCH", "/repos/{owner}/{repo}/issues/comments/{comment_id}"): "issues: write",
    ("GET", "/repos/{owner}/{repo}/collaborators/{username}/permission"): "metadata: read",
    ("GET", "/orgs/{org}/teams/{team_slug}"): "members: read",
    ("GET", "/orgs/{org}/teams/{team_slug}/memberships/{username}"): "members: read",
    ("GET", "/repos/{owner}/{repo}/actions/runs/{run_id}"): "actions: read",
    ("GET", "/repos/{owner}/{repo}/actions/workflows/{workflow_id}/runs"): "actions: read",
    ("GET", "/repos/{owner}/{repo}/actions/runs/{run_id}/artifacts"): "actions: read",
    ("GET", "/repos/{owner}/{repo}/actions/runs/{run_id}/jobs"): "actions: read",
    ("GET", "/repos/{owner}/{repo}/actions/artifacts/{artifact_id}/{archive_format}"): "actions: read",
    ("GET", "/repos/{owner}/{repo}/actions/runners"): "administration: read",
    ("GET", "/repos/{owner}/{repo}/commits/{ref}"): "contents: read",
    ("GET", "/repos/{owner}/{repo}/compare/{basehead}"): "contents: read",
    ("GET", "/repos/{owner}/{repo}/git/trees/{tree_sha}"): "contents: read",
    ("POST", "/repos/{owner}/{repo}/check-runs"): "checks: write",
    ("GET", "/repos/{owner}/{repo}/labels"): "issues: read",
    ("POST", "/repos/{owner}/{repo}/labels"): "issues: write",
    ("PATCH", "/repos/{owner}/{repo}/labels/{name}"): "issues: write",
    ("GET", "/repos/{owner}/{repo}/commits/{ref}/check-runs"): "checks: read",
    ("POST", "/repos/{owner}/{repo}/dispatches"): "contents: write",
    ("GET", "/repos/{owner}/{repo}/actions/runs"): "actions: read",
    ("GET", "/repos/{owner}/{repo}/git/ref/{ref}"): "contents: read",
    ("POST", "/repos/{owner}/{repo}/git/refs"): "contents: write",
    ("GET", "/repos/{owner}/{repo}/contents/{path}"): "contents: read",
    ("PUT", "/repos/{owner}/{repo}/contents/{path}"): "contents: write",
    ("POST", "/repos/{owner}/{repo}/pulls"): "pull-requests: write",
}

# GraphQL has one endpoint; a query may read what the token's repository permissions allow (a PR's
# comments and reviews: `pull-requests: read`), so it is not in the REST table above.
GRAPHQL = ("POST", "/graphql")


def _template_regex(template: str) -> re.Pattern:
    # A file path and a git reference hold slashes (`configs/al.yaml`, `heads/feature`), as GitHub reads them.
    pattern = re.sub(r"(/contents/|/git/ref/)\\{(ref|path)\\}$", r"\1.+", re.escape(template))
    return re.compile("^" + re.sub(r"\\{[a-z_]+\\}", "[^/]+", pattern) + "$")


_ENDPOINT_RE = [(verb, _template_regex(t), t, perm) for (verb, t), perm in ENDPOINTS.items()]


def endpoint_of(verb: str, url: str) -> tuple[str, str] | None:
    """(template, permission) of a request path; the most specific template wins."""
    path = re.sub(r"^https?://[^/]+", "", url).split("?")[0]
    hits = [(t, perm) for v, rx, t, perm in _ENDPOINT_RE if v == verb and rx.match(path)]
    return min(hits, key=lambda h: h[0].count("{")) if hits else None


def rate_limit_message(verb: str, shown: str, status: int | None, reset: int, now: float) -> str:
    """A used-up rate limit is not a missing permission: it says when the limit resets."""
    if reset:
        at = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(reset))
        when = f"it resets at {at} (in {max(0, round((reset - now) / 60))} min)"
    else:
        when = "GitHub gave no reset time"
    return (f"GitHub API {verb} {shown} failed: HTTP {status}: the token's API rate limit is used up; {when}. "
            "Nothing was decided; re-run the job after the reset (the permission is not the problem).")


def _failure_advice(verb: str, url: str, status: int | None) -> str:
    """What to do about a failed call: a permission problem is not cured by re-running."""
    if status in (401, 403):
        found = endpoint_of(verb, url)
        need = f"`{found[1]}`" if found else "the permission this endpoint needs"
        return (f"The token was refused: this call needs {need}. Re-running will not help; grant it in the "
                "job's `permissions:` (or give the step a token that has it).")
    return "Nothing was decided from partial data; re-run the job once GitHub recovers."


def check_pygithub(version: str | None = None) -> None:
    from importlib.metadata import PackageNotFoundError, version as installed

    try:
        found = version or installed("PyGithub")
    except PackageNotFoundError:
        raise InputError("PyGithub is not installed; `pip install ci-tools` brings it") from None
    numbers = tuple(int(x) for x in re.findall(r"\d+", found)[:3])
    if numbers < MIN_PYGITHUB:
        need = ".".join(map(str, MIN_PYGITHUB))
        raise InputError(f"PyGithub {found} is too old: ci-tools needs PyGithub >= {need} (the "
                         f"oldest release it is tested with). Upgrade it: pip install 'PyGithub>={need}'")


def token_from_env(env: dict[str, str] | None = None) -> str:
    env = os.environ if env is None else env
    token = env.get("GITHUB_TOKEN") or env.get("GH_TOKEN")
    if not token:
        raise InputError("no GitHub token: set GITHUB_TOKEN (in a workflow: `env: GITHUB_TOKEN: ${{ github.token }}`)"
                         " or GH_TOKEN")
    return token


def _error_kind(error: BaseException) -> str:
    """What `http_policy` needs to know about a failure without an answer, from urllib3's public
    exception classes: was the request sent at all?"""
    from urllib3.exceptions import ConnectTimeoutError, ReadTimeoutError

    if isinstance(error, ConnectTimeoutError):      # NewConnectionError and NameResolutionError are ones
        return policy.CONNECT
    if isinstance(error, (ReadTimeoutError, TimeoutError)):
        return policy.TIMEOUT
    return policy.LOST


def _make_retry(log: CallLog, sleep: Callable[[float], None], now: Callable[[], float] = time.time):
    """A urllib3 `Retry` (PyGithub's `retry=`) whose every decision is `http_policy.decide`'s.

    Only urllib3's documented hooks are overridden: `is_retry` (which answers are worth a look),
    `increment` (ask again or not) and `sleep` (the pause, through the injected `sleep`)."""
    from urllib3.exceptions import MaxRetryError, ResponseError
    from urllib3.util.retry import Retry

    class _Retry(Retry):
        delay = 0.0

        def is_retry(self, method: str, status_code: int, has_retry_after: bool = False) -> bool:
            return status_code in (403, 429) or 500 <= status_code < 600

        def increment(self, method: str | None = None, url: str | None = None, response: Any = None,
                      error: Exception | None = None, _pool: Any = None, _stacktrace: Any = None) -> Retry:
            verb, shown, attempt = (method or "GET").upper(), str(url), len(self.history) + 1
            if response is None:
                decision = policy.decide(verb, attempt, None, error=_error_kind(error), now=now())
                if decision.reason == policy.MAYBE_SENT:
                    raise error   # sent, maybe carried out: never again; the caller words it
                if not decision.retry:
                    raise MaxRetryError(_pool, url, error)
            else:
                status, headers = response.status, response.headers
                message, read = "", False
                if status == 403 and not policy.header(headers, "retry-after") \
                        and policy.rate_limit_reset(status, headers) is None:
                    message, read = _message_of(response.data), True   # a secondary limit says so in the body only
                decision = policy.decide(verb, attempt, status, headers, message=message, now=now())
                if decision.reason == policy.RATE_LIMITED:
                    raise GitHubError(rate_limit_message(verb, shown, status, decision.reset or 0, now()),
                                      status=status)
                if decision.reason == policy.WAIT_TOO_LONG:
                    raise GitHubError(f"GitHub API {verb} {shown} failed: HTTP {status}: GitHub asked us to wait "
                                      f"{decision.delay:.0f}s (more than {MAX_WAIT_SECONDS:.0f}s); giving up without "
                                      "deciding. Re-run the job later.", status=status)
                if not decision.retry and read:
                    # the body is consumed, so PyGithub would see none: word the refusal here
                    raise GitHubError(failure_message(verb, shown, url or "", status, message), status=status)
                if not decision.retry:
                    # urllib3 hands the answer back (raise_on_status=False); PyGithub maps it to an error
                    raise MaxRetryError(_pool, url, ResponseError(f"HTTP {status}"))
            log.retries += 1
            retry = super().increment(method, url, response, error, _pool, _stacktrace)
            retry.delay = decision.delay
            return retry

        def sleep(self, response: Any = None) -> None:
            log.sleeps.append(self.delay)
            if self.delay > 0:
                sleep(self.delay)

    return _Retry(total=MAX_RETRIES, allowed_methods=None, raise_on_status=False, respect_retry_after_header=False)


def _message_of(body: bytes | None) -> str:
    try:
        data = json.loads(body or b"null")
    except ValueError:
        return ""
    return str(data.get("message") or "") if isinstance(data, dict) else ""


def failure_message(verb: str, shown: str, url: str, status: int | None, message: Any) -> str:
    return f"GitHub API {verb} {shown} failed: HTTP {status}: {message}. " + _failure_advice(verb, url, status)


_NEXT = re.compile(r'<([^>]+)>;\s*rel="next"')

# GitHub's edit history of a comment or review (the Comment interface of its GraphQL schema).
_EDITS_QUERY = """
query($id: ID!, $after: String) {
  node(id: $id) {
    ... on Comment {
      author { login }
      lastEditedAt
      userContentEdits(first: 100, after: $after) {
        totalCount
        pageInfo { hasNextPage endCursor }
        nodes { editor { login } editedAt }
      }
    }
  }
}
"""


class GitHub:
    """The narrow interface. `repo` is "owner/name". Construct with `GitHub.from_env()` in commands."""

    def __init__(self, repo: str, token: str, *, api_url: str = DEFAULT_API_URL,
                 sleep: Callable[[float], None] = time.sleep, timeout: int = 30,
                 seconds_between_writes: float = 1.0, now: Callable[[], float] = time.time):
        from github import Auth, Github

        check_pygithub()
        if not re.fullmatch(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+", repo or ""):
            raise InputError(f"repository {repo!r} is not of the form owner/name (set GITHUB_REPOSITORY or --repo)")
        self.repo = repo
        self._api_url, self._token = api_url.rstrip("/"), token
        self.log = CallLog()
        self._sleep = sleep
        self._now = now
        self._cache: dict[str, Any] = {}
        self._deleted = 0   # comments this client deleted (see _check_comments)
        self._gh = Github(auth=Auth.Token(token), base_url=api_url.rstrip("/"), timeout=timeout,
                          retry=_make_retry(self.log, sleep, now), per_page=PER_PAGE, api_version=API_VERSION,
                          # Reads are not throttled (a command makes a handful); writes keep GitHub's
                          # advice of a pause between content-creating requests.
                          seconds_between_requests=None, seconds_between_writes=seconds_between_writes)
        self._requester = self._gh.requester

    @classmethod
    def from_env(cls, repo: str | None = None, env: dict[str, str] | None = None, **kw: Any) -> "GitHub":
        env = os.environ if env is None else env
        return cls(repo or env.get("GITHUB_REPOSITORY", ""), token_from_env(env),
                   api_url=env.get("GITHUB_API_URL") or DEFAULT_API_URL, **kw)

    # ---- transport ------------------------------------------------------------------------------
    def _request(self, verb: str, url: str, params: dict | None = None, body: Any = None) -> tuple[dict, Any]:
        from github.GithubException import GithubException

        shown = url + ("?" + "&".join(f"{k}={v}" for k, v in params.items()) if params else "")
        self.log.calls.append(f"{verb} {shown}")
        try:
            return self._requester.requestJsonAndCheck(verb, url, parameters=params, input=body)
        except GitHubError:
            raise
        except GithubException as exc:
            reset = rate_limit_reset(exc.status, exc.headers)
            if reset is not None:
                raise GitHubError(rate_limit_message(verb, shown, exc.status, reset, self._now()),
                                  status=exc.status) from None
            message = exc.data.get("message") if isinstance(exc.data, dict) else exc.data
            raise GitHubError(failure_message(verb, shown, url, exc.status, message), status=exc.status) from None
        except Exception as exc:  # connection refused, retries exhausted at the transport level, ...
            if verb == "POST" and "timeout" in type(exc).__name__.lower():
                raise GitHubError(f"GitHub API {verb} {shown} did not answer in time ({type(exc).__name__}); it may "
                                  "have been carried out, so it was not sent again. Re-run the job: it reads the "
                                  "current state before writing.") from None
            raise GitHubError(f"GitHub API {verb} {shown} failed: {type(exc).__name__}: {exc}. "
                              "Nothing was decided; re-run the job.") from None

    def _get(self, path: str, params: dict | None = None) -> Any:
        return self._request("GET", path, params)[1]

    def _list(self, path: str, params: dict | None = None, key: str | None = None) -> list[dict]:
        """All pages of a list endpoint, cached: the same list is never fetched twice per process."""
        return list(self._iter(path, params, key))

    def _iter(self, path: str, params: dict | None = None, key: str | None = None):
        """Items of a list endpoint, fetched page by page only as far as the caller reads.

        Pages already fetched are kept, and a later reader continues where the last one stopped, so
        each page is requested at most once per process.
        """
        cache_key = f"list:{path}?{sorted((params or {}).items())}"
        state = self._cache.setdefault(cache_key, {"items": [], "next": (path, {**(params or {}), "per_page": PER_PAGE}),
                                                   "pages": 0})
        i = 0
        while True:
            while i < len(state["items"]):
                yield state["items"][i]
                i += 1
            if state["next"] is None:
                return
            if state["pages"] >= MAX_PAGES:
                raise GitHubError(f"GitHub API GET {path}: more than {MAX_PAGES} pages; "
                                  "refusing to decide on a partial list.")
            url, query = state["next"]
            headers, data = self._request("GET", url, query)
            page = data.get(key) if key and isinstance(data, dict) else data
            if not isinstance(page, list):
                raise GitHubError(f"GitHub API GET {path}: expected a list{f' under {key!r}' if key else ''}, "
                                  f"got {type(page).__name__}; refusing to decide.")
            state["pages"] += 1
            state["items"].extend(page)
            match = _NEXT.search(headers.get("link", "") or "")
            state["next"] = (match.group(1), None) if match else None
            total = data.get("total_count") if key and isinstance(data, dict) else None
            if state["next"] is None and isinstance(total, int) and len(state["items"]) < total:
                # the last page came without `Link: next` yet GitHub counts more: never decide on a partial list
                raise GitHubError(f"GitHub API GET {path}: the list ended after {len(state['items'])} of its "
                                  f"{total} items; refusing to decide on a partial list. Re-run the job.")
            if state["next"] is None and total is None and len(page) >= PER_PAGE:
                self._probe_after_full_page(path, params, key, state["pages"])

    def _probe_after_full_page(self, path: str, params: dict | None, key: str | None, pages: int) -> None:
        """A list without a total ended on a full page and no `Link: next`. GitHub fills every page but
        the last, so that is either a list of an exact multiple of PER_PAGE items or a page whose link
        a proxy dropped; the timeline's label events after the last comment are covered by no count,
        so ask for the next page by number (these REST lists are page-numbered) and refuse if it holds
        anything."""
        _, data = self._request("GET", path, {**(params or {}), "per_page": PER_PAGE, "page": pages + 1})
        more = data.get(key) if key and isinstance(data, dict) else data
        if more:
            raise GitHubError(f"GitHub API GET {path}: page {pages} came full without `Link: next`, yet page "
                              f"{pages + 1} has items; refusing to decide on a partial list. Re-run the job.")

    def _r(self, suffix: str) -> str:
        return f"/repos/{self.repo}{suffix}"

    # ---- the calls ci-tools makes ---------------------------------------------------------------
    def pulls_for_commit(self, sha: str) -> list[PullRequest]:
        return [pull_request_from(p, f"commits/{sha[:12]}/pulls", _Reader("GitHub API"))
                for p in self._list(self._r(f"/commits/{sha}/pulls"))]

    def merged_pull_requests(self, sha: str) -> list[PullRequest]:
        """The merged PRs of a commit, asked again (ASSOCIATION_WAITS) while GitHub reports none."""
        for wait in (*ASSOCIATION_WAITS, None):
            merged = [p for p in self.pulls_for_commit(sha) if p.merged_at]
            if merged or wait is None:
                return merged
            self._cache.pop(f"list:{self._r(f'/commits/{sha}/pulls')}?[]", None)   # _iter's key, no params
            self.log.sleeps.append(wait)
            self._sleep(wait)
        return []

    def open_pull_numbers(self, base: str | None) -> list[int]:
        """The numbers of the open PRs into `base` (None: into any branch), oldest first (every page)."""
        params = {"state": "open", **({"base": base} if base else {}), "sort": "created", "direction": "asc"}
        return [int(p["number"]) for p in self._list(self._r("/pulls"), params)]

    def _pull(self, number: int) -> dict:
        key = f"pull:{number}"
        if key not in self._cache:
            self._cache[key] = self._get(self._r(f"/pulls/{number}"))
        return self._cache[key]

    def pull_request(self, number: int) -> PullRequest:
        """The PR, parsed once into the plain `PullRequest` the decisions take."""
        return pull_request_from(self._pull(number), f"pulls/{number}", _Reader("GitHub API"))

    def pull_files(self, number: int) -> list[str]:
        """Every path the PR changes: each file's name and, for a renamed one, its old name too (a move
        takes the file away from the old path, so whoever owns that path must approve it as well).
        GitHubError when GitHub listed fewer than the PR's `changed_files` (the endpoint stops at
        3,000): a sign-off is never verified on a partial list."""
        entries = self._list(self._r(f"/pulls/{number}/files"))
        total = self._pull(number).get("changed_files")
        if isinstance(total, int) and len(entries) < total:
            raise GitHubError(f"GitHub listed {len(entries)} of the {total} files PR #{number} changes (it lists at most "
                              "3,000); refusing to decide on a partial list.")
        paths: list[str] = []
        for f in entries:
            paths.append(f["filename"])
            if f.get("previous_filename") and f["previous_filename"] != f["filename"]:
                paths.append(str(f["previous_filename"]))
        return paths

    def timeline(self, number: int) -> list[dict]:
        """Comments, label events and commits of a PR in one chronological list; GitHubError when it
        holds fewer comments than the PR counts (`_check_comments`)."""
        expected = self._comment_count(number)
        items = self._list(self._r(f"/issues/{number}/timeline"))
        self._check_comments(number, sum(1 for i in items if i.get("event") == "commented"), expected, "timeline")
        return items

    def _comment_count(self, number: int) -> int | None:
        """The PR's own count of its conversation comments, read BEFORE a list is: comments posted
        meanwhile only make the list longer, so a list shorter than the count is cut short."""
        count = self._pull(number).get("comments")
        return count if isinstance(count, int) and not isinstance(count, bool) else None

    def _check_comments(self, number: int, listed: int, expected: int | None, what: str) -> None:
        # The timeline and comment lists carry no total_count: the only proof that no page is missing
        # (a proxy that drops `Link: next`, a short page taken as the last) is the PR's comment count.
        # Comments this client deleted since are allowed for; one deleted by someone else between the
        # two reads fails the job (re-run), which is the safe side.
        if expected is not None and listed < expected - self._deleted:
            raise GitHubError(f"GitHub API GET {self._r(f'/issues/{number}/{what}')}: the list holds {listed} of the "
                              f"{expected} comments PR #{number} counts, so a page is missing; refusing to decide "
                              "on a partial list. Re-run the job.")

    def comment(self, comment_id: int) -> Comment:
        return comment_from_json(self._get(self._r(f"/issues/comments/{comment_id}")))

    def create_comment(self, number: int, body: str) -> dict:
        return self._request("POST", self._r(f"/issues/{number}/comments"), body={"body": body})[1]

    def update_comment(self, comment_id: int, body: str) -> dict:
        return self._request("PATCH", self._r(f"/issues/comments/{comment_id}"), body={"body": body})[1]

    def permission(self, login: str) -> str:
        """The user's repository permission; `PERMISSION_NOT_FOUND` where GitHub answers 404 (it does
        for some users who are not collaborators): one commenter's missing record is their lack of
        permission, never a failure of the whole decision (issue 23)."""
        key = f"perm:{login.lower()}"
        if key not in self._cache:
            try:
                data = self._get(self._r(f"/collaborators/{login}/permission"))
                self._cache[key] = str(data.get("permission", "none"))
            except GitHubError as exc:
                if exc.status != 404:
                    raise
                self._cache[key] = PERMISSION_NOT_FOUND
        return self._cache[key]

    def team_member(self, org: str, team: str, login: str) -> bool:
        """Is `login` an active member of @org/team? GitHub answers 404 both for "not a member" and for a
        team this token cannot see (a GITHUB_TOKEN never can: it has no organization permissions), so a
        404 counts as "not a member" only once the team itself is readable; otherwise `TeamUnreadable`."""
        key = f"team:{org}/{team}:{login.lower()}"
        if key not in self._cache:
            try:
                data = self._get(f"/orgs/{org}/teams/{team}/memberships/{login}")
                self._cache[key] = data.get("state") == "active"
            except GitHubError as exc:
                if exc.status not in (403, 404):
                    raise
                if exc.status == 403 or not self._team_visible(org, team):
                    raise TeamUnreadable(
                        f"cannot read team membership with this token: GitHub answers {exc.status} for "
                        f"@{org}/{team}. A GITHUB_TOKEN cannot read organization teams; the workflow needs "
                        "TEAM_MEMBERSHIP_TOKEN, a token with the organization permission Members: read "
                        "(see docs/workflows.md, \"Deployment prerequisites\")", status=exc.status) from None
                self._cache[key] = False
        return self._cache[key]

    def _team_visible(self, org: str, team: str) -> bool:
        key = f"team:{org}/{team}"
        if key not in self._cache:
            try:
                self._get(f"/orgs/{org}/teams/{team}")
                self._cache[key] = True
            except GitHubError as exc:
                if exc.status not in (403, 404):
                    raise
                self._cache[key] = False
        return self._cache[key]

    def review(self, number: int, review_id: int) -> dict:
        return self._get(self._r(f"/pulls/{number}/reviews/{review_id}"))

    def review_comment(self, number: int, review_id: int) -> Comment:
        """A review, as the sign-off reads a comment: its body, author and when it was submitted."""
        return comment_from_json(self.review(number, review_id), kind="review")

    def edit_history(self, node_id: str) -> EditHistory:
        """Who edited a comment or review body and when, from the edit history GitHub keeps (GraphQL
        `userContentEdits`; REST has none). Every page is read: a sign-off is judged on all its edits."""
        editors: list[str | None] = []
        after, last_edited, author = None, None, ""
        for _ in range(MAX_PAGES):
            data = self.graphql(_EDITS_QUERY, {"id": node_id, "after": after})
            node = data.get("node")
            if not isinstance(node, dict):
                raise GitHubError(f"GitHub GraphQL: no comment or review with id {node_id!r}; its edit history "
                                  "cannot be read, so nothing was decided.")
            author = str((node.get("author") or {}).get("login") or "")
            last_edited = node.get("lastEditedAt")
            edits = node.get("userContentEdits") or {}
            for e in edits.get("nodes") or []:
                editors.append((e.get("editor") or {}).get("login") if isinstance(e, dict) else None)
            info = edits.get("pageInfo") or {}
            if not info.get("hasNextPage"):
                if len(editors) < int(edits.get("totalCount") or 0):
                    raise GitHubError(f"GitHub GraphQL: the edit history of {node_id} lists {len(editors)} of its "
                                      f"{edits.get('totalCount')} edits; refusing to decide on a partial list.")
                return EditHistory(author=author, last_edited_at=last_edited, editors=tuple(editors))
            after = info.get("endCursor")
        raise GitHubError(f"GitHub GraphQL: the edit history of {node_id} has more than {MAX_PAGES} pages; refusing "
                          "to decide on a partial list.")

    def graphql(self, query: str, variables: dict) -> dict:
        """One GraphQL query. GitHub answers errors with HTTP 200 and an `errors` list: those fail too."""
        _, data = self._request("POST", self._requester.graphql_url, body={"query": query, "variables": variables})
        if not isinstance(data, dict) or data.get("errors") or not isinstance(data.get("data"), dict):
            errors = data.get("errors") if isinstance(data, dict) else data
            raise GitHubError(f"GitHub GraphQL query failed: {errors!r:.300}. Nothing was decided; a FORBIDDEN "
                              "error means the token cannot read the comment (it needs `pull-requests: read`).")
        return data["data"]

    def _run(self, run_id: int) -> dict:
        key = f"run:{run_id}"
        if key not in self._cache:
            self._cache[key] = self._get(self._r(f"/actions/runs/{run_id}"))
        return self._cache[key]

    def workflow_run(self, run_id: int) -> WorkflowRun:
        """A run, parsed once into the plain `WorkflowRun` the decisions take."""
        return run_from_json(self._run(run_id))

    def runs(self, workflow: str, *, branch: str, event: str = "pull_request",
             status: str = "completed") -> Iterator[WorkflowRun]:
        """A workflow's runs on a branch, newest first, fetched lazily page by page."""
        return (run_from_json(data) for data in self._iter(self._r(f"/actions/workflows/{workflow}/runs"),
                                                           {"branch": branch, "event": event, "status": status},
                                                           key="workflow_runs"))

    def recent_runs(self, workflow: str, *, branch: str, event: str, limit: int = PER_PAGE) -> list[WorkflowRun]:
        """A workflow's newest runs of any status (queued, pending and running ones included): one page."""
        runs = self._iter(self._r(f"/actions/workflows/{workflow}/runs"), {"branch": branch, "event": event},
                          key="workflow_runs")
        return [run_from_json(run) for _, run in zip(range(limit), runs)]

    def active_runs(self) -> list[dict]:
        """Every run of the repository, of any workflow, that waits for or holds runners: GitHub's run
        list filtered by `status` (one value a request), queued runs first, then in-progress ones."""
        return [run for status in ACTIVE_RUN_STATUSES
                for run in self._iter(self._r("/actions/runs"), {"status": status}, key="workflow_runs")]

    def artifacts(self, run_id: int) -> list[Artifact]:
        return [artifact_from_json(a) for a in self._list(self._r(f"/actions/runs/{run_id}/artifacts"), key="artifacts")
                if isinstance(a, dict) and isinstance(a.get("id"), int)]

    def run_plan(self, run_id: int, *, max_bytes: int = 16 * 1024 * 1024) -> dict | None:
        """The plan a run recorded when it started (`plan.json` in its changelog-metadata artifact), or
        None when it has none; cached. Only a missing file is None: a failed download fails closed."""
        import io
        import json
        import zipfile

        from ci_tools import names

        key = f"plan:{run_id}"
        if key not in self._cache:
            art = named_artifact(self.artifacts(run_id), names.CHANGELOG_METADATA)
            plan = None
            if art is not None:
                data = self.artifact_zip(art.id, max_bytes=max_bytes)
                try:
                    with zipfile.ZipFile(io.BytesIO(data)) as z:
                        member = next((n for n in z.namelist() if n.rsplit("/", 1)[-1] == names.PLAN_JSON), None)
                        if member is not None and z.getinfo(member).file_size <= max_bytes:
                            plan = json.loads(z.read(member))
                except (zipfile.BadZipFile, ValueError, RecursionError) as exc:
                    raise GitHubError(f"run {run_id}'s {names.CHANGELOG_METADATA} artifact is not a readable zip with "
                                      f"a JSON {names.PLAN_JSON} ({type(exc).__name__}); nothing was decided") from None
            self._cache[key] = plan if isinstance(plan, dict) else None
        return self._cache[key]

    def runners(self) -> list[dict]:
        """The repository's self-hosted runners (needs an admin-scoped token)."""
        return self._list(self._r("/actions/runners"), key="runners")

    def commit(self, sha: str) -> dict:
        key = f"commit:{sha}"
        if key not in self._cache:
            self._cache[key] = self._get(self._r(f"/commits/{sha}"))
        return self._cache[key]

    def compare(self, base: str, head: str) -> Comparison:
        key = f"compare:{base}...{head}"
        if key not in self._cache:
            self._cache[key] = comparison_from_json(self._get(self._r(f"/compare/{base}...{head}")))
        return self._cache[key]

    def top_level_tree(self, sha: str) -> dict[str, str]:
        """name -> object sha of the top-level entries of commit `sha`'s tree (two calls, cached): equal
        sha means an unchanged folder, however many files a comparison would have to list."""
        key = f"toptree:{sha}"
        if key not in self._cache:
            tree = self.commit(sha)["commit"]["tree"]["sha"]
            data = self._get(self._r(f"/git/trees/{tree}"))
            self._cache[key] = {str(e.get("path")): str(e.get("sha")) for e in data.get("tree") or []}
        return self._cache[key]

    def create_check_run(self, sha: str, *, name: str, conclusion: str, title: str, summary: str,
                         details_url: str | None = None) -> dict:
        """A completed check run on `sha` (what branch protection requires by `name`), with a title
        and a Markdown summary a reviewer reads on the Checks tab (GitHub keeps 65,535 characters)."""
        body = {"name": name, "head_sha": sha, "status": "completed", "conclusion": conclusion,
                "output": {"title": title[:255], "summary": summary[:MAX_CHECK_SUMMARY]}}
        if details_url:
            body["details_url"] = details_url
        return self._request("POST", self._r("/check-runs"), body=body)[1]

    def check_runs(self, sha: str, name: str | None = None, *, every: bool = False) -> list[dict]:
        """The check runs of `sha` (fresh: a writer reads back what it and others set), newest first, by
        `name` when given: GitHub's newest of each name (its default `filter=latest`), or with `every`
        each one ever created (`filter=all`: a record older than the newest verdict, the sign-off's
        after-push check)."""
        params = {**({"check_name": name} if name else {}), **({"filter": "all"} if every else {})}
        self._cache.pop(f"list:{self._r(f'/commits/{sha}/check-runs')}?{sorted(params.items())}", None)
        return self._list(self._r(f"/commits/{sha}/check-runs"), params, key="check_runs")

    def labels(self) -> list[dict]:
        """The repository's labels (GitHub's objects: name, color, description)."""
        return self._list(self._r("/labels"))

    def create_label(self, name: str, *, color: str, description: str) -> dict:
        return self._request("POST", self._r("/labels"), body={"name": name, "color": color,
                                                               "description": description})[1]

    def update_label(self, name: str, *, color: str, description: str) -> dict:
        from urllib.parse import quote

        return self._request("PATCH", self._r(f"/labels/{quote(name, safe='')}"),
                             body={"new_name": name, "color": color, "description": description})[1]

    def dispatch_run_names(self, repo: str) -> list[str]:
        """The run names of `repo`'s newest repository_dispatch runs (one page, fresh: a re-run asks
        whether its dispatch arrived). The results app names each run for the dispatch it received."""
        _, data = self._request("GET", f"/repos/{repo}/actions/runs",
                                {"event": "repository_dispatch", "per_page": PER_PAGE})
        runs = data.get("workflow_runs") if isinstance(data, dict) else None
        if not isinstance(runs, list):
            raise GitHubError(f"GitHub API GET /repos/{repo}/actions/runs: expected workflow_runs, got "
                              f"{type(runs).__name__}; nothing was sent")
        return [str(r.get("display_title") or "") for r in runs if isinstance(r, dict)]

    # ---- a file-update pull request (config acceptance-update) ----------------------------------
    def branch_sha(self, branch: str) -> str:
        return str(self._get(self._r(f"/git/ref/heads/{branch}"))["object"]["sha"])

    def create_branch(self, branch: str, sha: str) -> dict:
        return self._request("POST", self._r("/git/refs"), body={"ref": f"refs/heads/{branch}", "sha": sha})[1]

    def file_sha(self, path: str, ref: str) -> str | None:
        """The blob sha of `path` at `ref` (what an update must name), None when the file is not there."""
        try:
            data = self._get(self._r(f"/contents/{path}"), {"ref": ref})
        except GitHubError as exc:
            if exc.status == 404:
                return None
            raise
        return str(data.get("sha")) if isinstance(data, dict) else None

    def put_file(self, path: str, text: str, *, branch: str, message: str, sha: str | None) -> dict:
        import base64

        body = {"message": message, "content": base64.b64encode(text.encode("utf-8")).decode("ascii"),
                "branch": branch, **({"sha": sha} if sha else {})}
        return self._request("PUT", self._r(f"/contents/{path}"), body=body)[1]

    def create_pull(self, *, title: str, head: str, base: str, body: str) -> dict:
        return self._request("POST", self._r("/pulls"), body={"title": title, "head": head, "base": base,
                                                               "body": body})[1]

    def dispatch(self, repo: str, event_type: str, client_payload: dict) -> None:
        self._request("POST", f"/repos/{repo}/dispatches",
                      body={"event_type": event_type, "client_payload": client_payload})

    # ---- the status card, main's results --------------------------------------------------------
    def issue_comments(self, number: int, *, fresh: bool = False) -> list[Comment]:
        """A PR's conversation comments; `fresh` reads them again instead of from this process's cache
        (the card writer must see what another job wrote a moment ago)."""
        path, params = self._r(f"/issues/{number}/comments"), None
        if fresh:
            self._cache.pop(f"list:{path}?{sorted((params or {}).items())}", None)
        expected = self._comment_count(number)
        items = self._list(path, params)
        self._check_comments(number, len(items), expected, "comments")
        return [comment_from_json(c) for c in items]

    def delete_comment(self, comment_id: int) -> None:
        self._request("DELETE", self._r(f"/issues/comments/{comment_id}"))
        self._deleted += 1

    def run_jobs(self, run_id: int) -> list[Job]:
        """The jobs of a run's latest attempt (called workflows' jobs included, named `caller / job`)."""
        return [job_from_json(j) for j in self._list(self._r(f"/actions/runs/{run_id}/jobs"), {"filter": "latest"},
                                                     key="jobs") if isinstance(j, dict)]

    def artifact_zip(self, artifact_id: int, *, max_bytes: int = 256 * 1024 * 1024) -> bytes:
        """An artifact's zip archive. GitHub answers with a redirect to short-lived storage on another
        host; each hop is followed here, and the token goes only to the API's own origin
        (`http_policy.sends_token`), whatever the redirect says."""
        import httpx

        path = self._r(f"/actions/artifacts/{artifact_id}/zip")
        url, what = f"{self._api_url}{path}", f"artifact {artifact_id}"
        self.log.calls.append(f"GET {path}")
        try:
            with httpx.Client(timeout=120, follow_redirects=False) as http:
                transport = Transport(http, self.log, sleep=self._sleep, now=self._now)
                for _ in range(MAX_REDIRECTS + 1):
                    headers = {"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": API_VERSION}
                    if policy.sends_token(url, self._api_url):
                        headers["Authorization"] = f"Bearer {self._token}"
                    resp = transport.send(http.build_request("GET", url, headers=headers), stream=True)
                    try:
                        if resp.is_redirect and "location" in resp.headers:
                            url = str(resp.url.join(resp.headers["location"]))
                            continue
                        return self._archive(resp, artifact_id, max_bytes)
                    finally:
                        resp.close()
                raise GitHubError(f"GitHub API GET {what} failed: more than {MAX_REDIRECTS} redirects; nothing was "
                                  "decided, re-run the job")
        except GaveUp as exc:
            status = exc.response.status_code if exc.response is not None else None
            if exc.decision.reason == policy.RATE_LIMITED:
                raise GitHubError(rate_limit_message("GET", what, status, exc.decision.reset or 0, self._now()),
                                  status=status) from None
            raise GitHubError(f"GitHub API GET {what} failed: HTTP {status}: GitHub asked us to wait "
                              f"{exc.decision.delay:.0f}s (more than {MAX_WAIT_SECONDS:.0f}s); nothing was decided, "
                              "re-run the job later", status=status) from None
        except httpx.HTTPError as exc:
            raise GitHubError(f"GitHub API GET {what} failed: {type(exc).__name__}: {exc}; nothing was decided, "
                              "re-run the job") from None

    @staticmethod
    def _archive(resp: Any, artifact_id: int, max_bytes: int) -> bytes:
        if resp.status_code == 410:
            raise GitHubError(f"artifact {artifact_id} has expired (GitHub answers 410 once an artifact's "
                              "retention, 90 days by default, is over); it cannot be downloaded any more", status=410)
        if resp.status_code != 200:
            raise GitHubError(f"GitHub API GET artifact {artifact_id} failed: HTTP {resp.status_code}"
                              + (" (after retries)" if resp.status_code >= 500 else ""), status=resp.status_code)
        chunks, size = [], 0
        for chunk in resp.iter_bytes():
            size += len(chunk)
            if size > max_bytes:
                raise GitHubError(f"artifact {artifact_id} is larger than {max_bytes} bytes; not read")
            chunks.append(chunk)
        return b"".join(chunks)
