"""A new entry's description fits what shows it (issue 35): GitHub holds at most 65,536 characters in a
comment, and a 1 MB description passed the gate. The limit is defined once
(`ci_tools.changelog.schema.MAX_DESCRIPTION_CHARS`, in README's "Input size limits")."""

from __future__ import annotations

from ci_tools.changelog.lint import Mode, lint_change
from ci_tools.changelog.schema import MAX_DESCRIPTION_CHARS

from .helpers import REPO, entry, history

PR = Mode(REPO, pr=42)


def _lint(desc: tuple[str, ...]):
    base = history()
    return lint_change(base, base + b"\n" + entry(desc=desc), file="log.yaml", mode=PR, master_keys=["cfg-a"])


def test_a_one_megabyte_description_is_refused_at_its_line():
    result = _lint(("x" * 1_000_000,))
    found = [f for f in result.errors if "description" in f.message and "characters" in f.message]
    assert len(found) == 1, [f.as_text() for f in result.errors]
    head = history() + b"\n" + entry(desc=("x",))
    lines = head.decode().splitlines()
    line = len(lines) - lines[::-1].index("  description:")        # the new entry's, the last one
    assert found[0].line == line
    assert found[0].message.endswith(f"description is 1,000,000 characters; at most {MAX_DESCRIPTION_CHARS:,} "
                                     "are allowed (GitHub holds 65,536 in a whole comment)")


def test_the_limit_counts_every_item_and_allows_the_largest_real_one():
    # InferenceX's longest description: 6,266 characters in 7 items
    assert not [f for f in _lint(("y" * 1_000,) * 7).errors if "characters" in f.message]
    many = _lint(("z" * 1_000,) * (MAX_DESCRIPTION_CHARS // 1_000 + 1))
    assert [f for f in many.errors if "characters; at most" in f.message]
    exact = _lint(("w" * MAX_DESCRIPTION_CHARS,))
    assert not [f for f in exact.errors if "characters" in f.message]
