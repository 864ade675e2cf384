"""The main job on the example data: what CI does for the seed PR, run locally.

The repository ships the state *after* the seed PR (its recipe, master entry and appended
changelog entry). This script recreates the PR as two commits in a scratch git repository
(base = the same files without the last changelog entry, head = the files as shipped), then runs
the same commands the workflows run on that pull request:

  1. ci-tools config validate      (configs, runners, recipes, cross-file rules)
  2. ci-tools changelog lint       (append-only gate, PR mode)
  3. ci-tools plan                 (gate verdict, canary, points, GPU-hours)
  4. ci-tools runner run --dry-run (one point's engine, router and AIPerf commands)
  5. ci-tools results pareto       (the seed PR's published points, frontier table)

Nothing in the working tree is changed.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ci_tools import names  # noqa: E402

SEED_PR = "3801"
SEED_LABEL = "full-sweep-fail-fast"


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


def without_last_entry(text: str) -> str:
    cut = text.rstrip("\n").rfind("\n\n- config-keys:")
    if cut < 0:
        raise SystemExit(f"{names.CHANGELOG}: cannot find the last entry to build the demo's base")
    return text[: cut + 1]


def build_scratch_repo(dest: Path) -> None:
    git(dest, "init", "-q", "-b", "main")
    git(dest, "config", "user.email", "demo@example.invalid")
    git(dest, "config", "user.name", "ci-tools demo")
    for part in (names.E2E_DIR, names.RECIPES_DIR):
        shutil.copytree(ROOT / part, dest / part)
    changelog = dest / names.CHANGELOG
    head_text = changelog.read_text(encoding="utf-8")
    changelog.write_text(without_last_entry(head_text), encoding="utf-8")
    git(dest, "add", "-A")
    git(dest, "commit", "-q", "-m", "base")
    git(dest, "tag", "base")
    changelog.write_text(head_text, encoding="utf-8")
    git(dest, "commit", "-q", "-am", "seed PR")
    git(dest, "tag", "head")


def plan_row(repo: Path, **point: int) -> dict:
    """The matrix row the sweep workflow would hand to the runner job for one point of the plan."""
    out = subprocess.run([sys.executable, "-m", "ci_tools", "plan", "--base", "base", "--head", "head",
                          "--label", SEED_LABEL, "--format", "json"], cwd=repo, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"plan --format json failed:\n{out.stderr}")
    plan = json.loads(out.stdout)
    for rows in plan["buckets"].values():
        for row in rows:
            if not row.get("run-eval") and all(row.get(k) == v for k, v in point.items()):
                return row
    raise SystemExit(f"the plan has no row for {point}")


def step(title: str, args: list[str], cwd: Path) -> int:
    print(f"\n=== {title}\n$ ci-tools {' '.join(args)}", flush=True)
    rc = subprocess.call([sys.executable, "-m", "ci_tools", *args], cwd=cwd)
    print(f"(exit {rc})", flush=True)
    return rc


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="ci-tools-demo-") as tmp:
        repo = Path(tmp)
        build_scratch_repo(repo)
        failures = 0
        failures += step("Validate configs, runners and recipes", ["config", "validate", "--base", "base"], repo) != 0
        failures += step("Changelog gate (PR mode)",
                         ["changelog", "lint", "--base", "base", "--head", "head", "--pr", SEED_PR], repo) != 0
        failures += step("Sweep plan",
                         ["plan", "--base", "base", "--head", "head", "--label", SEED_LABEL], repo) != 0
        row_file = repo / "row-dep2-c64.json"
        row_file.write_text(json.dumps(plan_row(repo, tp=2, ep=2, conc=64), indent=1), encoding="utf-8")
        failures += step("Runner job for the plan's DEP2 c64 row (dry run: the exact commands)",
                         ["runner", "run", "--row", str(row_file), "--dry-run"], repo) != 0
        failures += step("Pareto of the seed PR's published points",
                         ["results", "pareto", str(ROOT / "docs/seed-points.csv"), "--format", "markdown"], repo) != 0
    print("\ndemo: all steps passed" if not failures else f"\ndemo: {failures} step(s) failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
