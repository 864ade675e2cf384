"""`/use` authorisation (the spec's cases 41-45, W3, W4, W5) and the label history, as pure tables."""

from __future__ import annotations

import pytest
from hypothesis import given, settings as hsettings, strategies as st

from ci_tools.github.models import Comment, LabelEvent
from ci_tools.prbot import commands as cmds
from ci_tools.prbot import messages, sticky
from ci_tools.prbot.reuse import decide as reuse
from ci_tools.prbot.reuse.verdict import labels_at

# ---- authorisation: pure table (41-45, W3, W4, W5) ----------------------------------------------

def C(i, body, assoc="MEMBER", author=None, at=None, type_="User"):
    return Comment(id=i, body=body, author=author or f"u{i}", author_type=type_, association=assoc,
                   created_at=at or f"2026-10-01T00:{i:02d}:00Z")


PERMS = {"u1": "write", "u2": "write", "u3": "admin", "u4": "read", "u5": "maintain", "bot": "write"}
BOT = sticky.DEFAULT_BOT


def reply(to: int, state: dict | None, *, author: str = BOT) -> Comment:
    """The bot's sticky reply to comment `to`, keeping `state` (what `comment handle` recorded)."""
    return Comment(id=10_000 + to, body=sticky.head(sticky.REPLY, to, state) + "noted\n", author=author,
                   author_type="Bot", created_at="2026-10-01T00:30:00Z")


def answered(comments, perm=lambda login: PERMS.get(login, "none")):
    """`comments` with the bot's reply to each command comment by a person, as `comment handle` writes it
    (the permission it found then, the commands it checked it for)."""
    out = list(comments)
    for c in comments:
        runs = [x for x in cmds.to_run([p for p in cmds.parse(c.body) if not isinstance(p, cmds.UsageProblem)],
                                       created=True) if cmds.REQUIRED[type(x)]]
        if runs and c.author_type != "Bot":
            out.append(reply(c.id, reuse.handled_state(perm(c.author), [x.text for x in runs])))
    return out


@pytest.mark.parametrize("comments,merged_at,expected", [
    # 41: newest authorised wins; CONTRIBUTOR ignored; the command may follow other text
    ([C(1, "/use 111"), C(2, "/use 222", "CONTRIBUTOR"), C(3, "approved\n/use 333", "OWNER")], None, (True, 333)),
    ([C(3, "/reuse-sweep-run", "OWNER")], None, (True, None)),                          # 42, legacy spelling
    ([C(1, "/use 111", "OWNER"), C(3, "/use", "OWNER")], None, (True, None)),           # 43: bare un-pins
    ([C(1, "please run /use 111 after merge", "OWNER")], None, (False, None)),          # 44: inline
    ([C(1, "/reuse-sweep-run\n789")], None, (True, None)),       # 45: whole lines only (789 is not an argument)
    ([C(1, "> /use 5")], None, (False, None)),                                          # 45: quoted
    ([C(1, "/use 1\n/use 2")], None, (True, 2)),                                        # 45: last in comment
    ([C(1, "```\n/use 9\n```")], None, (False, None)),                                  # code block
    ([C(4, "/use 9")], None, (False, None)),                     # W3: MEMBER with read permission
    ([C(1, "/use 7"), C(4, "/use")], None, (True, 7)),           # W3: a read-only MEMBER cannot un-pin
    ([C(1, "/use 7"), C(5, "/use 8", "COLLABORATOR")], None, (True, 8)),  # maintain is enough
    ([C(1, "/use 7"), C(9, "/use", author="bot", type_="Bot")], None, (True, 7)),  # W5: a bot cannot un-pin
    ([C(1, "/use 7"), C(3, "/use 9", "OWNER")], "2026-10-01T00:02:00Z", (True, 7)),  # W4: after merge ignored
    ([C(3, "/use 9", "OWNER")], "2026-10-01T00:02:00Z", (False, None)),               # W4
])
def test_authorisation(comments, merged_at, expected):
    def perm(login):
        return PERMS.get(login, "none")

    auth = reuse.authorise(answered(comments), perm, pr_number=1, merged_at=merged_at)
    assert (auth.authorised, auth.pinned_run) == expected


@pytest.mark.parametrize("association", ["CONTRIBUTOR", "NONE", "FIRST_TIME_CONTRIBUTOR", "MEMBER"])
def test_the_repository_permission_decides_not_the_association(association):
    """#16.3: GitHub reports CONTRIBUTOR for an org member whose membership is private; the
    collaborator-permission endpoint is what authorises, whatever the association says."""
    asked = []
    writer = reuse.authorise(answered([C(1, "/use 3", association)], lambda l: "write"),
                             lambda l: asked.append(l) or "write", pr_number=1)
    reader = reuse.authorise(answered([C(1, "/use 3", association)], lambda l: "write"), lambda l: "read", pr_number=1)
    assert writer.authorised and writer.pinned_run == 3 and asked == ["u1"]
    assert not reader.authorised and "has read permission" in reader.ignored[0]


