"""InferenceX's multi-node shapes beyond 1P2D, end to end on the real local 3-node Slurm (issue 22):

- an eval row: a 1P2D point of stub engines behind the real sglang-router in PD mode, and the real
  lm-eval 0.4 run by `ci-tools runner evals` against the frontend, as a single-node eval row runs it
  against its server (test_eval_e2e.py). The stub answers 4 of 5 questions right: every exact_match
  score is 0.8;
- an aggregated point (decode num-worker 0) of three workers, two of them smaller than a node and
  packed onto one: the real sglang-router routing over them with --worker-urls, real AIPerf."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from runner_support import AIPERF_NO_FLUSH, PYXIS, STUB, free_port, nothing_left_behind, runner_run
from test_disagg_slurm_e2e import RECIPE, ROW, RUNNERS, router_python  # noqa: F401 (fixture)
from test_eval_e2e import DATA, EVALS, THRESHOLDS, policy_without_evals


def test_a_multinode_eval_row_runs_the_harness_against_the_frontend(tmp_path, cluster, router_python, lm_eval,
                                                                    hf_home):
    root = tmp_path
    # its own metrics port, a free one (the runner's pick, --port + 1, is not known free on this host)
    (root / "recipe.yaml").write_text(RECIPE.replace("conc: [2, 3]", "conc: [2]")
                                      .replace("PROMETHEUS_PORT", str(free_port())))
    (root / "inferencex-e2e/configs").mkdir(parents=True)
    (root / "inferencex-e2e/configs/runners.yaml").write_text(RUNNERS)
    (root / "inferencex-e2e/ci-policy.yaml").write_text(policy_without_evals() + EVALS)
    (root / "tasks").mkdir()
    (root / "tasks/tiny_gsm8k.yaml").write_text((DATA / "tiny_gsm8k.yaml.in").read_text()
                                                .replace("{data_dir}", str(DATA)))
    row = {**ROW, "scenario-type": "fixed-seq-len", "isl": 1024, "osl": 1024, "model-prefix": "stubmodel",
           "run-eval": True, "eval-only": True}
    row.pop("duration")
    (root / "row.json").write_text(json.dumps(row))
    bindir = root / "bin"          # python3 of the rendered frontend command is the router's venv
    bindir.mkdir()
    (bindir / "python3").write_text(f'#!/bin/sh\nexec {router_python} "$@"\n')
    (bindir / "python3").chmod(0o755)
    port, worker_port = free_port(), free_port()
    out = root / "out"
    with nothing_left_behind(cluster) as box:
        env = box.env(hf_home, cluster.env, {
            "PATH": f"{PYXIS}:{bindir}:{Path(sys.executable).parent}:{os.environ['PATH']}",
            "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"})
        run = subprocess.run(
            [sys.executable, "-m", "ci_tools", "runner", "run", "--row", str(root / "row.json"), "--root", str(root),
             "--backend", "slurm", "--out", str(out), "--lm-eval-bin", lm_eval, "--hf-cache", str(hf_home / "hub"),
             "--model-store", str(root), "--port", str(port), "--worker-port", str(worker_port),
             "--ready-timeout", "60", "--runner-name", "",
             "--server-cmd", f"{sys.executable} {STUB} --port {{port}} --model {{model}} --role {{role}} "
                             f"--answers {DATA / 'answers.json'}"],
            env=env, capture_output=True, text=True, timeout=500, cwd=root)
        assert run.returncode == 0, run.stderr[-4000:] + run.stdout[-2000:]
    job = json.loads((out / "job.json").read_text())
    assert job["multinode"] is True and job["evals"]["concurrencies"] == [1, 2]
    commands = (out / "commands.txt").read_text()
    assert "runner evals" in commands and "aiperf" not in commands and "--pd-disaggregation" in commands
    manifest = json.loads((out / "evals/meta_env.json").read_text())
    assert manifest["completed_eval_concs"] == [1, 2] and manifest["failed_eval_concs"] == []
    th = root / "thresholds.yaml"
    th.write_text(THRESHOLDS.format(default=0.9, model=0.75))
    res = subprocess.run([sys.executable, "-m", "ci_tools", "results", "process", str(out), "--thresholds", str(th),
                          "--out", str(root / "eval_result.json")], env=env, capture_output=True, text=True,
                         timeout=60)
    assert res.returncode == 0, res.stdout + res.stderr
    result = json.loads((root / "eval_result.json").read_text())
    assert result["valid"] is True
    assert len(result["scores"]) == 4 and all(s["score"] == pytest.approx(0.8) for s in result["scores"])


# the 1P2D recipe's head, with one aggregated point: three tp2 workers and no decode side
AGG_RECIPE = RECIPE.split("points:")[0].replace("stub-disagg", "stub-agg") + """points:
  agg-3x2:
    prefill: {num-worker: 3, tp: 2, nodes: 1}
    decode: {num-worker: 0, tp: 2, nodes: 1}
    conc: [2]
