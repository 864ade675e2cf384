"""One multi-node disaggregated point: from a matrix row to its Slurm launch (pure: no process, no file).

The row (prefill/decode worker groups, conc list, kv-p2p-transfer, router) and its resolved recipe
point become a `MultiNodePlan`: one worker per prefill/decode worker, the frontend, and one AIPerf
run per concurrency of the row. `build_multinode_plan` checks the row and point (every problem at
once: `check_multinode`), builds the workers' engine commands, the frontend and the clients, lays the
workers out on the nodes of one allocation (`layout`: workers in order prefill-0.., decode-0.., each on
its own whole nodes or sharing one; the frontend on the first node) and fits the budget
(`multinode_budget`). disagg_slurm.py turns the plan into the Slurm commands.

Ports are distinct per worker (base + 10 x index), so several workers may share a host (the test
cluster runs every slurmd on one machine) without a collision; on exclusive nodes that is harmless.
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ci_tools.config.disagg import DisaggPoint, Group
from ci_tools.config.recipe import render_args
from ci_tools.errors import InputError
from ci_tools.sweep.buckets import profile_of
from ci_tools.sweep.row import MatrixRow, as_row
from ci_tools import names
from ci_tools import engines
from ci_tools.engines import ServeSpec, WorkerSpec, compat, install, routers
from ci_tools.runner import budget as bud
from ci_tools.runner.backends import HF_CACHE_MOUNT, SQUASH_DIR, job_label
from ci_tools.runner.plan import (AGENTIC, AIPERF_TIMEOUTS_ENV, MODELS_MOUNT, SIM_ACC_ENV, SIM_ACC_LEN, Settings,
                                  client_argv, image_problems, run_shape, sequence_lengths)

WORKER_PORT_BASE = 30000
PORT_STRIDE = 10            # per worker: http, +1 bootstrap, +2 dist-init, +3 dynamo system (health)
# A fixed-sequence client sends 10 x conc requests; at the GB300 rates of the example entries that is
# minutes, not the hour a single-node fixed-sequence row is given, and a multi-node row runs several
# concurrencies in one allocation: 30 min each keeps two of them, 1 h queue and 4 h readiness inside
# benchmark.yml's timeout (ci_tools/runner/budget.py).
FIXED_SEQ_CLIENT_S = 1800.0
MIN_READY_S = 3600.0         # the least readiness a multi-node row's clients may leave it


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
            side = {"num-worker": g.key.workers, "tp": g.key.tp, "ep": g.key.ep, "dp-attn": g.key.dp_attn,
                    "nodes-per-worker": g.nodes_per_worker, "gpus": g.gpus}
            side.update({k: v for k, v in (("pp", g.key.pp), ("dcp-size", g.key.dcp),
                                           ("pcp-size", g.key.pcp)) if v > 1})
            out[g.role] = side
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
    if conc is None:        # check_row refuses such a row first; this names it for a caller that did not
        raise InputError("the row has no `conc`")
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
    plugin = engines.require(point.engine, point.recipe_file)
    # a share is sized only for a point that offloads (kv_offload set)
    if share is not None and point.kv_offload and hasattr(plugin, "offload"):
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
    cmd = engines.require(point.engine, point.recipe_file).worker(ws)
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
        rel = routers.release(str(fe.get("name")), str(fe.get("version")))
        if rel is None:     # check_multinode refuses such a point first; this names it for a caller that did not
            raise InputError(f"{plan_point.recipe_file}: {_unknown_router(fe)}")
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


def _unknown_router(frontend: Mapping[str, Any]) -> str:
    return (f"frontend {frontend.get('name')} {frontend.get('version')} is not a router release ci-tools knows "
            f"(known: {routers.known()}); add it to ci_tools/engines/routers.py")


def _job_tag(result_filename: str) -> str:
    import hashlib

    return "cit-" + hashlib.sha256(result_filename.encode()).hexdigest()[:12]


def bud_minutes(seconds: float) -> int:
    return max(1, math.ceil(seconds / 60))


def check_multinode(row: MatrixRow, point: DisaggPoint, gpus_per_node: int | None) -> list[str]:
    """Every reason the row's point cannot run as planned (empty: it can). An engine without a multi-node
    worker is refused at once: the rest cannot be checked without it."""
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
    if fe.get("kind") == "sglang-router" and routers.release(str(fe.get("name")), str(fe.get("version"))) is None:
        problems.append(_unknown_router(fe))
    return problems + _placement_problems(row, point, gpus_per_node)


def _placement_problems(row: MatrixRow, point: DisaggPoint, gpus_per_node: int | None) -> list[str]:
    from ci_tools.config.disagg import fits

    if not gpus_per_node:
        return [f"runner {row.get('runner')!r} has no gpus-per-node in runners.yaml: workers cannot be placed on "
                "nodes"]
    return [f"{g.role} workers need {g.gpus_per_worker} GPUs on {g.nodes_per_worker} node(s) of {gpus_per_node} "
            "GPUs: a worker fills whole nodes, or an equal share of one node"
            for g in point.groups if g.key.workers and not fits(g.gpus_per_worker, g.nodes_per_worker, gpus_per_node)]


def _workers(row: MatrixRow, point: DisaggPoint, settings: Settings, slurm: SlurmSettings, out_dir: str,
             gpus_per_node: int, namespace: str, run_eval: bool) -> list[Worker]:
    """One worker per prefill and decode worker of the point, in that order, each with its own ports and
    its engine command (the recipe's pinned install first, a KV offload sized from the row's budget)."""
    model = str(row["model"])
    env_extra: dict[str, str] = {}
    if not run_eval and point.synthetic_acceptance is not None:
        env_extra[SIM_ACC_LEN] = f"{point.synthetic_acceptance:g}"
        env_extra.update(SIM_ACC_ENV)
    workers: list[Worker] = []
    for g in point.groups:
        for i in range(g.key.workers):
            port = slurm.worker_port_base + PORT_STRIDE * len(workers)
            w = Worker("aggregated" if point.aggregated else g.role, i, g, [], {}, port, port + 3, port + 2)
            w.env = dict(g.env) | env_extra | {"HF_HUB_CACHE": HF_CACHE_MOUNT}
            if point.frontend.get("kind") == "dynamo":
                w.env |= {"DYN_FILE_KV": f"{out_dir}/{names.DYNAMO_STORE}", "DYN_SYSTEM_PORT": str(w.health_port)}
            if settings.server_cmd:
                w.argv = [a.format(port=port, model=model, role=g.role, bootstrap=port + 1)
                          for a in shlex.split(settings.server_cmd)]
            else:
                _engine_command(w, point, row, model, gpus_per_node, namespace, out_dir)
            workers.append(w)
    return workers


def _engine_command(w: Worker, point: DisaggPoint, row: MatrixRow, model: str, gpus_per_node: int, namespace: str,
                    out_dir: str) -> None:
    cmd = worker_command(point, w, model, row, gpus_per_node, namespace, f"{out_dir}/{names.ENGINE_FILES_DIR}")
    w.files, w.command = cmd.files, cmd
    # an image without the engine's launcher (Dynamo): the recipe's pinned install first
    w.argv = install.wrap(cmd.argv, f"{out_dir}/{names.INSTALL_DIR}", point.frontend.get("install") or [])
    share = offload_share(point, w.group, row, gpus_per_node)
    plugin = engines.require(point.engine, point.recipe_file)
    if share and point.kv_offload and not any(plugin.offload(str(point.kv_offload["backend"]), *share)):
        # a backend the plug-in does not size is configured by the recipe's kv-offload env/args, with
        # InferenceX's documented variable for the budget
        w.env = {**w.env, **{str(k): str(v) for k, v in (point.kv_offload.get("env") or {}).items()},
                 "TOTAL_CPU_DRAM_GB": str(share[0])}


def _frontend(point: DisaggPoint, workers: list[Worker], port: int, slurm: SlurmSettings, out_dir: str,
              namespace: str) -> tuple[list[str], dict[str, str]]:
    """The frontend's command and environment (a test's --router-cmd with the workers' URLs filled in)."""
    if slurm.router_cmd:
        urls = {role: [f"http://{{{w.name}_node0}}:{w.port}" for w in workers
                       if w.role == role or (role == "prefill" and w.role == "aggregated")]
                for role in ("prefill", "decode")}
        argv: list[str] = []
        for word in shlex.split(slurm.router_cmd):
            if word in ("{prefill}", "{decode}"):
                argv += urls[word.strip("{}")]
            else:
                argv.append(word.format(port=port))
    else:
        argv = install.wrap(frontend_argv(point, port, workers, namespace), f"{out_dir}/{names.INSTALL_DIR}",
                            point.frontend.get("install") or [])
    env = dict(point.frontend.get("env") or {})
    if point.frontend.get("kind") == "dynamo":
        env["DYN_FILE_KV"] = f"{out_dir}/{names.DYNAMO_STORE}"
    return argv, env


