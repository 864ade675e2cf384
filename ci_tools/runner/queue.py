"""The runner digest's queue view: per runner family, what waits, for which PR, at which priority, and
when it may start.

Pure: the repository's active workflow runs (queued or in progress, GitHub's run objects cut down to
what is used here), each with its jobs and the plan it recorded (`plan.json` points: runner, exp-name,
conc, priority, seconds, GPU-hours), the online runners per family and the time now in; a `Queue` out.

A job is matched to its plan point by its name: benchmark.yml names every job
`p<priority> | <runner> <exp-name> c<conc>` (GitHub puts the calling job's name and ` / ` before it
for a reusable workflow). A job whose name matches no point keeps the priority its name shows and
has no known duration; every estimate behind it is then a lower bound (shown with `≥`).

The order is the priority's (higher first; equal scores by when the job was created): the order
ci-tools asks for. GitHub documents no order among queued jobs (docs/maintainer.md, "Job priority"),
so the estimated start is what the plan's durations give if runners take jobs in that order: each
online runner of the family takes the next job when its current one ends (a job in progress ends
after its planned seconds from its start, never before now).
"""

from __future__ import annotations

import heapq
import re
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone
from decimal import Decimal, InvalidOperation
from typing import Any, Mapping, Sequence

from ci_tools.github.models import Job

# GitHub's job statuses before a runner takes the job (`waiting`: an environment's protection rule)
WAITING = ("queued", "waiting", "pending", "requested")
RUNNING = ("in_progress",)
TITLE = re.compile(r"p(?P<priority>\S*) \| (?P<runner>\S+) (?P<exp>.*) c(?P<conc>\S*)")


def job_title(point: Mapping[str, Any]) -> str:
    """The name benchmark.yml gives a plan point's job, as GitHub renders the expression (null: empty)."""
    def s(key: str) -> str:
        v = point.get(key)
        return "" if v is None else "true" if v is True else "false" if v is False else str(v)
    return f"p{s('priority')} | {s('runner')} {s('exp-name')} c{s('conc')}"


@dataclass(frozen=True)
class Entry:
    """One job of a family's queue (or one holding a runner now)."""
    job: str                       # the job's title (without the calling job's prefix)
    run_id: int
    source: str                    # "#123" for a PR's run, else "<event> <branch>"
    priority: str | None
    gpu_hours: float | None        # the plan's; None when the job matched no plan point
    gpu_hours_ahead: float = 0.0   # known GPU-hours queued or still running before it in its family
    start: datetime | None = None  # estimated start (queued) or actual start (running); None: no online runner
    lower_bound: bool = False      # a job before it has no known duration: the start is at the earliest this
    running: bool = False


@dataclass(frozen=True)
class FamilyQueue:
    family: str
    runners: int                   # online runners of the family
    running: tuple[Entry, ...]
    queued: tuple[Entry, ...]

    @property
    def gpu_hours_queued(self) -> float:
        return round(sum(e.gpu_hours or 0.0 for e in self.queued), 2)


@dataclass(frozen=True)
class Queue:
    families: tuple[FamilyQueue, ...]
    unmatched: int = 0             # active self-hosted jobs that matched no plan point

    @property
    def queued(self) -> int:
        return sum(len(f.queued) for f in self.families)


def _time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def _score(priority: str | None) -> Decimal | None:
    try:
        return Decimal(priority) if priority not in (None, "") else None
    except InvalidOperation:
        return None


def _source(run: Mapping[str, Any]) -> str:
    prs = [p.get("number") for p in run.get("pull_requests") or [] if isinstance(p, Mapping)]
    if prs and isinstance(prs[0], int):
        return f"#{prs[0]}"
    return f"{run.get('event') or '?'} {run.get('head_branch') or '?'}".strip()


def _family(job: Job, families: Sequence[str]) -> str | None:
    return next((label for label in job.labels if label in families), None)


@dataclass(frozen=True)
class _Job:
    family: str
    entry: Entry
    created: datetime | None
    seconds: float | None


def _jobs(run: Mapping[str, Any], families: Sequence[str]) -> tuple[list[_Job], int]:
    """The run's active self-hosted jobs, each matched to an unused plan point of the same title."""
    points: dict[str, list[Mapping[str, Any]]] = {}
    for p in run.get("points") or []:
        if isinstance(p, Mapping):
            points.setdefault(job_title(p), []).append(p)
    out, unmatched = [], 0
    for job in run.get("jobs") or []:
        status = job.status
        family = _family(job, families)
        if family is None or status not in WAITING + RUNNING:
            continue
        title = job.name.rsplit(" / ", 1)[-1]
        same = points.get(title) or []
        point = same.pop(0) if same else None
        unmatched += point is None
        m = TITLE.fullmatch(title)
        priority = point.get("priority") if point else (m["priority"] or None) if m else None
        gpu_hours = point.get("gpu-hours") if point else None
        seconds = point.get("seconds") if point else None
        running = status in RUNNING
        entry = Entry(job=title, run_id=int(run.get("id") or 0), source=_source(run),
                      priority=None if priority is None else str(priority),
                      gpu_hours=float(gpu_hours) if isinstance(gpu_hours, (int, float)) else None,
                      start=_time(job.started_at) if running else None, running=running)
        out.append(_Job(family, entry, _time(job.created_at),
                        float(seconds) if isinstance(seconds, (int, float)) and seconds >= 0 else None))
    return out, unmatched


def _order(j: _Job) -> tuple:
    score = _score(j.entry.priority)
    # higher score first, a job without a score last; then the older job, the older run, the name
    return (score is None, -(score or 0), j.created or datetime.max.replace(tzinfo=timezone.utc),
            j.entry.run_id, j.entry.job)


