"""Disaggregated points: recipe resolution, the multi-node plan, placement and Slurm commands (pure)."""

from __future__ import annotations

import json
import math

import pytest

from ci_tools.config.disagg import GroupKey, resolve_disagg
from ci_tools.config.recipe import recipe_from_data
from ci_tools.errors import InputError
from ci_tools.runner.disagg import SlurmSettings, build_multinode_plan
from ci_tools.runner.disagg_slurm import alloc_argv, place, ready_checks, render_dry_run, worker_steps
from ci_tools.runner.ready import HttpReady, ModelListed, WorkersHealthy, WorkersRegistered
from ci_tools.runner.plan import Settings

IMAGE = "example.org/sglang:1@sha256:" + "a" * 64


def recipe(kind: str = "sglang-router", **extra) -> dict:
    data = {
        "recipe-version": 1, "config-key": "k", "mode": "disaggregated", "engine": "sglang", "image": IMAGE,
        "model": "org/model", "kv-transfer": "nixl",
        "frontend": {"kind": kind, "name": "sglang-router", "version": "0.3.2", "args": {"policy": "round_robin"}},
        "serve": {"env": {"A": "1"}, "args": {"trust-remote-code": True, "mem-fraction-static": 0.8}},
        "prefill": {"args": {"chunked-prefill-size": 8192}},
        "decode": {"env": {"A": None, "B": "2"}, "args": {"mem-fraction-static": 0.9}},
        "points": {
            "1p2d": {"prefill": {"num-worker": 1, "tp": 4, "ep": 4, "dp-attn": True, "nodes": 1},
                     "decode": {"num-worker": 2, "tp": 4, "nodes": 1, "args": {"trust-remote-code": False}},
                     "conc": [8, 16]},
            "1p1d-tp8": {"prefill": {"num-worker": 1, "tp": 4, "nodes": 1},
                         "decode": {"num-worker": 1, "tp": 8, "nodes": 2}, "conc": [4]},
        },
    }
    data.update(extra)
    return data


def row(**extra) -> dict:
    r = {"image": IMAGE, "model": "org/model", "precision": "fp4", "framework": "sglang-disagg", "runner": "gb300",
         "isl": 1024, "osl": 128, "spec-decoding": "none", "exp-name": "m_1k128", "conc": [8, 16],
         "prefill": {"num-worker": 1, "tp": 4, "ep": 4, "dp-attn": True, "pp": 1},
         "decode": {"num-worker": 2, "tp": 4, "ep": 1, "dp-attn": False}, "kv-p2p-transfer": "nixl",
         "router": {"name": "sglang-router", "version": "0.3.2"}}
    r.update(extra)
    return r


def plan_of(r: dict | None = None, data: dict | None = None, **settings):
    r = r or row()
    pt = resolve_disagg(recipe_from_data(data or recipe()), r["prefill"], r["decode"], r["conc"])
    return build_multinode_plan(r, pt, Settings(**settings), "/job", 4, SlurmSettings(queue_timeout_s=600))


def test_resolution_merges_serve_side_and_point():
    pt = plan_of().point
    assert pt.prefill.args == {"trust-remote-code": True, "mem-fraction-static": 0.8, "chunked-prefill-size": 8192}
    assert pt.decode.args == {"mem-fraction-static": 0.9}      # false drops the base flag
    assert pt.decode.env == {"B": "2"}                          # null drops the base variable
    assert pt.prefill.key == GroupKey(1, 4, 4, True) and pt.decode.key == GroupKey(2, 4, 1, False)
    assert pt.gpus == 12 and pt.nodes == 3


def test_gpus_count_every_worker_and_topology_is_recorded():
    plan = plan_of()
    p = plan.point_for(plan.clients[0], {"prefill-0": ["a"]})
    assert p["gpus"] == 12 and p["conc"] == 8
    assert p["topology"]["prefill"] == {"num-worker": 1, "tp": 4, "ep": 4, "dp-attn": True, "nodes-per-worker": 1,
                                        "gpus": 4}
    assert p["topology"]["decode"]["gpus"] == 8 and p["topology"]["placement"] == {"prefill-0": ["a"]}


