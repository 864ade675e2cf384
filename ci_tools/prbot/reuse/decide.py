"""`/use` run pinning: who may authorise reuse, which run is reused, and whether it still may be.

Pure decisions over plain data. The few look-ups a decision may need (a run, a workflow's runs, a
run's artifacts, the files changed since a run) come through a `Source` with exactly those methods,
called lazily and in order of cost, so the common case stays within its REST budget. Runs arrive as
`models.WorkflowRun` (the adapter parsed them); `ci_tools.github.GitHub` is a `Source`, tests also pass
in-memory ones.

Differences from InferenceX's `find_reusable_sweep_run.py`, each fixing a listed weakness:
- W3: the author needs write permission on the repository, read from the collaborator-permission
  endpoint. `author_association` is not used: GitHub reports CONTRIBUTOR for organization members
  whose membership is private, so it would refuse maintainers, and it grants nothing by itself.
- W4: comments created after the PR merged are ignored.
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
  run's own `head_sha` is the default-branch commit the workflow ran from). Trusted runs are listed
  only for fork PRs, so a same-repo PR's merge costs no extra request.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Callable, Iterable, Iterator, Protocol

from ci_tools import names
from ci_tools.evals import gate as eval_gate
from ci_tools.sweep.labels import DEFAULT_OPTIONAL_JOBS, Policy
from ci_tools.prbot import messages, sticky
from ci_tools.prbot.approval import decide as approval
from ci_tools.prbot.commands import WRITE_PERMISSIONS, Use, effective_use, parse
from ci_tools.prbot.context import PrContext
from ci_tools.github.models import Artifact, Comment, Comparison, Job, LabelEvent, Timeline, WorkflowRun
from ci_tools.github.models import timestamp as ts
from ci_tools.prbot.reuse import jobs as job_rules
from ci_tools.prbot.reuse import measured

# A reusable run has its run-level collection (named once, in ci_tools.names) or, for runs
# made by InferenceX's workflows before the switch, their eval collection or an AgentX result.
RESULT_ARTIFACTS = frozenset({names.COLLECTION_ARTIFACT, "eval_results_all"})
RESULT_ARTIFACT_PREFIX = "bmk_agentic_"


class Source(Protocol):
    def workflow_run(self, run_id: int) -> WorkflowRun: ...
    def runs(self, workflow: str, *, branch: str, event: str = ..., status: str = ...) -> Iterable[WorkflowRun]: ...
    def artifacts(self, run_id: int) -> list[Artifact]: ...
    def run_plan(self, run_id: int) -> dict | None: ...
    def compare(self, base: str, head: str) -> Comparison: ...
    def top_level_tree(self, sha: str) -> dict[str, str]: ...
    def run_jobs(self, run_id: int) -> list[Job]: ...


# Compares what a run's head measured with the commit to publish (`reuse/shell.py` reads git);
# None when no checkout can answer, and then the file rule (W1) decides as before.
InputsOf = Callable[[str], "measured.InputsCheck | None"]


def _order(value: str | None) -> float:
    t = ts(value)
    return t.timestamp() if t else float("-inf")


# ---- authorisation ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Authorisation:
    authorised: bool
    reason: str
    command: Use | None = None
    comment: Comment | None = None
    ignored: tuple[str, ...] = ()     # commands that did not count, and why (newest first)

    @property
    def pinned_run(self) -> int | None:
        return self.command.run_id if self.command else None


def use_commands(comments: Iterable[Comment], merged_at: str | None = None) -> list[tuple[Comment, Use]]:
    """Reuse commands, newest first. Comments created after `merged_at` do not count (W4), nor do
    comments edited after it: what they said at the merge is unknown, and an edit to `/use 9` on a
    re-run of the merge would otherwise choose the run after the fact."""
    cutoff = ts(merged_at)
    found = []
    for c in comments:
        if cutoff is not None and (ts(c.created_at) is None or ts(c.created_at) > cutoff):
            continue
        if cutoff is not None and c.updated_at and (ts(c.updated_at) is None or ts(c.updated_at) > cutoff):
            continue
        use = effective_use(parse(c.body))
        if use is not None:
            found.append((c, use))
    found.sort(key=lambda cu: (_order(cu[0].created_at), cu[0].id), reverse=True)
    return found


def may_use(comment: Comment, permission_of: Callable[[str], str]) -> str | None:
    """None if the author may authorise reuse, else why not: a person (not a bot) whose repository
    permission (`permission_of`, the collaborator-permission endpoint) is write, maintain or admin."""
    if comment.author_type == "Bot":
        return messages.is_a_bot(comment.author)
    permission = permission_of(comment.author)
    if permission not in WRITE_PERMISSIONS:
        return messages.lacks_write(comment.author, permission)
    return None


@dataclass(frozen=True)
class Handled:
    """What the bot recorded when it answered a command comment: its reply's state (`handled_state`)."""

    permission: str                  # the author's repository permission when the bot checked it
    commands: tuple[str, ...] = ()   # the commands that permission was checked for, as written


