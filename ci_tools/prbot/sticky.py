"""Sticky bot comments: markers, the bot's state line, and what to write to show a body.

Every bot comment starts with a hidden marker line, `<!-- ci-tools:<kind>[ <key>] -->`. A sticky
comment is found by that marker among the *bot's own* comments on every page, then edited in place;
if the body would not change nothing is written. Re-running a job therefore never duplicates a
comment, and nobody else can plant a comment the bot would mistake for its own.

Comments that carry state (the status card, the sign-off verdict, staging) keep it as JSON in a
second hidden line, so the next job updates the comment without losing what an earlier job wrote.
Pure; `prbot/shell.py` performs the write.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Iterable

from ci_tools.github.models import Comment

DEFAULT_BOT = "github-actions[bot]"

# The kinds of sticky comment the bot keeps, each spelled once (the marker's `<kind>`).
REPLY = "reply"                      # the reply to a command comment (key: that comment's id)
STAGE = "stage"                      # a staging request's progress (key: the command comment's id)
WELCOME = "welcome"
SIGNOFF_VERDICT = "signoff-verdict"  # the PR's one sign-off verdict (keeps its state)
SIGNOFF_REPLY = "signoff-reply"      # why a sign-off did not count (key: the sign-off comment's id)
STATUS_CARD = "status-card"
_STATE = re.compile(r"^<!-- ci-tools:state (\{.*\}) -->$", re.M)


def marker(kind: str, key: str | int | None = None) -> str:
    return f"<!-- ci-tools:{kind}{f' {key}' if key is not None else ''} -->"


def state_line(state: dict) -> str:
    return f"<!-- ci-tools:state {json.dumps(state, sort_keys=True, separators=(',', ':'))} -->"


def is_marked(body: str, kind: str) -> bool:
    """Whether `body` starts with a marker of `kind`, with any key or none."""
    return body.startswith(marker(kind).removesuffix(" -->") + " ")


def head(kind: str, key: str | int | None = None, state: dict | None = None) -> str:
    """The hidden lines a sticky body starts with: its marker, then its state when it keeps one."""
    return marker(kind, key) + "\n" + (state_line(state) + "\n" if state is not None else "")


def is_bot(comment: Comment, bot_login: str = DEFAULT_BOT) -> bool:
    return comment.author == bot_login


def find_sticky(comments: Iterable[Comment], kind: str, key: str | int | None = None,
                bot_login: str = DEFAULT_BOT) -> Comment | None:
    """The bot's comment with this marker (the oldest, if an earlier bug left two)."""
    want = marker(kind, key)
    for c in comments:
        if is_bot(c, bot_login) and c.body.split("\n", 1)[0].strip() == want:
            return c
    return None


def state_of(comment: Comment | None) -> dict:
    return {} if comment is None else state_of_text(comment.body)


def state_of_text(body: str) -> dict:
    match = _STATE.search(body)
    if not match:
        return {}
    try:
        value = json.loads(match.group(1))
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


@dataclass(frozen=True)
class Write:
    """What to do to make the sticky comment show `body`: "create", "update" or "none"."""

    action: str
    body: str
    comment_id: int | None = None


def plan_write(existing: Comment | None, body: str) -> Write:
    if existing is None:
        return Write("create", body)
    if existing.body.replace("\r\n", "\n") == body:
        return Write("none", body, existing.id)
    return Write("update", body, existing.id)
