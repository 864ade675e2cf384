"""The shapes of InferenceX's fleet the runner serves since issue 22 (pure plans, no process):
prefill/decode workers of vLLM and TensorRT-LLM under Dynamo, aggregated multi-node points (decode
num-worker 0), workers smaller than a node, pipeline/context parallel, DRAM KV offload, TensorRT-LLM
attention DP through its options file, and multi-node eval rows running the eval harness."""

from __future__ import annotations

import json

import pytest

from ci_tools.config.disagg import resolve_disagg
from ci_tools.config.recipe import recipe_from_data, resolve_point
from ci_tools.errors import InputError
from ci_tools.runner.disagg import SlurmSettings, build_multinode_plan
from ci_tools.runner.disagg_slurm import place, ready_checks, worker_steps
from ci_tools.runner.plan import Settings, build_plan
from ci_tools.runner.ready import WorkersHealthy

from test_servable import EVALS

IMAGE = "example.org/engine:1@sha256:" + "a" * 64


def mn_recipe(engine: str = "vllm", kind: str = "dynamo", points: dict | None = None, **extra) -> dict:
    data = {"recipe-version": 1, "config-key": "k", "mode": "disaggregated", "engine": engine, "image": IMAGE,
            "model": "org/model", "kv-transfer": "nixl",
            "frontend": {"kind": kind, "name": "dynamo-router" if kind == "dynamo" else "sglang-router",
                         "version": "1.3.0" if kind == "dynamo" else "0.3.2",
                         # the image has no Dynamo: its wheels, pinned (ci_tools/engines/compat.py)
                         **({"install": [f"{d}==1.3.0.post1 --hash=sha256:{'1' * 64}"
                                         for d in ("ai-dynamo", "ai-dynamo-runtime")]} if kind == "dynamo" else {})},
            "serve": {"args": {"trust-remote-code": True}},
            "points": points or {"1p1d": {"prefill": {"num-worker": 1, "tp": 4, "nodes": 1},
                                          "decode": {"num-worker": 1, "tp": 8, "nodes": 2}, "conc": [8]}}}
    data.update(extra)
    return data


def mn_row(prefill: dict, decode: dict, **extra) -> dict:
    r = {"image": IMAGE, "model": "org/model", "precision": "fp4", "framework": "dynamo-vllm", "runner": "gb300",
         "isl": 1024, "osl": 128, "spec-decoding": "none", "exp-name": "m_1k128", "conc": [8],
         "prefill": prefill, "decode": decode, "kv-p2p-transfer": "nixl"}
    r.update(extra)
    return r


def mn_plan(data: dict, r: dict, gpn: int = 4, **settings):
    pt = resolve_disagg(recipe_from_data(data), r["prefill"], r["decode"], r["conc"])
    return build_multinode_plan(r, pt, Settings(**settings), "/job", gpn, SlurmSettings(queue_timeout_s=600))


def argv_of(plan, name: str) -> list[str]:
    """A worker's command, after the guard that installs the recipe's pinned wheels (engines/install.py)."""
    from ci_tools.engines.install import unwrap

    return unwrap(next(w.argv for w in plan.workers if w.name == name))


def test_vllm_prefill_and_decode_workers_under_dynamo():
    plan = mn_plan(mn_recipe(), mn_row({"num-worker": 1, "tp": 4}, {"num-worker": 1, "tp": 8}))
    pre, dec = argv_of(plan, "prefill-0"), argv_of(plan, "decode-0")
    assert pre[:3] == ["python3", "-m", "dynamo.vllm"] and "--namespace" in pre
    assert pre[pre.index("--disaggregation-mode") + 1] == "prefill"
    assert dec[dec.index("--disaggregation-mode") + 1] == "decode"
    conf = json.loads(pre[pre.index("--kv-transfer-config") + 1])
    assert conf == {"kv_connector": "NixlConnector", "kv_role": "kv_both"}
    assert pre[pre.index("--tensor-parallel-size") + 1] == "4" and "--trust-remote-code" in pre
    # the tp8 decode worker spans two 4-GPU nodes: vLLM's --nnodes/--master-addr, the node rank per task
    assert dec[dec.index("--nnodes") + 1] == "2" and dec[dec.index("--master-addr") + 1] == "{decode-0_node0}"
    steps = {s.name: s for s in worker_steps(plan, "J", place(plan, ["a", "b", "c"]), "/job")}
    script = steps["decode-0"].argv[steps["decode-0"].argv.index("-c") + 1]
    assert "--node-rank" in script and "--headless" in script
    assert [c.url.rsplit("/", 1)[-1] for c in ready_checks(plan, place(plan, ["a", "b", "c"]))][-1] == "models"


