"""The one $GITHUB_OUTPUT writer (`ci_tools.github.actions.append_outputs`), shared by the flow
commands and `runner run`."""

from __future__ import annotations

import re

import pytest

from ci_tools.errors import UsageError
from ci_tools.github.actions import append_outputs


@pytest.mark.parametrize("value,heredoc", [("plain", False), ("two\nlines", True), ("cr\rinside", True), ("", False)])
def test_values_that_would_break_a_name_value_line_use_a_heredoc(tmp_path, monkeypatch, value, heredoc):
    out = tmp_path / "out"
    out.write_text("earlier=1\n")
    monkeypatch.setenv("GITHUB_OUTPUT", str(out))
    append_outputs({"k": value})
    text = out.read_bytes().decode()   # no newline translation: a CR must survive
    assert text.startswith("earlier=1\n")   # appended, never truncated
    m = re.fullmatch(r"earlier=1\nk<<(ghadelim_[0-9a-f]{32})\n(.*)\n\1\n", text, re.S)
    assert bool(m) == heredoc, text
    if heredoc:
        assert m.group(2) == value
    else:
        assert text == f"earlier=1\nk={value}\n"


def test_missing_github_output_is_a_usage_error(monkeypatch):
    monkeypatch.delenv("GITHUB_OUTPUT", raising=False)
    with pytest.raises(UsageError, match=r"needs \$GITHUB_OUTPUT") as exc:
        append_outputs({"k": "v"})
    assert exc.value.exit_code == 2


def test_outputs_github_would_cut_are_refused_with_the_callers_words():
    from ci_tools.errors import InputError
    from ci_tools.github.actions import MAX_OUTPUTS_BYTES, outputs_text

    assert outputs_text({"a": "x" * 1000}) == "a=" + "x" * 1000 + "\n"
    with pytest.raises(InputError) as exc:
        outputs_text({"m": "x" * (MAX_OUTPUTS_BYTES // 2)}, what="the plan's GitHub outputs", hint="Split it.")
    assert exc.value.message.startswith("the plan's GitHub outputs are 1,000,00")   # UTF-16: 2 bytes a char
    assert exc.value.message.endswith("GitHub keeps at most 1,000,000 per job. Split it.")


@pytest.mark.parametrize("kind,message,props,expected", [
    ("error", "plain", {}, "::error::plain"),
    ("warning", "50% slower\r\nsecond line", {"title": "Regressed against main"},
     "::warning title=Regressed against main::50%25 slower%0D%0Asecond line"),
    ("notice", "a, b: c", {"file": "dir/a,b:c.yaml", "line": 3, "col": 5, "title": "changelog lint"},
     "::notice file=dir/a%2Cb%3Ac.yaml,line=3,col=5,title=changelog lint::a, b: c"),
    ("error", "x", {"title": "t: one, two\n"}, "::error title=t%3A one%2C two%0A::x"),
])
def test_one_escaper_for_every_annotation(kind, message, props, expected):
    from ci_tools.github.actions import annotation

    assert annotation(kind, message, **props) == expected


def test_findings_annotate_their_file_line_and_hint():
    from ci_tools.errors import Finding
    from ci_tools.github.actions import finding_annotation

    f = Finding("m.yaml", 4, 2, "bad: value", "quote it", "warning")
    assert finding_annotation(f, "config validate") == \
        "::warning file=m.yaml,line=4,col=2,title=config validate::bad: value (hint: quote it)"


def test_summary_outside_actions_is_an_error_only_when_required(monkeypatch, tmp_path):
    from ci_tools.github.actions import append_summary

    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    assert append_summary("x", required=False) is False
    with pytest.raises(UsageError, match=r"needs \$GITHUB_STEP_SUMMARY"):
        append_summary("x")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "s.md"))
    assert append_summary("one") and append_summary("two\n")
    assert (tmp_path / "s.md").read_text() == "one\ntwo\n"
