"""Text and Markdown tables of a Pareto analysis, and the one PNG figure of a chart (`chart.py`) that
`results pareto --plot` and `results compare --plot` both draw."""

from __future__ import annotations

from pathlib import Path

from ci_tools.results.chart import DOMINATED, LOOKS, X_TITLE, Y_TITLE, Chart, tick_text
from ci_tools import names
from ci_tools.render.output import Output
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


MARKER = {"circle": "o", "square": "s", "x": "x"}   # chart.Look's words in matplotlib's
LINE = {"solid": "-", "dash": "--"}


def png_metadata(chart: Chart) -> dict:
    """Fixed metadata (a reproducible file) naming the data drawn: a committed plot can be checked for
    being the current render of its data without comparing pixels, which differ between machines."""
    import dataclasses
    import hashlib
    import json

    digest = hashlib.sha256(json.dumps(dataclasses.asdict(chart), sort_keys=True, default=str).encode()).hexdigest()
    return {"Software": None, "Title": chart.title, "Description": f"ci-tools chart sha256:{digest}"}


def plot_png(chart: Chart, path: Path) -> None:
    """The chart as a PNG file: every series' points and frontier, every point labelled where a label
    fits, the points left out said in a note under the axes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(png_bytes(chart))


def png_bytes(chart: Chart) -> bytes:
    import io

    import matplotlib.pyplot as plt

    fig, _, _ = figure(chart)
    out = io.BytesIO()
    fig.savefig(out, format="png", metadata=png_metadata(chart))
    plt.close(fig)
    return out.getvalue()


def figure(chart: Chart):
    """(figure, axes, labels) of the chart; `labels` holds (series, point, box in display coordinates,
    or None where no label fits without overlapping), so that tests can check the placement."""
    import matplotlib

    matplotlib.use("Agg")  # no display on runners
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 6), dpi=120)
    for s in chart.series:
        look = LOOKS[s.name]
        front = s.frontier
        if s.name == "points":
            dom = [p for p in s.points if not p.frontier]
            for n, line in enumerate(s.frontier_lines):   # one line per workload
                ax.plot([p.intvty_p90 for p in line], [p.tok_s_gpu for p in line], LINE[look.dash],
                        color=look.colour, linewidth=1.5, label=None if n else look.words, zorder=1)
            if front:
                ax.scatter([p.intvty_p90 for p in front], [p.tok_s_gpu for p in front], color=look.colour, zorder=2)
            if dom:
                ax.scatter([p.intvty_p90 for p in dom], [p.tok_s_gpu for p in dom], color=DOMINATED.colour,
                           marker=MARKER[DOMINATED.marker], label=DOMINATED.words, zorder=2)
            continue
        for n, line in enumerate(ln for ln in s.frontier_lines if len(ln) > 1):
            ax.plot([p.intvty_p90 for p in line], [p.tok_s_gpu for p in line], LINE[look.dash], color=look.colour,
                    linewidth=1.5, label=None if n else f"{look.words} frontier", zorder=1)
        ax.scatter([p.intvty_p90 for p in s.points], [p.tok_s_gpu for p in s.points], color=look.colour,
                   marker=MARKER[look.marker], label=f"{look.words} points", zorder=2)
    if chart.log_y:
        from matplotlib.ticker import FixedLocator, FuncFormatter

        ax.set_yscale("log")
        ax.yaxis.set_major_locator(FixedLocator(chart.y_ticks))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: tick_text(v)))
        ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: ""))
    ax.margins(x=0.12, y=0.12)  # room for labels at the edges
    ax.set_xlabel(X_TITLE)
    ax.set_ylabel(Y_TITLE)
    ax.grid(True, which="major", alpha=0.3)
    if any(s.points for s in chart.series):
        ax.legend(loc="upper right", fontsize=8)
    ax.set_title(chart.title, fontsize=10)
    fig.tight_layout(rect=(0, 0.04 if chart.note else 0, 1, 1))
    labels = _place_labels(fig, ax, chart)
    unlabelled = [f"{s.name} {p.name}" if s.name != "points" else p.name for s, p, box in labels if box is None]
    notes = [chart.note] + ([f"no room for the labels of {', '.join(unlabelled)}"] if unlabelled else [])
    if any(notes):
        fig.text(0.01, 0.01, "; ".join(n for n in notes if n), fontsize=7, color="#444444", wrap=True)
    return fig, ax, labels


# Label offsets tried in order (points): right, left, above, below, then further out.
_OFFSETS = [(6, 4), (6, -11), (-6, 4), (-6, -11), (0, 9), (0, -15), (14, 12), (14, -19), (-14, 12), (-14, -19),
            (24, 0), (-24, 0), (0, 20), (0, -26)]


_GAP_PX = 4      # half the clear space between two labels, in pixels
_MARKER_PX = 5   # a marker's radius, in pixels


def _place_labels(fig, ax, chart: Chart) -> list:
    """Label every point where its text overlaps no other label or marker and stays inside the axes:
    greedy over candidate offsets, in display coordinates, first also keeping off the frontier lines
    (a label across one reads as naming the point on the other side). A point with no clear place
    gets no label rather than one over another's (two curves within a few percent of each other put
    the PR's and main's labels of one point on the same spot); the figure's note names it."""
    from matplotlib.path import Path as LinePath

    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    frame = ax.get_window_extent(renderer)
    every = [(s, p) for s in chart.series for p in s.points]
    markers = [ax.transData.transform((p.intvty_p90, p.tok_s_gpu)) for _, p in every]
    lines = [LinePath(ax.transData.transform([(p.intvty_p90, p.tok_s_gpu) for p in line]))
             for s in chart.series for line in s.frontier_lines if len(line) > 1]
    placed: list = []
    out = []
    # left to right keeps the result stable and predictable
    for s, p in sorted(every, key=lambda t: (t[1].intvty_p90, t[1].tok_s_gpu, t[0].name)):
        colour = "#555555" if s.name == "main" else "black"
        best = None
        for dx, dy, avoid_lines in [(dx, dy, True) for dx, dy in _OFFSETS] + [(dx, dy, False) for dx, dy in _OFFSETS]:
            ha = "left" if dx > 0 else "right" if dx < 0 else "center"
            text = ax.annotate(p.name, (p.intvty_p90, p.tok_s_gpu), textcoords="offset points", xytext=(dx, dy),
                               fontsize=8, ha=ha, color=colour)
            # a gap around each label (two labels that touch read as one) and around each marker
            box = text.get_window_extent(renderer).padded(_GAP_PX)
            inside = (box.x0 >= frame.x0 and box.x1 <= frame.x1 and box.y0 >= frame.y0 and box.y1 <= frame.y1)
            clear = not any(box.overlaps(b) for b in placed) and not any(
                box.padded(_MARKER_PX).contains(mx, my) for mx, my in markers) and not (
                avoid_lines and any(line.intersects_bbox(box, filled=False) for line in lines))
            if inside and clear:
                best = box
                break
            text.remove()
        if best is not None:
            placed.append(best)
        out.append((s, p, best))
    return out


