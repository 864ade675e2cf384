"""The canary-release protocol, as one pure decision.

Each canary job of `benchmark.yml` that ran and produced a valid result uploads the artifact
`canary-passed-<its job index>` holding one file, `family`, whose line is its row's runner label
(names in `ci_tools.names`). The release job downloads every such artifact and `ci-tools plan
--canary-dir` hands what it found here, with the plan's canary rows in the order the canary matrix
ran them. A family is released only by the marker of its own canary: a marker whose index is not a
planned canary, whose text names another family, or that is not one line is ignored with a note,
and its family stays held back (fail closed), as does a family whose canary left no marker.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping, Sequence

from ci_tools import names

_INDEX = re.compile(re.escape(names.CANARY_PASSED_PREFIX) + r"(0|[1-9][0-9]{0,5})")


@dataclass(frozen=True)
class Release:
    passed: frozenset[str]          # the families whose canary passed
    notes: tuple[str, ...] = ()     # markers ignored, and why


def released_families(markers: Mapping[str, str | None], canaries: Sequence[Mapping]) -> Release:
    """`markers`: artifact folder name -> the text of its `family` file (None when it has none)."""
    passed: set[str] = set()
    notes: list[str] = []
    for name in sorted(markers):
        text = markers[name]
        m = _INDEX.fullmatch(name)
        if m is None or int(m.group(1)) >= len(canaries):
            known = (f"{names.CANARY_PASSED_PREFIX}0 to {names.CANARY_PASSED_PREFIX}{len(canaries) - 1}"
                     if canaries else "none")
            notes.append(f"{name}: not the marker of a planned canary ({len(canaries)} planned: {known}); ignored")
            continue
        expected = str(canaries[int(m.group(1))].get("runner", ""))
        if text is None:
            notes.append(f"{name}: no `{names.CANARY_FAMILY_MARKER}` file; {expected} is not released by it")
        elif text.removesuffix("\n") != expected:
            notes.append(f"{name}: names {text.strip()[:80]!r}, but canary {m.group(1)} ran on {expected}; "
                         "ignored, its family is not released by it")
        else:
            passed.add(expected)
    return Release(frozenset(passed), tuple(notes))
