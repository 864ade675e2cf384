"""Paths and tools for the workflow tests (a plain module: `conftest` is ambiguous across test dirs)."""

from __future__ import annotations

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
