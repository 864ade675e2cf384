"""How a planned process is started and stopped on a runner: docker, slurm (pyxis) or a plain process.

Each backend turns a `Proc` into a `Launch` (pure): the argv to execute on the runner, the extra
environment of that argv, and the argv that stops what it started. Everything a job starts carries
its label (`Host.label`): docker containers as `--label ci-tools.job=<label>`, the Slurm job as its
name, processes as `CI_TOOLS_JOB=<label>` in their environment; `ci-tools runner cleanup` stops
exactly what carries it, never every container on the host (InferenceX's `docker rm -f $(docker ps
-aq)` also kills co-tenants, spec §9.17).

Slurm: the job's allocation is submitted with `sbatch --parsable`, which prints the job id; the
engine and the router run as steps of that job (`srun --jobid=<id> --overlap`), so the runner finds
its own job by id, never by name (a stale job of the same name may still be completing). The image is
imported once per job, not once per step: a first step runs `enroot import` into a squashfs file of
the runner's squash directory under a file lock (`image_import`), skipped when an earlier job left that
file; every container step then names the file (`--container-image=/path/x.sqsh`). Without it pyxis
imported `repo@sha256:` anew in every step: 2 to 5 imports of a 20-30 GB image per job.
"""

from __future__ import annotations

import hashlib
import math
import re
import shlex
from dataclasses import dataclass, field

from ci_tools import engines, names

from ci_tools.runner import nodecheck, telemetry
from ci_tools.runner.plan import CONTAINER_BACKENDS, MODELS_MOUNT, JobPlan, Proc, Settings, image_for_slurm

BACKENDS = ("docker", "slurm", "process")
LABEL_KEY = "ci-tools.job"             # docker label / Slurm comment key carrying the job's label
RUNNER_KEY = "ci-tools.runner"         # ... and the runner that started it (crash leftovers)
LABEL_ENV = "CI_TOOLS_JOB"             # environment of every process the job starts
RUNNER_ENV = "CI_TOOLS_RUNNER"
HF_CACHE_MOUNT = "/hf_hub_cache"       # the runner's Hugging Face hub cache inside the container
SQUASH_DIR = "/mnt/squash"             # default of --squash-dir: enroot images, shared by the jobs of a cluster
SERVER_JOBID = "{server_jobid}"
SERVER_NODE = "{server_node}"         # the node's NodeName, as squeue prints it
SERVER_ADDR = "{server_addr}"         # its NodeAddr (scontrol show node): where the runner reaches it


@dataclass
class Host:
    """Facts of the runner host and its scheduler (runners.yaml `slurm:`, options, environment)."""

    label: str = "cit-local"
    runner: str = ""
    gpu_devices: list[str] | None = None   # the GPUs this runner was given; None: 0..N-1
    partition: str | None = None
    account: str | None = None
    exclusive: bool = True
    time_limit_s: float | None = None      # Slurm --time of the allocation (from the row's budget)
    stop_grace_s: float = 10.0             # docker --stop-timeout, SIGTERM grace of every process
    squash_dir: str = SQUASH_DIR           # slurm: where the job's image is imported (every node sees it)
    vendor: str = "nvidia"                 # runners.yaml gpu-vendor: nvidia | amd (ROCm)


@dataclass
class Launch:
    role: str
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    stop: list[list[str]] = field(default_factory=list)  # run after terminating argv's process group
    log: str = ""
    # slurm: a command submitting the allocation and printing its job id ({server_jobid}), one
    # printing "<state> <node>" for that id ({server_node} once the state is RUNNING), and one
    # describing that node (its NodeAddr becomes {server_addr}, see node_addr)
    submit: list[str] | None = None
    locate: list[str] | None = None
    describe: list[str] | None = None
    # raise the open-files limit to the host's hard limit before exec (an engine started as a plain process
    # inherits the runner's soft limit; docker and Slurm set their own)
    raise_nofile: bool = False

    def shell(self, width: int = 100) -> str:
        """Copy-pasteable shell text, wrapped with `\\` between whole `--flag value` pairs."""
        return shell_text(self.argv, self.env, width)


def shell_text(argv: list[str], env: dict[str, str] | None = None, width: int = 100) -> str:
    words = [f"{k}={shlex.quote(v)}" for k, v in (env or {}).items()] + [shlex.quote(a) for a in argv]
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


