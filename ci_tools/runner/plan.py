"""From a matrix row to the exact commands of one benchmark job (pure: no process, no file).

Row keys read (everything else in the row is ignored):
  config-key      master entry; its `recipe:` locates the recipe (unless the row has `recipe`)
  recipe          optional: recipe path relative to the repository root
  image           must equal the recipe's image (pinned by digest)
  model           served model name, tokenizer default, model-store sub-path
  precision, framework, exp-name, spec-decoding   result file name and job.json
  runner          runners.yaml label: GPUs per node
  tp, ep, dp-attn, conc      the point to resolve in the recipe
  pp, dcp-size, pcp-size     must equal the recipe point's (default 1)
  kv-offloading, kv-offload-backend, total-cpu-dram-gb   DRAM KV offload: the recipe's `kv-offload`
                  must name the same backend; the runner sizes it from the per-node budget
  scenario-type   `agentic-coding` -> AIPerf AgentX replay; otherwise fixed sequence (isl, osl)
  isl, osl        fixed-sequence rows only
  duration        AgentX benchmark duration in seconds (default 3600)
  agentx-fast     true -> duration 1200 s and 1 warmup request per lane
  run-eval, eval-only   eval run: no simulated acceptance; the eval harness (ci_tools.evals) replaces AIPerf
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ci_tools import engines
from ci_tools.config.recipe import ResolvedPoint
from ci_tools.engines import routers
from ci_tools.errors import InputError
from ci_tools.evals.policy import split_simulated_acceptance
from ci_tools.sweep.buckets import profile_of
from ci_tools.sweep.row import MatrixRow, as_row
from ci_tools import names

AGENTIC = "agentic-coding"
AGENTX_DURATION_S = 3600
AGENTX_FAST_DURATION_S = 1200
AGENTX_WARMUP_PER_LANE = 10
AGENTX_FAST_WARMUP_PER_LANE = 1
AGENTX_SCENARIO = "inferencex-agentx-mvp"
AGENTX_MIN_LOCKED_DURATION_S = 900  # below this the scenario lock needs --unsafe-override
AGENTX_DATASET = "semianalysis-cc-traces-weka-062126"
AGENTX_DATASET_ENTRIES = 393
RANDOM_SEED = 42
FAILED_REQUEST_THRESHOLD = 0.10
FIXED_SEQ_PROMPTS_PER_LANE = 10

ENGINE_PORT = 8000          # where the client connects (the engine, or the router for DEP points)
DEP_WORKER_PORT = 30000     # the engine behind the router
MODELS_MOUNT = "/models"    # the model store inside the container
# the backends that start the engine in a container (the recipe's image); `process` runs the host's engine
CONTAINER_BACKENDS = ("docker", "slurm")

# SGLang's simulated speculative acceptance (spec §6): applied on throughput runs only
SIM_ACC_ENV = {"SGLANG_SIMULATE_ACC_METHOD": "match-expected",
               "SGLANG_SIMULATE_ACC_TOKEN_MODE": "real-draft-token"}
SIM_ACC_LEN = "SGLANG_SIMULATE_ACC_LEN"
# AIPerf's dataset-configuration timeouts (defaults 300 s / 600 s) are too short for the AgentX
# traces on a loaded runner; InferenceX raises both to 1800 s
AIPERF_TIMEOUTS_ENV = {"AIPERF_DATASET_CONFIGURATION_TIMEOUT": "1800",
                       "AIPERF_SERVICE_PROFILE_CONFIGURE_TIMEOUT": "1800"}


@dataclass
class Settings:
    """Runner-side settings (CLI options / environment), not part of the row."""

    model_store: str = "/mnt/models"
    hf_cache: str = "/mnt/hf_hub_cache"
    backend: str = "docker"               # docker | slurm | process (runner/backends.py)
    aiperf_bin: str = "aiperf"
    tokenizer: str | None = None          # default: the row's model
    dataset: str = AGENTX_DATASET         # or `synthetic:ISL:OSL`: the offline agentic path (ignore_eos)
    server_cmd: str | None = None         # replaces the engine command ({port}, {model} filled in)
    host: str = "127.0.0.1"
    port: int = ENGINE_PORT
    worker_port: int = DEP_WORKER_PORT    # the engine behind the router (DEP points)
    router_cmd: str | None = None         # replaces the router command ({port}, {worker_port}); tests
    ready_timeout_s: float = 4 * 3600.0   # big models load slowly; a hang still ends
    gpus_per_node: int | None = None
    runner_name: str = ""
    duration_override_s: float | None = None  # `--duration`: agentic benchmark seconds instead of the row's
    evals: Any = None                     # ci_tools.evals.policy.EvalPolicy: needed by eval rows only
    lm_eval_bin: str = "lm_eval"
    ci_tools: str = "ci-tools"            # the eval client is `ci-tools runner evals` on the runner
    root: str = "."                       # repository root (eval task include paths)

    @property
    def in_container(self) -> bool:
        return self.backend in CONTAINER_BACKENDS

    def model_path(self, model: str) -> str:
        """Where the engine finds the model: the store's mount point in a container, the store itself for a
        process on the host (the one source of the path; the node check looks at `model_store/model` on the
        host, which a container sees as this path)."""
        return f"{MODELS_MOUNT if self.in_container else self.model_store}/{model}"


@dataclass
class Proc:
    role: str                 # server | router | client
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)  # in addition to the inherited environment
    log: str = ""
    in_container: bool = True
    command: engines.Command | None = None   # server/router: launcher + the options the engine's parser sees
    # host folders the container sees at the same path: `mounts` writable (the profiler's traces), `read_only`
    # what the runner wrote for it (engine_files/); never the job directory, where the client's exports are
    mounts: tuple[str, ...] = ()
    read_only: tuple[str, ...] = ()
    files: tuple[tuple[str, str], ...] = ()  # (path, text) the runner writes for it (the engine command's files)


@dataclass
class JobPlan:
    row: MatrixRow
    point: ResolvedPoint
    scenario: str
    result_filename: str
    procs: list[Proc]
    base_url: str
    ready_urls: list[str]
    duration_s: float | None
    run_eval: bool
    gpus: int
    served_model: str
    image: str | None                     # the container's; None where the engine runs on the host (process)
    evals: dict | None = None             # eval rows: ci_tools.evals.policy.eval_spec (harness runs, tasks)

    def proc(self, role: str) -> Proc | None:
        return next((p for p in self.procs if p.role == role), None)

    @property
    def files(self) -> list[tuple[str, str]]:
        """(path, text) the commands read, written into the job directory before they start."""
        return [f for p in self.procs for f in p.files]

    @property
    def client_exports(self) -> tuple[str, ...]:
        """The folders of the job directory the client writes: hashed the moment it exits (custody.py)."""
        return (names.EVAL_DIR,) if self.run_eval else (names.AIPERF_DIR,)

    def job_json(self) -> dict:
        """What results/collectors need to know about the job (written to job.json)."""
        pt = self.point
        return {
            "result-filename": self.result_filename,
            "point": {"name": pt.name, "tp": pt.key.tp, "ep": pt.key.ep, "dp-attn": pt.key.dp_attn,
                      "conc": pt.key.conc, "gpus": self.gpus, "scenario": self.scenario,
                      "duration": self.duration_s, "model": self.served_model,
                      "config-key": self.row.get("config-key"), "runner": self.row.get("runner"),
                      "image": self.image, "run-eval": self.run_eval, "profile": profile_of(self.row),
                      "canary": self.row.get("canary"), **sequence_lengths(self.row, self.scenario)},
            "recipe": pt.as_dict(),
            "row": self.row.as_dict(),
            "commands": {p.role: {"argv": p.argv, "env": p.env, "log": p.log} for p in self.procs},
            "base-url": self.base_url,
            "ready-urls": self.ready_urls,
            "client-exports": list(self.client_exports),
            **({"evals": self.evals} if self.evals is not None else {}),
        }


def sequence_lengths(row: Mapping[str, Any], scenario: str) -> dict[str, int]:
    """The input and output lengths a fixed-sequence point asks for, as job.json's point records them
    (results key points by them); an agentic point replays traces of every length and records none."""
    return {} if scenario == AGENTIC else {"isl": int(row["isl"]), "osl": int(row["osl"])}


def _truthy(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on")
    return bool(value)


def check_row(row: Mapping[str, Any], container: bool = True) -> list[str]:
    """Problems with a row that make it unrunnable here (all of them); an image only where a container runs."""
    problems = []
    for key in ("tp", "conc", "image", "model") if container else ("tp", "conc", "model"):
        if key not in row:
            problems.append(f"the row has no `{key}`")
    if "prefill" in row or "decode" in row:
        problems.append("multi-node rows (prefill/decode) are not run by `runner run`; use the multi-node launcher")
    if isinstance(row.get("conc"), list):
        problems.append("`conc` must be one integer per job (multi-node rows carry lists)")
    scenario = row.get("scenario-type", "fixed-seq-len")
    if scenario != AGENTIC and ("isl" not in row or "osl" not in row):
        problems.append("fixed-sequence rows need `isl` and `osl`")
    return problems


def image_for_slurm(image: str) -> str:
    """Pyxis/enroot take one reference: with a digest, drop the tag so the digest alone decides."""
    if "@sha256:" in image:
        name, digest = image.split("@", 1)
        last = name.rsplit("/", 1)
        if ":" in last[-1]:
            name = name[: name.rfind(":")]
        return f"{name}@{digest}"
    return image


def serve_spec(point: ResolvedPoint, model: str, port: int, out_dir: str = ".",
               row: Mapping[str, Any] | None = None, model_path: str | None = None,
               extra_args: dict | None = None) -> engines.ServeSpec:
    from ci_tools.config.recipe import merge_options

    k = point.key
    args, options, _ = offload_args(point, row or {})
    return engines.ServeSpec(model_path=model_path or f"{MODELS_MOUNT}/{model}", served_model=model, host="0.0.0.0", port=port,
                             tp=k.tp, ep=k.ep, dp_attn=k.dp_attn, args={**dict(point.args), **args, **(extra_args or {})},
                             versions=point.engine_versions, pp=point.pp, dcp=point.dcp, pcp=point.pcp,
                             files_dir=out_dir, options=merge_options(point.options, options))


def engine_command(point: ResolvedPoint, model: str, port: int, out_dir: str = ".",
                   row: Mapping[str, Any] | None = None, model_path: str | None = None,
                   extra_args: dict | None = None) -> engines.Command:
    """The engine plug-in's server command for the point (ci_tools/engines/<engine>.py)."""
    plugin = engines.require(point.engine, point.recipe_file)
    return plugin.server(serve_spec(point, model, port, out_dir, row, model_path, extra_args))


