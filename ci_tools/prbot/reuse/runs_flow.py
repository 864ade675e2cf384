"""The runs reuse and staging may use: each judged by the pure verdict (`reuse/verdict.py`) with the
facts it asks for fetched here, the run chosen among a PR's, and the merge's reuse decision.

`judge_run` is the loop: the verdict answers, or names the one fact it needs next; the fact is fetched
(the client caches what it read, so nothing is fetched twice in a process) and the verdict is asked
again. Facts come in the order the verdict asks for them, cheapest first, so a run refused by its
labels costs no request, and the plan download comes last. `ci_tools.github.GitHub` is a `Source`;
the tests also pass in-memory ones that count their calls.
"""

from __future__ import annotations

import heapq
from dataclasses import replace
from datetime import datetime
from typing import Callable, Iterable, Iterator, Protocol, assert_never

from ci_tools import names
from ci_tools.github.models import Artifact, Comparison, Job, Timeline, WorkflowRun
from ci_tools.prbot.context import PrContext
from ci_tools.prbot.reuse import decide, verdict
from ci_tools.prbot.reuse.measured import InputsCheck
from ci_tools.prbot.reuse.verdict import Case, Refusal, Rules, RunFacts, Selection, SweepRun, Usable
from ci_tools.sweep.labels import Policy


class Source(Protocol):
    """The calls the verdict's facts take (and the run list `select_run` reads)."""

    def workflow_run(self, run_id: int) -> WorkflowRun: ...
    def runs(self, workflow: str, *, branch: str, event: str = ..., status: str = ...) -> Iterable[WorkflowRun]: ...
    def artifacts(self, run_id: int) -> list[Artifact]: ...
    def run_plan(self, run_id: int) -> dict | None: ...
    def compare(self, base: str, head: str) -> Comparison: ...
    def top_level_tree(self, sha: str) -> dict[str, str]: ...
    def run_jobs(self, run_id: int) -> list[Job]: ...


# Compares what a run's head measured with the commit to publish (`reuse/shell.py` reads git).
InputsOf = Callable[[str], InputsCheck]


def fetch_run(source: Source, run_id: int) -> WorkflowRun | None:
    """The run, or None when GitHub says there is no such run (404) in this repository."""
    from ci_tools.github.client import GitHubError

    try:
        return source.workflow_run(run_id)
    except GitHubError as exc:   # only "no such run" is an answer, not a failure
        if exc.status == 404:
            return None
        raise


def _fetch(need: verdict.Need, facts: RunFacts, source: Source, inputs: InputsOf | None) -> RunFacts:
    if isinstance(need, verdict.NeedJobs):
        return replace(facts, jobs=tuple(source.run_jobs(need.run_id)))
    if isinstance(need, verdict.NeedInputs):
        return replace(facts, inputs=inputs(need.head_sha) if inputs is not None else None)
    if isinstance(need, verdict.NeedComparison):
        return replace(facts, comparison=source.compare(need.base, need.head))
    if isinstance(need, verdict.NeedTrees):
        return replace(facts, trees=(source.top_level_tree(need.base), source.top_level_tree(need.head)))
    if isinstance(need, verdict.NeedArtifacts):
        return replace(facts, artifacts=tuple(source.artifacts(need.run_id)))
    if isinstance(need, verdict.NeedPlan):
        return replace(facts, plan=source.run_plan(need.run_id))
    assert_never(need)


# every kind of fact at most once, and the answer: the verdict never asks for a fact it was given
_MAX_ASKS = 7


def judge_run(case: Case, source: Source, inputs: InputsOf | None = None) -> Usable | Refusal:
    """The verdict on one run, fetching each fact it asks for."""
    facts = RunFacts()
    for _ in range(_MAX_ASKS):
        answer = verdict.judge(case, facts)
        if isinstance(answer, (Usable, Refusal)):
            return answer
        facts = _fetch(answer, facts, source, inputs)
    raise RuntimeError(f"the reuse verdict on run {case.run.id} kept asking for facts it was given")


def check_run(run: WorkflowRun, rules: Rules, *, pr: PrContext, timeline: Timeline, policy: Policy,
              workflow_path: str, source: Source, inputs: InputsOf | None = None) -> Usable | Refusal:
    """`judge_run` of `run` under `rules` for `pr`."""
    case = Case(run, rules, pr, timeline, policy, workflow_path, measures_inputs=inputs is not None)
    return judge_run(case, source, inputs)


