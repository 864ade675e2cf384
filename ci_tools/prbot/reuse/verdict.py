"""Whether one sweep run may be reused (or staged) for a PR: a pure verdict, asked again as facts arrive.

`judge(case, facts)` answers `Usable`, a `Refusal` (its `kind` says which rule refused, `why` says it
to a reader) or the one fact it needs next (a `Need`). It asks over what the run and the PR already
say first (the event, workflow, repository and branch, the conclusion, the label history), then, one
at a time and only while the answer still depends on it, for the run's jobs (a failed or cancelled
run), what its head measured (git, `reuse/shell.py`), the comparison of its head with the PR's head,
both commits' top-level trees (a comparison that lists 300 files), its artifacts and, last, the plan
it recorded (the one download). The flow (`runs_flow.judge_run`) fetches each fact and asks again,
so a decision costs the requests it cost when the rules fetched for themselves, in the same order, and
every rule is a table of plain facts in the tests.

Differences from InferenceX's `find_reusable_sweep_run.py`, each fixing a listed weakness:
- W2: the run must have been created while a full-sweep label (and no reuse-blocking modifier) was
  applied, read from the label history.
- W1: no commit after the run's head may touch benchmark inputs (`inferencex-e2e/`, `recipes/`),
  else reuse is refused naming the files.
- W13/W25: retries live in the adapter; commits and artifacts are fetched at most once.
- Evals: a run whose eval rows failed or did not run is refused, read from its eval verdict artifact
  (`ci_tools.evals.gate.reuse_problem`; the seed PR's "all green with evals passing").
- W18: a fork PR's trusted sweep (`/sweep approve <sha>`, a workflow_dispatch run of
  `trusted-sweep.yml` named for the PR and SHA) counts like a pull_request run of the sweep, under the
  same label, commit, staleness and artifact rules. Its swept commit is the SHA in the run name (the
  run's own `head_sha` is the default-branch commit the workflow ran from).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, fields, replace
from datetime import datetime
from typing import Iterable, Mapping

from ci_tools import names
from ci_tools.evals import gate as eval_gate
from ci_tools.github.models import Artifact, Comparison, Job, LabelEvent, Timeline, WorkflowRun
from ci_tools.github.models import timestamp as ts
from ci_tools.prbot.approval import decide as approval
from ci_tools.prbot.context import PrContext
from ci_tools.prbot.reuse import jobs as job_rules
from ci_tools.prbot.reuse.measured import InputsCheck
from ci_tools.sweep.labels import DEFAULT_OPTIONAL_JOBS, Policy

# A reusable run has its run-level collection (named once, in ci_tools.names) or, for runs
# made by InferenceX's workflows before the switch, their eval collection or an AgentX result.
RESULT_ARTIFACTS = frozenset({names.COLLECTION_ARTIFACT, "eval_results_all"})
RESULT_ARTIFACT_PREFIX = "bmk_agentic_"
TRUSTED_PATH = f"{names.WORKFLOWS_DIR}/{names.TRUSTED_WORKFLOW}"
# GitHub's comparison lists at most this many files (the rest are silently left out).
COMPARE_FILE_LIMIT = 300


def workflow_path(workflow: str) -> str:
    return workflow if workflow.startswith(".github/") else f".github/workflows/{workflow}"


def order(value: str | None) -> float:
    """A GitHub time as a number to sort by; an unreadable one sorts first."""
    t = ts(value)
    return t.timestamp() if t else float("-inf")


# ---- what makes a run usable --------------------------------------------------------------------

@dataclass(frozen=True)
class Rules:
    """What makes a run usable. Reuse and staging differ only in these."""

    name: str                                   # "reuse" | "staging"
    conclusions: frozenset[str]
    need_changelog_metadata: bool = False
    allow_historical_association: bool = False  # pinned runs associated via run.pull_requests
    refuse_stale: bool = True                   # W1: refuse if later commits touch benchmark inputs
    # reuse: a failed or cancelled run is judged by its jobs (reuse/jobs.py); these families may fail
    optional_jobs: tuple[str, ...] | None = None
    pinned: bool = False
    now: datetime | None = None                 # artifacts past `expires_at` then count as expired


def reuse_rules(pinned: bool, optional_jobs: tuple[str, ...] = DEFAULT_OPTIONAL_JOBS,
                now: datetime | None = None) -> Rules:
    return Rules("reuse", frozenset({"success", "failure", "cancelled"}), optional_jobs=tuple(optional_jobs),
                 pinned=pinned, now=now)


def staging_rules(pinned: bool) -> Rules:
    return Rules("staging", frozenset({"success", "failure", "cancelled"}), need_changelog_metadata=True,
                 allow_historical_association=pinned, refuse_stale=False)


@dataclass(frozen=True)
class SweepRun(WorkflowRun):
    """A run as reuse sees it. For a trusted sweep `head_sha` is the swept PR commit named in the run
    name, `trusted_pr` the PR, and `dispatch_sha` the default-branch commit the workflow ran from."""

    trusted_pr: int | None = None
    dispatch_sha: str = ""


def _as_sweep_run(run: WorkflowRun) -> SweepRun:
    """`run` as a SweepRun that names nothing (a run handed over without its run name read)."""
    if isinstance(run, SweepRun):
        return run
    return SweepRun(**{f.name: getattr(run, f.name) for f in fields(WorkflowRun)})


def sweep_run(base: WorkflowRun) -> SweepRun:
    """`base` with the swept commit in place for a trusted sweep named as `approval.run_name` writes it."""
    named = approval.parse_run_name(base.display_title) if base.event == "workflow_dispatch" else None
    run = _as_sweep_run(base)
    if named is None:
        return run
    return replace(run, trusted_pr=named[0], head_sha=named[1], dispatch_sha=base.head_sha)


class Kind(enum.Enum):
    """Which rule refused a run."""

    NOT_A_SWEEP = "not a sweep"          # another event or workflow, a run without a head commit
    FOREIGN = "foreign"                  # another repository's run or commit, a fork PR's own run
    OTHER_PR = "other PR"                # another PR's sweep, a commit that is not the PR's
    UNFINISHED = "unfinished"            # still queued or running
    FAILED = "failed"                    # a conclusion the rules refuse, required jobs that did not succeed
    LABELS = "labels"                    # not swept under a full-sweep label, or the label history is cut short
    STALE = "stale"                      # what it measured changed since, or its head was force-pushed away
    ARTIFACTS = "artifacts"              # its results (or, for staging, its changelog metadata) are gone
    EVALS = "evals"                      # its eval rows did not pass
    PLAN = "plan"                        # the plan it recorded is no reusable full sweep


@dataclass(frozen=True)
class Refusal:
    kind: Kind
    why: str                             # "it ...", to follow "run N cannot be used, because"


@dataclass(frozen=True)
class Usable:
    notes: tuple[str, ...] = ()          # what the card says of it: optional jobs that failed, its inputs check


# ---- the facts a verdict may need, one at a time ------------------------------------------------

@dataclass(frozen=True)
class NeedJobs:
    """The jobs of the run's latest attempt (a failed or cancelled run is judged by them)."""

    run_id: int


