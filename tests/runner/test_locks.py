"""The pinned environments of a runner host (locks/): the engine of the process backend, one lock per engine
release, and AIPerf's virtualenv. Each is every distribution at one version with its hashes, installed with
`pip install --no-deps --require-hashes -r`, from the `.in` beside it (docs/runner-operator.md, 'Engine locks')."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ci_tools import engines

REPO = Path(__file__).resolve().parents[2]
LOCKS = REPO / "locks"
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?==(\S+)")


def pins(path: Path) -> dict[str, str]:
    """name -> version of a lock file; every entry must carry at least one sha256 hash."""
    out: dict[str, str] = {}
    entry = None
    hashes: dict[str, int] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        m = PIN.match(line)
        if m:
            name = re.sub(r"[-_.]+", "-", m.group(1)).lower()
            marker = line.split(";", 1)[1].strip(" \\") if ";" in line else ""
            entry = f"{name}; {marker}" if marker else name
            assert entry not in hashes, f"{path.name}: {entry} pinned twice"
            # a universal lock may pin one distribution once per Python version (a marker each)
            out.setdefault(name, m.group(2).rstrip(" \\;"))
            hashes[entry] = 0
        elif line.strip().startswith("--hash=sha256:") and entry:
            assert re.fullmatch(r"--hash=sha256:[0-9a-f]{64}( \\)?", line.strip()), line
            hashes[entry] += 1
        elif line.strip() and not line.lstrip().startswith("#"):
            pytest.fail(f"{path.name}: {line!r} is neither a pin, a hash nor a comment")
    unhashed = [n for n, count in hashes.items() if count == 0]
    assert not unhashed, f"{path.name}: no hash for {unhashed} (pip --require-hashes refuses the file)"
    return out


def lock_files() -> list[Path]:
    files = sorted(LOCKS.glob("*.txt"))
    return [f for f in files if not f.name.endswith(".overrides.txt")]


def test_every_lock_is_pinned_and_hashed_and_made_from_its_input():
    assert {f.name for f in lock_files()} >= {"vllm-0.26.0.txt", "aiperf-0.13.0.txt"}
    for lock in lock_files():
        tool, version = lock.stem.rsplit("-", 1)
        got = pins(lock)
        assert got.get(tool) == version, f"{lock.name} pins {tool}=={got.get(tool)}, its name says {version}"
        source = lock.with_suffix(".in")
        assert source.is_file(), f"{lock.name} has no {source.name} to regenerate it from"
        wanted = [PIN.match(l) or re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)", l) for l in
                  source.read_text().splitlines() if l.strip() and not l.startswith("#")]
        for m in wanted:
            assert re.sub(r"[-_.]+", "-", m.group(1)).lower() in got, f"{lock.name} lacks {m.group(1)} of {source.name}"
        # the command that wrote it is the one a maintainer re-runs
        assert f"-o locks/{lock.name}" in lock.read_text().splitlines()[1]


def release(v: str) -> tuple[int, ...]:
    return engines.release_of(v)


def test_the_vllm_lock_holds_what_the_h100_run_needed():
    got = pins(LOCKS / "vllm-0.26.0.txt")
    # its wheel pins torch 2.11.0 (the torch of the H100 machine it ran on)
    assert got["torch"] == "2.11.0"
    # mistral_common imports pycountry, which vLLM's metadata does not bring
    assert "pycountry" in got and "pydantic-extra-types" in got
    # vLLM pins apache-tvm-ffi==0.1.10, with which its xgrammar fails ('extra_lib_paths'): the override wins
    assert release(got["apache-tvm-ffi"]) >= (0, 1, 11) and got["xgrammar"] == "0.2.9"
    assert "apache-tvm-ffi==0.1.15.post2" in (LOCKS / "vllm-0.26.0.overrides.txt").read_text()
    # FlashInfer, which vLLM's sampler imports unless VLLM_USE_FLASHINFER_SAMPLER=0
    assert "flashinfer-python" in got


def test_the_aiperf_lock_is_the_release_the_runner_is_checked_with():
    version = re.search(r'^AIPERF_VERSION = "([^"]+)"', (REPO / "dev.py").read_text(), re.M).group(1)
    assert pins(LOCKS / f"aiperf-{version}.txt")["aiperf"] == version