def job_id(plan: JobPlan, out_dir: str = "") -> str:
    """Short, stable label of this job's containers, Slurm job and processes (see job_label)."""
    return job_label(plan.result_filename, out_dir)


def job_label(result_filename: str, out_dir: str = "") -> str:
    """A job's label from its result file name (which names the runner) and the job directory, so two
    jobs of one row on one host never share it (a multi-node job's too, which has no JobPlan)."""
    return "cit-" + hashlib.sha256(f"{result_filename}\0{out_dir}".encode()).hexdigest()[:12]


def container_image(plan: JobPlan, backend: str) -> str:
    """The recipe's image, which the docker and Slurm backends run the engine in. A plan made for the
    process backend (the host's engine) has none: wrapping it for a container is the caller's mistake,
    named here instead of a container started from no image."""
    if plan.image is None:
        raise ValueError(f"job {plan.result_filename} was planned for the host's engine (backend process), so "
                         f"it has no image for backend {backend}; plan it with Settings(backend={backend!r})")
    return plan.image


def _devices(plan: JobPlan, host: Host) -> list[str]:
    if host.gpu_devices is None:
        return [str(i) for i in range(plan.gpus)]
    return host.gpu_devices[: plan.gpus]


# The variable that limits a process to the job's GPUs: CUDA's, or ROCm's runtime's.
VISIBLE_DEVICES = {"nvidia": "CUDA_VISIBLE_DEVICES", "amd": "ROCR_VISIBLE_DEVICES"}


def _docker_gpus(plan: JobPlan, host: Host) -> list[str]:
    """How a container gets the job's GPUs: NVIDIA's container runtime, or ROCm's device files (the kernel
    driver and the render nodes), the groups that may open them and the job's devices by ROCm's variable."""
    devices = ",".join(_devices(plan, host))
    if host.vendor == "amd":
        return ["--device", "/dev/kfd", "--device", "/dev/dri", "--group-add", "video", "--group-add", "render",
                "--security-opt", "seccomp=unconfined", "-e", f"{VISIBLE_DEVICES['amd']}={devices}"]
    return ["--gpus", f'"device={devices}"']


def _docker(plan: JobPlan, proc: Proc, settings: Settings, host: Host) -> Launch:
    name = f"{host.label}-{proc.role}"
    argv = ["docker", "run", "--rm", "--init", "--name", name, "--label", f"{LABEL_KEY}={host.label}"]
    if host.runner:
        argv += ["--label", f"{RUNNER_KEY}={host.runner}"]
    argv += ["--stop-timeout", f"{math.ceil(host.stop_grace_s)}", "--network", "host", "--ipc", "host",
             "--shm-size", "32g", "--ulimit", "memlock=-1", "--ulimit", "stack=67108864"]
    if proc.role == "server":
        argv += [*_docker_gpus(plan, host),
                 "-v", f"{settings.model_store}:{MODELS_MOUNT}:ro",
                 "-v", f"{settings.hf_cache}:{HF_CACHE_MOUNT}",
                 "-e", f"HF_HUB_CACHE={HF_CACHE_MOUNT}",
                 "-e", "HF_TOKEN"]  # by name: docker copies the runner's value, no secret in argv or logs
    for path in proc.mounts:
        argv += ["-v", f"{path}:{path}"]
    for path in proc.read_only:
        argv += ["-v", f"{path}:{path}:ro"]
    for key, value in proc.env.items():
        argv += ["-e", f"{key}={value}"]
    argv += [container_image(plan, "docker"), *proc.argv]
    # the docker CLI forwards SIGTERM to the container; `rm -f` removes it even when the CLI is gone
    return Launch(proc.role, argv, {}, [["docker", "rm", "-f", name]], proc.log)


def slurm_minutes(seconds: float) -> int:
    return max(1, math.ceil(seconds / 60))


def _sbatch(plan: JobPlan, host: Host) -> list[str]:
    argv = ["sbatch", "--parsable", f"--job-name={host.label}", "--nodes=1", "--ntasks=1",
            f"--gpus-per-node={plan.gpus}"]
    if host.runner:
        argv.append(f"--comment={RUNNER_KEY}={host.runner}")
    if host.time_limit_s is not None:
        argv.append(f"--time={slurm_minutes(host.time_limit_s)}")
    if host.partition:
        argv.append(f"--partition={host.partition}")
    if host.account:
        argv.append(f"--account={host.account}")
    if host.exclusive:
        argv.append("--exclusive")
    # the allocation only holds the node; the engine and router run as steps of it
    return argv + ["--output=/dev/null", "--wrap", "exec sleep infinity"]