def synthetic_acceptance(point: ResolvedPoint) -> tuple[dict, dict, list[str]]:
    """(env, engine args, problems) fixing a throughput run's acceptance length at the recipe's value: the
    plug-in's own switch where it has one (ATOM's --spec-decode-acceptance-length), else SGLang's variables."""
    if point.synthetic_acceptance is None:
        return {}, {}, []
    hook = getattr(engines.engine(point.engine), "synthetic_acceptance", None)
    if hook is not None:
        return hook(point.synthetic_acceptance, point.engine_versions)
    return {SIM_ACC_LEN: f"{point.synthetic_acceptance:g}", **SIM_ACC_ENV}, {}, []


def served_name(point: ResolvedPoint, model: str, model_path: str) -> str:
    """The model name the server answers to (the client's --model): the row's model, unless the engine
    release serves under its model path (ATOM before --served-model-name)."""
    hook = getattr(engines.engine(point.engine), "served_name", None)
    return hook(serve_spec(point, model, 0, model_path=model_path)) if hook is not None else model


def engine_argv(point: ResolvedPoint, model: str, settings: Settings, port: int) -> list[str]:
    return engine_command(point, model, port).argv


def router_command(point: ResolvedPoint, port: int, worker_port: int, out_dir: str = ".") -> engines.Command:
    r = point.router or {}
    rel = routers.release(str(r.get("name")), str(r.get("version")))
    if rel is None:
        raise InputError(f"{point.recipe_file}: point {point.name}: " + "; ".join(routers.problems(r)))
    ranks = getattr(engines.engine(point.engine), "data_parallel_ranks", lambda _s: 1)(serve_spec(point, "", 0))
    cmd = routers.command(rel, "0.0.0.0", port, [f"http://127.0.0.1:{worker_port}"], dict(r.get("args") or {}),
                          dp_ranks=ranks, install_dir=f"{out_dir}/{names.ROUTER_DIR}/{names.INSTALL_DIR}")
    if rel.requirements:
        # the router's container sees its own folder of the job directory (mounted, created with this note),
        # where the install guard puts the pinned wheels and its lock; nothing else of the job directory
        from dataclasses import replace

        cmd = replace(cmd, files=((f"{out_dir}/{names.ROUTER_DIR}/README", ROUTER_DIR_NOTE),))
    return cmd


