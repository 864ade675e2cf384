"""A merge queue: every check a repository requires (`names.REQUIRED_CHECKS`, the list docs/workflows.md
gives) reports on the queue group's commit, driven by GitHub's own `merge_group` payload
(`tests/data/github-merge-group/`); the changelog gate reports on every PR, passing quickly
where nothing it guards changed (a required check that never reports blocks the PR forever).
"""

from __future__ import annotations

import copy
import json
import subprocess
from pathlib import Path

import gh_runtime as rt
import pytest
import wf_contract as wc
from test_github_env import REPO_NAME, SHA1, Scenario, ok, pr_payload, pr_with_sweep

from ci_tools import names
from tests.conftest import MERGE_GROUP_PAYLOAD, REPO

WORKFLOWS = REPO / ".github" / "workflows"
QUEUE = "f" * 40          # the queue group's commit: main plus PR 7's head
PR = 7


def merge_group_payload(*, head: str = QUEUE, pr_head: str = SHA1) -> dict:
    """GitHub's example checks_requested payload, its queue branch naming PR 7 at `pr_head`."""
    data = json.loads(MERGE_GROUP_PAYLOAD.read_text())
    data = copy.deepcopy(data)
    data["merge_group"].update(head_sha=head, head_ref=f"refs/heads/gh-readonly-queue/main/pr-{PR}-{pr_head}")
    return data


def triggers(wf_name: str) -> dict:
    return next(wf for wf in wc.load_workflows(WORKFLOWS) if wf.name == wf_name).on


# the required checks a ci-tools command writes (the others are a job's own check, by its name)
CHECKS_OF_COMMANDS = {"ci-tools / ready to merge", "codeowner-signoff-verify"}


@pytest.mark.parametrize("check", sorted(names.REQUIRED_CHECKS))
def test_every_required_check_listens_to_merge_groups_and_runs_for_one(shared, tmp_path, check):
    wf_name, job_id = names.REQUIRED_CHECKS[check]
    assert "merge_group" in triggers(wf_name), f"{wf_name} does not run for a merge queue: the queue would wait"
    with Scenario(shared, tmp_path) as s:
        job = s.job(wf_name, job_id, "merge_group", merge_group_payload(),
                    needs={"pr": {"outputs": {"pr": str(PR), "group": f"merge-ready-pr-{PR}"}, "result": "success"}})
        assert job.would_run(), f"{wf_name}: {job_id}: its if: skips a merge group"
        assert job.job.get("name") == check or check in CHECKS_OF_COMMANDS, \
            f"{check!r} is neither the name of {wf_name} {job_id} nor a check a command writes"


def test_readiness_reports_the_prs_answer_on_the_groups_commit(shared, tmp_path):
    with Scenario(shared, tmp_path) as s:
        pr_with_sweep(s.fake, PR)
        s.fake.pr_files[PR] = ["README.md"]            # nothing performance-relevant: ready
        payload = merge_group_payload()
        which = s.job("merge-ready.yml", "pr", "merge_group", payload)
        outputs = ok(which.run("pr")).outputs
        assert outputs["pr"] == str(PR)
        job = s.job("merge-ready.yml", "ready", "merge_group", payload,
                    needs={"pr": {"outputs": outputs, "result": "success"}})
        ok(job.run("ready"))
        on = {c["_sha"]: c for c in s.fake.check_runs if c["name"] == "ci-tools / ready to merge"}
        assert set(on) == {SHA1, QUEUE} and on[QUEUE]["conclusion"] == "success"
        assert "Ready to merge: yes." in on[QUEUE]["output"]["summary"]


@pytest.mark.parametrize("pr_conclusion, want", [("success", "success"), ("action_required", "failure"),
                                                 (None, "failure")])
