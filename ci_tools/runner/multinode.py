"""Running one multi-node point on Slurm (the shell around `disagg.py`).

Order: one allocation (salloc --no-shell, exclusive unless runners.yaml says not, time bounded; its id
from salloc's own "Granted job allocation J"), its nodes (squeue by that id, never by name), one srun step per worker
and one for the frontend, readiness of every worker then the frontend, one AIPerf run per
concurrency against the frontend, and always the cleanup: `scancel J` ends every step with the
allocation, then the local srun clients are stopped. SIGINT and SIGTERM (GitHub's cancel sends
both, 7.5 s apart, then kills the tree) run the same cleanup; it needs about a second, so it fits.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ci_tools import names
from ci_tools.runner import early
from ci_tools.runner.backends import LABEL_ENV, RUNNER_ENV, describe_node
from ci_tools.runner.disagg import (MultiNodePlan, alloc_argv, client_commands, import_step, job_name, place,
                                    ready_checks, registered, worker_steps)
from ci_tools.runner.job import JobFailed, import_image, node_addresses, seal_client, tail_file
from ci_tools.runner.ready import NotReady, Probe, wait_ready

GRANTED = re.compile(r"Granted job allocation (\d+)")
PENDING = re.compile(r"Pending job allocation (\d+)")   # salloc's id while queued: cancellable by id
STOP_GRACE_S = 2.0
ALLOCATION_LOG = "allocation.log"


class _Cancelled(BaseException):
    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


@dataclass
class _Proc:
    name: str
    popen: subprocess.Popen
    log: Path


MARKS: dict[str, str] = {}   # the job's label in every process it starts (runner cleanup finds them)


def _start(name: str, argv: list[str], env: dict[str, str], log: Path) -> _Proc:
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as fh:
        try:
            popen = subprocess.Popen(argv, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     env={**os.environ, **env, **MARKS}, start_new_session=True)
        except OSError as exc:
            raise JobFailed("start", f"cannot start {name}: {argv[0]}: {exc.strerror}") from None
    return _Proc(name, popen, log)


def _stop(proc: _Proc) -> None:
    p = proc.popen
    for sig, wait in ((signal.SIGTERM, STOP_GRACE_S), (signal.SIGKILL, 2.0)):
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


def _http_status(url: str, expect: tuple = ()) -> int | None:
    """The status; with `expect`, 200 only when the body says it (503, "not yet", otherwise)."""
    import httpx

    try:
        res = httpx.get(url, timeout=5.0)
    except httpx.HTTPError:
        return None
    if expect and res.status_code == 200 and not registered(expect, res.text):
        return 503
    return res.status_code


def _allocate(plan: MultiNodePlan, out: Path, say: Callable[[str], None], deadline_s: float,
              seen: dict) -> tuple[str, _Proc]:
    """salloc blocks until granted (or --immediate expires); returns the job id it printed. While it
    waits, `seen["jobid"]` is the pending job's id, so a cancel can scancel it by id."""
    proc = _start("allocation", alloc_argv(plan), {}, out / ALLOCATION_LOG)
    seen["salloc"] = proc
    say(f"requesting {plan.nodes} node(s) for {plan.alloc_time_min} min: {' '.join(alloc_argv(plan)[:4])} ...")
    start = time.monotonic()
    while True:
        text = proc.log.read_text(encoding="utf-8", errors="replace")
        pending = PENDING.search(text)
        if pending and "jobid" not in seen:
            seen["jobid"] = pending.group(1)
            say(f"allocation {pending.group(1)} is queued")
        m = GRANTED.search(text)
        if m:
            seen["jobid"] = m.group(1)
            say(f"allocation {m.group(1)} granted")
            return m.group(1), proc
        code = proc.popen.poll()
        if code is not None:
            raise JobFailed("allocate", f"salloc exited with code {code} without an allocation",
                            tail_file(proc.log))
        if time.monotonic() - start > deadline_s:
            raise JobFailed("allocate", f"no allocation within {deadline_s:g} s", tail_file(proc.log))
        time.sleep(0.2)


