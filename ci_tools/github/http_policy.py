"""When to ask GitHub again, and after how long: pure decisions over one answer (or failure) of a request.

The transport (`transport.py`) applies these; keeping them here, over plain data, lets the whole schedule
be tested as a table, and no library's private retry internals are involved.

The rule that matters most: a write (POST, PATCH, PUT, DELETE) is sent again only when it provably never
reached GitHub (the connection could not be opened) or GitHub said it was not carried out (a rate limit
answers before anything is done). After a lost answer, a read timeout or a 5xx it may have been carried
out (a comment posted, a dispatch sent); the job's re-run reads the current state before writing.
"""

from __future__ import annotations

import email.utils
from dataclasses import dataclass
from typing import Any, Mapping
from urllib.parse import urlsplit

MAX_RETRIES = 4
MAX_WAIT_SECONDS = 120.0   # longest single wait we accept (Retry-After / a limit's reset) before failing closed
BACKOFF_BASE = 1.0
BACKOFF_MAX = 30.0
SECONDARY_WAIT = 60.0      # GitHub: after a secondary limit without Retry-After, wait at least a minute
WRITE_VERBS = frozenset({"POST", "PATCH", "PUT", "DELETE"})

# How a request failed without an answer. `connect`: nothing was sent (refused, DNS, connect timeout,
# no free connection); `timeout`: sent, no answer in time; `lost`: sent, the answer broke off or was garbled.
CONNECT, TIMEOUT, LOST = "connect", "timeout", "lost"

# Why a request is not asked again (Decision.reason)
DONE = "done"                        # an answer to act on (2xx, 3xx, or a 4xx that asking again will not change)
EXHAUSTED = "exhausted"              # retries used up
MAYBE_SENT = "maybe-sent"            # a write that may have been carried out
RATE_LIMITED = "rate-limited"        # the primary limit is used up until a reset too far away
WAIT_TOO_LONG = "wait-too-long"      # GitHub asked for a pause longer than MAX_WAIT_SECONDS
RETRY = "retry"


@dataclass(frozen=True)
class Decision:
    retry: bool
    delay: float = 0.0
    reason: str = DONE
    reset: int | None = None          # RATE_LIMITED: the reset GitHub gave (epoch seconds, 0: none given)


def header(headers: Mapping[str, Any] | None, name: str) -> str:
    """One header's value whatever the case of its name ('' when absent)."""
    if not headers:
        return ""
    for key, value in headers.items():
        if key.lower() == name:
            return str(value)
    return ""


def rate_limit_reset(status: int | None, headers: Any) -> int | None:
    """The reset time (epoch seconds) when an answer is GitHub's primary rate limit: 403 or 429 with
    `x-ratelimit-remaining: 0` (a secondary limit comes with Retry-After or its own message instead)."""
    if status not in (403, 429) or header(headers, "x-ratelimit-remaining") != "0":
        return None
    reset = header(headers, "x-ratelimit-reset")
    return int(reset) if reset.isdigit() else 0


def retry_after(headers: Mapping[str, Any] | None, now: float) -> float | None:
    """Retry-After in seconds (delta-seconds or an HTTP date), None when absent or unreadable."""
    value = header(headers, "retry-after").strip()
    if value.isdigit():
        return float(value)
    if value:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when is not None and when.tzinfo is not None:
            return max(0.0, when.timestamp() - now)
    return None


def backoff(attempt: int) -> float:
    """The pause before retry number `attempt` (1, 2, ...): 1 s, 2 s, 4 s, 8 s, at most BACKOFF_MAX."""
    return min(BACKOFF_MAX, BACKOFF_BASE * 2 ** (max(attempt, 1) - 1))


def is_secondary_limit(status: int | None, message: str) -> bool:
    return status in (403, 429) and "secondary rate limit" in message.lower()


def decide(verb: str, attempt: int, status: int | None, headers: Mapping[str, Any] | None = None,
           error: str | None = None, message: str = "", now: float = 0.0) -> Decision:
    """Ask again or not after try number `attempt` (1 for the first) of `verb` ended with `status` and
    `headers` (an answer) or `error` (CONNECT, TIMEOUT, LOST: none), `message` being GitHub's JSON message."""
    write = verb.upper() in WRITE_VERBS
    if error is not None:
        if write and error != CONNECT:
            return Decision(False, reason=MAYBE_SENT)
        wait = backoff(attempt)
    elif status is None or status < 400:
        return Decision(False)
    elif (reset := rate_limit_reset(status, headers)) is not None:
        # Primary limit: nothing helps before the reset (and nothing was carried out). Wait for a near
        # reset; fail now, saying when it resets, for a far or unknown one.
        wait = max(0.0, reset - now) + 1 if reset else MAX_WAIT_SECONDS + 1
        if wait > MAX_WAIT_SECONDS:
            return Decision(False, reason=RATE_LIMITED, reset=reset)
    elif status in (403, 429) and (after := retry_after(headers, now)) is not None:
        wait = after                      # a secondary limit or plain 429: GitHub says when
    elif is_secondary_limit(status, message):
        wait = SECONDARY_WAIT
    elif status == 429:
        wait = backoff(attempt)
    elif status >= 500:
        if write:
            return Decision(False, reason=MAYBE_SENT)   # GitHub may have acted before failing to answer
        after = retry_after(headers, now)
        wait = after if after is not None else backoff(attempt)
    else:
        return Decision(False)            # 4xx: asking again gets the same answer
    if wait > MAX_WAIT_SECONDS:
        return Decision(False, delay=wait, reason=WAIT_TOO_LONG)
    if attempt > MAX_RETRIES:
        return Decision(False, reason=EXHAUSTED)
    return Decision(True, delay=wait, reason=RETRY)


def _origin(url: str) -> tuple[str, str, int | None] | None:
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.hostname:
        return None
    return scheme, parts.hostname.lower(), port or (443 if scheme == "https" else 80)


def same_origin(url: str, api_url: str) -> bool:
    """`url` is on the configured API's scheme, host and port (a relative URL is)."""
    if url.startswith("/") and not url.startswith("//"):
        return True
    mine, theirs = _origin(api_url), _origin(url)
    return mine is not None and mine == theirs


def sends_token(request_url: str, api_url: str) -> bool:
    """Authorization goes only to GitHub's own API host: the configured `api_url`'s (api.github.com for
    github.com), same scheme and port. An artifact download that GitHub redirects to blob storage, or a
    `Link` that points elsewhere, carries no token."""
    return same_origin(request_url, api_url)