@dataclass(frozen=True)
class NeedInputs:
    """What the run's head measured, against the commit to publish (git)."""

    head_sha: str


@dataclass(frozen=True)
class NeedComparison:
    base: str
    head: str


@dataclass(frozen=True)
class NeedTrees:
    """The top-level trees of both commits (a comparison that may have left files out)."""

    base: str
    head: str


@dataclass(frozen=True)
class NeedArtifacts:
    run_id: int


@dataclass(frozen=True)
class NeedPlan:
    """The plan the run recorded when it started (the one download)."""

    run_id: int


Need = NeedJobs | NeedInputs | NeedComparison | NeedTrees | NeedArtifacts | NeedPlan


class Unasked(enum.Enum):
    """A fact whose answer may itself be None, not asked for yet."""

    UNASKED = "unasked"


UNASKED = Unasked.UNASKED


@dataclass(frozen=True)
class RunFacts:
    """What the flow fetched for one run so far (None and UNASKED: not yet)."""

    jobs: tuple[Job, ...] | None = None
    inputs: InputsCheck | None | Unasked = UNASKED          # None: no checkout can compare
    comparison: Comparison | None = None
    trees: tuple[Mapping[str, str], Mapping[str, str]] | None = None
    artifacts: tuple[Artifact, ...] | None = None
    plan: dict | None | Unasked = UNASKED                   # None: the run recorded no plan


