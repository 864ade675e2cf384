"""Canary honesty downstream of the plan: the job, its files and the results say which profile
measured a point, and a smoke canary never replaces (or is mistaken for) the point's own run."""

from __future__ import annotations

import json
from dataclasses import asdict

from ci_tools.config.recipe import resolve_point
from ci_tools.config.load import load_recipe
from ci_tools.results.collect import collect
from ci_tools.results.process import RESULT_SCHEMA, point_from_job
from ci_tools import names
from ci_tools.runner.plan import Settings, build_plan

from runner_support import REPO, seed_rows

RECIPE = "recipes/gb300-dsv41flash-fp4-sglang/agentic.yaml"


def job(row: dict) -> dict:
    recipe = load_recipe(REPO / RECIPE, RECIPE)
    point = resolve_point(recipe, row["tp"], row["ep"], row["dp-attn"], row["conc"])
    return build_plan(row, point, Settings(), "out").job_json()


def test_job_json_names_the_profile_and_the_canary_kind():
    _, row = seed_rows()[0]
    full = job(row)
    smoke = job({**row, "agentx-fast": True, "duration": 1200, "canary": "smoke"})
    assert (full["point"]["profile"], full["point"]["canary"]) == ("agentx", None)
    assert (smoke["point"]["profile"], smoke["point"]["canary"]) == ("agentx-fast", "smoke")
    # the two jobs of one sweep upload under different names
    assert smoke["result-filename"] == full["result-filename"] + names.CANARY_SMOKE_SUFFIX
    assert names.github_outputs(smoke["result-filename"], "o") != names.github_outputs(full["result-filename"], "o")
    info = point_from_job(smoke)
    assert (info.profile, info.canary) == ("agentx-fast", "smoke")
    assert {"profile", "canary"} <= set(asdict(info))        # result.json's `point` is asdict(point)


def _result(tmp, name: str, canary: str | None, profile: str) -> object:
    path = tmp / name / names.RESULT_JSON
    path.parent.mkdir()
    path.write_text(json.dumps({"schema": RESULT_SCHEMA, "valid": True, "point": {
        "name": "tp4-c1", "config-key": "k", "tp": 4, "conc": 1, "result-filename": name,
        "profile": profile, "canary": canary}}))
    return path


def test_collect_keeps_a_smoke_canary_out_of_the_results_and_says_so(tmp_path):
    files = [_result(tmp_path, "p", None, "agentx"), _result(tmp_path, "p_canary-smoke", "smoke", "agentx-fast")]
    data = collect(files)
    assert [r["point"]["profile"] for r in data["results"]] == ["agentx"]
    assert [c["point"]["canary"] for c in data["canaries"]] == ["smoke"]
    assert any("canary smoke run" in n for n in data["notes"])
