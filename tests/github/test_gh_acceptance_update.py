"""`config acceptance-update` against the fake GitHub (real HTTP, GitHub's schemas and permission table):
the collection's results become the references file on a new branch and a pull request; bad input
(no results, a partial matrix, a run that does not exist or is not the collection's) changes nothing."""

from __future__ import annotations

import json
import shutil

import pytest
import yaml

from ci_tools import names
from gh_scenarios import REPO_ROOT
from test_gh_cli import ci, outputs

RUN = 555
SEED = "dsv41flash-sglang-nextn3-thinking-on"
NEW = "deepseek-v4.1-flash-sglang-mtp2-thinking-on"


def cell_doc(fake, rid, mtp, length, run=RUN, **extra) -> dict:
    return {"acceptance-version": 1, "id": rid, "model": "deepseek-ai/DeepSeek-V4.1-Flash", "engine": "sglang",
            "engine-version": "nightly-dev-cu13-20261012-e6072935", "dataset": "speed-bench-qualitative-coding",
            "thinking": True, "mtp": mtp, "acceptance-length": length,
            "source": "sglang /server_info internal_states[].avg_spec_accept_length (1 rank(s))",
            "run": f"https://github.com/{fake.repo}/actions/runs/{run}", **extra}


@pytest.fixture
def repo(fake, tmp_path, env):
    root = tmp_path / "repo"
    shutil.copytree(REPO_ROOT / "inferencex-e2e", root / "inferencex-e2e")
    shutil.copytree(REPO_ROOT / "recipes", root / "recipes")
    refs = (root / names.ACCEPTANCE_REFERENCES).read_text()
    fake.add_branch("main", "a" * 40, {names.ACCEPTANCE_REFERENCES: refs})
    fake.add_run(RUN, head_sha="a" * 40, branch="main", event="workflow_dispatch",
                 path=f".github/workflows/{names.ACCEPTANCE_WORKFLOW}", artifacts=(), plan_labels=None)
    fake.add_run(556, head_sha="a" * 40, branch="main", event="push", path=".github/workflows/run-sweep.yml",
                 artifacts=(), plan_labels=None)
    # the collection's update job: exactly the permissions speedbench-al.yml gives it
    token = fake.grant("update-token", "github_token", {"contents": "write", "pull_requests": "write",
                                                        "actions": "read"})
    results = tmp_path / "cells"
    return {"root": root, "refs": refs, "results": results, "env": {**env, "GITHUB_TOKEN": token},
            "matrix": tmp_path / "matrix.json"}


def write_cells(repo, *docs) -> None:
    for doc in docs:
        d = repo["results"] / f"{names.ACCEPTANCE_ARTIFACT_PREFIX}{doc['id']}"
        d.mkdir(parents=True, exist_ok=True)
        (d / names.ACCEPTANCE_JSON).write_text(json.dumps(doc))


def update(repo, *extra, matrix=None):
    if matrix is not None:
        repo["matrix"].write_text(json.dumps([{"id": m} for m in matrix]))
        extra = (*extra, "--matrix", str(repo["matrix"]))
    return ci(["config", "acceptance-update", "--results", str(repo["results"]), "--run-id", str(RUN),
               "--root", str(repo["root"]), *extra], repo["env"])


def test_the_measured_cells_become_a_pull_request(fake, repo):
    write_cells(repo, cell_doc(fake, SEED, 3, 3.2), cell_doc(fake, NEW, 2, 2.71))
    res = update(repo, "--open-pr", "--format", "github", matrix=[SEED, NEW])
    assert res.returncode == 0, res.stderr + res.stdout
    branch = f"acceptance-lengths/run-{RUN}"
    text = fake.files[(branch, names.ACCEPTANCE_REFERENCES)]
    entries = yaml.safe_load(text)["entries"]
    run_url = f"https://github.com/{fake.repo}/actions/runs/{RUN}"
    assert entries[SEED]["acceptance-length"] == 3.2 and entries[SEED]["measured-by"]["run"] == run_url
    assert entries[NEW] == {"model": "deepseek-ai/DeepSeek-V4.1-Flash", "engine": "sglang",
                            "engine-version": "nightly-dev-cu13-20261012-e6072935",
                            "dataset": "speed-bench-qualitative-coding", "thinking": True, "mtp": 2,
                            "acceptance-length": 2.71,
                            "measured-by": {"run": run_url, "source": entries[NEW]["measured-by"]["source"],
                                            "date": fake.runs[RUN]["created_at"][:10]}}
    assert text.startswith(repo["refs"].split("references-version")[0])     # the header comments stay
    assert fake.files[("main", names.ACCEPTANCE_REFERENCES)] == repo["refs"]  # main untouched: it is a PR
    (pr,) = [p for p in fake.pulls.values() if p["head"]["ref"] == branch]
    assert pr["base"]["ref"] == "main" and pr["title"] == f"Acceptance lengths from SPEED-Bench run {RUN}"
    assert f"| `{SEED}` | 3.51 | 3.2 |" in pr["body"] and f"| `{NEW}` | - | 2.71 |" in pr["body"]
    # the example recipes replay 3.51: the PR says they are stale now (config validate fails them)
    assert "recipes/gb300-dsv41flash-fp4-sglang/agentic.yaml:34: synthetic acceptance 3.51 is stale" in pr["body"]
    assert outputs(repo["env"])["pr-url"] == pr["html_url"] and outputs(repo["env"])["changed"] == "2"
    assert not fake.refused


