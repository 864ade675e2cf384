"""The HTTP shell under the GitHub client: httpx, with the retry decisions of `http_policy` applied.

Only public httpx calls; the sleep is injected (tests record the schedule instead of waiting), and
every retry and pause goes to the caller's log.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Callable

import httpx

from ci_tools.github import http_policy as policy


@dataclass
class CallLog:
    """Every HTTP request the adapter sent (retries included), for budgets and diagnostics."""

    calls: list[str] = field(default_factory=list)      # "GET /repos/o/r/pulls/1?page=2"
    retries: int = 0
    sleeps: list[float] = field(default_factory=list)

    @property
    def count(self) -> int:
        return len(self.calls)


class GaveUp(Exception):
    """The policy refused to ask again for a reason the caller words (a far rate-limit reset, a wait
    too long); `response` is the last answer, `decision` the policy's."""

    def __init__(self, decision: policy.Decision, response: httpx.Response | None):
        super().__init__(decision.reason)
        self.decision, self.response = decision, response


def error_kind(exc: httpx.HTTPError) -> str:
    """What the policy needs to know about a failure without an answer: was the request sent?"""
    if isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout, httpx.UnsupportedProtocol)):
        return policy.CONNECT
    if isinstance(exc, httpx.TimeoutException):
        return policy.TIMEOUT
    return policy.LOST


def message_of(response: httpx.Response) -> str:
    """GitHub's JSON `message` of an error answer ('' when it has none); reads the body."""
    try:
        data = json.loads(response.read() or b"null")
    except (ValueError, httpx.HTTPError):
        return ""
    return str(data.get("message") or "") if isinstance(data, dict) else ""


class Transport:
    def __init__(self, client: httpx.Client, log: CallLog, *, sleep: Callable[[float], None] = time.sleep,
                 now: Callable[[], float] = time.time):
        self.client, self.log, self._sleep, self._now = client, log, sleep, now

    def send(self, request: httpx.Request, *, stream: bool = False) -> httpx.Response:
        """One request, asked again as the policy says. Returns the last answer (any status) or raises
        the last httpx error or `GaveUp`. A streamed answer is the caller's to close."""
        attempt = 0
        while True:
            attempt += 1
            response, kind = None, None
            try:
                response = self.client.send(request, stream=stream)
            except httpx.HTTPError as exc:
                kind = error_kind(exc)
                decision = policy.decide(request.method, attempt, None, None, kind, now=self._now())
                if not decision.retry:
                    raise
            else:
                message = message_of(response) if response.status_code >= 400 else ""
                decision = policy.decide(request.method, attempt, response.status_code, response.headers,
                                         None, message, now=self._now())
                if not decision.retry:
                    if decision.reason in (policy.RATE_LIMITED, policy.WAIT_TOO_LONG):
                        response.close()
                        raise GaveUp(decision, response)
                    return response
                response.close()
            self.log.retries += 1
            self.log.sleeps.append(decision.delay)
            if decision.delay > 0:
                self._sleep(decision.delay)
