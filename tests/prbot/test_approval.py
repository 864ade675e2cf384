"""`/sweep approve <sha>`: the grammar and the pure decisions of the trusted fork-sweep path (W18)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from ci_tools.github.models import WorkflowRun
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
    (HEAD[:7], HEAD, True),
    (HEAD[:12].upper(), HEAD, True),
    (HEAD[:6], HEAD, False),                  # too short to name a commit
    ("1" + HEAD[1:7], HEAD, False),
    (HEAD + "0", HEAD, False),
    (HEAD, HEAD[:39] + "8", False),
])
def test_sha_matches(given_sha, head, ok):
    assert approval.sha_matches(given_sha, head) is ok


@given(st.text("0123456789abcdef", min_size=40, max_size=40), st.integers(min_value=7, max_value=40))
@settings(max_examples=50)
def test_every_prefix_of_seven_or_more_names_the_head(head, n):
    assert approval.sha_matches(head[:n], head)


RUNNING = WorkflowRun(id=5, display_title=approval.run_name(12, HEAD), html_url="https://github.com/o/r/actions/runs/5")


@pytest.mark.parametrize("given_sha,facts,running,approved,words", [
    (HEAD, FORK, [], True, "approved with `full-sweep-fail-fast`"),
    (HEAD[:7], FORK, [], True, "approved"),
    (HEAD, replace(FORK, state="closed"), [], False, "is closed"),
    (HEAD, replace(FORK, draft=True), [], False, "is a draft"),
    (HEAD, replace(FORK, fork=False), [], False, "branch of this repository"),
    ("fedcba9", FORK, [], False, "is not the head of PR #12, which is `0123456789ab`"),
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
    assert outputs(d, 12) == ({"approve-sha": HEAD, "approve-pr": "12"} if approved
                             else {"approve-sha": "", "approve-pr": ""})
    assert bool(d.running_url) == bool(running and "already" in words)


@pytest.mark.parametrize("approved,head,state,problem", [
    (HEAD, HEAD, "open", None),
    (HEAD, HEAD.upper(), "open", None),
    (HEAD, "f" * 40, "open", "moved from the approved commit 0123456789ab to ffffffffffff"),
    (HEAD, HEAD, "closed", "is closed"),
])
def test_check_head_refuses_a_moved_pr(approved, head, state, problem):
    got = approval.check_head(approved, head, pr=12, state=state)
    assert got == problem or (problem and problem in got)


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
