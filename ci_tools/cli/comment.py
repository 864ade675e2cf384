"""`ci-tools comment handle`: run the commands in a pull-request comment."""

from __future__ import annotations

import click

from ci_tools.cli._prbot import event_name_option, event_path_option, format_option, repo_root_option, run_flow


GITHUB_OUTPUTS = {
    "comment handle": ("handled", "commands", "reuse-authorised", "stage-run-id", "stage-comment-id",
                       "stage-payload", "approve-sha", "approve-pr", "approve-comment"),
    "comment check-approval": ("proceed", "base-sha", "labels"),
}


def _commands_help() -> str:
    """The group's help, from the command registry (the same rows give the usage reply)."""
    from ci_tools.prbot.commands import REGISTRY
    from ci_tools.prbot.messages import WRITE_ACCESS

    rows = [f"  {' | '.join(h.forms)}\n      {h.what}; by {'someone with ' + WRITE_ACCESS if h.requires else 'anyone who can comment'}"
            for h in REGISTRY]
    return "Pull-request comment commands, each on a line of its own:\n\n\b\n" + "\n".join(rows)


@click.group("comment", help=_commands_help())
def cli() -> None:
    pass


@cli.command("handle")
@event_path_option
@event_name_option
@repo_root_option
@format_option
def handle(event_path, event_name, repo_root, fmt) -> None:
    """Parse the comment of an issue_comment event and act on its commands.

    Replies once per command comment (edited in place on re-runs). An accepted `/stage-results`
    writes `stage-payload`, which `ci-tools stage dispatch` sends in a job of its own (the only one
    that holds RESULTS_DISPATCH_TOKEN). An accepted
    `/sweep approve <sha>` writes the outputs `approve-pr`, `approve-sha` (the full head SHA) and
    `approve-comment` (the comment's id), which the workflow hands to trusted-sweep.yml.

    \b
    Example:
      ci-tools comment handle --event-path "$GITHUB_EVENT_PATH" --format github
    """
    from ci_tools.prbot.flow import handle_comment

    run_flow(handle_comment, event_path=event_path, event_name=event_name, repo_root=repo_root, fmt=fmt)


@cli.command("check-approval")
@click.option("--pr", "pr", type=click.IntRange(min=1), required=True, help="The fork PR's number.")
@click.option("--sha", required=True, help="The approved head SHA (from `/sweep approve`).")
@click.option("--comment", "comment", type=click.IntRange(min=1), required=True,
              help="The id of the comment that approved it (`approve-comment`).")
@repo_root_option
@format_option
def check_approval(pr, sha, comment, repo_root, fmt) -> None:
    """Refuse a trusted sweep the approval no longer holds for; read the labels to plan with.

    The approval's own rule, applied again: exit 1 (and `proceed=false`) when the PR is not open, its
    head is no longer SHA, the head branch was force-pushed, deleted or restored after COMMENT was
    written, or COMMENT no longer says `/sweep approve SHA`. Outputs: `proceed`, `base-sha` (the PR's
    base commit) and `labels` (its sweep labels, one a line).

    \b
    Example:
      ci-tools comment check-approval --pr 1234 --sha "$SHA" --comment "$COMMENT" --format github
    """
    import re

    from ci_tools.errors import UsageError
    from ci_tools.prbot.approval.flow import check_approval as flow

    if not re.fullmatch(r"[0-9a-fA-F]{40}", sha):
        raise UsageError(f"--sha {sha!r}: give the full 40-digit head SHA the approval wrote (`approve-sha`)")
    run_flow(lambda event, settings, gh: flow(settings, gh, pr=pr, sha=sha.lower(), comment=comment),
             event_path=None, event_name=None, repo_root=repo_root, fmt=fmt, uses_event=False)
