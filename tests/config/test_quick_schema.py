"""`schemas.is_valid` (the planner's jsonschema-free yes/no) gives jsonschema's verdict, always."""

from __future__ import annotations

import copy
import functools

import yaml
from cfgdata import value_paths as _paths
from hypothesis import HealthCheck, given, settings, strategies as st

from ci_tools.config import schemas


@functools.cache
def _corpus(root: str) -> tuple:
    from pathlib import Path

    base = Path(root) / "corpus" / "inferencex" / "configs"
    entries = []
    for name in ("nvidia-master.yaml", "amd-master.yaml"):
        entries += list(yaml.safe_load((base / name).read_text()).values())
    return tuple(entries), yaml.safe_load((base / "runners.yaml").read_text())


def _ref(entry) -> str:
    return "mnEntry" if isinstance(entry, dict) and entry.get("multinode") is True else "snEntry"


def _jsonschema_ok(name, ref, data) -> bool:
    return not any(True for _ in schemas.validator(name, ref).iter_errors(data))


def test_every_corpus_entry_and_runners_file(shared):
    entries, runners = _corpus(str(shared))
    assert len(entries) == 208
    for e in entries:
        assert schemas.is_valid("master", _ref(e), e) is _jsonschema_ok("master", _ref(e), e)
    assert schemas.is_valid("runners", None, runners) is _jsonschema_ok("runners", None, runners) is True


ODD_VALUES = st.sampled_from([None, True, False, 0, -1, 2.0, 2.5, "", "x", "8", "image:foo", [], [1], {},
                              {"name": "hicache"}, "recipes/a.yaml", 1 << 40, float("nan"), float("inf"), 0.5])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])  # read-only
@given(data=st.data())
def test_mutated_entries_get_the_same_verdict(shared, data):
    entries, _ = _corpus(str(shared))
    entry = copy.deepcopy(data.draw(st.sampled_from(entries)))
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(list(_paths(entry))[1:]))
        parent = entry
        for p in path[:-1]:
            parent = parent[p]
        action = data.draw(st.sampled_from(["set", "delete", "add"]))
        if action == "delete" and isinstance(parent, dict):
            del parent[path[-1]]
        elif action == "add" and isinstance(parent, dict):
            parent[data.draw(st.sampled_from(["extra", "tp", "kv-p2p-transfer", "prefill", "router"]))] = \
                copy.deepcopy(data.draw(ODD_VALUES))
        else:
            # a copy: the sampled [] and {} are shared by every example, and a later mutation inside
            # them would change what the strategy draws (hypothesis: FlakyStrategyDefinition)
            parent[path[-1]] = copy.deepcopy(data.draw(ODD_VALUES))
    assert schemas.is_valid("master", _ref(entry), entry) is _jsonschema_ok("master", _ref(entry), entry)


def test_an_unknown_keyword_means_cannot_tell(monkeypatch):
    monkeypatch.setattr(schemas, "schema", lambda name: {"$defs": {"x": {"type": "object", "dependentRequired": {}}}})
    assert schemas.is_valid("master", "x", {}) is None


def test_the_quick_checker_agrees_on_the_policy_files_evals_section():
    """plan reads `evals:` on its path (issue 13) through the yes/no interpreter: it must agree with
    jsonschema on the shipped section and on broken copies (oneOf, uniqueItems, minProperties)."""
    import copy

    from ci_tools.config import schemas
    from ci_tools.yaml.load import load_yaml_file

    from tests.conftest import REPO

    doc = load_yaml_file(REPO / "inferencex-e2e" / "ci-policy.yaml")
    good = doc.data["evals"]
    broken = []
    for mutate in (lambda e: e.update(concurrencies=[1, 1]), lambda e: e.update(harnesses={}),
                   lambda e: e.update(suites=5), lambda e: e.update(unknown=1)):
        e = copy.deepcopy(good)
        mutate(e)
        broken.append(e)
    for section in [good, *broken]:
        quick = schemas.is_valid("ci-policy", "evals", section)
        full = not schemas.check(doc, section, "ci-policy", "evals", ("evals",))
        assert quick is None or quick == full, section
    assert schemas.is_valid("ci-policy", "evals", good) is True
