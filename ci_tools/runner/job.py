"""Running one job: start server (and router), wait, run the client, always clean up.

Every process is started in its own session (process group), so stopping it also stops what it
spawned (SGLang's scheduler ranks, docker's CLI), and a signal to the runner's own group (GitHub's
cancel) reaches only ci-tools, which then stops everything itself. Cleanup runs on success, failure,
deadline, SIGINT and SIGTERM: SIGTERM to every group at once, a grace period, SIGKILL, the backend's
stop commands (`docker rm -f <our container>`, `scancel <our job id>`), then a sweep of anything
else carrying the job's label (cleanup.py). A cancel's whole stop sequence fits in GitHub's window
between SIGINT and SIGTERM (budget.CANCEL_STOP_S); a second signal during cleanup is ignored.
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

from ci_tools.runner import budget as bud
from ci_tools import names
from ci_tools.runner import early
from ci_tools.runner.backends import LABEL_ENV, RUNNER_ENV, Launch, node_addr
from ci_tools.runner.cleanup import run_stops, stop_labelled
from ci_tools.runner.ready import NotReady, Probe, wait_ready

TAIL_LINES = 40
CLIENT_GRACE_S = bud.CLIENT_GRACE_S
STOP_GRACE_S = bud.STOP_GRACE_S
SIGNAL_EXIT = {signal.SIGINT: 130, signal.SIGTERM: 143}


class JobFailed(Exception):
    def __init__(self, phase: str, message: str, tail: str = "", exit_code: int = 1):
        super().__init__(message)
        self.phase = phase
        self.message = message
        self.tail = tail
        self.exit_code = exit_code


class Cancelled(BaseException):
    """Raised from the signal handler; BaseException so no `except Exception` swallows it."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name


def cancelled_status(signum: int, phase: str) -> dict:
    name = signal.Signals(signum).name
    return {"ok": False, "phase": phase, "reason": f"cancelled ({name})", "exit_code": SIGNAL_EXIT[signum]}


def write_status(out: Path, status: dict) -> None:
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / (names.STATUS_JSON + ".tmp")
    tmp.write_text(json.dumps(status, indent=2) + "\n", encoding="utf-8")
    tmp.replace(out / names.STATUS_JSON)


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


def _start(launch: Launch, out: Path, marks: dict[str, str]) -> Running:
    log_path = out / launch.log
    fh = log_path.open("ab")
    env = {**os.environ, **launch.env, **marks}
    try:
        popen = subprocess.Popen(launch.argv, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                 env=env, start_new_session=True,
                                 preexec_fn=_raise_nofile if launch.raise_nofile else None)
    except OSError as exc:
        fh.close()
        raise JobFailed(launch.role, f"cannot start the {launch.role}: {launch.argv[0]}: {exc.strerror}") from None
    fh.close()
    return Running(launch, popen, log_path)


