"""The sweep report as one self-contained HTML page (rendering; the content comes from `report.py`).

The page reads completely without JavaScript: GitHub opens an unzipped HTML artifact in the browser
and its note on that speaks of "simple HTML files (without links to CSS or JS)", so the verdict, the
links to the PR, commit and run, the table and the charts (inline SVG, `report_svg.py`) are all in
the markup. A small inline script adds a tooltip on the chart's points, toggles per series and per
workload, and sortable table columns (keyboard too); without it nothing is missing but those.

Nothing is fetched: no font, no stylesheet, no script from anywhere. The colours follow the
reader's scheme (`prefers-color-scheme`); the layout fits 390 to 1,920 px without scrolling the
page sideways (wide tables scroll inside their own focusable region; a phone gets a chart drawn
for its width).
"""

from __future__ import annotations

import html

from ci_tools.results import report_svg
from ci_tools.results.report import Report, TelemetryJob, value

VERDICT_CLASS = {"improved": "good", "regressed": "bad", "equivalent": "same", "inconclusive": "unsure",
                 "new": "new"}
ARROW_NBSP = "\u00a0"

STYLE = """
:root{color-scheme:light dark;--bg:#fff;--fg:#1f2328;--muted:#59636e;--line:#d1d9e0;--panel:#f6f8fa;--grid:#e6eaef;
--pr:#0969da;--main:#6e7781;--bad:#cf222e;--good:#1a7f37;--warn:#9a6700;--new:#0969da;--link:#0969da}
@media (prefers-color-scheme:dark){:root{--bg:#0d1117;--fg:#e6edf3;--muted:#9198a1;--line:#3d444d;--panel:#151b23;
--grid:#262c36;--pr:#4493f8;--main:#9198a1;--bad:#ff7b72;--good:#3fb950;--warn:#d29922;--new:#58a6ff;--link:#58a6ff}}
*{box-sizing:border-box}
html{background:var(--bg);color:var(--fg)}
body{font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans","DejaVu Sans",sans-serif;margin:0 auto;
max-width:1200px;padding:12px clamp(12px,3vw,28px) 28px;overflow-wrap:break-word}
a{color:var(--link)}code{font-size:.92em}
h1{font-size:clamp(19px,2.4vw,24px);margin:6px 0 6px;line-height:1.3}
h2{font-size:18px;margin:26px 0 8px;border-bottom:1px solid var(--line);padding-bottom:4px}
h3{font-size:15px;margin:14px 0 4px}
.crumbs{margin:0;color:var(--muted);font-size:14px}
.pill{display:inline-block;padding:1px 10px;border-radius:999px;color:#fff;font-weight:700;margin-right:6px}
.pill.tone-bad{background:#cf222e}.pill.tone-good{background:#1a7f37}.pill.tone-warn{background:#9a6700}
.pill.tone-neutral{background:#59636e}
.headline p{margin:4px 0}.headline .points{font-size:17px;font-weight:600}
.method,.note{color:var(--muted);font-size:13px}
figure{margin:8px 0 0}
svg.chart{display:block;width:100%;height:auto;max-width:880px}
.chart-compact{display:none}
@media (max-width:600px){.chart-wide{display:none}.chart-compact{display:block}}
svg text{fill:var(--fg)}svg .tick{fill:var(--muted)}svg .axis-title{fill:var(--muted)}
svg .grid{stroke:var(--grid);stroke-width:1}svg .frame{fill:none;stroke:var(--line)}
svg .s-pr{--c:var(--pr)}svg .s-main{--c:var(--main)}
svg .frontier{fill:none;stroke:var(--c);stroke-width:2}svg .frontier.dashed{stroke-dasharray:6 4}
svg .mk{fill:var(--c);stroke:var(--bg);stroke-width:1}svg path.mk{fill:none;stroke:var(--c);stroke-width:2}
svg .off-frontier .mk{opacity:.75}
svg .ring{fill:none;stroke:var(--bad);stroke-width:2.5}
svg .label{font-size:.92em}svg .label.s-main{fill:var(--muted)}svg .label.bad{fill:var(--bad);font-weight:700}
svg .pt:hover .mk,svg .pt.hot .mk{stroke:var(--fg);stroke-width:2}
svg .gpu .power{fill:none;stroke:var(--g);stroke-width:1.5}svg .gpu .clock{fill:none;stroke:var(--g);stroke-width:1;stroke-dasharray:2 3}
.gpu-0{--g:#0969da}.gpu-1{--g:#bf3989}.gpu-2{--g:#1a7f37}.gpu-3{--g:#9a6700}.gpu-4{--g:#8250df}.gpu-5{--g:#cf222e}
.gpu-6{--g:#1b7c83}.gpu-7{--g:#6e7781}
@media (prefers-color-scheme:dark){.gpu-0{--g:#4493f8}.gpu-1{--g:#db61a2}.gpu-2{--g:#3fb950}.gpu-3{--g:#d29922}
.gpu-4{--g:#ab7df8}.gpu-5{--g:#ff7b72}.gpu-6{--g:#39c5cf}.gpu-7{--g:#9198a1}}
.legend{display:flex;flex-wrap:wrap;gap:4px 16px;margin:6px 0;font-size:14px}
.legend label,.legend span{white-space:nowrap}.legend svg{width:16px;height:16px;vertical-align:-3px}
.legend input{margin:0 4px 0 0}
.scroll{overflow-x:auto;max-width:100%;border:1px solid var(--line);border-radius:6px}
.scroll:focus{outline:2px solid var(--link);outline-offset:2px}
table{border-collapse:collapse;font-size:14px;min-width:100%}
th,td{border-bottom:1px solid var(--line);padding:5px 8px;vertical-align:top;text-align:left}
th{background:var(--panel);font-weight:600;min-width:5.5em}th.num,td.num{text-align:right}
td.name{white-space:nowrap;font-weight:600}.nw{white-space:nowrap}
th button{font:inherit;color:inherit;background:none;border:0;padding:0;cursor:pointer;text-align:inherit}
th[aria-sort=ascending] button::after{content:" \\25B2"}th[aria-sort=descending] button::after{content:" \\25BC"}
td small{color:var(--muted);display:block}
.good{color:var(--good);font-weight:600}.bad{color:var(--bad);font-weight:600}.same{color:var(--muted)}
.unsure{color:var(--warn)}.new{color:var(--new)}
.pass{color:var(--good)}.fail{color:var(--bad);font-weight:600}
#tip{position:absolute;z-index:5;max-width:min(420px,92vw);background:var(--panel);color:var(--fg);
border:1px solid var(--line);border-radius:6px;padding:6px 9px;font-size:13px;white-space:pre-line;pointer-events:none;
box-shadow:0 2px 8px rgba(0,0,0,.25)}
.job{border-top:1px solid var(--line);padding-top:4px}
footer{margin-top:28px;border-top:1px solid var(--line);padding-top:6px}
"""

