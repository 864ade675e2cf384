"""Fuzz tier: the comment grammar against GitHub's own renderer. Bodies mix commands with the markup that
hides text or turns it into code (tags and attributes over lines, comments, link definitions and titles,
image alt text, `<details>`, fences, quotes, list items, indentation); each is rendered by cmark-gfm and
read by a browser-grade parser (`tests/github_markdown.py`). The rule held: every command the grammar
accepts is shown to a reader. The grammar errs on hiding, so a command shown alone on a plain line may
still be refused; how often is counted ("shown alone, refused"), not bounded: a refused command only
needs saying again, an accepted hidden one would act unseen."""

from __future__ import annotations

from hypothesis import given, strategies as st

from ci_tools.prbot import commands
from tests import github_markdown

from .harness import check_case, fuzz_settings, tally

# Markup a line may hold: pieces that open or close what hides text, and plain text.
PIECES = ['<img alt="', '">', '" src="x.png">', "<img alt='", "'>", '<div title="', "<div>", "</div>", "<details>",
          "<details open>", "</details>", "<summary>s</summary>", "<pre>", "</pre>", "<!--", "-->", "<!-- x -->",
          "<!-->", "--!>", "```", "~~~", "````", "```py", "    code", "> quote", ">", "- item", "1. item",
          "[//]: # (", ")", '[x]: https://e.com "', '"', "'", '[a](https://e.com "', "![", "]", "![alt",
          "](https://e.com/i.png)", "`", "``", "<script>", "</script>", "<textarea>", '<span title="', '<a href="x">',
          "</a>", "<p>", "</p>", "", "", "   ", "text", "| a | b |", "|---|---|", "***", "---", "<?", "?>", "<?x>",
          "<![CDATA[", "]]>", "<!X", "<!x>", "</ x>", "<", "\\", "*", '<x-y z="', "<table>", "<tr><td>",
          "</td></tr></table>", "\t", "<br>", "[x]:", "https://e.com", "<https://e.com>", '<a b"c>', '<a =">',
          "title=\"", "<div", "[l]: <x> \"", "<template>", "</template>", "<svg>", "&quot;"]
PREFIXES = ["", "", "", " ", "   ", "    ", "\t", "> ", "- ", "1. ", "  "]
COMMANDS = ("/use {n}", "/stage-results {n}", "/sweep approve {n:040x}")

command_line = st.tuples(st.just("command"), st.sampled_from(PREFIXES), st.integers(0, len(COMMANDS) - 1),
                         st.sampled_from(["", "", "", " ", *PIECES]))
markup_line = st.tuples(st.just("markup"), st.sampled_from(PREFIXES), st.sampled_from(PIECES),
                        st.sampled_from(["", "", *PIECES]))
bodies = st.lists(st.one_of(command_line, markup_line), min_size=1, max_size=14)


def build(lines: list[tuple]) -> tuple[str, list[str]]:
    """The body, and each command written in it, numbered so each names itself (`/use 1000`, ...)."""
    out: list[str] = []
    planted: list[str] = []
    for kind, prefix, what, after in lines:
        if kind == "command":
            planted.append(COMMANDS[what].format(n=1000 + len(planted)))
            out.append(prefix + planted[-1] + after)
        else:
            out.append(prefix + what + after)
    return "\n".join(out), planted


def said(command: commands.Command | commands.UsageProblem) -> str | None:
    return None if isinstance(command, commands.UsageProblem) else command.text


@fuzz_settings(400)
@given(bodies)
def test_fuzz_every_command_accepted_is_shown_on_github(lines):
    body, planted = build(lines)
    accepted = {said(c) for c in check_case("comment-rendered", commands.parse, body).value} - {None}
    seen = github_markdown.seen(body)
    for command in planted:
        tally("comment-rendered", "written")
        if command in accepted:
            tally("comment-rendered", "accepted")
            assert seen.shows(command), f"accepted {command!r}, which GitHub does not show:\n{body!r}\n{seen.html}"
        if command in seen.plain:
            tally("comment-rendered", "shown alone")
            if command not in accepted:
                tally("comment-rendered", "shown alone, refused")