def _raise_nofile() -> None:
    """In the child before exec: the open-files soft limit up to the hard limit."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def _signal_groups(runs: list[Running], sig: int) -> None:
    for r in runs:
        try:
            os.killpg(r.popen.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def _stop_all(runs: list[Running], grace_s: float, say: Callable[[str], None]) -> None:
    """SIGTERM every group at once, wait up to grace_s for the leaders, SIGKILL every group."""
    live = [r for r in runs if r.popen.poll() is None]
    _signal_groups(live, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    for r in live:
        try:
            r.popen.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            say(f"{r.launch.role} did not stop within {grace_s:g} s: SIGKILL")
    # children that ignored SIGTERM or outlived the leader are still in the group
    _signal_groups(runs, signal.SIGKILL)
    for r in runs:
        try:
            r.popen.wait(timeout=1)
        except subprocess.TimeoutExpired:
            pass


def _fill(text: str, values: dict[str, str]) -> str:
    for key, value in values.items():
        text = text.replace("{" + key + "}", value)
    return text


def _filled(lc: Launch, where: dict[str, str]) -> Launch:
    return Launch(lc.role, [_fill(a, where) for a in lc.argv], lc.env,
                  [[_fill(a, where) for a in s] for s in lc.stop], lc.log, raise_nofile=lc.raise_nofile)


def _submit(lc: Launch, out: Path, marks: dict[str, str], say: Callable[[str], None]) -> str:
    """Submit the scheduler allocation; return its job id (sbatch --parsable: `id[;cluster]`)."""
    try:
        res = subprocess.run(lc.submit, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
                             env={**os.environ, **marks})
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise JobFailed("queue", f"cannot submit the {lc.role}'s allocation: {exc}") from None
    with (out / lc.log).open("a", encoding="utf-8") as fh:
        fh.write(f"$ {' '.join(lc.submit)}\n{res.stdout}{res.stderr}")
    job = res.stdout.strip().split(";")[0]
    if res.returncode != 0 or not job.isdigit():
        raise JobFailed("queue", f"the scheduler refused the {lc.role}'s allocation (exit {res.returncode})",
                        (res.stderr or res.stdout).strip())
    say(f"{lc.role} allocation submitted as Slurm job {job}")
    return job


def _wait_running(lc: Launch, job: str, deadline_s: float, say: Callable[[str], None]) -> str:
    """Poll the scheduler for job `job` (by id) until it runs; return its node."""
    argv = [_fill(a, {"server_jobid": job}) for a in lc.locate or []]
    start = time.monotonic()
    announced = False
    while True:
        try:
            res = subprocess.run(argv, capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise JobFailed("queue", f"cannot ask the scheduler about job {job}: {exc}") from None
        words = res.stdout.split()
        state = words[0] if words else ""
        if res.returncode == 0 and state == "RUNNING" and len(words) > 1:
            say(f"{lc.role} job {job} runs on {words[1]}")
            return words[1]
        if res.returncode == 0 and state not in ("PENDING", "CONFIGURING", "REQUEUED", "RESIZING", "SUSPENDED"):
            raise JobFailed("queue", f"Slurm job {job} ended before it ran (state {state or 'gone'}); "
                            f"see `sacct -j {job}` and the scheduler's reason", res.stderr.strip())
        if time.monotonic() - start > deadline_s:
            raise JobFailed("queue", f"Slurm job {job} did not start within {deadline_s:g} s (state {state}); "
                            "raise --queue-timeout or free the partition")
        if not announced:
            say(f"waiting for the scheduler to start job {job} ({state or 'no answer'})")
            announced = True
        time.sleep(1.0)


def node_addresses(nodes: list[str], describe: Callable[[str], list[str]]) -> dict[str, str]:
    """NodeName -> NodeAddr of each node Slurm describes (a node it does not describe is left out)."""
    out = {}
    for node in nodes:
        try:
            res = subprocess.run(describe(node), capture_output=True, text=True, timeout=30,
                                 stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired):
            continue
        addr = node_addr(res.stdout) if res.returncode == 0 else None
        if addr:
            out[node] = addr
    return out


def _address(lc: Launch, node: str, say: Callable[[str], None]) -> str:
    if not lc.describe:
        return node
    argv = [_fill(a, {"server_node": node}) for a in lc.describe]
    addr = node_addresses([node], lambda _: argv).get(node)
    if addr is None:
        say(f"Slurm gave no NodeAddr for {node} (`{' '.join(argv)}`); reaching it by its name")
        return node
    if addr != node:
        say(f"{lc.role} node {node} is reached at its NodeAddr {addr}")
    return addr


def _node_check(lc: Launch, judge: Callable[[str], list[str]], out: Path, marks: dict[str, str],
                say: Callable[[str], None]) -> None:
    try:
        res = subprocess.run(lc.argv, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
                             env={**os.environ, **lc.env, **marks})
        text = res.stdout + res.stderr
    except (OSError, subprocess.TimeoutExpired) as exc:
        text = f"the node check could not run: {exc}"
    (out / lc.log).write_text(text, encoding="utf-8")
    problems = judge(text)
    if problems:
        raise JobFailed("check", "the node is not ready for this point: " + "; ".join(problems),
                        "\n".join(text.splitlines()[-10:]))
    say("node check passed: GPUs, model and disk")


def _engine_version(lc: Launch, judge: Callable[[str], tuple[dict, list[str]]], out: Path, marks: dict[str, str],
                    deadline_s: float, say: Callable[[str], None]) -> dict:
    """Run the engine's version command where the engine will run (a docker pull of the image counts
    against the readiness deadline, as Slurm's import does); refuse a release the recipe does not declare."""
    try:
        res = subprocess.run(lc.argv, capture_output=True, text=True, timeout=deadline_s, stdin=subprocess.DEVNULL,
                             env={**os.environ, **lc.env, **marks})
        text = res.stdout + res.stderr
        code: int | None = res.returncode
    except (OSError, subprocess.TimeoutExpired) as exc:
        text, code = f"the version command could not run: {exc}", None
    (out / lc.log).write_text(f"$ {' '.join(lc.argv)}\n{text}", encoding="utf-8")
    info, problems = judge(text)
    info["exit_code"] = code
    if problems:
        raise JobFailed("version", "; ".join(problems), "\n".join(text.splitlines()[-10:]))
    say(f"engine {info['name']} {info['version'] or '(version not printed; the recipe declares none)'}")
    return info


