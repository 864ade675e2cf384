"""`runner run`, `runner profile` and `runner acceptance` planned from what was read (pure).

`inputs.py` reads the row, its recipe, the runner's hardware facts, the eval policy and the trusted
image policy once, into a `RunInputs`; `plan_job` decides everything from that value alone: the image
check, the point, the `JobPlan` (plan.py) or `MultiNodePlan` (disagg.py), the transforms of a profile or
an acceptance cell, the budget and its limits, the host, the `--dry-run` text, the step outputs and the
`JobSpec` the supervisor runs (produce.py). Every refusal is an InputError/UsageError; `run_flow.py`
runs the result.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ci_tools import names
from ci_tools.config.recipe import Recipe, ResolvedPoint, resolve_point
from ci_tools.errors import InputError, UsageError
from ci_tools.runner.backends import Host, job_id, remote_url, render_dry_run, slurm_minutes
from ci_tools.runner.budget import Budget, job_budget
from ci_tools.runner.plan import AGENTX_DATASET, CONTAINER_BACKENDS, JobPlan, Settings, build_plan
from ci_tools.sweep.row import MatrixRow, MultiNodeRow, SingleNodeRow

if TYPE_CHECKING:
    from ci_tools.evals.policy import EvalPolicy
    from ci_tools.runner.disagg import MultiNodePlan
    from ci_tools.runner.profile import ProfileCalls
    from ci_tools.runner.spec import JobSpec

# A dry run plans every row a sweep has, one process each: what only a multi-node row, a profile, an
# acceptance cell or the run itself needs (the JobSpec's producers, disagg, profile) is imported where
# it is used, which keeps `runner run --dry-run` at its measured cost (benchmarks/runner_dry_run.py).

@dataclass(frozen=True)
class RunRequest:
    """`runner run`'s options, as the command parsed them."""
    row_path: Path
    backend: str = "docker"
    out: Path = Path("out")
    dry_run: bool = False
    root: Path = Path(".")
    aiperf_bin: str = "aiperf"
    lm_eval_bin: str = "lm_eval"
    model_store: str = "/mnt/models"
    hf_cache: str = "/mnt/hf_hub_cache"
    squash_dir: str = "/mnt/squash"
    tokenizer: str | None = None
    dataset: str | None = None
    server_cmd: str | None = None
    router_cmd: str | None = None
    port: int = 8000
    worker_port: int = 30000
    gpus: str | None = None
    queue_timeout: float = 3600.0
    ready_timeout: float = 4 * 3600.0
    client_timeout: float | None = None
    skip_node_check: bool = False
    no_telemetry: bool = False
    duration_override: float | None = None
    runner_name: str = ""
    image_policy: Path | None = None        # the trusted checkout's policy: its `images.allowed` (config/images.py)


@dataclass(frozen=True)
class ImagePolicy:
    """The trusted policy's `images.allowed` and the file it came from (for the refusal's words)."""
    patterns: tuple[str, ...]
    file: str


@dataclass(frozen=True)
class AcceptanceCell:
    """`runner acceptance`: one SPEED-Bench collection cell, the prompts file and the measuring run."""
    cell: Mapping[str, Any]
    dataset: str | None = None
    run_url: str | None = None


@dataclass(frozen=True)
class RunInputs:
    """Everything `runner run` reads, read once (inputs.py) before anything is planned."""
    request: RunRequest
    row: SingleNodeRow | MultiNodeRow
    recipe: Recipe
    hardware: Mapping[str, Any]             # runners.yaml `hardware:` of the row's runner ({} when none)
    root: str                               # the repository root, absolute
    out: Path                               # the job directory: absolute, but as given for --dry-run
    port: int                               # free ones picked for --port 0 / --worker-port 0
    worker_port: int
    gpus: str | None = None                 # --gpus, else CUDA_VISIBLE_DEVICES, as given; None: all
    evals: EvalPolicy | None = None         # the policy's `evals:`, for eval rows
    images: ImagePolicy | None = None       # None: nothing to check (no --image-policy, or no container)
    profile: tuple[int | None] | None = None    # `runner profile`: (requests in the window,)
    acceptance: AcceptanceCell | None = None    # `runner acceptance`


