"""The status card's sections: patching one keeps every other byte; sweep progress per family."""

from __future__ import annotations

import pytest

from ci_tools.github.models import job_from_json
from ci_tools.prbot.card import decide as card
from ci_tools.prbot import sticky as cm

FAMILIES = ("single-node-agentic", "agentic-evals")


def test_a_card_round_trips_its_sections():
    body = card.render({"sweep": "run 1", "reuse": "pinned to run 7."}, {"k": 1})
    assert body.startswith(cm.marker(card.KIND) + "\n<!-- ci-tools:state {\"k\":1} -->\n")
    assert card.sections_of(body) == {"sweep": "run 1", "reuse": "pinned to run 7."}
    assert cm.state_of_text(body) == {"k": 1}


def test_patch_replaces_one_section_and_keeps_the_others_and_the_state():
    body = card.render({"sweep": "run 1", "results": "table A"}, {"writers": {"a": "write"}})
    out = card.patch(body, "results", "table B")
    assert card.sections_of(out) == {"sweep": "run 1", "results": "table B"}
    assert cm.state_of_text(out) == {"writers": {"a": "write"}}
    again = card.patch(out, "reuse", "pinned")
    assert card.sections_of(again) == {"sweep": "run 1", "results": "table B", "reuse": "pinned"}
    # sections always come in the fixed order, whoever wrote first: the verdict before the progress
    assert again.index("section results") < again.index("section sweep") < again.index("section reuse")


def test_patch_is_idempotent_and_has_sees_it():
    body = card.patch(None, "plan", "7 points")
    assert card.patch(body, "plan", "7 points") == body
    assert card.has(body, "plan", "7 points") and not card.has(body, "plan", "8 points")
    assert not card.has(body, "results", "x")


def test_patch_can_replace_the_state():
    body = card.patch(card.render({"plan": "p"}, {"a": 1}), "plan", "q", state={"a": 2})
    assert cm.state_of_text(body) == {"a": 2}


@pytest.mark.parametrize("bad", ["result", "Sweep", ""])
def test_unknown_sections_are_refused(bad):
    with pytest.raises(ValueError):
        card.patch(None, bad, "x")
    with pytest.raises(ValueError):
        card.render({bad: "x"})


def test_a_section_holding_marker_lookalikes_or_crlf_is_read_back():
    tricky = "line\n<!-- ci-tools:section other -->\nnot a section"
    body = card.patch(None, "results", tricky).replace("\n", "\r\n")
    assert card.sections_of(body)["results"] == tricky


@pytest.mark.parametrize("job, state", [
    ({"status": "queued"}, "queued"),
    ({"status": "waiting"}, "queued"),
    ({"status": "in_progress"}, "running"),
    ({"status": "completed", "conclusion": "success"}, "passed"),
    ({"status": "completed", "conclusion": "failure"}, "failed"),
    ({"status": "completed", "conclusion": "timed_out"}, "failed"),
    ({"status": "completed", "conclusion": "cancelled"}, "cancelled"),
    ({"status": "completed", "conclusion": "skipped"}, "skipped"),
    ({"status": "completed", "conclusion": None}, "failed"),  # never read an unknown ending as a pass
])
def test_job_state(job, state):
    assert card.job_state(job_from_json({"name": "j", **job})) == state


@pytest.mark.parametrize("name, family", [
    ("sweep / canary / gb300-nv dsv41flash c1", "canary"),
    ("sweep / single-node-agentic / gb300-nv dsv41flash c64", "single-node-agentic"),
    ("agentic-evals / gb300-nv eval c128", "agentic-evals"),
    ("sweep / plan", None),
    ("sweep / collect results", None),
    ("single-node-agentic-extra / x", None),
])
def test_family_of(name, family):
    assert card.family_of(name, FAMILIES) == family


def test_progress_counts_per_family_in_order_with_the_first_failure():
    jobs = [
        {"name": "sweep / plan", "status": "completed", "conclusion": "success"},
        {"name": "sweep / agentic-evals / e c128", "status": "in_progress"},
        {"name": "sweep / single-node-agentic / a c1", "status": "completed", "conclusion": "success"},
        {"name": "sweep / single-node-agentic / a c4", "status": "completed", "conclusion": "failure",
         "html_url": "https://x/j/4"},
        {"name": "sweep / single-node-agentic / a c16", "status": "completed", "conclusion": "failure",
         "html_url": "https://x/j/16"},
        {"name": "sweep / canary / a c1", "status": "completed", "conclusion": "success"},
    ]
    rows = card.progress([job_from_json(j) for j in jobs], FAMILIES)
    assert [r["family"] for r in rows] == ["canary", "single-node-agentic", "agentic-evals"]
    assert (rows[1]["passed"], rows[1]["failed"], rows[1]["failed_job"]["url"]) == (1, 2, "https://x/j/4")
    assert rows[2]["running"] == 1
    text = card.sweep_markdown({"id": 9, "url": "https://x/r/9", "head_sha": "a" * 40, "conclusion": None}, rows)
    assert "[Run 9](https://x/r/9) on `aaaaaaaaaaaa`: **in progress**" in text
    assert "| single-node-agentic ([first failure](https://x/j/4)) | 3 | 0 | 0 | 1 | 2 | 0 | 0 |" in text