def test_the_sign_off_of_the_prs_head_goes_on_the_groups_commit(shared, tmp_path, pr_conclusion, want):
    from ci_tools.github.client import GitHub

    with Scenario(shared, tmp_path) as s:
        pr_with_sweep(s.fake, PR)
        if pr_conclusion:
            bot = GitHub(REPO_NAME, s.fake.grant("ghs_bot", "github_token", {"checks": "write"}), api_url=s.fake.url,
                         sleep=lambda _: None, seconds_between_writes=0)
            bot.create_check_run(SHA1, name="codeowner-signoff-verify", conclusion=pr_conclusion, title="as it stands",
                                 summary="as it stands", details_url=f"https://github.com/{REPO_NAME}/pull/{PR}")
            # another GitHub App's green check of that name vouches for nothing
            other = GitHub(REPO_NAME, s.fake.grant("ghs_other", "app", {"checks": "write"}, app="other-ci"),
                           api_url=s.fake.url, sleep=lambda _: None, seconds_between_writes=0)
            other.create_check_run(SHA1, name="codeowner-signoff-verify", conclusion="success", title="forged",
                                   summary="forged", details_url=f"https://github.com/{REPO_NAME}/pull/{PR}")
        job = s.job("signoff-verify.yml", "merge-group", "merge_group", merge_group_payload())
        ok(job.run("queue"))
        [check] = [c for c in s.fake.check_runs if c["_sha"] == QUEUE]
        assert check["name"] == "codeowner-signoff-verify" and check["conclusion"] == want
        assert check["output"]["title"].startswith(f"PR #{PR}: ") and "forged" not in check["output"]["title"]
        assert f"The group merges PR #{PR}" in check["output"]["summary"]


def scratch_repo(tmp_path: Path, changed: dict[str, str]) -> tuple[Path, str, str]:
    """A repository whose main holds this one's benchmark inputs and a second commit changing `changed`."""
    import shutil

    root = tmp_path / "repo"
    root.mkdir()
    shutil.copytree(REPO / "inferencex-e2e", root / "inferencex-e2e")
    shutil.copytree(REPO / "recipes", root / "recipes")
    git = lambda *a: subprocess.run(["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t", *a],  # noqa: E731
                                    check=True, capture_output=True, text=True).stdout.strip()
    git("init", "-q", "-b", "main")
    git("add", "-A")
    git("commit", "-qm", "main")
    base = git("rev-parse", "HEAD")
    git("update-ref", "refs/remotes/origin/main", base)    # what the checkout fetched of the base branch
    for path, text in changed.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    git("add", "-A")
    git("commit", "-qm", "change")
    return root, base, git("rev-parse", "HEAD")


def test_the_changelog_gate_passes_a_merge_group_that_changes_nothing_it_guards(shared, tmp_path):
    root, _, head = scratch_repo(tmp_path, {"README.md": "a change the gate does not guard\n"})
    with Scenario(shared, tmp_path / "s") as s:
        job = s.job("changelog.yml", "lint", "merge_group", merge_group_payload(head=head), cwd=root)
        step = ok(job.run(2))
        assert "changelog lint" in step.done.stdout


def test_a_pr_that_touches_none_of_the_gates_files_still_gets_a_passing_gate(shared, tmp_path):
    assert not (triggers("changelog.yml")["pull_request"] or {}).get("paths"), "a path filter: no report at all"
    root, base, head = scratch_repo(tmp_path, {"docs/notes.md": "nothing the gate guards\n"})
    with Scenario(shared, tmp_path / "s") as s:
        pr = pr_with_sweep(s.fake, PR, head=head)
        pr["base"]["sha"] = base
        job = s.job("changelog.yml", "lint", "pull_request", pr_payload(s.fake, PR, "synchronize"), cwd=root)
        assert job.would_run()
        step = ok(job.run(2))
        assert "::notice" in step.done.stdout and "no change" in step.done.stdout


def test_the_gate_fails_a_merge_group_whose_recipe_change_has_no_entry(shared, tmp_path):
    """It is a gate, not a formality: a recipe change without its changelog entry fails in the queue too."""
    recipe = REPO / "recipes" / "b300-dsv41flash-fp4-sglang" / "fixed-seq.yaml"
    text = recipe.read_text()
    assert "chunked-prefill-size: 16384" in text
    changed = {str(recipe.relative_to(REPO)): text.replace("chunked-prefill-size: 16384", "chunked-prefill-size: 8192")}
    root, _, head = scratch_repo(tmp_path, changed)
    with Scenario(shared, tmp_path / "s") as s:
        job = s.job("changelog.yml", "lint", "merge_group", merge_group_payload(head=head), cwd=root)
        step = job.run(2)
        assert step.done.returncode == 1 and "Traceback" not in step.done.stderr
        assert "dsv41flash-fp4-b300-sglang" in step.done.stdout       # the entry it needs, named
