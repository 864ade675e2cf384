"""The append-only gate: one pure function from (base bytes, head bytes, master keys, mode) to a verdict.

History is immutable byte for byte. A change is one of:
  * nothing (identical bytes);
  * new entries appended at the physical end, after exactly one empty line, one empty line
    between them, the file ending with exactly one newline;
  * pr-link-only corrections of historical entries to a canonical link, with no other byte changed
    and never together with new entries.
New entries must pass the entry schema, name config keys that exist in the masters at head, and
carry a pr-link allowed in the mode (PR, local pre-commit, or main).

When head extends base byte for byte (the usual PR), the history check is a byte comparison, the
whole file is checked once on the C parser's event stream and only the new entries are built into
data; base is parsed only when history bytes differ, and then only from the first changed entry.
"""

from __future__ import annotations

import re
from typing import Any
from bisect import bisect_right
from dataclasses import dataclass, field

from ci_tools.changelog import schema
from ci_tools.changelog.parse import (Entry, ambiguous_findings, byte_findings, entry_starts, line_of,
                                      parse_entries, parse_tail, structure_ok)
from ci_tools.errors import Finding, InputError

IMMUTABLE_HINT = "restore the base version of the file byte for byte, then append your entry at the end"


@dataclass
class LintResult:
    errors: list[Finding] = field(default_factory=list)
    added: list[Entry] = field(default_factory=list)
    corrections: int = 0
    resolved: dict[int, list[str]] = field(default_factory=dict)  # entry index -> resolved config keys

    @property
    def ok(self) -> bool:
        return not self.errors


@dataclass(frozen=True)
class Mode:
    """Which pr-links new entries may carry. pr set: PR mode; local: pre-commit; neither: main."""

    repo: str
    pr: int | None = None
    local: bool = False


_KEEP_CHOMP = re.compile(rb"[|>][0-9]?\+[0-9]?[ ]*(?:#[^\n]*)?$", re.M)


def _keeps_trailing_lines(base: bytes, last_start: int | None) -> bool:
    """Whether base's last entry ends in a `|+`/`>+` block scalar, which would absorb the empty separator
    line into its value: then appending changes history's parsed content and the full comparison runs."""
    return last_start is not None and _KEEP_CHOMP.search(base, last_start) is not None


def _entry_at(starts: list[int], offset: int) -> int:
    """0-based index of the entry containing byte `offset` (-1: before the first entry)."""
    return bisect_right(starts, offset) - 1


def _common_prefix(a: bytes, b: bytes) -> int:
    n = min(len(a), len(b))
    lo, hi = 0, n
    # binary search on slice equality: C-speed comparisons, O(log n) of them
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _parse(content: bytes, file: str, errors: list[Finding], side: str = "") -> list[Entry] | None:
    try:
        return parse_entries(content, file)
    except InputError as exc:
        for f in exc.findings or [Finding(file, None, None, exc.message)]:
            errors.append(Finding(f.file, f.line, f.col, f"{side}{f.message}" if side else f.message, f.hint))
        return None


def _parse_from(content: bytes, offset: int, index: int, file: str, errors: list[Finding],
                side: str = "") -> list[Entry] | None:
    try:
        return parse_tail(content, offset, index, file) if offset else parse_entries(content, file)
    except InputError as exc:
        for f in exc.findings or [Finding(file, None, None, exc.message)]:
            errors.append(Finding(f.file, f.line, f.col, f"{side}{f.message}" if side else f.message, f.hint))
        return None


def _without_link(data: dict) -> dict:
    return {k: v for k, v in data.items() if k != "pr-link"}


STRAY = "text appended"