def test_placement_gives_each_worker_its_own_nodes_in_order():
    r = row(conc=[4], prefill={"num-worker": 1, "tp": 4}, decode={"num-worker": 1, "tp": 8})
    plan = plan_of(r)
    assert plan.nodes == 3
    placement = place(plan, ["n1", "n2", "n3", "n4"])
    assert placement == {"prefill-0": ["n1"], "decode-0": ["n2", "n3"], "frontend": ["n1"]}
    with pytest.raises(InputError, match="has 2 node"):
        place(plan, ["n1", "n2"])


def test_worker_steps_are_placed_and_multi_node_workers_get_a_rank_per_task():
    r = row(conc=[4], prefill={"num-worker": 1, "tp": 4}, decode={"num-worker": 1, "tp": 8})
    plan = plan_of(r)
    steps = worker_steps(plan, "77", place(plan, ["n1", "n2", "n3"]), "/job")
    names = [s.name for s in steps]
    assert names == ["prefill-0", "decode-0", "frontend"]
    pre, dec, fe = steps
    assert "--nodelist=n1" in pre.argv and "--nodes=1" in pre.argv and "--jobid=77" in pre.argv
    assert "--nodelist=n2,n3" in dec.argv and "--ntasks-per-node=1" in dec.argv and "--gpus-per-node=4" in dec.argv
    i = dec.argv.index("bash")
    assert dec.argv[i:i + 4] == ["bash", "-c", 'exec "$@" --node-rank "$SLURM_NODEID"', "bash"]
    engine = dec.argv[i + 4:]
    assert engine[:3] == ["python3", "-m", "sglang.launch_server"]
    assert engine[engine.index("--dist-init-addr") + 1] == "n2:30012"
    assert engine[engine.index("--nnodes") + 1] == "2"
    assert "--overlap" in fe.argv and "--nodelist=n1" in fe.argv
    assert fe.argv[fe.argv.index("--prefill") + 1:fe.argv.index("--prefill") + 3] == ["http://n1:30000", "30001"]
    assert fe.argv[fe.argv.index("--decode") + 1] == "http://n2:30010"
    # every step runs the job's one import of the image (import_step), not the registry reference
    sqsh = "/mnt/squash/example.org+sglang+sha256+" + "a" * 64 + ".sqsh"
    assert all(f"--container-image={sqsh}" in s.argv for s in steps)


def test_disaggregation_flags_come_from_the_role_and_kv_transfer():
    plan = plan_of()
    pre, dec0, dec1 = plan.workers
    assert pre.argv[pre.argv.index("--disaggregation-mode") + 1] == "prefill"
    assert pre.argv[pre.argv.index("--disaggregation-transfer-backend") + 1] == "nixl"
    assert pre.argv[pre.argv.index("--disaggregation-bootstrap-port") + 1] == "30001"
    assert "--disaggregation-bootstrap-port" not in dec0.argv
    assert [w.port for w in plan.workers] == [30000, 30010, 30020]       # distinct per worker
    assert "--enable-dp-attention" in pre.argv and "--enable-dp-attention" not in dec1.argv


def test_readiness_is_every_worker_then_the_frontend_then_registration():
    plan = plan_of()
    placement = place(plan, ["a", "b", "c"])
    checks = ready_checks(plan, placement, {"a": "10.0.0.1", "b": "10.0.0.2"})
    assert checks == [
        HttpReady("http://10.0.0.1:30000/health", "prefill-0"), HttpReady("http://10.0.0.2:30010/health", "decode-0"),
        HttpReady("http://c:30020/health", "decode-1"), HttpReady("http://10.0.0.1:8000/health", "frontend"),
        WorkersRegistered("http://10.0.0.1:8000/workers", "frontend", prefill=1, decode=2)]


