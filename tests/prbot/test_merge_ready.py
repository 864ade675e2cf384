"""Issue 23, the pure parts: merge readiness (reuse/ready.py), what a sweep measured (reuse/measured.py),
which jobs matter (reuse/jobs.py) and the policy's `reuse:` section, each as a table."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from ci_tools.github.models import Job, artifact_from_json
from ci_tools.prbot.reuse import jobs, measured, ready
from ci_tools.sweep.buckets import BUCKETS
from ci_tools.sweep.labels import DEFAULT_OPTIONAL_JOBS, policy_from_data
from ci_tools.sweep.load import load_policy

ROOT = Path(__file__).resolve().parents[2]
NOW = datetime(2026, 10, 2, tzinfo=timezone.utc)
CHANGELOG = ("inferencex-e2e/perf-changelog.yaml",)


def facts(**kw) -> ready.Facts:
    base = dict(pr=7, relevant_files=CHANGELOG, reusable_label=True, label_problem=None, authorised=True,
                pin_text="`/use 9` by @maint", run_id=9, run_sha="a" * 40, expires_at=NOW + timedelta(days=60))
    return ready.Facts(**{**base, **kw})


READY = [
    # name, facts, ready, words in the status description, words in the card line
    ("not performance-relevant", facts(relevant_files=(), authorised=False, run_id=None), True,
     "not performance-relevant", "changes no performance-relevant file"),
    ("trimmed label: main sweeps itself", facts(reusable_label=False, authorised=False, run_id=None,
                                                label_problem="the PR has no full-sweep label"), True,
     "main sweeps itself", "Main runs its own sweep after merge"),
    ("no pin, a run to pin", facts(authorised=False, run_id=None, candidate=12), False,
     "comment /use 12", "`/use 12`"),
    ("no pin, nothing green yet", facts(authorised=False, run_id=None), False,
     "wait for a green full sweep", "re-run the whole sweep"),
    ("pin with a blocking modifier", facts(label_problem="the PR carries evals-only, which block reuse"), False,
     "/use is set but the PR carries evals-only", "main would run its own sweep"),
    ("pin refused", facts(run_id=None, refused="run 9 cannot be used for reuse, because x."), False,
     "pin would be refused", "would be refused at merge"),
    ("pin refused, policy fail", facts(run_id=None, refused="r.", main_sweeps_on_refusal=False), False,
     "pin would be refused", "nothing would be published"),
    ("artifacts expire in 5 days", facts(expires_at=NOW + timedelta(days=5)), False,
     "expire 2026-10-07", "Re-run the sweep"),
    ("exactly at the margin", facts(expires_at=NOW + timedelta(days=7)), False, "under 7 days", "in 7 days"),
    ("just past the margin", facts(expires_at=NOW + timedelta(days=7, hours=1)), True, "kept until 2026-10-09",
     "kept until 2026-10-09"),
    ("a smaller margin", facts(expires_at=NOW + timedelta(days=5), margin_days=3), True, "pinned", "Main will reuse run 9"),
    ("expiry unknown", facts(expires_at=None), False, "expiry unknown", "carry no expiry date"),
    ("pinned and alive, with notes", facts(notes=("measured commit `aaa`; unchanged at `bbb`",)), True,
     "run 9 pinned", "Measured commit `aaa`"),
]


@pytest.mark.parametrize("name,f,ok,status,line", READY, ids=[c[0] for c in READY])
def test_readiness(name, f, ok, status, line):
    r = ready.decide(f, NOW)
    assert r.ready is ok and r.state == ("success" if ok else "failure")
    assert status in r.summary and len(r.summary) <= ready.DESCRIPTION_LIMIT
    assert line in r.card_line() and r.card_line().startswith(f"**Ready to merge: {'yes' if ok else 'no'}.**")


def test_a_long_reason_is_cut_to_githubs_status_limit():
    r = ready.decide(facts(run_id=None, refused="x" * 400), NOW)
    assert len(r.summary) == ready.DESCRIPTION_LIMIT and r.summary.endswith("…") and "x" * 400 in r.detail


def test_earliest_expiry_skips_expired_artifacts():
    arts = [artifact_from_json(a) for a in ({"id": 1, "name": "results_bmk", "expires_at": "2026-12-01T00:00:00Z"},
                                            {"id": 2, "name": "run-stats", "expires_at": "2026-11-01T00:00:00Z"},
                                            {"id": 3, "name": "old", "expires_at": "2026-09-01T00:00:00Z", "expired": True})]
    assert ready.earliest_expiry(arts, lambda n: True) == datetime(2026, 11, 1, tzinfo=timezone.utc)
    assert ready.earliest_expiry(arts, lambda n: n == "results_bmk") == datetime(2026, 12, 1, tzinfo=timezone.utc)
    assert ready.earliest_expiry([], lambda n: True) is None


def test_an_artifact_past_its_expiry_is_expired_before_the_listing_says_so():
    from ci_tools.prbot.reuse.verdict import unexpired_names

    arts = [artifact_from_json(a) for a in ({"id": 1, "name": "results_bmk", "expires_at": "2026-10-01T00:00:00Z"},
                                            {"id": 2, "name": "run-stats", "expires_at": "2026-10-03T00:00:00Z"},
                                            {"id": 3, "name": "evals_passed", "expired": True})]
    assert unexpired_names(arts) == {"results_bmk", "run-stats"}
    assert unexpired_names(arts, NOW) == {"run-stats"}


# ---- what a sweep measured ------------------------------------------------------------------------

ENTRY = {"image": "img@sha256:1", "model": "m", "recipe": "recipes/x/a.yaml"}


def m(sha="a" * 40, *, keys=("k",), entry=ENTRY, files=None, appended=({"config-keys": ["k"]},)):
    return measured.measured_from(sha, list(appended), list(keys), {k: entry for k in keys},
                                  {k: "configs/nvidia-master.yaml" for k in keys},
                                  files if files is not None else {"recipes/x/a.yaml": b"v1"})


DIFF = [
    ("identical inputs, other commit", m(), m("b" * 40), []),
    ("key order in the entry does not matter", m(), m("b" * 40, entry=dict(reversed(list(ENTRY.items())))), []),
    ("recipe bytes changed", m(), m("b" * 40, files={"recipes/x/a.yaml": b"v2"}), ["recipes/x/a.yaml changed"]),
    ("master entry changed", m(), m("b" * 40, entry={**ENTRY, "image": "img@sha256:2"}),
     ["configs/nvidia-master.yaml: master entry `k` changed"]),
    ("another recipe referenced", m(), m("b" * 40, files={"recipes/x/b.yaml": b"v1"}),
     ["recipes/x/a.yaml: referenced at `aaaaaaaaaaaa`, not at `bbbbbbbbbbbb`",
      "recipes/x/b.yaml: referenced at `bbbbbbbbbbbb`, not at `aaaaaaaaaaaa`"]),
    ("recipe deleted", m(), m("b" * 40, files={"recipes/x/a.yaml": None}), ["recipes/x/a.yaml: missing at `bbbbbbbbbbbb`"]),
    ("other configs selected", m(), m("b" * 40, keys=("j",)),
     ["inferencex-e2e/perf-changelog.yaml: the appended entries select k at `aaaaaaaaaaaa` but j at `bbbbbbbbbbbb`"]),
    ("same keys, entry text differs", m(), m("b" * 40, appended=({"config-keys": ["k"], "evals-only": True},)),
     ["inferencex-e2e/perf-changelog.yaml: the appended entries differ between `aaaaaaaaaaaa` and `bbbbbbbbbbbb`"]),
]


@pytest.mark.parametrize("name,a,b,expected", DIFF, ids=[c[0] for c in DIFF])
def test_differences(name, a, b, expected):
    assert measured.differences(a, b) == expected
    check = measured.compare(a, b)
    assert check.same is (not expected) and check.changed == tuple(expected)


def test_inputs_check_notes():
    assert "unchanged at `bbbbbbbbbbbb`" in measured.compare(m(), m("b" * 40)).note()
    assert "could not compare" in measured.InputsCheck("a" * 40, "b" * 40, unknown="no clone").note()


# ---- which jobs matter ------------------------------------------------------------------------------

def job(name, conclusion="success", status="completed"):
    return Job(name, status, conclusion)


JOBS = [
    ("all green", [job("sweep / stages / evals / e1"), job("sweep / stages / single-node-1k1k / p")], (), ()),
    ("eval cancelled", [job("sweep / stages / evals / e1", "cancelled"), job("sweep / stages / single-node-1k1k / p")],
     (), ("sweep / stages / evals / e1 (cancelled)",)),
    ("multi-node eval failed", [job("sweep / stages / multi-node-evals / e", "failure")], (),
     ("sweep / stages / multi-node-evals / e (failed)",)),
    ("benchmark cancelled", [job("sweep / stages / single-node-agentic / p", "cancelled")],
     ("sweep / stages / single-node-agentic / p (cancelled)",), ()),
    ("canary failed", [job("sweep / stages / canary / c", "failure")], ("sweep / stages / canary / c (failed)",), ()),
    ("collect failed: outside any family, required", [job("sweep / stages / collect results", "failure")],
     ("sweep / stages / collect results (failed)",), ()),
    ("skipped is fine", [job("sweep / stages / multi-node-1k1k / p", "skipped")], (), ()),
    ("timed out counts as failed", [job("sweep / stages / single-node-8k1k / p", "timed_out")],
     ("sweep / stages / single-node-8k1k / p (failed)",), ()),
]


@pytest.mark.parametrize("name,listed,required,optional", JOBS, ids=[c[0] for c in JOBS])
def test_job_verdict(name, listed, required, optional):
    v = jobs.verdict(listed, DEFAULT_OPTIONAL_JOBS)
    assert (v.required, v.optional, v.usable) == (required, optional, not required)


def test_a_policy_can_make_the_canary_optional_or_evals_required():
    listed = [job("sweep / stages / canary / c", "failure"), job("sweep / stages / evals / e", "cancelled")]
    assert jobs.verdict(listed, ("canary",)).required == ("sweep / stages / evals / e (cancelled)",)
    assert jobs.verdict(listed, ("canary",)).optional == ("sweep / stages / canary / c (failed)",)


# ---- the policy's reuse section ----------------------------------------------------------------------

def test_the_policy_file_sets_the_reuse_section():
    policy = load_policy(ROOT)
    assert (policy.reuse.artifact_margin_days, policy.reuse.on_refused, policy.reuse.optional_jobs) == (
        7, "sweep", DEFAULT_OPTIONAL_JOBS)
    assert "recipes/*" in policy.performance_relevant


def test_a_policy_without_the_section_gets_the_defaults():
    p = policy_from_data({"labels": {"primary": {"a": {"scope": "full", "canary": True, "fail-fast": False,
                                                       "reusable": True}}}})
    assert p.reuse.on_refused == "sweep" and p.reuse.main_sweeps_on_refusal and p.reuse.artifact_margin_days == 7


def test_the_schema_names_exactly_the_families_jobs_belong_to():
    schema = json.loads((ROOT / "ci_tools" / "schemas" / "ci-policy.schema.json").read_text())
    enum = schema["$defs"]["reuse"]["properties"]["optional-jobs"]["items"]["enum"]
    assert set(enum) == {"canary", *BUCKETS}


@pytest.mark.parametrize("section,where", [({"on-refused-reuse": "ignore"}, "on-refused-reuse"),
                                           ({"artifact-margin-days": 90}, "artifact-margin-days"),
                                           ({"optional-jobs": ["evalz"]}, "optional-jobs")])
def test_the_schema_refuses_bad_reuse_settings(section, where):
    import jsonschema

    schema = json.loads((ROOT / "ci_tools" / "schemas" / "ci-policy.schema.json").read_text())
    errors = list(jsonschema.Draft202012Validator(schema["$defs"]["reuse"]).iter_errors(section))
    assert errors and where in "/".join(str(p) for e in errors for p in e.absolute_path)