def _stray_text(base: bytes, head: bytes, file: str, n_base: int, starts: list[int]) -> Finding:
    """Bytes appended after history that are not a new `- config-keys:` entry."""
    first = len(base)
    while first < len(head):  # the start of the first appended line that is not blank
        end = head.find(b"\n", first)
        if head[first:end].strip(b" "):
            break
        first = end + 1
    line = line_of(head, first)
    if head.startswith(b"- ", first):
        return Finding(file, line, None, f"{STRAY}: the new entry at line {line} does not start with `- config-keys:`",
                       "put config-keys first (`- config-keys:` at column 1), then the other fields indented by two spaces")
    if n_base:
        return Finding(file, line, None,
                       f"{STRAY} to historical entry {n_base} (line {line_of(head, starts[n_base - 1])}):"
                       " historical entries are immutable",
                       "put the change in a new entry appended at the end, after one empty line")
    return Finding(file, line, None, "the changelog must be a list of entries, each starting with `- config-keys:`",
                   "write each entry as `- config-keys:` at column 1, then its fields indented by two spaces")


def _separator_findings(base: bytes, head: bytes, file: str, n_base: int, starts: list[int]) -> list[Finding]:
    """Layout of the appended region head[len(base):] (head extends base byte for byte)."""
    out: list[Finding] = []
    first = starts[n_base]
    gap = head[len(base):first]
    if gap.strip(b" \n"):
        out.append(_stray_text(base, head, file, n_base, starts))
        return out
    want = b"" if (not base or base.endswith(b"\n\n")) else b"\n"
    if gap != want:
        out.append(Finding(file, line_of(head, first), None,
                           "a new entry must be appended after exactly one empty line following the last entry",
                           "leave exactly one empty line (no spaces) between the previous entry and `- config-keys:`"))
    for s in starts[n_base + 1:]:
        content_line = head[head.rfind(b"\n", 0, s - 2) + 1:s - 2]  # the line before the empty one
        if not head.endswith(b"\n\n", 0, s) or head.endswith(b"\n\n\n", 0, s) or not content_line.strip():
            out.append(Finding(file, line_of(head, s), None,
                               "appended entries must be separated by exactly one empty line",
                               "leave exactly one empty line (no spaces) before each `- config-keys:`"))
    out += whitespace_findings(head, len(base), file)
    if head.endswith(b"\n\n"):
        out.append(Finding(file, line_of(head, len(head) - 1), None,
                           "the file must end with exactly one newline; it ends with an empty line",
                           "delete the empty line(s) after the last entry"))
    return out


FIX_HINT = ("run `ci-tools changelog lint --fix` with the same options: it strips trailing spaces from the new"
            " lines only (history stays byte for byte); the pre-commit hook does it for you")


def whitespace_findings(head: bytes, start: int, file: str) -> list[Finding]:
    """The one whitespace rule for new lines: none ends in a space (a line of only spaces included).

    InferenceX let such lines in (14 of its 217 main transitions); they are frozen in its history,
    which is why the rule covers only the lines a change adds, and why `--fix` touches only those.
    """
    region = head[start:]
    if b" \n" not in region:
        return []
    first_line = line_of(head, start)
    bad = [first_line + j for j, text in enumerate(region.split(b"\n")) if text.endswith(b" ")]
    more = (f" (also at line{'s' if len(bad) > 2 else ''} {', '.join(map(str, bad[1:6]))}{', ...' if len(bad) > 6 else ''})"
            if len(bad) > 1 else "")
    return [Finding(file, bad[0], None, f"trailing whitespace in a new line{more}", FIX_HINT)]


def fix_appended(base: bytes | None, head: bytes) -> bytes | None:
    """`lint --fix`: head with the whitespace and layout of its appended region repaired, or None when
    head does not extend base byte for byte (history edits are not something a fixer may guess at).

    Repairs: trailing spaces on new lines, the empty-line separators (exactly one before each new
    entry) and the end of the file (exactly one newline). Nothing else changes.
    """
    base = base or b""
    if not head.startswith(base) or (base and not base.endswith(b"\n")):
        return None
    region = head[len(base):]
    lines = [text.rstrip(b" ") for text in region.split(b"\n")]
    text = b"\n".join(lines)
    # Entry separators: exactly one empty line before every new `- config-keys:` line.
    text = re.sub(rb"\n{2,}(?=- config-keys:)", b"\n\n", text)
    text = text.lstrip(b"\n")
    sep = b"" if (not base or base.endswith(b"\n\n")) else b"\n"
    if text.startswith(b"- config-keys:"):
        text = sep + text
    text = text.rstrip(b"\n") + b"\n" if text.strip(b"\n") else b""
    return base + text