def test_vllm_dep_written_tp1_ep8_is_eight_data_parallel_ranks():
    data = mn_recipe(points={"p": {"prefill": {"num-worker": 1, "tp": 1, "ep": 8, "dp-attn": True, "nodes": 2},
                                   "decode": {"num-worker": 1, "tp": 8, "nodes": 2}, "conc": [8]}})
    plan = mn_plan(data, mn_row({"num-worker": 1, "tp": 1, "ep": 8, "dp-attn": True}, {"num-worker": 1, "tp": 8}))
    pre = argv_of(plan, "prefill-0")
    assert pre[pre.index("--data-parallel-size") + 1] == "8" and pre[pre.index("--tensor-parallel-size") + 1] == "1"
    assert plan.point.prefill.gpus == 8 and plan.nodes == 4


def test_vllm_prefill_decode_workers_need_dynamo():
    with pytest.raises(InputError, match="vLLM prefill/decode workers run under Dynamo"):
        mn_plan(mn_recipe(kind="sglang-router"), mn_row({"num-worker": 1, "tp": 4}, {"num-worker": 1, "tp": 8},
                                                       router={"name": "sglang-router", "version": "0.3.2"}))


def test_trtllm_workers_under_dynamo_write_their_engine_args_file():
    data = mn_recipe("trtllm", points={"p": {"prefill": {"num-worker": 1, "tp": 4, "ep": 4, "dp-attn": True, "nodes": 1},
                                   "decode": {"num-worker": 1, "tp": 4, "nodes": 1}, "conc": [8]}})
    data["kv-transfer"] = "ucx"
    plan = mn_plan(data, mn_row({"num-worker": 1, "tp": 4, "ep": 4, "dp-attn": True}, {"num-worker": 1, "tp": 4},
                                **{"kv-p2p-transfer": "ucx"}))
    pre = argv_of(plan, "prefill-0")
    assert pre[:3] == ["python3", "-m", "dynamo.trtllm"] and "--enable-attention-dp" in pre
    path = pre[pre.index("--extra-engine-args") + 1]
    assert path == "/job/engine_files/prefill-0-engine-args.yaml"
    files = dict(plan.files)
    assert files[path] == 'cache_transceiver_config:\n  backend: "UCX"\n'
    # every container sees that folder read-only, and Dynamo's store and the recipe's install folder (its
    # pinned Dynamo wheels) writable; never the job directory, where the clients write their exports
    for step in worker_steps(plan, "J", place(plan, ["a", "b"]), "/job"):
        mounts = next(a for a in step.argv if a.startswith("--container-mounts=")).split("=", 1)[1].split(",")
        assert mounts == ["/mnt/models:/models:ro", "/mnt/hf_hub_cache:/hf_hub_cache",
                          "/job/dynamo_store:/job/dynamo_store", "/job/site:/job/site",
                          "/job/engine_files:/job/engine_files:ro"], step.name


def test_trtllm_worker_over_two_nodes_is_one_mpi_rank_per_gpu():
    data = mn_recipe("trtllm", points={"p": {"prefill": {"num-worker": 1, "tp": 8, "nodes": 2},
                                             "decode": {"num-worker": 1, "tp": 4, "nodes": 1}, "conc": [8]}})
    plan = mn_plan(data, mn_row({"num-worker": 1, "tp": 8}, {"num-worker": 1, "tp": 4}))
    step = next(s for s in worker_steps(plan, "J", place(plan, ["a", "b", "c"]), "/job") if s.name == "prefill-0")
    assert "--ntasks=8" in step.argv and "--ntasks-per-node=4" in step.argv and "--mpi=pmix" in step.argv
    assert "trtllm-llmapi-launch" in step.argv