def import_image(lc: Launch, out: Path, marks: dict[str, str], deadline_s: float, imports: list[Running],
                  say: Callable[[str], None], poll_s: float) -> float:
    """Run the image import step to its end (in `imports` meanwhile, so a cancel stops it); returns its seconds."""
    say(f"importing the image once for the job (log: {out / lc.log})")
    run = _start(lc, out, marks)
    imports.append(run)
    start = time.monotonic()
    while run.popen.poll() is None:
        if time.monotonic() - start > deadline_s:
            raise JobFailed("image", f"the image import did not finish within {deadline_s:g} s (the readiness "
                            "deadline)", tail_file(run.log_path))
        time.sleep(poll_s)
    imports.remove(run)
    took = time.monotonic() - start
    if run.popen.returncode != 0:
        raise JobFailed("image", f"the image import exited with code {run.popen.returncode}", tail_file(run.log_path))
    say(f"image ready after {took:.0f} s: {tail_file(run.log_path, 1).strip()[:200]}")
    return took


def _start_sampler(lc: Launch, out: Path, marks: dict[str, str], say: Callable[[str], None]) -> Running | None:
    (out / names.GPU_TELEMETRY_META).write_text(json.dumps(
        {"utc_offset_s": time.localtime().tm_gmtoff, "argv": lc.argv}) + "\n", encoding="utf-8")
    try:
        run = _start(lc, out, marks)
    except JobFailed as exc:
        say(f"GPU telemetry not recorded: {exc.message}")
        return None
    say(f"sampling GPU telemetry into {out / lc.log}")
    return run


def _http_status(url: str) -> int | None:
    import httpx

    try:
        return httpx.get(url, timeout=5.0).status_code
    except httpx.HTTPError:
        return None


def _post_all(calls: list[tuple[str, dict]], timeout_s: float, say: Callable[[str], None]) -> None:
    """POST each (url, JSON body); an error answer or no answer fails the job (phase `profile`)."""
    import httpx

    for url, body in calls:
        say(f"POST {url}")
        try:
            answer = httpx.post(url, json=body, timeout=timeout_s)
        except httpx.HTTPError as exc:
            raise JobFailed("profile", f"POST {url} got no answer: {exc}") from None
        if answer.status_code >= 400:
            raise JobFailed("profile", f"POST {url} answered {answer.status_code}: {answer.text[:300]}")


def _snapshot(calls: list[tuple[str, str]], where: Path, timeout_s: float, say: Callable[[str], None]) -> None:
    """GET each (url, file name) into `where`; never fails the job (the acceptance step judges what is
    missing): an unanswered or refused GET leaves its file out and says why in `<name>.error`."""
    import httpx

    where.mkdir(parents=True, exist_ok=True)
    for url, name in calls:
        try:
            answer = httpx.get(url, timeout=timeout_s)
        except httpx.HTTPError as exc:
            (where / f"{name}.error").write_text(f"GET {url} got no answer: {exc}\n", encoding="utf-8")
            continue
        if answer.status_code >= 400:
            (where / f"{name}.error").write_text(f"GET {url} answered {answer.status_code}\n", encoding="utf-8")
            continue
        (where / name).write_text(answer.text, encoding="utf-8")
    say(f"engine metrics saved in {where}")


