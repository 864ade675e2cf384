"""`ci-tools bot`: the welcome comment, the status card and the PR-description check."""

from __future__ import annotations

from pathlib import Path

import click

from ci_tools.cli.options import repo_option
from ci_tools.cli._prbot import event_name_option, event_path_option, format_option, repo_root_option, run_flow

GITHUB_OUTPUTS = {"bot card-pr": ("pr", "group"), "bot labels": ("created", "updated", "unchanged")}


@click.group("bot")
def cli() -> None:
    """Sticky bot comments and the PR-description check."""


@cli.command("welcome")
@event_path_option
@event_name_option
@repo_root_option
@format_option
def welcome(event_path, event_name, repo_root, fmt) -> None:
    """Post (once per PR) the bilingual welcome and review-process comment.

    \b
    Example:
      ci-tools bot welcome --event-path "$GITHUB_EVENT_PATH"
    """
    from ci_tools.prbot.welcome.flow import welcome as flow

    run_flow(flow, event_path=event_path, event_name=event_name, repo_root=repo_root, fmt=fmt)


@cli.command("status-card")
@event_path_option
@event_name_option
@repo_root_option
@format_option
@click.option("--pr", type=int, default=None, help="PR number [default: from a workflow_run event].")
@click.option("--run-id", type=int, default=None, help="Sweep run to show [default: the workflow_run's].")
@click.option("--run-url", default="", help="URL of --run-id.")
@click.option("--conclusion", default="", help="Conclusion of --run-id (success, failure, ...).")
@click.option("--head-sha", default="", help="Head commit of --run-id.")
@click.option("--plan-file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Markdown plan summary to show (e.g. written by `ci-tools plan`).")
@click.option("--plan-json", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="The run's plan (`ci-tools plan --format json`, the changelog-metadata artifact): its "
                   "one-line summary is shown.")
@click.option("--evals-file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="The run's eval table (evals.md, written by `results collect`); missing: the card says so.")
def status_card(event_path, event_name, repo_root, fmt, pr, run_id, run_url, conclusion, head_sha, plan_file,
                plan_json, evals_file) -> None:
    """Update the PR's one status card: latest run links, plan summary, eval table, reuse state.

    \b
    Example:
      ci-tools bot status-card --event-path "$GITHUB_EVENT_PATH"
      ci-tools bot status-card --pr 12 --plan-file plan.md
      ci-tools bot status-card --event-path "$GITHUB_EVENT_PATH" --plan-json metadata/plan.json
    """
    from ci_tools.prbot.card.flow import card_inputs, status_card as flow

    run = {"id": run_id, "url": run_url, "conclusion": conclusion, "head_sha": head_sha} if run_id else None
    plan, evals = card_inputs(plan_file=plan_file, plan_json=plan_json, evals_file=evals_file)
    run_flow(flow, event_path=event_path, event_name=event_name, repo_root=repo_root, fmt=fmt, needs_event=False,
             pr=pr, run=run, plan=plan, evals=evals)


@cli.command("card-pr")
@event_path_option
@event_name_option
@format_option
def card_pr(event_path, event_name, fmt) -> None:
    """Which PR a finished sweep run's status card belongs to (outputs `pr` and `group`, both empty
    when none), from the workflow_run event alone: status-card.yml's card job takes `group` as its
    concurrency group, one per PR. No API calls.

    \b
    Example:
      ci-tools bot card-pr --event-path "$GITHUB_EVENT_PATH" --format github
    """
    from ci_tools.prbot.card.flow import which_pr

    run_flow(which_pr, event_path=event_path, event_name=event_name, repo_root=Path("."), fmt=fmt)


@cli.command("pr-body")
@event_path_option
@event_name_option
@format_option
def pr_body(event_path, event_name, fmt) -> None:
    """Check that the PR description has the AI model disclosure filled in and every checklist item
    ticked. Exits 1 listing what is missing (the job is the check). No API calls.

    \b
    Example:
      ci-tools bot pr-body --event-path "$GITHUB_EVENT_PATH" --format github
    """
    from ci_tools.prbot.prbody.flow import pr_body as flow

    run_flow(lambda event, settings, gh: flow(event), event_path=event_path, event_name=event_name,
             repo_root=Path("."), fmt=fmt)


@cli.command("labels")
@repo_option(help="The repository whose labels to create or update.")
@repo_root_option
@format_option
@click.option("--dry-run", is_flag=True, help="Say what would change; write nothing.")
def labels(repo, repo_root, fmt, dry_run) -> None:
    """Create or update the sweep labels the policy names (inferencex-e2e/ci-policy.yaml): a colour
    per kind, a description of what each does. Labels the policy does not name are left alone. Needs
    a token with `issues: write` in $GITHUB_TOKEN (or `gh auth token`'s).

    \b
    Example:
      GITHUB_TOKEN=$(gh auth token) ci-tools bot labels --repo octo/bench
      ci-tools bot labels --repo octo/bench --dry-run
    """
    import os

    from ci_tools.prbot.welcome.flow import sync_labels

    if not repo:
        raise click.UsageError("give --repo OWNER/NAME (or set GITHUB_REPOSITORY)")
    os.environ["GITHUB_REPOSITORY"] = repo
    run_flow(sync_labels, event_path=None, event_name=None, repo_root=repo_root, fmt=fmt, uses_event=False,
             dry_run=dry_run)
