"""The producers of a JobSpec (pure): a planned single-node point, wrapped for its backend,
becomes the one description the supervisor runs; the transforms add what `runner profile` and `runner
acceptance` do around the client.

- `single_job`: a `JobPlan` (plan.py) through its backend's launches (backends.py): docker and process
  on the runner host; the node check, the engine's version command, the GPU telemetry sampler; AIPerf
  or the eval harness as the client.
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
from ci_tools.runner.plan import JobPlan, Settings
from ci_tools.runner.profile import ProfileCalls
from ci_tools.runner.ready import HttpReady
from ci_tools.runner.spec import ClientRun, JobSpec, Local, NodeCheck, Post, Proc, Role, Snapshot, VersionCheck

AIPERF_EXPECTS = (f"{names.AIPERF_DIR}/{names.PROFILE_JSONL}", f"{names.AIPERF_DIR}/{names.PROFILE_JSON}")


def _proc(lc: Launch, role: Role, what: str = "") -> Proc:
    # a Slurm server's stop is its allocation's scancel, which the allocation owns
    stops = () if lc.submit else tuple(tuple(s) for s in lc.stop)
    return Proc(role, lc.role, tuple(lc.argv), dict(lc.env), lc.log, stops, lc.raise_nofile, what)


def single_job(plan: JobPlan, backend: str, settings: Settings, host: Host, budget: Budget, out_dir: str,
               commands: str, *, check_node: bool = True, telemetry: bool = True) -> JobSpec:
    """The job of a single-node point in OUT_DIR: COMMANDS is its dry-run text (commands.txt)."""
    wrapped = launches(plan, backend, settings, host)
    services = tuple(_proc(lc, Role(lc.role), f"the {lc.role}") for lc in wrapped if lc.role != "client")
    client_lc = next(lc for lc in wrapped if lc.role == "client")
    evals = plan.evals is not None
    client = ClientRun(_proc(client_lc, Role.CLIENT, "the client"), budget.client_s,
                       "the eval harness" if evals else "AIPerf",
                       expects=(f"{names.EVAL_DIR}/{names.EVAL_MANIFEST}",) if evals else AIPERF_EXPECTS,
                       exports=plan.client_exports)
    check = None
    if check_node:
        judge = partial(nodecheck.problems, need_gpus=plan.gpus,
                        devices=None if backend == "slurm" else host.gpu_devices,
                        model=plan.served_model, model_path=model_path(plan, settings), hf_cache=settings.hf_cache)
        check = NodeCheck(_proc(node_check(plan, backend, settings), Role.STEP, "the node check"), judge)
    job = {**plan.job_json(), "label": host.label}
    return JobSpec(
        label=host.label, placement=Local(), budget=budget, services=services,
        ready=tuple(HttpReady(u) for u in ready_urls(plan, backend, settings)), clients=(client,),
        documents=partial(_single_documents, job), check=check,
        image=_proc(slurm_image_import(plan, settings, host), Role.STEP, "the image import") if backend == "slurm"
        else None,
        version=VersionCheck(_proc(engine_version(plan, backend, settings, host), Role.STEP, "the version command"),
                             partial(version_verdict, plan, backend)),
        telemetry=_proc(gpu_sampler(plan, backend, host), Role.HELPER, "the telemetry sampler") if telemetry else None,
        files=(*plan.files, (f"{out_dir}/{names.COMMANDS_TXT}", commands)))


def _single_documents(job: dict, placement: Mapping[str, list[str]] | None, engine: dict | None,
                      ) -> list[tuple[str, dict]]:
    # what the version command found, once it ran (results process copies it)
    return [(names.JOB_JSON, {**job, **({"engine": engine} if engine is not None else {})})]


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
