"""Plan rules that the seed rows do not cover: fixed-sequence rows, short AgentX runs, GPU budget."""

from __future__ import annotations

import pytest

from ci_tools.config.recipe import recipe_from_data, resolve_point
from ci_tools.errors import InputError
from ci_tools.runner.backends import launches
from ci_tools.runner.plan import Settings, build_plan, image_for_slurm

IMAGE = "example.org/eng:1@sha256:" + "a" * 64
RECIPE = recipe_from_data({"image": IMAGE, "engine": "sglang", "synthetic-acceptance": 2.5,
                           "serve": {"args": {"x": 1}}, "points": {"tp8": {"tp": 8, "conc": 4}}})
ROW = {"image": IMAGE, "model": "org/m", "tp": 8, "ep": 1, "conc": 4, "precision": "fp8", "framework": "sglang",
       "exp-name": "m_1k1k", "runner": "b300"}


def plan(row, **settings):
    pt = resolve_point(RECIPE, row["tp"], row.get("ep", 1), row.get("dp-attn", False), row["conc"])
    return build_plan(row, pt, Settings(**settings), "out")


def test_fixed_sequence_row_uses_isl_osl_and_request_count():
    p = plan({**ROW, "isl": 1024, "osl": 1024})
    client = p.proc("client").argv
    assert p.scenario == "fixed-seq-len" and p.duration_s is None
    for pair in (["--isl", "1024"], ["--osl", "1024"], ["--request-count", "40"], ["--warmup-request-count", "8"]):
        i = client.index(pair[0])
        assert client[i:i + 2] == pair
    assert "--benchmark-duration" not in client and "--scenario" not in client


def test_fixed_sequence_row_needs_lengths():
    with pytest.raises(InputError, match="need `isl` and `osl`"):
        plan(ROW)


def test_short_agentx_run_needs_unsafe_override():
    p = plan({**ROW, "scenario-type": "agentic-coding", "duration": 600})
    assert "--unsafe-override" in p.proc("client").argv
    assert "--unsafe-override" not in plan({**ROW, "scenario-type": "agentic-coding"}).proc("client").argv


def test_gpu_budget_of_the_runner():
    with pytest.raises(InputError, match="needs 8 GPUs; runner 'b300' has 4 per node"):
        plan({**ROW, "isl": 1, "osl": 1}, gpus_per_node=4)


def test_all_problems_reported_together():
    with pytest.raises(InputError) as exc:
        plan({**ROW, "image": "other", "pp": 2, "kv-offloading": "dram"})
    text = str(exc.value)
    for part in ("`pp: 2`", "the row offloads KV (dram", "fixed-sequence rows need", "differs from the recipe's"):
        assert part in text


def test_process_backend_runs_the_plan_unchanged():
    p = plan({**ROW, "isl": 1, "osl": 1})
    server = launches(p, "process", Settings())[0]
    assert server.argv[:3] == ["python3", "-m", "sglang.launch_server"] and server.stop == []
    assert server.env["SGLANG_SIMULATE_ACC_LEN"] == "2.5"


@pytest.mark.parametrize("image,expected", [
    ("a/b:tag@sha256:" + "0" * 64, "a/b@sha256:" + "0" * 64),
    ("reg:5000/a/b:tag@sha256:" + "0" * 64, "reg:5000/a/b@sha256:" + "0" * 64),
    ("reg:5000/a/b@sha256:" + "0" * 64, "reg:5000/a/b@sha256:" + "0" * 64),
    ("a/b:tag", "a/b:tag"),
])
def test_image_for_slurm(image, expected):
    assert image_for_slurm(image) == expected
