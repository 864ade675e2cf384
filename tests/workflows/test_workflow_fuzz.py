"""The test helpers' own parsers never crash on odd input: they report or ignore it."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

import gh_expr
import wf_contract as wc

EXPR_ALPHABET = st.sampled_from(list("abn.-_()[]'!=&|<> ,0123456789") + ["needs", "true", "null", "success()"])


@settings(max_examples=300, deadline=None)
@given(st.lists(EXPR_ALPHABET, max_size=25).map("".join))
def test_expressions_evaluate_or_raise_expr_error(text):
    context = {"needs": {"a": {"result": "success", "outputs": {"b": "true"}}}}
    try:
        gh_expr.evaluate(text, context)
    except gh_expr.ExprError:
        pass


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(list("ci-tols \"'\\$;|&<>\n#{}()=abc") + ["ci-tools ", "${{ x }}", "${a[@]}"]),
                max_size=40).map("".join))
def test_shell_scanner_never_crashes(script):
    for argv in wc.ci_tools_commands(script):
        assert isinstance(argv, list) and all(isinstance(w, str) for w in argv)
        wc.expand_words(argv, {})
