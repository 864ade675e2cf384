"""The policy file against its schema, and the label helpers the CLI uses for typed labels."""

import json

import pytest
import yaml
from hypothesis import given, settings, strategies as st

from ci_tools.errors import InputError
from ci_tools.sweep.event import event_from_payload
from ci_tools.sweep.gate import GateEvent, decide
from ci_tools.sweep.labels import policy_from_data
from ci_tools.sweep.load import load_policy


def test_shipped_policy_matches_its_schema(repo_root):
    import jsonschema

    schema = json.loads((repo_root / "ci_tools" / "schemas" / "ci-policy.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    data = yaml.safe_load((repo_root / "inferencex-e2e" / "ci-policy.yaml").read_text())
    jsonschema.Draft202012Validator(schema).validate(data)
    bad = json.loads(json.dumps(data))
    bad["labels"]["primary"]["full-sweep-enabled"]["scope"] = "everything"
    assert list(jsonschema.Draft202012Validator(schema).iter_errors(bad))


def test_policy_estimates(repo_root):
    p = load_policy(repo_root)
    assert p.agentx_profiles == {"default": 3600, "fast": 1200}
    assert (p.fixed_seq_seconds, p.eval_seconds) == (900, 1800)
    assert p.recommended() == "full-sweep-fail-fast"


def test_unknown_labels_are_named_with_the_known_ones(repo_root):
    p = load_policy(repo_root)
    assert p.unknown_note(["full-sweep-fail-fast", "all-evals"]) is None
    msg = p.unknown_note(["full-sweep-fail-fast", "wip", "evals-onyl"])
    assert msg.startswith("label(s) evals-onyl (did you mean evals-only?), wip are not sweep labels")
    assert "ignores them as CI does" in msg and all(name in msg for name in p.relevant())
    # the priority labels are read by the plan (sweep/priority.py), so they are not "ignored"
    assert p.unknown_note(["full-sweep-fail-fast", "skip_queue", "ci-checklist-complete"]) is None


def test_malformed_policy_file_is_a_clean_error(tmp_path):
    (tmp_path / "inferencex-e2e").mkdir()
    (tmp_path / "inferencex-e2e" / "ci-policy.yaml").write_text("labels:\n  primary:\n    x: {scope: full}\n")
    with pytest.raises(InputError, match="malformed policy file"):
        load_policy(tmp_path)


def test_policy_without_estimates_uses_defaults():
    p = policy_from_data({"labels": {"primary": {"a": {"scope": "full", "canary": True, "fail-fast": False,
                                                       "reusable": True}}}})
    assert p.agentx_profiles["fast"] == 1200 and p.relevant() == {"a"}


POLICY = load_policy(__import__("pathlib").Path(__file__).resolve().parents[2])
json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                           lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=8), c, max_size=4),
                           max_leaves=20)
pr_like = st.fixed_dictionaries({
    "action": st.one_of(st.sampled_from(["labeled", "unlabeled", "synchronize", "closed"]), json_values),
    "pull_request": st.one_of(json_values, st.fixed_dictionaries({
        "labels": st.one_of(json_values, st.lists(st.fixed_dictionaries({"name": st.one_of(st.text(), json_values)}))),
        "draft": json_values,
        "head": st.one_of(json_values, st.fixed_dictionaries({"sha": json_values, "repo": json_values})),
        "base": json_values, "number": json_values})),
    "label": json_values,
})


@settings(max_examples=200, deadline=None)
@given(payload=st.one_of(json_values, pr_like), name=st.sampled_from([None, "pull_request", "push", "workflow_run"]))
def test_event_extractor_never_crashes(payload, name):
    """Any JSON a file could hold becomes a GateEvent or a clean InputError naming the file."""
    policy = POLICY
    try:
        ev, _ = event_from_payload(payload, name, file="e.json")
    except InputError as exc:
        assert exc.message.startswith("e.json")
        return
    assert isinstance(ev, GateEvent)
    d = decide(ev, policy)
    assert d.reason and d.concurrency_group.startswith("sweep-")
