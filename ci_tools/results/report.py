"""The sweep report's content, verdict first (pure): what `results report` puts on its page.

From the comparison `results compare` makes (compare.py), the eval results and the GPU telemetry
of the jobs, this builds plain data: the headline (verdict counts, the frontier shift in one
sentence), the chart (chart.py, with hover details per point), the verdict table, the eval scores
against their thresholds and, per job, power and SM clock over time with energy and throttle
reasons. `report_html.py` turns it into one self-contained HTML page; the status card reuses the
headline and the frontier sentence.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ci_tools.results import chart as charts
from ci_tools.results.compare import (EQUIVALENT, IMPROVED, INCONCLUSIVE, METRICS, NEW, REGRESSED, FrontierShift,
                                      PointComparison, describe, label, summary)

Z95 = 1.959964  # a two-sided 95 % interval from the comparison's standard error

FORMATS = {"tok_s_gpu": ",.0f", "intvty_p90": ",.1f", "intvty_p50": ",.1f", "ttft_p90_s": ",.2f",
           "j_per_output_token": ",.3g", "j_per_input_token": ",.3g", "j_per_total_token": ",.3g",
           "j_per_request": ",.4g"}


def value(key: str, v) -> str:
    return "–" if v is None else format(v, FORMATS.get(key, ",.4g"))


# ---- the headline ------------------------------------------------------------------------------

def counts_sentence(counts: dict[str, int]) -> str:
    """`7 improved, 1 regressed, 1 equivalent, 0 inconclusive (12 new)`."""
    core = ", ".join(f"{counts.get(v, 0)} {v}" for v in (IMPROVED, REGRESSED, EQUIVALENT, INCONCLUSIVE))
    return core + (f" ({counts[NEW]} new)" if counts.get(NEW) else "")


def _ranges(shift: FrontierShift, side: str) -> list[str]:
    out = []
    for s in shift.segments:
        if s["lead"] != side:
            continue
        out.append(f"up to {s['up_to']:,.1f}" if s["above"] is None else f"{s['above']:,.1f}–{s['up_to']:,.1f}")
    return out


def frontier_sentence(shift: FrontierShift | None, baseline: bool = True) -> str:
    """The frontier shift in one sentence: where each side offers more throughput per GPU (per
    workload, where the run holds several; the run's own frontier where there is no baseline)."""
    if shift is not None and shift.groups and not baseline:
        return ("The run's frontiers: "
                + "; ".join(f"{g.group} {', '.join(g.head_frontier) or 'none'}" for g in shift.groups) + ".")
    if shift is not None and shift.groups:
        return " ".join(f"{g.group}: {frontier_sentence(g, baseline)}" for g in shift.groups)
    if not baseline:
        if shift is None or not shift.head_frontier:
            return "No frontier: no point has both throughput and P90 interactivity."
        return f"The run's frontier is {', '.join(shift.head_frontier)}."
    if shift is None or not (shift.head_frontier or shift.main_frontier):
        return "No frontier to compare: neither side has a point with both throughput and P90 interactivity."
    pr, main = _ranges(shift, "PR"), _ranges(shift, "main")
    if not shift.main_frontier:
        return "main has no point with P90 interactivity: the PR's frontier stands alone."
    if pr and not main:
        return "The PR's frontier is ahead of main's at every P90 interactivity."
    if main and not pr:
        return "main's frontier is ahead of the PR's at every P90 interactivity."
    if not pr and not main:
        return "The two frontiers are level."
    return (f"The PR offers more tok/s/GPU at P90 interactivity {', '.join(pr)} tok/s/user, "
            f"main at {', '.join(main)}.")


@dataclass
class Headline:
    counts: dict[str, int]
    verdicts: str          # counts_sentence
    frontier: str          # frontier_sentence
    regressed: list[str]   # "tp4-c4 throughput -6.8%"


def headline(comparisons: list[PointComparison], shift: FrontierShift | None, baseline: bool = True) -> Headline:
    counts = summary(comparisons)
    regressed = [f"{pc.name} {m.label} {pc.cells[m.key].change:+.1%}" for pc in comparisons for m in METRICS
                 if pc.cells[m.key].verdict == REGRESSED and pc.cells[m.key].change is not None]
    verdicts = (counts_sentence(counts) if baseline else
                f"No baseline: {len(comparisons)} point{'s' if len(comparisons) != 1 else ''} measured, nothing compared")
    return Headline(counts, verdicts, frontier_sentence(shift, baseline), regressed)


# ---- the verdict table and the hover text --------------------------------------------------------

def interval(cell) -> tuple[float, float] | None:
    """95 % interval of the relative change (signed as the metric moves)."""
    if cell.change is None or cell.se is None:
        return None
    return (cell.change - Z95 * cell.se, cell.change + Z95 * cell.se)


def topology_text(point: dict) -> str:
    text = describe(point)
    return text[len(label(point)) + 2:-1] if text.startswith(label(point) + " (") else text


def rows(comparisons: list[PointComparison]) -> list[dict]:
    """One row per PR point: its baseline and, per metric, value, main's value, change, interval, verdict."""
    out = []
    for pc in comparisons:
        b = pc.baseline
        vs = ("no main result" if b.kind == "none" else
              f"replaces {b.name}" if b.kind == "replaced" else f"{len(b.results)} main run(s)")
        cells = []
        for m in METRICS:
            c = pc.cells[m.key]
            cells.append({"metric": m.key, "label": m.label, "unit": m.unit, "head": c.head, "base": c.base,
                          "change": c.change, "interval": interval(c), "p": c.p, "verdict": c.verdict,
                          "noise": c.noise})
        out.append({"name": pc.name, "topology": topology_text(pc.point), "conc": pc.point.get("conc"),
                    "config": pc.point.get("config-key") or "", "scenario": pc.point.get("scenario") or "",
                    "vs": vs, "cells": cells})
    return out


def hover_lines(row: dict) -> list[str]:
    """What hovering a PR point shows: topology, concurrency, each compared value with its change,
    interval and verdict."""
    lines = [f"{row['name']}: {row['topology']}, concurrency {row['conc']}", f"vs main: {row['vs']}"]
    for c in row["cells"]:
        if c["head"] is None and c["base"] is None:
            continue
        text = f"{c['label']}: {value(c['metric'], c['head'])} {c['unit']}"
        if c["change"] is not None:
            text += f" (main {value(c['metric'], c['base'])}, {c['change']:+.1%}"
            if c["interval"]:
                text += f", 95% {c['interval'][0]:+.1%} to {c['interval'][1]:+.1%}"
            text += ")"
        if c["verdict"]:
            text += f": {c['verdict']}"
        lines.append(text)
    return lines


def main_hover_lines(result: dict) -> list[str]:
    p, h = result["point"], result.get("headline") or {}
    lines = [f"main {label(p)}: {topology_text(p)}, concurrency {p.get('conc')}"]
    for m in METRICS:
        if h.get(m.key) is not None:
            lines.append(f"{m.label}: {value(m.key, h[m.key])} {m.unit}")
    return lines


def chart_of(comparisons: list[PointComparison], head: list[dict], main_latest: list[dict],
             title: str = "") -> charts.Chart:
    """The report's chart: chart.from_sides with each point's hover lines and its config and scenario."""
    # by the point itself, never by its name: two results of one name are two workloads (identity.py)
    by_point = {id(pc.point): r for pc, r in zip(comparisons, rows(comparisons))}

    def info(result: dict) -> dict:
        p = result["point"]
        row = by_point.get(id(p)) if any(result is r for r in head) else None
        lines = hover_lines(row) if row else main_hover_lines(result)
        verdicts = sorted({c["verdict"] for c in row["cells"] if c["verdict"]}) if row else []
        return {"hover": lines, "config": p.get("config-key") or "", "scenario": p.get("scenario") or "",
                "verdicts": verdicts}

    return charts.from_sides(head, main_latest, title, info)


# ---- evals --------------------------------------------------------------------------------------

def eval_rows(evals: list[dict]) -> list[dict]:
    from ci_tools.evals.gate import describe as eval_point

    out = []
    for e in evals:
        for s in e.get("scores") or []:
            out.append({"point": eval_point(e.get("point") or {}), "task": s.get("task"), "conc": s.get("conc"),
                        "metric": str(s.get("metric", "")).split(",", 1)[-1], "score": s.get("score"),
                        "threshold": s.get("threshold"), "source": s.get("threshold-source"),
                        "passed": bool(s.get("passed"))})
    return sorted(out, key=lambda r: (str(r["task"]), r["point"], r["conc"] or 0, r["metric"]))


def acceptance_rows(evals: list[dict]) -> list[dict]:
    """Each eval result whose speculative acceptance was checked (evals/acceptance.compare): the synthetic
    length the throughput rows replay beside the one the engine measured on the eval row, and why they
    disagree or why nothing was measured."""
    from ci_tools.evals.gate import describe as eval_point

    def number(v):   # an --evals file is read, not trusted: a field of another type shows as unknown
        return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None

    def text(v):
        return v if isinstance(v, str) else None

    out = []
    for e in evals:
        a = e.get("acceptance") if isinstance(e, dict) and isinstance(e.get("acceptance"), dict) else {}
        synthetic, measured = number(a.get("synthetic")), number(a.get("measured"))
        if synthetic is None and measured is None:
            continue
        point = e.get("point") if isinstance(e.get("point"), dict) else {}
        out.append({"point": eval_point(point), "synthetic": synthetic, "measured": measured,
                    "source": text(a.get("measured-source")), "difference": number(a.get("difference")),
                    "agrees": a.get("agrees") if isinstance(a.get("agrees"), bool) else None,
                    "why": text(a.get("warning")) or text(a.get("not-measured"))})
    return sorted(out, key=lambda r: r["point"])


# ---- telemetry ------------------------------------------------------------------------------------

MAX_SAMPLES_DRAWN = 1000   # per GPU: fifty 8-GPU jobs of hours at 1 Hz stay a page of ~10 MB


@dataclass
class TelemetryJob:
    name: str
    gpus: list[dict]               # {"index", "t": [s since the first sample], "power_w", "sm_mhz"}
    summary: dict                  # runner/telemetry.summarize over the benchmark window (or the recording)
    energy: dict | None = None     # the result's energy (telemetry.energy), when the job's result is known
    reasons: list[str] = field(default_factory=list)   # clock event reasons seen, with their largest share


def telemetry_job(name: str, samples: list[dict], result: dict | None = None) -> TelemetryJob:
    from ci_tools.runner import telemetry

    t0 = min((s["t"] for s in samples), default=0.0)
    summary = (result or {}).get("gpu_telemetry") or telemetry.summarize(samples)
    gpus = []
    for index in sorted({s["index"] for s in samples}, key=lambda i: (len(i), i)):
        rows_ = [s for s in samples if s["index"] == index]
        step = max(1, len(rows_) // MAX_SAMPLES_DRAWN + (1 if len(rows_) % MAX_SAMPLES_DRAWN else 0))
        rows_ = rows_[::step]
        gpus.append({"index": index, "name": rows_[0].get("name"), "t": [round(s["t"] - t0, 3) for s in rows_],
                     "power_w": [s["power_w"] for s in rows_], "sm_mhz": [s["sm_mhz"] for s in rows_]})
    shares: dict[str, float] = {}
    for g in summary.get("gpus") or []:
        for reason, share in (g.get("clock_event_share") or {}).items():
            if share:
                shares[reason] = max(shares.get(reason, 0.0), share)
    reasons = [f"{r.replace('_', ' ')} {v:.0%}" for r, v in sorted(shares.items(), key=lambda kv: -kv[1])]
    return TelemetryJob(name, gpus, summary, (result or {}).get("energy"), reasons)


# ---- the whole report ------------------------------------------------------------------------------

@dataclass
class Report:
    title: str
    headline: Headline
    chart: charts.Chart
    rows: list[dict]
    evals: list[dict] | None
    eval_verdict: str | None
    telemetry: list[TelemetryJob]
    notes: list[str]
    method: str
    acceptance: list[dict] = field(default_factory=list)   # acceptance_rows of the evals
    baseline: bool = True          # False: a first or smoke run, drawn alone


def method_line(comparisons: list[PointComparison], policy) -> str:
    noise = sorted({c.noise for pc in comparisons for c in pc.cells.values() if c.noise})
    return (f"Method: Benjamini–Hochberg FDR {policy.fdr:g} over the sweep's values, TOST equivalence "
            f"±{policy.equivalence_margin:.0%}; noise: " + ("; ".join(noise) or "–") + ".")


def build(comparisons: list[PointComparison], shift: FrontierShift | None, head: list[dict],
          main_latest: list[dict], policy, *, title: str = "", evals: list[dict] | None = None,
          eval_verdict: str | None = None, telemetry: list[TelemetryJob] | None = None,
          notes: list[str] | None = None, baseline: bool = True) -> Report:
    return Report(title or "Sweep report", headline(comparisons, shift, baseline),
                  chart_of(comparisons, head, main_latest, charts.TITLE), rows(comparisons),
                  eval_rows(evals) if evals is not None else None, eval_verdict, telemetry or [],
                  list(notes or []), method_line(comparisons, policy), acceptance_rows(evals or []), baseline)
