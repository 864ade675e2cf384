"""The command registry: one row per command word gives the usage forms and the permission it needs."""

from __future__ import annotations

import pytest

from ci_tools.prbot import commands
from ci_tools.prbot.commands import StageResults, SweepApprove, SweepPlan, Use, parse


def test_every_command_has_one_registry_row_and_its_forms_parse():
    words = [h.word for h in commands.REGISTRY]
    assert len(words) == len(set(words)) and {w.split()[0] for w in words} == set(commands.FORMS)
    assert commands.FORMS["/sweep"] == ("/sweep plan", "/sweep approve <sha>")   # the usage reply's order
    for row in commands.REGISTRY:
        for form in row.forms:
            example = form.replace("<run_id>", "12").replace("<sha>", "abcdef0")
            assert [type(c) for c in parse(example)] == [row.kind], form
            assert commands.word_of(parse(example)[0]) == row.word


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


@pytest.mark.parametrize("doc,heading", [("docs/maintainer.md", "### Commands (one per line"), ("docs/workflows.md", "Handled by `comment-commands.yml`")])
def test_the_docs_command_tables_follow_the_registry(repo_root, doc, heading):
    """Each documented command is a registry row, and the docs say "anyone" exactly where it needs no permission."""
    text = (repo_root / doc).read_text(encoding="utf-8")
    table = text[text.index(heading):].split("\n\n")[1:3]
    rows = [line.split("|")[1:3] for line in "\n".join(table).splitlines() if line.startswith("| `/")]
    assert rows, f"no command table after {heading!r} in {doc}"
    documented = set()
    for command, who in rows:
        example = command.strip().strip("`").replace("<run_id>", "12").replace("[run_id]", "").replace("<sha>", "abcdef0")
        parsed = parse(example.strip())
        assert len(parsed) == 1 and not isinstance(parsed[0], commands.UsageProblem), command
        word = commands.word_of(parsed[0])
        documented.add(word)
        needs = commands.REQUIRED[type(parsed[0])]
        assert ("anyone" in who) == (needs is None), f"{doc}: {command} says {who.strip()!r}"
    assert documented == {row.word for row in commands.REGISTRY}


@pytest.mark.parametrize("body,expected", [
    ("/use 1\n/use 2", Use(2)),
    ("/use 1\n/reuse-sweep-run", Use(None, legacy=True)),   # a bare one after a pin un-pins
    ("/use 3\n/use abc", Use(3)),                           # a usage problem is not a /use
    ("/sweep plan", None),
])
def test_within_one_comment_the_last_use_wins(body, expected):
    assert commands.effective_use(parse(body)) == expected


@pytest.mark.parametrize("body,created,expected", [
    ("/sweep approve abcdef0\n/use 1\n/sweep plan\n/use 2\n/stage-results",
     True, ["/use 2", "/sweep plan", "/stage-results", "/sweep approve abcdef0"]),
    ("/stage-results 5\n/sweep approve abcdef0\n/use", False, ["/use"]),                  # an edit repeats neither
    ("/sweep approve abcdef0\n/sweep approve 1234567", True, ["/sweep approve 1234567"]),  # the last approval
    ("/use abc\n/sweep plan", True, ["/sweep plan"]),
])
def test_what_one_comment_event_runs_and_in_which_order(body, created, expected):
    assert [c.text for c in commands.to_run(parse(body), created=created)] == expected
