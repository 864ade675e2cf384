"""Static checks: ruff (the rules in pyproject.toml's [tool.ruff]) and mypy (its [tool.mypy]) report
nothing on the packages in CLEAN: every package and module of ci_tools/ but those in NOT_YET. A package
leaves NOT_YET when its findings reach zero; a new package is checked from its first line. A finding
fails the test naming each `file:line`, and each gate is shown to catch what it is for: a planted unused
import, a planted type error."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.conftest import REPO

# the packages not yet at zero findings (the one list; each leaves it when it gets there): none today
NOT_YET: tuple[str, ...] = ()
# every other package and module of ci_tools/
CLEAN = tuple(sorted(p.relative_to(REPO).as_posix() for p in (REPO / "ci_tools").iterdir()
                     if (p.suffix == ".py" or (p / "__init__.py").is_file())
                     and p.relative_to(REPO).as_posix() not in NOT_YET))
CONFIG = REPO / "pyproject.toml"
# mypy's incremental cache, per checkout, outside it: a warm run takes seconds instead of a minute
MYPY_CACHE = Path(tempfile.gettempdir()) / f"ci-tools-mypy-{hashlib.sha256(str(REPO).encode()).hexdigest()[:12]}"


def _tool(module: str) -> list[str]:
    if importlib.util.find_spec(module) is None:
        pytest.fail(f"{module} is not installed for {sys.executable}; `python3 dev.py test` installs it with the "
                    "test extra (pyproject.toml)")
    return [sys.executable, "-m", module]


def _run(argv: list[str]) -> subprocess.CompletedProcess:
    # MYPYPATH: `ci_tools` is this checkout's, even for a file outside it (not an installed copy)
    env = {**os.environ, "MYPYPATH": str(REPO)}
    proc = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    if proc.returncode not in (0, 1):      # 2: a usage or configuration error, not findings
        pytest.fail(f"{' '.join(argv[:3])} did not run (exit {proc.returncode}):\n{proc.stdout}{proc.stderr}")
    return proc


def ruff_findings(paths: list[str]) -> list[str]:
    """`file:line:col: CODE message` for each finding."""
    proc = _run([*_tool("ruff"), "check", "--config", str(CONFIG), "--no-cache", "--output-format", "concise",
                 *paths])
    return [line for line in proc.stdout.splitlines() if re.match(r"\S+:\d+:\d+: ", line)]


def mypy_findings(paths: list[str], cache: Path = MYPY_CACHE) -> list[str]:
    """`file:line: error: message` for each finding in `paths` (modules they import are read, not judged)."""
    proc = _run([*_tool("mypy"), "--config-file", str(CONFIG), "--follow-imports", "silent",
                 "--cache-dir", str(cache), "--no-error-summary", "--no-pretty", *paths])
    return [line for line in proc.stdout.splitlines() if re.match(r"\S+:\d+: error: ", line)]


def test_ruff_finds_nothing_in_the_clean_packages():
    found = ruff_findings(list(CLEAN))
    assert not found, f"ruff: {len(found)} finding(s):\n" + "\n".join(found)


def test_mypy_finds_nothing_in_the_clean_packages():
    found = mypy_findings(list(CLEAN))
    assert not found, f"mypy: {len(found)} finding(s):\n" + "\n".join(found)


def test_a_planted_unused_import_is_found_at_its_line(tmp_path):
    planted = tmp_path / "planted.py"
    planted.write_text('"""A module with an import it never uses."""\n\nimport os\n')
    # beside the clean packages, as the gate runs: the one finding is the planted one
    assert [f.split(" ", 2)[:2] for f in ruff_findings([*CLEAN, str(planted)])] == [[f"{planted}:3:8:", "F401"]]


def test_a_planted_type_error_is_found_at_its_line(tmp_path):
    planted = tmp_path / "planted.py"
    planted.write_text('"""A module that reads a string where it promised an integer."""\n\n'
                       "from ci_tools.errors import Finding\n\n"
                       "LINE: int = Finding('f.yaml', 1, None, 'a message').message\n")
    # a cache of its own: mypy keys its cache by module name, and would answer for an earlier `planted`
    found = mypy_findings([str(planted)], cache=tmp_path / "mypy-cache")
    assert len(found) == 1 and found[0].startswith(f"{planted}:5: error: Incompatible types in assignment"), found


def test_not_yet_names_paths_that_exist():
    assert all((REPO / p).exists() for p in NOT_YET), [p for p in NOT_YET if not (REPO / p).exists()]


def test_every_module_outside_not_yet_is_checked():
    modules = {p.relative_to(REPO).as_posix() for p in (REPO / "ci_tools").rglob("*.py")}
    unchecked = {m for m in modules if not any(m == c or m.startswith(c + "/") for c in (*CLEAN, *NOT_YET))}
    assert not unchecked and {"ci_tools/results", "ci_tools/cli", "ci_tools/runner"} <= set(CLEAN), sorted(unchecked)
