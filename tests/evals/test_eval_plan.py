"""What an eval row runs, as tables: the harness commands per eval concurrency, the server without
simulated acceptance on every backend, and the eval client in place of AIPerf."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ci_tools.cli import cli
from ci_tools.evals import policy as ep
from ci_tools.sweep.row import parse_row
from ci_tools.yaml.load import load_yaml_file
from tests.conftest import REPO

import sys
sys.path.insert(0, str(REPO / "tests/runner"))
from runner_support import seed_rows  # noqa: E402

POLICY = ep.policy_from_doc(load_yaml_file(REPO / "inferencex-e2e/ci-policy.yaml", "ci-policy.yaml"))
FIXED = {"config-key": "k", "model-prefix": "qwen3.5", "conc": 64, "scenario-type": "fixed-seq-len",
         "run-eval": True}


def dry_run(tmp_path: Path, row: dict, backend: str) -> str:
    (tmp_path / "row.json").write_text(json.dumps(row))
    res = CliRunner().invoke(cli, ["runner", "run", "--row", str(tmp_path / "row.json"), "--backend", backend,
                                   "--dry-run", "--out", "out", "--root", str(REPO), "--lm-eval-bin", "lm_eval"])
    assert res.exit_code == 0, res.output
    return res.output


@pytest.mark.parametrize("backend", ["docker", "slurm", "process"])
@pytest.mark.parametrize("name,row", seed_rows(), ids=[n for n, _ in seed_rows()])
def test_eval_rows_never_simulate_acceptance(tmp_path, name, row, backend):
    text = dry_run(tmp_path, {**row, "run-eval": True, "eval-only": True}, backend)
    assert not any(prefix in text for prefix in ep.SIMULATED_ACCEPTANCE_ENV_PREFIXES), text
    assert "aiperf" not in text and "ci-tools runner evals out --base-url" in text
    assert "python3 -m ci_tools.evals.swebench" in text
    if backend == "slurm":  # the harness reaches the server at its compute node's NodeAddr
        assert "--base-url 'http://{server_addr}:8000'" in text
    throughput = dry_run(tmp_path, row, backend)
    assert "SGLANG_SIMULATE_ACC_LEN=3.51" in throughput  # the same point benchmarked: simulated


@pytest.mark.parametrize("env,kept,removed", [
    ({"A": "1"}, {"A": "1"}, []),
    ({"SGLANG_SIMULATE_ACC_LEN": "3.5", "SGLANG_SIMULATE_ACC_METHOD": "m", "X": "y"}, {"X": "y"},
     ["SGLANG_SIMULATE_ACC_LEN", "SGLANG_SIMULATE_ACC_METHOD"]),
    ({"TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS": "2"}, {}, ["TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS"]),
    ({"SYNTHETIC_ACCEPTANCE": "true", "SYNTHETIC_ACCEPTANCE_LENGTH": "3"}, {},
     ["SYNTHETIC_ACCEPTANCE", "SYNTHETIC_ACCEPTANCE_LENGTH"]),
])
def test_simulated_acceptance_is_removed_from_eval_servers(env, kept, removed):
    assert ep.split_simulated_acceptance(env) == (kept, removed)


def runs(row, policy=POLICY):
    return ep.harness_runs(parse_row(row, "row"), policy, model="org/m", base_url="http://h:8000", lm_eval_bin="lm_eval",
                           root="/repo", out_dir="/o")


def test_lm_eval_command_of_a_fixed_sequence_row():
    (run,) = runs(FIXED)
    assert run.conc == 64 and run.task == "gsm8k" and run.output == "/o/evals/lm_eval_gsm8k_conc64"
    assert run.argv == ["lm_eval", "run", "--model", "local-chat-completions", "--model_args",
                        "model=org/m,base_url=http://h:8000/v1/chat/completions,num_concurrent=64,max_retries=3,"
                        "tokenized_requests=False", "--tasks", "gsm8k", "--apply_chat_template", "--output_path",
                        "/o/evals/lm_eval_gsm8k_conc64", "--log_samples", "--seed", "42", "--num_fewshot", "5"]


@pytest.mark.parametrize("row,policy_concs,want", [
    (FIXED, (), [64]),
    ({**FIXED, "eval-conc": 16}, (), [16]),
    ({**FIXED, "conc": [4, 8, 32], "prefill": {"num-worker": 1, "tp": 4}, "decode": {"num-worker": 1, "tp": 4}},
     (), [32]),                       # a multi-node row: its highest concurrency
    (FIXED, (1, 4, 8), [1, 4, 8]),   # a batched eval: the policy's list
])
def test_eval_concurrencies(row, policy_concs, want):
    policy = ep.EvalPolicy(POLICY.suites, policy_concs, POLICY.timeout_s, POLICY.file)
    assert [r.conc for r in runs(row, policy)] == want


def test_agentic_command_template_is_filled_per_concurrency():
    policy = ep.EvalPolicy(POLICY.suites, (2, 8), POLICY.timeout_s, POLICY.file)
    got = runs({**FIXED, "scenario-type": "agentic-coding"}, policy)
    assert [r.conc for r in got] == [2, 8]
    assert got[1].argv == ["python3", "-m", "ci_tools.evals.swebench", "--base-url", "http://h:8000", "--model",
                           "org/m", "--conc", "8", "--tasks", "swebench_lite", "--limit", "0", "--work-dir",
                           "/o/evals/work_conc8", "--results", "/o/evals/work_conc8/harness_results.json"]
    assert got[1].output == "/o/evals/work_conc8/harness_results.json"


def test_fixed_sequence_eval_row_dry_run_prints_the_lm_eval_command(tmp_path):
    _, row = seed_rows()[0]
    text = dry_run(tmp_path, {**row, "scenario-type": "fixed-seq-len", "isl": 1024, "osl": 1024, "run-eval": True},
                   "docker")
    assert "lm_eval run --model local-chat-completions" in text and "--tasks gsm8k" in text
    assert "# eval harness lm-eval (lm-eval): tasks gsm8k, concurrencies 1" in text


def test_eval_row_without_an_evals_section_is_refused(tmp_path):
    import shutil

    for part in ("inferencex-e2e", "recipes"):
        shutil.copytree(REPO / part, tmp_path / part)
    policy = tmp_path / "inferencex-e2e/ci-policy.yaml"
    policy.write_text(policy.read_text().split("\nevals:")[0])
    _, row = seed_rows()[0]
    (tmp_path / "row.json").write_text(json.dumps({**row, "run-eval": True}))
    res = CliRunner().invoke(cli, ["runner", "run", "--row", str(tmp_path / "row.json"), "--dry-run",
                                   "--root", str(tmp_path)])
    assert res.exit_code == 1
    assert "no `evals:` section, so eval rows cannot be run" in str(res.exception)
