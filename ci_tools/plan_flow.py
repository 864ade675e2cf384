"""The imperative shell of `ci-tools plan`: read the event and git, call the pure planner.

Everything a plan depends on comes from git objects, never the working tree: the changelog at the
merge base and at head, the master configs and runners.yaml at head (and at the base for
append-only entries), and the label policy (`inferencex-e2e/ci-policy.yaml`) at head, the version
the PR's own workflow run checks out; a repository without that file gets ci-tools' default policy
and a note. Only `--gate-only`, which reads no git at all, takes the policy from the working tree.

A plan is refused, with located findings, rather than planned from bad input:
  * a changelog change the append-only gate rejects (the same check as `changelog lint`, without
    its pr-link rules, which do not change what an entry selects);
  * an appended entry whose config keys match nothing;
  * a selected master entry that fails its schema, its cross-field rules or the runner rules.
Master entries the change does not select are not checked here (`config validate` reports them).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from ci_tools import names
from ci_tools.errors import Finding, InputError, UsageError


@dataclass(frozen=True)
class PlanRequest:
    """What the command line asks for (see `ci-tools plan --help`)."""

    repo: Path
    base: str | None = None
    head: str | None = None
    labels: tuple[str, ...] = ()
    event_path: str | None = None
    event_name: str | None = None
    head_message: str | None = None
    changelog: str = names.CHANGELOG
    masters: tuple[str, ...] = ()
    runners: str | None = None
    run_id: str | None = None


@dataclass
class Outcome:
    """A gate decision (`--gate-only`) or a plan dict, and notes for the person reading it."""

    decision: object = None
    plan: dict | None = None
    notes: list[str] = field(default_factory=list)


# ---- the event ----------------------------------------------------------------------------------

def _read_event(path: str, event_name: str | None, run_id: str | None, head_message: str | None):
    from ci_tools.policy.event import event_from_payload

    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: cannot read the event file: {exc.strerror}",
                         exit_code=2 if isinstance(exc, FileNotFoundError) else 1) from None
    try:
        payload = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: malformed event file: not JSON ({exc})") from None
    return event_from_payload(payload, event_name, file=path, run_id=run_id, head_message=head_message)


def _event(req: PlanRequest, *, need_head: bool):
    """(event with the requested labels, base sha from the payload or None)."""
    from ci_tools.policy.gate import Event

    if req.event_path:
        event, base_sha = _read_event(req.event_path, req.event_name, req.run_id, req.head_message)
        if req.labels:
            event = dataclasses.replace(event, labels=tuple(req.labels))
        return event, base_sha
    if need_head and not req.head:
        raise UsageError("pass --head REF (and --base REF), or --event-path FILE")
    return Event(name="local", action="synchronize", labels=tuple(req.labels), head_message=req.head_message,
                 sha=req.head, run_id=req.run_id), None


def gate(req: PlanRequest) -> Outcome:
    """`--gate-only`: the decision from the event alone (no git, no configs)."""
    from ci_tools.policy.gate import decide
    from ci_tools.policy.labels import load_policy_or_default

    policy, note = load_policy_or_default(req.repo)
    event, _ = _event(req, need_head=False)
    policy.require_known(req.labels)
    return Outcome(decision=decide(event, policy), notes=[note] if note else [])


# ---- git ----------------------------------------------------------------------------------------

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


def _policy_at(git, ref: str):
    """(policy, JSON-ready description of where it came from, note or None)."""
    from ci_tools.policy.labels import DEFAULT_POLICY_NAME, default_policy, policy_from_text

    sha = git.rev_parse(ref)
    blob = git.show(ref, names.POLICY)  # by the ref name: resolved once already, no second rev-parse
    if blob is None:
        note = f"no {names.POLICY} at {ref} ({sha[:12]}): the labels mean what {DEFAULT_POLICY_NAME} says"
        return default_policy(), {"file": None, "ref": sha, "default": True}, note
    where = f"{names.POLICY} at {ref}"
    return policy_from_text(blob.decode("utf-8", "replace"), where), {"file": names.POLICY, "ref": sha,
                                                                      "default": False}, None


def _master_paths(git, ref: str, master_paths: list[str]) -> list[str]:
    if master_paths:
        return master_paths
    found = sorted(p for p in git.ls_files(ref, names.CONFIGS_DIR)
                   if p.startswith(names.CONFIGS_DIR + "/") and p.endswith("-master.yaml")
                   and "/" not in p[len(names.CONFIGS_DIR) + 1:])
    if not found:
        raise InputError(f"no master configs ({names.MASTER_GLOB}) at {ref}; pass --master PATH")
    return found


def _runners_doc(blob: bytes | None, name: str):
    from ci_tools.yamlio import load_yaml_text

    if blob is None:
        return None
    doc = load_yaml_text(blob.decode("utf-8", "replace"), name)
    if doc.data is not None and not isinstance(doc.data, dict):
        raise InputError(f"{name}: expected a mapping with `labels` and `hardware`")
    return doc


def _hardware(doc) -> dict:
    return ((doc.data if doc is not None else None) or {}).get("hardware") or {}


# ---- the changelog and the masters ----------------------------------------------------------------

def appended_entries(base: bytes | None, head: bytes, changelog: str):
    """The entries the change appends, once the append-only gate accepts the change; else refuse.

    A change the gate rejects is never planned from its last entries: an entry inserted mid-file or
    a rewritten history would make those the wrong ones.
    """
    from ci_tools.changelog.lint import lint_change

    result = lint_change(base, head, file=changelog, mode=None, master_keys=None)
    if result.errors:
        raise InputError(result.errors[0].message, findings=result.errors + [Finding(
            changelog, None, None, "no sweep planned: the changelog change breaks the append-only rules above",
            "fix them (`ci-tools changelog lint` reports the same); a sweep is never planned from a broken diff")])
    return result.added


def resolve_entry_keys(entries, changelog: str, master_keys: list[str]) -> list[list[str]]:
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


def check_selected(masters, keys: list[str], runners_doc) -> None:
    """Refuse when a selected master entry is invalid (located findings); unselected ones never block."""
    from ci_tools.config.validate import selected_errors

    errors = selected_errors([(k, masters.entries[k], masters.origin[k]) for k in keys], runners_doc)
    if errors:
        raise InputError(errors[0].message, findings=errors + [Finding(
            errors[0].file, None, None,
            f"no sweep planned: {len(errors)} error(s) in the master config(s) this change selects",
            "fix them (`ci-tools config validate` reports the same); configs the change does not select "
            "do not block a plan")])


def changelog_inputs(git, base: str, head: str, changelog: str, master_paths: list[str], runners: str | None):
    """(plan entries, head Masters, base Masters or None), reading each git object once.

    Only the master entries the changelog selects are parsed (`MasterIndex`); append-only entries
    need every config at both refs, so then every entry is read.
    """
    from ci_tools.config.masters import MasterIndex
    from ci_tools.policy.plan import Masters, PlanEntry

    files = _master_paths(git, head, master_paths)
    runners = runners or str(PurePosixPath(files[0]).parent / "runners.yaml")
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
    index = MasterIndex([(p, blobs[p]) for p in files])
    resolved = resolve_entry_keys(raw, changelog, index.keys)
    append_only = any(e.data.get("append-only") for e in raw)
    selected = list(dict.fromkeys(k for keys in resolved for k in keys))
    head_set = index.select(index.keys if append_only else selected)
    runners_doc = _runners_doc(blobs[runners], runners)
    check_selected(head_set, selected, runners_doc)
    entries = [PlanEntry(e.index, e.line, e.data, keys) for e, keys in zip(raw, resolved)]
    head_masters = Masters(head_set.entries, _hardware(runners_doc))
    base_masters = None
    if append_only:
        base_blobs = git.show_many(base, files + [runners])
        present = [(p, base_blobs[p]) for p in files if base_blobs[p] is not None]
        base_index = MasterIndex(present) if present else None
        base_masters = Masters(base_index.select(base_index.keys).entries if base_index else {},
                               _hardware(_runners_doc(base_blobs[runners], runners)))
    return entries, head_masters, base_masters


# ---- the plan -----------------------------------------------------------------------------------

def plan(req: PlanRequest, *, after_canary: bool = False, passed: frozenset[str] = frozenset()) -> Outcome:
    """The plan of a change: refs from the options or the event, everything else from git."""
    from ci_tools.gitio import Git
    from ci_tools.policy.gate import decide
    from ci_tools.policy.plan import build_plan

    if passed and not after_canary:
        raise UsageError("--passed-family only makes sense with --after-canary")
    event, base_sha = _event(req, need_head=True)
    git = Git(req.repo)
    head_ref = req.head or event.sha
    base_ref = req.base or base_sha
    if not head_ref or not base_ref:
        raise UsageError("cannot tell which commits to compare: pass --base and --head")
    _rev_parse_all(git, [head_ref, base_ref])
    policy, policy_meta, note = _policy_at(git, head_ref)
    policy.require_known(req.labels)
    if event.name != "push" and event.head_message is None:
        event = dataclasses.replace(event, head_message=_head_message(git, head_ref))
    if event.name != "push":
        base_ref = git.merge_base(base_ref, head_ref)
        git._commits.setdefault(base_ref, base_ref)   # a commit id names itself: no rev-parse needed
    decision = decide(event, policy)
    entries, head_masters, base_masters = [], None, None
    if decision.sweep and not decision.error:
        entries, head_masters, base_masters = changelog_inputs(git, base_ref, head_ref, req.changelog,
                                                               list(req.masters), req.runners)
        decision = decide(event, policy, appends_entry=bool(entries))
    screen = None
    if head_masters is not None:
        from ci_tools.runner.screen_git import screen_at

        screen = screen_at(git, head_ref, head_masters)      # rows no runner serves are refused here
    result = build_plan(decision, entries, head_masters, policy, base=base_masters, screen=screen)
    if after_canary:
        from ci_tools.policy.plan import after_canary as release

        result = release(result, set(passed))
    result["policy"] = policy_meta
    return Outcome(plan=result, notes=[note] if note else [])
