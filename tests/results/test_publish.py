"""`results publish`: the report onto a Pages branch of a real (local, bare) git repository: the first
report creates the branch, each PR keeps its newest runs, main's runs stay as the history, a push
that loses a race is redone, and nothing happens unless the repository enabled it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from ci_tools.cli import main
from ci_tools.prbot.card.decide import card_pr
from ci_tools.results import pages_flow


def git(*args, cwd=None) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def remote(tmp_path: Path) -> Path:
    bare = tmp_path / "origin.git"
    git("init", "-q", "--bare", str(bare))
    return bare


@pytest.fixture
def report(tmp_path: Path) -> Path:
    page = tmp_path / "report.html"
    page.write_text("<!DOCTYPE html><title>Sweep report</title>")
    return page


def files(remote: Path, branch: str = "gh-pages") -> list[str]:
    return sorted(git("--git-dir", str(remote), "ls-tree", "-r", "--name-only", branch).split())


def run(tmp_path: Path, *args, event=None, name="pull_request"):
    ev = tmp_path / "event.json"
    ev.write_text(json.dumps(event if event is not None else {"pull_request": {"number": 7}}))
    argv = ["results", "publish", *map(str, args), "--event-name", name, "--event-path", str(ev)]
    return CliRunner().invoke(click.Command("ci-tools", callback=lambda: main(argv)), [])


def test_reports_accumulate_per_pr_and_old_runs_are_pruned(tmp_path, remote, report):
    for run_id in (50, 51, 52, 53):
        r = run(tmp_path, report, "--enabled", "true", "--run-id", run_id, "--remote", remote)
        assert r.exit_code == 0, r.output
    assert "published" in r.output and "(pruned pr-7/run-50)" in r.output
    r = run(tmp_path, report, "--enabled", "true", "--run-id", 60, "--remote", remote,
            event={"ref": "refs/heads/main"}, name="push")
    assert r.exit_code == 0, r.output
    assert files(remote) == [".nojekyll", "index.html", "main/run-60/index.html", "pr-7/run-51/index.html",
                             "pr-7/run-52/index.html", "pr-7/run-53/index.html"]
    index = git("--git-dir", str(remote), "show", "gh-pages:index.html")
    assert index.index("main, run 60") < index.index("PR #7, run 53") < index.index("PR #7, run 51")


def test_off_unless_the_repository_enables_it_and_only_for_prs_and_main(tmp_path, remote, report):
    r = run(tmp_path, report, "--enabled", "", "--run-id", 5, "--remote", remote)
    assert r.exit_code == 0 and "not published: publishing is off" in r.output
    r = run(tmp_path, report, "--enabled", "true", "--run-id", 5, "--remote", remote,
            event={"ref": "refs/heads/feature"}, name="push")
    assert r.exit_code == 0 and "not published: a push to refs/heads/feature, not to main" in r.output
    assert git("--git-dir", str(remote), "branch", "--list") == ""   # nothing was pushed


def test_a_push_that_loses_a_race_is_redone(tmp_path, remote, report, monkeypatch):
    run(tmp_path, report, "--enabled", "true", "--run-id", 50, "--remote", remote)
    real = pages_flow._layout
    calls = []

    def racing(site, *a, **kw):
        out = real(site, *a, **kw)
        if not calls:  # another run publishes between our fetch and our push
            run(tmp_path, report, "--enabled", "true", "--run-id", 70, "--remote", remote, event={"pull_request": {"number": 8}})
        calls.append(1)
        return out

    monkeypatch.setattr(pages_flow, "_layout", racing)
    p = pages_flow.publish(report, remote=str(remote), branch="gh-pages", pr=7, run_id=51)
    assert p.published and p.attempts == 2
    assert {"pr-7/run-50/index.html", "pr-7/run-51/index.html", "pr-8/run-70/index.html"} <= set(files(remote))


def test_decide_says_whether_to_publish_without_a_report(tmp_path):
    r = run(tmp_path, tmp_path / "not-yet.html", "--decide", "--enabled", "true", "--run-id", 5)
    assert r.exit_code == 0 and r.output == "publish: pr-7/run-5\n"
    r = run(tmp_path, tmp_path / "not-yet.html", "--decide", "--enabled", "true", "--run-id", 5, "--format", "json",
            "--repository", "octo/bench")
    assert json.loads(r.output)["url"] == "https://octo.github.io/bench/pr-7/run-5/"     # the deployment's address
    r = run(tmp_path, tmp_path / "not-yet.html", "--decide", "--enabled", "false", "--run-id", 5)
    assert r.exit_code == 0 and r.output.startswith("not published: publishing is off")


def test_a_push_without_write_access_says_why(tmp_path, report):
    r = run(tmp_path, report, "--enabled", "true", "--run-id", 5, "--remote", tmp_path / "missing.git")
    assert r.exit_code == 1 and "cannot fetch gh-pages" in r.output and "Traceback" not in r.output


@pytest.mark.parametrize("run, want", [
    ({"id": 50, "event": "pull_request", "pull_requests": [{"number": 7}], "head_branch": "feat"}, (True, 7)),
    ({"id": 51, "event": "push", "pull_requests": [], "head_branch": "main"}, (True, None)),
    ({"id": 52, "event": "push", "pull_requests": [], "head_branch": "feat"}, (False, None)),
    ({"id": 53, "event": "pull_request", "pull_requests": [], "head_branch": "feat"}, (False, None)),  # a fork's own run
])
def test_which_page_a_finished_sweep_run_gets(run, want):
    payload = {"workflow_run": {"head_sha": "a" * 40, "html_url": "u", "status": "completed", "conclusion": "success",
                                "path": ".github/workflows/run-sweep.yml", "display_title": "x", **run}}
    ok, pr, why = pages_flow.target_of("workflow_run", payload, card_pr)
    assert (ok, pr) == want and (ok or why)


def test_closed_prs_pages_go_when_the_open_prs_are_known_and_stay_with_a_note_when_not(tmp_path, remote, report):
    from ci_tools.github.client import GitHubError

    for pr, run_id in ((8, 40), (9, 41)):
        pages_flow.publish(report, remote=str(remote), branch="gh-pages", pr=pr, run_id=run_id)

    def refused():
        raise GitHubError("GET /pulls: 403 Resource not accessible by integration", 403)

    kw = dict(enabled="true", event_name="pull_request", event_path=None, run_id=50, repository="o/r",
              branch="gh-pages", remote=str(remote), token=None, keep=3, pr_of_run=card_pr)
    ev = tmp_path / "ev.json"
    ev.write_text(json.dumps({"pull_request": {"number": 7}}))
    kept = pages_flow.run_publish(report, **{**kw, "event_path": ev}, open_prs=refused)
    assert kept.published and kept.pruned == [] and "pull-requests: read" in kept.notes[0]
    assert "closed PRs' pages were not pruned" in kept.notes[0] and "403" in kept.notes[0]
    # PR 9 is open; 8 closed; 7 (this run's PR) is missing from the list, closed while its sweep ran: kept
    done = pages_flow.run_publish(report, **{**kw, "event_path": ev, "run_id": 51}, open_prs=lambda: [9])
    assert done.pruned == ["pr-8/run-40"] and done.notes == []
    assert {f.split("/")[0] for f in files(remote) if "/" in f} == {"pr-7", "pr-9"}
