"""Finding 23.4: a re-run of an old sweep run replays its old payload (old head, old labels) and would
join the PR's active concurrency group, cancelling the PR's newest sweep and benchmarking the old
commit. run-sweep.yml's gate step, run as GitHub runs a re-run (GITHUB_RUN_ATTEMPT 2, the original
payload, the job's token against the fake), refuses it with the reason once the PR has moved on."""

from __future__ import annotations

import copy

import pytest

import gh_runtime as rt
from test_sweep_end_to_end import PRIMARY


OLD, NEW = "1" * 40, "2" * 40
PR = 7


@pytest.fixture
def fake(shared):
    with rt.served_fake(shared, "Codertocat/Hello-World") as fake:
        yield fake


def payload(head: str, labels=(PRIMARY,), action: str = "synchronize") -> dict:
    p = copy.deepcopy(rt.webhook("pull_request", "synchronize.payload.json"))
    p["action"] = action
    p["number"] = p["pull_request"]["number"] = PR
    p["pull_request"]["head"]["sha"] = head
    p["pull_request"]["head"]["repo"] = {**p["pull_request"]["head"]["repo"], "full_name": "Codertocat/Hello-World"}
    template = p["pull_request"]["labels"][0] if p["pull_request"]["labels"] else {"id": 1, "color": "ededed"}
    p["pull_request"]["labels"] = [{**template, "name": n} for n in labels]
    p["pull_request"]["draft"] = False
    return p


def gate(fake, tmp, event: dict, attempt: int) -> rt.StepRun:
    job = rt.JobRun(rt.workflow("run-sweep.yml"), "gate", fake, "pull_request", rt.adjust(event, fake.repo), tmp,
                    run_attempt=attempt)
    return job.run("gate")


def test_a_rerun_after_a_push_is_refused_and_joins_no_active_group(fake, tmp_path):
    fake.add_pr(PR, head_sha=NEW, labels=(PRIMARY,), commits=[OLD, NEW])
    step = gate(fake, tmp_path, payload(OLD), attempt=2)
    assert step.done.returncode == 1
    assert step.outputs["sweep"] == "false" and step.outputs["restarts"] == "false"
    assert step.outputs["concurrency-group"] != f"sweep-{PR}-active"
    assert "superseded" in step.outputs["reason"] and NEW[:12] in step.outputs["reason"]


def test_a_rerun_after_a_label_change_is_refused(fake, tmp_path):
    fake.add_pr(PR, head_sha=OLD, labels=(PRIMARY, "evals-only"))
    step = gate(fake, tmp_path, payload(OLD), attempt=2)
    assert step.done.returncode == 1 and "evals-only" in step.outputs["reason"]


def test_a_rerun_of_the_newest_run_sweeps_again(fake, tmp_path):
    fake.add_pr(PR, head_sha=OLD, labels=(PRIMARY,))
    step = gate(fake, tmp_path, payload(OLD), attempt=2)
    assert step.ok, step.done.stderr
    assert step.outputs["sweep"] == "true" and step.outputs["concurrency-group"] == f"sweep-{PR}-active"
    assert fake.requests == [f"GET /repos/{fake.repo}/pulls/{PR}"]


def test_a_first_attempt_decides_from_the_event_alone(fake, tmp_path):
    fake.add_pr(PR, head_sha=NEW, labels=(PRIMARY,))
    step = gate(fake, tmp_path, payload(OLD), attempt=1)
    assert step.ok and step.outputs["sweep"] == "true" and fake.requests == []
