"""The sweep report as one self-contained HTML page (adapter: it inlines plotly's JavaScript bundle).

Everything the page needs is in the file: plotly.js (inlined, so a downloaded artifact or a Pages
site draws offline and nothing is fetched at view time), the figures as JSON, the styles, and a few
lines of script for the sortable table and the per-config and per-scenario toggles. The content
comes from `report.py`; this module only lays it out.
"""

from __future__ import annotations

import html
import json

from ci_tools.results import chart as charts
from ci_tools.results.report import Report, TelemetryJob, value

VERDICT_CLASS = {"improved": "good", "regressed": "bad", "equivalent": "same", "inconclusive": "unsure",
                 "new": "new"}

STYLE = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0 auto;max-width:1180px;padding:16px 24px;color:#1b1f24}
h1{font-size:22px;margin:4px 0 8px}h2{font-size:17px;margin:26px 0 8px;border-bottom:1px solid #d8dee4;padding-bottom:4px}
h3{font-size:15px;margin:16px 0 4px}
.headline{background:#f6f8fa;border:1px solid #d8dee4;border-radius:6px;padding:10px 14px}
.headline .counts{font-size:18px;font-weight:600;margin:2px 0}.headline p{margin:4px 0}
.method,.note{color:#57606a;font-size:12.5px}
table{border-collapse:collapse;width:100%;font-size:13px}th,td{border:1px solid #d8dee4;padding:4px 6px;vertical-align:top}
th{background:#f6f8fa;cursor:pointer;text-align:left;white-space:nowrap}th.num,td.num{text-align:right}
th[aria-sort=ascending]::after{content:" ▲"}th[aria-sort=descending]::after{content:" ▼"}
td small{color:#57606a;display:block;white-space:nowrap}
.good{color:#1a7f37;font-weight:600}.bad{color:#cf222e;font-weight:600}.same{color:#57606a}.unsure{color:#9a6700}.new{color:#0969da}
.pass{color:#1a7f37}.fail{color:#cf222e;font-weight:600}
#toggles label{margin-right:14px;white-space:nowrap}#toggles{margin:6px 0}
.job{border-top:1px solid #eaeef2;padding-top:4px}
"""

SCRIPT = """
(function(){
  function sortBy(th){
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
  document.querySelectorAll('table.sortable th').forEach(function(th){th.addEventListener('click',function(){sortBy(th);});});
  var gd=document.getElementById('pareto');
  function applyToggles(){
    var off={};
    document.querySelectorAll('#toggles input').forEach(function(c){if(!c.checked){off[c.dataset.kind+':'+c.value]=1;}});
    var vis=gd.data.map(function(t){var m=t.meta||{};
      if(m.config!==undefined&&off['config:'+m.config])return false;
      if(m.scenario!==undefined&&off['scenario:'+m.scenario])return false;return true;});
    Plotly.restyle(gd,{visible:vis});
  }
  document.querySelectorAll('#toggles input').forEach(function(c){c.addEventListener('change',applyToggles);});
})();
"""


def _e(text) -> str:
    return html.escape(str(text), quote=True)


def _json(obj) -> str:
    # inside <script>: no "</" may close the element early
    return json.dumps(obj, separators=(",", ":")).replace("</", "<\\/")


def _scenario(s: str) -> str:
    return s or "unspecified"


def pareto_figure(chart: charts.Chart) -> dict:
    """The chart as a plotly figure: per side, one marker trace per (config, scenario), and its frontier."""
    data = []
    for s in chart.series:
        look = charts.LOOKS[s.name]
        groups: dict[tuple, list] = {}
        for p in s.points:
            groups.setdefault((p.info.get("config", ""), _scenario(p.info.get("scenario", ""))), []).append(p)
        several = len(groups) > 1
        for (config, scenario), pts in groups.items():
            name = s.name + (f" · {config} · {scenario}" if several else "")
            data.append({"type": "scatter", "mode": "markers", "name": name,
                         "x": [p.intvty_p90 for p in pts], "y": [p.tok_s_gpu for p in pts],
                         "text": [p.name for p in pts],
                         "customdata": ["<br>".join(_e(line) for line in p.info.get("hover") or [p.name]) for p in pts],
                         "hovertemplate": "%{customdata}<extra></extra>",
                         "marker": {"color": look.colour, "symbol": look.marker,
                                    "size": 10 if s.name == "PR" else 9, "line": {"width": 1, "color": "white"}},
                         "meta": {"side": s.name, "config": config, "scenario": scenario, "kind": "points"}})
        front = s.frontier
        if len(front) > 1:
            data.append({"type": "scatter", "mode": "lines", "name": f"{s.name} frontier",
                         "x": [p.intvty_p90 for p in front], "y": [p.tok_s_gpu for p in front],
                         "hoverinfo": "skip",
                         "line": {"color": look.colour, "width": 2, "dash": look.dash},
                         "meta": {"side": s.name, "kind": "frontier"}})
    layout = {"title": {"text": chart.title}, "height": 560, "margin": {"l": 70, "r": 20, "t": 50, "b": 60},
              "hovermode": "closest", "hoverlabel": {"align": "left"}, "legend": {"orientation": "h", "y": -0.14},
              "xaxis": {"title": {"text": charts.X_TITLE}, "zeroline": False},
              "yaxis": {"title": {"text": charts.Y_TITLE}, "type": "log" if chart.log_y else "linear",
                        "tickformat": "~s"},
              "plot_bgcolor": "white", "paper_bgcolor": "white"}
    if chart.y_ticks:   # plotly's default log ticks label every minor step
        layout["yaxis"].update(tickvals=chart.y_ticks, ticktext=[charts.tick_text(t) for t in chart.y_ticks])
    for ax in ("xaxis", "yaxis"):
        layout[ax].update(showgrid=True, gridcolor="#eaeef2", linecolor="#888", mirror=True, showline=True)
    return {"data": data, "layout": layout}


def telemetry_figure(job: TelemetryJob) -> dict:
    data = []
    for g in job.gpus:
        data.append({"type": "scatter", "mode": "lines", "name": f"GPU {g['index']} power (W)", "x": g["t"],
                     "y": g["power_w"], "line": {"width": 1.5}, "meta": {"kind": "power", "gpu": g["index"]},
                     "hovertemplate": "%{x:.1f} s: %{y:.0f} W<extra>GPU " + _e(g["index"]) + "</extra>"})
        data.append({"type": "scatter", "mode": "lines", "name": f"GPU {g['index']} SM clock (MHz)", "x": g["t"],
                     "y": g["sm_mhz"], "yaxis": "y2", "line": {"width": 1, "dash": "dot"},
                     "meta": {"kind": "sm_clock", "gpu": g["index"]},
                     "hovertemplate": "%{x:.1f} s: %{y:.0f} MHz<extra>GPU " + _e(g["index"]) + "</extra>"})
    layout = {"height": 320, "margin": {"l": 60, "r": 70, "t": 30, "b": 45}, "legend": {"orientation": "h", "y": -0.25},
              "title": {"text": f"{job.name}: power and SM clock", "font": {"size": 13}},
              "xaxis": {"title": {"text": "time since the first sample (s)"}},
              "yaxis": {"title": {"text": "board power (W)"}, "rangemode": "tozero"},
              "yaxis2": {"title": {"text": "SM clock (MHz)"}, "overlaying": "y", "side": "right",
                         "rangemode": "tozero", "showgrid": False},
              "plot_bgcolor": "white", "paper_bgcolor": "white"}
    return {"data": data, "layout": layout}


def _cell(c: dict) -> str:
    head = value(c["metric"], c["head"])
    if c["verdict"] is None:
        extra = "main: not measured" if c["head"] is not None and c["base"] is None else ""
        return f'<td class="num" data-v="{_e(c["head"] if c["head"] is not None else "")}">{head}' \
               + (f"<small>{extra}</small>" if extra else "") + "</td>"
    cls = VERDICT_CLASS.get(c["verdict"], "")
    detail = "" if c["change"] is None else f"main {value(c['metric'], c['base'])} · {c['change']:+.1%}"
    if c["interval"]:
        detail += f" [{c['interval'][0]:+.1%}, {c['interval'][1]:+.1%}]"
    return (f'<td class="num" data-v="{_e(c["head"] if c["head"] is not None else "")}">{head}'
            f'<small>{_e(detail)}</small><small class="{cls}">{_e(c["verdict"])}</small></td>')


def _table(report: Report) -> str:
    shown = [i for i, c in enumerate(report.rows[0]["cells"]) if c["metric"] in
             ("tok_s_gpu", "intvty_p90", "intvty_p50", "ttft_p90_s")
             or any(r["cells"][i]["head"] is not None or r["cells"][i]["base"] is not None for r in report.rows)] \
        if report.rows else []
    head = ["<th>point</th><th>topology</th><th class=num>conc</th><th>vs main</th>"]
    for i in shown:
        c = report.rows[0]["cells"][i]
        head.append(f'<th class="num">{_e(c["label"])} ({_e(c["unit"])})</th>')
    body = []
    for r in report.rows:
        cells = [f'<td data-v="{_e(r["name"])}">{_e(r["name"])}</td>', f'<td data-v="{_e(r["topology"])}">{_e(r["topology"])}</td>',
                 f'<td class="num" data-v="{_e(r["conc"])}">{_e(r["conc"])}</td>', f'<td data-v="{_e(r["vs"])}">{_e(r["vs"])}</td>']
        cells += [_cell(r["cells"][i]) for i in shown]
        body.append(f'<tr data-point="{_e(r["name"])}">' + "".join(cells) + "</tr>")
    return ('<table id="verdicts" class="sortable"><thead><tr>' + "".join(head) + "</tr></thead><tbody>"
            + "".join(body) + "</tbody></table>")


def _evals(report: Report) -> str:
    if report.evals is None:
        return '<p class="note">No eval results were given (`--evals`, or a collection with evals).</p>'
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
    return (verdict + '<table id="evals-table" class="sortable"><thead><tr><th>task</th><th>point</th><th class=num>conc</th>'
            '<th>metric</th><th class=num>score</th><th class=num>threshold</th><th>result</th></tr></thead><tbody>'
            + "".join(rows) + "</tbody></table>")


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
            '<table id="acceptance-table" class="sortable"><thead><tr><th>point</th><th class=num>synthetic</th>'
            '<th class=num>measured</th><th class=num>difference</th><th>result</th><th>why</th></tr></thead><tbody>'
            + "".join(rows) + "</tbody></table>")


def _fmt(v, spec: str, unit: str = "") -> str:
    return "–" if v is None else format(v, spec) + unit


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
    import plotly.offline

    h = report.headline
    figures = {"pareto": pareto_figure(report.chart)}
    configs = sorted({p.info.get("config", "") for s in report.chart.series for p in s.points})
    scenarios = sorted({_scenario(p.info.get("scenario", "")) for s in report.chart.series for p in s.points})
    toggles = "".join(f'<label><input type="checkbox" checked data-kind="config" value="{_e(c)}"> {_e(c or "no config")}</label>'
                      for c in configs)
    toggles += "".join(f'<label><input type="checkbox" checked data-kind="scenario" value="{_e(s)}"> {_e(s)}</label>'
                       for s in scenarios)
    tel = []
    for n, job in enumerate(report.telemetry):
        figures[f"telemetry-{n}"] = telemetry_figure(job)
        tel.append(f'<div class="job" data-job="{_e(job.name)}"><h3>{_e(job.name)}</h3>{_job_summary(job)}'
                   f'<div id="telemetry-{n}" class="telemetry-plot"></div></div>')
    telemetry = "".join(tel) or '<p class="note">No GPU telemetry was collected for this sweep (`--telemetry DIR`).</p>'
    regressed = (f'<p class="bad">Regressed: {_e("; ".join(h.regressed))}</p>' if h.regressed else "")
    notes = "".join(f'<p class="note">{_e(n)}</p>' for n in report.notes)
    draw = "".join(f"Plotly.newPlot({_json(k)},{_json(f['data'])},{_json(f['layout'])},"
                   "{responsive:true,displaylogo:false});" for k, f in figures.items())
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{_e(report.title)}</title><style>{STYLE}</style></head><body>
<h1>{_e(report.title)}</h1>
<section id="verdict" class="headline">
<p class="counts">{_e(h.verdicts)}</p>
<p class="frontier">{_e(h.frontier)}</p>{regressed}
<p class="method">{_e(report.method)}</p></section>
<h2>Throughput against interactivity</h2>
<div id="toggles">Show: {toggles}</div>
<div id="pareto"></div>
<p class="note" id="chart-note">{_e(report.chart.note.capitalize() + ".") if report.chart.note else "Every point with both values is drawn."} Hover a point for its values; click a legend entry to hide it.</p>
<h2>Verdicts per point</h2>
<p class="note">Click a column to sort. A value's line below: main's value, the change, its 95% interval, the verdict.</p>
{_table(report)}
<h2>Evals</h2>
<section id="evals">{_evals(report)}{_acceptance(report)}</section>
<h2>GPU telemetry</h2>
<section id="telemetry">{telemetry}</section>
{notes}
<script>{plotly.offline.get_plotlyjs()}</script>
<script>{draw}</script>
<script>{SCRIPT}</script>
</body></html>
"""
