"""The comment command grammar: whole lines only, never in code, quotes or hidden markup; usage
problems carry the right forms. A table, then hypothesis."""

from __future__ import annotations

import pytest
from hypothesis import given, settings as hsettings, strategies as st

from ci_tools.prbot.commands import SweepPlan, StageResults, UsageProblem, Use, parse


@pytest.mark.parametrize("body,expected", [
    ("/use", [Use()]),
    ("  /use 123  ", [Use(123)]),
    ("/use\t42", [Use(42)]),
    ("/reuse-sweep-run 7", [Use(7, legacy=True)]),
    ("/stage-results", [StageResults()]),
    ("/stage-results 9", [StageResults(9)]),
    ("/sweep plan", [SweepPlan()]),
    ("text /use 5", []),
    ("> /use 5", []),
    ("    /use 5", []),
    ("```\n/use 5\n```", []),
    ("~~~~\n/use 5\n~~~\n/use 6\n~~~~\n/use 7", [Use(7)]),
    ("/use 0", [UsageProblem("/use", 1, "/use 0", ("/use", "/use <run_id>"))]),
    ("/use 1 2", [UsageProblem("/use", 1, "/use 1 2", ("/use", "/use <run_id>"))]),
    ("/use #12", [UsageProblem("/use", 1, "/use #12", ("/use", "/use <run_id>"))]),
    ("/users are great", []),                       # two edits from /use: prose, not a typo
    # issue 24: a near miss (one edit from a command word) gets a did-you-mean, not silence
    ("/usee 9", [UsageProblem("/usee", 1, "/usee 9", ("/use", "/use <run_id>"), suggestion="/use")]),
    ("/stage-result 9", [UsageProblem("/stage-result", 1, "/stage-result 9", ("/stage-results", "/stage-results <run_id>"),
                                      suggestion="/stage-results")]),
    ("/Usee", [UsageProblem("/usee", 1, "/Usee", ("/use", "/use <run_id>"), suggestion="/use")]),
    ("/swepe plan", [UsageProblem("/swepe", 1, "/swepe plan", ("/sweep plan", "/sweep approve <sha>"), suggestion="/sweep")]),
    ("/assign @me", []),                            # other bots' commands are not ours
    ("/retest", []),
    ("hi\r\n/use 3\r\n", [Use(3)]),
])
def test_grammar(body, expected):
    assert parse(body) == expected


@hsettings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("/use reuswpplan-tagr0123456789\n\t >`~x")), max_size=80))
def test_parser_never_crashes_and_commands_are_whole_lines(body):
    for cmd in parse(body):
        assert isinstance(cmd, (Use, StageResults, SweepPlan, UsageProblem))
        if isinstance(cmd, (Use, StageResults)):
            assert any(line.strip().split() and line.strip().split()[0] == cmd.text.split()[0]
                       for line in body.replace("\r", "\n").split("\n"))