@dataclass(frozen=True)
class Case:
    """One run judged for one PR: everything the verdict knows without asking."""

    run: WorkflowRun
    rules: Rules
    pr: PrContext
    timeline: Timeline
    policy: Policy
    workflow_path: str
    measures_inputs: bool = False        # a checkout can say what the run's head measured (`NeedInputs`)


def judge(case: Case, facts: RunFacts) -> Usable | Refusal | Need:
    """The verdict on `case.run` given `facts`, or the next fact it needs. Cheap checks come first.

    With `measures_inputs` (reuse only), what the run's head measured is compared with the commit to
    publish: when that can be answered, a rebase or force-push that left the selected master entries and
    recipes as they were keeps the run, and a change to them refuses it naming the file, whatever the
    commit graph says."""
    notes: list[str] = []
    for stage in (_identity, _outcome, _labels, _commits, _artifacts):
        answer = stage(case, facts, notes)
        if answer is not None:
            return answer
    return Usable(tuple(notes))


Answer = Refusal | Need | None


def _identity(case: Case, facts: RunFacts, notes: list[str]) -> Answer:
    """A sweep of this repository, of this PR."""
    run, pr = _as_sweep_run(case.run), case.pr
    trusted = run.event == "workflow_dispatch"
    if run.event != "pull_request" and not trusted:
        return Refusal(Kind.NOT_A_SWEEP,
                       f"it is not a pull_request run or a trusted sweep ({run.event or 'unknown'} event)")
    refused = origin_problem(run, pr)
    if refused:
        return refused
    expected = TRUSTED_PATH if trusted else case.workflow_path
    if run.path and run.path.split("@")[0] != expected:
        return Refusal(Kind.NOT_A_SWEEP, f"it is a run of {run.path}, not {expected}")
    refused = pr_binding_problem(run, pr)
    if refused:
        return refused
    return trusted_problem(run, pr) if trusted else None


def _judged_by_jobs(case: Case) -> bool:
    return case.rules.optional_jobs is not None and case.run.conclusion != "success"


def _job_verdict(case: Case, jobs: Iterable[Job]) -> job_rules.JobVerdict:
    return job_rules.verdict(jobs, case.rules.optional_jobs or ())


def _outcome(case: Case, facts: RunFacts, notes: list[str]) -> Answer:
    """Finished, with a conclusion the rules take; a failed or cancelled one by its required jobs."""
    run, rules = case.run, case.rules
    if run.status != "completed":
        return Refusal(Kind.UNFINISHED, f"it is not completed (status {run.status})")
    if run.conclusion not in rules.conclusions:
        return Refusal(Kind.FAILED, f"it concluded {run.conclusion!r}; {rules.name} needs "
                                    f"{' or '.join(sorted(rules.conclusions))}")
    if _judged_by_jobs(case):
        if facts.jobs is None:
            return NeedJobs(run.id)
        verdict = _job_verdict(case, facts.jobs)
        if verdict.required:
            more = f" and {len(verdict.required) - 5} more" if len(verdict.required) > 5 else ""
            return Refusal(Kind.FAILED, f"it concluded {run.conclusion!r} and required job(s) did not succeed: "
                                        f"{', '.join(verdict.required[:5])}{more}")
        if not verdict.listed and not rules.pinned:
            # a pinned run whose jobs cannot be listed is the maintainer's call; an unpinned one is refused
            return Refusal(Kind.FAILED, f"it concluded {run.conclusion!r}; reuse needs success, or a run whose "
                                        "required jobs all succeeded (it lists no jobs)")
        note = verdict.note()
        if note:
            notes.append(f"run {run.id} concluded {run.conclusion!r}: {note}")
    if not run.head_sha:
        return Refusal(Kind.NOT_A_SWEEP, "it has no head commit")
    return None


def _labels(case: Case, facts: RunFacts, notes: list[str]) -> Answer:
    """Created while a full-sweep label, and no reuse blocker, was applied (W2)."""
    events, policy = case.timeline.label_events, case.policy
    why = label_history_problem(events, case.pr.labels, policy)
    if why:
        return Refusal(Kind.LABELS, why)
    at_creation = labels_at(events, case.run.created_at)
    full = set(policy.reusable_primaries())
    if not at_creation & full:
        return Refusal(Kind.LABELS, f"it was not created while a full-sweep label was applied ({', '.join(sorted(full))})")
    blockers = policy.reuse_blockers_in(at_creation)
    if blockers:
        return Refusal(Kind.LABELS, f"it ran with {', '.join(blockers)} applied, which is not a full sweep")
    return None