# ---- what each `results` command says (cli/emit.py writes it) ----------------------------------------


def _f(x, spec: str) -> str:
    return "n/a" if x is None else format(x, spec)


def result_summary(result: dict) -> str:
    """The text `results process` prints for one benchmark result."""
    h, r = result["headline"], result["requests"]
    lines = [f"{result['point']['name']}: {'VALID' if result['valid'] else 'INVALID'}",
             f"  throughput      {_f(h['tok_s_gpu'], ',.1f')} tok/s/GPU over {result['gpus']} GPU(s), "
             f"duration {_f(result['duration_s'], '.2f')} s",
             f"  interactivity   P90 {_f(h['intvty_p90'], ',.1f')} (median {_f(h['intvty_p50'], ',.1f')}) tok/s/user",
             f"  TTFT            P90 {_f(h['ttft_p90_s'], '.3f')} s (median {_f(h['ttft_p50_s'], '.3f')} s)",
             f"  requests        {r['successful']} ok, {r['errors']} errors "
             f"({_f(r['error_rate'], '.1%')}), {r['accounting']['records_warmup_dropped']} warmup excluded"]
    e = result.get("energy") or {}
    if e.get("valid"):
        lines.append(f"  energy          {_f(e['total_gpu_energy_j'], ',.0f')} J over {len(e['gpus'])} GPU(s), "
                     f"{_f(e['j_per_output_token'], '.4g')} J/output token, {_f(e['avg_power_w'], ',.0f')} W per GPU")
    elif e:
        lines.append(f"  energy          not measured: {', '.join(e.get('reasons') or [])}")
    lines += [f"  invalid [{fail['rule']}]: {fail['message']}" for fail in result["failures"]]
    return "\n".join(lines)


