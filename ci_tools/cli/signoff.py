"""`ci-tools signoff verify`: check a CODEOWNER sign-off and write the codeowner-signoff-verify check run."""

from __future__ import annotations

from pathlib import Path

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
@click.option("--review-file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="A review record (`signoff record`): verify that review; the event is then the "
                   "workflow_run of the record run.")
def verify(event_path, event_name, repo_root, fmt, review_file) -> None:
    """Verify the sign-off in a comment or review, or carry the check over after a push.

    Reads .github/CODEOWNERS and docs/PR_REVIEW_CHECKLIST.md from --root (a checkout of the
    default branch, never the PR head). Posts one verdict comment per PR and the check run.
    CODEOWNERS team entries are read with TEAM_MEMBERSHIP_TOKEN (organization Members: read; a
    GITHUB_TOKEN cannot read teams); without it a team-owned file fails closed with that reason.

    \b
    Example:
      ci-tools signoff verify --event-path "$GITHUB_EVENT_PATH" --root . --format github
    """
    from ci_tools.prbot.signoff.flow import verify_review, verify_signoff

    def flow(event, settings, gh):
        if review_file is not None:
            return verify_review(event, settings, gh, team_reader(gh), review_file)
        return verify_signoff(event, settings, gh, team_reader(gh))

    run_flow(flow, event_path=event_path, event_name=event_name, repo_root=repo_root, fmt=fmt)


@cli.command("record")
@event_path_option
@event_name_option
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Folder for the record (uploaded as the signoff-review artifact).")
@format_option
def record(event_path, event_name, out_dir, fmt) -> None:
    """Record which review to verify (first phase of review sign-offs; needs no token).

    A fork's pull_request_review run cannot write, so it only records the PR and review id;
    signoff-review-verify.yml (workflow_run) reads the review from the API and verifies it.

    \b
    Example:
      ci-tools signoff record --event-path "$GITHUB_EVENT_PATH" --out "$RUNNER_TEMP/review"
    """
    from ci_tools.prbot.signoff.flow import record_review

    run_flow(lambda event, settings, gh: record_review(event, out_dir), event_path=event_path,
             event_name=event_name, repo_root=Path("."), fmt=fmt)
