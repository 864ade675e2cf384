"""Options and plumbing shared by the pull-request command groups (comment, reuse, signoff, stage, bot)."""

from __future__ import annotations

import os
from pathlib import Path

import click

from ci_tools.cli.options import root_option

FORMATS = ("text", "json", "github")

event_path_option = click.option("--event-path", type=click.Path(dir_okay=False), default=None,
                                 help="Event payload file [default: $GITHUB_EVENT_PATH].")
event_name_option = click.option("--event-name", default=None,
                                 help="Event name [default: $GITHUB_EVENT_NAME, else guessed from the payload].")
repo_root_option = root_option("--repo-root", name="repo_root",
                               help="Checkout of the default branch (policy, CODEOWNERS, checklist).")
format_option = click.option("--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True,
                             help="github: also write step outputs to $GITHUB_OUTPUT.")


def run_flow(flow, *, event_path, event_name, repo_root: Path, fmt: str, needs_event: bool = True,
             uses_event: bool = True, **kw) -> None:
    """`needs_event=False`: the event is read when there is one; `uses_event=False`: never read (the
    command takes everything from options, so a trigger ci-tools does not parse, such as the trusted
    sweep's workflow_dispatch, cannot fail it: Actions always sets $GITHUB_EVENT_PATH)."""
    from ci_tools.github.actions import annotate, write_outputs
    from ci_tools.github.client import GitHub
    from ci_tools.github.events import load_event
    from ci_tools.prbot.shell import Lazy, Settings

    wanted = uses_event and (needs_event or event_path or os.environ.get("GITHUB_EVENT_PATH"))
    event = load_event(event_path, event_name) if wanted else None
    settings = Settings.from_env(repo_root)
    gh = Lazy(lambda: GitHub.from_env(event.repo if event and event.repo else None))
    result = flow(event, settings, gh, **kw)
    result.messages.append(f"GitHub API requests: {gh.calls}")
    write_outputs(result.outputs, fmt, result.messages)
    if fmt == "github":
        from ci_tools.github.actions import append_step_summary

        # Every gate leaves its verdict and all its messages in the job summary (annotations are capped).
        append_step_summary(summary_section(click.get_current_context().command_path, result))
    if result.exit_code and fmt == "github" and result.messages:
        annotate("error", result.messages[0], title=click.get_current_context().command_path)
    if result.exit_code:
        raise SystemExit(result.exit_code)


def summary_section(command: str, result) -> str:
    """The job-summary section of a pull-request command: its verdict (the flow's own word for it, e.g.
    a rejected sign-off, which exits 0 because the commit status is the gate), then every message."""
    verdict = f"failed (exit {result.exit_code})" if result.exit_code else (result.verdict or "done")
    return f"### {command}: {verdict}\n\n" + "".join(f"- {m}\n" for m in result.messages)


def results_dispatcher(gh):
    """A lazy client for the results app's repository_dispatch (RESULTS_DISPATCH_TOKEN), or None
    when no token is set (the flow then fails with a message only if it actually has to dispatch)."""
    from ci_tools.github.client import DEFAULT_API_URL, GitHub
    from ci_tools.prbot.shell import Lazy

    token = os.environ.get("RESULTS_DISPATCH_TOKEN")
    if not token:
        return None
    return Lazy(lambda: GitHub(gh().repo, token, api_url=os.environ.get("GITHUB_API_URL") or DEFAULT_API_URL))


def team_reader(gh):
    """A lazy client for CODEOWNERS team membership (TEAM_MEMBERSHIP_TOKEN: organization Members: read,
    e.g. a GitHub App installation token), or None when no such token is set."""
    from ci_tools.github.client import DEFAULT_API_URL, GitHub
    from ci_tools.prbot.shell import Lazy

    token = os.environ.get("TEAM_MEMBERSHIP_TOKEN")
    if not token:
        return None
    return Lazy(lambda: GitHub(gh().repo, token, api_url=os.environ.get("GITHUB_API_URL") or DEFAULT_API_URL))