ROUTER_DIR_NOTE = ("The router's own folder: the job installs the router release the image lacks here (pip "
                   "--require-hashes, once per job), the only part of the job directory its container sees.\n")


def router_argv(point: ResolvedPoint, port: int, worker_port: int) -> list[str]:
    return router_command(point, port, worker_port).argv


def session_header(point: ResolvedPoint) -> str | None:
    """The header the client puts AIPerf's session id in: the routing key of the declared router."""
    r = point.router or {}
    if r.get("routing-key") != "session-id":
        return None
    rel = routers.release(str(r.get("name")), str(r.get("version")))
    return rel.routing_key_header if rel else None


def client_argv(row: Mapping[str, Any], plan_model: str, settings: Settings, base_url: str, conc: int, scenario: str,
                duration: float | None, fast: bool, header: str | None, out_dir: str,
                tokenizer: str | None = None) -> list[str]:
    tokenizer = settings.tokenizer or tokenizer or plan_model
    argv = [settings.aiperf_bin, "profile", "--model", plan_model, "--tokenizer", tokenizer,
            "--url", base_url, "--endpoint-type", "chat", "--endpoint", "/v1/chat/completions", "--streaming",
            "--concurrency", str(conc), "--random-seed", str(RANDOM_SEED), "--use-server-token-count",
            "--failed-request-threshold", f"{FAILED_REQUEST_THRESHOLD:g}",
            "--ui-type", "none", "--no-gpu-telemetry"]
    synthetic = settings.dataset.startswith("synthetic:")
    if scenario == AGENTIC:
        per_lane = AGENTX_FAST_WARMUP_PER_LANE if fast else AGENTX_WARMUP_PER_LANE
        argv += ["--benchmark-duration", f"{duration:g}", "--warmup-request-count", str(per_lane * conc)]
        if synthetic:
            # the offline path: AIPerf's synthetic prompts, each answered with exactly OSL tokens (a random or
            # small model may end early; without ignore_eos AIPerf counts OSL mismatches and empty answers)
            _, isl_text, osl_text = settings.dataset.split(":")
            argv += ["--isl", isl_text, "--osl", osl_text, "--extra-inputs", "ignore_eos:true"]
        else:
            argv += ["--scenario", AGENTX_SCENARIO, "--public-dataset", settings.dataset,
                     "--num-dataset-entries", str(AGENTX_DATASET_ENTRIES)]
            if duration is not None and duration < AGENTX_MIN_LOCKED_DURATION_S:
                argv += ["--unsafe-override"]
        if header:
            argv += ["--session-header", header]
    else:
        isl, osl = int(row["isl"]), int(row["osl"])
        argv += ["--isl", str(isl), "--osl", str(osl), "--extra-inputs", "ignore_eos:true",
                 "--request-count", str(FIXED_SEQ_PROMPTS_PER_LANE * conc),
                 "--warmup-request-count", str(2 * conc)]
    return argv + ["--artifact-dir", f"{out_dir}/{names.AIPERF_DIR}"]