@pytest.mark.parametrize("kind", ["dynamo", "sglang-router"])
def test_aggregated_multinode_point_has_no_decode_workers_and_no_kv_transfer(kind):
    data = mn_recipe("sglang", kind, points={"agg": {"prefill": {"num-worker": 2, "tp": 8, "nodes": 2},
                                                    "decode": {"num-worker": 0, "tp": 8, "nodes": 2}, "conc": [8]}})
    router = {"name": "sglang-router", "version": "0.3.2"} if kind == "sglang-router" else None
    r = mn_row({"num-worker": 2, "tp": 8}, {"num-worker": 0, "tp": 8}, framework="dynamo-sglang",
               **({"router": router} if router else {}))
    plan = mn_plan(data, r)
    assert [w.name for w in plan.workers] == ["aggregated-0", "aggregated-1"] and plan.nodes == 4
    assert all("--disaggregation-mode" not in w.argv for w in plan.workers)
    assert plan.gpus == 16 and plan.topology()["aggregated"] is True
    if kind == "sglang-router":
        assert "--pd-disaggregation" not in plan.frontend_argv
        i = plan.frontend_argv.index("--worker-urls")
        assert plan.frontend_argv[i + 1:i + 3] == ["http://{aggregated-0_node0}:30000",
                                                     "http://{aggregated-1_node0}:30010"]
        assert ready_checks(plan, place(plan, list("abcd")))[-1] == WorkersHealthy("http://a:8000/workers", "frontend",
                                                                                  count=2)


def test_workers_smaller_than_a_node_are_packed_onto_shared_nodes():
    data = mn_recipe("sglang", points={"p": {"prefill": {"num-worker": 2, "tp": 2, "nodes": 1},
                                             "decode": {"num-worker": 1, "tp": 4, "nodes": 1}, "conc": [8]}})
    plan = mn_plan(data, mn_row({"num-worker": 2, "tp": 2}, {"num-worker": 1, "tp": 4}, framework="dynamo-sglang"))
    placement = place(plan, ["a", "b"])
    assert plan.nodes == 2 and placement["prefill-0"] == placement["prefill-1"] == ["a"]
    assert placement["decode-0"] == ["b"]
    steps = {s.name: s for s in worker_steps(plan, "J", placement, "/job")}
    # on the shared node each step may use the whole node and keeps its own slice of the GPUs
    assert "${g[*]:0:2}" in " ".join(steps["prefill-0"].argv) and "${g[*]:2:2}" in " ".join(steps["prefill-1"].argv)
    assert "--overlap" in steps["prefill-1"].argv and "--gpus-per-node=4" in steps["prefill-1"].argv
    assert "--overlap" not in steps["decode-0"].argv and "--gpus-per-node=4" in steps["decode-0"].argv
    ports = [w.port for w in plan.workers]
    assert len(set(ports)) == 3                                   # two workers on one host never collide


def test_pipeline_and_context_parallel_are_part_of_the_point():
    data = mn_recipe(points={"p": {"prefill": {"num-worker": 1, "tp": 8, "pp": 2, "nodes": 4},
                                   "decode": {"num-worker": 1, "tp": 8, "dcp-size": 8, "nodes": 2}, "conc": [8]}})
    plan = mn_plan(data, mn_row({"num-worker": 1, "tp": 8, "pp": 2}, {"num-worker": 1, "tp": 8, "dcp-size": 8}))
    pre, dec = argv_of(plan, "prefill-0"), argv_of(plan, "decode-0")
    assert pre[pre.index("--pipeline-parallel-size") + 1] == "2" and plan.point.prefill.gpus == 16
    assert dec[dec.index("--decode-context-parallel-size") + 1] == "8" and plan.point.decode.gpus == 8
    with pytest.raises(InputError, match="no point with .*pp2"):
        mn_plan(mn_recipe(), mn_row({"num-worker": 1, "tp": 4, "pp": 2}, {"num-worker": 1, "tp": 8}))


def test_a_multinode_eval_row_runs_the_harness_against_the_frontend():
    r = mn_row({"num-worker": 1, "tp": 4}, {"num-worker": 1, "tp": 8}, **{"run-eval": True, "eval-only": True,
                                                                           "model-prefix": "dsv41flash"})
    plan = mn_plan(mn_recipe(), r, evals=EVALS, ci_tools="ci-tools")
    (client,) = plan.clients
    assert client.argv[:4] == ["ci-tools", "runner", "evals", "/job"] and client.expects == ()
    assert client.argv[-2:] == ["--base-url", "http://{frontend_node}:8000"]
    job = plan.job_json()
    assert job["evals"]["runs"] and job["evals"]["base-url"] == "http://{frontend_node}:8000"
    assert all("SGLANG_SIMULATE_ACC_LEN" not in w.env for w in plan.workers)


