"""Renderings of a comparison: Markdown (status card, step summary), text (terminal) and JSON."""

from __future__ import annotations

from dataclasses import asdict

from ci_tools.render import numbers as num
from ci_tools.results.compare import (ENERGY_KEYS, EQUIVALENT, IMPROVED, INCONCLUSIVE, METRICS, NEW, REGRESSED,
                                      FrontierShift,
                                      PointComparison, summary)

_FORMATS = {"tok_s_gpu": ",.0f", "intvty_p90": ",.1f", "intvty_p50": ",.1f", "ttft_p90_s": ",.2f",
            "j_per_output_token": ",.3g", "j_per_input_token": ",.3g", "j_per_total_token": ",.3g",
            "j_per_request": ",.4g"}
_UNITS = {"ttft_p90_s": " s", "j_per_output_token": " J", "j_per_input_token": " J", "j_per_total_token": " J",
          "j_per_request": " J"}
_HEADERS = {"tok_s_gpu": "tok/s/GPU", "intvty_p90": "P90 tok/s/user", "intvty_p50": "median tok/s/user",
            "ttft_p90_s": "P90 TTFT", "j_per_output_token": "J/output token", "j_per_input_token": "J/input token",
            "j_per_total_token": "J/token", "j_per_request": "J/request"}
NBSP = "\u00a0"   # keeps a value with its unit, an arrow with its number: a narrow cell wraps between them


def shown_metrics(comparisons: list[PointComparison]) -> list:
    """The metrics a table shows: the four headline ones always, an energy one only where a side
    measured it (most sweeps have no valid power measurement, and an empty column says nothing)."""
    return [m for m in METRICS if m.key not in ENERGY_KEYS
            or any(pc.cells[m.key].head is not None or pc.cells[m.key].base is not None for pc in comparisons)]


# A verdict says better or worse; the arrow says which way the number moved. They are apart: a P90
# TTFT that fell by 91.5 % is "▼ -91.5%" and "improved" (lower is better), never "▲ improved".
_MARK = {IMPROVED: "🟢 improved", REGRESSED: "🔴 regressed", EQUIVALENT: "⚪ equivalent",
         INCONCLUSIVE: "🟡 inconclusive", NEW: "🆕 new"}
OVERALL_EMOJI = {"bad": "🔴", "good": "🟢", "warn": "🟡", "neutral": "⚪"}


def arrow(change: float | None) -> str:
    """The direction the number moved: ▲ up, ▼ down, = unchanged, – nothing to compare."""
    if change is None:
        return "–"
    return "▲" if change > 0 else "▼" if change < 0 else "="


def change_text(change: float | None) -> str:
    """`▼ -91.5%` (one unbreakable piece), `–` where nothing was compared."""
    return "–" if change is None else f"{arrow(change)}{NBSP}{change:+.1%}"


def mark(verdict: str) -> str:
    return _MARK[verdict].replace(" ", NBSP)


def metric_words(m) -> str:
    """A metric's name, saying which way is better where lower is (`P90 TTFT (lower is better)`)."""
    return m.label if m.higher_is_better else f"{m.label} (lower is better)"


def _value(key: str, v: float | None) -> str:
    return "–" if v is None else format(v, _FORMATS[key]) + _UNITS.get(key, "")


def _md(key: str, v: float | None) -> str:
    """A value in a Markdown cell: its number and unit never wrap apart."""
    return _value(key, v).replace(" ", NBSP)


def _cell_md(pc: PointComparison, key: str) -> str:
    c = pc.cells[key]
    head = _md(key, c.head)
    if c.verdict is None:
        if c.head is not None and c.base is None and pc.baseline.kind != "none":
            return f"{head}<br><sub>main: not{NBSP}measured</sub>"
        return head
    if c.verdict == NEW:
        return f"{head}<br><sub>{mark(NEW)}</sub>"
    main = f"main{NBSP}{_md(key, c.base)}"
    if c.change is None:
        return f"{head}<br><sub>{main} · {mark(c.verdict)}</sub>"
    verdict = f"**{mark(c.verdict)}**" if c.verdict in (IMPROVED, REGRESSED) else mark(c.verdict)
    return f"{head}<br><sub>{main} · {change_text(c.change)} · {verdict}</sub>"


