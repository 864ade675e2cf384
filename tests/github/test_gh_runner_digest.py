"""`runner digest` against the fake GitHub: pagination, request budget, summary, outputs, Slack."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

from ci_tools.cli.runner import GITHUB_OUTPUTS
from gh_scenarios import REPO_ROOT
from test_gh_cli import ci, outputs

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "runner"


def register(fake):
    """The repository's runners.yaml lists b300-nv_00/01 and gb300-nv_0..3 (under two labels)."""
    fake.add_runner("b300-nv_00", busy=True, labels=("self-hosted", "b300"))
    fake.add_runner("b300-nv_01", labels=("self-hosted", "b300"))
    for i in range(3):
        fake.add_runner(f"gb300-nv_{i}", status="offline", labels=("self-hosted", "gb300"))
    fake.add_runner("old-box", status="offline")


def test_all_pages_are_read_once(fake, gh):
    register(fake)
    fake.page_size = 2
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
    assert (tmp_path / "summary.md").read_text() == (GOLDEN / "digest-problems.md").read_text()
    assert outputs(e) == {"offline": "4", "missing": "1", "busy": "1", "total": "6",
                          "down-labels": "cluster:gb300-nv,gb300", "healthy": "false"}
    assert tuple(outputs(e)) == GITHUB_OUTPUTS["runner digest"]   # the registry the contract test reads
    assert "GitHub API requests: 1" in r.stdout
    assert fake.requests == [f"GET /repos/{fake.repo}/actions/runners?per_page=100"]


def test_slack_gets_the_digest_when_runners_are_down_and_a_refusal_fails(fake, env, tmp_path, slack):
    url, posts = slack
    register(fake)
    e = digest_env(fake, env, tmp_path, SLACK_WEBHOOK_URL=url)
    r = ci(["runner", "digest", "--repo", fake.repo, "--format", "markdown", "--date", "2026-11-30"], e)
    assert r.returncode == 0, r.stderr
    assert [p["text"] for p in posts] == [(GOLDEN / "digest-problems.md").read_text()]
    r = ci(["runner", "digest", "--repo", fake.repo, "--date", "2026-11-30"], e)
    assert r.returncode == 1 and "Slack refused the runner digest: HTTP 400" in r.stderr
    assert "Traceback" not in r.stderr


def test_nothing_is_posted_when_all_is_well(fake, env, tmp_path, slack):
    url, posts = slack
    for name in ("b300-nv_00", "b300-nv_01", *(f"gb300-nv_{i}" for i in range(4))):
        fake.add_runner(name)
    e = digest_env(fake, env, tmp_path, SLACK_WEBHOOK_URL=url)
    r = ci(["runner", "digest", "--repo", fake.repo, "--format", "github"], e)
    assert r.returncode == 0, r.stderr
    assert posts == [] and outputs(e)["healthy"] == "true"
    assert "All 6 self-hosted runners" in (tmp_path / "summary.md").read_text()


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