def _router_id(router: dict) -> tuple[str, str]:
    return str(router.get("name")), str(router.get("version"))


def image_problems(row: Mapping[str, Any], image: str) -> list[str]:
    """The row and its recipe must name one digest-pinned image (single- and multi-node)."""
    problems = []
    if str(row.get("image")) != image:
        problems.append(f"the row's image {row.get('image')!r} differs from the recipe's {image!r}; "
                        "the master entry and the recipe must pin the same digest")
    if "@sha256:" not in image:
        problems.append(f"the recipe image {image!r} is not pinned by digest (@sha256:...)")
    return problems


def run_shape(row: Mapping[str, Any], settings: Settings) -> tuple[str, bool, bool, float | None]:
    """(scenario, eval run, AgentX-fast, benchmark duration in seconds or None) of a row."""
    scenario = row.get("scenario-type", "fixed-seq-len")
    run_eval = _truthy(row.get("run-eval")) or _truthy(row.get("eval-only"))
    fast = _truthy(row.get("agentx-fast"))
    duration: float | None = None
    if scenario == AGENTIC and not run_eval:  # an eval runs its harness to the end, not for a duration
        duration = float(AGENTX_FAST_DURATION_S if fast else row.get("duration", AGENTX_DURATION_S))
        if settings.duration_override_s is not None:
            duration = settings.duration_override_s
    return scenario, run_eval, fast, duration


