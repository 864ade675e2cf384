"""Which search-space rows are repeats (config/duplicates.py): the same row however it is written."""

from __future__ import annotations

import pytest

from ci_tools.config.duplicates import Repeat, repeated_rows


@pytest.mark.parametrize("text,expect", [
    ("e:\n  search-space:\n  - {tp: 4, ep: 1}\n  - tp: 4\n    ep: 1\n", [Repeat("e", 4, 5, 3)]),   # flow, then block
    ("e:\n  search-space:\n  - {tp: 4, ep: 1}\n  - {ep: 1, tp: 4}\n", [Repeat("e", 4, 5, 3)]),   # keys in another order
    ("e:\n  search-space: [{a: 1}, {a: 1}]\n", [Repeat("e", 2, 26, 2)]),                     # one line
    ("e:\n  search-space:\n  - &r {tp: 8}\n  - *r\n", [Repeat("e", 4, 5, 3)]),                 # an alias of a row
    ("d: &r {tp: 8}\ne:\n  search-space:\n  - {tp: 8}\n  - *r\n", [Repeat("e", 5, 5, 4)]),     # of a node elsewhere
    ("e:\n  search-space:\n  - {tp: 4}\n  - {tp: '4'}\n", []),                                # text is not a number
    ("e:\n  search-space:\n  - {tp: 4, conc-list: [4]}\n  - {tp: 4, conc-list: [4, 8]}\n", []),  # shares points only
    ("e:\n  search-space: [{tp: 4}]\nf:\n  search-space: [{tp: 4}]\n", []),                  # another entry's
    ("e:\n  other: [{tp: 4}, {tp: 4}]\n", []),                                                # not a search space
    ("e: [\n", []),                                                                           # does not parse: not ours
])
def test_which_rows_repeat(text, expect):
    assert repeated_rows(text) == expect


def test_the_walk_stops_after_the_limit():
    text = "e:\n  search-space:\n" + "  - {tp: 4}\n" * 1000
    assert len(repeated_rows(text, 5)) == 6 and len(repeated_rows(text)) == 999
