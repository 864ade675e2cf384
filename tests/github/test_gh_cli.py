"""The commands as the workflows run them: a subprocess, real payload files, $GITHUB_OUTPUT, the fake."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from gh_scenarios import FULL, MERGE, SHA1, REPO_ROOT, authorise, merge, pr_with_sweep


def ci(args, env, cwd=REPO_ROOT):
    full = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "GH_"))}
    full.update(env)
    return subprocess.run([sys.executable, "-m", "ci_tools", *args], env=full, cwd=cwd, capture_output=True,
                          text=True, timeout=60)


def outputs(env) -> dict:
    text = open(env["GITHUB_OUTPUT"]).read() if os.path.exists(env["GITHUB_OUTPUT"]) else ""
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line and "<<" not in line)


def payload(shared, tmp_path, kind, name, change) -> str:
    data = json.loads((shared / "corpus" / "github-webhooks" / kind / name).read_text())
    change(data)
    path = tmp_path / "event.json"
    path.write_text(json.dumps(data))
    return str(path)


def test_comment_handle_replies_and_writes_outputs(fake, env, shared, tmp_path):
    pr_with_sweep(fake, 7)
    fake.add_run(9, head_sha=SHA1)
    c = authorise(fake, 7, "/use 9", association="OWNER")

    def change(d):
        d["issue"].update(number=7, pull_request={"url": "https://x"})
        d["comment"].update(id=c["id"], body=c["body"], user=c["user"], author_association="OWNER",
                            html_url=c["html_url"])
        d["repository"]["full_name"] = fake.repo

    path = payload(shared, tmp_path, "issue_comment", "created.payload.json", change)
    r = ci(["comment", "handle", "--event-path", path, "--event-name", "issue_comment", "--format", "github"], env)
    assert r.returncode == 0, r.stderr
    out = outputs(env)
    assert out["handled"] == "true" and out["reuse-authorised"] == "true"
    assert any("run 9 is pinned" in b["body"] for b in fake.bot_comments(7))


def test_reuse_resolve_on_a_push_to_main(fake, env, shared, tmp_path):
    pr_with_sweep(fake, 7)
    fake.add_run(9, head_sha=SHA1)
    authorise(fake, 7, "/use")
    merge(fake, 7)

    def change(d):
        d.update(ref="refs/heads/main", after=MERGE)
        d["repository"]["full_name"] = fake.repo

    path = payload(shared, tmp_path, "push", "payload.json", change)
    r = ci(["reuse", "resolve", "--event-path", path, "--event-name", "push", "--format", "github"], env)
    assert r.returncode == 0, r.stderr
    out = outputs(env)
    assert out["reuse-enabled"] == "true" and out["reuse-source-run-id"] == "9"
    assert out["reuse-source-pr-number"] == "7" and out["reuse-source-head-sha"] == SHA1
    # commit's pulls, the PR (its comment count), timeline, permission, runs, artifacts, the run's plan (#25)
    assert "GitHub API requests: 7" in r.stdout


def test_refused_reuse_makes_main_sweep_unless_the_policy_says_fail(fake, env, shared, tmp_path):
    pr_with_sweep(fake, 7, labels=(FULL, "evals-only"))
    authorise(fake, 7, "/use")
    merge(fake, 7)

    def change(d):
        d.update(ref="refs/heads/main", after=MERGE)
        d["repository"]["full_name"] = fake.repo

    path = payload(shared, tmp_path, "push", "payload.json", change)
    r = ci(["reuse", "resolve", "--event-path", path, "--event-name", "push", "--format", "github"], env)
    assert r.returncode == 0, r.stderr
    out = outputs(env)
    assert (out["reuse-refused"], out["reuse-error"], out["reuse-enabled"]) == ("true", "false", "false")
    assert "PR #7 authorised reuse, but the PR carries evals-only" in r.stdout
    strict = tmp_path / "strict"
    (strict / "inferencex-e2e").mkdir(parents=True)
    text = (REPO_ROOT / "inferencex-e2e" / "ci-policy.yaml").read_text()
    assert "on-refused-reuse: sweep" in text
    (strict / "inferencex-e2e" / "ci-policy.yaml").write_text(text.replace("on-refused-reuse: sweep",
                                                                          "on-refused-reuse: fail"))
    r = ci(["reuse", "resolve", "--event-path", path, "--event-name", "push", "--format", "github",
            "--repo-root", str(strict)], env)
    assert r.returncode == 1 and "::error title=ci-tools reuse resolve::PR #7 authorised reuse, but the PR carries evals-only" in r.stdout
    assert outputs(env)["reuse-error"] == "true"


def test_events_that_need_nothing_need_no_token(shared, tmp_path):
    env = {"GITHUB_OUTPUT": str(tmp_path / "o")}
    hooks = shared / "corpus" / "github-webhooks"
    r = ci(["reuse", "resolve", "--event-path", str(hooks / "pull_request" / "labeled.payload.json"),
            "--format", "github"], env)
    assert r.returncode == 0, r.stderr
    assert outputs(env)["skip-pr-sweep"] == "false" and "GitHub API requests: 0" in r.stdout
    r = ci(["signoff", "verify", "--event-path", str(hooks / "issue_comment" / "created.payload.json")], env)
    assert r.returncode == 0 and "nothing to do" in r.stdout


def test_pr_body_check_fails_as_a_check(shared, tmp_path):
    env = {"GITHUB_OUTPUT": str(tmp_path / "o")}
    r = ci(["bot", "pr-body", "--event-path",
            str(shared / "corpus" / "github-webhooks" / "pull_request" / "opened.payload.json"), "--format", "github"],
           env)
    assert r.returncode == 1 and "::error title=ci-tools bot pr-body::" in r.stdout and "AI model disclosure" in r.stdout


@pytest.mark.parametrize("args,env_extra,message", [
    (["stage", "callback", "--event-name", "repository_dispatch"], {"GITHUB_TOKEN": "t"},
     "refusing the staging callback"),
    (["bot", "welcome", "--event-name", "pull_request"], {}, "no GitHub token"),
])
def test_bad_input_is_a_clean_error(shared, tmp_path, args, env_extra, message):
    if args[0] == "stage":
        ev = tmp_path / "d.json"
        ev.write_text(json.dumps({"action": "stage-results-started", "client_payload": {"run-id": "x"}}))
    else:
        ev = shared / "corpus" / "github-webhooks" / "pull_request" / "opened.payload.json"
    r = ci([*args, "--event-path", str(ev)], {"GITHUB_OUTPUT": str(tmp_path / "o"), **env_extra})
    assert r.returncode == 1 and message in r.stderr and "Traceback" not in r.stderr


def test_a_failing_gate_leaves_every_message_in_the_job_summary(shared, tmp_path):
    summary = tmp_path / "summary.md"
    env = {"GITHUB_OUTPUT": str(tmp_path / "o"), "GITHUB_STEP_SUMMARY": str(summary)}
    r = ci(["bot", "pr-body", "--event-path",
            str(shared / "corpus" / "github-webhooks" / "pull_request" / "opened.payload.json"), "--format", "github"],
           env)
    assert r.returncode == 1
    text = summary.read_text()
    assert text.startswith("### ci-tools bot pr-body: failed (exit 1)\n\n- ")
    assert "AI model disclosure" in text and "GitHub API requests: 0" in text


def test_bot_labels_creates_and_updates_the_policys_labels_and_leaves_others(fake, env, tmp_path):
    """A new repository gets every sweep label of the policy, coloured by kind and described; a label
    with a stale colour or description is updated; a label the policy does not name is untouched; a
    second run changes nothing. GitHub's own rules hold: colour without '#', description <= 100."""
    fake.add_repo_label("full-sweep-enabled", "ffffff", "old words")
    fake.add_repo_label("bug", "d73a4a", "Something isn't working")
    fake.grant("labels-token", "github_token", {"issues": "write"})
    env = {**env, "GITHUB_TOKEN": "labels-token"}
    dry = ci(["bot", "labels", "--repo", fake.repo, "--dry-run"], env)
    assert dry.returncode == 0 and "would be created" in dry.stdout and len(fake.repo_labels) == 2
    first = ci(["bot", "labels", "--repo", fake.repo, "--format", "github"], env)
    assert first.returncode == 0, first.stderr
    assert outputs(env) == {"created": "7", "updated": "1", "unchanged": "0"}
    labels = fake.repo_labels
    assert labels["full-sweep-fail-fast"]["description"].endswith("(recommended)")
    assert labels["full-sweep-fail-fast"]["color"] == "0e8a16" and labels["evals-only"]["color"] == "1d76db"
    assert "blocks reuse at merge" in labels["evals-only"]["description"]
    assert labels["full-sweep-enabled"]["description"] != "old words"
    assert labels["bug"]["description"] == "Something isn't working"            # not the policy's: untouched
    assert all(len(lb["description"] or "") <= 100 for lb in labels.values())
    second = ci(["bot", "labels", "--repo", fake.repo], env)
    assert second.returncode == 0 and "0 to create, 0 to update, 8 already right" in second.stdout
    fake.repo_labels["agentx-fast"]["description"] = "edited by hand"
    fake.grant("read-only", "github_token", {"issues": "read"})
    refused = ci(["bot", "labels", "--repo", fake.repo], {**env, "GITHUB_TOKEN": "read-only"})
    assert refused.returncode != 0 and "issues: write" in refused.stderr and "Traceback" not in refused.stderr
