"""Steps whose command needs no GitHub API for these events, run exactly as the workflow writes them.

The command line comes from the workflow file, the payload from the webhook corpus, and the event
name is the trigger's (pull_request_target, not pull_request): this catches a command that rejects
the event its workflow delivers, which parsing alone cannot. Each step runs with the environment
Actions gives it (`gh_runtime.JobRun`: the job's token scopes against the permission-aware fake), and
must make no request at all.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import gh_runtime as rt



@pytest.fixture
def fake(shared):
    with rt.served_fake(shared, "Codertocat/Hello-World") as fake:
        yield fake
        assert fake.requests == [], "these steps need no GitHub API for these events"


def run_step(fake, tmp: Path, workflow: str, job: str, index, event_name: str, payload: dict) -> rt.StepRun:
    return rt.JobRun(rt.workflow(workflow), job, fake, event_name, rt.adjust(payload, fake.repo), tmp).run(index)


def corpus(name: str) -> dict:
    kind, file = name.split("/")
    return rt.webhook(kind, file)


def test_pr_body_check_accepts_the_pull_request_target_event(fake, tmp_path):
    step = run_step(fake, tmp_path, "welcome.yml", "body-check", 2, "pull_request_target",
                    corpus("pull_request/opened.payload.json"))
    assert "not one ci-tools handles" not in step.done.stderr
    assert step.done.returncode == 1 and step.outputs["ok"] == "false" and "Checklist" in step.outputs["missing"]


@pytest.mark.parametrize("name, event", [
    ("pull_request/labeled.payload.json", "pull_request"),          # only synchronize may call GitHub
    ("push/with-new-branch.payload.json", "push"),                   # a push that is not to main
])
def test_reuse_step_needs_no_api_when_nothing_can_be_reused(fake, tmp_path, name, event):
    step = run_step(fake, tmp_path, "sweep-pipeline.yml", "plan", "reuse", event, corpus(name))
    assert step.ok, step.done.stderr
    assert step.outputs["skip-pr-sweep"] == "false" and step.outputs["reuse-enabled"] == "false"


def test_welcome_step_is_a_no_op_on_pushes(fake, tmp_path):
    """welcome.yml also fires on synchronize (for the body check); the welcome step must do nothing."""
    step = run_step(fake, tmp_path, "welcome.yml", "welcome", 2, "pull_request_target",
                    corpus("pull_request/synchronize.payload.json"))
    assert step.ok, step.done.stderr
    assert step.outputs["comment"] == "none"
