"""A real job of a real engine on a real GPU, as the project recorded it (tests/data/h100/fixed-c16/): vLLM 0.26.0
serving a random-weight 0.5 B Llama on one H100, driven by `ci-tools runner run --backend process` and AIPerf
0.13.0, 1024/1024 tokens at concurrency 16, with the runner's own nvidia-smi samples. `results process` must
judge it as it did on that machine, and agree with AIPerf's own summary of it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ci_tools.results.process import process_dir
from ci_tools.runner import nodecheck, telemetry
from tests.conftest import H100_JOB


@pytest.fixture(scope="module")
def result(tmp_path_factory) -> dict:
    d = tmp_path_factory.mktemp("h100") / "job"
    shutil.copytree(H100_JOB, d)
    (d / "result.json").unlink()
    return process_dir(d)


def test_the_recorded_job_is_valid_with_the_figures_of_that_run(result):
    assert result["valid"] is True, result["failures"]
    assert result["point"]["name"] == "tp1-c16" and result["point"]["scenario"] == "fixed-seq-len"
    assert (result["requests"]["successful"], result["requests"]["errors"], result["gpus"]) == (160, 0, 1)
    h = result["headline"]
    # the figures the run's notes give: tok/s/GPU, P90 interactivity (the slow tail), TTFT p90, J per output token
    assert round(h["tok_s_gpu"], 2) == 12582.71
    assert round(h["intvty_p90"], 2) == 368.53 and round(h["ttft_p90_s"] * 1000, 1) == 127.2
    assert round(h["j_per_output_token"], 4) == 0.0405 and round(h["j_per_total_token"], 4) == 0.0202


def test_it_agrees_with_aiperfs_own_summary(result):
    agg = json.loads((H100_JOB / "aiperf_artifacts" / "profile_export_aiperf.json").read_text())
    assert result["requests"]["successful"] == agg["request_count"]["avg"]
    assert result["headline"]["intvty_p90"] == pytest.approx(1000 / agg["inter_token_latency"]["p90"], rel=1e-9)
    # the time bases differ (ci-tools: the records' span; AIPerf: its benchmark_duration), by under 0.1 %
    assert result["headline"]["tok_s_gpu"] == pytest.approx(agg["total_token_throughput"]["avg"], rel=1e-3)


def test_results_process_today_gives_what_it_gave_on_that_machine(result):
    """result.json as `results process` wrote it on the H100 machine: the same headline today."""
    then = json.loads((H100_JOB / "result.json").read_text())
    assert {k: result["headline"][k] for k in then["headline"]} == then["headline"]


def test_the_h100_telemetry_of_the_job(result):
    samples, problems = telemetry.parse_csv((H100_JOB / "gpu_telemetry.csv").read_text())
    assert problems == [] and {s["name"] for s in samples} == {"NVIDIA H100 80GB HBM3"}
    assert {s["power_limit_w"] for s in samples} == {700.0} and samples[0]["mem_total_mib"] == 81559
    tel = result["gpu_telemetry"]
    [gpu] = tel["gpus"]
    # a 0.5 B model at c16 is far from the H100's 700 W: never power-capped, the SM clock at its maximum
    assert tel["power_capped"] is False and gpu["sm_clock_mhz"]["min"] == gpu["sm_clock_mhz"]["max"] == 1980
    assert gpu["coverage"] == 1.0 and 240 < result["energy"]["avg_power_w"] < 270
    facts, gpus = nodecheck.parse((H100_JOB / "node_check.txt").read_text())
    assert facts["model"] == "ok" and [g["name"] for g in gpus] == ["NVIDIA H100 80GB HBM3"]
