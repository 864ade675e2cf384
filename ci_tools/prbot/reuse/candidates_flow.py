"""`plan --pr`'s list of the runs `/use` could pin: the PR's newest sweep runs, each checked by the
reuse rules a pin is checked by at merge. The plan flow (`sweep.flow.plan`) sits on a floor below the
bot and takes this as its `candidates` argument from the command (`cli/plan.py`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:   # `plan` imports this module on every run: the reuse rules load only when asked
    from ci_tools.github.models import PullRequest, Timeline
    from ci_tools.prbot.reuse.runs_flow import Source
    from ci_tools.sweep.labels import Policy

    class Client(Source, Protocol):
        def pull_request(self, number: int) -> PullRequest: ...
        def timeline(self, number: int) -> Timeline: ...


@dataclass(frozen=True)
class UseCandidate:
    """A sweep run of the PR and whether `/use <run_id>` would pin it (`problem` None) or why not."""

    run_id: int
    created_at: str
    head_sha: str
    conclusion: str | None
    problem: str | None

    def as_dict(self) -> dict:
        return {"run": self.run_id, "created-at": self.created_at, "head-sha": self.head_sha,
                "conclusion": self.conclusion, "usable": self.problem is None, "problem": self.problem}


def use_candidates(gh: Client, number: int, policy: Policy, *, limit: int = 10) -> list[UseCandidate]:
    """The PR's newest sweep runs (at most `limit`), each checked by the reuse rules a `/use <run_id>`
    pin is checked by at merge (`runs_flow.check_run`): which one a maintainer could pin, and why not the others."""
    from ci_tools import names
    from ci_tools.prbot import context
    from ci_tools.prbot.reuse import runs_flow, verdict

    pr = context.of(gh.pull_request(number))
    timeline = gh.timeline(number)
    out = []
    for _, listed in zip(range(limit), gh.runs(names.SWEEP_WORKFLOW, branch=pr.head_ref)):
        run = verdict.sweep_run(listed)
        answer = runs_flow.check_run(run, verdict.reuse_rules(pinned=True), pr=pr, timeline=timeline, policy=policy,
                                     workflow_path=f"{names.WORKFLOWS_DIR}/{names.SWEEP_WORKFLOW}", source=gh)
        problem = answer.why if isinstance(answer, verdict.Refusal) else None
        out.append(UseCandidate(run.id, run.created_at or "", run.head_sha, run.conclusion, problem))
    return out
