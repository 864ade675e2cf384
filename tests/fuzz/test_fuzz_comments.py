"""Fuzz tier: the comment command grammar on hostile bodies: typed results only, never an exception."""

from __future__ import annotations

from hypothesis import given, strategies as st

from ci_tools.prbot import commands

from .harness import check_case, fuzz_settings
from .hostile import UNICODE

WORDS = ["/use", "/USE", "/reuse-sweep-run", "/stage-results", "/sweep", "plan", "approve", "/foo", "123",
         "0", "99999999999999999999999", "deadbeef", "deadbeefcafe" * 4, "```", "~~~", ">", "    ", "<!--", "-->",
         "<details>", "</details>", "\\", "/use\u00a01", "/use\u20031"]
piece = st.one_of(st.sampled_from(WORDS), st.text(alphabet=st.sampled_from(list(UNICODE) + list(" \n\r\t/`>~")),
                                                  max_size=6), st.text(max_size=8))
body = st.one_of(st.lists(piece, max_size=60).map(" ".join),
                 st.lists(piece, max_size=60).map("\n".join),
                 st.builds(lambda n, line: line * n, st.integers(1, 20_000), st.sampled_from(["/use 1\n", "```\n", "> x\n"])))

TYPES = (commands.Use, commands.StageResults, commands.SweepPlan, commands.SweepApprove, commands.UsageProblem)


@fuzz_settings(300)
@given(body)
def test_fuzz_comment_grammar(text):
    found = check_case("comment-grammar", commands.parse, text).value
    assert isinstance(found, list) and all(isinstance(c, TYPES) for c in found)
    for c in found:
        if isinstance(c, (commands.Use, commands.StageResults)) and c.run_id is not None:
            assert 0 < c.run_id < 10 ** commands.MAX_RUN_ID_DIGITS
        if isinstance(c, commands.SweepApprove):
            assert 7 <= len(c.sha) <= 40 and all(ch in "0123456789abcdef" for ch in c.sha)


# ---- issue 25, 8: a sign-off comment is read in linear time ---------------------------------------------

SIGNOFF_SHAPES = ["\n", " \t\n", "Signed:\n", "- [ ] an item\n", "\r\n", "Signed: `\n"]


@fuzz_settings(6)
@given(st.sampled_from(SIGNOFF_SHAPES), st.sampled_from(["", "Signed: @someone\n", "x"]))
def test_fuzz_signoff_bodies_of_256_kb_are_read_within_the_hang_bound(unit, tail):
    """The `Signed:` regex ran `^\\s*` from every line start over all the newlines after it: a comment
    of 65k newlines from anyone cost 9.8 s (256 KB of them: about a minute). check_case fails a case
    past HANG_S; benchmarks/signoff_parse.py has the figures (1 MB: about 0.1 s, 4x the 256 KB time)."""
    from pathlib import Path

    from ci_tools import names
    from ci_tools.prbot.signoff import decide as signoff

    root = Path(__file__).resolve().parents[2]
    checklist = signoff.parse_checklist((root / names.REVIEW_CHECKLIST).read_text(), names.REVIEW_CHECKLIST)
    text = signoff.PHRASE + "\n" + unit * ((256 << 10) // len(unit)) + tail
    checks = check_case("signoff-parse", signoff.checklist_checks, text, "someone", checklist).value
    assert [c.name for c in checks][-1] == "signed by the signer"