def handled_state(permission: str, commands: Iterable[str]) -> dict:
    """The state the bot's reply to a command comment keeps (`prbot/flow.py` writes it)."""
    return {"permission": permission, "checked": list(commands)}


def handled_replies(comments: Iterable[Comment], bot: str) -> dict[int, Handled]:
    """comment id -> what the bot recorded in its reply to it (only the bot's own replies are read).
    A reply of an older bot that recorded only a refusal (`denied`) reads as that permission."""
    out: dict[int, Handled] = {}
    for c in comments:
        if c.author != bot or not sticky.is_marked(c.body, sticky.REPLY):
            continue
        words = c.body.split("\n", 1)[0].split()
        key = words[2] if len(words) > 3 else ""
        state = sticky.state_of_text(c.body)
        level = state.get("permission", state.get("denied"))
        if isinstance(level, str) and key.isdigit():
            checked = state.get("checked") if isinstance(state.get("checked"), list) else []
            out[int(key)] = Handled(level, tuple(str(x) for x in checked))
    return out


def answer_problem(use: Use, handled: Handled | None) -> str | None:
    """Why a `/use` does not count, judged by the permission its author had when the bot answered it
    (issue 35), or None. The rule: a command counts only when the bot's reply records that it checked
    this very command and found write permission. Unanswered (the job did not run, the reply was lost)
    or answered for other text (edited since): the permission then is unknown, so it does not count,
    and a reader promoted later cannot make an old command count; they say it again."""
    if handled is None:
        return messages.UNANSWERED
    if handled.permission not in WRITE_PERMISSIONS:
        return messages.denied_when_handled(handled.permission)
    if use.text not in handled.commands:
        return messages.not_what_was_answered(handled.commands)
    return None


def authorise(comments: Iterable[Comment], permission_of: Callable[[str], str], *, pr_number: int,
              merged_at: str | None = None, pin_problem: Callable[[int], str | None] | None = None,
              bot: str = sticky.DEFAULT_BOT, answering: dict[int, Handled] | None = None) -> Authorisation:
    """The newest command by an authorised person decides; a bare one un-pins an earlier pin. A pin of
    a run that is no sweep of this repository (`pin_problem`, see `pin_problem_of`) counts as not said.
    Authorised: the bot's answer recorded write permission for it then (`answer_problem`; `answering`:
    the comment being answered now, whose reply is not written yet) and the author has it still
    (`may_use`, from `permission_of` now: a writer demoted since no longer authorises reuse)."""
    ignored: list[str] = []
    comments = list(comments)
    handled = handled_replies(comments, bot) | (answering or {})
    for comment, use in use_commands(comments, merged_at):
        why_not = answer_problem(use, handled.get(comment.id)) or may_use(comment, permission_of)
        if not why_not and use.run_id is not None and pin_problem is not None:
            why_not = pin_problem(use.run_id)
        if why_not:
            ignored.append(f"`{use.text}` by @{comment.author} ({comment.html_url or comment.id}): {why_not}")
            continue
        what = f"pinned run {use.run_id}" if use.run_id is not None else "the newest eligible run"
        return Authorisation(True, f"PR #{pr_number} has `{use.text}` from @{comment.author} ({what})",
                             use, comment, tuple(ignored))
    return Authorisation(False, f"PR #{pr_number} has no authorised /use command", ignored=tuple(ignored))