# Only additions: the tooltip (from each point's SVG <title>), the series and workload toggles, and
# sortable columns. The page has all of its content without this.
SCRIPT = """
(function(){
  var tip=document.getElementById('tip');
  document.querySelectorAll('svg.chart .pt').forEach(function(g){
    var t=g.querySelector('title'); if(!t)return; g.setAttribute('data-tip',t.textContent); t.remove();
    function show(){var r=g.getBoundingClientRect();tip.textContent=g.getAttribute('data-tip');tip.hidden=false;
      var x=r.left+window.scrollX+r.width/2+10,y=r.top+window.scrollY-8,w=tip.offsetWidth;
      if(x+w>window.scrollX+document.documentElement.clientWidth-8){x=Math.max(window.scrollX+8,r.left+window.scrollX-w-10);}
      tip.style.left=x+'px';tip.style.top=(y-tip.offsetHeight>window.scrollY?y-tip.offsetHeight:y+r.height+16)+'px';
      g.classList.add('hot');}
    function hide(){tip.hidden=true;g.classList.remove('hot');}
    g.addEventListener('mouseenter',show);g.addEventListener('mouseleave',hide);
  });
  var boxes=document.querySelectorAll('#legend input');
  function apply(){
    var off={};boxes.forEach(function(c){if(!c.checked){off[c.dataset.kind+':'+c.value]=1;}});
    document.querySelectorAll('svg.chart [data-series], svg.chart [data-group]').forEach(function(e){
      var d=e.dataset,hide=(d.series&&off['series:'+d.series])||(d.group&&off['group:'+d.group]);
      e.style.display=hide?'none':'';});
  }
  boxes.forEach(function(c){c.hidden=false;c.addEventListener('change',apply);});
  function sortBy(th,button){
    var table=th.closest('table'),body=table.tBodies[0],i=Array.prototype.indexOf.call(th.parentNode.children,th);
    var dir=th.getAttribute('aria-sort')==='ascending'?'descending':'ascending';
    Array.prototype.forEach.call(th.parentNode.children,function(h){h.removeAttribute('aria-sort');});
    th.setAttribute('aria-sort',dir);
    var rows=Array.prototype.slice.call(body.rows);
    rows.sort(function(a,b){
      var x=a.cells[i].getAttribute('data-v'),y=b.cells[i].getAttribute('data-v');
      var nx=parseFloat(x),ny=parseFloat(y),c;
      if(!isNaN(nx)&&!isNaN(ny)){c=nx-ny;}else if(isNaN(nx)!==isNaN(ny)){c=isNaN(nx)?1:-1;}else{c=String(x).localeCompare(String(y));}
      return dir==='ascending'?c:-c;});
    rows.forEach(function(r){body.appendChild(r);});
  }
  document.querySelectorAll('table.sortable th').forEach(function(th){
    var b=document.createElement('button');b.type='button';
    while(th.firstChild){b.appendChild(th.firstChild);}th.appendChild(b);
    b.addEventListener('click',function(){sortBy(th,b);});
  });
})();
"""


