"""The slurm backend end to end against a real local Slurm (slurmctld + slurmd, fake GPUs).

`runner run --backend slurm` submits the allocation with sbatch, finds its job by the id sbatch
printed, runs the stub engine and a stub router as steps of that job (pyxis's options taken and
checked by the srun stand-in in tests/runner/pyxis/), waits for readiness at the node's NodeAddr (its
name, cit-solo, is in no DNS), runs
the real AIPerf 0.13 and cancels the job. The cancel tests replay GitHub's sequence (SIGINT to the
step's process group, 7.5 s, SIGTERM, 2.5 s, SIGKILL of the tree) and then require that neither
`squeue` nor `ps` shows anything of the job.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from runner_support import (AIPERF_NO_FLUSH, PYXIS, REPO, SOLO_NODE, STUB, cancel_in_the_client, free_port,
                            github_cancel, gpu_host_env, nothing_left_behind, pyxis_log, runner_run, step,
                            step_in_its_client, stub_recipe, stub_row, wait_for)

RECIPE = stub_recipe(env="a,b", points="""  tp2-c2: {tp: 2, ep: 1, conc: 2}
  dep2-c2:
    tp: 2
    ep: 2
    dp-attn: true
    conc: 2
    router: {name: sglang-router, version: "0.3.2", args: {policy: cache_aware}}
