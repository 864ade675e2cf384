"""Stop everything that carries a job's label (adapter): processes, docker containers, Slurm jobs.

Used at the end of every `runner run` (a sweep after the known processes were stopped), and by
`ci-tools runner cleanup`, the workflow's `if: always()` step that runs after a cancel, a timeout
or a crash of `runner run` itself. What carries the label (see backends.py):
- processes: `CI_TOOLS_JOB=<label>` in /proc/<pid>/environ (inherited, so a helper that called
  setsid is found too);
- docker containers: `--label ci-tools.job=<label>` (they are children of dockerd, not of the job);
- Slurm jobs of this user named <label> (the allocation; its steps end with it).
With `runner=NAME`, everything carrying `ci-tools.runner=NAME` too: a runner runs one job at a time,
so anything of its own still there when the job ends belongs to this job or a crashed earlier one.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ci_tools.runner.backends import LABEL_ENV, LABEL_KEY, RUNNER_ENV, RUNNER_KEY


@dataclass
class Sweep:
    processes: list[str] = field(default_factory=list)
    containers: list[str] = field(default_factory=list)
    slurm_jobs: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def stopped(self) -> list[str]:
        return ([f"process {p}" for p in self.processes] + [f"container {c}" for c in self.containers]
                + [f"slurm job {j}" for j in self.slurm_jobs])


def _environ_matches(pid: int, needles: set[bytes]) -> bool:
    try:
        env = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return False
    return any(item in needles for item in env.split(b"\0"))


def labelled_processes(label: str, runner: str = "") -> list[int]:
    """Live processes (not this one, nor its ancestors) whose environment carries the label."""
    needles = {f"{LABEL_ENV}={label}".encode()} if label else set()
    if runner:
        needles.add(f"{RUNNER_ENV}={runner}".encode())
    if not needles:
        return []
    skip = {os.getpid(), os.getppid()}
    found = []
    for name in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if name.isdigit() and int(name) not in skip and _environ_matches(int(name), needles):
            try:
                if Path(f"/proc/{name}/stat").read_text().split(")")[-1].split()[0] == "Z":
                    continue  # a zombie is already dead; its parent reaps it
            except (OSError, IndexError):
                continue
            found.append(int(name))
    return found


def _kill_processes(pids: list[int], grace_s: float) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except (ProcessLookupError, PermissionError):
                pass
        deadline = time.monotonic() + grace_s
        while sig == signal.SIGTERM and time.monotonic() < deadline:
            if not any(_alive(p) for p in pids):
                return
            time.sleep(0.05)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _run(argv: list[str], timeout: float) -> subprocess.CompletedProcess | str:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=max(timeout, 0.5))
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{' '.join(argv)}: {exc}"


def _containers(label: str, runner: str, budget_s: float, sweep: Sweep) -> None:
    if shutil.which("docker") is None:
        return
    ids: list[str] = []
    filters = ([f"label={LABEL_KEY}={label}"] if label else []) + ([f"label={RUNNER_KEY}={runner}"] if runner else [])
    for flt in filters:
        res = _run(["docker", "ps", "-aq", "--filter", flt], budget_s / 2)
        if not isinstance(res, str) and "Cannot connect to the Docker daemon" in res.stderr:
            return  # no daemon, no container
        if isinstance(res, str) or res.returncode != 0:
            sweep.problems.append(f"cannot list docker containers: {res if isinstance(res, str) else res.stderr.strip()}")
            return
        ids += [i for i in res.stdout.split() if i not in ids]
    if ids:
        res = _run(["docker", "rm", "-f", *ids], budget_s / 2)
        if isinstance(res, str) or res.returncode != 0:
            sweep.problems.append(f"docker rm -f failed: {res if isinstance(res, str) else res.stderr.strip()}")
        sweep.containers += ids


def _slurm_jobs(label: str, runner: str, budget_s: float, sweep: Sweep) -> None:
    if shutil.which("squeue") is None:
        return
    res = _run(["squeue", "--noheader", f"--user={os.getuid()}", "--format=%i|%j|%k"], budget_s / 2)
    if not isinstance(res, str) and res.returncode != 0 and any(
            m in res.stderr for m in ("Could not establish a configuration source", "cannot stat file")):
        return  # Slurm's client programs but no cluster configured on this host: no job of ours
    if isinstance(res, str) or res.returncode != 0:
        sweep.problems.append(f"cannot list Slurm jobs: {res if isinstance(res, str) else res.stderr.strip()}")
        return
    ids = []
    for line in res.stdout.splitlines():
        parts = line.strip().split("|", 2)
        if len(parts) == 3 and ((label and parts[1] == label) or (runner and parts[2] == f"{RUNNER_KEY}={runner}")):
            ids.append(parts[0])
    if ids:
        res = _run(["scancel", *ids], budget_s / 2)
        if isinstance(res, str) or res.returncode != 0:
            sweep.problems.append(f"scancel failed: {res if isinstance(res, str) else res.stderr.strip()}")
        sweep.slurm_jobs += ids


def stop_labelled(label: str, runner: str = "", budget_s: float = 5.0, grace_s: float = 1.0) -> Sweep:
    """Stop every process, container and Slurm job carrying the label (or the runner's label)."""
    sweep = Sweep()
    if not label and not runner:
        return sweep
    start = time.monotonic()
    left = lambda: budget_s - (time.monotonic() - start)  # noqa: E731
    # the scheduler's and docker's first: they hold the GPUs, and their local helpers end with them
    _containers(label, runner, left() / 2, sweep)
    _slurm_jobs(label, runner, left() / 2, sweep)
    pids = labelled_processes(label, runner)
    if pids:
        _kill_processes(pids, grace_s)
        sweep.processes = [str(p) for p in pids]
    return sweep


def run_stops(stops: list[list[str]], budget_s: float, say: Callable[[str], None]) -> None:
    """The backend's own stop commands (`docker rm -f <name>`, `scancel <id>`), within the budget."""
    start = time.monotonic()
    for stop in stops:
        res = _run(stop, budget_s - (time.monotonic() - start))
        if isinstance(res, str):
            say(f"cleanup command failed: {res}")
        elif res.returncode != 0 and "No such container" not in res.stderr:
            say(f"cleanup command failed: {' '.join(stop)}: exit {res.returncode}: {res.stderr.strip()[:200]}")
