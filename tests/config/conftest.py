"""Fixtures of the config tests."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from cfgdata import REPO
from ci_tools import paths


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    """A copy of the repository's benchmark data (configs, runners, changelog, recipes)."""
    for part in (paths.E2E_DIR, paths.RECIPES_DIR):
        shutil.copytree(REPO / part, tmp_path / part)
    return tmp_path