def _commits(case: Case, facts: RunFacts, notes: list[str]) -> Answer:
    """Its head is one of the PR's commits and nothing it measured changed since (W1)."""
    run, pr, tl = case.run, case.pr, case.timeline
    historical = case.rules.allow_historical_association and pr.number in run.pull_requests
    check: InputsCheck | None = None
    if case.measures_inputs:
        if facts.inputs is UNASKED:
            return NeedInputs(run.head_sha)
        check = facts.inputs
    not_ours = Refusal(Kind.OTHER_PR, f"its head commit {run.head_sha[:12]} is not one of PR #{pr.number}'s commits")
    if check is not None and check.unknown is None:
        if check.changed:
            return Refusal(Kind.STALE, f"what it measured changed: {'; '.join(check.changed)} (its head "
                                       f"{run.head_sha[:12]}, compared with {check.against[:12]}); run a new "
                                       "sweep on the current head")
        if run.head_sha not in tl.commits and run.head_branch != pr.head_ref and not historical:
            return not_ours
        if check.measured != check.against:
            notes.append(check.note())
        return None
    if run.head_sha == pr.head_sha or historical:
        return None
    if check is not None:
        notes.append(check.note())
    if run.head_sha not in tl.commits:
        return not_ours
    if facts.comparison is None:
        return NeedComparison(run.head_sha, pr.head_sha)
    if facts.comparison.status not in ("ahead", "identical"):
        return Refusal(Kind.STALE, f"its head commit {run.head_sha[:12]} is no longer in PR #{pr.number} "
                                   "(force-pushed away); pin a run of a current commit")
    if not case.rules.refuse_stale:
        return None
    stale = changed_inputs(facts.comparison, facts.trees)
    if stale is None:
        return NeedTrees(run.head_sha, pr.head_sha)
    if stale:
        return Refusal(Kind.STALE, f"commits after its head {run.head_sha[:12]} change benchmark inputs: "
                                   f"{', '.join(stale)}; run a new sweep on the current head")
    return None


def _artifacts(case: Case, facts: RunFacts, notes: list[str]) -> Answer:
    """Its results (and, where needed, its changelog metadata) are still there, its evals passed, and
    the plan it recorded is a reusable full sweep: that plan is the one download, so it is asked last."""
    run, rules = case.run, case.rules
    if facts.artifacts is None:
        return NeedArtifacts(run.id)
    present = unexpired_names(facts.artifacts, rules.now)
    if rules.need_changelog_metadata and names.CHANGELOG_METADATA not in present:
        return Refusal(Kind.ARTIFACTS, f"it has no unexpired {names.CHANGELOG_METADATA} artifact")
    if not has_results(present):
        return Refusal(Kind.ARTIFACTS, "it has no unexpired benchmark, eval or agentic result artifact")
    if rules.name == "reuse":
        why = eval_gate.reuse_problem(present)   # its eval rows passed (or it had none)
        if why and _judged_by_jobs(case) and facts.jobs is not None and _job_verdict(case, facts.jobs).optional:
            notes.append("its eval verdict is not a pass and is left out: only optional jobs failed")
        elif why:
            return Refusal(Kind.EVALS, why)
    plan: dict | None = None
    if names.CHANGELOG_METADATA in present:
        if facts.plan is UNASKED:
            return NeedPlan(run.id)
        plan = facts.plan
    why = plan_problem(plan, case.policy)
    return Refusal(Kind.PLAN, why) if why else None


# ---- the rules, each over plain data --------------------------------------------------------------

