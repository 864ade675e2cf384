"""`ci-tools plan`: what the GPU fleet would run for a change, and why (or why not)."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import click

from ci_tools import paths
from ci_tools.errors import InputError, UsageError


def _output_names(params: dict) -> tuple[str, ...]:
    from ci_tools.render.plan import output_names

    return tuple(output_names(bool(params.get("gate_only"))))


# What `--format github` writes to $GITHUB_OUTPUT (read by the workflow contract test); the names
# come from the renderer that writes them.
GITHUB_OUTPUTS = {"plan": _output_names}

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


def _rev_parse_all(git, refs: list[str]) -> None:
    """Resolve several refs with one git process (each later lookup hits the adapter's cache); on any
    failure fall back to one-by-one resolution, which names the bad ref."""
    refs = [r for r in dict.fromkeys(refs) if r and not r.startswith("-")]
    # refs starting with "-" were dropped above, so no option terminator is needed (and git 2.39's
    # rev-parse would echo one back)
    proc = git._run("rev-parse", *[f"{r}^{{commit}}" for r in refs], check=False)
    shas = proc.stdout.decode().split()
    if proc.returncode == 0 and len(shas) == len(refs):
        git._commits.update(zip(refs, shas))
    for r in refs:
        git.rev_parse(r)


def _head_message(git, sha: str | None) -> str | None:
    if not sha:
        return None
    try:
        proc = git._run("log", "-1", "--format=%B", git.rev_parse(sha), check=False)
    except InputError:
        return None
    return proc.stdout.decode("utf-8", "replace") if proc.returncode == 0 else None


def _master_paths(git, ref: str, master_paths: list[str]) -> list[str]:
    if master_paths:
        return master_paths
    found = sorted(p for p in git.ls_files(ref, paths.CONFIGS_DIR)
                   if p.startswith(paths.CONFIGS_DIR + "/") and p.endswith("-master.yaml")
                   and "/" not in p[len(paths.CONFIGS_DIR) + 1:])
    if not found:
        raise InputError(f"no master configs ({paths.MASTER_GLOB}) at {ref}; pass --master PATH")
    return found


def _hardware(blob: bytes | None, name: str) -> dict:
    from ci_tools.yamlio import load_yaml_text

    if blob is None:
        return {}
    runners = load_yaml_text(blob.decode("utf-8", "replace"), name).data or {}
    if not isinstance(runners, dict):
        raise InputError(f"{name}: expected a mapping with `labels` and `hardware`")
    return runners.get("hardware") or {}


def _resolve(entries, changelog: str, master_keys: list[str]) -> list[list[str]]:
    """Each entry's config-key patterns resolved against the master keys; unknown keys are an error."""
    from ci_tools.changelog.keys import resolve_keys

    out = []
    for e in entries:
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
        out.append(resolved)
    return out


def _changelog_inputs(git, base: str, head: str, changelog: str, master_paths: list[str], runners: str | None):
    """(plan entries, head Masters, base Masters or None), reading each git object once.

    Only the master entries the changelog selects are parsed (the rest are split off by a line scan);
    append-only entries need every config at both refs, so then the files are parsed whole.
    """
    from ci_tools.changelog.parse import appended_entries
    from ci_tools.config.masters import read_selected_blobs
    from ci_tools.policy.plan import Masters, PlanEntry

    files = _master_paths(git, head, master_paths)
    runners = runners or str(Path(files[0]).parent / "runners.yaml")
    # one `git cat-file --batch` for every file at head plus the changelog at base
    wanted_files = files + [runners, changelog]
    specs = [f"{git.rev_parse(head)}:{p}" for p in wanted_files] + [f"{git.rev_parse(base)}:{changelog}"]
    blobs = git._batch(specs, wanted_files + ["\0base-changelog"])
    if blobs[changelog] is None:
        raise InputError(f"{changelog}: no such file at {head}; pass --changelog-file")
    for p in files:
        if blobs[p] is None:
            raise InputError(f"{p}: no such file at {head}")
    raw = appended_entries(blobs["\0base-changelog"], blobs[changelog], changelog)
    append_only = any(e.data.get("append-only") for e in raw)
    resolved: list[list[str]] = []

    def wanted(all_keys: list[str]) -> list[str]:
        resolved.extend(_resolve(raw, changelog, all_keys))
        return all_keys if append_only else [k for keys in resolved for k in keys]

    head_set = read_selected_blobs([(p, blobs[p]) for p in files], wanted)
    entries = [PlanEntry(e.index, e.line, e.data, keys) for e, keys in zip(raw, resolved)]
    head_masters = Masters(head_set.entries, _hardware(blobs[runners], runners))
    base_masters = None
    if append_only:
        base_blobs = git.show_many(base, files + [runners])
        present = [(p, base_blobs[p]) for p in files if base_blobs[p] is not None]
        base_set = read_selected_blobs(present, lambda keys: keys) if present else None
        base_masters = Masters(base_set.entries if base_set else {}, _hardware(base_blobs[runners], runners))
    return entries, head_masters, base_masters


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
@click.option("--format", "fmt", type=click.Choice(["table", "json", "github"]), default="table", show_default=True)
@click.option("--changelog-file", default=paths.CHANGELOG, show_default=True)
@click.option("--master", "masters", multiple=True, help="Master config path in the repo (repeatable; default "
              f"{paths.MASTER_GLOB} at the head ref).")
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
            event = dataclasses.replace(event, labels=tuple(labels))
    else:
        if not gate_only and not head:
            raise UsageError("pass --head REF (and --base REF), or --event-path FILE")
        policy.require_known(labels)
        event = Event(name="local", action="synchronize", labels=tuple(labels), head_message=head_message,
                      sha=head, run_id=run_id)
    if gate_only:
        decision = decide(event, policy)
        _emit_gate(decision, fmt)
        if decision.error:
            raise InputError(decision.error)
        return

    from ci_tools.gitio import Git
    from ci_tools.policy.plan import build_plan

    git = Git(root)
    head_ref = head or event.sha
    base_ref = base or base_sha
    if not head_ref or not base_ref:
        raise UsageError("cannot tell which commits to compare: pass --base and --head")
    _rev_parse_all(git, [head_ref, base_ref])
    if event.name != "push" and event.head_message is None:
        event = dataclasses.replace(event, head_message=_head_message(git, head_ref))
    if event.name != "push":
        base_ref = git.merge_base(base_ref, head_ref)
        git._commits.setdefault(base_ref, base_ref)   # a commit id names itself: no rev-parse needed
    decision = decide(event, policy)
    entries, head_masters, base_masters = [], None, None
    if decision.sweep and not decision.error:
        entries, head_masters, base_masters = _changelog_inputs(git, base_ref, head_ref, changelog_file,
                                                                list(masters), runners)
        decision = decide(event, policy, appends_entry=bool(entries))
    screen = None
    if head_masters is not None:
        from ci_tools.runner.screen_git import screen_at

        screen = screen_at(git, head_ref, head_masters)      # rows no runner serves are refused here
    plan = build_plan(decision, entries, head_masters, policy, base=base_masters, screen=screen)
    if after_canary:
        from ci_tools.policy.plan import after_canary as release

        plan = release(plan, set(passed))
    elif passed:
        raise UsageError("--passed-family only makes sense with --after-canary")
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
