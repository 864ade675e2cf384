"""SGLang: `python3 -m sglang.launch_server` (argparse + `ServerArgs.add_cli_args`)."""

from __future__ import annotations

from ci_tools.engines import (Command, ServeSpec, WorkerSpec, parallel_args, release_number_problems, render_args,
                             version_key)

NAME = "sglang"
LABEL = "SGLang"
LAUNCHER = ("python3", "-m", "sglang.launch_server")
READY_PATHS = ("/health", "/v1/models")
VERSION_ARGV = ("python3", "-c", "import importlib.metadata as m; print(m.version('sglang'))")
TOPOLOGY_ARGS = frozenset({"tp", "tp-size", "tensor-parallel-size", "ep", "ep-size", "expert-parallel-size",
                           "dp", "dp-size", "data-parallel-size", "enable-dp-attention", "attn-dp-size",
                           "attention-data-parallel-size", "pp-size", "dcp-size", "attn-cp-size"})
# From 0.5.22 `--attn-dp-size N` replaces `--dp-size N --enable-dp-attention` (still accepted, with a
# deprecation warning, until its announced removal); 0.5.21 knows only the old spelling.
ATTN_DP_SIZE_SINCE = version_key("0.5.22")


def uses_attn_dp_size(versions: tuple[str, ...]) -> bool:
    """The new DP-attention spelling only when every CLI the image must satisfy knows it."""
    return bool(versions) and all(version_key(v) >= ATTN_DP_SIZE_SINCE for v in versions)


def topology_args(spec: ServeSpec) -> list[str]:
    argv = ["--tp-size", str(spec.tp), "--ep-size", str(spec.ep),
            *parallel_args(spec, "--pp-size", "--dcp-size", "--attn-cp-size")]
    if spec.dp_attn:
        # DEP: data-parallel attention over the TP ranks (DEP2 = TP2 / DP2 / EP2)
        if uses_attn_dp_size(spec.versions):
            argv += ["--attn-dp-size", str(spec.tp)]
        else:
            argv += ["--dp-size", str(spec.tp), "--enable-dp-attention"]
    return argv


def server(spec: ServeSpec) -> Command:
    args = ["--model-path", spec.model_path, "--served-model-name", spec.served_model,
            "--host", spec.host, "--port", str(spec.port), *topology_args(spec), *render_args(spec.args)]
    return Command(LAUNCHER, tuple(args), NAME)


def topology_problems(spec: ServeSpec) -> list[str]:
    if spec.dp_attn and spec.ep not in (1, spec.tp):
        return [f"SGLang DP attention runs DEP{spec.tp} (ep = tp = {spec.tp}) or TP{spec.tp} EP1; "
                f"ep={spec.ep} is neither"]
    return []


version_problems = release_number_problems

DYNAMO_LAUNCHER = ("python3", "-m", "dynamo.sglang")
# a worker spanning nodes starts one task per node; each passes its node index as SGLang's --node-rank
RANK_WRAPPER = 'exec "$@" --node-rank "$SLURM_NODEID"'


def worker(w: WorkerSpec) -> Command:
    """A worker of a multi-node point: SGLang's own disaggregation flags (the same under Dynamo)."""
    spec = w.serve
    args = ["--model-path", spec.model_path, "--served-model-name", spec.served_model, "--host", spec.host,
            "--port", str(spec.port), *topology_args(spec)]
    if w.role != "aggregated":
        args += ["--disaggregation-mode", w.role, "--disaggregation-transfer-backend", w.transfer]
        if w.role == "prefill":
            args += ["--disaggregation-bootstrap-port", str(w.bootstrap_port)]
        if w.router_fronted:
            # as srt-slurm does: a PD worker's own warmup (fake-bootstrap requests to every DP rank, up to
            # 1800 s in SGLang 0.5.2x) only delays readiness; AIPerf's warmup requests go through the router
            args.append("--skip-server-warmup")
    if w.nnodes > 1:
        args += ["--nnodes", str(w.nnodes), "--dist-init-addr", w.dist_addr]
    return Command(DYNAMO_LAUNCHER if w.dynamo else LAUNCHER, tuple(args + render_args(spec.args)),
                   "dynamo.sglang" if w.dynamo else NAME)


def worker_problems(w: WorkerSpec) -> list[str]:
    if w.role != "aggregated" and w.transfer not in TRANSFER_BACKENDS:
        return [f"kv-transfer {w.transfer!r} is no SGLang disaggregation transfer backend "
                f"(known: {', '.join(TRANSFER_BACKENDS)})"]
    return []


TRANSFER_BACKENDS = ("nixl", "mooncake", "mori")


def offload(backend: str, gb_per_node: int, ranks_on_node: int) -> tuple[dict, dict]:
    """(args, file options) sizing host KV offload from the node's DRAM budget: HiCache per rank."""
    return ({"hicache-size": gb_per_node // max(1, ranks_on_node)} if backend == "hicache" else {}), {}
