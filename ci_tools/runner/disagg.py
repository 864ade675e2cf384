"""One multi-node disaggregated point: from a matrix row to its Slurm launch (pure: no process, no file).

The row (prefill/decode worker groups, conc list, kv-p2p-transfer, router) and its resolved recipe
point become a `MultiNodePlan`: one worker per prefill/decode worker, the frontend, and one AIPerf
run per concurrency of the row. `slurm_launch(plan, settings, nodes)` places it on the nodes of one
allocation (workers in order prefill-0.., decode-0.., each on its own whole nodes; the frontend on
the first node) and returns the exact commands:

  salloc --no-shell [--exclusive] --nodes=N --gpus-per-node=G --time=M --immediate=Q   one allocation
  srun --jobid=J --nodelist=... --nodes=k --ntasks-per-node=1 ...   one step per worker (pyxis flags)
  srun --jobid=J --overlap --nodelist=<node 0> ...                  the frontend step
  scancel J                                                         cleanup, always

Ports are distinct per worker (base + 10 x index), so several workers may share a host (the test
cluster runs every slurmd on one machine) without a collision; on exclusive nodes that is harmless.
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any
from types import SimpleNamespace

from ci_tools.config.disagg import DisaggPoint, Group
from ci_tools.config.recipe import render_args
from ci_tools.errors import InputError
from ci_tools.sweep.buckets import profile_of
from ci_tools.sweep.row import MatrixRow, as_row
from ci_tools import names
from ci_tools import engines
from ci_tools.engines import ServeSpec, WorkerSpec, compat, install, routers
from ci_tools.runner import budget as bud
from ci_tools.runner.backends import (HF_CACHE_MOUNT, RUNNER_KEY, SQUASH_DIR, Launch, image_import, image_import_lines,
                                      job_id, squash_file)
from ci_tools.runner.plan import (AGENTIC, AIPERF_TIMEOUTS_ENV, MODELS_MOUNT, SIM_ACC_ENV, SIM_ACC_LEN, Settings,
                                  client_argv, image_problems, run_shape, sequence_lengths)

WORKER_PORT_BASE = 30000
PORT_STRIDE = 10            # per worker: http, +1 bootstrap, +2 dist-init, +3 dynamo system (health)
# A fixed-sequence client sends 10 x conc requests; at the GB300 rates of the example entries that is
# minutes, not the hour a single-node fixed-sequence row is given, and a multi-node row runs several
# concurrencies in one allocation: 30 min each keeps two of them, 1 h queue and 4 h readiness inside
# benchmark.yml's timeout (ci_tools/runner/budget.py).
FIXED_SEQ_CLIENT_S = 1800.0
NODE_PLACEHOLDER = "node{}"  # dry-run: the i-th node of the allocation
MIN_READY_S = 3600.0         # the least readiness a multi-node row's clients may leave it
# a worker sharing its node keeps its slice of the GPUs Slurm gives the step
GPU_SLICE = ('IFS=, read -ra g <<< "$CUDA_VISIBLE_DEVICES"; '
             'export CUDA_VISIBLE_DEVICES="$(IFS=,; echo "${{g[*]:{first}:{count}}}")"; exec "$@"')


@dataclass
class SlurmSettings:
    """Multi-node runner settings beyond the single-node `Settings` (CLI options / environment)."""

    partition: str | None = None
    account: str | None = None
    exclusive: bool = True
    max_time_minutes: int | None = None    # the partition's limit (runners.yaml slurm.max-time-minutes)
    queue_timeout_s: float = bud.QUEUE_TIMEOUT_S   # salloc --immediate: give up when not granted by then
    client_timeout_s: float | None = None  # per concurrency (default: duration + grace, or FIXED_SEQ_CLIENT_S)
    router_cmd: str | None = None          # replaces the frontend command (tests): {port} {prefill} {decode}
    worker_port_base: int = WORKER_PORT_BASE
    label: str = ""                        # the job's label: allocation name, process marks (cleanup.py)
    runner: str = ""
    squash_dir: str = SQUASH_DIR           # the image's one import per job (backends.image_import)

    @classmethod
    def from_hardware(cls, hardware: dict, **kw) -> "SlurmSettings":
        """runners.yaml `hardware.<label>.slurm` (partition, account, exclusive, max-time-minutes)."""
        slurm = (hardware or {}).get("slurm") or {}
        return cls(partition=slurm.get("partition"), account=slurm.get("account"),
                   exclusive=bool(slurm.get("exclusive", True)), max_time_minutes=slurm.get("max-time-minutes"),
                   **kw)


@dataclass
class Worker:
    role: str                # prefill | decode | aggregated (the prefill side of decode num-worker 0)
    index: int
    group: Group
    argv: list[str]          # the engine command; multi-node workers get --node-rank per task
    env: dict[str, str]
    port: int
    health_port: int
    dist_port: int
    files: tuple[tuple[str, str], ...] = ()   # (path, text) the engine command reads (written before start)
    command: "engines.Command | None" = None  # launcher + what the engine's own parser sees

    @property
    def name(self) -> str:
        return f"{self.role}-{self.index}"

    @property
    def log(self) -> str:
        return f"{self.name}.log"


@dataclass
class Client:
    conc: int
    argv: list[str]
    env: dict[str, str]
    subdir: str              # "" when the row has one concurrency (the single-node layout)
    result_filename: str
    # what the client must leave in its directory (AIPerf's exports; an eval client's driver writes
    # its own manifest and exits non-zero on a missing input)
    expects: tuple[str, ...] = (f"{names.AIPERF_DIR}/{names.PROFILE_JSONL}", f"{names.AIPERF_DIR}/{names.PROFILE_JSON}")
    what: str = "AIPerf"
    exports: tuple[str, ...] = ()   # folders of the job directory it writes, hashed when it exits (custody.py)

    @property
    def log(self) -> str:
        return f"{self.subdir}/{names.CLIENT_LOG}" if self.subdir else names.CLIENT_LOG


@dataclass
class MultiNodePlan:
    row: MatrixRow
    point: DisaggPoint
    scenario: str
    result_filename: str
    workers: list[Worker]
    frontend_argv: list[str]
    frontend_env: dict[str, str]
    clients: list[Client]
    duration_s: float | None
    run_eval: bool
    served_model: str
    image: str
    settings: Settings
    slurm: SlurmSettings
    gpus_per_node: int
    alloc_time_min: int
    frontend_port: int
    client_s: float                      # each concurrency's client limit
    budget: bud.Budget
    layout: dict[str, list[int]] = field(default_factory=dict)   # worker -> indexes of its nodes
    evals: dict | None = None            # eval rows: ci_tools.evals.policy.eval_spec (the harness runs)

    @property
    def gpus(self) -> int:
        return self.point.gpus

    @property
    def nodes(self) -> int:
        return 1 + max((i for idx in self.layout.values() for i in idx), default=0)

    @property
    def files(self) -> list[tuple[str, str]]:
        return [f for w in self.workers for f in w.files]

    def topology(self, placement: dict[str, list[str]] | None = None) -> dict:
        """The worker topology as result.json.point and job.json record it."""
        out = {"nodes": self.nodes, "gpus": self.gpus, "gpus-per-node": self.gpus_per_node,
               "kv-transfer": self.point.kv_transfer,
               "frontend": {k: self.point.frontend[k] for k in ("kind", "name", "version")}}
        for g in self.point.groups:
            out[g.role] = {"num-worker": g.key.workers, "tp": g.key.tp, "ep": g.key.ep, "dp-attn": g.key.dp_attn,
                           "nodes-per-worker": g.nodes_per_worker, "gpus": g.gpus}
            out[g.role].update({k: v for k, v in (("pp", g.key.pp), ("dcp-size", g.key.dcp),
                                                  ("pcp-size", g.key.pcp)) if v > 1})
        if self.point.aggregated:
            out["aggregated"] = True
        if self.point.kv_offload:
            out["kv-offload"] = {k: self.point.kv_offload[k] for k in ("backend", "medium")}
        if placement:
            out["placement"] = dict(placement)
        return out

    def job_json(self, placement: dict[str, list[str]] | None = None) -> dict:
        return {
            "result-filename": self.result_filename,
            "label": self.slurm.label,
            "multinode": True,
            "point": self.point_for(None, placement),
            "recipe": self.point.as_dict(),
            "row": self.row.as_dict(),
            "concurrencies": [{"conc": c.conc, "dir": c.subdir, "result-filename": c.result_filename}
                              for c in self.clients],
            "client-exports": [f for c in self.clients for f in c.exports],
            "commands": {w.name: {"argv": w.argv, "env": w.env, "log": w.log} for w in self.workers}
            | {"frontend": {"argv": self.frontend_argv, "env": self.frontend_env, "log": names.ROUTER_LOG}}
            | {f"client-c{c.conc}": {"argv": c.argv, "env": c.env, "log": c.log} for c in self.clients},
            **({"evals": self.evals} if self.evals is not None else {}),
        }

    def point_for(self, client: Client | None, placement: dict[str, list[str]] | None = None) -> dict:
        """job.json `point` (for one concurrency's directory when `client` is given)."""
        p, d = self.point.prefill, self.point.decode
        return {"name": self.point.name, "tp": p.key.tp, "ep": max(p.key.ep, d.key.ep),
                "dp-attn": p.key.dp_attn or d.key.dp_attn,
                "conc": client.conc if client else [c.conc for c in self.clients],
                "gpus": self.gpus, "scenario": self.scenario, "duration": self.duration_s,
                "model": self.served_model, "config-key": self.row.get("config-key"),
                "runner": self.row.get("runner"), "image": self.image, "run-eval": self.run_eval,
                "topology": self.topology(placement), "profile": profile_of(self.row),
                "canary": self.row.get("canary"), **sequence_lengths(self.row, self.scenario)}


def check_row(row: Mapping[str, Any]) -> list[str]:
    problems = []
    for key in ("prefill", "decode", "conc", "image", "model"):
        if key not in row:
            problems.append(f"the row has no `{key}`")
    if int((row.get("prefill") or {}).get("num-worker", 1)) < 1:
        problems.append("prefill num-worker must be at least 1 (decode num-worker 0 is the aggregated point)")
    scenario = row.get("scenario-type", "fixed-seq-len")
    if scenario != AGENTIC and ("isl" not in row or "osl" not in row):
        problems.append("fixed-sequence rows need `isl` and `osl`")
    return problems


def _concs(row: Mapping[str, Any]) -> list[int]:
    conc = row.get("conc")
    return [int(c) for c in conc] if isinstance(conc, list) else [int(conc)]


def _tag(g: Group) -> str:
    return f"tp{g.key.tp}-ep{g.key.ep}-dpa{'true' if g.key.dp_attn else 'false'}-nw{g.key.workers}"


def result_filename(row: Mapping[str, Any], point: DisaggPoint, concs: list[int], runner_name: str = "") -> str:
    """Like the single-node name, with both sides' topology in place of tp/ep/dpa."""
    base = (f"{row.get('exp-name', 'run')}_{row.get('precision', '')}_{row.get('framework', '')}"
            f"_prefill-{_tag(point.prefill)}_decode-{_tag(point.decode)}_spec-{row.get('spec-decoding', 'none')}"
            f"_conc{'x'.join(str(c) for c in concs)}")
    return names._finish(base, row, runner_name)


def offload_share(point: DisaggPoint, group: Group, row: Mapping[str, Any], gpus_per_node: int) -> tuple[int, int] | None:
    """(GB of host DRAM one worker may use on each of its nodes, its ranks on a node) from the row's
    per-node budget (total-cpu-dram-gb), when this side offloads KV; None when it does not."""
    from ci_tools.config.disagg import offload_roles

    off = point.kv_offload
    if not off or group.role not in offload_roles(off, point.decode.key):
        return None
    budget = int(row.get("total-cpu-dram-gb") or 0)
    if budget <= 0:
        raise InputError("the row offloads KV to DRAM but has no total-cpu-dram-gb budget; plan it with "
                         "`ci-tools plan` (it sizes the budget from runners.yaml)")
    ranks_on_node = min(group.gpus_per_worker, gpus_per_node)
    # workers smaller than a node share its DRAM in proportion to their GPUs
    return budget * ranks_on_node // gpus_per_node, ranks_on_node


def dynamo_runtime_args(namespace: str) -> list[str]:
    """Every Dynamo worker's runtime options: file discovery on the job directory (shared by every
    node), TCP requests, ZMQ events: no etcd/NATS."""
    return ["--namespace", namespace, "--discovery-backend", "file", "--request-plane", "tcp", "--event-plane", "zmq"]


def worker_spec(point: DisaggPoint, worker: Worker, model: str, row: Mapping[str, Any], gpus_per_node: int,
                files_dir: str) -> WorkerSpec:
    g = worker.group
    k = g.key
    args = dict(g.args)
    options: dict = {}
    share = offload_share(point, g, row, gpus_per_node)
    plugin = engines.engine(point.engine)
    if share is not None and hasattr(plugin, "offload"):
        more_args, options = plugin.offload(str(point.kv_offload.get("backend")), share[0], share[1])
        args.update(more_args)
    spec = ServeSpec(model_path=f"{MODELS_MOUNT}/{model}", served_model=model, host="0.0.0.0", port=worker.port,
                     tp=k.tp, ep=k.ep, dp_attn=k.dp_attn, args=args, versions=point.engine_versions, pp=k.pp,
                     dcp=k.dcp, pcp=k.pcp, files_dir=files_dir, options=options)
    kind = point.frontend.get("kind")
    return WorkerSpec(spec, "aggregated" if point.aggregated else g.role, point.kv_transfer, kind == "dynamo",
                      worker.port + 1, g.nodes_per_worker if g.gpus_per_worker >= gpus_per_node else 1,
                      f"{{{worker.name}_node0}}:{worker.dist_port}", worker.name,
                      router_fronted=kind == "sglang-router")


def worker_command(point: DisaggPoint, worker: Worker, model: str, row: Mapping[str, Any], gpus_per_node: int,
                   namespace: str, files_dir: str = ".") -> engines.Command:
    """The engine command of one worker, from the engine plug-in (Dynamo's runtime options first)."""
    ws = worker_spec(point, worker, model, row, gpus_per_node, files_dir)
    cmd = engines.engine(point.engine).worker(ws)
    if ws.dynamo:
        cmd = replace(cmd, args=(*dynamo_runtime_args(namespace), *cmd.args))
    return cmd


def worker_argv(point: DisaggPoint, worker: Worker, model: str, row: Mapping[str, Any], gpus_per_node: int,
                namespace: str, files_dir: str = ".") -> list[str]:
    return worker_command(point, worker, model, row, gpus_per_node, namespace, files_dir).argv


def frontend_argv(plan_point: DisaggPoint, port: int, workers: list[Worker], namespace: str) -> list[str]:
    fe = plan_point.frontend
    if fe.get("kind") == "dynamo":
        argv = ["python3", "-m", "dynamo.frontend", "--http-host", "0.0.0.0", "--http-port", str(port),
                "--namespace", namespace, "--discovery-backend", "file", "--request-plane", "tcp",
                "--event-plane", "zmq"]
    else:
        rel = routers.release(fe.get("name"), fe.get("version"))
        # the engine plug-ins' version guard: the router that runs is the release the master declares
        argv = ["python3", "-c", routers.GUARD, rel.dist, rel.version, rel.module, "--host", "0.0.0.0",
                "--port", str(port)]
        if plan_point.aggregated:
            # aggregated workers serve whole requests: plain routing over their URLs
            argv += ["--worker-urls", *[f"http://{{{w.name}_node0}}:{w.port}" for w in workers]]
        else:
            argv.append("--pd-disaggregation")
            for w in workers:
                url = f"http://{{{w.name}_node0}}:{w.port}"
                argv += ["--prefill", url, str(w.port + 1)] if w.role == "prefill" else ["--decode", url]
        argv += routers.metrics_options(port, fe.get("args"))
    return argv + render_args(fe.get("args") or {})


def _job_tag(result_filename: str) -> str:
    import hashlib

    return "cit-" + hashlib.sha256(result_filename.encode()).hexdigest()[:12]


def bud_minutes(seconds: float) -> int:
    return max(1, math.ceil(seconds / 60))


def build_multinode_plan(row: Mapping[str, Any], point: DisaggPoint, settings: Settings, out_dir: str,
                         gpus_per_node: int | None, slurm: SlurmSettings | None = None) -> MultiNodePlan:
    row = as_row(row)
    slurm = slurm or SlurmSettings()
    problems = check_row(row) + image_problems(row, point.image)
    if row.get("kv-p2p-transfer") and str(row["kv-p2p-transfer"]) != point.kv_transfer:
        problems.append(f"the row's kv-p2p-transfer {row['kv-p2p-transfer']!r} differs from the recipe's "
                        f"kv-transfer {point.kv_transfer!r}")
    router = row.get("router") or {}
    if router and (router.get("name"), str(router.get("version"))) != (point.frontend.get("name"),
                                                                        str(point.frontend.get("version"))):
        problems.append(f"the row's router {router.get('name')} {router.get('version')} differs from the recipe's "
                        f"frontend {point.frontend.get('name')} {point.frontend.get('version')}")
    plugin = engines.engine(point.engine)
    if plugin is None or not hasattr(plugin, "worker"):
        why = getattr(plugin, "NO_WORKERS", "") if plugin is not None else ""
        raise InputError(f"{point.recipe_file}: engine {point.engine!r} has no multi-node worker in ci-tools "
                         f"(known: sglang, vllm, trtllm){': ' + why if why else ''}")
    problems += plugin.version_problems(point.engine_versions)
    fe = point.frontend
    if fe.get("kind") == "dynamo":      # a release a runner can install, on the engine releases it imports
        problems += compat.frontend_problems(str(fe.get("version")), point.engine, point.engine_versions,
                                             point.image, fe.get("install"))
        problems += install.requirement_problems(fe["install"]) if "install" in fe else []
    for g in point.groups:
        if g.key.workers == 0:
            continue
        spec = ServeSpec("", "", "", 0, tp=g.key.tp, ep=g.key.ep, dp_attn=g.key.dp_attn, pp=g.key.pp,
                         dcp=g.key.dcp, pcp=g.key.pcp)
        problems += [f"{g.role}: {p}" for p in plugin.topology_problems(spec)]
        ws = WorkerSpec(spec, "aggregated" if point.aggregated else g.role, point.kv_transfer,
                        fe.get("kind") == "dynamo")
        problems += [f"{g.role}: {p}" for p in getattr(plugin, "worker_problems", lambda _w: [])(ws)]
    if fe.get("kind") == "sglang-router" and routers.release(fe.get("name"), fe.get("version")) is None:
        problems.append(f"frontend {fe.get('name')} {fe.get('version')} is not a router release ci-tools knows "
                        f"(known: {routers.known()}); add it to ci_tools/engines/routers.py")
    if not gpus_per_node:
        problems.append(f"runner {row.get('runner')!r} has no gpus-per-node in runners.yaml: workers cannot be "
                        "placed on nodes")
    else:
        from ci_tools.config.disagg import fits

        for g in point.groups:
            if g.key.workers and not fits(g.gpus_per_worker, g.nodes_per_worker, gpus_per_node):
                problems.append(f"{g.role} workers need {g.gpus_per_worker} GPUs on {g.nodes_per_worker} node(s) of "
                                f"{gpus_per_node} GPUs: a worker fills whole nodes, or an equal share of one node")
    if problems:
        raise InputError("; ".join(problems))

    scenario, run_eval, fast, duration = run_shape(row, settings)
    model = str(row["model"])
    concs = _concs(row)
    rf = result_filename(row, point, concs, settings.runner_name)
    namespace = _job_tag(rf)
    if not slurm.label:
        # the single-node rule (backends.job_id): from the result file name and the job directory
        slurm = replace(slurm, label=job_id(SimpleNamespace(result_filename=rf), out_dir))

    env_extra: dict[str, str] = {}
    if not run_eval and point.synthetic_acceptance is not None:
        env_extra[SIM_ACC_LEN] = f"{point.synthetic_acceptance:g}"
        env_extra.update(SIM_ACC_ENV)
    workers: list[Worker] = []
    index = 0
    for g in point.groups:
        for i in range(g.key.workers):
            port = slurm.worker_port_base + PORT_STRIDE * index
            w = Worker("aggregated" if point.aggregated else g.role, i, g, [], {}, port, port + 3, port + 2)
            env = dict(g.env) | env_extra | {"HF_HUB_CACHE": HF_CACHE_MOUNT}
            if point.frontend.get("kind") == "dynamo":
                env |= {"DYN_FILE_KV": f"{out_dir}/{names.DYNAMO_STORE}", "DYN_SYSTEM_PORT": str(w.health_port)}
            w.env = env
            if settings.server_cmd:
                w.argv = [a.format(port=port, model=model, role=g.role, bootstrap=port + 1)
                          for a in shlex.split(settings.server_cmd)]
            else:
                cmd = worker_command(point, w, model, row, gpus_per_node or 1, namespace,
                                     f"{out_dir}/{names.ENGINE_FILES_DIR}")
                w.argv, w.files, w.command = cmd.argv, cmd.files, cmd
                # an image without the engine's launcher (Dynamo): the recipe's pinned install first
                w.argv = install.wrap(w.argv, f"{out_dir}/{names.INSTALL_DIR}", point.frontend.get("install") or [])
                share = offload_share(point, g, row, gpus_per_node or 1)
                if share and not any(engines.engine(point.engine).offload(str(point.kv_offload["backend"]), *share)):
                    # a backend the plug-in does not size is configured by the recipe's kv-offload env/args,
                    # with InferenceX's documented variable for the budget
                    w.env = {**w.env, **{str(k): str(v) for k, v in (point.kv_offload.get("env") or {}).items()},
                             "TOTAL_CPU_DRAM_GB": str(share[0])}
            workers.append(w)
            index += 1
    fport = settings.port
    if slurm.router_cmd:
        urls = {role: [f"http://{{{w.name}_node0}}:{w.port}" for w in workers
                       if w.role == role or (role == "prefill" and w.role == "aggregated")]
                for role in ("prefill", "decode")}
        fargv = []
        for word in shlex.split(slurm.router_cmd):
            if word in ("{prefill}", "{decode}"):
                fargv += urls[word.strip("{}")]
            else:
                fargv.append(word.format(port=fport))
    else:
        fargv = install.wrap(frontend_argv(point, fport, workers, namespace), f"{out_dir}/{names.INSTALL_DIR}",
                             point.frontend.get("install") or [])
    fenv = dict(point.frontend.get("env") or {})
    if point.frontend.get("kind") == "dynamo":
        fenv["DYN_FILE_KV"] = f"{out_dir}/{names.DYNAMO_STORE}"
    base_url = f"http://{{frontend_node}}:{fport}"
    header = None
    if point.frontend.get("routing-key") == "session-id":
        rel = routers.release(point.frontend.get("name"), point.frontend.get("version"))
        header = rel.routing_key_header if rel else None
    clients = []
    evals = None
    if run_eval:
        from ci_tools.runner.plan import _eval_plan

        # the eval harness against the frontend, as a single-node eval row runs it against its server;
        # `runner evals --base-url` puts the frontend's real address into the planned harness commands
        evals = _eval_plan(row, model, base_url, [], settings, out_dir)
        clients.append(Client(0, [settings.ci_tools, "runner", "evals", out_dir, "--base-url", base_url], {}, "", rf,
                              expects=(), what="the eval harness", exports=(names.EVAL_DIR,)))
    else:
        for c in concs:
            sub = f"conc{c}" if len(concs) > 1 else ""
            cdir = f"{out_dir}/{sub}" if sub else out_dir
            crow = {**row, "conc": c}
            argv = client_argv(crow, model, settings, base_url, c, scenario, duration, fast, header, cdir)
            clients.append(Client(c, argv, {"AIPERF_DATASET_MMAP_BASE_PATH": f"{out_dir}/{names.AIPERF_TMP}",
                                            "HF_HUB_CACHE": settings.hf_cache, **AIPERF_TIMEOUTS_ENV},
                                  sub, result_filename(row, point, [c], settings.runner_name),
                                  exports=(f"{sub}/{names.AIPERF_DIR}" if sub else names.AIPERF_DIR,)))
    client_s = slurm.client_timeout_s or (bud.client_timeout(duration) if duration else FIXED_SEQ_CLIENT_S)
    if run_eval and not slurm.client_timeout_s and settings.evals is not None:
        client_s = float(settings.evals.timeout_s)
    budget = bud.job_budget(duration, queue_s=slurm.queue_timeout_s, ready_s=settings.ready_timeout_s,
                            client_s=client_s * max(1, len(clients)))
    left = bud.JOB_TIMEOUT_MINUTES * 60 - bud.OTHER_STEPS_S - budget.queue_s - budget.client_s - budget.stop_s
    if budget.problems() and left >= MIN_READY_S and settings.ready_timeout_s <= bud.READY_TIMEOUT_S:
        # a row of many concurrencies runs them all in one allocation (as InferenceX does, whose whole
        # srt-slurm job has 4 h): readiness gives up what the clients need, down to MIN_READY_S (a
        # readiness asked for beyond the default is the operator's and is not cut)
        settings = replace(settings, ready_timeout_s=float(math.floor(left)))
        budget = replace(budget, ready_s=settings.ready_timeout_s)
    problems = budget.problems()
    minutes = bud_minutes(budget.allocation_s)
    if slurm.max_time_minutes and minutes > int(slurm.max_time_minutes):
        problems.append(f"the allocation needs --time={minutes} min, over the {slurm.max_time_minutes} min "
                        f"runners.yaml allows runner {row.get('runner')!r}; lower --ready-timeout or raise "
                        "max-time-minutes")
    if problems:
        raise InputError("; ".join(problems))
    return MultiNodePlan(row=row, point=point, scenario=scenario, result_filename=rf, workers=workers,
                         frontend_argv=fargv, frontend_env=fenv, clients=clients, duration_s=duration,
                         run_eval=run_eval, served_model=model, image=point.image, settings=settings, slurm=slurm,
                         gpus_per_node=gpus_per_node or 0, alloc_time_min=minutes, frontend_port=fport,
                         client_s=client_s, budget=budget, layout=layout(workers, gpus_per_node or 1), evals=evals)


def layout(workers: list[Worker], gpus_per_node: int) -> dict[str, list[int]]:
    """Worker -> the indexes of its nodes, in order: a worker of whole nodes gets its own; workers
    smaller than a node are packed onto shared nodes (`gpu_slices` says which GPUs each gets)."""
    return {name: nodes for name, (nodes, _) in _packing(workers, gpus_per_node).items()}


def gpu_slices(workers: list[Worker], gpus_per_node: int) -> dict[str, tuple[int, int]]:
    """Worker sharing a node -> (its first GPU on the node, how many); whole-node workers are absent."""
    return {name: first for name, (_, first) in _packing(workers, gpus_per_node).items() if first is not None}


def _packing(workers: list[Worker], gpus_per_node: int) -> dict[str, tuple[list[int], tuple[int, int] | None]]:
    out: dict[str, tuple[list[int], tuple[int, int] | None]] = {}
    nxt = 0
    shared: tuple[int, int] | None = None     # (node index, first GPU still free on it)
    for w in workers:
        need = w.group.gpus_per_worker
        if need >= gpus_per_node:
            out[w.name] = (list(range(nxt, nxt + w.group.nodes_per_worker)), None)
            nxt += w.group.nodes_per_worker
            continue
        if shared is None or gpus_per_node - shared[1] < need:
            shared = (nxt, 0)
            nxt += 1
        out[w.name] = ([shared[0]], (shared[1], need))
        shared = (shared[0], shared[1] + need)
    return out


# ---- placement and the Slurm commands -------------------------------------------------------------


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
    where the clients write their exports (runner/custody.py)."""
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


@dataclass(frozen=True)
class ReadyCheck:
    step: str                 # whose process must stay alive meanwhile
    url: str
    expect: tuple = ()        # ("model", name) | ("workers", prefill, decode): what the body must say


def ready_checks(plan: MultiNodePlan, placement: dict[str, list[str]],
                 addresses: dict[str, str] | None = None) -> list[ReadyCheck]:
    """In order: every worker's health, then the frontend's health, then its registration of the
    workers: sglang-router's /workers lists every prefill and decode worker healthy; Dynamo's
    /v1/models names the model once a worker has registered it."""
    addr = addresses or {}
    out = []
    dynamo = plan.point.frontend.get("kind") == "dynamo"
    for w in plan.workers:
        port = w.health_port if dynamo and not plan.settings.server_cmd else w.port
        node = placement[w.name][0]
        out.append(ReadyCheck(w.name, f"http://{addr.get(node, node)}:{port}/health"))
    node = placement["frontend"][0]
    fe = f"http://{addr.get(node, node)}:{plan.frontend_port}"
    out.append(ReadyCheck("frontend", f"{fe}/health"))
    if dynamo:
        out.append(ReadyCheck("frontend", f"{fe}/v1/models", ("model", plan.served_model)))
    elif plan.point.aggregated:
        out.append(ReadyCheck("frontend", f"{fe}/workers", ("healthy", len(plan.workers))))
    else:
        out.append(ReadyCheck("frontend", f"{fe}/workers", ("workers", plan.point.prefill.key.workers,
                                                          plan.point.decode.key.workers)))
    return out


def registered(expect: tuple, body: str) -> bool:
    """Whether a readiness answer says what `expect` needs (pure; malformed bodies say no)."""
    if not expect:
        return True
    import json

    try:
        data = json.loads(body)
    except ValueError:
        return False
    if not isinstance(data, dict):
        return False
    if expect[0] == "model":
        models = data.get("data")
        return isinstance(models, list) and any(isinstance(m, dict) and m.get("id") == expect[1] for m in models)
    if expect[0] in ("workers", "healthy"):
        workers = data.get("workers")
        if not isinstance(workers, list):
            return False
        healthy = [w for w in workers if isinstance(w, dict) and w.get("is_healthy") is True]
        kinds = [w.get("worker_type") for w in healthy]
        if expect[0] == "healthy":
            return len(healthy) >= expect[1]
        return kinds.count("prefill") >= expect[1] and kinds.count("decode") >= expect[2]
    return False


def describe_check(c: ReadyCheck) -> str:
    if not c.expect:
        return c.url
    if c.expect[0] == "model":
        return f"{c.url} (lists {c.expect[1]})"
    if c.expect[0] == "healthy":
        return f"{c.url} ({c.expect[1]} worker(s) healthy)"
    return f"{c.url} ({c.expect[1]} prefill + {c.expect[2]} decode healthy)"


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
              + " then ".join(describe_check(c) for c in ready_checks(plan, placement))]
    for c in client_commands(plan, placement):
        what = f"client conc {c.conc}" if not plan.evals else f"{c.what}, against the frontend"
        lines += ["", f"# {what} (log: {c.log})", _shell(c.argv, c.env)]
    lines += ["", "# cleanup on success, failure, timeout and cancel: every step ends with the allocation",
              f"# stop: scancel J  (and, if salloc never printed J: scancel --name={job_name(plan)})"]
    return "\n".join(lines) + "\n"
