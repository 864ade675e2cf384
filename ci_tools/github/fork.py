"""The one answer to "is this pull request from a fork?" (core: no I/O, no import).

Apart from `models.py` so that the gate, which needs only this answer, does not pay for building
GitHub's object models (about 6 ms of its ~0.1 s).
"""

from __future__ import annotations


def is_fork(head_repo: str | None, base_repo: str | None) -> bool:
    """Its head repository differs from the base. A deleted fork has no head repository: the safe
    side is "fork"."""
    return not head_repo or head_repo != base_repo
