"""The sweep gate: one pure function of the event decides whether anything runs, why, and how.

`decide(event, policy, appends_entry=...)` replaces InferenceX's seven
hand-copied `if:` strings (spec inferencex-pr-policy.md §1.4-1.9). It needs no configs, so the
workflow's first job can run it in well under a second and compute the concurrency group from it.

Where this deliberately differs from InferenceX (documented in docs/reference.md, "`plan` output"):
- only labels named in the policy file are relevant; queue/priority labels (`skip_queue`, ...)
  neither restart nor cancel a sweep (InferenceX W14 restarts the whole sweep for them);
- a label change that cannot matter (a modifier on a PR with no primary label, any label on a draft
  or a fork PR) gets its own concurrency group, so it cancels nothing;
- `closed` and `converted_to_draft` join the active group, so they stop the in-flight sweep (W14);
- adding a primary label forces a sweep even when the head commit says `[skip-sweep]` (W16): it is
  the one explicit "run it now" a maintainer has;
- `opened`/`reopened` behave like `synchronize` (InferenceX ignores them; harmless either way).

What an authorised `/use` does to a `synchronize` is not decided here: the gate sees only the event,
and the rule ("stops the sweep only when the labels allow reuse and the push leaves benchmark inputs
alone") has one home, `ci_tools.prbot.reuse.decide.decide_pr_event`, run by the pipeline's reuse step.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from ci_tools.sweep.labels import Policy

SKIP_MARKER = "[skip-sweep]"
CODE_ACTIONS = frozenset({"synchronize", "opened", "reopened", "ready_for_review"})
LABEL_ACTIONS = frozenset({"labeled", "unlabeled"})
STOP_ACTIONS = frozenset({"closed", "converted_to_draft"})


@dataclass(frozen=True)
class GateEvent:
    """What the gate needs from a webhook payload (or from `plan --label` run locally)."""

    name: str                           # "pull_request" | "push" | "local" | anything else
    action: str | None = None
    label: str | None = None            # the label added or removed (labeled/unlabeled)
    labels: tuple[str, ...] = ()        # labels on the PR after the event
    draft: bool = False
    fork: bool = False
    head_message: str | None = None
    pr_number: int | None = None
    sha: str | None = None
    run_id: str | None = None


@dataclass(frozen=True)
class SweepMode:
    """How a sweep runs, from its labels (spec §1.2-1.3)."""

    primary: str | None
    scope: str = "full"                 # "full" | "trimmed"
    canary: bool = False
    fail_fast: bool = False
    all_evals: bool = False
    evals_only: bool = False
    agentx_fast: bool = False
    reusable: bool = False              # a /use pin of this sweep can be honoured at merge
    reuse_blockers: tuple[str, ...] = ()
    modifiers: tuple[str, ...] = ()

    @property
    def trim(self) -> bool:
        return self.scope == "trimmed"

    @property
    def evals(self) -> str:
        if self.evals_only:
            return "all-only" if self.all_evals else "only"
        return "all" if self.all_evals else "default"

    def as_dict(self) -> dict:
        return {"primary": self.primary, "modifiers": list(self.modifiers), "scope": self.scope,
                "canary": self.canary, "fail-fast": self.fail_fast, "trim": self.trim, "evals": self.evals,
                "agentx-fast": self.agentx_fast, "reusable": self.reusable,
                "reuse-blockers": list(self.reuse_blockers)}


PUSH_MODE = SweepMode(primary=None, scope="full", reusable=False)


def mode_for(labels: tuple[str, ...] | list[str], policy: Policy) -> SweepMode | None:
    """The sweep mode of a label set with exactly one primary label; None otherwise."""
    primaries = policy.primaries_in(labels)
    if len(primaries) != 1:
        return None
    p = policy.primary[primaries[0]]
    modifiers = policy.modifiers_in(labels)
    evals = {policy.modifiers[m].evals for m in modifiers}
    blockers = tuple(policy.reuse_blockers_in(labels))
    return SweepMode(primary=p.name, scope=p.scope, canary=p.canary, fail_fast=p.fail_fast,
                     all_evals="all" in evals, evals_only="only" in evals,
                     agentx_fast=any(policy.modifiers[m].agentx_profile == "fast" for m in modifiers),
                     reusable=p.reusable and not blockers, reuse_blockers=blockers, modifiers=tuple(modifiers))


@dataclass(frozen=True)
class GateDecision:
    check: bool                         # run the changelog check
    sweep: bool                         # run GPU work (pending the changelog diff when it was unknown)
    reason: str                         # one sentence for people: why (not)
    concurrency_group: str
    mode: SweepMode | None = None
    error: str | None = None            # bad label state: the check must fail with this message
    restarts: bool = True               # the event cancels an in-flight sweep of this PR
    fork_approval: bool = False         # fork PR got a primary label: trusted per-SHA approval path
    hints: tuple[str, ...] = field(default=())

    def as_dict(self) -> dict:
        return {"check": self.check, "sweep": self.sweep, "reason": self.reason, "error": self.error,
                "mode": self.mode.as_dict() if self.mode else None,
                "concurrency-group": self.concurrency_group, "restarts": self.restarts, "fork-approval": self.fork_approval, "hints": list(self.hints)}


def label_change_matters(event: GateEvent, policy: Policy) -> bool:
    """Can adding/removing `event.label` change what runs for this PR?"""
    label = event.label
    if label is None or label not in policy.relevant():
        return False
    if event.draft or event.fork:
        return False
    if label in policy.primary:
        return True
    return bool(policy.primaries_in(event.labels))


def concurrency_group(event: GateEvent, restarts: bool) -> str:
    """One active group per PR (per SHA on push): a new relevant event cancels the old sweep. A local
    preview shows the PR's group: its number with `plan --pr N`, else `<pr>` (never a ref name)."""
    if event.pr_number is not None:
        subject: object = event.pr_number
    elif event.name == "local":
        subject = "<pr>"
    else:
        subject = event.sha or "local"
    if restarts:
        return f"sweep-{subject}-active"
    return f"sweep-{subject}-{event.run_id or 'noop'}"


