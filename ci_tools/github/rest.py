"""GitHub's REST API under the client: the requests, their retries and failures, pagination, artifacts.

PyGithub's `Requester` does the API's HTTP (auth headers, API version, JSON, error mapping); artifact
archives come through httpx, because PyGithub refuses hosts outside GitHub's domains and GitHub
redirects a download to its blob storage. Both apply one retry policy (`http_policy.decide`, pure),
through public hooks only (urllib3's `Retry`, `transport.Transport`). This module adds:

- bounded retries with backoff on 5xx, 429 and secondary rate limits, honouring `Retry-After`, with
  the sleep injectable so tests stay fast; a write is never sent again once it may have reached GitHub
  (a retry could post a second comment); the token only ever goes to the API's own origin;
- pagination by following `Link: rel="next"` (never by guessing from a short page), and a list that
  ended early refused against `total_count` where GitHub gives one (the client checks the others);
- a per-process cache so no list is fetched twice, and a request counter tests assert budgets on;
- fail closed: every failure becomes a `GitHubError` naming the call, never a partial answer.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Callable, Self

from ci_tools.errors import InputError
from ci_tools.github import http_policy as policy
from ci_tools.github.endpoints import endpoint_of
from ci_tools.github.http_policy import MAX_RETRIES, MAX_WAIT_SECONDS, rate_limit_reset
from ci_tools.github.transport import CallLog, GaveUp, Transport

if TYPE_CHECKING:
    from types import TracebackType

    from urllib3 import BaseHTTPResponse
    from urllib3.connectionpool import ConnectionPool

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


class GitHubError(InputError):
    """A GitHub API call failed after bounded retries; the command made no decision from partial data."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message, exit_code=1)
        self.status = status


class TeamUnreadable(GitHubError):
    """The token cannot tell whether someone is in a team (GitHub answers 404 both for "not a member"
    and for "this token may not see the team"); callers must fail closed with this reason."""


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


# GitHub's advice against secondary rate limits: a pause between content-creating requests.
WRITE_INTERVAL_S = 1.0
WRITE_INTERVAL_ENV = "CI_TOOLS_WRITE_INTERVAL"


def seconds_from_env(env: Mapping[str, str], name: str, default: float, meaning: str) -> float:
    """A pause or wait the environment may set (`name`), in seconds >= 0; unset or empty: `default`."""
    raw = env.get(name) or ""
    if not raw:
        return default
    try:
        seconds = float(raw)
    except ValueError:
        seconds = -1.0
    if not 0 <= seconds < float("inf"):
        raise InputError(f"{name}={raw!r} is not a number of seconds >= 0 (unset it for the default of "
                         f"{default:g} s: {meaning})")
    return seconds


def write_interval_from_env(env: Mapping[str, str] | None = None) -> float:
    """Seconds between two writes of one client: `CI_TOOLS_WRITE_INTERVAL`, else GitHub's advice. The
    tests against the fake GitHub set 0: a local server has no rate limit, and the pause is all wait."""
    return seconds_from_env(os.environ if env is None else env, WRITE_INTERVAL_ENV, WRITE_INTERVAL_S,
                            "GitHub's advice between writes")


def token_from_env(env: Mapping[str, str] | None = None) -> str:
    env = os.environ if env is None else env
    token = env.get("GITHUB_TOKEN") or env.get("GH_TOKEN")
    if not token:
        raise InputError("no GitHub token: set GITHUB_TOKEN (in a workflow: `env: GITHUB_TOKEN: ${{ github.token }}`)"
                         " or GH_TOKEN")
    return token


def _error_kind(error: BaseException | None) -> str:
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

    def _give_up(pool: ConnectionPool | None, url: str | None, reason: Exception | None) -> MaxRetryError:
        # urllib3 types the hook's pool Optional yet wants one here; its own `Retry.increment` passes
        # the pool on as given, under the same ignore
        return MaxRetryError(pool, url, reason)  # type: ignore[arg-type]

    class _Retry(Retry):
        delay = 0.0

        def is_retry(self, method: str, status_code: int, has_retry_after: bool = False) -> bool:
            return status_code in (403, 429) or 500 <= status_code < 600

        def increment(self, method: str | None = None, url: str | None = None,
                      response: BaseHTTPResponse | None = None, error: Exception | None = None,
                      _pool: ConnectionPool | None = None, _stacktrace: TracebackType | None = None) -> Self:
            verb, shown, attempt = (method or "GET").upper(), str(url), len(self.history) + 1
            if response is None:
                decision = policy.decide(verb, attempt, None, error=_error_kind(error), now=now())
                if decision.reason == policy.MAYBE_SENT and error is not None:
                    raise error   # sent, maybe carried out: never again; the caller words it
                if not decision.retry:
                    raise _give_up(_pool, url, error)
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
                    raise _give_up(_pool, url, ResponseError(f"HTTP {status}"))
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


class Rest:
    """GitHub's REST API as ci-tools talks to it: one retry policy, pagination, a per-process cache, the
    request log, artifact archives. `client.GitHub` adds the calls ci-tools makes."""

    def __init__(self, repo: str, token: str, *, api_url: str = DEFAULT_API_URL,
                 sleep: Callable[[float], None] = time.sleep, timeout: int = 30,
                 seconds_between_writes: float | None = None, now: Callable[[], float] = time.time):
        from github import Auth, Github

        check_pygithub()
        if not re.fullmatch(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+", repo or ""):
            raise InputError(f"repository {repo!r} is not of the form owner/name (set GITHUB_REPOSITORY or --repo)")
        if seconds_between_writes is None:     # every command's client: GitHub's advice unless told otherwise
            seconds_between_writes = write_interval_from_env()
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
    def from_env(cls, repo: str | None = None, env: Mapping[str, str] | None = None, **kw: Any) -> Self:
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
