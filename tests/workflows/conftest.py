"""Fixtures for the workflow tests: the linters from the test extra and the parsed workflow files."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
WORKFLOWS = REPO / ".github" / "workflows"
BIN = Path(sys.executable).parent


def tool(name: str) -> str:
    """A linter installed by the `test` extra (next to this Python), else from PATH; never skipped."""
    candidate = BIN / name
    if candidate.exists():
        return str(candidate)
    found = shutil.which(name)
    if not found:
        pytest.fail(f"{name} is not installed: `pip install -e .[test]` (pyproject.toml pins it)")
    return found


@pytest.fixture
def lint_env() -> dict[str, str]:
    """PATH with the venv's bin first, so actionlint finds the pinned shellcheck."""
    env = dict(os.environ)
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    return env