def _vs(pc: PointComparison) -> str:
    b = pc.baseline
    if b.kind == "none":
        return "no main result"
    runs = f"{len(b.results)} run{'s' if len(b.results) != 1 else ''}"
    if b.kind == "replaced":
        return f"replaces {b.name}, {runs}"
    return runs


def markdown(comparisons: list[PointComparison], shift: FrontierShift | None = None,
             claims: list[dict] | None = None) -> str:
    shown = shown_metrics(comparisons)
    from ci_tools.results.report import points_sentence, values_sentence

    lines = ["| point | vs main | " + " | ".join(_HEADERS[m.key] + ("" if m.higher_is_better else " ▽")
                                                 for m in shown) + " |",
             "|---|---|" + "---:|" * len(shown)]
    for pc in comparisons:
        cells = " | ".join(_cell_md(pc, m.key) for m in shown)
        lines.append(f"| {pc.name} | {_vs(pc)} | {cells} |")
    lines += ["", f"{points_sentence(comparisons)}; {values_sentence(summary(comparisons))}."]
    if any(not m.higher_is_better for m in shown):
        lines.append("▽ lower is better. ▲ ▼ say which way a number moved; the verdict says whether that is better.")
    noise = sorted({c.noise for pc in comparisons for c in pc.cells.values() if c.noise})
    if noise:
        lines.append("Noise from: " + "; ".join(noise) + ".")
    if shift is not None:
        lines += ["", *frontier_markdown(shift)]
    if claims:
        lines += ["", "**Claims**", ""]
        for c in claims:
            lines.append(f"- {'holds' if c['holds'] else '**false**'}: {c['claim']} ({c['why']})")
    return "\n".join(lines) + "\n"


def frontier_markdown(shift: FrontierShift) -> list[str]:
    if shift.groups:    # one frontier per workload
        out = ["**Frontier (tok/s/GPU vs P90 tok/s/user)**"]
        for g in shift.groups:
            out += ["", f"*{g.group}*", "", *frontier_markdown(g)[2:]]
        return out
    out = ["**Frontier (tok/s/GPU vs P90 tok/s/user)**", "",
           f"- PR frontier: {', '.join(shift.head_frontier) or '–'}",
           f"- main frontier: {', '.join(shift.main_frontier) or '–'}"]
    def where(seg: dict) -> str:
        if seg["above"] is None:
            return f"up to {seg['up_to']:,.1f}"
        return f"{seg['above']:,.1f}–{seg['up_to']:,.1f}"

    for side, words in (("PR", "the PR"), ("main", "main")):
        ranges = [where(s) for s in shift.segments if s["lead"] == side]
        if ranges:
            out.append(f"- {words} offers more throughput at P90 interactivity {', '.join(ranges)} tok/s/user")
    if shift.crossings:
        out.append("- the curves cross at " + ", ".join(f"{x:,.1f}" for x in shift.crossings) + " tok/s/user")
    for d in shift.dominance:
        if d["dominated_by"]:
            out.append(f"- {d['point']} is dominated by main's {', '.join(d['dominated_by'])}")
    return out


def text(comparisons: list[PointComparison], shift: FrontierShift | None = None,
         claims: list[dict] | None = None) -> str:
    width = max([len(pc.name) for pc in comparisons] + [5])
    lines = []
    for pc in comparisons:
        lines.append(f"{pc.name:<{width}}  vs main: {_vs(pc)}")
        for m in METRICS:
            c = pc.cells[m.key]
            if c.verdict is None and c.head is None:
                continue
            detail = ""
            if c.change is not None and c.p is not None:     # a change has its p-value (compare._cell)
                detail = f"  main {_value(m.key, c.base)}  {arrow(c.change)} {c.change:+.1%}  {num.p_value(c.p)}"
            lines.append(f"  {m.label:<22} {_value(m.key, c.head):>12}{detail}  {c.verdict or 'not compared'}")
    from ci_tools.results.report import points_sentence, values_sentence

    lines.append(f"{points_sentence(comparisons)}; {values_sentence(summary(comparisons))}")
    if shift is not None:
        lines += [line.replace("**", "") for line in frontier_markdown(shift)]
    for claim in claims or []:
        lines.append(f"{'holds' if claim['holds'] else 'FALSE'}: {claim['claim']} ({claim['why']})")
    return "\n".join(lines) + "\n"


