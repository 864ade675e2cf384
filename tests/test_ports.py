"""The tests' server ports (tests/ports.py): outside the kernel's ephemeral range and the runner's default
worker ports, a slice per xdist worker, and only ports that bind now."""

from __future__ import annotations

import itertools
import socket

from tests import ports


def _blocks(monkeypatch, worker: str, count: str, n: int = 500) -> set[int]:
    monkeypatch.setenv("PYTEST_XDIST_WORKER", worker)
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", count)
    return set(itertools.islice(ports._blocks(), n))


def test_blocks_stay_out_of_the_ephemeral_range_and_the_runners_defaults(monkeypatch):
    blocks = _blocks(monkeypatch, "gw0", "1")
    top = ports._ephemeral_start()
    assert blocks and all(ports.LOWEST <= b and b + ports.BLOCK <= top for b in blocks)
    assert not any(set(range(b, b + ports.BLOCK)) & set(ports.RUNNER_DEFAULTS) for b in blocks)


def test_two_workers_never_share_a_block(monkeypatch):
    assert not _blocks(monkeypatch, "gw0", "2") & _blocks(monkeypatch, "gw1", "2")


def test_a_block_someone_holds_is_passed_over(monkeypatch):
    held = socket.socket()
    held.bind(("0.0.0.0", 0))
    taken = held.getsockname()[1]
    try:
        # the walk's next block holds the taken port: it is passed over for the one after it
        monkeypatch.setattr(ports, "_next", iter([taken - taken % ports.BLOCK, 20000]))
        assert ports.free_port() == 20000
    finally:
        held.close()
