"""The runner commands' flows (shell): row -> recipe -> job, cleanup, digest.

`runner run`: read the row, find its recipe (the row's `recipe`, or its master entry's), read the
runner's `hardware:` facts and, for eval rows, the policy's `evals:`; plan the job with the pure
modules (`plan`, `disagg`, `backends`, `budget`); hand back a `PreparedJob` whose `commands` is the
`--dry-run` text and whose `run()` turns the plan into a `JobSpec` (produce.py) and runs it
(`supervise.supervise`). The CLI writes the step outputs, prints, and turns `JobFailed` into an exit code.
"""

from __future__ import annotations

import datetime
import json
import os
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ci_tools import names
from ci_tools.errors import InputError, UsageError
from ci_tools.runner.digest import Digest
from ci_tools.sweep.row import MatrixRow, MultiNodeRow, SingleNodeRow, parse_row


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
class PreparedJob:
    """A planned job: what `--dry-run` prints, the step outputs, and how to start it."""
    commands: str
    outputs: dict[str, str]
    result_filename: str
    status_path: Path
    stopped: str                  # what the failure message says was stopped
    # runs the job (raises runner.spec.JobFailed); calls its argument with the sha256 of the record of the
    # client's exports the moment the client exited (runner/custody.py: the step output)
    run: Callable[[Callable[[str], None] | None], None]
    done: str = ""                # what the text output says after a successful run (default: next step)

    def execute(self, on_sealed: Callable[[str], None] | None = None):
        """Run the job; the `JobFailed` that ended it, or None when the client finished."""
        from ci_tools.runner.spec import JobFailed

        try:
            self.run(on_sealed)
        except JobFailed as exc:
            return exc
        return None


def load_json_row(path: Path) -> dict:
    """The one JSON object of a row file (or of a one-element list, as a matrix output holds it)."""
    from ci_tools.yaml.load import read_text

    try:
        row = json.loads(read_text(path))
    except ValueError as exc:
        raise InputError(f"{path}: not valid JSON: {exc}") from None
    if isinstance(row, list) and len(row) == 1:
        row = row[0]
    if not isinstance(row, dict):
        raise InputError(f"{path}: expected one matrix row (a JSON object)")
    return row


def load_row(path: Path) -> SingleNodeRow | MultiNodeRow:
    """The matrix row of a `--row` file, read and checked once."""
    return parse_row(load_json_row(path), str(path))


def recipe_path(row: MatrixRow, root: Path, row_path: Path) -> Path:
    from ci_tools.config.load import default_master_paths, read_masters

    if row.get("recipe"):
        return root / str(row["recipe"])
    key = row.get("config-key")
    if not key:
        raise InputError(f"{row_path}: the row has neither `recipe` nor `config-key`, so its recipe cannot be "
                         "found; pass a row printed by `ci-tools plan` or `ci-tools matrix`")
    masters = read_masters(default_master_paths(root), root)
    entry = masters.entries.get(key)
    if entry is None:
        raise InputError(f"{row_path}: config key {key!r} is not in any master config under {root}")
    if not isinstance(entry, dict) or not entry.get("recipe"):
        raise InputError(f"master entry {key!r} has no `recipe:` field; `runner run` serves recipe entries only")
    return root / str(entry["recipe"])


def hardware_of(row: MatrixRow, root: Path) -> dict:
    """runners.yaml `hardware:` facts of the row's runner label ({} when none)."""
    from ci_tools.config.load import read_runners

    path = root / names.RUNNERS
    if not path.is_file() or not row.get("runner"):
        return {}
    hw = (read_runners(path, root).data or {}).get("hardware") or {}
    return hw.get(row["runner"]) or {}


