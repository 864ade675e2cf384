"""Real webhook payloads through the real gate command, then through run-sweep.yml's wiring.

For each event the test runs exactly the command line of the `gate` step in run-sweep.yml (taken
from the workflow file) on a payload from ../shared/corpus/github-webhooks, reads what it wrote to
$GITHUB_OUTPUT, maps it through the job's `outputs:`, and evaluates every other job's `if:` and
concurrency group. Payloads are used as GitHub sent them, except for the few fields a scenario
needs (a sweep label, a fork head), patched and named in the table.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import gh_expr
import wf_contract as wc
from wf_contract import read_github_output
from ci_tools.sweep.load import load_policy
from wf_env import REPO, WORKFLOWS

POLICY = load_policy(REPO)
PRIMARY = next(name for name, p in POLICY.primary.items() if p.recommended)
IRRELEVANT = "bug"  # the label the corpus payloads carry
FORK = "octo-fork/Hello-World"


def workflow(name: str) -> wc.Workflow:
    return next(wf for wf in wc.load_workflows(WORKFLOWS) if wf.name == name)


def run_gate(event_name: str, payload: dict, tmp: Path, run_id: str) -> dict[str, str]:
    sweep = workflow("run-sweep.yml")
    step = next(s for s in sweep.jobs["gate"]["steps"] if s.get("id") == "gate")
    [argv] = wc.ci_tools_commands(step["run"])
    event_path = tmp / f"{run_id}.json"
    event_path.write_text(json.dumps(payload))
    out_file = tmp / f"{run_id}.out"
    out_file.write_text("")
    env = {**os.environ, "GITHUB_EVENT_NAME": event_name, "GITHUB_EVENT_PATH": str(event_path),
           "GITHUB_OUTPUT": str(out_file), "GITHUB_REPOSITORY": payload["repository"]["full_name"],
           "GITHUB_RUN_ID": run_id, "GITHUB_SHA": payload.get("after") or payload.get("pull_request", {}).get(
               "merge_commit_sha") or "0" * 40, "GITHUB_REF": payload.get("ref", "refs/pull/2/merge")}
    args = wc.expand_words(argv, env)
    done = subprocess.run([sys.executable, "-m", "ci_tools", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, f"gate failed: {done.stderr}"
    return read_github_output(out_file.read_text())


def simulate(event_name: str, payload: dict, tmp: Path, run_id: str) -> tuple[set[str], dict[str, str]]:
    """Jobs of run-sweep.yml that would run, and the concurrency group each running job joins."""
    sweep = workflow("run-sweep.yml")
    step_outputs = run_gate(event_name, payload, tmp, run_id)
    github = {"event_name": event_name, "event": payload, "repository": payload["repository"]["full_name"],
              "run_id": run_id}
    gate_job = sweep.jobs["gate"]
    gate_outputs = {name: gh_expr.interpolate(expr, {"steps": {"gate": {"outputs": step_outputs}}, "github": github})
                    for name, expr in gate_job["outputs"].items()}
    context = {"github": github, "needs": {"gate": {"result": "success", "outputs": gate_outputs}},
               "secrets": {}, "vars": {}}
    running, groups = {"gate"}, {}
    for job_id, job in sweep.jobs.items():
        if job_id == "gate":
            continue
        assert job.get("needs") in ("gate", ["gate"]), f"{job_id}: the simulation models jobs that need only the gate"
        if gh_expr.job_runs(job.get("if"), context, gh_expr.Status(needs_results=("success",))):
            running.add(job_id)
            if "concurrency" in job:
                groups[job_id] = gh_expr.interpolate(job["concurrency"]["group"], context)
    return running, groups


def corpus(shared: Path, name: str) -> dict:
    return json.loads((shared / "corpus" / "github-webhooks" / name).read_text())


def with_labels(payload: dict, *names: str) -> dict:
    p = copy.deepcopy(payload)
    template = p["pull_request"]["labels"][0]
    p["pull_request"]["labels"] = [{**template, "name": n} for n in names]
    return p


def changed_label(payload: dict, name: str) -> dict:
    p = copy.deepcopy(payload)
    p["label"] = {**p["label"], "name": name}
    return p


def from_fork(payload: dict) -> dict:
    p = copy.deepcopy(payload)
    p["pull_request"]["head"]["repo"] = {**p["pull_request"]["head"]["repo"], "full_name": FORK, "fork": True}
    return p


def unchanged(payload: dict) -> dict:
    return payload


def as_draft(payload: dict) -> dict:
    p = copy.deepcopy(payload)
    p["pull_request"]["draft"] = True
    return p


# (scenario, corpus file, event, patch, jobs that run besides the gate)
SCENARIOS = [
    ("same-repo push to the PR, sweep label", "pull_request/synchronize.payload.json", "pull_request",
     lambda p: with_labels(p, IRRELEVANT, PRIMARY), {"sweep"}),
    ("fork push to the PR, sweep label", "pull_request/synchronize.payload.json", "pull_request",
     lambda p: from_fork(with_labels(p, IRRELEVANT, PRIMARY)), {"stop"}),
    ("same-repo push to the PR, no sweep label", "pull_request/synchronize.payload.json", "pull_request",
     unchanged, {"stop"}),
    ("converted to draft while labelled", "pull_request/converted_to_draft.payload.json", "pull_request",
     lambda p: with_labels(p, PRIMARY), {"stop"}),
    ("closed while labelled", "pull_request/closed.payload.json", "pull_request",
     lambda p: with_labels(p, PRIMARY), {"stop"}),
    ("irrelevant label added to a labelled PR", "pull_request/labeled.payload.json", "pull_request",
     lambda p: with_labels(p, IRRELEVANT, PRIMARY), set()),
    ("sweep label added", "pull_request/labeled.payload.json", "pull_request",
     lambda p: changed_label(with_labels(p, IRRELEVANT, PRIMARY), PRIMARY), {"sweep"}),
    ("sweep label added to a draft", "pull_request/labeled.payload.json", "pull_request",
     lambda p: as_draft(changed_label(with_labels(p, PRIMARY), PRIMARY)), set()),
    ("sweep label added on a fork PR", "pull_request/labeled.payload.json", "pull_request",
     lambda p: from_fork(changed_label(with_labels(p, PRIMARY), PRIMARY)), set()),
    ("last sweep label removed", "pull_request/unlabeled.payload.json", "pull_request",
     lambda p: changed_label(p, PRIMARY), {"stop"}),
    ("ready for review, labelled", "pull_request/ready_for_review.payload.json", "pull_request",
     lambda p: with_labels(p, PRIMARY), {"sweep"}),
    ("push to the default branch", "push/with-new-branch.payload.json", "push", unchanged, {"sweep"}),
]


@pytest.mark.parametrize("scenario, name, event, patch, expected", SCENARIOS, ids=[s[0] for s in SCENARIOS])
def test_jobs_that_run(shared, tmp_path, scenario, name, event, patch, expected):
    assert IRRELEVANT not in POLICY.relevant()
    running, _ = simulate(event, patch(corpus(shared, name)), tmp_path, "101")
    assert running - {"gate"} == expected


def test_concurrency_groups(shared, tmp_path):
    """One group per PR for everything that matters; an irrelevant label change joins none."""
    def group_of(name, patch, run_id, event="pull_request"):
        running, groups = simulate(event, patch(corpus(shared, name)), tmp_path, run_id)
        return groups

    sync = group_of("pull_request/synchronize.payload.json", lambda p: with_labels(p, PRIMARY), "201")["sweep"]
    relabel = group_of("pull_request/labeled.payload.json",
                       lambda p: changed_label(with_labels(p, PRIMARY), PRIMARY), "202")["sweep"]
    closed = group_of("pull_request/closed.payload.json", lambda p: with_labels(p, PRIMARY), "203")["stop"]
    unlabel = group_of("pull_request/unlabeled.payload.json", lambda p: changed_label(p, PRIMARY), "204")["stop"]
    irrelevant = group_of("pull_request/labeled.payload.json", lambda p: with_labels(p, IRRELEVANT, PRIMARY), "205")
    assert sync and sync == relabel == closed == unlabel
    assert irrelevant == {}, "an irrelevant label change must not join (and so cancel) any group"
    push = group_of("push/with-new-branch.payload.json", unchanged, "206", event="push")["sweep"]
    assert push and push != sync


@pytest.mark.parametrize("name", ["pull_request/labeled.payload.json", "pull_request/synchronize.payload.json"])
def test_fork_pr_with_a_sweep_label_reaches_no_job_and_waits_for_approval(shared, tmp_path, name):
    """From the pull_request path a fork PR never reaches the sweep (so never a self-hosted job); the
    gate reports the label for `/sweep approve <sha>`, the only path to a trusted sweep."""
    payload = from_fork(with_labels(corpus(shared, name), PRIMARY))
    if "labeled" in name:
        payload = changed_label(payload, PRIMARY)
    outputs = run_gate("pull_request", payload, tmp_path, "301")
    assert outputs["sweep"] == "false"
    assert outputs["fork-approval"] == ("true" if "labeled" in name else "false")
    running, _ = simulate("pull_request", payload, tmp_path, "302")
    assert "sweep" not in running
    for wf in wc.load_workflows(WORKFLOWS):
        if "pull_request" in wf.on:
            assert "trusted-sweep.yml" not in wf.text, f"{wf.name} must not reach the trusted sweep"


@pytest.mark.parametrize("patch, event, runs", [
    (lambda p: p, "pull_request", True),
    (from_fork, "pull_request", False),
])
def test_benchmark_template_refuses_fork_prs(shared, patch, event, runs):
    """Defence in depth behind the gate: the self-hosted template itself refuses fork PR code."""
    payload = patch(corpus(shared, "pull_request/synchronize.payload.json"))
    job = workflow("benchmark.yml").jobs["run"]
    context = {"github": {"event_name": event, "event": payload, "repository": payload["repository"]["full_name"]},
               "inputs": {"runner": "gb300"}}
    assert gh_expr.job_runs(job["if"], context, gh_expr.Status()) is runs
    push = corpus(shared, "push/with-new-branch.payload.json")
    context["github"] = {"event_name": "push", "event": push, "repository": push["repository"]["full_name"]}
    assert gh_expr.job_runs(job["if"], context, gh_expr.Status()) is True


@pytest.mark.parametrize("expr, expected", [
    ("needs.g.outputs.x == 'TRUE'", True),          # GitHub compares strings ignoring case
    ("needs.g.outputs.missing == ''", True),        # GitHub coerces null and '' to 0: equal
    ("needs.g.outputs.x != 'true'", False),
    ("!cancelled() && needs.g.result == 'success'", True),
    ("needs.g.outputs.list != '[]' && (needs.g.result == 'success' || needs.g.result == 'skipped')", True),
    ("contains(fromJson('[\"a\",\"b\"]'), 'B')", True),
    ("'it''s' == 'IT''S'", True),
    ("needs.g.outputs.x || 'fallback'", "true"),
    ("needs.g.outputs[format('{0}', 'x')] == 'true'", True),
    ("format('matrix-{0}-{1}', 'a', 1)", "matrix-a-1"),
    ("toJson(fromJson('[1]'))", "[\n  1\n]"),
])
def test_expression_evaluator(expr, expected):
    context = {"needs": {"g": {"result": "success", "outputs": {"x": "true", "list": "[1]"}}}}
    assert gh_expr.evaluate(expr, context) == expected


def test_evaluator_rejects_what_it_does_not_know():
    with pytest.raises(gh_expr.ExprError):
        gh_expr.evaluate("hashFiles('x') == ''", {})
    with pytest.raises(gh_expr.ExprError):
        gh_expr.evaluate("unknown.thing", {})


def test_status_function_rule():
    ctx = {"needs": {"a": {"result": "failure"}}}
    assert gh_expr.job_runs("needs.a.result == 'failure'", ctx, gh_expr.Status(("failure",))) is False
    assert gh_expr.job_runs("always() && needs.a.result == 'failure'", ctx, gh_expr.Status(("failure",))) is True
    assert gh_expr.job_runs(None, ctx, gh_expr.Status(("skipped",))) is False
