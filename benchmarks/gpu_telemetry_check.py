#!/usr/bin/env python3
"""Check the GPU telemetry sampler and the node check against a real nvidia-smi (run on a GPU machine).

    python3 benchmarks/gpu_telemetry_check.py [--seconds 30] [--out DIR] [--load]

Needs only python3 and nvidia-smi (ci_tools is imported from this checkout; its telemetry and
node-check modules are pure Python). Runs the exact sampler command `runner run` starts
(ci_tools.runner.sampler.sampler_argv) for --seconds, optionally with a GPU load in the middle
third (--load: bf16 matrix products with torch, when torch is installed), then parses the samples
with the same code `results process` uses (ci_tools.results.telemetry) and writes into --out:
  gpu_telemetry.csv   the raw samples          summary.json   telemetry.summarize() of them
  node_check.txt      the node check's output  report.txt     what was checked, and the verdicts
Exit 0 when nvidia-smi accepted the query, every line parsed and the summary has power and energy.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ci_tools.results import telemetry  # noqa: E402
from ci_tools.runner import nodecheck  # noqa: E402
from ci_tools.runner.sampler import sampler_argv  # noqa: E402


def load(seconds: float, report: list[str]) -> None:
    try:
        import torch
    except ImportError:
        report.append("load: torch is not installed; idle samples only")
        return
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    end = time.monotonic() + seconds
    n = 0
    while time.monotonic() < end:
        (a @ a).sum().item()
        n += 1
    report.append(f"load: {n} 8192x8192 bf16 matrix products in {seconds:g} s on GPU 0")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--out", type=Path, default=Path("gpu-telemetry-check"))
    ap.add_argument("--load", action="store_true")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    report: list[str] = []
    argv = sampler_argv()
    report.append("sampler: " + " ".join(argv))
    csv_path = args.out / "gpu_telemetry.csv"
    with csv_path.open("wb") as fh:
        proc = subprocess.Popen(argv, stdout=fh, stderr=subprocess.STDOUT)
        start = time.time()
        if args.load:
            time.sleep(args.seconds / 3)
            load(args.seconds / 3, report)
            time.sleep(max(0.0, start + args.seconds - time.time()))
        else:
            time.sleep(args.seconds)
        proc.terminate()
        proc.wait(timeout=10)
        end = time.time()
    report.append(f"sampler exit: {proc.returncode} after {end - start:.1f} s")
    text = csv_path.read_text(errors="replace")
    samples, problems = telemetry.parse_csv(text, utc_offset_s=time.localtime().tm_gmtoff)
    report.append(f"parsed: {len(samples)} samples; problems: {problems or 'none'}")
    summary = telemetry.summarize(samples, window=(start + 1, end - 1))
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    first = min((s["t"] for s in samples), default=0)
    report.append(f"clock: first sample at {first - start:+.2f} s from the start (timestamps converted right "
                  "if this is within a few seconds)")
    check = subprocess.run(["sh", "-c", nodecheck.script("/nonexistent-model", str(args.out))],
                           capture_output=True, text=True)
    (args.out / "node_check.txt").write_text(check.stdout + check.stderr)
    facts, gpus = nodecheck.parse(check.stdout)
    verdict = nodecheck.problems(check.stdout, need_gpus=len(gpus), devices=None, model="org/none",
                                 model_path="/nonexistent-model", hf_cache=str(args.out), min_free_gib=0)
    report.append(f"node check: {len(gpus)} GPU(s) {[g['name'] for g in gpus]}; problems (the model one is "
                  f"expected): {verdict}")
    ok = (proc.returncode in (0, -15) and samples and not [p for p in problems if "were not samples" not in p]
          and summary["energy_j"] and all(g["power_w"] for g in summary["gpus"]))
    for g in summary["gpus"]:
        report.append(f"GPU {g['index']} {g['name']}: {g['samples']} samples, power {g['power_w']}, energy "
                      f"{g['energy_j']:.0f} J, SM clock {g['sm_clock_mhz']}, power-capped share "
                      f"{g['power_capped_share']}")
    report.append(f"power_capped: {summary['power_capped']}; verdict: {'OK' if ok else 'FAILED'}")
    (args.out / "report.txt").write_text("\n".join(report) + "\n")
    print("\n".join(report))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