@dataclass(frozen=True)
class Traces:
    """What `runner profile` merges after the job: the folder the engine writes its traces into."""
    trace_dir: Path
    plan: JobPlan
    calls: ProfileCalls


@dataclass(frozen=True)
class AcceptanceRecord:
    """What acceptance.json is written from after the job (a collection cell, or a speculative eval row)."""
    engine: str
    cell: Mapping[str, Any] | None
    run_url: str | None
    mtp: int | None


@dataclass(frozen=True)
class PlannedJob:
    """A planned job: what `--dry-run` prints, the step outputs, the job the supervisor runs and what
    is read from its directory after it."""
    commands: str
    outputs: dict[str, str]
    result_filename: str
    status_path: Path
    stopped: str                  # what the failure message says was stopped
    out: Path                     # the job directory (absolute unless --dry-run)
    spec: Callable[[], JobSpec]   # the job the supervisor runs, produced when it runs (a dry run never needs it)
    done: str = ""                # what the text output says after a successful run (default: next step)
    traces: Traces | None = None
    acceptance: AcceptanceRecord | None = None


def plan_job(inputs: RunInputs) -> PlannedJob:
    """Everything `runner run` decides before it starts anything, from the inputs alone."""
    refusal = image_refusal(inputs)
    if refusal:
        raise InputError(f"not started: {refusal}")
    if isinstance(inputs.row, MultiNodeRow):
        return _plan_multinode(inputs, inputs.row)
    return _plan_single(inputs, inputs.row)


def image_refusal(inputs: RunInputs) -> str | None:
    """Why an image the trusted policy does not allow may not start (the container gets HF_TOKEN, and in
    a trusted sweep the recipe is a fork's); the process backend runs the host's engine, no image."""
    if inputs.images is None or inputs.request.backend not in CONTAINER_BACKENDS:
        return None
    from ci_tools.config.images import problem as image_problem

    recipe = inputs.recipe
    for image in sorted({recipe.image, str(inputs.row.get("image") or recipe.image)}):
        why = image_problem(image, inputs.images.patterns, inputs.images.file)
        if why:
            return why
    return None


def gpu_devices(text: str | None) -> list[str] | None:
    """The GPUs this runner was given (--gpus / CI_TOOLS_GPUS, else CUDA_VISIBLE_DEVICES); None: all."""
    if text is None:
        return None
    devices = [d.strip() for d in text.split(",") if d.strip()]
    if not devices:
        raise UsageError("the runner was given no GPU (--gpus / CUDA_VISIBLE_DEVICES is empty)")
    return devices


def files_text(files: list[tuple[str, str]]) -> str:
    """The dry-run's view of the files the engine commands read (written into the job directory)."""
    out = ""
    for path, text in files:
        out += f"\n# file {path} (written before the engine starts)\n" + "".join(f"#   {line}\n" for line in
                                                                              text.splitlines())
    return out


def _gpus_per_node(hardware: Mapping[str, Any]) -> int | None:
    return int(hardware["gpus-per-node"]) if hardware.get("gpus-per-node") else None


def _point(inputs: RunInputs, row: SingleNodeRow) -> ResolvedPoint:
    """The row's recipe point; a collection cell's with real speculation at its step count."""
    try:
        point = resolve_point(inputs.recipe, int(row["tp"]), int(row.get("ep", 1)), bool(row.get("dp-attn", False)),
                              int(row["conc"]))
    except KeyError as exc:
        raise InputError(f"{inputs.request.row_path}: the row has no `{exc.args[0]}`") from None
    if inputs.acceptance is not None:   # no simulated acceptance anywhere
        from ci_tools.evals.policy import split_simulated_acceptance
        from ci_tools.runner.acceptance import spec_args

        point = replace(point, args=spec_args(point.engine, point.args, int(inputs.acceptance.cell["mtp"])),
                        env=split_simulated_acceptance(dict(point.env))[0], synthetic_acceptance=None)
    return point


