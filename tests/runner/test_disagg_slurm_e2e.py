"""End to end on a real local multi-node Slurm: a 1P2D point with stub engines, the real sglang-router
in PD mode, real AIPerf, one result.

The cluster is one slurmctld and three slurmd instances on this machine with distinct NodeNames
(cit-n1..3, each its own port, 4 fake GPUs, NodeAddr 127.0.0.1): Slurm places, starts and cancels
steps per node as on a real cluster; what differs is that every node is this host, so the workers
listen on distinct ports (the planner gives each its own). Placement is checked from Slurm's own
step listing while the job runs; pyxis's container flags go through the pyxis stand-in (its record
is checked here); the exact multi-node argv of real points is pinned in the dry-run goldens.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from runner_support import AIPERF_NO_FLUSH, IMAGE, PYXIS, REPO, STUB, free_port, nothing_left_behind, pyxis_log, runner_run
ROUTER_VERSION = "0.3.2"
RECIPE = f"""recipe-version: 1
config-key: stub-disagg
mode: disaggregated
engine: sglang
image: {IMAGE}
model: stub
kv-transfer: nixl
frontend: {{kind: sglang-router, name: sglang-router, version: "{ROUTER_VERSION}",
           args: {{policy: round_robin, prometheus-port: PROMETHEUS_PORT}}}}
serve: {{env: {{STUB_ENV: "1"}}, args: {{trust-remote-code: true}}}}
points:
  1p2d:
    prefill: {{num-worker: 1, tp: 4, nodes: 1}}
    decode: {{num-worker: 2, tp: 4, nodes: 1}}
    conc: [2, 3]
"""
ROW = {"image": IMAGE, "model": "stub", "model-prefix": "stub", "precision": "fp4", "framework": "sglang-disagg",
       "runner": "gb300", "spec-decoding": "none", "prefill": {"num-worker": 1, "tp": 4, "ep": 1, "dp-attn": False},
       "decode": {"num-worker": 2, "tp": 4, "ep": 1, "dp-attn": False}, "conc": [2], "kv-offloading": "none",
       "duration": 3600, "exp-name": "stub_p1_d2", "scenario-type": "agentic-coding", "run-eval": False,
       "recipe": "recipe.yaml", "kv-p2p-transfer": "nixl", "router": {"name": "sglang-router", "version": ROUTER_VERSION}}
# shared nodes (schema-valid): the allocation itself must ask for the GPUs its worker steps take
RUNNERS = "labels:\n  gb300: [stub-0]\nhardware:\n  gb300: {gpus-per-node: 4, nodes: 3, slurm: {exclusive: false}}\n"


@pytest.fixture(scope="session")
def router_python() -> str:
    python = os.environ.get("CI_TOOLS_ROUTER_PYTHON") or str(REPO / ".venv-router" / "bin" / "python")
    if not Path(python).exists():
        pytest.fail("sglang-router is missing: run `python3 dev.py test` (it creates .venv-router) or set "
                    "CI_TOOLS_ROUTER_PYTHON to a python with sglang-router installed")
    out = subprocess.run([python, "-c", "import importlib.metadata as m; print(m.version('sglang-router'))"],
                         capture_output=True, text=True)
    assert out.stdout.strip() == ROUTER_VERSION, out.stdout + out.stderr
    return python


@pytest.fixture
def mnjob(tmp_path, aiperf, hf_home, cluster, router_python):
    # the recipe sets the router's metrics port (the runner's own pick, --port + 1, is not known free here)
    (tmp_path / "recipe.yaml").write_text(RECIPE.replace("PROMETHEUS_PORT", str(free_port())))
    (tmp_path / "inferencex-e2e/configs").mkdir(parents=True)
    (tmp_path / "inferencex-e2e/configs/runners.yaml").write_text(RUNNERS)
    # the rendered frontend command is `python3 -m sglang_router.launch_router ...`: python3 is the
    # router's venv here, so the exact rendered argv runs with the real router
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "python3").write_text(f'#!/bin/sh\nexec {router_python} "$@"\n')
    (bindir / "python3").chmod(0o755)
    port, worker_port = free_port(), free_port()
    with nothing_left_behind(cluster) as box:
        env = box.env(hf_home, cluster.env, {"CIT_PYXIS_LOG": str(tmp_path / "pyxis.jsonl"),
                                             "PATH": f"{PYXIS}:{bindir}:{os.environ['PATH']}"}, AIPERF_NO_FLUSH)

        # 50 ms between tokens: the router streams decode's answer only once prefill's has ended, so on a
        # loaded machine a fast decode would already be done and reach the client in one burst (ITL 0)
        def argv(row: dict, server_flags: str = "--itl 0.05", duration: float = 3,
                 extra: list[str] | None = None) -> list[str]:
            (tmp_path / "row.json").write_text(json.dumps(row))
            return runner_run(tmp_path, "row.json", backend="slurm", aiperf=aiperf, hf_home=hf_home,
                              model_store=tmp_path, port=port, ready_timeout=60, duration=duration,
                              server_cmd=f"{sys.executable} {STUB} --port {{port}} --model {{model}} --role {{role}} "
                                         f"{server_flags}",
                              extra=["--worker-port", str(worker_port), *(extra or [])])

        yield {"dir": tmp_path, "out": tmp_path / "out", "env": env, "argv": argv, "cluster": cluster,
               "hf_home": hf_home}


class Watched:
    """`runner run` in its own session, its output collected line by line while it runs."""

    def __init__(self, argv: list[str], env: dict):
        self.proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                     start_new_session=True)
        self.lines: list[str] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.append(line)

    def wait_for(self, text: str, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while not any(text in line for line in self.lines):
            assert self.proc.poll() is None and time.monotonic() < deadline, self.output
            time.sleep(0.2)

    @property
    def output(self) -> str:
        return "".join(self.lines)


class StepWatch(threading.Thread):
    """Polls Slurm's step listing while the job runs: step name -> node list, as Slurm placed them."""

    def __init__(self, cluster):
        super().__init__(daemon=True)
        self.cluster, self.seen, self.jobs, self.stop_at = cluster, {}, {}, False

    def run(self):
        while not self.stop_at:
            res = self.cluster.run("squeue", "--steps", "--noheader", "--format=%i %j %N")
            for line in res.stdout.splitlines():
                parts = line.split()
                if len(parts) == 3:
                    self.seen[parts[1]] = parts[2]
            res = self.cluster.run("squeue", "--noheader", "--states=RUNNING", "--format=%i %D %N %l")
            for line in res.stdout.splitlines():
                parts = line.split()
                if len(parts) == 4:
                    self.jobs.setdefault(parts[0], parts[1:])  # as granted (a completing job shrinks)
            time.sleep(0.3)


