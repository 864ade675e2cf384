"""A new repository set up by following docs/workflows.md, "Set up a new repository", and nothing else,
then the seed PR's sweep run to a page published on its Pages site.

The steps are read from the page: the variables block, the labels command, the table of checks to
require. They are applied to a fresh fake GitHub (GitHub's schemas and permission rules) and a local
bare repository standing in for github.com's git server. Then the seed PR (7 points of the GB300
DeepSeek-V4.1-Flash SGLang AgentX recipe, docs/examples/seed-compare) goes through the jobs of a
sweep run after its GPU jobs, whose results are the seed's published numbers: the collect job
(collection, comparison with main, the report), the status card, and report-pages (decide, publish).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import gh_runtime as rt
import pytest
from test_github_env import REPO_NAME, SHA1, Scenario, card_job, ok, pr_payload, pr_with_sweep, run_payload

from ci_tools import names
from ci_tools.results.sources import results_from_csv
from tests.conftest import REPO

DOC = REPO / "docs" / "workflows.md"
SEED = REPO / "docs" / "examples" / "seed-compare"
RUN = 50


def setup_section() -> str:
    text = DOC.read_text()
    start = text.index("## Set up a new repository")
    return text[start:text.index("\n## ", start + 1)]


def block(section: str, tag: str) -> str:
    m = re.search(rf"```[a-z]+ {tag}\n(.*?)```", section, re.S)
    assert m, f"docs/workflows.md's set-up section has no ```… {tag} block"
    return re.sub(r"^ {3}", "", m.group(1), flags=re.M).strip()


def test_the_checks_to_require_are_the_ones_that_report_on_every_pr():
    section = setup_section()
    table = section[section.index("<!-- generated:checks -->"):section.index("<!-- /generated:checks -->")]
    assert re.findall(r"^\| `([^`]+)` \|", table, re.M) == list(names.REQUIRED_CHECKS)


def test_a_new_repository_set_up_from_the_docs_publishes_the_seed_sweeps_page(shared, tmp_path):
    section = setup_section()
    variables = dict(line.split("=", 1) for line in block(section, "setup-variables").splitlines())
    with Scenario(shared, tmp_path / "gh") as s:
        # step 5: the labels, by the documented command, with a maintainer's token (issues: write)
        token = s.fake.grant("ghs_maintainer", "github_token", {"issues": "write"})
        argv = shlex.split(block(section, "setup-labels").replace("$(gh auth token)", token)
                           .replace("OWNER/NAME", REPO_NAME))
        env_words = [w for w in argv if re.fullmatch(r"[A-Z_]+=.*", w)]
        assert argv[len(env_words)] == "ci-tools"
        env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "GH_"))}
        # the fake's address, and no pause between the label writes (gh_runtime.PACING: the fake has no rate limit)
        env.update(dict(w.split("=", 1) for w in env_words), GITHUB_API_URL=s.fake.url, **rt.PACING)
        done = subprocess.run([sys.executable, "-m", "ci_tools", *argv[len(env_words) + 1:]], cwd=REPO, text=True,
                              capture_output=True, env=env, timeout=120)
        assert done.returncode == 0, done.stderr
        from ci_tools.sweep.load import load_policy

        policy = load_policy(REPO)
        assert set(s.fake.repo_labels) == {n.lower() for n in [*policy.primary, *policy.modifiers]}

        # the seed PR, labelled, and main's published sweep (the baseline the comparison reads)
        pr = pr_with_sweep(s.fake, 7, labels=(policy.recommended(),))
        main_points = results_from_csv((SEED / "main-baseline.csv").read_text(), "main.csv")
        s.fake.add_run(40, head_sha="d" * 40, branch="main", event="push", artifacts=())
        s.fake.add_artifact_files(40, names.COLLECTION_ARTIFACT, {
            f"results/{names.COLLECTION_JSON}": json.dumps({"results": main_points}).encode()})

        # the collect job of run 50: each GPU job's result.json, as download-artifact lays them out
        work = tmp_path / "workspace"
        for r in results_from_csv((SEED / "pr-local-results.csv").read_text(), "pr.csv"):
            job = work / "artifacts" / f"bmk_{r['point']['name']}"
            job.mkdir(parents=True)
            (job / names.RESULT_JSON).write_text(json.dumps({"schema": "ci-tools/result/v1", **r}))
        collect = s.job("sweep-stages.yml", "collect", "pull_request", pr_payload(s.fake, 7, "synchronize"),
                        cwd=work, inputs={"sweep": True, "points": "7"}, vars=variables)
        ok(collect.run("collect"))
        report = ok(collect.run("report"))
        page = work / "report" / names.REPORT_ARTIFACT
        assert "Regressed" in report.summary and page.is_file()

        # the run finished: the status card, then report-pages, with the variables the docs set
        run = s.fake.add_run(RUN, head_sha=SHA1, pull_requests=(7,),
                             artifacts=("changelog-metadata", names.REPORT_ARTIFACT))
        s.fake.add_artifact_files(RUN, names.COLLECTION_ARTIFACT, {
            f"results/{names.COLLECTION_JSON}": (work / "results" / names.COLLECTION_JSON).read_bytes()})
        card = card_job(s, run)
        card.vars.update(variables)
        ok(card.run("card"))
        owner, repo = REPO_NAME.split("/")
        url = f"https://{owner}.github.io/{repo}/pr-7/run-{RUN}/"
        [body] = [c["body"] for c in s.fake.bot_comments(7) if c["body"].startswith("<!-- ci-tools:status-card")]
        assert f"[open the report]({url})" in body and "🔴 **Regressed**" in body

        server = tmp_path / "git-server"
        bare = server / f"{REPO_NAME}.git"
        bare.parent.mkdir(parents=True)
        subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
        decide = s.job("report-pages.yml", "decide", "workflow_run", run_payload(s.fake, run), vars=variables)
        decided = ok(decide.run("decide")).outputs
        publish = s.job("report-pages.yml", "publish", "workflow_run", run_payload(s.fake, run), vars=variables,
                        extra_env={"GITHUB_SERVER_URL": str(server)},
                        needs={"decide": {"outputs": decided, "result": "success"}})
        assert publish.would_run()
        (publish.tmp / "report").mkdir()                               # what download-artifact leaves
        (publish.tmp / "report" / names.REPORT_ARTIFACT).write_bytes(page.read_bytes())
        out = ok(publish.run("publish")).outputs
        assert out["published"] == "true" and out["url"] == url
        published = subprocess.run(["git", "--git-dir", str(bare), "show", f"gh-pages:pr-7/run-{RUN}/index.html"],
                                   check=True, capture_output=True, text=True).stdout
        assert published == page.read_text() and 'id="pr-link"' in published and "Regressed" in published
        assert pr["number"] == 7