def _correction_finding(file: str, i: int, h: Entry, old_link: Any, repo: str) -> Finding | None:
    """What is wrong with the pr-link correction of historical entry i (`h`: the head's), if anything."""
    link = h.data.get("pr-link")
    at = h.key_lines.get("pr-link", h.line)
    if schema.canonical_link(old_link, repo):
        # a correct link is history: re-pointing it would re-attribute the change to another PR
        return Finding(file, at, None, f"entry {i + 1} already links {old_link}; only a placeholder (XXX) or a "
                       "non-canonical link may be corrected", IMMUTABLE_HINT)
    named = schema.linked_pr(old_link)
    if named is not None and named[0].lower() == repo.lower() and link != schema.pr_url(repo, named[1]):
        # a sub-page (`.../pull/2305/changes`), http, www or other-case form names this repository's PR as
        # surely as the canonical link: only its canonical spelling may replace it, never another PR's. (A
        # link into another repository, a fork's PR say, names no PR here and may be corrected.)
        return Finding(file, at, None, f"entry {i + 1} links pull request #{named[1]} ({old_link}); a correction "
                       f"may only write that link's canonical form, not {link!r}",
                       f"write `  pr-link: {schema.pr_url(repo, named[1])}`, or leave the entry as it is")
    if not schema.canonical_link(link, repo):
        return Finding(file, at, None, f"entry {i + 1}: a pr-link correction must be a canonical link; found {link!r}",
                       f"use {schema.pr_url(repo, '<number>')}")
    return None


def _history_findings(base: bytes, head: bytes, file: str, mode: Mode | None) -> tuple[list[Finding], int, list[Entry]]:
    """History differs byte-wise from base. Returns (errors, corrections, added entries).

    Entries before the first differing byte are identical in both versions, so both are parsed
    only from the entry containing that byte.
    """
    errors: list[Finding] = []
    p = _common_prefix(base, head)
    diff_line = line_of(head, p)
    base_starts = entry_starts(base)
    k = _entry_at(base_starts, p if p < len(base) else len(base) - 1)
    where = (f"entry {k + 1} (line {line_of(base, base_starts[k])})" if k >= 0 else "the text before the first entry")
    first = max(k, 0)
    while first > 0 and _KEEP_CHOMP.search(base, base_starts[first - 1], base_starts[first]):
        first -= 1  # a |+ scalar would absorb what follows it: compare from that entry
    offset = base_starts[first] if first else 0
    base_tail = _parse_from(base, offset, first, file, errors, side="(base version) ")
    head_tail = _parse_from(head, offset, first, file, errors)
    if base_tail is None or head_tail is None:
        return errors, 0, []
    nb, nh = first + len(base_tail), first + len(head_tail)

    # entry i of either version (only those from `first` on were parsed)
    def base_entry(i: int) -> Entry:
        return base_tail[i - first]

    def head_entry(i: int) -> Entry:
        return head_tail[i - first]

    added = head_tail[nb - first:] if nh > nb else []
    if nh < nb:
        errors.append(Finding(file, diff_line, None,
                              f"{nb - nh} historical entr{'y was' if nb - nh == 1 else 'ies were'} deleted"
                              f" (first difference at line {diff_line}, in {where}); the changelog is append-only",
                              IMMUTABLE_HINT))
        return errors, 0, []
    corrections: list[int] = []
    edited = False
    for i in range(first, nb):
        b, h = base_entry(i), head_entry(i)
        if b.data == h.data:
            continue
        if _without_link(b.data) != _without_link(h.data):
            if nh > nb and i + 1 < nh and head_entry(i + 1).data == b.data:
                errors.append(Finding(file, h.line, None,
                                      f"a new entry was inserted at line {h.line}, before historical entry {i + 1};"
                                      " new entries go at the end of the file",
                                      "move the entry to the end of the file, after one empty line"))
                return errors, 0, []
            at = diff_line if k == i else h.line  # point at the first changed line when it is in this entry
            errors.append(Finding(file, at, None,
                                  f"entry {i + 1} (line {h.line}) was changed"
                                  + (f" at line {at}" if at != h.line else "")
                                  + "; historical entries are immutable except for a pr-link-only correction",
                                  IMMUTABLE_HINT + "; describe the change in a new entry"))
            edited = True      # every edited entry is reported, and the new entries are still checked
            continue
        corrections.append(i)
    if edited:
        return errors, 0, added
    if corrections and added:
        errors.append(Finding(file, head_entry(corrections[0]).line, None,
                              "do not mix historical pr-link corrections with new changelog entries",
                              "make the pr-link correction in its own pull request"))
        return errors, len(corrections), added
    if mode is not None:
        for i in corrections:
            found = _correction_finding(file, i, head_entry(i), base_entry(i).data.get("pr-link"), mode.repo)
            if found is not None:
                errors.append(found)
    if corrections:
        old, new = base.splitlines(keepends=True), head.splitlines(keepends=True)
        if len(old) != len(new):
            errors.append(Finding(file, diff_line, None, "a pr-link correction may not add or delete lines",
                                  "change only the text after `  pr-link: ` on the corrected entries"))
            return errors, len(corrections), []
        changed = [j for j, (a, b) in enumerate(zip(old, new)) if a != b]
        for j in changed:
            if not (old[j].startswith(b"  pr-link:") and new[j].startswith(b"  pr-link:") and new[j].endswith(b"\n")):
                errors.append(Finding(file, j + 1, None,
                                      f"historical bytes changed outside a pr-link line at line {j + 1}",
                                      "a correction may change only the `  pr-link:` line of an entry"))
                return errors, len(corrections), []
        if len(changed) != len(corrections):
            errors.append(Finding(file, diff_line, None,
                                  f"expected {len(corrections)} changed pr-link line(s), found {len(changed)}",
                                  "change only the text after `  pr-link: ` on the corrected entries"))
        return errors, len(corrections), []
    # Same content everywhere in history, yet different bytes: formatting or whitespace changed.
    if added:
        message = (f"appended entries changed historical bytes at line {diff_line} (in {where});"
                   " history is immutable byte for byte")
    else:
        message = (f"historical bytes changed at line {diff_line} (in {where}) without a change of content;"
                   " whitespace and formatting of history are immutable")
    errors.append(Finding(file, diff_line, None, message, IMMUTABLE_HINT))
    return errors, 0, added


