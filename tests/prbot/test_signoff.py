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
