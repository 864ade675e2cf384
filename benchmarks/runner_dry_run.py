#!/usr/bin/env python3
"""Wall time of whole `ci-tools runner run --dry-run` processes over every row of the example repository.

The rows are what `plan` would emit for this repository's master configs (matrix expansion with the
config key filled in): each single-node row with `--backend docker`, `slurm` and `process`, each
multi-node row with `--backend slurm` (the only one it runs on), and `runner profile --dry-run` for
the throughput rows of the profiled engines, and `runner acceptance --dry-run` for each SPEED-Bench
collection cell (`config acceptance-matrix`). Each kind of command is run N times, interleaved with
`python -c pass`, and the median wall and CPU time of one process is printed with its ratio to that
baseline. Every command must succeed or refuse the row with exit 1 (a recipe without a point for it),
and does the same on every run, so the figures are for real planning work.

`--save DIR` writes each command's output (stdout, then the exit code) to DIR/<row>.<kind>.txt: two
trees can be compared byte for byte (`diff -r`), the check that a change left every dry run as it was.

    python3 benchmarks/runner_dry_run.py [--runs 3] [--json] [--save DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from timing import run_timed

ROOT = Path(__file__).resolve().parents[1]
FIXED = ["--aiperf-bin", "aiperf", "--model-store", "/mnt/models", "--hf-cache", "/mnt/hf_hub_cache",
         "--runner-name", "bench_0", "--out", "/runner/_work/out", "--root", str(ROOT)]
PROFILED = ("sglang", "vllm")


def rows() -> list[tuple[str, dict]]:
    """(name, row) of every row the example repository's master configs expand to."""
    sys.path.insert(0, str(ROOT))
    from ci_tools import names
    from ci_tools.config.load import default_master_paths, read_masters, read_runners
    from ci_tools.sweep.matrix import Filters, expand

    entries = read_masters(default_master_paths(ROOT), ROOT).entries
    hardware = (read_runners(ROOT / names.RUNNERS, ROOT).data or {}).get("hardware") or {}
    out = []
    for i, r in enumerate(expand(entries, hardware, Filters())):
        out.append((f"{i:03d}-{r.key}", r.row.replace(config_key=r.key).as_dict()))
    return out


def cells() -> list[dict]:
    """The SPEED-Bench collection cells of the example repository (`config acceptance-matrix`)."""
    proc = subprocess.run([sys.executable, "-m", "ci_tools", "config", "acceptance-matrix", "--format", "json"],
                          cwd=ROOT, capture_output=True, text=True, check=True)
    return json.loads(proc.stdout)


def commands(folder: Path) -> list[tuple[str, str, list[str]]]:
    """(kind, name, argv): every dry run of the benchmark, its row written into FOLDER."""
    py = sys.executable
    out = []
    for name, row in rows():
        path = folder / f"{name}.json"
        path.write_text(json.dumps(row), encoding="utf-8")
        run = [py, "-m", "ci_tools", "runner", "run", "--row", str(path), "--dry-run", *FIXED]
        if "prefill" in row:
            out.append(("multinode", f"{name}.slurm", [*run, "--backend", "slurm"]))
            continue
        for backend in ("docker", "slurm", "process"):
            out.append((f"single-{backend}", f"{name}.{backend}", [*run, "--backend", backend]))
        if row.get("framework") in PROFILED and not row.get("run-eval"):
            out.append(("profile", f"{name}.profile", [py, "-m", "ci_tools", "runner", "profile", "--row", str(path),
                                                       "--dry-run", *FIXED, "--backend", "docker"]))
    for i, cell in enumerate(cells()):
        path = folder / f"cell-{i:02d}.json"
        path.write_text(json.dumps(cell), encoding="utf-8")
        out.append(("acceptance", f"cell-{i:02d}-{cell['id']}.docker", [
            py, "-m", "ci_tools", "runner", "acceptance", "--row", str(path), "--dry-run", *FIXED, "--backend", "docker",
            "--speed-bench", "/mnt/datasets/speed-bench/coding.jsonl"]))
    return out


# the GPUs and backend of a bare host: the dry runs are the same on every machine
BARE_ENV = {k: v for k, v in os.environ.items() if k not in ("CUDA_VISIBLE_DEVICES", "CI_TOOLS_GPUS", "CI_TOOLS_BACKEND")}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--save", type=Path, default=None, help="write every output to this folder")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="ci-tools-bench-runner-") as tmp:
        cmds = commands(Path(tmp))
        wall: dict[str, list[float]] = {"baseline": []}
        cpu: dict[str, list[float]] = {"baseline": []}
        seen: dict[str, bytes] = {}
        codes: dict[str, int] = {}
        for _ in range(args.runs):
            for kind, name, argv in cmds:
                for k, a in (("baseline", [sys.executable, "-c", "pass"]), (kind, argv)):
                    w, c, proc = run_timed(a, ROOT, BARE_ENV)
                    wall.setdefault(k, []).append(w)
                    cpu.setdefault(k, []).append(c)
                if proc.returncode not in (0, 1):
                    sys.exit(f"{name} failed (exit {proc.returncode}): {proc.stderr.decode()[-2000:]}")
                text = proc.stdout + proc.stderr.replace(str(Path(tmp)).encode(), b"ROWS") + \
                    f"\nexit {proc.returncode}\n".encode()
                if seen.setdefault(name, text) != text:
                    sys.exit(f"{name}: two runs printed different text")
                codes[name] = proc.returncode
        if args.save:
            args.save.mkdir(parents=True, exist_ok=True)
            for name, text in seen.items():
                (args.save / f"{name}.txt").write_bytes(text)
    base = statistics.median(wall["baseline"])
    result = {k: {"processes": len(v) // args.runs, "median_s": round(statistics.median(v), 4),
                  "ratio_to_python": round(statistics.median(v) / base, 1),
                  "median_cpu_s": round(statistics.median(cpu[k]), 4)} for k, v in wall.items()}
    load = os.getloadavg()[0]
    refused = sorted(n for n, c in codes.items() if c)
    if args.json:
        print(json.dumps({"runs": args.runs, "load": load, "results": result, "refused": refused}, indent=2))
        return 0
    print(f"{args.runs} runs of {len(cmds)} dry runs, median per whole process (1-min load average at the end: "
          f"{load:.2f}):")
    for k, r in result.items():
        print(f"  {k:<15} {r['processes']:>3} x  wall {r['median_s']:.3f} s  cpu {r['median_cpu_s']:.3f} s  "
              f"x{r['ratio_to_python']} python -c pass")
    print(f"  refused (exit 1): {len(refused)} of {len(codes)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
