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

# a point counts once, under the first of these its values got (a point that regressed on one
# metric and improved on another is a regressed point: the reviewer must look at it)
POINT_ORDER = (REGRESSED, IMPROVED, INCONCLUSIVE, EQUIVALENT, NEW)


def point_verdict(pc: PointComparison) -> str | None:
    """The point's one verdict (POINT_ORDER); None where no value could be compared or is new."""
    got = {c.verdict for c in pc.cells.values()}
    return next((v for v in POINT_ORDER if v in got), None)


@dataclass(frozen=True)
class Overall:
    """The run's one verdict, as a word and a tone (the page colours it, the card gives it an emoji)."""

    key: str       # a POINT_ORDER verdict, or "none" (no baseline) / "empty" (nothing comparable)
    word: str
    tone: str      # "bad", "good", "warn", "neutral"


OVERALL = {
    REGRESSED: Overall(REGRESSED, "Regressed", "bad"),
    IMPROVED: Overall(IMPROVED, "Improved", "good"),
    INCONCLUSIVE: Overall(INCONCLUSIVE, "Inconclusive", "warn"),
    EQUIVALENT: Overall(EQUIVALENT, "No change", "neutral"),
    NEW: Overall(NEW, "New points only", "neutral"),
    "none": Overall("none", "No baseline", "neutral"),
    "empty": Overall("empty", "Nothing compared", "warn"),
}


def overall(comparisons: list[PointComparison], baseline: bool = True) -> Overall:
    """Regressed when any point regressed, else improved when any improved, and so on (POINT_ORDER)."""
    if not baseline:
        return OVERALL["none"]
    got = {point_verdict(pc) for pc in comparisons}
    return next((OVERALL[v] for v in POINT_ORDER if v in got), OVERALL["empty"])


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def points_sentence(comparisons: list[PointComparison]) -> str:
    """`7 points: 1 regressed, 3 improved, 3 new`: each point once, under its own verdict."""
    per = [point_verdict(pc) for pc in comparisons]
    parts = [f"{per.count(v)} {v}" for v in POINT_ORDER if per.count(v)]
    if per.count(None):
        parts.append(f"{per.count(None)} not comparable")
    return _plural(len(comparisons), "point") + (": " + ", ".join(parts) if parts else "")


def values_sentence(counts: dict[str, int]) -> str:
    """`21 metric values: 9 compared with main (7 improved, 1 regressed, 1 equivalent), 12 new`."""
    compared = sum(counts.get(v, 0) for v in (IMPROVED, REGRESSED, EQUIVALENT, INCONCLUSIVE))
    told = ", ".join(f"{counts[v]} {v}" for v in (IMPROVED, REGRESSED, EQUIVALENT, INCONCLUSIVE) if counts.get(v))
    text = f"{_plural(compared + counts.get(NEW, 0), 'metric value')}: {compared} compared with main"
    text += f" ({told})" if told else ""
    return text + (f", {counts[NEW]} new" if counts.get(NEW) else "")


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
    share = _shares(shift)
    crossings = len(shift.crossings)
    cross = f"; the curves cross {crossings} time{'s' if crossings != 1 else ''}" if crossings else ""
    top = max(s["up_to"] for s in shift.segments)
    if share["PR"] >= share["main"]:
        return (f"The PR's frontier offers more tok/s/GPU over {share['PR']:.0%} of the P90 interactivity range "
                f"(up to {top:,.1f} tok/s/user), main's over {share['main']:.0%} ({', '.join(main)}){cross}.")
    return (f"main's frontier offers more tok/s/GPU over {share['main']:.0%} of the P90 interactivity range "
            f"(up to {top:,.1f} tok/s/user), the PR's over {share['PR']:.0%} ({', '.join(pr)}){cross}.")


def _shares(shift: FrontierShift) -> dict[str, float]:
    """Each side's share of the interactivity range (0 to the highest frontier point) where it leads."""
    top = max(s["up_to"] for s in shift.segments) or 1.0
    out = {"PR": 0.0, "main": 0.0, "tie": 0.0}
    for seg in shift.segments:
        out[seg["lead"]] += (seg["up_to"] - (seg["above"] or 0.0)) / top
    return out


@dataclass
class Headline:
    counts: dict[str, int]  # metric values per verdict (compare.summary)
    verdicts: str           # points_sentence: the points, each once
    frontier: str           # frontier_sentence
    regressed: list[str]    # "tp4-c4 throughput -6.8%"
    values: str = ""        # values_sentence: the metric values behind it
    overall: Overall = OVERALL["empty"]
    points: dict[str, int] = field(default_factory=dict)   # points per verdict (point_verdict)


