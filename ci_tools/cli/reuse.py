"""`ci-tools reuse`: resolve (skip or replace a sweep by an authorised run), ready (the merge-readiness
status), recover (re-ingest a merged PR's run in one command)."""

from __future__ import annotations

from pathlib import Path

import click

from ci_tools.cli._prbot import event_name_option, event_path_option, format_option, repo_root_option, run_flow


def _output_names(params: dict) -> tuple[str, ...]:
    from ci_tools.prbot.reuse.decide import ReuseDecision
    from ci_tools.prbot.reuse.flow import outputs

    return tuple(outputs(ReuseDecision()))


# What `--format github` writes to $GITHUB_OUTPUT (read by the workflow contract test): every
# decision writes the same keys, so an empty one names them all.
def _ready_names(params: dict) -> tuple[str, ...]:
    from ci_tools.prbot.reuse.ready_flow import OUTPUTS

    return OUTPUTS


def _recover_names(params: dict) -> tuple[str, ...]:
    from ci_tools.prbot.reuse.ready_flow import RECOVER_OUTPUTS

    return RECOVER_OUTPUTS


def _group_names(params: dict) -> tuple[str, ...]:
    from ci_tools.prbot.reuse.ready_flow import GROUP_OUTPUTS

    return GROUP_OUTPUTS


GITHUB_OUTPUTS = {"reuse resolve": _output_names, "reuse ready": _ready_names, "reuse recover": _recover_names,
                  "reuse ready-pr": _group_names}


@click.group("reuse")
def cli() -> None:
    """Sweep-run reuse (`/use` pinning)."""


@cli.command("resolve")
@event_path_option
@event_name_option
@repo_root_option
@format_option
def resolve(event_path, event_name, repo_root, fmt) -> None:
    """Decide reuse for a pull_request (skip the PR sweep?) or a push to main (reuse which run?).

    Exits 1 when reuse was authorised but must be refused (fail closed: no sweep, no publication).

    \b
    Example:
      ci-tools reuse resolve --event-path "$GITHUB_EVENT_PATH" --format github
    """
    from ci_tools.prbot.reuse.flow import resolve_reuse

    run_flow(resolve_reuse, event_path=event_path, event_name=event_name, repo_root=repo_root, fmt=fmt)


@cli.command("ready")
@event_path_option
@event_name_option
@repo_root_option
@format_option
@click.option("--pr", type=click.IntRange(min=1), default=None, help="PR number [default: from the event].")
@click.option("--open-prs", is_flag=True, help="Check every open PR into the default branch (the daily pass: "
                                               "artifacts approach their expiry without an event).")
def ready(event_path, event_name, repo_root, fmt, pr, open_prs) -> None:
    """Post the `ci-tools / ready to merge` check run and the card's readiness line.

    Green only when merging now cannot leave main without results: nothing performance-relevant
    changed, the labels make main sweep itself, or a pinned run reuse accepts now keeps its artifacts
    longer than the policy's margin. On a push to main it writes what the merge did on the merged
    PR's card; on a merge queue's group (merge_group) the PR's answer goes on the group's commit too.
    Exits 0 either way: the check run is the gate.

    \b
    Example:
      ci-tools reuse ready --event-path "$GITHUB_EVENT_PATH" --format github
      ci-tools reuse ready --pr 12
      ci-tools reuse ready --open-prs
    """
    from ci_tools.prbot.reuse.ready_flow import ready as flow

    if pr is not None and open_prs:
        raise click.UsageError("give --pr N or --open-prs, not both")
    # with --pr or --open-prs the event is not read (schedule and workflow_dispatch: nothing to parse)
    run_flow(flow, event_path=event_path, event_name=event_name, repo_root=repo_root, fmt=fmt,
             uses_event=pr is None and not open_prs, pr=pr, open_prs=open_prs)


@cli.command("ready-pr")
@event_path_option
@event_name_option
@format_option
@click.option("--pr", type=click.IntRange(min=1), default=None, help="PR number [default: from the event].")
@click.option("--open-prs", is_flag=True, help="The daily pass over every open PR.")
def ready_pr(event_path, event_name, fmt, pr, open_prs) -> None:
    """Which PR an event's `reuse ready` evaluates (outputs `pr` and `group`): merge-ready.yml's ready
    job takes `group` as its concurrency group, one per PR, so the newest event of a PR decides.

    \b
    Example:
      ci-tools reuse ready-pr --event-path "$GITHUB_EVENT_PATH" --format github
    """
    from ci_tools.prbot.reuse.ready_flow import which_pr

    if pr is not None and open_prs:
        raise click.UsageError("give --pr N or --open-prs, not both")
    run_flow(which_pr, event_path=event_path, event_name=event_name, repo_root=Path("."), fmt=fmt,
             uses_event=pr is None and not open_prs, pr=pr, open_prs=open_prs)


@cli.command("recover")
@click.option("--merge-commit", required=True, help="The merge commit on main whose results are missing.")
@click.option("--run", "run_id", type=click.IntRange(min=1), required=True, help="The merged PR's sweep run to ingest.")
@click.option("--merge-run", "merge_run_id", type=click.IntRange(min=1), default=None,
              help="Main's run of the merge commit [default: found among the sweep workflow's push runs].")
@click.option("--dry-run", is_flag=True, help="Print the checks and the dispatch; dispatch nothing.")
@click.option("--requested-by", default=None,
              help="Login that asked for the recovery (the workflow passes the dispatching actor); it must have "
                   "maintain or admin permission.")
@click.option("--request-id", type=click.IntRange(min=1), envvar="GITHUB_RUN_ID", show_envvar=True, default=None,
              help="Names this recovery in the dispatch key (the workflow: its run id). A re-run with the same id "
                   "sends nothing twice; a new id is a new recovery, which the results app does not drop as the "
                   "merge's own ingest.")
@repo_root_option
@format_option
def recover(merge_commit, run_id, merge_run_id, dry_run, requested_by, request_id, repo_root, fmt) -> None:
    """Re-ingest a merged PR's sweep run: check it, then dispatch `ingest-results` to the results app.

    Checks that the run is the merged PR's, green where the policy requires, has its artifacts, and
    measured what was merged (selected master entries and recipes equal between its head and the
    merge commit, read from this clone), then sends source-run-id and merge-run-id with
    RESULTS_DISPATCH_TOKEN. Exits 1 naming the first failed check.

    \b
    Example:
      ci-tools reuse recover --merge-commit 3f2a... --run 25763404168 --dry-run
      ci-tools reuse recover --merge-commit 3f2a... --run 25763404168 --request-id 1
    """
    import re

    from ci_tools.cli._prbot import results_dispatcher
    from ci_tools.prbot.reuse.ready_flow import recover as flow

    if not re.fullmatch(r"[0-9a-f]{40}", merge_commit):
        raise click.BadParameter(f"{merge_commit!r}: give the full 40-character commit SHA", param_hint="--merge-commit")

    def with_dispatcher(event, settings, gh, **kw):
        return flow(event, settings, gh, None if dry_run else results_dispatcher(gh), **kw)

    run_flow(with_dispatcher, event_path=None, event_name=None, repo_root=repo_root, fmt=fmt, uses_event=False,
             merge_commit=merge_commit, run_id=run_id, merge_run_id=merge_run_id, dry_run=dry_run,
             requested_by=requested_by, request_id=request_id)