def _family_queue(family: str, runners: int, jobs: list[_Job], now: datetime) -> FamilyQueue:
    running = sorted((j for j in jobs if j.entry.running), key=lambda j: (j.entry.start or now, j.entry.job))
    waiting = sorted((j for j in jobs if not j.entry.running), key=_order)
    # when each runner is free: a running job ends `seconds` after its start (not before now). Once a
    # job of unknown duration is ahead, its runner counts as free now and every later start is a
    # lower bound.
    free: list[datetime] = []
    ahead, unknown = 0.0, False
    for j in running:
        if j.seconds is None:
            free.append(now)
            unknown = True
            continue
        end = max(now, (j.entry.start or now) + timedelta(seconds=j.seconds))
        free.append(end)
        if j.entry.gpu_hours is not None and j.seconds > 0:
            ahead += j.entry.gpu_hours * (end - now).total_seconds() / j.seconds
    # more jobs running than online runners (a runner went offline under its job, or labels share
    # machines): the earliest-free ones are the family's runners
    heap = sorted(free)[:runners] + [now] * max(0, runners - len(free))
    heapq.heapify(heap)
    queued = []
    for j in waiting:
        start = heapq.heappop(heap) if heap else None
        if start is not None:
            heapq.heappush(heap, start + timedelta(seconds=j.seconds or 0))
        queued.append(replace(j.entry, gpu_hours_ahead=round(ahead, 2), start=start,
                              lower_bound=unknown and start is not None))
        ahead += j.entry.gpu_hours or 0.0
        unknown = unknown or j.seconds is None
    return FamilyQueue(family, runners, tuple(j.entry for j in running), tuple(queued))


def build_queue(runs: Sequence[Mapping[str, Any]], runners: Mapping[str, int], now: datetime) -> Queue:
    """`runs`: active runs, each GitHub's run fields (`id`, `event`, `head_branch`, `pull_requests`) plus
    `jobs` (its jobs, `github.models.Job`: name, status, labels, created and started times) and `points`
    (its plan.json points, empty when it recorded none). `runners`: family -> online runners; every
    family of `runners` is shown, and jobs for labels outside it are not the fleet's."""
    families = sorted(runners)
    by_family: dict[str, list[_Job]] = {f: [] for f in families}
    unmatched = 0
    for run in runs:
        jobs, n = _jobs(run, families)
        unmatched += n
        for j in jobs:
            by_family[j.family].append(j)
    return Queue(tuple(_family_queue(f, int(runners[f]), by_family[f], now) for f in families), unmatched)


def _entry_dict(e: Entry) -> dict:
    return {"job": e.job, "run-id": e.run_id, "source": e.source, "priority": e.priority,
            "gpu-hours": e.gpu_hours, "gpu-hours-ahead": round(e.gpu_hours_ahead, 6),
            "start": e.start.isoformat() if e.start else None, "start-is-lower-bound": e.lower_bound}


def as_dict(q: Queue) -> dict:
    """The queue for tools (`runner digest --format json`): per family, what runs and what waits, in
    the order the estimate assumes; `start` is the estimate (ISO 8601, UTC), null without an online runner."""
    return {"queued": q.queued, "unmatched": q.unmatched,
            "families": [{"family": f.family, "runners": f.runners, "gpu-hours-queued": round(f.gpu_hours_queued, 6),
                          "running": [_entry_dict(e) for e in f.running],
                          "queued": [_entry_dict(e) for e in f.queued]} for f in q.families]}


# ---- rendering ------------------------------------------------------------------------------------

def _when(e: Entry, now: datetime) -> str:
    if e.start is None:
        return "– (no online runner)"
    if e.start <= now:
        return "≥ now" if e.lower_bound else "now"
    hours = (e.start - now).total_seconds() / 3600
    return f"{'≥ ' if e.lower_bound else ''}{e.start:%m-%d %H:%M} UTC (in {hours:.1f} h)"


def _gpu_h(v: float | None) -> str:
    return "?" if v is None else f"{v:.2f}"


def render_markdown(q: Queue, now: datetime) -> str:
    """The digest's queue section: one table per family that has jobs waiting or running."""
    busy = [f for f in q.families if f.queued or f.running]
    lines = ["### Queue", ""]
    if not busy:
        return "\n".join(lines + ["No job is waiting for or running on a self-hosted runner.", ""])
    lines.append(f"**{q.queued}** job{'' if q.queued == 1 else 's'} waiting for a self-hosted runner "
                 f"(at {now:%Y-%m-%d %H:%M} UTC). Estimated starts assume each family's online runners take "
                 "the jobs in priority order, each for its planned time; GitHub does not promise that order."
                 + (f" {q.unmatched} job{'' if q.unmatched == 1 else 's'} matched no recorded plan point: "
                    "GPU-hours `?`, later starts are lower bounds (`≥`)." if q.unmatched else ""))
    for f in busy:
        lines += ["", f"**`{f.family}`**: {f.runners} online runner{'' if f.runners == 1 else 's'}, "
                      f"{len(f.running)} running, {len(f.queued)} queued ({f.gpu_hours_queued:.2f} GPU-h)", ""]
        if not f.queued:
            continue
        lines += ["| # | PR | job | priority | GPU-h | GPU-h ahead | estimated start |",
                  "|---|---|---|---|---|---|---|"]
        for i, e in enumerate(f.queued, 1):
            m = TITLE.fullmatch(e.job)
            job = f"`{m['exp']} c{m['conc']}`" if m else f"`{e.job}`".replace("|", "\\|")
            lines.append(f"| {i} | {e.source} | {job} | {e.priority or '–'} | {_gpu_h(e.gpu_hours)} | "
                         f"{e.gpu_hours_ahead:.2f} | {_when(e, now)} |")
    return "\n".join(lines) + "\n"
