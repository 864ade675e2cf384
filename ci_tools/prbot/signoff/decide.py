"""CODEOWNER sign-off: deterministic checks, a verdict, and when a verdict still holds.

A sign-off is a comment or review containing `PHRASE` (a review only if it approves or comments: one
requesting changes, dismissed or pending signs nothing off; one requesting changes from an owner of the
changed files revokes the sign-off, `revocation`, and only a sign-off written after it counts again).
It passes when:
1. the signer owns every changed path under `.github/CODEOWNERS` (gitignore-style patterns, last
   match wins; a team entry counts when the signer is an active member of that team), a renamed
   file's old path as well as its new one, and has write access to the repository (GitHub ignores a
   code owner without it);
2. it uses the current checklist version of `docs/PR_REVIEW_CHECKLIST.md`;
3. every item of that version's template is ticked;
4. it is signed by the signer (`Signed: @login`);
(2-4 read only what a reader sees: not HTML comments, code blocks or markup that renders as nothing);
5. the PR has a successful full sweep.

Only the bot's own verdict comment is ever read back (W7); the check run `CHECK` is computed from the
checks, never from comment text. A new commit keeps the verdict only if its tree equals the verified tree.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Iterable

from ci_tools.errors import InputError
from ci_tools.github.models import CheckRun, Comparison, EditHistory
from ci_tools.prbot import markdown, messages
from ci_tools.prbot.commands import WRITE_PERMISSIONS
from ci_tools.github.models import timestamp as ts

PHRASE = "As a PR reviewer and CODEOWNER, I have reviewed this and have"
# The check run the bot writes on the PR's head (and a merge queue group's commit), which branch
# protection requires by this name: the verdict, and after a push the record that the commit was the
# PR's head by then (`head_seen_before`).
CHECK = "codeowner-signoff-verify"
# GitHub's check run conclusion for each state of the sign-off. A required check passes on success,
# neutral or skipped only, so nothing but a verified sign-off maps to one of them; `action_required`
# where a person must act: a CODEOWNER signs off, or an admin gives the bot a token that reads teams.
CONCLUSIONS = {"success": "success", "failure": "failure", "pending": "action_required", "error": "action_required"}
_VERSION = re.compile(r"checklist version[:\s]+(\d+)", re.I)
_ITEM = re.compile(r"^\s*[-*]\s+\[( |x|X)\]\s+(.*\S)\s*$")
# Blanks, not \s: with re.M, `^\s*` at every line start ran over all the newlines after it, so a
# comment of 65k newlines cost ~10 s (issue 25); one line is matched at a time, in linear time.
_SIGNED = re.compile(r"^[ \t]*Signed:[ \t]*`?@?([A-Za-z0-9-]+)`?[ \t\r]*$", re.M)


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
    failed: str = ""       # what is wrong, in a few words, for the check's title (the name says the rule)


@dataclass(frozen=True)
class Verdict:
    passed: bool
    checks: tuple[Check, ...]
    owns_any: bool = False     # the signer owns at least one changed file
    unverified: str | None = None  # why ownership could not be decided (team membership unreadable)

    @property
    def state(self) -> str:
        """success, failure, or `error` when the sign-off could not be checked at all (`CONCLUSIONS`)."""
        return "success" if self.passed else "error" if self.unverified else "failure"

    @property
    def description(self) -> str:
        """The check run's title: one line, the rules it broke in a few words each."""
        if self.passed:
            return "CODEOWNER sign-off verified"
        if self.unverified:
            return "Sign-off not verified: cannot read team membership with this token"
        failed = "; ".join(c.failed or f"not met: {c.name}" for c in self.checks if not c.ok)
        return title("Sign-off rejected: " + failed)


TITLE_LIMIT = 140   # a check run's title may be longer, but GitHub's checks list shows one line of it


def title(text: str) -> str:
    return text if len(text) <= TITLE_LIMIT else text[:TITLE_LIMIT - 1] + "…"


