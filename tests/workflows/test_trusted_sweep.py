"""The trusted fork-sweep path (`/sweep approve <sha>` → comment-commands.yml → trusted-sweep.yml).

Structure: what starts the sweep, what it checks out where, and that its names match the code that
finds its runs again. Behaviour: the plan job's steps run as written, with bash, against the fake
GitHub and the example change in a real git repository; they plan exactly what the same-repo sweep
plans for the same change and labels, and refuse to plan after a push.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

import gh_expr
import gh_runtime
import wf_contract as wc
from ci_tools import names
from ci_tools.prbot.approval import decide as approval
from test_sweep_end_to_end import PRIMARY, planned as same_repo_planned, event, repo, run_step, step, workflow  # noqa: F401
from wf_env import REPO, WORKFLOWS

sys.path.insert(0, str(REPO / "tests" / "github"))
from fake_github import FakeGitHub, Server  # noqa: E402

TRUSTED = workflow(names.TRUSTED_WORKFLOW)
STAGES = workflow("sweep-stages.yml")
SELF_HOSTED_TEMPLATE = "$/.github/workflows/benchmark.yml"
STAGES_CALL = "$/.github/workflows/sweep-stages.yml"
CHECKOUT = "actions/checkout@"
PR_SHA = "${{ inputs.sha }}"


def test_only_a_dispatch_on_the_default_branch_starts_it():
    assert set(TRUSTED.on) == {"workflow_dispatch"}, "any other trigger could run the fork's workflow files"
    for wf in wc.load_workflows(WORKFLOWS):
        starts = f"workflow run {names.TRUSTED_WORKFLOW}" in wf.text or f"/{names.TRUSTED_WORKFLOW}" in wf.text
        if starts:
            assert wf.name == "comment-commands.yml" and set(wf.on) == {"issue_comment"}, wf.name


def test_run_name_and_group_are_the_ones_the_code_looks_for():
    assert TRUSTED.data["run-name"] == approval.run_name("${{ inputs.pr }}", "${{ inputs.sha }}")
    assert TRUSTED.data["concurrency"] == {"group": approval.concurrency_group("${{ inputs.pr }}", "${{ inputs.sha }}"),
                                           "cancel-in-progress": False}


def _checkouts_of_the_fork_commit(wf, ref_expr: str):
    """Every checkout of `ref_expr` in wf's step jobs must be beside the trusted tree (`pr/`); the
    calls of reusable workflows, with the ref they are handed."""
    calls = []
    for job_id, job in wf.jobs.items():
        if "uses" in job:
            calls.append((job_id, job["uses"], (job.get("with") or {}).get("ref")))
            continue
        seen_check = False
        for s in job["steps"]:
            seen_check |= s.get("id") == "check"
            if s.get("uses", "").startswith(CHECKOUT):
                ref = (s.get("with") or {}).get("ref")
                assert ref in (None, ref_expr, "${{ github.event.repository.default_branch }}"), f"{job_id}: checks out {ref}"
                if ref == ref_expr:
                    assert s["with"]["path"] == "pr", f"{job_id}: the fork commit must not replace the trusted tree"
                    assert job_id != "plan" or seen_check, "plan checks out the fork before checking the approval"
    return calls


def test_the_fork_commit_is_data_except_on_the_self_hosted_template():
    """Outside benchmark.yml the approved SHA is only checked out beside the trusted tree (`pr/`), after
    `check-approval`; the stages (sweep-stages.yml) get it as `ref` and hand it on to benchmark.yml
    alone, and depend on the plan job (and so on the check)."""
    calls = _checkouts_of_the_fork_commit(TRUSTED, PR_SHA)
    assert calls == [("stages", STAGES_CALL, PR_SHA)]
    assert TRUSTED.jobs["stages"]["needs"] == "plan"
    inner = _checkouts_of_the_fork_commit(STAGES, "${{ inputs.ref }}")
    assert sorted(inner) == [("canary", SELF_HOSTED_TEMPLATE, "${{ inputs.ref }}"),
                             ("family", SELF_HOSTED_TEMPLATE, "${{ inputs.ref }}")]


def test_both_sweeps_run_the_same_stages():
    """Issue 12: one sweep-stages.yml after each sweep's own plan job."""
    pipeline = workflow("sweep-pipeline.yml")
    assert pipeline.jobs["stages"]["uses"] == TRUSTED.jobs["stages"]["uses"] == STAGES_CALL
    assert set(STAGES.jobs) == {"canary", "release", "family", "collect"}
    assert not {"canary", "release", "family", "collect"} & (set(TRUSTED.jobs) | set(pipeline.jobs))
    with_ = TRUSTED.jobs["stages"]["with"]
    assert with_["ref"] == PR_SHA and with_["points"] == "${{ needs.plan.outputs.points }}"
    assert "--expect" in next(s for s in STAGES.jobs["collect"]["steps"] if s.get("id") == "collect")["run"]