def workflow_path(workflow: str) -> str:
    return workflow if workflow.startswith(".github/") else f".github/workflows/{workflow}"


def fetch_run(source: Source, run_id: int) -> WorkflowRun | None:
    """The run, or None when GitHub says there is no such run (404) in this repository."""
    try:
        return source.workflow_run(run_id)
    except Exception as exc:  # the adapter's GitHubError; only "no such run" is an answer, not a failure
        if getattr(exc, "status", None) == 404:
            return None
        raise


def pin_problem_of(run: WorkflowRun | None, run_id: int, *, repository: str, workflow: str) -> str | None:
    """None if `run_id` names a sweep of this repository (a pull_request run of the sweep workflow or a
    trusted sweep), else why it cannot be pinned at all. Whether the sweep is usable (finished, green,
    this PR's, current) is `check_run`'s question, asked again at merge."""
    if run is None:
        return f"no run {run_id} exists in this repository"
    if repository and run.repository and run.repository != repository:
        return f"run {run_id} ran in {run.repository}, not {repository}; only this repository's own runs can be pinned"
    if run.event not in ("pull_request", "workflow_dispatch"):
        return f"run {run_id} is a {run.event or 'unknown'} run, not a pull_request sweep or a trusted sweep"
    expected = TRUSTED_PATH if run.event == "workflow_dispatch" else workflow_path(workflow)
    if run.path and run.path.split("@")[0] != expected:
        return f"run {run_id} is a run of {run.path.split('@')[0]}, not a sweep ({expected})"
    return None


# ---- label history ----------------------------------------------------------------------------

def label_history_problem(events: Iterable[LabelEvent], current: Iterable[str], policy: Policy) -> str | None:
    """None when the timeline's label events, replayed to the end, give the PR's current sweep labels.

    The timeline carries no total and its comment count proves nothing about events after the last
    comment: a page cut short there hides exactly the label events that decide whether a run was a
    full sweep (an `evals-only` added later, a primary removed). The PR's own label list is the check.
    Only the policy's labels are compared: a repository label deleted since leaves no `unlabeled` event.
    """
    applied: set[str] = set()
    for e in sorted(events, key=lambda e: _order(e.created_at)):
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
    for e in sorted(events, key=lambda e: _order(e.created_at)):
        t = ts(e.created_at)
        if t is None or t > moment:
            break
        (applied.add if e.added else applied.discard)(e.label)
    return applied


# ---- run eligibility --------------------------------------------------------------------------

def unexpired_names(artifacts: list[Artifact], now: datetime | None = None) -> set[str]:
    """Names of the artifacts still downloadable. With `now`, one whose `expires_at` has passed counts as
    expired too: GitHub flips `expired` in the listing later than the download starts answering 410."""
    def alive(a: Artifact) -> bool:
        if a.expired:
            return False
        at = ts(a.expires_at) if now is not None else None
        return at is None or at > now

    return {a.name for a in artifacts if alive(a)}


def has_results(names: set[str]) -> bool:
    return bool(names & RESULT_ARTIFACTS) or any(n.startswith(RESULT_ARTIFACT_PREFIX) for n in names)


def benchmark_inputs(files: Iterable[str]) -> list[str]:
    return sorted(f for f in files if f.startswith(names.BENCHMARK_INPUT_PREFIXES) or f == names.CHANGELOG)


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