"""


def test_an_aggregated_point_with_workers_smaller_than_a_node(tmp_path, cluster, router_python, aiperf, hf_home):
    root = tmp_path
    (root / "recipe.yaml").write_text(AGG_RECIPE.replace("PROMETHEUS_PORT", str(free_port())))
    (root / "inferencex-e2e/configs").mkdir(parents=True)
    (root / "inferencex-e2e/configs/runners.yaml").write_text(RUNNERS)
    row = {**ROW, "framework": "sglang", "prefill": {"num-worker": 3, "tp": 2, "ep": 1, "dp-attn": False},
           "decode": {"num-worker": 0, "tp": 2, "ep": 1, "dp-attn": False}, "disagg": False, "exp-name": "stub_agg"}
    row.pop("kv-p2p-transfer")
    (root / "row.json").write_text(json.dumps(row))
    bindir = root / "bin"
    bindir.mkdir()
    (bindir / "python3").write_text(f'#!/bin/sh\nexec {router_python} "$@"\n')
    (bindir / "python3").chmod(0o755)
    with nothing_left_behind(cluster) as box:
        env = box.env(hf_home, cluster.env, {"PATH": f"{PYXIS}:{bindir}:{os.environ['PATH']}"}, AIPERF_NO_FLUSH)
        argv = runner_run(root, "row.json", backend="slurm", aiperf=aiperf, hf_home=hf_home, model_store=root,
                          port=free_port(), ready_timeout=60, duration=3,
                          server_cmd=f"{sys.executable} {STUB} --port {{port}} --model {{model}} --itl 0.05",
                          extra=["--worker-port", str(free_port())])
        run = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=400, cwd=root)
        logs = "".join(f"\n== {p.name}\n{p.read_text()[-1500:]}" for p in sorted((root / "out").glob("*.log")))
        assert run.returncode == 0, run.stderr[-3000:] + logs
    out = root / "out"
    status = json.loads((out / "status.json").read_text())
    # three tp2 workers on 4-GPU nodes: two share the first node, the third has the next
    assert status["placement"]["aggregated-0"] == status["placement"]["aggregated-1"] == ["cit-n1"]
    assert status["placement"]["aggregated-2"] == ["cit-n2"]
    # ... and Slurm binds each of the two its own GPUs there (the stub prints what it was given)
    seen = [next(line for line in (out / f"aggregated-{i}.log").read_text().splitlines() if "CUDA_VISIBLE" in line)
            for i in (0, 1)]
    assert seen[0] != seen[1], seen
    commands = (out / "commands.txt").read_text()
    assert "--worker-urls" in commands and "--pd-disaggregation" not in commands
    assert "--disaggregation-mode" not in commands
    res = subprocess.run([sys.executable, "-m", "ci_tools", "results", "process", str(out)], env=env,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    result = json.loads((out / "result.json").read_text())
    assert result["valid"] is True and result["gpus"] == 6
