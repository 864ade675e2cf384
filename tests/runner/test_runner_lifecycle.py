"""Lifecycle of a job on the process backend: early cancels, SIGINT, helpers that escape their
process group, GPU selection, and the cleanup step (the Slurm ones are in test_slurm_e2e.py)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from ci_tools.cli import cli

from runner_support import STUB, seed_rows

# the whole jobs below check what is stopped after them, not what they measured: the stub answers 10 times as
# fast as by default and the benchmark lasts 1 s (their warmup and window were 4 s of waiting)
QUICK = "--itl 0.002"


def handler_installed(pid: int, sig: int) -> bool:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("SigCgt:"):
                return bool(int(line.split()[1], 16) & (1 << (sig - 1)))
    except OSError:
        pass
    return False


def test_sigterm_as_soon_as_the_process_can_take_it(job):
    """A cancel while Python is still importing: status.json says so and the exit code matches."""
    p = subprocess.Popen(job["argv"]("--never-ready"), env=job["env"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 20
    while not handler_installed(p.pid, signal.SIGTERM) and time.monotonic() < deadline:
        time.sleep(0.001)
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 143, err
    status = json.loads((job["out"] / "status.json").read_text())
    assert status["reason"] == "cancelled (SIGTERM)" and status["exit_code"] == 143


@pytest.mark.parametrize("sig,code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_cancel_while_waiting_for_readiness(job, sig, code):
    p = subprocess.Popen(job["argv"]("--never-ready", extra=["--ready-timeout", "60"]), env=job["env"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    server_log = job["out"] / "server.log"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and "serving" not in (server_log.read_text() if server_log.exists() else ""):
        time.sleep(0.1)
    p.send_signal(sig)
    _, err = p.communicate(timeout=30)
    name = signal.Signals(sig).name
    assert p.returncode == code, err
    assert f"error: ready: cancelled by {name}" in err
    status = json.loads((job["out"] / "status.json").read_text())
    assert status["exit_code"] == code and status["reason"] == f"cancelled ({name})" and status["stop_s"] < 7.5


def test_a_helper_that_left_the_process_group_is_stopped_too(job, tmp_path):
    """A server that starts a `setsid` helper: stopping the group misses it, the label does not."""
    wrapper = tmp_path / "server.sh"
    wrapper.write_text(f"#!/bin/sh\nsetsid sleep 300 &\nexec {sys.executable} {STUB} \"$@\"\n")
    wrapper.chmod(0o755)
    argv = job["argv"](duration=1)
    i = argv.index("--server-cmd")
    argv[i + 1] = f"{wrapper} --port {{port}} --model {{model}} {QUICK}"
    run = subprocess.run(argv, env=job["env"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "also stopped what carried the label" in run.stderr
    # the `job` fixture then checks that no process carrying the test's mark is left


def test_cleanup_without_a_job_dir(tmp_path):
    res = CliRunner().invoke(cli, ["runner", "cleanup", "--out", str(tmp_path / "none")], env={"RUNNER_NAME": ""})
    assert res.exit_code == 0 and "nothing to clean up" in res.output


def test_cleanup_writes_the_missing_status(tmp_path):
    (tmp_path / "job.json").write_text(json.dumps({"label": "cit-test-nothing-runs-0"}))
    res = CliRunner().invoke(cli, ["runner", "cleanup", "--out", str(tmp_path)], env={"RUNNER_NAME": ""})
    assert res.exit_code == 0, res.output
    assert "nothing left running for cit-test-nothing-runs-0" in res.output
    assert json.loads((tmp_path / "status.json").read_text())["ok"] is False


def _dry(tmp_path, backend, env, extra=()):
    name, row = next((n, r) for n, r in seed_rows() if n == "tp2-c16")
    path = tmp_path / "row.json"
    path.write_text(json.dumps(row))
    from runner_support import REPO

    return CliRunner().invoke(cli, ["runner", "run", "--row", str(path), "--root", str(REPO), "--backend", backend,
                                    "--dry-run", *extra], env={"CI_TOOLS_GPUS": None, **env})


def test_gpus_from_what_the_runner_was_given(tmp_path):
    res = _dry(tmp_path, "docker", {"CUDA_VISIBLE_DEVICES": "4,5,6,7"})
    assert res.exit_code == 0, res.output
    assert "--gpus '\"device=4,5\"'" in res.output
    res = _dry(tmp_path, "process", {"CUDA_VISIBLE_DEVICES": "4,5,6,7"}, ["--gpus", "6,7"])
    server = res.output.split("# server")[1].split("# client")[0]
    assert "CUDA_VISIBLE_DEVICES=6,7" in server
    res = _dry(tmp_path, "docker", {"CUDA_VISIBLE_DEVICES": "3"})
    assert res.exit_code == 1 and "needs 2 GPUs but this runner was given 1 (3)" in str(res.exception)
    # Slurm chooses the GPUs itself (gres); the runner's own list does not apply there
    res = _dry(tmp_path, "slurm", {"CUDA_VISIBLE_DEVICES": "3"})
    assert res.exit_code == 0 and "--gpus-per-node=2" in res.output


def test_node_check_refuses_before_anything_starts(job):
    import shutil

    shutil.rmtree(job["dir"] / "models" / "stub")
    run = subprocess.run(job["argv"](), env={**job["env"], "CIT_FAKE_GPUS": "1"}, capture_output=True, text=True,
                         timeout=60)
    assert run.returncode == 1, run.stderr
    assert "error: check: the node is not ready for this point: GPUs: the point needs 2, the node shows 1" in run.stderr
    assert "model: stub is not in the model store" in run.stderr
    assert not (job["out"] / "server.log").exists()
    assert json.loads((job["out"] / "status.json").read_text())["phase"] == "check"


def test_port_zero_picks_free_ports_per_job(tmp_path):
    import re

    res = _dry(tmp_path, "docker", {}, ["--port", "0", "--worker-port", "0"])
    assert res.exit_code == 0, res.output
    [engine] = set(re.findall(r"--port (\d+) --tp-size", res.output))
    [client] = set(re.findall(r"--url http://127.0.0.1:(\d+)", res.output))
    assert engine == client and int(engine) not in (0, 8000)
    res = _dry(tmp_path, "slurm", {}, ["--port", "0"])
    assert getattr(res.exception, "exit_code", None) == 2 and "the engine runs on a compute node" in str(res.exception)


def test_leftovers_of_a_crashed_job_of_this_runner_are_stopped_first(job):
    """A runner machine that crashed mid-job ran no cleanup step; the runner's next job clears it first."""
    runner = f"gb300-test_{job['mark'][:8]}"
    stale = subprocess.Popen(["sleep", "300"], env={**job["env"], "CI_TOOLS_RUNNER": runner,
                                                     "CI_TOOLS_JOB": "cit-an-earlier-job"})
    try:
        run = subprocess.run(job["argv"](QUICK, duration=1, extra=["--runner-name", runner]), env=job["env"],
                             capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stderr
        assert f"stopped what an earlier job of this runner left: process {stale.pid}" in run.stderr
        assert stale.wait(timeout=5) == -signal.SIGTERM
    finally:
        stale.kill()
