"""`ci-tools comment handle`: run the commands in a pull-request comment."""

from __future__ import annotations

import click

from ci_tools.cli._prbot import (event_name_option, event_path_option, format_option, repo_root_option,
                                results_dispatcher, run_flow)


@click.group("comment")
def cli() -> None:
    """Pull-request comment commands (/use, /reuse-sweep-run, /stage-results, /sweep plan)."""


@cli.command("handle")
@event_path_option
@event_name_option
@repo_root_option
@format_option
def handle(event_path, event_name, repo_root, fmt) -> None:
    """Parse the comment of an issue_comment event and act on its commands.

    Replies once per command comment (edited in place on re-runs); a `/stage-results` also sends the
    results app a repository_dispatch (token: RESULTS_DISPATCH_TOKEN).

    \b
    Example:
      ci-tools comment handle --event-path "$GITHUB_EVENT_PATH" --format github
    """
    from ci_tools.github.flows import handle_comment

    def flow(event, settings, gh):
        return handle_comment(event, settings, gh, results_dispatcher(gh))

    run_flow(flow, event_path=event_path, event_name=event_name, repo_root=repo_root, fmt=fmt)
