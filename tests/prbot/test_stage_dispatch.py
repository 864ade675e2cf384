"""`staging.dispatch_problem`: the dispatch job's re-check of the payload `comment handle` decided,
as a table (each row changes one fact GitHub reports; the first row is the accepted case)."""

from __future__ import annotations

import json

import pytest

from ci_tools.github.models import comment_from_json, run_from_json
from ci_tools.prbot import messages, sticky
from ci_tools.prbot.staging import decide as staging

REPO, BOT = "octo/bench", sticky.DEFAULT_BOT
PAYLOAD = staging.dispatch_payload(source_repo=REPO, pr_number=1, run_id=9, run_attempt=1, run_date="2026-10-01",
                                   requested_by="maint", comment_id=500)
ACK = {"id": 500, "user": {"login": BOT}, "issue_url": f"https://api.github.com/repos/{REPO}/issues/1",
       "body": messages.render("stage-ack", kind="stage", key=77, author="maint", run_id=9, run_url="u",
                         state={"run": 9, "phase": "requested", "url": "u"})}
RUN = {"id": 9, "run_attempt": 1, "created_at": "2026-10-01T10:00:00Z", "repository": {"full_name": REPO},
       "head_repository": {"full_name": REPO}}


def problem(*, commenter=staging.Commenter(77, "maint", "write"), pr=1, ack=ACK, run=RUN, **payload):
    # the table holds GitHub's JSON, parsed as the client parses it
    return staging.dispatch_problem({**PAYLOAD, **payload}, repo=REPO, pr_number=pr, commenter=commenter,
                                    ack=comment_from_json(ack) if ack else None, bot=BOT, run=run_from_json(run))


@pytest.mark.parametrize("kw,why", [
    ({}, None),
    ({"commenter": None}, "not a pull-request comment"),
    ({"commenter": staging.Commenter(77, "maint", "write", "edited")}, "the comment was edited"),
    ({"commenter": staging.Commenter(77, "maint", "triage")}, "@maint has triage permission now"),
    ({"commenter": staging.Commenter(78, "maint", "write")}, "not the bot's staging acknowledgement of comment 78"),
    ({"commenter": staging.Commenter(77, "mallory", "admin")}, "the comment is by @mallory"),
    ({"pr": 2}, "the comment is on PR #2"),
    ({"ack": {**ACK, "user": {"login": "mallory"}}}, "not the bot's staging acknowledgement"),
    ({"ack": {**ACK, "issue_url": ACK["issue_url"].replace("/1", "/2")}}, "not the bot's staging acknowledgement"),
    ({"ack": {**ACK, "id": 501}}, "not the bot's staging acknowledgement"),
    ({"ack": {**ACK, "body": ACK["body"].replace('"phase":"requested"', '"phase":"completed"')}}, "already completed"),
    ({"ack": {**ACK, "body": ACK["body"].replace('"run":9', '"run":8')}}, "the acknowledgement is for run 8"),
    ({"run": {**RUN, "head_repository": {"full_name": "mallory/bench"}}}, "its head is in mallory/bench"),
    ({"run": {**RUN, "run_attempt": 2}}, "attempt 2 of 2026-10-01"),
    ({"run": {**RUN, "created_at": "2026-10-02T00:00:00Z"}}, "of 2026-10-02"),
])
def test_dispatch_problem(kw, why):
    got = problem(**kw)
    assert (got is None) if why is None else (why in (got or "")), got


@pytest.mark.parametrize("text,why", [
    (json.dumps(PAYLOAD), None),
    ("not json", "not JSON"),
    ("[]", "must be a JSON object"),
    (json.dumps({k: v for k, v in PAYLOAD.items() if k != "run-date"}), "expected source-repository"),
    (json.dumps({**PAYLOAD, "pr-number": 1}), "pr-number must be a decimal number"),
    (json.dumps({**PAYLOAD, "comment-id": "0"}), "comment-id must be a decimal number"),
    (json.dumps({**PAYLOAD, "run-date": "yesterday"}), "run-date must be YYYY-MM-DD"),
    (json.dumps({**PAYLOAD, "source-repository": "other/repo"}), "expected this repository"),
    # issue 25: the key the results app de-duplicates on is the request's own, never another's
    (json.dumps({k: v for k, v in PAYLOAD.items() if k != "dispatch-key"}), "expected source-repository"),
    (json.dumps({**PAYLOAD, "dispatch-key": "x"}), "dispatch-key is 'x', expected 'stage-results:octo/bench:9:1:500'"),
    (json.dumps({**PAYLOAD, "comment-id": "501"}), "dispatch-key is 'stage-results:octo/bench:9:1:500', expected"),
])
def test_parse_dispatch_payload(text, why):
    if why is None:
        assert staging.parse_dispatch_payload(text, repo=REPO) == PAYLOAD
    else:
        with pytest.raises(ValueError, match=why):
            staging.parse_dispatch_payload(text, repo=REPO)


def test_a_dispatch_is_acknowledged_by_the_app_run_named_for_its_key():
    key = PAYLOAD["dispatch-key"]
    assert staging.acknowledged("stage-results", key, ["ingest-results x", f"stage-results {key}"])
    assert not staging.acknowledged("stage-results", key, [f"ingest-results {key}", f"stage-results {key}0", ""])
    # a re-run of the dispatching job (a new attempt of it) is the same request: the same key
    again = staging.dispatch_payload(source_repo=REPO, pr_number=1, run_id=9, run_attempt=1, run_date="2026-10-01",
                                     requested_by="maint", comment_id=500)
    assert again["dispatch-key"] == key and len(again) <= 10       # GitHub takes at most 10 payload keys
    ingest = [staging.ingest_payload(source_repo=REPO, run_id=9, run_attempt=1, head_sha="a" * 40, pr_number=1,
                                     merge_run_id=500, merge_run_attempt=n) for n in (1, 2)]
    assert ingest[0]["dispatch-key"] == ingest[1]["dispatch-key"] and len(ingest[0]) <= 10