def _single_settings(inputs: RunInputs) -> Settings:
    req = inputs.request
    return Settings(model_store=req.model_store, hf_cache=req.hf_cache, backend=req.backend, aiperf_bin=req.aiperf_bin,
                    tokenizer=req.tokenizer, dataset=req.dataset or AGENTX_DATASET, server_cmd=req.server_cmd,
                    router_cmd=req.router_cmd, port=inputs.port, worker_port=inputs.worker_port,
                    ready_timeout_s=req.ready_timeout, gpus_per_node=_gpus_per_node(inputs.hardware),
                    runner_name=req.runner_name, duration_override_s=req.duration_override,
                    lm_eval_bin=req.lm_eval_bin, root=inputs.root, evals=inputs.evals)


def speculative(row: MatrixRow, point: ResolvedPoint) -> bool:
    return str(row.get("spec-decoding") or "none") != "none" or point.synthetic_acceptance is not None or \
        any(str(k).startswith("speculative-") for k in point.args)


def speculative_steps(point: ResolvedPoint) -> int | None:
    """The point's speculative step count, when it names exactly one."""
    from ci_tools.config.acceptance import _spec_steps

    steps = _spec_steps({"args": dict(point.args)})
    if point.engine == "vllm" and isinstance(point.args.get("speculative-config"), str):
        try:
            steps = {int(json.loads(point.args["speculative-config"])["num_speculative_tokens"])}
        except (ValueError, KeyError, TypeError):
            steps = set()
    return next(iter(steps)) if len(steps) == 1 else None


def _snapshots(inputs: RunInputs, plan: JobPlan, point: ResolvedPoint,
               settings: Settings) -> tuple[tuple[str, str], ...]:
    """The engine's acceptance metrics read around the client: a collection cell, a speculative eval row."""
    if inputs.acceptance is None and (plan.evals is None or not speculative(inputs.row, point)):
        return ()
    from ci_tools.runner.acceptance import snapshots

    engine_url = plan.ready_urls[0].rsplit("/", 1)[0]   # the engine itself, not the router
    return tuple((remote_url(engine_url + path, settings, inputs.request.backend), name)
                 for path, name in snapshots(point.engine))


def _speedbench(plan: JobPlan, point: ResolvedPoint, cell: AcceptanceCell) -> JobPlan:
    """A collection cell's client: SPEED-Bench's coding prompts in the cell's thinking mode, no duration."""
    from ci_tools.runner.acceptance import speedbench_argv

    procs = [replace(p, argv=speedbench_argv(p.argv, point.key.conc, bool(cell.cell["thinking"]), cell.dataset))
             if p.role == "client" else p for p in plan.procs]
    return replace(plan, procs=procs, duration_s=None)


def _budget(inputs: RunInputs, plan: JobPlan) -> Budget:
    """The job's time budget, refused when it cannot fit the job's timeout or the runner's Slurm limit."""
    req = inputs.request
    client_timeout = req.client_timeout
    if client_timeout is None and plan.evals is not None:
        client_timeout = plan.evals["timeout-s"]   # the policy's limit for the whole harness batch
    budget = job_budget(plan.duration_s, queue_s=req.queue_timeout, ready_s=req.ready_timeout, client_s=client_timeout)
    if budget.problems():
        raise InputError(f"{req.row_path}: " + "; ".join(budget.problems()))
    slurm = inputs.hardware.get("slurm") or {}
    if req.backend == "slurm" and slurm.get("max-time-minutes") and \
            slurm_minutes(budget.allocation_s) > int(slurm["max-time-minutes"]):
        raise InputError(f"the job's Slurm allocation needs --time={slurm_minutes(budget.allocation_s)} min, over "
                         f"the {slurm['max-time-minutes']} min runners.yaml allows runner {inputs.row.get('runner')!r}; "
                         "lower --ready-timeout or the row's duration, or raise max-time-minutes")
    return budget


