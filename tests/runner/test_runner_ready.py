"""Readiness policy with a fake clock: order of URLs, deadline, death, progress lines."""

from __future__ import annotations

import pytest

from ci_tools.runner.ready import HttpReady, NotReady, Probe, wait_ready


def probe(answers: dict[str, list], exit_at: float | None = None, tail: str = "loading weights 3/8"):
    t = [0.0]
    said: list[str] = []

    def get(url):
        seq = answers[url]
        code = seq.pop(0) if len(seq) > 1 else seq[0]
        return None if code is None else (code, "")

    p = Probe(clock=lambda: t[0], sleep=lambda s: t.__setitem__(0, t[0] + s), get=get,
              dead=lambda: ("server", 9) if exit_at is not None and t[0] >= exit_at else None,
              tail=lambda name: tail, what=lambda name: f"the {name}", say=said.append)
    return p, said, t


def test_urls_in_order_then_ready():
    p, said, t = probe({"h": [None, 503, 200], "m": [200]})
    took = wait_ready([HttpReady("h"), HttpReady("m")], 100, p, interval_s=2)
    assert said[0] == "waiting for h (deadline 100 s)" and said[-1].startswith("ready: m after")
    assert took == pytest.approx(0.1 + 0.2)  # two quick polls before the 200


def test_deadline_shows_last_answer_and_tail():
    p, said, _ = probe({"h": [503]})
    with pytest.raises(NotReady) as exc:
        wait_ready([HttpReady("h")], 10, p, interval_s=2, progress_every_s=4)
    assert exc.value.message == "the server was not ready within 10 s (h last answered 503)"
    assert exc.value.tail == "loading weights 3/8"
    assert any("still waiting for h" in s and "server log: loading weights 3/8" in s for s in said)


def test_death_is_reported_immediately():
    p, _, t = probe({"h": [None]}, exit_at=1.0)
    with pytest.raises(NotReady) as exc:
        wait_ready([HttpReady("h")], 1000, p, interval_s=2)
    assert exc.value.message == "the server exited with code 9 before h answered"
    assert t[0] < 5