def test_1p2d_point_runs_across_three_nodes(mnjob):
    cluster = mnjob["cluster"]
    watch = StepWatch(cluster)
    watch.start()
    try:
        res = subprocess.run(mnjob["argv"](ROW), env=mnjob["env"], capture_output=True, text=True, timeout=240)
    finally:
        watch.stop_at = True
        watch.join()
    assert res.returncode == 0, res.stdout + res.stderr
    out = mnjob["out"]
    status = json.loads((out / "status.json").read_text())
    assert status["ok"] and status["placement"] == {"prefill-0": ["cit-n1"], "decode-0": ["cit-n2"],
                                                    "decode-1": ["cit-n3"], "frontend": ["cit-n1"]}
    # placement as Slurm itself reports it: one allocation of 3 nodes, one step per worker on its node
    job = status["slurm_job_id"]
    assert watch.jobs[job][:2] == ["3", "cit-n[1-3]"], watch.jobs
    assert "--exclusive" not in (out / "commands.txt").read_text()     # shared nodes, GPUs asked for
    assert status["addresses"] == {n: "127.0.0.1" for n in ("cit-n1", "cit-n2", "cit-n3")}
    assert watch.jobs[job][2] not in ("UNLIMITED", "INVALID"), watch.jobs   # time-bounded
    assert {k: v for k, v in watch.seen.items() if k in ("prefill-0", "decode-0", "decode-1", "frontend")} == {
        "prefill-0": "cit-n1", "decode-0": "cit-n2", "decode-1": "cit-n3", "frontend": "cit-n1"}, watch.seen
    # the real router split every request: each went to the prefill worker and to one decode worker
    posts = {name: (out / f"{name}.log").read_text().count("POST /v1/chat/completions")
             for name in ("prefill-0", "decode-0", "decode-1")}
    assert posts["decode-0"] > 0 and posts["decode-1"] > 0
    assert posts["prefill-0"] == posts["decode-0"] + posts["decode-1"], posts
    # the image was imported once for the job, by one of the three nodes' import tasks (the others found
    # the file under the lock), and every step ran that file with the model store read-only and the HF
    # cache; none mounted the job directory, where AIPerf wrote its export (a router-fronted point's
    # workers need nothing of it)
    records, imports = pyxis_log(mnjob["dir"] / "pyxis.jsonl")
    sqsh = f"{mnjob['dir']}/squash/example.org+stub+sha256+{'0' * 64}.sqsh"
    assert [i["output"] for i in imports] == [sqsh + ".part"]
    assert (out / "image_import.log").read_text().count(" is already imported") == 2
    assert len(records) == 4 and all(r["image"] == sqsh for r in records)
    assert all(r["mounts"] == [f"{mnjob['dir']}:/models:ro", f"{mnjob['hf_home'] / 'hub'}:/hf_hub_cache"]
               for r in records), [r["mounts"] for r in records]

    proc = subprocess.run([sys.executable, "-m", "ci_tools", "results", "process", str(out)], capture_output=True,
                          text=True, env=mnjob["env"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads((out / "result.json").read_text())
    assert result["valid"], result["failures"]
    assert result["custody"]["checked"] and result["custody"]["files"] > 1     # hashed when AIPerf exited
    assert result["gpus"] == 12 and result["point"]["gpus"] == 12          # prefill 4 + decode 2 x 4
    topo = result["point"]["topology"]
    assert topo["prefill"]["num-worker"] == 1 and topo["decode"]["num-worker"] == 2 and topo["nodes"] == 3
    assert topo["placement"]["decode-1"] == ["cit-n3"] and topo["frontend"]["version"] == ROUTER_VERSION
    per_gpu = result["throughput"]["per_gpu"]["total_tok_s_gpu"]
    assert per_gpu == pytest.approx(result["throughput"]["total_tok_s"] / 12)


def test_several_concurrencies_in_one_allocation_give_one_result_each(mnjob):
    # the sweep's AgentX-fast profile (1 warmup request per lane, not 10): what is checked here is one result
    # per concurrency and its custody, not the warmup; 10 a lane were 4 s of each client's waiting at 50 ms a token
    row = {**ROW, "conc": [2, 3], "agentx-fast": True}
    res = subprocess.run(mnjob["argv"](row), env=mnjob["env"], capture_output=True, text=True, timeout=240)
    assert res.returncode == 0, res.stdout + res.stderr
    out = mnjob["out"]
    proc = subprocess.run([sys.executable, "-m", "ci_tools", "results", "process", str(out)], capture_output=True,
                          text=True, env=mnjob["env"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for conc in (2, 3):
        result = json.loads((out / f"conc{conc}" / "result.json").read_text())
        assert result["valid"] and result["point"]["conc"] == conc and result["gpus"] == 12
        assert result["point"]["profile"] == "agentx-fast"
        assert result["point"]["result-filename"].endswith(f"_conc{conc}")
    assert not (out / "result.json").exists()
    # each client's exports were hashed as it exited, into the one record; a result is judged by its own
    # folder: conc3's export edited, conc2's result stays valid
    record = (out / "client_exports.sha256").read_text()
    assert "  conc2/aiperf_artifacts/profile_export.jsonl\n" in record
    assert "  conc3/aiperf_artifacts/profile_export.jsonl\n" in record
    with (out / "conc3" / "aiperf_artifacts" / "profile_export.jsonl").open("a") as fh:
        fh.write("\n")
    proc = subprocess.run([sys.executable, "-m", "ci_tools", "results", "process", str(out)], capture_output=True,
                          text=True, env=mnjob["env"])
    assert proc.returncode == 1
    assert json.loads((out / "conc2" / "result.json").read_text())["valid"]
    failures = json.loads((out / "conc3" / "result.json").read_text())["failures"]
    assert [f["rule"] for f in failures] == ["export-custody"], failures
    assert failures[0]["message"].startswith("conc3/aiperf_artifacts/profile_export.jsonl changed after")


def test_a_dying_worker_fails_the_job_and_cancels_the_allocation(mnjob):
    res = subprocess.run(mnjob["argv"](ROW, server_flags="--die-after 3", duration=20), env=mnjob["env"],
                         capture_output=True, text=True, timeout=240)
    assert res.returncode == 1, res.stdout + res.stderr
    status = json.loads((mnjob["out"] / "status.json").read_text())
    assert status["phase"] == "client" and "exited with code" in status["reason"], status
    assert "simulated engine crash" in res.stderr      # the dead worker's log tail


def test_github_cancel_in_the_middle_leaves_no_step(mnjob):
    """The Actions runner's cancel: SIGINT, 7.5 s, SIGTERM, 2.5 s, SIGKILL of the tree."""
    cluster = mnjob["cluster"]
    run = Watched(mnjob["argv"](ROW, duration=120), mnjob["env"])
    proc = run.proc
    run.wait_for("running the client", 120)
    time.sleep(2)
    assert len([j for j in cluster.jobs() if "RUNNING" in j]) == 1
    t0 = time.monotonic()
    os.killpg(proc.pid, signal.SIGINT)
    for sig, wait in ((signal.SIGTERM, 7.5), (signal.SIGKILL, 2.5)):
        try:
            proc.wait(timeout=wait)
            break
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, sig)
    code = proc.wait(timeout=10)
    run.reader.join(timeout=5)
    took = time.monotonic() - t0
    assert code == 130, run.output                 # handled on SIGINT, before GitHub's SIGTERM
    assert took < 7.5, took
    status = json.loads((mnjob["out"] / "status.json").read_text())
    assert status["reason"] == "cancelled (SIGINT)" and status["exit_code"] == 130
    assert cluster.wait_no_jobs(timeout_s=15) == []


def test_github_cancel_while_queued_removes_the_pending_allocation(mnjob):
    """All three nodes busy: the allocation waits in the queue; a cancel then leaves no job behind."""
    cluster = mnjob["cluster"]
    hold = cluster.run("sbatch", "--parsable", "--nodes=3", "--exclusive", "--time=5", "--job-name=hold",
                       "--output=/dev/null", "--wrap=sleep 300")
    assert hold.returncode == 0, hold.stderr
    holder = hold.stdout.strip().split(";")[0]
    proc = None
    try:
        deadline = time.monotonic() + 60   # the previous test's allocation may still be completing
        while f"{holder} RUNNING hold" not in cluster.jobs():
            assert time.monotonic() < deadline, cluster.jobs()
            time.sleep(0.3)
        run = Watched(mnjob["argv"](ROW), mnjob["env"])
        proc = run.proc
        run.wait_for("is queued", 60)
        assert [j.split()[1] for j in cluster.jobs() if j.split()[0] != holder] == ["PENDING"], cluster.jobs()
        os.killpg(proc.pid, signal.SIGINT)
        code = proc.wait(timeout=7.5)
        run.reader.join(timeout=5)
        assert code == 130, run.output
        assert [j for j in cluster.jobs() if j.split()[0] != holder] == [], cluster.jobs()
        status = json.loads((mnjob["out"] / "status.json").read_text())
        assert status["phase"] == "allocate" and status["reason"] == "cancelled (SIGINT)"
        assert f"allocation {status['slurm_job_id']} is queued" in run.output    # the pending job's id
    finally:
        if proc is not None and proc.poll() is None:
            os.killpg(proc.pid, signal.SIGINT)
            proc.wait(timeout=10)
        cluster.run("scancel", holder)


def test_runner_crash_then_the_workflow_cleanup_step_removes_the_allocation(mnjob):
    """`runner run` SIGKILLed (no handler runs): `runner cleanup --out` (the `if: always()` step) finds
    the allocation by the label job.json names and leaves nothing in squeue."""
    cluster = mnjob["cluster"]
    run = Watched(mnjob["argv"](ROW, duration=120), mnjob["env"])
    proc = run.proc
    run.wait_for("running the client", 120)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    label = json.loads((mnjob["out"] / "job.json").read_text())["label"]
    assert [j for j in cluster.jobs() if label in j], cluster.jobs()          # the allocation outlived it
    res = subprocess.run([sys.executable, "-m", "ci_tools", "runner", "cleanup", "--out", str(mnjob["out"])],
                         env=mnjob["env"], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stdout + res.stderr
    assert cluster.wait_no_jobs(timeout_s=15) == []
