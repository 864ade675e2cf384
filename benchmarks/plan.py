#!/usr/bin/env python3
"""Wall time of whole `ci-tools plan` and `ci-tools matrix full-sweep` processes on the InferenceX corpus.

Builds a scratch git repository from ../shared/corpus/inferencex in this repository's layout
(inferencex-e2e/configs/{nvidia,amd}-master.yaml and runners.yaml, inferencex-e2e/perf-changelog.yaml
and the policy file): commit `base` = the 772-entry changelog without its last five entries, commit
`head` = those five appended again (in the layout the append-only gate accepts). Then runs, interleaved, N times each:

  baseline   python -c pass
  plan       ci-tools plan --base base --head head --label full-sweep-fail-fast --format json --no-runner-screen
  gate       ci-tools plan --event-path <synchronize payload> --gate-only --format json
  matrix     ci-tools matrix full-sweep --no-evals --config-file nvidia-master.yaml --config-file amd-master.yaml --format json

and prints the median wall time of each with its ratio to the baseline. Each run's output is checked
(the plan sweeps its five entries' points; the matrix has 1,820 rows), so the figures are for real work.

Goals (issue 4): plan <= 0.5 s, matrix <= 0.35 s (InferenceX: 9.65 s and 0.9 s).

    python3 benchmarks/plan.py [--runs 9] [--json]
"""

from __future__ import annotations

import argparse
import json
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
CORPUS = SHARED / "corpus" / "inferencex"
GOALS = {"plan": 0.5, "matrix": 0.35}


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def build(repo: Path) -> None:
    cfg = repo / "inferencex-e2e" / "configs"
    cfg.mkdir(parents=True)
    for name in ("nvidia-master.yaml", "amd-master.yaml", "runners.yaml"):
        shutil.copyfile(CORPUS / "configs" / name, cfg / name)
    shutil.copyfile(ROOT / "inferencex-e2e" / "ci-policy.yaml", repo / "inferencex-e2e" / "ci-policy.yaml")
    head = (CORPUS / "perf-changelog.yaml").read_bytes()
    starts = [i for i in range(len(head)) if head.startswith(b"- config-keys:", i) and (i == 0 or head[i - 1] == 10)]
    log = repo / "inferencex-e2e" / "perf-changelog.yaml"
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "bench@example.invalid")
    git(repo, "config", "user.name", "bench")
    # The corpus's last entries are separated by lines of spaces and double empty lines, which the
    # append-only gate (and so `plan`) refuses: append them in the canonical layout instead.
    base = head[: starts[-5]].rstrip(b" \n") + b"\n"
    ends = starts[-4:] + [len(head)]
    tail = [b"\n".join(line for line in head[s:e].split(b"\n") if line.strip()) + b"\n"
            for s, e in zip(starts[-5:], ends)]
    head = base + b"\n" + b"\n".join(tail)
    log.write_bytes(base)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    git(repo, "tag", "base")
    log.write_bytes(head)
    git(repo, "commit", "-qam", "five entries")
    git(repo, "tag", "head")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if not CORPUS.is_dir():
        sys.exit(f"the shared corpus is missing: {CORPUS}")
    py = sys.executable
    event = SHARED / "corpus" / "github-webhooks" / "pull_request" / "synchronize.payload.json"
    with tempfile.TemporaryDirectory(prefix="ci-tools-bench-plan-") as tmp:
        repo = Path(tmp)
        build(repo)
        cfg = repo / "inferencex-e2e" / "configs"
        cmds = {
            "baseline": [py, "-c", "pass"],
            "plan": [py, "-m", "ci_tools", "plan", "--base", "base", "--head", "head",
                     "--label", "full-sweep-fail-fast", "--format", "json",
                     # the corpus has no recipes: the screen would refuse every row (ci-tools' runner
                     # serves rows from recipes), so the plan of work is measured as InferenceX lays it out
                     "--no-runner-screen"],
            "gate": [py, "-m", "ci_tools", "plan", "--event-path", str(event), "--gate-only", "--format", "json",
                     "--head-message", "bench"],
            "matrix": [py, "-m", "ci_tools", "matrix", "full-sweep", "--no-evals",
                       "--config-file", str(cfg / "nvidia-master.yaml"), "--config-file", str(cfg / "amd-master.yaml"),
                       "--format", "json"],
        }
        times: dict[str, list[float]] = {k: [] for k in cmds}
        cpu: dict[str, list[float]] = {k: [] for k in cmds}
        env_ok = {}
        for _ in range(args.runs):
            for name, cmd in cmds.items():
                dt, ct, proc = run_timed(cmd, repo)
                cpu[name].append(ct)
                if proc.returncode != 0:
                    sys.exit(f"{name} failed (exit {proc.returncode}): {proc.stderr.decode()[-2000:]}")
                if name == "plan":
                    plan = json.loads(proc.stdout)
                    assert plan["sweep"] and len(plan["entries"]) == 5 and plan["points"], plan["reason"]
                    env_ok["plan"] = (plan["totals"]["points"], plan["totals"]["gpu-hours"])
                elif name == "matrix":
                    assert len(json.loads(proc.stdout)) == 1820
                times[name].append(dt)
    base = statistics.median(times["baseline"])
    result = {name: {"median_s": round(statistics.median(v), 4), "ratio_to_python": round(statistics.median(v) / base, 1),
                     "median_cpu_s": round(statistics.median(cpu[name]), 4)}
              for name, v in times.items()}
    load = os.getloadavg()[0]
    if args.json:
        print(json.dumps({"runs": args.runs, "load": load, "results": result, "plan": env_ok.get("plan")}, indent=2))
    else:
        print(f"{args.runs} runs each, median per whole process (1-min load average at the end: {load:.2f}):")
        for name, r in result.items():
            goal = f"   goal <= {GOALS[name]} s: {'ok' if r['median_s'] <= GOALS[name] else 'MISSED'}" if name in GOALS else ""
            print(f"  {name:<9} wall {r['median_s']:.3f} s  cpu {r['median_cpu_s']:.3f} s  "
                  f"x{r['ratio_to_python']} python -c pass{goal}")
        if "plan" in env_ok:
            print(f"  (the 5-entry plan has {env_ok['plan'][0]} points, {env_ok['plan'][1]} GPU-h)")
    return 0 if all(result[n]["median_s"] <= g for n, g in GOALS.items()) else 1


if __name__ == "__main__":
    sys.exit(main())
