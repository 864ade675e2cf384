#!/usr/bin/env python3
"""Lay out the reference corpus the tests read (`../shared/corpus`) on a machine that has none, such as
GitHub's hosted runners, from pinned checkouts of its public sources (.ci/corpus.json):

    python3 .ci/corpus.py --inferencex DIR --webhooks DIR --out ../shared

- `inferencex/`: the pinned files of InferenceX at the pinned commit, and its SOURCE_COMMIT;
- `inferencex-history/perf-changelog-history.bundle`: the last `versions` versions of InferenceX's
  `perf-changelog.yaml` and `configs/` on its main branch up to that commit, one commit per version
  (subject `ix <short sha>`), rebuilt from the checkout's history (it needs `fetch-depth: 0`): a
  version is a first-parent commit whose copy of those paths differs from its parent's;
- `github-webhooks/`: GitHub's webhook payload examples of the pinned events (octokit/webhooks, MIT).

The real-GPU recordings (AIPerf exports, nvidia-smi output, whole job folders) are the project's own, in
tests/data/; a test reads nothing else of ../shared than the folders laid out here (tests/public_clone.py).

Each checkout must be at its pinned commit, and the history must start at the pinned first version,
else nothing is written and the message says which pin does not hold. Python's standard library and
git only: it runs before any virtual environment exists.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

PINS = Path(__file__).resolve().with_name("corpus.json")
# Fixed identity and time: the same checkout always gives the same bundle.
IDENTITY = {"GIT_AUTHOR_NAME": "x", "GIT_AUTHOR_EMAIL": "x@x", "GIT_COMMITTER_NAME": "x",
            "GIT_COMMITTER_EMAIL": "x@x", "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
            "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z"}


class Refused(Exception):
    pass


def git(repo: Path, *args: str, env: dict | None = None, data: bytes | None = None) -> bytes:
    done = subprocess.run(["git", "-C", str(repo), *args], input=data, capture_output=True,
                          env={**os.environ, **(env or {})})
    if done.returncode != 0:
        raise Refused(f"git {' '.join(args[:3])} in {repo} failed: {done.stderr.decode(errors='replace').strip()}")
    return done.stdout


def head(repo: Path) -> str:
    return git(repo, "rev-parse", "HEAD").decode().strip()


def pinned(repo: Path, commit: str, what: str) -> None:
    found = head(repo)
    if found != commit:
        raise Refused(f"{what}: the checkout at {repo} is at {found}, .ci/corpus.json pins {commit}; check it out "
                      "at the pinned commit (toolkit-ci.yml's checkout step names it)")


def inferencex(src: Path, pins: dict, out: Path) -> None:
    dest = out / "inferencex"
    for name in pins["files"]:
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(git(src, "show", f"{pins['commit']}:{name}"))
    (dest / "SOURCE_COMMIT").write_text(pins["commit"])


def versions(src: Path, commit: str, paths: list[str]) -> list[tuple[str, list[str]]]:
    """(commit, `ls-tree` lines of `paths`) of each version, oldest first: the first-parent commits whose
    copy of `paths` differs from their parent's."""
    chain = git(src, "rev-list", "--first-parent", "--reverse", commit).decode().split()
    out: list[tuple[str, list[str]]] = []
    previous = None
    for c in chain:
        entries = [line for line in git(src, "ls-tree", c, "--", *paths).decode().splitlines() if line]
        if entries and entries != previous:
            out.append((c, entries))
        previous = entries
    return out


