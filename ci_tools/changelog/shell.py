"""The imperative shell of the changelog commands: read bytes from git, call the pure core.

Sources of the two versions:
  * refs (`--base`/`--head`): both read from git objects, never from the working tree; the base
    version is taken at the merge base of the two refs, as `git diff base...head` does;
  * staged (`--staged`, pre-commit): base = HEAD (absent in a repository with no commit yet),
    head = the index, i.e. exactly what `git commit` is about to record.
Master configs are read from the same place as the head version.
"""

from __future__ import annotations

import fnmatch
import os
import re
from dataclasses import dataclass

from ci_tools import names
from ci_tools.changelog.keys import master_keys_from_bytes
from ci_tools.changelog.parse import line_of
from ci_tools.errors import Finding, InputError, UsageError
from ci_tools.gitio import Git

_REMOTE = re.compile(r"(?:github\.com[:/])([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+?)(?:\.git)?/?$")


@dataclass
class Sources:
    base: bytes | None
    head: bytes
    master_keys: list[str]
    masters_label: str
    # ref mode only: the merge base, the head ref and the masters' bytes there (for the missing-entry rule)
    fork: str | None = None
    head_ref: str | None = None
    master_blobs: dict | None = None


def master_paths(git: Git, head: str | None, given: tuple[str, ...]) -> list[str]:
    if given:
        return [p.removeprefix("./") for p in given]
    if head is None:
        listed = git.ls_index(names.CONFIGS_DIR)
    else:
        listed = git.ls_files(head, names.CONFIGS_DIR)
    return sorted(p for p in listed if fnmatch.fnmatchcase(p, names.MASTER_GLOB))


def read_sources(git: Git, *, base: str | None, head: str | None, file: str, masters: tuple[str, ...]) -> Sources:
    """head None = the index (staged mode); base None with head None = HEAD (if any)."""
    where = "the index" if head is None else head
    if head is None:
        base_bytes = git.show("HEAD", file) if git.has_commits() else None
        master_files = master_paths(git, None, masters)
        blobs = git.show_staged_many([file, *master_files])
    else:
        if base is None:
            raise UsageError(f"{head} is compared with a base ref: give both (--base REF --head REF)")
        git.rev_parse_many([base, head])
        # Judge what head changed since it left base (`git diff base...head`): a PR behind main is
        # judged on its own entries, not on main's newer ones it does not have yet.
        fork = git.merge_base(base, head)
        master_files = master_paths(git, head, masters)
        got = git.read([(fork, file), (head, file), (fork, names.POLICY)] + [(head, m) for m in master_files])
        base_bytes = got[(fork, file)]
        git.prefetched[BASE_POLICY] = got[(fork, names.POLICY)]
        blobs = {f: got[(head, f)] for f in [file, *master_files]}
    if not master_files:
        raise InputError(exit_code=2, message=f"no master configs at {where}: nothing matches {names.MASTER_GLOB}",
                         findings=[Finding(names.MASTER_GLOB, None, None, f"no master config files at {where}",
                                           "pass --master PATH (repeatable) for a repository laid out differently")])
    head_bytes = blobs.pop(file)
    if head_bytes is None:
        raise InputError(exit_code=2, message=f"{file} does not exist at {where}",
                         findings=[Finding(file, None, None, f"the changelog does not exist at {where}",
                                           "pass --changelog-file PATH for a repository laid out differently")])
    keys: list[str] = []
    for path, content in blobs.items():
        if content is None:
            raise InputError(exit_code=2, message=f"{path}: master config not found at {where}",
                             findings=[Finding(path, None, None, f"master config not found at {where}",
                                               "--master takes a path inside the repository, relative to its root")])
        keys += master_keys_from_bytes(content, path)
    if head is None:
        return Sources(base_bytes, head_bytes, keys, ", ".join(master_files))
    return Sources(base_bytes, head_bytes, keys, ", ".join(master_files), fork=fork, head_ref=head,
                   master_blobs=blobs)


# Where read_sources leaves the policy file as it was at the merge base.
BASE_POLICY = ("<merge-base>", names.POLICY)


