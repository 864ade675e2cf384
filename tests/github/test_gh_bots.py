"""Bot comments: the welcome, the status card, the PR-body check; and every comment body as a golden file."""

from __future__ import annotations

from pathlib import Path

import pytest

from ci_tools.github.events import Event
from ci_tools.prbot.flow import handle_comment
from ci_tools.prbot.staging.flow import stage_callback
from ci_tools.prbot.card.flow import status_card
from ci_tools.prbot.signoff.flow import verify_signoff
from ci_tools.prbot.welcome.flow import welcome
from ci_tools.prbot.prbody.flow import pr_body
from gh_scenarios import FULL, SHA1, REPO_ROOT, authorise, comment_event, lazy, pr_event, pr_with_sweep, settings
from test_gh_commands import callback, comment_jobs
from test_gh_signoff import setup_pr, signoff_body
from tests.conftest import assert_golden

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "comments"


def golden(name: str, text: str) -> None:
    assert_golden(GOLDEN / f"{name}.md", text)


def only(fake, pr, prefix):
    found = [c["body"] for c in fake.bot_comments(pr) if c["body"].startswith(prefix)]
    assert len(found) == 1, found
    return found[0]


def test_w25_welcome_is_posted_once_even_past_the_first_page_and_names_policy_labels(fake):
    pr_with_sweep(fake, 1)
    for i in range(130):
        fake.add_comment(1, f"chatter {i}", author="viewer", association="NONE")
    for action in ("opened", "reopened", "ready_for_review"):
        welcome(pr_event(fake, 1, action), settings(), lazy(fake))
    body = only(fake, 1, "<!-- ci-tools:welcome -->")
    assert "感谢提交 PR" in body and "Thanks for opening" in body
    assert f"`{FULL}`" in body
    golden("welcome", body)


def test_welcome_ignores_other_actions_at_zero_cost(fake):
    gh = lazy(fake)
    pr_with_sweep(fake, 1)
    welcome(pr_event(fake, 1, "synchronize"), settings(), gh)
    assert gh.calls == 0


def test_status_card_holds_latest_run_plan_and_reuse(fake):
    pr_with_sweep(fake, 1)
    fake.add_run(9, head_sha=SHA1)
    c = authorise(fake, 1, "/use 9")
    handle_comment(comment_event(fake, 1, c), settings(), lazy(fake))
    fake.add_run(12, head_sha=SHA1, pull_requests=(1,))      # the finished sweep the card shows
    wr = Event(name="workflow_run", repo=fake.repo, workflow_run=__import__("ci_tools.github.events", fromlist=["x"])
               .WorkflowRun(id=12, event="pull_request", status="completed", conclusion="success", head_sha=SHA1,
                            html_url=f"https://github.com/{fake.repo}/actions/runs/12", pull_requests=(1,)))
    for _ in range(2):
        status_card(wr, settings(), lazy(fake), pr=None, run=None, plan=None)
    status_card(None, settings(), lazy(fake), pr=1, run=None, plan="12 points on 3 runners, 6.5 GPU-hours")
    body = only(fake, 1, "<!-- ci-tools:status-card -->")
    assert "unofficialRun=12" in body and "6.5 GPU-hours" in body and "pinned to run 9" in body
    golden("status-card", body)


def test_status_card_shows_the_runs_eval_table(fake):
    from ci_tools.evals.report import markdown

    pr_with_sweep(fake, 1)
    point = {"config-key": "k", "tp": 2, "ep": 2, "dp-attn": True, "conc": 128}
    evals = [{"point": point, "valid": False, "failures": [{"rule": "score", "message": "below"}],
              "scores": [{"conc": 128, "task": "gsm8k", "metric": "exact_match,strict-match", "score": 0.8,
                          "threshold": 0.9, "threshold-source": "default.gsm8k", "passed": False}]}]
    verdict = {"verdict": "failed", "passed": 0, "expected": 1, "failed": ["k tp2 ep2 dp-attn conc 128: below"],
               "missing": []}
    run = {"id": 12, "url": "https://x/12", "conclusion": "failure", "head_sha": SHA1}
    status_card(None, settings(), lazy(fake), pr=1, run=run, plan=None, evals=markdown(verdict, evals))
    body = only(fake, 1, "<!-- ci-tools:status-card -->")
    assert "**Evals: FAILED** (0 of 1 eval rows passed)" in body
    assert "| k tp2 ep2 dp-attn conc 128 | 128 | strict-match | 0.8000 | 0.90 (default.gsm8k) | **FAIL** |" in body


def test_status_card_skips_non_pr_runs_at_zero_cost(fake):
    gh = lazy(fake)
    wr = Event(name="workflow_run", workflow_run=__import__("ci_tools.github.events", fromlist=["x"])
               .WorkflowRun(id=12, event="push"))
    res = status_card(wr, settings(), gh, pr=None, run=None, plan=None)
    assert res.outputs["comment"] == "none" and gh.calls == 0


TEMPLATE = (REPO_ROOT / ".github" / "pull_request_template.md").read_text()


def test_pr_body_check_is_a_failing_check_with_zero_calls(fake):
    pr_with_sweep(fake, 1, body=TEMPLATE)
    res = pr_body(pr_event(fake, 1, "edited"))
    assert res.exit_code == 1 and "Model/version" in res.outputs["missing"] and fake.requests == []


# ---- every other comment body as a golden file ----------------------------------------------------