TRUSTED_PATH = f"{names.WORKFLOWS_DIR}/{names.TRUSTED_WORKFLOW}"


def trusted_problem(run: SweepRun, pr: PrContext) -> str | None:
    """None if a workflow_dispatch run is a trusted sweep of `pr` from the default branch, else why not."""
    if run.trusted_pr is None:
        return (f"its run name {run.display_title!r} does not name a PR and a full commit SHA "
                f"(expected {names.TRUSTED_RUN_NAME!r}), so it is not a trusted sweep")
    if run.trusted_pr != pr.number:
        return (f"it is a trusted sweep of PR #{run.trusted_pr} (commit {run.head_sha[:12]}), not of PR #{pr.number}; "
                f"pin a run of PR #{pr.number}")
    if run.head_branch and pr.trusted_branch and run.head_branch != pr.trusted_branch:
        return (f"it ran from branch {run.head_branch}, not {pr.trusted_branch}; only trusted sweeps dispatched on "
                "the default branch count")
    return None


def origin_problem(run: WorkflowRun, pr: PrContext) -> str | None:
    """None if `run` ran this repository's own workflow files on this repository's commits, else why not.

    A fork PR's `pull_request` run executes the fork's (editable) workflow and can upload anything, so
    for a fork PR only trusted sweeps count; any run must have run in this repository, and a
    same-repository PR's run must have its head here too (a fork's run of the same commit does not)."""
    if not pr.repository:
        return None  # callers that do not know the repository (pure tests of other rules)
    if run.repository != pr.repository:
        return (f"it ran in {run.repository or 'an unnamed repository'}, not {pr.repository}; only this "
                "repository's own runs can be a source")
    if run.event == "pull_request" and pr.fork:
        return ("it is the fork's own pull_request run, which executes the fork's workflow files and can upload "
                "anything; for a fork PR only a trusted sweep (`/sweep approve <sha>`) can be a source")
    if run.head_repository != pr.repository:
        return (f"its head commit is in {run.head_repository or 'an unnamed repository'}, not {pr.repository}: "
                "another repository's run of the same commit is not this PR's sweep")
    return None


def pr_binding_problem(run: WorkflowRun, pr: PrContext) -> str | None:
    """None if a pull_request run is this PR's own: a run of the same commit on another PR's branch
    (same head SHA, or a commit two PRs share) is that PR's sweep, made under that PR's labels."""
    if run.event != "pull_request":
        return None     # trusted sweeps name their PR in the run name (trusted_problem)
    if pr.head_ref and run.head_branch != pr.head_ref:
        return (f"it ran on branch {run.head_branch or '(none)'}, not this PR's branch {pr.head_ref}: it is another "
                "PR's sweep, made under that PR's labels")
    if run.pull_requests and pr.number not in run.pull_requests:
        return (f"GitHub associates it with PR {', '.join(f'#{n}' for n in run.pull_requests)}, not "
                f"#{pr.number}")
    return None


def plan_problem(plan: dict | None, policy: Policy) -> str | None:
    """None if the run's own recorded plan (`plan.json` of its changelog-metadata artifact, written by
    `ci-tools plan` when it started) is a reusable full sweep. The label history says what the PR
    carried; the plan says what the run actually swept (trimmed, evals-only, a blocker applied)."""
    if plan is None:
        return (f"it has no recorded plan ({names.PLAN_JSON} in its {names.CHANGELOG_METADATA} artifact), so what "
                "it swept cannot be told")
    mode = plan.get("mode") if isinstance(plan, dict) else None
    if not isinstance(mode, dict):
        return f"its recorded plan has no sweep mode (it planned no sweep: {str(plan.get('reason', ''))[:120]!r})"
    primary, blockers = mode.get("primary"), mode.get("reuse-blockers")
    if primary not in policy.reusable_primaries():
        return f"its recorded plan swept {primary or 'no primary label'}, which is not a full sweep"
    if blockers or mode.get("reusable") is not True:
        shown = ", ".join(map(str, blockers)) if isinstance(blockers, list) and blockers else "a reuse blocker"
        return f"its recorded plan ran with {shown}, which is not a full sweep"
    return None


