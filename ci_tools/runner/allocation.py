"""A job's Slurm allocation (adapter): asked for, waited for, placed, and always ended.

Single-node (`SbatchAllocation`): `sbatch --parsable` prints the job id; the runner polls that id (never
a name: a stale job of the same name may still be completing) until it runs, then asks Slurm for the
node's NodeAddr. Multi-node (`SallocAllocation`): `salloc --no-shell` prints "Pending job allocation J"
while queued and "Granted job allocation J" once granted; the nodes come from squeue by that id and
`scontrol show hostnames`, each node's NodeAddr from `scontrol show node`. Either way the id is known as
soon as Slurm prints it, so `cancel` ends a queued allocation as surely as a running one.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from ci_tools.runner.backends import describe_node, node_addr
from ci_tools.runner.cleanup import run_stops
from ci_tools.runner.procs import Running, query, start, tail_file
from ci_tools.runner.spec import (JobFailed, Phase, Proc, Role, SallocAllocation, SbatchAllocation, Status, fill,
                                  grant_values)

GRANTED = re.compile(r"Granted job allocation (\d+)")
PENDING = re.compile(r"Pending job allocation (\d+)")   # salloc's id while queued: cancellable by id
WAITING = ("PENDING", "CONFIGURING", "REQUEUED", "RESIZING", "SUSPENDED")
NODES_WAIT_S = 120.0          # a granted allocation's node list appears in squeue within this


@dataclass(frozen=True)
class Grant:
    values: dict[str, str]                       # what the commands' placeholders stand for
    placement: dict[str, list[str]] | None = None   # multi-node: worker -> its nodes' names


def node_addresses(nodes: list[str], describe: Callable[[str], list[str]]) -> dict[str, str]:
    """NodeName -> NodeAddr of each node Slurm describes (a node it does not describe is left out)."""
    out = {}
    for node in nodes:
        res = query(describe(node))
        addr = node_addr(res.stdout) if not isinstance(res, str) and res.returncode == 0 else None
        if addr:
            out[node] = addr
    return out


class Allocation:
    """One allocation of a job. `wait` asks for it and returns where it was granted; `cancel` (on the
    supervisor's ExitStack from before the request) ends it, queued or running, and stops salloc."""

    def __init__(self, placement: SbatchAllocation | SallocAllocation, out: Path, marks: Mapping[str, str],
                 say: Callable[[str], None], poll_s: float, pause: Callable[[float], None] = time.sleep):
        self.placement, self.out, self.marks, self.say, self.poll_s = placement, out, marks, say, poll_s
        self.pause = pause    # the job's: a cancel that landed where it was dropped is raised at the next one
        self.jobid: str | None = None
        self.salloc: Running | None = None

    def wait(self, deadline_s: float, status: Status) -> Grant:
        if isinstance(self.placement, SbatchAllocation):
            return self._sbatch(self.placement, deadline_s, status)
        return self._salloc(self.placement, deadline_s, status)

    def cancel(self, budget_s: float) -> None:
        p = self.placement
        if isinstance(p, SbatchAllocation):
            if self.jobid:
                run_stops([[fill(a, {"server_jobid": self.jobid}) for a in p.cancel]], budget_s, self.say)
            return
        argv = ["scancel", self.jobid] if self.jobid else ["scancel", f"--name={p.name}"]
        run_stops([argv], budget_s, self.say)   # ends every step of the allocation, on every node
        if self.salloc is not None:
            _stop(self.salloc.popen)

    # ---- sbatch: one node, the engine and router as its steps

    def _sbatch(self, p: SbatchAllocation, deadline_s: float, status: Status) -> Grant:
        res = query(p.submit, 60.0, marks=self.marks)
        if isinstance(res, str):
            raise JobFailed(Phase.QUEUE, f"cannot submit the server's allocation: {res}")
        with (self.out / p.log).open("a", encoding="utf-8") as fh:
            fh.write(f"$ {' '.join(p.submit)}\n{res.stdout}{res.stderr}")
        job = res.stdout.strip().split(";")[0]
        if res.returncode != 0 or not job.isdigit():
            raise JobFailed(Phase.QUEUE, f"the scheduler refused the server's allocation (exit {res.returncode})",
                            (res.stderr or res.stdout).strip())
        self.jobid = status.slurm_job_id = job
        self.say(f"server allocation submitted as Slurm job {job}")
        node = status.node = self._running(p, job, deadline_s)
        addr = status.node_addr = self._address(p, node)
        return Grant(grant_values(job, [node], {node: addr}))

    def _running(self, p: SbatchAllocation, job: str, deadline_s: float) -> str:
        """Poll the scheduler for job `job` (by id) until it runs; return its node."""
        argv = [fill(a, {"server_jobid": job}) for a in p.locate]
        start_t = time.monotonic()
        announced = False
        while True:
            res = query(argv)
            if isinstance(res, str):
                raise JobFailed(Phase.QUEUE, f"cannot ask the scheduler about job {job}: {res}")
            words = res.stdout.split()
            state = words[0] if words else ""
            if res.returncode == 0 and state == "RUNNING" and len(words) > 1:
                self.say(f"server job {job} runs on {words[1]}")
                return words[1]
            if res.returncode == 0 and state not in WAITING:
                raise JobFailed(Phase.QUEUE, f"Slurm job {job} ended before it ran (state {state or 'gone'}); "
                                f"see `sacct -j {job}` and the scheduler's reason", res.stderr.strip())
            if time.monotonic() - start_t > deadline_s:
                raise JobFailed(Phase.QUEUE, f"Slurm job {job} did not start within {deadline_s:g} s (state {state}); "
                                "raise --queue-timeout or free the partition")
            if not announced:
                self.say(f"waiting for the scheduler to start job {job} ({state or 'no answer'})")
                announced = True
            self.pause(1.0)

    def _address(self, p: SbatchAllocation, node: str) -> str:
        if not p.describe:
            return node
        argv = [fill(a, {"server_node": node}) for a in p.describe]
        addr = node_addresses([node], lambda _: argv).get(node)
        if addr is None:
            self.say(f"Slurm gave no NodeAddr for {node} (`{' '.join(argv)}`); reaching it by its name")
            return node
        if addr != node:
            self.say(f"server node {node} is reached at its NodeAddr {addr}")
        return addr

    # ---- salloc: several nodes, one step per worker

    def _salloc(self, p: SallocAllocation, deadline_s: float, status: Status) -> Grant:
        self.salloc = start(Proc(Role.STEP, "allocation", p.argv, log=p.log), self.out, self.marks, Phase.ALLOCATE)
        self.say(f"requesting {p.nodes} node(s) for {p.minutes} min: {' '.join(p.argv[:4])} ...")
        start_t = time.monotonic()
        while True:
            text = self.salloc.log_path.read_text(encoding="utf-8", errors="replace")
            pending = PENDING.search(text)
            if pending and self.jobid is None:
                self.jobid = status.slurm_job_id = pending.group(1)
                self.say(f"allocation {self.jobid} is queued")
            granted = GRANTED.search(text)
            if granted:
                self.jobid = status.slurm_job_id = granted.group(1)
                self.say(f"allocation {self.jobid} granted")
                break
            code = self.salloc.popen.poll()
            if code is not None:
                raise JobFailed(Phase.ALLOCATE, f"salloc exited with code {code} without an allocation",
                                tail_file(self.salloc.log_path))
            if time.monotonic() - start_t > deadline_s:
                raise JobFailed(Phase.ALLOCATE, f"no allocation within {deadline_s:g} s", tail_file(self.salloc.log_path))
            self.pause(self.poll_s)
        nodes = _nodes(self.jobid, self.pause)
        if len(nodes) < p.nodes:
            raise JobFailed(Phase.ALLOCATE, f"the allocation has {len(nodes)} node(s); the point needs {p.nodes}")
        placement = {name: [nodes[i] for i in idx] for name, idx in p.layout.items()}
        addresses = node_addresses(nodes, describe_node)
        status.placement, status.addresses = placement, addresses
        self.say("placement: " + ", ".join(f"{k} on {'+'.join(v)}" for k, v in placement.items()))
        return Grant(grant_values(self.jobid, nodes, addresses), placement)


def _nodes(jobid: str, pause: Callable[[float], None]) -> list[str]:
    """The allocation's nodes, in Slurm's order (squeue by id, then `scontrol show hostnames`)."""
    def answer(argv: list[str]) -> str:
        res = query(argv, 60.0)
        if isinstance(res, str):
            raise JobFailed(Phase.ALLOCATE, f"{argv[0]} failed: {res}")
        if res.returncode != 0:
            raise JobFailed(Phase.ALLOCATE, f"{' '.join(argv)} exited {res.returncode}: {res.stderr.strip()[:300]}")
        return res.stdout

    deadline = time.monotonic() + NODES_WAIT_S
    while True:
        listing = answer(["squeue", "--noheader", "--format=%N", f"--jobs={jobid}"]).strip()
        if listing and listing != "(null)":
            return answer(["scontrol", "show", "hostnames", listing]).split()
        if time.monotonic() > deadline:
            raise JobFailed(Phase.ALLOCATE, f"allocation {jobid} has no nodes (squeue shows {listing!r})")
        pause(1.0)


def _stop(p: subprocess.Popen, grace_s: float = 2.0) -> None:
    """salloc after its allocation was cancelled: it ends by itself; SIGTERM, then SIGKILL, if not."""
    for sig, wait in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 2.0)):
        if p.poll() is not None:
            break
        try:
            os.killpg(p.pid, sig)
        except (ProcessLookupError, PermissionError):
            break
        try:
            p.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            continue
    try:
        os.killpg(p.pid, signal.SIGKILL)  # whatever the leader left in its group
    except (ProcessLookupError, PermissionError):
        pass
