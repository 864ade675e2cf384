"""`/sweep approve <sha>` in a comment, and `comment check-approval` at the trusted sweep's start."""

from __future__ import annotations

import functools
from typing import Protocol

from ci_tools.github.events import Comment
from ci_tools import names
from ci_tools.prbot import context, messages
from ci_tools.prbot.approval import decide as approval
from ci_tools.prbot.commands import SweepApprove
from ci_tools.github.models import PullRequest, Timeline, WorkflowRun
from ci_tools.prbot.shell import Lazy, Result, Settings


class Client(Protocol):
    def pull_request(self, number: int) -> PullRequest: ...
    def recent_runs(self, workflow: str, *, branch: str, event: str, limit: int = ...) -> list[WorkflowRun]: ...


def outputs(decision: approval.Approval, pr: int) -> dict[str, str]:
    """`comment handle`'s approval outputs, which the workflow hands to trusted-sweep.yml."""
    return {"approve-sha": decision.sha if decision.approved else "", "approve-pr": str(pr) if decision.approved else ""}


def approve_command(cmd: SweepApprove, c: Comment, pr: int, tl: Timeline, gh: Client, settings: Settings,
                    res: Result) -> str:
    """The reply to an authorised author's approval (the permission was checked for the whole comment).
    `tl`, read before the PR, gives the head-branch events after the comment's creation."""
    facts = context.of(gh.pull_request(pr), settings.main_branch)
    decide = functools.partial(approval.decide, cmd.sha, facts, settings.policy, said_at=c.created_at,
                               head_events=tl.head_events)
    decision = decide()
    if decision.approved:   # only an approvable commit costs the duplicate check
        running = gh.recent_runs(names.TRUSTED_WORKFLOW, branch=settings.main_branch, event="workflow_dispatch")
        decision = decide([r for r in running if r.status != "completed"])
    res.outputs.update(outputs(decision, pr))
    res.messages.append(decision.reason)
    if decision.running_url:
        return messages.text("approve-duplicate", author=c.author, command=cmd.text, why=decision.reason,
                             run_url=decision.running_url)
    if not decision.approved:
        return messages.text("approve-refused", author=c.author, command=cmd.text, why=decision.reason)
    return messages.text("approve-accepted", author=c.author, sha=decision.sha, pr=pr,
                         workflow=names.TRUSTED_WORKFLOW)


def check_approval(settings: Settings, gh: Lazy, *, pr: int, sha: str) -> Result:
    """The trusted sweep's first step: the PR must still point at the approved commit (else fail closed),
    and its sweep labels are read now, for `ci-tools plan`."""
    facts = context.of(gh().pull_request(pr), settings.main_branch)
    problem = approval.check_head(sha, facts.head_sha, pr=pr, state=facts.state)
    labels = approval.plan_labels(facts.labels, settings.policy)
    res = Result(outputs={"proceed": str(problem is None).lower(), "base-sha": facts.base_sha,
                          "labels": "\n".join(labels)})
    res.messages.append(problem or f"PR #{pr} is at the approved commit {sha[:12]}; labels: "
                                   f"{', '.join(labels) or 'none'}")
    res.exit_code = 1 if problem else 0
    return res
