"""Shared test fixtures.

`../shared/` (reference corpora) sits beside the checkout, read-only. Tests that need it use the
`shared` fixture, which fails (never skips) with a clear message when it is missing.
"""

from __future__ import annotations

import contextlib
import difflib
import functools
import importlib.util
import lzma
import os
import shutil
import sys
from pathlib import Path

import pytest

from tests import public_clone

REPO = Path(__file__).resolve().parents[1]
# The project's own recordings of real tools and GPUs, in the repository (tests/data/README.md says how
# each was made): the suite needs nothing beside the checkout but InferenceX's history and corpus.
RECORDINGS = REPO / "tests" / "data"
AIPERF_EXPORT = RECORDINGS / "aiperf-0.13-export"      # AIPerf 0.13's export of 40 requests at c4 (a stub server)
NVIDIA_SMI_H200 = RECORDINGS / "nvidia-smi-h200"       # an H200's nvidia-smi, idle and at its power cap
H100_RUN = RECORDINGS / "h100"                          # `runner run` of vLLM 0.26.0 on an H100: four job folders
H100_JOB = H100_RUN / "fixed-c16"                        # its fixed-seq-len job
H200_SELFTEST = RECORDINGS / "h200-selftest"            # `runner selftest` of vLLM 0.26.0 on an H200: its OUT folder
H100_SELFTEST = RECORDINGS / "h100-selftest"            # the same on an H100, after the runner's rebuild
NVIDIA_SMI_H200_SELFTEST = RECORDINGS / "nvidia-smi-h200-selftest"   # that H200's nvidia-smi, idle and capped
# GitHub's example merge_group payload (octokit/webhooks, MIT): no pinned part of the corpus has that event
MERGE_GROUP_PAYLOAD = RECORDINGS / "github-merge-group" / "checks_requested.payload.json"


