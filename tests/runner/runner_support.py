"""Helpers shared by the runner tests (fixtures in conftest.py): seed rows, the AIPerf and lm-eval
executables, and the stub job every end-to-end test serves: its recipe, row, `runner run` command
line, environment and the check that nothing of it is left running."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from ci_tools.config.load import default_master_paths, read_masters
from tests.conftest import NVIDIA_SMI_H200
from tests.ports import free_port  # noqa: F401  (the runner tests import it from here)

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
STUB = HERE / "stub_server.py"
PYXIS = HERE / "pyxis"          # the pyxis (srun) and enroot stand-ins the local Slurm's jobs use
FAKE_GPU = HERE / "fake_gpu"    # nvidia-smi answering with a real H200's recorded output
IMAGE = "example.org/stub:1@sha256:" + "0" * 64
SOLO_NODE = "cit-solo"          # the one-node test Slurm's NodeName: not resolvable, NodeAddr 127.0.0.1
SEED_KEY = "dsv41flash-fp4-gb300-sglang-agentic-dspark"


def seed_rows() -> list[tuple[str, dict]]:
    """One InferenceX-shaped agentic single-node row per point of the seed master entry."""
    entry = read_masters(default_master_paths(REPO), REPO).entries[SEED_KEY]
    rows = []
    for ss in entry["scenarios"]["agentic-coding"][0]["search-space"]:
        for conc in ss["conc-list"]:
            dpa = bool(ss.get("dp-attn", False))
            name = f"{'dep' if dpa else 'tp'}{ss['tp']}-c{conc}"
            row = {"image": entry["image"], "model": entry["model"], "model-prefix": entry["model-prefix"],
                   "precision": entry["precision"], "framework": entry["framework"], "runner": entry["runner"],
                   "tp": ss["tp"], "pp": 1, "dcp-size": 1, "pcp-size": 1, "ep": ss["ep"], "dp-attn": dpa,
                   "spec-decoding": ss["spec-decoding"], "conc": conc, "kv-offloading": ss["kv-offloading"],
                   "total-cpu-dram-gb": 0, "duration": 3600,
                   "exp-name": f"{entry['model-prefix']}_tp{ss['tp']}_conc{conc}_kvnone_spec-mtp",
                   "scenario-type": "agentic-coding", "run-eval": False, "config-key": SEED_KEY}
            if "router" in ss:
                row["router"] = ss["router"]
            rows.append((name, row))
    return rows


def _client(variable: str, venv: str, executable: str, what: str) -> str:
    """A client's executable: $VARIABLE, else the venv `python3 dev.py test` creates in the checkout."""
    env = os.environ.get(variable)
    if env:
        return env
    local = REPO / venv / "bin" / executable
    if local.exists():
        return str(local)
    pytest.fail(f"{what} is missing: run `python3 dev.py test` (it creates {venv}) "
                f"or set {variable} to an {executable} executable")


def aiperf_bin() -> str:
    return _client("CI_TOOLS_AIPERF", ".venv-aiperf", "aiperf", "AIPerf 0.13")


def lm_eval_bin() -> str:
    return _client("CI_TOOLS_LMEVAL", ".venv-lmeval", "lm_eval", "lm-eval 0.4")


def multinode_rows() -> list[tuple[str, dict]]:
    """Every multi-node row the example repository plans (matrix expansion, as `plan` emits them)."""
    from ci_tools import names
    from ci_tools.config.load import read_runners
    from ci_tools.sweep.matrix import Filters, expand

    entries = read_masters(default_master_paths(REPO), REPO).entries
    hardware = (read_runners(REPO / names.RUNNERS, REPO).data or {}).get("hardware") or {}
    out = []
    for r in expand(entries, hardware, Filters()):
        if not r.row.is_multinode or r.row.run_eval:
            continue
        p, d = r.row["prefill"], r.row["decode"]
        concs = "x".join(str(c) for c in r.row.concs)
        scen = "agentic" if r.row.is_agentic else f"{r.row.isl}-{r.row.osl}"
        name = f"{scen}-{p['num-worker']}p{d['num-worker']}d-tp{p['tp']}-tp{d['tp']}-c{concs}"
        out.append((name, r.row.replace(config_key=r.key).as_dict()))
    return out