def free_ports(backend: str, port: int, worker_port: int) -> tuple[int, int]:
    """Port 0: one the kernel says is free now (another job on a shared host holds its own)."""
    if backend == "slurm":
        raise UsageError("--port 0 / --worker-port 0 pick free ports on this host, but with slurm the engine runs "
                         "on a compute node; give the ports explicitly (or hold the node with exclusive: true)")
    socks = []
    try:
        picked = []
        for value in (port, worker_port):
            if value:
                picked.append(value)
                continue
            s = socket.socket()
            s.bind(("0.0.0.0", 0))
            socks.append(s)
            picked.append(s.getsockname()[1])
        return picked[0], picked[1]
    finally:
        for s in socks:
            s.close()


def gpu_list(gpus: str | None) -> list[str] | None:
    """The GPUs this runner was given: --gpus / CI_TOOLS_GPUS, else CUDA_VISIBLE_DEVICES, else all."""
    text = gpus if gpus is not None else os.environ.get("CUDA_VISIBLE_DEVICES")
    if text is None:
        return None
    devices = [d.strip() for d in text.split(",") if d.strip()]
    if not devices:
        raise UsageError("the runner was given no GPU (--gpus / CUDA_VISIBLE_DEVICES is empty)")
    return devices


def eval_policy(row: MatrixRow, root: Path):
    """The policy's `evals:` section, for eval rows only (other rows run without a policy file)."""
    from ci_tools.evals.policy import is_eval_row, policy_from_doc
    from ci_tools.yaml.load import load_yaml_file

    if not is_eval_row(row):
        return None
    path = root / names.POLICY
    if not path.is_file():
        raise InputError(f"{path}: policy file not found; eval rows take their harness and tasks from its "
                         "`evals:` section (pass --root REPO)")
    return policy_from_doc(load_yaml_file(path, names.POLICY))


def check_image(policy: Path | None, images: set[str]) -> None:
    """Refuse, before anything starts, an image the trusted policy does not allow (or a policy that
    names no allowlist): the container gets HF_TOKEN, and in a trusted sweep the recipe is a fork's."""
    if policy is None:
        return
    from ci_tools.config.images import problem
    from ci_tools.config.load import load_image_policy

    try:
        patterns, shown = load_image_policy(policy)
    except InputError as exc:
        raise InputError(f"not started: {exc.message}", exit_code=exc.exit_code) from None
    for image in sorted(images):
        why = problem(image, patterns, shown)
        if why:
            raise InputError(f"not started: {why}")


def _row_and_recipe(req: RunRequest, row: MatrixRow | None = None):
    """The row and its recipe, the image checked against the trusted policy before anything starts
    (`runner run` and `runner profile` alike: a profiled container gets HF_TOKEN too)."""
    from ci_tools.config.load import load_recipe
    from ci_tools.runner.plan import CONTAINER_BACKENDS

    row = load_row(req.row_path) if row is None else row
    recipe_file = recipe_path(row, req.root, req.row_path)
    try:
        display = str(recipe_file.resolve().relative_to(req.root.resolve()))
    except ValueError:
        display = str(recipe_file)
    recipe = load_recipe(recipe_file, display, req.root)    # never a file from outside the repository
    if req.backend in CONTAINER_BACKENDS:   # the process backend runs the host's engine, no image
        check_image(req.image_policy, {recipe.image, str(row.get("image") or recipe.image)})
    return row, recipe


def prepare_run(req: RunRequest) -> PreparedJob:
    """Everything `runner run` decides before it starts anything; every refusal is an InputError/UsageError."""
    row, recipe = _row_and_recipe(req)
    hardware = hardware_of(row, req.root)
    port, worker_port = req.port, req.worker_port
    if 0 in (port, worker_port):
        port, worker_port = free_ports(req.backend, port, worker_port)
    if isinstance(row, MultiNodeRow):
        return _prepare_multinode(req, row, recipe, hardware, port, worker_port)
    return _prepare_single(req, row, recipe, hardware, port, worker_port)


