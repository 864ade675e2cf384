"""When a sweep on main is handed to the results app (W11: never a cancelled or partial one)."""

from __future__ import annotations

import pytest

from ci_tools.prbot.staging.decide import ingest_decision, ingest_payload

MAIN = "refs/heads/main"


@pytest.mark.parametrize("event, ref, collect, source, metadata, dispatch, why", [
    # this run's own sweep
    ("push", MAIN, "success", None, True, True, "collection succeeded"),
    ("push", MAIN, "success", None, False, False, "no `changelog-metadata` artifact"),
    ("push", MAIN, "failure", None, True, False, "did not succeed (failure)"),
    ("push", MAIN, "cancelled", None, True, False, "did not succeed (cancelled)"),
    ("push", MAIN, "skipped", None, True, False, "did not succeed (skipped)"),
    ("push", MAIN, "", None, True, False, "did not succeed (not run)"),
    # reuse resolved a source run: its artifacts were checked when it was selected
    ("push", MAIN, "success", 9, False, True, "reuse resolved source run 9"),
    ("push", MAIN, "skipped", 9, False, True, "reuse resolved source run 9"),
    # never outside a push to main, whatever else holds
    ("push", "refs/heads/feature", "success", None, True, False, "is not a push to main"),
    ("push", "refs/tags/v1", "success", 9, True, False, "is not a push to main"),
    ("pull_request", "", "success", None, True, False, "pull_request is not a push to main"),
    ("workflow_dispatch", MAIN, "success", 9, True, False, "is not a push to main"),
])
def test_ingest_eligibility(event, ref, collect, source, metadata, dispatch, why):
    asked = []

    def metadata_present():
        asked.append(1)
        return metadata

    d = ingest_decision(event_name=event, ref=ref, main_ref=MAIN, collect_result=collect,
                        source_run_id=source, metadata_present=metadata_present)
    assert d.dispatch is dispatch and why in d.reason
    assert d.source_run_id == (source if dispatch else None)
    # the artifact list is only worth a request when it decides the answer
    assert bool(asked) == (event == "push" and ref == MAIN and source is None and collect == "success")


@pytest.mark.parametrize("run_id, reused", [(9, "true"), (500, "false")])
def test_payload_is_strings_naming_both_runs(run_id, reused):
    p = ingest_payload(source_repo="o/r", run_id=run_id, run_attempt=2, head_sha="a" * 40, pr_number=7,
                       merge_run_id=500, merge_run_attempt=1)
    assert all(isinstance(v, str) for v in p.values())
    assert p["source-run-id"] == str(run_id) and p["merge-run-id"] == "500" and p["reused"] == reused


def test_payload_without_a_pull_request_has_an_empty_number():
    p = ingest_payload(source_repo="o/r", run_id=1, run_attempt=1, head_sha="a" * 40, pr_number=None,
                       merge_run_id=1, merge_run_attempt=1)
    assert p["pr-number"] == ""
