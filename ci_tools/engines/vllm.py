"""vLLM: `vllm serve MODEL` (its own FlexibleArgumentParser via `make_arg_parser`)."""

from __future__ import annotations

import json

from ci_tools.engines import Command, ServeSpec, WorkerSpec, parallel_args, release_number_problems, render_args

NAME = "vllm"
LABEL = "vLLM"
LAUNCHER = ("vllm", "serve")
READY_PATHS = ("/health", "/v1/models")
VERSION_ARGV = ("vllm", "--version")
TOPOLOGY_ARGS = frozenset({"tensor-parallel-size", "tp", "data-parallel-size", "dp", "enable-expert-parallel",
                           "pipeline-parallel-size", "pp", "decode-context-parallel-size", "dcp",
                           "prefill-context-parallel-size", "pcp", "kv-transfer-config", "nnodes", "node-rank",
                           "master-addr", "master-port", "headless"})


def topology_args(spec: ServeSpec) -> list[str]:
    if spec.dp_attn and spec.ep > spec.tp:
        # InferenceX's vLLM DEP (`tp: 1, ep: 8`): ep / tp data-parallel replicas of tp ranks, the MoE
        # layers expert-parallel across all of them (EP size = DP x TP = ep)
        argv = ["--tensor-parallel-size", str(spec.tp), "--data-parallel-size", str(spec.ep // spec.tp),
                "--enable-expert-parallel"]
    elif spec.dp_attn:
        # vLLM's DP attention: one engine per attention DP rank, the MoE layers expert-parallel across
        # them (EP size = DP x TP)
        argv = ["--tensor-parallel-size", "1", "--data-parallel-size", str(spec.tp), "--enable-expert-parallel"]
    else:
        argv = ["--tensor-parallel-size", str(spec.tp)]
        if spec.ep > 1:
            argv.append("--enable-expert-parallel")
    return argv + parallel_args(spec, "--pipeline-parallel-size", "--decode-context-parallel-size",
                                "--prefill-context-parallel-size")


def data_parallel_ranks(spec: ServeSpec) -> int:
    """How many data-parallel engines `topology_args` starts behind the one API server (a router addresses them)."""
    if spec.dp_attn and spec.ep > spec.tp:
        return spec.ep // spec.tp
    return spec.tp if spec.dp_attn else 1


def engine_args(spec: ServeSpec) -> list[str]:
    """vLLM's engine options for one point, after any launcher that takes them (`vllm serve MODEL`; a
    Dynamo vLLM worker adds its own role options to these)."""
    return ["--served-model-name", spec.served_model, "--host", spec.host, "--port", str(spec.port),
            *topology_args(spec), *render_args(spec.args)]


def server(spec: ServeSpec) -> Command:
    return Command(LAUNCHER, (spec.model_path, *engine_args(spec)), NAME)


def topology_problems(spec: ServeSpec) -> list[str]:
    # vLLM has no separate EP size: EP spans every TP (x DP) rank when enabled, else it is off
    if spec.dp_attn and spec.ep > spec.tp and spec.ep % spec.tp == 0:
        return []
    if spec.ep not in (1, spec.tp):
        return [f"vLLM runs experts over all {spec.tp} ranks (--enable-expert-parallel) or none; "
                f"ep={spec.ep} with tp={spec.tp} cannot be expressed"]
    return []


version_problems = release_number_problems

DYNAMO_LAUNCHER = ("python3", "-m", "dynamo.vllm")
# vLLM's KV connector per kv-p2p-transfer backend (`--kv-transfer-config`)
KV_CONNECTORS = {"nixl": "NixlConnector", "mooncake": "MooncakeConnector"}
# one task per node: its node index is vLLM's --node-rank; every node but the first runs headless
RANK_WRAPPER = ('r="$SLURM_NODEID"; if [ "$r" -gt 0 ]; then exec "$@" --node-rank "$r" --headless; fi; '
                'exec "$@" --node-rank "$r"')


def worker_problems(w: WorkerSpec) -> list[str]:
    if w.role != "aggregated" and not w.dynamo:
        return ["vLLM prefill/decode workers run under Dynamo (frontend kind: dynamo); a router frontend "
                "serves aggregated vLLM workers only"]
    if w.role != "aggregated" and w.transfer not in KV_CONNECTORS:
        return [f"kv-transfer {w.transfer!r} has no vLLM KV connector here (known: {', '.join(KV_CONNECTORS)})"]
    return []


def worker(w: WorkerSpec) -> Command:
    """A worker of a multi-node point: `python3 -m dynamo.vllm` (vLLM's engine options) or `vllm serve`."""
    spec = w.serve
    launcher: tuple[str, ...]
    if w.dynamo:
        launcher, args = DYNAMO_LAUNCHER, ["--model", spec.model_path, "--served-model-name", spec.served_model]
    else:
        launcher, args = LAUNCHER, [spec.model_path, "--served-model-name", spec.served_model, "--host", spec.host,
                                    "--port", str(spec.port)]
    args += topology_args(spec)
    if w.role != "aggregated":
        args += ["--disaggregation-mode", w.role, "--kv-transfer-config",
                 json.dumps({"kv_connector": KV_CONNECTORS.get(w.transfer, w.transfer), "kv_role": "kv_both"},
                            separators=(",", ":"))]
    if w.nnodes > 1:
        host, _, port = w.dist_addr.rpartition(":")
        args += ["--nnodes", str(w.nnodes), "--master-addr", host, "--master-port", port]
    return Command(launcher, tuple(args + render_args(spec.args)), "dynamo.vllm" if w.dynamo else NAME)


# vLLM's own CPU KV offloading (`--kv-offloading-backend`, size in GiB for the whole worker)
OFFLOAD_BACKENDS = {"vllm-simple": "native", "native": "native", "lmcache": "lmcache"}


def offload(backend: str, gb_per_node: int, ranks_on_node: int) -> tuple[dict, dict]:  # noqa: ARG001
    """(args, file options) sizing host KV offload from the worker's DRAM budget on its node."""
    if backend in OFFLOAD_BACKENDS:
        return {"kv-offloading-backend": OFFLOAD_BACKENDS[backend], "kv-offloading-size": gb_per_node}, {}
    return {}, {}