def prepare_profile(req: RunRequest, requests: int | None) -> PreparedJob:
    """`runner profile`: `runner run`'s job for a single-node row, with the engine's profiler on, a short
    client window between the start and stop profile calls, and the traces merged afterwards."""
    row = load_row(req.row_path)
    if isinstance(row, MultiNodeRow):
        raise UsageError("`runner profile` serves single-node rows only; a prefill/decode row's workers would "
                         "each need their own profile calls (not supported yet)")
    _, recipe = _row_and_recipe(req, row)
    port, worker_port = req.port, req.worker_port
    if 0 in (port, worker_port):
        port, worker_port = free_ports(req.backend, port, worker_port)
    return _prepare_single(req, row, recipe, hardware_of(row, req.root), port, worker_port,
                           profile=(requests,))


def authorize_profile(login: str) -> str:
    """`runner profile --requested-by`: ask GitHub for `login`'s permission on this repository
    (GITHUB_TOKEN, metadata: read, which every job token has); a non-maintainer is refused (exit 1)
    before any row is read or runner held. Returns the line that says who may."""
    from ci_tools.github.client import GitHub
    from ci_tools.runner.profile import requester_refusal

    permission = GitHub.from_env().permission(login)
    refusal = requester_refusal(login, permission)
    if refusal:
        raise InputError(refusal)
    return f"{login} may request profiling ({permission} permission)"


def prepare_acceptance(req: RunRequest, dataset_file: str | None, run_url: str | None) -> PreparedJob:
    """`runner acceptance`: one SPEED-Bench collection cell (a row of `config acceptance-matrix`): its
    `serve` row's point with real speculative decoding at the cell's step count and thinking mode, the
    engine's acceptance metrics read around the client window, the length written to acceptance.json."""
    from ci_tools.config.load import load_recipe
    from ci_tools.runner.plan import CONTAINER_BACKENDS

    cell = load_json_row(req.row_path)
    serve = cell.get("serve")
    missing = [k for k in ("id", "model", "engine", "mtp", "thinking") if k not in cell]
    if not isinstance(serve, dict) or missing:
        raise InputError(f"{req.row_path}: not a SPEED-Bench collection cell (no "
                         f"{', '.join(missing) if missing else '`serve` row'}); pass a row of "
                         "`ci-tools config acceptance-matrix --format json`")
    serve = parse_row(serve, f"{req.row_path}: serve")
    if isinstance(serve, MultiNodeRow):
        raise UsageError("`runner acceptance` measures single-node points only")
    recipe_file = recipe_path(serve, req.root, req.row_path)
    recipe = load_recipe(recipe_file, str(recipe_file), req.root)
    if req.backend in CONTAINER_BACKENDS:
        check_image(req.image_policy, {recipe.image, str(serve.get("image") or recipe.image)})
    port, worker_port = req.port, req.worker_port
    if 0 in (port, worker_port):
        port, worker_port = free_ports(req.backend, port, worker_port)
    return _prepare_single(req, serve, recipe, hardware_of(serve, req.root), port, worker_port,
                           acceptance={"cell": cell, "dataset": dataset_file, "run": run_url})


