"""The sweep report's charts as inline SVG (pure): drawn by the page itself, no script needed.

GitHub opens an unzipped HTML artifact in the browser but does not say that its scripts run there,
so the page must read completely without JavaScript: the throughput/interactivity chart and each
job's power and SM clock are drawn here as static SVG, styled by the page's CSS (colours follow the
reader's light or dark scheme). The page's small script only adds a tooltip, the series toggles and
table sorting on top; every point also carries an SVG <title>, which browsers show on hover.

What is drawn comes from `chart.Chart` (points, frontiers, the y axis's log-or-linear decision and
ticks), as the PNG of `results pareto --plot` does, so the two cannot tell different stories.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass
from typing import Sequence

from ci_tools.results import chart as charts

CHAR_W = 0.58   # a character's width in ems, for laying out labels without a font at hand


def _e(text) -> str:
    return html.escape(str(text), quote=True)


def _n(v: float) -> str:
    """A coordinate, short: two decimals are well below a pixel."""
    return f"{v:.2f}".rstrip("0").rstrip(".")


def nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """Round ticks (1, 2, 5 × 10^k steps) covering [lo, hi]."""
    if hi <= lo:
        hi = lo + 1.0
    raw = (hi - lo) / max(count, 1)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    start = math.ceil(lo / step) * step
    out = []
    v = start
    while v <= hi + step * 1e-9:
        out.append(round(v, 10))
        v += step
    return out


def tick_words(v: float) -> str:
    if v >= 1000:
        return charts.tick_text(v)
    return f"{v:g}"


@dataclass(frozen=True)
class Frame:
    """Where the plot area sits in the SVG, and how values map onto it."""

    width: float
    height: float
    left: float
    right: float
    top: float
    bottom: float
    x0: float
    x1: float
    y0: float
    y1: float
    log_y: bool

    def x(self, v: float) -> float:
        return self.left + (v - self.x0) / (self.x1 - self.x0) * (self.width - self.left - self.right)

    def y(self, v: float) -> float:
        if self.log_y:
            a, b, v = math.log10(self.y0), math.log10(self.y1), math.log10(max(v, 1e-12))
        else:
            a, b = self.y0, self.y1
        return self.height - self.bottom - (v - a) / (b - a) * (self.height - self.top - self.bottom)


def _frame(chart: charts.Chart, width: float, height: float, compact: bool) -> Frame:
    pts = [p for s in chart.series for p in s.points]
    xs = [p.intvty_p90 for p in pts] or [0.0, 1.0]
    ys = [p.tok_s_gpu for p in pts if p.tok_s_gpu > 0] or [1.0, 10.0]
    xlo, xhi = min(xs), max(xs)
    pad = (xhi - xlo) * 0.08 or max(abs(xhi) * 0.1, 1.0)
    xlo, xhi = max(0.0, xlo - pad), xhi + pad
    if chart.log_y:
        ylo, yhi = min(ys) / 1.35, max(ys) * 1.35
    else:
        span = (max(ys) - min(ys)) or max(ys) * 0.2 or 1.0
        ylo, yhi = max(0.0, min(ys) - span * 0.12), max(ys) + span * 0.12
    left = 52 if compact else 64
    return Frame(width, height, left, 12 if compact else 18, 12, 44 if compact else 50, xlo, xhi, ylo, yhi,
                 chart.log_y)


def _axes(f: Frame, chart: charts.Chart, font: float) -> list[str]:
    out = ['<g class="axes">']
    xt = [t for t in nice_ticks(f.x0, f.x1, 4 if f.width < 500 else 6) if f.x0 <= t <= f.x1]
    if f.log_y:
        yt = [t for t in chart.y_ticks if f.y0 <= t <= f.y1]
    else:
        yt = [t for t in nice_ticks(f.y0, f.y1, 5) if f.y0 <= t <= f.y1]
    bottom, top = f.height - f.bottom, f.top
    for t in xt:
        x = f.x(t)
        out.append(f'<line class="grid" x1="{_n(x)}" y1="{_n(top)}" x2="{_n(x)}" y2="{_n(bottom)}"/>')
        out.append(f'<text class="tick" x="{_n(x)}" y="{_n(bottom + font + 4)}" text-anchor="middle">{_e(tick_words(t))}</text>')
    for t in yt:
        y = f.y(t)
        out.append(f'<line class="grid" x1="{_n(f.left)}" y1="{_n(y)}" x2="{_n(f.width - f.right)}" y2="{_n(y)}"/>')
        out.append(f'<text class="tick" x="{_n(f.left - 6)}" y="{_n(y + font * 0.35)}" text-anchor="end">{_e(tick_words(t))}</text>')
    out.append(f'<rect class="frame" x="{_n(f.left)}" y="{_n(top)}" width="{_n(f.width - f.left - f.right)}" '
               f'height="{_n(bottom - top)}"/>')
    out.append(f'<text class="axis-title" x="{_n((f.left + f.width - f.right) / 2)}" y="{_n(f.height - 6)}" '
               f'text-anchor="middle">{_e(charts.X_TITLE)}</text>')
    out.append(f'<text class="axis-title" transform="translate({_n(font + 2)} {_n((top + bottom) / 2)}) rotate(-90)" '
               f'text-anchor="middle">{_e(charts.Y_TITLE + (", log scale" if f.log_y else ""))}</text>')
    out.append("</g>")
    return out


def _marker(p: charts.ChartPoint, series: str, x: float, y: float, r: float) -> str:
    if series == "main":
        return f'<rect class="mk" x="{_n(x - r)}" y="{_n(y - r)}" width="{_n(2 * r)}" height="{_n(2 * r)}"/>'
    if series == "points" and not p.frontier:
        d = r * 0.8
        return (f'<path class="mk" d="M{_n(x - d)} {_n(y - d)}L{_n(x + d)} {_n(y + d)}M{_n(x - d)} {_n(y + d)}'
                f'L{_n(x + d)} {_n(y - d)}"/>')
    return f'<circle class="mk" cx="{_n(x)}" cy="{_n(y)}" r="{_n(r)}"/>'


def regressed(p: charts.ChartPoint) -> bool:
    return "regressed" in (p.info.get("verdicts") or [])


# label offsets tried in order, in ems: right, left, above, below, then further out
_OFFSETS = [(0.6, -0.5), (0.6, 1.1), (-0.6, -0.5), (-0.6, 1.1), (0, -0.9), (0, 1.8), (1.2, -1.2), (1.2, 2.0),
            (-1.2, -1.2), (-1.2, 2.0)]


def _crosses(box: tuple[float, float, float, float], a: tuple[float, float], b: tuple[float, float]) -> bool:
    """Whether the segment a-b passes through the box (Liang-Barsky clipping)."""
    x0, y0, x1, y1 = box
    dx, dy = b[0] - a[0], b[1] - a[1]
    lo, hi = 0.0, 1.0
    for p, q in ((-dx, a[0] - x0), (dx, x1 - a[0]), (-dy, a[1] - y0), (dy, y1 - a[1])):
        if p == 0:
            if q < 0:
                return False
            continue
        t = q / p
        if p < 0:
            lo = max(lo, t)
        else:
            hi = min(hi, t)
        if lo > hi:
            return False
    return True


def _labels(f: Frame, placed_points: list[tuple], font: float,
            lines: Sequence[list[tuple[float, float]]] = ()) -> list[str]:
    """A label per point where it overlaps no other label or marker and stays inside the plot, first
    also off the frontier lines (a label across one reads as naming the point on its other side); a
    point with no clear place gets none (its name is in the table and its tooltip)."""
    boxes: list[tuple[float, float, float, float]] = []
    markers = [(x, y) for x, y, *_ in placed_points]
    segments = [(a, b) for line in lines for a, b in zip(line, line[1:])]
    out = []
    for x, y, name, cls, series, group in sorted(placed_points, key=lambda t: (t[0], -t[1], t[2])):
        w, h = len(name) * CHAR_W * font, font
        for dx, dy, avoid in [(dx, dy, True) for dx, dy in _OFFSETS] + [(dx, dy, False) for dx, dy in _OFFSETS]:
            ax = x + dx * font
            x0 = ax if dx > 0 else ax - w if dx < 0 else ax - w / 2
            base = y + dy * font
            box = (x0 - 2, base - h, x0 + w + 2, base + 3)
            inside = box[0] >= f.left and box[2] <= f.width - f.right and box[1] >= f.top and box[3] <= f.height - f.bottom
            clear = not any(box[0] < b[2] and b[0] < box[2] and box[1] < b[3] and b[1] < box[3] for b in boxes) and \
                not any(box[0] - 4 <= mx <= box[2] + 4 and box[1] - 4 <= my <= box[3] + 4 for mx, my in markers) and \
                not (avoid and any(_crosses(box, a, b) for a, b in segments))
            if inside and clear:
                boxes.append(box)
                anchor = "start" if dx > 0 else "end" if dx < 0 else "middle"
                out.append(f'<text class="label {cls}" data-series="{_e(series)}" data-group="{_e(group)}" '
                           f'x="{_n(ax)}" y="{_n(base)}" text-anchor="{anchor}">{_e(name)}</text>')
                break
    return out


def pareto_svg(chart: charts.Chart, *, ident: str, width: int = 760, height: int = 470, compact: bool = False,
               title: str = "", desc: str = "") -> str:
    """The throughput/interactivity chart: every series' points and one frontier line per workload,
    regressed points ringed, labels where they fit; `ident` keeps two drawings' ids apart."""
    font = 11.0 if compact else 12.0
    f = _frame(chart, width, height, compact)
    body = _axes(f, chart, font)
    labelled: list[tuple] = []   # (x, y, name, classes, series, workload)
    drawn_lines: list[list[tuple[float, float]]] = []
    for s in chart.series:
        look = charts.LOOKS[s.name]
        cls = {"PR": "s-pr", "main": "s-main", "points": "s-pr"}[s.name]
        body.append(f'<g class="series {cls}" data-series="{_e(s.name)}">')
        for line in s.frontier_lines:
            if len(line) < 2:
                continue
            drawn_lines.append([(f.x(p.intvty_p90), f.y(p.tok_s_gpu)) for p in line])
            pts = " ".join(f"{_n(x)},{_n(y)}" for x, y in drawn_lines[-1])
            group = charts_group(line[0])
            body.append(f'<polyline class="frontier{" dashed" if look.dash == "dash" else ""}" data-group="{_e(group)}" '
                        f'points="{pts}"/>')
        for p in s.points:
            x, y = f.x(p.intvty_p90), f.y(p.tok_s_gpu)
            hover = p.info.get("hover") or [p.name if s.name != "main" else f"main {p.name}",
                                            f"{p.tok_s_gpu:,.0f} tok/s/GPU at {p.intvty_p90:,.1f} tok/s/user"]
            bad = regressed(p)
            body.append(f'<g class="pt{" regressed" if bad else ""}{"" if p.frontier else " off-frontier"}" '
                        f'data-name="{_e(p.name)}" data-group="{_e(charts_group(p))}" data-x="{_n(x)}" data-y="{_n(y)}">'
                        f'<title>{_e(chr(10).join(hover))}</title>'
                        + (f'<circle class="ring" cx="{_n(x)}" cy="{_n(y)}" r="{_n(9 if not compact else 8)}"/>' if bad else "")
                        + _marker(p, s.name, x, y, 4.5 if compact else 5) + "</g>")
            labelled.append((x, y, p.name, ("bad " if bad else "") + cls, s.name, charts_group(p)))
        body.append("</g>")
    if not compact:
        body.append('<g class="labels" aria-hidden="true">' + "".join(_labels(f, labelled, font, drawn_lines)) + "</g>")
    else:   # a phone's chart labels only what needs a look: the regressed points
        body.append('<g class="labels" aria-hidden="true">'
                    + "".join(_labels(f, [t for t in labelled if t[3].startswith("bad")], font, drawn_lines)) + "</g>")
    return (f'<svg id="{_e(ident)}" class="chart" viewBox="0 0 {width} {height}" role="img" '
            f'aria-labelledby="{_e(ident)}-t {_e(ident)}-d" font-size="{_n(font)}">'
            f'<title id="{_e(ident)}-t">{_e(title or chart.title)}</title><desc id="{_e(ident)}-d">{_e(desc)}</desc>'
            + "".join(body) + "</svg>")


