"""The changelog hook through the real `pre-commit` (pip), in every way pre-commit runs it.

pre-commit installs the hook from a snapshot of this checkout (tracked and untracked, not ignored,
files, committed with a fixed date so an unchanged tree gives the same commit and pre-commit's cache
under .venv/ is reused), exactly as a user's `repo:` entry would: `.pre-commit-hooks.yaml`, `language:
python`, `pip install` of ci-tools into pre-commit's own environment.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .helpers import REPO, entry, git, history, init_repo, write

ROOT = Path(__file__).resolve().parents[2]
LOG = "inferencex-e2e/perf-changelog.yaml"
MASTER = b"cfg-a:\n  model: a\ncfg-b:\n  model: b\n"
FIXED_DATE = {"GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
              "GIT_AUTHOR_NAME": "snapshot", "GIT_AUTHOR_EMAIL": "s@example.invalid",
              "GIT_COMMITTER_NAME": "snapshot", "GIT_COMMITTER_EMAIL": "s@example.invalid"}
PRE_COMMIT = Path(sys.executable).with_name("pre-commit")


@pytest.fixture(scope="module")
def hook_source() -> tuple[Path, str]:
    """A git repository holding exactly this checkout's files, at a stable path; (path, commit)."""
    venv = Path(sys.prefix)
    src = venv / "pre-commit-src"
    shutil.rmtree(src, ignore_errors=True)
    listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            capture_output=True, check=True).stdout.split(b"\0")
    for rel in (p.decode() for p in listed if p):
        if (ROOT / rel).is_file():
            (src / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, src / rel)
    env = {**os.environ, **FIXED_DATE}
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "--no-verify", "-m", "snapshot"]):
        subprocess.run(["git", "-C", str(src), "-c", "commit.gpgsign=false", *args], check=True, env=env,
                       capture_output=True)
    return src, git(src, "rev-parse", "HEAD").stdout.strip()


@pytest.fixture(scope="module")
def pre_commit_env(hook_source) -> dict[str, str]:
    assert PRE_COMMIT.exists(), f"pre-commit is not installed in {sys.prefix} (it is a test extra: python3 dev.py test)"
    home = Path(sys.prefix) / "pre-commit-home"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PRE_COMMIT", "GITHUB_"))}
    env.update(PRE_COMMIT_HOME=str(home), PATH=f"{PRE_COMMIT.parent}{os.pathsep}{env.get('PATH', '')}")
    subprocess.run([str(PRE_COMMIT), "gc"], env=env, capture_output=True)  # drop environments of old snapshots
    return env


@pytest.fixture
def scratch(tmp_path, hook_source, pre_commit_env) -> Path:
    """A benchmark repository with a remote (origin/main) and a .pre-commit-config.yaml using the hook."""
    src, rev = hook_source
    origin = tmp_path / "origin.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(origin)], check=True)
    repo = init_repo(tmp_path / "bench")
    write(repo, "inferencex-e2e/configs/nvidia-master.yaml", MASTER)
    write(repo, "inferencex-e2e/ci-policy.yaml", f"policy-version: 1\nrepository: {REPO}\nlabels: {{}}\n".encode())
    write(repo, LOG, history(3))
    write(repo, ".pre-commit-config.yaml",
          f"repos:\n  - repo: {src}\n    rev: {rev}\n    hooks: [{{id: changelog-lint}}]\n".encode())
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    git(repo, "remote", "add", "origin", str(origin))
    git(repo, "push", "-q", "origin", "main")
    git(repo, "checkout", "-q", "-b", "pr")
    return repo


def run(repo: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    proc = subprocess.run(list(args), cwd=repo, env=env, capture_output=True, text=True, timeout=900)
    proc.output = proc.stdout + proc.stderr  # type: ignore[attr-defined]
    return proc


BROKEN = entry(keys=("no-such-config",))


def test_all_files_and_ref_ranges_see_a_committed_broken_entry(scratch, pre_commit_env):
    env = pre_commit_env
    write(scratch, LOG, history(3) + b"\n" + BROKEN)
    git(scratch, "commit", "-q", "--no-verify", "-am", "broken entry, committed past the hook")

    # what pre-commit.ci and CI run: nothing is staged, the branch is judged against origin/main
    out = run(scratch, env, str(PRE_COMMIT), "run", "--all-files")
    assert out.returncode == 1, out.output
    assert "config key 'no-such-config' is not in the master configs" in out.output
    assert "HEAD against its merge base with origin/main" in out.output

    out = run(scratch, env, str(PRE_COMMIT), "run", "--from-ref", "origin/main", "--to-ref", "HEAD")
    assert out.returncode == 1, out.output
    assert "config key 'no-such-config' is not in the master configs" in out.output
    assert "the range" in out.output

    # pre-push: the pushed range is judged; the push is refused
    run(scratch, env, str(PRE_COMMIT), "install", "--hook-type", "pre-push")
    out = run(scratch, env, "git", "push", "origin", "pr")
    assert out.returncode != 0, out.output
    assert "config key 'no-such-config' is not in the master configs" in out.output
    assert git(scratch, "ls-remote", "origin", "pr").stdout == ""

    # main itself, clean: accepted with nothing to compare
    git(scratch, "checkout", "-q", "main")
    out = run(scratch, env, str(PRE_COMMIT), "run", "--all-files")
    assert out.returncode == 0, out.output


def test_a_real_commit_gets_whitespace_fixed_then_passes_and_pushes(scratch, pre_commit_env):
    env = pre_commit_env
    out = run(scratch, env, str(PRE_COMMIT), "install", "--hook-type", "pre-commit", "--hook-type", "pre-push")
    assert out.returncode == 0, out.output
    good = entry(keys=("cfg-b",), desc=("Tune cfg-b.",))
    spaced = good.replace(b"  description:\n", b"  description:  \n").replace(b"pr-link: XXX\n", b"pr-link: XXX   \n")
    write(scratch, LOG, history(3) + b"\n" + spaced + b"\n\n")
    git(scratch, "add", LOG)
    out = run(scratch, env, "git", "commit", "-m", "tune cfg-b")
    assert out.returncode != 0, out.output
    assert "trailing whitespace in a new line (also at line" in out.output
    assert "fixed the whitespace and layout of the new lines in the working tree (it passes the gate now)" in out.output
    # the hook repaired the working tree exactly: history untouched, new lines stripped, one final newline
    assert (scratch / LOG).read_bytes() == history(3) + b"\n" + good
    git(scratch, "add", LOG)
    out = run(scratch, env, "git", "commit", "-m", "tune cfg-b")
    assert out.returncode == 0, out.output
    assert "Passed" in out.output
    out = run(scratch, env, "git", "push", "-q", "origin", "pr")
    assert out.returncode == 0, out.output
    assert git(scratch, "ls-remote", "origin", "pr").stdout.strip()