def _prepare_single(req: RunRequest, row: SingleNodeRow, recipe, hardware: dict, port: int, worker_port: int,
                    profile: tuple[int | None] | None = None, acceptance: dict | None = None) -> PreparedJob:
    from ci_tools.config.recipe import resolve_point
    from ci_tools.runner.backends import (Host, job_id, render_dry_run, slurm_minutes)
    from ci_tools.runner.budget import job_budget
    from ci_tools.runner.plan import AGENTX_DATASET, Settings, build_plan

    try:
        point = resolve_point(recipe, int(row["tp"]), int(row.get("ep", 1)), bool(row.get("dp-attn", False)),
                              int(row["conc"]))
    except KeyError as exc:
        raise InputError(f"{req.row_path}: the row has no `{exc.args[0]}`") from None
    cell = acceptance["cell"] if acceptance is not None else None
    if cell is not None:   # real speculation at the cell's step count: no simulated acceptance anywhere
        from dataclasses import replace as _replace

        from ci_tools.evals.policy import split_simulated_acceptance
        from ci_tools.runner.acceptance import spec_args

        point = _replace(point, args=spec_args(point.engine, point.args, int(cell["mtp"])),
                         env=split_simulated_acceptance(dict(point.env))[0], synthetic_acceptance=None)
    settings = Settings(model_store=req.model_store, hf_cache=req.hf_cache, backend=req.backend, aiperf_bin=req.aiperf_bin,
                        tokenizer=req.tokenizer, dataset=req.dataset or AGENTX_DATASET, server_cmd=req.server_cmd,
                        router_cmd=req.router_cmd, port=port, worker_port=worker_port,
                        ready_timeout_s=req.ready_timeout,
                        gpus_per_node=int(hardware["gpus-per-node"]) if hardware.get("gpus-per-node") else None,
                        runner_name=req.runner_name, duration_override_s=req.duration_override,
                        lm_eval_bin=req.lm_eval_bin, root=str(req.root.resolve()), evals=eval_policy(row, req.root))
    backend = req.backend
    out_abs = req.out if req.dry_run else req.out.resolve()
    plan = build_plan(row, point, settings, str(out_abs))
    calls = None
    trace_dir = out_abs / names.PROFILE_TRACE_DIR
    if profile is not None:
        from ci_tools.runner.profile import profile_plan

        plan, calls = profile_plan(plan, str(trace_dir), profile[0])
    snaps: tuple[tuple[str, str], ...] = ()
    if cell is not None or (plan.evals is not None and _speculative(row, point)):
        from ci_tools.runner.acceptance import snapshots, speedbench_argv
        from ci_tools.runner.backends import remote_url

        engine_url = plan.ready_urls[0].rsplit("/", 1)[0]   # the engine itself, not the router
        snaps = tuple((remote_url(engine_url + path, settings, backend), name)
                      for path, name in snapshots(point.engine))
        if cell is not None and acceptance is not None:     # a cell comes with its acceptance request
            from dataclasses import replace as _replace

            plan = _replace(plan, procs=[_replace(p, argv=speedbench_argv(p.argv, point.key.conc, bool(cell["thinking"]),
                                                                          acceptance["dataset"]))
                                         if p.role == "client" else p for p in plan.procs], duration_s=None)
    client_timeout = req.client_timeout
    if client_timeout is None and plan.evals is not None:
        client_timeout = plan.evals["timeout-s"]   # the policy's limit for the whole harness batch
    budget = job_budget(plan.duration_s, queue_s=req.queue_timeout, ready_s=req.ready_timeout, client_s=client_timeout)
    if budget.problems():
        raise InputError(f"{req.row_path}: " + "; ".join(budget.problems()))
    slurm = hardware.get("slurm") or {}
    if backend == "slurm" and slurm.get("max-time-minutes") and \
            slurm_minutes(budget.allocation_s) > int(slurm["max-time-minutes"]):
        raise InputError(f"the job's Slurm allocation needs --time={slurm_minutes(budget.allocation_s)} min, over "
                         f"the {slurm['max-time-minutes']} min runners.yaml allows runner {row.get('runner')!r}; "
                         "lower --ready-timeout or the row's duration, or raise max-time-minutes")
    devices = gpu_list(req.gpus)
    if devices is not None and backend != "slurm" and len(devices) < plan.gpus:
        raise InputError(f"the point needs {plan.gpus} GPUs but this runner was given {len(devices)} "
                         f"({','.join(devices)}); give it more (CI_TOOLS_GPUS / CUDA_VISIBLE_DEVICES) or run the "
                         "row on a larger runner")
    host = Host(label=job_id(plan, str(out_abs)), runner=req.runner_name, gpu_devices=devices,
                partition=slurm.get("partition"), account=slurm.get("account"),
                exclusive=bool(slurm.get("exclusive", True)), time_limit_s=budget.allocation_s,
                squash_dir=req.squash_dir, vendor=str(hardware.get("gpu-vendor") or "nvidia"))
    text = render_dry_run(plan, backend, settings, host) + files_text(plan.files)
    if calls is not None:
        from ci_tools.runner.backends import remote_url
        from ci_tools.runner.profile import ProfileCalls, render_calls

        calls = ProfileCalls(*(tuple((remote_url(u, settings, backend), b) for u, b in side)
                               for side in (calls.start, calls.stop)))
        text += render_calls(calls)
    if snaps:
        text += "\n# acceptance: the engine's metrics, before and after the client (runner/acceptance.py)\n"
        text += "".join(f"#   GET {url}\n" for url, _ in snaps)

    def run(on_sealed: Callable[[str], None] | None = None) -> None:
        from ci_tools.runner.produce import single_job, with_profile, with_snapshots
        from ci_tools.runner.supervise import JobContext, supervise

        spec = single_job(plan, backend, settings, host, budget, str(out_abs), text,
                          check_node=not req.skip_node_check, telemetry=not req.no_telemetry)
        if calls is not None:
            spec = with_profile(spec, calls, str(trace_dir))
        if snaps:
            spec = with_snapshots(spec, snaps)
        supervise(spec, JobContext(out_abs, runner=req.runner_name, on_sealed=on_sealed))
        if calls is not None:
            collect_traces(trace_dir, out_abs, plan, calls)
        if snaps:
            record_acceptance(out_abs, point.engine, cell, acceptance["run"] if acceptance else None, _steps(point))

    outputs = names.github_outputs(plan.result_filename, str(req.out))
    if calls is not None:
        outputs = {**outputs, "trace-dir": str(req.out / names.PROFILE_TRACE_DIR),
                   "artifact-profile": names.PROFILE_ARTIFACT_PREFIX + plan.result_filename}
    done = ""
    if cell is not None:
        outputs = {**outputs, "acceptance-file": str(req.out / names.ACCEPTANCE_JSON),
                   "artifact-acceptance": names.ACCEPTANCE_ARTIFACT_PREFIX + str(cell["id"])}
        done = (f"done: the measured acceptance length is in {req.out / names.ACCEPTANCE_JSON}; next: "
                f"`ci-tools config acceptance-update` over the collected cells")
    if calls is not None:   # the profiled window's numbers are perturbed by the profiler: no result to process
        from ci_tools.runner.profile import MERGED_TRACE, README

        traces = req.out / names.PROFILE_TRACE_DIR
        done = (f"done: traces merged into {traces / (MERGED_TRACE + '.gz')}; next: open it in https://ui.perfetto.dev "
                f"({traces / README} says how); the profiled window's numbers are no benchmark result")
    return PreparedJob(commands=text, outputs=outputs,
                       result_filename=plan.result_filename, status_path=out_abs / names.STATUS_JSON,
                       stopped="all processes of this job were stopped", run=run, done=done)