def check_run(run: WorkflowRun, rules: Rules, *, pr: PrContext, timeline: Timeline, policy: Policy,
              workflow_path: str, source: Source, inputs: InputsOf | None = None,
              notes: list[str] | None = None) -> str | None:
    """None if `run` may be used, else the first reason it may not. Cheap checks come first.

    `inputs` (reuse only) compares what the run's head measured with the commit to publish: when it
    can answer, a rebase or force-push that left the selected master entries and recipes as they were
    keeps the run, and a change to them refuses it naming the file, whatever the commit graph says.
    `notes` collects what the card should say about an accepted run (optional jobs that failed, the
    inputs check)."""
    notes = notes if notes is not None else []
    trusted = run.event == "workflow_dispatch"
    if run.event != "pull_request" and not trusted:
        return f"it is not a pull_request run or a trusted sweep ({run.event or 'unknown'} event)"
    why = origin_problem(run, pr)
    if why:
        return why
    expected = TRUSTED_PATH if trusted else workflow_path
    if run.path and run.path.split("@")[0] != expected:
        return f"it is a run of {run.path}, not {expected}"
    why = pr_binding_problem(run, pr)
    if why:
        return why
    if trusted:
        why = trusted_problem(run if isinstance(run, SweepRun) else SweepRun(**run.__dict__), pr)
        if why:
            return why
    if run.status != "completed":
        return f"it is not completed (status {run.status})"
    if run.conclusion not in rules.conclusions:
        return f"it concluded {run.conclusion!r}; {rules.name} needs {' or '.join(sorted(rules.conclusions))}"
    optional_failed = False
    if rules.optional_jobs is not None and run.conclusion != "success":
        why, optional_failed = _jobs_problem(run, rules, source, notes)
        if why:
            return why
    if not run.head_sha:
        return "it has no head commit"
    why = label_history_problem(timeline.label_events, pr.labels, policy)
    if why:
        return why
    at_creation = labels_at(timeline.label_events, run.created_at)
    full = set(policy.reusable_primaries())
    if not at_creation & full:
        return ("it was not created while a full-sweep label was applied "
                f"({', '.join(sorted(full))})")
    blockers = policy.reuse_blockers_in(at_creation)
    if blockers:
        return f"it ran with {', '.join(blockers)} applied, which is not a full sweep"
    historical = rules.allow_historical_association and pr.number in run.pull_requests
    check = inputs(run.head_sha) if inputs is not None else None
    if check is not None and check.unknown is None:
        if check.changed:
            return (f"what it measured changed: {'; '.join(check.changed)} (its head {run.head_sha[:12]}, compared "
                    f"with {check.against[:12]}); run a new sweep on the current head")
        if run.head_sha not in timeline.commits and run.head_branch != pr.head_ref and not historical:
            return f"its head commit {run.head_sha[:12]} is not one of PR #{pr.number}'s commits"
        if check.measured != check.against:
            notes.append(check.note())
    elif run.head_sha != pr.head_sha and not historical:
        if check is not None:
            notes.append(check.note())
        if run.head_sha not in timeline.commits:
            return f"its head commit {run.head_sha[:12]} is not one of PR #{pr.number}'s commits"
        diff = source.compare(run.head_sha, pr.head_sha)
        if diff.status not in ("ahead", "identical"):
            return (f"its head commit {run.head_sha[:12]} is no longer in PR #{pr.number} "
                    "(force-pushed away); pin a run of a current commit")
        if rules.refuse_stale:
            stale = changed_inputs(diff, source, run.head_sha, pr.head_sha)
            if stale:
                return (f"commits after its head {run.head_sha[:12]} change benchmark inputs: "
                        f"{', '.join(stale)}; run a new sweep on the current head")
    present = unexpired_names(source.artifacts(run.id), rules.now)
    if rules.need_changelog_metadata and names.CHANGELOG_METADATA not in present:
        return f"it has no unexpired {names.CHANGELOG_METADATA} artifact"
    if not has_results(present):
        return "it has no unexpired benchmark, eval or agentic result artifact"
    if rules.name == "reuse":
        why = eval_gate.reuse_problem(present)   # its eval rows passed (or it had none)
        if why and optional_failed:
            notes.append("its eval verdict is not a pass and is left out: only optional jobs failed")
            why = None
        if why:
            return why
    # last: the one check that downloads something
    return plan_problem(source.run_plan(run.id) if names.CHANGELOG_METADATA in present else None, policy)


