"""Every worker and frontend command of the example repository's multi-node rows parses with the engine's
own parser, built from its pinned wheel (tests/engines/wheels-torch.txt, installed by dev.py):

- `python3 -m dynamo.sglang` workers: Dynamo 1.6.1's real `dynamo.sglang.args.parse_args` (Dynamo's own
  groups, then SGLang's ServerArgs on the rest; tests/engines/dynamo_host.py), on SGLang 0.5.21 and
  0.5.22 (the recipes' engine-versions);
- `python3 -m dynamo.frontend`: Dynamo 1.6.1's `dynamo.frontend.main.parse_args`;
- `python3 -m sglang.launch_server` PD workers and `sglang_router.launch_router --pd-disaggregation`: a
  sglang-router recipe (the frontend kind of sglang-disagg entries; the one the Slurm end-to-end test
  runs) with SGLang 0.5.21/0.5.22 and sglang-router 0.3.2.

A worker spanning several nodes is checked with the `--node-rank 0` its first task appends.
Which Dynamo release runs on which engine release: test_dynamo_compat.py.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from ci_tools.config.disagg import resolve_disagg
from ci_tools.config.load import default_master_paths, read_masters
from ci_tools.config.recipe import recipe_from_data
from ci_tools.config.load import load_recipe
from ci_tools.engines import install
from ci_tools.engines.compat import published
from ci_tools.runner.disagg import SlurmSettings, build_multinode_plan
from ci_tools.runner.disagg_slurm import fill, place
from ci_tools.runner.plan import Settings
from tests.engines.harness import dynamo_parse, failures, pinned
from tests.runner.runner_support import multinode_rows

REPO = Path(__file__).resolve().parents[2]
DYNAMO = "1.6.1"


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
        # the command the install guard (if any) runs, after `python3 -m <module>`
        argv = install.unwrap([fill(a, placement) for a in w.argv])[3:]
        workers[w.name] = argv + (["--node-rank", "0"] if w.group.nodes_per_worker > 1 else [])
    frontend = install.unwrap([fill(a, placement) for a in plan.frontend_argv])
    # after `python3 -m MODULE`, or after the version guard `python3 -c GUARD DIST VERSION MODULE`
    return workers, frontend[6:] if frontend[1] == "-c" else frontend[3:]


def test_the_example_recipes_run_dynamo_at_the_declared_release():
    for _, recipe, plan in plans():
        assert plan.point.frontend["kind"] == "dynamo"
        assert published(plan.point.frontend["version"]) == DYNAMO
        assert DYNAMO in pinned("torch")["ai-dynamo"]
        assert recipe.data["engine-versions"] == ["0.5.21", "0.5.22"]


def test_every_dynamo_command_installs_the_pinned_dynamo_first():
    """The image has no Dynamo: every worker and the frontend start through the install guard with the
    recipe's hash-pinned wheels of the release the frontend declares."""
    for _, recipe, plan in plans():
        reqs = recipe.data["frontend"]["install"]
        assert [r.split(" ")[0] for r in reqs] == [f"ai-dynamo=={DYNAMO}", f"ai-dynamo-runtime=={DYNAMO}"]
        for argv in [w.argv for w in plan.workers] + [plan.frontend_argv]:
            assert argv[:3] == ["python3", "-c", install.GUARD] and argv[5:5 + len(reqs)] == reqs
            assert install.unwrap(argv)[:3] in (["python3", "-m", "dynamo.sglang"], ["python3", "-m", "dynamo.frontend"])


def test_every_dynamo_worker_command_parses_with_dynamo_and_each_sglang_release():
    named = {f"{name}/{w}": argv for name, _, plan in plans() for w, argv in commands(plan)[0].items()}
    assert len(named) == 10                  # 3 + 3 + 2 + 2 workers over the four rows
    for version in ("0.5.21", "0.5.22"):
        results = dynamo_parse(DYNAMO, "dynamo.sglang", ("sglang", version), list(named.values()))
        bad = [f"{n}: dynamo.sglang {DYNAMO} + sglang {version} rejects `{shlex.join(named[n])}`: {r['error']}"
               for n, r in zip(named, results) if not r["ok"]]
        assert not bad, "\n".join(bad)


def test_every_dynamo_frontend_command_parses():
    named = {name: commands(plan)[1] for name, _, plan in plans()}
    results = dynamo_parse(DYNAMO, "dynamo.frontend", None, list(named.values()))
    bad = [f"{n}: rejects `{shlex.join(named[n])}`: {r['error']}" for n, r in zip(named, results) if not r["ok"]]
    assert not bad, "\n".join(bad)


def test_the_dynamo_parsers_do_reject_what_the_engine_rejects():
    results = dynamo_parse(DYNAMO, "dynamo.sglang", ("sglang", "0.5.22"), [
        ["--model-path", "/m", "--disaggregation-mode", "prefil"],            # SGLang's choice
        ["--model-path", "/m", "--discovery-backend", "zookeeper"],           # Dynamo's choice
        ["--model-path", "/m", "--swa-tail-tokens", "4096"]])                 # no such option
    assert [r["ok"] for r in results] == [False, False, False], results
    assert not dynamo_parse(DYNAMO, "dynamo.frontend", None, [["--router-mode", "sticky"]])[0]["ok"]


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
