"""The missing-entry rule: a change that can move a benchmark number needs a changelog entry.

Pure. The shell (`shell.changed_performance_files`) says which performance-relevant files changed
(the policy's `performance-relevant:` patterns) and which configs each affects; this module compares
that with the keys the appended entries resolve to and says, located on the changed file, what is
missing and the exact entry to append.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field

from ci_tools.errors import Finding


@dataclass(frozen=True)
class ChangedFile:
    path: str
    # The configs the change affects; None when the policy names the file but no config can be told.
    keys: tuple[str, ...] | None
    line: int | None = None                          # where to annotate when no key line is known
    key_lines: dict = field(default_factory=dict, compare=False)  # config key -> line in this file


def relevant(path: str, patterns: list[str]) -> bool:
    """`*` matches across `/` (fnmatch): `recipes/*` names every recipe, however deep."""
    return any(fnmatch.fnmatchcase(path, p) for p in patterns)


def entry_text(keys: list[str]) -> str:
    lines = ["- config-keys:"] + [f"    - {k}" for k in keys]
    lines += ["  description:", '    - "<what changed and why it can move the numbers>"', "  pr-link: XXX"]
    return "\n".join(lines)


def missing_entry_findings(changed: list[ChangedFile], covered: set[str], appended: int,
                           changelog: str) -> list[Finding]:
    """One finding per changed file whose configs no appended entry names (`covered`: the resolved
    keys of all appended entries; `appended`: how many entries the change appends)."""
    missing: dict[str, list[str]] = {}
    for f in changed:
        if f.keys is None:
            if not appended:
                missing[f.path] = []
        else:
            lack = [k for k in f.keys if k not in covered]
            if lack:
                missing[f.path] = lack
    if not missing:
        return []
    every = list(dict.fromkeys(k for ks in missing.values() for k in ks))
    suggestion = entry_text(every) if every else entry_text(["<config-key>"])
    hint = (f"append this entry to {changelog} (after one empty line) and describe the change:\n{suggestion}")
    out = []
    for f in changed:
        if f.path not in missing:
            continue
        lack = missing[f.path]
        if lack:
            what = (f"changes config{'s' if len(lack) > 1 else ''} {', '.join(lack)}"
                    if f.path.endswith("-master.yaml") else f"is served by config{'s' if len(lack) > 1 else ''} {', '.join(lack)}")
            message = (f"{f.path} changed and {what}, but no changelog entry appended by this change names"
                       f" {'them' if len(lack) > 1 else 'it'}; every change that can affect performance needs one")
            line = next((f.key_lines[k] for k in lack if k in f.key_lines), f.line)
        else:
            message = (f"{f.path} changed (the policy names it performance-relevant) but this change appends"
                       " no changelog entry")
            line = f.line
        out.append(Finding(f.path, line, None, message, hint))
    return out
