"""Sticky comments: the marker spelling, which comment is the bot's, and what a write must do."""

from __future__ import annotations

import pytest

from ci_tools.prbot import sticky
from ci_tools.github.models import Comment

BOT = sticky.DEFAULT_BOT


def c(i, body, author=BOT):
    return Comment(id=i, body=body, author=author)


@pytest.mark.parametrize("kind,key,expected", [
    (sticky.WELCOME, None, "<!-- ci-tools:welcome -->"),
    (sticky.REPLY, 1001, "<!-- ci-tools:reply 1001 -->"),
    (sticky.STAGE, "run-9", "<!-- ci-tools:stage run-9 -->"),
])
def test_markers(kind, key, expected):
    assert sticky.marker(kind, key) == expected


@pytest.mark.parametrize("body,marked", [
    ("<!-- ci-tools:stage 12 -->\nstaging", True),
    ("<!-- ci-tools:stage run-9 -->\n", True),
    ("<!-- ci-tools:stage -->\n", True),
    ("<!-- ci-tools:stages 1 -->\n", False),
    (" <!-- ci-tools:stage 12 -->\n", False),
])
def test_is_marked(body, marked):
    assert sticky.is_marked(body, sticky.STAGE) is marked


def test_only_the_bots_own_comment_is_found_and_the_oldest_wins():
    planted = c(1, "<!-- ci-tools:welcome -->\nhi", author="mallory")
    mine, dup = c(2, "<!-- ci-tools:welcome -->\nhi"), c(3, "<!-- ci-tools:welcome -->\nhi")
    assert sticky.find_sticky([planted, mine, dup], sticky.WELCOME, bot_login=BOT) is mine
    assert sticky.find_sticky([planted], sticky.WELCOME, bot_login=BOT) is None


@pytest.mark.parametrize("existing,body,action", [
    (None, "x\n", "create"),
    (c(5, "x\r\n"), "x\n", "none"),                   # GitHub may hand CRLF back
    (c(5, "y\n"), "x\n", "update"),
])
def test_plan_write(existing, body, action):
    assert sticky.plan_write(existing, body).action == action


def test_the_state_line_round_trips_and_bad_state_reads_as_none():
    body = sticky.head(sticky.STATUS_CARD, None, {"b": 1, "a": [2]}) + "text\n"
    assert body.splitlines()[1] == '<!-- ci-tools:state {"a":[2],"b":1} -->'
    assert sticky.state_of_text(body) == {"a": [2], "b": 1}
    assert sticky.state_of_text("<!-- ci-tools:state {nope} -->") == {}
    assert sticky.state_of_text('<!-- ci-tools:state ["list"] -->') == {}
