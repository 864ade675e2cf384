"""`changelog lint`'s flow (shell): what to compare (a range, the index, or what pre-commit asks),
both versions and the masters read from git, the gate and the missing-entry rule, and `--fix`.

The decisions are `lint.lint_change`, `coverage.missing_entry_findings` and `lint.fix_appended`, all
pure; this module only gathers their inputs and writes the repaired file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from ci_tools.changelog import shell
from ci_tools.changelog.lint import LintResult, Mode, fix_appended, lint_change
from ci_tools.errors import InputError
from ci_tools.gitio import Git


@dataclass(frozen=True)
class LintRequest:
    base: str | None
    head: str | None
    staged: bool
    hook: bool
    fix: bool
    file: str
    pr: int | None
    repo: str | None
    masters: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)   # PRE_COMMIT_* for --hook


@dataclass(frozen=True)
class LintOutcome:
    result: LintResult
    how: str | None = None          # what --hook compared, for the text output
    fixed_note: str | None = None   # --fix wrote the file: what it did and what is left


def lint(req: LintRequest) -> LintOutcome:
    git = Git(".")
    base, head, staged = req.base, req.head, req.staged
    how = None
    # The missing-entry rule judges a whole change (a PR, a branch); a commit or a pushed range is
    # only part of one (the entry may come in another commit), so those skip it.
    whole_change = not staged
    if req.hook:
        target = shell.hook_target(git, dict(req.env), req.file)
        base, head, how = target.base, target.head, target.how
        staged = head is None
        whole_change = target.kind == "branch"
    local = (staged or req.hook) and req.pr is None
    src = shell.read_sources(git, base=base, head=None if staged else head, file=req.file, masters=req.masters)
    repo = shell.check_repo(req.repo) if req.repo else shell.default_repo(git, None if staged else head)
    mode = Mode(repo=repo, pr=req.pr, local=local)
    result = lint_change(src.base, src.head, file=req.file, mode=mode,
                         master_keys=src.master_keys, masters_label=src.masters_label)
    if whole_change:
        from ci_tools.changelog.coverage import missing_entry_findings

        covered = {k for keys in result.resolved.values() for k in keys}
        result.errors += missing_entry_findings(shell.changed_performance_files(git, src, req.file), covered,
                                                len(result.added), req.file)
    fixed_note = None
    if req.fix and not result.ok:
        fixed_note, result = _fix(git, src, req.file, mode, result)
    return LintOutcome(result, how, fixed_note)


def _fix(git, src, file: str, mode, result):
    """Write the repaired file when that is safe; returns (message or None, the result to report: the
    findings as found, so the user sees what was wrong, with the message saying what is left)."""
    fixed = fix_appended(src.base, src.head)
    if fixed is None or fixed == src.head:
        return None, result
    target = git.toplevel() / file
    if read_worktree(target, file) != src.head:
        return (f"{file}: not fixed: the working-tree file differs from the version checked; check out that version"
                " (or commit your edits) and run --fix again"), result
    target.write_bytes(fixed)
    after = lint_change(src.base, fixed, file=file, mode=mode, master_keys=src.master_keys,
                        masters_label=src.masters_label)
    rest = "it passes the gate now" if after.ok else f"{len(after.errors)} finding(s) above remain to fix by hand"
    return (f"{file}: fixed the whitespace and layout of the new lines in the working tree ({rest});"
            f" review it, then `git add {file}`"), result



def read_worktree(target: Path, file: str) -> bytes:
    try:
        return target.read_bytes()
    except OSError as exc:
        raise InputError(f"{file}: cannot read: {exc.strerror}",
                         exit_code=2 if isinstance(exc, FileNotFoundError) else 1) from None
