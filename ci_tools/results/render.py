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
    for p in points:
        ax.annotate(p.name, (p.intvty_p90, p.tok_s_gpu), textcoords="offset points", xytext=(6, 4), fontsize=8)
    ax.set_xlabel("interactivity, P90 (tok/s/user)")
    ax.set_ylabel("throughput (tok/s/GPU)")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper right")
    if title:
        ax.set_title(title, fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    # fixed metadata so the committed PNG is reproducible byte for byte
    fig.savefig(path, metadata={"Software": None})
    plt.close(fig)
