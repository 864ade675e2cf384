"""Which master entries a change touches, from a git base revision (`config validate --base REF`).

`touched_keys` is the pure part (compare entries at base and now); `change_since` is the small git
adapter around it. An entry is touched when it is new, when any of its fields differ from the base
revision, or when a recipe file it references changed (`Change.files`).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from ci_tools.config.crossfile import Change
from ci_tools.errors import InputError, UsageError
from ci_tools.yaml.located import YamlDoc, load_yaml_text


def touched_keys(base: object, head: object) -> set[str]:
    """Keys of `head` (a parsed master file) that are new or differ from `base` (None: file is new)."""
    if not isinstance(head, dict):
        return set()
    if not isinstance(base, dict):
        return {k for k in head if isinstance(k, str)}
    return {k for k, v in head.items() if isinstance(k, str) and (k not in base or base[k] != v)}


def _git(root: Path, *args: str) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=False)
    except FileNotFoundError:
        raise UsageError("--base needs git, which is not installed") from None


def change_since(root: Path, base: str, masters: list[YamlDoc], keys: frozenset[str] = frozenset()) -> Change:
    """The Change between `base` and the working tree of the repository at `root`.

    `masters` are the loaded master documents with repo-relative `file` names."""
    if _git(root, "rev-parse", "--verify", "--quiet", f"{base}^{{commit}}").returncode != 0:
        raise UsageError(f"--base {base}: not a commit in the git repository at {root}")
    diff = _git(root, "diff", "--name-only", "--relative", base, "--")
    untracked = _git(root, "ls-files", "--others", "--exclude-standard")
    if diff.returncode != 0:
        raise UsageError(f"--base {base}: git diff failed: {diff.stderr.strip()}")
    files = set(diff.stdout.split("\n")) | set(untracked.stdout.split("\n"))
    files.discard("")
    touched = set(keys)
    for doc in masters:
        if doc.file not in files:
            continue
        shown = _git(root, "show", f"{base}:./{doc.file}")
        old = None
        if shown.returncode == 0:
            try:
                old = load_yaml_text(shown.stdout, f"{base}:{doc.file}").data
            except InputError:
                old = None  # unreadable at base: everything in it counts as touched
        touched |= touched_keys(old, doc.data)
    return Change(frozenset(touched), frozenset(files))