def _prepare_multinode(req: RunRequest, row: MultiNodeRow, recipe, hardware: dict, port: int,
                       worker_port: int) -> PreparedJob:
    """A prefill/decode row: one allocation, one srun step per worker, the frontend, a client per concurrency."""
    from ci_tools.config.disagg import is_disagg, resolve_disagg
    from ci_tools.runner.disagg import SlurmSettings, build_multinode_plan
    from ci_tools.runner.disagg_slurm import render_dry_run
    from ci_tools.runner.plan import AGENTX_DATASET, Settings

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
                        port=port, ready_timeout_s=req.ready_timeout, runner_name=req.runner_name,
                        duration_override_s=req.duration_override, lm_eval_bin=req.lm_eval_bin,
                        root=str(req.root.resolve()), evals=eval_policy(row, req.root))
    out_abs = req.out if req.dry_run else req.out.resolve()
    gpn = int(hardware["gpus-per-node"]) if hardware.get("gpus-per-node") else None
    slurm = SlurmSettings.from_hardware(hardware, queue_timeout_s=req.queue_timeout,
                                        client_timeout_s=req.client_timeout, router_cmd=req.router_cmd,
                                        worker_port_base=worker_port, runner=req.runner_name or "",
                                        squash_dir=req.squash_dir)
    plan = build_multinode_plan(row, point, settings, str(out_abs), gpn, slurm)
    text = render_dry_run(plan, str(out_abs)) + files_text(plan.files)
    rf = plan.clients[0].result_filename if len(plan.clients) == 1 else plan.result_filename

    def run(on_sealed: Callable[[str], None] | None = None) -> None:
        from ci_tools.runner.produce import multinode_job
        from ci_tools.runner.supervise import JobContext, supervise

        supervise(multinode_job(plan, str(out_abs), text),
                  JobContext(out_abs, runner=req.runner_name, on_sealed=on_sealed))

    return PreparedJob(commands=text, outputs=names.github_outputs(rf, str(req.out)),
                       result_filename=plan.result_filename, status_path=out_abs / names.STATUS_JSON,
                       stopped="the allocation and every step of this job were stopped", run=run)