def _e(text) -> str:
    return html.escape(str(text), quote=True)


def _links(report: Report) -> str:
    lk = report.links
    parts = []
    if lk.pr_url:
        parts.append(f'<a id="pr-link" href="{_e(lk.pr_url)}">PR #{lk.pr}</a>')
    if lk.commit:
        short = f"<code>{_e(lk.commit[:12])}</code>"
        parts.append(f'commit <a href="{_e(lk.commit_url)}">{short}</a>' if lk.commit_url else f"commit {short}")
    if lk.run_url:
        parts.append(f'<a href="{_e(lk.run_url)}">sweep run {lk.run_id}</a>')
    elif lk.run_id:
        parts.append(f"sweep run {lk.run_id}")
    if not parts:
        return '<p class="crumbs">Made outside a workflow: no PR, commit or run was given.</p>'
    return '<nav class="crumbs" aria-label="What this report belongs to">' + " · ".join(parts) + "</nav>"


def _legend(report: Report) -> str:
    """The chart's key; with the script, each entry also toggles what it names."""
    items = []
    names = {s.name for s in report.chart.series}
    if "PR" in names or "points" in names:
        items.append('<label><input type="checkbox" checked hidden data-kind="series" value="PR">'
                     '<svg aria-hidden="true" viewBox="0 0 16 16" class="s-pr"><circle class="mk" cx="8" cy="8" r="5" '
                     'style="fill:var(--pr)"/></svg> the PR: points and frontier</label>')
    if "main" in names:
        items.append('<label><input type="checkbox" checked hidden data-kind="series" value="main">'
                     '<svg aria-hidden="true" viewBox="0 0 16 16"><rect x="3" y="3" width="10" height="10" '
                     'style="fill:var(--main)"/></svg> main: points and frontier (dashed)</label>')
    if any(report_svg.regressed(p) for s in report.chart.series for p in s.points):
        items.append('<span><svg aria-hidden="true" viewBox="0 0 16 16"><circle cx="8" cy="8" r="6" '
                     'style="fill:none;stroke:var(--bad);stroke-width:2.5"/></svg> regressed point</span>')
    groups = sorted({report_svg.charts_group(p) for s in report.chart.series for p in s.points} - {""})
    if len(groups) > 1:
        items += [f'<label><input type="checkbox" checked hidden data-kind="group" value="{_e(g)}">{_e(g)}</label>'
                  for g in groups]
    return '<div class="legend" id="legend">' + "".join(items) + "</div>"


