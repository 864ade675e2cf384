"""`/sweep approve <sha>`: a maintainer approves one head commit of a fork PR for a trusted sweep. Pure.

Fork PRs never reach self-hosted runners from `run-sweep.yml`. The trusted path is a comment
command, handled on default-branch code, that dispatches `trusted-sweep.yml` with the PR number and
the approved head SHA. Differences from InferenceX's `trusted-external-sweep.yml` (spec §1.10, W18):
- the sweep checks out the approved head SHA itself, never `merge_commit_sha` (which GitHub computes
  asynchronously and nobody checked to contain the approved head);
- the SHA is named in the command in full (40 hex digits: a prefix is refused, since a fork can grind
  a commit sharing a short prefix and force-push it after the comment) and must be the PR's head when
  approved *and* when the sweep starts, so a push after the approval needs a new approval;
- the head branch must not have moved since the comment was written: a force push, or the branch
  deleted or restored, after it (GitHub's timeline, on GitHub's clock) refuses the approval even
  when the head is the named commit again, when the comment is handled and again when the sweep
  starts (`check_start`: the same rule, and the comment must still be there saying it). A plain push leaves no timed event (its commit dates are
  the pusher's), but it changes the head, which the full SHA then no longer names;
- a second approval of a SHA whose sweep is queued or running starts nothing (the run is found by
  its run name; the workflow's concurrency group, keyed on PR and SHA, covers races);
- the sweep is planned by the same `ci-tools plan` from the PR's labels, so canaries and fail-fast
  behave as on same-repo PRs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable

from ci_tools import names
from ci_tools.sweep.labels import Policy
from ci_tools.github.models import Comment, HeadEvent, WorkflowRun, timestamp
from ci_tools.prbot import commands, messages
from ci_tools.prbot.commands import SweepApprove
from ci_tools.prbot.context import PrContext

# The workflow's `run-name:` spells names.TRUSTED_RUN_NAME with `${{ inputs.pr }}` and `${{ inputs.sha }}`
# (a test keeps them equal); it is how a running sweep of a PR and SHA is found again.
FULL_SHA = 40


def run_name(pr: int, sha: str) -> str:
    return names.TRUSTED_RUN_NAME.format(pr=pr, sha=sha)


_RUN_NAME_RE = re.compile(re.escape(names.TRUSTED_RUN_NAME).replace(re.escape("{pr}"), r"([1-9][0-9]{0,9})")
                          .replace(re.escape("{sha}"), r"([0-9a-fA-F]{40})"))


def parse_run_name(title: str) -> tuple[int, str] | None:
    """(PR, full head SHA) named by a trusted sweep's run name, or None for any other title.

    The REST API does not return workflow_dispatch inputs, so the run name is the only record of what
    a trusted run swept; `/sweep approve` always dispatches the full 40-digit SHA."""
    m = _RUN_NAME_RE.fullmatch(title or "")
    return (int(m[1]), m[2].lower()) if m else None


def concurrency_group(pr: int, sha: str) -> str:
    return f"trusted-sweep-{pr}-{sha}"


def names_commit(given: str, head: str) -> bool:
    """`given` is `head`'s full 40-digit SHA (case does not matter): only that names one commit for good."""
    return len(given) == FULL_SHA and given.lower() == head.lower()


def moved_after(said_at: str, events: Iterable[HeadEvent]) -> HeadEvent | None:
    """The last head-branch event (force push, branch deleted or restored) at or after `said_at`, or
    None. GitHub's timestamps have whole seconds: an event in the comment's own second may be after it,
    so it counts; an unreadable time counts too."""
    said = timestamp(said_at)
    later = [e for e in events if said is None or (t := timestamp(e.created_at)) is None or t >= said]
    return later[-1] if later else None


