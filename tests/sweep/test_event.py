"""The payload extractor over real webhook payloads (octokit/webhooks examples in ../shared)."""

import copy
import json

import pytest

from ci_tools.errors import InputError
from ci_tools.sweep.event import event_from_payload
from ci_tools.sweep.gate import decide
from ci_tools.sweep.load import load_policy


def load(shared, name):
    return json.loads((shared / "corpus" / "github-webhooks" / name).read_text())


def test_labeled_same_repo(shared):
    ev, base = event_from_payload(load(shared, "pull_request/labeled.payload.json"), run_id="5")
    assert (ev.name, ev.action, ev.label, ev.labels, ev.draft, ev.fork) == (
        "pull_request", "labeled", "bug", ("bug",), False, False)
    assert ev.pr_number == 2 and ev.sha == "ec26c3e57ca3a959ca5aad62de7213c562f8c821" and base


def test_irrelevant_label_on_real_payload_restarts_nothing(shared, repo_root):
    ev, _ = event_from_payload(load(shared, "pull_request/labeled.payload.json"), run_id="5")
    d = decide(ev, load_policy(repo_root))
    assert not d.sweep and not d.check and not d.restarts and d.concurrency_group == "sweep-2-5"


def test_relevant_label_on_real_payload(shared, repo_root):
    p = load(shared, "pull_request/labeled.payload.json")
    p["label"]["name"] = "full-sweep-fail-fast"
    p["pull_request"]["labels"].append({"name": "full-sweep-fail-fast"})
    ev, _ = event_from_payload(p)
    d = decide(ev, load_policy(repo_root), appends_entry=True)
    assert d.sweep and d.concurrency_group == "sweep-2-active"


def test_fork_and_draft(shared, repo_root):
    p = load(shared, "pull_request/synchronize.payload.json")
    p["pull_request"]["head"]["repo"]["full_name"] = "someone/Hello-World"
    assert event_from_payload(p)[0].fork
    p["pull_request"]["head"]["repo"] = None   # deleted fork
    assert event_from_payload(p)[0].fork
    d = load(shared, "pull_request/converted_to_draft.payload.json")
    ev, _ = event_from_payload(d)
    assert ev.action == "converted_to_draft"


def test_draft_flag(shared):
    p = load(shared, "pull_request/synchronize.payload.json")
    p["pull_request"]["draft"] = True
    assert event_from_payload(p)[0].draft


def test_push(shared):
    p = load(shared, "push/1.payload.json")
    ev, before = event_from_payload(p)
    assert ev.name == "push" and ev.sha == p["after"] and before == p["before"]
    assert ev.head_message == (p.get("head_commit") or {}).get("message")


def test_other_events_are_named(shared):
    ev, _ = event_from_payload(load(shared, "issue_comment/created.payload.json"), "issue_comment")
    assert ev.name == "issue_comment"


@pytest.mark.parametrize("mutate, message", [
    (lambda p: p["pull_request"].__setitem__("labels", "bug"), "pull_request.labels"),
    (lambda p: p["pull_request"]["labels"].append({"id": 3}), r"labels\[1\].name"),
    (lambda p: p["pull_request"]["head"].pop("sha"), "pull_request.head.sha"),
    (lambda p: p.pop("action"), "`action` is missing"),
    (lambda p: p["pull_request"].__setitem__("draft", "yes"), "pull_request.draft"),
])
def test_malformed_payloads_name_the_file_and_field(shared, mutate, message):
    p = copy.deepcopy(load(shared, "pull_request/labeled.payload.json"))
    mutate(p)
    with pytest.raises(InputError, match=message) as exc:
        event_from_payload(p, file="ev.json")
    assert exc.value.message.startswith("ev.json: malformed event payload")


@pytest.mark.parametrize("payload", [[], "x", {"zen": "hi"}])
def test_not_an_event(payload):
    with pytest.raises(InputError, match="ev.json"):
        event_from_payload(payload, file="ev.json")
