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


# ---- issue 35: markup that renders as nothing (checked against cmark-gfm, GitHub's renderer) -------------

SHA = "a" * 40


@pytest.mark.parametrize("body", [
    f'<img alt="\n/sweep approve {SHA}\n" src="x.png">',                # a quoted attribute over lines
    f"<img alt='\n/use 9\n' src=x>",
    f'<div title="\n/use 9\n">',                                         # an HTML block's tag
    f"Thanks!\n\n[//]: # (\n/sweep approve {SHA}\n)",                    # a link reference definition
    '[//]: # "\n/use 9\n"',
    "[x]:\n/u\n'\n/use 9\n'",
    'see [the run](https://x/r "\n/use 9\n")',                          # a link's title
    "![\n/use 9\n](https://x/i.png)",                                    # an image's alt text
    'x `code\n/use 9\nmore` y',                                          # a code span over lines
    '<div title="\n\n/use 9\n',                                          # raw HTML left open swallows the rest
    '> <div title="\n\n/use 9\n',
    '- <div title="\n\n/use 9',
    "<details>\n<div title=\"\n</details>\n\">\n/use 9\n",               # a closing tag inside an attribute
    "<script>\n/use 9\n</script>",                                     # GitHub removes it with its content
    "```a`\n```\n/use 9",                                                # "```a`" is text; the fence after it is one
    "> quoted\n/use 9",                                                  # a quote's lazy continuation line
])
def test_what_renders_as_nothing_or_as_code_holds_no_command(body):
    assert [c for c in parse(body) if not isinstance(c, UsageProblem)] == []


@pytest.mark.parametrize("body,expected", [
    ("hello\n/use 9\nbye", [Use(9)]),
    ("<div>\n/use 9\n</div>", [Use(9)]),                                 # text inside an HTML block shows
    ('<img alt="x" src="y.png">\n/use 9', [Use(9)]),                     # markup on its own line only
    ("a<b\n/use 9", [Use(9)]),                                           # not a tag: escaped text
    ("> quoted\n\n/use 9", [Use(9)]),                                    # a blank line ends the quote
    (">\n/use 9", [Use(9)]),                                             # an empty quote opens no paragraph
    ("```\ncode\n```\n/use 9", [Use(9)]),
    ("```\n```x\n/use 8\n```\n/use 9", [Use(9)]),                        # "```x" closes nothing
    ('<img alt="\n- a list ends the paragraph\n/use 9\n">', [Use(9)]),  # so the tag was no tag
])
def test_what_shows_still_runs(body, expected):
    assert parse(body) == expected


# ---- checked against GitHub's renderer (tests/github_markdown.py: cmark-gfm and a browser's parser) ---------
# Each body hides `/use 9` on GitHub; the grammar of 2026-12-07 ran it (the fuzz tier found them).

HIDDEN_ON_GITHUB = [
    "<div>\n```\n<details>\n```\n/use 9",                   # no fence inside raw HTML: the <details> is real
    '[l]: <x> "\n(\n1. [l]: <x> "\n/use 9\n"',              # a definition in a list item, its title over lines
    "![\n[a]\n/use 9\n](https://e.com/x.png)",              # an image's alt text holding brackets
    "text <?x\n/use 9\n?> more",                            # a processing instruction: a bogus comment
    '[a]: https://e.com "x\\\n/use 9\n"',                   # a backslash before a title's line ending
    'text\n<b>\n<?x>\n\nfoo <a title="\n\n/use 9\n?>',      # raw HTML starting inside a tag line's "block"
]


@pytest.mark.parametrize("body", HIDDEN_ON_GITHUB)
def test_what_github_hides_holds_no_command(body):
    from tests import github_markdown

    assert not github_markdown.seen(body).shows("/use 9")
    assert [c for c in parse(body) if not isinstance(c, UsageProblem)] == []


@pytest.mark.parametrize("body", [
    "<!-->\n/use 9",                                        # an empty comment ends where it starts
    "text <!--\n\n/use 9\n-->",                             # a blank line ends the paragraph: no comment
    "<details><summary>Logs</summary>\n\nx\n\n</details>\n/use 9",
    "<pre>\nx\n</pre>\n/use 9",
    "hello\n/use 9\nbye",
])
def test_what_github_shows_alone_still_runs(body):
    from tests import github_markdown

    assert "/use 9" in github_markdown.seen(body).plain
    assert parse(body) == [Use(9)]


def test_a_fence_in_a_list_item_is_code():
    assert parse("- ```\n  /use 9\n  ```\n/use 8") == [Use(8)]
