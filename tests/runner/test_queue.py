"""The runner digest's queue view (ci_tools/runner/queue.py): matching, order, GPU-hours ahead and
estimated starts as a table, and the Markdown as a golden file."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from ci_tools.github.models import Job
from ci_tools.runner.queue import build_queue, job_title, render_markdown
from tests.conftest import assert_golden

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "runner"
NOW = datetime(2026, 11, 30, 12, 0, tzinfo=timezone.utc)
T = "2026-11-30T{}:00Z"


def point(exp, prio, hours=1.0, gpus=8, runner="b300", conc=4):
    return {"runner": runner, "exp-name": exp, "conc": conc, "priority": prio, "gpus": gpus,
            "seconds": int(hours * 3600), "gpu-hours": round(gpus * hours, 2)}


def job(p, status="queued", created="10:00", started=None, prefix="bucket-1 / ", labels=None):
    return Job(name=prefix + job_title(p), status=status, labels=tuple(labels or ["self-hosted", p["runner"]]),
               created_at=T.format(created), started_at=T.format(started) if started else "")


def run(rid, jobs, points, pr=None, event="pull_request", branch="feature"):
    return {"id": rid, "event": event, "head_branch": branch,
            "pull_requests": [{"number": pr}] if pr else [], "jobs": jobs, "points": points}


def at(h: float) -> datetime:
    return NOW + timedelta(hours=h)


A, B, C = point("a", "2.5"), point("b", "1.5"), point("c", "1.5", hours=2)
RUNNING = point("r", "3", hours=2)


# (runs, runners per family) -> the b300 queue as (job exp, source, priority, GPU-h, GPU-h ahead, start, lower bound)
CASES = {
    "one job, an idle runner: starts now": (
        [run(1, [job(A)], [A], pr=7)], {"b300": 1},
        [("a", "#7", "2.5", 8.0, 0.0, at(0), False)]),
    "higher priority first, whatever the order of runs": (
        [run(1, [job(B)], [B], pr=7), run(2, [job(A)], [A], pr=8)], {"b300": 1},
        [("a", "#8", "2.5", 8.0, 0.0, at(0), False), ("b", "#7", "1.5", 8.0, 8.0, at(1), False)]),
    "equal priority: the older job first": (
        [run(1, [job(C, created="11:00")], [C], pr=7), run(2, [job(B, created="10:30")], [B], pr=8)], {"b300": 1},
        [("b", "#8", "1.5", 8.0, 0.0, at(0), False), ("c", "#7", "1.5", 16.0, 8.0, at(1), False)]),
    "equal priority and time: the older run first": (
        [run(2, [job(C)], [C]), run(1, [job(B)], [B])], {"b300": 1},
        [("b", "pull_request feature", "1.5", 8.0, 0.0, at(0), False),
         ("c", "pull_request feature", "1.5", 16.0, 8.0, at(1), False)]),
    "two runners share the queue": (
        [run(1, [job(A), job(B), job(C)], [A, B, C], pr=7)], {"b300": 2},
        [("a", "#7", "2.5", 8.0, 0.0, at(0), False), ("b", "#7", "1.5", 8.0, 8.0, at(0), False),
         ("c", "#7", "1.5", 16.0, 16.0, at(1), False)]),
    "a running job holds its runner until its planned end": (
        [run(1, [job(RUNNING, "in_progress", started="11:00"), job(A)], [RUNNING, A], pr=7)], {"b300": 1},
        [("a", "#7", "2.5", 8.0, 8.0, at(1), False)]),
    "a running job past its planned time: the runner counts as free now": (
        [run(1, [job(RUNNING, "in_progress", started="08:00"), job(A)], [RUNNING, A], pr=7)], {"b300": 1},
        [("a", "#7", "2.5", 8.0, 0.0, at(0), False)]),
    "a running job without a start time counts from now": (
        [run(1, [job(RUNNING, "in_progress"), job(A)], [RUNNING, A])], {"b300": 1},
        [("a", "pull_request feature", "2.5", 8.0, 16.0, at(2), False)]),
    "no online runner: no estimate": (
        [run(1, [job(A), job(B)], [A, B], pr=7)], {"b300": 0},
        [("a", "#7", "2.5", 8.0, 0.0, None, False), ("b", "#7", "1.5", 8.0, 8.0, None, False)]),
    "a job of no plan point: priority from its name, unknown duration, later starts lower bounds": (
        [run(1, [job(A), job(B)], [B], pr=7)], {"b300": 1},
        [("a", "#7", "2.5", None, 0.0, at(0), False), ("b", "#7", "1.5", 8.0, 0.0, at(0), True)]),
    "a run without a recorded plan": (
        [run(1, [job(A)], [], pr=7)], {"b300": 1},
        [("a", "#7", "2.5", None, 0.0, at(0), False)]),
    "a running job of unknown duration makes every start a lower bound": (
        [run(1, [job(RUNNING, "in_progress", started="11:00"), job(A)], [A])], {"b300": 1},
        [("a", "pull_request feature", "2.5", 8.0, 0.0, at(0), True)]),
    "a job without a priority comes last": (
        [run(1, [job(point("n", None)), job(B)], [point("n", None), B])], {"b300": 1},
        [("b", "pull_request feature", "1.5", 8.0, 0.0, at(0), False),
         ("n", "pull_request feature", None, 8.0, 8.0, at(1), False)]),
    "completed jobs and GitHub-hosted jobs are not queued": (
        [run(1, [job(A, "completed"), job(B, labels=["ubuntu-latest"]), job(C)], [A, B, C])], {"b300": 1},
        [("c", "pull_request feature", "1.5", 16.0, 0.0, at(0), False)]),
    "a job waiting on an environment is queued": (
        [run(1, [job(A, "waiting")], [A])], {"b300": 1},
        [("a", "pull_request feature", "2.5", 8.0, 0.0, at(0), False)]),
    "two jobs of one title take two points, not one twice": (
        [run(1, [job(A), job(A)], [A, A])], {"b300": 1},
        [("a", "pull_request feature", "2.5", 8.0, 0.0, at(0), False),
         ("a", "pull_request feature", "2.5", 8.0, 8.0, at(1), False)]),
    "a push to main is named by event and branch": (
        [run(1, [job(A)], [A], event="push", branch="main")], {"b300": 1},
        [("a", "push main", "2.5", 8.0, 0.0, at(0), False)]),
    "a job without the calling job's prefix matches as well": (
        [run(1, [job(A, prefix="")], [A], pr=3)], {"b300": 1},
        [("a", "#3", "2.5", 8.0, 0.0, at(0), False)]),
    "more jobs running than runners online: the earliest to end free the runner": (
        [run(1, [job(point("r1", "3", hours=3), "in_progress", started="12:00"),
                 job(point("r2", "3", hours=1), "in_progress", started="12:00"), job(A)],
             [point("r1", "3", hours=3), point("r2", "3", hours=1), A])], {"b300": 1},
        [("a", "pull_request feature", "2.5", 8.0, 32.0, at(1), False)]),
    "another family's jobs are not in this one's queue": (
        [run(1, [job(point("g", "9", runner="gb300")), job(A)], [point("g", "9", runner="gb300"), A])],
        {"b300": 1, "gb300": 1},
        [("a", "pull_request feature", "2.5", 8.0, 0.0, at(0), False)]),
    "a label runners.yaml does not list is not the fleet's": (
        [run(1, [job(point("x", "9", runner="h100"))], [point("x", "9", runner="h100")])], {"b300": 1},
        []),
}


@pytest.mark.parametrize("runs, runners, expected", CASES.values(), ids=CASES.keys())
def test_queue(runs, runners, expected):
    q = build_queue(runs, runners, NOW)
    [b300] = [f for f in q.families if f.family == "b300"]
    got = [(e.job.split(" ")[3], e.source, e.priority, e.gpu_hours, e.gpu_hours_ahead, e.start, e.lower_bound)
           for e in b300.queued]
    assert got == expected
    assert q.queued == sum(len(f.queued) for f in q.families)


def test_every_family_of_runners_yaml_is_shown_and_unmatched_jobs_counted():
    q = build_queue([run(1, [job(A), job(point("g", "1", runner="gb300"))], [])], {"b300": 1, "gb300": 0}, NOW)
    assert [f.family for f in q.families] == ["b300", "gb300"] and q.unmatched == 2 and q.queued == 2


def test_job_title_is_benchmark_yml_s_job_name():
    """benchmark.yml's `name:` expression, rendered as GitHub renders null (empty) and booleans."""
    import yaml

    wf = yaml.safe_load((Path(__file__).resolve().parents[2] / ".github" / "workflows" / "benchmark.yml").read_text())
    assert wf["jobs"]["run"]["name"] == ("p${{ matrix.row.priority }} | ${{ matrix.row.runner }} "
                                         "${{ matrix.row.exp-name }} c${{ matrix.row.conc }}")
    assert job_title(A) == "p2.5 | b300 a c4"
    assert job_title({"runner": "b300", "conc": 8}) == "p | b300  c8"


def test_markdown_golden():
    runs = [run(1, [job(RUNNING, "in_progress", started="11:00"), job(B)], [RUNNING, B], pr=7),
            run(2, [job(A), job(point("z", "0.5"))], [A], event="push", branch="main"),
            run(3, [job(point("g", "1", runner="gb300"))], [point("g", "1", runner="gb300")], pr=9)]
    q = build_queue(runs, {"b300": 1, "gb300": 0, "h200": 2}, NOW)
    assert_golden(GOLDEN / "digest-queue.md", render_markdown(q, NOW))


def test_markdown_of_an_empty_queue():
    assert "No job is waiting" in render_markdown(build_queue([], {"b300": 1}, NOW), NOW)
