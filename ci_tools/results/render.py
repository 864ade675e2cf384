"""Text, Markdown and PNG renderings of a Pareto analysis (the PR status card's table and plot)."""

from __future__ import annotations

from pathlib import Path

from ci_tools.results.pareto import Point


def _num(x, fmt: str) -> str:
    try:
        return format(float(x), fmt)
    except (TypeError, ValueError):
        return "–"


def _intvty(p: Point) -> str:
    text = _num(p.intvty_p90, ",.1f")
    med = p.extra.get("intvty_p50")
    if med not in (None, ""):
        text += f" ({_num(med, ',.1f')})"
    return text


def _ttft(p: Point) -> str:
    t = p.extra.get("ttft_p90_s")
    return "–" if t in (None, "") else f"{_num(t, '.2f')} s"


def markdown_table(points: list[Point], analysis: list[dict]) -> str:
    rows = ["| point | tok/s/GPU | P90 (median) tok/s/user | P90 TTFT | Pareto |",
            "|---|---:|---:|---:|---|"]
    for p, a in zip(points, analysis):
        where = "frontier" if a["frontier"] else "dominated by " + ", ".join(a["dominated_by"])
        rows.append(f"| {p.name} | {_num(p.tok_s_gpu, ',.0f')} | {_intvty(p)} | {_ttft(p)} | {where} |")
    return "\n".join(rows) + "\n"


def text_table(points: list[Point], analysis: list[dict]) -> str:
    width = max(len(p.name) for p in points)
    lines = [f"{'point':<{width}}  {'tok/s/GPU':>10}  {'P90 tok/s/user':>14}  pareto"]
    for p, a in zip(points, analysis):
        where = "frontier" if a["frontier"] else "dominated by " + ", ".join(a["dominated_by"])
        lines.append(f"{p.name:<{width}}  {p.tok_s_gpu:>10,.0f}  {p.intvty_p90:>14,.1f}  {where}")
    return "\n".join(lines) + "\n"


def plot_png(points: list[Point], analysis: list[dict], path: Path, title: str = "") -> None:
    """Throughput per GPU against P90 interactivity, frontier drawn, every point labelled."""
    import matplotlib.pyplot as plt

    fig, _, _ = figure(points, analysis, title)
    path.parent.mkdir(parents=True, exist_ok=True)
    # fixed metadata so the committed PNG is reproducible byte for byte
    fig.savefig(path, metadata={"Software": None})
    plt.close(fig)


def figure(points: list[Point], analysis: list[dict], title: str = ""):
    """(figure, axes, label boxes in display coordinates) of the plot; the boxes let tests check that
    no label overlaps another or leaves the frame."""
    import matplotlib

    matplotlib.use("Agg")  # no display on runners
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5.5), dpi=120)
    front = sorted((p for p, a in zip(points, analysis) if a["frontier"]), key=lambda p: p.intvty_p90)
    dom = [p for p, a in zip(points, analysis) if not a["frontier"]]
    if front:
        ax.plot([p.intvty_p90 for p in front], [p.tok_s_gpu for p in front], "-", color="#1f77b4",
                linewidth=1.5, label="Pareto frontier", zorder=1)
        ax.scatter([p.intvty_p90 for p in front], [p.tok_s_gpu for p in front], color="#1f77b4", zorder=2)
    if dom:
        ax.scatter([p.intvty_p90 for p in dom], [p.tok_s_gpu for p in dom], color="#999999", marker="x",
                   label="dominated", zorder=2)
    ys = [p.tok_s_gpu for p in points if p.tok_s_gpu > 0]
    if ys and max(ys) / min(ys) > 8:
        # Throughput spans decades (7k at c1 to 271k at c128 in the seed): on a linear axis every
        # low-concurrency point sits on the floor. Log scale, plain numbers on the ticks.
        from matplotlib.ticker import FuncFormatter, LogLocator

        ax.set_yscale("log")
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v / 1000:g}k" if v >= 1000 else f"{v:g}"))
        ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: ""))
    ax.margins(x=0.12, y=0.12)  # room for labels at the edges
    ax.set_xlabel("interactivity, P90 (tok/s/user)")
    ax.set_ylabel("throughput (tok/s/GPU)")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(loc="upper right")
    if title:
        ax.set_title(title, fontsize=10)
    fig.tight_layout()
    boxes = _place_labels(fig, ax, points, front)
    return fig, ax, boxes


# Label offsets tried in order (points): right, left, above, below, then further out.
_OFFSETS = [(6, 4), (6, -11), (-6, 4), (-6, -11), (0, 9), (0, -15), (14, 12), (14, -19), (-14, 12), (-14, -19),
            (24, 0), (-24, 0), (0, 20), (0, -26)]


_GAP_PX = 4      # half the clear space between two labels, in pixels
_MARKER_PX = 5   # a marker's radius, in pixels


def _place_labels(fig, ax, points: list[Point], frontier: list[Point]) -> list:
    """Label every point where its text overlaps no other label or marker and stays inside the axes:
    greedy over candidate offsets, in display coordinates (a crowded cluster, e.g. the seed's
    dropped c1-c8 points around 400 tok/s/user, otherwise prints one label over another)."""
    from matplotlib.path import Path as LinePath

    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    frame = ax.get_window_extent(renderer)
    markers = [ax.transData.transform((p.intvty_p90, p.tok_s_gpu)) for p in points]
    # the frontier line: a label across it reads as naming the point on the other side
    line = LinePath(ax.transData.transform([(p.intvty_p90, p.tok_s_gpu) for p in sorted(
        frontier, key=lambda q: q.intvty_p90)])) if len(frontier) > 1 else None
    placed: list = []
    # crowded points first would be nicer; left to right keeps the result stable and predictable
    for p in sorted(points, key=lambda q: (q.intvty_p90, q.tok_s_gpu)):
        best = None
        for dx, dy, avoid_line in [(dx, dy, True) for dx, dy in _OFFSETS] + [(dx, dy, False) for dx, dy in _OFFSETS]:
            ha = "left" if dx > 0 else "right" if dx < 0 else "center"
            text = ax.annotate(p.name, (p.intvty_p90, p.tok_s_gpu), textcoords="offset points", xytext=(dx, dy),
                               fontsize=8, ha=ha)
            # a gap around each label (two labels that touch read as one) and around each marker
            box = text.get_window_extent(renderer).padded(_GAP_PX)
            inside = (box.x0 >= frame.x0 and box.x1 <= frame.x1 and box.y0 >= frame.y0 and box.y1 <= frame.y1)
            clear = not any(box.overlaps(b) for b in placed) and not any(
                box.padded(_MARKER_PX).contains(mx, my) for mx, my in markers) and not (
                avoid_line and line is not None and line.intersects_bbox(box, filled=False))
            if inside and clear:
                best = (text, box)
                break
            text.remove()
        if best is None:  # nowhere clear: the first choice, still inside the frame if it can be
            text = ax.annotate(p.name, (p.intvty_p90, p.tok_s_gpu), textcoords="offset points", xytext=(-6, 4),
                               fontsize=8, ha="right")
            best = (text, text.get_window_extent(renderer))
        placed.append(best[1])
    return placed
