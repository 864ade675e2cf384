"""A workflow step run in the environment GitHub Actions gives it, against the fake GitHub.

What a step sees on github.com, and so what it sees here:
- `GITHUB_EVENT_NAME` (the trigger, e.g. `workflow_dispatch`, `pull_request_target`) and
  `GITHUB_EVENT_PATH` (that trigger's real payload from the webhook corpus, adjusted to the test's
  repository and PR), `GITHUB_OUTPUT`, `GITHUB_STEP_SUMMARY`, `GITHUB_REPOSITORY`, `GITHUB_API_URL`,
  `RUNNER_TEMP`, `GITHUB_ACTIONS=true`; nothing from the developer's own environment (`GITHUB_*`,
  `GH_*` and `RUNNER_*` are dropped first);
- the job's token: `github.token` is a token the fake knows as a GITHUB_TOKEN with exactly the job's
  `permissions:` (metadata read always; organization endpoints answer 404), and for `pull_request` /
  `pull_request_review` events from a fork, GitHub's downgrade of every write scope to read;
- secrets only where the trigger gets them (never on fork `pull_request` / `pull_request_review`);
- the `run:` script itself, with bash as GitHub runs it, and the step's `env:` expanded from the
  job's contexts (`github`, `inputs`, `secrets`, `steps`, `needs`).

One difference, in how long a step waits, not in what it does: `PACING` sets ci-tools' two pauses
to 0, the pause between two writes (GitHub's advice against its secondary rate limits; the local
fake has none) and the status card's settle before it re-reads its section (a concurrent writer's
window; no scenario here has one). Every request, and the card's re-read, is still made; the pauses
themselves are tested where they are decided (tests/github: the card's protocol with its sleeps,
the client's pause between writes).
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import gh_expr
import wf_contract as wc
from wf_contract import read_github_output
from wf_env import REPO, WORKFLOWS

BIN = str(Path(sys.executable).parent)
SHARED = Path(os.environ.get("CI_TOOLS_SHARED", REPO.parent / "shared"))
WEBHOOKS = SHARED / "corpus" / "github-webhooks"
SCOPES = ("actions", "attestations", "checks", "contents", "deployments", "discussions", "id-token", "issues",
          "models", "packages", "pages", "pull-requests", "repository-projects", "security-events", "statuses")
FORK_DOWNGRADED = ("pull_request", "pull_request_review", "pull_request_review_comment")
# ci-tools' pauses that are only waiting against a local fake (see the module docstring); a JobRun's
# `extra_env` may set them back.
PACING = {"CI_TOOLS_WRITE_INTERVAL": "0", "CI_TOOLS_CARD_SETTLE": "0"}


@contextlib.contextmanager
def served_fake(shared: Path, repo: str):
    """The fake GitHub of `repo`, served over HTTP for the steps' commands (`fake.url`); nothing it
    answered may break GitHub's schemas."""
    sys.path.insert(0, str(REPO / "tests" / "github"))
    from fake_github import FakeGitHub, Server

    fake = FakeGitHub(shared / "corpus", repo=repo)
    with Server(fake) as server:
        fake.url = server.url
        yield fake
    assert not fake.schema_errors, fake.schema_errors


def workflow(name: str) -> wc.Workflow:
    return next(wf for wf in wc.load_workflows(WORKFLOWS) if wf.name == name)


def webhook(kind: str, name: str) -> dict:
    return json.loads((WEBHOOKS / kind / name).read_text())


def job_permissions(wf: wc.Workflow, job_id: str) -> dict[str, str]:
    """The scopes a job's GITHUB_TOKEN has: the job's `permissions:`, else the workflow's."""
    perms = wf.jobs[job_id].get("permissions", wf.data.get("permissions"))
    if perms in ("read-all", "write-all"):
        return {s: perms.split("-")[0] for s in SCOPES}
    if perms is None:
        raise AssertionError(f"{wf.name}: {job_id}: no permissions: block (the repository default would apply)")
    return {k: v for k, v in (perms or {}).items() if v != "none"}


def effective(perms: dict[str, str], event_name: str, fork: bool) -> dict[str, str]:
    if fork and event_name in FORK_DOWNGRADED:
        return {k: "read" for k in perms}
    return dict(perms)


@dataclass
class StepRun:
    done: subprocess.CompletedProcess
    outputs: dict[str, str]
    summary: str

    @property
    def ok(self) -> bool:
        return self.done.returncode == 0


