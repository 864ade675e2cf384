"""What a plan is computed from, read from the event file (or the PR on GitHub) and git (shell).

Everything comes from git objects, never the working tree: the changelog at the merge base and at
head, the master configs and runners.yaml at head (and at the base for append-only entries), and the
label policy (`inferencex-e2e/ci-policy.yaml`) at head, the version the PR's own workflow run checks
out; a repository without that file gets ci-tools' default policy and a note.

A plan is refused, with located findings, rather than planned from bad input:
  * a changelog change the append-only gate rejects (the same check as `changelog lint`, without
    its pr-link rules, which do not change what an entry selects);
  * an appended entry whose config keys match nothing;
  * a selected master entry that fails its schema, its cross-field rules or the runner rules.
Master entries the change does not select are not checked here (`config validate` reports them).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Mapping

from ci_tools import names
from ci_tools.errors import Finding, InputError, UsageError

if TYPE_CHECKING:  # the gate-only path reads no git: keep the adapter's import off it
    from ci_tools.gitio import Git
    from ci_tools.sweep.gate import GateEvent
    from ci_tools.sweep.labels import Policy


# ---- the event ----------------------------------------------------------------------------------

def read_event(path: str, event_name: str | None, run_id: str | None,
               head_message: str | None) -> tuple[GateEvent, str | None]:
    """(gate event, base commit or None) from a webhook payload file ($GITHUB_EVENT_PATH)."""
    from ci_tools.sweep.event import event_from_payload

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


_GITHUB_REMOTE = re.compile(r"(?:github\.com[:/])([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+?)(?:\.git)?/?$")


def repository_of(git: "Git", given: str | None, env: Mapping[str, str]) -> str:
    """OWNER/NAME of the PR's repository: `--repo`, else $GITHUB_REPOSITORY, else the origin remote."""
    if given or env.get("GITHUB_REPOSITORY"):
        return given or env["GITHUB_REPOSITORY"]
    match = _GITHUB_REMOTE.search(git.remote_url("origin") or "")
    if not match:
        raise UsageError("cannot tell which GitHub repository the PR is in: pass --repo OWNER/NAME "
                         "(or set GITHUB_REPOSITORY)")
    return match.group(1)


def pull_request_event(gh, number: int, *, run_id: str | None,
                       head_message: str | None) -> tuple["GateEvent", str | None]:
    """(the event CI's gate would see on the PR's next push, the PR's base commit), from the PR as GitHub
    has it now (the client's typed `PullRequest`: labels, head, base, draft, and the one fork rule)."""
    from ci_tools.sweep.gate import GateEvent

    pr = gh.pull_request(number)
    return GateEvent(name="pull_request", action="synchronize", labels=tuple(pr.labels), draft=pr.draft,
                     fork=pr.fork, head_message=head_message, pr_number=pr.number, sha=pr.head_sha,
                     run_id=run_id), pr.base_sha or None


def require_commit(git: "Git", sha: str | None, what: str, fetch: str) -> None:
    """`sha` must be in the clone: plans read everything from git objects."""
    if not sha:
        raise InputError(f"{what} is unknown: GitHub named no commit", exit_code=2)
    try:
        git.rev_parse(sha)
    except InputError:
        raise InputError(f"{what} {sha[:12]} is not in this clone; fetch it first: `git fetch origin {fetch}`",
                         exit_code=2) from None


# ---- the policy and the files at head -------------------------------------------------------------

@dataclass(frozen=True)
class PolicySource:
    """Where a plan's label policy was read: `file` at commit `ref`, or ci-tools' default."""

    file: str | None
    ref: str
    default: bool

    def as_dict(self) -> dict:
        return {"file": self.file, "ref": self.ref, "default": self.default}


def policy_at(git: Git, ref: str) -> tuple[Policy, PolicySource, str | None]:
    """(policy, where it came from, note or None): the head's policy file, else the shipped default."""
    from ci_tools.sweep.labels import policy_from_text
    from ci_tools.sweep.load import DEFAULT_POLICY_NAME, default_policy

    sha = git.rev_parse(ref)
    blob = git.show(ref, names.POLICY)  # by the ref name: resolved once already, no second rev-parse
    if blob is None:
        note = f"no {names.POLICY} at {ref} ({sha[:12]}): the labels mean what {DEFAULT_POLICY_NAME} says"
        return default_policy(), PolicySource(None, sha, True), note
    policy = policy_from_text(blob.decode("utf-8", "replace"), f"{names.POLICY} at {ref}")
    return policy, PolicySource(names.POLICY, sha, False), None