def _clients(row: MatrixRow, point: DisaggPoint, settings: Settings, out_dir: str, base_url: str, shape: tuple,
             rf: str) -> tuple[list[Client], dict | None]:
    """One AIPerf run per concurrency against the frontend (a folder each when there are several), or the
    eval harness once; the eval plan beside it."""
    scenario, run_eval, fast, duration = shape
    model = str(row["model"])
    if run_eval:
        from ci_tools.runner.plan import _eval_plan

        # the eval harness against the frontend, as a single-node eval row runs it against its server;
        # `runner evals --base-url` puts the frontend's real address into the planned harness commands
        evals = _eval_plan(row, model, base_url, [], settings, out_dir)
        return [Client(0, [settings.ci_tools, "runner", "evals", out_dir, "--base-url", base_url], {}, "", rf,
                       expects=(), what="the eval harness", exports=(names.EVAL_DIR,))], evals
    header = None
    if point.frontend.get("routing-key") == "session-id":
        rel = routers.release(str(point.frontend.get("name")), str(point.frontend.get("version")))
        header = rel.routing_key_header if rel else None
    concs = _concs(row)
    clients = []
    for c in concs:
        sub = f"conc{c}" if len(concs) > 1 else ""
        cdir = f"{out_dir}/{sub}" if sub else out_dir
        argv = client_argv({**row, "conc": c}, model, settings, base_url, c, scenario, duration, fast, header, cdir)
        clients.append(Client(c, argv, {"AIPERF_DATASET_MMAP_BASE_PATH": f"{out_dir}/{names.AIPERF_TMP}",
                                        "HF_HUB_CACHE": settings.hf_cache, **AIPERF_TIMEOUTS_ENV},
                              sub, result_filename(row, point, [c], settings.runner_name),
                              exports=(f"{sub}/{names.AIPERF_DIR}" if sub else names.AIPERF_DIR,)))
    return clients, None


