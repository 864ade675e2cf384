"""The runner serves what InferenceX serves (issue 22): every row of InferenceX's masters, given a recipe
with exactly its point, is accepted by `servable` for >= 90 % of the throughput rows and of the eval rows;
every refusal left names its reason. The table by reason is printed (`-s`) and written next to the
test's output (`inferencex-coverage.txt` under pytest's tmp dir); `python tests/runner/inferencex_coverage.py`
prints it too. How each recipe is written: inferencex_coverage.py."""

from __future__ import annotations

import pytest

import inferencex_coverage as coverage

pytestmark = pytest.mark.heavy


def test_ninety_percent_of_inferencex_rows_are_served_and_every_refusal_says_why(shared, tmp_path):
    verdicts = coverage.judge(shared)
    text = coverage.table(verdicts)
    print(text)
    (tmp_path / "inferencex-coverage.txt").write_text(text + "\n", encoding="utf-8")
    for kind, total in (("throughput", 1820), ("eval", 645)):
        mine = [v for v in verdicts if v.kind == kind]
        assert len(mine) == total, (kind, len(mine))   # the corpus expands as it did when this was measured
        accepted = sum(v.accepted for v in mine)
        assert accepted >= 0.9 * len(mine), f"{kind}: {accepted} of {len(mine)} accepted\n{text}"
    for v in verdicts:
        if not v.accepted:
            assert v.reason and len(v.message) > 20, v     # a rule and a sentence, never a bare failure


def test_a_refused_row_is_refused_for_a_reason_the_table_names(shared):
    """The ATOM engine has no plug-in: its rows are refused by the recipe schema, by name."""
    verdicts = coverage.judge(shared)
    atom = [v for v in verdicts if v.framework in ("atom", "atom-disagg")]
    assert atom and all(not v.accepted and "'atom'" in v.reason for v in atom)