def _master_paths(git: Git, ref: str, master_paths: list[str]) -> list[str]:
    if master_paths:
        return master_paths
    found = sorted(p for p in git.ls_files(ref, names.CONFIGS_DIR)
                   if p.startswith(names.CONFIGS_DIR + "/") and p.endswith("-master.yaml")
                   and "/" not in p[len(names.CONFIGS_DIR) + 1:])
    if not found:
        raise InputError(f"no master configs ({names.MASTER_GLOB}) at {ref}; pass --master PATH")
    return found


def _runners_doc(blob: bytes | None, name: str):
    from ci_tools.yaml.located import load_yaml_text

    if blob is None:
        return None
    doc = load_yaml_text(blob.decode("utf-8", "replace"), name)
    if doc.data is not None and not isinstance(doc.data, dict):
        raise InputError(f"{name}: expected a mapping with `labels` and `hardware`")
    return doc


def _hardware(doc) -> dict:
    return ((doc.data if doc is not None else None) or {}).get("hardware") or {}


# ---- the changelog and the masters ----------------------------------------------------------------

def appended_entries(base: bytes | None, head: bytes, changelog: str, master_keys: list[str] | None = None):
    """The entries the change appends, once the append-only gate accepts the change; else refuse with
    every finding at once (the byte rules, history, and the new entries' schema and keys).

    A change the gate rejects is never planned from its last entries: an entry inserted mid-file or
    a rewritten history would make those the wrong ones.
    """
    from ci_tools.changelog.lint import lint_change
    from ci_tools.changelog.schema import key_findings

    result = lint_change(base, head, file=changelog, mode=None, master_keys=None)
    if result.errors:
        keys = [f for e in result.added for f in key_findings(e, changelog, master_keys, "the master configs")[1]] \
            if master_keys is not None else []
        raise InputError(result.errors[0].message, findings=sorted(result.errors + keys, key=lambda f: f.line or 0) + [Finding(
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


def check_selected(masters, keys: list[str], runners_doc, images: tuple[tuple[str, ...], str] | None = None) -> None:
    """Refuse when a selected master entry is invalid (located findings; `images`: the policy's
    allowlist and file); unselected ones never block."""
    from ci_tools.config.validate import selected_errors

    errors = selected_errors([(k, masters.entries[k], masters.origin[k]) for k in keys], runners_doc, images)
    if errors:
        raise InputError(errors[0].message, findings=errors + [Finding(
            errors[0].file, None, None,
            f"no sweep planned: {len(errors)} error(s) in the master config(s) this change selects",
            "fix them (`ci-tools config validate` reports the same); configs the change does not select "
            "do not block a plan")])


def changelog_inputs(git: Git, base: str, head: str, changelog: str, master_paths: list[str], runners: str | None,
                     images: tuple[tuple[str, ...], str] | None = None):
    """(plan entries, head Masters, base Masters or None), reading each git object once.

    Only the master entries the changelog selects are parsed (`MasterIndex`); append-only entries
    need every config at both refs, so then every entry is read.
    """
    from ci_tools.config.masters import MasterIndex
    from ci_tools.sweep.plan import Masters, PlanEntry

    files = _master_paths(git, head, master_paths)
    runners = runners or str(PurePosixPath(files[0]).parent / "runners.yaml")
    # one `git cat-file --batch` for every file at head plus the changelog at base
    got = git.read([(head, p) for p in files + [runners, changelog]] + [(base, changelog)])
    head_log = got[(head, changelog)]
    if head_log is None:
        raise InputError(f"{changelog}: no such file at {head}; pass --changelog-file")
    master_blobs: list[tuple[str, bytes]] = []
    for p in files:
        blob = got[(head, p)]
        if blob is None:
            raise InputError(f"{p}: no such file at {head}")
        master_blobs.append((p, blob))
    index = MasterIndex(master_blobs)
    raw = appended_entries(got[(base, changelog)], head_log, changelog, index.keys)
    resolved = resolve_entry_keys(raw, changelog, index.keys)
    append_only = any(e.data.get("append-only") for e in raw)
    selected = list(dict.fromkeys(k for keys in resolved for k in keys))
    head_set = index.select(index.keys if append_only else selected)
    runners_doc = _runners_doc(got[(head, runners)], runners)
    check_selected(head_set, selected, runners_doc, images)
    entries = [PlanEntry(e.index, e.line, e.data, keys) for e, keys in zip(raw, resolved)]
    head_masters = Masters(head_set.entries, _hardware(runners_doc),
                           {k: doc.file for k, doc in head_set.origin.items()})
    base_masters = None
    if append_only:
        base_blobs = git.show_many(base, files + [runners])
        present = [(p, blob) for p in files if (blob := base_blobs[p]) is not None]
        base_index = MasterIndex(present) if present else None
        base_masters = Masters(base_index.select(base_index.keys).entries if base_index else {},
                               _hardware(_runners_doc(base_blobs[runners], runners)))
    return entries, head_masters, base_masters
