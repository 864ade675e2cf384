"""The whole run's order (tests/conftest.py SLOW_FIRST): the longest files are collected first."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import REPO, SLOW_FIRST


def test_every_slow_first_file_exists_once():
    assert len(set(SLOW_FIRST)) == len(SLOW_FIRST)
    assert [rel for rel in SLOW_FIRST if not (REPO / "tests" / rel).is_file()] == []


def test_collection_starts_with_the_slow_files_in_their_order():
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                          "-p", "no:xdist", "tests/test_layers.py", *(f"tests/{rel}" for rel in reversed(SLOW_FIRST))],
                         cwd=REPO, capture_output=True, text=True, timeout=300)
    files = list(dict.fromkeys(line.split("::")[0] for line in out.stdout.splitlines() if "::" in line))
    assert files == [f"tests/{rel}" for rel in SLOW_FIRST] + ["tests/test_layers.py"], out.stdout[-2000:]