def commit_problem(given: str, pr: PrContext, *, said_at: str, head_events: Iterable[HeadEvent]) -> str | None:
    """The rule for every command that names a commit: None when `given` is the PR head's full SHA and
    the head branch did not move after the command was written, else why not (in reviewer words)."""
    if len(given) != FULL_SHA:
        return messages.sha_not_full(given, pr.head_sha, pr.number)
    if not names_commit(given, pr.head_sha):
        return messages.sha_not_head(given, pr.head_sha, pr.number)
    moved = moved_after(said_at, head_events)
    if moved is not None:
        return messages.head_moved_after(pr.number, moved.kind, moved.created_at, said_at, pr.head_sha)
    return None


@dataclass(frozen=True)
class Approval:
    approved: bool
    reason: str                 # why not, or what was approved, in reviewer words
    sha: str = ""               # the full head SHA when approved
    running_url: str = ""       # a sweep of this SHA already queued or running


def plan_labels(labels: Iterable[str], policy: Policy) -> list[str]:
    """The PR labels `ci-tools plan` takes (`--label`): policy labels only, sorted."""
    return sorted(label for label in set(labels) if label in policy.primary or label in policy.modifiers)


def decide(given_sha: str, pr: PrContext, policy: Policy, running: Iterable[WorkflowRun] = (), *, said_at: str = "",
           head_events: Iterable[HeadEvent] = ()) -> Approval:
    """May a sweep of `given_sha` start now? The author's permission is checked before, for the whole comment (`commands.REQUIRED`).

    `running` are the trusted-sweep workflow's queued or in-progress runs (`display_title`, `html_url`);
    `said_at` when the comment was created, `head_events` the PR timeline's head-branch events."""
    n = pr.number
    if pr.state != "open":
        return Approval(False, f"PR #{n} is {pr.state}; only open PRs are swept")
    if pr.draft:
        return Approval(False, f"PR #{n} is a draft; mark it ready for review first")
    if not pr.fork:
        return Approval(False, f"PR #{n} comes from a branch of this repository; it sweeps from its labels "
                               "without approval")
    problem = commit_problem(given_sha, pr, said_at=said_at, head_events=head_events)
    if problem:
        return Approval(False, problem)
    primaries = policy.primaries_in(set(pr.labels))
    if len(primaries) != 1:
        found = ", ".join(f"`{p}`" for p in primaries) or "none"
        return Approval(False, f"PR #{n} needs exactly one sweep label to plan the sweep (found {found}); "
                               f"one of {', '.join(f'`{p}`' for p in sorted(policy.primary))}")
    title = run_name(n, pr.head_sha)
    for run in running:
        if run.display_title == title:
            return Approval(False, f"a trusted sweep of `{pr.head_sha[:12]}` is already queued or running",
                            running_url=run.html_url)
    return Approval(True, f"commit `{pr.head_sha[:12]}` of PR #{n} approved with `{primaries[0]}`",
                    sha=pr.head_sha)


def check_start(approved_sha: str, pr: PrContext, *, approval: Comment | None, comment_id: int,
                head_events: Iterable[HeadEvent]) -> str | None:
    """At the start of the trusted sweep, the approval's own rule again (`commit_problem`): None when the PR
    is open, its comment `comment_id` (`approval`, None when it is not on the PR) still approves
    `approved_sha`, and that commit is the head, the head branch not force-pushed, deleted or restored
    since the comment was written; else why the sweep must not run. The head may have moved away and back
    between the approval and now: the head alone would not show it."""
    n = pr.number
    if pr.state != "open":
        return f"PR #{n} is {pr.state}; the approved sweep does not run"
    if approval is None:
        return messages.approval_gone(n, comment_id)
    if SweepApprove(approved_sha.lower()) not in commands.parse(approval.body):
        return messages.approval_withdrawn(n, comment_id, approved_sha)
    problem = commit_problem(approved_sha, pr, said_at=approval.created_at, head_events=head_events)
    return messages.approval_no_longer_holds(n, comment_id, problem) if problem else None
