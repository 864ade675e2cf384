"""Waiting for the engine: poll readiness URLs in order with a deadline, watching the process.

The loop is written against small callables (clock, sleep, HTTP probe, liveness) so its policy
is tested without sockets; `job.py` passes the real ones (httpx, time, Popen.poll).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


class NotReady(Exception):
    """The server died or the deadline passed; `message` says which and `tail` shows its log."""

    def __init__(self, message: str, tail: str = ""):
        super().__init__(message)
        self.message = message
        self.tail = tail


@dataclass
class Probe:
    clock: Callable[[], float]
    sleep: Callable[[float], None]
    get: Callable[[str], int | None]           # HTTP status, None on connection error
    exit_code: Callable[[], int | None]        # None while the server runs
    tail: Callable[[], str]
    say: Callable[[str], None]


def wait_ready(urls: list[str], deadline_s: float, probe: Probe, interval_s: float = 2.0,
               progress_every_s: float = 30.0) -> float:
    """Return the seconds it took; raise NotReady with the log tail otherwise."""
    start = probe.clock()
    last_say = start
    delay = min(0.1, interval_s)  # quick first polls, then every interval_s
    for url in urls:
        probe.say(f"waiting for {url} (deadline {deadline_s:g} s)")
        while True:
            code = probe.exit_code()
            if code is not None:
                raise NotReady(f"the server exited with code {code} before {url} answered", probe.tail())
            status = probe.get(url)
            now = probe.clock()
            if status == 200:
                probe.say(f"ready: {url} after {now - start:.1f} s")
                break
            if now - start >= deadline_s:
                raise NotReady(f"the server was not ready within {deadline_s:g} s ({url} last answered "
                               f"{status if status is not None else 'nothing'})", probe.tail())
            if now - last_say >= progress_every_s:
                last = probe.tail().strip().splitlines()[-1:] or ["(server log empty)"]
                probe.say(f"still waiting for {url}: {now - start:.0f} s elapsed, "
                          f"{deadline_s - (now - start):.0f} s left; server log: {last[0][:160]}")
                last_say = now
            probe.sleep(delay)
            delay = min(delay * 2, interval_s)
    return probe.clock() - start