def _trusted_runs_of(runs: Iterable[WorkflowRun], pr: int, max_listed: int) -> Iterator[WorkflowRun]:
    """Trusted sweeps named for `pr` only: other PRs' runs share the default branch and are skipped
    unexamined (a bounded number of them, so a busy repository cannot page without end)."""
    from ci_tools.prbot.approval.decide import parse_run_name

    for listed, run in enumerate(runs):
        if listed >= max_listed:
            return
        named = parse_run_name(run.display_title)
        if named is not None and named[0] == pr:
            yield run


def _newest(run: WorkflowRun) -> float:
    return -verdict.order(run.created_at)


def select_run(rules: Rules, *, pinned: int | None, pr: PrContext, timeline: Timeline, policy: Policy,
               workflow: str, source: Source, max_examined: int = 30, inputs: InputsOf | None = None) -> Selection:
    """The pinned run if usable, else the newest usable completed run of the sweep on the PR branch."""
    path = verdict.workflow_path(workflow)

    def judged(run: SweepRun) -> Usable | Refusal:
        return check_run(run, rules, pr=pr, timeline=timeline, policy=policy, workflow_path=path, source=source,
                         inputs=inputs)

    if pinned is not None:
        data = fetch_run(source, pinned)
        if data is None:
            return Selection(None, f"run {pinned} cannot be used for {rules.name}, because no such run exists "
                                   "in this repository.")
        run = verdict.sweep_run(data)
        answer = judged(run)
        if isinstance(answer, Refusal):
            return Selection(None, f"run {pinned} cannot be used for {rules.name}, because {answer.why}.")
        return Selection(run, notes=answer.notes)
    rejected: list[str] = []
    candidates: Iterator[WorkflowRun] = iter(source.runs(path.rsplit("/", 1)[-1], branch=pr.head_ref))
    if pr.fork:
        trusted = _trusted_runs_of(source.runs(names.TRUSTED_WORKFLOW, branch=pr.trusted_branch,
                                               event="workflow_dispatch"), pr.number, 10 * max_examined)
        # the fork's own pull_request runs are listed too, only to say why each was refused
        candidates = heapq.merge(candidates, trusted, key=_newest)
    later: list[SweepRun] = []

    def in_order() -> Iterator[SweepRun]:
        """Green runs first, as listed (lazily: page by page); then the deferred failed or cancelled ones."""
        for examined, data in enumerate(candidates):
            if examined >= max_examined:
                break
            run = verdict.sweep_run(data)
            if verdict.deferred(rules, run):
                later.append(run)
            else:
                yield run
        yield from later

    for run in in_order():
        answer = judged(run)
        if isinstance(answer, Usable):
            return Selection(run, rejected=tuple(rejected), notes=answer.notes)
        rejected.append(f"run {run.id}: {answer.why}")
    return verdict.none_usable(rules, pr, rejected)


def decide_merge(pr: PrContext, auth: decide.Authorisation, *, timeline: Timeline, policy: Policy, workflow: str,
                 source: Source, inputs: InputsOf | None = None, now: datetime | None = None) -> decide.ReuseDecision:
    """Main side, for the single PR a pushed commit belongs to (`decide.merge_refusal`, then the run
    `select_run` chooses under the reuse rules, `decide.merge_decision`)."""
    early = decide.merge_refusal(pr, auth, policy)
    if early is not None:
        return early
    sel = select_run(verdict.reuse_rules(auth.pinned_run is not None, policy.reuse.optional_jobs, now),
                     pinned=auth.pinned_run, pr=pr, timeline=timeline, policy=policy, workflow=workflow,
                     source=source, inputs=inputs)
    return decide.merge_decision(pr, auth, policy, sel)


def pushed_inputs(source: Source, before: str, after: str) -> list[str]:
    """Benchmark inputs a push from `before` to `after` changed, by GitHub's comparison (and, when it
    lists COMPARE_FILE_LIMIT files, by the two commits' top-level trees)."""
    diff = source.compare(before, after)
    changed = verdict.changed_inputs(diff)
    if changed is None:
        changed = verdict.changed_inputs(diff, (source.top_level_tree(before), source.top_level_tree(after)))
    return changed or []
