"""What a commit measures, read from git (the shell of reuse/measured.py).

The checkout is the default branch's (the workflows never run PR code); the PR's commits are read as
git objects only. A commit the clone lacks is fetched from `origin` by SHA once (GitHub serves any
commit of the repository's PR refs that way); when it still cannot be read, or the commit's changelog
cannot be planned, the answer is "unknown" and reuse falls back to its file rule.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from ci_tools import names
from ci_tools.errors import InputError
from ci_tools.prbot.reuse import measured


def measure(git, base: str, sha: str) -> measured.Measured:
    """What `sha` measures: the changelog entries appended since its merge base with `base`, the master
    entries they select and the recipes those reference."""
    from ci_tools.config.crossfile import recipe_refs
    from ci_tools.sweep.inputs import changelog_inputs

    fork = git.merge_base(base, sha)
    entries, head, _ = changelog_inputs(git, fork, sha, names.CHANGELOG, [], None)
    selected = list(dict.fromkeys(k for e in entries for k in e.keys))
    recipes = sorted({path for k in selected if k in head.entries for _, path, _ in recipe_refs(head.entries[k])})
    got = git.read([(sha, p) for p in recipes]) if recipes else {}
    return measured.measured_from(sha, [e.data for e in entries], selected, head.entries, head.files,
                                  {p: got[(sha, p)] for p in recipes})


def inputs_against(repo: Path | None, base: str, target: str, *, fetch: bool = False) -> Callable[[str], measured.InputsCheck]:
    """`reuse.InputsOf` for publishing `target` (the PR head, or the merge commit with its first parent as
    `base`): each run head is measured once. `fetch`: commits the checkout lacks (the run's head, the
    PR head) are fetched from origin by SHA first."""
    from ci_tools.gitio import Git

    cache: dict[str, measured.Measured | str] = {}

    def of(sha: str) -> measured.Measured | str:
        if sha not in cache:
            try:
                if repo is None:
                    raise InputError("no checkout to read commits from")
                git = Git(repo)
                if not (git.has_commit(sha) or fetch and git.fetch_commit(sha)):
                    raise InputError(f"commit {sha[:12]} is not in the checkout and could not be fetched")
                cache[sha] = measure(git, base, sha)
            except InputError as exc:
                cache[sha] = exc.message
        return cache[sha]

    def check(run_head: str) -> measured.InputsCheck:
        if run_head == target:
            return measured.InputsCheck(run_head, target)
        a, b = of(target), of(run_head)
        if isinstance(a, str):
            return measured.InputsCheck(run_head, target, unknown=a)
        if isinstance(b, str):
            return measured.InputsCheck(run_head, target, unknown=b)
        return measured.compare(b, a)

    return check