def test_many_concurrencies_leave_readiness_what_the_clients_do_not_need():
    r = mn_row({"num-worker": 1, "tp": 4}, {"num-worker": 1, "tp": 8}, conc=list(range(1, 8)))
    data = mn_recipe()
    data["points"]["1p1d"]["conc"] = list(range(1, 8))
    plan = mn_plan(data, r)
    assert 3600 <= plan.settings.ready_timeout_s < 4 * 3600 and not plan.budget.problems()
    r = {**r, "conc": list(range(1, 14))}
    data["points"]["1p1d"]["conc"] = list(range(1, 14))
    with pytest.raises(InputError, match="the job needs up to"):
        mn_plan(data, r)


# ---- single node --------------------------------------------------------------------------------

def sn_recipe(engine: str, point: dict, **extra) -> object:
    return recipe_from_data({"recipe-version": 1, "config-key": "k", "engine": engine, "image": IMAGE,
                             "model": "org/model", "serve": {}, "points": {"p": point}, **extra}, "recipes/k.yaml")


def sn_plan(recipe, row: dict, **settings):
    pt = resolve_point(recipe, row["tp"], row.get("ep", 1), row.get("dp-attn", False), row["conc"])
    return build_plan(row, pt, Settings(**settings), "/job")


def sn_row(**extra) -> dict:
    return {"image": IMAGE, "model": "org/model", "precision": "fp4", "framework": "sglang", "runner": "b200",
            "tp": 8, "ep": 1, "dp-attn": False, "conc": 4, "scenario-type": "agentic-coding", "exp-name": "m",
            **extra}


@pytest.mark.parametrize("engine,backend,expect", [
    ("sglang", "hicache", ["--hicache-size", "100"]),
    ("vllm", "vllm-simple", ["--kv-offloading-backend", "native", "--kv-offloading-size", "800"]),
])
def test_dram_kv_offload_is_sized_from_the_rows_budget(engine, backend, expect):
    rec = sn_recipe(engine, {"tp": 8, "conc": 4},
                    **{"kv-offload": {"backend": backend, "medium": "dram", "args": {"enable-x": True}}})
    row = sn_row(**{"kv-offloading": "dram", "kv-offload-backend": {"name": backend}, "total-cpu-dram-gb": 800})
    argv = sn_plan(rec, row).proc("server").argv
    assert " ".join(expect) in " ".join(argv) and "--enable-x" in argv


def test_an_offload_backend_the_plugin_does_not_size_gets_the_budget_in_its_env():
    rec = sn_recipe("vllm", {"tp": 8, "conc": 4},
                    **{"kv-offload": {"backend": "mooncake", "medium": "dram", "env": {"MOONCAKE_X": "1"}}})
    row = sn_row(**{"kv-offloading": "dram", "kv-offload-backend": {"name": "mooncake"}, "total-cpu-dram-gb": 800})
    env = sn_plan(rec, row).proc("server").env
    assert env["TOTAL_CPU_DRAM_GB"] == "800" and env["MOONCAKE_X"] == "1"


def test_trtllm_attention_dp_is_written_to_its_llm_api_options_file():
    rec = sn_recipe("trtllm", {"tp": 8, "ep": 8, "dp-attn": True, "conc": 4})
    plan = sn_plan(rec, sn_row(ep=8, **{"dp-attn": True}))
    argv = plan.proc("server").argv
    path = argv[argv.index("--extra_llm_api_options") + 1]
    assert path == "/job/engine_files/extra-llm-api-options.yaml"
    assert plan.files == [(path, "enable_attention_dp: true\n")]


def _docker_mounts(argv: list[str]) -> list[str]:
    return [argv[i + 1] for i, a in enumerate(argv) if a == "-v"]