def test_worker_urls_use_the_node_address_slurm_reports():
    plan = plan_of()
    placement = place(plan, ["n1", "n2", "n3"])
    fe = worker_steps(plan, "5", placement, "/job", {"n1": "127.0.0.1", "n2": "127.0.0.1", "n3": "127.0.0.1"})[-1]
    assert "--nodelist=n1" in fe.argv                     # placed by name
    assert "http://127.0.0.1:30010" in fe.argv and "http://127.0.0.1:30020" in fe.argv   # reached by address


W = {"worker_type": "prefill", "is_healthy": True}
D = {"worker_type": "decode", "is_healthy": True}


def workers(prefill: int, decode: int) -> WorkersRegistered:
    return WorkersRegistered("u", prefill=prefill, decode=decode)


@pytest.mark.parametrize("check,body,ok", [
    (HttpReady("u"), "anything", True),
    (workers(1, 2), json.dumps({"workers": [W, D, D]}), True),
    (workers(1, 2), json.dumps({"workers": [W, D]}), False),                        # one decode missing
    (workers(1, 2), json.dumps({"workers": [W, D, {**D, "is_healthy": False}]}), False),
    (workers(1, 1), json.dumps({"workers": [D, D]}), False),
    (workers(1, 1), "<html>", False),
    (workers(1, 1), json.dumps([W, D]), False),
    (WorkersHealthy("u", count=2), json.dumps({"workers": [D, W]}), True),
    (WorkersHealthy("u", count=2), json.dumps({"workers": [D, {**W, "is_healthy": False}]}), False),
    (ModelListed("u", model="org/m"), json.dumps({"data": [{"id": "org/m"}]}), True),
    (ModelListed("u", model="org/m"), json.dumps({"data": []}), False),                  # nothing registered
    (ModelListed("u", model="org/m"), json.dumps({"data": [{"id": "unknown"}]}), False),
])
def test_registration_table(check, body, ok):
    assert check.accepts(body) is ok


def dynamo(version: str) -> dict:
    """A Dynamo frontend of a PyPI release, its wheels pinned (the image has no Dynamo)."""
    from ci_tools.engines.compat import published

    pins = [f"{d}=={published(version)} --hash=sha256:{'1' * 64}" for d in ("ai-dynamo", "ai-dynamo-runtime")]
    return {"kind": "dynamo", "name": "dynamo-router", "version": version, "install": pins}


def test_a_dynamo_release_whose_worker_does_not_import_on_the_engine_is_refused():
    """ci_tools/engines/compat.py: Dynamo 1.3's SGLang worker fails to import on SGLang >= 0.5.21."""
    data = recipe("dynamo", frontend=dynamo("1.3.0"), **{"engine-versions": ["0.5.22"]})
    with pytest.raises(InputError, match="fails to import.*declare Dynamo 1.6.1"):
        plan_of(row(router={"name": "dynamo-router", "version": "1.3.0"}), data)
    ok = recipe("dynamo", frontend=dynamo("1.6.1"), **{"engine-versions": ["0.5.22"]})
    assert plan_of(row(router={"name": "dynamo-router", "version": "1.6.1"}), ok).workers


@pytest.mark.parametrize("frontend,says", [
    ({"kind": "dynamo", "name": "dynamo-router", "version": "1.6.1"}, "is not in the image"),
    ({"kind": "dynamo", "name": "dynamo-router", "version": "1.3.0.dev20260718"}, "is a nightly dev build"),
    ({"kind": "dynamo", "name": "dynamo-router", "version": "92f5b3b8d7dd5ab9179d4b1034bd2c1c0803693e"},
     "is a git commit of ai-dynamo/dynamo")])
def test_a_dynamo_release_no_runner_can_have_is_refused_at_plan(frontend, says):
    """Issue 40: a Dynamo release a runner cannot install as it is published is refused before GPUs are booked."""
    data = recipe("dynamo", frontend=frontend)
    with pytest.raises(InputError, match=says):
        plan_of(row(router={"name": "dynamo-router", "version": frontend["version"]}), data)


