"""TensorRT-LLM: `trtllm-serve serve MODEL` (a click command; PyTorch backend)."""

from __future__ import annotations

from typing import Any, Mapping

from ci_tools.engines import Command, ServeSpec, WorkerSpec, release_number_problems, render_args

NAME = "trtllm"
LABEL = "TensorRT-LLM"
LAUNCHER = ("trtllm-serve", "serve")
READY_PATHS = ("/health", "/v1/models")
VERSION_ARGV = ("python3", "-c", "import importlib.metadata as m; print(m.version('tensorrt_llm'))")
# both spellings of each (the runner writes recipe args with underscores, see option_args)
TOPOLOGY_ARGS = frozenset(f"{n}size".replace("_", sep) for n in (
    "tp_", "ep_", "pp_", "tensor_parallel_", "pipeline_parallel_", "moe_expert_parallel_", "expert_parallel_")
    for sep in "_-") | {"extra_llm_api_options", "extra-llm-api-options", "extra-engine-args", "enable-attention-dp",
                         "disaggregation-mode"}
OPTIONS_FILE = "extra-llm-api-options.yaml"


def llm_api_options(spec: ServeSpec, extra: dict | None = None) -> dict:
    """What only TensorRT-LLM's LLM-API options file can say: attention DP, context parallel, and the
    options the runner adds (KV cache transceiver, host offload)."""
    out: dict = {}
    if spec.dp_attn:
        out["enable_attention_dp"] = True
    if spec.dcp > 1 or spec.pcp > 1:
        out["context_parallel_size"] = max(spec.dcp, spec.pcp)
    for key, value in {**dict(spec.options), **(extra or {})}.items():
        out[key] = value
    return out


def options_yaml(options: dict) -> str:
    """The options file's text (a YAML subset: nested mappings of scalars; JSON scalars are YAML)."""
    import json

    def lines(d: dict, indent: str) -> list[str]:
        out = []
        for k, v in d.items():
            if isinstance(v, dict):
                out += [f"{indent}{k}:", *lines(v, indent + "  ")]
            else:
                out.append(f"{indent}{k}: {json.dumps(v)}")
        return out

    return "\n".join(lines(options, "")) + "\n"


def _file(spec: ServeSpec, name: str, options: dict) -> tuple[str, tuple[tuple[str, str], ...]]:
    path = f"{spec.files_dir or '.'}/{name}"
    return path, ((path, options_yaml(options)),)


def option_args(args: Mapping[str, Any]) -> list[str]:
    """The recipe's args in trtllm-serve's spelling: every option of its click command is written with
    underscores (`--trust_remote_code`, `--kv_cache_free_gpu_memory_fraction`), so a recipe may write
    `trust-remote-code` like for the other engines and still start the server."""
    return render_args({str(k).replace("-", "_"): v for k, v in args.items()})


def engine_args(spec: ServeSpec) -> list[str]:
    """The options after the launcher, for any launcher that takes trtllm-serve's (a Dynamo TRT-LLM
    worker adds its own role options to these)."""
    args = [spec.model_path, "--host", spec.host, "--port", str(spec.port),
            "--tp_size", str(spec.tp), "--ep_size", str(spec.ep)]
    if spec.pp > 1:
        args += ["--pp_size", str(spec.pp)]
    return args + option_args(spec.args)


def server(spec: ServeSpec) -> Command:
    args = engine_args(spec)
    options = llm_api_options(spec)
    files: tuple = ()
    if options:
        # trtllm-serve takes attention DP (and context parallel) only in its LLM-API options file; the
        # runner writes it into the job directory
        path, files = _file(spec, OPTIONS_FILE, options)
        args += ["--extra_llm_api_options", path]
    return Command(LAUNCHER, tuple(args), NAME, files)


def topology_problems(spec: ServeSpec) -> list[str]:
    return []


version_problems = release_number_problems

DYNAMO_LAUNCHER = ("python3", "-m", "dynamo.trtllm")
# TensorRT-LLM runs one MPI rank per GPU: a worker spanning nodes is one srun task per GPU under
# `trtllm-llmapi-launch` (no node rank to pass)
RANK_WRAPPER = None
MPI_LAUNCHER = ("trtllm-llmapi-launch",)
# cache_transceiver_config.backend per kv-p2p-transfer
TRANSCEIVERS = {"nixl": "NIXL", "ucx": "UCX", "mooncake": "MOONCAKE"}


def worker_problems(w: WorkerSpec) -> list[str]:
    if not w.dynamo:
        return ["TensorRT-LLM workers of a multi-node point run under Dynamo (frontend kind: dynamo)"]
    if w.role != "aggregated" and w.transfer not in TRANSCEIVERS:
        return [f"kv-transfer {w.transfer!r} is no TensorRT-LLM cache transceiver (known: {', '.join(TRANSCEIVERS)})"]
    return []


def worker(w: WorkerSpec) -> Command:
    """`python3 -m dynamo.trtllm`: topology as flags, the rest in its --extra-engine-args file."""
    spec = w.serve
    args = ["--model", spec.model_path, "--served-model-name", spec.served_model,
            "--tensor-parallel-size", str(spec.tp), "--expert-parallel-size", str(spec.ep)]
    if spec.pp > 1:
        args += ["--pipeline-parallel-size", str(spec.pp)]
    if spec.dp_attn:
        args.append("--enable-attention-dp")
    extra = {}
    if w.role != "aggregated":
        args += ["--disaggregation-mode", w.role]
        extra["cache_transceiver_config"] = {"backend": TRANSCEIVERS.get(w.transfer, w.transfer.upper())}
    options = llm_api_options(ServeSpec(**{**spec.__dict__, "dp_attn": False}), extra)
    files: tuple = ()
    if options:
        path, files = _file(spec, f"{w.name}-engine-args.yaml", options)
        args += ["--extra-engine-args", path]
    return Command(DYNAMO_LAUNCHER, tuple(args + render_args(spec.args)), "dynamo.trtllm", files)


def offload(backend: str, gb_per_node: int, ranks_on_node: int) -> tuple[dict, dict]:  # noqa: ARG001
    """(args, file options): TensorRT-LLM's own host KV cache is `kv_cache_config.host_cache_size` (bytes)."""
    if backend == "native":
        return {}, {"kv_cache_config": {"host_cache_size": gb_per_node * 1_000_000_000}}
    return {}, {}
