"""One multi-node point's Slurm commands (pure: no process, no file): the allocation, the image import,
one srun step per worker and the frontend, readiness in order, the clients, and the `--dry-run` text.

  salloc --no-shell [--exclusive] --nodes=N --gpus-per-node=G --time=M --immediate=Q   one allocation
  srun --jobid=J --nodelist=... --nodes=k --ntasks-per-node=1 ...   one step per worker (pyxis flags)
  srun --jobid=J --overlap --nodelist=<node 0> ...                  the frontend step
  scancel J                                                         cleanup, always

`place` puts the plan's layout (worker -> node indexes) on the allocation's node names; `fill` writes
where each worker is reached (Slurm's NodeAddr, else the name) into the commands.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from ci_tools import engines, names
from ci_tools.runner.backends import HF_CACHE_MOUNT, RUNNER_KEY, Launch, image_import, image_import_lines, squash_file
from ci_tools.runner.disagg import Client, MultiNodePlan, _job_tag, gpu_slices
from ci_tools.runner.plan import MODELS_MOUNT
from ci_tools.runner.ready import HttpReady, ModelListed, WorkersHealthy, WorkersRegistered
from ci_tools.errors import InputError

NODE_PLACEHOLDER = "node{}"  # dry-run: the i-th node of the allocation
ALLOCATION_LOG = "allocation.log"    # salloc's own output: its "Pending/Granted job allocation J" lines
# a worker sharing its node keeps its slice of the GPUs Slurm gives the step
GPU_SLICE = ('IFS=, read -ra g <<< "$CUDA_VISIBLE_DEVICES"; '
             'export CUDA_VISIBLE_DEVICES="$(IFS=,; echo "${{g[*]:{first}:{count}}}")"; exec "$@"')


def place(plan: MultiNodePlan, nodes: list[str]) -> dict[str, list[str]]:
    """Worker name -> its nodes, in allocation order (`layout`); `frontend` -> the first node."""
    if len(nodes) < plan.nodes:
        raise InputError(f"the allocation has {len(nodes)} node(s); the point needs {plan.nodes}")
    out: dict[str, list[str]] = {w.name: [nodes[i] for i in plan.layout[w.name]] for w in plan.workers}
    out["frontend"] = [nodes[0]]
    return out


def fill(text: str, placement: dict[str, list[str]], addresses: dict[str, str] | None = None) -> str:
    """Placeholders -> where to reach a worker's first node: Slurm's NodeAddr (the name by default)."""
    addr = addresses or {}
    for name, nodes in placement.items():
        text = text.replace(f"{{{name}_node0}}", addr.get(nodes[0], nodes[0]))
    fe = placement["frontend"][0]
    return text.replace("{frontend_node}", addr.get(fe, fe))


@dataclass
class Step:
    name: str                      # prefill-0, decode-1, frontend
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    log: str = ""


def job_name(plan: MultiNodePlan) -> str:
    """The allocation's name: the job's label, which `runner cleanup` stops by (cleanup.py)."""
    return plan.slurm.label or _job_tag(plan.result_filename)


def alloc_argv(plan: MultiNodePlan) -> list[str]:
    s = plan.slurm
    # the GPUs are asked for even when --exclusive grants the whole node: without them a step's
    # --gpus-per-node fails ("Step requested GRES but job doesn't have GRES") on a shared node
    argv = ["salloc", "--no-shell", f"--job-name={job_name(plan)}", f"--nodes={plan.nodes}",
            f"--gpus-per-node={plan.gpus_per_node}"]
    if s.runner:
        argv.append(f"--comment={RUNNER_KEY}={s.runner}")
    if s.exclusive:
        argv.append("--exclusive")
    argv += [f"--time={plan.alloc_time_min}", f"--immediate={math.ceil(s.queue_timeout_s)}"]
    if s.partition:
        argv.append(f"--partition={s.partition}")
    if s.account:
        argv.append(f"--account={s.account}")
    return argv


def container_folders(plan: MultiNodePlan, out_dir: str) -> tuple[list[str], list[str]]:
    """(writable, read-only) folders of the job directory every container of the job mounts at the same
    path: what the engine itself writes (Dynamo's file discovery, the recipe's pinned install) and what the
    runner wrote for it (engine_files/: TensorRT-LLM's worker options). Never the job directory itself,
    where the clients write their exports (runner/seal.py)."""
    writable = []
    if plan.point.frontend.get("kind") == "dynamo":
        writable.append(f"{out_dir}/{names.DYNAMO_STORE}")
    if plan.point.frontend.get("install"):
        writable.append(f"{out_dir}/{names.INSTALL_DIR}")
    read_only = [f"{out_dir}/{names.ENGINE_FILES_DIR}"] if plan.files else []
    return writable, read_only


def _container(plan: MultiNodePlan, env: dict[str, str], out_dir: str) -> list[str]:
    s = plan.settings
    writable, read_only = container_folders(plan, out_dir)
    mounts = ",".join([f"{s.model_store}:{MODELS_MOUNT}:ro", f"{s.hf_cache}:{HF_CACHE_MOUNT}",
                       *(f"{p}:{p}" for p in writable), *(f"{p}:{p}:ro" for p in read_only)])
    argv = [f"--container-image={squash_file(plan.image, plan.slurm.squash_dir)}", f"--container-mounts={mounts}",
            "--container-remap-root", "--no-container-mount-home"]
    if env:
        argv.append(f"--container-env={','.join(env)}")
    return argv


def import_step(plan: MultiNodePlan, jobid: str, nodes: list[str], out_dir: str) -> Launch:
    """The image import, one task on every node: on a shared squash directory the first takes the lock and
    imports and the others find the file; on node-local ones each node imports once (for later jobs too).
    Each task first checks that its node sees the job directory OUT_DIR (its job.json, backends.import_script)."""
    n = len(nodes)
    prefix = ["srun", f"--jobid={jobid}", "--job-name=image", "--overlap", f"--nodelist={','.join(nodes)}",
              f"--nodes={n}", f"--ntasks={n}", "--ntasks-per-node=1", "--gres=none"]
    return image_import(plan.image, plan.slurm.squash_dir, plan.settings.ready_timeout_s, prefix,
                        f"{out_dir}/{names.JOB_JSON}")


def worker_steps(plan: MultiNodePlan, jobid: str, placement: dict[str, list[str]], out_dir: str,
                 addresses: dict[str, str] | None = None) -> list[Step]:
    steps = []
    slices = gpu_slices(plan.workers, plan.gpus_per_node or 1)
    for w in plan.workers:
        nodes = placement[w.name]
        k = len(nodes)
        per_node = w.group.gpus_per_worker // k
        wrapper = getattr(engines.engine(plan.point.engine), "RANK_WRAPPER", None)
        mpi = k > 1 and wrapper is None and not plan.settings.server_cmd
        tasks = per_node if mpi else 1      # MPI engines (TensorRT-LLM): one rank per GPU
        gpus = [f"--gpus-per-node={per_node}"]
        if w.name in slices:
            # a worker sharing its node: every step on it may use the whole node (without --overlap a
            # step takes every CPU of the node and the next one waits for ever), and each keeps its own
            # GPUs of the ones Slurm gives the step (CUDA_VISIBLE_DEVICES, positions first..first+count)
            gpus = [f"--gpus-per-node={plan.gpus_per_node}", "--overlap"]
        argv = ["srun", f"--jobid={jobid}", f"--job-name={w.name}", f"--nodelist={','.join(nodes)}",
                f"--nodes={k}", f"--ntasks={k * tasks}", f"--ntasks-per-node={tasks}",
                *gpus, "--kill-on-bad-exit=1", "--label" if k > 1 else "", "--mpi=pmix" if mpi else ""]
        argv = [a for a in argv if a] + _container(plan, w.env, out_dir)
        engine = [fill(a, placement, addresses) for a in w.argv]
        if w.name in slices:
            first, count = slices[w.name]
            engine = ["bash", "-c", GPU_SLICE.format(first=first, count=count), "bash", *engine]
        if mpi:
            engine = [*engines.trtllm.MPI_LAUNCHER, *engine]
        elif k > 1:
            # one task per node; each passes its step-relative node index as the engine's node rank
            engine = ["bash", "-c", wrapper or 'exec "$@" --node-rank "$SLURM_NODEID"', "bash", *engine]
        steps.append(Step(w.name, argv + engine, dict(w.env), w.log))
    fe = placement["frontend"]
    # the frontend shares the first node with prefill-0 (--overlap) and uses no GPU
    argv = ["srun", f"--jobid={jobid}", "--job-name=frontend", "--overlap", f"--nodelist={fe[0]}", "--nodes=1",
            "--ntasks=1", "--gres=none"] + _container(plan, plan.frontend_env, out_dir)
    steps.append(Step("frontend", argv + [fill(a, placement, addresses) for a in plan.frontend_argv],
                      dict(plan.frontend_env),
                      names.ROUTER_LOG))
    return steps


def ready_checks(plan: MultiNodePlan, placement: dict[str, list[str]],
                 addresses: dict[str, str] | None = None) -> list[HttpReady]:
    """In order: every worker's health, then the frontend's health, then its registration of the
    workers: sglang-router's /workers lists every prefill and decode worker healthy; Dynamo's
    /v1/models names the model once a worker has registered it."""
    addr = addresses or {}
    out: list[HttpReady] = []
    dynamo = plan.point.frontend.get("kind") == "dynamo"
    for w in plan.workers:
        port = w.health_port if dynamo and not plan.settings.server_cmd else w.port
        node = placement[w.name][0]
        out.append(HttpReady(f"http://{addr.get(node, node)}:{port}/health", w.name))
    node = placement["frontend"][0]
    fe = f"http://{addr.get(node, node)}:{plan.frontend_port}"
    out.append(HttpReady(f"{fe}/health", "frontend"))
    if dynamo:
        out.append(ModelListed(f"{fe}/v1/models", "frontend", model=plan.served_model))
    elif plan.point.aggregated:
        out.append(WorkersHealthy(f"{fe}/workers", "frontend", count=len(plan.workers)))
    else:
        out.append(WorkersRegistered(f"{fe}/workers", "frontend", prefill=plan.point.prefill.key.workers,
                                     decode=plan.point.decode.key.workers))
    return out


def client_commands(plan: MultiNodePlan, placement: dict[str, list[str]],
                    addresses: dict[str, str] | None = None) -> list[Client]:
    return [replace(c, argv=[fill(a, placement, addresses) for a in c.argv], env=dict(c.env)) for c in plan.clients]


def _shell(argv: list[str], env: dict[str, str] | None = None, width: int = 100) -> str:
    from ci_tools.runner.backends import Launch

    return Launch("", argv, dict(env or {})).shell(width)


def render_dry_run(plan: MultiNodePlan, out_dir: str) -> str:
    """The complete launch, with node<i> standing for the i-th node of the allocation (golden-tested)."""
    nodes = [NODE_PLACEHOLDER.format(i) for i in range(plan.nodes)]
    placement = place(plan, nodes)
    pt = plan.point
    p, d = pt.prefill, pt.decode
    lines = [f"# job {plan.result_filename}",
             f"# recipe {pt.recipe_file} point {pt.name}: prefill {p.key.describe()}, decode {d.key.describe()}; "
             f"{plan.gpus} GPUs on {plan.nodes} node(s) of {plan.gpus_per_node}, kv-transfer {pt.kv_transfer}, "
             f"frontend {pt.frontend.get('kind')} ({pt.frontend.get('name')} {pt.frontend.get('version')}), "
             f"backend slurm",
             f"# scenario {plan.scenario}" + (f", duration {plan.duration_s:g} s" if plan.duration_s else "")
             + (f", eval concurrencies {' '.join(str(c) for c in plan.evals['concurrencies'])}" if plan.evals
                else f", concurrencies {' '.join(str(c.conc) for c in plan.clients)}")
             + (", eval run: no synthetic acceptance, no throughput client" if plan.run_eval else ""),
             "# node<i> is the i-th node of the allocation (`scontrol show hostnames`); placement: "
             + ", ".join(f"{k} on {'+'.join(v)}" for k, v in placement.items()),
             "",
             f"# allocation ({'exclusive' if plan.slurm.exclusive else 'shared nodes'}, time bounded; its job id J "
             "comes from salloc's `Granted job allocation J`)",
             _shell(alloc_argv(plan)),
             "# then: squeue --noheader --format=%N --jobs=J  ->  scontrol show hostnames <list>; "
             "each node's NodeAddr (scontrol show node) is where it is reached"]
    lines += [""] + image_import_lines(import_step(plan, "J", nodes, out_dir), plan.image)
    for step in worker_steps(plan, "J", placement, out_dir):
        lines += ["", f"# {step.name} (log: {step.log})", _shell(step.argv, step.env)]
    lines += ["", "# readiness, in order (deadline "
              f"{plan.settings.ready_timeout_s:g} s): "
              + " then ".join(c.describe() for c in ready_checks(plan, placement))]
    for c in client_commands(plan, placement):
        what = f"client conc {c.conc}" if not plan.evals else f"{c.what}, against the frontend"
        lines += ["", f"# {what} (log: {c.log})", _shell(c.argv, c.env)]
    lines += ["", "# cleanup on success, failure, timeout and cancel: every step ends with the allocation",
              f"# stop: scancel J  (and, if salloc never printed J: scancel --name={job_name(plan)})"]
    return "\n".join(lines) + "\n"
