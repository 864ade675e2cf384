"""What a throughput-vs-interactivity chart shows, prepared once for every drawing of it (pure).

`results pareto --plot` and `results compare --plot` draw a PNG with matplotlib (`render.py`), the
sweep report draws the same chart with plotly (`report_html.py`); all three take a `Chart` from
here, so the points, frontiers and the note about points left out cannot drift apart.

A chart is one or more series (the PR's and main's points, or a single set), each with its points
and its Pareto frontier, plus the points that could not be drawn and why (a point needs both
tok/s/GPU and P90 tok/s/user: a published baseline often has only a median).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

from ci_tools.results.pareto import Point, dominates

X_TITLE = "interactivity, P90 (tok/s/user)"
Y_TITLE = "throughput (tok/s/GPU)"
TITLE = "Throughput per GPU against P90 interactivity"


@dataclass
class ChartPoint:
    name: str
    tok_s_gpu: float
    intvty_p90: float
    frontier: bool = False
    info: dict = field(default_factory=dict)   # hover and table details: topology, conc, values, verdict


@dataclass
class Series:
    name: str                  # "PR", "main", or "points"
    points: list[ChartPoint]

    @property
    def frontier(self) -> list[ChartPoint]:
        return sorted((p for p in self.points if p.frontier), key=lambda p: p.intvty_p90)


@dataclass
class Chart:
    title: str
    series: list[Series]
    dropped: list[str] = field(default_factory=list)   # "main tp2-c64" ...: not drawn, no P90 value

    @property
    def note(self) -> str:
        if not self.dropped:
            return ""
        return (f"not drawn (no P90 interactivity or throughput): {', '.join(self.dropped)}")


def _with_frontier(points: list[ChartPoint]) -> list[ChartPoint]:
    plain = [Point(p.name, p.tok_s_gpu, p.intvty_p90) for p in points]
    for p, q in zip(points, plain):
        p.frontier = not any(dominates(o, q) for o in plain if o is not q)
    return points


def from_points(points: list[Point], title: str = "") -> Chart:
    """One set of points (`results pareto`): frontier and dominated points."""
    pts = [ChartPoint(p.name, p.tok_s_gpu, p.intvty_p90) for p in points]
    return Chart(title or TITLE, [Series("points", _with_frontier(pts))])


def _number(v) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def side(name: str, results: Iterable[dict], info=None) -> tuple[Series, list[str]]:
    """A side of a comparison from result documents: drawable points, and the names of those left out."""
    from ci_tools.results.compare import label

    pts, dropped = [], []
    for r in results:
        if not (isinstance(r, dict) and r.get("valid") and isinstance(r.get("point"), dict)):
            continue
        h = r.get("headline") or {}
        tok, iv = _number(h.get("tok_s_gpu")), _number(h.get("intvty_p90"))
        if tok is None or iv is None or tok <= 0:
            dropped.append(f"{name} {label(r['point'])}")
            continue
        pts.append(ChartPoint(label(r["point"]), tok, iv, info=info(r) if info else {}))
    return Series(name, _with_frontier(pts)), dropped


def from_sides(head: list[dict], main: list[dict], title: str = "", info=None) -> Chart:
    """The PR's points against main's latest (`results compare`, the report); `info(result)` adds
    hover details to each point."""
    pr, dropped_pr = side("PR", head, info)
    base, dropped_main = side("main", main, info)
    return Chart(title or TITLE, [s for s in (base, pr) if s.points], dropped_pr + dropped_main)
