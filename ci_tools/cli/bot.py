"""`ci-tools bot`: the welcome comment, the status card and the PR-description check."""

from __future__ import annotations

from pathlib import Path

import click

from ci_tools.cli._prbot import event_name_option, event_path_option, format_option, repo_root_option, run_flow


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
    import json

    from ci_tools.errors import InputError, UsageError
    from ci_tools.prbot.card.flow import status_card as flow

    run = {"id": run_id, "url": run_url, "conclusion": conclusion, "head_sha": head_sha} if run_id else None
    if plan_file and plan_json:
        raise UsageError("give --plan-file or --plan-json, not both")
    try:
        plan = plan_file.read_text(encoding="utf-8") if plan_file else None
    except OSError as exc:
        raise InputError(f"{plan_file}: cannot read the plan summary ({exc.strerror})") from None
    if plan_json:
        from ci_tools.render.plan import card_summary

        try:
            data = json.loads(plan_json.read_text(encoding="utf-8"))
            plan = card_summary(data)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise InputError(f"{plan_json}: not a plan from `ci-tools plan --format json` ({exc})") from None
    evals = None
    if evals_file is not None:
        evals = (evals_file.read_text(encoding="utf-8") if evals_file.is_file() else
                 "**Evals:** no eval results were collected for this run (its collect job did not finish), so "
                 "`/use` refuses it.")
    run_flow(flow, event_path=event_path, event_name=event_name, repo_root=repo_root, fmt=fmt, needs_event=False,
             pr=pr, run=run, plan=plan, evals=evals)


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