def squash_file(image: str, squash_dir: str) -> str:
    """The image's squashfs in the squash directory: one file per reference (per digest when pinned)."""
    ref = image_for_slurm(image)
    return f"{squash_dir.rstrip('/') or '/'}/{re.sub(r'[^A-Za-z0-9._-]+', '+', ref)}.sqsh"


def import_script(image: str, sqsh: str, wait_s: float, must_see: str | None = None) -> str:
    """sh text importing IMAGE into SQSH once: under `flock` on SQSH.lock (so concurrent jobs and the
    nodes of one job import it once), skipped when SQSH exists; written as SQSH.part and renamed when
    complete, so a killed import never leaves a file that looks whole (no `unsquashfs -l` check needed).

    With MUST_SEE (a file the runner wrote into the job directory before the job: multi-node, its job.json,
    since Dynamo's store and the recipe's install live in that directory; single-node, the engine's options
    file), each node first checks that it sees that file: a job directory that is not on a filesystem
    shared by all nodes fails here, naming the node, instead of as a pyxis mount error or a Dynamo worker
    that never registers."""
    wait = max(1, math.ceil(wait_s))
    ref = image_for_slurm(image)
    shared = [] if must_see is None else [
        f"f={shlex.quote(must_see)}",
        '[ -f "$f" ] || { echo "$(hostname): $f is not on this node: the job\'s containers mount folders of the '
        'runner\'s work directory, so it must be on a filesystem all nodes mount at the same path" >&2; exit 78; }',
    ]
    return "\n".join([
        "set -e",
        *shared,
        f"f={shlex.quote(sqsh)}",
        'mkdir -p "${f%/*}"',
        'exec 9>>"$f.lock"',
        f'flock -w {wait} 9 || {{ echo "no lock on $f.lock within {wait} s: another import holds it" >&2; exit 75; }}',
        'if [ -s "$f" ]; then echo "$(hostname): $f is already imported"; exit 0; fi',
        'rm -f "$f.part"',
        f'echo "$(hostname): importing {ref} into $f"',
        f'enroot import --output "$f.part" {shlex.quote("docker://" + ref)}',
        'mv -f "$f.part" "$f"',
    ])


def image_import(image: str, squash_dir: str, wait_s: float, prefix: list[str], must_see: str | None = None) -> Launch:
    """The job's one import of its image (see import_script), run by `prefix` (an srun step)."""
    sqsh = squash_file(image, squash_dir)
    return Launch("image", prefix + ["sh", "-c", import_script(image, sqsh, wait_s, must_see)], {}, [],
                  names.IMAGE_IMPORT_LOG)


def _slurm(plan: JobPlan, proc: Proc, settings: Settings, host: Host) -> Launch:
    argv = ["srun", f"--jobid={SERVER_JOBID}", "--overlap", "--nodes=1", "--ntasks=1"]
    if proc.role != "server":
        # the router shares the engine's node (it reaches the engine on 127.0.0.1) but no GPU
        argv.append("--gres=none")
    argv += [f"--container-image={squash_file(container_image(plan, 'slurm'), host.squash_dir)}",
             f"--container-mounts={settings.model_store}:{MODELS_MOUNT}:ro,{settings.hf_cache}:{HF_CACHE_MOUNT}"
             + "".join(f",{path}:{path}" for path in proc.mounts)
             + "".join(f",{path}:{path}:ro" for path in proc.read_only),
             "--container-remap-root", "--no-container-mount-home"]
    env = {**proc.env, "HF_HUB_CACHE": HF_CACHE_MOUNT} if proc.role == "server" else dict(proc.env)
    if env:
        # values go through srun's own environment: `--export=ALL,K=V` would split values with commas
        argv.append(f"--container-env={','.join(env)}")
    argv += proc.argv
    if proc.role == "server":
        return Launch(proc.role, argv, env, [["scancel", SERVER_JOBID]], proc.log, submit=_sbatch(plan, host),
                      locate=["squeue", "--noheader", "--format=%T %N", f"--jobs={SERVER_JOBID}"],
                      describe=describe_node(SERVER_NODE))
    return Launch(proc.role, argv, env, [], proc.log)  # a step: ends with the job


