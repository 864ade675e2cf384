"""The git adapter: every read of the repository's history goes through `Git`.

Plain `git` subprocesses, bytes in and out (the changelog rules are byte-exact, so nothing here
decodes file contents). Problems the user can fix (an unknown ref, a directory that is not a git
repository, git missing) become `InputError`s with a message naming the ref; a path that does not
exist at a valid ref is not an error, it is `None`.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from ci_tools.errors import InputError

class GitMissing(InputError):
    """git itself cannot be run (not installed, or not on PATH)."""


# Keep git's output stable (no pager, no colour, no localised messages) and never prompt.
_ENV = {"GIT_PAGER": "cat", "LC_ALL": "C", "GIT_TERMINAL_PROMPT": "0"}


class Git:
    def __init__(self, repo: Path | str = "."):
        self.repo = Path(repo)
        self._env = {**os.environ, **_ENV}
        self._commits: dict[str, str] = {}
        # Blobs read ahead in a batch by a caller, for later readers of the same (ref, path).
        self.prefetched: dict[tuple[str, str], bytes | None] = {}

    # -- plumbing ---------------------------------------------------------------------------------
    def _run(self, *args: str, input: bytes | None = None, check: bool = True) -> subprocess.CompletedProcess:
        try:
            proc = subprocess.run(["git", "-C", str(self.repo), *args], input=input, capture_output=True,
                                  env=self._env)
        except FileNotFoundError:
            raise GitMissing("git is not installed (or not on PATH); ci-tools needs it to read the history") from None
        if check and proc.returncode != 0:
            raise InputError(self._failure(args, proc), exit_code=2 if b"not a git repository" in proc.stderr else 1)
        return proc

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        """Any git command in this repository (writers such as `results publish` use it)."""
        return self._run(*args, check=check)

    def _failure(self, args: tuple[str, ...], proc: subprocess.CompletedProcess) -> str:
        err = proc.stderr.decode("utf-8", "replace").strip()
        if "not a git repository" in err:
            return (f"{self.repo.resolve()} is not inside a git repository: run the command in a clone of the "
                    "repository, or point --root at one")
        return f"git {' '.join(args)} failed (exit {proc.returncode}): {err or 'no message'}"

    # -- refs -------------------------------------------------------------------------------------
    def rev_parse(self, ref: str) -> str:
        """The commit id `ref` names. InputError when it names no commit."""
        if ref in self._commits:
            return self._commits[ref]
        if not ref or ref.startswith("-"):
            raise InputError(f"unknown git ref {ref!r}: a ref cannot be empty or start with '-'", exit_code=2)
        proc = self._run("rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}", check=False)
        if proc.returncode != 0:
            if b"not a git repository" in proc.stderr:     # a missing input: exit 2 (docs/reference.md)
                raise InputError(self._failure(("rev-parse", ref), proc), exit_code=2)
            # exit 2: a missing input, like a missing file (docs/reference.md, "Using the CLI")
            raise InputError(f"unknown git ref {ref!r}: no commit by that name in {self.repo.resolve()}"
                             " (fetch it first, e.g. `git fetch origin <branch>`, or check the spelling;"
                             " shallow CI checkouts need `fetch-depth: 0`)", exit_code=2)
        sha = proc.stdout.decode().strip()
        self._commits[ref] = sha
        return sha

    def rev_parse_many(self, refs: list[str]) -> list[str]:
        """Commit ids of several refs with one git process (the error path names the bad ref)."""
        todo = [r for r in dict.fromkeys(refs) if r not in self._commits]
        if todo and all(r and not r.startswith("-") for r in todo):
            proc = self._run("rev-parse", *(f"{r}^{{commit}}" for r in todo), check=False)
            shas = proc.stdout.decode().split()
            if proc.returncode == 0 and len(shas) == len(todo):
                self._commits.update(zip(todo, shas))
        return [self.rev_parse(r) for r in refs]

    def read(self, items: list[tuple[str, str]]) -> dict[tuple[str, str], bytes | None]:
        """Bytes of several (ref, path) pairs with one `cat-file --batch`; None where the path is absent."""
        shas = self.rev_parse_many([ref for ref, _ in items])
        got = self._batch([f"{sha}:{path}" for sha, (_, path) in zip(shas, items)], [str(i) for i in range(len(items))])
        return {item: got[str(i)] for i, item in enumerate(items)}

    def has_commit(self, sha: str) -> bool:
        return self._run("cat-file", "-e", f"{sha}^{{commit}}", check=False).returncode == 0

    def fetch_commit(self, sha: str, remote: str = "origin") -> bool:
        """Fetch one commit by id (GitHub serves any commit of the repository's refs this way); whether
        the commit is there afterwards."""
        if self.has_commit(sha):
            return True
        self._run("fetch", "--quiet", "--no-tags", remote, sha, check=False)
        return self.has_commit(sha)

    def known_commit(self, sha: str) -> None:
        """Record that the commit id `sha` names itself (e.g. a merge base): no rev-parse for it later."""
        self._commits.setdefault(sha, sha)

    def merge_base(self, a: str, b: str) -> str:
        ca, cb = self.rev_parse(a), self.rev_parse(b)
        proc = self._run("merge-base", ca, cb, check=False)
        if proc.returncode != 0:
            raise InputError(f"{a!r} and {b!r} have no common ancestor (is the clone shallow? use fetch-depth: 0)",
                             exit_code=2)
        sha = proc.stdout.decode().strip()
        self._commits.setdefault(sha, sha)   # a commit id names itself: later lookups need no rev-parse
        return sha

    def commit_message(self, ref: str) -> str | None:
        """The full message of the commit `ref` names; None when git cannot show it."""
        try:
            proc = self._run("log", "-1", "--format=%B", self.rev_parse(ref), check=False)
        except InputError:
            return None
        return proc.stdout.decode("utf-8", "replace") if proc.returncode == 0 else None

    # -- contents ---------------------------------------------------------------------------------
    def show(self, ref: str, path: str) -> bytes | None:
        """The bytes of `path` at `ref`; None when the path does not exist there."""
        return self.show_many(ref, [path])[path]

    def show_many(self, ref: str, files: list[str]) -> dict[str, bytes | None]:
        """Several paths at one ref with a single git process (`cat-file --batch`)."""
        sha = self.rev_parse(ref)
        return self._batch([f"{sha}:{p}" for p in files], files)

    def show_staged(self, path: str) -> bytes | None:
        """What `git commit` would record for `path` (index stage 0); None when not in the index."""
        return self.show_staged_many([path])[path]

    def show_staged_many(self, files: list[str]) -> dict[str, bytes | None]:
        return self._batch([f":0:{p}" for p in files], files)

    def stage(self, n: int, path: str) -> bytes | None:
        """Index stage `n` of a conflicted path: 1 = merge base, 2 = ours, 3 = theirs. None when absent."""
        if n not in (1, 2, 3):
            raise ValueError(f"index stage must be 1, 2 or 3, not {n}")
        return self._batch([f":{n}:{path}"], [path])[path]

    def cat_files(self, specs: list[str], names: list[str]) -> dict[str, bytes | None]:
        """The blobs `specs` name (`<commit>:<path>`, `:<stage>:<path>`), keyed by `names`, with one git
        process; None where a spec names no file."""
        return self._batch(specs, names)

    def _batch(self, specs: list[str], names: list[str]) -> dict[str, bytes | None]:
        if any("\n" in s for s in specs):
            raise InputError("a path given to git contains a newline; rename it")
        proc = self._run("cat-file", "--batch", input="".join(s + "\n" for s in specs).encode())
        out: dict[str, bytes | None] = {}
        data, pos = proc.stdout, 0
        for name in names:
            eol = data.index(b"\n", pos)
            header = data[pos:eol].split()
            pos = eol + 1
            if len(header) == 3 and header[1] == b"blob":
                size = int(header[2])
                out[name] = data[pos:pos + size]
                pos += size + 1
            elif len(header) == 3:  # a tree or commit: skip its body, report the path as not a file
                pos += int(header[2]) + 1
                out[name] = None
            else:  # "<spec> missing" / "ambiguous"
                out[name] = None
        return out

    def ls_files(self, ref: str, directory: str) -> list[str]:
        """Files directly or indirectly under `directory` at `ref` (repository-relative paths)."""
        sha = self.rev_parse(ref)
        proc = self._run("ls-tree", "-r", "-z", "--name-only", "--full-tree", sha, "--", directory)
        return [p.decode("utf-8", "surrogateescape") for p in proc.stdout.split(b"\0") if p]

    def ls_index(self, directory: str) -> list[str]:
        """Files under `directory` in the index (stage 0), repository-relative."""
        proc = self._run("ls-files", "-z", "--full-name", "--", f":/{directory}")
        return [p.decode("utf-8", "surrogateescape") for p in proc.stdout.split(b"\0") if p]

    def changed_files(self, base: str, head: str) -> list[str]:
        """Paths that differ between the two commits (two-dot: `git diff base head`), sorted."""
        a, b = self.rev_parse(base), self.rev_parse(head)
        proc = self._run("diff", "--name-only", "-z", "--no-renames", a, b)
        return sorted(p.decode("utf-8", "surrogateescape") for p in proc.stdout.split(b"\0") if p)

    # -- work tree and index --------------------------------------------------------------------
    def worktree_changes(self, ref: str) -> list[str]:
        """Paths whose working-tree content differs from `ref`, and untracked files (ignored ones left
        out), relative to the directory this adapter runs in; sorted."""
        sha = self.rev_parse(ref)
        diff = self._run("diff", "--name-only", "-z", "--relative", sha, "--")
        untracked = self._run("ls-files", "-z", "--others", "--exclude-standard")
        paths = {p for out in (diff.stdout, untracked.stdout) for p in out.split(b"\0") if p}
        return sorted(p.decode("utf-8", "surrogateescape") for p in paths)

    def show_relative_many(self, ref: str, files: list[str]) -> dict[str, bytes | None]:
        """Like `show_many`, with paths relative to the directory this adapter runs in (`./path`)."""
        sha = self.rev_parse(ref)
        return self._batch([f"{sha}:./{p}" for p in files], files)

    def toplevel(self) -> Path:
        return Path(self._run("rev-parse", "--show-toplevel").stdout.decode().strip())

    def git_dir(self) -> Path:
        out = self._run("rev-parse", "--absolute-git-dir").stdout.decode().strip()
        return Path(out)

    def has_commits(self) -> bool:
        return self._run("rev-parse", "--verify", "--quiet", "HEAD^{commit}", check=False).returncode == 0

    def unmerged_paths(self) -> list[str]:
        """Paths with unresolved conflicts in the index, sorted."""
        proc = self._run("diff", "--name-only", "-z", "--diff-filter=U")
        return sorted({p.decode("utf-8", "surrogateescape") for p in proc.stdout.split(b"\0") if p})

    def remote_url(self, name: str = "origin") -> str | None:
        proc = self._run("remote", "get-url", name, check=False)
        return proc.stdout.decode().strip() or None if proc.returncode == 0 else None
