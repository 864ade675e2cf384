#!/usr/bin/env python3
"""Whole-process cost of `ci-tools config validate` on the InferenceX corpus (208 entries), or on a
hostile master (`--case duplicates`: one entry whose search space repeats one row --rows times).

Runs the command and a baseline (`ci-tools --version`: interpreter + CLI start-up) alternately in
child processes, N times each, and prints the median wall time, the peak RSS and the ratio of the
median to the baseline's, so numbers from machines of different speed can be compared. With
--against CHECKOUT the same command of another tree (e.g. a worktree of main) runs alternately too.

    python3 benchmarks/config_validate.py [--runs 7] [--shared ../shared]
    python3 benchmarks/config_validate.py --case duplicates --rows 150000 --runs 3 --against ../main
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def measure(argv: list[str], cwd: Path, tree: Path = ROOT) -> tuple[float, int]:
    """Wall seconds and peak RSS (KiB) of one child process, importing ci_tools from TREE."""
    start = time.perf_counter()
    env = {**os.environ, "PYTHONPATH": str(tree.resolve())}
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_maxrss


def duplicates_master(folder: Path, rows: int) -> Path:
    """One entry of the repository's first master whose fixed-sequence search space is one row, ROWS times
    (the adversarial pass's 150,000 took 43 s and 0.9 GB)."""
    head = (ROOT / "inferencex-e2e/configs/nvidia-master.yaml").read_text().split("\n\n")[0:2]
    entry = head[1].split("  scenarios:")[0]
    path = folder / "dup-master.yaml"
    path.write_text(entry + "  scenarios:\n    fixed-seq-len:\n    - isl: 1024\n      osl: 1024\n      search-space:\n"
                    + "      - { tp: 4, ep: 1, conc-list: [4] }\n" * rows)
    return path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--shared", type=Path, default=Path(os.environ.get("CI_TOOLS_SHARED", ROOT.parent / "shared")))
    ap.add_argument("--case", choices=("corpus", "duplicates"), default="corpus")
    ap.add_argument("--rows", type=int, default=150_000, help="--case duplicates: how many times the row repeats")
    ap.add_argument("--against", type=Path, help="another checkout whose `config validate` runs alternately")
    args = ap.parse_args()
    if args.against and not (args.against / "ci_tools" / "__init__.py").is_file():
        print(f"--against {args.against}: not a ci-tools checkout (no ci_tools/__init__.py there)", file=sys.stderr)
        return 2
    tmp = None
    if args.case == "corpus":
        cwd = args.shared / "corpus" / "inferencex"
        if not (cwd / "configs" / "nvidia-master.yaml").is_file():
            print(f"corpus not found under {cwd}", file=sys.stderr)
            return 2
        what = "the corpus (208 entries)"
        cmd = [sys.executable, "-m", "ci_tools", "config", "validate", "--master", "configs/nvidia-master.yaml",
               "--master", "configs/amd-master.yaml", "--runners", "configs/runners.yaml", "--format", "json"]
    else:
        import tempfile

        tmp = tempfile.TemporaryDirectory()
        cwd = Path(tmp.name)
        duplicates_master(cwd, args.rows)
        what = f"one entry, one search-space row {args.rows:,} times"
        cmd = [sys.executable, "-m", "ci_tools", "config", "validate", "--master", "dup-master.yaml", "--format", "json"]
    base = [sys.executable, "-m", "ci_tools", "--version"]
    trees = {"validate": ROOT, **({"against": args.against} if args.against else {})}
    runs: dict[str, list[tuple[float, int]]] = {name: [] for name in (*trees, "baseline")}
    measure(cmd, cwd)  # warm the file cache and .pyc files
    for _ in range(args.runs):
        for name, tree in trees.items():
            runs[name].append(measure(cmd, cwd, tree))
        runs["baseline"].append(measure(base, cwd))
    med = {k: statistics.median(w for w, _ in v) for k, v in runs.items()}
    rss = {k: max(r for _, r in v) for k, v in runs.items()}
    print(f"config validate on {what}: median {med['validate']:.3f} s, peak RSS {rss['validate'] / 1024:.1f} MiB")
    if args.against:
        print(f"  the same with {args.against}: median {med['against']:.3f} s, peak RSS {rss['against'] / 1024:.1f} MiB "
              f"(this tree: {med['validate'] / med['against']:.2f}x its time, {rss['validate'] / rss['against']:.2f}x "
              "its memory)")
    print(f"baseline (ci-tools --version): median {med['baseline']:.3f} s, peak RSS {rss['baseline'] / 1024:.1f} MiB")
    print(f"ratio validate / baseline: {med['validate'] / med['baseline']:.1f}x over {args.runs} runs")
    if tmp is not None:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
