"""SGLang: `python3 -m sglang.launch_server` (argparse + `ServerArgs.add_cli_args`)."""

from __future__ import annotations

from ci_tools.engines import Command, ServeSpec, release_number_problems, render_args, version_key

NAME = "sglang"
LAUNCHER = ("python3", "-m", "sglang.launch_server")
READY_PATHS = ("/health", "/v1/models")
VERSION_ARGV = ("python3", "-c", "import importlib.metadata as m; print(m.version('sglang'))")
TOPOLOGY_ARGS = frozenset({"tp", "tp-size", "tensor-parallel-size", "ep", "ep-size", "expert-parallel-size",
                           "dp", "dp-size", "data-parallel-size", "enable-dp-attention", "attn-dp-size",
                           "attention-data-parallel-size"})
# From 0.5.22 `--attn-dp-size N` replaces `--dp-size N --enable-dp-attention` (still accepted, with a
# deprecation warning, until its announced removal); 0.5.21 knows only the old spelling.
ATTN_DP_SIZE_SINCE = (0, 5, 22)


def uses_attn_dp_size(versions: tuple[str, ...]) -> bool:
    """The new DP-attention spelling only when every CLI the image must satisfy knows it."""
    return bool(versions) and all(version_key(v) >= ATTN_DP_SIZE_SINCE for v in versions)


def topology_args(spec: ServeSpec) -> list[str]:
    argv = ["--tp-size", str(spec.tp), "--ep-size", str(spec.ep)]
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
