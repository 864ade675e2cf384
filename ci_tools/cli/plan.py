"""`ci-tools plan`: what the GPU fleet would run for a change, and why (or why not)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import click

from ci_tools import names
from ci_tools.errors import InputError


def _output_names(params: dict) -> tuple[str, ...]:
    from ci_tools.render.plan import output_names

    return tuple(output_names(bool(params.get("gate_only"))))


# What `--format github` writes to $GITHUB_OUTPUT (read by the workflow contract test); the names
# come from the renderer that writes them.
GITHUB_OUTPUTS = {"plan": _output_names}


@click.command("plan")
@click.option("--base", help="Base ref (default: from --event-path; PRs use the merge base with --head).")
@click.option("--head", help="Head ref (default: from --event-path).")
@click.option("--label", "labels", multiple=True, help="A PR label (repeatable). Replaces the event's labels.")
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
@click.option("--repo", default=".", show_default=True, type=click.Path(file_okay=False), help="The git repository.")
@click.option("--after-canary", is_flag=True, help="The canaries have run: emit only the rows of families whose "
              "canary passed (--passed-family); the others run nothing.")
@click.option("--passed-family", "passed", multiple=True, help="With --after-canary: a runner label whose canary "
              "passed (repeatable).")
def cli(base, head, labels, event_path, event_name, head_message, gate_only, fmt, changelog_file,
        masters, runners, repo, after_canary, passed):
    """Plan the sweep of a change: gate verdict, canaries, points, GPU-hours.

    \b
    Examples:
      ci-tools plan --base origin/main --head HEAD --label full-sweep-fail-fast
      ci-tools plan --event-path "$GITHUB_EVENT_PATH" --format github
      ci-tools plan --event-path "$GITHUB_EVENT_PATH" --gate-only --format github
      ci-tools plan --event-path "$GITHUB_EVENT_PATH" --after-canary --passed-family b300 --format github
    \b
    With --format github the outputs go to $GITHUB_OUTPUT and a summary to
    $GITHUB_STEP_SUMMARY (see the README, "Sweep planning", for the output names).
    Exit 1 when the labels or the change are invalid (the check must fail), else 0.
    """
    from ci_tools.plan_flow import PlanRequest, gate, plan

    req = PlanRequest(repo=Path(repo), base=base, head=head, labels=tuple(labels), event_path=event_path,
                      event_name=event_name, head_message=head_message,
                      changelog=changelog_file, masters=tuple(masters), runners=runners,
                      run_id=os.environ.get("GITHUB_RUN_ID"))
    if gate_only:
        outcome = gate(req)
        _notes(outcome.notes)
        _emit_gate(outcome.decision, fmt)
        if outcome.decision.error:
            raise InputError(outcome.decision.error)
        return
    outcome = plan(req, after_canary=after_canary, passed=frozenset(passed))
    _notes(outcome.notes)
    _emit_plan(outcome.plan, fmt)
    if outcome.plan.get("error"):
        raise InputError(outcome.plan["error"])


def _notes(notes: list[str]) -> None:
    for note in notes:
        click.echo(f"note: {note}", err=True)


def _write_env_file(var: str, text: str) -> bool:
    target = os.environ.get(var)
    if not target:
        return False
    with open(target, "a", encoding="utf-8") as fh:
        fh.write(text)
    return True


def _emit_gate(decision, fmt: str) -> None:
    from ci_tools.render.plan import gate_outputs, github_output_text

    data = decision.as_dict()
    if fmt == "json":
        click.echo(json.dumps(data, indent=2))
    elif fmt == "github":
        text = github_output_text(gate_outputs(data))
        if not _write_env_file("GITHUB_OUTPUT", text):
            click.echo(text, nl=False)
    else:
        click.echo(f"{'SWEEP' if decision.sweep else 'NO SWEEP'}: {decision.reason}")
        click.echo(f"check: {'run' if decision.check else 'skip'}; concurrency group: {decision.concurrency_group}"
                   f"{'' if decision.restarts else ' (cancels nothing)'}")


def _emit_plan(plan: dict, fmt: str) -> None:
    from ci_tools.render import plan as render

    if fmt == "json":
        click.echo(render.render_json(plan), nl=False)
    elif fmt == "github":
        text = render.github_output_text(render.plan_outputs(plan))
        if not _write_env_file("GITHUB_OUTPUT", text):
            click.echo(text, nl=False)
        _write_env_file("GITHUB_STEP_SUMMARY", render.render_summary(plan))
        click.echo(render.render_table(plan), err=True, nl=False)
    else:
        click.echo(render.render_table(plan), nl=False)