def test_dynamo_workers_register_through_the_shared_job_directory():
    data = recipe("dynamo", frontend=dynamo("1.3.0"))
    plan = plan_of(row(router={"name": "dynamo-router", "version": "1.3.0"}), data)
    from ci_tools.engines.install import unwrap

    w = plan.workers[0]
    assert unwrap(w.argv)[:3] == ["python3", "-m", "dynamo.sglang"]     # after its pinned wheels are installed
    assert w.env["DYN_FILE_KV"] == "/job/dynamo_store" and w.env["DYN_SYSTEM_PORT"] == "30003"
    assert unwrap(plan.frontend_argv)[:3] == ["python3", "-m", "dynamo.frontend"]
    checks = ready_checks(plan, place(plan, ["a", "b", "c"]))
    assert checks[0].url == "http://a:30003/health"
    assert checks[-1] == ModelListed("http://a:8000/v1/models", "frontend", model="org/model")


def test_one_allocation_exclusive_and_time_bounded():
    from ci_tools.runner import budget as bud
    from ci_tools.runner.disagg import FIXED_SEQ_CLIENT_S

    plan = plan_of()
    argv = alloc_argv(plan)
    assert argv[:2] == ["salloc", "--no-shell"] and "--exclusive" in argv and "--nodes=3" in argv
    # readiness + one client budget per concurrency + the stop, plus the allocation margin (budget.py)
    want = 4 * 3600 + 2 * FIXED_SEQ_CLIENT_S + plan.budget.stop_s + bud.ALLOCATION_MARGIN_S
    assert f"--time={math.ceil(want / 60)}" in argv and "--immediate=600" in argv
    assert plan.budget.run_s + bud.OTHER_STEPS_S <= bud.JOB_TIMEOUT_MINUTES * 60      # fits benchmark.yml


@pytest.mark.parametrize("exclusive,says", [(True, "# allocation (exclusive,"), (False, "# allocation (shared nodes,")])
def test_the_dry_run_says_whether_the_nodes_are_held(exclusive, says):
    r = row()
    pt = resolve_disagg(recipe_from_data(recipe()), r["prefill"], r["decode"], r["conc"])
    plan = build_multinode_plan(r, pt, Settings(), "/job", 4, SlurmSettings(exclusive=exclusive))
    assert says in render_dry_run(plan, "/job")
    assert ("--exclusive" in alloc_argv(plan)) is exclusive


def test_the_router_frontend_metrics_port_is_the_jobs_own():
    # the routers default to 29000: two jobs' routers on one shared node would collide there
    argv = plan_of(port=8100).frontend_argv
    assert argv[argv.index("--prometheus-port") + 1] == "8101"
    data = recipe()
    data["frontend"]["args"]["prometheus-port"] = 9100          # a recipe's own value wins, given once
    argv = plan_of(data=data).frontend_argv
    assert argv.count("--prometheus-port") == 1 and argv[argv.index("--prometheus-port") + 1] == "9100"


def test_the_allocation_carries_the_job_label_and_the_runner():
    r = row()
    pt = resolve_disagg(recipe_from_data(recipe()), r["prefill"], r["decode"], r["conc"])
    plan = build_multinode_plan(r, pt, Settings(), "/job", 4, SlurmSettings(runner="gb300-nv_1"))
    argv = alloc_argv(plan)
    assert plan.slurm.label.startswith("cit-") and f"--job-name={plan.slurm.label}" in argv
    assert "--comment=ci-tools.runner=gb300-nv_1" in argv
    assert plan.job_json()["label"] == plan.slurm.label
    other = build_multinode_plan(r, pt, Settings(), "/other-job", 4, SlurmSettings())
    assert other.slurm.label != plan.slurm.label                       # two jobs of one row never share it


def test_a_budget_over_the_job_timeout_is_refused_before_anything_starts():
    with pytest.raises(InputError, match="more than the .* min benchmark.yml leaves it"):
        plan_of(ready_timeout_s=8 * 3600.0)


