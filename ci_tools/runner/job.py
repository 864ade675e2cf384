"""Running one job: start server (and router), wait, run the client, always clean up.

Every process is started in its own session (process group), so stopping it also stops what it
spawned (SGLang's scheduler ranks, docker's CLI). Cleanup runs on success, failure, deadline and
SIGTERM (a cancelled GitHub job): SIGTERM to the group, a grace period, SIGKILL, then the backend's
stop commands (`docker rm -f <our container>`, `scancel --name=<our job>`).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ci_tools.runner import layout
from ci_tools.runner.backends import Launch
from ci_tools.runner.ready import NotReady, Probe, wait_ready

TAIL_LINES = 40
CLIENT_GRACE_S = 600.0   # AIPerf's startup, warmup and drain beyond the benchmark duration
STOP_GRACE_S = 15.0


class JobFailed(Exception):
    def __init__(self, phase: str, message: str, tail: str = "", exit_code: int = 1):
        super().__init__(message)
        self.phase = phase
        self.message = message
        self.tail = tail
        self.exit_code = exit_code


class _Cancelled(BaseException):
    """Raised from the SIGTERM handler; BaseException so no `except Exception` swallows it."""


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


@dataclass
class Running:
    launch: Launch
    popen: subprocess.Popen
    log_path: Path


def _run_stops(launch: Launch, say: Callable[[str], None]) -> None:
    for stop in launch.stop:
        try:
            subprocess.run(stop, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            say(f"cleanup command failed: {' '.join(stop)}: {exc}")


def _start(launch: Launch, out: Path) -> Running:
    log_path = out / launch.log
    fh = log_path.open("ab")
    env = {**os.environ, **launch.env}
    try:
        popen = subprocess.Popen(launch.argv, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                 env=env, start_new_session=True)
    except OSError as exc:
        fh.close()
        raise JobFailed(launch.role, f"cannot start the {launch.role}: {launch.argv[0]}: {exc.strerror}") from None
    fh.close()
    return Running(launch, popen, log_path)


def _stop(run: Running, grace_s: float, say: Callable[[str], None]) -> None:
    p = run.popen
    if p.poll() is None:
        try:
            os.killpg(p.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            p.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            say(f"{run.launch.role} did not stop within {grace_s:g} s: SIGKILL")
    # children that ignored SIGTERM or outlived the leader are still in the group
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        p.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass
    _run_stops(run.launch, say)


def _fill(text: str, values: dict[str, str]) -> str:
    for key, value in values.items():
        text = text.replace("{" + key + "}", value)
    return text


def _locate(run: Running, deadline_s: float, say: Callable[[str], None]) -> dict[str, str]:
    """Wait until the scheduler says where the server job runs: {"server_jobid", "server_node"}."""
    start = time.monotonic()
    announced = False
    while True:
        code = run.popen.poll()
        if code is not None:
            raise JobFailed("start", f"the {run.launch.role} exited with code {code} before it was scheduled",
                            tail_file(run.log_path))
        try:
            out = subprocess.run(run.launch.locate, capture_output=True, text=True, timeout=30).stdout.split()
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise JobFailed("start", f"cannot ask the scheduler where the {run.launch.role} runs: {exc}") from None
        if len(out) >= 2 and out[1] not in ("", "(null)"):
            say(f"{run.launch.role} runs as job {out[0]} on {out[1]}")
            return {"server_jobid": out[0], "server_node": out[1]}
        if time.monotonic() - start > deadline_s:
            raise JobFailed("start", f"the {run.launch.role} job was not scheduled within {deadline_s:g} s")
        if not announced:
            say(f"waiting for the scheduler to place the {run.launch.role}")
            announced = True
        time.sleep(2.0)


def _http_status(url: str) -> int | None:
    import httpx

    try:
        return httpx.get(url, timeout=5.0).status_code
    except httpx.HTTPError:
        return None


def run_job(launches: list[Launch], out: Path, ready_urls: list[str], *, ready_timeout_s: float,
            client_timeout_s: float, say: Callable[[str], None] = lambda m: print(m, file=sys.stderr, flush=True),
            stop_grace_s: float = STOP_GRACE_S, poll_s: float = 0.2, progress_every_s: float = 60.0,
            client_outputs: tuple[str, ...] = (), client_name: str = "AIPerf") -> dict:
    """Run the launches (server, [router], client). Returns the status written to status.json.

    Raises JobFailed (clean message, log tail) on any failure; the status file is written first."""
    out.mkdir(parents=True, exist_ok=True)
    running: list[Running] = []
    status = {"ok": False, "phase": "start", "reason": "", "exit_code": 1}
    previous = signal.getsignal(signal.SIGTERM)

    def on_term(signum, frame):  # noqa: ARG001
        raise _Cancelled()

    signal.signal(signal.SIGTERM, on_term)
    try:
        services = [lc for lc in launches if lc.role != "client"]
        client = next((lc for lc in launches if lc.role == "client"), None)
        where: dict[str, str] = {}
        for lc in services:
            # a container or job of the same name left by a cancelled earlier attempt would block us
            _run_stops(lc, say)
            lc = Launch(lc.role, [_fill(a, where) for a in lc.argv], lc.env, lc.stop, lc.log, lc.locate)
            say(f"starting {lc.role}: {lc.argv[0]} ... (log: {out / lc.log})")
            running.append(_start(lc, out))
            if lc.locate:
                where.update(_locate(running[-1], ready_timeout_s, say))
        ready_urls = [_fill(u, where) for u in ready_urls]
        if client is not None:
            client = Launch(client.role, [_fill(a, where) for a in client.argv], client.env, client.stop,
                            client.log)
        server = running[0]

        def dead() -> int | None:
            for r in running[: len(services)]:
                code = r.popen.poll()
                if code is not None:
                    return code
            return None

        status["phase"] = "ready"
        probe = Probe(clock=time.monotonic, sleep=time.sleep, get=_http_status, exit_code=dead,
                      tail=lambda: tail_file(server.log_path), say=say)
        try:
            wait_ready(ready_urls, ready_timeout_s, probe)
        except NotReady as exc:
            raise JobFailed("ready", exc.message, exc.tail) from None

        if client is not None:
            status["phase"] = "client"
            say(f"running the client: {' '.join(client.argv[:2])} ... (log: {out / client.log})")
            crun = _start(client, out)
            running.append(crun)
            start = time.monotonic()
            last_say = start
            while True:
                code = crun.popen.poll()
                if code is not None:
                    if code != 0:
                        raise JobFailed("client", f"{client_name} exited with code {code}", tail_file(crun.log_path))
                    # AIPerf 0.13 can exit 0 after an internal failure (seen: ZMQ socket paths too long)
                    missing = [name for name in client_outputs if not (out / name).is_file()]
                    if missing:
                        raise JobFailed("client", f"{client_name} exited 0 but did not write {', '.join(missing)}",
                                        tail_file(crun.log_path))
                    break
                srv = dead()
                if srv is not None:
                    raise JobFailed("client", f"the server exited with code {srv} during the benchmark",
                                    tail_file(server.log_path))
                now = time.monotonic()
                if now - start > client_timeout_s:
                    raise JobFailed("client", f"the client did not finish within {client_timeout_s:g} s",
                                    tail_file(crun.log_path))
                if now - last_say >= progress_every_s:
                    last = tail_file(crun.log_path, 1).strip()[:160] or "(no output yet)"
                    say(f"client running for {now - start:.0f} s (limit {client_timeout_s:g} s); client log: {last}")
                    last_say = now
                time.sleep(poll_s)
        status.update(ok=True, phase="done", reason="", exit_code=0)
        return status
    except JobFailed as exc:
        status.update(phase=exc.phase, reason=exc.message, exit_code=exc.exit_code)
        raise
    except _Cancelled:
        status.update(reason="cancelled (SIGTERM)", exit_code=143)
        raise JobFailed(status["phase"], "cancelled by SIGTERM; the server and client were stopped",
                        exit_code=143) from None
    finally:
        # stop in reverse: client, router, server; ignore a second SIGTERM while cleaning up
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        try:
            for r in reversed(running):
                _stop(r, stop_grace_s, say)
            shutil.rmtree(out / layout.AIPERF_TMP, ignore_errors=True)
            (out / layout.STATUS_JSON).write_text(json.dumps(status, indent=2) + "\n", encoding="utf-8")
        finally:
            signal.signal(signal.SIGTERM, previous)
