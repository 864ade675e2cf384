"""Concurrency values of a search-space entry: the one implementation every module uses."""

from __future__ import annotations

from typing import Any, Mapping


def conc_ladder(start: int, end: int, step: int = 2) -> list[int]:
    """Geometric ladder start, start*step, ... clamped so the last value is exactly `end`.

    >>> conc_ladder(4, 100)
    [4, 8, 16, 32, 64, 100]
    """
    if step <= 1:
        raise ValueError("step must be greater than 1")
    if start < 1:
        raise ValueError("start must be at least 1")  # 0 * step == 0: the ladder would never end
    out: list[int] = []
    c = start
    while c <= end:
        out.append(c)
        if c == end:
            break
        c = min(c * step, end)
    return out


def search_space_concs(ss: Mapping[str, Any], step: int = 2) -> list[int]:
    """The concurrencies of one search-space entry: `conc-list` verbatim when non-empty, else the range."""
    conc_list = ss.get("conc-list")
    if conc_list:
        return list(conc_list)
    start, end = ss.get("conc-start"), ss.get("conc-end")
    if start is None or end is None:
        return []
    return conc_ladder(start, end, step)
