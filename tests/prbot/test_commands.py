"""The command registry: one row per command word gives the usage forms and the permission it needs."""

from __future__ import annotations

import pytest

from ci_tools.prbot import commands
from ci_tools.prbot.commands import StageResults, SweepApprove, SweepPlan, Use, parse


def test_every_command_word_has_one_registry_row_and_its_forms_parse():
    words = [h.word for h in commands.REGISTRY]
    assert len(words) == len(set(words)) and set(words) == set(commands.FORMS)
    for row in commands.REGISTRY:
        for form in row.forms:
            example = form.replace("<run_id>", "12").replace("<sha>", "abcdef0")
            assert [type(c).__name__ for c in parse(example)] != ["UsageProblem"], form


def test_every_command_type_says_what_permission_it_needs():
    assert set(commands.REQUIRED) == {Use, StageResults, SweepPlan, SweepApprove}


@pytest.mark.parametrize("body,needed", [
    ("/sweep plan", None),
    ("/use", "write"),
    ("/sweep plan\n/stage-results", "write"),      # folded: the most any command needs
    ("/sweep approve abcdef0", "write"),
    ("/use abc", None),                             # a usage problem runs nothing
    ("", None),
])
def test_required_is_folded_over_the_comment(body, needed):
    assert commands.required(c for c in parse(body) if not isinstance(c, commands.UsageProblem)) == needed


@pytest.mark.parametrize("permission,needed,ok", [
    ("admin", "write", True), ("maintain", "write", True), ("write", "write", True),
    ("triage", "write", False), ("read", "write", False), ("none", "write", False), ("none", None, True),
])
def test_allows(permission, needed, ok):
    assert commands.allows(permission, needed) is ok