def stub_recipe(config_key: str = "stub-agentic", env: str = "1",
                points: str = "  tp2-c2: {tp: 2, ep: 1, conc: 2}\n") -> str:
    """A single-node recipe for the stub server (`points` as YAML lines under `points:`)."""
    return f"""recipe-version: 1
config-key: {config_key}
engine: sglang
image: {IMAGE}
model: stub
synthetic-acceptance: 3.51
serve:
  env: {{STUB_ENV: "{env}"}}
  args: {{trust-remote-code: true}}
points:
{points}"""


def stub_row(**fields) -> dict:
    """The stub recipe's agentic tp2-c2 row, as `plan` prints one, with `fields` replaced."""
    return {"image": IMAGE, "model": "stub", "model-prefix": "stub", "precision": "fp4", "framework": "sglang",
            "runner": "gb300", "tp": 2, "ep": 1, "dp-attn": False, "spec-decoding": "mtp", "conc": 2,
            "kv-offloading": "none", "duration": 3600, "exp-name": "stub_tp2_conc2",
            "scenario-type": "agentic-coding", "run-eval": False, "recipe": "recipe.yaml", **fields}




def marked_processes(mark: str) -> list[str]:
    """Processes (other than this one) whose environment carries the test's mark."""
    found = []
    needle = f"CI_TOOLS_TEST_MARK={mark}".encode()
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            env = Path(f"/proc/{pid}/environ").read_bytes()
            if needle in env.split(b"\0"):
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                found.append(f"{pid}: {cmd[:120]}")
        except OSError:
            continue
    return found


# AIPerf's own setting (read from its environment): after the last request it keeps scraping the engine's
# /metrics for 2 s so that a real engine's counters settle, then scrapes once more. The stub's counters are
# final at once: the tests skip the 2 s per job; the final scrape and the server-metrics export still happen.
AIPERF_NO_FLUSH = {"AIPERF_SERVER_METRICS_COLLECTION_FLUSH_PERIOD": "0"}


def gpu_host_env(gpus: int = 4) -> dict:
    """A GPU host's nvidia-smi for the node check and the telemetry sampler: a real H200's recorded output."""
    return {"PATH": f"{FAKE_GPU}{os.pathsep}{os.environ['PATH']}", "CIT_FAKE_GPUS": str(gpus),
            "CIT_NVIDIA_SMI_CORPUS": str(NVIDIA_SMI_H200)}


@dataclass(frozen=True)
class Sandbox:
    mark: str      # CI_TOOLS_TEST_MARK: every process the job starts inherits it
    systmp: Path   # a short TMPDIR: AIPerf puts its ZMQ sockets there (107-character path limit)

    def env(self, hf_home: Path, *extra: dict) -> dict:
        """The job's environment: this one, offline Hugging Face, the mark, the temp dir, then `extra` in order."""
        env = {**os.environ, "HF_HOME": str(hf_home), "HF_HUB_OFFLINE": "1", "CI_TOOLS_TEST_MARK": self.mark,
               "PYTHONUNBUFFERED": "1", "TMPDIR": str(self.systmp)}
        for more in extra:
            env.update(more)
        return env


@contextmanager
def nothing_left_behind(cluster=None) -> Iterator[Sandbox]:
    """A job's mark and temp dir; afterwards, no process with the mark and (with a cluster) no Slurm
    job may be left. What is left is killed or cancelled first, then the test fails naming it."""
    box = Sandbox(uuid.uuid4().hex, Path(tempfile.mkdtemp(prefix="cit-")))
    yield box
    shutil.rmtree(box.systmp, ignore_errors=True)
    jobs = cluster.wait_no_jobs(timeout_s=20) if cluster is not None else []
    left = marked_processes(box.mark)
    for line in left:  # never leave anything behind, even when the assertion below fails
        try:
            os.kill(int(line.split(":")[0]), signal.SIGKILL)
        except OSError:
            pass
    if jobs:
        cluster.run("scancel", "--user=root")
    assert not jobs, f"Slurm jobs left behind: {jobs}"
    assert not left, f"processes left behind: {left}"