def owner_check(signer: str, files: Iterable[str], codeowners_text: str,
                is_member: Callable[[str, str, str], bool], permission: str = "write") -> tuple[Check, bool, str | None]:
    """(the check, whether the signer owns any changed file, why ownership is unknown or None).
    `is_member` may raise `MembershipUnknown`: a file owned only through such a team is then neither
    owned nor not owned, and the check fails with that reason. `permission`: the signer's repository
    permission; below write they own nothing, as GitHub requires of a code owner."""
    from codeowners import CodeOwners

    if permission not in WRITE_PERMISSIONS:
        return Check("CODEOWNER of every changed file", False, messages.owner_without_write(signer, permission),
                     f"@{signer} lacks write access"), False, None

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


# An HTML comment (to its end, or the body's end if unterminated) renders as nothing: a box ticked
# or a `Signed:` written there is not one the reader sees (issue 25). Linear: each `<!--` scans to
# its own `-->`, and an unterminated one takes the rest.
_HTML_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.S)


def visible_lines(body: str) -> list[str | None]:
    """The lines of `body` as a reader sees them: HTML comments removed (their line breaks kept, so a
    line keeps its visible part), and None for a line of fenced code (a ticked box there is an example,
    not a tick, issue 35), of raw HTML (shown as written: no Markdown, no checkbox) or of markup that
    renders as nothing (`markdown.read`)."""
    text = _HTML_COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), body.replace("\r\n", "\n"))
    seen = markdown.read(text)
    drop = seen.fenced | seen.hidden | seen.html
    return [None if i in drop else line for i, line in enumerate(text.split("\n"))]


def checklist_checks(body: str, signer: str, checklist: Checklist) -> list[Check]:
    lines = visible_lines(body)
    ticked: set[str] = set()
    unticked: set[str] = set()
    # a box counts only on a line that is a list item (`    - [x]` after a paragraph is text; a line
    # not read, None, is never one)
    for i in markdown.list_items(lines):
        m = _ITEM.match(lines[i] or "")
        if m:
            (ticked if m.group(1) in "xX" else unticked).add(_norm(m.group(2)))
    body = "\n".join(line for line in lines if line is not None)
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
           is_member: Callable[[str, str, str], bool], sweep_problem: str | None, permission: str = "write") -> Verdict:
    """`files`: every path the PR changes, a rename's old path included (`GitHub.pull_files`);
    `permission`: the signer's repository permission now."""
    owner, owns_any, unverified = owner_check(signer, files, codeowners_text, is_member, permission)
    checks = [owner, *checklist_checks(body, signer, checklist),
              Check("successful full sweep", sweep_problem is None,
                    "a successful full sweep exists" if sweep_problem is None else sweep_problem,
                    "no successful full sweep")]
    return Verdict(all(c.ok for c in checks), tuple(checks), owns_any, unverified)


@dataclass(frozen=True)
class CheckUpdate:
    state: str          # "success" | "failure" | "pending" (`CONCLUSIONS`)
    description: str    # the check run's title


def after_push(previous: dict, head_tree: str) -> CheckUpdate:
    """The check for a new head commit given the bot's recorded verdict `previous` (state of its comment)."""
    if previous.get("changes_requested"):
        return CheckUpdate("pending", f"@{previous.get('signer')} requested changes: a CODEOWNER must sign off again")
    if previous.get("passed") and previous.get("tree") == head_tree:
        return CheckUpdate("success", f"Sign-off by @{previous.get('signer')} still holds: same tree as "
                                      f"{str(previous.get('sha', ''))[:12]}")
    if previous.get("passed"):
        return CheckUpdate("pending", "New commits since the verified sign-off: a CODEOWNER must sign off again")
    return CheckUpdate("pending", "Awaiting a CODEOWNER sign-off")


def stands(verdict: Verdict, previous: dict, head_sha: str, head_tree: str) -> bool:
    """Whether an earlier verified sign-off stands against this one: someone who owns none of the
    changed files cannot undo an owner's verified sign-off of this commit (or of a commit with the
    same tree, to which the check was carried over)."""
    return (not verdict.passed and not verdict.owns_any and not verdict.unverified and bool(previous.get("passed"))
            and (previous.get("sha") == head_sha or previous.get("tree") == head_tree))


# ---- what a sign-off is bound to (issue 25) -----------------------------------------------------
# A verdict is only ever about the body its author wrote and the tree they looked at. These checks
# say whether a sign-off is bound to the PR's head at all; one that is not is "not counted" and
# changes no check (so nobody can use an old or edited sign-off to revoke a newer verified one).

def pr_url(repo: str, number: int) -> str:
    return f"https://github.com/{repo}/pull/{number}"