def lint_change(base: bytes | None, head: bytes, *, file: str, mode: Mode | None,
                master_keys: list[str] | None, masters_label: str = "the master configs") -> LintResult:
    """Judge the change base -> head of the changelog. `base` None: the file is new at head.

    `master_keys` None skips key resolution (callers that check keys separately); `mode` None skips
    the pr-link rules (the planner: which link an entry carries does not change what it selects).
    """
    result = _lint_change(base, head, file=file, mode=mode, master_keys=master_keys, masters_label=masters_label)
    result.errors = [explain_yaml(head, f) for f in result.errors]
    return result


def _lint_change(base: bytes | None, head: bytes, *, file: str, mode: Mode | None,
                 master_keys: list[str] | None, masters_label: str) -> LintResult:
    result = LintResult()
    result.errors = byte_findings(head, file) + ambiguous_findings(
        head, file, max(0, _common_prefix(base or b"", head) - 2))  # -2: the prefix may end inside a character
    if result.errors:
        return result
    base = base or b""
    if head == base:
        return result
    starts = entry_starts(head) if head.startswith(base) and (not base or base.endswith(b"\n")) else None
    # With history byte-identical (and ending in a newline), base's entries are head's that start in it.
    n_base = bisect_right(starts, len(base) - 1) if starts is not None else 0
    if starts is not None and not _keeps_trailing_lines(base, starts[n_base - 1] if n_base else None):
        # History is byte-identical: only the appended region needs parsing.
        if len(starts) <= n_base:
            result.errors.append(_stray_text(base, head, file, n_base, starts))
            return result
        layout = _separator_findings(base, head, file, n_base, starts)
        if layout and layout[0].message.startswith((STRAY, "the changelog must")):
            result.errors += layout
            return result
        try:
            result.added = parse_tail(head, starts[n_base], n_base, file)
        except InputError as exc:
            result.errors += exc.findings or [Finding(file, None, None, exc.message)]
            return result
        if not structure_ok(head, len(starts)):
            # The new entries parse alone but not in the file: report what the full parse finds.
            if _parse(head, file, result.errors) is not None:
                result.errors.append(Finding(file, line_of(head, starts[n_base]), None,
                                             "the file as a whole is not a valid changelog", IMMUTABLE_HINT))
            return result
        result.errors += layout
    else:
        errors, result.corrections, result.added = _history_findings(base, head, file, mode)
        if not errors and not structure_ok(head):
            _parse(head, file, errors)  # history before the change is identical; still, the file must parse
        result.errors += errors
    result.errors += _reading_findings(head, result.added, file, starts)
    for entry in result.added:
        result.errors += schema.entry_findings(entry, file)
        if mode is not None:
            result.errors += schema.link_findings(entry, file, mode.repo, mode.pr, mode.local)
        if master_keys is not None:
            resolved, problems = schema.key_findings(entry, file, master_keys, masters_label)
            result.resolved[entry.index] = resolved
            result.errors += problems
    result.errors.sort(key=lambda f: f.line or 0)
    return result