def _host(inputs: RunInputs, plan: JobPlan, budget: Budget) -> Host:
    """Where the job runs: its label, the GPUs it was given (enough for the point), the Slurm settings."""
    req = inputs.request
    devices = gpu_devices(inputs.gpus)
    if devices is not None and req.backend != "slurm" and len(devices) < plan.gpus:
        raise InputError(f"the point needs {plan.gpus} GPUs but this runner was given {len(devices)} "
                         f"({','.join(devices)}); give it more (CI_TOOLS_GPUS / CUDA_VISIBLE_DEVICES) or run the "
                         "row on a larger runner")
    slurm = inputs.hardware.get("slurm") or {}
    return Host(label=job_id(plan, str(inputs.out)), runner=req.runner_name, gpu_devices=devices,
                partition=slurm.get("partition"), account=slurm.get("account"),
                exclusive=bool(slurm.get("exclusive", True)), time_limit_s=budget.allocation_s,
                squash_dir=req.squash_dir, vendor=str(inputs.hardware.get("gpu-vendor") or "nvidia"))


def _outputs(inputs: RunInputs, plan: JobPlan, profiled: bool) -> tuple[dict[str, str], str]:
    """The step outputs and what the text output says after a successful run."""
    out = inputs.request.out
    outputs = names.github_outputs(plan.result_filename, str(out))
    done = ""
    if profiled:
        outputs = {**outputs, "trace-dir": str(out / names.PROFILE_TRACE_DIR),
                   "artifact-profile": names.PROFILE_ARTIFACT_PREFIX + plan.result_filename}
    if inputs.acceptance is not None:
        outputs = {**outputs, "acceptance-file": str(out / names.ACCEPTANCE_JSON),
                   "artifact-acceptance": names.ACCEPTANCE_ARTIFACT_PREFIX + str(inputs.acceptance.cell["id"])}
        done = (f"done: the measured acceptance length is in {out / names.ACCEPTANCE_JSON}; next: "
                f"`ci-tools config acceptance-update` over the collected cells")
    if profiled:   # the profiled window's numbers are perturbed by the profiler: no result to process
        from ci_tools.runner.profile import MERGED_TRACE, README

        traces = out / names.PROFILE_TRACE_DIR
        done = (f"done: traces merged into {traces / (MERGED_TRACE + '.gz')}; next: open it in https://ui.perfetto.dev "
                f"({traces / README} says how); the profiled window's numbers are no benchmark result")
    return outputs, done


def _plan_single(inputs: RunInputs, row: SingleNodeRow) -> PlannedJob:
    req = inputs.request
    point = _point(inputs, row)
    settings = _single_settings(inputs)
    plan = build_plan(row, point, settings, str(inputs.out))
    trace_dir = inputs.out / names.PROFILE_TRACE_DIR
    calls = None
    if inputs.profile is not None:
        from ci_tools.runner.profile import profile_plan

        plan, calls = profile_plan(plan, str(trace_dir), inputs.profile[0])
    snaps = _snapshots(inputs, plan, point, settings)
    if inputs.acceptance is not None:
        plan = _speedbench(plan, point, inputs.acceptance)
    budget = _budget(inputs, plan)
    host = _host(inputs, plan, budget)
    text = render_dry_run(plan, req.backend, settings, host) + files_text(plan.files)
    if calls is not None:
        calls, shown = _remote_calls(calls, settings, req.backend)
        text += shown
    if snaps:
        text += "\n# acceptance: the engine's metrics, before and after the client (runner/acceptance.py)\n"
        text += "".join(f"#   GET {url}\n" for url, _ in snaps)
    outputs, done = _outputs(inputs, plan, calls is not None)
    cell = inputs.acceptance
    return PlannedJob(commands=text, outputs=outputs, result_filename=plan.result_filename,
                      status_path=inputs.out / names.STATUS_JSON, stopped="all processes of this job were stopped",
                      out=inputs.out, done=done,
                      spec=partial(_single_spec, plan, settings, host, budget, inputs, text, calls, snaps),
                      traces=Traces(trace_dir, plan, calls) if calls is not None else None,
                      acceptance=AcceptanceRecord(point.engine, cell.cell if cell else None,
                                                  cell.run_url if cell else None, speculative_steps(point))
                      if snaps else None)


