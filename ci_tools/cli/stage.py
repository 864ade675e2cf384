"""`ci-tools stage callback`: the results app reports staging progress; update the PR comment."""

from __future__ import annotations

import click

from ci_tools.cli._prbot import event_name_option, event_path_option, format_option, repo_root_option, run_flow


@click.group("stage")
def cli() -> None:
    """Result staging (`/stage-results` is handled by `comment handle`)."""


@cli.command("callback")
@event_path_option
@event_name_option
@repo_root_option
@format_option
def callback(event_path, event_name, repo_root, fmt) -> None:
    """Handle a stage-results-started / stage-results-completed repository_dispatch.

    Validates the payload, then edits the bot's acknowledgement comment named by comment-id; a phase
    never moves backwards, so late callbacks cannot undo a completion.

    \b
    Example:
      ci-tools stage callback --event-path "$GITHUB_EVENT_PATH" --format github
    """
    from ci_tools.prbot.staging.flow import stage_callback

    run_flow(stage_callback, event_path=event_path, event_name=event_name, repo_root=repo_root, fmt=fmt)