@functools.lru_cache(maxsize=1)
def dev_py():
    """dev.py as a module (stdlib only; importing it installs nothing): the one list of what the tests need."""
    spec = importlib.util.spec_from_file_location("dev_py", REPO / "dev.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["dev_py"] = module   # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


shared_dir = public_clone.shared_dir


def lay_out(recorded: Path, dest: Path) -> Path:
    """A copy of a recorded folder at DEST as the runner wrote it: an export the repository keeps
    xz-compressed (`NAME.xz`, tests/data/README.md) is written out as NAME."""
    shutil.copytree(recorded, dest, ignore=shutil.ignore_patterns("*.xz"))
    for packed in recorded.rglob("*.xz"):
        with lzma.open(packed) as src, open(dest / packed.relative_to(recorded).with_suffix(""), "wb") as out:
            shutil.copyfileobj(src, out)
    return dest


@pytest.fixture(scope="session")
def h100_run(tmp_path_factory) -> Path:
    """The H100 run's four job folders as the runner wrote them (read-only for the tests that share it)."""
    return lay_out(H100_RUN, tmp_path_factory.mktemp("h100") / "runs")


@pytest.fixture
def repo_root() -> Path:
    return REPO


@pytest.fixture
def shared() -> Path:
    path = shared_dir()
    if not (path / "corpus").is_dir():
        pytest.fail(f"the shared corpus is missing: expected {path}/corpus (set CI_TOOLS_SHARED to its folder)")
    return path


def assert_golden(path: Path, text: str) -> None:
    """Compare `text` with the golden file at `path`. Only `python3 dev.py update-goldens TEST` rewrites
    goldens (it sets CI_TOOLS_UPDATE_GOLDEN=1); a failing comparison shows the difference, never that."""
    if os.environ.get("CI_TOOLS_UPDATE_GOLDEN"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"missing golden {path}: `python3 dev.py update-goldens <this test>` writes a new one"
    want = path.read_text(encoding="utf-8")
    if text != want:
        diff = "".join(difflib.unified_diff(want.splitlines(True), text.splitlines(True), str(path), "this run", n=2))
        pytest.fail(f"output differs from {path}:\n{diff[:6000]}", pytrace=False)


# ---- the quick tier ---------------------------------------------------------------------------------------
# `python3 dev.py test --quick` runs `-m quick`: every test but the heavy tier and the files and folders
# below, which start daemons (Slurm, docker, servers), run the tools' own environments (AIPerf, lm-eval,
# the engines' parsers, Node.js) or a browser. A quick test starts none of that: while one runs, listening
# on a socket or starting a program of DAEMONS (or one from a tool's environment) fails it, in the whole
# suite too, so a new daemon test cannot slip into the tier; list its file here instead.
NOT_QUICK = (
    "runner/", "engines/", "github/", "workflows/", "editors/", "fuzz/",
    "changelog/test_pre_commit.py",      # the real pre-commit, which builds its own environments
    "changelog/test_corpus.py",          # InferenceX's 217 real transitions, replayed
    "results/test_report_browser.py",    # chromium
    "results/test_report_page.py",       # chromium
    "sweep/test_plan_pr.py",             # the fake GitHub
    "test_demo.py",                      # the demo's walkthrough starts the fake GitHub
)
DAEMONS = frozenset({
    "slurmctld", "slurmd", "srun", "sbatch", "salloc", "squeue", "scancel", "sinfo", "scontrol", "munged", "munge",
    "unmunge", "dockerd", "docker", "docker-registry", "chromium", "chrome", "node", "npm", "npx", "aiperf", "lm_eval",
})


def is_quick_path(rel: str) -> bool:
    """`rel`: a test file's path below tests/."""
    return not any(rel == entry or (entry.endswith("/") and rel.startswith(entry)) for entry in NOT_QUICK)


# The files that take longest in a whole run (benchmarks/suite.py tests; docs/performance.md), longest first.
# They are collected first, so that pytest-xdist (each file on one worker, handed out in collection order)
# starts them while the short files remain to fill the other worker: a long file handed out last kept one
# worker busy minutes after the other had finished.
SLOW_FIRST = (
    "engines/test_dynamo_compat.py", "runner/test_selftest.py", "runner/test_disagg_slurm_e2e.py",
    "sweep/test_plan_history.py", "runner/test_runner_e2e.py", "changelog/test_corpus.py",
    "runner/test_slurm_e2e.py", "workflows/test_github_env.py", "runner/test_multinode_shapes_e2e.py",
    "fuzz/test_fuzz_results_mutations.py", "runner/test_host_engine.py", "runner/test_runner_profile.py",
    "runner/test_docker_e2e.py", "runner/test_eval_e2e.py", "runner/test_runner_lifecycle.py",
    "runner/test_runner_acceptance.py",
)


def pytest_collection_modifyitems(config, items):
    root = REPO / "tests"
    rank = {rel: i for i, rel in enumerate(SLOW_FIRST)}
    order = {}
    for item in items:
        rel = Path(item.path).relative_to(root).as_posix()
        order[item.nodeid] = rank.get(rel, len(SLOW_FIRST))
        if is_quick_path(rel) and item.get_closest_marker("heavy") is None:
            item.add_marker(pytest.mark.quick)
    items.sort(key=lambda item: order[item.nodeid])   # stable: each file's tests stay together and in order


class NotQuick(Exception):
    pass


def _tool_dirs() -> list[str]:
    dirs = [str(REPO / ".venv-"), str(dev_py().cache_root() / "envs")]
    for name in ("CI_TOOLS_AIPERF", "CI_TOOLS_LMEVAL", "CI_TOOLS_ROUTER_PYTHON"):
        if os.environ.get(name):
            dirs.append(str(Path(os.environ[name]).parent.parent))
    dirs += [os.environ[n] for n in ("CI_TOOLS_ENGINES_VENV", "CI_TOOLS_TORCH_ENGINES_VENV") if os.environ.get(n)]
    return dirs


def _refuse(what: str, nodeid: str) -> NotQuick:
    return NotQuick(f"{nodeid} is in the quick tier, which starts no daemon and no tool, but it {what}: add its file "
                    "to NOT_QUICK in tests/conftest.py")


@contextlib.contextmanager
def _quick_guard(item):
    import socket
    import subprocess

    execute, listen = subprocess.Popen._execute_child, socket.socket.listen
    tools = _tool_dirs()

    def guarded_execute(self, args, executable, *rest, **kw):
        argv = [os.fsdecode(a) for a in ([args] if isinstance(args, (str, bytes, os.PathLike)) else args)]
        program = os.fsdecode(executable) if executable else (argv[0] if argv else "")
        if Path(program).name in DAEMONS or any(program.startswith(d) for d in tools) or \
                any(a.endswith("stub_server.py") for a in argv):
            raise _refuse(f"starts `{' '.join(argv)[:200]}`", item.nodeid)
        return execute(self, args, executable, *rest, **kw)

    def guarded_listen(self, *args):
        raise _refuse(f"listens on a socket ({self.getsockname()})", item.nodeid)

    subprocess.Popen._execute_child = guarded_execute
    socket.socket.listen = guarded_listen
    try:
        yield
    finally:
        subprocess.Popen._execute_child, socket.socket.listen = execute, listen


def _guarded(item):
    # setup and call only: the teardown of the last test also ends the session's daemons
    return _quick_guard(item) if item.get_closest_marker("quick") else contextlib.nullcontext()


def pytest_configure(config):
    # tests/public_clone.py: a test (its fixtures and its collection too) that reads a file of ../shared which
    # .ci/corpus.py does not rebuild fails, in every tier, naming the file
    if not config.pluginmanager.is_registered(public_clone):
        config.pluginmanager.register(public_clone, "public-clone")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item):
    with _guarded(item):
        yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    with _guarded(item):
        yield
