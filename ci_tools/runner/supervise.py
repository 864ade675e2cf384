"""The one lifecycle of a runner job (adapter): `supervise(spec, ctx)` runs a JobSpec and always stops
everything it started.

Phases, in order (`spec.Phase`; status.json names the one a job ended in): the allocation (Slurm only:
`queue` for sbatch, `allocate` for salloc), the node `check`, the `image` import, the engine's
`version`, `start` (the services; the telemetry sampler beside them), `ready` (the checks in order,
within the readiness left after the image import), the hooks before the client (`profile` when they
POST), `client` (each client; its exports hashed the moment it exits), the hooks after it, `done`.

Each thing's stop is registered on one ExitStack as it starts, so cleanup runs on success, failure,
deadline, SIGINT and SIGTERM alike, in this order: every process group SIGTERMed at once, a grace,
SIGKILL, their own stop commands (`docker rm -f`), the allocation's `scancel`, then a sweep of anything
else carrying the job's label (cleanup.py); status.json last. SIGINT/SIGTERM (GitHub's cancel) are
handled once, here (`CancelSignals`): the signal is recorded in the context and ends the current
phase; a cancel's whole stop fits in GitHub's window between SIGINT and SIGTERM (budget.CANCEL_STOP_S),
and a second signal during cleanup is ignored. A signal that came while Python was still importing
(early.py) cancels the job before it starts anything.
"""

from __future__ import annotations

import json
import shutil
import signal
import sys
import time
from collections.abc import Callable, Mapping
from contextlib import ExitStack
from dataclasses import dataclass, replace
from pathlib import Path

from ci_tools import names
from ci_tools.runner import budget as bud
from ci_tools.runner.allocation import Allocation
from ci_tools.runner.backends import LABEL_ENV, RUNNER_ENV
from ci_tools.runner.cleanup import stop_labelled
from ci_tools.runner.early import remembered
from ci_tools.runner.procs import Groups, Running, fetch, post, run_to_end, tail_file, write_files, write_json
from ci_tools.runner.ready import NotReady, Probe, wait_ready
from ci_tools.runner.spec import (ClientRun, Hook, JobFailed, JobSpec, Local, NodeCheck, Phase, Post, Proc,
                                  SallocAllocation, Snapshot, Status, VersionCheck, fill)

SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@dataclass
class JobContext:
    """What a job runs with that is not its plan: where it writes, who runs it, how it speaks, its pace."""
    out: Path
    runner: str = ""
    say: Callable[[str], None] = _stderr
    on_sealed: Callable[[str], None] | None = None   # the sha256 of the exports' record, as each client exits
    poll_s: float = 0.2
    progress_every_s: float = 60.0
    stop_grace_s: float = bud.STOP_GRACE_S
    clock: Callable[[], float] = time.monotonic
    cancelled: int | None = None                      # the signal that cancelled the job, once one did
    stopping: bool = False                            # the cleanup has begun: a cancel no longer interrupts

    def pause(self, seconds: float) -> None:
        """Every wait of a running job sleeps here. The signal handler raises Cancelled wherever Python
        happens to be; when that is a finalizer (a `__del__` run by the garbage collector, say, inside
        httpx), Python prints the exception and drops it. The recorded signal is raised again at the
        next pause, so a cancel is never lost to where it landed."""
        if self.cancelled is not None and not self.stopping:
            raise Cancelled(self.cancelled)
        time.sleep(seconds)


