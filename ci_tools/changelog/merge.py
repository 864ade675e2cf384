"""Rewriting the changelog for a PR: placeholder links to the PR's link, and merge-conflict resolution.

Both work on raw bytes, change only what they must, and re-run the gate on their own output
before returning it; anything they cannot do unambiguously is refused with an InputError that
says why and what to do instead.
"""

from __future__ import annotations

import re

from ci_tools.changelog import schema
from ci_tools.changelog.lint import LintResult, Mode, lint_change
from ci_tools.changelog.parse import Entry, entry_starts, parse_entries
from ci_tools.errors import Finding, InputError

_PR_LINK_LINE = re.compile(rb"^  pr-link:[^\n]*", re.M)


def entry_block(content: bytes, index: int, starts: list[int] | None = None) -> tuple[int, int]:
    """[start, end) of entry `index` in `content`, without the blank/whitespace lines that follow it."""
    starts = entry_starts(content) if starts is None else starts
    start = starts[index]
    end = starts[index + 1] if index + 1 < len(starts) else len(content)
    lines = content[start:end].split(b"\n")
    # split() leaves a final "" for the trailing newline; drop it and any blank lines before it
    while lines and not lines[-1].strip(b" "):
        lines.pop()
    return start, start + sum(len(x) + 1 for x in lines)


def replace_link(block: bytes, link: str) -> bytes:
    """The block with its one top-level `  pr-link:` line replaced."""
    found = _PR_LINK_LINE.findall(block)
    if len(found) != 1:
        raise InputError(f"cannot find exactly one `  pr-link:` line in the entry starting {block[:40]!r}; edit it by hand")
    return _PR_LINK_LINE.sub(lambda _m: b"  pr-link: " + link.encode(), block, count=1)


def _refuse(message: str, result: LintResult | None = None, side: str = "") -> InputError:
    findings = []
    if result is not None:
        findings = [Finding(f.file, f.line, f.col, f"{side}{f.message}", f.hint) for f in result.errors]
    return InputError(message, findings=findings)


def canonicalize(base: bytes | None, head: bytes, *, file: str, repo: str, pr: int) -> bytes:
    """Rewrite the placeholder pr-links of the entries head appended to base into the PR's link."""
    expected = schema.pr_url(repo, pr)
    mode = Mode(repo=repo, pr=pr)
    result = lint_change(base, head, file=file, mode=mode, master_keys=None)
    if not result.ok:
        raise _refuse(f"{file} does not pass the changelog gate for PR #{pr}; fix it first", result)
    starts = entry_starts(head)
    out = head
    for entry in reversed(result.added):  # back to front keeps earlier offsets valid
        if entry.data.get("pr-link") == expected:
            continue
        start, end = entry_block(out, entry.index, starts)
        out = out[:start] + replace_link(out[start:end], expected) + out[end:]
    check = lint_change(base, out, file=file, mode=mode, master_keys=None)
    if not check.ok or any(e.data.get("pr-link") != expected for e in check.added):
        raise _refuse("canonicalising the links produced an invalid file (a ci-tools bug); nothing was written", check)
    return out


def _signature(data: dict) -> dict:
    return {k: v for k, v in data.items() if k != "pr-link"}


def resolve_conflict(base: bytes, ours: bytes, theirs: bytes, *, file: str, repo: str, pr: int) -> bytes:
    """Resolve a changelog conflict of merging main into PR #pr.

    base = index stage 1 (merge base), ours = stage 2 (the PR branch), theirs = stage 3 (main).
    The result is main's bytes with the PR's own appended entries re-appended (each once, link
    canonicalised), or main's bytes with the PR's pr-link corrections applied.
    """
    expected = schema.pr_url(repo, pr)
    mode = Mode(repo=repo, pr=pr)
    pr_side = lint_change(base, ours, file=file, mode=mode, master_keys=None)
    if not pr_side.ok:
        raise _refuse("the PR's version of the changelog is not a clean change of the merge base"
                      " (it edits history or breaks the layout); resolve by hand", pr_side, side="PR side: ")
    try:
        base_entries = parse_entries(base, file)
        main_entries = parse_entries(theirs, file)
    except InputError as exc:
        raise InputError(f"cannot read main's or the merge base's version of {file}: {exc.message}",
                         findings=exc.findings) from None
    if len(main_entries) < len(base_entries):
        raise InputError(f"main's {file} has fewer entries than the merge base (entries were deleted on main);"
                         " resolve by hand")
    main_new = main_entries[len(base_entries):]

    if pr_side.added:
        blocks: list[bytes] = []
        starts = entry_starts(ours)
        for entry in pr_side.added:
            twins = [m for m in main_new if _signature(m.data) == _signature(entry.data)]
            if any(m.data.get("pr-link") == expected for m in twins):
                continue  # already on main, with this PR's link
            if any(schema.is_placeholder(m.data.get("pr-link"), repo) for m in twins):
                m = next(m for m in twins if schema.is_placeholder(m.data.get("pr-link"), repo))
                raise InputError(f"main already has an entry identical to the PR's entry {entry.index + 1}, with a"
                                 f" placeholder link (main's line {m.line}); cannot tell whether it is this PR's; resolve by hand")
            start, end = entry_block(ours, entry.index, starts)
            blocks.append(replace_link(ours[start:end], expected))
        if not blocks:
            raise InputError(f"the PR has no changelog contribution remaining after merging main: every entry it"
                             f" appended is already on main with {expected}; take main's version"
                             f" (`git checkout --theirs {file}`)")
        sep = b"" if (not theirs or theirs.endswith(b"\n\n")) else b"\n"
        result = theirs + sep + b"\n".join(blocks)
        check = lint_change(theirs, result, file=file, mode=mode, master_keys=None)
        if not check.ok:
            raise _refuse(f"main's {file} does not end the way new entries can follow (see below); resolve by hand",
                          check)
        if len(check.added) != len(blocks):
            raise InputError("re-appending the PR's entries did not give one new entry per block (a ci-tools bug)")
        return result

    if pr_side.corrections:
        base_by_i: list[Entry] = base_entries
        ours_entries = parse_entries(ours, file)
        main_starts = entry_starts(theirs)
        out = theirs
        replaced = 0
        for i in reversed(range(len(base_by_i))):
            link = ours_entries[i].data.get("pr-link")
            if link == base_by_i[i].data.get("pr-link"):
                continue
            m = main_entries[i]
            if _signature(m.data) != _signature(base_by_i[i].data):
                raise InputError(f"main changed entry {i + 1}, which the PR corrects; resolve by hand")
            if m.data.get("pr-link") == link:
                continue
            if m.data.get("pr-link") != base_by_i[i].data.get("pr-link"):
                raise InputError(f"main has a different pr-link for entry {i + 1} ({m.data.get('pr-link')!r}) than"
                                 f" the PR's correction ({link!r}); resolve by hand")
            assert isinstance(link, str)     # the PR side passed the gate: a correction writes a canonical link
            start, end = entry_block(out, i, main_starts)
            out = out[:start] + replace_link(out[start:end], link) + out[end:]
            replaced += 1
        if not replaced:
            raise InputError("the PR's pr-link corrections are already on main; take main's version"
                             f" (`git checkout --theirs {file}`)")
        check = lint_change(theirs, out, file=file, mode=mode, master_keys=None)
        if not check.ok or check.corrections != replaced:
            raise _refuse("applying the PR's corrections to main's version failed the gate; resolve by hand", check)
        return out

    raise InputError("the PR's version of the changelog neither appends an entry nor corrects a pr-link;"
                     f" nothing to preserve: take main's version (`git checkout --theirs {file}`)")

