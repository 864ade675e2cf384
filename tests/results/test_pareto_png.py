"""The Pareto PNG stays readable with the seed's 12 points (7 kept + 5 dropped): no label over another
label or a marker, none outside the frame, and the low-throughput end not squashed (log scale)."""

from __future__ import annotations

from pathlib import Path

from ci_tools.results import pareto
from ci_tools.results.render import figure

SEED12 = Path(__file__).resolve().parents[2] / "docs" / "examples" / "seed-with-dropped.csv"


def test_twelve_seed_points_are_labelled_without_overlap_inside_the_frame():
    import matplotlib.pyplot as plt

    points = pareto.points_from_csv(SEED12.read_text())
    assert len(points) == 12
    fig, ax, boxes = figure(points, pareto.analyse(points), "seed PR, kept and dropped points")
    try:
        frame = ax.get_window_extent(fig.canvas.get_renderer())
        assert len(boxes) == 12
        from matplotlib.path import Path as LinePath

        analysis = pareto.analyse(points)
        front = sorted((p for p, a in zip(points, analysis) if a["frontier"]), key=lambda p: p.intvty_p90)
        line = LinePath(ax.transData.transform([(p.intvty_p90, p.tok_s_gpu) for p in front]))
        markers = [ax.transData.transform((p.intvty_p90, p.tok_s_gpu)) for p in points]
        for i, a in enumerate(boxes):
            assert frame.x0 <= a.x0 and a.x1 <= frame.x1 and frame.y0 <= a.y0 and a.y1 <= frame.y1, points[i].name
            # a clear gap between labels: two that touch read as one
            assert not any(a.padded(2).overlaps(b.padded(2)) for b in boxes[i + 1:]), points[i].name
            assert not any(a.contains(x, y) for x, y in markers), points[i].name
            # a label across the frontier reads as naming the point on its other side
            assert not line.intersects_bbox(a, filled=False), points[i].name
        assert ax.get_yscale() == "log"  # 7k..271k tok/s/GPU: the c1-c8 points stay apart
    finally:
        plt.close(fig)