def _jobs_problem(run: WorkflowRun, rules: Rules, source: Source, notes: list[str]) -> tuple[str | None, bool]:
    """A failed or cancelled run is usable when every job the policy requires succeeded (reuse/jobs.py);
    (why not or None, whether optional jobs failed). A pinned run whose jobs cannot be listed is the
    maintainer's call, as before; an unpinned one is refused."""
    verdict = job_rules.verdict(source.run_jobs(run.id), rules.optional_jobs or ())
    if verdict.required:
        return (f"it concluded {run.conclusion!r} and required job(s) did not succeed: {', '.join(verdict.required[:5])}"
                + (f" and {len(verdict.required) - 5} more" if len(verdict.required) > 5 else ""), False)
    if not verdict.listed and not rules.pinned:
        return (f"it concluded {run.conclusion!r}; reuse needs success, or a run whose required jobs all "
                "succeeded (it lists no jobs)", False)
    note = verdict.note()
    if note:
        notes.append(f"run {run.id} concluded {run.conclusion!r}: {note}")
    return None, bool(verdict.optional)


@dataclass(frozen=True)
class Selection:
    run: WorkflowRun | None
    error: str | None = None
    rejected: tuple[str, ...] = ()    # "run 123: reason", newest first
    notes: tuple[str, ...] = ()       # about the chosen run: optional jobs that failed, its inputs check


def sweep_run(base: WorkflowRun) -> SweepRun:
    """`base` with the swept commit in place for a trusted sweep named as `approval.run_name` writes it."""
    named = approval.parse_run_name(base.display_title) if base.event == "workflow_dispatch" else None
    run = SweepRun(**base.__dict__)
    if named is None:
        return run
    return replace(run, trusted_pr=named[0], head_sha=named[1], dispatch_sha=base.head_sha)


def _newest(run: WorkflowRun) -> float:
    return -_order(run.created_at)


def _trusted_runs_of(runs: Iterable[WorkflowRun], pr: int, max_listed: int) -> Iterator[WorkflowRun]:
    """Trusted sweeps named for `pr` only: other PRs' runs share the default branch and are skipped
    unexamined (a bounded number of them, so a busy repository cannot page without end)."""
    for listed, run in enumerate(runs):
        if listed >= max_listed:
            return
        named = approval.parse_run_name(run.display_title)
        if named is not None and named[0] == pr:
            yield run


