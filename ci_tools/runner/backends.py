"""How a planned process is started and stopped on a runner: docker, slurm (pyxis) or a plain process.

Each backend turns a `Proc` into a `Launch` (pure): the argv to execute on the runner, the extra
environment of that argv, and the argv that stops what it started. Only containers and jobs this
job named are stopped, never every container on the host (InferenceX's `docker rm -f $(docker ps
-aq)` also kills co-tenants, spec §9.17).
"""

from __future__ import annotations

import hashlib
import shlex
from dataclasses import dataclass, field

from ci_tools.runner.plan import MODELS_MOUNT, JobPlan, Proc, Settings, image_for_slurm

BACKENDS = ("docker", "slurm", "process")


@dataclass
class Launch:
    role: str
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    stop: list[list[str]] = field(default_factory=list)  # run after terminating argv's process group
    log: str = ""
    # slurm: a command printing "<job id> <node>" once the job runs; its words fill the placeholders
    # {server_jobid} and {server_node} of later launches and of the readiness URLs
    locate: list[str] | None = None

    def shell(self, width: int = 100) -> str:
        """Copy-pasteable shell text, wrapped with `\\` between whole `--flag value` pairs."""
        words = [f"{k}={shlex.quote(v)}" for k, v in self.env.items()] + [shlex.quote(a) for a in self.argv]
        groups: list[str] = []
        for w in words:
            if groups and not w.startswith("-") and groups[-1].startswith("-") and " " not in groups[-1] \
                    and "=" not in groups[-1]:
                groups[-1] += " " + w  # keep a flag with its value
            else:
                groups.append(w)
        lines: list[str] = []
        for g in groups:
            if lines and len(lines[-1]) + 1 + len(g) <= width:
                lines[-1] += " " + g
            else:
                lines.append(g)
        return " \\\n    ".join(lines)


def job_id(plan: JobPlan) -> str:
    """Short, stable name for containers/slurm jobs of this job (from the result file name)."""
    return "cit-" + hashlib.sha256(plan.result_filename.encode()).hexdigest()[:12]


def _docker(plan: JobPlan, proc: Proc, settings: Settings) -> Launch:
    name = f"{job_id(plan)}-{proc.role}"
    argv = ["docker", "run", "--rm", "--init", "--name", name, "--label", f"ci-tools.job={job_id(plan)}",
            "--network", "host", "--ipc", "host", "--shm-size", "32g",
            "--ulimit", "memlock=-1", "--ulimit", "stack=67108864"]
    if proc.role == "server":
        devices = ",".join(str(i) for i in range(plan.gpus))
        argv += ["--gpus", f'"device={devices}"',
                 "-v", f"{settings.model_store}:{MODELS_MOUNT}:ro",
                 "-v", f"{settings.hf_cache}:/root/.cache/huggingface"]
    for key, value in proc.env.items():
        argv += ["-e", f"{key}={value}"]
    argv += [plan.image, *proc.argv]
    return Launch(proc.role, argv, {}, [["docker", "rm", "-f", name]], proc.log)


SERVER_JOBID = "{server_jobid}"
SERVER_NODE = "{server_node}"


def _slurm(plan: JobPlan, proc: Proc, settings: Settings) -> Launch:
    name = f"{job_id(plan)}-{proc.role}"
    if proc.role == "server":
        argv = ["srun", f"--job-name={name}", "--nodes=1", "--ntasks=1", "--exclusive",
                f"--gpus-per-node={plan.gpus}"]
    else:
        # the router must share the engine's node (it reaches the engine on 127.0.0.1), and the
        # engine's job holds that node exclusively: run as another step of the same job
        argv = ["srun", f"--jobid={SERVER_JOBID}", "--overlap", "--nodes=1", "--ntasks=1"]
    argv += [f"--container-image={image_for_slurm(plan.image)}",
             f"--container-mounts={settings.model_store}:{MODELS_MOUNT}:ro,{settings.hf_cache}:/root/.cache/huggingface",
             "--container-remap-root", "--no-container-mount-home"]
    if proc.env:
        # values go through srun's own environment: `--export=ALL,K=V` would split values with commas
        argv.append(f"--container-env={','.join(proc.env)}")
    argv += proc.argv
    if proc.role == "server":
        return Launch(proc.role, argv, dict(proc.env), [["scancel", f"--name={name}"]], proc.log,
                      locate=["squeue", "--noheader", "--format=%i %N", f"--name={name}"])
    return Launch(proc.role, argv, dict(proc.env), [], proc.log)  # a step: ends with the job


def _process(plan: JobPlan, proc: Proc, settings: Settings) -> Launch:
    return Launch(proc.role, list(proc.argv), dict(proc.env), [], proc.log)


def _remote(text: str, settings: Settings, backend: str) -> str:
    """With slurm the engine runs on a compute node: the runner reaches it by the node's name."""
    if backend != "slurm":
        return text
    return text.replace(f"http://{settings.host}:", f"http://{SERVER_NODE}:")


def launches(plan: JobPlan, backend: str, settings: Settings) -> list[Launch]:
    """Server (and router) through the backend; the client always runs on the runner itself."""
    wrap = {"docker": _docker, "slurm": _slurm, "process": _process}[backend]
    out = []
    for proc in plan.procs:
        if proc.in_container:
            out.append(wrap(plan, proc, settings))
        else:
            argv = [_remote(a, settings, backend) for a in proc.argv]
            out.append(Launch(proc.role, argv, dict(proc.env), [], proc.log))
    return out


def ready_urls(plan: JobPlan, backend: str, settings: Settings) -> list[str]:
    return [_remote(u, settings, backend) for u in plan.ready_urls]


def render_dry_run(plan: JobPlan, backend: str, settings: Settings) -> str:
    """The exact commands and environment, as `runner run --dry-run` prints them (golden-tested)."""
    pt = plan.point
    lines = [f"# job {plan.result_filename}",
             f"# recipe {pt.recipe_file} point {pt.name} ({pt.key.describe()}), {plan.gpus} GPU(s), "
             f"backend {backend}",
             f"# scenario {plan.scenario}" + (f", duration {plan.duration_s:g} s" if plan.duration_s else "")
             + (", eval run: no simulated acceptance, the eval harness instead of AIPerf" if plan.run_eval else ""),
             f"# readiness: {' then '.join(ready_urls(plan, backend, settings))} "
             f"(deadline {settings.ready_timeout_s:g} s)"]
    for launch in launches(plan, backend, settings):
        lines.append("")
        lines.append(f"# {launch.role} (log: {launch.log})")
        lines.append(launch.shell())
        if launch.locate:
            lines.append(f"# then: {shlex.join(launch.locate)}  ->  {SERVER_JOBID} {SERVER_NODE}")
        for stop in launch.stop:
            lines.append(f"# stop: {shlex.join(stop)}")
    if plan.evals is not None:
        # what the eval client (ci_tools.evals.driver) runs, in order, once the server is ready
        ev = plan.evals
        lines += ["", f"# eval harness {ev['harness']['name']} ({ev['harness']['type']}): tasks {', '.join(ev['tasks'])}, "
                      f"concurrencies {', '.join(map(str, ev['concurrencies']))}"]
        for run in ev["runs"]:
            lines.append(f"# conc {run['conc']}, {run['task']}")
            lines.append(Launch("eval", [_remote(a, settings, backend) for a in run["argv"]], run["env"]).shell())
    return "\n".join(lines) + "\n"
