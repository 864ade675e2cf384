"""Remember SIGINT/SIGTERM that arrive before `runner run` has installed its cancel handlers.

Imported first thing by the CLI when the command is `runner run` (only the signal module is loaded),
so a cancel during Python's imports is not lost. The handler installed here keeps the signals it
caught; the supervisor, when it installs its own handlers, finds it as the one it replaces
(`remembered`) and cancels the job before starting anything: status.json says it was cancelled and the
job exits with the signal's code, instead of dying silently. The state lives in the handler object,
which the signal module holds, not in this module.
"""

from __future__ import annotations

import signal
from collections.abc import Iterable


class Remember:
    """The early handler: the signals it caught, in order."""

    def __init__(self) -> None:
        self.signals: list[int] = []

    def __call__(self, signum: int, frame: object) -> None:
        self.signals.append(signum)


def defer() -> None:
    remember = Remember()
    for s in (signal.SIGINT, signal.SIGTERM):
        signal.signal(s, remember)


def remembered(handlers: Iterable[object]) -> int | None:
    """The first signal an early handler among HANDLERS caught (the ones being replaced), if any."""
    for h in handlers:
        if isinstance(h, Remember) and h.signals:
            return h.signals[0]
    return None
