"""`ci-tools plan`: what the GPU fleet would run for a change, and why (or why not)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import click

from ci_tools import paths
from ci_tools.errors import InputError, UsageError


def _read_event(path: str, event_name: str | None, run_id: str | None, head_message: str | None):
    from ci_tools.policy.event import event_from_payload

    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: cannot read the event file: {exc.strerror}") from None
    try:
        payload = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: malformed event file: not JSON ({exc})") from None
    return event_from_payload(payload, event_name, file=path, run_id=run_id, head_message=head_message)


def _head_message(git, sha: str | None) -> str | None:
    if not sha:
        return None
    try:
        proc = git._run("log", "-1", "--format=%B", git.rev_parse(sha), check=False)
    except InputError:
        return None
    return proc.stdout.decode("utf-8", "replace") if proc.returncode == 0 else None


def _load_masters(git, ref: str, master_paths: list[str], runners_path: str | None):
    """Master configs and runner hardware at `ref` (git objects, not the working tree)."""
    from ci_tools.config.masters import merge_master_docs
    from ci_tools.policy.plan import Masters
    from ci_tools.yamlio import load_yaml_text

    if not master_paths:
        master_paths = sorted(p for p in git.ls_files(ref, paths.CONFIGS_DIR)
                              if p.startswith(paths.CONFIGS_DIR + "/") and p.endswith("-master.yaml")
                              and "/" not in p[len(paths.CONFIGS_DIR) + 1:])
        if not master_paths:
            raise InputError(f"no master configs ({paths.MASTER_GLOB}) at {ref}; pass --master PATH")
    runners_path = runners_path or str(Path(master_paths[0]).parent / "runners.yaml")
    blobs = git.show_many(ref, master_paths + [runners_path])
    docs = []
    for p in master_paths:
        if blobs[p] is None:
            raise InputError(f"{p}: no such file at {ref}")
        docs.append(load_yaml_text(blobs[p].decode("utf-8", "replace"), p))
    masters = merge_master_docs(docs)
    hardware = {}
    if blobs[runners_path] is not None:
        runners = load_yaml_text(blobs[runners_path].decode("utf-8", "replace"), runners_path).data or {}
        hardware = runners.get("hardware") or {} if isinstance(runners, dict) else {}
    return Masters(masters.entries, hardware), masters


def _entries(git, base: str, head: str, changelog: str, master_keys: list[str]):
    from ci_tools.changelog.keys import resolve_keys
    from ci_tools.changelog.parse import appended_entries
    from ci_tools.policy.plan import PlanEntry

    blobs_head = git.show(head, changelog)
    if blobs_head is None:
        raise InputError(f"{changelog}: no such file at {head}; pass --changelog-file")
    out = []
    for e in appended_entries(git.show(base, changelog), blobs_head, changelog):
        patterns = e.data.get("config-keys") or []
        if not isinstance(patterns, list) or not all(isinstance(p, str) for p in patterns):
            raise InputError(f"{changelog}:{e.line}: config-keys must be a list of strings; "
                             "run `ci-tools changelog lint` for details")
        resolved, unmatched = resolve_keys(patterns, master_keys)
        if unmatched:
            import difflib

            hints = []
            for u in unmatched:
                close = difflib.get_close_matches(u, master_keys, n=3, cutoff=0.6)
                hints.append(f"{u!r}" + (f" (did you mean {', '.join(close)}?)" if close else ""))
            raise InputError(f"{changelog}:{e.line}: unknown config key(s) {', '.join(hints)}: no master config "
                             "has that key; fix the entry or add the config")
        out.append(PlanEntry(e.index, e.line, e.data, resolved))
    return out


@click.command("plan")
@click.option("--base", help="Base ref (default: from --event-path; PRs use the merge base with --head).")
@click.option("--head", help="Head ref (default: from --event-path).")
@click.option("--label", "labels", multiple=True, help="A PR label (repeatable). Replaces the event's labels.")
@click.option("--event-path", type=click.Path(dir_okay=False), help="GitHub webhook payload ($GITHUB_EVENT_PATH).")
@click.option("--event-name", envvar="GITHUB_EVENT_NAME", help="Event name (default: $GITHUB_EVENT_NAME, else "
              "inferred from the payload).")
@click.option("--use-authorized", is_flag=True, help="An authorised /use pin exists on the PR (from `ci-tools "
              "reuse`): synchronize then starts no sweep.")
@click.option("--head-message", help="Head commit message (default: read from git).")
@click.option("--gate-only", is_flag=True, help="Decide from the event alone (no configs): fast, for the "
              "concurrency group and label-change logic.")
@click.option("--format", "fmt", type=click.Choice(["table", "json", "github"]), default="table", show_default=True)
@click.option("--changelog-file", default=paths.CHANGELOG, show_default=True)
@click.option("--master", "masters", multiple=True, help="Master config path in the repo (repeatable; default "
              f"{paths.MASTER_GLOB} at the head ref).")
@click.option("--runners", help="runners.yaml path in the repo (default: beside the first master).")
@click.option("--repo", default=".", show_default=True, type=click.Path(file_okay=False), help="The git repository.")
def cli(base, head, labels, event_path, event_name, use_authorized, head_message, gate_only, fmt, changelog_file,
        masters, runners, repo):
    """Plan the sweep of a change: gate verdict, canaries, points, GPU-hours.

    \b
    Examples:
      ci-tools plan --base origin/main --head HEAD --label full-sweep-fail-fast
      ci-tools plan --event-path "$GITHUB_EVENT_PATH" --format github
      ci-tools plan --event-path "$GITHUB_EVENT_PATH" --gate-only --format github
    \b
    With --format github the outputs go to $GITHUB_OUTPUT and a summary to
    $GITHUB_STEP_SUMMARY (see the README, "Sweep planning", for the output names).
    Exit 1 when the labels or the change are invalid (the check must fail), else 0.
    """
    from ci_tools.policy.gate import Event, decide
    from ci_tools.policy.labels import load_policy

    root = Path(repo)
    policy = load_policy(root)
    run_id = os.environ.get("GITHUB_RUN_ID")
    base_sha = None
    git = None
    if event_path:
        event, base_sha = _read_event(event_path, event_name, run_id, head_message)
        if labels:
            policy.require_known(labels)
            event = Event(**{**event.__dict__, "labels": tuple(labels)})
    else:
        if not gate_only and not head:
            raise UsageError("pass --head REF (and --base REF), or --event-path FILE")
        policy.require_known(labels)
        event = Event(name="local", action="synchronize", labels=tuple(labels), head_message=head_message,
                      sha=head, run_id=run_id)
    if event.name != "push" and event.head_message is None and not gate_only:
        from ci_tools.gitio import Git

        git = Git(root)
        event = Event(**{**event.__dict__, "head_message": _head_message(git, head or event.sha)})

    if gate_only:
        decision = decide(event, policy, use_authorized=use_authorized)
        _emit_gate(decision, fmt)
        if decision.error:
            raise InputError(decision.error)
        return

    from ci_tools.gitio import Git
    from ci_tools.policy.plan import build_plan

    git = git or Git(root)
    head_ref = head or event.sha
    base_ref = base or base_sha
    if not head_ref or not base_ref:
        raise UsageError("cannot tell which commits to compare: pass --base and --head")
    if event.name != "push":
        base_ref = git.merge_base(base_ref, head_ref)
    decision = decide(event, policy, use_authorized=use_authorized)
    entries, head_masters = [], None
    if decision.sweep and not decision.error:
        head_masters, master_set = _load_masters(git, head_ref, list(masters), runners)
        entries = _entries(git, base_ref, head_ref, changelog_file, master_set.keys())
        decision = decide(event, policy, appends_entry=bool(entries), use_authorized=use_authorized)
    base_masters = None
    if decision.sweep and any(e.data.get("append-only") for e in entries):
        base_masters, _ = _load_masters(git, base_ref, list(masters), runners)
    plan = build_plan(decision, entries, head_masters, policy, base=base_masters)
    _emit_plan(plan, fmt)
    if plan.get("error"):
        raise InputError(plan["error"])


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
