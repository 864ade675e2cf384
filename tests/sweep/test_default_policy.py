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


def test_the_built_package_carries_the_policy_and_reads_it(tmp_path):
    src = _build_tree(tmp_path)
    lib = tmp_path / "lib"
    res = subprocess.run([sys.executable, "setup.py", "-q", "build_py", "--build-lib", str(lib)], cwd=src,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    want = (REPO / POLICY).read_text(encoding="utf-8").replace("$schema=../ci_tools/schemas/", "$schema=../schemas/", 1)
    assert (lib / PACKAGED).read_text(encoding="utf-8") == want
    # installed (no checkout around it), ci-tools reads its own copy: the rewritten schema comment shows it
    probe = ("from ci_tools.sweep.load import default_policy, default_policy_text; default_policy(); "
             "print(default_policy_text().splitlines()[0])")
    env = {**os.environ, "PYTHONPATH": str(lib)}
    out = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "# yaml-language-server: $schema=../schemas/ci-policy.schema.json"


def test_the_built_package_carries_the_parser_tables_and_reads_them(tmp_path):
    src = _build_tree(tmp_path)
    lib = tmp_path / "lib"
    res = subprocess.run([sys.executable, "setup.py", "-q", "build_py", "--build-lib", str(lib)], cwd=src,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    # imported from the build (not this checkout, not an installed copy): the tables it read are the tree's
    probe = ("import json; from ci_tools.engines import argkinds; "
             "print(json.dumps([argkinds.__file__, argkinds.RELEASES, sorted(argkinds.COMMON['sglang'])]))")
    env = {**os.environ, "PYTHONPATH": str(lib)}
    out = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    where, releases, sglang = json.loads(out.stdout)
    from ci_tools.engines import argkinds
    assert Path(where).is_relative_to(lib)
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