def select_run(rules: Rules, *, pinned: int | None, pr: PrContext, timeline: Timeline, policy: Policy,
               workflow: str, source: Source, max_examined: int = 30, inputs: InputsOf | None = None) -> Selection:
    """The pinned run if usable, else the newest usable completed run of the sweep on the PR branch."""
    path = workflow_path(workflow)
    if pinned is not None:
        data = fetch_run(source, pinned)
        if data is None:
            return Selection(None, f"run {pinned} cannot be used for {rules.name}, because no such run exists "
                                   "in this repository.")
        run = sweep_run(data)
        notes: list[str] = []
        why = check_run(run, rules, pr=pr, timeline=timeline, policy=policy, workflow_path=path,
                        source=source, inputs=inputs, notes=notes)
        if why:
            return Selection(None, f"run {pinned} cannot be used for {rules.name}, because {why}.")
        return Selection(run, notes=tuple(notes))
    rejected: list[str] = []
    candidates: Iterator[WorkflowRun] = iter(source.runs(path.rsplit("/", 1)[-1], branch=pr.head_ref))
    if pr.fork:
        trusted = _trusted_runs_of(source.runs(names.TRUSTED_WORKFLOW, branch=pr.trusted_branch,
                                                        event="workflow_dispatch"), pr.number, 10 * max_examined)
        # the fork's own pull_request runs are listed too, only to say why each was refused
        candidates = heapq.merge(candidates, trusted, key=_newest)
    # A fully green run is preferred; failed and cancelled ones (judged by their jobs, a request each)
    # are examined only when no green run is usable, so the common case costs what it did.
    deferred: list[WorkflowRun] = []
    for examined, data in enumerate(candidates):
        if examined >= max_examined:
            break
        run = sweep_run(data)
        if rules.optional_jobs is not None and run.status == "completed" and run.conclusion in ("failure", "cancelled"):
            deferred.append(run)
            continue
        notes = []
        why = check_run(run, rules, pr=pr, timeline=timeline, policy=policy, workflow_path=path,
                        source=source, inputs=inputs, notes=notes)
        if why is None:
            return Selection(run, rejected=tuple(rejected), notes=tuple(notes))
        rejected.append(f"run {run.id}: {why}")
    for run in deferred:
        notes = []
        why = check_run(run, rules, pr=pr, timeline=timeline, policy=policy, workflow_path=path,
                        source=source, inputs=inputs, notes=notes)
        if why is None:
            return Selection(run, rejected=tuple(rejected), notes=tuple(notes))
        rejected.append(f"run {run.id}: {why}")
    detail = "; ".join(rejected[:5]) or ("no completed pull_request runs on the PR branch" + (
        f" and no completed trusted sweeps of PR #{pr.number}" if pr.fork else ""))
    return Selection(None, f"PR #{pr.number} has no run usable for {rules.name} ({detail}). "
                           f"Run a full sweep, or pin a run with `/use <run_id>`.", tuple(rejected))


# ---- the two places reuse is decided ------------------------------------------------------------

@dataclass(frozen=True)
class ReuseDecision:
    reuse_enabled: bool = False
    skip_pr_sweep: bool = False
    authorised: bool = False
    reason: str = ""
    pr_number: int | None = None
    run: WorkflowRun | None = None
    error: str | None = None          # set: reuse refused (`fallback`: main sweeps itself, else the job fails)
    ignored: tuple[str, ...] = ()
    fallback: bool = False            # policy `on-refused-reuse: sweep`: a refusal makes main run its own sweep
    notes: tuple[str, ...] = ()       # about the reused run: its inputs check, optional jobs that failed

    @property
    def failed(self) -> bool:
        return bool(self.error) and not self.fallback

    def summary(self) -> str:
        if self.error and self.fallback:
            return f"{self.error} {FALLBACK_NOTE}"
        return self.error or self.reason


FALLBACK_NOTE = ("Main runs its own sweep of the selected configs instead (policy `on-refused-reuse: sweep`), so "
                 "the merge still publishes results.")


# GitHub's comparison lists at most this many files (the rest are silently left out).
COMPARE_FILE_LIMIT = 300


def changed_inputs(diff: Comparison, source: Source, base: str, head: str) -> list[str]:
    """Benchmark inputs changed between `base` and `head`. A comparison listing COMPARE_FILE_LIMIT
    files may have left changes out, so then the two commits' top-level trees decide: an input
    folder whose tree object differs has changed (two calls per commit, only in that case)."""
    if len(diff.files) < COMPARE_FILE_LIMIT:
        return benchmark_inputs(list(diff.files))
    before, after = source.top_level_tree(base), source.top_level_tree(head)
    folders = [p.rstrip("/") for p in names.BENCHMARK_INPUT_PREFIXES]
    return [f"{name}/ (the comparison lists only its first {COMPARE_FILE_LIMIT} files; the folder's tree differs)"
            for name in folders if before.get(name) != after.get(name)]


