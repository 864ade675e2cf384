"""One job as data (pure): what it starts, where, how it knows it is ready, its time budget, what the
client must leave. The producers (produce.py) build one from a planned point; supervise.py runs it.

    producers (plan.py, disagg.py -> produce.py)  ->  JobSpec  ->  supervise (the one lifecycle)

A `JobSpec` holds:
- `placement`: `Local` (the runner host: processes and docker containers), or a Slurm allocation,
  `SbatchAllocation` (one node held by sbatch, single-node rows) or `SallocAllocation` (`salloc
  --no-shell`, the workers placed on its nodes by index, multi-node rows). Commands that run in an
  allocation name its job id and nodes by placeholder (`grant_values`), filled once it is granted;
- the steps before the engine, each optional: the node check, the image import, the engine's version
  command (each with the pure judge of its output), and the GPU telemetry sampler beside the job;
- `services` (engine, router; or workers and the frontend), started in order, and `ready`, the
  readiness checks (ready.py) awaited in order within the budget's readiness;
- `clients`, run one after the other, each with its limit, the files it must leave and the folders
  hashed the moment it exits (custody); `before_client` / `after_client` hooks around them;
- what is written before anything starts (`files`, `folders`, and `documents`: job.json and friends,
  again once the allocation is placed and once the engine's version is known).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum

from ci_tools.runner.budget import Budget
from ci_tools.runner.ready import HttpReady

# Placeholders of commands that run in an allocation, filled once it is granted. A single-node job
# names its one node as its dry run shows it; a multi-node job names each node by its index.
SERVER_JOBID = "{server_jobid}"
SERVER_NODE = "{server_node}"         # the node's NodeName, as squeue prints it
SERVER_ADDR = "{server_addr}"         # its NodeAddr (scontrol show node): where the runner reaches it
JOBID = "{jobid}"


def node_placeholder(i: int) -> str:
    """Placeholder of the i-th node's NodeName in a multi-node job's commands."""
    return "{node%d}" % i


def addr_placeholder(i: int) -> str:
    """Placeholder of the i-th node's NodeAddr (where the runner and the other nodes reach it)."""
    return "{addr%d}" % i


class Phase(StrEnum):
    """Where a job is; status.json's `phase`, and the phase a failure names."""
    QUEUE = "queue"            # sbatch: waiting for the node
    ALLOCATE = "allocate"      # salloc: waiting for the nodes, finding them
    CHECK = "check"
    IMAGE = "image"
    VERSION = "version"
    START = "start"
    READY = "ready"
    PROFILE = "profile"
    CLIENT = "client"
    DONE = "done"
    TRACES = "traces"          # after the job: `runner profile` merging the traces
    ACCEPTANCE = "acceptance"  # after the job: `runner acceptance` reading the measured length


class Role(StrEnum):
    SERVER = "server"
    ROUTER = "router"
    WORKER = "worker"
    FRONTEND = "frontend"
    CLIENT = "client"
    HELPER = "helper"          # beside the job, never fatal (the telemetry sampler)
    STEP = "step"              # runs to its end before the engine (check, image import, version)


class JobFailed(Exception):
    """A job that ended without its client's result: the phase, a clean message, its log's tail."""

    def __init__(self, phase: str, message: str, tail: str = "", exit_code: int = 1):
        super().__init__(message)
        self.phase = phase
        self.message = message
        self.tail = tail
        self.exit_code = exit_code


@dataclass(frozen=True)
class Proc:
    """One process the job starts, in its own process group."""
    role: Role
    name: str                                   # its log's and its messages' name
    argv: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)   # beside the runner's environment
    log: str = ""                               # relative to the job directory
    stops: tuple[tuple[str, ...], ...] = ()     # after its group is stopped: `docker rm -f NAME`
    raise_nofile: bool = False                  # open-files soft limit up to the hard one (a host's engine)
    what: str = ""                              # how messages name it ("the server"); default its name

    @property
    def called(self) -> str:
        return self.what or self.name

    def filled(self, values: Mapping[str, str]) -> Proc:
        return replace(self, argv=tuple(fill(a, values) for a in self.argv),
                       stops=tuple(tuple(fill(a, values) for a in s) for s in self.stops))


def fill(text: str, values: Mapping[str, str]) -> str:
    """TEXT with each placeholder `{key}` of VALUES replaced (other braces are left alone)."""
    for key, value in values.items():
        text = text.replace("{" + key + "}", value)
    return text


def grant_values(jobid: str, nodes: list[str], addresses: Mapping[str, str]) -> dict[str, str]:
    """What the placeholders stand for once Slurm granted job JOBID on NODES (a node without a NodeAddr
    is reached by its name)."""
    values = {"jobid": jobid, "server_jobid": jobid}
    for i, node in enumerate(nodes):
        values[f"node{i}"] = node
        values[f"addr{i}"] = addresses.get(node, node)
    if nodes:
        values["server_node"], values["server_addr"] = nodes[0], addresses.get(nodes[0], nodes[0])
    return values


