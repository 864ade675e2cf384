"""The run's eval verdict (planned eval rows vs collected eval results) and the `/use` rule over
artifact names, as tables; SWE-bench reports turned into the result contract."""

from __future__ import annotations

import pytest

from ci_tools.evals import gate
from ci_tools.evals.swebench import report_to_results

ROW = {"config-key": "k", "tp": 2, "ep": 2, "dp-attn": True, "conc": 128, "run-eval": True, "eval-only": True}
ROW2 = {**ROW, "tp": 4, "ep": 4, "dp-attn": False, "conc": 16}


def result(row: dict, valid: bool = True, failures=()) -> dict:
    point = {k: row[k] for k in ("config-key", "tp", "ep", "dp-attn", "conc")}
    return {"point": point, "valid": valid, "failures": [{"rule": "score", "message": m} for m in failures]}


@pytest.mark.parametrize("planned,evals,state,failed,missing", [
    ([], [], "none", [], []),
    ([ROW], [result(ROW)], "passed", [], []),
    ([ROW, ROW2], [result(ROW)], "failed", [], ["k tp4 ep4 conc 16: did not run (no eval result)"]),
    ([ROW], [result(ROW, False, ["[conc=128] gsm8k below", "another"])], "failed",
     ["k tp2 ep2 dp-attn conc 128: [conc=128] gsm8k below (and 1 more)"], []),
    ([ROW], [], "failed", [], ["k tp2 ep2 dp-attn conc 128: did not run (no eval result)"]),
    (None, [result(ROW)], "passed", [], []),           # no plan found: judged on what is present
    (None, [], "none", [], []),
])
def test_verdict(planned, evals, state, failed, missing):
    v = gate.verdict(planned, evals)
    assert (v["verdict"], v["failed"], v["missing"]) == (state, failed, missing)
    assert v["artifact"] == f"evals_{state}"


def test_planned_eval_rows_come_from_eval_buckets_and_eval_canaries():
    plan = {"buckets": {"agentic-evals": [ROW], "single-node-agentic": [{**ROW, "run-eval": False}]},
            "canaries": [{**ROW2}, {**ROW, "conc": 1, "run-eval": False, "eval-only": False}]}
    assert gate.planned_eval_rows(plan) == [ROW, ROW2]


@pytest.mark.parametrize("names,refused", [
    ({"results_bmk", "evals_passed"}, None),
    ({"results_bmk", "evals_none"}, None),
    ({"results_bmk", "evals_failed"}, "its eval rows failed or did not run (artifact evals_failed)"),
    ({"results_bmk"}, "it has no eval verdict (evals_passed or evals_none)"),
    ({"eval_results_all"}, None),                       # an InferenceX-made run: its own jobs gated evals
    ({"bmk_agentic_x", "evals_failed"}, "its eval rows failed or did not run"),
])
def test_reuse_rule(names, refused):
    why = gate.reuse_problem(names)
    assert (why is None) if refused is None else (refused in why)


@pytest.mark.parametrize("report,attempted,want", [
    ({"resolved_instances": 150, "total_instances": 300}, None, 0.5),
    ({"resolved_instances": 3, "total_instances": 300, "submitted_instances": 10}, 10, 0.3),
    ({"resolved_instances": 0, "submitted_instances": 4}, None, 0.0),
])
def test_swebench_report_to_contract(report, attempted, want):
    got = report_to_results("swebench_lite", report, attempted)
    assert got["results"]["swebench_lite"]["exact_match,resolved"] == pytest.approx(want)


def test_swebench_report_without_instances_gives_no_scores():
    assert report_to_results("swebench_lite", {"resolved_instances": 0})["results"] == {}