def origin_problem(run: WorkflowRun, pr: PrContext) -> Refusal | None:
    """None if `run` ran this repository's own workflow files on this repository's commits, else why not.

    A fork PR's `pull_request` run executes the fork's (editable) workflow and can upload anything, so
    for a fork PR only trusted sweeps count; any run must have run in this repository, and a
    same-repository PR's run must have its head here too (a fork's run of the same commit does not)."""
    if not pr.repository:
        return None  # callers that do not know the repository (pure tests of other rules)
    if run.repository != pr.repository:
        return Refusal(Kind.FOREIGN, f"it ran in {run.repository or 'an unnamed repository'}, not {pr.repository}; "
                                     "only this repository's own runs can be a source")
    if run.event == "pull_request" and pr.fork:
        return Refusal(Kind.FOREIGN, "it is the fork's own pull_request run, which executes the fork's workflow files "
                                     "and can upload anything; for a fork PR only a trusted sweep (`/sweep approve "
                                     "<sha>`) can be a source")
    if run.head_repository != pr.repository:
        return Refusal(Kind.FOREIGN, f"its head commit is in {run.head_repository or 'an unnamed repository'}, not "
                                     f"{pr.repository}: another repository's run of the same commit is not this "
                                     "PR's sweep")
    return None


def pr_binding_problem(run: WorkflowRun, pr: PrContext) -> Refusal | None:
    """None if a pull_request run is this PR's own: a run of the same commit on another PR's branch
    (same head SHA, or a commit two PRs share) is that PR's sweep, made under that PR's labels."""
    if run.event != "pull_request":
        return None     # trusted sweeps name their PR in the run name (trusted_problem)
    if pr.head_ref and run.head_branch != pr.head_ref:
        return Refusal(Kind.OTHER_PR, f"it ran on branch {run.head_branch or '(none)'}, not this PR's branch "
                                      f"{pr.head_ref}: it is another PR's sweep, made under that PR's labels")
    if run.pull_requests and pr.number not in run.pull_requests:
        return Refusal(Kind.OTHER_PR, f"GitHub associates it with PR {', '.join(f'#{n}' for n in run.pull_requests)}, "
                                      f"not #{pr.number}")
    return None


def trusted_problem(run: SweepRun, pr: PrContext) -> Refusal | None:
    """None if a workflow_dispatch run is a trusted sweep of `pr` from the default branch, else why not."""
    if run.trusted_pr is None:
        return Refusal(Kind.NOT_A_SWEEP, f"its run name {run.display_title!r} does not name a PR and a full commit "
                                         f"SHA (expected {names.TRUSTED_RUN_NAME!r}), so it is not a trusted sweep")
    if run.trusted_pr != pr.number:
        return Refusal(Kind.OTHER_PR, f"it is a trusted sweep of PR #{run.trusted_pr} (commit {run.head_sha[:12]}), "
                                      f"not of PR #{pr.number}; pin a run of PR #{pr.number}")
    if run.head_branch and pr.trusted_branch and run.head_branch != pr.trusted_branch:
        return Refusal(Kind.FOREIGN, f"it ran from branch {run.head_branch}, not {pr.trusted_branch}; only trusted "
                                     "sweeps dispatched on the default branch count")
    return None


def label_history_problem(events: Iterable[LabelEvent], current: Iterable[str], policy: Policy) -> str | None:
    """None when the timeline's label events, replayed to the end, give the PR's current sweep labels.

    The timeline carries no total and its comment count proves nothing about events after the last
    comment: a page cut short there hides exactly the label events that decide whether a run was a
    full sweep (an `evals-only` added later, a primary removed). The PR's own label list is the check.
    Only the policy's labels are compared: a repository label deleted since leaves no `unlabeled` event.
    """
    applied: set[str] = set()
    for e in sorted(events, key=lambda e: order(e.created_at)):
        (applied.add if e.added else applied.discard)(e.label)
    relevant = policy.relevant()
    replayed, now = applied & relevant, set(current) & relevant
    if replayed == now:
        return None
    return ("its label history cannot be trusted: the timeline's label events end with "
            f"{', '.join(sorted(replayed)) or 'no sweep label'} applied, but the PR has "
            f"{', '.join(sorted(now)) or 'no sweep label'} (a page of the timeline is missing, or a label "
            "changed while it was read); re-run the job")


def labels_at(events: Iterable[LabelEvent], when: str) -> set[str]:
    """Labels applied at time `when`, replaying the label history (events at `when` count)."""
    moment = ts(when)
    applied: set[str] = set()
    if moment is None:
        return applied
    for e in sorted(events, key=lambda e: order(e.created_at)):
        t = ts(e.created_at)
        if t is None or t > moment:
            break
        (applied.add if e.added else applied.discard)(e.label)
    return applied


