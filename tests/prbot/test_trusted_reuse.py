"""A fork PR's trusted sweep (workflow_dispatch of trusted-sweep.yml) as a reuse/staging source (W18):
tables over the verdict (`reuse/verdict.py`), judged by `runs_flow.check_run` / `runs_flow.select_run` with
an in-memory source that records its calls; and the verdict's staged protocol on its own, fact by fact."""

from __future__ import annotations

from dataclasses import replace

from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from ci_tools.github.models import Artifact, Comparison, Job, WorkflowRun, run_from_json
from ci_tools.github.models import LabelEvent, Timeline
from ci_tools.prbot.approval import decide as approval
from ci_tools.prbot.context import PrContext
from ci_tools.prbot.reuse import runs_flow, verdict
from ci_tools.prbot.reuse.measured import InputsCheck
from ci_tools.prbot.reuse.verdict import Kind
from ci_tools.sweep.gate import mode_for
from ci_tools.sweep.load import load_policy

POLICY = load_policy(Path(__file__).resolve().parents[2])
FULL = "full-sweep-fail-fast"
def api_run(data):
    """A run as the adapter hands it to reuse: parsed from the API's JSON."""
    return verdict.sweep_run(run_from_json(data))


A, B, C, OTHER = "a" * 40, "b" * 40, "c" * 40, "d" * 40
SWEEP = ".github/workflows/run-sweep.yml"


def plan_for(*labels):
    """The part of plan.json that says what a run swept, as `ci-tools plan` records it for `labels`."""
    mode = mode_for(labels, POLICY)
    return {"sweep": mode is not None, "reason": "r", "mode": mode.as_dict() if mode else None}


class Source:
    def __init__(self, runs=(), artifacts=None, compares=None, plans=None):
        self.by_id = {r["id"]: r for r in runs}
        self.artifacts_of = artifacts or {}
        self.compares = compares or {}
        self.plans = plans or {}
        self.calls: list[str] = []

    def run_plan(self, run_id):
        self.calls.append(f"plan {run_id}")
        return self.plans.get(run_id, plan_for(FULL))

    def permission(self, login):
        raise AssertionError("not needed")

    def workflow_run(self, run_id):
        self.calls.append(f"run {run_id}")
        return run_from_json(self.by_id[run_id])

    def runs(self, workflow, *, branch, event="pull_request", status="completed"):
        self.calls.append(f"list {workflow} {branch} {event}")
        found = [r for r in self.by_id.values() if r["path"].endswith("/" + workflow) and r["event"] == event
                 and r["head_branch"] == branch and r["status"] == status]
        return iter(run_from_json(r) for r in sorted(found, key=lambda r: r["created_at"], reverse=True))

    def artifacts(self, run_id):
        self.calls.append(f"artifacts {run_id}")
        return [Artifact(id=i, name=n) for i, n in
                enumerate(self.artifacts_of.get(run_id, ("results_bmk", "evals_passed", "changelog-metadata")))]

    def run_jobs(self, run_id):
        self.calls.append(f"jobs {run_id}")
        return []

    def compare(self, base, head):
        self.calls.append(f"compare {base[:1]} {head[:1]}")
        status, files = self.compares.get((base, head), ("diverged", []))
        return Comparison(status, tuple(files))


def trusted(run_id, *, pr=5, sha=A, at="2026-10-01T02:00:00Z", conclusion="success", branch="main",
            title=None, path=verdict.TRUSTED_PATH, status="completed"):
    return {"id": run_id, "event": "workflow_dispatch", "path": path, "status": status, "conclusion": conclusion,
            "head_sha": "f" * 40, "head_branch": branch, "created_at": at, "name": "trusted-sweep",
            "display_title": approval.run_name(pr, sha) if title is None else title,
            "html_url": f"https://x/runs/{run_id}"}


def pr_run(run_id, *, sha=A, at="2026-10-01T01:00:00Z", conclusion="success"):
    return {"id": run_id, "event": "pull_request", "path": SWEEP, "status": "completed", "conclusion": conclusion,
            "head_sha": sha, "head_branch": "fork-branch", "created_at": at, "display_title": "my change",
            "html_url": f"https://x/runs/{run_id}"}


PR = PrContext(number=5, head_sha=B, head_ref="fork-branch", labels=(FULL,), fork=True)
TL = Timeline(label_events=(LabelEvent(FULL, True, "2026-10-01T00:00:00Z"),), commits=(A, B))


