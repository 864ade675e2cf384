"""`ci-tools reuse resolve`: whether this sweep is skipped or replaced by an authorised earlier run."""

from __future__ import annotations

import click

from ci_tools.cli._prbot import event_name_option, event_path_option, format_option, repo_root_option, run_flow


def _output_names(params: dict) -> tuple[str, ...]:
    from ci_tools.prbot.reuse.decide import ReuseDecision
    from ci_tools.prbot.reuse.flow import outputs

    return tuple(outputs(ReuseDecision()))


# What `--format github` writes to $GITHUB_OUTPUT (read by the workflow contract test): every
# decision writes the same keys, so an empty one names them all.
GITHUB_OUTPUTS = {"reuse resolve": _output_names}


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
