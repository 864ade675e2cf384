"""The job's processes (adapter): started in their own process groups, stopped together; commands run to
their end; the HTTP calls of readiness and of the hooks around the client.

Every process is started in its own session (process group), so stopping it also stops what it spawned
(SGLang's scheduler ranks, docker's CLI), and a signal to the runner's own group (GitHub's cancel)
reaches only ci-tools, which then stops everything itself. Each gets the runner's environment, its own
variables and the job's marks.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ci_tools.runner.cleanup import run_stops
from ci_tools.runner.spec import JobFailed, Proc

TAIL_LINES = 40


def tail_file(path: Path, lines: int = TAIL_LINES) -> str:
    try:
        with path.open("rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - 64 * 1024))
            data = fh.read().decode("utf-8", errors="replace")
    except OSError:
        return ""
    return "\n".join(data.splitlines()[-lines:])


def child_env(env: Mapping[str, str], marks: Mapping[str, str]) -> dict[str, str]:
    """What a process the job starts sees: the runner's environment, its variables, then the job's marks
    (cleanup.py finds it by them)."""
    return {**os.environ, **env, **marks}


@dataclass
class Running:
    proc: Proc
    popen: subprocess.Popen
    log_path: Path


def _raise_nofile() -> None:
    """In the child before exec: the open-files soft limit up to the hard limit."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def start(proc: Proc, out: Path, marks: Mapping[str, str], phase: str) -> Running:
    """Start PROC in its own session, its output appended to its log; JobFailed (PHASE) when it cannot."""
    log_path = out / proc.log
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("ab") as fh:
        try:
            popen = subprocess.Popen(list(proc.argv), stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     env=child_env(proc.env, marks), start_new_session=True,
                                     preexec_fn=_raise_nofile if proc.raise_nofile else None)
        except OSError as exc:
            raise JobFailed(phase, f"cannot start {proc.called}: {proc.argv[0]}: {exc.strerror}") from None
    return Running(proc, popen, log_path)


def _signal_group(run: Running, sig: int) -> None:
    try:
        os.killpg(run.popen.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


@dataclass
class Groups:
    """The job's running processes. On exit (the supervisor's ExitStack) every group gets SIGTERM at once,
    `grace()` seconds for the leaders, SIGKILL for every group (children that ignored SIGTERM or outlived
    their leader), then each process's own stop commands (`docker rm -f`) within `budget()`."""
    out: Path
    marks: Mapping[str, str]
    say: Callable[[str], None]
    grace: Callable[[], float]
    budget: Callable[[], float]
    runs: list[Running] = field(default_factory=list)
    helpers: list[Running] = field(default_factory=list)    # the telemetry sampler: never fatal

    def start(self, proc: Proc, phase: str, helper: bool = False) -> Running:
        run = start(proc, self.out, self.marks, phase)
        (self.helpers if helper else self.runs).append(run)
        return run

    def forget(self, run: Running) -> None:
        """A process that ended and was dealt with (a finished client, the image import)."""
        self.runs.remove(run)

    def __enter__(self) -> Groups:
        return self

    def __exit__(self, *exc: object) -> None:
        everything = list(reversed(self.runs)) + self.helpers
        live = [r for r in everything if r.popen.poll() is None]
        for r in live:
            _signal_group(r, signal.SIGTERM)
        grace = self.grace()
        deadline = time.monotonic() + grace
        for r in live:
            try:
                r.popen.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                self.say(f"{r.proc.name} did not stop within {grace:g} s: SIGKILL")
        for r in everything:
            _signal_group(r, signal.SIGKILL)
        for r in everything:
            try:
                r.popen.wait(timeout=1)
            except subprocess.TimeoutExpired:
                pass
        run_stops([list(s) for r in self.runs for s in r.proc.stops], self.budget(), self.say)

    def helper_problem(self) -> str | None:
        """Why the telemetry sampler ended early, if it did (a stop by the job is no problem)."""
        for h in self.helpers:
            if h.popen.returncode not in (None, 0, -signal.SIGTERM, -signal.SIGKILL):
                return f"nvidia-smi exited with code {h.popen.returncode}: " + tail_file(h.log_path, 2).strip()[:200]
        return None


def run_to_end(proc: Proc, marks: Mapping[str, str], timeout_s: float, what: str) -> tuple[str, int | None]:
    """Run PROC to its end (a node check, a version command): (its output, its exit code, or None when
    it could not run or ran past TIMEOUT_S and was killed)."""
    try:
        res = subprocess.run(list(proc.argv), capture_output=True, text=True, timeout=timeout_s,
                             stdin=subprocess.DEVNULL, env=child_env(proc.env, marks))
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{what} could not run: {exc}", None
    return res.stdout + res.stderr, res.returncode


def query(argv: Sequence[str], timeout_s: float = 30.0, marks: Mapping[str, str] | None = None,
          ) -> subprocess.CompletedProcess | str:
    """A scheduler's answer (sbatch, squeue, scontrol): the finished process, or why it could not run. With
    MARKS it runs as the job's processes do (sbatch: the allocation carries them)."""
    try:
        return subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout_s,
                              stdin=subprocess.DEVNULL, env=None if marks is None else child_env({}, marks))
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)


def fetch(url: str, timeout_s: float) -> tuple[int, str] | str:
    """(status, body) of a GET, or why nothing answered."""
    import httpx

    try:
        res = httpx.get(url, timeout=timeout_s)
    except httpx.HTTPError as exc:
        return str(exc) or type(exc).__name__
    return res.status_code, res.text


def post(url: str, body: Mapping, timeout_s: float) -> str:
    """POST BODY as JSON; "" when it was answered below 400, else what went wrong."""
    import httpx

    try:
        answer = httpx.post(url, json=dict(body), timeout=timeout_s)
    except httpx.HTTPError as exc:
        return f"POST {url} got no answer: {exc}"
    if answer.status_code >= 400:
        return f"POST {url} answered {answer.status_code}: {answer.text[:300]}"
    return ""


def write_files(files: Sequence[tuple[str, str]]) -> None:
    """Each (absolute path, text), its folder created: the files engine commands name (TensorRT-LLM's
    LLM-API options) and commands.txt, before anything starts."""
    for path, text in files:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(text, encoding="utf-8")


def write_json(path: Path, doc: dict) -> None:
    """DOC as indented JSON, replacing PATH whole (a reader never sees half of it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    tmp.replace(path)
