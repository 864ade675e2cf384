"""The comment commands of a benchmark PR, end to end, against the local fake GitHub.

`python3 dev.py demo --walkthrough` runs it. It starts the fake GitHub the tests use
(`tests/github/fake_github.py`: real HTTP on 127.0.0.1, GitHub's schemas and permission rules) and
plays one pull request through the same `ci-tools` commands the workflows run, printing each bot
reply as GitHub would show it:

  1. a contributor opens the seed PR           ci-tools bot welcome
  2. a maintainer labels it full-sweep-fail-fast  ci-tools plan --gate-only (the sweep starts)
  3. the sweep finishes; comments on the PR:   ci-tools comment handle
       /sweep plan (anyone), /usee 19384721 (a typo), /use 12345 (no such run), /use 19384721
  4. a push to the PR after /use               ci-tools reuse resolve (no new sweep)
  5. the PR merges                             ci-tools reuse resolve (main reuses the pinned run)

Nothing leaves this machine. It needs the test tools (`githubkit` checks the fake's answers against
GitHub's schemas) and the shared corpus beside the clone (`../shared`, or $CI_TOOLS_SHARED), as the
tests do.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "github"))

from fake_github import FakeGitHub, Server  # noqa: E402

PR, RUN, MISSING = 3801, 19384721, 12345
HEAD, NEXT, MERGE = "a" * 40, "b" * 40, "e" * 40
LABEL = "full-sweep-fail-fast"
MAINTAINER, CONTRIBUTOR = "maint", "alice"


def shared_dir() -> Path:
    return Path(os.environ.get("CI_TOOLS_SHARED") or ROOT.parent / "shared")


def public(obj: dict) -> dict:
    """A fake object as GitHub sends it in a webhook (the fake's own bookkeeping keys start with `_`)."""
    return {k: v for k, v in obj.items() if not k.startswith("_")}


class Walkthrough:
    def __init__(self, fake: FakeGitHub, tmp: Path):
        self.fake, self.tmp, self.n = fake, tmp, 0
        self.env = {**os.environ, "GITHUB_API_URL": fake.url, "GITHUB_TOKEN": "walkthrough-token",
                    "GITHUB_REPOSITORY": fake.repo, "CI_TOOLS_CARD_SETTLE": "0"}
        for var in ("GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY", "GITHUB_EVENT_PATH", "GITHUB_EVENT_NAME"):
            self.env.pop(var, None)

    def event(self, name: str, payload: dict) -> Path:
        self.n += 1
        path = self.tmp / f"event-{self.n}-{name}.json"
        path.write_text(json.dumps({**payload, "repository": {"full_name": self.fake.repo},
                                    "sender": {"login": payload.get("_sender", MAINTAINER)}}))
        return path

    def run(self, title: str, args: list[str]) -> subprocess.CompletedProcess:
        """One workflow step: the command as the workflow runs it, in a checkout of the default branch."""
        print(f"\n=== {title}\n$ ci-tools {' '.join(args)}", flush=True)
        out = subprocess.run([sys.executable, "-m", "ci_tools", *args], cwd=ROOT, env=self.env, capture_output=True,
                             text=True)
        for line in (out.stdout + out.stderr).splitlines():
            print(f"  {line}")
        print(f"(exit {out.returncode})", flush=True)
        return out

    def comment(self, author: str, body: str) -> None:
        c = self.fake.add_comment(PR, body, author=author, association="MEMBER")
        print(f"\n--- @{author} comments on PR #{PR}:\n    {body}")
        path = self.event("issue_comment", {"action": "created", "comment": public(c),
                                            "issue": {"number": PR, "pull_request": {"url": "https://x"}}})
        self.run("comment-commands.yml: comment handle", ["comment", "handle", "--event-path", str(path),
                                                          "--event-name", "issue_comment"])
        self.show_reply(c["id"])

    def show_reply(self, comment_id: int) -> None:
        marker = f"<!-- ci-tools:reply {comment_id} -->"
        for c in self.fake.bot_comments(PR):
            if c["body"].startswith(marker):
                print_bot(c["body"])

    def pr_event(self, action: str, **extra) -> Path:
        return self.event("pull_request", {"action": action, "pull_request": public(self.fake.pulls[PR]), **extra})


def print_bot(body: str) -> None:
    print(f"\n--- {FakeGitHub.bot} replies:")
    for line in body.splitlines():
        if not line.startswith("<!--"):
            print(f"    | {line}")


def main() -> int:
    shared = shared_dir()
    if not (shared / "corpus" / "github-webhooks").is_dir():
        print(f"walkthrough: the shared corpus is missing: expected {shared}/corpus "
              "(set CI_TOOLS_SHARED to its folder)", file=sys.stderr)
        return 2
    fake = FakeGitHub(shared / "corpus")
    with Server(fake) as server, tempfile.TemporaryDirectory(prefix="ci-tools-walkthrough-") as tmp:
        fake.url = server.url
        w = Walkthrough(fake, Path(tmp))
        fake.permissions[MAINTAINER] = "write"
        fake.permissions[CONTRIBUTOR] = "read"
        fake.add_pr(PR, head_sha=HEAD, commits=[HEAD], author=CONTRIBUTOR,
                    body="Bump the GB300 DeepSeek-V4.1-Flash SGLang AgentX recipe (the example PR of this repository).")
        fake.pr_files[PR] = ["recipes/gb300-dsv41flash-fp4-sglang/agentic.yaml", "inferencex-e2e/perf-changelog.yaml"]
        print(f"--- @{CONTRIBUTOR} opens PR #{PR} (a recipe change and its changelog entry)")
        failures = w.run("pr-welcome.yml: bot welcome", ["bot", "welcome", "--event-path",
                                                         str(w.pr_event("opened", _sender=CONTRIBUTOR))]).returncode != 0
        for c in fake.bot_comments(PR):
            print_bot(c["body"][:1200] + ("\n..." if len(c["body"]) > 1200 else ""))

        print(f"\n--- @{MAINTAINER} adds the label {LABEL}")
        fake.label(PR, LABEL)
        failures += w.run("run-sweep.yml: the gate (the sweep job plans and runs the GPU jobs next)",
                          ["plan", "--gate-only", "--event-path",
                           str(w.pr_event("labeled", label={"name": LABEL})), "--event-name", "pull_request",
                           "--head-message", "Bump the recipe"]).returncode != 0
        fake.add_run(RUN, head_sha=HEAD)       # the sweep run finished green, with its result artifacts
        print(f"\n--- the sweep run {RUN} finished: success")

        w.comment(CONTRIBUTOR, "/sweep plan")
        w.comment(MAINTAINER, f"/usee {RUN}")
        w.comment(MAINTAINER, f"/use {MISSING}")
        w.comment(MAINTAINER, f"/use {RUN}")

        print(f"\n--- @{CONTRIBUTOR} pushes a README fix")
        fake.pulls[PR]["head"]["sha"] = NEXT
        fake.add_commit(PR, NEXT)
        fake.compares[(HEAD, NEXT)] = ("ahead", ["README.md"])
        failures += w.run("sweep-pipeline.yml: reuse resolve (does this push sweep again?)",
                          ["reuse", "resolve", "--event-path", str(w.pr_event("synchronize", before=HEAD, after=NEXT)),
                           "--event-name", "pull_request"]).returncode != 0

        print(f"\n--- PR #{PR} merges")
        at = fake.tick()
        fake.pulls[PR].update(merged_at=at, merged=True, state="closed")
        fake.commit_pulls[MERGE] = [PR]
        push = w.event("push", {"ref": "refs/heads/main", "after": MERGE, "before": "0" * 40,
                                "head_commit": {"message": f"Merge pull request #{PR}"}})
        failures += w.run("sweep-pipeline.yml on main: reuse resolve (which run's results does main publish?)",
                          ["reuse", "resolve", "--event-path", str(push), "--event-name", "push"]).returncode != 0
        if fake.schema_errors:
            print("walkthrough: the fake answered outside GitHub's schema:\n" + "\n".join(fake.schema_errors))
            failures += 1
    print("\nwalkthrough: done" if not failures else f"\nwalkthrough: {failures} step(s) failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