def test_comment_commands_start_it_only_on_an_accepted_approval():
    wf = workflow("comment-commands.yml")
    job = wf.jobs["start-trusted-sweep"]
    [s] = job["steps"]
    assert f"gh workflow run {names.TRUSTED_WORKFLOW} " in s["run"]
    assert job["permissions"] == {"actions": "write"}
    assert '-f comment="$COMMENT"' in s["run"] and s["env"]["COMMENT"] == "${{ needs.handle.outputs.approve-comment }}"
    for sha, runs in (("", False), ("a" * 40, True)):
        context = {"needs": {"handle": {"result": "success", "outputs": {"approve-sha": sha, "approve-pr": "3",
                                                                          "approve-comment": "77"}}}}
        assert gh_expr.job_runs(job["if"], context, gh_expr.Status(needs_results=("success",))) is runs


# ---- the plan job, run as written ------------------------------------------------------------------

@pytest.fixture
def tree(repo, tmp_path):
    """The trusted checkout (this repository's policy) with the fork's commit at `pr/` (here: the
    example change's repository)."""
    (tmp_path / "inferencex-e2e").symlink_to(REPO / "inferencex-e2e")
    (tmp_path / "pr").symlink_to(repo)
    return tmp_path


@pytest.fixture
def fake_pr(shared, repo, monkeypatch):
    rev = lambda ref: __import__("subprocess").run(["git", "rev-parse", ref], cwd=repo, capture_output=True,
                                                   text=True, check=True).stdout.strip()
    fake = FakeGitHub(shared / "corpus", repo="Codertocat/Hello-World")
    with Server(fake) as server:
        fake.url = server.url
        pr = fake.add_pr(3, head_sha=rev("head"))
        pr["head"]["repo"] = {**pr["head"]["repo"], "full_name": "someone/Hello-World"}
        pr["base"]["sha"] = rev("base")
        pr["labels"] = []
        for label in (PRIMARY, "bug"):
            fake.label(3, label)
        fake.add_comment(3, f"/sweep approve {rev('head')}", author="maint")      # the approval dispatched
        monkeypatch.setenv("GITHUB_API_URL", server.url)
        yield fake, rev("head")
    assert not fake.schema_errors, fake.schema_errors


def run_plan_job(tree: Path, fake, sha: str, tmp: Path) -> tuple[dict, dict]:
    """The plan job's steps as GitHub runs them: a workflow_dispatch event (its real payload), the
    job's token scopes, $GITHUB_OUTPUT and $GITHUB_STEP_SUMMARY (see gh_runtime)."""
    [comment] = [c["id"] for c in fake.comments.values() if c["body"].startswith("/sweep approve")]
    payload = gh_runtime.adjust(gh_runtime.webhook("workflow_dispatch", "payload.json"), fake.repo,
                                inputs={"pr": "3", "sha": sha, "comment": str(comment)}, ref="refs/heads/main")
    job = gh_runtime.JobRun(TRUSTED, "plan", fake, "workflow_dispatch", payload, tmp / "plan-job",
                            inputs={"pr": 3, "sha": sha, "comment": comment}, cwd=tree)
    results = {}
    for sid in ("check", "plan"):
        results[sid] = job.run(sid).done
        if results[sid].returncode:
            break
    return results, {k: {"outputs": v.outputs} for k, v in job.steps.items()}