@pytest.mark.parametrize("backend", ["docker", "slurm"])
def test_the_container_reads_the_options_file_and_never_writes_the_job_directory(backend):
    """The file is written into the job directory on the host; the engine's container sees only the folder
    holding it, read-only (it did not see it at first: trtllm-serve was pointed at a path missing inside its
    container; then it mounted the whole job directory writable, where AIPerf writes its export)."""
    from ci_tools.runner.backends import Host, launches, slurm_image_import

    rec = sn_recipe("trtllm", {"tp": 8, "ep": 8, "dp-attn": True, "conc": 4})
    plan = sn_plan(rec, sn_row(ep=8, **{"dp-attn": True}))
    assert plan.proc("server").read_only == ("/job/engine_files",) and plan.proc("server").mounts == ()
    argv = next(lc for lc in launches(plan, backend, Settings(), Host(label="j")) if lc.role == "server").argv
    if backend == "docker":
        assert _docker_mounts(argv) == ["/mnt/models:/models:ro", "/mnt/hf_hub_cache:/hf_hub_cache",
                                        "/job/engine_files:/job/engine_files:ro"], argv
    else:
        mounts = next(a for a in argv if a.startswith("--container-mounts=")).split("=", 1)[1].split(",")
        assert mounts == ["/mnt/models:/models:ro", "/mnt/hf_hub_cache:/hf_hub_cache",
                          "/job/engine_files:/job/engine_files:ro"], argv
        # the node is checked to see the file first
        assert '[ -f "$f" ]' in slurm_image_import(plan, Settings(), Host(label="j")).argv[-1]
        assert "f=/job/engine_files/extra-llm-api-options.yaml" in slurm_image_import(plan, Settings(),
                                                                                      Host(label="j")).argv[-1]
    plain = sn_plan(sn_recipe("trtllm", {"tp": 8, "ep": 1, "conc": 4}), sn_row(ep=1))
    assert plain.files == [] and plain.proc("server").read_only == ()      # no file, no mount


def test_a_smoke_command_keeps_the_engines_files_and_their_mount():
    """--server-cmd replaces the engine's argv, not what the runner prepares for it: the docker e2e test's
    stub engine sees the options file where trtllm-serve would."""
    rec = sn_recipe("trtllm", {"tp": 8, "ep": 8, "dp-attn": True, "conc": 4})
    plan = sn_plan(rec, sn_row(ep=8, **{"dp-attn": True}), server_cmd="stub --port {port}")
    assert plan.proc("server").argv[0] == "stub" and plan.proc("server").read_only == ("/job/engine_files",)
    assert [p for p, _ in plan.files] == ["/job/engine_files/extra-llm-api-options.yaml"]


def test_single_node_pipeline_and_context_parallel():
    rec = sn_recipe("vllm", {"tp": 8, "dcp-size": 8, "conc": 4})
    plan = sn_plan(rec, sn_row(**{"dcp-size": 8}))
    argv = plan.proc("server").argv
    assert argv[argv.index("--decode-context-parallel-size") + 1] == "8" and plan.gpus == 8
    with pytest.raises(InputError, match="the row's `pp: 2` differs"):
        sn_plan(rec, sn_row(**{"dcp-size": 8, "pp": 2}))


def test_dry_run_shows_and_run_writes_the_options_file(tmp_path):
    from ci_tools.runner.run_plan import files_text
    from ci_tools.runner.procs import write_files

    files = [(str(tmp_path / "job" / "x.yaml"), "enable_attention_dp: true\n")]
    assert "#   enable_attention_dp: true" in files_text(files)
    write_files(files)
    assert (tmp_path / "job" / "x.yaml").read_text() == "enable_attention_dp: true\n"


def test_kv_offload_applies_to_the_rows_that_offload_only():
    """InferenceX entries mix points with and without DRAM offload under one recipe."""
    rec = sn_recipe("sglang", {"tp": 8, "conc": 4},
                    **{"kv-offload": {"backend": "hicache", "medium": "dram", "args": {"enable-x": True}}})
    argv = sn_plan(rec, sn_row(**{"kv-offloading": "none"})).proc("server").argv
    assert "--enable-x" not in argv and "--hicache-size" not in argv
    data = mn_recipe("sglang", **{"kv-offload": {"backend": "hicache", "medium": "dram", "args": {"enable-x": True}}})
    on = resolve_disagg(recipe_from_data(data), {"num-worker": 1, "tp": 4}, {"num-worker": 1, "tp": 8}, [8])
    assert on.kv_offload is not None and on.prefill.args["enable-x"] is True
    pt = resolve_disagg(recipe_from_data(data), {"num-worker": 1, "tp": 4}, {"num-worker": 1, "tp": 8}, [8],
                        offload=False)
    assert pt.kv_offload is None and "enable-x" not in pt.prefill.args
