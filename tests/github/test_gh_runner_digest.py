"""`runner digest` against the fake GitHub: pagination, request budget, summary, outputs, Slack."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

from ci_tools.cli.runner import GITHUB_OUTPUTS
from gh_scenarios import REPO_ROOT
from tests.conftest import assert_golden
from test_gh_cli import ci, outputs

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "runner"
EMPTY_QUEUE = "\n### Queue\n\nNo job is waiting for or running on a self-hosted runner.\n"


def register(fake):
    """The repository's runners.yaml lists b300-nv_00/01, gb300-nv_0..3 (under two labels) and mi355x-amd_00/01."""
    fake.add_runner("b300-nv_00", busy=True, labels=("self-hosted", "b300"))
    fake.add_runner("b300-nv_01", labels=("self-hosted", "b300"))
    for name in ("mi355x-amd_00", "mi355x-amd_01"):
        fake.add_runner(name, labels=("self-hosted", "mi355x"))
    for i in range(3):
        fake.add_runner(f"gb300-nv_{i}", status="offline", labels=("self-hosted", "gb300"))
    fake.add_runner("old-box", status="offline")


def test_all_pages_are_read_once(fake, gh):
    register(fake)
    fake.page_size = 3           # 8 runners: three pages
    assert [x["name"] for x in gh.runners()] == [x["name"] for x in fake.runners]
    gh.runners()
    assert gh.log.count == 3 and fake.requests == [
        f"GET /repos/{fake.repo}/actions/runners?per_page=100",
        f"GET /repos/{fake.repo}/actions/runners?page=2&per_page=100",
        f"GET /repos/{fake.repo}/actions/runners?page=3&per_page=100"]


@pytest.fixture
def slack():
    posts: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_POST(self):
            posts.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            status, body = (200, b"ok") if len(posts) == 1 else (400, b"invalid_payload")
            self.send_response(status)
            self.end_headers()
            self.wfile.write(body)

    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/hook", posts
    server.shutdown()
    server.server_close()


def digest_env(fake, env, tmp_path, **extra):
    return {"RUNNERS_TOKEN": "admin", "GITHUB_API_URL": fake.url, "GITHUB_OUTPUT": env["GITHUB_OUTPUT"],
            "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"), "GITHUB_RUN_ID": "5", **extra}


def test_cli_writes_the_summary_and_outputs(fake, env, tmp_path):
    register(fake)
    e = digest_env(fake, env, tmp_path)
    r = ci(["runner", "digest", "--repo", fake.repo, "--format", "github", "--date", "2026-11-30"], e)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "summary.md").read_text() == (GOLDEN / "digest-problems.md").read_text() + EMPTY_QUEUE
    assert outputs(e) == {"offline": "4", "missing": "1", "busy": "1", "total": "8",
                          "down-labels": "cluster:gb300-nv,gb300", "healthy": "false", "queued": "0"}
    assert tuple(outputs(e)) == GITHUB_OUTPUTS["runner digest"]   # the registry the contract test reads
    assert "GitHub API requests: 3" in r.stdout
    assert fake.requests == [f"GET /repos/{fake.repo}/actions/runners?per_page=100",
                             f"GET /repos/{fake.repo}/actions/runs?per_page=100&status=queued",
                             f"GET /repos/{fake.repo}/actions/runs?per_page=100&status=in_progress"]


def point(exp, prio, hours, runner="b300", gpus=8):
    return {"runner": runner, "exp-name": exp, "conc": 64, "priority": prio, "gpus": gpus,
            "seconds": int(hours * 3600), "gpu-hours": gpus * hours}