@dataclass
class JobRun:
    """One job of one workflow, run step by step under one event. Steps are chosen by id or index;
    `uses:` steps (checkout, artifacts) are done by the test, which knows what they would leave."""

    wf: wc.Workflow
    job_id: str
    fake: object
    event_name: str
    payload: dict
    tmp: Path
    fork: bool = False
    secrets: dict[str, str] = field(default_factory=dict)
    vars: dict[str, str] = field(default_factory=dict)   # repository variables (unset ones read as '')
    extra_env: dict[str, str] = field(default_factory=dict)   # what a scenario points elsewhere (a git server)
    inputs: dict = field(default_factory=dict)
    needs: dict = field(default_factory=dict)
    cwd: Path = REPO
    steps: dict = field(default_factory=dict)
    token: str = ""
    run_attempt: int = 1                     # > 1: a re-run (GitHub replays the original payload)
    actor: str = "octocat"                   # github.actor / github.triggering_actor

    def __post_init__(self):
        self.job = self.wf.jobs[self.job_id]
        self.token = f"ghs_{self.wf.name}_{self.job_id}_{id(self)}"
        self.fake.grant(self.token, "github_token",
                        effective(job_permissions(self.wf, self.job_id), self.event_name, self.fork))
        self.tmp.mkdir(parents=True, exist_ok=True)
        self.event_path = self.tmp / "event.json"
        self.event_path.write_text(json.dumps(self.payload))
        if self.fork and self.event_name in FORK_DOWNGRADED:
            self.secrets = {}   # GitHub passes no secrets to fork pull_request runs

    def context(self) -> dict:
        return {"github": {"token": self.token, "event": self.payload, "event_name": self.event_name,
                           "repository": self.fake.repo, "run_id": "4242", "run_attempt": str(self.run_attempt),
                           "repository_owner": self.fake.repo.split("/")[0], "actor": self.actor,
                           "triggering_actor": self.actor},
                "secrets": self.secrets, "vars": self.vars, "inputs": self.inputs, "needs": self.needs,
                "steps": {k: {"outputs": v.outputs, "outcome": "success" if v.ok else "failure"}
                          for k, v in self.steps.items()},
                "runner": {"temp": str(self.tmp)}}

    def environment(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "GH_", "RUNNER_"))}
        env.update(PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}", GITHUB_ACTIONS="true", CI="true",
                   GITHUB_EVENT_NAME=self.event_name, GITHUB_EVENT_PATH=str(self.event_path),
                   GITHUB_REPOSITORY=self.fake.repo, GITHUB_API_URL=self.fake.url, GITHUB_RUN_ID="4242",
                   GITHUB_RUN_ATTEMPT=str(self.run_attempt), GITHUB_WORKSPACE=str(self.cwd), RUNNER_TEMP=str(self.tmp))
        env.update(PACING)
        env.update(self.extra_env)
        return env

    def step(self, key) -> dict:
        steps = self.job["steps"]
        return steps[key] if isinstance(key, int) else next(s for s in steps if s.get("id") == key)

    def would_run(self) -> bool:
        """The job's `if:` under this event, as GitHub evaluates it (needs all succeeded)."""
        return gh_expr.job_runs(self.job.get("if"), self.context(), gh_expr.Status(needs_results=("success",)))

    def run(self, key, record_as: str | None = None) -> StepRun:
        assert self.would_run(), f"{self.wf.name}: {self.job_id}: its if: would skip the job for this event"
        s = self.step(key)
        assert "run" in s, f"{self.wf.name}: {self.job_id}: step {key} is not a run: step"
        out = self.tmp / f"output-{len(list(self.tmp.glob('output-*')))}"
        summary = self.tmp / f"summary-{len(list(self.tmp.glob('summary-*')))}"
        out.write_text("")
        summary.write_text("")
        env = self.environment()
        env.update(GITHUB_OUTPUT=str(out), GITHUB_STEP_SUMMARY=str(summary))
        context = self.context()
        env.update({k: gh_expr.interpolate(str(v), context) for k, v in (s.get("env") or {}).items()})
        done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", s["run"]], cwd=self.cwd,
                              env=env, capture_output=True, text=True, timeout=120)
        result = StepRun(done, read_github_output(out.read_text()), summary.read_text())
        sid = record_as or s.get("id")
        if sid:
            self.steps[sid] = result
        return result


def adjust(payload: dict, repo: str, **top) -> dict:
    """A corpus payload pointed at the fake's repository."""
    p = copy.deepcopy(payload)
    if "repository" in p:
        p["repository"] = {**p["repository"], "full_name": repo, "name": repo.split("/")[1],
                           "default_branch": "main"}
        p["repository"]["owner"] = {**p["repository"]["owner"], "login": repo.split("/")[0]}
    p.update(top)
    return p
