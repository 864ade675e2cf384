#!/usr/bin/env python3
"""CPU time of reading a sign-off comment (the checklist version, the ticked items, `Signed:`) on
hostile 1 MB bodies anyone can post, against the same shapes at 256 KB: a linear parser costs ~4x
more for 4x the text; the quadratic `Signed:` regex of issue 25 cost ~16x (65k newlines: 9.8 s).

Shapes: all newlines, blank-space lines, `Signed:` lines with nothing after them, unticked items,
ordinary text. For each it prints the median of N runs (process CPU time) and the 1 MB / 256 KB ratio.

    python3 benchmarks/signoff_parse.py [--runs 5] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ci_tools import names  # noqa: E402
from ci_tools.prbot.signoff import decide as signoff  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CHECKLIST = signoff.parse_checklist((ROOT / names.REVIEW_CHECKLIST).read_text(), names.REVIEW_CHECKLIST)

SHAPES = {
    "newlines": "\n",
    "blank lines": " \t\n",
    "empty Signed: lines": "Signed:\n",
    "unticked items": "- [ ] an item\n",
    "text": "looks good to me, thanks!\n",
}


def body(unit: str, size: int) -> str:
    return signoff.PHRASE + "\n" + unit * (size // len(unit)) + "Signed: @someone\n"


def cpu_of(text: str) -> float:
    t = time.process_time()
    signoff.has_phrase(text)
    signoff.checklist_checks(text, "someone", CHECKLIST)
    return time.process_time() - t


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    rows = {}
    for name, unit in SHAPES.items():
        small = statistics.median(cpu_of(body(unit, 256 << 10)) for _ in range(args.runs))
        big = statistics.median(cpu_of(body(unit, 1 << 20)) for _ in range(args.runs))
        rows[name] = {"256KB_s": round(small, 4), "1MB_s": round(big, 4), "ratio": round(big / small, 1) if small else None}
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        print(f"{'shape':<22}{'256 KB s':>10}{'1 MB s':>10}{'ratio':>8}")
        for name, r in rows.items():
            print(f"{name:<22}{r['256KB_s']:>10.4f}{r['1MB_s']:>10.4f}{r['ratio'] or 0:>8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
