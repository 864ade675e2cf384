"""`ci-tools plan --pr N` (#17): a maintainer plans a PR as CI would on its next push, with the PR's
labels, head and base read from GitHub, and sees which of its sweep runs `/use <run_id>` could pin
(the fake GitHub over real HTTP, GitHub's schemas, and a token that may only read)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ci_tools.cli import main

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "github"))
from fake_github import FakeGitHub, Server  # noqa: E402


def sha(repo: Path, ref: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "rev-parse", ref], capture_output=True, text=True,
                          check=True).stdout.strip()


@pytest.fixture
def github(shared, monkeypatch):
    fake = FakeGitHub(shared / "corpus")
    with Server(fake) as server:
        fake.url = server.url
        token = fake.grant("maintainer-token", "github_token", {"pull_requests": "read", "contents": "read",
                                                                "actions": "read", "issues": "read"})
        for var in ("GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY", "GITHUB_EVENT_NAME", "GITHUB_RUN_ID", "GH_TOKEN"):
            monkeypatch.delenv(var, raising=False)
        monkeypatch.setenv("GITHUB_TOKEN", token)
        monkeypatch.setenv("GITHUB_API_URL", fake.url)
        monkeypatch.setenv("GITHUB_REPOSITORY", fake.repo)
        yield fake
    assert not fake.schema_errors, fake.schema_errors


def add_pr(fake, repo, number=12, labels=("full-sweep-fail-fast", "bug"), **kw):
    pr = fake.add_pr(number, head_sha=sha(repo, "head"), labels=labels, **kw)
    pr["base"] = {**pr["base"], "sha": sha(repo, "base"), "ref": "main"}
    return pr


def run(capsys, *args):
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    out, err = capsys.readouterr()
    return exc.value.code, out, err


def test_a_pr_is_planned_with_its_labels_head_and_base_from_github(capsys, github, demo_repo):
    add_pr(github, demo_repo)
    code, out, err = run(capsys, "plan", "--repo", str(demo_repo), "--pr", "12")
    assert code == 0, err
    assert out.startswith("SWEEP: pull_request synchronize: sweep with full-sweep-fail-fast\n")
    assert "concurrency group: sweep-12-active\n" in out          # the PR's own group, as CI names it
    assert "total: 9 jobs (7 points, 1 smoke canary, 1 eval row)" in out
    # the PR's `bug` label is ignored, as CI ignores it, and said so
    assert "note: label(s) bug are not sweep labels" in err
    # the same plan as naming the refs and labels by hand
    _, by_hand, _ = run(capsys, "plan", "--repo", str(demo_repo), "--base", "base", "--head", "head",
                        "--label", "full-sweep-fail-fast")
    table = out.split("\nruns /use could pin")[0]
    assert table.split("\n", 3)[3] == by_hand.split("\n", 3)[3]
    assert out.endswith("runs /use could pin (PR #12's newest completed sweep runs):\n"
                        "  none yet: a full sweep of this PR has to run first\n")
    assert len([r for r in github.requests if r.startswith("GET /repos/octo/bench/pulls/12")]) == 1   # read once
    assert github.authorised and all(t == "maintainer-token" for t, _, _ in github.authorised)


def test_the_runs_use_could_pin_are_listed_with_the_reason_for_each_other(capsys, github, demo_repo):
    """The reuse rules a `/use <run_id>` pin meets at merge decide each line: the run of the current head
    that ran under the full-sweep label with its results passes; a failed run of an older head with
    the label applied passes as a pin too (a maintainer may pin it); a run made before the label does not."""
    head = sha(demo_repo, "head")
    pr = add_pr(github, demo_repo, labels=())
    github.add_run(30, head_sha=head, conclusion="success", branch=pr["head"]["ref"], pull_requests=[12])
    github.label(12, "full-sweep-fail-fast")
    github.label(12, "bug")
    github.add_run(31, head_sha=head, conclusion="success", branch=pr["head"]["ref"], pull_requests=[12])
    github.add_run(32, head_sha=head, conclusion="success", branch=pr["head"]["ref"], pull_requests=[12],
                   artifacts=("changelog-metadata",))
    code, out, err = run(capsys, "plan", "--repo", str(demo_repo), "--pr", "12")
    assert code == 0, err
    lines = " ".join(out.split("\nruns /use could pin (PR #12's newest completed sweep runs):\n")[1].split())
    assert f"run 32 (success, {head[:12]}," in lines and "run 32" in lines.split("/use 31 pins it")[0]
    assert "not usable: it has no unexpired benchmark, eval or agentic result artifact" in lines
    assert "/use 31 pins it" in lines
    assert "run 30 (success" in lines and "not usable: it was not created while a full-sweep label was applied" in lines
    code, out, _ = run(capsys, "plan", "--repo", str(demo_repo), "--pr", "12", "--format", "json")
    import json
    doc = json.loads(out)
    assert [(c["run"], c["usable"]) for c in doc["use-candidates"]] == [(32, False), (31, True), (30, False)]


def test_a_token_that_cannot_read_runs_still_plans_and_says_what_is_missing(capsys, github, demo_repo, monkeypatch):
    add_pr(github, demo_repo)
    monkeypatch.setenv("GITHUB_TOKEN", github.grant("narrow", "github_token", {"pull_requests": "read"}))
    code, out, err = run(capsys, "plan", "--repo", str(demo_repo), "--pr", "12")
    assert code == 0, err
    assert out.startswith("SWEEP: ") and "runs /use could pin" not in out
    assert "note: cannot list the runs /use could pin: " in err and "actions: read" in err


def test_label_options_replace_the_prs_labels(capsys, github, demo_repo):
    add_pr(github, demo_repo, labels=("sweep-enabled",))
    code, out, err = run(capsys, "plan", "--repo", str(demo_repo), "--pr", "12", "--label", "full-sweep-fail-fast",
                         "--format", "json")
    assert code == 0, err
    assert '"primary": "full-sweep-fail-fast"' in out and '"concurrency-group": "sweep-12-active"' in out


@pytest.mark.parametrize("kw, says", [
    ({"draft": True}, "draft PRs never sweep"),
    ({"fork": "someone/bench"}, "fork PRs never run on self-hosted runners"),
])
def test_a_draft_or_fork_pr_is_planned_as_ci_would_not_sweep_it(capsys, github, demo_repo, kw, says):
    add_pr(github, demo_repo, **kw)
    code, out, err = run(capsys, "plan", "--repo", str(demo_repo), "--pr", "12")
    assert code == 0, err
    assert out.startswith("NO SWEEP: ") and says in out


def test_a_head_not_in_the_clone_says_how_to_fetch_it(capsys, github, demo_repo):
    github.add_pr(12, head_sha="f" * 40, labels=("full-sweep-fail-fast",))
    code, _, err = run(capsys, "plan", "--repo", str(demo_repo), "--pr", "12")
    assert code == 2
    assert f"PR #12's head commit {'f' * 12} is not in this clone; fetch it first: `git fetch origin pull/12/head`" in err


def test_a_pr_github_does_not_have_is_a_clean_error(capsys, github, demo_repo):
    code, _, err = run(capsys, "plan", "--repo", str(demo_repo), "--pr", "404")
    assert code in (1, 2) and "404" in err and "Traceback" not in err


def test_without_a_token_the_message_says_how_to_give_one(capsys, github, demo_repo, monkeypatch):
    monkeypatch.delenv("GITHUB_TOKEN")
    code, _, err = run(capsys, "plan", "--repo", str(demo_repo), "--pr", "12")
    assert code != 0 and "no GitHub token: set GITHUB_TOKEN" in err


def test_pr_and_event_path_are_one_or_the_other(capsys, github, demo_repo, tmp_path):
    event = tmp_path / "event.json"
    event.write_text("{}")
    code, _, err = run(capsys, "plan", "--repo", str(demo_repo), "--pr", "12", "--event-path", str(event))
    assert code == 2 and "--event-path FILE or --pr N, not both" in err
