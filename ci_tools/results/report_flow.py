"""`results report`: the two sides, the evals and the jobs' GPU telemetry in, one HTML page out (shell).

The sides are read as `results compare` reads them (compare_flow.load_sides). Evals come from
`--evals` (a `results collect` file, an eval_result.json or a directory of them) or, when HEAD is a
collection, from HEAD itself. Telemetry is every nvidia-smi CSV under `--telemetry DIR` (a job's
gpu_telemetry.csv, or any other CSV of the sampler's query, named after the file), or, when HEAD is a
directory of job results, under HEAD. A job's CSV is matched with HEAD's result by the job, never by
the point's name: by the result.json beside it (its point, result file name and AIPerf benchmark id),
so a cancelled job or another scenario's job of the same point never borrows a result's energy.
Without a baseline (a first or smoke run) the page draws the run alone and says so.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from ci_tools import names
from ci_tools.errors import Finding, InputError
from ci_tools.results import compare, report
from ci_tools.results.compare_flow import load_policy, load_sides


@dataclass
class Written:
    out: Path
    size: int
    headline: report.Headline
    points: int
    telemetry_jobs: list[str]
    notes: list[str] = field(default_factory=list)
    acceptance_warnings: list[str] = field(default_factory=list)   # each disagreeing eval row: point: warning
    chart_text: str = ""      # the chart in characters, for the job summary (report_text.py)


def _read_json(path: Path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"{path}: not readable JSON ({exc})") from None


def load_evals(path: Path | None, head_path: Path) -> tuple[list[dict] | None, str | None]:
    """(eval results, the run's eval verdict) or (None, None) when there are none to show."""
    from ci_tools.evals.score import EVAL_RESULT_SCHEMA
    from ci_tools.results.collect import find_results

    if path is None:
        if head_path.is_file() and head_path.suffix == ".json":
            data = _read_json(head_path)
            if isinstance(data, dict) and isinstance(data.get("evals"), list):
                return data["evals"], (data.get("eval-verdict") or {}).get("verdict")
        return None, None
    if not path.exists():
        raise InputError(f"{path}: no such file or directory (--evals)", exit_code=2)
    if path.is_dir():
        return [d for d in (_read_json(f) for f in find_results([path], names.EVAL_RESULT_JSON))
                if isinstance(d, dict) and d.get("schema") == EVAL_RESULT_SCHEMA], None
    data = _read_json(path)
    if isinstance(data, dict) and isinstance(data.get("evals"), list):
        return data["evals"], (data.get("eval-verdict") or {}).get("verdict")
    if isinstance(data, dict) and data.get("schema") == EVAL_RESULT_SCHEMA:
        return [data], None
    raise InputError(f"{path}: neither a `results collect` file with evals nor an eval_result.json", findings=[
        Finding(str(path), None, None, "not an eval result or a collection of them",
                "pass results/results.json, an eval job's eval_result.json or a directory of them")])


def _looks_like_telemetry(path: Path) -> bool:
    from ci_tools.results import telemetry

    try:
        with path.open(encoding="utf-8", errors="replace") as f:
            first = f.readline()
    except OSError:
        return False
    if first.startswith("timestamp"):
        return "power.draw" in first
    return len(first.split(", ")) == len(telemetry.FIELDS)


def job_key(result: dict) -> tuple:
    """What tells one job's result from every other: its point (configuration, scenario, topology,
    concurrency), result file name and AIPerf's benchmark id (a cancelled re-run of a point writes the
    same file name; a fixed-seq-len job of the point has the same name)."""
    point = v if isinstance(v := result.get("point"), dict) else {}
    aiperf = v if isinstance(v := result.get("aiperf"), dict) else {}
    return (repr(compare.identity(point)), point.get("result-filename"), aiperf.get("benchmark_id"))


def _job_of(csv: Path) -> tuple[str, dict | None, str]:
    """(the job's point name or "", the result.json beside the CSV or None, why there is none)."""
    job = csv.parent / names.JOB_JSON
    name = ""
    if job.is_file():
        data = _read_json(job)
        point = data.get("point") if isinstance(data, dict) else None
        name = str(point.get("name") or "") if isinstance(point, dict) else ""
    result_path = csv.parent / names.RESULT_JSON
    if result_path.is_file():
        data = _read_json(result_path)
        if isinstance(data, dict) and isinstance(data.get("point"), dict):
            return name or str(data["point"].get("name") or ""), data, ""
    status = csv.parent / names.STATUS_JSON
    why = "no result"
    if status.is_file():
        data = _read_json(status)
        if isinstance(data, dict) and data.get("ok") is False and data.get("reason"):
            why = f"no result: {data['reason']}"
    return name, None, why


def load_telemetry(root: Path, head: list[dict],
                   shown: dict[int, str] | None = None) -> tuple[list[report.TelemetryJob], list[str]]:
    """Every nvidia-smi CSV under ROOT as a telemetry job, matched with HEAD's results by the job
    (`job_key` of the result.json beside it); `shown` names HEAD's results as the page does (by id)."""
    from ci_tools.results import telemetry

    if not root.is_dir():
        raise InputError(f"{root}: no such directory (--telemetry)", exit_code=2)
    by_job: dict[tuple, dict] = {}
    for r in head:
        if isinstance(r.get("point"), dict):
            by_job.setdefault(job_key(r), r)
    jobs, notes = [], []
    csvs = sorted(p for p in root.rglob("*.csv") if p.is_file())
    # another CSV under DIR is not telemetry; a job's gpu_telemetry.csv is, whatever it holds
    notes += [f"{p}: not a CSV of the GPU sampler's query (its first line is no nvidia-smi header or sample)"
              for p in csvs if p.name == names.GPU_TELEMETRY_CSV and not _looks_like_telemetry(p)]
    for csv in (p for p in csvs if _looks_like_telemetry(p)):
        meta_path = csv.parent / names.GPU_TELEMETRY_META
        meta = _read_json(meta_path) if csv.name == names.GPU_TELEMETRY_CSV and meta_path.is_file() else {}
        samples, problems = telemetry.parse_csv(csv.read_text(encoding="utf-8", errors="replace"),
                                                telemetry.utc_offset(meta, str(meta_path)))
        notes += [f"{csv}: {p}" for p in problems]
        if not samples:
            notes.append(f"{csv}: no nvidia-smi samples")
            continue
        if csv.name != names.GPU_TELEMETRY_CSV:
            jobs.append(report.telemetry_job(csv.stem, samples))
            continue
        point_name, own, why = _job_of(csv)
        result = by_job.get(job_key(own)) if own is not None else None
        folder = csv.parent.name
        if result is not None:
            name = (shown or {}).get(id(result)) or point_name or folder
        elif point_name:
            name = f"{point_name} ({folder}, {why if own is None else 'its result is not in this report'})"
        else:
            name = folder
        jobs.append(report.telemetry_job(name, samples, result))
    return jobs, notes


def load_links(event_path: Path | None, *, repo: str = "", server: str = "", run_id: int | None = None,
               pr: int | None = None, commit: str = "") -> report.Links:
    """The PR, commit and run the page links to: given, else from the workflow's event payload."""
    event = None
    if event_path is not None and str(event_path):
        if not event_path.is_file():
            raise InputError(f"{event_path}: no such event file (--event-path, $GITHUB_EVENT_PATH)", exit_code=2)
        event = _read_json(event_path)
    return report.links_from_event(event, repo=repo, server=server, run_id=run_id, pr=pr, commit=commit)


def run_report(head_path: Path, baseline_paths: list[Path], out: Path, *, from_main: bool = False,
               evals_path: Path | None = None, telemetry_dir: Path | None = None, policy_path: Path | None = None,
               title: str = "", gh=None, links: report.Links = report.Links()) -> Written:
    from ci_tools.results import report_html

    policy = load_policy(policy_path)
    head, main, notes = load_sides(head_path, baseline_paths, policy, from_main=from_main, gh=gh,
                                   require_baseline=False)
    baseline = bool(baseline_paths) or from_main
    if not baseline:
        notes.append("no baseline given (--baseline or --from-main): the run is drawn alone, nothing is compared")
    comparisons = compare.compare_points(head, main, policy)
    if not comparisons:
        raise InputError(f"{head_path}: no valid result to report (invalid results are never compared)")
    latest = compare.latest_per_point(main)
    shift = compare.frontier_shift(compare.points_of(head), compare.points_of(latest))
    evals, verdict = load_evals(evals_path, head_path)
    if telemetry_dir is None and head_path.is_dir():
        telemetry_dir = head_path
    shown = {id(r): pc.name for pc in comparisons for r in head if r.get("point") is pc.point}
    jobs, tel_notes = load_telemetry(telemetry_dir, head, shown) if telemetry_dir is not None else ([], [])
    doc = report.build(comparisons, shift, head, latest, policy, title=title, evals=evals, eval_verdict=verdict,
                       telemetry=jobs, notes=notes + tel_notes, baseline=baseline, links=links)
    page = report_html.render(doc).encode("utf-8")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(page)
    from ci_tools.results.report_text import text_chart

    return Written(out, len(page), doc.headline, len(comparisons), [j.name for j in jobs], notes + tel_notes,
                   [f"{a['point']}: {a['why']}" for a in doc.acceptance if a["agrees"] is False],
                   text_chart(doc.chart))