def edit_problem(author: str, history: EditHistory) -> str | None:
    """None when the body is its author's: never edited, or edited by its author only. Judged from the
    edit history GitHub keeps, never from the event's action (a review read back from the API, or a
    re-run, says "submitted" or "created" whatever happened to the body since)."""
    if history.author and history.author.lower() != author.lower():
        return f"GitHub names @{history.author} as its author, not @{author}"
    if history.last_edited_at and not history.editors:
        return (f"it was edited (last at {history.last_edited_at}) but GitHub lists no edit, so who edited it "
                "is unknown")
    others = sorted({e or "a deleted account" for e in history.editors if not e or e.lower() != author.lower()})
    if others:
        return (f"its body was edited by {', '.join(o if o == 'a deleted account' else '@' + o for o in others)}; "
                f"a sign-off counts only as its author wrote it, so @{author} must post it again")
    return None


def owned_paths(files: Iterable[str], codeowners_text: str) -> list[str]:
    from codeowners import CodeOwners

    owners = CodeOwners(codeowners_text)
    return [f for f in files if owners.of(f)]


def reviewed_tree_problem(*, reviewed: str, head: str, reviewed_tree: str, head_tree: str,
                          diff: Callable[[], Comparison], codeowners_text: str, file_limit: int = 300) -> str | None:
    """None when the reviewed commit's tree equals the head's for every path CODEOWNERS owns. `diff`
    is GitHub's comparison reviewed...head, asked for only when the trees differ."""
    if not reviewed:
        return "GitHub names no reviewed commit for it"
    if reviewed == head or (reviewed_tree and reviewed_tree == head_tree):
        return None
    d = diff()
    if d.status not in ("ahead", "identical"):
        return (f"it reviewed commit {reviewed[:12]}, which is no longer in the PR's history (force-pushed away); "
                f"sign off again on the head {head[:12]}")
    files = list(d.files)
    if len(files) >= file_limit:
        return (f"it reviewed commit {reviewed[:12]}; GitHub lists only the first {file_limit} files changed since, "
                f"so whether owned files changed cannot be told: sign off again on the head {head[:12]}")
    owned = owned_paths(files, codeowners_text)
    if owned:
        shown = ", ".join(f"`{f}`" for f in owned[:8]) + (f" and {len(owned) - 8} more" if len(owned) > 8 else "")
        return (f"it reviewed commit {reviewed[:12]}; later commits change owned files ({shown}): sign off again "
                f"on the head {head[:12]}")
    return None


def by_bot(check: CheckRun, bot: str) -> bool:
    """Whether the bot created this check run. GitHub names the app whose token created one (a job's
    GITHUB_TOKEN: `github-actions`, whose account is github-actions[bot]; a GitHub App: its slug, its
    account `<slug>[bot]`); only a GitHub App's token with checks: write on this repository can create
    one: no user, no OAuth app, and no fork PR's token, which is read-only."""
    return bool(check.app) and f"{check.app}[bot]".lower() == bot.lower()


def head_seen_before(*, written_at: str, checks: Iterable[CheckRun], pr_url: str, bot: str) -> bool:
    """Whether the bot wrote a sign-off check run for this PR on the head before `written_at` (`checks`:
    every check run of the head, GitHub's `filter=all`). No push time exists in GitHub's API (commit
    dates are the pusher's to choose, `pushedDate` is gone), but the bot's record cannot predate the
    commit's arrival: its after-push check naming this PR proves the head was this PR's head by its
    start. The bot sends no `started_at` or `completed_at`, so both are GitHub's clock; whoever else
    could create a check run as the bot's app (a workflow of this repository with checks: write) could
    as well write the sign-off's verdict itself, so this record is no weaker than that verdict."""
    written = ts(written_at)
    if written is None:
        return False
    for c in checks:
        url = c.details_url
        started = ts(c.started_at or c.completed_at)
        if (c.name == CHECK and by_bot(c, bot) and (url == pr_url or url.startswith(pr_url + "#"))
                and started is not None and started <= written):
            return True
    return False