def _process(plan: JobPlan, proc: Proc, settings: Settings, host: Host) -> Launch:
    env = dict(proc.env)
    if proc.role == "server":
        env[VISIBLE_DEVICES[host.vendor]] = ",".join(_devices(plan, host))
    # vLLM and SGLang hold a socket per request and a file per shared-memory block: a runner service's
    # soft limit (1024, or 20,000 where vLLM warned on the H100 run) is too low at high concurrency
    return Launch(proc.role, list(proc.argv), env, [], proc.log, raise_nofile=proc.role == "server")


def describe_node(node: str) -> list[str]:
    return ["scontrol", "show", "node", "--oneliner", node]


def node_addr(description: str) -> str | None:
    """NodeAddr from `scontrol show node --oneliner`: where a node is reached. It differs from the
    NodeName where names are not DNS names (Slurm itself connects to NodeAddr)."""
    m = re.search(r"(?:^|\s)NodeAddr=(\S+)", description)
    return m.group(1) if m else None


def _remote(text: str, settings: Settings, backend: str) -> str:
    """With slurm the engine runs on a compute node: the runner reaches it at the node's NodeAddr."""
    if backend != "slurm":
        return text
    return text.replace(f"http://{settings.host}:", f"http://{SERVER_ADDR}:")


remote_url = _remote   # a URL of the engine as the runner reaches it (runner profile's calls)


def launches(plan: JobPlan, backend: str, settings: Settings, host: Host | None = None) -> list[Launch]:
    """Server (and router) through the backend; the client always runs on the runner itself."""
    host = host or Host(label=job_id(plan), runner=settings.runner_name)
    wrap = {"docker": _docker, "slurm": _slurm, "process": _process}[backend]
    out = []
    for proc in plan.procs:
        if proc.in_container:
            out.append(wrap(plan, proc, settings, host))
        else:
            argv = [_remote(a, settings, backend) for a in proc.argv]
            out.append(Launch(proc.role, argv, dict(proc.env), [], proc.log))
    return out


def _on_node(backend: str) -> list[str]:
    """Prefix running a helper where the engine runs: a step of the allocation on Slurm."""
    return ["srun", f"--jobid={SERVER_JOBID}", "--overlap", "--nodes=1", "--ntasks=1"] if backend == "slurm" else []


def slurm_image_import(plan: JobPlan, settings: Settings, host: Host) -> Launch:
    """The single-node job's image import, a step of its allocation (no GPU) before the engine starts."""
    prefix = ["srun", f"--jobid={SERVER_JOBID}", "--overlap", "--nodes=1", "--ntasks=1", "--gres=none"]
    # an engine that reads files the runner wrote (TensorRT-LLM's options file) needs them on its node:
    # checked there first, as for multi-node jobs
    must_see = plan.files[0][0] if plan.files else None
    return image_import(container_image(plan, "slurm"), host.squash_dir, settings.ready_timeout_s, prefix, must_see)


def model_path(plan: JobPlan, settings: Settings) -> str:
    return f"{settings.model_store}/{plan.served_model}"


def node_check(plan: JobPlan, backend: str, settings: Settings, vendor: str = "nvidia") -> Launch:
    """The pre-run check of GPUs, model and disk (nodecheck.py), where the engine will run."""
    argv = _on_node(backend) + ["sh", "-c", nodecheck.script(model_path(plan, settings), settings.hf_cache, vendor)]
    return Launch("check", argv, {}, [], names.NODE_CHECK_TXT)


def engine_version(plan: JobPlan, backend: str, settings: Settings, host: Host) -> Launch:
    """The engine plug-in's version command where the engine will run: on the host (process), in the
    recipe's image (docker: a container of its own, no GPU; Slurm: a step of the allocation in the
    imported image); the recipe's environment is the engine's, not the version command's."""
    plugin = engines.require(plan.point.engine, plan.point.recipe_file)
    proc = Proc("version", list(plugin.VERSION_ARGV), {}, names.ENGINE_VERSION_TXT)
    return {"docker": _docker, "slurm": _slurm, "process": _process}[backend](plan, proc, settings, host)