def reply(fake, body, **kw):
    c = authorise(fake, 1, body, **kw)
    comment_jobs(fake, comment_event(fake, 1, c))
    return only(fake, 1, f"<!-- ci-tools:reply {c['id']} -->")


@pytest.mark.parametrize("name,body,kw,runs", [
    ("reply-usage", "/use abc\n/sweep", {}, []),
    ("reply-use-pinned", "/use 9", {}, [dict(id=9, head_sha=SHA1)]),
    ("reply-use-latest", "/use", {}, [dict(id=9, head_sha=SHA1)]),
    ("reply-use-refused-at-merge", "/use 9", {}, [dict(id=9, head_sha=SHA1, conclusion="failure", artifacts=())]),
    ("reply-use-denied", "/use", {"permission": "read"}, []),
    ("reply-stage-denied", "/stage-results", {"permission": "read"}, []),
    ("reply-denied-several", "/sweep plan\n/use 9\n/stage-results", {"permission": "read"}, []),
    ("reply-stage-refused", "/stage-results 9", {}, [dict(id=9, head_sha=SHA1, artifacts=("results_bmk",))]),
    ("reply-sweep-plan", "/sweep plan", {}, []),
])
def test_reply_goldens(fake, name, body, kw, runs):
    pr_with_sweep(fake, 1)
    for r in runs:
        r = dict(r)
        fake.add_run(r.pop("id"), **r)
    golden(name, reply(fake, body, **kw))


def test_staging_goldens(fake):
    pr_with_sweep(fake, 1)
    fake.add_run(9, head_sha=SHA1)
    c = authorise(fake, 1, "/stage-results 9")
    res = comment_jobs(fake, comment_event(fake, 1, c))
    cid = int(res.outputs["stage-comment-id"])
    golden("stage-ack", fake.comments[cid]["body"])
    stage_callback(callback(fake, "stage-results-started", 1, cid), settings(), lazy(fake))
    golden("stage-started", fake.comments[cid]["body"])
    stage_callback(callback(fake, "stage-results-completed", 1, cid, **{"stage-succeeded": "false"}), settings(),
                   lazy(fake))
    golden("stage-failed", fake.comments[cid]["body"])
    stage_callback(callback(fake, "stage-results-completed", 1, cid, **{"stage-succeeded": "true",
                                                                         "app-run-id": "556"}), settings(), lazy(fake))
    golden("stage-succeeded", fake.comments[cid]["body"])


def test_signoff_goldens(fake):
    setup_pr(fake)
    bad = fake.add_comment(1, signoff_body("amd-dev", untick=3), author="amd-dev")
    verify_signoff(comment_event(fake, 1, bad), settings(), lazy(fake), lazy(fake))
    golden("signoff-rejected", only(fake, 1, "<!-- ci-tools:signoff-verdict -->"))
    good = fake.add_comment(1, signoff_body("amd-dev"), author="amd-dev")
    verify_signoff(comment_event(fake, 1, good), settings(), lazy(fake), lazy(fake))
    golden("signoff-verified", only(fake, 1, "<!-- ci-tools:signoff-verdict -->"))
    other = fake.add_comment(1, signoff_body("mallory"), author="mallory")
    verify_signoff(comment_event(fake, 1, other), settings(), lazy(fake), lazy(fake))
    golden("signoff-not-counted", only(fake, 1, f"<!-- ci-tools:signoff-reply {other['id']} -->"))
    asked = fake.add_review(1, "The recipe needs the upstream image.", author="amd-dev", state="changes_requested")
    verify_signoff(comment_event(fake, 1, {**asked, "state": "changes_requested", "created_at": asked["submitted_at"]},
                                 kind="pull_request_review"), settings(), lazy(fake), lazy(fake))
    golden("signoff-revoked", only(fake, 1, "<!-- ci-tools:signoff-verdict -->"))


def test_sweep_plan_reply_shows_the_plan_the_sweep_workflow_recorded(fake):
    pr_with_sweep(fake, 1)
    status_card(None, settings(), lazy(fake), pr=1, run={"id": 12, "url": "https://x/12", "conclusion": "success",
                                                         "head_sha": SHA1}, plan="| family | points |\n|---|---|\n| single-node | 7 |")
    golden("reply-sweep-plan-recorded", reply(fake, "/sweep plan"))


def test_a_run_that_did_no_gpu_work_does_not_replace_the_latest_run(fake):
    """#16.10: every run-sweep completion triggers the card, also runs the gate or /use stopped
    before planning; those must not become the card's "Latest run"."""
    from ci_tools.github.events import WorkflowRun

    pr_with_sweep(fake, 1)
    fake.add_run(12, head_sha=SHA1, pull_requests=(1,))
    fake.add_run(13, head_sha=SHA1, pull_requests=(1,), artifacts=())          # stopped before planning

    def card(run_id):
        wr = WorkflowRun(id=run_id, event="pull_request", status="completed", conclusion="success", head_sha=SHA1,
                         html_url=f"https://github.com/{fake.repo}/actions/runs/{run_id}", pull_requests=(1,))
        return status_card(Event(name="workflow_run", repo=fake.repo, workflow_run=wr), settings(), lazy(fake),
                           pr=None, run=None, plan=None)

    card(12)
    res = card(13)
    body = only(fake, 1, "<!-- ci-tools:status-card -->")
    assert "runs/12" in body and "runs/13" not in body and "planned no sweep" in res.messages[-1]