def history(src: Path, commit: str, pins: dict, out: Path) -> None:
    found = versions(src, commit, pins["paths"])
    if len(found) < pins["versions"]:
        raise Refused(f"inferencex-history: the checkout's main has {len(found)} versions of "
                      f"{', '.join(pins['paths'])} up to {commit[:12]}, the corpus holds {pins['versions']}; "
                      "check out the whole history (fetch-depth: 0)")
    kept = found[-pins["versions"]:]
    if not kept[0][0].startswith(pins["first"]):
        raise Refused(f"inferencex-history: the {pins['versions']} versions up to {commit[:12]} start at "
                      f"{kept[0][0][:12]}, .ci/corpus.json pins {pins['first']}: the history differs from the "
                      "corpus's")
    with tempfile.TemporaryDirectory() as tmp:
        bare = Path(tmp) / "history.git"
        subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
        (bare / "objects" / "info" / "alternates").write_text(str(Path(git(src, "rev-parse", "--absolute-git-dir")
                                                                       .decode().strip()) / "objects") + "\n")
        parent = None
        for c, entries in kept:
            tree = git(bare, "mktree", data=("\n".join(entries) + "\n").encode()).decode().strip()
            args = ["commit-tree", tree, "-m", f"ix {c[:9]}"] + (["-p", parent] if parent else [])
            parent = git(bare, *args, env=IDENTITY).decode().strip()
        git(bare, "update-ref", "refs/heads/master", parent)
        git(bare, "symbolic-ref", "HEAD", "refs/heads/master")
        dest = out / "inferencex-history"
        dest.mkdir(parents=True, exist_ok=True)
        git(bare, "bundle", "create", str(dest / pins["bundle"]), "HEAD", "refs/heads/master")


def webhooks(src: Path, pins: dict, out: Path) -> None:
    dest = out / "github-webhooks"
    for event in pins["events"]:
        listing = git(src, "ls-tree", "--name-only", f"{pins['commit']}:{pins['root']}/{event}").decode().split()
        if not listing:
            raise Refused(f"github-webhooks: {pins['root']}/{event} is empty at {pins['commit'][:12]}")
        (dest / event).mkdir(parents=True, exist_ok=True)
        for name in listing:
            (dest / event / name).write_bytes(git(src, "show", f"{pins['commit']}:{pins['root']}/{event}/{name}"))
    (dest / "LICENSE").write_bytes(git(src, "show", f"{pins['commit']}:LICENSE"))


def build(args: argparse.Namespace, pins: dict) -> None:
    ix, hooks = pins["inferencex"], pins["github-webhooks"]
    pinned(args.inferencex, ix["commit"], "inferencex")
    pinned(args.webhooks, hooks["commit"], "github-webhooks")
    with tempfile.TemporaryDirectory(dir=args.out.parent if args.out.parent.is_dir() else None) as tmp:
        staged = Path(tmp) / "corpus"
        inferencex(args.inferencex, ix, staged)
        history(args.inferencex, ix["commit"], pins["inferencex-history"], staged)
        webhooks(args.webhooks, hooks, staged)
        target = args.out / "corpus"
        if target.exists():
            shutil.rmtree(target)
        args.out.mkdir(parents=True, exist_ok=True)
        shutil.move(str(staged), str(target))


def load_pins(path: Path) -> dict:
    """corpus.json, or Refused saying where it is broken (a pin missing: which one)."""
    try:
        pins = json.loads(path.read_text())
    except OSError as exc:
        raise Refused(f"{path}: cannot read the pins: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise Refused(f"{path}:{exc.lineno}:{exc.colno}: not valid JSON: {exc.msg}") from None
    missing = [k for k in ("inferencex", "inferencex-history", "github-webhooks")
               if not isinstance(pins, dict) or not isinstance(pins.get(k), dict)]
    if missing:
        raise Refused(f"{path}: no {', '.join(missing)} pin (each an object; see the docstring)")
    return pins


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--inferencex", type=Path, required=True, help="a checkout of InferenceX (whole history)")
    parser.add_argument("--webhooks", type=Path, required=True, help="a checkout of octokit/webhooks")
    parser.add_argument("--out", type=Path, required=True, help="the folder to hold corpus/ (../shared)")
    args = parser.parse_args(argv)
    for name in ("inferencex", "webhooks", "out"):
        setattr(args, name, getattr(args, name).resolve())
    try:
        build(args, load_pins(PINS))
    except Refused as exc:
        print(f"corpus: {exc}", file=sys.stderr)
        return 1
    print(f"corpus: laid out {args.out / 'corpus'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