def unexpired_names(artifacts: Iterable[Artifact], now: datetime | None = None) -> set[str]:
    """Names of the artifacts still downloadable. With `now`, one whose `expires_at` has passed counts as
    expired too: GitHub flips `expired` in the listing later than the download starts answering 410."""
    def alive(a: Artifact) -> bool:
        if a.expired:
            return False
        at = ts(a.expires_at) if now is not None else None
        return at is None or now is None or at > now

    return {a.name for a in artifacts if alive(a)}


def has_results(present: set[str]) -> bool:
    return bool(present & RESULT_ARTIFACTS) or any(n.startswith(RESULT_ARTIFACT_PREFIX) for n in present)


def benchmark_inputs(files: Iterable[str]) -> list[str]:
    return sorted(f for f in files if f.startswith(names.BENCHMARK_INPUT_PREFIXES) or f == names.CHANGELOG)


def changed_inputs(diff: Comparison, trees: tuple[Mapping[str, str], Mapping[str, str]] | None = None
                   ) -> list[str] | None:
    """Benchmark inputs changed between the two commits of `diff`. A comparison listing COMPARE_FILE_LIMIT
    files may have left changes out, so then the two commits' top-level trees decide (`trees`: base's
    and head's; None when that is so and they are not read yet): an input folder whose tree object
    differs has changed."""
    if len(diff.files) < COMPARE_FILE_LIMIT:
        return benchmark_inputs(diff.files)
    if trees is None:
        return None
    before, after = trees
    folders = [p.rstrip("/") for p in names.BENCHMARK_INPUT_PREFIXES]
    return [f"{name}/ (the comparison lists only its first {COMPARE_FILE_LIMIT} files; the folder's tree differs)"
            for name in folders if before.get(name) != after.get(name)]


def plan_problem(plan: dict | None, policy: Policy) -> str | None:
    """None if the run's own recorded plan (`plan.json` of its changelog-metadata artifact, written by
    `ci-tools plan` when it started) is a reusable full sweep. The label history says what the PR
    carried; the plan says what the run actually swept (trimmed, evals-only, a blocker applied)."""
    if plan is None:
        return (f"it has no recorded plan ({names.PLAN_JSON} in its {names.CHANGELOG_METADATA} artifact), so what "
                "it swept cannot be told")
    mode = plan.get("mode")
    if not isinstance(mode, dict):
        return f"its recorded plan has no sweep mode (it planned no sweep: {str(plan.get('reason', ''))[:120]!r})"
    primary, blockers = mode.get("primary"), mode.get("reuse-blockers")
    if primary not in policy.reusable_primaries():
        return f"its recorded plan swept {primary or 'no primary label'}, which is not a full sweep"
    if blockers or mode.get("reusable") is not True:
        shown = ", ".join(map(str, blockers)) if isinstance(blockers, list) and blockers else "a reuse blocker"
        return f"its recorded plan ran with {shown}, which is not a full sweep"
    return None


# ---- a run chosen among the PR's ------------------------------------------------------------------

@dataclass(frozen=True)
class Selection:
    """The run `runs_flow.select_run` chose, or why none."""

    run: SweepRun | None
    error: str | None = None
    rejected: tuple[str, ...] = ()    # "run 123: reason", newest first
    notes: tuple[str, ...] = ()       # about the chosen run: optional jobs that failed, its inputs check


def deferred(rules: Rules, run: WorkflowRun) -> bool:
    """A failed or cancelled run that its jobs may still make usable: examined only when no green run
    is (its jobs cost a request), so the common case costs what it did."""
    return rules.optional_jobs is not None and run.status == "completed" and run.conclusion in ("failure", "cancelled")


def none_usable(rules: Rules, pr: PrContext, rejected: list[str]) -> Selection:
    detail = "; ".join(rejected[:5]) or ("no completed pull_request runs on the PR branch" + (
        f" and no completed trusted sweeps of PR #{pr.number}" if pr.fork else ""))
    return Selection(None, f"PR #{pr.number} has no run usable for {rules.name} ({detail}). "
                           f"Run a full sweep, or pin a run with `/use <run_id>`.", tuple(rejected))
