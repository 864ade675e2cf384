"""The producers of a JobSpec (pure): a planned single-node or multi-node point, wrapped for its backend,
becomes the one description the supervisor runs; the transforms add what `runner profile` and `runner
acceptance` do around the client.

- `single_job`: a `JobPlan` (plan.py) through its backend's launches (backends.py): docker and process
  on the runner host, or the steps of one sbatch allocation; the node check, the engine's version
  command, the GPU telemetry sampler; AIPerf or the eval harness as the client.
- `multinode_job`: a `MultiNodePlan` (disagg.py) as salloc's allocation and its srun steps
  (disagg_slurm.py), its nodes by placeholder until Slurm grants them; one client per concurrency.
- `with_profile`, `with_snapshots`: the engine's start/stop profile calls, or its metrics fetched before
  and after the client window.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from functools import partial

from ci_tools import names
from ci_tools.runner import nodecheck
from ci_tools.runner.backends import (Host, Launch, engine_version, gpu_sampler, launches, model_path, node_check,
                                      ready_urls, slurm_image_import, version_verdict)
from ci_tools.runner.budget import Budget
from ci_tools.runner.disagg import MultiNodePlan
from ci_tools.runner.disagg_slurm import (ALLOCATION_LOG, alloc_argv, client_commands, container_folders,
                                          import_step, job_name, place, ready_checks, worker_steps)
from ci_tools.runner.plan import JobPlan, Settings
from ci_tools.runner.profile import ProfileCalls
from ci_tools.runner.ready import HttpReady
from ci_tools.runner.spec import (JOBID, ClientRun, JobSpec, Local, NodeCheck, Post, Proc, Role, SallocAllocation,
                                  SbatchAllocation, Snapshot, VersionCheck, addr_placeholder, node_placeholder)

AIPERF_EXPECTS = (f"{names.AIPERF_DIR}/{names.PROFILE_JSONL}", f"{names.AIPERF_DIR}/{names.PROFILE_JSON}")


def _proc(lc: Launch, role: Role, what: str = "") -> Proc:
    # a Slurm server's stop is its allocation's scancel, which the allocation owns
    stops = () if lc.submit else tuple(tuple(s) for s in lc.stop)
    return Proc(role, lc.role, tuple(lc.argv), dict(lc.env), lc.log, stops, lc.raise_nofile, what)


def single_job(plan: JobPlan, backend: str, settings: Settings, host: Host, budget: Budget, out_dir: str,
               commands: str, *, check_node: bool = True, telemetry: bool = True) -> JobSpec:
    """The job of a single-node point in OUT_DIR: COMMANDS is its dry-run text (commands.txt)."""
    wrapped = launches(plan, backend, settings, host)
    server = wrapped[0]
    services = tuple(_proc(lc, Role(lc.role), f"the {lc.role}") for lc in wrapped if lc.role != "client")
    client_lc = next(lc for lc in wrapped if lc.role == "client")
    evals = plan.evals is not None
    client = ClientRun(_proc(client_lc, Role.CLIENT, "the client"), budget.client_s,
                       "the eval harness" if evals else "AIPerf",
                       expects=(f"{names.EVAL_DIR}/{names.EVAL_MANIFEST}",) if evals else AIPERF_EXPECTS,
                       exports=plan.client_exports)
    placement: Local | SbatchAllocation = Local()
    if server.submit:
        placement = SbatchAllocation(tuple(server.submit), tuple(server.locate or ()), tuple(server.describe or ()),
                                     tuple(server.stop[0]), server.log)
    check = None
    if check_node:
        judge = partial(nodecheck.problems, need_gpus=plan.gpus,
                        devices=None if backend == "slurm" else host.gpu_devices,
                        model=plan.served_model, model_path=model_path(plan, settings), hf_cache=settings.hf_cache,
                        vendor=host.vendor)
        check = NodeCheck(_proc(node_check(plan, backend, settings, host.vendor), Role.STEP, "the node check"), judge)
    # none on a runner whose GPUs ci-tools cannot sample (AMD: amd-smi is not read yet)
    sampler = gpu_sampler(plan, backend, host) if telemetry else None
    job = {**plan.job_json(), "label": host.label}
    return JobSpec(
        label=host.label, placement=placement, budget=budget, services=services,
        ready=tuple(HttpReady(u) for u in ready_urls(plan, backend, settings)), clients=(client,),
        documents=partial(_single_documents, job), check=check,
        image=_proc(slurm_image_import(plan, settings, host), Role.STEP, "the image import") if backend == "slurm"
        else None,
        version=VersionCheck(_proc(engine_version(plan, backend, settings, host), Role.STEP, "the version command"),
                             partial(version_verdict, plan, backend)),
        telemetry=_proc(sampler, Role.HELPER, "the telemetry sampler") if sampler is not None else None,
        files=(*plan.files, (f"{out_dir}/{names.COMMANDS_TXT}", commands)))


def _single_documents(job: dict, placement: Mapping[str, list[str]] | None, engine: dict | None,
                      ) -> list[tuple[str, dict]]:
    # what the version command found, once it ran (results process copies it)
    return [(names.JOB_JSON, {**job, **({"engine": engine} if engine is not None else {})})]


def multinode_job(plan: MultiNodePlan, out_dir: str, commands: str) -> JobSpec:
    """The job of a multi-node point: one salloc allocation of plan.nodes nodes, the image imported on
    each, one step per worker and the frontend, readiness in order, a client per concurrency."""
    nodes = [node_placeholder(i) for i in range(plan.nodes)]
    placed = place(plan, nodes)
    addresses = {n: addr_placeholder(i) for i, n in enumerate(nodes)}
    services = tuple(Proc(Role.FRONTEND if s.name == "frontend" else Role.WORKER, s.name, tuple(s.argv), dict(s.env),
                          s.log) for s in worker_steps(plan, JOBID, placed, out_dir, addresses))
    clients = tuple(
        ClientRun(Proc(Role.CLIENT, f"client-c{c.conc}", tuple(c.argv), dict(c.env), c.log,
                       what=f"the client (conc {c.conc})"),
                  plan.client_s, f"{c.what} (conc {c.conc})",
                  expects=tuple(f"{c.subdir}/{n}" if c.subdir else n for n in c.expects), exports=c.exports)
        for c in client_commands(plan, placed, addresses))
    image = import_step(plan, JOBID, nodes, out_dir)
    layout = {name: tuple(plan.layout[name]) for name in plan.layout} | {"frontend": (0,)}
    return JobSpec(
        label=plan.slurm.label,
        placement=SallocAllocation(tuple(alloc_argv(plan)), job_name(plan), plan.nodes, plan.alloc_time_min, layout,
                                   ALLOCATION_LOG),
        budget=plan.budget, services=services, ready=tuple(ready_checks(plan, placed, addresses)), clients=clients,
        documents=partial(_multinode_documents, plan), image=_proc(image, Role.STEP, "the image import"),
        files=(*plan.files, (f"{out_dir}/{names.COMMANDS_TXT}", commands)),
        folders=tuple(container_folders(plan, out_dir)[0]))


def _multinode_documents(plan: MultiNodePlan, placement: Mapping[str, list[str]] | None, engine: dict | None,
                         ) -> list[tuple[str, dict]]:
    """job.json (its placement once granted) and, with several concurrencies, one per concurrency folder."""
    where = dict(placement) if placement is not None else None
    job = plan.job_json(where)
    if len(plan.clients) == 1:
        job["point"] = plan.point_for(plan.clients[0], where)
        job["result-filename"] = plan.clients[0].result_filename
    docs = [(names.JOB_JSON, job)]
    for c in plan.clients:
        if c.subdir:
            docs.append((f"{c.subdir}/{names.JOB_JSON}", {"result-filename": c.result_filename, "multinode": True,
                                                          "point": plan.point_for(c, where), "parent": "..",
                                                          "command": c.argv}))
    return docs


def with_profile(spec: JobSpec, calls: ProfileCalls, trace_dir: str) -> JobSpec:
    """`runner profile`: the engine's start/stop profile calls around the client window, into an empty
    trace folder (created before the container mounts it: docker would create it as root)."""
    return replace(spec, before_client=(*spec.before_client, *(Post(u, b) for u, b in calls.start)),
                   after_client=(*spec.after_client, *(Post(u, b) for u, b in calls.stop)),
                   fresh=(*spec.fresh, trace_dir))


def with_snapshots(spec: JobSpec, snaps: tuple[tuple[str, str], ...]) -> JobSpec:
    """The engine's acceptance metrics ((url, file name) each) fetched before and after the client, into
    acceptance/before and acceptance/after of the job directory."""
    def side(folder: str) -> tuple[Snapshot, ...]:
        return tuple(Snapshot(u, n, f"{names.ACCEPTANCE_DIR}/{folder}") for u, n in snaps)

    return replace(spec, before_client=(*spec.before_client, *side("before")),
                   after_client=(*spec.after_client, *side("after")))
