"""Fixtures for the workflow tests."""

from __future__ import annotations

import os

import pytest

from wf_env import BIN


@pytest.fixture
def lint_env() -> dict[str, str]:
    """PATH with the venv's bin first, so actionlint finds the pinned shellcheck."""
    env = dict(os.environ)
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    return env
