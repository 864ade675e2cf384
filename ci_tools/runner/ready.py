"""Waiting for the engine: readiness checks as data, polled in order with one deadline (pure).

A check is a URL that must answer 200, and for a frontend what its body must say: Dynamo's
`/v1/models` lists the model once a worker registered it (`ModelListed`), sglang-router's `/workers`
lists every prefill and decode worker healthy (`WorkersRegistered`), or, for aggregated workers,
enough of them healthy (`WorkersHealthy`). Each names its `owner`, the service whose log a timeout
shows. The loop is written against small callables (clock, sleep, HTTP, liveness) so its policy is
tested without sockets; the supervisor passes the real ones (httpx, time, Popen.poll).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass


class NotReady(Exception):
    """A service died or the deadline passed; `message` says which and `tail` shows its log."""

    def __init__(self, message: str, tail: str = ""):
        super().__init__(message)
        self.message = message
        self.tail = tail


@dataclass(frozen=True)
class HttpReady:
    """Ready when `url` answers 200."""
    url: str
    owner: str = "server"          # the process that answers it: its log is shown when it never does

    def accepts(self, body: str) -> bool:
        """Whether a 200 answer's body says the service is ready."""
        return True

    def awaiting(self) -> str:
        """What a 200 must also say ("" when a 200 is enough)."""
        return ""

    def describe(self) -> str:
        """The check as `--dry-run` prints it."""
        return f"{self.url} ({self.awaiting()})" if self.awaiting() else self.url


def _object(body: str) -> dict:
    try:
        data = json.loads(body)
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _healthy(body: str) -> list[dict] | None:
    workers = _object(body).get("workers")
    if not isinstance(workers, list):
        return None
    return [w for w in workers if isinstance(w, dict) and w.get("is_healthy") is True]


@dataclass(frozen=True)
class ModelListed(HttpReady):
    """Dynamo's frontend: `/v1/models` names the model once a worker has registered it."""
    model: str = ""

    def accepts(self, body: str) -> bool:
        models = _object(body).get("data")
        return isinstance(models, list) and any(isinstance(m, dict) and m.get("id") == self.model for m in models)

    def awaiting(self) -> str:
        return f"lists {self.model}"


@dataclass(frozen=True)
class WorkersRegistered(HttpReady):
    """sglang-router in PD mode: `/workers` lists at least this many healthy prefill and decode workers."""
    prefill: int = 0
    decode: int = 0

    def accepts(self, body: str) -> bool:
        healthy = _healthy(body)
        kinds = [w.get("worker_type") for w in healthy or []]
        return healthy is not None and kinds.count("prefill") >= self.prefill and kinds.count("decode") >= self.decode

    def awaiting(self) -> str:
        return f"{self.prefill} prefill + {self.decode} decode healthy"


@dataclass(frozen=True)
class WorkersHealthy(HttpReady):
    """sglang-router over aggregated workers: `/workers` lists at least `count` of them healthy."""
    count: int = 0

    def accepts(self, body: str) -> bool:
        healthy = _healthy(body)
        return healthy is not None and len(healthy) >= self.count

    def awaiting(self) -> str:
        return f"{self.count} worker(s) healthy"


@dataclass
class Probe:
    clock: Callable[[], float]
    sleep: Callable[[float], None]
    get: Callable[[str], tuple[int, str] | None]   # (HTTP status, body); None on a connection error
    dead: Callable[[], tuple[str, int] | None]     # (name, exit code) of a service that exited
    tail: Callable[[str], str]                     # the last lines of a process's log, by its name
    what: Callable[[str], str]                     # how messages name a process ("the server", "prefill-0")
    say: Callable[[str], None]


def wait_ready(checks: Sequence[HttpReady], deadline_s: float, probe: Probe, interval_s: float = 2.0,
               progress_every_s: float = 30.0) -> float:
    """Return the seconds it took; raise NotReady with the log tail otherwise."""
    start = probe.clock()
    last_say = start
    delay = min(0.1, interval_s)  # quick first polls, then every interval_s
    for check in checks:
        url = check.url
        probe.say(f"waiting for {url} (deadline {deadline_s:g} s)")
        while True:
            died = probe.dead()
            if died is not None:
                raise NotReady(f"{probe.what(died[0])} exited with code {died[1]} before {url} answered", probe.tail(died[0]))
            answer = probe.get(url)
            now = probe.clock()
            if answer is not None and answer[0] == 200 and check.accepts(answer[1]):
                probe.say(f"ready: {url} after {now - start:.1f} s")
                break
            if now - start >= deadline_s:
                last = "nothing" if answer is None else str(answer[0])
                if answer is not None and answer[0] == 200:
                    last = f"200 but not yet: {check.awaiting()}"
                raise NotReady(f"{probe.what(check.owner)} was not ready within {deadline_s:g} s ({url} last "
                               f"answered {last})", probe.tail(check.owner))
            if now - last_say >= progress_every_s:
                tail = probe.tail(check.owner).strip().splitlines()[-1:] or [f"({check.owner} log empty)"]
                probe.say(f"still waiting for {url}: {now - start:.0f} s elapsed, "
                          f"{deadline_s - (now - start):.0f} s left; {check.owner} log: {tail[0][:160]}")
                last_say = now
            probe.sleep(delay)
            delay = min(delay * 2, interval_s)
    return probe.clock() - start
