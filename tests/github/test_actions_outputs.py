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
