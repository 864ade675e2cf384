#!/usr/bin/env python3
"""Size of the seed PR's sweep report page and how long Chromium takes to show it from `file://`.

Writes the report of docs/examples/seed-compare (with the recorded H200 telemetry of
tests/data/nvidia-smi-h200) through `ci-tools results report` of the tree it runs in, then
opens it N times, each in a fresh headless Debian chromium (Playwright), and times, from the start
of the navigation: the first chart drawn (the chart's SVG laid out and painted: a frame after it
has a size) and the page's load event. Prints the page size and the median, min and max of both.

    python3 benchmarks/report_page.py [--runs 5] [--json]

Run it from an older checkout too (its own `benchmarks/report_page.py` of that day waited for
plotly's traces instead): the figures of both are in docs/performance.md with the machine's load.
"""

from __future__ import annotations

import argparse
import json
import os
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
# the chart is on screen: its SVG has a size, and one frame has been painted since
DRAWN = """() => new Promise(done => { const check = () => { const s = document.querySelector('svg.chart');
  if (s && s.getBoundingClientRect().height > 0) requestAnimationFrame(() => done(performance.now()));
  else requestAnimationFrame(check); }; check(); })"""


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        page = Path(tmp) / "sweep-report.html"
        subprocess.run([sys.executable, "-m", "ci_tools", "results", "report", str(SEED / "pr-local-results.csv"),
                        "--baseline", str(SEED / "main-baseline.csv"), "--telemetry",
                        str(ROOT / "tests" / "data" / "nvidia-smi-h200"), "--out", str(page)], check=True,
                       stdout=subprocess.DEVNULL, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
        size = page.stat().st_size
        drawn, loaded = [], []
        with sync_playwright() as pw:
            for _ in range(args.runs):
                with tempfile.TemporaryDirectory() as profile:
                    ctx = pw.chromium.launch_persistent_context(profile, executable_path="/usr/bin/chromium",
                                                                headless=True, args=FLAGS)
                    pg = ctx.new_page()
                    t = time.perf_counter()
                    pg.goto(page.as_uri(), wait_until="commit")
                    pg.evaluate(DRAWN)
                    drawn.append(time.perf_counter() - t)
                    pg.wait_for_load_state("load")
                    loaded.append(time.perf_counter() - t)
                    ctx.close()
    out = {"bytes": size, "chart_s_median": statistics.median(drawn), "chart_s_min": min(drawn),
           "chart_s_max": max(drawn), "load_s_median": statistics.median(loaded), "load_s_max": max(loaded),
           "runs": args.runs, "load_average": os.getloadavg()[0]}
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        print(f"page {size:,} bytes; first chart drawn: median {out['chart_s_median']:.2f} s (min "
              f"{out['chart_s_min']:.2f}, max {out['chart_s_max']:.2f}); load event: median {out['load_s_median']:.2f} s "
              f"(max {out['load_s_max']:.2f}) over {args.runs} fresh browsers; load average {out['load_average']:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
