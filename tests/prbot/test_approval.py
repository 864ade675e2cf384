"""`/sweep approve <sha>`: the grammar and the pure decisions of the trusted fork-sweep path (W18)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from ci_tools.github.models import Comment, HeadEvent, WorkflowRun
from ci_tools.prbot.approval import decide as approval
from ci_tools.prbot.approval.flow import outputs
from ci_tools.prbot.context import PrContext
from ci_tools.prbot.commands import SweepApprove, SweepPlan, UsageProblem, parse
from ci_tools.sweep.load import load_policy

ROOT = Path(__file__).resolve().parents[2]
POLICY = load_policy(ROOT)
HEAD = "0123456789abcdef0123456789abcdef01234567"
PRIMARY = "full-sweep-fail-fast"
FORK = PrContext(number=12, head_sha=HEAD, state="open", draft=False, fork=True, labels=(PRIMARY,))


@pytest.mark.parametrize("body,expected", [
    (f"/sweep approve {HEAD}", [SweepApprove(HEAD)]),
    ("/sweep approve 0123456", [SweepApprove("0123456")]),
    ("  /sweep approve 0123ABCdef  ", [SweepApprove("0123abcdef")]),           # hex case does not matter
    ("/sweep plan\n/sweep approve 0123456", [SweepPlan(), SweepApprove("0123456")]),
    ("> /sweep approve 0123456", []),                                          # quoted
    ("```\n/sweep approve 0123456\n```", []),                                  # code block
])
def test_approve_parses(body, expected):
    assert parse(body) == expected


@pytest.mark.parametrize("body", [
    "/sweep approve", "/sweep approve 012345",                                 # missing, 6 digits
    "/sweep approve xyz1234", f"/sweep approve {HEAD}0",                       # not hex, 41 digits
    "/sweep approve 0123456 0123457", "/sweep approve-it 0123456", "/Sweep approve 0123456",
])
def test_malformed_approve_is_a_usage_problem_naming_the_form(body):
    [problem] = parse(body)
    assert isinstance(problem, UsageProblem) and "/sweep approve <sha>" in problem.forms


@pytest.mark.parametrize("given_sha,head,ok", [
    (HEAD, HEAD, True),
    (HEAD.upper(), HEAD, True),               # hex case does not matter
    (HEAD[:7], HEAD, False),                  # a prefix never names a commit for good (issue 35)
    (HEAD[:39], HEAD, False),
    (HEAD + "0", HEAD, False),
    (HEAD, HEAD[:39] + "8", False),
])
def test_names_commit(given_sha, head, ok):
    assert approval.names_commit(given_sha, head) is ok


@given(st.text("0123456789abcdef", min_size=40, max_size=40), st.integers(min_value=7, max_value=39))
@settings(max_examples=50)
def test_no_prefix_names_the_head(head, n):
    assert not approval.names_commit(head[:n], head)


RUNNING = WorkflowRun(id=5, display_title=approval.run_name(12, HEAD), html_url="https://github.com/o/r/actions/runs/5")


@pytest.mark.parametrize("given_sha,facts,running,approved,words", [
    (HEAD, FORK, [], True, "approved with `full-sweep-fail-fast`"),
    (HEAD[:7], FORK, [], False, f"is 7 hex digits, not a full commit SHA"),
    (HEAD[:12].upper(), FORK, [], False, f"comment `/sweep approve {HEAD}`"),   # the head's full SHA to copy
    (HEAD, replace(FORK, state="closed"), [], False, "is closed"),
    (HEAD, replace(FORK, draft=True), [], False, "is a draft"),
    (HEAD, replace(FORK, fork=False), [], False, "branch of this repository"),
    ("fedcba9", FORK, [], False, f"The head of PR #12 is now `{HEAD}`"),
    ("f" * 40, FORK, [], False, f"`{'f' * 40}` is not the head of PR #12, which is now `{HEAD}`"),
    (HEAD, replace(FORK, labels=()), [], False, "exactly one sweep label"),
    (HEAD, replace(FORK, labels=(PRIMARY, "sweep-enabled")), [], False, "found `full-sweep-fail-fast`, "),
    (HEAD, replace(FORK, labels=("all-evals",)), [], False, "found none"),
    (HEAD, FORK, [RUNNING], False, "already queued or running"),
    # a running sweep of another SHA or another PR does not count
    (HEAD, FORK, [replace(RUNNING, display_title=approval.run_name(12, "f" * 40))], True, "approved"),
    (HEAD, FORK, [replace(RUNNING, display_title=approval.run_name(13, HEAD))], True, "approved"),
])
def test_decide(given_sha, facts, running, approved, words):
    d = approval.decide(given_sha, facts, POLICY, running)
    assert d.approved is approved and words in d.reason
    assert outputs(d, 12, 77) == ({"approve-sha": HEAD, "approve-pr": "12", "approve-comment": "77"} if approved
                                 else {"approve-sha": "", "approve-pr": "", "approve-comment": ""})
    assert bool(d.running_url) == bool(running and "already" in words)


# ---- issue 35: the approval race. The maintainer reviewed HEAD and comments at 12:00:00; a fork grinds
# COLLIDING (HEAD's first 7 hex digits) and may push it before or after the comment. Every row: the
# decision at handling time, from the PR's head then and its timeline's head-branch events.

SAID = "2026-10-01T12:00:00Z"
COLLIDING = HEAD[:7] + "f" * 33
OTHER = "e" * 40


def pushed(minute: int, kind: str = "head_ref_force_pushed") -> HeadEvent:
    return HeadEvent(kind, f"2026-10-01T{11 + (minute >= 0):02d}:{minute % 60:02d}:00Z")


RACE = [
    # given, head at handling, head events, approved?
    (HEAD, HEAD, (), True),                                       # reviewed, named in full, nothing moved
    (HEAD[:7], HEAD, (), False),                                  # a prefix: refused, head shown in full
    (HEAD[:7], COLLIDING, (pushed(5),), False),                   # the attack: ground commit pushed after
    (HEAD, COLLIDING, (pushed(5),), False),                       # full SHA: the ground commit is not it
    (HEAD[:7], COLLIDING, (pushed(-5),), False),                  # pushed before the comment, prefix
    (COLLIDING, COLLIDING, (pushed(-5),), True),                  # pushed before, reviewed and named in full
    (HEAD, HEAD, (pushed(-5),), True),                            # an old force push changes nothing
    (HEAD, HEAD, (pushed(2), pushed(3)), False),                  # away and back after the comment
    (HEAD, HEAD, (HeadEvent("head_ref_force_pushed", SAID),), False),   # the same second: may be after
    (HEAD, HEAD, (pushed(2, "head_ref_deleted"), pushed(3, "head_ref_restored")), False),
    (HEAD, HEAD, (HeadEvent("head_ref_force_pushed", "not a time"),), False),   # unreadable: fail closed
    (HEAD, OTHER, (), False),                                     # a plain push after: the head moved
]


@pytest.mark.parametrize("given_sha,head,events,approved", RACE)
def test_the_approval_race_makes_no_wrong_decision(given_sha, head, events, approved):
    d = approval.decide(given_sha, replace(FORK, head_sha=head), POLICY, said_at=SAID, head_events=events)
    assert d.approved is approved, d.reason
    assert d.sha == (head if approved else "")
    if len(given_sha) < 40:
        assert f"`/sweep approve {head}`" in d.reason
    if events and not approved and given_sha == head:
        assert "after this comment was written" in d.reason


def test_an_unknown_comment_time_refuses_after_any_head_event():
    d = approval.decide(HEAD, FORK, POLICY, said_at="", head_events=(pushed(-30),))
    assert not d.approved and "time unknown" in d.reason


def approving(body: str = f"/sweep approve {HEAD}", at: str = SAID) -> Comment:
    return Comment(id=77, body=body, author="maint", created_at=at)


# At the sweep's start: the approval's rule again. (head now, state, the approving comment or None, head
# events since the start of the PR, words of the refusal or None). Rows marked "main" proceeded on main
# of 2026-12-07, which compared the head with the approved SHA and nothing else.
START = [
    (HEAD, "open", approving(), (), None),
    (HEAD.upper(), "open", approving(), (), None),                                       # hex case
    (HEAD, "open", approving(), (pushed(-5),), None),                                    # an old force push
    (OTHER, "open", approving(), (), f"is not the head of PR #12, which is now `{OTHER}`"),   # a plain push
    (HEAD, "closed", approving(), (), "PR #12 is closed"),
    (HEAD, "open", approving(), (pushed(2), pushed(3)), "was force-pushed"),              # away and back (main)
    (HEAD, "open", approving(), (pushed(2, "head_ref_deleted"), pushed(3, "head_ref_restored")), "was restored"),
    (HEAD, "open", None, (), "comment 77 is no longer on PR #12"),                       # deleted (main)
    (HEAD, "open", approving("/sweep approve " + "e" * 40), (), "no longer says"),        # edited away (main)
    (HEAD, "open", approving(f"thanks\n\n<!--\n/sweep approve {HEAD}\n-->"), (), "no longer says"),  # hidden since
]


@pytest.mark.parametrize("head,state,said,events,words", START)
def test_the_sweep_starts_only_while_the_approval_holds(head, state, said, events, words):
    got = approval.check_start(HEAD, replace(FORK, head_sha=head, state=state), approval=said, comment_id=77,
                               head_events=events)
    assert (got is None) is (words is None), got
    assert words is None or words in got


def test_the_start_applies_the_same_rule_as_the_approval():
    """One rule (`commit_problem`): every race row decides the same at the sweep's start."""
    for given_sha, head, events, approved in RACE:
        if len(given_sha) == 40 and given_sha != "e" * 40:
            start = approval.check_start(given_sha, replace(FORK, head_sha=head), comment_id=77, head_events=events,
                                         approval=approving(f"/sweep approve {given_sha}"))
            assert (start is None) is approved, (given_sha, head, events, start)


def test_plan_labels_keeps_policy_labels_only():
    assert approval.plan_labels(["bug", "all-evals", PRIMARY, "all-evals"], POLICY) == ["all-evals", PRIMARY]


def test_concurrency_group_and_run_name_name_pr_and_sha():
    assert approval.concurrency_group(12, HEAD) == f"trusted-sweep-12-{HEAD}"
    assert approval.run_name(12, HEAD) == f"trusted sweep of PR #12 at {HEAD}"


@given(st.text(st.sampled_from("/sweep approve 0123456789abcdefABCDEFxyz \n>`"), max_size=80))
@settings(max_examples=200)
def test_parsed_approvals_always_carry_seven_to_forty_lower_hex_digits(body):
    for cmd in parse(body):
        if isinstance(cmd, SweepApprove):
            assert 7 <= len(cmd.sha) <= 40 and set(cmd.sha) <= set("0123456789abcdef")
