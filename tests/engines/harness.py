"""Check command lines with the engine's own argument parser, built from a pinned wheel.

    from tests.engines.harness import parse_many
    results = parse_many("sglang", "0.5.22", [argv1, argv2])   # one process per (parser, version)
    assert all(r.ok for r in results), [r.error for r in results]

The wheels are those pinned in tests/engines/wheels.txt, installed by `python3 dev.py test` into
.venv-engines (or $CI_TOOLS_ENGINES_VENV). A missing wheel fails the test with the fix, never skips.
`argv` is what the parser sees: the options after the launcher (`Command.args`), not the launcher.
"""

from __future__ import annotations

import atexit
import json
import os
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
WHEELS_TXT = Path(__file__).with_name("wheels.txt")
HOST = Path(__file__).with_name("parser_host.py")
# parser name -> the distribution whose wheel provides it
DISTRIBUTIONS = {"sglang": "sglang", "sglang-router": "sglang-router", "smg": "smg", "vllm": "vllm"}


@dataclass(frozen=True)
class Parsed:
    ok: bool
    error: str
    deprecated: tuple[str, ...]


def venv() -> Path:
    return Path(os.environ.get("CI_TOOLS_ENGINES_VENV", REPO / ".venv-engines"))


def pinned() -> dict[str, tuple[str, ...]]:
    """distribution -> pinned versions, from wheels.txt (the file dev.py installs from)."""
    out: dict[str, list[str]] = {}
    for line in WHEELS_TXT.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line and not line.startswith("deps ") and "==" in line:
            dist, version = line.split("==", 1)
            out.setdefault(dist, []).append(version)
    return {k: tuple(v) for k, v in out.items()}


def wheel_dir(parser: str, version: str) -> Path:
    dist = DISTRIBUTIONS[parser]
    if version not in pinned().get(dist, ()):
        pytest.fail(f"{dist} {version} is not pinned in {WHEELS_TXT.relative_to(REPO)}; add `{dist}=={version}` "
                    "there and run `python3 dev.py test` to install it")
    path = venv() / "wheels" / f"{dist}-{version}"
    if not (path / ".complete").exists():
        pytest.fail(f"the {dist} {version} wheel is not installed in {path}: run `python3 dev.py test` "
                    "(it builds .venv-engines from tests/engines/wheels.txt)")
    return path


class _Host:
    """One parser process per (parser, version), kept for the test session (building one takes seconds)."""

    def __init__(self, parser: str, version: str):
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
        env["PYTHONPATH"] = str(wheel_dir(parser, version))
        python = venv() / "bin" / "python"
        if not python.exists():
            pytest.fail(f"{python} is missing: run `python3 dev.py test` (it builds .venv-engines)")
        self.proc = subprocess.Popen([str(python), str(HOST), parser], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        first = self.proc.stdout.readline()
        if not first:
            err = self.proc.stderr.read()
            pytest.fail(f"could not build the {parser} {version} parser from its wheel:\n{err[-3000:]}")
        self.info = json.loads(first)
        assert self.info["version"] == version, f"{parser}: the wheel folder holds {self.info['version']}"

    def ask(self, argvs: list[list[str]]) -> list[dict]:
        self.proc.stdin.write(json.dumps({"argvs": argvs}) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            pytest.fail(f"the parser process died:\n{self.proc.stderr.read()[-3000:]}")
        return json.loads(line)["results"]

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()


_HOSTS: dict[tuple[str, str], _Host] = {}


@atexit.register
def _close_all() -> None:
    for host in _HOSTS.values():
        host.close()


def _host(parser: str, version: str) -> _Host:
    key = (parser, version)
    if key not in _HOSTS:
        _HOSTS[key] = _Host(parser, version)
    return _HOSTS[key]


def parse_many(parser: str, version: str, argvs: list[list[str]]) -> list[Parsed]:
    results = _host(parser, version).ask([list(a) for a in argvs])
    return [Parsed(r["ok"], r["error"], tuple(r["deprecated"])) for r in results]


def parse(parser: str, version: str, argv: list[str]) -> Parsed:
    return parse_many(parser, version, [argv])[0]


def options(parser: str, version: str) -> frozenset[str]:
    """Every option string the parser defines."""
    return frozenset(_host(parser, version).info["options"])


def failures(parser: str, version: str, named: dict[str, list[str]]) -> list[str]:
    """`name: error` for each named argv the parser rejects (empty when all parse)."""
    names = list(named)
    results = parse_many(parser, version, [named[n] for n in names])
    return [f"{n}: {parser} {version} rejects `{shlex.join(named[n])}`: {r.error}"
            for n, r in zip(names, results) if not r.ok]
