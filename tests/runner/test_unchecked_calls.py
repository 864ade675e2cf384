"""The runner's pure builders called on input their planner refuses: `runner run` checks a row's engine,
router and backend before it builds anything, but each builder is public (the goldens, `runner selftest`
and the producers call them one by one). Past the check a missing plug-in, router release or image used
to reach the call as None (an AttributeError, or a container started from no image); each now says what
is wrong (pure)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from ci_tools import engines
from ci_tools.config.disagg import resolve_disagg
from ci_tools.config.load import load_recipe
from ci_tools.config.recipe import recipe_from_data, resolve_point
from ci_tools.errors import InputError
from ci_tools.runner import disagg
from ci_tools.runner.backends import Host, engine_version, launches, slurm_image_import, version_verdict
from ci_tools.runner.disagg import SlurmSettings, build_multinode_plan, frontend_argv, worker_command
from ci_tools.runner.plan import Settings, build_plan

ROOT = Path(__file__).resolve().parents[2]
RECIPE = "recipes/mi355x-dsv41flash-fp4-atom/fixed-seq.yaml"
IMAGE = "example.org/sglang:1@sha256:" + "a" * 64


def _single(backend: str):
    recipe = load_recipe(ROOT / RECIPE, RECIPE)
    point = resolve_point(recipe, 8, 8, True, 128)
    row = {"tp": 8, "ep": 8, "dp-attn": True, "conc": 128, "image": recipe.image, "model": recipe.model,
           "isl": 8192, "osl": 1024, "runner": "mi355x"}
    return build_plan(row, point, Settings(backend=backend), "/job")


def _multinode():
    data = {"recipe-version": 1, "config-key": "k", "mode": "disaggregated", "engine": "sglang", "image": IMAGE,
            "model": "org/model", "kv-transfer": "nixl",
            "frontend": {"kind": "sglang-router", "name": "sglang-router", "version": "0.3.2"},
            "points": {"1p1d": {"prefill": {"num-worker": 1, "tp": 4, "nodes": 1},
                                "decode": {"num-worker": 1, "tp": 4, "nodes": 1}, "conc": [8]}}}
    row = {"image": IMAGE, "model": "org/model", "precision": "fp4", "framework": "sglang-disagg", "runner": "gb300",
           "isl": 1024, "osl": 128, "exp-name": "m", "conc": [8], "kv-p2p-transfer": "nixl",
           "prefill": {"num-worker": 1, "tp": 4}, "decode": {"num-worker": 1, "tp": 4}}
    point = resolve_disagg(recipe_from_data(data), row["prefill"], row["decode"], row["conc"])
    return build_multinode_plan(row, point, Settings(), "/job", 4, SlurmSettings(queue_timeout_s=600))


def _unknown_engine(plan):
    return replace(plan, point=replace(plan.point, engine="nope"))


CASES = {
    "a host-engine plan wrapped for docker": (
        lambda: launches(_single("process"), "docker", Settings(), Host(label="j")),
        ValueError, "planned for the host's engine (backend process), so it has no image for backend docker"),
    "a host-engine plan wrapped for slurm": (
        lambda: launches(_single("process"), "slurm", Settings(), Host(label="j")),
        ValueError, "no image for backend slurm"),
    "the image import of a host-engine plan": (
        lambda: slurm_image_import(_single("process"), Settings(), Host(label="j")),
        ValueError, "no image for backend slurm"),
    "the version command of an engine without a plug-in": (
        lambda: engine_version(_unknown_engine(_single("docker")), "docker", Settings(), Host(label="j")),
        InputError, f"{RECIPE}: engine 'nope' has no ci-tools plug-in (known: sglang, vllm, trtllm, atom)"),
    "the version verdict of an engine without a plug-in": (
        lambda: version_verdict(_unknown_engine(_single("docker")), "docker", "0.1.0\n"),
        InputError, "engine 'nope' has no ci-tools plug-in"),
    "a multi-node worker of an engine without a plug-in": (
        lambda: worker_command(replace(_multinode().point, engine="nope"), _multinode().workers[0], "m", {}, 4, "ns"),
        InputError, "engine 'nope' has no ci-tools plug-in"),
    "the concurrencies of a multi-node row without `conc`": (
        lambda: disagg._concs({"prefill": {}, "decode": {}}), InputError, "the row has no `conc`"),
    "a router frontend of a release ci-tools does not know": (
        lambda: frontend_argv(replace(_multinode().point, frontend={"kind": "sglang-router", "name": "sglang-router",
                                                                     "version": "9.9.9"}), 8000, [], "ns"),
        InputError, "frontend sglang-router 9.9.9 is not a router release ci-tools knows (known: sglang-router "
                    "0.3.2"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_an_unchecked_input_is_named_not_a_none_reaching_a_call(name):
    call, error, says = CASES[name]
    with pytest.raises(error) as caught:
        call()
    assert says in str(caught.value), str(caught.value)


def test_the_checked_inputs_still_build():
    # the same builders on what the planner accepts: the cases above fail on their input, not on the fixture
    assert launches(_single("docker"), "docker", Settings(), Host(label="j"))[0].argv[0] == "docker"
    assert engine_version(_single("docker"), "docker", Settings(), Host(label="j")).argv
    plan = _multinode()
    assert frontend_argv(plan.point, 8000, plan.workers, "ns")[:3] == ["python3", "-c", engines.routers.GUARD]
    assert engines.require("sglang", "r.yaml") is engines.engine("sglang")
