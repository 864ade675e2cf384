"""ATOM (AMD's engine, MI355X): `python3 -m atom.entrypoints.openai_server` (argparse: `EngineArgs.add_cli_args`
and the server's own options).

Its option names are written as ATOM spells them (`kv_cache_dtype`, `enable-dp-attention`): from 0.1.6rc1.dev
releases on its parser accepts both spellings of every long option, before that only the registered one.
The server listens on `--server-port`; `--port` is the engine's internal port and left at its default.

Several options arrived on ATOM's main line after its last tag; the runner uses each only where every
release the image must satisfy (the recipe's `engine-versions`) has it, and says so otherwise:
- `--served-model-name` (from 0.1.6rc1.dev172): before it the server answers only to its `--model` value,
  so the client is pointed at that (`served_name`);
- `--spec-decode-acceptance-length` (from 0.1.6rc1.dev311): a throughput row's fixed acceptance length;
- `--pipeline-parallel-size` (dev195), `--decode-context-parallel-size` (dev151),
  `--prefill-context-parallel-size` (0.1.6rc0).
The versions are those setuptools_scm gives a build of that commit (tests/engines/sources.json pins them).
"""

from __future__ import annotations

from ci_tools.engines import Command, ServeSpec, release_number_problems, render_args, version_key

NAME = "atom"
LABEL = "ATOM"
LAUNCHER = ("python3", "-m", "atom.entrypoints.openai_server")
READY_PATHS = ("/health", "/v1/models")
VERSION_ARGV = ("python3", "-c", "import importlib.metadata as m; print(m.version('atom'))")
_TOPOLOGY = ("tensor-parallel-size", "tp", "data-parallel-size", "dp", "enable-expert-parallel", "enable-dp-attention",
             "pipeline-parallel-size", "pp", "decode-context-parallel-size", "dcp", "prefill-context-parallel-size",
             "pcp", "server-port", "host", "model", "served-model-name", "spec-decode-acceptance-length",
             "spec-decode-acceptance-rate")
# both spellings: ATOM's parser takes either from 0.1.6rc1.dev (and the runner renders these itself)
TOPOLOGY_ARGS = frozenset(n for name in _TOPOLOGY for n in (name, name.replace("-", "_")))

# the first version with each option (its commit's setuptools_scm version; test_atom.py holds these to the
# pinned parsers)
FIRST = {"served-model-name": "0.1.6rc1.dev172", "spec-decode-acceptance-length": "0.1.6rc1.dev311",
         "pipeline-parallel-size": "0.1.6rc1.dev195", "decode-context-parallel-size": "0.1.6rc1.dev151",
         "prefill-context-parallel-size": "0.1.6rc0"}
SINCE = {option: version_key(first) for option, first in FIRST.items()}


def has(option: str, versions: tuple[str, ...]) -> bool:
    """Every release the image must satisfy has OPTION (no engine-versions: the oldest, so no)."""
    return bool(versions) and all(version_key(v) >= SINCE[option] for v in versions)


def served_name(spec: ServeSpec) -> str:
    """The model name the server answers to: `--served-model-name` where it exists, else its `--model`."""
    return spec.served_model if has("served-model-name", spec.versions) else spec.model_path


def topology_args(spec: ServeSpec) -> list[str]:
    argv = ["--tensor-parallel-size", str(spec.tp)]
    if spec.ep > 1:
        argv.append("--enable-expert-parallel")       # experts over all tp ranks (ep = tp)
    if spec.dp_attn:
        argv.append("--enable-dp-attention")          # attention data-parallel over the tp ranks
    for option, size in (("pipeline-parallel-size", spec.pp), ("decode-context-parallel-size", spec.dcp),
                         ("prefill-context-parallel-size", spec.pcp)):
        if size > 1:
            argv += [f"--{option}", str(size)]
    return argv


def server(spec: ServeSpec) -> Command:
    args = ["--model", spec.model_path]
    if has("served-model-name", spec.versions):
        args += ["--served-model-name", spec.served_model]
    args += ["--host", spec.host, "--server-port", str(spec.port), *topology_args(spec), *render_args(spec.args)]
    return Command(LAUNCHER, tuple(args), NAME)


def topology_problems(spec: ServeSpec) -> list[str]:
    out = []
    if spec.ep not in (1, spec.tp):
        out.append(f"ATOM runs experts over all {spec.tp} ranks (--enable-expert-parallel) or none; ep={spec.ep} "
                   f"with tp={spec.tp} cannot be expressed")
    for option, size in (("pipeline-parallel-size", spec.pp), ("decode-context-parallel-size", spec.dcp),
                         ("prefill-context-parallel-size", spec.pcp)):
        if size > 1 and not has(option, spec.versions):
            out.append(f"ATOM has --{option} from {FIRST[option]} on; the recipe's engine-versions "
                       f"({', '.join(spec.versions) or 'none declared'}) do not all have it: declare the image's "
                       "ATOM release")
    return out


version_problems = release_number_problems


def synthetic_acceptance(length: float, versions: tuple[str, ...]) -> tuple[dict, dict, list[str]]:
    """(env, args, problems) fixing a throughput run's acceptance length: `--spec-decode-acceptance-length`."""
    if not has("spec-decode-acceptance-length", versions):
        return {}, {}, [f"ATOM fixes the acceptance length with --spec-decode-acceptance-length, which it has from "
                        f"{FIRST['spec-decode-acceptance-length']} on; the recipe's engine-versions "
                        f"({', '.join(versions) or 'none declared'}) do not all have it: remove synthetic-acceptance "
                        "(the run then measures the real acceptance) or declare a release that has it"]
    return {}, {"spec-decode-acceptance-length": f"{length:g}"}, []


# Why a multi-node ATOM point is refused (the multi-node planner says it in place of a worker command).
NO_WORKERS = "its multi-node points run behind atomesh, which ci-tools refuses (ci_tools/engines UNSERVED_FRONTENDS)"