class Cancelled(BaseException):
    """Raised by the signal handler; a BaseException, so no `except Exception` swallows it."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


class CancelSignals:
    """SIGINT and SIGTERM cancel the job while this is entered; the previous handlers come back on exit."""

    def __init__(self, ctx: JobContext):
        self.ctx = ctx
        self.previous: dict = {}
        self.unraisable = sys.unraisablehook

    def __enter__(self) -> CancelSignals:
        self.previous = {s: signal.getsignal(s) for s in SIGNALS}
        for s in SIGNALS:
            signal.signal(s, self._on_signal)
        self.unraisable = sys.unraisablehook
        sys.unraisablehook = self._on_unraisable
        return self

    def _on_unraisable(self, unraisable: sys.UnraisableHookArgs) -> None:
        """A Cancelled that landed in a finalizer is dropped by Python; the job raises it again at its next
        wait (JobContext.pause), so the log gets no traceback for it. Anything else is reported as usual."""
        if not isinstance(unraisable.exc_value, Cancelled):
            self.unraisable(unraisable)

    def _on_signal(self, signum: int, frame: object) -> None:
        self.ctx.cancelled = signum
        raise Cancelled(signum)

    def check_early(self) -> None:
        """A signal the early handler (early.py) caught: the job is cancelled before it starts anything."""
        early = remembered(self.previous.values())
        if early is not None:
            self.ctx.cancelled = early
            raise Cancelled(early)

    def quiet(self) -> None:
        """From now on (the cleanup) a signal is ignored: GitHub's SIGTERM after its SIGINT must not cut it."""
        for s in SIGNALS:
            signal.signal(s, signal.SIG_IGN)

    def __exit__(self, *exc: object) -> None:
        for s, h in self.previous.items():
            signal.signal(s, h)
        sys.unraisablehook = self.unraisable


def supervise(spec: JobSpec, ctx: JobContext) -> Status:
    """Run the job; the status written to status.json. Raises JobFailed (clean message, log tail) on any
    failure and on SIGINT/SIGTERM (exit code 130/143), after everything was stopped and the status written."""
    job = _Job(spec, ctx)
    job.write_before()
    failed: JobFailed | None = None
    with CancelSignals(ctx) as signals:
        try:
            with ExitStack() as stack:
                try:
                    signals.check_early()
                    job.run(stack)
                    job.status.ok, job.status.phase, job.status.exit_code = True, Phase.DONE, 0
                except JobFailed as exc:
                    job.status.phase, job.status.reason, job.status.exit_code = exc.phase, exc.message, exc.exit_code
                    failed = exc
                except Cancelled as sig:
                    name = signal.Signals(sig.signum).name
                    job.status.reason, job.status.exit_code = f"cancelled ({name})", 128 + sig.signum
                    failed = JobFailed(job.status.phase, f"cancelled by {name}; everything this job started was "
                                       "stopped", exit_code=job.status.exit_code)
                finally:
                    signals.quiet()
                    ctx.stopping = True
                    job.stopping_since = ctx.clock()
        finally:
            job.finish()
    if failed is not None:
        raise failed
    return job.status