# ---- the run name is the record of what a trusted sweep swept --------------------------------------

@pytest.mark.parametrize("title,expected", [
    (approval.run_name(12, A), (12, A)),
    (approval.run_name(12, A.upper()), (12, A)),
    (approval.run_name(12, A[:12]), None),                 # abbreviated: `/sweep approve` writes full SHAs
    (approval.run_name(0, A), None),
    ("trusted sweep of PR #12 at " + A + " (retry)", None),
    ("Trusted sweep of PR #12 at " + A, None),
    ("my change", None),
    ("", None),
])
def test_parse_run_name(title, expected):
    assert approval.parse_run_name(title) == expected


def test_a_trusted_run_reads_its_swept_commit_from_the_run_name():
    run = api_run(trusted(9, sha=A))
    assert (run.head_sha, run.trusted_pr, run.dispatch_sha) == (A, 5, "f" * 40)
    same_title_on_a_pr_run = api_run({**pr_run(9, sha=C), "display_title": approval.run_name(5, A)})
    assert (same_title_on_a_pr_run.head_sha, same_title_on_a_pr_run.trusted_pr) == (C, None)


# ---- check_run: the same rules as pull_request runs, adapted ---------------------------------------

BLOCKER = next(m for m in sorted(POLICY.modifiers) if POLICY.modifiers[m].blocks_reuse)

