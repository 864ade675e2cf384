"""The job's time budget (pure) and the workflow that must honour it."""

from __future__ import annotations

import json

import pytest
import yaml
from click.testing import CliRunner

from ci_tools.cli import cli
from ci_tools.runner import budget as bud

from runner_support import REPO, seed_rows

BENCHMARK = REPO / ".github/workflows/benchmark.yml"


def benchmark_job() -> dict:
    return yaml.safe_load(BENCHMARK.read_text())["jobs"]["run"]


@pytest.mark.parametrize("duration,client_s", [(3600, 4200), (1200, 1800), (None, bud.FIXED_SEQ_CLIENT_S)])
def test_client_deadline_from_the_row(duration, client_s):
    assert bud.job_budget(duration).client_s == client_s


def test_defaults_fit_the_workflow_timeout():
    b = bud.job_budget(3600)
    assert b.problems() == []
    assert b.run_s + bud.OTHER_STEPS_S <= bud.JOB_TIMEOUT_MINUTES * 60
    # the allocation outlives the work it holds the node for, not by more than the margin
    assert b.ready_s + b.client_s < b.allocation_s <= b.ready_s + b.client_s + b.stop_s + bud.ALLOCATION_MARGIN_S


def test_a_budget_over_the_workflow_timeout_is_refused_with_the_numbers():
    [problem] = bud.job_budget(7200, ready_s=6 * 3600).problems()
    assert "needs up to 551 min" in problem and "405 min" in problem and "timeout-minutes 420" in problem


def test_cancel_stop_fits_githubs_window():
    assert bud.CANCEL_GRACE_S < bud.CANCEL_STOP_S < bud.CANCEL_WINDOW_S


def test_benchmark_workflow_matches_the_budget():
    job = benchmark_job()
    assert job["timeout-minutes"] == bud.JOB_TIMEOUT_MINUTES
    steps = {s.get("id") or s.get("name"): s for s in job["steps"]}
    # the step's shell is replaced by ci-tools, so GitHub's SIGINT reaches it
    assert steps["run"]["run"].startswith("exec ci-tools runner run ")
    cleanup = steps["Stop everything this job started"]
    assert cleanup["if"] == "always()" and cleanup["run"].startswith("exec ci-tools runner cleanup --out ")
    names = [s.get("id") or s.get("name") for s in job["steps"]]
    assert names.index("run") < names.index("Stop everything this job started") < names.index("process")


def test_runner_run_refuses_a_row_over_budget_before_anything_starts(tmp_path):
    _, row = seed_rows()[0]
    path = tmp_path / "row.json"
    path.write_text(json.dumps({**row, "duration": 4 * 3600}))
    res = CliRunner().invoke(cli, ["runner", "run", "--row", str(path), "--root", str(REPO), "--dry-run"])
    assert res.exit_code == 1 and "needs up to" in str(res.exception)


def test_partition_time_limit_from_runners_yaml(tmp_path):
    import shutil

    root = tmp_path / "repo"
    shutil.copytree(REPO / "inferencex-e2e", root / "inferencex-e2e")
    shutil.copytree(REPO / "recipes", root / "recipes")
    runners = root / "inferencex-e2e/configs/runners.yaml"
    runners.write_text(runners.read_text().replace(
        "  cluster:gb300-nv:\n    available-cpu-dram-mib: 860160\n    gpus-per-node: 4\n",
        "  cluster:gb300-nv:\n    available-cpu-dram-mib: 860160\n    gpus-per-node: 4\n"
        "    slurm: {partition: gb300, account: bench, max-time-minutes: 240}\n"))
    _, row = seed_rows()[0]
    assert row["runner"] == "cluster:gb300-nv" and "max-time-minutes: 240" in runners.read_text()
    path = tmp_path / "row.json"
    path.write_text(json.dumps(row))
    argv = ["runner", "run", "--row", str(path), "--root", str(root), "--backend", "slurm", "--dry-run"]
    res = CliRunner().invoke(cli, argv)
    assert res.exit_code == 1 and "needs --time=316 min, over the 240 min runners.yaml allows" in str(res.exception)
    res = CliRunner().invoke(cli, [*argv, "--ready-timeout", "3600"])
    assert res.exit_code == 0, res.output
    assert "--time=136 --partition=gb300 --account=bench --exclusive" in res.output