def head_at_writing_problem(*, written_at: str, head: str, seen_before: bool, force_pushes: Iterable[str]) -> str | None:
    """A comment names no commit: the one it signed off is the head when its body was written. The
    head now is that commit only if it was already this PR's head then (`seen_before`) and no force
    push since could have gone away and back."""
    written = ts(written_at)
    later = [p for p in force_pushes if (t := ts(p)) is None or written is None or t > written]
    if later:
        return (f"the head branch was force-pushed after it was written ({later[-1]}), so which commit it "
                f"signed off is unknown: sign off again on the head {head[:12]}")
    if not seen_before:
        return (f"the head {head[:12]} became this PR's head after it was written (or its after-push check is "
                f"missing), so it signed off an earlier commit: sign off again on the head {head[:12]}")
    return None


# The review states that can carry a sign-off (GitHub's REST spelling; `models.Comment.review_state`).
SIGNING_REVIEWS = ("APPROVED", "COMMENTED")
REQUESTS_CHANGES = "CHANGES_REQUESTED"


def requests_changes(review_state: str) -> bool:
    return review_state.upper() == REQUESTS_CHANGES


def revocation(*, reviewer: str, owns_any: bool, unverified: str | None, submitted_at: str,
               previous: dict) -> CheckUpdate | str:
    """What a review requesting changes does to the sign-off check. GitHub blocks the merge while a code
    owner's request for changes stands, so a verified sign-off must not stay green: from an owner of any
    changed file (or one whose ownership cannot be read: the check is then no longer green either) it is
    a failure, whatever came before. Why it changes nothing otherwise (a string): the reviewer owns none of
    the changed files (a drive-by review revokes nothing, as it cannot undo a sign-off), or the verified
    sign-off in force was written after it (a later sign-off counts again; an old review's re-run must not
    undo it). `previous` is the bot's recorded verdict, `submitted_at` the review's time."""
    if not owns_any and not unverified:
        return messages.changes_request_not_an_owner(reviewer)
    signed, asked = ts(str(previous.get("at") or "")), ts(submitted_at)
    if previous.get("passed") and signed is not None and asked is not None and signed > asked:
        return messages.changes_request_older(previous.get("signer"), previous.get("at"))
    return CheckUpdate("failure", messages.revoked_description(reviewer))


def revoked_problem(*, written_at: str, previous: dict) -> str | None:
    """A sign-off written before the owner's request for changes the bot last recorded (`previous`) does not
    count: that review revoked it (a re-run of its verification, or the event of an older one, must not
    turn the check green again). One written (or edited by its author) after it counts again."""
    if not previous.get("changes_requested"):
        return None
    asked, written = ts(str(previous.get("at") or "")), ts(written_at)
    if asked is None or written is None or written <= asked:
        return messages.signoff_before_changes_request(previous.get("signer"), previous.get("at"))
    return None


def review_state_problem(state: str) -> str | None:
    """None when a review in `state` may sign off: one requesting changes says the opposite, and a
    dismissed or pending one is not in force."""
    return None if state.upper() in SIGNING_REVIEWS else messages.review_not_a_signoff(state)


def stale_event_problem(payload_head: str, head: str) -> str | None:
    """A re-run carries its first run's payload: a payload naming another head is an old event."""
    if payload_head and payload_head != head:
        return (f"the event is for head {payload_head[:12]}, but the PR's head is now {head[:12]} (an old event, "
                "or a re-run after a push): sign off again on the head")
    return None


def queue_state(checks: Iterable[CheckRun], *, pr_head: str, queued_head: str) -> tuple[str, str]:
    """(state, why) of a merge queue group's sign-off: the PR head's own sign-off check (`checks`: the
    bot's on that head; the newest counts, GitHub numbering check runs in creation order), where the
    group merged that head; awaiting or missing is a failure (a queue cannot wait for a sign-off)."""
    if queued_head and not pr_head.startswith(queued_head):
        return "failure", (f"the group merged {queued_head[:12]}, but the PR's head is now {pr_head[:12]}: "
                           "the queue will test the new head")
    check = max(checks, key=lambda c: c.id, default=None)
    if check is None:
        return "failure", f"no sign-off on the PR's head {pr_head[:12]}: a CODEOWNER signs off first"
    said = check.title
    if check.conclusion == "success":
        return "success", said or "CODEOWNER sign-off verified"
    return "failure", (f"the sign-off on the PR's head {pr_head[:12]} is "
                       f"{check.conclusion or check.status}: {said or 'not verified'}")
