"""The runner digest core: per-label states as a table, and the Markdown as a golden file."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from ci_tools.runner.digest import build_digest, expected_runners, render_markdown
from ci_tools.runner.digest import digest_outputs
from tests.conftest import assert_golden

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "runner"


def r(name, status="online", busy=False):
    return {"name": name, "status": status, "busy": busy}


@pytest.mark.parametrize("runners, expected, row", [
    ([r("a"), r("b")], ["a", "b"], dict(idle=("a", "b"))),
    ([r("a", busy=True), r("b")], ["a", "b"], dict(busy=("a",), idle=("b",))),
    ([r("a", "offline"), r("b")], ["a", "b"], dict(offline=("a",), idle=("b",))),
    # an offline runner GitHub still marks busy is offline (it will not finish its job)
    ([r("a", "offline", busy=True)], ["a"], dict(offline=("a",))),
    ([r("b")], ["a", "b"], dict(missing=("a",), idle=("b",))),
    ([], ["b", "a"], dict(missing=("a", "b"))),
    # names listed twice under one label count once
    ([r("a")], ["a", "a"], dict(idle=("a",))),
])
def test_one_label(runners, expected, row):
    d = build_digest("o/r", runners, {"gb300": expected})
    [got] = d.labels
    for state in ("offline", "missing", "busy", "idle"):
        assert getattr(got, state) == row.get(state, ()), state


@pytest.mark.parametrize("runners, healthy, down", [
    ([r("a"), r("b"), r("c")], "true", ""),
    ([r("a", busy=True), r("b", busy=True), r("c")], "true", ""),
    ([r("a", "offline"), r("b", "offline"), r("c")], "false", "x"),
    ([r("a", "offline"), r("c")], "false", "x"),
    ([r("a"), r("b"), r("c", "offline")], "false", "y"),
    # an unlisted offline runner is still an offline runner of the repository
    ([r("a"), r("b"), r("c"), r("z", "offline")], "false", ""),
])
def test_outputs(runners, healthy, down):
    d = build_digest("o/r", runners, {"x": ["a", "b"], "y": ["c"]})
    out = digest_outputs(d)
    assert out["healthy"] == healthy and out["down-labels"] == down
    assert out["total"] == str(len(runners))
    assert int(out["offline"]) == sum(x["status"] == "offline" for x in runners)


def test_a_runner_under_two_labels_is_counted_once():
    d = build_digest("o/r", [r("g0", "offline")], {"gb300": ["g0", "g1"], "cluster:gb300": ["g0", "g1"]})
    assert digest_outputs(d)["offline"] == "1" and digest_outputs(d)["missing"] == "1"
    assert d.down_labels == ("cluster:gb300", "gb300")


def test_expected_runners_reads_the_labels_map():
    assert expected_runners({"labels": {"b300": ["x", "y"], "empty": None}, "hardware": {}}) == {
        "b300": ["x", "y"], "empty": []}
    assert expected_runners({}) == {}


def digest_fixture():
    runners = [r("b300-nv_00", busy=True), r("b300-nv_01"), r("gb300-nv_0", "offline"), r("gb300-nv_1", "offline"),
               r("gb300-nv_2", "offline"), r("old-box", "offline"), r("mi355x-amd_00"), r("mi355x-amd_01")]
    # the example's runners.yaml, as the GitHub-side test registers it (tests/github/test_gh_runner_digest.py)
    expected = {"b300": ["b300-nv_00", "b300-nv_01"], "gb300": [f"gb300-nv_{i}" for i in range(4)],
                "cluster:gb300-nv": [f"gb300-nv_{i}" for i in range(4)], "mi355x": ["mi355x-amd_00", "mi355x-amd_01"]}
    return build_digest("octo/bench", runners, expected)


@pytest.mark.parametrize("name, digest, run_url", [
    ("digest-problems.md", digest_fixture, "https://github.com/octo/bench/actions/runs/5"),
    ("digest-healthy.md", lambda: build_digest("octo/bench", [r("a"), r("b", busy=True)], {"b300": ["a", "b"]}), ""),
])
def test_markdown_golden(name, digest, run_url):
    text = render_markdown(digest(), date="2026-11-30", run_url=run_url)
    assert_golden(GOLDEN / name, text)

NAMES = st.sampled_from([f"r{i}" for i in range(8)])
RUNNER = st.builds(lambda n, s, b: {"name": n, "status": s, "busy": b}, NAMES,
                   st.sampled_from(["online", "offline"]), st.booleans())


@settings(max_examples=150, deadline=None)
@given(st.lists(RUNNER, max_size=10, unique_by=lambda r: r["name"]),
       st.dictionaries(st.sampled_from(["a", "b", "cluster:c"]), st.lists(NAMES, max_size=6), max_size=3))
def test_every_listed_runner_has_exactly_one_state(runners, expected):
    d = build_digest("o/r", runners, expected)
    known = {r["name"]: r for r in runners}
    for row in d.labels:
        states = [row.offline, row.missing, row.busy, row.idle]
        placed = [n for group in states for n in group]
        assert sorted(placed) == sorted(set(expected[row.label]))
        assert all(n not in known for n in row.missing)
        assert all(known[n]["status"] == "offline" for n in row.offline)
        assert all(known[n]["status"] == "online" and known[n]["busy"] for n in row.busy)
    assert set(d.offline) == {n for n, r in known.items() if r["status"] == "offline"}
    assert digest_outputs(d)["healthy"] == ("true" if not d.offline and not d.missing else "false")
    render_markdown(d, date="2026-01-01")  # renders whatever the mix