def _nodes(jobid: str) -> list[str]:
    def run(argv: list[str]) -> str:
        try:
            res = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise JobFailed("allocate", f"{argv[0]} failed: {exc}") from None
        if res.returncode != 0:
            raise JobFailed("allocate", f"{' '.join(argv)} exited {res.returncode}: {res.stderr.strip()[:300]}")
        return res.stdout

    deadline = time.monotonic() + 120
    while True:
        listing = run(["squeue", "--noheader", "--format=%N", f"--jobs={jobid}"]).strip()
        if listing and listing != "(null)":
            return run(["scontrol", "show", "hostnames", listing]).split()
        if time.monotonic() > deadline:
            raise JobFailed("allocate", f"allocation {jobid} has no nodes (squeue shows {listing!r})")
        time.sleep(1.0)


def _cancel(jobid: str | None, plan: MultiNodePlan, say: Callable[[str], None]) -> None:
    argv = ["scancel", jobid] if jobid else ["scancel", f"--name={job_name(plan)}"]
    try:
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        say(f"cleanup command failed: {' '.join(argv)}: {exc}")


def write_job_files(plan: MultiNodePlan, out: Path, placement: dict | None, commands_text: str) -> None:
    job = plan.job_json(placement)
    if len(plan.clients) == 1:
        job["point"] = plan.point_for(plan.clients[0], placement)
        job["result-filename"] = plan.clients[0].result_filename
    (out / names.JOB_JSON).write_text(json.dumps(job, indent=2) + "\n", encoding="utf-8")
    (out / names.COMMANDS_TXT).write_text(commands_text, encoding="utf-8")
    for c in plan.clients:
        if c.subdir:
            sub = out / c.subdir
            sub.mkdir(parents=True, exist_ok=True)
            data = {"result-filename": c.result_filename, "multinode": True,
                    "point": plan.point_for(c, placement), "parent": "..", "command": c.argv}
            (sub / names.JOB_JSON).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def run_multinode(plan: MultiNodePlan, out: Path, commands_text: str, *,
                  say: Callable[[str], None] = lambda m: print(m, file=sys.stderr, flush=True),
                  poll_s: float = 0.2, on_sealed: Callable[[str], None] | None = None) -> dict:
    """Run the point; returns the status written to status.json, raises JobFailed on any failure. Each
    client's exports are hashed the moment it exits (job.seal_client); `on_sealed` gets the record's sha256."""
    out.mkdir(parents=True, exist_ok=True)
    status: dict = {"ok": False, "phase": "allocate", "reason": "", "exit_code": 1}
    procs: list[_Proc] = []
    imports: list = []          # job.Running of the image import while it runs
    seen: dict = {}
    previous = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}

    def on_signal(signum, frame):  # noqa: ARG001
        raise _Cancelled(signum)

    for s in previous:
        signal.signal(s, on_signal)
    MARKS.clear()
    MARKS.update({LABEL_ENV: plan.slurm.label} if plan.slurm.label else {})
    MARKS.update({RUNNER_ENV: plan.slurm.runner} if plan.slurm.runner else {})
    write_job_files(plan, out, None, commands_text)
    try:
        if early.PENDING:  # cancelled while Python was still importing: start nothing
            raise _Cancelled(early.PENDING[0])
        jobid, _ = _allocate(plan, out, say, plan.slurm.queue_timeout_s + 60, seen)
        status["slurm_job_id"] = jobid
        nodes = _nodes(jobid)
        placement = place(plan, nodes)
        addresses = node_addresses(nodes, describe_node)
        status["placement"] = placement
        status["addresses"] = addresses
        say("placement: " + ", ".join(f"{k} on {'+'.join(v)}" for k, v in placement.items()))
        write_job_files(plan, out, placement, commands_text)
        status["phase"] = "image"
        start = time.monotonic()
        # its time counts against readiness (`start` is the readiness clock's start too)
        import_image(import_step(plan, jobid, nodes, str(out)), out, MARKS, plan.settings.ready_timeout_s, imports, say, poll_s)
        status["image_import_s"] = round(time.monotonic() - start, 1)
        status["phase"] = "start"
        steps = worker_steps(plan, jobid, placement, str(out), addresses)
        for step in steps:
            say(f"starting {step.name} (log: {out / step.log})")
            procs.append(_start(step.name, step.argv, step.env, out / step.log))
        services = list(procs)

        def dead() -> tuple[str, int] | None:
            for p in services:
                code = p.popen.poll()
                if code is not None:
                    return p.name, code
            return None

        status["phase"] = "ready"
        for check in ready_checks(plan, placement, addresses):
            owner = next(p for p in services if p.name == check.step)
            left = plan.settings.ready_timeout_s - (time.monotonic() - start)
            probe = Probe(clock=time.monotonic, sleep=time.sleep,
                          get=lambda u, e=check.expect: _http_status(u, e),
                          exit_code=lambda: (dead() or (None, None))[1], tail=lambda o=owner: tail_file(o.log), say=say)
            try:
                wait_ready([check.url], float(max(round(left), 1)), probe)
            except NotReady as exc:
                who = dead()
                msg = (f"{who[0]} exited with code {who[1]} before {check.url} answered" if who
                       else f"{check.step}: {exc.message}")
                tail = tail_file(next(p for p in services if p.name == who[0]).log) if who else exc.tail
                raise JobFailed("ready", msg, tail) from None

        status["phase"] = "client"
        for c in client_commands(plan, placement, addresses):
            limit = plan.client_s
            cdir = out / c.subdir if c.subdir else out
            say(f"running the client at concurrency {c.conc} (log: {out / c.log})")
            crun = _start(f"client-c{c.conc}", c.argv, c.env, out / c.log)
            procs.append(crun)
            t0 = time.monotonic()
            while True:
                code = crun.popen.poll()
                if code is not None:
                    seal_client(crun.popen, out, c.exports, on_sealed, say)
                    if code != 0:
                        raise JobFailed("client", f"{c.what} (conc {c.conc}) exited with code {code}",
                                        tail_file(crun.log))
                    missing = [n for n in c.expects if not (cdir / n).is_file()]
                    if missing:
                        raise JobFailed("client", f"{c.what} (conc {c.conc}) exited 0 but did not write "
                                        f"{', '.join(missing)}", tail_file(crun.log))
                    break
                who = dead()
                if who:
                    raise JobFailed("client", f"{who[0]} exited with code {who[1]} during the benchmark",
                                    tail_file(next(p for p in services if p.name == who[0]).log))
                if time.monotonic() - t0 > limit:
                    raise JobFailed("client", f"the client (conc {c.conc}) did not finish within {limit:g} s",
                                    tail_file(crun.log))
                time.sleep(poll_s)
            procs.remove(crun)
        status.update(ok=True, phase="done", reason="", exit_code=0)
        return status
    except JobFailed as exc:
        status.update(phase=exc.phase if status["phase"] != "allocate" else "allocate", reason=exc.message,
                      exit_code=exc.exit_code)
        raise
    except _Cancelled as exc:
        code = 128 + exc.signum
        name = signal.Signals(exc.signum).name
        status.update(reason=f"cancelled ({name})", exit_code=code)
        raise JobFailed(status["phase"], f"cancelled by {name}; the allocation and every step were stopped",
                        exit_code=code) from None
    finally:
        for s in previous:
            signal.signal(s, signal.SIG_IGN)
        if seen.get("jobid"):   # granted, or still queued when the job ended (salloc's "Pending job allocation")
            status["slurm_job_id"] = seen["jobid"]
        try:
            _cancel(seen.get("jobid"), plan, say)  # ends every step of the allocation, on every node
            procs += [_Proc("image", r.popen, r.log_path) for r in imports]
            for p in reversed(procs + ([seen["salloc"]] if "salloc" in seen else [])):
                _stop(p)
            shutil.rmtree(out / names.AIPERF_TMP, ignore_errors=True)
            (out / names.STATUS_JSON).write_text(json.dumps(status, indent=2) + "\n", encoding="utf-8")
        finally:
            for s, h in previous.items():
                signal.signal(s, h)