def test_the_partition_time_limit_is_respected():
    r = row()
    pt = resolve_disagg(recipe_from_data(recipe()), r["prefill"], r["decode"], r["conc"])
    slurm = SlurmSettings.from_hardware({"slurm": {"partition": "gb300", "account": "bench", "exclusive": True,
                                                   "max-time-minutes": 120}})
    with pytest.raises(InputError, match="over the 120 min runners.yaml allows"):
        build_multinode_plan(r, pt, Settings(), "/job", 4, slurm)
    slurm.max_time_minutes = 600
    argv = alloc_argv(build_multinode_plan(r, pt, Settings(), "/job", 4, slurm))
    assert "--partition=gb300" in argv and "--account=bench" in argv


def test_one_client_per_concurrency_in_its_own_directory():
    plan = plan_of()
    assert [(c.conc, c.subdir) for c in plan.clients] == [(8, "conc8"), (16, "conc16")]
    c = plan.clients[1]
    assert c.argv[c.argv.index("--artifact-dir") + 1] == "/job/conc16/aiperf_artifacts"
    assert c.argv[c.argv.index("--url") + 1] == "http://{frontend_node}:8000"
    assert c.result_filename.endswith("_conc16") and plan.result_filename.endswith("_conc8x16")
    single = plan_of(row(conc=[8]))
    assert single.clients[0].subdir == "" and single.clients[0].log == "client.log"


def test_hicache_size_is_the_node_budget_per_rank():
    data = recipe(**{"kv-offload": {"backend": "hicache", "medium": "dram", "workers": ["prefill"],
                                    "args": {"enable-hierarchical-cache": True}}})
    plan = plan_of(row(**{"total-cpu-dram-gb": 721}), data)
    pre, dec = plan.workers[0], plan.workers[1]
    assert pre.argv[pre.argv.index("--hicache-size") + 1] == "180" and "--enable-hierarchical-cache" in pre.argv
    assert "--hicache-size" not in dec.argv
    with pytest.raises(InputError, match="total-cpu-dram-gb"):
        plan_of(row(), data)


@pytest.mark.parametrize("change,message", [
    ({"image": "x@sha256:" + "b" * 64}, "differs from the recipe's"),
    ({"kv-p2p-transfer": "mooncake"}, "kv-p2p-transfer 'mooncake' differs"),
    ({"router": {"name": "sglang-router", "version": "0.2.0"}}, "router sglang-router 0.2.0 differs"),
    ({"decode": {"num-worker": 2, "tp": 4, "pp": 2}}, "no point with .*decode 2 worker\\(s\\) x tp4 ep1 pp2"),
    ({"isl": None}, None),
])
def test_bad_rows_are_refused_with_the_reason(change, message):
    r = {k: v for k, v in {**row(), **change}.items() if v is not None}
    if message is None:
        with pytest.raises(InputError, match="need `isl` and `osl`"):
            plan_of(r)
        return
    with pytest.raises(InputError, match=message):
        plan_of(r)


def test_a_row_without_its_point_names_the_available_ones():
    with pytest.raises(InputError, match="no point with prefill 3 worker"):
        plan_of(row(prefill={"num-worker": 3, "tp": 4}))
    with pytest.raises(InputError, match="does not list concurrency 32"):
        plan_of(row(conc=[8, 32]))


def test_placement_args_in_the_recipe_are_refused():
    data = recipe()
    data["decode"]["args"]["disaggregation-mode"] = "decode"
    with pytest.raises(InputError, match="`disaggregation-mode` is set in args"):
        plan_of(data=data)


@pytest.mark.parametrize("tp,nodes", [(8, 1), (4, 2), (3, 1), (6, 2)])
def test_workers_fill_whole_nodes_or_an_equal_share_of_one(tp, nodes):
    data = recipe()
    data["points"]["1p1d-tp8"]["decode"].update(tp=tp, nodes=nodes)
    r = row(conc=[4], prefill={"num-worker": 1, "tp": 4}, decode={"num-worker": 1, "tp": tp})
    with pytest.raises(InputError, match=f"decode workers need {tp} GPUs on {nodes} node.s. of 4 GPUs: a worker "
                                         "fills whole nodes, or an equal share of one node"):
        plan_of(r, data)


def test_job_json_is_plain_json():
    plan = plan_of()
    json.dumps(plan.job_json({"prefill-0": ["a"]}))
