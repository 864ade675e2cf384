"""Golden command lines: `runner run --dry-run` for every seed point, docker and slurm."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ci_tools.cli import cli
from ci_tools.errors import UsageError

from runner_support import REPO, seed_rows
from tests.conftest import assert_golden

GOLDEN = REPO / "tests/golden/runner"
FIXED = ["--aiperf-bin", "aiperf", "--model-store", "/mnt/models", "--hf-cache", "/mnt/hf_hub_cache",
         "--runner-name", "", "--out", "out", "--root", str(REPO)]
NO_GPU_ENV = {"CUDA_VISIBLE_DEVICES": None, "CI_TOOLS_GPUS": None}  # goldens: the GPUs a bare host gives


def dry_run(tmp_path: Path, row: dict, backend: str) -> str:
    path = tmp_path / "row.json"
    path.write_text(json.dumps(row))
    res = CliRunner().invoke(cli, ["runner", "run", "--row", str(path), "--backend", backend, "--dry-run", *FIXED],
                             env=NO_GPU_ENV)
    assert res.exit_code == 0, res.output
    return res.output


def check_golden(name: str, text: str) -> None:
    assert_golden(GOLDEN / name, text)


@pytest.mark.parametrize("backend", ["docker", "slurm"])
@pytest.mark.parametrize("name,row", seed_rows(), ids=[n for n, _ in seed_rows()])
def test_seed_point_golden(tmp_path, name, row, backend):
    text = dry_run(tmp_path, row, backend)
    check_golden(f"{name}.{backend}.txt", text)
    assert "SGLANG_SIMULATE_ACC_LEN=3.51" in text        # throughput run: synthetic acceptance on
    assert f"--concurrency {row['conc']}" in text
    assert ("sglang_router.launch_router" in text) == row["dp-attn"]


def test_eval_row_has_no_synthetic_acceptance(tmp_path):
    name, row = seed_rows()[0]
    text = dry_run(tmp_path, {**row, "run-eval": True}, "docker")
    check_golden(f"{name}.eval.docker.txt", text)
    assert "SIMULATE_ACC" not in text and "aiperf" not in text
    # the eval client and the exact harness command of the policy's agentic suite
    assert "ci-tools runner evals out --base-url http://127.0.0.1:8000" in text
    assert "python3 -m ci_tools.evals.swebench --base-url http://127.0.0.1:8000" in text


def test_agentx_fast_shortens_duration(tmp_path):
    _, row = seed_rows()[0]
    text = dry_run(tmp_path, {**row, "agentx-fast": True}, "process")
    assert "--benchmark-duration 1200" in text and "--warmup-request-count 1 " in text


@pytest.mark.parametrize("change,message", [
    ({"image": "lmsysorg/sglang:other"}, "differs from the recipe's"),
    ({"conc": 8}, "no point with tp=4 ep=4 dp-attn=false conc=8"),
    ({"kv-offloading": "dram"}, "the row offloads KV (dram, None), but recipes/gb300-dsv41flash-fp4-sglang/agentic.yaml has no"),
    ({"pp": 2}, "`pp: 2`"),
    ({"config-key": "nope"}, "config key 'nope' is not in any master config"),
    ({"recipe": None, "config-key": None}, "row.json: the row has neither `recipe` nor `config-key`"),
])
def test_bad_rows_are_clear(tmp_path, change, message):
    _, row = seed_rows()[0]
    path = tmp_path / "row.json"
    path.write_text(json.dumps({**row, **change}))
    res = CliRunner().invoke(cli, ["runner", "run", "--row", str(path), "--dry-run", *FIXED])
    assert res.exit_code != 0
    assert message in str(res.exception) + res.output


def test_master_entry_without_recipe_is_named(tmp_path):
    import shutil

    root = tmp_path / "repo"
    shutil.copytree(REPO / "inferencex-e2e", root / "inferencex-e2e")
    master = root / "inferencex-e2e/configs/nvidia-master.yaml"
    master.write_text(master.read_text().replace("  recipe: recipes/b300-dsv41flash-fp4-sglang/fixed-seq.yaml\n", ""))
    _, row = seed_rows()[0]
    path = tmp_path / "row.json"
    path.write_text(json.dumps({**row, "config-key": "dsv41flash-fp4-b300-sglang"}))
    res = CliRunner().invoke(cli, ["runner", "run", "--row", str(path), "--dry-run", *FIXED[:-1], str(root)])
    assert res.exit_code != 0
    assert "has no `recipe:` field" in str(res.exception) + res.output


def test_documented_dry_run_block_is_current(tmp_path):
    readme = (REPO / "docs/runner-operator.md").read_text()
    head = "$ ci-tools runner run --row docs/examples/row-dep2-c64.json --backend docker --dry-run\n"
    start = readme.index(head) + len(head)
    block = readme[start:readme.index("```", start)]
    row = json.loads((REPO / "docs/examples/row-dep2-c64.json").read_text())
    assert block == dry_run(tmp_path, row, "docker")


@pytest.mark.parametrize("backend", ["docker", "slurm"])
def test_backend_comes_from_the_host_environment(tmp_path, backend):
    """The workflow passes no --backend: the runner's CI_TOOLS_BACKEND decides, as the option would."""
    name, row = seed_rows()[0]
    path = tmp_path / "row.json"
    path.write_text(json.dumps(row))
    res = CliRunner().invoke(cli, ["runner", "run", "--row", str(path), "--dry-run", *FIXED],
                             env={"CI_TOOLS_BACKEND": backend, **NO_GPU_ENV})
    assert res.exit_code == 0, res.output
    check_golden(f"{name}.{backend}.txt", res.output)


def test_bad_backend_in_the_environment_is_a_usage_error(tmp_path):
    _, row = seed_rows()[0]
    path = tmp_path / "row.json"
    path.write_text(json.dumps(row))
    res = CliRunner().invoke(cli, ["runner", "run", "--row", str(path), "--dry-run", *FIXED],
                             env={"CI_TOOLS_BACKEND": "kubernetes"})
    assert res.exit_code == 2 and "Invalid value for '--backend'" in res.output


def test_format_github_names_the_artifacts_from_the_layout(tmp_path):
    from ci_tools import names

    _, row = seed_rows()[0]
    path = tmp_path / "row.json"
    path.write_text(json.dumps(row))
    out_file = tmp_path / "github_output"
    argv = ["runner", "run", "--row", str(path), "--dry-run", "--format", "github", *FIXED]
    res = CliRunner().invoke(cli, argv, env={"GITHUB_OUTPUT": str(out_file)})
    assert res.exit_code == 0, res.output
    outputs = dict(line.split("=", 1) for line in out_file.read_text().splitlines())
    rf = names.result_filename(row)
    assert outputs == names.github_outputs(rf, "out")
    assert outputs["artifact-job"] == f"job_{rf}" and outputs["artifact-result"] == f"bmk_{rf}"
    res = CliRunner().invoke(cli, argv, env={"GITHUB_OUTPUT": None})
    assert isinstance(res.exception, UsageError) and res.exception.exit_code == 2   # main() exits 2
    assert "needs $GITHUB_OUTPUT" in str(res.exception)