def point_summary(comparisons: list[PointComparison]) -> dict[str, int]:
    from ci_tools.results.report import POINT_ORDER, point_verdict

    per = [point_verdict(pc) for pc in comparisons]
    return {v: per.count(v) for v in POINT_ORDER}


def as_json(comparisons: list[PointComparison], shift: FrontierShift | None = None,
            claims: list[dict] | None = None) -> dict:
    return {
        "schema": "ci-tools/comparison/v1",
        "summary": summary(comparisons),                      # metric values per verdict
        "point-summary": point_summary(comparisons),          # points per verdict, each point once
        "points": [{"name": pc.name, "point": pc.point,
                    "baseline": {"kind": pc.baseline.kind, "name": pc.baseline.name,
                                 "runs": len(pc.baseline.results)},
                    "metrics": {k: asdict(c) for k, c in pc.cells.items()}} for pc in comparisons],
        "frontier": asdict(shift) if shift is not None else None,
        "claims": claims or [],
    }


def regressions(comparisons: list[PointComparison]) -> list[str]:
    """One line per regressed value (the flow turns each into a `::warning`: GitHub shows the first
    ten of a step; the step summary has them all)."""
    out = []
    for pc in comparisons:
        for m in METRICS:
            c = pc.cells[m.key]
            if c.verdict == REGRESSED and c.change is not None and c.p is not None:
                out.append(f"{pc.name}: {m.label} {_value(m.key, c.head)} against main's {_value(m.key, c.base)} "
                           f"({c.change:+.1%}, {num.p_value(c.p)} after the false-discovery control)")
    return out


# ---- the status card: verdict first --------------------------------------------------------------

CHANGED = (REGRESSED, INCONCLUSIVE, IMPROVED)   # the compact table's rows, in this order


def overall_line(h, report_url: str = "") -> str:
    """The results' first line: one overall verdict (emoji and word), the points counted once each,
    the report's link."""
    link = f" · [open the report]({report_url})" if report_url else ""
    return f"{OVERALL_EMOJI[h.overall.tone]} **{h.overall.word}** · {h.verdicts}{link}"


def card_markdown(comparisons: list[PointComparison], shift: FrontierShift | None, *, report_url: str = "",
                  method: str = "") -> str:
    """The card's results: the overall verdict and the points first, the values behind them and the
    frontier sentence, then only what changed (regressed, inconclusive, improved) in a compact table,
    the method in one line, and the full table and frontier behind <details>."""
    from ci_tools.results.report import headline

    h = headline(comparisons, shift)
    lines = [overall_line(h, report_url), "", f"{h.values}. {h.frontier}", ""]
    changed = [(CHANGED.index(c.verdict), i, pc, m, c, c.verdict) for i, pc in enumerate(comparisons) for m in METRICS
               for c in [pc.cells[m.key]] if c.verdict is not None and c.verdict in CHANGED]
    if changed:
        lines += ["| point | metric | PR | main | change | verdict |", "|---|---|---:|---:|---:|---|"]
        for _, _, pc, m, c, verdict in sorted(changed, key=lambda t: (t[0], t[1])):
            lines.append(f"| {pc.name} | {metric_words(m)} | {_md(m.key, c.head)} | {_md(m.key, c.base)} "
                         f"| {change_text(c.change)} | {mark(verdict)} |")
    else:
        lines.append("Nothing changed beyond the noise: every compared value is equivalent or new.")
    if method:
        lines += ["", f"<sub>{method}</sub>"]
    lines += ["", f"<details><summary>All {len(comparisons)} points, every value, and the frontier</summary>",
              "", markdown(comparisons, shift).rstrip("\n"), "", "</details>"]
    return "\n".join(lines) + "\n"
