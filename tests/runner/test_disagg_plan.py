"""Done when: `plan` on the example repository emits the multi-node rows, and each one's complete Slurm
launch prints with `runner run --dry-run --backend slurm` (a real git repository, the real CLI)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

from ci_tools import names

from runner_support import REPO

ENTRY = """
- config-keys:
    - dsv41flash-fp4-gb300-dynamo-sglang-disagg
    - dsv41flash-fp4-gb300-dynamo-sglang-agentic-disagg
  scenario-type:
    - fixed-seq-len
    - agentic-coding
  description:
    - "Serve both disaggregated GB300 entries from their recipes."
  pr-link: https://github.com/SemiAnalysisAI/InferenceX/pull/3900
"""


def ci(repo: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ci_tools", *args], cwd=repo, capture_output=True, text=True)


def test_plan_emits_the_multinode_rows_and_each_dry_runs_on_slurm(tmp_path):
    spec = importlib.util.spec_from_file_location("demo", REPO / "examples" / "demo.py")
    demo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(demo)
    demo.build_scratch_repo(tmp_path)
    changelog = tmp_path / names.CHANGELOG
    changelog.write_text(changelog.read_text(encoding="utf-8") + ENTRY, encoding="utf-8")
    subprocess.run(["git", "commit", "-q", "-am", "multi-node PR"], cwd=tmp_path, check=True)

    res = ci(tmp_path, "plan", "--base", "head", "--head", "HEAD", "--label", demo.SEED_LABEL, "--format", "json")
    assert res.returncode == 0, res.stderr
    plan = json.loads(res.stdout)
    rows = [r for bucket, rs in plan["buckets"].items() if bucket.startswith("multi-node") for r in rs
            if not r.get("run-eval")]
    rows += [c for c in plan["canaries"] if c.get("prefill")]
    keys = {r["config-key"] for r in rows}
    assert keys == {"dsv41flash-fp4-gb300-dynamo-sglang-disagg", "dsv41flash-fp4-gb300-dynamo-sglang-agentic-disagg"}
    assert len(rows) >= 4, [r["exp-name"] for r in rows]
    for i, row in enumerate(rows):
        path = tmp_path / f"row{i}.json"
        path.write_text(json.dumps(row))
        out = ci(tmp_path, "runner", "run", "--row", str(path), "--backend", "slurm", "--dry-run")
        assert out.returncode == 0, (row, out.stderr)
        text = out.stdout
        assert "salloc --no-shell" in text and "--exclusive" in text and "scancel J" in text
        workers = row["prefill"]["num-worker"] + row["decode"]["num-worker"]
        assert text.count("--disaggregation-mode ") == workers, text


def test_a_repository_without_recipes_is_refused_at_plan_not_on_the_gpu(tmp_path):
    """Issue 22: with no recipes/ folder, `plan` approved every row and each `runner run` exited 1
    ("has no `recipe:` field"). A repository with ci-tools' policy file hands its rows to `runner run`:
    they are refused at plan, each named with the fix."""
    spec = importlib.util.spec_from_file_location("demo", REPO / "examples" / "demo.py")
    demo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(demo)
    demo.build_scratch_repo(tmp_path)
    subprocess.run(["git", "rm", "-rq", names.RECIPES_DIR], cwd=tmp_path, check=True)
    masters = tmp_path / "inferencex-e2e" / "configs" / "nvidia-master.yaml"
    masters.write_text("".join(line for line in masters.read_text(encoding="utf-8").splitlines(keepends=True)
                               if not line.strip().startswith("recipe:")), encoding="utf-8")
    changelog = tmp_path / names.CHANGELOG
    changelog.write_text(changelog.read_text(encoding="utf-8") + ENTRY, encoding="utf-8")
    subprocess.run(["git", "commit", "-q", "-am", "no recipes"], cwd=tmp_path, check=True)

    res = ci(tmp_path, "plan", "--base", "head", "--head", "HEAD", "--label", demo.SEED_LABEL, "--format", "json")
    plan = json.loads(res.stdout)
    assert not plan["sweep"] and all(not rows for rows in plan["buckets"].values()) and not plan["canaries"]
    assert plan["refused"] and {r["rule"] for r in plan["refused"]} == {"no-recipe"}
    assert all("write a recipe" in r["fix"] for r in plan["refused"])
    assert "cannot run, so nothing is booked" in plan["error"]

    # Nothing is inferred from which files exist: without the policy file too, the rows are refused
    # (before, a repository with neither recipes/ nor the policy file was planned unscreened) ...
    subprocess.run(["git", "rm", "-q", names.POLICY], cwd=tmp_path, check=True)
    subprocess.run(["git", "commit", "-q", "-m", "no policy file"], cwd=tmp_path, check=True)
    res = ci(tmp_path, "plan", "--base", "head", "--head", "HEAD", "--label", demo.SEED_LABEL, "--format", "json")
    assert {r["rule"] for r in json.loads(res.stdout)["refused"]} == {"no-recipe"}
    # ... unless the repository says its own scripts serve them, and the plan says so
    res = ci(tmp_path, "plan", "--base", "head", "--head", "HEAD", "--label", demo.SEED_LABEL, "--format", "json",
             "--no-runner-screen")
    plan = json.loads(res.stdout)
    assert plan["sweep"] and not plan["refused"] and any(plan["buckets"].values())
    assert "--no-runner-screen" in res.stderr