def multinode_budget(row: MatrixRow, settings: Settings, slurm: SlurmSettings, duration: float | None,
                     run_eval: bool, clients: int) -> tuple[Settings, bud.Budget, float, int]:
    """(settings with the readiness the clients leave, the budget, each client's limit, the allocation's
    minutes); InputError when the job cannot fit benchmark.yml's timeout or the partition's time limit."""
    client_s = slurm.client_timeout_s or (bud.client_timeout(duration) if duration else FIXED_SEQ_CLIENT_S)
    if run_eval and not slurm.client_timeout_s and settings.evals is not None:
        client_s = float(settings.evals.timeout_s)
    budget = bud.job_budget(duration, queue_s=slurm.queue_timeout_s, ready_s=settings.ready_timeout_s,
                            client_s=client_s * max(1, clients))
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
    return settings, budget, client_s, minutes


def build_multinode_plan(row: Mapping[str, Any], point: DisaggPoint, settings: Settings, out_dir: str,
                         gpus_per_node: int | None, slurm: SlurmSettings | None = None) -> MultiNodePlan:
    """Check the row's point (all problems at once), then its workers, frontend and clients, then the
    budget; the placement on an allocation's nodes is `layout` here and disagg_slurm.place at run time."""
    row = as_row(row)
    slurm = slurm or SlurmSettings()
    problems = check_multinode(row, point, gpus_per_node)
    if problems:
        raise InputError("; ".join(problems))
    gpn = gpus_per_node or 1
    shape = run_shape(row, settings)
    scenario, run_eval, _, duration = shape
    rf = result_filename(row, point, _concs(row), settings.runner_name)
    namespace = _job_tag(rf)
    if not slurm.label:
        # the single-node rule: from the result file name and the job directory
        slurm = replace(slurm, label=job_label(rf, out_dir))
    workers = _workers(row, point, settings, slurm, out_dir, gpn, namespace, run_eval)
    fargv, fenv = _frontend(point, workers, settings.port, slurm, out_dir, namespace)
    clients, evals = _clients(row, point, settings, out_dir, f"http://{{frontend_node}}:{settings.port}", shape, rf)
    settings, budget, client_s, minutes = multinode_budget(row, settings, slurm, duration, run_eval, len(clients))
    return MultiNodePlan(row=row, point=point, scenario=scenario, result_filename=rf, workers=workers,
                         frontend_argv=fargv, frontend_env=fenv, clients=clients, duration_s=duration,
                         run_eval=run_eval, served_model=str(row["model"]), image=point.image, settings=settings,
                         slurm=slurm, gpus_per_node=gpus_per_node or 0, alloc_time_min=minutes,
                         frontend_port=settings.port, client_s=client_s, budget=budget, layout=layout(workers, gpn),
                         evals=evals)


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
