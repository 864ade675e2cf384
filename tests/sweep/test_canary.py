"""`canary.released_families`: which families the canary markers release, as a table. Rows are the
markers the release job found (artifact folder -> `family` text) against two planned canaries."""

from __future__ import annotations

import pytest

from ci_tools.sweep.canary import released_families

CANARIES = [{"runner": "cluster:gb300-nv", "family": "cluster:gb300-nv"}, {"runner": "b300", "family": "b300"}]


@pytest.mark.parametrize("markers,passed,note", [
    ({}, set(), None),                                                           # every canary failed
    ({"canary-passed-0": "cluster:gb300-nv\n"}, {"cluster:gb300-nv"}, None),
    ({"canary-passed-0": "cluster:gb300-nv\n", "canary-passed-1": "b300\n"}, {"cluster:gb300-nv", "b300"}, None),
    ({"canary-passed-0": "cluster:gb300-nv"}, {"cluster:gb300-nv"}, None),      # no final newline
    ({"canary-passed-1": "cluster:gb300-nv\n"}, set(), "names 'cluster:gb300-nv', but canary 1 ran on b300"),
    ({"canary-passed-0": "cluster:gb300-nv\nb300\n"}, set(), "canary 0 ran on cluster:gb300-nv"),
    ({"canary-passed-0": " cluster:gb300-nv\n"}, set(), "ignored"),
    ({"canary-passed-0": ""}, set(), "names ''"),
    ({"canary-passed-0": None}, set(), "no `family` file"),
    ({"canary-passed-2": "b300\n"}, set(), "canary-passed-2: not the marker of a planned canary (2 planned"),
    ({"canary-passed-01": "b300\n"}, set(), "not the marker of a planned canary"),
    ({"canary-passed-x": "b300\n"}, set(), "not the marker of a planned canary"),
    ({"canary-passed-0": "cluster:gb300-nv\n", "canary-passed-9": "b300\n"}, {"cluster:gb300-nv"}, "canary-passed-9"),
])
def test_released_families(markers, passed, note):
    got = released_families(markers, CANARIES)
    assert got.passed == passed
    assert (note is None and got.notes == ()) or (note is not None and any(note in n for n in got.notes)), got.notes


def test_no_planned_canary_releases_nothing():
    got = released_families({"canary-passed-0": "b300\n"}, [])
    assert got.passed == set() and "0 planned" in got.notes[0]
