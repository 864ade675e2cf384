"""`ci-tools signoff verify`: check a CODEOWNER sign-off and set the codeowner-signoff-verify status."""

from __future__ import annotations

import click

from ci_tools.cli._prbot import (event_name_option, event_path_option, format_option, repo_root_option, run_flow,
                                team_reader)


@click.group("signoff")
def cli() -> None:
    """CODEOWNER sign-off verification."""


@cli.command("verify")
@event_path_option
@event_name_option
@repo_root_option
@format_option
def verify(event_path, event_name, repo_root, fmt) -> None:
    """Verify the sign-off in a comment or review, or carry the status over after a push.

    Reads .github/CODEOWNERS and docs/PR_REVIEW_CHECKLIST.md from --repo-root (a checkout of the
    default branch, never the PR head). Posts one verdict comment per PR and the status.
    CODEOWNERS team entries are read with TEAM_MEMBERSHIP_TOKEN (organization Members: read; a
    GITHUB_TOKEN cannot read teams); without it a team-owned file fails closed with that reason.

    \b
    Example:
      ci-tools signoff verify --event-path "$GITHUB_EVENT_PATH" --repo-root . --format github
    """
    from ci_tools.github.flows import verify_signoff

    run_flow(lambda event, settings, gh: verify_signoff(event, settings, gh, team_reader(gh)),
             event_path=event_path, event_name=event_name, repo_root=repo_root, fmt=fmt)
