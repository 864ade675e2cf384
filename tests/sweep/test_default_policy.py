"""ci-tools' default sweep-label policy is this repository's own inferencex-e2e/ci-policy.yaml: a
checkout reads that file, and the package build (setup.py) writes it into the wheel, so there is no
second copy to keep in step by hand. The built package carries its other package data too: the engine
parsers' tables (ci_tools/engines/argkinds.json), read at import."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from ci_tools.names import POLICY

REPO = Path(__file__).resolve().parents[2]
PACKAGED = "ci_tools/sweep/default-ci-policy.yaml"


def test_a_checkout_reads_the_repository_policy_file():
    from ci_tools.sweep.load import default_policy, default_policy_text, load_policy

    assert not (REPO / PACKAGED).exists()        # no hand-kept copy in the tree
    assert default_policy_text() == (REPO / POLICY).read_text(encoding="utf-8")
    assert default_policy() == load_policy(REPO)


def _build_tree(tmp_path: Path) -> Path:
    """What a build reads (pyproject.toml, setup.py, MANIFEST.in, README, the package, the policy)."""
    src = tmp_path / "src"
    for rel in ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md", POLICY):
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / rel, src / rel)
    shutil.copytree(REPO / "ci_tools", src / "ci_tools", ignore=shutil.ignore_patterns("__pycache__"))
    return src


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """The package as `setup.py build_py` lays it out (what a wheel holds), built once for this module."""
    tmp = tmp_path_factory.mktemp("build")
    lib = tmp / "lib"
    res = subprocess.run([sys.executable, "setup.py", "-q", "build_py", "--build-lib", str(lib)],
                         cwd=_build_tree(tmp), capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    return lib


def probe_built(lib: Path, code: str, cwd: Path) -> str:
    """What CODE prints when ci_tools is imported from the build alone (no checkout around it)."""
    out = subprocess.run([sys.executable, "-c", code], cwd=cwd, env={**os.environ, "PYTHONPATH": str(lib)},
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_the_built_package_carries_the_policy_and_reads_it(built, tmp_path):
    want = (REPO / POLICY).read_text(encoding="utf-8").replace("$schema=../ci_tools/schemas/", "$schema=../schemas/", 1)
    assert (built / PACKAGED).read_text(encoding="utf-8") == want
    # installed, ci-tools reads its own copy: the rewritten schema comment shows it
    probe = ("from ci_tools.sweep.load import default_policy, default_policy_text; default_policy(); "
             "print(default_policy_text().splitlines()[0])")
    assert probe_built(built, probe, tmp_path).strip() == "# yaml-language-server: $schema=../schemas/ci-policy.schema.json"


def test_the_built_package_carries_the_parser_tables_and_reads_them(built, tmp_path):
    # imported from the build (not this checkout, not an installed copy): the tables it read are the tree's
    probe = ("import json; from ci_tools.engines import argkinds; "
             "print(json.dumps([argkinds.__file__, argkinds.RELEASES, sorted(argkinds.COMMON['sglang'])]))")
    where, releases, sglang = json.loads(probe_built(built, probe, tmp_path))
    from ci_tools.engines import argkinds
    assert Path(where).is_relative_to(built)
    assert releases == {t: list(r) for t, r in argkinds.RELEASES.items()}
    assert sglang == sorted(argkinds.COMMON["sglang"]) and len(sglang) > 100


def test_the_source_distribution_holds_the_policy_file_and_the_parser_tables(tmp_path):
    src = _build_tree(tmp_path)
    res = subprocess.run([sys.executable, "setup.py", "-q", "sdist", "--dist-dir", str(tmp_path / "dist")], cwd=src,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    (sdist,) = (tmp_path / "dist").glob("*.tar.gz")
    with tarfile.open(sdist) as tar:
        names = tar.getnames()
    assert any(n.endswith("/" + POLICY) for n in names), names
    assert any(n.endswith("/ci_tools/engines/argkinds.json") for n in names), names
