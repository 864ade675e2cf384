"""Ports for the servers the tests start (stub engines, routers, Slurm's daemons, the fake GitHub).

A port the kernel picked with bind(0) comes from its ephemeral range, the range it also hands out as the
source port of every outgoing connection: between the test closing its probe socket and the server
binding the port, an HTTP client, Slurm's RPCs or the other pytest worker may take it, and the server
dies with "Address already in use" (seen in CI: a router's port). These ports come from below that
range, where the kernel never picks; each pytest worker walks its own slice of it, and a block is given
out only when every port of it binds now (another session on the machine may hold some).
"""

from __future__ import annotations

import itertools
import os
import random
import socket
from collections.abc import Iterator
from pathlib import Path

LOWEST = 10000
# never given out: where `runner run` puts engines when a test gives no --worker-port (its default 30000,
# then +10 per worker); a test that leaves the default would otherwise meet a block given to another
RUNNER_DEFAULTS = range(30000, 31000)
# a block per call: the runner derives ports from the one it is given (the router's metrics at +1, the
# workers' at +10 each, their bootstrap ports at +1 of those)
BLOCK = 100


def _ephemeral_start() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768   # Linux's default


def _worker() -> tuple[int, int]:
    """(this pytest worker's index, how many workers): (0, 1) without xdist."""
    name = os.environ.get("PYTEST_XDIST_WORKER", "")
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1)
    index = int(name[2:]) if name.startswith("gw") and name[2:].isdigit() else 0
    return index % max(count, 1), max(count, 1)


def _blocks() -> Iterator[int]:
    index, count = _worker()
    blocks = (_ephemeral_start() - LOWEST) // BLOCK
    mine = [b for b in range(index, blocks, count)
            if not set(range(LOWEST + b * BLOCK, LOWEST + (b + 1) * BLOCK)) & set(RUNNER_DEFAULTS)]
    if not mine:
        raise RuntimeError(f"no test ports below the ephemeral range (it starts at {_ephemeral_start()})")
    start = random.randrange(len(mine))   # two sessions on one machine start apart
    for i in itertools.cycle(range(len(mine))):
        yield LOWEST + mine[(start + i) % len(mine)] * BLOCK


def _binds(port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("0.0.0.0", port))
        except OSError:
            return False
    return True


_next = _blocks()


def free_port() -> int:
    """The first port of a block nobody holds now, outside the kernel's ephemeral range."""
    for _ in range((_ephemeral_start() - LOWEST) // BLOCK):
        base = next(_next)
        if all(_binds(p) for p in range(base, base + BLOCK)):
            return base
    raise RuntimeError("every block of test ports is held: is a test leaving servers behind?")


def free_ports(n: int) -> list[int]:
    """N ports of one block (a Slurm cluster's controller and its nodes)."""
    if n > BLOCK:
        raise ValueError(f"{n} ports do not fit one block of {BLOCK}")
    base = free_port()
    return list(range(base, base + n))