def process_output(written: list, directory: str) -> Output:
    """`results process`: each result's summary; for github, every failed rule as an annotation (they
    stop at 10 a step) and in the job summary; exit 1 when any result is invalid or any eval failed."""
    from ci_tools.evals.report import text_summary

    out = Output(text="\n".join((text_summary if w.eval else result_summary)(w.result) for w in written),
                 json=written[0].result if len(written) == 1 else [w.result for w in written])
    for w in written:
        name = directory if w.eval else w.result["point"]["name"]
        failures = w.result.get("failures") or []
        out.annotations += [("error", f"{name}: {fail.get('message')}", f"results process: {fail.get('rule')}")
                            for fail in failures]
        out.summary += "\n".join([f"### results process: {name}: {'valid' if w.result['valid'] else 'INVALID'}", "",
                                  f"written to `{w.target}`", "",
                                  *(f"- `{fail.get('rule')}`: {fail.get('message')}" for fail in failures)]) + "\n"
        note = (w.result.get("custody") or {}).get("note")
        if note:
            out.stderr.append(f"note: {note}")
        warning = (w.result.get("acceptance") or {}).get("warning") if w.eval else None
        if warning:
            out.annotations.append(("warning", f"{name}: {warning}", "results process: acceptance"))
            out.stderr.append(f"warning: {warning}")
            out.summary += f"- acceptance: {warning}\n"
        if not w.result["valid"]:
            what = "eval failed ({} check(s) failed)" if w.eval else "invalid result ({} rule(s) failed)"
            out.stderr.append(f"error: {what.format(len(failures))}; written to {w.target}")
            out.exit_code = 1
    return out


def collect_output(c, out_path: Path, problem: str | None, fmt: str) -> Output:
    """`results collect`: counts and the eval verdict; github: the verdict as step outputs and the eval
    table in the job summary; exit 1 when the sweep is incomplete (never ingested)."""
    data, verdict = c.data, c.verdict
    text = "\n".join([f"{len(data['results'])} result(s): {data['valid']} valid, {data['invalid']} invalid; "
                      f"evals {verdict['verdict']} ({verdict['passed']} of {verdict['expected']} eval rows passed) "
                      f"-> {out_path}", *(f"  eval: {line}" for line in verdict["failed"] + verdict["missing"])])
    out = Output(text=text, json={"out": str(out_path), "results": len(data["results"]), "valid": data["valid"],
                                  "invalid": data["invalid"], "eval-verdict": verdict, "notes": data["notes"],
                                  "incomplete": problem or None},
                 stderr=[f"note: {note}" for note in data["notes"]] if fmt != "json" else [],   # json holds them
                 outputs={"eval-verdict": verdict["verdict"], "eval-artifact": verdict["artifact"]},
                 summary=(f"### results collect: {'INCOMPLETE' if problem else 'done'}\n\n"
                          f"{len(data['results'])} result(s): {data['valid']} valid, {data['invalid']} invalid"
                          + (f"; incomplete: {problem}" if problem else "") + "\n\n"
                          + "".join(f"- {note}\n" for note in data["notes"]) + "\n" + c.table))
    if problem:
        out.annotations.append(("error", f"the sweep is incomplete: {problem}", "results collect"))
        out.stderr.append(f"error: the sweep is incomplete: {problem}; a partial sweep is never ingested")
        out.exit_code = 1
    return out


