"""`runner digest`'s flow (shell): the repository's runners and active runs from GitHub, `runners.yaml`
from the checkout, the digest and the queue (`runner/digest.py`, `runner/queue.py`, pure), Slack when a
runner is down."""

from __future__ import annotations

import datetime
import os
from dataclasses import dataclass, field
from pathlib import Path

from ci_tools import names
from ci_tools.errors import InputError
from ci_tools.runner.digest import digest_outputs


@dataclass(frozen=True)
class DigestReport:
    outputs: dict[str, str]
    markdown: str
    messages: list[str]          # requests made, whether Slack was posted to
    data: dict = field(default_factory=dict)    # --format json: the runners and the queue (their as_dict)


def _active_runs(gh, families: set[str], messages: list[str]) -> list[dict]:
    """The repository's active runs with their jobs and, for a run with a job on a family's runner,
    the points of the plan it recorded (an unreadable plan: no points, said)."""
    from ci_tools.github.client import GitHubError

    runs = []
    for run in gh.active_runs():
        jobs = gh.run_jobs(int(run["id"]))
        points: list = []
        if any(set(j.labels) & families for j in jobs):
            try:
                plan = gh.run_plan(int(run["id"])) or {}
            except GitHubError as exc:
                messages.append(f"run {run['id']}: its plan could not be read ({exc}); its jobs show no GPU-hours")
                plan = {}
            points = [p for p in plan.get("points") or [] if isinstance(p, dict)]
        runs.append({**run, "jobs": jobs, "points": points})
    return runs


def digest(repo: str, runners_path: Path | None, root: Path, date: str | None,
           now: datetime.datetime | None = None) -> DigestReport:
    """List the repository's runners, compare them with runners.yaml, show what is queued for them,
    post to Slack when one is down. Runners are listed with RUNNERS_TOKEN (administration: read);
    runs, jobs and plans with GITHUB_TOKEN (actions: read), else RUNNERS_TOKEN too."""
    from ci_tools.config.load import read_runners
    from ci_tools.github.client import GitHub, token_from_env
    from ci_tools.runner import queue
    from ci_tools.runner.digest import as_dict as digest_dict, build_digest, expected_runners, render_markdown

    path = runners_path or (root / names.RUNNERS)
    if not path.is_file():
        raise InputError(f"{path}: runners file not found (pass --runners or --root)", exit_code=2)
    expected = expected_runners(read_runners(path, None if runners_path else root).data)
    api_url = os.environ.get("GITHUB_API_URL") or "https://api.github.com"
    token = os.environ.get("RUNNERS_TOKEN") or token_from_env()
    gh = GitHub(repo, token, api_url=api_url)
    d = build_digest(repo, gh.runners(), expected)
    actions_token = os.environ.get("GITHUB_TOKEN") or os.environ.get("GH_TOKEN") or token
    gh_actions = gh if actions_token == token else GitHub(repo, actions_token, api_url=api_url)
    now = now or datetime.datetime.now(datetime.timezone.utc)
    messages: list[str] = []
    runs = _active_runs(gh_actions, set(expected), messages)
    q = queue.build_queue(runs, {row.label: row.available for row in d.labels}, now)
    date = date or now.strftime("%Y-%m-%d")
    markdown = render_markdown(d, date=date, run_url=_run_url(repo)) + "\n" + queue.render_markdown(q, now)
    requests = gh.log.count + (gh_actions.log.count if gh_actions is not gh else 0)
    messages.insert(0, f"GitHub API requests: {requests}")
    if d.offline or d.missing:
        messages += _post_to_slack(markdown)
    return DigestReport(outputs=digest_outputs(d, q.queued), markdown=markdown, messages=messages,
                        data={"runners": digest_dict(d), "queue": queue.as_dict(q)})


def _run_url(repo: str) -> str:
    """The link to this workflow run (none outside GitHub Actions)."""
    if not os.environ.get("GITHUB_RUN_ID"):
        return ""
    return (f"{os.environ.get('GITHUB_SERVER_URL', 'https://github.com')}/{repo}/actions/runs/"
            f"{os.environ['GITHUB_RUN_ID']}")


def _post_to_slack(markdown: str) -> list[str]:
    """The digest to SLACK_WEBHOOK_URL when one is set; what was done, for the messages."""
    webhook = os.environ.get("SLACK_WEBHOOK_URL")
    if not webhook:
        return []
    from ci_tools.runner.slack import post

    post(webhook, markdown)
    return ["posted to Slack"]