def _chart(report: Report) -> str:
    h = report.headline
    desc = f"{h.verdicts}. {h.frontier}"
    wide = report_svg.pareto_svg(report.chart, ident="pareto", title=report.chart.title, desc=desc)
    narrow = report_svg.pareto_svg(report.chart, ident="pareto-compact", width=360, height=340, compact=True,
                                   title=report.chart.title, desc=desc)
    note = (report.chart.note[0].upper() + report.chart.note[1:] + ".") if report.chart.note else \
        "Every point with both values is drawn."
    return (f'<figure id="chart"><div class="chart-wide">{wide}</div><div class="chart-compact">{narrow}</div>'
            f'<figcaption>{_legend(report)}<p class="note" id="chart-note">{_e(note)} Hover a point for its values; '
            "every value is also in the table below.</p></figcaption></figure>")


def _change(c: dict) -> str:
    if c["change"] is None:
        return ""
    arrow = "▲" if c["change"] > 0 else "▼" if c["change"] < 0 else "="
    return f"{arrow}{ARROW_NBSP}{c['change']:+.1%}"


def _cell(c: dict) -> str:
    head = value(c["metric"], c["head"])
    sort = _e(c["head"] if c["head"] is not None else "")
    if c["verdict"] is None:
        extra = "main: not measured" if c["head"] is not None and c["base"] is None else ""
        return f'<td class="num" data-v="{sort}">{head}' + (f"<small>{extra}</small>" if extra else "") + "</td>"
    cls = VERDICT_CLASS.get(c["verdict"], "")
    # the pieces wrap apart, never inside one: "main 10,017", "▼ -6.8%", "[-10.9%, -2.6%]"
    detail = "" if c["change"] is None else f"main{ARROW_NBSP}{value(c['metric'], c['base'])} · {_change(c)}"
    if c["interval"]:
        detail += f" [{c['interval'][0]:+.1%},{ARROW_NBSP}{c['interval'][1]:+.1%}]"
    return (f'<td class="num" data-v="{sort}">{head}'
            + (f"<small>{_e(detail)}</small>" if detail else "")
            + f'<small class="{cls}">{_e(c["verdict"])}</small></td>')


def _nowrap_names(text: str) -> str:
    """`replaces tp4-c16 (TP4 EP4)` with the point's name kept on one line (a hyphen is a place to wrap)."""
    import re

    return re.sub(r"[^\s()]+-[^\s()]+", lambda m: f'<span class="nw">{m.group(0)}</span>', _e(text))


def _table(report: Report) -> str:
    shown = [i for i, c in enumerate(report.rows[0]["cells"]) if c["metric"] in
             ("tok_s_gpu", "intvty_p90", "intvty_p50", "ttft_p90_s")
             or any(r["cells"][i]["head"] is not None or r["cells"][i]["base"] is not None for r in report.rows)] \
        if report.rows else []
    groups = len({(r["config"], r["scenario"]) for r in report.rows}) > 1
    head = ['<th scope="col">point</th>'] + (['<th scope="col">workload</th>'] if groups else []) + \
        ['<th scope="col">topology</th><th scope="col" class="num">conc</th><th scope="col">vs main</th>']
    for i in shown:
        c = report.rows[0]["cells"][i]
        better = "" if c["metric"] in ("tok_s_gpu", "intvty_p90", "intvty_p50") else ", lower is better"
        head.append(f'<th scope="col" class="num">{_e(c["label"])} ({_e(c["unit"])}{better})</th>')
    body = []
    for r in report.rows:
        workload = " ".join(x for x in (r["config"], r["scenario"]) if x)
        cells = [f'<td class="name" data-v="{_e(r["name"])}">{_e(r["name"])}</td>']
        if groups:
            cells.append(f'<td data-v="{_e(workload)}">{_e(workload)}</td>')
        cells += [f'<td data-v="{_e(r["topology"])}">{_e(r["topology"])}</td>',
                  f'<td class="num" data-v="{_e(r["conc"])}">{_e(r["conc"])}</td>',
                  f'<td data-v="{_e(r["vs"])}">{_nowrap_names(r["vs"])}</td>']
        cells += [_cell(r["cells"][i]) for i in shown]
        body.append(f'<tr data-point="{_e(r["name"])}">' + "".join(cells) + "</tr>")
    return ('<div class="scroll" role="region" aria-label="The verdict table (scrolls sideways)" tabindex="0">'
            '<table id="verdicts" class="sortable"><thead><tr>' + "".join(head) + "</tr></thead><tbody>"
            + "".join(body) + "</tbody></table></div>")