def pareto_output(p, input_path: Path, fmt: str) -> Output:
    """`results pareto`: the table (Markdown for --format markdown), each claim's verdict; github: the
    Markdown table and claims in the job summary, an annotation per false claim; exit 1 on a false claim."""
    table = markdown_table(p.points, p.analysis) if fmt == "markdown" else text_table(p.points, p.analysis)
    claims = [f"{'holds' if c['holds'] else 'FALSE'}: {c['claim']} ({c['why']})" for c in p.checked]
    claims_md = "".join(f"- {'holds' if c['holds'] else '**FALSE**'}: {c['claim']} ({c['why']})\n" for c in p.checked)
    false = [c for c in p.checked if not c["holds"]]
    return Output(text=(table + "\n".join(claims)).rstrip("\n"), json={"points": p.analysis, "claims": p.checked},
                  summary=(f"### results pareto: {input_path}\n\n" + markdown_table(p.points, p.analysis)
                           + ("\n" + claims_md if claims_md else "")),
                  annotations=[("error", f"{c['claim']} ({c['why']})", "results pareto: false claim") for c in false],
                  stderr=[f"error: {len(false)} claim(s) are false"] if false else [],
                  exit_code=1 if false else 0)


def compare_output(report, fail_on_regression: bool) -> Output:
    """`results compare`: the report in its format (the flow renders it); a warning per regression."""
    return Output(text=report.text.rstrip("\n") if report.text else None,
                  annotations=[("warning", line, "Regressed against main") for line in report.annotations],
                  stderr=[f"note: {note}" for note in report.notes]
                  + ([f"error: {report.false_claims} claim(s) are false"] if report.false_claims else []),
                  exit_code=1 if report.false_claims or (fail_on_regression and report.regressed) else 0)


def report_output(w, fmt: str) -> Output:
    """`results report`: the verdict and the page written; github: the verdict, the values behind it,
    the frontier and the chart (in characters: a summary shows no script or inline SVG) in the job
    summary."""
    from ci_tools.results.compare_render import OVERALL_EMOJI

    h = w.headline
    values = f" {h.values}." if h.values else ""
    return Output(text=f"{h.overall.word}: {h.verdicts}.{values} {h.frontier}\n"
                       f"report: {w.out} ({w.size:,} bytes, {w.points} points, "
                       f"{len(w.telemetry_jobs)} job(s) with GPU telemetry)",
                  json={"out": str(w.out), "bytes": w.size, "points": w.points, "overall": h.overall.key,
                        "verdicts": h.counts, "point-verdicts": h.points,
                        "frontier": h.frontier, "telemetry-jobs": w.telemetry_jobs, "notes": w.notes,
                        "acceptance-warnings": w.acceptance_warnings},
                  stderr=[f"note: {note}" for note in w.notes] if fmt != "json" else [],   # json holds them
                  annotations=[("warning", a, "results report: acceptance") for a in w.acceptance_warnings],
                  summary=(f"### {OVERALL_EMOJI[h.overall.tone]} {h.overall.word}: sweep report\n\n"
                           f"**{h.verdicts}.**{values} {h.frontier}\n\n"
                           + "".join(f"- acceptance: {a}\n" for a in w.acceptance_warnings)
                           + ("\n" if w.acceptance_warnings else "")
                           + f"```text\n{w.chart_text}\n```\n\n"
                           + f"The page ({w.size:,} bytes: the chart, every value and the GPU telemetry) is this run's "
                             f"`{names.REPORT_ARTIFACT}` artifact: it opens in the browser.\n"))


def publish_output(p, report: Path, branch: str, decide: bool, fmt: str = "text") -> Output:
    """`results publish`: whether and where the report went; github: `publish`, `published`, `path`."""
    would = decide and bool(p.path)
    if would:
        text = f"publish: {p.path}"
    elif p.published:
        text = f"published {report} to {branch}:{p.path}/" + (f" (pruned {', '.join(p.pruned)})" if p.pruned else "")
    else:
        text = f"not published: {p.reason}"
    summary = "" if would else (f"Sweep report: published at `{p.path}/` on `{branch}`.\n" if p.published
                                else f"Sweep report: not published ({p.reason}).\n")
    if p.published and p.url:
        text += f"\npage: {p.url}"
        summary = f"Sweep report: published at [{p.url}]({p.url}) (`{p.path}/` on `{branch}`).\n"
    return Output(text=text, json={"publish": would or p.published, "published": p.published,
                                   "reason": p.reason or None, "path": p.path or None, "url": p.url or None,
                                   "pruned": p.pruned, "notes": p.notes},
                  stderr=[f"note: {n}" for n in p.notes] if fmt != "json" else [],
                  outputs={"publish": str(would or p.published).lower(), "published": str(p.published).lower(),
                           "path": p.path, "url": p.url},
                  summary=summary)
