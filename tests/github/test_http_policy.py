"""The retry policy as a table: (verb, attempt, status, headers, error, message) -> retry?, delay, reason;
the transport's backoff schedule through an injected sleep; which URLs get the token."""

from __future__ import annotations

import httpx
import pytest

from ci_tools.github import http_policy as p
from ci_tools.github.transport import CallLog, GaveUp, Transport

NOW = 1_700_000_000.0
RL = {"x-ratelimit-remaining": "0"}
SECONDARY = "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."
WRITES = ("POST", "PATCH", "PUT", "DELETE")

# (verb, attempt, status, headers, error, message) -> (retry, delay, reason)
CASES = [
    # answers to act on
    ("GET", 1, 200, {}, None, "", (False, 0.0, p.DONE)),
    ("GET", 1, 204, {}, None, "", (False, 0.0, p.DONE)),
    ("GET", 1, 302, {}, None, "", (False, 0.0, p.DONE)),
    ("POST", 1, 201, {}, None, "", (False, 0.0, p.DONE)),
    ("GET", 1, 404, {}, None, "Not Found", (False, 0.0, p.DONE)),
    ("GET", 1, 401, {}, None, "Bad credentials", (False, 0.0, p.DONE)),
    ("GET", 1, 403, {}, None, "Resource not accessible by integration", (False, 0.0, p.DONE)),
    ("GET", 1, 410, {}, None, "Artifact has expired", (False, 0.0, p.DONE)),
    ("POST", 1, 422, {}, None, "Validation Failed", (False, 0.0, p.DONE)),
    ("GET", 1, 403, {"x-ratelimit-remaining": "12"}, None, "Forbidden", (False, 0.0, p.DONE)),
    # 5xx on a read: backoff 1, 2, 4, 8 s, then exhausted
    ("GET", 1, 500, {}, None, "", (True, 1.0, p.RETRY)),
    ("GET", 2, 502, {}, None, "", (True, 2.0, p.RETRY)),
    ("GET", 3, 503, {}, None, "", (True, 4.0, p.RETRY)),
    ("GET", 4, 504, {}, None, "", (True, 8.0, p.RETRY)),
    ("GET", 5, 500, {}, None, "", (False, 0.0, p.EXHAUSTED)),
    ("GET", 9, 500, {}, None, "", (False, 0.0, p.EXHAUSTED)),
    ("GET", 1, 503, {"Retry-After": "7"}, None, "", (True, 7.0, p.RETRY)),
    ("GET", 1, 503, {"retry-after": "0"}, None, "", (True, 0.0, p.RETRY)),
    ("GET", 1, 503, {"Retry-After": "soon"}, None, "", (True, 1.0, p.RETRY)),
    ("GET", 1, 503, {"Retry-After": "600"}, None, "", (False, 600.0, p.WAIT_TOO_LONG)),
    ("GET", 1, 503, {"Retry-After": "Tue, 14 Nov 2023 22:13:50 GMT"}, None, "", (True, 30.0, p.RETRY)),
    # 5xx on a write: it may have been carried out
    *[(v, 1, s, {}, None, "", (False, 0.0, p.MAYBE_SENT)) for v in WRITES for s in (500, 502)],
    ("POST", 1, 503, {"Retry-After": "1"}, None, "", (False, 0.0, p.MAYBE_SENT)),
    # no answer: a write is sent again only when it never left (connect), a read always
    ("GET", 1, None, None, p.CONNECT, "", (True, 1.0, p.RETRY)),
    ("GET", 2, None, None, p.TIMEOUT, "", (True, 2.0, p.RETRY)),
    ("GET", 3, None, None, p.LOST, "", (True, 4.0, p.RETRY)),
    ("GET", 5, None, None, p.TIMEOUT, "", (False, 0.0, p.EXHAUSTED)),
    *[(v, 1, None, None, p.CONNECT, "", (True, 1.0, p.RETRY)) for v in WRITES],
    *[(v, 1, None, None, e, "", (False, 0.0, p.MAYBE_SENT)) for v in WRITES for e in (p.TIMEOUT, p.LOST)],
    ("POST", 5, None, None, p.CONNECT, "", (False, 0.0, p.EXHAUSTED)),
    # secondary limits: Retry-After, else a minute; any verb (nothing was carried out)
    ("GET", 1, 403, {"Retry-After": "11"}, None, SECONDARY, (True, 11.0, p.RETRY)),
    ("GET", 1, 403, {}, None, SECONDARY, (True, 60.0, p.RETRY)),
    ("POST", 1, 403, {}, None, SECONDARY, (True, 60.0, p.RETRY)),
    ("PATCH", 2, 403, {"Retry-After": "5"}, None, SECONDARY, (True, 5.0, p.RETRY)),
    ("GET", 1, 429, {"Retry-After": "3"}, None, "Too Many Requests", (True, 3.0, p.RETRY)),
    ("POST", 1, 429, {"Retry-After": "2"}, None, "", (True, 2.0, p.RETRY)),
    ("GET", 2, 429, {}, None, "", (True, 2.0, p.RETRY)),
    ("DELETE", 1, 429, {}, None, "", (True, 1.0, p.RETRY)),
    ("GET", 1, 429, {"Retry-After": "3600"}, None, "", (False, 3600.0, p.WAIT_TOO_LONG)),
    ("POST", 1, 403, {"Retry-After": "121"}, None, SECONDARY, (False, 121.0, p.WAIT_TOO_LONG)),
    ("GET", 5, 429, {"Retry-After": "1"}, None, "", (False, 0.0, p.EXHAUSTED)),
    ("GET", 1, 403, {"Retry-After": "4"}, None, "", (True, 4.0, p.RETRY)),
    # primary limit: wait for a near reset, fail for a far or unknown one, never a permission failure
    ("GET", 1, 403, {**RL, "x-ratelimit-reset": str(int(NOW) + 10)}, None, "", (True, 11.0, p.RETRY)),
    ("GET", 1, 429, {**RL, "x-ratelimit-reset": str(int(NOW) + 10)}, None, "", (True, 11.0, p.RETRY)),
    ("POST", 1, 403, {**RL, "x-ratelimit-reset": str(int(NOW) + 10)}, None, "", (True, 11.0, p.RETRY)),
    ("GET", 1, 403, {**RL, "x-ratelimit-reset": str(int(NOW) - 5)}, None, "", (True, 1.0, p.RETRY)),
    ("GET", 1, 403, {**RL, "x-ratelimit-reset": str(int(NOW) + 3600)}, None, "", (False, 0.0, p.RATE_LIMITED)),
    ("GET", 1, 403, RL, None, "", (False, 0.0, p.RATE_LIMITED)),
    ("GET", 1, 403, {**RL, "x-ratelimit-reset": "later"}, None, "", (False, 0.0, p.RATE_LIMITED)),
    ("GET", 1, 403, {**RL, "X-RateLimit-Reset": str(int(NOW) + 3600), "Retry-After": "1"}, None, "",
     (False, 0.0, p.RATE_LIMITED)),
    ("GET", 1, 500, {**RL, "x-ratelimit-reset": str(int(NOW) + 3600)}, None, "", (True, 1.0, p.RETRY)),
    ("GET", 5, 403, {**RL, "x-ratelimit-reset": str(int(NOW) + 10)}, None, "", (False, 0.0, p.EXHAUSTED)),
    # verbs in any case
    ("post", 1, 502, {}, None, "", (False, 0.0, p.MAYBE_SENT)),
    ("get", 1, 502, {}, None, "", (True, 1.0, p.RETRY)),
    ("HEAD", 1, 502, {}, None, "", (True, 1.0, p.RETRY)),
]


