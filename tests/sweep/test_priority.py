"""Job priority: the scorer as a table of cases (InferenceX's ci-priority cases, spec §7-8, with its
policy values), the policy section, and the scores in every format of `plan`."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from ci_tools.errors import InputError
from ci_tools.sweep.priority import Context, annotate, priority_policy, queue_token, score, text
from ci_tools.sweep.row import make_row

# InferenceX's configs/ci-priority.yaml (spec inferencex-pr-policy.md §7.1), in our section's shape
IX = {"version": 1, "quantum": 0.001, "base": 1.0, "events": {"push": 2.0},
      "criteria": {"multi-node": 1.25, "agentic": 1.0, "eval-only": 0.0, "checklist-complete": 0.25,
                   "precision": {"fp4": 0.75}, "spec-decoding": {"mtp": 0.75, "eagle": 0.75, "eagle3": 0.75},
                   "framework-prefix": {"sglang": 0.5, "vllm": 0.5, "dynamo-sglang": 0.5, "dynamo-vllm": 0.5},
                   "model-prefix": {"kimik3": 1.5, "glm5": 0.75, "dsv4": 0.75, "qwen3.5": 0.75, "dsr1": 0.75}},
      "labels": {"skip-queue": "skip_queue", "checklist-complete": ["ci-checklist-complete"]}}
P = priority_policy(IX)

PLAIN = {"runner": "h100", "framework": "trt", "model-prefix": "other", "precision": "fp8", "spec-decoding": "none"}
RICH = {"runner": "b200-multinode", "framework": "sglang", "model-prefix": "dsv4", "precision": "fp4",
        "spec-decoding": "mtp", "scenario-type": "agentic-coding", "prefill": {"tp": 4}}
SGL_FP4 = {"runner": "h100", "framework": "sglang", "precision": "fp4"}


@pytest.mark.parametrize("row, ctx, want", [
    (PLAIN, Context(), "1.000"),                                                      # case 73
    (RICH, Context(), "6.000"),                                                       # case 73
    (PLAIN, Context(event="push"), "3.000"),                                          # case 74
    (SGL_FP4, Context(labels=("skip_queue",), pr=2124), "2.250"),                     # case 76
    (PLAIN, Context(labels=("ci-checklist-complete",)), "1.250"),                     # case 79
    ({"framework": "vllm", "runner": "h100"}, Context(criteria=("vllm", "sglang")), "1.500"),  # case 80
    (PLAIN, Context(labels=("ci-priority:p0", "ci-priority:p4.5", "ci-priority:p1000000")), "1.000"),  # 81
    # a mask keeps only the features it names (case 78)
    (RICH, Context(criteria=("multi-node", "agentic", "fp4", "mtp", "sglang", "dsv4")), "6.000"),
    (RICH, Context(criteria=("fp4",)), "1.750"),
    (PLAIN, Context(criteria=("multi-node", "agentic", "fp4", "mtp", "vllm", "dsr1")), "1.000"),
    (PLAIN, Context(criteria=("checklist-complete",)), "1.250"),
    # the first framework prefix wins; `dynamo-sglang` is its own entry, `sglang-x` matches sglang
    ({"framework": "dynamo-sglang"}, Context(), "1.500"),
    ({"framework": "sglang-router"}, Context(), "1.500"),
    ({"framework": "trtllm"}, Context(), "1.000"),
    # model prefixes score exactly by the key they are matched by (InferenceX masks by prefix, scores exact keys)
    ({"model-prefix": "glm5.1"}, Context(), "1.000"),
    ({"model-prefix": "kimik3"}, Context(), "2.500"),
    ({"eval-only": True, "scenario-type": "agentic-coding"}, Context(), "2.000"),
    ({"eval-only": "yes"}, Context(), "1.000"),                 # only a real true is an eval row
])
def test_score_table(row, ctx, want):
    assert text(score(row, P, ctx), P) == want


def test_scores_round_half_up_to_the_quantum():
    p = priority_policy({**IX, "base": 0, "events": {}, "criteria": {"agentic": 0.7225}})
    assert text(score({"scenario-type": "agentic-coding"}, p), p) == "0.723"          # case 75
    coarse = priority_policy({**IX, "quantum": 0.25, "base": 1.1, "criteria": {}})
    assert text(score({}, coarse), coarse) == "1.00"                                   # 1.1 -> 4.4 quanta -> 4
    assert text(score({}, priority_policy({**IX, "quantum": 0.25, "base": 1.125, "criteria": {}})),
                coarse) == "1.25"                                                      # 4.5 quanta -> 5 (half up)


def test_decimal_arithmetic_does_not_depend_on_float_order():
    p = priority_policy({"version": 1, "base": 0.1, "criteria": {"agentic": 0.2, "precision": {"fp4": 0.3}}})
    assert score({"scenario-type": "agentic-coding", "precision": "fp4"}, p) == Decimal("0.6")


@pytest.mark.parametrize("section, message", [
    ({"version": 1, "criteria": {"multinode": 1}}, "unknown criterion 'multinode' (did you mean multi-node?)"),
    ({"version": 1, "criteria": {"model-prefx": {}}}, "(did you mean model-prefix?)"),
    ({"version": 1, "events": {"pushh": 2}}, "unknown event 'pushh' (did you mean push?)"),
    ({"version": 2}, "priority.version: 2 is not a priority policy version"),
    ({"version": 1, "quantum": 0}, "quantum: must be positive"),
    ({"version": 1, "criteria": {"agentic": "lots"}}, "priority.criteria.agentic: expected a number"),
])
def test_bad_sections_are_clean_errors(section, message):
    with pytest.raises(InputError, match=None) as exc:
        priority_policy(section, "inferencex-e2e/ci-policy.yaml")
    assert message in exc.value.message and exc.value.message.startswith("inferencex-e2e/ci-policy.yaml: priority")


def test_unknown_criteria_in_a_mask_get_a_did_you_mean():
    with pytest.raises(InputError) as exc:
        score(PLAIN, P, Context(criteria=("multi-nod", "unknown")))
    assert "'multi-nod' (did you mean multi-node?)" in exc.value.message and "'unknown'" in exc.value.message


def test_no_section_scores_every_row_equal():
    p = priority_policy(None)
    assert {text(score(r, p), p) for r in (PLAIN, RICH, SGL_FP4)} == {"1.000"}


def test_annotate_sorts_stably_and_marks_skip_queue_only_for_a_pr():
    rows = [make_row(dict(PLAIN, id="a")), make_row(dict(RICH, id="b")), make_row(dict(PLAIN, id="c")),
            make_row(dict(SGL_FP4, id="d"))]
    out = annotate(rows, "single-node-1k1k", P, Context(labels=("skip_queue",), pr=7, namespace="9:1"))
    assert [r["id"] for r in out] == ["b", "d", "a", "c"]
    assert [r["priority"] for r in out] == ["6.000", "2.250", "1.000", "1.000"]
    assert all(r["skip-queue-pr"] == 7 and len(r["queue-token"]) == 32 for r in out)
    assert rows[0] == dict(PLAIN, id="a")                                      # the input is not changed
    local = annotate(rows, "single-node-1k1k", P, Context(labels=("skip_queue",)))
    assert not any("skip-queue-pr" in r for r in local)
    again = annotate(out, "single-node-1k1k", P, Context(labels=("skip_queue",), pr=7, namespace="9:1"))
    assert [r["priority"] for r in again] == [r["priority"] for r in out]       # re-annotating is idempotent


def test_queue_tokens_differ_per_attempt_and_row():                             # case 84
    assert queue_token("123:1", "b/0", PLAIN) != queue_token("123:2", "b/0", PLAIN)
    assert queue_token("123:1", "b/0", PLAIN) != queue_token("123:1", "b/1", PLAIN)
    assert queue_token("123:1", "b/0", PLAIN) == queue_token("123:1", "b/0", dict(PLAIN))


def test_shipped_policy_has_a_priority_section(repo_root):
    from ci_tools.sweep.load import load_policy

    p = load_policy(repo_root).priority
    assert p.skip_queue_label == "skip_queue" and p.events["push"] == Decimal("2.0")
    assert {"multi-node", "agentic", "eval-only", "checklist-complete"} <= set(p.flags)
    assert {"precision", "spec-decoding", "framework-prefix", "model-prefix"} == set(p.values)


def test_the_schema_refuses_an_unknown_criterion_naming_the_line(tmp_path, repo_root):
    """`config validate` checks the section with the schema, did-you-mean and line included."""
    from ci_tools.sweep.priority import priority_findings
    from ci_tools.yaml.located import load_yaml_text

    shipped = (repo_root / "inferencex-e2e" / "ci-policy.yaml").read_text()
    assert priority_findings(load_yaml_text(shipped, "ci-policy.yaml")) == []
    doc = load_yaml_text(shipped.replace("    multi-node: 1.25", "    multinode: 1.25"), "ci-policy.yaml")
    findings = priority_findings(doc)
    want = shipped.splitlines().index("    multi-node: 1.25") + 1
    assert any("multinode" in f.message and "multi-node" in (f.message + f.hint) and f.line == want for f in findings)


# ---- the plan in all three formats --------------------------------------------------------------

def _run(capsys, *args):
    from ci_tools.cli import main

    with pytest.raises(SystemExit) as exc:
        main(list(args))
    out, err = capsys.readouterr()
    return exc.value.code, out, err


def test_plan_shows_priorities_in_text_json_and_matrix_rows(capsys, demo_repo, tmp_path, monkeypatch):
    for var in ("GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY", "GITHUB_EVENT_NAME", "GITHUB_RUN_ID"):
        monkeypatch.delenv(var, raising=False)
    base = ("plan", "--repo", str(demo_repo), "--base", "base", "--head", "head", "--label", "full-sweep-fail-fast")
    code, out, _ = _run(capsys, *base)
    assert code == 0 and " prio " in out and "4.750" in out
    code, out, _ = _run(capsys, *base, "--format", "json")
    plan = json.loads(out)
    assert {p["priority"] for p in plan["points"]} == {"4.750"}
    assert all(r["priority"] == "4.750" and len(r["queue-token"]) == 32 for rows in plan["buckets"].values() for r in rows)
    out_file = tmp_path / "out"
    monkeypatch.setenv("GITHUB_OUTPUT", str(out_file))
    monkeypatch.setenv("GITHUB_RUN_ID", "42")
    code, _, err = _run(capsys, *base, "--format", "github")
    assert code == 0, err
    outputs = dict(line.split("=", 1) for line in out_file.read_text().splitlines())
    rows = json.loads(outputs["matrix-single-node-agentic"])
    assert rows and all(r["priority"] == "4.750" for r in rows)
    assert [Decimal(r["priority"]) for r in rows] == sorted((Decimal(r["priority"]) for r in rows), reverse=True)
    assert all(c["priority"] for c in json.loads(outputs["canary"]))
