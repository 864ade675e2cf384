"""What each `results` command says, as data (ci_tools/results/render.py): one table per command of
the cases that change its text, stderr, step outputs, annotations and exit code."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from ci_tools.results import render
from ci_tools.results.flow import Written


def result(name: str, valid: bool, failures=()) -> dict:
    return {"point": {"name": name}, "valid": valid, "gpus": 4, "duration_s": 600.0,
            "headline": {"tok_s_gpu": 1234.5, "intvty_p90": 80.0, "intvty_p50": 90.0, "ttft_p90_s": 0.4,
                         "ttft_p50_s": 0.2},
            "requests": {"successful": 100, "errors": 0, "error_rate": 0.0, "accounting": {"records_warmup_dropped": 3}},
            "failures": [{"rule": r, "message": m} for r, m in failures]}


def eval_result(valid: bool) -> dict:
    return {"point": {"name": "tp4-eval"}, "valid": valid, "harness": {"name": "lm-eval"}, "tasks": ["gsm8k"],
            "concurrencies": {"expected": [64]},
            "scores": [{"passed": valid, "conc": 64, "task": "gsm8k", "metric": "exact_match,strict", "score": 0.9,
                        "threshold": 0.95 if not valid else 0.8, "threshold-source": "default"}],
            "failures": [] if valid else [{"rule": "eval-threshold", "message": "gsm8k below 0.95"}]}


OK = Written(result("tp4-c4", True), Path("d/result.json"))
BAD = Written(result("tp4-c8", False, [("error-rate", "12% of requests failed"), ("duration", "too short")]),
              Path("d/c8/result.json"))
EVAL_FAILED = Written(eval_result(False), Path("d/eval_result.json"), eval=True)


@pytest.mark.parametrize("written, exit_code, stderr, annotations, json_kind", [
    ([OK], 0, [], 0, dict),
    ([BAD], 1, ["error: invalid result (2 rule(s) failed); written to d/c8/result.json"], 2, dict),
    ([OK, BAD], 1, ["error: invalid result (2 rule(s) failed); written to d/c8/result.json"], 2, list),
    ([EVAL_FAILED], 1, ["error: eval failed (1 check(s) failed); written to d/eval_result.json"], 1, dict),
])
def test_process_output(written, exit_code, stderr, annotations, json_kind):
    out = render.process_output(written, "d")
    assert (out.exit_code, out.stderr, len(out.annotations)) == (exit_code, stderr, annotations)
    assert isinstance(out.json, json_kind)
    for w in written:   # every result's summary is in the text, and every failed rule in the job summary
        assert w.result["point"]["name"] in out.text
        for fail in w.result["failures"]:
            assert f"`{fail['rule']}`: {fail['message']}" in out.summary
    if EVAL_FAILED in written:
        assert "eval FAILED" in out.text and out.annotations[0][1].startswith("d: ")


def collected(notes=(), failed=()):
    verdict = {"verdict": "failed" if failed else "passed", "passed": 1, "expected": 1 + len(failed),
               "failed": list(failed), "missing": [], "artifact": "evals"}
    return SimpleNamespace(data={"results": [1, 2], "valid": 2, "invalid": 0, "notes": list(notes)},
                           verdict=verdict, table="| eval |\n")


@pytest.mark.parametrize("c, problem, fmt, exit_code, stderr", [
    (collected(), None, "text", 0, []),
    (collected(notes=["skipped x.json"]), None, "text", 0, ["note: skipped x.json"]),
    (collected(notes=["skipped x.json"]), None, "json", 0, []),      # the notes are in the document
    (collected(), "2 of 3 planned points", "github", 1,
     ["error: the sweep is incomplete: 2 of 3 planned points; a partial sweep is never ingested"]),
])
def test_collect_output(c, problem, fmt, exit_code, stderr):
    out = render.collect_output(c, Path("r/results.json"), problem, fmt)
    assert (out.exit_code, out.stderr) == (exit_code, stderr)
    assert out.outputs == {"eval-verdict": c.verdict["verdict"], "eval-artifact": "evals"}
    assert ("INCOMPLETE" in out.summary) == bool(problem) and out.summary.endswith("| eval |\n")
    assert out.json["incomplete"] == problem and out.json["notes"] == c.data["notes"]


@pytest.mark.parametrize("decide, published, path, text, outputs", [
    (True, False, "pr-7/run-9", "publish: pr-7/run-9", {"publish": "true", "published": "false"}),
    (True, False, "", "not published: not enabled", {"publish": "false", "published": "false"}),
    (False, True, "pr-7/run-9", "published report.html to gh-pages:pr-7/run-9/", {"publish": "true", "published": "true"}),
    (False, False, "", "not published: not enabled", {"publish": "false", "published": "false"}),
])
def test_publish_output(decide, published, path, text, outputs):
    from ci_tools.results.pages_flow import Published

    p = Published(published, reason="" if published or path else "not enabled", path=path,
                  notes=["closed PRs' pages were not pruned: why"] if published else [])
    out = render.publish_output(p, Path("report.html"), "gh-pages", decide)
    assert out.text == text and {k: out.outputs[k] for k in outputs} == outputs
    assert out.stderr == [f"note: {n}" for n in p.notes] and out.json["notes"] == p.notes
    assert (out.summary == "") == (decide and bool(path))