def test_no_results_changes_nothing(fake, repo):
    repo["results"].mkdir()
    res = update(repo, "--open-pr")
    assert res.returncode == 2 and "no results: no acceptance.json anywhere below it" in res.stderr
    assert "Traceback" not in res.stderr and list(fake.branches) == ["main"]
    assert (repo["root"] / names.ACCEPTANCE_REFERENCES).read_text() == repo["refs"]


def test_a_partial_matrix_is_refused_unless_allowed(fake, repo):
    write_cells(repo, cell_doc(fake, NEW, 2, 2.71))
    res = update(repo, "--open-pr", matrix=[SEED, NEW])
    assert res.returncode == 1 and f"partial collection: 1 of 2 matrix cell(s) have no result: {SEED}" in res.stderr
    assert "--allow-partial" in res.stderr and list(fake.branches) == ["main"] and not fake.pulls
    assert (repo["root"] / names.ACCEPTANCE_REFERENCES).read_text() == repo["refs"]
    res = update(repo, "--open-pr", "--allow-partial", matrix=[SEED, NEW])
    assert res.returncode == 0, res.stderr
    (pr,) = fake.pulls.values()
    assert f"Not measured by this run (1 cell(s) of its matrix): `{SEED}`" in pr["body"]
    assert "warning: partial collection" in res.stderr


@pytest.mark.parametrize("run_id, code, message", [
    (999, 2, "run 999 does not exist in octo/bench (GitHub answered 404)"),
    (556, 1, "run 556 is a run of .github/workflows/run-sweep.yml, not of the collection"),
])
def test_the_run_must_exist_and_be_the_collections(fake, repo, run_id, code, message):
    write_cells(repo, cell_doc(fake, NEW, 2, 2.71, run=run_id))
    res = ci(["config", "acceptance-update", "--results", str(repo["results"]), "--run-id", str(run_id),
              "--root", str(repo["root"]), "--open-pr"], repo["env"])
    assert res.returncode == code and message in res.stderr and "Traceback" not in res.stderr
    assert list(fake.branches) == ["main"] and not fake.pulls


def test_unusable_results_are_named(fake, repo):
    write_cells(repo, cell_doc(fake, SEED, 3, None, problem="the engine reported no acceptance length"),
                cell_doc(fake, NEW, 2, 2.71, run=777), cell_doc(fake, "x-mtp1", 1, 2.5))
    (repo["results"] / "garbage").mkdir()
    (repo["results"] / "garbage" / names.ACCEPTANCE_JSON).write_text("{not json")
    res = update(repo)
    assert res.returncode == 1 and "no usable measurement in the results of run 555" in res.stderr
    for said in (f"cell {SEED} measured nothing: the engine reported no acceptance length",
                 f"cell {NEW} was measured by https://github.com/octo/bench/actions/runs/777, not by",
                 "cell x-mtp1: acceptance length 2.5 is outside [1, mtp + 1]", "not valid JSON"):
        assert said in res.stderr
    assert (repo["root"] / names.ACCEPTANCE_REFERENCES).read_text() == repo["refs"]


def test_a_token_without_pull_request_write_is_refused_cleanly(fake, repo):
    write_cells(repo, cell_doc(fake, NEW, 2, 2.71))
    repo["env"]["GITHUB_TOKEN"] = fake.grant("weak", "github_token", {"contents": "write", "actions": "read"})
    res = update(repo, "--open-pr")
    assert res.returncode == 1 and "POST /repos/octo/bench/pulls failed: HTTP 403" in res.stderr
    assert "Traceback" not in res.stderr