def queued_fleet(fake):
    """Two PRs' sweeps and a push to main, each with its recorded plan: one b300 job running on
    b300-nv_00, three waiting for b300 and one for gb300 (which has no online runner)."""
    from ci_tools.runner.queue import job_title

    register(fake)
    sweeps = {
        11: dict(prs=(7,), status="in_progress", points=[point("dsr1-fp4", "2", 2), point("dsr1-fp8", "1.5", 1)],
                 running=[0]),
        12: dict(prs=(8,), status="queued", points=[point("gptoss", "1.5", 0.5), point("g", "4", 1, "gb300", 4)],
                 running=[]),
        13: dict(prs=(), status="queued", points=[point("main-canary", "3", 1)], running=[], event="push",
                 branch="main"),
    }
    for rid, sw in sweeps.items():
        fake.add_run(rid, head_sha=f"{rid:040d}", status=sw["status"], conclusion=None, pull_requests=sw["prs"],
                     event=sw.get("event", "pull_request"), branch=sw.get("branch", "feature"),
                     created_at=f"2026-11-30T0{rid - 10}:00:00Z")
        fake.add_artifact_files(rid, "changelog-metadata", {"plan.json": json.dumps({"points": sw["points"]}).encode()})
        fake.add_job(rid, "plan", labels=("ubuntu-latest",))
        for i, p in enumerate(sw["points"]):
            fake.add_job(rid, f"bucket-0 / {job_title(p)}", status="in_progress" if i in sw["running"] else "queued",
                         labels=("self-hosted", p["runner"]), created_at=f"2026-11-30T0{rid - 10}:00:00Z",
                         started_at="2026-11-30T11:00:00Z")
    # a finished run is not asked about
    fake.add_run(10, head_sha="0" * 40, status="completed")


def test_the_queue_of_each_family_from_the_active_runs_and_their_plans(fake, env, tmp_path):
    queued_fleet(fake)
    e = digest_env(fake, env, tmp_path)
    r = ci(["runner", "digest", "--repo", fake.repo, "--format", "github", "--date", "2026-11-30",
            "--now", "2026-11-30T12:00"], e)
    assert r.returncode == 0, r.stderr
    assert_golden(GOLDEN / "digest-queue-e2e.md", (tmp_path / "summary.md").read_text())
    assert outputs(e)["queued"] == "4"
    runs = [q for q in fake.requests if "/actions/runs/" in q]
    # every active run's jobs; the plan (artifact list and zip) of each run with a job on the fleet
    assert sorted(q.split("?")[0] for q in runs) == sorted(
        f"GET /repos/{fake.repo}/actions/runs/{rid}/{what}" for rid in (11, 12, 13) for what in ("jobs", "artifacts"))
    assert sum("/actions/artifacts/" in q for q in fake.requests) == 3


def test_the_queue_needs_only_actions_read_beside_the_runners_token(fake, env, tmp_path):
    queued_fleet(fake)
    fake.grant("actions-only", "github_token", {"actions": "read"})
    e = {**digest_env(fake, env, tmp_path), "GITHUB_TOKEN": "actions-only"}
    r = ci(["runner", "digest", "--repo", fake.repo, "--format", "json", "--now", "2026-11-30T12:00"], e)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["outputs"]["queued"] == "4" and fake.refused == []