PENDING = " (if the changelog diff appends an entry)"


@dataclass(frozen=True)
class PrNow:
    """The PR as GitHub has it now (read only for a re-run: `superseded`)."""

    head_sha: str
    labels: tuple[str, ...]
    state: str = "open"
    draft: bool = False


def superseded(event: GateEvent, now: PrNow, policy: Policy) -> str | None:
    """Why a re-run of this pull_request run must not run, or None.

    A re-run replays the run's original payload: the old head commit and the old labels. Once the PR
    has moved on, it would sweep that old state and, joining the PR's active concurrency group, cancel
    the PR's newest sweep. A re-run of the newest run (a failed sweep retried) is left alone."""
    why = []
    if event.sha and now.head_sha and event.sha != now.head_sha:
        why.append(f"the PR's head is now {now.head_sha[:12]}, this run was for {event.sha[:12]}")
    relevant = policy.relevant()
    then, current = set(event.labels) & relevant, set(now.labels) & relevant
    if then != current:
        why.append(f"its sweep labels were {', '.join(sorted(then)) or 'none'}, the PR now has "
                   f"{', '.join(sorted(current)) or 'none'}")
    if event.action in STOP_ACTIONS and now.state == "open" and not now.draft:
        why.append(f"the PR is open and ready again since this run's `{event.action}`")
    if not why:
        return None
    return (f"re-run of a superseded sweep run of PR #{event.pr_number}: {'; '.join(why)}. Re-running it would "
            f"sweep that old state and cancel the PR's newest sweep ({concurrency_group(event, True)}); re-run "
            "the PR's newest run instead, or push or relabel to start a new sweep")


def refuse_rerun(verdict: "GateDecision", event: GateEvent, why: str) -> "GateDecision":
    """The gate's verdict for a superseded re-run: nothing runs, the check fails with the reason, and
    the run's group is its own, so it cancels nothing."""
    return GateDecision(False, False, why, concurrency_group(event, False), mode=verdict.mode, error=why,
                        restarts=False)


def decide(event: GateEvent, policy: Policy, *, appends_entry: bool | None = None) -> GateDecision:
    """The gate verdict. `appends_entry` None = not looked at yet (gate-only mode, or before the plan
    reads the changelog): a sweep verdict then assumes the changelog check will find an appended entry,
    and says so; `settle` turns it into the final verdict once the diff is known."""
    verdict = _decide(event, policy)
    return verdict if appends_entry is None else settle(verdict, appends_entry)


def settle(verdict: GateDecision, appends_entry: bool) -> GateDecision:
    """The final verdict of a `decide(..., appends_entry=None)` once the changelog diff is known."""
    if not verdict.sweep or verdict.error:
        return verdict
    if appends_entry:
        return dataclasses.replace(verdict, reason=verdict.reason.removesuffix(PENDING))
    if verdict.mode == PUSH_MODE:
        return GateDecision(False, False, "the push appends no changelog entry: nothing to sweep",
                            verdict.concurrency_group)
    return GateDecision(True, False, "the PR's changelog diff appends no entry, so there is nothing to "
                        "sweep; append an entry to the end of the changelog", verdict.concurrency_group,
                        mode=verdict.mode, restarts=verdict.restarts)


def _decide(event: GateEvent, policy: Policy) -> GateDecision:
    if event.name == "push":
        return GateDecision(False, True, f"push to the default branch: full sweep of the appended entries{PENDING}",
                            concurrency_group(event, True), mode=PUSH_MODE)
    if event.name not in ("pull_request", "local"):
        return GateDecision(False, False, f"{event.name} events do not run sweeps",
                            concurrency_group(event, False), restarts=False)

    action = event.action or "synchronize"
    labels = tuple(event.labels)
    primaries = policy.primaries_in(labels)
    modifiers = policy.modifiers_in(labels)
    label_event = action in LABEL_ACTIONS

    if action in STOP_ACTIONS:
        return GateDecision(False, False, f"PR {action.replace('_', ' ')}: any in-flight sweep is cancelled",
                            concurrency_group(event, True))
    if not label_event and action not in CODE_ACTIONS:
        return GateDecision(False, False, f"pull_request {action} does not start or stop sweeps",
                            concurrency_group(event, False), restarts=False)

    restarts = label_change_matters(event, policy) if label_event else True
    group = concurrency_group(event, restarts)
    relevant_label = (not label_event) or (event.label in policy.relevant())
    fork_approval = event.fork and action == "labeled" and event.label in policy.primary and not event.draft

    if event.draft:
        return GateDecision(False, False, "draft PRs never sweep; mark the PR ready for review to start one",
                            group, restarts=restarts)
    if not relevant_label:
        return GateDecision(False, False, f"label {event.label!r} does not affect sweeps; nothing restarted",
                            group, restarts=False)
    if len(primaries) > 1:
        msg = (f"conflicting primary sweep labels: {', '.join(primaries)}. Keep exactly one "
               f"({policy.recommended() or primaries[0]} is recommended) and remove the others")
        return GateDecision(True, False, msg, group, error=msg, restarts=restarts)
    if not primaries:
        if modifiers:
            reason = (f"modifier label(s) {', '.join(modifiers)} need a primary sweep label; add one of "
                      f"{', '.join(policy.primary)} to sweep")
        else:
            reason = f"no primary sweep label; add one of {', '.join(policy.primary)} to sweep"
        return GateDecision(True, False, reason, group, restarts=restarts)

    mode = mode_for(labels, policy)
    assert mode is not None          # exactly one primary label, as checked above
    if event.fork:
        return GateDecision(True, False, "fork PRs never run on self-hosted runners from this workflow; a "
                            "maintainer approves each head SHA through the trusted sweep path", group, mode=mode,
                            restarts=restarts, fork_approval=fork_approval)
    forced = action == "labeled" and event.label in policy.primary
    if event.head_message and SKIP_MARKER in event.head_message and not forced:
        return GateDecision(True, False, f"the head commit message contains {SKIP_MARKER}; push a commit "
                            "without it, or remove and re-add the primary label to force a sweep", group,
                            mode=mode, restarts=restarts)
    how = f"{mode.primary}" + (f" + {', '.join(mode.modifiers)}" if mode.modifiers else "")
    why = {"labeled": f"label {event.label} added", "unlabeled": f"label {event.label} removed"}.get(
        action, f"pull_request {action}" if event.name == "pull_request" else "local preview")
    return GateDecision(True, True, f"{why}: sweep with {how}{PENDING}", group, mode=mode, restarts=restarts)
