"""What every PR-bot flow shares: settings from the environment, the result it returns, the lazy
GitHub client, the PR's timeline and the sticky-comment write.

A flow reads an event, asks GitHub only what its decision needs (lazily: events that cannot need
GitHub cost zero calls and need no token), calls the pure `decide.py` of its feature, performs the
writes and returns a `Result` (step outputs, messages, exit code) that `cli/` renders.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Protocol

from ci_tools import names
from ci_tools.errors import InputError
from ci_tools.github.client import GitHub
from ci_tools.github.rest import seconds_from_env
from ci_tools.sweep.labels import Policy
from ci_tools.sweep.load import load_policy
from ci_tools.prbot import sticky
from ci_tools.prbot.card.shell import SETTLE_S
from ci_tools.github.models import Comment, Timeline

SWEEP_WORKFLOW = names.SWEEP_WORKFLOW
RESULTS_SITE = "https://inferencex.semianalysis.com"
STAGING_SITE = "https://inferencemax-app-git-staging-semianalysisai.vercel.app"
RESULTS_REPO = "SemiAnalysisAI/InferenceX-app"


def report_site(env: Mapping[str, str]) -> str:
    """Where the sweep reports are published (results/pages.py): CI_TOOLS_REPORT_SITE, else Pages' own
    address when CI_TOOLS_REPORT_PAGES is on; empty: the card links the report artifact."""
    from ci_tools.results.pages import site_of

    return site_of(env.get("CI_TOOLS_REPORT_SITE") or "", env.get("CI_TOOLS_REPORT_PAGES") or "",
                   env.get("GITHUB_REPOSITORY") or "")


@dataclass
class Settings:
    repo_root: Path
    bot: str = sticky.DEFAULT_BOT
    workflow: str = SWEEP_WORKFLOW
    main_ref: str = "refs/heads/main"
    results_site: str = RESULTS_SITE
    staging_site: str = STAGING_SITE
    results_repo: str = RESULTS_REPO
    card_settle: float = SETTLE_S  # see card/shell.py; tests against the fake use 0
    # the GitHub Pages site the sweep reports are published to (results/pages.py), when the
    # repository enables it; empty: the card links the run's report artifact
    report_site: str = ""
    # fetch PR commits the checkout lacks from origin by SHA (the reuse inputs check; set in workflows)
    fetch_commits: bool = False
    _policy: Policy | None = None

    @classmethod
    def from_env(cls, repo_root: Path, env: Mapping[str, str] | None = None) -> "Settings":
        env = os.environ if env is None else env
        return cls(repo_root=repo_root, bot=env.get("CI_TOOLS_BOT_LOGIN") or sticky.DEFAULT_BOT,
                   workflow=env.get("CI_TOOLS_SWEEP_WORKFLOW") or SWEEP_WORKFLOW,
                   main_ref=f"refs/heads/{env.get('CI_TOOLS_MAIN_BRANCH') or 'main'}",
                   results_site=env.get("CI_TOOLS_RESULTS_SITE") or RESULTS_SITE,
                   staging_site=env.get("CI_TOOLS_STAGING_SITE") or STAGING_SITE,
                   results_repo=env.get("CI_TOOLS_RESULTS_REPO") or RESULTS_REPO,
                   card_settle=seconds_from_env(env, "CI_TOOLS_CARD_SETTLE", SETTLE_S,
                                                "the status card's wait before it re-reads its section"),
                   report_site=report_site(env),
                   fetch_commits=(env.get("CI_TOOLS_FETCH_COMMITS") or "") in ("1", "true"))

    @property
    def policy(self) -> Policy:
        if self._policy is None:
            self._policy = load_policy(self.repo_root)
        return self._policy

    @property
    def main_branch(self) -> str:
        return self.main_ref.removeprefix("refs/heads/")


@dataclass
class Result:
    outputs: dict[str, str] = field(default_factory=dict)
    messages: list[str] = field(default_factory=list)
    exit_code: int = 0
    verdict: str = ""      # what the job summary heads the messages with (a sign-off rejected at exit 0)


class Lazy:
    """Creates the GitHub client on first use; `calls` is 0 when it never was."""

    def __init__(self, factory: Callable[[], GitHub]):
        self._factory = factory
        self.client: GitHub | None = None

    def __call__(self) -> GitHub:
        if self.client is None:
            self.client = self._factory()
        return self.client

    @property
    def calls(self) -> int:
        return self.client.log.count if self.client else 0


class Comments(Protocol):
    """What reading a PR's timeline and writing a sticky comment need of the client (every flow's
    `Client` protocol extends it with the few calls of its own)."""

    repo: str

    def timeline(self, number: int) -> Timeline: ...
    def create_comment(self, number: int, body: str) -> Comment: ...
    def update_comment(self, comment_id: int, body: str) -> Comment: ...


def load_timeline(gh: Comments, pr: int) -> Timeline:
    return gh.timeline(pr)


def upsert(gh: Comments, pr: int, tl: Timeline, kind: str, key, body: str, settings: Settings) -> tuple[str, int]:
    """Create or edit the bot's sticky comment `kind`/`key`; returns (action, comment id)."""
    write = sticky.plan_write(sticky.find_sticky(tl.comments, kind, key, settings.bot), body)
    if write.comment_id is None:    # none yet: "create"
        return "create", gh.create_comment(pr, body).id
    if write.action == "update":
        gh.update_comment(write.comment_id, body)
    return write.action, write.comment_id


def read_repo_file(root: Path, rel: str) -> str:
    """A file of the default branch's checkout (CODEOWNERS, the review checklist)."""
    try:
        return (root / rel).read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"{rel}: cannot read ({exc.strerror}); run from a checkout of the default branch "
                         "or pass --root") from None