def test_no_run_yet():
    assert "No sweep has run" in card.sweep_markdown(None, [])


# ---- the card's first line: the run's state ------------------------------------------------------

RUN = {"id": 50, "url": "https://github.com/o/r/actions/runs/50", "head_sha": "a" * 40}


@pytest.mark.parametrize("conclusion, first", [
    ("failure", "### ❌ Sweep failed / 扫描失败 · [run 50]"),
    ("timed_out", "### ❌ Sweep failed"),
    ("success", "### ✅ Sweep passed / 扫描通过 · [run 50]"),
    ("cancelled", "### ⏹️ Sweep cancelled"),
    ("in_progress", "### ⏳ Sweep running"),
    ("queued", "### 🕒 Sweep queued"),
    ("action_required", "### ✋ Sweep waiting for approval"),
    ("something new from GitHub", "### ❌ Sweep failed"),     # never reads as passed
])
def test_the_card_opens_with_the_runs_state(conclusion, first):
    body = card.render({"results": "…", "sweep": "run 50"}, {"run": {**RUN, "conclusion": conclusion}})
    shown = [line for line in body.splitlines() if line.strip() and not line.startswith("<!--")]
    assert shown[0].startswith(first) and shown[0].endswith("on `aaaaaaaaaaaa`")
    assert body.index(shown[0]) < body.index("**Results against main")


def test_a_card_before_any_run_says_so():
    body = card.render({"plan": "7 points"}, {})
    assert [line for line in body.splitlines() if line.startswith("###")] == ["### ⚪ Sweep not run yet / 扫描尚未运行"]


# ---- arrows: the direction of the number; the verdict: better or worse -----------------------------

def _result(tok=None, ttft=None):
    return {"valid": True, "point": {"name": "tp4-c16", "config-key": "k", "tp": 4, "conc": 16},
            "headline": {"tok_s_gpu": tok, "ttft_p90_s": ttft}}


@pytest.mark.parametrize("metric, head, base, cells", [
    # higher is better: up is improved, down is regressed
    ("throughput", _result(tok=1300.0), _result(tok=1000.0), ["▲\u00a0+30.0%", "🟢\u00a0improved"]),
    ("throughput", _result(tok=700.0), _result(tok=1000.0), ["▼\u00a0-30.0%", "🔴\u00a0regressed"]),
    # lower is better: down is improved (never "▲ improved"), up is regressed
    ("P90 TTFT (lower is better)", _result(ttft=0.5), _result(ttft=2.0), ["▼\u00a0-75.0%", "🟢\u00a0improved"]),
    ("P90 TTFT (lower is better)", _result(ttft=3.0), _result(ttft=2.0), ["▲\u00a0+50.0%", "🔴\u00a0regressed"]),
])
def test_every_arrow_direction(metric, head, base, cells):
    from ci_tools.results import compare, compare_render

    comparisons = compare.compare_points([head], [base])
    text = compare_render.card_markdown(comparisons, None)
    [row] = [line for line in text.splitlines() if line.startswith(f"| tp4-c16 | {metric} |")]
    assert row.split(" | ")[-2:] == [cells[0], cells[1] + " |"]


@pytest.mark.parametrize("change, want", [(0.3, "▲"), (-0.3, "▼"), (0.0, "="), (None, "–")])
def test_arrow_of_a_change(change, want):
    from ci_tools.results.compare_render import arrow

    assert arrow(change) == want


def test_card_cells_keep_a_number_with_its_unit_and_arrow_and_are_in_one_language():
    """A narrow cell wraps between words, never inside one: a value and its unit, an arrow and its
    number, an emoji and its verdict are joined by no-break spaces; no cell mixes two languages."""
    import re

    from ci_tools.results import compare, compare_render
    from tests.results.test_report import seed

    _, _, comparisons, shift = seed()
    text = compare_render.card_markdown(comparisons, shift)
    cells = [c.strip() for line in text.splitlines() if line.startswith("| ") for c in line.strip("|").split(" | ")]
    assert cells and not any(re.search(r"[\u4e00-\u9fff]", c) for c in cells)
    for c in cells:
        for bad in (r"\d s\b", r"[▲▼] [+-]", r"[🟢🔴🟡⚪🆕] \w", r"main \d"):
            assert not re.search(bad, c), (bad, c)
