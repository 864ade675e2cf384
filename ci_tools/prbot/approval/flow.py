"""`/sweep approve <sha>` in a comment, and `comment check-approval` at the trusted sweep's start."""

from __future__ import annotations

from ci_tools.github.client import GitHub
from ci_tools.github.events import Comment
from ci_tools.prbot import messages
from ci_tools.prbot.approval import decide as approval
from ci_tools.prbot.commands import SweepApprove
from ci_tools.prbot.reuse.flow import is_fork
from ci_tools.prbot.shell import Lazy, Result, Settings


def pr_facts(data: dict) -> approval.PrFacts:
    return approval.PrFacts(number=int(data["number"]), head_sha=data["head"]["sha"], state=data.get("state", ""),
                            draft=bool(data.get("draft")), fork=is_fork(data),
                            labels=tuple(sorted(l["name"] for l in data.get("labels") or [])))


def approve_command(cmd: SweepApprove, c: Comment, pr: int, gh: GitHub, settings: Settings, res: Result) -> str:
    """The reply to an authorised author's approval (the permission was checked for the whole comment)."""
    facts = pr_facts(gh.pull(pr))
    running: list[dict] = []
    if facts.fork and facts.state == "open" and approval.sha_matches(cmd.sha, facts.head_sha):
        running = gh.recent_runs(approval.TRUSTED_WORKFLOW, branch=settings.main_branch, event="workflow_dispatch")
        running = [r for r in running if r.get("status") != "completed"]
    decision = approval.decide(cmd.sha, facts, settings.policy, running)
    res.outputs.update(decision.outputs(pr))
    res.messages.append(decision.reason)
    if decision.running_url:
        return messages.text("approve-duplicate", author=c.author, command=cmd.text, why=decision.reason,
                             run_url=decision.running_url)
    if not decision.approved:
        return messages.text("approve-refused", author=c.author, command=cmd.text, why=decision.reason)
    return messages.text("approve-accepted", author=c.author, sha=decision.sha, pr=pr,
                         workflow=approval.TRUSTED_WORKFLOW)


def check_approval(settings: Settings, gh: Lazy, *, pr: int, sha: str) -> Result:
    """The trusted sweep's first step: the PR must still point at the approved commit (else fail closed),
    and its sweep labels are read now, for `ci-tools plan`."""
    data = gh().pull(pr)
    facts = pr_facts(data)
    problem = approval.check_head(sha, facts.head_sha, pr=pr, state=facts.state)
    labels = approval.plan_labels(facts.labels, settings.policy)
    res = Result(outputs={"proceed": str(problem is None).lower(), "base-sha": data["base"]["sha"],
                          "labels": "\n".join(labels)})
    res.messages.append(problem or f"PR #{pr} is at the approved commit {sha[:12]}; labels: "
                                   f"{', '.join(labels) or 'none'}")
    res.exit_code = 1 if problem else 0
    return res
