"""Fixtures shared by the sweep tests."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def demo_repo(tmp_path_factory):
    spec = importlib.util.spec_from_file_location("demo", REPO / "examples" / "demo.py")
    demo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(demo)
    dest = tmp_path_factory.mktemp("demo")
    demo.build_scratch_repo(dest)
    return dest