def default_repo(git: Git, head: str | None) -> str:
    """OWNER/NAME canonical links must name: $GITHUB_REPOSITORY, else the policy file as the change found
    it, else origin's URL.

    Never the policy as the change leaves it: a PR that edits `repository:` would otherwise choose the
    repository its own links are checked against (and re-point history's links to another one). So the
    policy is read at the merge base for `lint` (read_sources prefetches it), at HEAD for a staged
    change, and at `head` only for commands that compare nothing (canonicalize's new entries)."""
    env = os.environ.get("GITHUB_REPOSITORY", "")
    if env:
        return env
    try:
        if BASE_POLICY in git.prefetched:
            policy = git.prefetched[BASE_POLICY]
        elif head is None:
            policy = git.show("HEAD", names.POLICY) if git.has_commits() else git.show_staged(names.POLICY)
        else:
            policy = git.show(head, names.POLICY)
    except InputError:
        policy = None
    if policy:
        m = re.search(rb"^repository:[ ]*['\"]?([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)['\"]?[ ]*(?:#.*)?$", policy, re.M)
        if m:
            return m.group(1).decode()
    url = git.remote_url("origin")
    if url:
        named = _REMOTE.search(url)
        if named:
            return named.group(1)
    raise UsageError("cannot tell which repository the pr-links must name: no `repository:` in "
                     f"{names.POLICY}, no $GITHUB_REPOSITORY, no GitHub `origin` remote; pass --repo OWNER/NAME")


def check_repo(repo: str) -> str:
    from ci_tools.changelog.schema import valid_repo

    if not valid_repo(repo):
        raise UsageError(f"--repo must be OWNER/NAME (e.g. SemiAnalysisAI/InferenceX), not {repo!r}")
    return repo


def conflict_stages(git: Git, file: str) -> tuple[bytes, bytes, bytes]:
    """Stages 1 (merge base), 2 (ours: the PR branch) and 3 (theirs: main) of the conflicted changelog.

    Only during `git merge`: in a rebase or cherry-pick "ours" and "theirs" swap meaning, so
    those are refused rather than guessed.
    """
    gdir = git.git_dir()
    for marker, what in (("rebase-merge", "a rebase"), ("rebase-apply", "a rebase"),
                         ("CHERRY_PICK_HEAD", "a cherry-pick"), ("REVERT_HEAD", "a revert")):
        if (gdir / marker).exists():
            raise InputError(f"{what} is in progress; resolve-conflict only handles `git merge origin/main` on the PR"
                             " branch (in a rebase the two sides swap); abort it and merge instead")
    if not (gdir / "MERGE_HEAD").exists():
        raise InputError("no merge is in progress; run `git merge origin/main` on the PR branch first and call this"
                         " when it stops on the changelog conflict", exit_code=2)
    unmerged = git.unmerged_paths()
    if file not in unmerged:
        raise InputError(f"{file} has no unresolved conflict (conflicted: {', '.join(unmerged) or 'nothing'})")
    others = [p for p in unmerged if p != file]
    if others:
        raise InputError(f"other files conflict too: {', '.join(others)}; resolve-conflict only resolves the changelog."
                         " Resolve those by hand first (or `git merge --abort`)")
    stages = []
    for n, side in ((1, "the merge base"), (2, "the PR branch"), (3, "main")):
        content = git.stage(n, file)
        if content is None:
            raise InputError(f"{file} does not exist in {side} (index stage {n}): the file was added or deleted on one"
                             " side; resolve by hand")
        stages.append(content)
    return stages[0], stages[1], stages[2]


def staged_master_keys(git: Git) -> tuple[list[str], str]:
    files = master_paths(git, None, ())
    keys: list[str] = []
    for path, content in git.show_staged_many(files).items():
        if content is not None:
            keys += master_keys_from_bytes(content, path)
    return keys, ", ".join(files)


# -- the pre-commit hook: which comparison pre-commit is asking for ------------------------------
UPSTREAM_CANDIDATES = ("@{upstream}", "origin/HEAD", "origin/main", "origin/master")


@dataclass(frozen=True)
class HookTarget:
    """What `lint --hook` judges. head None = the index (staged mode, base HEAD)."""

    base: str | None
    head: str | None
    how: str  # one sentence for the report
    kind: str = "index"  # "range" (pre-push, --from-ref/--to-ref), "index" (a commit), "branch" (--all-files)


def _try_commit(git: Git, ref: str) -> str | None:
    try:
        return git.rev_parse(ref)
    except InputError:
        return None


