"""dev.py, the one way in for a contributor: its lock files hold what their inputs ask for, the README
says exactly what `dev.py test` installs or needs, and the commands answer a typo and --help."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.conftest import REPO, dev_py

README = REPO / "README.md"
DEV = dev_py()


def _pins(text: str) -> dict[str, list[str]]:
    """name -> every version a hashed lock pins (a universal lock may pin two, under markers)."""
    out: dict[str, list[str]] = {}
    for entry in DEV._lock_entries(text):
        head = entry.split()[0]
        assert "==" in head, f"not an exact pin: {head}"
        name, version = head.split("==", 1)
        out.setdefault(canonicalize_name(name), []).append(version)
    return out


@pytest.mark.parametrize("lock", DEV.LOCKS_ALL, ids=lambda lock: lock.name)
def test_each_lock_was_written_from_its_current_inputs(lock):
    assert lock.path.exists(), f"{lock.path} is missing: run `python3 dev.py lock` and commit it"
    assert lock.recorded_digest() == lock.input_digest(), (
        f"{lock.path.relative_to(REPO)} is older than its inputs ({lock.what}): run `python3 dev.py lock` "
        "and commit the result")


@pytest.mark.parametrize("lock", DEV.LOCKS_ALL, ids=lambda lock: lock.name)
def test_each_lock_pins_what_its_inputs_ask_for_with_hashes(lock):
    text = lock.path.read_text(encoding="utf-8")
    for entry in DEV._lock_entries(text):
        assert "--hash=sha256:" in entry, f"{lock.path.name}: {entry.split()[0]} has no hash (uv installs with --require-hashes)"
    pins = _pins(text)
    if lock.no_deps:   # one entry per input, the very versions asked for
        assert sorted(e.split()[0] for e in DEV._lock_entries(text)) == sorted(lock.inputs())
        return
    for line in lock.inputs():
        req = Requirement(line)
        got = pins.get(canonicalize_name(req.name))
        assert got, f"{lock.path.name} does not pin {req.name}, which its inputs ask for"
        assert all(req.specifier.contains(v, prereleases=True) for v in got), (
            f"{lock.path.name} pins {req.name} {got}, outside `{line}`")


def test_the_dev_lock_holds_the_workflows_constraints():
    pins = _pins(DEV.LOCK["dev"].path.read_text(encoding="utf-8"))
    for line in DEV.CONSTRAINTS.read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            name, version = line.split("==")
            assert pins.get(canonicalize_name(name)) == [version], f"{name}: constraints {version}, lock {pins.get(name)}"


def test_the_torch_environment_pins_pytorchs_cpu_build():
    pins = _pins(DEV.LOCK["engines-torch"].path.read_text(encoding="utf-8"))
    assert [v.endswith("+cpu") for v in pins["torch"]] == [True]
    assert not any(name.startswith("nvidia-") for name in pins), "a CUDA build came in"


@pytest.mark.parametrize("npm", DEV.NPM_LOCKS, ids=lambda n: n.folder)
def test_npm_locks_pin_every_package_with_its_integrity(npm):
    manifest = json.loads((DEV.NODE_DIR / npm.folder / "package.json").read_text())
    lock = json.loads(npm.lockfile.read_text())
    wanted = {**manifest.get("dependencies", {}), **manifest.get("optionalDependencies", {})}
    root = lock["packages"][""]
    assert {**root.get("dependencies", {}), **root.get("optionalDependencies", {})} == wanted, (
        f"{npm.lockfile} was written for another package.json: run `python3 dev.py lock`")
    for path, package in lock["packages"].items():
        if path:
            assert package.get("integrity", "").startswith("sha512-"), f"{npm.lockfile}: {path} has no integrity"
    for name, version in wanted.items():
        assert lock["packages"][f"node_modules/{name}"]["version"] == version


def test_the_pinned_node_is_one_the_npm_tools_accept():
    runtime = json.loads((DEV.NODE_DIR / "runtime" / "package.json").read_text())["optionalDependencies"]
    assert set(runtime.values()) == {DEV.NODE_VERSION}
    tools = json.loads((DEV.NODE_DIR / "tools" / "package-lock.json").read_text())["packages"]
    version = tuple(int(x) for x in DEV.NODE_VERSION.split("."))
    for path, package in tools.items():
        engine = (package.get("engines") or {}).get("node", "") if isinstance(package.get("engines"), dict) else ""
        for low in re.findall(r">=\s*(\d+(?:\.\d+)*)", engine):
            assert version >= tuple(int(x) for x in low.split(".")), f"{path} wants node {engine}"


# ---- the README's requirements list is what dev.py installs or needs ------------------------------------

def _requirements_rows() -> list[list[str]]:
    text = README.read_text(encoding="utf-8")
    start = text.index("### What the tests need")
    table = text[start:text.index("\n\n", text.index("| need |", start))]
    return [[c.strip() for c in row.strip("|").split("|")] for row in table.splitlines()[2:]]


def test_the_readme_names_exactly_the_debian_packages_dev_py_installs():
    named = [name for need, *_ in _requirements_rows() if need.startswith("Debian:") for name in re.findall(r"`([^`]+)`", need)]
    installed = [p for need in DEV.APT_NEEDS for p in need.packages]
    assert sorted(named) == sorted(installed)
    assert len(named) == len(set(named))


def test_the_readme_names_the_pinned_versions():
    rows = {need.split()[0]: need for need, *_ in _requirements_rows()}
    assert f"Node.js {DEV.NODE_VERSION}" in rows["Node.js"]
    assert f"uv {DEV.UV_VERSION}" in rows["uv"]
    assert "Python ≥ 3.11" in rows["Python"]


# ---- the quick tier ---------------------------------------------------------------------------------------

def test_every_path_kept_out_of_the_quick_tier_exists():
    from tests import conftest

    for entry in conftest.NOT_QUICK:
        assert (REPO / "tests" / entry).exists(), f"NOT_QUICK names {entry}, which tests/ does not have"


def test_a_quick_test_that_starts_a_daemon_fails(tmp_path):
    """The guard of tests/conftest.py, in a pytest of its own: a test of the tier that starts munged or
    listens on a socket fails with the fix; the same test outside the tier passes."""
    (tmp_path / "tests").mkdir()
    shutil.copy(REPO / "tests" / "conftest.py", tmp_path / "tests" / "conftest.py")   # verbatim, and dev.py beside
    shutil.copy(REPO / "tests" / "public_clone.py", tmp_path / "tests" / "public_clone.py")   # conftest's plug-in
    (tmp_path / ".ci").mkdir()
    shutil.copy(REPO / ".ci" / "corpus.json", tmp_path / ".ci" / "corpus.json")       # which the plug-in reads
    shutil.copy(REPO / "dev.py", tmp_path / "dev.py")
    body = ("import socket, subprocess\n"
            "def test_starts():\n    subprocess.run(['munged', '--version'], capture_output=True)\n"
            "def test_listens():\n    s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(); s.close()\n")
    (tmp_path / "tests" / "test_x.py").write_text(body)
    (tmp_path / "tests" / "runner").mkdir()
    (tmp_path / "tests" / "runner" / "test_y.py").write_text(body.replace("['munged', '--version']", "['true']"))
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                          "--rootdir", str(tmp_path), str(tmp_path / "tests")],
                         capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert "2 failed, 2 passed" in out.stdout, out.stdout[-3000:]
    assert "starts `munged --version`" in out.stdout and "listens on a socket" in out.stdout
    assert "add its file to NOT_QUICK in tests/conftest.py" in out.stdout


# ---- the commands ---------------------------------------------------------------------------------------------

def _dev(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(REPO / "dev.py"), *argv], capture_output=True, text=True, timeout=60)


def test_help_prints_the_commands_and_exits_0():
    for flag in ("--help", "-h", "help"):
        out = _dev(flag)
        assert out.returncode == 0 and all(f"python3 dev.py {c}" in out.stdout for c in DEV.COMMANDS), out


def test_a_typo_is_an_unknown_command_with_the_nearest_one():
    out = _dev("tset")
    assert out.returncode == 2
    assert "unknown command 'tset'; did you mean 'test'?" in out.stderr
    assert "python3 dev.py test" in out.stdout


def test_no_command_prints_the_usage_and_exits_2():
    out = _dev()
    assert out.returncode == 2 and "python3 dev.py demo" in out.stdout


def test_update_goldens_wants_the_tests_named():
    out = _dev("update-goldens")
    assert out.returncode == 2 and "name the tests" in out.stderr


@pytest.mark.parametrize("args, chosen, want", [
    (["tests/yaml"], "2", ["-n", "2", "--dist", "loadfile"]),
    (["tests/yaml"], "0", []),
    (["tests/yaml"], "1", []),
    (["-n", "3", "tests/yaml"], "2", []),          # the caller's own -n wins
    (["-n4"], "2", []),
    (["-p", "no:xdist"], "2", []),
])
def test_the_workers_pytest_is_given(monkeypatch, args, chosen, want):
    monkeypatch.setenv("CI_TOOLS_TEST_WORKERS", chosen)
    assert DEV.worker_args(args) == want


def test_a_loaded_machine_runs_one_pytest_process(monkeypatch):
    monkeypatch.delenv("CI_TOOLS_TEST_WORKERS", raising=False)
    monkeypatch.setattr(DEV.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(DEV.os, "getloadavg", lambda: (6.0, 5.0, 4.0))
    assert DEV.worker_args([]) == []
    monkeypatch.setattr(DEV.os, "getloadavg", lambda: (0.4, 0.5, 0.6))
    assert DEV.worker_args([]) == ["-n", "2", "--dist", "loadfile"]
