"""`runner run`'s planning from what was read (runner/run_plan.py), as a table: each case is a
`RunInputs` built in memory (no row, recipe, runners.yaml or policy file; the root and the job
directory do not exist) and what `plan_job` decides for it."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from ci_tools import names
from ci_tools.config.recipe import recipe_from_data
from ci_tools.errors import InputError, UsageError
from ci_tools.runner.run_plan import (AcceptanceCell, ImagePolicy, PlannedJob, RunInputs, RunRequest, gpu_devices,
                                      plan_job)
from ci_tools.sweep.row import parse_row

IMAGE = "example.org/engine:1@sha256:" + "a" * 64
NOWHERE = Path("/nonexistent/i38f")      # planning never looks at the file system
ROW = {"image": IMAGE, "model": "org/model", "precision": "fp4", "framework": "sglang", "runner": "b200",
       "tp": 8, "ep": 1, "dp-attn": False, "conc": 4, "scenario-type": "agentic-coding", "exp-name": "m"}
RECIPE = {"recipe-version": 1, "config-key": "k", "engine": "sglang", "image": IMAGE, "model": "org/model",
          "serve": {}, "points": {"p": {"tp": 8, "conc": 4}}}
MN_ROW = {"image": IMAGE, "model": "org/model", "precision": "fp4", "framework": "dynamo-vllm", "runner": "gb300",
          "isl": 1024, "osl": 128, "spec-decoding": "none", "exp-name": "m_1k128", "conc": [8],
          "prefill": {"num-worker": 1, "tp": 4, "ep": 1, "dp-attn": False},
          "decode": {"num-worker": 1, "tp": 8, "ep": 1, "dp-attn": False}, "kv-p2p-transfer": "nixl"}
SPECULATIVE = {**RECIPE, "serve": {"args": {"speculative-algorithm": "EAGLE"}}}
CELL = {"id": "cell-1", "model": "org/model", "engine": "sglang", "mtp": 3, "thinking": False, "serve": ROW}


def inputs(backend: str = "docker", row: dict = ROW, recipe: dict = RECIPE, **changes: Any) -> RunInputs:
    req = RunRequest(row_path=NOWHERE / "row.json", backend=backend, out=NOWHERE / "out", root=NOWHERE,
                     **changes.pop("request", {}))
    base = RunInputs(request=req, row=parse_row(row, "row.json"), recipe=recipe_from_data(recipe, "recipes/k.yaml"),
                     hardware={}, root=str(NOWHERE), out=NOWHERE / "out", port=8000, worker_port=30000)
    return replace(base, **changes)


def planned(job: PlannedJob) -> dict[str, Any]:
    """What each case looks at of a plan."""
    return {"placement": type(job.spec().placement).__name__, "stopped": job.stopped.split()[1],
            "outputs": sorted(set(job.outputs) - set(names.github_outputs("x", "o"))),
            "traces": job.traces is not None, "acceptance": job.acceptance is not None}


SINGLE = {"placement": "Local", "stopped": "processes", "outputs": [], "traces": False, "acceptance": False}

CASES: list[tuple[str, RunInputs, dict[str, Any] | tuple[type[Exception], str]]] = [
    ("a single-node row on docker", inputs(), SINGLE),
    ("on the runner host's engine (process)", inputs("process"), SINGLE),
    ("on Slurm: one sbatch allocation", inputs("slurm"), {**SINGLE, "placement": "SbatchAllocation"}),
    ("an image the trusted policy allows", inputs(images=ImagePolicy(("example.org/*",), "policy.yaml")), SINGLE),
    ("an image it does not allow", inputs(images=ImagePolicy(("other.org/*",), "policy.yaml")),
     (InputError, "not started: .*example.org/engine")),
    ("the process backend runs no image: nothing to check", inputs("process", images=ImagePolicy((), "p.yaml")),
     SINGLE),
    ("fewer GPUs than the point needs", inputs(gpus="0,1"), (InputError, "the point needs 8 GPUs but this runner "
                                                             "was given 2 [(]0,1[)]")),
    ("enough GPUs", inputs(gpus="0,1,2,3,4,5,6,7"), SINGLE),
    ("an empty GPU list", inputs(gpus=" , "), (UsageError, "given no GPU")),
    ("on Slurm the GPUs are the allocation's", inputs("slurm", gpus="0"), {**SINGLE, "placement": "SbatchAllocation"}),
    ("a budget over the runner's Slurm limit", inputs("slurm", hardware={"slurm": {"max-time-minutes": 30}}),
     (InputError, "needs --time=.* over the 30 min runners.yaml allows runner 'b200'")),
    ("a budget over the job's timeout", inputs(request={"ready_timeout": 7 * 3600.0}), (InputError, "row.json: ")),
    ("a point the recipe lacks", inputs(row={**ROW, "conc": 8}), (InputError, "conc=8")),
    ("`runner profile`", inputs(profile=(None,)),
     {**SINGLE, "outputs": ["artifact-profile", "trace-dir"], "traces": True}),
    ("`runner acceptance`", inputs(recipe=SPECULATIVE, acceptance=AcceptanceCell(CELL, None, "https://run")),
     {**SINGLE, "outputs": ["acceptance-file", "artifact-acceptance"], "acceptance": True}),
    ("a cell whose recipe does not speculate", inputs(acceptance=AcceptanceCell(CELL)),
     (InputError, "serves no speculative decoding")),
    ("a multi-node row with a single-node recipe", inputs("slurm", row=MN_ROW),
     (InputError, "recipes/k.yaml: the row is multi-node .* not a disaggregated recipe")),
    ("a multi-node row off Slurm", inputs(row=MN_ROW, recipe={**RECIPE, "mode": "disaggregated"}),
     (UsageError, "multi-node rows run on Slurm only .* got --backend docker")),
]


@pytest.mark.parametrize("inp,expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_plan_job(inp, expected):
    if isinstance(expected, tuple):
        with pytest.raises(expected[0], match=expected[1]):
            plan_job(inp)
    else:
        assert planned(plan_job(inp)) == expected


def test_the_plan_is_the_inputs_alone():
    """The same inputs plan the same job: the dry-run text, the outputs, the job the supervisor runs."""
    one, two = plan_job(inputs(gpus="0,1,2,3,4,5,6,7")), plan_job(inputs(gpus="0,1,2,3,4,5,6,7"))
    assert one.commands == two.commands and one.outputs == two.outputs and one.spec().label == two.spec().label
    assert one.spec().files[-1] == (f"{NOWHERE / 'out'}/{names.COMMANDS_TXT}", one.commands)
    assert "docker run" in one.commands and one.status_path == NOWHERE / "out" / names.STATUS_JSON


def test_what_each_mode_adds_to_the_job():
    profiled = plan_job(inputs(profile=(16,)))
    assert "/start_profile" in profiled.commands and profiled.spec().before_client and profiled.spec().after_client
    assert profiled.traces is not None and profiled.traces.trace_dir == NOWHERE / "out" / names.PROFILE_TRACE_DIR
    cell = plan_job(inputs(recipe=SPECULATIVE, acceptance=AcceptanceCell(CELL, "/data/coding.jsonl", "https://run")))
    assert "--speculative-num-steps 3 " in cell.commands and "/server_info" in cell.commands
    assert cell.acceptance is not None and (cell.acceptance.cell, cell.acceptance.run_url) == (CELL, "https://run")
    assert cell.outputs["artifact-acceptance"] == names.ACCEPTANCE_ARTIFACT_PREFIX + "cell-1"


@pytest.mark.parametrize("text,expected", [(None, None), ("0", ["0"]), (" 2, 3 ,", ["2", "3"])])
def test_gpu_devices(text, expected):
    assert gpu_devices(text) == expected

