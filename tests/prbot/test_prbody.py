"""The PR-description check, a table over the repository's own pull-request template."""

from __future__ import annotations

from pathlib import Path

import pytest

from ci_tools.prbot.prbody.decide import check_body

TEMPLATE = (Path(__file__).resolve().parents[2] / ".github" / "pull_request_template.md").read_text()


@pytest.mark.parametrize("body,missing", [
    (TEMPLATE, ["Model/version", "not ticked"]),
    (TEMPLATE.replace("FILL_IN\n- Role: FILL_IN", "Claude Opus 5.5\n- Role: drafted the recipe")
     .replace("- [ ]", "- [x]"), []),
    (TEMPLATE.replace("Model/version: FILL_IN", "Model/version: none").replace("- [ ]", "- [x]"), []),
    (TEMPLATE.replace("Model/version: FILL_IN", "Model/version: GPT").replace("- [ ]", "- [x]"), ["Role:"]),
    ("## Description\nstuff", ["AI model disclosure", "Checklist"]),
    (None, ["AI model disclosure", "Checklist"]),
])
def test_pr_body_check(body, missing):
    result = check_body(body)
    assert result.ok is (not missing)
    for m in missing:
        assert any(m in x for x in result.missing), result.missing