@pytest.mark.parametrize("verb,attempt,status,headers,error,message,expected", CASES)
def test_the_retry_policy(verb, attempt, status, headers, error, message, expected):
    d = p.decide(verb, attempt, status, headers, error, message, now=NOW)
    assert (d.retry, d.delay, d.reason) == expected


def test_a_rate_limit_decision_carries_the_reset():
    reset = int(NOW) + 3600
    assert p.decide("GET", 1, 403, {**RL, "x-ratelimit-reset": str(reset)}, now=NOW).reset == reset


@pytest.mark.parametrize("attempt,delay", [(1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0), (5, 16.0), (6, 30.0), (20, 30.0)])
def test_the_backoff_schedule_doubles_up_to_its_cap(attempt, delay):
    assert p.backoff(attempt) == delay


API = "https://api.github.com"
GHES = "https://ghe.example.com/api/v3"
TOKEN_CASES = [
    (API + "/repos/o/r/pulls", API, True),
    ("/repos/o/r/pulls", API, True),
    ("https://API.GitHub.com/repos/o/r", API, True),
    ("https://api.github.com:443/repos/o/r", API, True),
    ("https://api.github.com/graphql", API, True),
    ("http://api.github.com/repos/o/r", API, False),                 # a downgrade to plain HTTP
    ("https://api.github.com:8443/repos/o/r", API, False),
    ("https://pipelines.actions.githubusercontent.com/x.zip", API, False),   # artifact storage
    ("https://productionresultssa0.blob.core.windows.net/a.zip?sig=x", API, False),
    ("https://github.com/o/r", API, False),
    ("https://uploads.github.com/x", API, False),
    ("https://api.github.com.evil.example/repos", API, False),
    ("https://api.github.com@evil.example/repos", API, False),
    ("//evil.example/repos", API, False),
    ("ftp://api.github.com/x", API, False),
    ("https://ghe.example.com/api/graphql", GHES, True),
    ("https://ghe.example.com/api/v3/repos/o/r", GHES, True),
    ("https://api.github.com/repos/o/r", GHES, False),
    ("http://127.0.0.2:8000/_blob/1", "http://127.0.0.1:8000", False),
]