def _speculative(row: MatrixRow, point) -> bool:
    return str(row.get("spec-decoding") or "none") != "none" or point.synthetic_acceptance is not None or \
        any(str(k).startswith("speculative-") for k in point.args)


def _steps(point) -> int | None:
    from ci_tools.config.acceptance import _spec_steps

    steps = _spec_steps({"args": dict(point.args)})
    if point.engine == "vllm" and isinstance(point.args.get("speculative-config"), str):
        try:
            steps = {int(json.loads(point.args["speculative-config"])["num_speculative_tokens"])}
        except (ValueError, KeyError, TypeError):
            steps = set()
    return next(iter(steps)) if len(steps) == 1 else None


def record_acceptance(out: Path, engine: str, cell: dict | None, run_url: str | None, mtp: int | None) -> dict:
    """acceptance.json from the metric bodies the job saved. A collection cell without a length fails
    (phase `acceptance`); an eval row only records what was (not) measured."""
    from ci_tools.runner.acceptance import check_range, document, measure
    from ci_tools.runner.spec import JobFailed, Phase, Status
    from ci_tools.runner.supervise import write_status

    def bodies(side: str) -> dict[str, str | None]:
        where = out / names.ACCEPTANCE_DIR / side
        return {p.name: p.read_text(encoding="utf-8") for p in where.iterdir() if p.is_file()
                and not p.name.endswith(".error")} if where.is_dir() else {}

    m = check_range(measure(engine, bodies("before"), bodies("after")), int(cell["mtp"]) if cell else mtp)
    if m.length is None and cell is None:
        errors = sorted((out / names.ACCEPTANCE_DIR / "after").glob("*.error"))
        if errors:
            m = type(m)(None, m.source, m.problem + " (" + "; ".join(e.read_text(encoding="utf-8").strip()
                                                                      for e in errors) + ")")
    doc = document(cell or {"engine": engine, "mtp": mtp}, m, run_url)
    (out / names.ACCEPTANCE_JSON).write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    if m.length is None and cell is not None:
        write_status(out, Status(Phase.ACCEPTANCE, reason=m.problem))
        raise JobFailed(Phase.ACCEPTANCE, m.problem)
    return doc


