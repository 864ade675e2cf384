"""Fixtures of the config tests."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from cfgdata import REPO
from ci_tools import names


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    """A copy of the repository's benchmark data (configs, runners, changelog, recipes)."""
    for part in (names.E2E_DIR, names.RECIPES_DIR):
        shutil.copytree(REPO / part, tmp_path / part)
    return tmp_path
