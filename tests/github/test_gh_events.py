"""Event payloads: every real webhook payload in the shared corpus reads cleanly; malformed files get
located messages, never tracebacks."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings as hsettings, strategies as st

from ci_tools.errors import InputError
from ci_tools.github.events import load_event, parse_event


@pytest.mark.parametrize("kind", ["pull_request", "issue_comment", "pull_request_review", "workflow_run", "push"])
def test_every_corpus_payload_reads(shared, kind):
    files = sorted((shared / "corpus" / "github-webhooks" / kind).glob("*.json"))
    assert files
    for f in files:
        ev = load_event(f, kind)
        assert ev.name == kind and ev.repo
        if kind in ("pull_request", "pull_request_review"):
            assert ev.pull_request.number and len(ev.pull_request.head_sha) == 40
        if kind == "issue_comment":
            assert ev.comment.id and ev.comment.author
        if kind == "workflow_run":
            assert ev.workflow_run.id
        if kind == "push":
            assert ev.ref.startswith("refs/")


def test_specific_fields(shared):
    hooks = shared / "corpus" / "github-webhooks"
    ev = load_event(hooks / "issue_comment" / "created.payload.json")   # name guessed from the payload
    assert ev.name == "issue_comment" and ev.is_pull_request is False and ev.pr_number is None
    assert ev.comment.association == "OWNER"
    ev = load_event(hooks / "pull_request" / "opened.with-null-body.json")
    assert ev.pull_request.body == "" and ev.action == "opened"
    ev = load_event(hooks / "workflow_run" / "completed.with-pull-requests.payload.json")
    assert ev.workflow_run.pull_requests and ev.workflow_run.status == "completed"
    ev = load_event(hooks / "pull_request_review" / "submitted.payload.json")
    assert ev.comment.kind == "review" and ev.pr_number == ev.pull_request.number


def test_repository_dispatch():
    ev = parse_event({"action": "stage-results-started", "client_payload": {"run-id": "1"},
                      "repository": {"full_name": "o/r"}}, "repository_dispatch")
    assert ev.dispatch_type == "stage-results-started" and ev.client_payload == {"run-id": "1"}


@pytest.mark.parametrize("text,name,message", [
    ("{", None, "x.json:1:2: not valid JSON"),
    ("[]", "push", "top level: not a JSON object"),
    ('{"action": "created", "issue": {"number": 1}}', "issue_comment", "$.comment: missing or not an object"),
    ('{"action": "opened", "pull_request": {"number": 1, "head": {}, "base": {}}}', "pull_request",
     "$.pull_request.head.sha"),
    ('{"ref": "refs/heads/main"}', "push", "$.after"),
    ('{"a": 1}', "schedule", "not one ci-tools handles"),
    ('{"action": "created", "issue": {"number": "1"}, "comment": {}}', "issue_comment", "$.issue.number"),
])
def test_malformed_payloads_get_located_messages(tmp_path, text, name, message):
    f = tmp_path / "x.json"
    f.write_text(text)
    with pytest.raises(InputError) as err:
        load_event(f, name)
    assert message in err.value.message


def test_missing_file_and_no_path(tmp_path, monkeypatch):
    with pytest.raises(InputError, match="not found"):
        load_event(tmp_path / "nope.json", "push")
    monkeypatch.delenv("GITHUB_EVENT_PATH", raising=False)
    with pytest.raises(InputError, match="GITHUB_EVENT_PATH"):
        load_event(None)


@hsettings(max_examples=200, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.sampled_from(
                        ["action", "issue", "comment", "pull_request", "head", "base", "number", "sha", "user",
                         "login", "id", "ref", "after", "workflow_run", "review", "repository"]), c, max_size=5),
                    max_leaves=20),
       st.sampled_from(["pull_request", "issue_comment", "pull_request_review", "workflow_run", "push",
                        "repository_dispatch"]))
def test_event_reader_fuzz_only_raises_input_errors(data, name):
    try:
        parse_event(data, name, "fuzz.json")
    except InputError:
        pass