def collect_traces(trace_dir: Path, out: Path, plan, calls) -> None:
    """Merge the per-rank traces the engine wrote and put the README beside them; none is a failure."""
    import gzip

    from ci_tools.runner.profile import MERGED_TRACE, README, is_trace_file, merge_traces, readme
    from ci_tools.runner.spec import JobFailed, Phase, Status
    from ci_tools.runner.supervise import write_status

    files = sorted(p for p in trace_dir.iterdir() if p.is_file() and is_trace_file(p.name)) \
        if trace_dir.is_dir() else []
    problem = "" if files else (f"the engine wrote no trace file into {trace_dir} between the start and stop "
                                "profile calls; see server.log")
    traces = []
    for f in files:
        try:
            raw = gzip.decompress(f.read_bytes()) if f.name.endswith(".gz") else f.read_bytes()
            traces.append((f.name, json.loads(raw)))
        except (OSError, ValueError) as exc:
            problem = f"{f}: not a readable Chrome trace: {exc}"
            break
    if problem:
        write_status(out, Status(Phase.TRACES, reason=problem))
        raise JobFailed(Phase.TRACES, problem)
    merged = merge_traces(traces)
    (trace_dir / (MERGED_TRACE + ".gz")).write_bytes(gzip.compress(json.dumps(merged).encode("utf-8")))
    client = plan.proc("client")
    (trace_dir / README).write_text(readme(plan.result_filename, plan.point.engine, [f.name for f in files],
                                           MERGED_TRACE + ".gz", calls, client.argv if client else []),
                                    encoding="utf-8")


def files_text(files: list[tuple[str, str]]) -> str:
    """The dry-run's view of the files the engine commands read (written into the job directory)."""
    out = ""
    for path, text in files:
        out += f"\n# file {path} (written before the engine starts)\n" + "".join(f"#   {line}\n" for line in
                                                                              text.splitlines())
    return out


@dataclass
class CleanupReport:
    lines: list[str] = field(default_factory=list)      # for people, in order
    problems: list[str] = field(default_factory=list)   # what could not be stopped (exit 1)
    stopped: list[str] = field(default_factory=list)
    wrote_status: bool = False                          # the run step left no status.json: one was written


def cleanup(out: Path, labels: tuple[str, ...], runner_name: str) -> CleanupReport:
    """Stop what carries the job's label (OUT/job.json, --label) and, with a runner name, the runner's;
    write a status.json when the run step left none."""
    from ci_tools.runner.cleanup import stop_labelled
    from ci_tools.runner.supervise import write_status

    report = CleanupReport()
    found = list(labels)
    job_file = out / names.JOB_JSON
    if job_file.is_file():
        try:
            label = json.loads(job_file.read_text(encoding="utf-8")).get("label")
        except ValueError:
            label = None
        if label and label not in found:
            found.append(label)
    if not found and not runner_name:
        report.lines.append(f"nothing to clean up: {job_file} does not exist (the job started nothing) and no "
                            "--label or RUNNER_NAME was given")
    stopped = report.stopped
    for i, label in enumerate(found or [""]):
        sweep = stop_labelled(label, runner_name if i == 0 else "", budget_s=8.0, grace_s=1.0)
        stopped += sweep.stopped()
        report.problems += sweep.problems
    report.wrote_status = out.is_dir() and not (out / names.STATUS_JSON).exists()
    if report.wrote_status:
        write_status(out, {"ok": False, "phase": "start", "exit_code": 1,
                           "reason": "the run step ended without a status (killed, or cancelled before it started)"})
        report.lines.append(f"wrote {out / names.STATUS_JSON}: the run step left none")
    report.lines += [f"stopped {line}" for line in stopped]
    if not stopped:
        who = found + ([f"runner {runner_name}"] if runner_name else [])
        report.lines.append(f"nothing left running for {', '.join(who) or '-'}")
    return report


@dataclass(frozen=True)
class DigestReport:
    outputs: dict[str, str]
    markdown: str
    messages: list[str]          # requests made, whether Slack was posted to
    data: dict = field(default_factory=dict)    # --format json: the runners and the queue (their as_dict)