class _Job:
    def __init__(self, spec: JobSpec, ctx: JobContext):
        self.spec, self.ctx, self.out, self.say = spec, ctx, ctx.out, ctx.say
        first = Phase.ALLOCATE if isinstance(spec.placement, SallocAllocation) else Phase.START
        self.status = Status(phase=first, label=spec.label)
        self.marks = {LABEL_ENV: spec.label, **({RUNNER_ENV: ctx.runner} if ctx.runner else {})}
        self.values: dict[str, str] = {}              # the allocation's placeholders, once granted
        self.placement: dict[str, list[str]] | None = None
        self.groups: Groups | None = None
        self.stopping_since = 0.0

    # ---- what the job writes

    def write_before(self) -> None:
        self.out.mkdir(parents=True, exist_ok=True)
        self.documents()
        write_files(self.spec.files)
        for folder in self.spec.folders:       # a mount's source must exist (enroot), and be the runner's
            Path(folder).mkdir(parents=True, exist_ok=True)
        for folder in self.spec.fresh:         # an earlier run's files are not this one's
            shutil.rmtree(folder, ignore_errors=True)
            Path(folder).mkdir(parents=True, exist_ok=True)

    def documents(self) -> None:
        for rel, doc in self.spec.documents(self.placement, self.status.engine):
            write_json(self.out / rel, doc)

    def finish(self) -> None:
        if self.groups is not None:
            self.status.telemetry = self.groups.helper_problem()
        shutil.rmtree(self.out / names.AIPERF_TMP, ignore_errors=True)
        self.status.stop_s = round(self.ctx.clock() - self.stopping_since, 2)
        write_json(self.out / names.STATUS_JSON, self.status.as_dict())

    # ---- the cleanup's budgets: a cancel's stop fits in GitHub's window

    def left(self, normal_s: float) -> float:
        if self.ctx.cancelled is None:
            return normal_s
        return max(bud.CANCEL_STOP_S - (self.ctx.clock() - self.stopping_since), 1.0)

    def grace(self) -> float:
        return min(self.ctx.stop_grace_s, bud.CANCEL_GRACE_S) if self.ctx.cancelled else self.ctx.stop_grace_s

    def sweep(self) -> None:
        swept = stop_labelled(self.spec.label, "", budget_s=self.left(30.0), grace_s=0.5)
        if swept.stopped():
            self.say(f"also stopped what carried the label {self.spec.label}: {', '.join(swept.stopped())}")
        for p in swept.problems:
            self.say(f"cleanup: {p}")

    # ---- the phases

    def run(self, stack: ExitStack) -> None:
        spec, st = self.spec, self.status
        stack.callback(self.sweep)
        # what an earlier attempt of this job, or any earlier job of this runner, left behind when the
        # machine or the runner crashed (no cleanup step ran) would hold GPUs, ports, names; a runner runs
        # one job at a time, so everything carrying its name now is stale
        swept = stop_labelled(spec.label, self.ctx.runner, budget_s=30.0, grace_s=2.0)
        if swept.stopped():
            self.say(f"stopped what an earlier job of this runner left: {', '.join(swept.stopped())}")
        if not isinstance(spec.placement, Local):
            alloc = Allocation(spec.placement, self.out, self.marks, self.say, self.ctx.poll_s, self.ctx.pause)
            stack.callback(lambda: alloc.cancel(self.left(60.0)))
            st.phase = spec.placement.phase
            slack = 60.0 if isinstance(spec.placement, SallocAllocation) else 0.0   # salloc --immediate ends first
            grant = alloc.wait(spec.budget.queue_s + slack, st)
            self.values, self.placement = grant.values, grant.placement
            if grant.placement is not None:
                self.documents()
            st.phase = Phase.START
        self.groups = groups = stack.enter_context(Groups(self.out, self.marks, self.say, self.grace,
                                                          lambda: self.left(60.0)))
        if spec.check is not None:
            self.node_check(spec.check)
        if spec.image is not None:
            st.image_import_s = round(self.image(spec.image.filled(self.values), groups), 1)
        if spec.version is not None:
            st.engine = self.version(spec.version)
            self.documents()
        if spec.telemetry is not None:
            self.sampler(spec.telemetry.filled(self.values), groups)
        st.phase = Phase.START
        services: list[Running] = []
        started_at = None
        for proc in spec.services:
            p = proc.filled(self.values)
            self.say(f"starting {p.name}: {p.argv[0]} ... (log: {self.out / p.log})")
            services.append(groups.start(p, Phase.START))
            started_at = self.ctx.clock() if started_at is None else started_at
        st.phase = Phase.READY
        self.ready(services)
        st.ready_s = round(self.ctx.clock() - (started_at or 0.0), 1)   # from the engine's start
        self.hooks(spec.before_client, "before")
        for client in spec.clients:
            st.phase = Phase.CLIENT
            self.client(client, services, groups)
        self.hooks(spec.after_client, "after")

    def node_check(self, check: NodeCheck) -> None:
        self.status.phase = Phase.CHECK
        proc = check.proc.filled(self.values)
        text, _ = run_to_end(proc, self.marks, 120.0, "the node check")
        (self.out / proc.log).write_text(text, encoding="utf-8")
        problems = check.judge(text)
        if problems:
            raise JobFailed(Phase.CHECK, "the node is not ready for this point: " + "; ".join(problems),
                            "\n".join(text.splitlines()[-10:]))
        self.say("node check passed: GPUs, model and disk")

    def image(self, proc: Proc, groups: Groups) -> float:
        """The image import to its end (among the groups meanwhile, so a cancel stops it); its seconds,
        which count against the readiness deadline."""
        self.status.phase = Phase.IMAGE
        deadline = self.spec.budget.ready_s
        self.say(f"importing the image once for the job (log: {self.out / proc.log})")
        run = groups.start(proc, Phase.IMAGE)
        start = self.ctx.clock()
        while run.popen.poll() is None:
            if self.ctx.clock() - start > deadline:
                raise JobFailed(Phase.IMAGE, f"the image import did not finish within {deadline:g} s (the readiness "
                                "deadline)", tail_file(run.log_path))
            self.ctx.pause(self.ctx.poll_s)
        groups.forget(run)
        took = self.ctx.clock() - start
        if run.popen.returncode != 0:
            raise JobFailed(Phase.IMAGE, f"the image import exited with code {run.popen.returncode}",
                            tail_file(run.log_path))
        self.say(f"image ready after {took:.0f} s: {tail_file(run.log_path, 1).strip()[:200]}")
        return took

    def version(self, check: VersionCheck) -> dict:
        """The engine's version command where the engine will run (a docker pull of the image counts
        against the readiness deadline, as Slurm's import does); a release the recipe does not declare is
        refused before the engine starts."""
        self.status.phase = Phase.VERSION
        proc = check.proc.filled(self.values)
        text, code = run_to_end(proc, self.marks, self.spec.budget.ready_s, "the version command")
        (self.out / proc.log).write_text(f"$ {' '.join(proc.argv)}\n{text}", encoding="utf-8")
        info, problems = check.judge(text)
        info["exit_code"] = code
        if problems:
            raise JobFailed(Phase.VERSION, "; ".join(problems), "\n".join(text.splitlines()[-10:]))
        self.say(f"engine {info['name']} {info['version'] or '(version not printed; the recipe declares none)'}")
        return info

    def sampler(self, proc: Proc, groups: Groups) -> None:
        """GPU telemetry beside the job, never failing it."""
        (self.out / names.GPU_TELEMETRY_META).write_text(json.dumps(
            {"utc_offset_s": time.localtime().tm_gmtoff, "argv": list(proc.argv)}) + "\n", encoding="utf-8")
        try:
            groups.start(proc, Phase.START, helper=True)
        except JobFailed as exc:
            self.say(f"GPU telemetry not recorded: {exc.message}")
            return
        self.say(f"sampling GPU telemetry into {self.out / proc.log}")

    @staticmethod
    def _dead(services: list[Running]) -> Running | None:
        return next((r for r in services if r.popen.poll() is not None), None)

    def ready(self, services: list[Running]) -> None:
        by_name = {r.proc.name: r for r in services}

        def dead() -> tuple[str, int] | None:
            r = self._dead(services)
            return None if r is None else (r.proc.name, r.popen.returncode)

        probe = Probe(clock=self.ctx.clock, sleep=self.ctx.pause, dead=dead, say=self.say,
                      get=lambda url: (lambda a: a if isinstance(a, tuple) else None)(fetch(url, 5.0)),
                      tail=lambda name: tail_file(by_name[name].log_path) if name in by_name else "",
                      what=lambda name: by_name[name].proc.called if name in by_name else name)
        ready_s, imported = self.spec.budget.ready_s, self.status.image_import_s
        checks = [replace(c, url=fill(c.url, self.values)) for c in self.spec.ready]
        try:
            wait_ready(checks, round(max(ready_s - (imported or 0.0), 1.0), 1), probe)
        except NotReady as exc:
            less = f" ({ready_s:g} s less the image import's {imported:g} s)" if imported else ""
            raise JobFailed(Phase.READY, exc.message + less, exc.tail) from None

    def hooks(self, hooks: tuple[Hook, ...], side: str) -> None:
        saved: dict[str, None] = {}
        for h in hooks:
            url = fill(h.url, self.values)
            if isinstance(h, Post):
                self.status.phase = Phase.PROFILE
                self.say(f"POST {url}")
                problem = post(url, h.body, h.timeout_s)
                if problem:
                    raise JobFailed(Phase.PROFILE, problem)
            elif isinstance(h, Snapshot):
                self.snapshot(url, h)
                saved[h.folder] = None
        for folder in saved:
            self.say(f"engine metrics saved in {self.out / folder}")

    def snapshot(self, url: str, h: Snapshot) -> None:
        """GET into its file; an unanswered or refused GET leaves the file out and says why in `<name>.error`
        (the acceptance step judges what is missing)."""
        where = self.out / h.folder
        where.mkdir(parents=True, exist_ok=True)
        answer = fetch(url, h.timeout_s)
        if isinstance(answer, str):
            (where / f"{h.name}.error").write_text(f"GET {url} got no answer: {answer}\n", encoding="utf-8")
        elif answer[0] >= 400:
            (where / f"{h.name}.error").write_text(f"GET {url} answered {answer[0]}\n", encoding="utf-8")
        else:
            (where / h.name).write_text(answer[1], encoding="utf-8")

    def client(self, client: ClientRun, services: list[Running], groups: Groups) -> None:
        proc = client.proc.filled(self.values)
        self.say(f"running the client: {' '.join(proc.argv[:2])} ... (log: {self.out / proc.log})")
        run = groups.start(proc, Phase.CLIENT)
        start = last_say = self.ctx.clock()
        while True:
            code = run.popen.poll()
            if code is not None:
                self.status.client_s = round((self.status.client_s or 0.0) + self.ctx.clock() - start, 1)
                self.seal(run, client.exports)
                groups.forget(run)
                if code != 0:
                    raise JobFailed(Phase.CLIENT, f"{client.program} exited with code {code}", tail_file(run.log_path))
                # AIPerf 0.13 can exit 0 after an internal failure (seen: ZMQ socket paths too long)
                missing = [name for name in client.expects if not (self.out / name).is_file()]
                if missing:
                    raise JobFailed(Phase.CLIENT, f"{client.program} exited 0 but did not write {', '.join(missing)}",
                                    tail_file(run.log_path))
                return
            died = self._dead(services)
            if died is not None:
                raise JobFailed(Phase.CLIENT, f"{died.proc.called} exited with code {died.popen.returncode} during the "
                                "benchmark", tail_file(died.log_path))
            now = self.ctx.clock()
            if now - start > client.limit_s:
                raise JobFailed(Phase.CLIENT, f"{proc.called} did not finish within {client.limit_s:g} s",
                                tail_file(run.log_path))
            if now - last_say >= self.ctx.progress_every_s:
                last = tail_file(run.log_path, 1).strip()[:160] or "(no output yet)"
                self.say(f"client running for {now - start:.0f} s (limit {client.limit_s:g} s); client log: {last}")
                last_say = now
            self.ctx.pause(self.ctx.poll_s)

    def seal(self, run: Running, exports: tuple[str, ...]) -> None:
        """The client exited: stop what it left in its process group (nothing may write its exports from now
        on), then hash its export folders into the job directory's record (seal.py)."""
        import os

        from ci_tools.runner.seal import seal

        try:
            os.killpg(run.popen.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        if not exports:
            return
        try:
            digest = seal(self.out, exports, self.say)
        except OSError as exc:
            raise JobFailed(Phase.CLIENT, f"cannot record the hashes of the client's exports in {self.out}: {exc}") \
                from None
        if self.ctx.on_sealed is not None:
            self.ctx.on_sealed(digest)


def write_status(out: Path, status: Status | Mapping) -> None:
    """status.json of a job that ended outside the supervisor (after it, or without it: `runner cleanup`)."""
    write_json(out / names.STATUS_JSON, status.as_dict() if isinstance(status, Status) else dict(status))
