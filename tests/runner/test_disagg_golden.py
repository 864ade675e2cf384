"""Golden launches: `runner run --dry-run --backend slurm` for every multi-node row of the example repository."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ci_tools.cli import cli
from ci_tools.errors import InputError, UsageError

from runner_support import REPO, multinode_rows
from tests.conftest import assert_golden

GOLDEN = REPO / "tests/golden/runner/multinode"
FIXED = ["--aiperf-bin", "aiperf", "--model-store", "/mnt/models", "--hf-cache", "/mnt/hf_hub_cache",
         "--runner-name", "gb300-nv_0", "--out", "/runner/_work/out", "--root", str(REPO)]
ROWS = multinode_rows()


def invoke(tmp_path: Path, row: dict, *extra: str, env: dict | None = None):
    path = tmp_path / "row.json"
    path.write_text(json.dumps(row))
    return CliRunner().invoke(cli, ["runner", "run", "--row", str(path), "--dry-run", *FIXED, *extra], env=env)


def test_the_example_repository_has_multinode_rows():
    names = [n for n, _ in ROWS]
    # 8k1k 1P2D DEP4 (conc 64, 128) and 2P1D DEP8 (512); agentic 1P1D, one concurrency per allocation
    assert names == ["8192-1024-1p2d-tp4-tp4-c64x128", "8192-1024-2p1d-tp4-tp8-c512",
                     "agentic-1p1d-tp4-tp4-c32", "agentic-1p1d-tp4-tp4-c64"]


@pytest.mark.parametrize("name,row", ROWS, ids=[n for n, _ in ROWS])
def test_multinode_launch_golden(tmp_path, name, row):
    res = invoke(tmp_path, row, "--backend", "slurm")
    assert res.exit_code == 0, res.output
    assert_golden(GOLDEN / f"{name}.slurm.txt", res.output)
    text = res.output
    workers = row["prefill"]["num-worker"] + row["decode"]["num-worker"]
    assert text.count("--disaggregation-mode ") == workers
    assert text.count(" srun ") + text.count("\nsrun ") == workers + 2          # + the image import, the frontend
    # one import of the image per job, every step runs that file
    assert text.count("enroot import ") == 1 and text.count("--container-image=/mnt/squash/") == workers + 1
    assert text.count("--disaggregation-transfer-backend nixl") == workers
    for conc in row["conc"]:
        assert f"--concurrency {conc} " in text
    assert "--exclusive" in text and "--time=" in text and "scancel J" in text
    if row.get("kv-offloading") == "dram":
        assert "--enable-hierarchical-cache" in text and "--hicache-size" in text
        assert "SGLANG_SIMULATE_ACC_LEN=3.51" in text


@pytest.mark.parametrize("backend", ["docker", "process"])
def test_multinode_rows_run_on_slurm_only(tmp_path, backend):
    res = invoke(tmp_path, ROWS[0][1], "--backend", backend)
    assert isinstance(res.exception, UsageError) and "multi-node rows run on Slurm only" in str(res.exception)


def test_the_backend_may_come_from_the_runner_environment(tmp_path):
    name, row = ROWS[0]
    res = invoke(tmp_path, row, env={"CI_TOOLS_BACKEND": "slurm"})
    assert res.exit_code == 0, res.output
    assert_golden(GOLDEN / f"{name}.slurm.txt", res.output)


def test_a_single_node_recipe_for_a_multinode_row_is_refused(tmp_path):
    row = {**ROWS[0][1], "recipe": "recipes/gb300-dsv41flash-fp4-sglang/agentic.yaml"}
    res = invoke(tmp_path, row, "--backend", "slurm")
    assert isinstance(res.exception, InputError) and "not a disaggregated recipe" in str(res.exception)


def test_format_github_names_the_artifacts_of_the_job(tmp_path):
    from ci_tools import names

    out_file = tmp_path / "github_output"
    name, row = ROWS[2]
    res = invoke(tmp_path, row, "--backend", "slurm", "--format", "github", env={"GITHUB_OUTPUT": str(out_file)})
    assert res.exit_code == 0, res.output
    outputs = dict(line.split("=", 1) for line in out_file.read_text().splitlines())
    assert outputs["artifact-job"].startswith("job_dsv41flash_p1x4ep4dpa_d1x4ep4dpa_conc32")
    assert outputs == names.github_outputs(outputs["result-filename"], "/runner/_work/out")
