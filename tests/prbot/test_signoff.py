"""The sign-off's pure rules: the review checklist file, and ownership by a user entry."""

from __future__ import annotations

import re
from pathlib import Path

from ci_tools import names
from ci_tools.prbot.signoff import decide as signoff

ROOT = Path(__file__).resolve().parents[2]
CHECKLIST = signoff.parse_checklist((ROOT / names.REVIEW_CHECKLIST).read_text(), names.REVIEW_CHECKLIST)


def test_a_users_own_entry_needs_no_team_token():
    """Files owned by a user entry are checked without any team call."""
    check, owns, unknown = signoff.owner_check("alice", ["a.txt"], "*.txt @alice\n", lambda *a: 1 / 0)
    assert check.ok and owns and unknown is None


def test_checklist_file_is_versioned_and_parsed():
    assert CHECKLIST.version >= 1 and len(CHECKLIST.items) == 13
    assert re.search(r"checklist version \d+", CHECKLIST.items[0])


def _signoff(ticked: int, *, signer: str = "alice", signed: str = "alice") -> str:
    items = [f"- [{'x' if i < ticked else ' '}] {item}" for i, item in enumerate(CHECKLIST.items)]
    return f"Checklist version {CHECKLIST.version}\n" + "\n".join(items) + f"\n\nSigned: @{signed}\n"


def _verify(body: str, sweep_problem=None):
    return signoff.verify(signer="alice", body=body, files=["a.txt"], codeowners_text="*.txt @alice\n",
                          checklist=CHECKLIST, is_member=lambda *a: 1 / 0, sweep_problem=sweep_problem)


def test_a_rejected_status_says_what_is_wrong_not_the_rule_it_broke():
    """Issue 24: one box unticked gave the status "Sign-off rejected: every item ticked"."""
    n = len(CHECKLIST.items)
    verdict = _verify(_signoff(n - 1))
    assert not verdict.passed
    assert verdict.description == f"Sign-off rejected: 1 of {n} items not ticked"
    both = _verify(_signoff(n, signed="bob"), sweep_problem="no successful full-sweep run")
    assert both.description == "Sign-off rejected: not signed by @alice; no successful full sweep"
    assert _verify(_signoff(n)).description == "CODEOWNER sign-off verified"
    assert all(len(_verify(_signoff(k)).description) <= 140 for k in range(n + 1))   # GitHub's limit