@dataclass(frozen=True)
class Local:
    """The runner host itself: processes and docker containers (their GPUs are in their commands)."""


@dataclass(frozen=True)
class SbatchAllocation:
    """Single-node Slurm: `submit` (sbatch --parsable) holds one node and prints the job id; `locate`
    prints `<state> <node>` for it until it runs; `describe` gives the node's NodeAddr. The engine and
    router run as steps of it; `cancel` ends it."""
    submit: tuple[str, ...]
    locate: tuple[str, ...]
    describe: tuple[str, ...]
    cancel: tuple[str, ...]
    log: str                                    # where sbatch's answer is kept
    phase: Phase = Phase.QUEUE


@dataclass(frozen=True)
class SallocAllocation:
    """Multi-node Slurm: `salloc --no-shell` (its id from "Granted job allocation J", or while queued from
    "Pending job allocation J", so a cancel can end it), its nodes by squeue, each worker on the nodes
    `layout` names by index; `scancel J` (or, before any id was printed, by `name`) ends every step."""
    argv: tuple[str, ...]
    name: str
    nodes: int
    minutes: int                                # its time limit (--time)
    layout: Mapping[str, tuple[int, ...]]       # worker (and `frontend`) -> the indexes of its nodes
    log: str
    phase: Phase = Phase.ALLOCATE


Placement = Local | SbatchAllocation | SallocAllocation


@dataclass(frozen=True)
class NodeCheck:
    """Run where the engine will run before it starts; `judge` lists what is wrong with its output."""
    proc: Proc
    judge: Callable[[str], list[str]]


@dataclass(frozen=True)
class VersionCheck:
    """The engine's version command where the engine runs; `judge` gives job.json's `engine` and the
    reasons it cannot serve the recipe."""
    proc: Proc
    judge: Callable[[str], tuple[dict, list[str]]]


@dataclass(frozen=True)
class ClientRun:
    """One client run: its process, its limit, what must be in the job directory when it exits 0, and
    the folders of the job directory it writes, hashed the moment it exits (seal.py)."""
    proc: Proc
    limit_s: float
    program: str                                # how messages name what exited ("AIPerf (conc 64)")
    expects: tuple[str, ...] = ()
    exports: tuple[str, ...] = ()


@dataclass(frozen=True)
class Post:
    """A call before or after the client (the engine's start/stop profile): refused or unanswered, it
    fails the job (phase `profile`)."""
    url: str
    body: Mapping
    timeout_s: float = 900.0


@dataclass(frozen=True)
class Snapshot:
    """A GET saved as FOLDER/NAME of the job directory (the engine's metrics); never fails the job: an
    unanswered or refused one leaves NAME.error saying why."""
    url: str
    name: str
    folder: str
    timeout_s: float = 30.0


Hook = Post | Snapshot
# job.json and the files beside it: (path relative to the job directory, document), given the placement
# once the allocation is placed (worker -> its nodes) and the engine's version once it is known
Documents = Callable[[Mapping[str, list[str]] | None, dict | None], list[tuple[str, dict]]]


@dataclass(frozen=True)
class JobSpec:
    label: str                                  # everything the job starts carries it (cleanup.py)
    placement: Placement
    budget: Budget
    services: tuple[Proc, ...]
    ready: tuple[HttpReady, ...]
    clients: tuple[ClientRun, ...]
    documents: Documents
    check: NodeCheck | None = None
    image: Proc | None = None                   # the allocation's one image import; counts against readiness
    version: VersionCheck | None = None
    telemetry: Proc | None = None
    before_client: tuple[Hook, ...] = ()
    after_client: tuple[Hook, ...] = ()
    files: tuple[tuple[str, str], ...] = ()     # (absolute path, text): written before anything starts
    folders: tuple[str, ...] = ()               # created before anything starts (a container mount's source)
    fresh: tuple[str, ...] = ()                 # emptied, then created (the profiler's trace folder)


@dataclass
class Status:
    """status.json: how the job ended, written whatever the ending."""
    phase: str = Phase.START
    ok: bool = False
    reason: str = ""
    exit_code: int = 1
    label: str = ""
    slurm_job_id: str | None = None
    node: str | None = None
    node_addr: str | None = None
    placement: dict[str, list[str]] | None = None
    addresses: dict[str, str] | None = None
    image_import_s: float | None = None
    engine: dict | None = None
    ready_s: float | None = None
    client_s: float | None = None
    telemetry: str | None = None
    stop_s: float | None = None

    def as_dict(self) -> dict:
        head = {"ok": self.ok, "phase": str(self.phase), "reason": self.reason, "exit_code": self.exit_code}
        rest = {k: v for k, v in vars(self).items() if k not in head and v not in (None, "")}
        return {**head, **rest}