CHECKS = [
    # name, run, rules, timeline/compare/artifacts overrides, expected (refusal kind, reason substring) (None: usable)
    ("head commit, success", trusted(1, sha=B), verdict.reuse_rules(False), {}, None),
    ("older commit, later commits leave inputs alone", trusted(1, sha=A), verdict.reuse_rules(False),
     dict(compares={(A, B): ("ahead", ["docs/x.md"])}), None),
    ("older commit, later commit changes benchmark inputs", trusted(1, sha=A), verdict.reuse_rules(False),
     dict(compares={(A, B): ("ahead", ["recipes/x.yaml"])}), (Kind.STALE, "change benchmark inputs: recipes/x.yaml")),
    ("another PR's sweep", trusted(1, pr=6, sha=B), verdict.reuse_rules(True), {},
     (Kind.OTHER_PR, "trusted sweep of PR #6 (commit bbbbbbbbbbbb), not of PR #5")),
    ("a SHA that is not in the PR", trusted(1, sha=C), verdict.reuse_rules(True), {},
     (Kind.OTHER_PR, "cccccccccccc is not one of PR #5's commits")),
    ("run name names nothing", trusted(1, title="manual run"), verdict.reuse_rules(True), {},
     (Kind.NOT_A_SWEEP, "does not name a PR and a full commit SHA")),
    ("dispatched from another branch", trusted(1, sha=B, branch="experiment"), verdict.reuse_rules(True), {},
     (Kind.FOREIGN, "ran from branch experiment, not main")),
    ("another workflow dispatched", trusted(1, sha=B, path=".github/workflows/runner-digest.yml"),
     verdict.reuse_rules(True), {}, (Kind.NOT_A_SWEEP, "not .github/workflows/trusted-sweep.yml")),
    ("unpinned failure", trusted(1, sha=B, conclusion="failure"), verdict.reuse_rules(False), {},
     (Kind.FAILED, "concluded 'failure'; reuse needs success")),
    ("pinned failure", trusted(1, sha=B, conclusion="failure"), verdict.reuse_rules(True), {}, None),
    ("pinned cancelled", trusted(1, sha=B, conclusion="cancelled"), verdict.reuse_rules(True), {}, None),
    ("pinned skipped", trusted(1, sha=B, conclusion="skipped"), verdict.reuse_rules(True), {}, (Kind.FAILED, "concluded 'skipped'")),
    ("still running", trusted(1, sha=B, status="in_progress", conclusion=None), verdict.reuse_rules(True), {},
     (Kind.UNFINISHED, "not completed")),
    ("before the full-sweep label", trusted(1, sha=B, at="2026-09-30T00:00:00Z"), verdict.reuse_rules(True), {},
     (Kind.LABELS, "not created while a full-sweep label")),
    ("with a reuse blocker applied", trusted(1, sha=B), verdict.reuse_rules(True),       # removed after the run
     dict(events=(LabelEvent(BLOCKER, True, "2026-10-01T01:00:00Z"), LabelEvent(BLOCKER, False, "2026-10-02T00:00:00Z"))),
     (Kind.LABELS, f"ran with {BLOCKER} applied")),
    ("label history cut short", trusted(1, sha=B), verdict.reuse_rules(True),  # the removal above never listed
     dict(events=(LabelEvent(BLOCKER, True, "2026-10-01T01:00:00Z"),)), (Kind.LABELS, "label history cannot be trusted")),
    ("a label added and never listed", trusted(1, sha=B), verdict.reuse_rules(True),
     dict(pr_labels=(FULL, BLOCKER)), (Kind.LABELS, f"end with {FULL} applied, but the PR has {', '.join(sorted((FULL, BLOCKER)))}")),
    ("expired results", trusted(1, sha=B), verdict.reuse_rules(True), dict(artifacts={1: ("run-stats",)}),
     (Kind.ARTIFACTS, "no unexpired benchmark")),
    ("staging needs changelog metadata", trusted(1, sha=B), verdict.staging_rules(True),
     dict(artifacts={1: ("results_bmk",)}), (Kind.ARTIFACTS, "no unexpired changelog-metadata")),
    ("staging with metadata", trusted(1, sha=B), verdict.staging_rules(True),
     dict(artifacts={1: ("results_bmk", "changelog-metadata")}), None),
    ("a push run is still refused", {**pr_run(1, sha=B), "event": "push"}, verdict.reuse_rules(True), {},
     (Kind.NOT_A_SWEEP, "not a pull_request run or a trusted sweep (push event)")),
    # issue 25, 3: a run is bound to its PR, and judged by what it recorded it swept
    ("this PR's own run", pr_run(1, sha=B), verdict.reuse_rules(True), {}, None),
    ("another PR's run of the same head", {**pr_run(1, sha=B), "head_branch": "other-pr"}, verdict.reuse_rules(True), {},
     (Kind.OTHER_PR, "ran on branch other-pr, not this PR's branch fork-branch")),
    ("another PR's run of a commit both PRs have", {**pr_run(1, sha=A), "head_branch": "other-pr"},
     verdict.reuse_rules(True), dict(compares={(A, B): ("ahead", [])}), (Kind.OTHER_PR, "not this PR's branch")),
    ("another PR's staging run of the same head", {**pr_run(1, sha=B), "head_branch": "other-pr"},
     verdict.staging_rules(True), dict(artifacts={1: ("results_bmk", "changelog-metadata")}), (Kind.OTHER_PR, "not this PR's branch")),
    ("a run GitHub associates with another PR", {**pr_run(1, sha=B), "pull_requests": [{"number": 6}]},
     verdict.reuse_rules(True), {}, (Kind.OTHER_PR, "GitHub associates it with PR #6, not #5")),
    ("its plan was evals-only (the labels read full)", pr_run(1, sha=B), verdict.reuse_rules(True),
     dict(plans={1: plan_for(FULL, "evals-only")}), (Kind.PLAN, "its recorded plan ran with evals-only")),
    ("its plan was trimmed", trusted(1, sha=B), verdict.reuse_rules(True), dict(plans={1: plan_for("sweep-enabled")}),
     (Kind.PLAN, "its recorded plan swept sweep-enabled, which is not a full sweep")),
    ("its plan planned no sweep", pr_run(1, sha=B), verdict.reuse_rules(True),
     dict(plans={1: {"sweep": False, "reason": "no labels", "mode": None}}), (Kind.PLAN, "planned no sweep")),
    ("no recorded plan", pr_run(1, sha=B), verdict.reuse_rules(True), dict(plans={1: None}), (Kind.PLAN, "has no recorded plan")),
    ("no metadata artifact for reuse", pr_run(1, sha=B), verdict.reuse_rules(True),
     dict(artifacts={1: ("results_bmk", "evals_passed")}), (Kind.PLAN, "has no recorded plan")),
    ("staging a run planned with a reuse blocker", trusted(1, sha=B), verdict.staging_rules(True),
     dict(artifacts={1: ("results_bmk", "changelog-metadata")}, plans={1: plan_for(FULL, "agentx-fast")}),
     (Kind.PLAN, "ran with agentx-fast")),
]