# ---- issue 35: a `/use` counts by the permission the bot recorded when it answered it ---------------------

W = reuse.handled_state("write", ["/use 9"])


@pytest.mark.parametrize("rows,now,expected,why", [
    # (comment, the bot's reply state or None for no reply), the author's permission now
    ([(C(1, "/use 9"), W)], "write", (True, 9), None),
    ([(C(1, "/use 9"), None)], "write", (False, None), messages.UNANSWERED),            # job never ran / reply lost
    ([(C(1, "/use 9"), reuse.handled_state("read", ["/use 9"]))], "write", (False, None),
     "when it was handled its author had read permission"),                             # promoted since: still no
    ([(C(1, "/use 9"), {"denied": "read"})], "write", (False, None), "had read permission"),   # an older bot's record
    ([(C(1, "/use 9"), {})], "write", (False, None), messages.UNANSWERED),              # a reply that records nothing
    ([(C(1, "/use 9"), reuse.handled_state("write", ["/use 7"]))], "write", (False, None),
     "checked `/use 7`, not this command"),                                             # edited after the answer
    ([(C(1, "/use 9"), reuse.handled_state("write", []))], "write", (False, None), "checked no command"),
    ([(C(1, "/use 9"), W)], "read", (False, None), "has read permission"),              # demoted since
    ([(C(1, "/use 7"), reuse.handled_state("write", ["/use 7"])), (C(2, "/use 9"), None)], "write", (True, 7),
     messages.UNANSWERED),                                                               # the newer one is unanswered
    ([(C(1, "/sweep plan\n/use 9\n/stage-results"), reuse.handled_state("write", ["/use 9", "/stage-results"]))],
     "write", (True, 9), None),
])
def test_a_use_counts_only_as_the_bot_answered_it(rows, now, expected, why):
    comments = [c for c, _ in rows] + [reply(c.id, state) for c, state in rows if state is not None]
    auth = reuse.authorise(comments, lambda login: now, pr_number=1)
    assert (auth.authorised, auth.pinned_run) == expected
    assert (why is None) == (not auth.ignored) and (why is None or why in auth.ignored[0]), auth.ignored


def test_only_the_bots_own_reply_is_a_record():
    """A reply with the bot's marker and a record of write permission, written by someone else, is text."""
    forged = reply(1, W, author="mallory")
    auth = reuse.authorise([C(1, "/use 9"), forged], lambda login: "write", pr_number=1)
    assert not auth.authorised and messages.UNANSWERED in auth.ignored[0]


def test_the_comment_being_answered_counts_by_what_is_being_recorded():
    """`comment handle` updates the card before its reply (and record) is written: it passes the record."""
    auth = reuse.authorise([C(1, "/use 9")], lambda login: "write", pr_number=1,
                           answering={1: reuse.Handled("write", ("/use 9",))})
    assert auth.authorised and auth.pinned_run == 9


@pytest.mark.parametrize("events,when,expected", [
    ([], "2026-10-01T00:05:00Z", set()),
    ([("a", True, "00:01"), ("b", True, "00:02")], "2026-10-01T00:02:00Z", {"a", "b"}),   # same second counts
    ([("a", True, "00:01"), ("a", False, "00:03")], "2026-10-01T00:02:00Z", {"a"}),
    ([("a", True, "00:01"), ("a", False, "00:03")], "2026-10-01T00:04:00Z", set()),
    ([("a", False, "00:03"), ("a", True, "00:01")], "2026-10-01T00:04:00Z", set()),       # order by time
    ([("a", True, "00:01")], "", set()),                                                  # unknown time: nothing
])
def test_labels_at(events, when, expected):
    evs = [LabelEvent(l, added, f"2026-10-01T{t}:00Z") for l, added, t in events]
    assert labels_at(evs, when) == expected


@hsettings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["/use", "/use 5", "/use 6", "/reuse-sweep-run 7", "hi", "/use x"]),
                          st.sampled_from(["OWNER", "MEMBER", "CONTRIBUTOR"]), st.sampled_from(["u1", "u4", "u3"])),
                max_size=8), st.randoms())
def test_authorisation_depends_on_time_not_on_list_order(rows, rnd):
    comments = [C(i + 1, body, assoc, author=who) for i, (body, assoc, who) in enumerate(rows)]
    shuffled = comments[:]
    rnd.shuffle(shuffled)
    perm = lambda login: PERMS.get(login, "none")  # noqa: E731
    a = reuse.authorise(answered(comments), perm, pr_number=1)
    b = reuse.authorise(answered(shuffled), perm, pr_number=1)
    assert (a.authorised, a.pinned_run) == (b.authorised, b.pinned_run)
