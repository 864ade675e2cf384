"""CODEOWNER sign-off: deterministic checks, a verdict, and when a verdict still holds.

A sign-off is a comment or review containing `PHRASE`. It passes when:
1. the signer owns every changed file under `.github/CODEOWNERS` (gitignore-style patterns, last
   match wins; a team entry counts when the signer is an active member of that team);
2. it uses the current checklist version of `docs/PR_REVIEW_CHECKLIST.md`;
3. every item of that version's template is ticked;
4. it is signed by the signer (`Signed: @login`);
5. the PR has a successful full sweep.

Only the bot's own verdict comment is ever read back (W7); the status is computed from the checks,
never from comment text. A new commit keeps the verdict only if its tree equals the verified tree.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Iterable

from ci_tools.errors import InputError

PHRASE = "As a PR reviewer and CODEOWNER, I have reviewed this and have"
STATUS_CONTEXT = "codeowner-signoff-verify"
_VERSION = re.compile(r"checklist version[:\s]+(\d+)", re.I)
_ITEM = re.compile(r"^\s*[-*]\s+\[( |x|X)\]\s+(.*\S)\s*$")
_SIGNED = re.compile(r"^\s*Signed:\s*`?@?([A-Za-z0-9-]+)`?\s*$", re.M)


def has_phrase(body: str | None) -> bool:
    return PHRASE.lower() in (body or "").lower()


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


@dataclass(frozen=True)
class Checklist:
    version: int
    items: tuple[str, ...]


def parse_checklist(text: str, file: str) -> Checklist:
    """The version and template items of our review checklist file."""
    match = _VERSION.search(text)
    if not match:
        raise InputError(f"{file}: no `Checklist version: N` line; sign-offs cannot be checked without it")
    block = re.search(r"```text\n(.*?)```", text, re.S)
    if not block or PHRASE not in block.group(1):
        raise InputError(f"{file}: no ```text template block starting with {PHRASE!r}")
    items = tuple(m.group(2) for line in block.group(1).splitlines() if (m := _ITEM.match(line)))
    if not items:
        raise InputError(f"{file}: the template has no `- [ ]` items")
    return Checklist(int(match.group(1)), items)


class MembershipUnknown(Exception):
    """Whether the signer is in a CODEOWNERS team could not be read (the token cannot see team
    membership). The owner check then fails closed with this reason, never "you do not own"."""


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str
    failed: str = ""       # what is wrong, in a few words, for the commit status (the name says the rule)


@dataclass(frozen=True)
class Verdict:
    passed: bool
    checks: tuple[Check, ...]
    owns_any: bool = False     # the signer owns at least one changed file
    unverified: str | None = None  # why ownership could not be decided (team membership unreadable)

    @property
    def state(self) -> str:
        """The commit status: `error` when the sign-off could not be checked at all."""
        return "success" if self.passed else "error" if self.unverified else "failure"

    @property
    def description(self) -> str:
        if self.passed:
            return "CODEOWNER sign-off verified"
        if self.unverified:
            return "Sign-off not verified: cannot read team membership with this token"
        failed = "; ".join(c.failed or f"not met: {c.name}" for c in self.checks if not c.ok)
        text = "Sign-off rejected: " + failed
        return text if len(text) <= 140 else text[:139] + "…"    # GitHub's limit for a status description


def owner_check(signer: str, files: Iterable[str], codeowners_text: str,
                is_member: Callable[[str, str, str], bool]) -> tuple[Check, bool, str | None]:
    """(the check, whether the signer owns any changed file, why ownership is unknown or None).
    `is_member` may raise `MembershipUnknown`: a file owned only through such a team is then neither
    owned nor not owned, and the check fails with that reason."""
    from codeowners import CodeOwners

    owners = CodeOwners(codeowners_text)
    not_owned: list[str] = []
    unknown: list[str] = []
    reason: str | None = None
    owns_any = False
    me = f"@{signer}".lower()
    for path in files:
        entries = owners.of(path)
        if not entries:
            continue  # nobody owns it: no owner's review is required for it
        ok = unreadable = False
        for kind, name in entries:
            if kind == "USERNAME" and name.lower() == me:
                ok = True
            elif kind == "TEAM" and "/" in name:
                org, team = name.lstrip("@").split("/", 1)
                try:
                    ok = is_member(org, team, signer)
                except MembershipUnknown as exc:
                    unreadable, reason = True, reason or str(exc)
            if ok:
                break
        owns_any |= ok
        if not ok:
            (unknown if unreadable else not_owned).append(f"`{path}` ({' '.join(n for _, n in entries)})")
    if unknown:
        shown = ", ".join(unknown[:8]) + (f" and {len(unknown) - 8} more" if len(unknown) > 8 else "")
        return Check("CODEOWNER of every changed file", False,
                     f"not checked: {reason}; ownership of {shown} is unknown",
                     "ownership could not be checked"), owns_any, reason
    if not_owned:
        shown = ", ".join(not_owned[:8]) + (f" and {len(not_owned) - 8} more" if len(not_owned) > 8 else "")
        return Check("CODEOWNER of every changed file", False, f"@{signer} does not own {shown}",
                     f"@{signer} does not own {len(not_owned)} changed file(s)"), owns_any, None
    return Check("CODEOWNER of every changed file", True, f"@{signer} owns every changed file"), True, None


def checklist_checks(body: str, signer: str, checklist: Checklist) -> list[Check]:
    ticked, unticked = set(), set()
    for line in body.replace("\r\n", "\n").split("\n"):
        m = _ITEM.match(line)
        if m:
            (ticked if m.group(1) in "xX" else unticked).add(_norm(m.group(2)))
    found = _VERSION.search(body)
    version = int(found.group(1)) if found else None
    checks = [Check("current checklist version", version == checklist.version,
                    f"version {checklist.version}" if version == checklist.version else
                    f"the sign-off uses version {version if version is not None else '(none)'}; "
                    f"the current version is {checklist.version}: copy the template again",
                    f"checklist version {version if version is not None else '(none)'}, not {checklist.version}")]
    missing = [i for i in checklist.items if _norm(i) not in ticked]
    checks.append(Check("every item ticked", not missing,
                        f"all {len(checklist.items)} items ticked" if not missing else
                        f"{len(missing)} of {len(checklist.items)} items not ticked: "
                        + "; ".join(f"\"{i[:60]}{'…' if len(i) > 60 else ''}\"" for i in missing[:5]),
                        f"{len(missing)} of {len(checklist.items)} items not ticked"))
    signed = _SIGNED.findall(body)
    checks.append(Check("signed by the signer", bool(signed) and signed[-1].lower() == signer.lower(),
                        f"signed @{signer}" if signed and signed[-1].lower() == signer.lower() else
                        f"the sign-off must end with `Signed: @{signer}`"
                        + (f" (it says @{signed[-1]})" if signed else ""), f"not signed by @{signer}"))
    return checks


def verify(*, signer: str, body: str, files: Iterable[str], codeowners_text: str, checklist: Checklist,
           is_member: Callable[[str, str, str], bool], sweep_problem: str | None) -> Verdict:
    owner, owns_any, unverified = owner_check(signer, files, codeowners_text, is_member)
    checks = [owner, *checklist_checks(body, signer, checklist),
              Check("successful full sweep", sweep_problem is None,
                    "a successful full sweep exists" if sweep_problem is None else sweep_problem,
                    "no successful full sweep")]
    return Verdict(all(c.ok for c in checks), tuple(checks), owns_any, unverified)


@dataclass(frozen=True)
class StatusUpdate:
    state: str          # "success" | "failure" | "pending"
    description: str


def after_push(previous: dict, head_tree: str) -> StatusUpdate:
    """Status for a new head commit given the bot's recorded verdict `previous` (state of its comment)."""
    if previous.get("passed") and previous.get("tree") == head_tree:
        return StatusUpdate("success", f"Sign-off by @{previous.get('signer')} still holds: same tree as "
                                       f"{str(previous.get('sha', ''))[:12]}")
    if previous.get("passed"):
        return StatusUpdate("pending", "New commits since the verified sign-off: a CODEOWNER must sign off again")
    return StatusUpdate("pending", "Awaiting a CODEOWNER sign-off")


def stands(verdict: Verdict, previous: dict, head_sha: str, head_tree: str) -> bool:
    """Whether an earlier verified sign-off stands against this one: someone who owns none of the
    changed files cannot undo an owner's verified sign-off of this commit (or of a commit with the
    same tree, to which the status was carried over)."""
    return (not verdict.passed and not verdict.owns_any and not verdict.unverified and bool(previous.get("passed"))
            and (previous.get("sha") == head_sha or previous.get("tree") == head_tree))