def _evals(report: Report) -> str:
    if report.evals is None:
        return '<p class="note">No eval results were given (--evals, or a collection with evals).</p>'
    if not report.evals:
        return f'<p>No eval scores in this sweep (verdict: {_e(report.eval_verdict or "none")}).</p>'
    rows = []
    for e in report.evals:
        ok = "pass" if e["passed"] else "FAIL"
        rows.append(f'<tr><td>{_e(e["task"])}</td><td>{_e(e["point"])}</td><td class="num" data-v="{_e(e["conc"])}">'
                    f'{_e(e["conc"])}</td><td>{_e(e["metric"])}</td><td class="num" data-v="{_e(e["score"])}">'
                    f'{e["score"]:.4f}</td><td class="num" data-v="{_e(e["threshold"])}">{e["threshold"]:.2f} '
                    f'<small>{_e(e["source"])}</small></td><td class="{"pass" if e["passed"] else "fail"}">{ok}</td></tr>')
    verdict = f'<p>Eval verdict: <b>{_e(report.eval_verdict)}</b></p>' if report.eval_verdict else ""
    return (verdict + '<div class="scroll" role="region" aria-label="Eval scores" tabindex="0">'
            '<table id="evals-table" class="sortable"><thead><tr><th scope="col">task</th><th scope="col">point</th>'
            '<th scope="col" class="num">conc</th><th scope="col">metric</th><th scope="col" class="num">score</th>'
            '<th scope="col" class="num">threshold</th><th scope="col">result</th></tr></thead><tbody>'
            + "".join(rows) + "</tbody></table></div>")


def _fmt(v, spec: str, unit: str = "") -> str:
    return "–" if v is None else format(v, spec) + unit


def _acceptance(report: Report) -> str:
    if not report.acceptance:
        return ""
    rows = []
    for a in report.acceptance:
        diff = "–" if a["difference"] is None else f"{a['difference']:+.1%}"
        state = ("agrees" if a["agrees"] else "DISAGREES") if a["agrees"] is not None else "not compared"
        cls = "pass" if a["agrees"] else ("fail" if a["agrees"] is False else "note")
        rows.append(f'<tr><td>{_e(a["point"])}</td><td class="num">{_fmt(a["synthetic"], "g")}</td>'
                    f'<td class="num">{_fmt(a["measured"], "g")} <small>{_e(a["source"] or "")}</small></td>'
                    f'<td class="num">{diff}</td><td class="{cls}">{state}</td><td>{_e(a["why"] or "")}</td></tr>')
    return ('<h3>Acceptance length</h3><p class="note">Throughput rows of a speculative recipe replay the synthetic '
            'length; the eval row of the same point measures the real one.</p>'
            '<div class="scroll" role="region" aria-label="Acceptance lengths" tabindex="0">'
            '<table id="acceptance-table" class="sortable"><thead><tr><th scope="col">point</th>'
            '<th scope="col" class="num">synthetic</th><th scope="col" class="num">measured</th>'
            '<th scope="col" class="num">difference</th><th scope="col">result</th><th scope="col">why</th></tr></thead>'
            "<tbody>" + "".join(rows) + "</tbody></table></div>")


