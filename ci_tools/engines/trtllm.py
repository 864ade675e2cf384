"""TensorRT-LLM: `trtllm-serve serve MODEL` (a click command; PyTorch backend)."""

from __future__ import annotations

from ci_tools.engines import Command, ServeSpec, release_number_problems, render_args

NAME = "trtllm"
LAUNCHER = ("trtllm-serve", "serve")
READY_PATHS = ("/health", "/v1/models")
VERSION_ARGV = ("python3", "-c", "import importlib.metadata as m; print(m.version('tensorrt_llm'))")
TOPOLOGY_ARGS = frozenset({"tp_size", "ep_size", "pp_size", "tp-size", "ep-size", "pp-size"})


def server(spec: ServeSpec) -> Command:
    args = [spec.model_path, "--host", spec.host, "--port", str(spec.port),
            "--tp_size", str(spec.tp), "--ep_size", str(spec.ep), *render_args(spec.args)]
    return Command(LAUNCHER, tuple(args), NAME)


def topology_problems(spec: ServeSpec) -> list[str]:
    if spec.dp_attn:
        # trtllm-serve takes attention DP only as `enable_attention_dp: true` in an
        # --extra_llm_api_options YAML file, which ci-tools does not write yet
        return ["TensorRT-LLM attention DP needs an --extra_llm_api_options file, which ci-tools does not "
                "write yet; serve this point with tp/ep only, or with SGLang/vLLM"]
    return []


version_problems = release_number_problems
