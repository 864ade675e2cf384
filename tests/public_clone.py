"""What a test may read beside the checkout: only what a public clone's CI has there.

A clone of the repository has beside it only the reference corpus `.ci/corpus.py` rebuilds from public
repositories at the commits `.ci/corpus.json` pins: `../shared/corpus/<part>`, one folder per part pinned
there. Every other file of `../shared` (the reference specs, the earlier real-GPU run, example payloads kept
apart) is a developer's copy that no clone has, so a test reading one passes here and fails on GitHub's
runners, or is skipped by whoever cannot run it. This plug-in (tests/conftest.py registers it) installs a
`Watch` as an audit hook, which sees every open and directory listing of the test process and each program
started with its argument list: a test, one of its fixtures or its module's collection that reads such a file,
or hands it to a program, fails naming it, whether the file is there or not.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
from collections.abc import Iterable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PINS = REPO / ".ci" / "corpus.json"


def shared_dir() -> Path:
    """../shared as the tests find it: $CI_TOOLS_SHARED, else beside the checkout."""
    return Path(os.environ.get("CI_TOOLS_SHARED", REPO.parent / "shared"))

# The audit events that name a file the process is about to read or a program is handed (CPython's
# "Audit events table"); every other event returns at the first test.
OPENS = frozenset({"open", "os.listdir", "os.scandir"})
PROGRAMS = frozenset({"subprocess.Popen", "os.system", "os.posix_spawn", "os.exec"})


def pins() -> dict:
    """.ci/corpus.json: what .ci/corpus.py lays out under ../shared/corpus."""
    return json.loads(PINS.read_text())


def public_parts(pinned: dict) -> frozenset[str]:
    """The folders of ../shared/corpus that .ci/corpus.py lays out: one per part .ci/corpus.json pins (its keys,
    but the `_`-prefixed notes)."""
    return frozenset(k for k in pinned if not k.startswith("_"))


def private_part(path: str, root: str, parts: frozenset[str]) -> str | None:
    """PATH (absolute, normalised) relative to ROOT where it lies under ROOT outside every public part; None
    elsewhere. ROOT itself and ROOT/corpus hold the public parts: listing them is no read of another file."""
    if not path.startswith(root + os.sep):
        return None
    rel = path[len(root) + 1:]
    steps = rel.split(os.sep)
    if rel == "corpus" or (len(steps) >= 2 and steps[0] == "corpus" and steps[1] in parts):
        return None
    return rel


class Watch:
    """The audit hook: every private part of ../shared the process opens, lists or hands a program, in `seen`
    (`what path`) until the test's phase ends; conftest fails the phase on any."""

    def __init__(self, roots: Iterable[Path], parts: frozenset[str]) -> None:
        # a root as given and as its links resolve: a test reads ../shared by either spelling
        self.roots = tuple(sorted({os.path.abspath(r) for r in roots} | {os.path.realpath(r) for r in roots}))
        self.parts = parts
        self.seen: list[str] = []
        self._mention = re.compile("(?:" + "|".join(re.escape(r + os.sep) for r in self.roots) + r")[^\s'\"=:;,]*")

    def _check(self, path: str, what: str) -> None:
        path = os.path.normpath(os.path.abspath(path))
        for root in self.roots:
            rel = private_part(path, root, self.parts)
            if rel is not None:
                self.seen.append(f"{what} ../shared/{rel}")
                return

    def __call__(self, event: str, args: tuple) -> None:
        if event in OPENS:
            path = args[0]
            if isinstance(path, (bytes, os.PathLike)):
                path = os.fsdecode(path)
            # the common case first: an absolute path elsewhere (every open of the process comes here)
            if isinstance(path, str) and (path.startswith(self.roots) or path[:1] != os.sep or "/.." in path):
                self._check(path, "lists" if event != "open" else "opens")
        elif event in PROGRAMS:
            self._programs(event, args)

    def _programs(self, event: str, args: tuple) -> None:
        # subprocess.Popen: (executable, args, cwd, env); os.system: (command,); os.posix_spawn and os.exec:
        # (path, argv, env)
        argv = args[0] if event == "os.system" else args[1]
        words = [argv] if isinstance(argv, (str, bytes, os.PathLike)) else list(argv or ())
        if event == "subprocess.Popen" and isinstance(args[2], (str, bytes, os.PathLike)):
            words.append(args[2])
        for word in words:
            if isinstance(word, (str, bytes, os.PathLike)):
                for found in self._mention.findall(os.fsdecode(word)):
                    self._check(found, "hands a program")

    def take(self) -> list[str]:
        seen, self.seen = self.seen, []
        return list(dict.fromkeys(seen))


def message(where: str, seen: list[str], parts: frozenset[str]) -> str:
    listed = "; ".join(seen[:5]) + (f"; and {len(seen) - 5} more" if len(seen) > 5 else "")
    return (f"{where} {listed}: a public clone has beside it only what .ci/corpus.py rebuilds from .ci/corpus.json "
            f"(../shared/corpus/{{{','.join(sorted(parts))}}}); keep the test's data in the repository instead "
            "(a recording of a real tool goes under tests/data/, and tests/data/README.md says where it came from)")


_watch: Watch | None = None


def install() -> Watch:
    """The process's one Watch over ../shared (by both spellings), added to its audit hooks on the first call:
    an audit hook cannot be removed."""
    global _watch
    if _watch is None:
        _watch = Watch([shared_dir(), REPO.parent / "shared"], public_parts(pins()))
        sys.addaudithook(_watch)
    return _watch


# ---- the plug-in: each phase of each test, and each collector, fails on what it read --------------------

def pytest_configure(config) -> None:
    install()


@contextlib.contextmanager
def _public_only(nodeid: str):
    watch = install()
    watch.take()
    try:
        yield
    finally:
        seen = watch.take()
        if seen:
            pytest.fail(message(nodeid, seen, watch.parts), pytrace=False)


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector):
    watch = install()
    watch.take()
    report = yield
    seen = watch.take()
    if seen:
        report.outcome, report.longrepr = "failed", message(collector.nodeid or "collecting", seen, watch.parts)
    return report


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item):
    with _public_only(item.nodeid):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    with _public_only(item.nodeid):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item):
    with _public_only(item.nodeid):
        return (yield)
