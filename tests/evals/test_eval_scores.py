"""Eval judging as tables: the batch-manifest rules (InferenceX's cases 65-68 and ours), every score
against its threshold, what counts as a metric, and the thresholds lookup order."""

from __future__ import annotations

import pytest

from ci_tools.evals import score
from ci_tools.evals.thresholds import Threshold, Thresholds
from ci_tools.yaml.located import load_yaml_text

M = lambda ev, done, failed, **kw: {"eval_concs": ev, "completed_eval_concs": done,  # noqa: E731
                                    "failed_eval_concs": failed, **kw}
FILES = lambda *concs: [f"results_test_conc{c}.json" for c in concs]  # noqa: E731


@pytest.mark.parametrize("meta,files,expected,want", [
    # 65: a batch of 1, 4, 8, all completed, one file each
    (M([1, 4, 8], [1, 4, 8], []), FILES(1, 4, 8), [1, 4, 8], []),
    # 66: concurrency 4 failed (harness rc 7)
    (M([1, 4, 8], [1, 8], [4]), FILES(1, 8), [1, 4, 8],
     ["eval failed for concurrency: 4", "missing completed concurrency: 4", "missing result files for concurrency: 4"]),
    # 67: a result file but no manifest
    (None, FILES(4), [4], ["eval manifest is unavailable or invalid (no readable meta_env.json); "
                           "1 result file(s) cannot be attributed to concurrencies"]),
    # 68: the manifest covers 8 only, the workflow expected 1, 4, 8
    (M([8], [8], []), FILES(8), [1, 4, 8],
     ["batched eval metadata does not match workflow concurrencies (metadata: 8; workflow: 1, 4, 8)",
      "missing completed concurrency: 1, 4", "missing result files for concurrency: 1, 4"]),
    # not lists of positive integers; duplicates
    (M([1, 0], [1], []), FILES(1), [1], ["eval_concs must be a list of positive integers, got [1, 0]"]),
    (M("1 4", [1], []), FILES(1), [1], ["eval_concs must be a list of positive integers, got '1 4'"]),
    (M([1, 1], [1], []), FILES(1), [1], ["eval_concs lists concurrency 1 more than once"]),
    (M([1], [True], []), FILES(1), [1], ["completed_eval_concs must be a list of positive integers, got [True]",
                                         "missing completed concurrency: 1"]),
    # a file without the _conc<N> suffix; an unexpected file; two files for one concurrency
    (M([1], [1], []), ["results_test.json"], [1], ["result file results_test.json has no _conc<N> suffix, so its "
                                                   "concurrency is unknown", "missing result files for concurrency: 1"]),
    (M([1], [1], []), FILES(1, 2), [1], ["unexpected result files for concurrency: 2"]),
    (M([1], [1], []), ["results_a_conc1.json", "results_b_conc1_2.json"], [1],
     ["2 result files for concurrency 1: results_a_conc1.json, results_b_conc1_2.json"]),
    # completed beyond the expected set
    (M([1], [1, 2], []), FILES(1), [1], ["unexpected completed concurrency: 2"]),
    # unbatched (no eval_concs): one expected concurrency equal to the manifest's, one file
    ({"conc": 16}, FILES(16), [16], []),
    ({"conc": 16}, FILES(16), [8], ["the manifest has no eval_concs and its conc 16 is not the one expected "
                                    "concurrency (8)", "missing result files for concurrency: 8",
                                    "unexpected result files for concurrency: 16"]),
    ({"conc": 16}, FILES(16) + ["results_x_conc16_1.json"], [16],
     ["an unbatched eval must leave exactly one result file, found 2",
      "2 result files for concurrency 16: results_test_conc16.json, results_x_conc16_1.json"]),
])
def test_manifest_rules(meta, files, expected, want):
    assert score.manifest_problems(meta, files, expected) == want


def fixed(minimum: float) -> Threshold:
    return Threshold(minimum, "default.gsm8k")


GOOD = {"results": {"gsm8k": {"exact_match,strict-match": 0.9, "exact_match_stderr,strict-match": 0.01,
                              "exact_match,flexible-extract": 0.92, "alias": "gsm8k", "other,none": 0.1}}}


def judge(files, *, meta=None, expected=(1,), tasks=("gsm8k",), minimum=0.9, status=None):
    meta = meta or M(list(expected), list(expected), [])
    return score.judge(meta=meta, files=files, expected_concs=list(expected), tasks=list(tasks),
                       lookup=lambda task: fixed(minimum), job_status=status)


