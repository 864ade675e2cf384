"""Every worker and frontend command of the example repository's multi-node rows parses with the engine's
own parser, built from its pinned wheel (tests/engines/wheels.txt, installed by dev.py):

- `python3 -m dynamo.sglang` workers: Dynamo 1.3.0.post1's own argument groups, then SGLang's ServerArgs
  on the rest, as `dynamo.sglang.args.parse_args` does (tests/engines/dynamo_host.py), with SGLang 0.5.21
  and 0.5.22 (the recipes' engine-versions);
- `python3 -m dynamo.frontend`: Dynamo 1.3.0.post1's FrontendArgGroup;
- `python3 -m sglang.launch_server` PD workers and `sglang_router.launch_router --pd-disaggregation`: a
  sglang-router recipe (the frontend kind of sglang-disagg entries; the one the Slurm end-to-end test
  runs) with SGLang 0.5.21/0.5.22 and sglang-router 0.3.2.

The master declares dynamo-router "1.3.0"; PyPI publishes it as 1.3.0.post1 (no plain 1.3.0 wheel),
so that is the parser checked. A worker spanning several nodes is checked with the `--node-rank 0`
its first task appends.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path

import pytest

from ci_tools.config.disagg import resolve_disagg
from ci_tools.config.load import default_master_paths, read_masters
from ci_tools.config.recipe import recipe_from_data
from ci_tools.config.load import load_recipe
from ci_tools.runner.disagg import SlurmSettings, build_multinode_plan, fill, place
from ci_tools.runner.plan import Settings
from tests.engines.harness import failures, pinned, venv
from tests.runner.runner_support import multinode_rows

REPO = Path(__file__).resolve().parents[2]
DYNAMO_HOST = Path(__file__).with_name("dynamo_host.py")
DYNAMO = "1.3.0.post1"
DECLARED = {"1.3.0": DYNAMO}     # master router version -> the published wheel of that release


def _wheel(dist: str, version: str) -> Path:
    path = venv() / "wheels" / f"{dist}-{version}"
    if version not in pinned().get(dist, ()):
        pytest.fail(f"{dist}=={version} is not pinned in tests/engines/wheels.txt")
    if not (path / ".complete").exists():
        pytest.fail(f"the {dist} {version} wheel is not installed in {path}: run `python3 dev.py test`")
    return path


def dynamo_parse(parser: str, sglang: str | None, argvs: list[list[str]]) -> list[dict]:
    paths = [_wheel("ai-dynamo", DYNAMO), _wheel("ai-dynamo-runtime", DYNAMO)]
    if sglang:
        paths.append(_wheel("sglang", sglang))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env["PYTHONPATH"] = os.pathsep.join(str(p) for p in paths)
    res = subprocess.run([str(venv() / "bin" / "python"), str(DYNAMO_HOST), parser], env=env, text=True,
                         input=json.dumps({"argvs": argvs}) + "\n", capture_output=True, timeout=600)
    lines = res.stdout.splitlines()
    if res.returncode != 0 or len(lines) < 2:
        pytest.fail(f"could not build the {parser} parser from its wheels:\n{res.stderr[-3000:]}")
    info = json.loads(lines[0])
    assert info["version"] == DYNAMO
    return json.loads(lines[1])["results"]


def plans():
    entries = read_masters(default_master_paths(REPO), REPO).entries
    for name, row in multinode_rows():
        rel = entries[row["config-key"]]["recipe"]
        recipe = load_recipe(REPO / rel, rel)
        point = resolve_disagg(recipe, row["prefill"], row["decode"], row["conc"])
        yield name, recipe, build_multinode_plan(row, point, Settings(), "/out", 4, SlurmSettings())


def commands(plan) -> tuple[dict[str, list[str]], list[str]]:
    placement = place(plan, [f"node{i}" for i in range(plan.nodes)])
    workers = {}
    for w in plan.workers:
        argv = [fill(a, placement) for a in w.argv][3:]          # after `python3 -m <module>`
        workers[w.name] = argv + (["--node-rank", "0"] if w.group.nodes_per_worker > 1 else [])
    frontend = [fill(a, placement) for a in plan.frontend_argv]
    # after `python3 -m MODULE`, or after the version guard `python3 -c GUARD DIST VERSION MODULE`
    return workers, frontend[6:] if frontend[1] == "-c" else frontend[3:]


def test_the_example_recipes_run_dynamo_at_the_declared_release():
    for _, recipe, plan in plans():
        assert plan.point.frontend["kind"] == "dynamo"
        assert DECLARED[plan.point.frontend["version"]] in pinned()["ai-dynamo"]
        assert recipe.data["engine-versions"] == ["0.5.21", "0.5.22"]


def test_every_dynamo_worker_command_parses_with_dynamo_and_each_sglang_release():
    named = {f"{name}/{w}": argv for name, _, plan in plans() for w, argv in commands(plan)[0].items()}
    assert len(named) == 10                  # 3 + 3 + 2 + 2 workers over the four rows
    for version in ("0.5.21", "0.5.22"):
        results = dynamo_parse("dynamo.sglang", version, list(named.values()))
        bad = [f"{n}: dynamo.sglang {DYNAMO} + sglang {version} rejects `{shlex.join(named[n])}`: {r['error']}"
               for n, r in zip(named, results) if not r["ok"]]
        assert not bad, "\n".join(bad)


def test_every_dynamo_frontend_command_parses():
    named = {name: commands(plan)[1] for name, _, plan in plans()}
    results = dynamo_parse("dynamo.frontend", None, list(named.values()))
    bad = [f"{n}: rejects `{shlex.join(named[n])}`: {r['error']}" for n, r in zip(named, results) if not r["ok"]]
    assert not bad, "\n".join(bad)


def test_the_dynamo_parsers_do_reject_what_the_engine_rejects():
    results = dynamo_parse("dynamo.sglang", "0.5.22", [
        ["--model-path", "/m", "--disaggregation-mode", "prefil"],            # SGLang's choice
        ["--model-path", "/m", "--discovery-backend", "zookeeper"],           # Dynamo's choice
        ["--model-path", "/m", "--swa-tail-tokens", "4096"]])                 # no such option
    assert [r["ok"] for r in results] == [False, False, False], results
    assert not dynamo_parse("dynamo.frontend", None, [["--router-mode", "sticky"]])[0]["ok"]


SGLANG_ROUTER_RECIPE = {
    "recipe-version": 1, "config-key": "k", "mode": "disaggregated", "engine": "sglang",
    "engine-versions": ["0.5.21", "0.5.22"], "image": "x@sha256:" + "0" * 64, "model": "org/m",
    "kv-transfer": "mooncake",
    "frontend": {"kind": "sglang-router", "name": "sglang-router", "version": "0.3.2",
                 "args": {"policy": "cache_aware", "prefill-policy": "round_robin"}},
    "serve": {"args": {"trust-remote-code": True, "mem-fraction-static": 0.8}},
    "kv-offload": {"backend": "hicache", "medium": "dram", "args": {"enable-hierarchical-cache": True}},
    "points": {"1p2d": {"prefill": {"num-worker": 1, "tp": 4, "ep": 4, "dp-attn": True, "nodes": 1},
                        "decode": {"num-worker": 2, "tp": 8, "ep": 8, "dp-attn": True, "nodes": 2}, "conc": [8]}},
}


def test_sglang_router_pd_commands_parse_with_sglang_and_the_router():
    row = {"image": "x@sha256:" + "0" * 64, "model": "org/m", "conc": [8], "isl": 1024, "osl": 128,
           "total-cpu-dram-gb": 400, "prefill": {"num-worker": 1, "tp": 4, "ep": 4, "dp-attn": True},
           "decode": {"num-worker": 2, "tp": 8, "ep": 8, "dp-attn": True}}
    recipe = recipe_from_data(SGLANG_ROUTER_RECIPE)
    point = resolve_disagg(recipe, row["prefill"], row["decode"], row["conc"])
    plan = build_multinode_plan(row, point, Settings(), "/out", 4, SlurmSettings())
    workers, router = commands(plan)
    assert plan.workers[0].argv[:3] == ["python3", "-m", "sglang.launch_server"]
    # behind the router no worker runs its own PD warmup (srt-slurm's choice); SGLang's parser checks it below
    assert all("--skip-server-warmup" in argv for argv in workers.values()), workers
    assert plan.frontend_argv[3:6] == ["sglang-router", "0.3.2", "sglang_router.launch_router"]   # guarded
    for version in ("0.5.21", "0.5.22"):
        assert not failures("sglang", version, workers)
    assert "--pd-disaggregation" in router and router.count("--decode") == 2
    assert not failures("sglang-router", "0.3.2", {"pd-router": router})