def test_plan_job_plans_what_the_same_repo_sweep_plans(tree, fake_pr, same_repo_planned, tmp_path):
    """#16.1: with the environment Actions gives the step (GITHUB_EVENT_PATH of a workflow_dispatch,
    which ci-tools does not parse), `check-approval` still runs: it takes everything from its options."""
    fake, head = fake_pr
    results, steps = run_plan_job(tree, fake, head, tmp_path)
    assert all(d.returncode == 0 for d in results.values()), {k: d.stderr for k, d in results.items()}
    assert steps["check"]["outputs"]["labels"] == PRIMARY                        # `bug` is not a sweep label
    outputs = {n: gh_expr.interpolate(e, {"steps": steps}) for n, e in TRUSTED.jobs["plan"]["outputs"].items()}
    assert outputs["sweep"] == "true" and outputs["has-canary"] == same_repo_planned["has-canary"] == "true"
    # queue tokens name one run attempt (sweep/priority.py), so two runs differ there and only there
    def untokened(rows):
        return [{k: v for k, v in r.items() if k != "queue-token"} for r in json.loads(rows)]

    assert untokened(outputs["canary"]) == untokened(same_repo_planned["canary"])
    assert all(len(r["queue-token"]) == 32 for r in json.loads(outputs["canary"]))
    assert {r.split("?")[0] for r in fake.requests} == {"GET /repos/Codertocat/Hello-World/issues/3/timeline",
                                                        "GET /repos/Codertocat/Hello-World/pulls/3"}


@pytest.mark.parametrize("moved", ["a push", "away and back"])
def test_plan_job_refuses_after_a_push(tree, fake_pr, tmp_path, moved):
    fake, head = fake_pr
    if moved == "a push":
        fake.pulls[3]["head"]["sha"] = "f" * 40
    else:                               # the head is the approved commit again, the branch moved since
        fake.force_push(3, "f" * 40)
        fake.force_push(3, head)
    results, _ = run_plan_job(tree, fake, head, tmp_path)
    assert results["check"].returncode == 1 and "plan" not in results
    assert "no longer holds" in results["check"].stdout


def test_the_self_hosted_template_installs_ci_tools_from_the_trusted_commit():
    """Issue 15 item 8: with the approved fork SHA checked out, installing ci-tools from that tree ran the
    fork's code to compute result.json (and it could write a canary-passed marker)."""
    wf = workflow("benchmark.yml")
    steps = wf.jobs["run"]["steps"]
    checkouts = {(s.get("with") or {}).get("path", "."): (s.get("with") or {}).get("ref")
                 for s in steps if s.get("uses", "").startswith(CHECKOUT)}
    [setup] = [s for s in steps if s.get("uses", "").endswith("/setup-ci-tools")]
    source = (setup.get("with") or {}).get("source", ".")
    assert checkouts["."] == "${{ inputs.ref }}"                     # the benchmark inputs: the approved commit
    assert checkouts[source] == "${{ github.sha }}", "ci-tools must be installed from the workflow's own commit"
    action = (REPO / ".github/actions/setup-ci-tools/action.yml").read_text()
    assert '"$GITHUB_WORKSPACE/$SOURCE' in action


def test_the_stages_release_the_approved_commit_as_the_same_repo_sweep_does(tree, fake_pr, same_repo_planned,
                                                                            repo, event, tmp_path):
    """The trusted plan job's outputs through sweep-stages.yml's inputs: the release re-plans the
    approved commit at pr/ with the labels read at approval, and with every canary's marker releases
    exactly what the same-repo sweep releases."""
    from test_sweep_end_to_end import release, stage_inputs

    fake, head = fake_pr
    results, steps = run_plan_job(tree, fake, head, tmp_path)
    assert all(d.returncode == 0 for d in results.values())
    planned = {n: gh_expr.interpolate(e, {"steps": steps}) for n, e in TRUSTED.jobs["plan"]["outputs"].items()}
    needs = {"needs": {"plan": {"result": "success", "outputs": planned}}, "inputs": {"sha": head}}
    inputs = stage_inputs(TRUSTED, "stages", needs)
    assert inputs["ref"] == head and inputs["labels"] == PRIMARY and inputs["points"] == same_repo_planned["points"]
    every = list(range(len(json.loads(inputs["canary"]))))
    (tmp_path / "trusted").mkdir()
    (tmp_path / "same").mkdir()
    trusted = release(planned, every, tree, tmp_path / "trusted", event, inputs)
    same = release(same_repo_planned, every, repo, tmp_path / "same", event)
    assert trusted == same and trusted["sweep"] == "true"