def test_every_exact_match_metric_is_checked_and_nothing_else():
    scores, fails = judge({"results_conc1.json": GOOD})
    assert fails == []
    assert [(s.metric, s.score, s.passed) for s in scores] == [
        ("exact_match,flexible-extract", 0.92, True), ("exact_match,strict-match", 0.9, True)]  # inclusive


@pytest.mark.parametrize("files,kw,want", [
    # case 69: one concurrency passes, the other is below its threshold
    ({"results_conc1.json": GOOD, "results_conc4.json": {"results": {"gsm8k": {"exact_match,strict-match": 0.8}}}},
     {"expected": (1, 4)}, [("score", "[conc=4] gsm8k exact_match,strict-match = 0.8000 is below 0.9000 (default.gsm8k)")]),
    # zero metrics checked is a failure, never a silently green eval
    ({"results_conc1.json": {"results": {"gsm8k": {"acc,none": 1.0}}}}, {},
     [("no-metrics", "no exact_match metric was checked, so nothing shows the model is accurate; the harness wrote no scores")]),
    # a task the suite asked for is missing; a score that is not a number
    ({"results_conc1.json": GOOD}, {"tasks": ("gsm8k", "gpqa")},
     [("task-missing", "[conc=1] task gpqa is missing from results_conc1.json (it has: gsm8k)")]),
    ({"results_conc1.json": {"results": {"gsm8k": {"exact_match,strict-match": float("nan"),
                                                   "exact_match,flexible-extract": 0.95}}}}, {},
     [("score", "[conc=1] gsm8k exact_match,strict-match is nan, not a finite number")]),
    ({"results_conc1.json": {"scores": 1}}, {},
     [("result-file", "results_conc1.json is not a harness result: no `results` mapping of task -> metrics"),
      ("no-metrics", "no exact_match metric was checked, so nothing shows the model is accurate; the harness wrote no scores")]),
    ({"results_conc1.json": None}, {},
     [("result-file", "results_conc1.json is not valid JSON"),
      ("no-metrics", "no exact_match metric was checked, so nothing shows the model is accurate; the harness wrote no scores")]),
    # the job itself did not finish (the server never became ready): the first failure listed
    ({"results_conc1.json": GOOD}, {"status": {"ok": False, "phase": "ready", "reason": "not ready within 2 s"}},
     [("job", "the eval job did not finish: ready: not ready within 2 s")]),
])
def test_every_failed_check_is_listed(files, kw, want):
    _, fails = judge(files, **kw)
    assert [(f.rule, f.message) for f in fails] == want


THRESHOLDS = """thresholds-version: 1
floor: 0.85
default:
  gsm8k: 0.90
  swebench_lite: 0.50
models:
  qwen3.5:
    gsm8k: 0.94
"""


@pytest.mark.parametrize("prefix,task,want", [
    ("qwen3.5", "gsm8k", (0.94, "models.qwen3.5.gsm8k", "t.yaml:8")),
    ("qwen3.5", "swebench_lite", (0.50, "default.swebench_lite", "t.yaml:5")),
    ("dsv41flash", "gsm8k", (0.90, "default.gsm8k", "t.yaml:4")),
    (None, "gsm8k", (0.90, "default.gsm8k", "t.yaml:4")),
    ("qwen3.5", "gpqa_diamond_cot_n_shot", (0.85, "floor", "t.yaml:2")),
])
def test_threshold_lookup_order(prefix, task, want):
    t = Thresholds(load_yaml_text(THRESHOLDS, "t.yaml")).lookup(prefix, task)
    assert (t.minimum, t.source, t.where) == want


def test_the_shipped_thresholds_are_inferencex_values():
    from ci_tools.evals.load import load_thresholds
    from tests.conftest import REPO

    t = load_thresholds(REPO / "inferencex-e2e/eval-thresholds.yaml")
    assert [t.lookup(p, "gsm8k").minimum for p in ("dsr1", "glm5", "glm5.1", "qwen3.5", "dsv41flash")] == [
        0.91, 0.94, 0.93, 0.94, 0.90]
    assert t.lookup("dsv41flash", "gpqa_diamond_cot_n_shot").minimum == 0.30
    assert t.lookup("dsv41flash", "swebench_lite").minimum == 0.50
    assert t.lookup("x", "unknown_task").source == "floor"