def test_json_holds_the_runner_table_and_the_queue_of_the_markdown(fake, env, tmp_path):
    """The digest for tools: the same runners and the same queue, in the same order, as the tables
    people read (digest-queue-e2e.md)."""
    queued_fleet(fake)
    r = ci(["runner", "digest", "--repo", fake.repo, "--format", "json", "--now", "2026-11-30T12:00"],
           digest_env(fake, env, tmp_path))
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    labels = {row["label"]: row for row in doc["runners"]["labels"]}
    assert labels["b300"] == {"label": "b300", "online": 2, "total": 2, "offline": [], "missing": [],
                              "busy": ["b300-nv_00"], "idle": ["b300-nv_01"]}
    assert labels["gb300"]["missing"] == ["gb300-nv_3"] and doc["runners"]["down-labels"] == ["cluster:gb300-nv", "gb300"]
    assert doc["runners"]["unlisted"] == ["old-box"]
    q = doc["queue"]
    assert q["queued"] == 4 == int(doc["outputs"]["queued"])
    b300 = next(f for f in q["families"] if f["family"] == "b300")
    assert [(e["source"], e["priority"], e["gpu-hours"], e["gpu-hours-ahead"], e["start"]) for e in b300["queued"]] == [
        ("push main", "3", 8.0, 8.0, "2026-11-30T12:00:00+00:00"),
        ("#7", "1.5", 8.0, 16.0, "2026-11-30T13:00:00+00:00"),
        ("#8", "1.5", 4.0, 24.0, "2026-11-30T13:00:00+00:00")]
    assert b300["gpu-hours-queued"] == 20.0 and len(b300["running"]) == 1 and b300["runners"] == 2
    gb300 = next(f for f in q["families"] if f["family"] == "gb300")
    assert [(e["source"], e["start"]) for e in gb300["queued"]] == [("#8", None)]


def test_an_unreadable_plan_is_said_and_its_jobs_shown_without_gpu_hours(fake, env, tmp_path):
    queued_fleet(fake)
    fake.add_artifact_files(12, "changelog-metadata", {"plan.json": b"{not json"})
    r = ci(["runner", "digest", "--repo", fake.repo, "--now", "2026-11-30T12:00"], digest_env(fake, env, tmp_path))
    assert r.returncode == 0, r.stderr
    assert "run 12: its plan could not be read" in r.stdout and "| #8 | `gptoss c64` | 1.5 | ? |" in r.stdout


def test_slack_gets_the_digest_when_runners_are_down_and_a_refusal_fails(fake, env, tmp_path, slack):
    url, posts = slack
    register(fake)
    e = digest_env(fake, env, tmp_path, SLACK_WEBHOOK_URL=url)
    r = ci(["runner", "digest", "--repo", fake.repo, "--format", "markdown", "--date", "2026-11-30"], e)
    assert r.returncode == 0, r.stderr
    assert [p["text"] for p in posts] == [(GOLDEN / "digest-problems.md").read_text() + EMPTY_QUEUE]
    r = ci(["runner", "digest", "--repo", fake.repo, "--date", "2026-11-30"], e)
    assert r.returncode == 1 and "Slack refused the runner digest: HTTP 400" in r.stderr
    assert "Traceback" not in r.stderr


def test_nothing_is_posted_when_all_is_well(fake, env, tmp_path, slack):
    url, posts = slack
    for name in ("b300-nv_00", "b300-nv_01", *(f"gb300-nv_{i}" for i in range(4)), "mi355x-amd_00", "mi355x-amd_01"):
        fake.add_runner(name)
    e = digest_env(fake, env, tmp_path, SLACK_WEBHOOK_URL=url)
    r = ci(["runner", "digest", "--repo", fake.repo, "--format", "github"], e)
    assert r.returncode == 0, r.stderr
    assert posts == [] and outputs(e)["healthy"] == "true"
    assert "All 8 self-hosted runners" in (tmp_path / "summary.md").read_text()


def test_a_failing_api_is_a_clean_error(fake, env, tmp_path):
    fake.fail("GET", "/actions/runners", 403, times=10, body={"message": "Resource not accessible by integration"})
    r = ci(["runner", "digest", "--repo", fake.repo], digest_env(fake, env, tmp_path))
    assert r.returncode == 1 and "HTTP 403" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("args, message", [
    (["--runners", "nope.yaml"], "runners file not found"),
    (["--format", "github"], "GITHUB_STEP_SUMMARY"),
])
def test_usage_errors(fake, env, tmp_path, args, message):
    register(fake)
    e = {k: v for k, v in digest_env(fake, env, tmp_path).items() if not (args[0] == "--format" and k == "GITHUB_STEP_SUMMARY")}
    r = ci(["runner", "digest", "--repo", fake.repo, *args], e, cwd=REPO_ROOT)
    assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr

