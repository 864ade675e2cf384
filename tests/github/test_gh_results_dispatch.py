"""`results dispatch`: the ingest hand-off on main, against the fake GitHub (budget, golden payload)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ci_tools.cli.results import GITHUB_OUTPUTS
from ci_tools.errors import InputError
from ci_tools.prbot.staging.flow import results_dispatch
from gh_scenarios import MERGE, SHA1, lazy, merge, pr_with_sweep, push_event, settings
from test_gh_cli import ci, outputs, payload
from tests.conftest import assert_golden

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "results"
RUN = 500


def golden(name: str, data: dict) -> None:
    assert_golden(GOLDEN / name, json.dumps(data, indent=2, sort_keys=True) + "\n")


def merged_pr(fake, *, artifacts=("results_bmk", "changelog-metadata")):
    pr_with_sweep(fake, 7)
    merge(fake, 7)
    fake.add_run(RUN, head_sha=MERGE, branch="main", event="push", artifacts=artifacts, attempt=2)


def dispatch(fake, **kw):
    gh, app = lazy(fake), lazy(fake)
    args = dict(source_run_id=None, collect_result="success", run_id=RUN, run_attempt=2)
    res = results_dispatch(push_event(fake), settings(), gh, app, **{**args, **kw})
    return res, gh.calls, app.calls


def test_this_run_is_dispatched_with_the_golden_payload(fake):
    merged_pr(fake)
    res, calls, app_calls = dispatch(fake)
    assert res.outputs == {"dispatched": "true", "ingest-run-id": str(RUN)}
    assert (calls, app_calls) == (2, 2)   # artifacts of this run, the merged PR; the app's runs, the dispatch
    [sent] = fake.dispatches
    assert sent["repo"] == "SemiAnalysisAI/InferenceX-app" and sent["event_type"] == "ingest-results"
    golden("ingest-payload.json", sent["client_payload"])


def test_reused_source_run_is_named(fake):
    merged_pr(fake, artifacts=("changelog-metadata",))
    fake.add_run(9, head_sha=SHA1, attempt=3, pull_requests=(7,))
    res, calls, app_calls = dispatch(fake, source_run_id=9, collect_result="success")
    assert res.outputs["ingest-run-id"] == "9"
    assert (calls, app_calls) == (2, 2)   # the source run, the merged PR; no artifact list needed
    p = fake.dispatches[0]["client_payload"]
    assert (p["source-run-id"], p["source-run-attempt"], p["head-sha"], p["pr-number"]) == ("9", "3", SHA1, "7")
    assert (p["merge-run-id"], p["merge-run-attempt"], p["reused"]) == (str(RUN), "2", "true")


@pytest.mark.parametrize("collect, artifacts, calls, reason", [
    ("cancelled", ("results_bmk", "changelog-metadata"), 0, "cancelled"),
    ("failure", ("results_bmk", "changelog-metadata"), 0, "did not succeed"),
    ("success", ("results_bmk",), 1, "no `changelog-metadata` artifact"),
])
def test_cancelled_or_partial_sweeps_are_not_ingested(fake, collect, artifacts, calls, reason):
    merged_pr(fake, artifacts=artifacts)
    res, gh_calls, app_calls = dispatch(fake, collect_result=collect)
    assert res.outputs["dispatched"] == "false" and reason in res.messages[0]
    assert (gh_calls, app_calls) == (calls, 0) and fake.dispatches == []


def test_expired_metadata_does_not_count(fake):
    pr_with_sweep(fake, 7)
    merge(fake, 7)
    fake.add_run(RUN, head_sha=MERGE, branch="main", event="push", artifacts=("results_bmk",),
                 expired=("changelog-metadata",))
    res, _, _ = dispatch(fake)
    assert res.outputs["dispatched"] == "false"


def test_an_eligible_run_without_a_dispatch_token_fails_clearly(fake):
    merged_pr(fake)
    with pytest.raises(InputError, match="RESULTS_DISPATCH_TOKEN"):
        results_dispatch(push_event(fake), settings(), lazy(fake), None, source_run_id=None,
                         collect_result="success", run_id=RUN, run_attempt=1)


def test_cli_on_main_writes_outputs(fake, env, shared, tmp_path):
    merged_pr(fake)

    def change(d):
        d.update(ref="refs/heads/main", after=MERGE)
        d["repository"]["full_name"] = fake.repo

    path = payload(shared, tmp_path, "push", "payload.json", change)
    env = {**env, "RESULTS_DISPATCH_TOKEN": "app-token", "GITHUB_RUN_ID": str(RUN), "GITHUB_RUN_ATTEMPT": "2",
           "CI_TOOLS_RESULTS_REPO": "octo/results-app"}
    r = ci(["results", "dispatch", "--event-path", path, "--event-name", "push", "--source-run-id", "",
            "--collect-result", "success", "--format", "github"], env)
    assert r.returncode == 0, r.stderr
    assert outputs(env) == {"dispatched": "true", "ingest-run-id": str(RUN)}
    assert tuple(outputs(env)) == GITHUB_OUTPUTS["results dispatch"]   # the registry the contract test reads
    assert [d["repo"] for d in fake.dispatches] == ["octo/results-app"]
    golden("ingest-payload.json", fake.dispatches[0]["client_payload"])


def test_cli_elsewhere_is_a_no_op_without_tokens(shared, tmp_path):
    env = {"GITHUB_OUTPUT": str(tmp_path / "o"), "GITHUB_RUN_ID": "5"}
    hooks = shared / "corpus" / "github-webhooks"
    r = ci(["results", "dispatch", "--event-path", str(hooks / "pull_request" / "labeled.payload.json"),
            "--source-run-id", "", "--collect-result", "success", "--format", "github"], env)
    assert r.returncode == 0, r.stderr
    assert outputs(env)["dispatched"] == "false" and "is not a push to main" in r.stdout
    assert "GitHub API requests: 0" in r.stdout


@pytest.mark.parametrize("value", ["abc", "0", "-3"])
def test_bad_source_run_id_is_a_usage_error(shared, tmp_path, value):
    hooks = shared / "corpus" / "github-webhooks"
    r = ci(["results", "dispatch", "--event-path", str(hooks / "pull_request" / "labeled.payload.json"),
            "--source-run-id", value], {"GITHUB_OUTPUT": str(tmp_path / "o")})
    assert r.returncode == 2 and "--source-run-id" in r.stderr and "Traceback" not in r.stderr