def runner_run(root: Path, row: str, *, backend: str, aiperf: str, hf_home: Path, model_store: Path,
               server_cmd: str, port: int, ready_timeout: float, duration: float, extra: list[str] | None = None,
               ) -> list[str]:
    """`ci-tools runner run` of ROOT/ROW into ROOT/out, with the stub tokenizer and a synthetic dataset
    (Slurm: enroot images in ROOT/squash)."""
    return [sys.executable, "-m", "ci_tools", "runner", "run", "--row", str(root / row), "--root", str(root),
            "--backend", backend, "--out", str(root / "out"), "--aiperf-bin", aiperf, "--tokenizer", "local/stubtok",
            "--dataset", "synthetic:40:8", "--hf-cache", str(hf_home / "hub"), "--model-store", str(model_store),
            "--squash-dir", str(root / "squash"),
            "--server-cmd", server_cmd, "--port", str(port), "--ready-timeout", f"{ready_timeout:g}",
            "--duration", str(duration), "--runner-name", "", *(extra or [])]


def pyxis_log(path: Path) -> tuple[list[dict], list[dict]]:
    """The stand-ins' records: (srun steps with container options, enroot imports)."""
    records = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    return [r for r in records if "srun" in r], [r for r in records if r.get("enroot") == "import"]


def start_slurm(nodes: int = 1, gpus: int = 4, node: str = "localhost"):
    """A local Slurm of its own directory and ports (slurm_cluster.py); fails, never skips, when it cannot
    start: the Slurm tests are part of the suite's promise. `node` names the one node of a 1-node cluster."""
    from slurm_cluster import LocalSlurm, SlurmUnavailable

    cluster = LocalSlurm(gpus=gpus, nodes=nodes, node=node)
    try:
        cluster.start()
    except SlurmUnavailable as exc:
        pytest.fail(f"the local {nodes}-node Slurm for the runner tests did not start: {exc}", pytrace=False)
    return cluster


def github_cancel(proc: subprocess.Popen, sigint_wait: float = 7.5, sigterm_wait: float = 2.5) -> list[str]:
    """The Actions runner's cancel of a step: SIGINT to its process group, SIGTERM, SIGKILL of the tree."""
    events = []
    pgid = os.getpgid(proc.pid)
    for sig, wait in ((signal.SIGINT, sigint_wait), (signal.SIGTERM, sigterm_wait)):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            break
        events.append(sig.name)
        try:
            proc.wait(timeout=wait)
            return events
        except subprocess.TimeoutExpired:
            continue
    events.append("SIGKILL")
    for pid in _tree(proc.pid):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.wait(timeout=10)
    return events


def _tree(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                ppid = int(Path(f"/proc/{name}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(name))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo += children.get(pid, [])
    return out


def step(job, argv: list[str]) -> subprocess.Popen:
    """The workflow step: `bash -e` running `exec ci-tools ...`, as the process-group leader."""
    script = "exec " + shlex.join(argv)
    return subprocess.Popen(["bash", "-e", "-c", script], env=job["env"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def wait_for(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def step_in_its_client(job, argv: list[str]) -> subprocess.Popen:
    """The workflow step, once its benchmark client has written (a cancel then lands in the client phase)."""
    p = step(job, argv)
    client_log = job["out"] / "client.log"
    wait_for(lambda: client_log.exists() and client_log.stat().st_size > 0 or p.poll() is not None, 90,
             "the client to start")
    assert p.poll() is None, p.communicate()
    return p


def cancel_in_the_client(job, p: subprocess.Popen) -> tuple[dict, str, float]:
    """GitHub's cancel of the running step; it must stop on the SIGINT alone, exit 130, within the 7.5 s
    before GitHub's SIGTERM, and say so in status.json. Returns (status.json, stderr, seconds)."""
    t0 = time.monotonic()
    events = github_cancel(p)
    elapsed = time.monotonic() - t0
    _, err = p.communicate()
    assert events == ["SIGINT"], f"ci-tools was still running after SIGINT + 7.5 s: {events}\n{err}"
    assert p.returncode == 130, err
    status = json.loads((job["out"] / "status.json").read_text())
    assert status["reason"] == "cancelled (SIGINT)" and status["phase"] == "client", status
    assert status["stop_s"] < 7.5 and elapsed < 7.5, (status, elapsed)
    return status, err, elapsed
