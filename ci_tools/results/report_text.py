"""The report's chart in characters, for the job summary (pure).

GitHub's job summary is Markdown with no script and no inline SVG, and an image there must be a URL
the reader can fetch. A fenced block of characters shows everywhere: each side's points on a grid of
throughput against P90 interactivity (log throughput where `chart.Chart` says so), regressed points
marked, the axes' ends written out. The page (report_html.py) has the real chart.
"""

from __future__ import annotations

import math

from ci_tools.results import chart as charts

MARKS = {"PR": "●", "points": "●", "main": "■"}
REGRESSED = "▼"
CLASH = "◆"        # points of both sides in one cell


def _short(v: float) -> str:
    """An axis end: 7.3k, 271k, 625."""
    if v >= 10_000:
        return f"{v / 1000:,.0f}k"
    return f"{v / 1000:.1f}k" if v >= 1000 else f"{v:,.0f}"


def text_chart(chart: charts.Chart, width: int = 60, height: int = 14) -> str:
    pts = [(s.name, p) for s in chart.series for p in s.points if p.tok_s_gpu > 0]
    if not pts:
        return "(no point has both throughput and P90 interactivity)"
    xs = [p.intvty_p90 for _, p in pts]
    ys = [p.tok_s_gpu for _, p in pts]
    x0, x1 = min(xs), max(xs)
    if x1 == x0:
        x0, x1 = x0 - 1, x1 + 1
    fy = (lambda v: math.log10(v)) if chart.log_y else (lambda v: v)
    y0, y1 = fy(min(ys)), fy(max(ys))
    if y1 == y0:
        y0, y1 = y0 - 1, y1 + 1
    grid = [[" "] * width for _ in range(height)]
    for name, p in sorted(pts, key=lambda t: t[0] != "main"):      # the PR's over main's
        col = round((p.intvty_p90 - x0) / (x1 - x0) * (width - 1))
        row = height - 1 - round((fy(p.tok_s_gpu) - y0) / (y1 - y0) * (height - 1))
        mark = REGRESSED if "regressed" in (p.info.get("verdicts") or []) else MARKS[name]
        here = grid[row][col]
        grid[row][col] = mark if here in (" ", mark) or mark == REGRESSED else (here if here == REGRESSED else CLASH)
    top, bottom = _short(max(ys)), _short(min(ys))
    pad = max(len(top), len(bottom))
    lines = []
    for i, cells in enumerate(grid):
        tick = top if i == 0 else bottom if i == height - 1 else ""
        lines.append(f"{tick:>{pad}} │{''.join(cells)}".rstrip())
    lines.append(" " * pad + " └" + "─" * width)
    left, right = f"{x0:,.0f}", f"{x1:,.0f}"
    lines.append(" " * (pad + 2) + left + " " * max(1, width - len(left) - len(right)) + right)
    names = {s.name for s in chart.series}
    key = [f"{MARKS['PR']} PR" if "PR" in names else f"{MARKS['points']} point", f"{MARKS['main']} main" if "main" in names else ""]
    key += [f"{REGRESSED} regressed", f"{CLASH} both sides"]
    scale = "log " if chart.log_y else ""
    lines.append(f"y: {charts.Y_TITLE}, {scale}scale; x: {charts.X_TITLE}")
    lines.append("   ".join(k for k in key if k))
    return "\n".join(lines)
