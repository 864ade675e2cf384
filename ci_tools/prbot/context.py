"""The facts of one pull request that the PR bot's decisions share, computed once per flow.

A flow reads the PR once (`GitHub.pull_request`, already a `models.PullRequest`) and builds a
`PrContext` with the one setting the decisions need beside it (the default branch, where trusted
sweeps run). Whether the PR is a fork is `PullRequest.fork`, nowhere else.
"""

from __future__ import annotations

from dataclasses import dataclass

from ci_tools.github.models import PullRequest


@dataclass(frozen=True)
class PrContext:
    number: int
    head_sha: str
    head_ref: str = ""
    labels: tuple[str, ...] = ()
    merged_at: str | None = None
    state: str = "open"                # "open" | "closed"
    draft: bool = False
    fork: bool = False                 # head repository differs from the base (or was deleted)
    trusted_branch: str = "main"       # the branch trusted sweeps are dispatched on (the default branch)
    repository: str = ""               # OWNER/NAME of the base repository: every source run must be its own
    base_sha: str = ""


def of(pr: PullRequest, trusted_branch: str = "main") -> PrContext:
    return PrContext(number=pr.number, head_sha=pr.head_sha, head_ref=pr.head_ref, labels=tuple(sorted(pr.labels)),
                     merged_at=pr.merged_at, state=pr.state, draft=pr.draft, fork=pr.fork,
                     trusted_branch=trusted_branch, repository=pr.base_repo, base_sha=pr.base_sha)
