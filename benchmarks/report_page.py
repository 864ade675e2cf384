#!/usr/bin/env python3
"""Size of the seed PR's sweep report page and how long Chromium takes to draw it from `file://`.

Writes the report of docs/examples/seed-compare (with the recorded H200 telemetry of
tests/data/nvidia-smi-h200) through `ci-tools results report`, then opens it N times in a fresh
headless Debian chromium (Playwright) and times navigation until the chart and the telemetry plots
have drawn their traces. Prints the page size, its share that is plotly.js, and the median, min and
max load time.

    python3 benchmarks/report_page.py [--runs 5] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SEED = ROOT / "docs" / "examples" / "seed-compare"
FLAGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]
DRAWN = ("document.querySelectorAll('#pareto .scatterlayer .trace').length > 0 && "
         "document.querySelectorAll('.telemetry-plot .scatterlayer .trace').length > 0")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright
    import plotly.offline

    with tempfile.TemporaryDirectory() as tmp:
        page = Path(tmp) / "report.html"
        subprocess.run([sys.executable, "-m", "ci_tools", "results", "report", str(SEED / "pr-local-results.csv"),
                        "--baseline", str(SEED / "main-baseline.csv"), "--telemetry",
                        str(ROOT / "tests" / "data" / "nvidia-smi-h200"), "--out", str(page)], check=True,
                       stdout=subprocess.DEVNULL)
        size = page.stat().st_size
        js = len(plotly.offline.get_plotlyjs().encode())
        times = []
        with sync_playwright() as pw:
            for _ in range(args.runs):
                with tempfile.TemporaryDirectory() as profile:
                    ctx = pw.chromium.launch_persistent_context(profile, executable_path="/usr/bin/chromium",
                                                                headless=True, args=FLAGS)
                    pg = ctx.new_page()
                    t = time.perf_counter()
                    pg.goto(page.as_uri())
                    pg.wait_for_function(DRAWN)
                    times.append(time.perf_counter() - t)
                    ctx.close()
    out = {"bytes": size, "plotly_js_bytes": js, "load_s_median": statistics.median(times),
           "load_s_min": min(times), "load_s_max": max(times), "runs": args.runs}
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        print(f"page {size:,} bytes ({js / size:.1%} plotly.js); load until drawn: median {out['load_s_median']:.2f} s "
              f"(min {out['load_s_min']:.2f}, max {out['load_s_max']:.2f}) over {args.runs} fresh browsers")
    return 0


if __name__ == "__main__":
    sys.exit(main())