def _remote_calls(calls: ProfileCalls, settings: Settings, backend: str) -> tuple[ProfileCalls, str]:
    """The profile calls as the runner makes them (to a Slurm node's address), and their dry-run lines."""
    from ci_tools.runner.profile import ProfileCalls, render_calls

    calls = ProfileCalls(*(tuple((remote_url(u, settings, backend), b) for u, b in side)
                           for side in (calls.start, calls.stop)))
    return calls, render_calls(calls)


def _single_spec(plan: JobPlan, settings: Settings, host: Host, budget: Budget, inputs: RunInputs, text: str,
                 calls: ProfileCalls | None, snaps: tuple[tuple[str, str], ...]) -> JobSpec:
    """The single-node job through its backend, with the profile calls or the metric reads around the client."""
    from ci_tools.runner.produce import single_job, with_profile, with_snapshots

    req = inputs.request
    spec = single_job(plan, req.backend, settings, host, budget, str(inputs.out), text,
                      check_node=not req.skip_node_check, telemetry=not req.no_telemetry)
    if calls is not None:
        spec = with_profile(spec, calls, str(inputs.out / names.PROFILE_TRACE_DIR))
    if snaps:
        spec = with_snapshots(spec, snaps)
    return spec


def _plan_multinode(inputs: RunInputs, row: MultiNodeRow) -> PlannedJob:
    """A prefill/decode row: one allocation, one srun step per worker, the frontend, a client per concurrency."""
    from ci_tools.config.disagg import is_disagg, resolve_disagg
    from ci_tools.runner import disagg_slurm
    from ci_tools.runner.disagg import SlurmSettings, build_multinode_plan

    req, recipe = inputs.request, inputs.recipe
    if not is_disagg(recipe.data):
        raise InputError(f"{recipe.file}: the row is multi-node (prefill/decode), but this is not a disaggregated "
                         "recipe (mode: disaggregated); see docs/runner-operator.md, 'Disaggregated (multi-node) points'")
    if req.backend != "slurm":
        raise UsageError(f"multi-node rows run on Slurm only (--backend slurm, or CI_TOOLS_BACKEND=slurm on the "
                         f"runner); got --backend {req.backend}")
    concs = row.get("conc")
    concs = [int(c) for c in concs] if isinstance(concs, list) else ([int(concs)] if concs is not None else None)
    point = resolve_disagg(recipe, row.get("prefill") or {}, row.get("decode") or {}, concs,
                           (row.get("kv-offloading") or "none") != "none")
    settings = Settings(model_store=req.model_store, hf_cache=req.hf_cache, backend=req.backend, aiperf_bin=req.aiperf_bin,
                        tokenizer=req.tokenizer, dataset=req.dataset or AGENTX_DATASET, server_cmd=req.server_cmd,
                        port=inputs.port, ready_timeout_s=req.ready_timeout, runner_name=req.runner_name,
                        duration_override_s=req.duration_override, lm_eval_bin=req.lm_eval_bin,
                        root=inputs.root, evals=inputs.evals)
    slurm = SlurmSettings.from_hardware(dict(inputs.hardware), queue_timeout_s=req.queue_timeout,
                                        client_timeout_s=req.client_timeout, router_cmd=req.router_cmd,
                                        worker_port_base=inputs.worker_port, runner=req.runner_name or "",
                                        squash_dir=req.squash_dir)
    out = str(inputs.out)
    plan = build_multinode_plan(row, point, settings, out, _gpus_per_node(inputs.hardware), slurm)
    text = disagg_slurm.render_dry_run(plan, out) + files_text(plan.files)
    rf = plan.clients[0].result_filename if len(plan.clients) == 1 else plan.result_filename
    return PlannedJob(commands=text, outputs=names.github_outputs(rf, str(req.out)),
                      result_filename=plan.result_filename, status_path=inputs.out / names.STATUS_JSON,
                      stopped="the allocation and every step of this job were stopped", out=inputs.out,
                      spec=partial(_multinode_spec, plan, out, text))


def _multinode_spec(plan: MultiNodePlan, out: str, text: str) -> JobSpec:
    from ci_tools.runner.produce import multinode_job

    return multinode_job(plan, out, text)
