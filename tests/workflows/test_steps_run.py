"""Steps whose command needs no GitHub API for these events, run exactly as the workflow writes them.

The command line comes from the workflow file, the payload from the webhook corpus, and the event
name is the trigger's (pull_request_target, not pull_request): this catches a command that rejects
the event its workflow delivers, which parsing alone cannot.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import wf_contract as wc
from wf_env import REPO, WORKFLOWS
from wf_contract import read_github_output


def step_argv(workflow: str, job: str, index: int) -> list[str]:
    wf = next(w for w in wc.load_workflows(WORKFLOWS) if w.name == workflow)
    [argv] = wc.ci_tools_commands(wf.jobs[job]["steps"][index]["run"])
    return argv


def run_step(tmp: Path, workflow: str, job: str, index: int, event_name: str, payload: dict):
    event = tmp / "event.json"
    event.write_text(json.dumps(payload))
    out = tmp / "out"
    out.write_text("")
    env = {k: v for k, v in os.environ.items() if k not in ("GITHUB_TOKEN", "GH_TOKEN")}
    env.update(GITHUB_EVENT_NAME=event_name, GITHUB_EVENT_PATH=str(event), GITHUB_OUTPUT=str(out),
               GITHUB_REPOSITORY=payload["repository"]["full_name"])
    argv = wc.expand_words(step_argv(workflow, job, index), env)
    done = subprocess.run([sys.executable, "-m", "ci_tools", *argv], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=60)
    return done, read_github_output(out.read_text())


def corpus(shared: Path, name: str) -> dict:
    return json.loads((shared / "corpus" / "github-webhooks" / name).read_text())


def test_pr_body_check_accepts_the_pull_request_target_event(shared, tmp_path):
    done, outputs = run_step(tmp_path, "welcome.yml", "body-check", 2, "pull_request_target",
                             corpus(shared, "pull_request/opened.payload.json"))
    assert "not one ci-tools handles" not in done.stderr
    assert done.returncode == 1 and outputs["ok"] == "false" and "Checklist" in outputs["missing"]


@pytest.mark.parametrize("name, event", [
    ("pull_request/labeled.payload.json", "pull_request"),          # only synchronize may call GitHub
    ("push/with-new-branch.payload.json", "push"),                   # a push that is not to main
])
def test_reuse_step_needs_no_token_when_nothing_can_be_reused(shared, tmp_path, name, event):
    done, outputs = run_step(tmp_path, "sweep-pipeline.yml", "plan", 2, event, corpus(shared, name))
    assert done.returncode == 0, done.stderr
    assert outputs["skip-pr-sweep"] == "false" and outputs["reuse-enabled"] == "false"


def test_welcome_step_is_a_no_op_on_pushes(shared, tmp_path):
    """welcome.yml also fires on synchronize (for the body check); the welcome step must do nothing."""
    done, outputs = run_step(tmp_path, "welcome.yml", "welcome", 2, "pull_request_target",
                             corpus(shared, "pull_request/synchronize.payload.json"))
    assert done.returncode == 0, done.stderr
    assert outputs["comment"] == "none"
