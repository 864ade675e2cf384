"""Builders shared by the changelog tests: entries as bytes, and real git repositories."""

from __future__ import annotations

import subprocess
from pathlib import Path

REPO = "acme/bench"
MASTER_KEYS = ["cfg-a", "cfg-b", "dsr1-fp8-h200-sglang", "dsr1-fp4-b200-sglang", "gptoss-fp4-b200-trt"]
LINK = f"https://github.com/{REPO}/pull"


def entry(keys=("cfg-a",), desc=("Add cfg-a.",), link="XXX", extra: str = "") -> bytes:
    lines = ["- config-keys:"] + [f"    - {k}" for k in keys] + ["  description:"]
    lines += [f'    - "{d}"' for d in desc] + [f"  pr-link: {link}"]
    text = "\n".join(lines) + "\n" + extra
    return text.encode()


def history(n: int = 3) -> bytes:
    """A valid file of n entries, one empty line between them, linking PRs 1..n."""
    return b"\n".join(entry(keys=("cfg-a",), desc=(f"Change {i}.",), link=f"{LINK}/{i}") for i in range(1, n + 1))


def git(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(repo), *args], check=check, capture_output=True, text=True)


def init_repo(repo: Path) -> Path:
    repo.mkdir(parents=True, exist_ok=True)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "t@example.invalid")
    git(repo, "config", "user.name", "t")
    git(repo, "config", "commit.gpgsign", "false")
    return repo


def write(repo: Path, rel: str, content: bytes) -> None:
    path = repo / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)


def commit(repo: Path, message: str, tag: str | None = None) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--allow-empty", "-m", message)
    if tag:
        git(repo, "tag", tag)
    return git(repo, "rev-parse", "HEAD").stdout.strip()
