"""One convention across commands: a missing input (an unknown ref, a file that is not there) exits 2,
like a usage error; findings in the input exit 1. Checked on every command that takes a git ref."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def clone(tmp_path_factory) -> Path:
    dest = tmp_path_factory.mktemp("conv") / "repo"
    files = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "inferencex-e2e", "recipes"],
                           capture_output=True, check=True).stdout.split(b"\0")
    for rel in (f.decode() for f in files if f):
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        (dest / rel).write_bytes((ROOT / rel).read_bytes())
    for args in (["init", "-q", "-b", "main"], ["add", "-A"],
                 ["-c", "user.name=t", "-c", "user.email=t@x", "commit", "-q", "-m", "base"]):
        subprocess.run(["git", "-C", str(dest), *args], check=True, capture_output=True)
    return dest


REF_COMMANDS = [
    ["changelog", "lint", "--base", "no-such-ref", "--head", "HEAD"],
    ["changelog", "lint", "--base", "HEAD", "--head", "no-such-ref"],
    ["changelog", "canonicalize", "--pr", "1", "--base", "no-such-ref"],
    ["plan", "--base", "no-such-ref", "--head", "HEAD", "--label", "full-sweep-fail-fast"],
    ["config", "validate", "--base", "no-such-ref"],
]


@pytest.mark.parametrize("args", REF_COMMANDS, ids=[" ".join(a[:2]) + " " + a[2] for a in REF_COMMANDS])
def test_an_unknown_ref_exits_2_naming_it(clone, args):
    out = subprocess.run([sys.executable, "-m", "ci_tools", *args], cwd=clone, capture_output=True, text=True)
    assert out.returncode == 2, (out.returncode, out.stderr)
    assert "no-such-ref" in out.stderr and "Traceback" not in out.stderr


def test_a_missing_changelog_or_master_exits_2(clone):
    for extra in (["--changelog-file", "nope.yaml"], ["--master", "nope-master.yaml"]):
        out = subprocess.run([sys.executable, "-m", "ci_tools", "changelog", "lint", "--base", "HEAD", "--head", "HEAD",
                              *extra], cwd=clone, capture_output=True, text=True)
        assert out.returncode == 2, out.stderr
