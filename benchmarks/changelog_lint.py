#!/usr/bin/env python3
"""Wall time of the whole `ci-tools changelog lint` process on the real 772-entry changelog.

Builds a scratch git repository laid out like InferenceX from ../shared/corpus/inferencex
(perf-changelog.yaml, configs/amd-master.yaml, configs/nvidia-master.yaml): commit `base` as is,
commit `head` with one valid entry appended. Then runs, interleaved, N times each:

  baseline   python -c pass                       (interpreter start alone)
  help       ci-tools --help
  lint       ci-tools changelog lint --base base --head head --pr 9999 ...

and prints the median wall time of each, the ratio to the baseline, and the median CPU time
(user + system, the process and its git children), which a busy machine inflates much less. Every lint run must exit 0
(and a tampered variant must exit 1), so the figure is for a gate that really ran.

    python3 benchmarks/changelog_lint.py [--runs 15] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("CI_TOOLS_SHARED", ROOT.parent / "shared"))
CORPUS = SHARED / "corpus" / "inferencex"

ENTRY = b"""
- config-keys:
    - dsv4-fp4-b200-vllm-agentic-mtp
    - dsr1-fp8-mi300x-*
  scenario-type:
    - agentic-coding
  description:
    - "Benchmark entry appended by benchmarks/changelog_lint.py."
  pr-link: https://github.com/SemiAnalysisAI/InferenceX/pull/XXX
"""


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def build(repo: Path) -> None:
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "bench@example.invalid")
    git(repo, "config", "user.name", "bench")
    (repo / "configs").mkdir()
    for name in ("amd-master.yaml", "nvidia-master.yaml"):
        shutil.copyfile(CORPUS / "configs" / name, repo / "configs" / name)
    log = (CORPUS / "perf-changelog.yaml").read_bytes()
    (repo / "perf-changelog.yaml").write_bytes(log)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    git(repo, "tag", "base")
    (repo / "perf-changelog.yaml").write_bytes(log + ENTRY)
    git(repo, "commit", "-q", "-am", "head")
    git(repo, "tag", "head")
    (repo / "perf-changelog.yaml").write_bytes(log.replace(b"6-7% uplift", b"6-8% uplift", 1) + ENTRY)
    git(repo, "commit", "-q", "-am", "tampered")
    git(repo, "tag", "tampered")


def timed(cmd: list[str], cwd: Path, expect: int) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the child and its own children, e.g. git)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True)
    elapsed = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode != expect:
        sys.exit(f"{' '.join(cmd)} exited {proc.returncode}, expected {expect}:\n"
                 f"{proc.stdout.decode()}{proc.stderr.decode()}")
    return elapsed, cpu


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if not (CORPUS / "perf-changelog.yaml").is_file():
        sys.exit(f"corpus not found: {CORPUS} (set CI_TOOLS_SHARED)")
    exe = shutil.which("ci-tools", path=str(Path(sys.executable).parent)) or ""
    ci_tools = [exe] if exe else [sys.executable, "-m", "ci_tools"]
    lint = [*ci_tools, "changelog", "lint", "--changelog-file", "perf-changelog.yaml",
            "--master", "configs/amd-master.yaml", "--master", "configs/nvidia-master.yaml",
            "--repo", "SemiAnalysisAI/InferenceX", "--pr", "9999"]
    cases = {
        "baseline": ([sys.executable, "-c", "pass"], 0),
        "help": ([*ci_tools, "--help"], 0),
        "lint": ([*lint, "--base", "base", "--head", "head"], 0),
        "lint-rejects": ([*lint, "--base", "base", "--head", "tampered"], 1),
    }
    with tempfile.TemporaryDirectory(prefix="ci-tools-bench-") as tmp:
        repo = Path(tmp)
        build(repo)
        for cmd, expect in cases.values():  # warm the page cache and .pyc files
            timed(cmd, repo, expect)
        times: dict[str, list[float]] = {name: [] for name in cases}
        cpus: dict[str, list[float]] = {name: [] for name in cases}
        for _ in range(args.runs):
            for name, (cmd, expect) in cases.items():
                wall, cpu = timed(cmd, repo, expect)
                times[name].append(wall)
                cpus[name].append(cpu)
    med = {name: statistics.median(v) for name, v in times.items()}
    report = {name: {"median_s": round(m, 4), "min_s": round(min(times[name]), 4),
                     "ratio_to_baseline": round(m / med["baseline"], 2),
                     "median_cpu_s": round(statistics.median(cpus[name]), 4)} for name, m in med.items()}
    report["runs"] = args.runs
    report["loadavg_1min"] = round(os.getloadavg()[0], 2)  # other work on the machine inflates all figures
    report["cpus"] = os.cpu_count()
    report["command"] = " ".join(cases["lint"][0]).replace(str(Path(sys.executable).parent) + "/", "")
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"{args.runs} runs each, interleaved; {report['command']}")
        print(f"  (load average {report['loadavg_1min']} on {report['cpus']} CPUs: compare the ratios when the machine is busy)")
        for name in cases:
            r = report[name]
            print(f"  {name:<13} median {r['median_s'] * 1000:7.1f} ms  min {r['min_s'] * 1000:7.1f} ms"
                  f"  x{r['ratio_to_baseline']:.2f} of `python -c pass`  cpu {r['median_cpu_s'] * 1000:6.1f} ms")
        verdict = "meets" if med["lint"] <= 0.25 else "MISSES"
        print(f"goal <= 250 ms for lint: {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
