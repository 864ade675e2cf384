"""`/use` authorisation (the spec's cases 41-45, W3, W4, W5) and the label history, as pure tables."""

from __future__ import annotations

import pytest
from hypothesis import given, settings as hsettings, strategies as st

from ci_tools.github.models import Comment, LabelEvent
from ci_tools.prbot.reuse import decide as reuse

# ---- authorisation: pure table (41-45, W3, W4, W5) ----------------------------------------------

def C(i, body, assoc="MEMBER", author=None, at=None, type_="User"):
    return Comment(id=i, body=body, author=author or f"u{i}", author_type=type_, association=assoc,
                   created_at=at or f"2026-10-01T00:{i:02d}:00Z")


PERMS = {"u1": "write", "u2": "write", "u3": "admin", "u4": "read", "u5": "maintain", "bot": "write"}


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

    auth = reuse.authorise(comments, perm, pr_number=1, merged_at=merged_at)
    assert (auth.authorised, auth.pinned_run) == expected


@pytest.mark.parametrize("association", ["CONTRIBUTOR", "NONE", "FIRST_TIME_CONTRIBUTOR", "MEMBER"])
def test_the_repository_permission_decides_not_the_association(association):
    """#16.3: GitHub reports CONTRIBUTOR for an org member whose membership is private; the
    collaborator-permission endpoint is what authorises, whatever the association says."""
    asked = []
    writer = reuse.authorise([C(1, "/use 3", association)], lambda l: asked.append(l) or "write", pr_number=1)
    reader = reuse.authorise([C(1, "/use 3", association)], lambda l: "read", pr_number=1)
    assert writer.authorised and writer.pinned_run == 3 and asked == ["u1"]
    assert not reader.authorised and "has read permission" in reader.ignored[0]


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
    assert reuse.labels_at(evs, when) == expected


@hsettings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["/use", "/use 5", "/use 6", "/reuse-sweep-run 7", "hi", "/use x"]),
                          st.sampled_from(["OWNER", "MEMBER", "CONTRIBUTOR"]), st.sampled_from(["u1", "u4", "u3"])),
                max_size=8), st.randoms())
def test_authorisation_depends_on_time_not_on_list_order(rows, rnd):
    comments = [C(i + 1, body, assoc, author=who) for i, (body, assoc, who) in enumerate(rows)]
    shuffled = comments[:]
    rnd.shuffle(shuffled)
    perm = lambda login: PERMS.get(login, "none")  # noqa: E731
    a = reuse.authorise(comments, perm, pr_number=1)
    b = reuse.authorise(shuffled, perm, pr_number=1)
    assert (a.authorised, a.pinned_run) == (b.authorised, b.pinned_run)
