"""The shipped .github/CODEOWNERS names paths that exist, and the seed PR's files have their vendor owners."""

from __future__ import annotations

import fnmatch
import subprocess

from codeowners import CodeOwners

from ci_tools import names


def _tracked(root) -> list[str]:
    out = subprocess.run(["git", "-C", str(root), "ls-files", "-z"], capture_output=True, check=True).stdout
    return [p.decode() for p in out.split(b"\0") if p]


def test_every_pattern_owns_a_file_of_this_repository(repo_root):
    """A pattern naming nothing silently leaves its files to the catch-all. The one exception: a vendor
    master config of the layout (`names.MASTER_GLOB`; this repository ships only NVIDIA's), so a
    benchmark repository adding amd-master.yaml gets its reviewers from the first commit."""
    files = _tracked(repo_root)
    for n, line in enumerate((repo_root / ".github/CODEOWNERS").read_text().splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        pattern = line.split()[0]
        if fnmatch.fnmatchcase(pattern.lstrip("/"), names.MASTER_GLOB):
            continue
        single = CodeOwners(line)
        assert any(single.of(f) for f in files), f".github/CODEOWNERS:{n}: {pattern} matches no file"


def test_the_seed_recipe_is_owned_by_the_nvidia_reviewers(repo_root):
    owners = CodeOwners((repo_root / ".github/CODEOWNERS").read_text())
    for path in ("recipes/gb300-dsv41flash-fp4-sglang/agentic.yaml", "inferencex-e2e/configs/nvidia-master.yaml"):
        assert ("TEAM", "@SemiAnalysisAI/nvidia-reviewers") in owners.of(path), path