def seal_client(crun: Running | subprocess.Popen, out: Path, folders: tuple[str, ...],
                on_sealed: Callable[[str], None] | None, say: Callable[[str], None]) -> None:
    """The client exited: stop what it left in its process group (nothing may write its exports from
    now on), then hash its export folders into the job directory's record (runner/custody.py)."""
    if not folders:
        return
    from ci_tools.runner.custody_files import seal

    popen = crun.popen if isinstance(crun, Running) else crun
    try:
        os.killpg(popen.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        digest = seal(out, folders, say)
    except OSError as exc:
        raise JobFailed("client", f"cannot record the hashes of the client's exports in {out}: {exc}") from None
    if on_sealed is not None:
        on_sealed(digest)


def install_cancel_handlers() -> dict:
    """SIGINT/SIGTERM raise Cancelled from now on; returns the previous handlers."""
    def on_signal(signum, frame):  # noqa: ARG001
        raise Cancelled(signum)

    previous = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    for s in previous:
        signal.signal(s, on_signal)
    return previous


def run_job(launches: list[Launch], out: Path, ready_urls: list[str], *, ready_timeout_s: float,
            client_timeout_s: float, queue_timeout_s: float = bud.QUEUE_TIMEOUT_S,
            say: Callable[[str], None] = lambda m: print(m, file=sys.stderr, flush=True),
            stop_grace_s: float = STOP_GRACE_S, poll_s: float = 0.2, progress_every_s: float = 60.0,
            client_outputs: tuple[str, ...] = (), label: str = "", runner: str = "",
            client_name: str = "AIPerf",
            check: tuple[Launch, Callable[[str], list[str]]] | None = None,
            sampler: Launch | None = None, image: Launch | None = None,
            version: tuple[Launch, Callable[[str], tuple[dict, list[str]]]] | None = None,
            on_engine: Callable[[dict], None] = lambda info: None,
            around_client: tuple[tuple[tuple[str, dict], ...], tuple[tuple[str, dict], ...]] | None = None,
            call_timeout_s: float = 900.0, snapshots: tuple[tuple[str, str], ...] = (),
            client_exports: tuple[str, ...] = (), on_sealed: Callable[[str], None] | None = None) -> dict:
    """Run the launches (server, [router], client). Returns the status written to status.json.

    `check` (a command and the pure judge of its output) runs where the engine will run, before
    it starts; `version` (the engine's version command and its judge) runs there next, its verdict
    in status.json and handed to `on_engine` (job.json), a release the recipe does not declare
    failing the job (phase `version`) before the engine starts; `image` (Slurm: the job's one image import) runs after the check and counts against the
    readiness deadline; `sampler` (GPU telemetry) runs beside the job and never fails it;
    `around_client` (`runner profile`: the engine's start/stop profile calls) are POSTed right before
    the client starts and right after it succeeded, each a failure of phase `profile` when refused;
    `snapshots` ((url, file name): the engine's acceptance metrics) are fetched into
    OUT/acceptance/before and /after around the client, never failing the job.
    `client_exports` (folders of OUT the client writes) are hashed the moment the client exits, before
    the server is stopped (seal_client); `on_sealed` gets the record's sha256 (the step output).
    Raises JobFailed (clean message, log tail) on any failure and on SIGINT/SIGTERM (exit code
    130/143); the status file is written first."""
    out.mkdir(parents=True, exist_ok=True)
    running: list[Running] = []
    helpers: list[Running] = []          # the telemetry sampler: stopped with the rest, never fatal
    imports: list[Running] = []          # the image import while it runs
    stops: list[list[str]] = []          # backend stop commands, as soon as there is something to stop
    status: dict = {"ok": False, "phase": "start", "reason": "", "exit_code": 1}
    if label:
        status["label"] = label
    marks = {LABEL_ENV: label} if label else {}
    if label and runner:
        marks[RUNNER_ENV] = runner
    previous = install_cancel_handlers()
    cancelled = False
    try:
        if early.PENDING:  # cancelled while Python was still importing: start nothing
            raise Cancelled(early.PENDING[0])
        if label:
            # what an earlier attempt of this job, or any earlier job of this runner, left behind when
            # the machine or the runner crashed (no cleanup step ran) would hold GPUs, ports, names;
            # a runner runs one job at a time, so everything carrying its name now is stale
            swept = stop_labelled(label, runner, budget_s=30.0, grace_s=2.0)
            if swept.stopped():
                say(f"stopped what an earlier job of this runner left: {', '.join(swept.stopped())}")
        services = [lc for lc in launches if lc.role != "client"]
        client = next((lc for lc in launches if lc.role == "client"), None)
        where: dict[str, str] = {}
        started_at = time.monotonic()
        for i, lc in enumerate(services):
            if lc.submit:
                status["phase"] = "queue"
                job = _submit(lc, out, marks, say)
                where["server_jobid"] = status["slurm_job_id"] = job
                stops += [[_fill(a, where) for a in s] for s in lc.stop]
                where["server_node"] = status["node"] = _wait_running(lc, job, queue_timeout_s, say)
                where["server_addr"] = status["node_addr"] = _address(lc, where["server_node"], say)
                status["phase"] = "start"
            if i == 0:
                if check is not None:
                    status["phase"] = "check"
                    _node_check(_filled(check[0], where), check[1], out, marks, say)
                    status["phase"] = "start"
                if image is not None:
                    status["phase"] = "image"
                    status["image_import_s"] = round(import_image(_filled(image, where), out, marks,
                                                                   ready_timeout_s, imports, say, poll_s), 1)
                    status["phase"] = "start"
                if version is not None:
                    status["phase"] = "version"
                    status["engine"] = _engine_version(_filled(version[0], where), version[1], out, marks,
                                                       ready_timeout_s, say)
                    on_engine(status["engine"])
                    status["phase"] = "start"
                if sampler is not None:
                    started = _start_sampler(_filled(sampler, where), out, marks, say)
                    helpers += [started] if started else []
            lc = _filled(lc, where)
            if not lc.submit:
                stops += [s for s in lc.stop if s not in stops]
            say(f"starting {lc.role}: {lc.argv[0]} ... (log: {out / lc.log})")
            running.append(_start(lc, out, marks))
            if i == 0:
                started_at = time.monotonic()
        ready_urls = [_fill(u, where) for u in ready_urls]
        if client is not None:
            client = _filled(client, where)
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
        imported = status.get("image_import_s")   # the import's time counts against readiness
        try:
            wait_ready(ready_urls, round(max(ready_timeout_s - (imported or 0.0), 1.0), 1), probe)
        except NotReady as exc:
            less = f" ({ready_timeout_s:g} s less the image import's {imported:g} s)" if imported else ""
            raise JobFailed("ready", exc.message + less, exc.tail) from None
        status["ready_s"] = round(time.monotonic() - started_at, 1)   # from the engine's start

        if around_client is not None:
            status["phase"] = "profile"
            _post_all([(_fill(u, where), b) for u, b in around_client[0]], call_timeout_s, say)
        if snapshots:
            _snapshot([(_fill(u, where), n) for u, n in snapshots], out / names.ACCEPTANCE_DIR / "before", 30.0, say)
        if client is not None:
            status["phase"] = "client"
            say(f"running the client: {' '.join(client.argv[:2])} ... (log: {out / client.log})")
            crun = _start(client, out, marks)
            running.append(crun)
            start = time.monotonic()
            last_say = start
            while True:
                code = crun.popen.poll()
                if code is not None:
                    status["client_s"] = round(time.monotonic() - start, 1)
                    seal_client(crun, out, client_exports, on_sealed, say)
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
        if around_client is not None:
            status["phase"] = "profile"
            _post_all([(_fill(u, where), b) for u, b in around_client[1]], call_timeout_s, say)
        if snapshots:
            _snapshot([(_fill(u, where), n) for u, n in snapshots], out / names.ACCEPTANCE_DIR / "after", 30.0, say)
        status.update(ok=True, phase="done", reason="", exit_code=0)
        return status
    except JobFailed as exc:
        status.update(phase=exc.phase, reason=exc.message, exit_code=exc.exit_code)
        raise
    except Cancelled as sig:
        cancelled = True
        status.update(cancelled_status(sig.signum, status["phase"]))
        raise JobFailed(status["phase"], f"cancelled by {sig.name}; everything this job started was stopped",
                        exit_code=status["exit_code"]) from None
    finally:
        # a second signal (GitHub's SIGTERM after SIGINT) must not interrupt the cleanup
        for s in previous:
            signal.signal(s, signal.SIG_IGN)
        try:
            t0 = time.monotonic()
            grace = min(stop_grace_s, bud.CANCEL_GRACE_S) if cancelled else stop_grace_s
            _stop_all(list(reversed(running)) + helpers + imports, grace, say)
            for h in helpers:
                if h.popen.returncode not in (None, 0, -signal.SIGTERM, -signal.SIGKILL):
                    status["telemetry"] = (f"nvidia-smi exited with code {h.popen.returncode}: "
                                           + tail_file(h.log_path, 2).strip()[:200])
            left = bud.CANCEL_STOP_S - (time.monotonic() - t0) if cancelled else 60.0
            run_stops(stops, max(left, 1.0), say)
            if label:
                left = bud.CANCEL_STOP_S - (time.monotonic() - t0) if cancelled else 30.0
                swept = stop_labelled(label, "", budget_s=max(left, 1.0), grace_s=0.5)
                if swept.stopped():
                    say(f"also stopped what carried the label {label}: {', '.join(swept.stopped())}")
                for p in swept.problems:
                    say(f"cleanup: {p}")
            shutil.rmtree(out / names.AIPERF_TMP, ignore_errors=True)
            status["stop_s"] = round(time.monotonic() - t0, 2)
            write_status(out, status)
        finally:
            for s, h in previous.items():
                signal.signal(s, h)