def dataset_problems(dataset: str) -> list[str]:
    """`synthetic:ISL:OSL` must give two positive token counts."""
    if not dataset.startswith("synthetic:"):
        return []
    parts = dataset.split(":")
    if len(parts) != 3 or not all(p.isdigit() and int(p) > 0 for p in parts[1:]):
        return [f"--dataset {dataset!r}: the synthetic dataset is synthetic:ISL:OSL, two positive token counts "
                "(e.g. synthetic:1024:256)"]
    return []


def point_problems(row: Mapping[str, Any], point: ResolvedPoint) -> list[str]:
    """The row's parallelism beyond tp/ep/dp-attn and its KV offload must be the point's."""
    problems = []
    for key, have in (("pp", point.pp), ("dcp-size", point.dcp), ("pcp-size", point.pcp)):
        want = int(row.get(key, 1) or 1)
        if want != have:
            problems.append(f"the row's `{key}: {want}` differs from {point.recipe_file} point {point.name}'s "
                            f"({have}); set `{key}: {want}` on the point")
    kv = row.get("kv-offloading") or "none"
    off = point.kv_offload      # how the recipe offloads when a row does (an entry may mix both kinds)
    if kv != "none":
        backend = (row.get("kv-offload-backend") or {}).get("name")
        if not off:
            problems.append(f"the row offloads KV ({kv}, {backend}), but {point.recipe_file} has no `kv-offload`; "
                            f"add kv-offload: {{backend: {backend}, medium: {kv}}}")
        elif (off.get("medium"), off.get("backend")) != (kv, backend):
            problems.append(f"the row offloads KV to {kv} with {backend}, but {point.recipe_file}'s kv-offload is "
                            f"{off.get('medium')}/{off.get('backend')}; make them the same")
        elif int(row.get("total-cpu-dram-gb") or 0) <= 0:
            problems.append("the row offloads KV to DRAM but has no total-cpu-dram-gb budget; plan it with "
                            "`ci-tools plan` (it sizes the budget from runners.yaml)")
    return problems


