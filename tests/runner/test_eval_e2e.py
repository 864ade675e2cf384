"""Eval rows end to end with the real lm-eval: `runner run` serves the point (the stub server
answering from a table), runs lm-eval 0.4 on a small gsm8k-style task of our own (local JSONL,
nothing downloaded) at two eval concurrencies, and `results process` scores it. The table answers 4
of 5 questions right, so every exact_match metric is exactly 0.8: above a 0.75 threshold, below 0.85.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from runner_support import IMAGE, REPO, STUB, free_port, stub_recipe

DATA = Path(__file__).with_name("data") / "evals"
RECIPE = stub_recipe(config_key="stub-fixed", points="  tp2-c4: {tp: 2, ep: 1, conc: 4}\n")
EVALS = """
evals:
  timeout-seconds: 600
  concurrencies: [1, 2]
  suites:
    fixed-seq-len:
      harness: lm-eval
      tasks:
        - name: tiny_gsm8k
          num-fewshot: 2
          include-path: tasks
  harnesses:
    lm-eval:
      type: lm-eval
      api: local-chat-completions
"""
THRESHOLDS = """thresholds-version: 1
floor: 0.99
default:
  tiny_gsm8k: {default}
models:
  stubmodel:
    tiny_gsm8k: {model}
"""


def policy_without_evals() -> str:
    text = (REPO / "inferencex-e2e/ci-policy.yaml").read_text()
    return text[: text.index("\nevals:")] if "\nevals:" in text else text


@pytest.fixture(scope="module")
def eval_job(tmp_path_factory, lm_eval):
    root = tmp_path_factory.mktemp("evalrepo")
    (root / "recipe.yaml").write_text(RECIPE)
    (root / "inferencex-e2e").mkdir()
    (root / "inferencex-e2e/ci-policy.yaml").write_text(policy_without_evals() + EVALS)
    (root / "tasks").mkdir()
    (root / "tasks/tiny_gsm8k.yaml").write_text((DATA / "tiny_gsm8k.yaml.in").read_text()
                                                .replace("{data_dir}", str(DATA)))
    row = {"image": IMAGE, "model": "stub", "model-prefix": "stubmodel", "precision": "fp4", "framework": "sglang",
           "runner": "gb300", "tp": 2, "ep": 1, "dp-attn": False, "spec-decoding": "mtp", "conc": 4,
           "isl": 1024, "osl": 1024, "exp-name": "stub_1k1k", "scenario-type": "fixed-seq-len",
           "run-eval": True, "eval-only": True, "recipe": "recipe.yaml"}
    (root / "row.json").write_text(json.dumps(row))
    env = {**os.environ, "HF_HOME": str(root / "hf"), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
           "TRANSFORMERS_OFFLINE": "1", "PYTHONUNBUFFERED": "1",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    port = free_port()
    out = root / "out"
    run = subprocess.run([sys.executable, "-m", "ci_tools", "runner", "run", "--row", str(root / "row.json"),
                          "--root", str(root), "--backend", "process", "--out", str(out), "--lm-eval-bin", lm_eval,
                          "--server-cmd", f"{sys.executable} {STUB} --port {{port}} --model {{model}} "
                                          f"--answers {DATA / 'answers.json'} --spec-accept-length 3.0",
                          "--port", str(port), "--ready-timeout", "20", "--skip-node-check", "--no-telemetry"],
                         env=env, capture_output=True, text=True, timeout=400, cwd=root)
    assert run.returncode == 0, run.stderr + run.stdout
    return {"root": root, "out": out, "env": env, "run": run}


def process(job, default: float, model: float, tmp_path: Path) -> tuple[subprocess.CompletedProcess, dict]:
    th = tmp_path / "thresholds.yaml"
    th.write_text(THRESHOLDS.format(default=default, model=model))
    res = subprocess.run([sys.executable, "-m", "ci_tools", "results", "process", str(job["out"]),
                          "--thresholds", str(th), "--out", str(tmp_path / "eval_result.json")],
                         env=job["env"], capture_output=True, text=True, timeout=60)
    return res, json.loads((tmp_path / "eval_result.json").read_text())


def test_eval_job_serves_with_real_verification(eval_job):
    job = json.loads((eval_job["out"] / "job.json").read_text())
    server_env = job["commands"]["server"]["env"]
    assert not [k for k in server_env if k.startswith("SGLANG_SIMULATE_ACC")], server_env
    assert server_env["STUB_ENV"] == "1"
    # the recipe's synthetic-acceptance (3.51) is not applied: the server verifies speculation for real
    assert job["evals"]["acceptance"] == {"simulated": False, "removed-env": []}
    commands = (eval_job["out"] / "commands.txt").read_text()
    assert "SIMULATE_ACC" not in commands and "aiperf" not in commands
    assert commands.count("lm_eval run --model local-chat-completions") == 2
    manifest = json.loads((eval_job["out"] / "evals/meta_env.json").read_text())
    assert manifest["eval_concs"] == manifest["completed_eval_concs"] == [1, 2]
    assert manifest["failed_eval_concs"] == [] and manifest["harness_version"] == "0.4.13"
    assert sorted(p.name for p in (eval_job["out"] / "evals").glob("results*.json")) == [
        "results_conc1.json", "results_conc2.json"]


def test_scores_above_threshold_pass(eval_job, tmp_path):
    res, result = process(eval_job, default=0.9, model=0.75, tmp_path=tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    assert result["schema"] == "ci-tools/eval-result/v1" and result["valid"] is True, result["failures"]
    got = {(s["conc"], s["metric"]): (s["score"], s["threshold"], s["threshold-source"]) for s in result["scores"]}
    assert got == {(c, m): (pytest.approx(0.8), 0.75, "models.stubmodel.tiny_gsm8k")
                   for c in (1, 2) for m in ("exact_match,strict-match", "exact_match,flexible-extract")}
    assert result["harness"]["reported-version"] == "0.4.13"
    assert "PASS: [conc=2] tiny_gsm8k exact_match,strict-match 0.8000 (minimum 0.7500" in res.stdout


def test_the_measured_acceptance_is_set_beside_the_synthetic_and_warned_about(eval_job, tmp_path):
    """The stub verifies speculation at acceptance length 3.0 and reports it as SGLang does; the recipe's
    throughput rows replay 3.51: 14.5% apart, past the policy's 10%, a warning that fails nothing."""
    res, result = process(eval_job, default=0.9, model=0.75, tmp_path=tmp_path)
    assert res.returncode == 0 and result["valid"] is True, res.stdout + res.stderr
    acc = result["acceptance"]
    assert {k: acc[k] for k in ("simulated", "synthetic", "measured", "difference", "tolerance", "agrees")} == {
        "simulated": False, "synthetic": 3.51, "measured": 3.0, "difference": -0.1453, "tolerance": 0.1,
        "agrees": False}
    assert acc["measured-source"].startswith("sglang /server_info internal_states[].avg_spec_accept_length")
    assert "warning: measured acceptance length 3 (sglang /server_info" in res.stderr
    assert "acceptance: measured 3 (sglang /server_info" in res.stdout and "OUTSIDE the tolerance 10% (-14.5%)" in res.stdout
    # a policy that allows 20% takes it without a warning
    policy = tmp_path / "policy.yaml"
    policy.write_text((REPO / "inferencex-e2e/ci-policy.yaml").read_text().replace("  tolerance: 0.10", "  tolerance: 0.2"))
    wide = subprocess.run([sys.executable, "-m", "ci_tools", "results", "process", str(eval_job["out"]),
                           "--thresholds", str(tmp_path / "thresholds.yaml"), "--policy", str(policy),
                           "--out", str(tmp_path / "wide.json")], env=eval_job["env"], capture_output=True,
                          text=True, timeout=60)
    assert wide.returncode == 0 and "warning" not in wide.stderr, wide.stderr
    assert json.loads((tmp_path / "wide.json").read_text())["acceptance"]["agrees"] is True