def version_verdict(plan: JobPlan, backend: str, output: str) -> tuple[dict, list[str]]:
    """What the version command printed, as job.json's `engine`, and why it cannot serve the recipe."""
    plugin = engines.require(plan.point.engine, plan.point.recipe_file)
    installed = engines.printed_version(output)
    where = "the runner host" if backend not in CONTAINER_BACKENDS else f"image {plan.image}"
    info = {"name": plugin.NAME, "version": installed, "declared": list(plan.point.engine_versions),
            "backend": backend, "image": plan.image}
    return info, engines.installed_version_problems(plugin.LABEL, installed, plan.point.engine_versions, where,
                                                    output)


def gpu_sampler(plan: JobPlan, backend: str, host: Host) -> Launch | None:
    """nvidia-smi sampling the job's GPUs for the whole job (Slurm: a step that sees the job's GPUs); None on
    AMD runners, whose sampler (amd-smi) ci-tools does not read yet: the job runs without energy figures."""
    if host.vendor != "nvidia":
        return None
    devices = None if backend == "slurm" else _devices(plan, host)
    return Launch("telemetry", _on_node(backend) + telemetry.sampler_argv(devices), {}, [],
                  names.GPU_TELEMETRY_CSV)


def ready_urls(plan: JobPlan, backend: str, settings: Settings) -> list[str]:
    return [_remote(u, settings, backend) for u in plan.ready_urls]


def image_import_lines(lc: Launch, image: str) -> list[str]:
    """--dry-run lines of the image import: the step, then its script line by line."""
    return [f"# image {image_for_slurm(image)}: imported once (log: {lc.log}), then every step runs the file: "
            f"{shlex.join(lc.argv[:-1])} '...'"] + [f"#   {line}" for line in lc.argv[-1].splitlines()]


def render_dry_run(plan: JobPlan, backend: str, settings: Settings, host: Host | None = None) -> str:
    """The exact commands and environment, as `runner run --dry-run` prints them (golden-tested)."""
    host = host or Host(label=job_id(plan), runner=settings.runner_name)
    pt = plan.point
    lines = [f"# job {plan.result_filename} (label {host.label})",
             f"# recipe {pt.recipe_file} point {pt.name} ({pt.key.describe()}), {plan.gpus} GPU(s), "
             f"backend {backend}",
             f"# scenario {plan.scenario}" + (f", duration {plan.duration_s:g} s" if plan.duration_s else "")
             + (", eval run: no simulated acceptance, the eval harness instead of AIPerf" if plan.run_eval else ""),
             f"# readiness: {' then '.join(ready_urls(plan, backend, settings))} "
             f"(deadline {settings.ready_timeout_s:g} s)"]
    for launch in launches(plan, backend, settings, host):
        lines.append("")
        if launch.submit:
            lines.append(f"# allocation: {shlex.join(launch.submit)}  ->  {SERVER_JOBID}")
            lines.append(f"# then, until RUNNING: {shlex.join(launch.locate or [])}  ->  RUNNING {SERVER_NODE}")
            lines.append(f"# reached at {SERVER_ADDR}, the NodeAddr of {shlex.join(launch.describe or [])}")
        if launch.role == "server":
            check = node_check(plan, backend, settings, host.vendor)
            lines.append(f"# node check (GPUs, model {model_path(plan, settings)}, disk of {settings.hf_cache}): "
                         f"{shlex.join(check.argv[:-1])} '...'")
            if backend == "slurm":
                lines += image_import_lines(slurm_image_import(plan, settings, host), container_image(plan, backend))
            declared = ", ".join(pt.engine_versions) or "none: recorded, not checked"
            lines.append(f"# engine version (recipe's engine-versions: {declared}; log: {names.ENGINE_VERSION_TXT}): "
                         f"{shlex.join(engine_version(plan, backend, settings, host).argv)}")
            sampler = gpu_sampler(plan, backend, host)
            lines.append(f"# GPU telemetry (log: {names.GPU_TELEMETRY_CSV}): {shlex.join(sampler.argv)}" if sampler
                         else f"# GPU telemetry: none ({host.vendor} GPUs: ci-tools samples nvidia-smi only)")
        lines.append(f"# {launch.role} (log: {launch.log})")
        lines.append(launch.shell())
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
