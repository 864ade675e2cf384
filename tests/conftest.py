"""Shared test fixtures.

`../shared/` (reference corpora) sits beside the checkout, read-only. Tests that need it use the
`shared` fixture, which fails (never skips) with a clear message when it is missing.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


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
