"""What a sweep measured, and where two commits differ in it (pure): the rebase-safe part of a pin.

InferenceX maintainers recovering a merged PR's ingest checked by hand that the resolved master-config
entries and the recipe files were byte-identical between the sweep's head and the merge commit. This
module is that check. `Measured` holds, for one commit, what the PR's appended changelog entries ask
for, the resolved master entry of every config they select (as a digest of its canonical JSON, and
the master file it is in) and a digest of every recipe file those entries reference. Two commits
measure the same thing exactly when their `Measured` are equal; `differences` names every file and
entry that is not, so a refused pin says which file changed.

The shell that reads a `Measured` from git is `reuse/shell.py`.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Mapping

from ci_tools import names


def digest(value: Any) -> str:
    """A digest of plain data (a master entry, the appended changelog entries), order-independent for mappings."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class Measured:
    sha: str
    keys: tuple[str, ...] = ()                                  # selected config keys, in changelog order
    changelog: str = ""                                         # digest of the appended entries
    entries: Mapping[str, tuple[str, str]] = field(default_factory=dict)   # key -> (master file, digest)
    files: Mapping[str, str | None] = field(default_factory=dict)          # recipe path -> blob digest (None: absent)


def measured_from(sha: str, appended: list[Mapping], selected: list[str], entries: Mapping[str, Mapping],
                  origin: Mapping[str, str], recipes: Mapping[str, bytes | None]) -> Measured:
    """A `Measured` from what the shell read at `sha`: the appended entries' data, the selected keys, their
    master entries and files, and the referenced recipe files' contents."""
    return Measured(
        sha=sha, keys=tuple(selected), changelog=digest([dict(e) for e in appended]),
        entries={k: (origin.get(k, "?"), digest(entries[k])) for k in selected if k in entries},
        files={p: (hashlib.sha256(b).hexdigest() if b is not None else None) for p, b in sorted(recipes.items())})


def differences(a: Measured, b: Measured) -> list[str]:
    """Where `b` measures something other than `a`, one located line each; [] when they are the same."""
    out: list[str] = []
    at = f"`{a.sha[:12]}`", f"`{b.sha[:12]}`"
    if a.keys != b.keys:
        out.append(f"{names.CHANGELOG}: the appended entries select {', '.join(a.keys) or 'nothing'} at {at[0]} "
                   f"but {', '.join(b.keys) or 'nothing'} at {at[1]}")
    elif a.changelog != b.changelog:
        out.append(f"{names.CHANGELOG}: the appended entries differ between {at[0]} and {at[1]}")
    for key in sorted(set(a.entries) & set(b.entries)):
        if a.entries[key][1] != b.entries[key][1]:
            out.append(f"{b.entries[key][0]}: master entry `{key}` changed")
    for path in sorted(set(a.files) | set(b.files)):
        before, after = a.files.get(path, None), b.files.get(path, None)
        if path not in a.files:
            out.append(f"{path}: referenced at {at[1]}, not at {at[0]}")
        elif path not in b.files:
            out.append(f"{path}: referenced at {at[0]}, not at {at[1]}")
        elif before != after:
            out.append(f"{path} changed" if before and after else f"{path}: missing at {at[0] if not before else at[1]}")
    return out


@dataclass(frozen=True)
class InputsCheck:
    """The outcome of comparing a run's head with the commit that will be published."""

    measured: str                       # the run's head
    against: str                        # the PR head or the merge commit
    changed: tuple[str, ...] = ()       # located differences; () when unchanged
    unknown: str | None = None          # why it could not be compared (then the older file rule decides)

    @property
    def same(self) -> bool:
        return self.unknown is None and not self.changed

    def note(self) -> str:
        if self.unknown:
            return f"could not compare what run head `{self.measured[:12]}` measured with `{self.against[:12]}`: {self.unknown}"
        if self.changed:
            return (f"measured commit `{self.measured[:12]}`; at `{self.against[:12]}` " + "; ".join(self.changed))
        if self.measured == self.against:
            return f"measured commit `{self.measured[:12]}`, the commit itself"
        return (f"measured commit `{self.measured[:12]}`; its selected master entries and recipes are unchanged "
                f"at `{self.against[:12]}`")


def compare(a: Measured, b: Measured) -> InputsCheck:
    return InputsCheck(a.sha, b.sha, tuple(differences(a, b)))
