"""`ci-tools plan`: what the GPU fleet would run for a change, and why (or why not)."""

from __future__ import annotations

import os
from pathlib import Path

import click

from ci_tools.cli.options import repo_option, root_option

from ci_tools import names


def _attempt(value: str | None) -> int:
    """GITHUB_RUN_ATTEMPT (1 outside Actions or when unreadable: a first attempt is never refused)."""
    return int(value) if value and value.isdigit() else 1


def _output_names(params: dict) -> tuple[str, ...]:
    from ci_tools.sweep.render import output_names

    return tuple(output_names(bool(params.get("gate_only"))))


# What `--format github` writes to $GITHUB_OUTPUT (read by the workflow contract test); the names
# come from the renderer that writes them.
GITHUB_OUTPUTS = {"plan": _output_names}


def _split_labels(values: tuple[str, ...]) -> tuple[tuple[str, ...], list[str]]:
    """`--label a,b` as two labels (a policy label never holds a comma), said in a note."""
    labels, notes = [], []
    for value in values:
        parts = [p.strip() for p in value.split(",") if p.strip()]
        if len(parts) > 1:
            notes.append(f"--label {value!r} is read as {len(parts)} labels: {', '.join(parts)}")
        labels += parts or [value]
    return tuple(labels), notes


def _repo_or_old_checkout(ctx, param, value):
    """`--repo OWNER/NAME`; a directory given as `--repo` is the checkout (its name before `--root`)."""
    if value and Path(value).is_dir():
        return Path(value)
    from ci_tools.cli.options import _owner_name

    return _owner_name(ctx, param, value)


@click.command("plan")
@click.option("--base", help="Base ref (default: from --event-path; PRs use the merge base with --head).")
@click.option("--head", help="Head ref (default: from --event-path).")
@click.option("--label", "labels", multiple=True, help="A PR label (repeatable, or comma-separated). Replaces the "
              "event's (or the PR's) labels; labels the policy does not name are ignored, as CI ignores them.")
@click.option("--pr", type=click.IntRange(min=1), help="Plan this PR as CI would on its next push: labels, head and "
              "base from GitHub ($GITHUB_TOKEN; the head must be fetched: git fetch origin pull/N/head).")
@repo_option("--github-repo", name="github_repo", envvar=False, callback=_repo_or_old_checkout,
             help="With --pr: the PR's repository (default: $GITHUB_REPOSITORY, else the origin remote).")
@click.option("--event-path", type=click.Path(dir_okay=False), help="GitHub webhook payload ($GITHUB_EVENT_PATH).")
@click.option("--event-name", envvar="GITHUB_EVENT_NAME", help="Event name (default: $GITHUB_EVENT_NAME, else "
              "inferred from the payload).")
@click.option("--head-message", help="Head commit message (default: read from git).")
@click.option("--gate-only", is_flag=True, help="Decide from the event alone (no configs): fast, for the "
              "concurrency group and label-change logic.")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "github"]), default="text", show_default=True)
@click.option("--changelog-file", default=names.CHANGELOG, show_default=True)
@click.option("--master", "masters", multiple=True, help="Master config path in the repo (repeatable; default "
              f"{names.MASTER_GLOB} at the head ref).")
@click.option("--runners", help="runners.yaml path in the repo (default: beside the first master).")
@root_option(name="root", exists=False, help="The checkout (a git repository).")
@click.option("--after-canary", is_flag=True, help="The canaries have run: emit only the rows of families whose "
              "canary passed (--passed-family); the others run nothing.")
@click.option("--passed-family", "passed", multiple=True, help="With --after-canary: a runner label whose canary "
              "passed (repeatable).")
@click.option("--canary-dir", type=click.Path(file_okay=False, path_type=Path), help="The canaries have run: the "
              "folder the canary-passed-* artifacts were downloaded to; each releases its own canary's family "
              "(implies --after-canary).")
@click.option("--no-runner-screen", "unscreened", is_flag=True, help="Do not refuse rows `ci-tools runner run` "
              "cannot serve (no recipe, ...): for a repository whose rows its own launch scripts serve, as "
              "InferenceX's do, and replays of its history. The plan says so in a note.")
@click.option("--image-policy", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Check images against this policy file's `images: allowed:` instead of the head's own (a "
                   "trusted sweep: the workflow commit's, as `runner run --image-policy` does).")
def cli(base, head, labels, pr, github_repo, event_path, event_name, head_message, gate_only, fmt, changelog_file,
        masters, runners, root, after_canary, passed, canary_dir, unscreened, image_policy):
    """Plan the sweep of a change: gate verdict, canaries, points, GPU-hours.

    \b
    Examples:
      ci-tools plan --base origin/main --head HEAD --label full-sweep-fail-fast
      ci-tools plan --pr 42
      ci-tools plan --event-path "$GITHUB_EVENT_PATH" --format github
      ci-tools plan --event-path "$GITHUB_EVENT_PATH" --gate-only --format github
      ci-tools plan --event-path "$GITHUB_EVENT_PATH" --canary-dir "$RUNNER_TEMP/canaries" --format github
      ci-tools plan --base origin/main --head HEAD --after-canary --passed-family b300
    \b
    With --format github the outputs go to $GITHUB_OUTPUT and a summary to
    $GITHUB_STEP_SUMMARY (see docs/reference.md, "`plan` output", for the output names).
    Exit 1 when the labels or the change are invalid (the check must fail), else 0.
    """
    from ci_tools.sweep import flow, render

    if isinstance(github_repo, Path):     # `--repo DIR`, the checkout's old spelling
        root, github_repo = github_repo, None
    repo = root
    labels, split_notes = _split_labels(labels)
    for note in split_notes:
        click.echo(f"note: {note}", err=True)
    req = flow.PlanRequest(repo=Path(repo), base=base, head=head, labels=tuple(labels), event_path=event_path,
                           event_name=event_name, head_message=head_message, changelog=changelog_file,
                           masters=tuple(masters), runners=runners, run_id=os.environ.get("GITHUB_RUN_ID"),
                           run_attempt=_attempt(os.environ.get("GITHUB_RUN_ATTEMPT")),
                           after_canary=after_canary or canary_dir is not None, passed=frozenset(passed),
                           canary_dir=canary_dir, pr=pr, github_repo=github_repo,
                           env=dict(os.environ), runner_screen=not unscreened, image_policy=image_policy)
    if gate_only:
        outcome = flow.gate(req)
    else:
        from ci_tools.prbot.reuse.candidates_flow import use_candidates
        from ci_tools.runner.screen_git import screen_at

        outcome = flow.plan(req, screener=screen_at, candidates=use_candidates)
    for note in outcome.notes:
        click.echo(f"note: {note}", err=True)
    if fmt == "github":
        from ci_tools.github import actions

        actions.append_outputs(render.github_outputs(outcome.decision, outcome.plan), what=render.OUTPUTS_WHAT,
                               hint=render.OUTPUTS_HINT)
        if outcome.plan is not None:
            actions.append_step_summary(render.render_summary(outcome.plan))
            for finding in outcome.plan.findings:
                click.echo(actions.finding_annotation(finding, "plan"))
        click.echo(render.render_text(outcome.decision, outcome.plan), err=True, nl=False)
    elif fmt == "json":
        click.echo(render.render_json(outcome.decision, outcome.plan, outcome.use_candidates), nl=False)
    else:
        click.echo(render.render_text(outcome.decision, outcome.plan, outcome.use_candidates, pr), nl=False)
    if outcome.error:
        raise click.exceptions.Exit(1)      # the verdict above carries the error: say it once
