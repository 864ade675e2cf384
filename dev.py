#!/usr/bin/env python3
"""The two README commands, with nothing needed beyond Python >= 3.11 and git.

    python3 dev.py demo   # install, then run the main job on the example data shipped in the repo
    python3 dev.py test   # install with the test tools, then run the whole test suite

`python3 dev.py demo --walkthrough` also plays a PR's comment commands (/use and friends) against the
local fake GitHub the tests use, printing every bot reply.

Each creates (or reuses) a virtual environment in .venv and installs this package into it in
editable mode; the install is skipped when pyproject.toml has not changed since the last one.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import time
import venv
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = Path(os.environ.get("CI_TOOLS_VENV", ROOT / ".venv"))
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PY = BIN / "python"


def run(cmd: list[str], **kw) -> int:
    print("+ " + " ".join(str(c) for c in cmd), flush=True)
    return subprocess.call([str(c) for c in cmd], **kw)


def ensure_env(extras: str) -> None:
    if sys.version_info < (3, 11):
        sys.exit(f"ci-tools needs Python >= 3.11; this is {sys.version.split()[0]}")
    _venv_python(VENV, "virtual environment")
    stamp = VENV / f".installed-{extras or 'base'}"
    digest = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()
                            + (ROOT / ".github" / "constraints.txt").read_bytes()).hexdigest()
    if stamp.exists() and stamp.read_text() == digest:
        return
    target = f"{ROOT}[{extras}]" if extras else str(ROOT)
    # The workflows' pins (tests/workflows/test_constraints.py keeps them the runtime closure).
    constraints = ROOT / ".github" / "constraints.txt"
    rc = run([PY, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "-c", constraints, "-e", target])
    if rc != 0:
        sys.exit(f"pip install failed (exit {rc})")
    stamp.write_text(digest)


def _bin(env_dir: Path) -> Path:
    return env_dir / ("Scripts" if os.name == "nt" else "bin")


def _venv_python(env_dir: Path, what: str, note: str = "") -> Path:
    """The python of the virtual environment ENV_DIR, created (with a line saying so) when missing."""
    py = _bin(env_dir) / "python"
    if not py.exists():
        print(f"creating {what} in {env_dir}{note}", flush=True)
        venv.EnvBuilder(with_pip=True).create(env_dir)
    return py


@dataclass(frozen=True)
class ToolEnv:
    """A client the tests run from its own venv, so its pins never meet ours. Skipped when `found_by`
    is already set (a shared venv, CI's cache); a stamp file makes a second run a no-op."""
    found_by: str        # the variable the tests read: the tool's executable (or python) in that venv
    env_dir: Path
    requirement: str     # the pinned requirement pip installs
    stamp: str           # .installed-<stamp> in env_dir, written once the install succeeded
    executable: str      # what found_by names, in the venv's bin/
    what: str            # for the line printed when the venv is created
    note: str = ""
    pip_flags: tuple[str, ...] = ("--quiet",)

    def ensure(self) -> None:
        if os.environ.get(self.found_by):
            return
        stamp = self.env_dir / f".installed-{self.stamp}"
        if not stamp.exists():
            py = _venv_python(self.env_dir, self.what, self.note)
            rc = run([py, "-m", "pip", "install", *self.pip_flags, "--disable-pip-version-check", self.requirement])
            if rc != 0:
                sys.exit(f"installing {self.requirement} failed (exit {rc})")
            stamp.write_text(self.requirement.rsplit("==", 1)[1])
        os.environ[self.found_by] = str(_bin(self.env_dir) / self.executable)


AIPERF_VERSION = "0.13.0"
LMEVAL_VERSION = "0.4.13"
# The real PD router the multi-node end-to-end test runs (the version the example master declares
# for sglang-router points).
ROUTER_VERSION = "0.3.2"
TOOL_ENVS = (
    # AIPerf: ~1.2 GB with its dependencies; not --quiet, since four minutes without output looks like a hang
    ToolEnv("CI_TOOLS_AIPERF", Path(os.environ.get("CI_TOOLS_AIPERF_VENV", ROOT / ".venv-aiperf")),
            f"aiperf=={AIPERF_VERSION}", f"aiperf-{AIPERF_VERSION}", "aiperf",
            "the AIPerf environment", f": AIPerf {AIPERF_VERSION} and ~1.2 GB of dependencies, about four minutes "
            "on a 2-core machine (pip lists each package below)", ("--progress-bar", "off")),
    # lm-eval, the eval harness of eval rows: `lm-eval[api]` (OpenAI-compatible clients, no torch)
    ToolEnv("CI_TOOLS_LMEVAL", Path(os.environ.get("CI_TOOLS_LMEVAL_VENV", ROOT / ".venv-lmeval")),
            f"lm-eval[api]=={LMEVAL_VERSION}", f"lmeval-{LMEVAL_VERSION}", "lm_eval",
            "the lm-eval environment", " (a few minutes, about 760 MB)"),
    ToolEnv("CI_TOOLS_ROUTER_PYTHON", Path(os.environ.get("CI_TOOLS_ROUTER_VENV", ROOT / ".venv-router")),
            f"sglang-router=={ROUTER_VERSION}", f"sglang-router-{ROUTER_VERSION}", "python",
            "the sglang-router environment"),
)


@dataclass(frozen=True)
class WheelEnv:
    """Engines' own argument parsers (tests/engines/): one light venv, each engine wheel installed
    --no-deps into its own folder (several versions side by side; the tests put the folders they need
    on PYTHONPATH). Idempotent: a stamp records the wheels file it was built from; only missing folders
    are installed. Skipped as built when the stamp matches (a shared venv named by `found_by`)."""
    found_by: str        # the variable the tests read: the venv's folder
    env_dir: Path
    wheels: Path         # `dist==version` lines and `deps ...` lines
    stamp: str           # .installed-<stamp> in env_dir holds the digest of `wheels` it was built from
    what: str
    note: str

    def ensure(self) -> None:
        text = self.wheels.read_text(encoding="utf-8")
        stamp = self.env_dir / f".installed-{self.stamp}"
        digest = hashlib.sha256(text.encode()).hexdigest()
        if stamp.exists() and stamp.read_text() == digest:
            os.environ[self.found_by] = str(self.env_dir)
            return
        lines = [ln.split("#", 1)[0].strip() for ln in text.splitlines()]
        deps = [w for ln in lines if ln.startswith("deps ") for w in ln.split()[1:]]
        wheels = [ln for ln in lines if ln and not ln.startswith("deps ")]
        py = _venv_python(self.env_dir, self.what, self.note)
        pip = [py, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
        if run([*pip, *deps]) != 0:
            sys.exit(f"installing the {self.what}'s dependencies failed; see {self.wheels}")
        for req in wheels:
            target = self.env_dir / "wheels" / req.replace("==", "-")
            if (target / ".complete").exists():
                continue
            if run([*pip, "--no-deps", "--upgrade", "--target", target, req]) != 0:
                sys.exit(f"installing {req} (--no-deps) into {target} failed; see {self.wheels}")
            (target / ".complete").write_text(req)
        stamp.write_text(digest)
        os.environ[self.found_by] = str(self.env_dir)


ENGINE_ENVS = (
    WheelEnv("CI_TOOLS_ENGINES_VENV", Path(os.environ.get("CI_TOOLS_ENGINES_VENV", ROOT / ".venv-engines")),
             ROOT / "tests" / "engines" / "wheels.txt", "engines", "engine-parser environment", " (a few minutes, once)"),
    # vLLM and Dynamo import real torch code at module level: a CPU torch (~190 MB wheel, 1.2 GB
    # installed), vLLM, Dynamo and SGLang wheels; about 5 minutes once on a 2-core machine
    WheelEnv("CI_TOOLS_TORCH_ENGINES_VENV",
             Path(os.environ.get("CI_TOOLS_TORCH_ENGINES_VENV", ROOT / ".venv-engines-torch")),
             ROOT / "tests" / "engines" / "wheels-torch.txt", "engines-torch", "vLLM/Dynamo parser environment",
             " (CPU torch, vLLM, Dynamo and SGLang wheels: about 5 minutes and 2.5 GB, once)"),
)


def ensure_engines() -> None:
    for env in ENGINE_ENVS:
        env.ensure()
    # ATOM and TensorRT-LLM have no wheel: their parsers are built from source files pinned at a commit
    # (tests/engines/sources.json), fetched by hash into the engines venv's sources/ (once; a no-op after)
    if run([sys.executable, str(ROOT / "tests" / "engines" / "sources.py"), "fetch"]) != 0:
        sys.exit("fetching the engines' pinned source files failed (above); with GitHub out of reach, pass a local "
                 "clone: python3 tests/engines/sources.py fetch --git OWNER/NAME=CLONE/.git")


SLURM_PROGRAMS = ("slurmctld", "slurmd", "srun", "sbatch", "squeue", "scancel", "munged", "munge")
SLURM_PACKAGES = ("slurm-wlm", "munge")


def as_root() -> list[str] | None:
    """The prefix that runs a command as root: none for root, `sudo -n` for a user with passwordless
    sudo (GitHub's hosted runners), None when neither."""
    if os.geteuid() == 0:
        return []
    if shutil.which("sudo") and subprocess.run(["sudo", "-n", "true"], stdout=subprocess.DEVNULL,
                                               stderr=subprocess.DEVNULL).returncode == 0:
        return ["sudo", "-n", "env", "DEBIAN_FRONTEND=noninteractive"]
    return None


def apt_install(packages: tuple[str, ...], tests: str, missing: list[str], hint: str) -> None:
    """apt-get install PACKAGES for the TESTS (as root, or through sudo), or exit with HINT."""
    if sys.platform != "linux" or shutil.which("apt-get") is None:
        sys.exit(f"the {tests} need {', '.join(missing)}: {hint}")
    prefix = as_root()
    if prefix is None:
        sys.exit(f"the {tests} need {', '.join(missing)}; run as root (CI does), as a user with passwordless "
                 f"sudo, or {hint} yourself")
    print(f"installing {' '.join(packages)} for the {tests} (missing: {', '.join(missing)})", flush=True)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for cmd in (["apt-get", "update", "-q"], ["apt-get", "install", "-y", "-q", "--no-install-recommends", *packages]):
        rc = run([*prefix, *cmd], env=env, stdout=subprocess.DEVNULL)
        if rc != 0:
            sys.exit(f"`{' '.join(cmd)}` failed (exit {rc}); {hint}")


def ensure_programs(programs: tuple[str, ...], packages: tuple[str, ...], tests: str) -> None:
    """The programs on PATH, their Debian packages installed when one is missing; nothing when all are there."""
    missing = [p for p in programs if shutil.which(p) is None]
    if not missing:
        return
    apt_install(packages, tests, missing, f"install {' and '.join(packages)} (Debian/Ubuntu: apt-get install "
                                          f"{' '.join(packages)})")
    still = [p for p in programs if shutil.which(p) is None]
    if still:
        sys.exit(f"after installing {' '.join(packages)}, {', '.join(still)} are still missing")


def ensure_slurm() -> None:
    """The runner tests start a real one-node Slurm (tests/runner/slurm_cluster.py): Debian's
    slurm-wlm and munge, installed when missing. The daemons are started by the tests, not here."""
    ensure_programs(SLURM_PROGRAMS, SLURM_PACKAGES, "Slurm tests")


DOCKER_PROGRAMS = ("dockerd", "docker", "docker-registry")
DOCKER_PACKAGES = ("docker.io", "docker-registry")   # the daemon, and a registry the tests push their image to
DOCKERD_LOG = VENV / "dockerd.log"


def _docker_answers() -> bool:
    try:
        return subprocess.run(["docker", "info"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              timeout=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def ensure_docker() -> subprocess.Popen | None:
    """The docker backend's end-to-end tests (tests/runner/test_docker_e2e.py) need a daemon: Debian's
    docker.io (and docker-registry, for an image pinned by digest without reaching any registry outside),
    installed when missing, like Slurm. A daemon that already answers `docker info` is
    used and left alone; otherwise dockerd is started here and returned, and test() stops it by its PID."""
    ensure_programs(DOCKER_PROGRAMS, DOCKER_PACKAGES, "docker tests")
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


CHROMIUM = "/usr/bin/chromium"


def ensure_chromium() -> None:
    """The report's browser test (tests/results/test_report_browser.py) opens the page in Debian's
    chromium through Playwright (whose own browser download is not reachable here). Installed with
    apt-get when missing, like Slurm; nothing is done when it is there."""
    if Path(CHROMIUM).exists() or os.environ.get("CI_TOOLS_CHROMIUM"):
        return
    hint = "install chromium (Debian: apt-get install chromium) or set CI_TOOLS_CHROMIUM to a Chromium binary"
    apt_install(("chromium",), "browser tests", [CHROMIUM], hint)
    if not Path(CHROMIUM).exists():
        sys.exit(f"after installing chromium, {CHROMIUM} is still missing")


DEMO_EXTRAS = "plot"   # the pyproject extras the documented commands need (tests/test_cli_seams.py)


def demo(args: list[str]) -> int:
    if args and args != ["--walkthrough"]:
        print(f"unknown demo option {' '.join(args)}; the one option is --walkthrough", file=sys.stderr)
        return 2
    if not args:
        # what the README's commands need after the demo: `results pareto --plot`, `results compare --plot`
        ensure_env(DEMO_EXTRAS)
        return run([PY, ROOT / "examples" / "demo.py"])
    # the comment commands against the tests' fake GitHub, which checks its answers with githubkit
    ensure_env("test")
    return run([PY, ROOT / "examples" / "demo.py"]) or run([PY, ROOT / "examples" / "walkthrough.py"])


@dataclass(frozen=True)
class NpmTool:
    """A pinned npm package the tests use, installed once into .venv/<folder> (npm needs no root) and
    found by the tests through `found_by`; a stamp file makes a second run a no-op."""
    package: str
    version: str
    folder: str
    found: str           # the file the tests use, below node_modules/
    found_by: str
    needs: str           # who needs it, for the message when npm is missing
    node: bool = False   # the package is a program: Node.js itself must be there too

    def ensure(self) -> None:
        home = VENV / self.folder
        target = home / "node_modules" / self.found
        stamp = home / f".installed-{self.version}"
        if not stamp.exists():
            npm = shutil.which("npm")
            if not npm or (self.node and not shutil.which("node")):
                sys.exit(f"{self.needs} need Node.js and npm to install {self.package} {self.version}; install "
                         "them (Debian: apt-get install nodejs npm) and run again")
            home.mkdir(parents=True, exist_ok=True)
            rc = run([npm, "install", "--prefix", home, "--no-audit", "--no-fund", "--no-save",
                      f"{self.package}@{self.version}"])
            if rc != 0 or not target.exists():
                sys.exit(f"installing {self.package}@{self.version} with npm failed (exit {rc})")
            stamp.write_text(self.version)
        os.environ[self.found_by] = str(target)


NPM_TOOLS = (
    # the real yaml-language-server, for tests/editors: the shipped files must show no false errors in editors
    NpmTool("yaml-language-server", "2.0.0", "yaml-language-server", ".bin/yaml-language-server", "CI_TOOLS_YLS",
            "the editor tests", node=True),
    # GitHub's GraphQL schema, which the fake GitHub in tests/github runs every GraphQL query against
    NpmTool("@octokit/graphql-schema", "15.26.1", "github-graphql-schema", "@octokit/graphql-schema/schema.json",
            "CI_TOOLS_GITHUB_GRAPHQL_SCHEMA", "the GitHub tests"),
    # axe-core's accessibility rules, run in the real Chromium over the sweep report page (tests/results)
    NpmTool("axe-core", "4.14.1", "axe-core", "axe-core/axe.min.js", "CI_TOOLS_AXE", "the report page tests"),
)


def test(args: list[str]) -> int:
    ensure_env("test")
    for tool in TOOL_ENVS:
        tool.ensure()
    ensure_engines()
    ensure_slurm()
    ensure_chromium()
    for npm_tool in NPM_TOOLS:
        npm_tool.ensure()
    daemon = ensure_docker()
    try:
        rc = run([PY, "-m", "pytest", *args], cwd=ROOT)
    finally:
        stop_docker(daemon)
    if rc == 5:
        print("pytest collected no tests: that is a failure here, not a pass", file=sys.stderr)
        return 1
    return rc


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("demo", "test"):
        print(__doc__)
        return 2
    if argv[0] == "demo":
        return demo(argv[1:])
    return test(argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
