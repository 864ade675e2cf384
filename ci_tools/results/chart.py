"""What a throughput-vs-interactivity chart shows, prepared once for every drawing of it (pure).

`results pareto --plot` and `results compare --plot` draw a PNG with matplotlib (`render.py`), the
sweep report draws the same chart as inline SVG (`report_svg.py`) and in characters for the job
summary (`report_text.py`); all take a `Chart` from here, so the points, frontiers, the note about
points left out, each series' look and the y axis (log or linear, its ticks and their words) cannot
drift apart: the backends only draw.

A chart is one or more series (the PR's and main's points, or a single set), each with its points
and its Pareto frontier, plus the points that could not be drawn and why (a point needs both
tok/s/GPU and P90 tok/s/user: a published baseline often has only a median).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterable

from ci_tools.results.identity import display_names, group, same_group
from ci_tools.results.pareto import Point, comparable, dominates

X_TITLE = "interactivity, P90 (tok/s/user)"
Y_TITLE = "throughput (tok/s/GPU)"
TITLE = "Throughput per GPU against P90 interactivity"


# Throughput spans decades (7k at c1 to 271k at c128 in the seed): on a linear axis every
# low-concurrency point sits on the floor. Above this ratio of largest to smallest the axis is log.
LOG_Y_ABOVE = 8.0


@dataclass(frozen=True)
class Look:
    """How a series is drawn, in words each backend maps to its own (matplotlib, SVG)."""

    colour: str
    marker: str          # "circle" or "square"
    dash: str            # the frontier line: "solid" or "dash"
    words: str           # the legend's name of the series


LOOKS = {
    "points": Look("#1f77b4", "circle", "solid", "Pareto frontier"),
    "PR": Look("#1f77b4", "circle", "solid", "PR"),
    "main": Look("#7f7f7f", "square", "dash", "main"),
}
DOMINATED = Look("#999999", "x", "solid", "dominated")   # a single set's points off its frontier


def tick_text(v: float) -> str:
    """A y tick's words: plain numbers, thousands as k (7k, 20k, 200k)."""
    return f"{v / 1000:g}k" if v >= 1000 else f"{v:g}"


@dataclass
class ChartPoint:
    name: str
    tok_s_gpu: float
    intvty_p90: float
    frontier: bool = False
    info: dict = field(default_factory=dict)   # hover and table details: topology, conc, values, verdict
    group: tuple = ()                          # the workload (identity.group): a frontier never spans two


@dataclass
class Series:
    name: str                  # "PR", "main", or "points"
    points: list[ChartPoint]

    @property
    def frontier(self) -> list[ChartPoint]:
        return sorted((p for p in self.points if p.frontier), key=lambda p: p.intvty_p90)

    @property
    def frontier_lines(self) -> list[list[ChartPoint]]:
        """The frontier as lines to draw: one per workload (an agentic and a fixed-seq-len frontier of
        one series are two lines, never one joining them)."""
        lines: list[list[ChartPoint]] = []
        keys: list[tuple] = []
        for p in self.frontier:
            i = next((n for n, k in enumerate(keys) if not p.group or not k or same_group(p.group, k)), None)
            if i is None:
                keys.append(p.group)
                lines.append([p])
            else:
                lines[i].append(p)
        return lines


@dataclass
class Chart:
    title: str
    series: list[Series]
    dropped: list[str] = field(default_factory=list)   # "main tp2-c64" ...: not drawn, no P90 value

    @property
    def log_y(self) -> bool:
        ys = self._ys()
        return bool(ys) and max(ys) / min(ys) > LOG_Y_ABOVE

    @property
    def y_ticks(self) -> list[float]:
        """On a log axis, 1, 2 and 5 per decade over the decades the points span ([] on a linear one:
        the backend's own ticks)."""
        if not self.log_y:
            return []
        ys = self._ys()
        lo, hi = math.floor(math.log10(min(ys))), math.ceil(math.log10(max(ys)))
        return [m * 10 ** e for e in range(lo, hi + 1) for m in (1, 2, 5)]

    def _ys(self) -> list[float]:
        return [p.tok_s_gpu for s in self.series for p in s.points if p.tok_s_gpu > 0]

    @property
    def note(self) -> str:
        if not self.dropped:
            return ""
        return (f"not drawn (no P90 interactivity or throughput): {', '.join(self.dropped)}")


def _with_frontier(points: list[ChartPoint]) -> list[ChartPoint]:
    plain = [Point(p.name, p.tok_s_gpu, p.intvty_p90, group=p.group) for p in points]
    for p, q in zip(points, plain):
        p.frontier = not any(comparable(o, q) and dominates(o, q) for o in plain if o is not q)
    return points


def from_points(points: list[Point], title: str = "") -> Chart:
    """One set of points (`results pareto`): frontier and dominated points."""
    pts = [ChartPoint(p.name, p.tok_s_gpu, p.intvty_p90, group=p.group) for p in points]
    return Chart(title or TITLE, [Series("points", _with_frontier(pts))])


def _number(v) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def side(name: str, results: Iterable[dict], info=None) -> tuple[Series, list[str]]:
    """A side of a comparison from result documents: drawable points, and the names of those left out."""
    valid = [r for r in results if isinstance(r, dict) and r.get("valid") and isinstance(r.get("point"), dict)]
    pts, dropped = [], []
    for r, shown in zip(valid, display_names([r["point"] for r in valid])):
        h = r.get("headline") or {}
        tok, iv = _number(h.get("tok_s_gpu")), _number(h.get("intvty_p90"))
        if tok is None or iv is None or tok <= 0:
            dropped.append(f"{name} {shown}")
            continue
        pts.append(ChartPoint(shown, tok, iv, info=info(r) if info else {}, group=group(r["point"])))
    return Series(name, _with_frontier(pts)), dropped


def from_sides(head: list[dict], main: list[dict], title: str = "", info=None) -> Chart:
    """The PR's points against main's latest (`results compare`, the report); `info(result)` adds
    hover details to each point."""
    pr, dropped_pr = side("PR", head, info)
    base, dropped_main = side("main", main, info)
    return Chart(title or TITLE, [s for s in (base, pr) if s.points], dropped_pr + dropped_main)
