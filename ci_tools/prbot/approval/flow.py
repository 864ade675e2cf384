"""`/sweep approve <sha>` in a comment, and `comment check-approval` at the trusted sweep's start (the same rule)."""

from __future__ import annotations

import functools
from typing import Protocol

from ci_tools.github.events import Comment
from ci_tools import names
from ci_tools.prbot import context, messages
from ci_tools.prbot.approval import decide as approval
from ci_tools.prbot.commands import SweepApprove
from ci_tools.github.models import PullRequest, Timeline, WorkflowRun
from ci_tools.prbot.shell import Comments, Lazy, Result, Settings, load_timeline


class Client(Comments, Protocol):
    def pull_request(self, number: int) -> PullRequest: ...
    def recent_runs(self, workflow: str, *, branch: str, event: str, limit: int = ...) -> list[WorkflowRun]: ...


def outputs(decision: approval.Approval, pr: int, comment: int) -> dict[str, str]:
    """`comment handle`'s approval outputs, which the workflow hands to trusted-sweep.yml (the comment, so
    that `check-approval` applies the approval's rule again when the sweep starts)."""
    ok = decision.approved
    return {"approve-sha": decision.sha if ok else "", "approve-pr": str(pr) if ok else "",
            "approve-comment": str(comment) if ok else ""}


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
    res.outputs.update(outputs(decision, pr, c.id))
    res.messages.append(decision.reason)
    if decision.running_url:
        return messages.text("approve-duplicate", author=c.author, command=cmd.text, why=decision.reason,
                             run_url=decision.running_url)
    if not decision.approved:
        return messages.text("approve-refused", author=c.author, command=cmd.text, why=decision.reason)
    return messages.text("approve-accepted", author=c.author, sha=decision.sha, pr=pr,
                         workflow=names.TRUSTED_WORKFLOW)


def check_approval(settings: Settings, gh: Lazy, *, pr: int, sha: str, comment: int) -> Result:
    """The trusted sweep's first step: the approval's rule applied again (else fail closed): the PR open at
    the approved commit, comment `comment` still on it approving that commit, the head branch not moved
    since the comment was written. The sweep labels are read now, for `ci-tools plan`."""
    client: Client = gh()
    tl = load_timeline(client, pr)      # before the PR, as when the comment was handled
    facts = context.of(client.pull_request(pr), settings.main_branch)
    said = next((c for c in tl.comments if c.id == comment), None)
    problem = approval.check_start(sha, facts, approval=said, comment_id=comment, head_events=tl.head_events)
    labels = approval.plan_labels(facts.labels, settings.policy)
    res = Result(outputs={"proceed": str(problem is None).lower(), "base-sha": facts.base_sha,
                          "labels": "\n".join(labels)})
    res.messages.append(problem or f"PR #{pr} is at the approved commit {sha[:12]}, approved in comment {comment} "
                                   f"and not moved since; labels: {', '.join(labels) or 'none'}")
    res.exit_code = 1 if problem else 0
    return res