def digest_outputs(d: Digest, queued: int = 0) -> dict[str, str]:
    """`runner digest`'s step outputs (names in cli/runner.py GITHUB_OUTPUTS)."""
    return {"offline": str(len(d.offline)), "missing": str(len(d.missing)), "busy": str(len(d.busy)),
            "total": str(d.registered), "down-labels": ",".join(d.down_labels),
            "healthy": "true" if not (d.offline or d.missing) else "false", "queued": str(queued)}


def _active_runs(gh, families: set[str], messages: list[str]) -> list[dict]:
    """The repository's active runs with their jobs and, for a run with a job on a family's runner,
    the points of the plan it recorded (an unreadable plan: no points, said)."""
    from ci_tools.github.client import GitHubError

    runs = []
    for run in gh.active_runs():
        jobs = gh.run_jobs(int(run["id"]))
        points: list = []
        if any(set(j.labels) & families for j in jobs):
            try:
                plan = gh.run_plan(int(run["id"])) or {}
            except GitHubError as exc:
                messages.append(f"run {run['id']}: its plan could not be read ({exc}); its jobs show no GPU-hours")
                plan = {}
            points = [p for p in plan.get("points") or [] if isinstance(p, dict)]
        runs.append({**run, "jobs": jobs, "points": points})
    return runs


def digest(repo: str, runners_path: Path | None, root: Path, date: str | None,
           now: datetime.datetime | None = None) -> DigestReport:
    """List the repository's runners, compare them with runners.yaml, show what is queued for them,
    post to Slack when one is down. Runners are listed with RUNNERS_TOKEN (administration: read);
    runs, jobs and plans with GITHUB_TOKEN (actions: read), else RUNNERS_TOKEN too."""
    from ci_tools.config.load import read_runners
    from ci_tools.github.client import GitHub, token_from_env
    from ci_tools.runner import queue
    from ci_tools.runner.digest import as_dict as digest_dict, build_digest, expected_runners, render_markdown

    path = runners_path or (root / names.RUNNERS)
    if not path.is_file():
        raise InputError(f"{path}: runners file not found (pass --runners or --root)", exit_code=2)
    expected = expected_runners(read_runners(path, None if runners_path else root).data)
    api_url = os.environ.get("GITHUB_API_URL") or "https://api.github.com"
    token = os.environ.get("RUNNERS_TOKEN") or token_from_env()
    gh = GitHub(repo, token, api_url=api_url)
    d = build_digest(repo, gh.runners(), expected)
    actions_token = os.environ.get("GITHUB_TOKEN") or os.environ.get("GH_TOKEN") or token
    gh_actions = gh if actions_token == token else GitHub(repo, actions_token, api_url=api_url)
    now = now or datetime.datetime.now(datetime.timezone.utc)
    messages: list[str] = []
    runs = _active_runs(gh_actions, set(expected), messages)
    q = queue.build_queue(runs, {row.label: row.available for row in d.labels}, now)
    date = date or now.strftime("%Y-%m-%d")
    run_url = ""
    if os.environ.get("GITHUB_RUN_ID"):
        run_url = (f"{os.environ.get('GITHUB_SERVER_URL', 'https://github.com')}/{repo}/actions/runs/"
                   f"{os.environ['GITHUB_RUN_ID']}")
    markdown = render_markdown(d, date=date, run_url=run_url) + "\n" + queue.render_markdown(q, now)
    requests = gh.log.count + (gh_actions.log.count if gh_actions is not gh else 0)
    messages.insert(0, f"GitHub API requests: {requests}")
    webhook = os.environ.get("SLACK_WEBHOOK_URL")
    if webhook and (d.offline or d.missing):
        from ci_tools.runner.slack import post

        post(webhook, markdown)
        messages.append("posted to Slack")
    return DigestReport(outputs=digest_outputs(d, q.queued), markdown=markdown, messages=messages,
                        data={"runners": digest_dict(d), "queue": queue.as_dict(q)})
