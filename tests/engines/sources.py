#!/usr/bin/env python3
"""Engine source files pinned at a commit of a public repository, for the engines whose parsers no wheel
can give (ATOM: not on any index; TensorRT-LLM: PyPI carries placeholders only). `sources.json` beside
this file names each release's repository, commit and files with their sha256; this lays them out:

    python3 tests/engines/sources.py fetch [--dest DIR] [--git OWNER/NAME=GITDIR ...]
    python3 tests/engines/sources.py pin NAME VERSION --git OWNER/NAME=GITDIR --commit SHA PATH...

`fetch` writes each release into DIR/<name>-<version>/ (its paths as in the repository) and marks it whole
with `.complete`: from a local clone where `--git` names one for the repository (git show COMMIT:PATH),
else from raw.githubusercontent.com at the pinned commit. A file whose sha256 differs from the pin is
refused, and nothing of that release is marked complete. DIR defaults to $CI_TOOLS_ENGINE_SOURCES (`python3 dev.py test`
sets it to the machine's cache, engine-sources/), else `sources/` in the engines venv. `pin` records files of a local clone at a commit into sources.json (a maintainer's step when a
release is added: the files are those the tests' parser host imports, tests/engines/parser_host.py).

The standard library only: dev.py runs it before any virtual environment exists.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

PINS = Path(__file__).resolve().with_name("sources.json")
REPO = Path(__file__).resolve().parents[2]
RAW = "https://raw.githubusercontent.com/{repository}/{commit}/{path}"
COMPLETE = ".complete"


class Refused(Exception):
    pass


def default_dest() -> Path:
    if os.environ.get("CI_TOOLS_ENGINE_SOURCES"):
        return Path(os.environ["CI_TOOLS_ENGINE_SOURCES"])
    return Path(os.environ.get("CI_TOOLS_ENGINES_VENV") or REPO / ".venv-engines") / "sources"


def load(path: Path = PINS) -> dict:
    data = json.loads(path.read_text(encoding="utf-8"))
    return {k: v for k, v in data.items() if not k.startswith("_")}


def releases(pins: dict) -> list[tuple[str, str, dict, str]]:
    """(name, version, release pin, repository) of every pinned release."""
    return [(name, version, rel, src["repository"]) for name, src in pins.items()
            for version, rel in src["releases"].items()]


def folder(dest: Path, name: str, version: str) -> Path:
    return dest / f"{name}-{version}"


def _from_git(gitdir: str, commit: str, path: str) -> bytes:
    done = subprocess.run(["git", f"--git-dir={gitdir}", "show", f"{commit}:{path}"], capture_output=True)
    if done.returncode != 0:
        raise Refused(f"git show {commit[:12]}:{path} in {gitdir}: {done.stderr.decode(errors='replace').strip()}")
    return done.stdout


def _from_web(repository: str, commit: str, path: str) -> bytes:
    url = RAW.format(repository=repository, commit=commit, path=path)
    try:
        with urllib.request.urlopen(url, timeout=60) as response:   # noqa: S310 (a fixed https URL)
            return response.read()
    except OSError as exc:
        raise Refused(f"{url}: {exc}; with a local clone of {repository}, pass --git {repository}=CLONE/.git") \
            from None


def _git_dirs(specs: list[str]) -> dict[str, str]:
    out = {}
    for spec in specs:
        repository, sep, gitdir = spec.partition("=")
        if not sep:
            raise Refused(f"--git {spec!r}: write OWNER/NAME=GITDIR")
        out[repository] = gitdir
    return out


def fetch(dest: Path, git: dict[str, str], pins: dict) -> list[str]:
    """Lay out every pinned release under DEST; returns what it did, one line per release."""
    done = []
    for name, version, rel, repository in releases(pins):
        target = folder(dest, name, version)
        marker = target / COMPLETE
        stamp = f"{repository}@{rel['commit']}\n" + "".join(f"{p} {h}\n" for p, h in sorted(rel["files"].items()))
        if marker.exists() and marker.read_text() == stamp:
            continue
        marker.unlink(missing_ok=True)
        for path, want in sorted(rel["files"].items()):
            file = target / path
            if file.exists() and hashlib.sha256(file.read_bytes()).hexdigest() == want:
                continue
            data = _from_git(git[repository], rel["commit"], path) if repository in git else \
                _from_web(repository, rel["commit"], path)
            got = hashlib.sha256(data).hexdigest()
            if got != want:
                raise Refused(f"{repository}@{rel['commit'][:12]}:{path} has sha256 {got}, {PINS.name} pins {want}")
            file.parent.mkdir(parents=True, exist_ok=True)
            part = file.with_name(file.name + ".part")
            part.write_bytes(data)
            part.replace(file)
        marker.write_text(stamp)
        done.append(f"{name} {version}: {len(rel['files'])} files of {repository}@{rel['commit'][:12]} in {target}")
    return done


def pin(name: str, version: str, repository: str, gitdir: str, commit: str, paths: list[str], note: str = "") -> None:
    """Record PATHS of GITDIR at COMMIT as NAME VERSION in sources.json (keeps the rest of the file)."""
    data = json.loads(PINS.read_text(encoding="utf-8")) if PINS.exists() else {}
    src = data.setdefault(name, {"repository": repository, "releases": {}})
    if src["repository"] != repository:
        raise Refused(f"{name} is pinned from {src['repository']}, not {repository}")
    files = {p: hashlib.sha256(_from_git(gitdir, commit, p)).hexdigest() for p in sorted(set(paths))}
    src["releases"][version] = {"commit": commit, **({"note": note} if note else {}), "files": files}
    PINS.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    f = sub.add_parser("fetch", help="lay out every pinned release")
    f.add_argument("--dest", type=Path, default=None, help="default: $CI_TOOLS_ENGINE_SOURCES or <engines venv>/sources")
    f.add_argument("--git", action="append", default=[], metavar="OWNER/NAME=GITDIR",
                   help="read that repository's files from a local clone instead of GitHub")
    p = sub.add_parser("pin", help="record files of a local clone at a commit")
    p.add_argument("name")
    p.add_argument("version")
    p.add_argument("--git", required=True, metavar="OWNER/NAME=GITDIR")
    p.add_argument("--commit", required=True)
    p.add_argument("--note", default="")
    p.add_argument("paths", nargs="+")
    args = parser.parse_args(argv)
    try:
        if args.command == "fetch":
            dest = args.dest or default_dest()
            for line in fetch(dest, _git_dirs(args.git), load()):
                print(f"sources: {line}")
        else:
            (repository, gitdir), = _git_dirs([args.git]).items()
            pin(args.name, args.version, repository, gitdir, args.commit, args.paths, args.note)
            print(f"sources: pinned {args.name} {args.version} ({len(args.paths)} files) in {PINS}")
    except Refused as exc:
        print(f"sources: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