@pytest.mark.parametrize("name,data,rules,over,expected", CHECKS, ids=[c[0] for c in CHECKS])
def test_check_trusted_run(name, data, rules, over, expected):
    source = Source(artifacts=over.get("artifacts"), compares=over.get("compares"), plans=over.get("plans"))
    tl = Timeline(label_events=TL.label_events + over.get("events", ()), commits=TL.commits)
    pr = replace(PR, labels=over["pr_labels"]) if "pr_labels" in over else PR
    answer = runs_flow.check_run(api_run(data), rules, pr=pr, timeline=tl, policy=POLICY,
                                 workflow_path=SWEEP, source=source)
    if expected is None:
        assert isinstance(answer, verdict.Usable), answer
    else:
        kind, words = expected
        assert isinstance(answer, verdict.Refusal) and words in answer.why and answer.kind is kind, answer


def test_a_plain_workflow_run_of_a_dispatch_is_checked_by_its_name_too():
    # the verdict is also handed events.WorkflowRun (no run name): it is then not a trusted sweep of anything
    bare = WorkflowRun(id=1, event="workflow_dispatch", path=verdict.TRUSTED_PATH, status="completed",
                       conclusion="success", head_sha=B, created_at="2026-10-01T02:00:00Z")
    answer = runs_flow.check_run(bare, verdict.reuse_rules(True), pr=PR, timeline=TL, policy=POLICY,
                                 workflow_path=SWEEP, source=Source())
    assert isinstance(answer, verdict.Refusal) and "does not name a PR" in answer.why


# ---- the verdict alone: one fact at a time, cheapest first ---------------------------------------

def case_of(run, rules=None, measures_inputs=False):
    return verdict.Case(api_run(run), rules or verdict.reuse_rules(True), PR, TL, POLICY, SWEEP,
                        measures_inputs=measures_inputs)


def test_the_verdict_asks_for_each_fact_once_in_order_of_cost():
    """A failed trusted sweep of an older commit, with a checkout that cannot compare: jobs, what its head
    measured, the comparison, both trees (the comparison lists 300 files), artifacts and, last, the plan."""
    case = case_of(trusted(1, sha=A, conclusion="failure"), measures_inputs=True)
    many = Comparison("ahead", tuple(f"docs/{i}.md" for i in range(verdict.COMPARE_FILE_LIMIT)))
    answers = [(verdict.NeedJobs(1), dict(jobs=(Job("benchmark / b1", "completed", "success"),))),
               (verdict.NeedInputs(A), dict(inputs=InputsCheck(A, B, unknown="no checkout"))),
               (verdict.NeedComparison(A, B), dict(comparison=many)),
               (verdict.NeedTrees(A, B), dict(trees=({"recipes": "t1"}, {"recipes": "t1"}))),
               (verdict.NeedArtifacts(1), dict(artifacts=(Artifact(1, "results_bmk"), Artifact(2, "evals_passed"),
                                                          Artifact(3, "changelog-metadata")))),
               (verdict.NeedPlan(1), dict(plan=plan_for(FULL)))]
    facts = verdict.RunFacts()
    for need, fact in answers:
        assert verdict.judge(case, facts) == need
        facts = replace(facts, **fact)
    usable = verdict.judge(case, facts)
    assert isinstance(usable, verdict.Usable)
    assert usable.notes == ("could not compare what run head `aaaaaaaaaaaa` measured with `bbbbbbbbbbbb`: no checkout",)


def test_a_refusal_asks_for_nothing_past_the_rule_that_refused():
    # the labels refuse before any fact is fetched; a changed folder refuses after the trees, before artifacts
    early = verdict.judge(case_of(trusted(1, sha=B, at="2026-09-30T00:00:00Z")), verdict.RunFacts())
    assert isinstance(early, verdict.Refusal) and early.kind is Kind.LABELS and "not created while" in early.why
    many = Comparison("ahead", tuple(f"docs/{i}.md" for i in range(verdict.COMPARE_FILE_LIMIT)))
    stale = verdict.judge(case_of(trusted(1, sha=A)), verdict.RunFacts(comparison=many, trees=({"recipes": "t1"},
                                                                                                {"recipes": "t2"})))
    assert isinstance(stale, verdict.Refusal) and stale.kind is Kind.STALE and "recipes/ (the comparison" in stale.why