""")


def ci_tools_cmd() -> list[str]:
    return [sys.executable, "-m", "ci_tools"]


@pytest.fixture
def sjob(tmp_path, aiperf, hf_home, slurm):
    (tmp_path / "recipe.yaml").write_text(RECIPE)
    (tmp_path / "stub").mkdir()
    (tmp_path / "stub" / "config.json").write_text("{}")   # the model store (--model-store) holds the model
    (tmp_path / "row.json").write_text(json.dumps(stub_row()))
    (tmp_path / "row-dep.json").write_text(json.dumps(stub_row(ep=2, **{"dp-attn": True})))
    port, worker = free_port(), free_port()
    with nothing_left_behind(slurm) as box:
        env = box.env(hf_home, slurm.env, gpu_host_env(),
                      {"PATH": f"{PYXIS}{os.pathsep}{gpu_host_env()['PATH']}",
                       "CIT_PYXIS_LOG": str(tmp_path / "pyxis.jsonl"), "PYTHONPATH": str(REPO)}, AIPERF_NO_FLUSH)
        env.pop("CUDA_VISIBLE_DEVICES", None)

        def argv(row: str = "row.json", server_flags: str = "", duration: float = 2, extra: list[str] | None = None):
            return runner_run(tmp_path, row, backend="slurm", aiperf=aiperf, hf_home=hf_home, model_store=tmp_path,
                              port=port, ready_timeout=120, duration=duration,
                              server_cmd=f"{sys.executable} {STUB} --port {{port}} --model {{model}} {server_flags}",
                              extra=["--router-cmd", f"{sys.executable} {STUB} --port {{port}} --model stub",
                                     "--worker-port", str(worker), "--queue-timeout", "60", *(extra or [])])

        yield {"dir": tmp_path, "out": tmp_path / "out", "env": env, "argv": argv, "mark": box.mark, "slurm": slurm,
               "hf_home": hf_home}


def pyxis_records(job) -> list[dict]:
    return pyxis_log(job["dir"] / "pyxis.jsonl")[0]


def enroot_imports(job) -> list[dict]:
    return pyxis_log(job["dir"] / "pyxis.jsonl")[1]


def test_slurm_dep_point_end_to_end(sjob):
    """Allocation by sbatch, engine and router as steps of that job id, AIPerf, results, nothing left."""
    # runner settings from runners.yaml: a shared node (not exclusive), a named partition
    configs = sjob["dir"] / "inferencex-e2e" / "configs"
    configs.mkdir(parents=True)
    (configs / "runners.yaml").write_text("labels:\n  gb300: [gb300-nv_0]\nhardware:\n  gb300:\n"
                                          "    gpus-per-node: 4\n    slurm: {partition: debug, exclusive: false}\n")
    # another job on the node must not be mistaken for ours (InferenceX located jobs with `squeue --name`)
    stale = sjob["slurm"].run("sbatch", "--parsable", "--job-name=cit-stale", "--output=/dev/null",
                              "--wrap", "exec sleep 300").stdout.strip()
    try:
        run = subprocess.run(sjob["argv"]("row-dep.json"), env=sjob["env"], capture_output=True, text=True,
                             timeout=180)
    finally:
        jobs = sjob["slurm"].jobs()
        sjob["slurm"].run("scancel", stale)
    assert run.returncode == 0, run.stderr + run.stdout
    out = sjob["out"]
    status = json.loads((out / "status.json").read_text())
    job = status["slurm_job_id"]
    assert status["ok"] is True and job != stale and status["node"] == SOLO_NODE
    assert f"server allocation submitted as Slurm job {job}" in run.stderr
    # the node's name resolves nowhere: readiness and the client (a valid result below) went to its NodeAddr
    assert status["node_addr"] == "127.0.0.1" and f"node {SOLO_NODE} is reached at its NodeAddr 127.0.0.1" in run.stderr
    assert "ready: http://127.0.0.1:" in run.stderr
    # the allocation was time-bounded and the engine step saw the 2 GPUs Slurm gave the job
    commands = (out / "commands.txt").read_text()
    assert "--time=" in commands and "--partition=debug" in commands and "--exclusive" not in commands
    server_log = (out / "server.log").read_text()
    assert "stub: CUDA_VISIBLE_DEVICES=0,1" in server_log
    assert "stub: CUDA_VISIBLE_DEVICES=(unset)" in (out / "router.log").read_text()   # --gres=none
    # both steps ran in our job, the router with --overlap; pyxis got the digest-only image and the flags
    recs = pyxis_records(sjob)
    # the engine's version command ran first, a step of the job in its image without a GPU
    version, *recs = recs
    assert version["command"][:2] == ["python3", "-c"] and "--gres=none" in version["srun"]
    assert json.loads((out / "job.json").read_text())["engine"]["version"] is None   # no SGLang in this "image"
    assert [r["srun"][:2] for r in [version, *recs]] == [[f"--jobid={job}", "--overlap"]] * 3
    server, router = sorted(recs, key=lambda r: "--gres=none" in r["srun"])  # both start at once
    # the image was imported once for the job, before the steps, and both steps ran that file
    sqsh = f"{sjob['dir']}/squash/example.org+stub+sha256+{'0' * 64}.sqsh"
    assert [(i["uri"], i["output"]) for i in enroot_imports(sjob)] == [
        ("docker://example.org/stub@sha256:" + "0" * 64, sqsh + ".part")]
    assert server["image"] == router["image"] == version["image"] == sqsh and Path(sqsh).is_file()
    assert not Path(sqsh + ".part").exists() and status["image_import_s"] >= 1
    assert f"importing example.org/stub@sha256:{'0' * 64} into {sqsh}" in (out / "image_import.log").read_text()
    assert server["mounts"] == [f"{sjob['dir']}:/models:ro", f"{sjob['hf_home'] / 'hub'}:/hf_hub_cache"]
    assert server["remap_root"] == 1 and server["mount_home"] == 0
    assert server["env_values"]["SGLANG_SIMULATE_ACC_LEN"] == "3.51"
    assert server["env_values"]["STUB_ENV"] == "a,b"          # a value with a comma arrives whole
    assert "--gres=none" in router["srun"]
    proc = subprocess.run([*ci_tools_cmd(), "results", "process", str(out)], env=sjob["env"], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads((out / "result.json").read_text())["valid"] is True
    # when the run ended its job was gone, and the other job, not ours, was still there
    assert all(not j.startswith(f"{job} ") for j in jobs), jobs
    assert any(j.startswith(f"{stale} ") for j in jobs), jobs
    # a later job of the same image imports nothing: it finds the file
    # 2 ms between tokens, not the stub's 20 (its 20 warmup requests were 1.7 s of waiting): this job's result is
    # not judged (at 2 ms a loaded machine may join tokens into one chunk, which results refuses as ITL 0)
    again = subprocess.run(sjob["argv"]("row.json", "--itl 0.002"), env=sjob["env"], capture_output=True, text=True,
                           timeout=180)
    assert again.returncode == 0, again.stderr + again.stdout
    assert len(enroot_imports(sjob)) == 1
    assert f"{sqsh} is already imported" in (out / "image_import.log").read_text()


def test_github_cancel_during_the_benchmark_leaves_nothing(sjob):
    p = step_in_its_client(sjob, sjob["argv"](duration=120))
    time.sleep(1.0)
    # the allocation is bounded even if everything else failed: no TimeLimit=UNLIMITED
    job = sjob["slurm"].run("squeue", "--noheader", "--format=%i %l", "--name=" +
                            json.loads((sjob["out"] / "job.json").read_text())["label"]).stdout.split()
    assert len(job) == 2 and job[1] not in ("UNLIMITED", "INVALID"), job
    status, err, _ = cancel_in_the_client(sjob, p)
    assert status["exit_code"] == 130
    assert not (sjob["out"] / "aiperf_tmp").exists()
    assert "cancelled by SIGINT" in err
    # the fixture then requires an empty squeue and no process carrying the test's mark


def test_github_cancel_while_queued_removes_the_pending_job(sjob):
    # every GPU is taken by another user's job: ours stays PENDING
    blocker = sjob["slurm"].run("sbatch", "--parsable", "--job-name=other-user", "--gpus-per-node=4",
                                "--output=/dev/null", "--wrap", "exec sleep 300").stdout.strip()
    try:
        p = step(sjob, sjob["argv"]())
        try:
            wait_for(lambda: any(" PENDING " in j for j in sjob["slurm"].jobs()), 60, "the job to be queued")
            time.sleep(1.5)  # polling the queue now
        finally:
            events = github_cancel(p)
        _, err = p.communicate()
        assert events == ["SIGINT"] and p.returncode == 130, err
        status = json.loads((sjob["out"] / "status.json").read_text())
        assert status["phase"] == "queue" and status["exit_code"] == 130
        assert f"{status['slurm_job_id']} " not in " ".join(sjob["slurm"].jobs())
    finally:
        sjob["slurm"].run("scancel", blocker)


def test_sigterm_only_cancel(sjob):
    """A bare SIGTERM (a runner that skips SIGINT, or `timeout`) ends the same way with 143."""
    p = step(sjob, sjob["argv"]("row.json", "--never-ready"))
    # the runner's own readiness deadline (120 s): 60 s ran out once with two suites on the loaded 2 cores
    wait_for(lambda: (sjob["out"] / "server.log").exists() and "serving" in (sjob["out"] / "server.log").read_text(),
             120, "the server to start")
    os.killpg(os.getpgid(p.pid), signal.SIGTERM)
    _, err = p.communicate(timeout=15)
    assert p.returncode == 143, err
    status = json.loads((sjob["out"] / "status.json").read_text())
    assert status["reason"] == "cancelled (SIGTERM)" and status["exit_code"] == 143 and status["phase"] == "ready"


def test_runner_killed_outright_then_cleanup_step(sjob):
    """SIGKILL (a crashed runner) cleans nothing itself: the `if: always()` step does."""
    p = step(sjob, sjob["argv"](duration=120))
    client_log = sjob["out"] / "client.log"
    wait_for(lambda: client_log.exists() and client_log.stat().st_size > 0, 90, "the client to start")
    p.kill()
    p.communicate()
    assert sjob["slurm"].jobs(), "the allocation should still be there after a SIGKILL"
    res = subprocess.run([*ci_tools_cmd(), "runner", "cleanup", "--out", str(sjob["out"])], env=sjob["env"],
                         capture_output=True, text=True, timeout=30)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "stopped slurm job" in res.stdout and "stopped process" in res.stdout
    status = json.loads((sjob["out"] / "status.json").read_text())
    assert status["ok"] is False and "without a status" in status["reason"]


def test_server_never_ready_on_slurm(sjob):
    run = subprocess.run(sjob["argv"]("row.json", "--never-ready", extra=["--ready-timeout", "3"]), env=sjob["env"],
                         capture_output=True, text=True, timeout=90)
    assert run.returncode == 1, run.stderr
    # the image import's time counts against readiness (the stand-in's import takes about 1 s)
    assert re.search(r"error: ready: the server was not ready within [\d.]+ s .*\(3 s less the image import's "
                     r"[\d.]+ s\)", run.stderr), run.stderr
    assert json.loads((sjob["out"] / "status.json").read_text())["phase"] == "ready"