def charts_group(p: charts.ChartPoint) -> str:
    from ci_tools.results.identity import group_words

    return group_words(p.group) if p.group else ""


def telemetry_svg(job, *, ident: str, width: int = 760, height: int = 260) -> str:
    """One job's board power (solid, left axis) and SM clock (dotted, right axis) per GPU over time."""
    font = 11.0
    gpus = job.gpus
    ts = [t for g in gpus for t in g["t"]] or [0.0, 1.0]
    power = [v for g in gpus for v in g["power_w"] if v is not None] or [0.0, 1.0]
    clock = [v for g in gpus for v in g["sm_mhz"] if v is not None] or [0.0, 1.0]
    left, right, top, bottom = 52, 56, 10, 40
    t1, p1, c1 = max(ts) or 1.0, max(power) * 1.1 or 1.0, max(clock) * 1.1 or 1.0
    sx = lambda t: left + t / t1 * (width - left - right)  # noqa: E731
    sp = lambda v: height - bottom - v / p1 * (height - top - bottom)  # noqa: E731
    sc = lambda v: height - bottom - v / c1 * (height - top - bottom)  # noqa: E731
    out = ['<g class="axes">']
    for t in nice_ticks(0, t1, 5):
        if t <= t1:
            out.append(f'<line class="grid" x1="{_n(sx(t))}" y1="{top}" x2="{_n(sx(t))}" y2="{height - bottom}"/>'
                       f'<text class="tick" x="{_n(sx(t))}" y="{height - bottom + font + 4}" text-anchor="middle">{t:g}</text>')
    for v in nice_ticks(0, p1, 4):
        if v <= p1:
            out.append(f'<line class="grid" x1="{left}" y1="{_n(sp(v))}" x2="{width - right}" y2="{_n(sp(v))}"/>'
                       f'<text class="tick" x="{left - 6}" y="{_n(sp(v) + 4)}" text-anchor="end">{v:g}</text>')
    for v in nice_ticks(0, c1, 4):
        if v <= c1:
            out.append(f'<text class="tick" x="{width - right + 6}" y="{_n(sc(v) + 4)}">{v:g}</text>')
    out.append(f'<rect class="frame" x="{left}" y="{top}" width="{width - left - right}" height="{height - top - bottom}"/>')
    out.append(f'<text class="axis-title" x="{(left + width - right) / 2:g}" y="{height - 6}" text-anchor="middle">'
               "time since the first sample (s)</text>")
    out.append(f'<text class="axis-title" transform="translate(12 {(top + height - bottom) / 2:g}) rotate(-90)" '
               'text-anchor="middle">board power (W)</text>')
    out.append(f'<text class="axis-title" transform="translate({width - 8} {(top + height - bottom) / 2:g}) rotate(90)" '
               'text-anchor="middle">SM clock (MHz), dotted</text></g>')
    for n, g in enumerate(gpus):
        pw = " ".join(f"{_n(sx(t))},{_n(sp(v))}" for t, v in zip(g["t"], g["power_w"]) if v is not None)
        ck = " ".join(f"{_n(sx(t))},{_n(sc(v))}" for t, v in zip(g["t"], g["sm_mhz"]) if v is not None)
        out.append(f'<g class="gpu gpu-{n % 8}" data-gpu="{_e(g["index"])}"><polyline class="power" points="{pw}">'
                   f'<title>GPU {_e(g["index"])} board power</title></polyline>'
                   f'<polyline class="clock" points="{ck}"><title>GPU {_e(g["index"])} SM clock</title></polyline></g>')
    label = f"{job.name}: board power and SM clock of {len(gpus)} GPU(s) over {t1:,.0f} s"
    return (f'<svg id="{_e(ident)}" class="chart telemetry-plot" viewBox="0 0 {width} {height}" role="img" '
            f'aria-label="{_e(label)}" font-size="{_n(font)}">' + "".join(out) + "</svg>")
