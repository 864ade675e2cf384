"""TensorRT-LLM: `trtllm-serve serve MODEL` (a click command; PyTorch backend)."""

from __future__ import annotations

from typing import Any, Mapping

from ci_tools.engines import Command, ServeSpec, release_number_problems, render_args

NAME = "trtllm"
LAUNCHER = ("trtllm-serve", "serve")
READY_PATHS = ("/health", "/v1/models")
VERSION_ARGV = ("python3", "-c", "import importlib.metadata as m; print(m.version('tensorrt_llm'))")
# both spellings of each (the runner writes recipe args with underscores, see option_args)
TOPOLOGY_ARGS = frozenset(f"{n}size".replace("_", sep) for n in (
    "tp_", "ep_", "pp_", "tensor_parallel_", "pipeline_parallel_", "moe_expert_parallel_") for sep in "_-")


def option_args(args: Mapping[str, Any]) -> list[str]:
    """The recipe's args in trtllm-serve's spelling: every option of its click command is written with
    underscores (`--trust_remote_code`, `--kv_cache_free_gpu_memory_fraction`), so a recipe may write
    `trust-remote-code` like for the other engines and still start the server."""
    return render_args({str(k).replace("-", "_"): v for k, v in args.items()})


def engine_args(spec: ServeSpec) -> list[str]:
    """The options after the launcher, for any launcher that takes trtllm-serve's (a Dynamo TRT-LLM
    worker adds its own role options to these)."""
    return [spec.model_path, "--host", spec.host, "--port", str(spec.port),
            "--tp_size", str(spec.tp), "--ep_size", str(spec.ep), *option_args(spec.args)]


def server(spec: ServeSpec) -> Command:
    return Command(LAUNCHER, tuple(engine_args(spec)), NAME)


def topology_problems(spec: ServeSpec) -> list[str]:
    if spec.dp_attn:
        # trtllm-serve takes attention DP only as `enable_attention_dp: true` in an
        # --extra_llm_api_options YAML file, which ci-tools does not write yet
        return ["TensorRT-LLM attention DP needs an --extra_llm_api_options file, which ci-tools does not "
                "write yet; serve this point with tp/ep only, or with SGLang/vLLM"]
    return []


version_problems = release_number_problems