def offload_args(point: ResolvedPoint, row: Mapping[str, Any]) -> tuple[dict, dict, dict]:
    """(engine args, engine file options, env) of the point's KV offload, sized from the row's budget."""
    off = point.kv_offload
    if not off or (row.get("kv-offloading") or "none") == "none":
        return {}, {}, {}
    budget = int(row.get("total-cpu-dram-gb") or 0)
    plugin = engines.engine(point.engine)
    args, options = plugin.offload(str(off.get("backend")), budget, point.gpus) \
        if plugin is not None and hasattr(plugin, "offload") else ({}, {})
    env = {str(k): str(v) for k, v in (off.get("env") or {}).items()}
    if not args and not options:
        # a backend the plug-in does not size is configured by the recipe's kv-offload env/args, with
        # InferenceX's documented variable for the budget
        env["TOTAL_CPU_DRAM_GB"] = str(budget)
    return {**dict(off.get("args") or {}), **args}, options, env


def build_plan(row: Mapping[str, Any], point: ResolvedPoint, settings: Settings, out_dir: str) -> JobPlan:
    row = as_row(row)
    container = settings.in_container
    problems = check_row(row, container) + (image_problems(row, point.image) if container else []) \
        + point_problems(row, point) + dataset_problems(settings.dataset)
    scenario, run_eval, fast, duration = run_shape(row, settings)
    plugin = engines.engine(point.engine)
    if plugin is None:
        problems.append(f"engine {point.engine!r} of {point.recipe_file} has no ci-tools plug-in "
                        f"(known: {', '.join(engines.ENGINE_NAMES)})")
    else:
        problems += [f"{point.recipe_file}: {p}" for p in plugin.version_problems(point.engine_versions)]
        problems += [f"{point.recipe_file} point {point.name}: {p}"
                     for p in plugin.topology_problems(serve_spec(point, str(row.get("model")), 0))]
        if not run_eval:
            problems += [f"{point.recipe_file}: {p}" for p in synthetic_acceptance(point)[2]]
    problems += [f"{point.recipe_file} point {point.name}: {p}" for p in routers.problems(point.router)]
    declared = row.get("router")
    if isinstance(declared, dict) and point.router and _router_id(declared) != _router_id(point.router):
        problems.append(f"the master declares router {' '.join(_router_id(declared))} but {point.recipe_file} point "
                        f"{point.name} starts {' '.join(_router_id(point.router))}; make them name the same release")
    if isinstance(declared, dict) and not point.router:
        problems.append(f"the master declares router {' '.join(_router_id(declared))} but {point.recipe_file} point "
                        f"{point.name} starts no router")
    gpus = point.gpus
    if settings.gpus_per_node is not None and gpus > settings.gpus_per_node:
        problems.append(f"the point needs {gpus} GPUs; runner {row.get('runner')!r} has {settings.gpus_per_node} per node")
    if problems or plugin is None:      # no plug-in is one of the problems
        raise InputError("; ".join(problems))

    model = str(row["model"])
    dep = point.router is not None
    engine_port = settings.worker_port if dep else settings.port
    env = {**dict(point.env), **offload_args(point, row)[2]}
    removed: list[str] = []
    acceptance_args: dict = {}
    if run_eval:
        env, removed = split_simulated_acceptance(env)
    else:
        acceptance_env, acceptance_args, _ = synthetic_acceptance(point)
        env.update(acceptance_env)
    # the engine reads its files (TensorRT-LLM's options file) where the runner writes them: a folder of its
    # own in the job directory, which the container sees read-only at the same path; the rest of the job
    # directory (the client's exports) it never sees. A --server-cmd smoke run keeps the files and the mount.
    command = engine_command(point, model, engine_port, f"{out_dir}/{names.ENGINE_FILES_DIR}", row,
                             settings.model_path(model), acceptance_args)
    served = served_name(point, model, settings.model_path(model))
    files = command.files
    # a --server-cmd smoke run records no engine command: what runs is the test's own argv
    server_command: engines.Command | None = command
    if settings.server_cmd:
        argv = [a.format(port=engine_port, model=model) for a in shlex.split(settings.server_cmd)]
        server_command = None
    else:
        argv = command.argv
    file_dirs = tuple(dict.fromkeys(path.rsplit("/", 1)[0] for path, _ in files))
    procs = [Proc("server", argv, env, names.SERVER_LOG, command=server_command, read_only=file_dirs, files=files)]
    engine_url = f"http://{settings.host}:{engine_port}"
    ready = [f"{engine_url}{path}" for path in plugin.READY_PATHS]
    base_url = engine_url
    header = None
    if dep:
        rcmd = router_command(point, settings.port, engine_port, out_dir)
        if settings.router_cmd:
            rargv = [a.format(port=settings.port, worker_port=engine_port) for a in shlex.split(settings.router_cmd)]
            procs.append(Proc("router", rargv, {}, names.ROUTER_LOG))
        else:
            # a router the image lacks is installed into its own folder of the job directory: the one part
            # of it the router's container sees (writable), never the client's exports
            router_dirs = tuple(dict.fromkeys(path.rsplit("/", 1)[0] for path, _ in rcmd.files))
            procs.append(Proc("router", rcmd.argv, {}, names.ROUTER_LOG, command=rcmd, mounts=router_dirs,
                              files=rcmd.files))
        base_url = f"http://{settings.host}:{settings.port}"
        ready += [f"{base_url}/health", f"{base_url}/v1/models"]
        header = session_header(point)
    rf = names.result_filename({**row, "tp": point.key.tp, "ep": point.key.ep, "dp-attn": point.key.dp_attn,
                                 "conc": point.key.conc}, settings.runner_name)
    if not run_eval:
        # AIPerf leaves its memory-mapped dataset files in the system temp dir; keep them in the job
        # directory instead, where the job removes them (a runner host would fill up otherwise)
        procs.append(Proc("client", client_argv(row, served, settings, base_url, point.key.conc, scenario,
                                                duration, fast, header, out_dir, tokenizer=model),
                          {"AIPERF_DATASET_MMAP_BASE_PATH": f"{out_dir}/{names.AIPERF_TMP}",
                           "HF_HUB_CACHE": settings.hf_cache, **AIPERF_TIMEOUTS_ENV},
                          names.CLIENT_LOG, in_container=False))
    evals = None
    if run_eval:
        evals = _eval_plan(row, served, base_url, removed, settings, out_dir)
        procs.append(Proc("client", [settings.ci_tools, "runner", "evals", out_dir, "--base-url", base_url],
                          {}, names.CLIENT_LOG, in_container=False))
    return JobPlan(row=row, point=point, scenario=scenario, result_filename=rf, procs=procs, base_url=base_url,
                   ready_urls=ready, duration_s=duration, run_eval=run_eval, gpus=gpus, served_model=model,
                   image=point.image if container else None, evals=evals)


def _eval_plan(row: MatrixRow, model: str, base_url: str, removed: list[str], settings: Settings, out_dir: str) -> dict:
    """The harness runs of an eval row (ci_tools.evals.policy), from the policy's `evals:` section."""
    from ci_tools.evals.policy import eval_spec, harness_runs

    if settings.evals is None:
        raise InputError("eval rows need the `evals:` section of the policy file (suites, harnesses) to know "
                         "which harness and tasks to run")
    runs = harness_runs(row, settings.evals, model=model, base_url=base_url, lm_eval_bin=settings.lm_eval_bin,
                        root=settings.root, out_dir=out_dir)
    return {**eval_spec(row, settings.evals, runs, removed), "base-url": base_url}
