"""Shared test fixtures.

`../shared/` (reference corpora) sits beside the checkout, read-only. Tests that need it use the
`shared` fixture, which fails (never skips) with a clear message when it is missing.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# The project's own recordings of real tools and GPUs, in the repository (tests/data/README.md says how
# each was made): the suite needs nothing beside the checkout but InferenceX's history and corpus.
RECORDINGS = REPO / "tests" / "data"
AIPERF_EXPORT = RECORDINGS / "aiperf-0.13-export"   # AIPerf 0.13's export of 40 requests at c4 (a stub server)
NVIDIA_SMI_H200 = RECORDINGS / "nvidia-smi-h200"    # an H200's nvidia-smi, idle and at its power cap
H100_JOB = RECORDINGS / "h100" / "fixed-c16"         # `runner run` of vLLM 0.26.0 on an H100: a whole job folder


def shared_dir() -> Path:
    return Path(os.environ.get("CI_TOOLS_SHARED", REPO.parent / "shared"))


@pytest.fixture
def repo_root() -> Path:
    return REPO


@pytest.fixture
def shared() -> Path:
    path = shared_dir()
    if not (path / "corpus").is_dir():
        pytest.fail(f"the shared corpus is missing: expected {path}/corpus (set CI_TOOLS_SHARED to its folder)")
    return path


def assert_golden(path: Path, text: str) -> None:
    """Compare `text` with the golden file at `path`; CI_TOOLS_UPDATE_GOLDEN=1 rewrites it (review the diff)."""
    if os.environ.get("CI_TOOLS_UPDATE_GOLDEN"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"missing golden {path}; run with CI_TOOLS_UPDATE_GOLDEN=1 once and review it"
    assert text == path.read_text(encoding="utf-8"), (
        f"output differs from {path} (CI_TOOLS_UPDATE_GOLDEN=1 rewrites it; review the diff)")