def headline(comparisons: list[PointComparison], shift: FrontierShift | None, baseline: bool = True) -> Headline:
    counts = summary(comparisons)
    regressed = [f"{pc.name} {m.label} {pc.cells[m.key].change:+.1%}" for pc in comparisons for m in METRICS
                 if pc.cells[m.key].verdict == REGRESSED and pc.cells[m.key].change is not None]
    per = [point_verdict(pc) for pc in comparisons]
    points = {v: per.count(v) for v in POINT_ORDER}
    if baseline:
        verdicts, values = points_sentence(comparisons), values_sentence(counts)
    else:
        # every renderer puts the verdict word (OVERALL["none"]) before this sentence: it is not repeated here
        verdicts = f"{_plural(len(comparisons), 'point')} measured, nothing compared"
        values = ""
    return Headline(counts, verdicts, frontier_sentence(shift, baseline), regressed, values,
                    overall(comparisons, baseline), points)


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
        a = v if isinstance(e, dict) and isinstance(v := e.get("acceptance"), dict) else {}
        synthetic, measured = number(a.get("synthetic")), number(a.get("measured"))
        if synthetic is None and measured is None:
            continue
        point = v if isinstance(v := e.get("point"), dict) else {}
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
    summary: dict                  # telemetry.summarize over the benchmark window (or the recording)
    energy: dict | None = None     # the result's energy (telemetry.energy), when the job's result is known
    reasons: list[str] = field(default_factory=list)   # clock event reasons seen, with their largest share


def telemetry_job(name: str, samples: list[dict], result: dict | None = None) -> TelemetryJob:
    from ci_tools.results import telemetry

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


# ---- what the page belongs to -------------------------------------------------------------------

@dataclass(frozen=True)
class Links:
    """The PR, commit and run a report belongs to (each may be unknown: a report made by hand)."""

    repo: str = ""                       # OWNER/NAME
    server: str = "https://github.com"
    pr: int | None = None
    commit: str = ""
    run_id: int | None = None

    def _base(self) -> str:
        return f"{self.server.rstrip('/')}/{self.repo}" if self.repo else ""

    @property
    def pr_url(self) -> str:
        return f"{self._base()}/pull/{self.pr}" if self._base() and self.pr else ""

    @property
    def commit_url(self) -> str:
        return f"{self._base()}/commit/{self.commit}" if self._base() and self.commit else ""

    @property
    def run_url(self) -> str:
        return f"{self._base()}/actions/runs/{self.run_id}" if self._base() and self.run_id else ""


def links_from_event(event: dict | None, *, repo: str = "", server: str = "", run_id: int | None = None,
                     pr: int | None = None, commit: str = "") -> Links:
    """The links of a report made in a workflow: the PR and its head commit from the event's payload
    (a pull request's; a trusted sweep's dispatch inputs; a push's new head), unless given."""
    event = event if isinstance(event, dict) else {}
    pull = v if isinstance(v := event.get("pull_request"), dict) else {}
    inputs = v if isinstance(v := event.get("inputs"), dict) else {}

    def number(v) -> int | None:
        text = str(v or "").strip()
        return int(text) if text.isdigit() and int(text) > 0 else None

    head = v if isinstance(v := pull.get("head"), dict) else {}
    found_pr = number(pull.get("number")) or number(inputs.get("pr"))
    found_sha = str(head.get("sha") or inputs.get("sha") or event.get("after") or "")
    return Links(repo=repo, server=server or "https://github.com", pr=pr or found_pr, commit=commit or found_sha,
                 run_id=run_id)


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
    links: Links = Links()


def method_line(comparisons: list[PointComparison], policy) -> str:
    noise = sorted({c.noise for pc in comparisons for c in pc.cells.values() if c.noise})
    return (f"Method: Benjamini–Hochberg FDR {policy.fdr:g} over the sweep's values, TOST equivalence "
            f"±{policy.equivalence_margin:.0%}; noise: " + ("; ".join(noise) or "–") + ".")


def build(comparisons: list[PointComparison], shift: FrontierShift | None, head: list[dict],
          main_latest: list[dict], policy, *, title: str = "", evals: list[dict] | None = None,
          eval_verdict: str | None = None, telemetry: list[TelemetryJob] | None = None,
          notes: list[str] | None = None, baseline: bool = True, links: Links = Links()) -> Report:
    h = headline(comparisons, shift, baseline)
    return Report(title or default_title(h, links), h,
                  chart_of(comparisons, head, main_latest, charts.TITLE), rows(comparisons),
                  eval_rows(evals) if evals is not None else None, eval_verdict, telemetry or [],
                  list(notes or []), method_line(comparisons, policy), acceptance_rows(evals or []), baseline, links)


def default_title(h: Headline, links: Links) -> str:
    """`Regressed: PR #7, sweep run 50`: the verdict, then what it belongs to."""
    of = [f"PR #{links.pr}"] if links.pr else []
    of += [f"sweep run {links.run_id}"] if links.run_id else []
    return f"{h.overall.word}: " + (", ".join(of) if of else "sweep report")
