"""Every action the workflows use is pinned by commit SHA on a major that runs on Node 24 (GitHub
moves JavaScript actions off Node 20; issue 23: the artifact actions were still on v4, Node 20).

NODE24 is read from the actions' own repositories (`runs.using` in each tag's action.yml): the first
major on node24 and the release pinned here, with the commit its tag points to. upload-artifact v6+
and download-artifact v7+ need Actions runner 2.327.1, below the 2.336.0 the `$/` references need."""

from __future__ import annotations

import re

import pytest

import wf_contract as wc
from wf_env import REPO, WORKFLOWS

# action: (first major on node24, the release pinned, its commit)
NODE24 = {
    "actions/checkout": (5, "v5.0.0", "08c6903cd8c0fde910a37f88322edcfb5dd907a8"),
    "actions/setup-python": (6, "v6.0.0", "e797f83bcb11b83ae66e0230d6156d7c80228e7c"),
    "actions/upload-artifact": (6, "v7.0.0", "bbbca2ddaa5d8feaa63e36b76fdaad77386f024f"),
    "actions/download-artifact": (7, "v8.0.1", "3e5f45b2cfb9172054b4087a40e8e0b5a5461e7c"),
    "actions/create-github-app-token": (3, "v3.1.1", "1b10c78c7865c340bc4f6099eb2f838309f1e8c3"),
}
USES = re.compile(r"^\s*(?:-\s*)?uses:\s*([^@\s]+)@(\S+)(?:\s*#\s*(\S+))?", re.M)


def pins() -> list[tuple[str, str, str, str | None]]:
    files = sorted(WORKFLOWS.glob("*.yml")) + sorted((REPO / ".github" / "actions").glob("*/action.yml"))
    return [(f.name, *m.groups()) for f in files for m in USES.finditer(f.read_text()) if not m[1].startswith(("$/", "./"))]


def problems(found) -> list[str]:
    out = []
    for where, action, ref, comment in found:
        if action not in NODE24:
            out.append(f"{where}: {action} is not in NODE24: check which major runs on node24 and add it")
            continue
        first, release, sha = NODE24[action]
        major = int(re.match(r"v(\d+)", comment or "v0")[1])
        if not re.fullmatch(r"[0-9a-f]{40}", ref):
            out.append(f"{where}: {action}@{ref} is not pinned by commit SHA")
        elif major < first:
            out.append(f"{where}: {action} {comment} runs on Node 20; v{first} or later runs on Node 24")
        elif (ref, comment) != (sha, release):
            out.append(f"{where}: {action}@{ref} # {comment} is not the reviewed pin {sha} # {release}")
    return out


def test_every_action_is_pinned_on_a_node24_major():
    found = pins()
    assert {a for _, a, _, _ in found} >= {"actions/upload-artifact", "actions/download-artifact"}
    assert problems(found) == []


@pytest.mark.parametrize("line,expected", [
    ("uses: actions/upload-artifact@ea165f8d65b6e75b540449e92b4886f43607fa02 # v4.6.2", "runs on Node 20"),
    ("uses: actions/download-artifact@v8", "not pinned by commit SHA"),
    ("uses: actions/upload-artifact@b7c566a772e6b6bfb58ed0dc250532a479d7789f # v6.0.0", "not the reviewed pin"),
])
def test_a_node20_or_unpinned_action_is_caught(line, expected):
    [m] = USES.finditer(line)
    assert expected in " ".join(problems([("x.yml", *m.groups())]))
