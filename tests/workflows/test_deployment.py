"""What a deployment relies on, checked on the files (issue 23.6 and 23.9).

23.6: the team-membership token can be an App token minted per run. Every job that reads
team membership has a `team-token` step minting it with actions/create-github-app-token (Members:
read only), and its sign-off step takes that token when the step ran, else the PAT secret; the docs
say which. The behaviour with each token is run in test_github_env.py (signoff-verify.yml scenarios)."""

from __future__ import annotations

import gh_expr
import wf_contract as wc
from wf_env import REPO, WORKFLOWS

CHOICE = "${{ steps.team-token.outputs.token || secrets.TEAM_MEMBERSHIP_TOKEN }}"


def team_jobs():
    return [(wf, job_id, job) for wf in wc.load_workflows(WORKFLOWS) for job_id, job in wf.jobs.items()
            if "TEAM_MEMBERSHIP_TOKEN" in str(job.get("steps"))]


def test_every_team_reading_job_mints_an_app_token_first():
    jobs = team_jobs()
    assert {(wf.name, j) for wf, j, _ in jobs} == {("signoff-verify.yml", "verify"), ("signoff-review-verify.yml", "verify")}
    for wf, job_id, job in jobs:
        steps = job["steps"]
        ids = [s.get("id") for s in steps]
        mint = steps[ids.index("team-token")]
        assert mint["uses"].startswith("actions/create-github-app-token@"), (wf.name, job_id)
        perms = {k: v for k, v in mint["with"].items() if k.startswith("permission-")}
        assert perms == {"permission-members": "read"}, (wf.name, job_id, perms)
        assert mint["with"]["private-key"] == "${{ secrets.TEAM_APP_PRIVATE_KEY }}"
        assert mint["if"] == "vars.TEAM_APP_CLIENT_ID != ''"
        verify = steps[ids.index("verify")]
        assert ids.index("team-token") < ids.index("verify")
        assert verify["env"]["TEAM_MEMBERSHIP_TOKEN"] == CHOICE, (wf.name, job_id)


def test_the_minted_token_wins_and_the_pat_is_the_fallback():
    minted = {"steps": {"team-token": {"outputs": {"token": "ghs_minted"}}}, "secrets": {"TEAM_MEMBERSHIP_TOKEN": "pat"}}
    skipped = {"steps": {}, "secrets": {"TEAM_MEMBERSHIP_TOKEN": "pat"}}
    assert gh_expr.interpolate(CHOICE, minted) == "ghs_minted"
    assert gh_expr.interpolate(CHOICE, skipped) == "pat"


def test_the_docs_say_which_token_is_used():
    text = (REPO / "docs" / "workflows.md").read_text()
    for needed in ("TEAM_APP_CLIENT_ID", "TEAM_APP_PRIVATE_KEY", "actions/create-github-app-token",
                   "expires within the hour", "fine-grained"):
        assert needed in text, needed


def test_the_docs_say_what_protects_the_gpu_runners():
    """Finding 23.9: a runner group's workflow restriction takes exact `path@ref` entries and a same-repo
    PR's sweep resolves benchmark.yml at refs/pull/<N>/merge, so recommending it blocked those sweeps
    too; the docs name what does protect the runners instead."""
    text = (REPO / "docs" / "workflows.md").read_text()
    assert "runner group that public-fork workflows cannot use" not in text
    section = text[text.index("**What protects the GPU runners.**"):]
    section = section[:section.index("\n- **")]
    for needed in ("path@ref", "refs/pull/<N>/merge", "Require approval for all external contributors",
                   "CODEOWNERS", "repository access"):
        assert needed in section, needed
