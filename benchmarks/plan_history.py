#!/usr/bin/env python3
"""`ci-tools plan` over every transition of InferenceX's real main history, one whole process each.

Clones ../shared/corpus/inferencex-history/perf-changelog-history.bundle (218 versions of
perf-changelog.yaml and configs/, InferenceX's layout) and plans each of its 217 transitions:

  ci-tools plan --base <version n> --head <version n+1> --label full-sweep-fail-fast-no-canary
                --format json --changelog-file perf-changelog.yaml --master configs/amd-master.yaml
                --master configs/nvidia-master.yaml --runners configs/runners.yaml

and prints how many transitions plan rows, how many are refused and why, how many append nothing,
and the wall and CPU time per transition (median, p90, max) beside `python -c pass`.

The policy file is copied into the clone's working tree (untracked) so that versions of ci-tools that
read it from there (before issue 10) can be measured the same way; today's reads it from git and,
the bundle having none, uses the shipped default with a note.

    python3 benchmarks/plan_history.py [--json] [--limit N] [--python EXE]

`--python` runs another interpreter or install (e.g. a wrapper that puts an older checkout first on
the path), for before/after figures in the same conditions.
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from timing import run_timed

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("CI_TOOLS_SHARED", ROOT.parent / "shared"))
BUNDLE = SHARED / "corpus" / "inferencex-history" / "perf-changelog-history.bundle"
ARGS = ["--label", "full-sweep-fail-fast-no-canary", "--format", "json", "--changelog-file", "perf-changelog.yaml",
        "--master", "configs/amd-master.yaml", "--master", "configs/nvidia-master.yaml",
        "--runners", "configs/runners.yaml", "--no-runner-screen"]   # InferenceX serves its rows itself


def outcome(proc: subprocess.CompletedProcess) -> str:
    if proc.returncode == 0:
        plan = json.loads(proc.stdout)
        if plan["points"]:
            return "plans rows"
        return "no rows: " + plan["reason"][:60]
    err = proc.stderr
    if "append-only rules above" in err:
        return "refused: the append-only gate rejects the change"
    if "master config(s) this change selects" in err:
        return "refused: a selected config is invalid"
    last = [line for line in err.splitlines() if line.strip()][-1:] or ["?"]
    return f"exit {proc.returncode}: {last[0][:90]}"


def stats(values: list[float]) -> dict:
    values = sorted(values)
    return {"median": round(statistics.median(values), 3), "p90": round(values[math.ceil(0.9 * (len(values) - 1))], 3),
            "max": round(values[-1], 3), "total": round(sum(values), 1)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--limit", type=int, help="only the first N transitions")
    ap.add_argument("--python", default=sys.executable, help="interpreter for the plan processes and the baseline")
    args = ap.parse_args()
    if not BUNDLE.is_file():
        sys.exit(f"the history bundle is missing: {BUNDLE}")
    py = args.python
    with tempfile.TemporaryDirectory(prefix="ci-tools-bench-history-") as tmp:
        repo = Path(tmp) / "ix"
        subprocess.run(["git", "clone", "-q", str(BUNDLE), str(repo)], check=True)
        (repo / "inferencex-e2e").mkdir()
        shutil.copyfile(ROOT / "inferencex-e2e" / "ci-policy.yaml", repo / "inferencex-e2e" / "ci-policy.yaml")
        log = subprocess.run(["git", "-C", str(repo), "log", "--reverse", "--format=%H"], capture_output=True,
                             text=True, check=True).stdout.split()
        pairs = list(zip(log, log[1:]))[: args.limit]
        walls, cpus, base_walls, kinds = [], [], [], collections.Counter()
        for base, head in pairs:
            base_walls.append(run_timed([py, "-c", "pass"], repo, text=True)[0])
            wall, cpu, proc = run_timed([py, "-m", "ci_tools", "plan", "--base", base, "--head", head, *ARGS], repo,
                                       text=True)
            walls.append(wall)
            cpus.append(cpu)
            kinds[outcome(proc)] += 1
    baseline = statistics.median(base_walls)
    result = {"transitions": len(pairs), "outcomes": dict(kinds.most_common()), "wall_s": stats(walls),
              "cpu_s": stats(cpus), "python_c_pass_s": round(baseline, 3),
              "ratio_to_python": round(statistics.median(walls) / baseline, 1), "load": os.getloadavg()[0]}
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"{len(pairs)} transitions (1-min load average at the end: {result['load']:.2f}):")
        for kind, n in kinds.most_common():
            print(f"  {n:4d}  {kind}")
        w, c = result["wall_s"], result["cpu_s"]
        print(f"  per transition: wall median {w['median']} s, p90 {w['p90']} s, max {w['max']} s "
              f"(x{result['ratio_to_python']} python -c pass); cpu median {c['median']} s, p90 {c['p90']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