def test_scores_below_threshold_fail_listing_every_score(eval_job, tmp_path):
    res, result = process(eval_job, default=0.85, model=0.85, tmp_path=tmp_path)
    assert res.returncode == 1
    assert result["valid"] is False
    below = [f["message"] for f in result["failures"] if f["rule"] == "score"]
    assert len(below) == 4 and all("= 0.8000 is below 0.8500 (models.stubmodel.tiny_gsm8k)" in m for m in below)
    assert "error: eval failed (4 check(s) failed)" in res.stderr


def test_the_default_applies_when_the_model_has_no_threshold(eval_job, tmp_path):
    th = THRESHOLDS.replace("  stubmodel:\n    tiny_gsm8k: {model}\n", "  othermodel:\n    tiny_gsm8k: 0.1\n")
    (tmp_path / "t.yaml").write_text(th.format(default=0.85))
    res = subprocess.run([sys.executable, "-m", "ci_tools", "results", "process", str(eval_job["out"]),
                          "--thresholds", str(tmp_path / "t.yaml"), "--out", str(tmp_path / "r.json"), "--format", "json"],
                         env=eval_job["env"], capture_output=True, text=True, timeout=60)
    assert res.returncode == 1
    sources = {s["threshold-source"] for s in json.loads((tmp_path / "r.json").read_text())["scores"]}
    assert sources == {"default.tiny_gsm8k"}
