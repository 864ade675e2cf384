"""`ci-tools stage dispatch` sends an accepted `/stage-results`; `stage callback` follows the results app's progress."""

from __future__ import annotations

import click

from ci_tools.cli._prbot import (event_name_option, event_path_option, format_option, repo_root_option,
                                results_dispatcher, run_flow)

GITHUB_OUTPUTS = {"stage dispatch": ("dispatched",)}


@click.group("stage")
def cli() -> None:
    """Result staging (`/stage-results` is decided by `comment handle`)."""


@cli.command("dispatch")
@click.option("--payload", required=True, help="The `stage-payload` output of `comment handle` (JSON).")
@event_path_option
@event_name_option
@repo_root_option
@format_option
def dispatch(payload, event_path, event_name, repo_root, fmt) -> None:
    """Send the results app the `stage-results` repository_dispatch that `comment handle` decided.

    Runs under the same issue_comment event, in the only job given RESULTS_DISPATCH_TOKEN. The payload
    is checked again first: its form, then against the triggering comment (PR, author, whose write
    permission is read again), the bot's acknowledgement it names (still `requested`, for this run)
    and the run (this repository's own, same attempt and date). Exit 1, nothing sent, on a mismatch.

    \b
    Example:
      ci-tools stage dispatch --payload "$PAYLOAD" --event-path "$GITHUB_EVENT_PATH" --format github
    """
    from ci_tools.prbot.staging.flow import stage_dispatch

    def flow(event, settings, gh):
        return stage_dispatch(event, settings, gh, results_dispatcher(gh), payload)

    run_flow(flow, event_path=event_path, event_name=event_name, repo_root=repo_root, fmt=fmt)


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