def hook_target(git: Git, env: dict[str, str], file: str) -> HookTarget:
    """Map how pre-commit runs onto a comparison, so the hook is never a silent no-op:

    * `--from-ref/--to-ref` and `pre-push` set PRE_COMMIT_FROM_REF/TO_REF (older releases:
      PRE_COMMIT_SOURCE/ORIGIN): that range;
    * `git commit` (or `pre-commit run` with the changelog staged): the index against HEAD;
    * `--all-files` (pre-commit.ci, CI) with nothing staged: the branch against the merge base with
      its upstream (`@{upstream}`, origin/HEAD, origin/main or origin/master, the first that exists).
    """
    frm = env.get("PRE_COMMIT_FROM_REF") or env.get("PRE_COMMIT_SOURCE")
    to = env.get("PRE_COMMIT_TO_REF") or env.get("PRE_COMMIT_ORIGIN")
    if frm and to:
        return HookTarget(frm, to, f"the range {frm[:12]}..{to[:12]} pre-commit was given", "range")
    if not git.has_commits():
        return HookTarget(None, None, "the index (first commit)")
    if git.show_staged(file) != git.show("HEAD", file):
        return HookTarget(None, None, "the index against HEAD (what `git commit` records)")
    head = git.rev_parse("HEAD")
    for ref in UPSTREAM_CANDIDATES:
        sha = _try_commit(git, ref)
        if sha and sha != head:
            return HookTarget(ref, "HEAD", f"HEAD against its merge base with {ref}", "branch")
    return HookTarget(None, None, "the index against HEAD; no upstream branch (origin/main) to compare the branch"
                                  " with, so earlier commits of the branch were not checked (pass --base REF)")


# -- the missing-entry rule: which performance-relevant files changed, affecting which configs ----
def _data(content: bytes | None, file: str) -> object:
    """Parsed YAML, or None when absent or unreadable (config validate reports those, located)."""
    if content is None:
        return None
    from ci_tools.yaml.fast import load_data_fast

    try:
        return load_data_fast(content.decode("utf-8"), file)
    except (InputError, UnicodeDecodeError):
        return None


def performance_patterns(git: Git, head: str) -> list[str]:
    policy = git.prefetched.get((head, names.POLICY)) if (head, names.POLICY) in git.prefetched \
        else git.show(head, names.POLICY)
    data = _data(policy, names.POLICY)
    pats = data.get("performance-relevant") if isinstance(data, dict) else None
    return [p for p in pats if isinstance(p, str)] if isinstance(pats, list) else []


def changed_performance_files(git: Git, src: Sources, file: str) -> list:
    """The performance-relevant files the change (merge base -> head) changed, with their configs."""
    from ci_tools.changelog.coverage import ChangedFile, relevant
    from ci_tools.config.crossfile import recipe_refs
    from ci_tools.config.touched import touched_keys

    assert src.fork is not None and src.head_ref is not None and src.master_blobs is not None
    patterns = performance_patterns(git, src.head_ref)
    if not patterns:
        return []
    changed = [p for p in git.changed_files(src.fork, src.head_ref) if p != file and relevant(p, patterns)]
    if not changed:
        return []
    before = git.read([(src.fork, p) for p in changed])
    after = git.read([(src.head_ref, p) for p in changed if p not in src.master_blobs])
    heads = {p: src.master_blobs[p] if p in src.master_blobs else after[(src.head_ref, p)] for p in changed}
    masters = {m: _data(b, m) for m, b in src.master_blobs.items()}
    out = []
    for path in changed:
        old, new = before[(src.fork, path)], heads[path]
        if new is None:
            continue  # deleted: nothing left to benchmark under that name
        if path in src.master_blobs:
            keys = sorted(touched_keys(_data(old, path), masters[path]))
            out.append(ChangedFile(path, tuple(keys), 1, _key_lines(new)))
        elif path.startswith(names.RECIPES_DIR + "/"):
            if old is not None and _data(old, path) == _data(new, path) is not None:
                continue  # comments or layout only
            users = [key for m in masters.values() if isinstance(m, dict) for key, entry in m.items()
                     if isinstance(entry, dict) and any(ref == path for _, ref, _ in recipe_refs(entry))]
            out.append(ChangedFile(path, tuple(users), 1))
        else:
            out.append(ChangedFile(path, None, 1))
    return out


_KEY_LINE = re.compile(rb"^([A-Za-z0-9_][A-Za-z0-9_.+-]*):", re.M)


def _key_lines(content: bytes) -> dict[str, int]:
    return {m.group(1).decode(): line_of(content, m.start()) for m in _KEY_LINE.finditer(content)}
