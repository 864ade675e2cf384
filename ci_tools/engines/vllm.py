"""vLLM: `vllm serve MODEL` (its own FlexibleArgumentParser via `make_arg_parser`)."""

from __future__ import annotations

from ci_tools.engines import Command, ServeSpec, release_number_problems, render_args

NAME = "vllm"
LAUNCHER = ("vllm", "serve")
READY_PATHS = ("/health", "/v1/models")
VERSION_ARGV = ("vllm", "--version")
TOPOLOGY_ARGS = frozenset({"tensor-parallel-size", "tp", "data-parallel-size", "dp", "enable-expert-parallel",
                           "pipeline-parallel-size", "pp"})


def topology_args(spec: ServeSpec) -> list[str]:
    if spec.dp_attn:
        # vLLM's DP attention: one engine per attention DP rank, the MoE layers expert-parallel across
        # them (EP size = DP x TP)
        return ["--tensor-parallel-size", "1", "--data-parallel-size", str(spec.tp), "--enable-expert-parallel"]
    argv = ["--tensor-parallel-size", str(spec.tp)]
    if spec.ep > 1:
        argv.append("--enable-expert-parallel")
    return argv


def engine_args(spec: ServeSpec) -> list[str]:
    """vLLM's engine options for one point, after any launcher that takes them (`vllm serve MODEL`; a
    Dynamo vLLM worker adds its own role options to these)."""
    return ["--served-model-name", spec.served_model, "--host", spec.host, "--port", str(spec.port),
            *topology_args(spec), *render_args(spec.args)]


def server(spec: ServeSpec) -> Command:
    return Command(LAUNCHER, (spec.model_path, *engine_args(spec)), NAME)


def topology_problems(spec: ServeSpec) -> list[str]:
    # vLLM has no separate EP size: EP spans every TP (x DP) rank when enabled, else it is off
    if spec.ep not in (1, spec.tp):
        return [f"vLLM runs experts over all {spec.tp} ranks (--enable-expert-parallel) or none; "
                f"ep={spec.ep} with tp={spec.tp} cannot be expressed"]
    return []


version_problems = release_number_problems
