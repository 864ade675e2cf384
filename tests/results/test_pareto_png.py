"""The Pareto PNG stays readable with the seed's 12 points (7 kept + 5 dropped): no label over another
label or a marker, none outside the frame, and the low-throughput end not squashed (log scale)."""

from __future__ import annotations

from pathlib import Path

from ci_tools.results import pareto
from ci_tools.results.chart import from_points
from ci_tools.results.render import figure
from ci_tools.results.sources import load_points

SEED12 = Path(__file__).resolve().parents[2] / "docs" / "examples" / "seed-with-dropped.csv"


def test_twelve_seed_points_are_labelled_without_overlap_inside_the_frame():
    import matplotlib.pyplot as plt

    points = load_points(SEED12)
    assert len(points) == 12
    fig, ax, labels = figure(from_points(points, "seed PR, kept and dropped points"))
    boxes = [box for _, _, box in labels]
    assert None not in boxes  # twelve points of one curve: every one labelled
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


# ---- results compare --plot: the same figure builder, two curves ------------------------------

SEED = Path(__file__).resolve().parents[2] / "docs" / "examples" / "seed-compare"


def _result(name: str, tok: float | None, p90: float | None) -> dict:
    return {"valid": True, "point": {"name": name, "tp": 4, "conc": 1},
            "headline": {"tok_s_gpu": tok, "intvty_p90": p90}}


def _assert_readable(fig, ax, labels) -> None:
    frame = ax.get_window_extent(fig.canvas.get_renderer())
    boxes = [b for _, _, b in labels if b is not None]
    markers = [ax.transData.transform((p.intvty_p90, p.tok_s_gpu)) for _, p, _ in labels]
    for i, a in enumerate(boxes):
        assert frame.x0 <= a.x0 and a.x1 <= frame.x1 and frame.y0 <= a.y0 and a.y1 <= frame.y1
        # each box holds its label plus a 4 px margin: boxes apart means 8 px between two labels
        assert not any(a.overlaps(b) for b in boxes[i + 1:])
        assert not any(a.contains(x, y) for x, y in markers)
    assert ax.get_xlabel() == "interactivity, P90 (tok/s/user)" and ax.get_ylabel() == "throughput (tok/s/GPU)"
    assert ax.get_title()


def test_two_twelve_point_curves_within_four_percent_never_overlap_their_labels():
    """The case issue 24 measured: PR and main 12 points each, main within +-4 % of the PR. The old
    compare plot printed each pair of labels on one spot."""
    import matplotlib.pyplot as plt

    from ci_tools.results.chart import from_sides

    points = load_points(SEED12)
    head = [_result(p.name, p.tok_s_gpu, p.intvty_p90) for p in points]
    main = [_result(p.name, p.tok_s_gpu * (1.04 if i % 2 else 0.96), p.intvty_p90 * (0.97 if i % 3 else 1.03))
            for i, p in enumerate(points)]
    fig, ax, labels = figure(from_sides(head, main, "12 points, PR vs main"))
    try:
        assert len(labels) == 24
        _assert_readable(fig, ax, labels)
        assert ax.get_yscale() == "log"
        unlabelled = [f"{s.name} {p.name}" for s, p, b in labels if b is None]
        texts = " ".join(t.get_text() for t in fig.texts)
        # a label that found no room is named in the note, never drawn over another
        assert all(name in texts for name in unlabelled)
        assert len(unlabelled) <= 6, unlabelled
    finally:
        plt.close(fig)


def test_seed_compare_plot_says_which_main_points_it_could_not_draw():
    import matplotlib.pyplot as plt

    from ci_tools.results.chart import from_sides
    from ci_tools.results.sources import load_side

    head, main = load_side(SEED / "pr-local-results.csv"), load_side(SEED / "main-baseline.csv")
    chart = from_sides(head, main, "")
    assert chart.dropped == ["main tp2-c64", "main tp2-c128"]  # published with a median only
    assert [len(s.points) for s in chart.series] == [len(main) - 2, 7]
    fig, ax, labels = figure(chart)
    try:
        _assert_readable(fig, ax, labels)
        assert ax.get_title() == "Throughput per GPU against P90 interactivity"
        assert "not drawn (no P90 interactivity or throughput): main tp2-c64, main tp2-c128" in fig.texts[0].get_text()
    finally:
        plt.close(fig)


def test_only_one_plot_function_is_left():
    import ci_tools.results.compare_render as compare_render

    assert not hasattr(compare_render, "plot_png")


def test_the_png_and_the_report_draw_one_y_axis():
    """One figure builder (issue 27): the PNG and the report's SVG chart take the log-or-linear
    decision, the ticks and their words from the Chart. The report drew every chart on a log axis,
    the PNG only above an 8x span: a narrow sweep read differently in the two."""
    import re

    import matplotlib.pyplot as plt

    from ci_tools.results.chart import from_sides
    from ci_tools.results.report_svg import pareto_svg

    for tok, scale in (((7314.0, 9338.0, 28838.0), "linear"), ((7314.0, 28838.0, 271000.0), "log")):
        c = from_sides([_result(f"c{i}", t, 600.0 - 50 * i) for i, t in enumerate(tok)], [], "t")
        fig, ax, _ = figure(c)
        try:
            assert ax.get_yscale() == scale
            svg = pareto_svg(c, ident="t")
            assert ("log scale" in svg) == (scale == "log")
            ticks = set(re.findall(r'<text class="tick" x="[^"]+" y="[^"]+" text-anchor="end">([^<]+)</text>', svg))
            if scale == "log":
                fig.canvas.draw()
                words = {t.get_text() for t in ax.get_yticklabels() if t.get_text()}
                assert ticks and ticks <= words and "200k" in ticks   # matplotlib lists ticks off the axis too
        finally:
            plt.close(fig)
