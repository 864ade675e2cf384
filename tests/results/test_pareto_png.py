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
        for i, a in enumerate(boxes):
            assert frame.x0 <= a.x0 and a.x1 <= frame.x1 and frame.y0 <= a.y0 and a.y1 <= frame.y1, points[i].name
            assert not any(a.overlaps(b) for b in boxes[i + 1:]), points[i].name
        assert ax.get_yscale() == "log"  # 7k..271k tok/s/GPU: the c1-c8 points stay apart
    finally:
        plt.close(fig)