def _job_summary(job: TelemetryJob) -> str:
    s = job.summary
    gpus = s.get("gpus") or []
    names = sorted({str(g.get("name")) for g in gpus if g.get("name")})
    mean_power = [g["power_w"]["mean"] for g in gpus if g.get("power_w")]
    limits = sorted({g["power_limit_w"] for g in gpus if g.get("power_limit_w")})
    clocks = [g["sm_clock_mhz"] for g in gpus if g.get("sm_clock_mhz")]
    parts = [f"{len(gpus)} × {', '.join(names) or 'GPU'}",
             "mean board power " + (", ".join(f"{p:,.0f}" for p in mean_power) or "–") + " W"
             + (f" (limit {', '.join(f'{x:,.0f}' for x in limits)} W)" if limits else ""),
             "SM clock " + (", ".join(f"{c['min']:,.0f}–{c['max']:,.0f}" for c in clocks) or "–") + " MHz",
             f"energy {_fmt((s.get('energy_j') or 0) / 1000 if s.get('energy_j') is not None else None, ',.2f', ' kJ')}"
             f" over {_fmt(s.get('window_s'), ',.1f', ' s')}"]
    e = job.energy
    if e and e.get("valid"):
        parts.append(f"J/output token {value('j_per_output_token', e.get('j_per_output_token'))}, "
                     f"J/token {value('j_per_total_token', e.get('j_per_total_token'))}, "
                     f"J/request {value('j_per_request', e.get('j_per_request'))}")
    elif e:
        parts.append("energy per token not valid: " + ", ".join(e.get("reasons") or []))
    else:
        parts.append("J/output token: – (no result of this job was given)")
    parts.append("clock event reasons: " + (", ".join(job.reasons) or "none"))
    if s.get("power_capped"):
        parts.append("power-capped: its numbers say more about the power limit than the recipe")
    return '<p class="tel-summary">' + " · ".join(_e(p) for p in parts) + "</p>"


def render(report: Report) -> str:
    """The whole page."""
    h = report.headline
    tone = h.overall.tone
    tel = "".join(f'<section class="job" data-job="{_e(job.name)}" aria-label="{_e(job.name)}"><h3>{_e(job.name)}</h3>'
                  f"{_job_summary(job)}{report_svg.telemetry_svg(job, ident=f'telemetry-{n}')}</section>"
                  for n, job in enumerate(report.telemetry))
    telemetry = tel or '<p class="note">No GPU telemetry was collected for this sweep (--telemetry DIR).</p>'
    regressed = (f'<p class="bad">Regressed: {_e("; ".join(h.regressed))}</p>' if h.regressed else "")
    values = f"<p>{_e(h.values)}.</p>" if h.values else ""
    notes = "".join(f'<li>{_e(n)}</li>' for n in report.notes)
    notes = f'<h2 id="notes-h">Notes</h2><ul class="note">{notes}</ul>' if notes else ""
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>{_e(report.title)}</title><style>{STYLE}</style></head><body>
<header class="headline" id="verdict">
{_links(report)}
<h1><span class="pill tone-{tone}" id="overall">{_e(h.overall.word)}</span> {_e(report.title.split(": ", 1)[-1] if report.title.startswith(h.overall.word + ": ") else report.title)}</h1>
<p class="points">{_e(h.verdicts)}</p>
{values}<p class="frontier">{_e(h.frontier)}</p>{regressed}
</header>
<main>
<section aria-labelledby="chart-h"><h2 id="chart-h">Throughput against interactivity</h2>
{_chart(report)}
<p class="method">{_e(report.method)}</p></section>
<section aria-labelledby="table-h"><h2 id="table-h">Verdicts per point</h2>
<p class="note">Under each value: main's value, the change (▲ up, ▼ down), its 95% interval, and the verdict, which says whether the change is better or worse.</p>
{_table(report)}</section>
<section aria-labelledby="evals-h"><h2 id="evals-h">Evals</h2>
<div id="evals">{_evals(report)}{_acceptance(report)}</div></section>
<section aria-labelledby="telemetry-h"><h2 id="telemetry-h">GPU telemetry</h2>
<div id="telemetry">{telemetry}</div></section>
{notes}
</main>
<footer class="note">Made by <code>ci-tools results report</code>: one file, nothing fetched.</footer>
<div id="tip" role="tooltip" hidden></div>
<script>{SCRIPT}</script>
</body></html>
"""