@pytest.mark.parametrize("url,api_url,sends", TOKEN_CASES)
def test_the_token_goes_only_to_githubs_own_api_host(url, api_url, sends):
    assert p.sends_token(url, api_url) is sends


# ---- the transport: the schedule as slept, through a public httpx transport -------------------------------

def _transport(answers, now=NOW):
    seen, slept, log = [], [], CallLog()

    def handler(request):
        seen.append(request.method)
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        status, headers = answer
        return httpx.Response(status, headers=headers, json={"message": headers.pop("message", "x")})

    client = httpx.Client(transport=httpx.MockTransport(handler), base_url=API)
    return Transport(client, log, sleep=slept.append, now=lambda: now), client, seen, slept, log


def test_five_tries_of_a_failing_get_sleep_1_2_4_8_then_the_last_answer_comes_back():
    t, client, seen, slept, log = _transport([(502, {})] * 5)
    assert t.send(client.build_request("GET", "/x")).status_code == 502
    assert slept == [1.0, 2.0, 4.0, 8.0] and log.retries == 4 and len(seen) == 5


def test_retry_after_and_the_secondary_minute_are_slept_as_given():
    t, client, seen, slept, _ = _transport([(503, {"Retry-After": "7"}), (403, {"message": SECONDARY}), (200, {})])
    assert t.send(client.build_request("GET", "/x")).status_code == 200
    assert slept == [7.0, 60.0]


def test_a_post_after_a_502_or_a_read_timeout_is_sent_once():
    t, client, seen, slept, _ = _transport([(502, {})])
    assert t.send(client.build_request("POST", "/x", json={})).status_code == 502 and seen == ["POST"]
    t, client, seen, slept, _ = _transport([httpx.ReadTimeout("slow")])
    with pytest.raises(httpx.ReadTimeout):
        t.send(client.build_request("POST", "/x", json={}))
    assert seen == ["POST"] and slept == []


def test_a_post_that_could_not_connect_is_sent_again():
    t, client, seen, slept, _ = _transport([httpx.ConnectError("refused"), (201, {})])
    assert t.send(client.build_request("POST", "/x", json={})).status_code == 201
    assert seen == ["POST", "POST"] and slept == [1.0]


def test_a_far_rate_limit_reset_gives_up_without_sleeping():
    t, client, seen, slept, _ = _transport([(403, {**RL, "x-ratelimit-reset": str(int(NOW) + 3600)})])
    with pytest.raises(GaveUp) as err:
        t.send(client.build_request("GET", "/x"))
    assert err.value.decision.reason == p.RATE_LIMITED and slept == []