def label_problems(labels: Iterable[str], policy: Policy) -> str | None:
    labels = set(labels)
    blockers = policy.reuse_blockers_in(labels)
    if blockers:
        return f"the PR carries {', '.join(blockers)}, which block reuse; remove it or run a new sweep"
    if not set(policy.primaries_in(labels)) & set(policy.reusable_primaries()):
        return f"the PR has no full-sweep label; reuse needs one of {', '.join(policy.reusable_primaries())}"
    return None


def decide_pr_event(action: str, *, label_problem: str | None, authorisation: Callable[[], Authorisation] | None,
                    pushed_inputs: Callable[[], list[str]] | None = None) -> ReuseDecision:
    """PR side, the one home of the rule "an authorised /use stops synchronize sweeps": a
    `synchronize` skips the sweep when the PR's labels allow reuse (`label_problem` is None: one full
    sweep label, no reuse-blocking modifier) and an authorised /use exists, unless the push changed
    benchmark inputs (W1: then the authorised results are stale and the sweep must run).

    With labels that block reuse the pin would be refused at merge (`decide_merge`), so skipping
    would leave the PR with nothing usable: it sweeps, and no API call is spent on the question."""
    if action != "synchronize":
        return ReuseDecision(reason=f"pull_request action {action or 'unknown'} is not synchronize")
    if label_problem:
        return ReuseDecision(reason=f"an authorised /use cannot stop this sweep: {label_problem}")
    auth = authorisation()
    if not auth.authorised:
        return ReuseDecision(reason=auth.reason, ignored=auth.ignored)
    changed = pushed_inputs() if pushed_inputs else []
    if changed:
        return ReuseDecision(authorised=True, ignored=auth.ignored,
                             reason=f"{auth.reason}, but this push changes benchmark inputs "
                                    f"({', '.join(changed)}): sweeping again")
    return ReuseDecision(authorised=True, skip_pr_sweep=True, reason=auth.reason, ignored=auth.ignored)


def decide_merge(pr: PrContext, auth: Authorisation, *, timeline: Timeline, policy: Policy, workflow: str,
                 source: Source, inputs: InputsOf | None = None, now: datetime | None = None) -> ReuseDecision:
    """Main side, for the single PR a pushed commit belongs to. A refused pin is an error; with the
    policy's `on-refused-reuse: sweep` (the default) it is a fallback: main sweeps, the job passes."""
    base = dict(pr_number=pr.number, authorised=auth.authorised, ignored=auth.ignored,
                fallback=policy.reuse.main_sweeps_on_refusal)
    if not auth.authorised:
        return ReuseDecision(reason=auth.reason, **base)
    problem = label_problems(pr.labels, policy)
    if problem:
        return ReuseDecision(error=f"PR #{pr.number} authorised reuse, but {problem}.", **base)
    if not pr.merged_at:
        return ReuseDecision(error=f"PR #{pr.number} is not merged; reuse is decided for merged PRs only.",
                             **{**base, "fallback": False})
    sel = select_run(reuse_rules(auth.pinned_run is not None, policy.reuse.optional_jobs, now), pinned=auth.pinned_run,
                     pr=pr, timeline=timeline, policy=policy, workflow=workflow, source=source, inputs=inputs)
    if sel.run is None:
        return ReuseDecision(error=sel.error, **base)
    how = f"pinned run {sel.run.id}" if auth.pinned_run is not None else f"newest eligible run {sel.run.id}"
    return ReuseDecision(reuse_enabled=True, run=sel.run, notes=sel.notes,
                         reason=f"PR #{pr.number} reuses {how} (head {sel.run.head_sha[:12]}): {auth.reason}", **base)
