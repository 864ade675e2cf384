"""Remember SIGINT/SIGTERM that arrive before `runner run` has installed its cancel handlers.

Imported first thing by the CLI when the command is `runner run` (only the signal module is loaded),
so a cancel during Python's imports is not lost: the job then writes status.json saying it was
cancelled before it started, and exits with the signal's code, instead of dying silently.
"""

from __future__ import annotations

import signal

PENDING: list[int] = []


def _remember(signum, frame):  # noqa: ARG001
    PENDING.append(signum)


def defer() -> None:
    for s in (signal.SIGINT, signal.SIGTERM):
        signal.signal(s, _remember)