def _reading_findings(head: bytes, added: list[Entry], file: str, starts: list[int] | None) -> list[Finding]:
    """Values of the new entries that YAML 1.1 and 1.2 read differently (`evals-only: yes`, `1_0`)."""
    if not added:
        return []
    from ci_tools.changelog.readings import divergent_scalars
    import yaml

    starts = starts if starts is not None else entry_starts(head)
    k = added[0].index
    if k >= len(starts):
        return []
    offset = starts[k]
    try:
        return divergent_scalars(head[offset:].decode("utf-8"), file, line_of(head, offset) - 1, k)
    except (yaml.YAMLError, UnicodeDecodeError):
        return []  # the region does not parse alone: the parse findings above say why


_FIELD_LINE = re.compile(r"([A-Za-z0-9_-]+):(?:\s|$)")


def explain_yaml(head: bytes, f: Finding) -> Finding:
    """A YAML parser error on a changelog line, said in the file's own terms (fields two spaces in,
    list items four) when the line shows what is wrong; the parser's words stay in the hint."""
    prefix = "not valid YAML: "
    if not f.message.startswith(prefix) or f.line is None:
        return f
    raw = f.message[len(prefix):]
    lines = head.split(b"\n")
    text = lines[f.line - 1].decode("utf-8", "replace") if 0 < f.line <= len(lines) else ""
    indent, body = len(text) - len(text.lstrip(" ")), text.strip()
    field = _FIELD_LINE.match(body)
    if field and not body.startswith("- ") and indent != 2:
        message = (f"`{field.group(1)}:` is indented by {indent} space{'s' if indent != 1 else ''}; an entry's fields"
                   " are indented by exactly two, under `- config-keys:`")
        hint = f"indent `{field.group(1)}:` by two spaces"
    elif body.startswith("- ") and not body.startswith("- config-keys:") and indent != 4:
        message = f"a list item is indented by {indent} space{'s' if indent != 1 else ''}; list items go four spaces in"
        hint = "indent each `- ` item of config-keys, description and scenario-type by four spaces"
    elif "sequence entries are not allowed" in raw:
        message = "a list cannot start on the line of its field"
        hint = "write the field alone (`  description:`), then each item on its own line: `    - \"...\"`"
    elif "quoted scalar" in raw and ("end of stream" in raw or "document separator" in raw):
        # the parser stops at the end of the file; the string starts at the last line with an odd quote
        start = next((n for n in range(min(f.line, len(lines)), 0, -1)
                      if lines[n - 1].count(b'"') % 2 or lines[n - 1].count(b"'") % 2), f.line)
        return Finding(f.file, start, None, "a quoted string is not closed",
                       f"end the string with the quote it starts with (`\"` or `'`) (YAML parser: {raw})", f.severity)
    else:
        return f
    return Finding(f.file, f.line, f.col, message, f"{hint} (YAML parser: {raw})", f.severity)