def test_a_checkout_that_compares_decides_instead_of_the_commit_graph():
    case = case_of(trusted(1, sha=C), measures_inputs=True)       # C is not one of the PR's commits
    same = verdict.RunFacts(inputs=InputsCheck(C, B))
    assert verdict.judge(case, same) == verdict.Refusal(Kind.OTHER_PR, "its head commit cccccccccccc is not one of "
                                                                       "PR #5's commits")
    changed = verdict.judge(case, verdict.RunFacts(inputs=InputsCheck(C, B, changed=("recipes/x.yaml changed",))))
    assert isinstance(changed, verdict.Refusal) and changed.kind is Kind.STALE and "recipes/x.yaml changed" in changed.why


# ---- select_run: where trusted runs are looked for ---------------------------------------------

def select(source, pr=PR, pinned=None, rules=None):
    return runs_flow.select_run(rules or verdict.reuse_rules(pinned is not None), pinned=pinned, pr=pr, timeline=TL,
                                policy=POLICY, workflow="run-sweep.yml", source=source)


def test_unpinned_fork_picks_the_newest_usable_run_of_either_kind():
    runs = [pr_run(1, sha=B, at="2026-10-01T01:00:00Z"),                       # no GPU results on a fork's PR run
            trusted(2, sha=A, at="2026-10-01T02:00:00Z"),
            trusted(3, sha=B, at="2026-10-01T04:00:00Z", conclusion="failure"),
            trusted(4, pr=6, sha=B, at="2026-10-01T05:00:00Z"),                # another PR's: skipped unexamined
            trusted(5, sha=B, at="2026-10-01T03:00:00Z")]
    source = Source(runs, artifacts={1: ("run-stats",)})
    sel = select(source)
    assert sel.run.id == 5 and sel.run.head_sha == B and sel.run.trusted_pr == 5
    # a failed run is judged by its jobs only when no green run is usable: here it never is
    assert sel.rejected == () and "jobs 3" not in source.calls
    assert "artifacts 4" not in source.calls and "artifacts 2" not in source.calls


def test_same_repo_prs_never_list_trusted_runs():
    source = Source([pr_run(1, sha=B), trusted(2, sha=B, at="2026-10-01T09:00:00Z")])
    sel = select(source, pr=PrContext(number=5, head_sha=B, head_ref="fork-branch", labels=(FULL,)))
    assert sel.run.id == 1
    assert [c for c in source.calls if c.startswith("list")] == ["list run-sweep.yml fork-branch pull_request"]


def test_pinned_trusted_run_is_fetched_by_id_for_any_pr():
    source = Source([trusted(7, sha=A)], compares={(A, B): ("ahead", [])})
    sel = select(source, pr=PrContext(number=5, head_sha=B, head_ref="x", labels=(FULL,)), pinned=7)
    assert sel.run.id == 7 and source.calls[0] == "run 7" and not any(c.startswith("list") for c in source.calls)


def test_fork_without_usable_runs_says_where_it_looked():
    sel = select(Source([trusted(4, pr=6, sha=B)]))
    assert sel.run is None
    assert "no completed pull_request runs on the PR branch and no completed trusted sweeps of PR #5" in sel.error


def test_listing_other_prs_trusted_runs_is_bounded():
    runs = [trusted(i, pr=6, sha=B, at=f"2026-10-01T{i // 60:02d}:{i % 60:02d}:00Z") for i in range(1, 400)]
    runs.append(trusted(999, sha=B, at="2026-10-01T00:00:30Z"))   # the oldest, past the bound
    sel = select(Source(runs))
    assert sel.run is None


# ---- the run-name parser, fuzzed ------------------------------------------------------------------

@settings(max_examples=200, deadline=None)
@given(pr=st.integers(1, 10**9), sha=st.text("0123456789abcdefABCDEF", min_size=40, max_size=40),
       junk=st.text(max_size=60))
def test_run_name_round_trips_and_junk_never_raises(pr, sha, junk):
    assert approval.parse_run_name(approval.run_name(pr, sha)) == (pr, sha.lower())
    parsed = approval.parse_run_name(junk)
    assert parsed is None or approval.run_name(*parsed).lower() == junk.lower()
    if junk:
        assert approval.parse_run_name(approval.run_name(pr, sha) + junk) is None   # a whole run name only
