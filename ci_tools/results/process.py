"""`results process`: one job directory -> one result JSON (the shell around records/metrics/validity).

The point a result belongs to comes from the runner's `job.json` (written before the server
starts) or, for a bare AIPerf directory, from what the caller passes (`PointInfo`).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path

from ci_tools.errors import Finding, InputError
from ci_tools.results import metrics as m
from ci_tools.results import crosscheck, intervals, records, summary
from ci_tools.results.policy import ResultsPolicy
from ci_tools.results.validity import Requirements, check, config_echo, unit_failures
from ci_tools import names

RESULT_SCHEMA = "ci-tools/result/v1"


@dataclass
class PointInfo:
    name: str
    tp: int
    ep: int = 1
    dp_attn: bool = False
    conc: int | None = None
    gpus: int | None = None
    scenario: str = "agentic-coding"
    duration_s: float | None = None
    model: str | None = None
    config_key: str | None = None
    runner: str | None = None
    image: str | None = None
    result_filename: str | None = None
    topology: dict | None = None   # multi-node: prefill/decode groups, nodes, placement (gpus = all workers)
    profile: str | None = None     # which benchmark profile measured it (agentx, agentx-fast, fixed-seq)
    canary: str | None = None      # "smoke" (not the point's measurement) or "full-point"; None: not a canary
    # What the runner asked the client for (job.json): a fixed-sequence point's input and output lengths
    # (compare, report and pareto key points by them: `identity.group`), and the profiling requests the
    # records are held to (`crosscheck`, rule `planned-requests`); None where nothing was planned (an
    # agentic point's lengths, a duration run's count, a bare AIPerf directory)
    isl: int | None = None
    osl: int | None = None
    request_count: int | None = None

    @property
    def gpu_count(self) -> int:
        return self.gpus if self.gpus else m.gpu_count(self.tp)


def find_aiperf_dir(path: Path) -> Path:
    """The folder holding profile_export.jsonl: DIR, DIR/aiperf_artifacts, or its first run_* child."""
    for cand in (path, path / names.AIPERF_DIR):
        if (cand / names.PROFILE_JSONL).is_file():
            return cand
        if cand.is_dir():
            for child in sorted(cand.iterdir()):
                if child.is_dir() and (child / names.PROFILE_JSONL).is_file():
                    return child
    raise InputError(f"{path}: no {names.PROFILE_JSONL} found", findings=[Finding(
        str(path), None, None, f"no {names.PROFILE_JSONL} in this directory or in {names.AIPERF_DIR}/",
        "pass the runner's --out directory or AIPerf's --artifact-dir; if the client failed, "
        f"see {names.CLIENT_LOG} and {names.STATUS_JSON} there")])


def export_files(path: Path) -> list[Path]:
    """The files of AIPerf's export that `results process` reads from PATH (custody checks they are recorded)."""
    adir = find_aiperf_dir(path)
    return [f for f in (adir / names.PROFILE_JSONL, adir / names.PROFILE_JSON) if f.exists() or f.is_symlink()]


def read_json(path: Path) -> dict | None:
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise InputError(f"{path}: not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise InputError(f"{path}: expected a JSON object")
    return data


def point_from_job(job: dict, where: str = names.JOB_JSON) -> PointInfo:
    try:
        return _point_from_job(job)
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"{where}: not a job.json written by `ci-tools runner run` ({type(exc).__name__}: {exc})",
                         findings=[Finding(where, None, None, f"the point is unreadable ({type(exc).__name__}: {exc})",
                                           "re-run the job, or pass the point with --tp/--conc and no job.json")]) from None


def _typed(p: dict, key: str, kinds: tuple, default=None):
    value = p.get(key, default)
    if value is not None and (isinstance(value, bool) is not (bool in kinds) or not isinstance(value, kinds)):
        raise TypeError(f"point.{key} is {value!r}, expected {' or '.join(k.__name__ for k in kinds)}")
    return value


def _point_from_job(job: dict) -> PointInfo:
    p = job["point"]
    if not isinstance(p, dict):
        raise TypeError("point is not an object")
    num = (int, float)
    scenario = _typed(p, "scenario", (str,), "agentic-coding")
    # the lengths the runner records in the point; a job.json of an older runner has them in its row only
    lengths = p if "isl" in p or scenario == "agentic-coding" else job.get("row") or {}
    argv = planned_client(job)
    return PointInfo(name=str(p["name"]), tp=int(_typed(p, "tp", (int,))), ep=int(_typed(p, "ep", (int,), 1)),
                     dp_attn=bool(p.get("dp-attn")), conc=_typed(p, "conc", (int,)), gpus=_typed(p, "gpus", (int,)),
                     scenario=scenario,
                     duration_s=_typed(p, "duration", num), model=_typed(p, "model", (str,)), config_key=p.get("config-key"),
                     runner=p.get("runner"), image=p.get("image"), result_filename=job.get("result-filename"),
                     topology=_typed(p, "topology", (dict,)), profile=_typed(p, "profile", (str,)),
                     canary=_typed(p, "canary", (str,)), isl=_length(lengths, "isl"), osl=_length(lengths, "osl"),
                     request_count=crosscheck.planned_requests(argv) if argv is not None else None)


def _length(p: dict, key: str) -> int | None:
    value = _typed(p, key, (int,))
    if value is not None and value <= 0:
        raise ValueError(f"{key} is {value}, expected a positive number of tokens")
    return value


def planned_client(job: dict) -> list[str] | None:
    """The client command the runner planned for this directory's point, as job.json records it: a
    multi-node concurrency's own `command`, a single-node job's `client`, a one-concurrency multi-node
    job's `client-c<N>`; None where it records none (an eval job's harness)."""
    argv = job.get("command")
    if argv is None:
        commands = v if isinstance(v := job.get("commands"), dict) else {}
        conc = v.get("conc") if isinstance(v := job.get("point"), dict) else None
        entry = commands.get("client") or commands.get(f"client-c{conc}")
        argv = entry.get("argv") if isinstance(entry, dict) else None
    if argv is None:
        return None
    if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
        raise TypeError("the client command is not a list of words")
    return argv


def build_result(scan: records.RecordScan, agg: dict | None, point: PointInfo,
                 max_error_rate: float = 0.10, min_requests: int | None = None,
                 policy: ResultsPolicy = ResultsPolicy()) -> dict:
    """Pure: the full result document from a scan, AIPerf's summary and the point."""
    measured = m.compute_metrics(scan, point.gpu_count)
    req = Requirements(scenario=point.scenario, conc=point.conc, duration_s=point.duration_s,
                       model=point.model, max_error_rate=max_error_rate, min_requests=min_requests)
    failures = check(measured, agg, req) + unit_failures(scan.unit_problems)
    if agg is not None:
        failures += summary.compare(scan, agg, policy.summary_tolerance)
    failures += crosscheck.check(scan, check_context(scan, agg, point), policy)
    aiperf = {}
    if agg is not None:
        aiperf = {"version": agg.get("aiperf_version"), "benchmark_id": agg.get("benchmark_id"),
                  "start_time": agg.get("start_time"), "end_time": agg.get("end_time"),
                  "was_cancelled": agg.get("was_cancelled"), "is_complete": agg.get("is_complete"),
                  "config": config_echo(agg)}
    return refuse_non_finite({
        "schema": RESULT_SCHEMA,
        "point": {k.replace("_", "-"): v for k, v in asdict(point).items()} | {"gpus": point.gpu_count},
        "valid": not failures,
        "failures": [f.as_dict() for f in failures],
        **measured,
        # how precisely this run pinned its percentiles (results compare weighs changes with it)
        "headline_ci": intervals.headline_intervals(scan.itl_ms, scan.ttft_ms),
        "aiperf": aiperf,
    })


def check_context(scan: records.RecordScan, agg: dict | None, point: PointInfo) -> crosscheck.Context:
    """What the per-record checks compare the records with: the concurrency asked for (the point's,
    else AIPerf's echo), a fixed-count window's request count, AIPerf's window."""
    echo = config_echo(agg) if agg is not None else {}

    def count(value) -> int | None:
        return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None

    run_info = agg.get("run_info") if agg is not None else None
    return crosscheck.Context(conc=point.conc or count(echo.get("concurrency")), requests=count(echo.get("requests")),
                              window=summary.window(agg) if agg is not None else None,
                              profiled=scan.profiling_total,
                              duration_s=summary.benchmark_duration_s(agg) if agg is not None else None,
                              command=run_info.get("cli_command") if isinstance(run_info, dict) else None,
                              planned=point.request_count, echo=echo, summary=agg is not None)


def refuse_non_finite(result: dict) -> dict:
    """No NaN or infinity reaches result.json (JSON has none; Python writes `Infinity`, which other
    readers reject): each becomes null, and the result is invalid, naming where they were."""
    found: list[str] = []

    def clean(value, where: str):
        if isinstance(value, float) and not math.isfinite(value):
            found.append(where)
            return None
        if isinstance(value, dict):
            return {k: clean(v, f"{where}.{k}" if where else str(k)) for k, v in value.items()}
        if isinstance(value, list):
            return [clean(v, f"{where}[{i}]") for i, v in enumerate(value)]
        return value

    out = clean(result, "")
    if found:
        shown = ", ".join(found[:8]) + (f" and {len(found) - 8} more" if len(found) > 8 else "")
        out["valid"] = False
        out["failures"] = [*out.get("failures", []), {
            "rule": "non-finite", "message": f"{len(found)} figure(s) came out as NaN or infinity ({shown}): "
                                             "an input value is out of any real range"}]
    return out


def job_dirs(path: Path, job: dict | None) -> list[Path]:
    """The directories holding one result each: DIR, or DIR/conc<N>/ for a multi-node job that ran
    several concurrencies in one allocation (JOB, DIR's job.json, lists them)."""
    subs = [c.get("dir") for c in (job or {}).get("concurrencies") or [] if isinstance(c, dict)]
    if subs and all(subs):
        return [Path(path) / str(s) for s in subs]
    return [Path(path)]


def process_dir(path: Path, point: PointInfo | None = None, *, max_error_rate: float = 0.10,
                min_requests: int | None = None, workers: int | None = None,
                policy: ResultsPolicy = ResultsPolicy()) -> dict:
    path = Path(path)
    is_job_dir(path)
    return process_job(path, read_json(path / names.JOB_JSON), point, max_error_rate=max_error_rate,
                       min_requests=min_requests, workers=workers, policy=policy)


def is_job_dir(path: Path) -> None:
    """Refuse a PATH that is no directory, saying what to pass."""
    if not path.exists():
        raise InputError(f"{path}: no such directory", exit_code=2)
    if not path.is_dir():
        raise InputError(f"{path}: not a directory; pass the job directory (`runner run --out`) holding "
                         "job.json and aiperf_artifacts/")


def process_job(path: Path, job: dict | None, point: PointInfo | None = None, *, max_error_rate: float = 0.10,
                min_requests: int | None = None, workers: int | None = None,
                policy: ResultsPolicy = ResultsPolicy()) -> dict:
    """The result of the job directory PATH whose job.json the caller read (JOB; None: it has none)."""
    if point is None:
        if job is None:
            raise InputError(f"{path}: no {names.JOB_JSON}, so the point is unknown", findings=[Finding(
                str(path), None, None, f"no {names.JOB_JSON} (written by `ci-tools runner run`)",
                "pass the point: --tp N --conc N [--ep N --dp-attn --gpus N --scenario S --duration S]")])
        point = point_from_job(job, str(path / names.JOB_JSON))
    adir = find_aiperf_dir(path)
    scan = records.scan_file(adir / names.PROFILE_JSONL, workers=workers, limits=policy.limits())
    agg = read_json(adir / names.PROFILE_JSON)
    result = build_result(scan, agg, point, max_error_rate, min_requests, policy)
    samples, problems = telemetry_samples(path)
    window = None
    if scan.start_ns_min is not None and scan.end_ns_max is not None:
        window = (scan.start_ns_min / 1e9, scan.end_ns_max / 1e9)
    if samples is not None:
        from ci_tools.results import telemetry

        result["gpu_telemetry"] = {**telemetry.summarize(samples, window, result.get("tokens")), "problems": problems}
    add_energy(result, samples, window, point.gpu_count, scan.records_profiled)
    if job is not None and isinstance(job.get("engine"), dict):
        result["engine"] = job["engine"]   # the release the runner found where the engine ran (and its image)
    return result


# the energy figures a result's headline carries (results compare gives each a verdict)
ENERGY_HEADLINE = ("j_per_output_token", "j_per_input_token", "j_per_total_token", "j_per_request")


def add_energy(result: dict, samples: list[dict] | None, window: tuple[float, float] | None, gpus: int,
               successful: int) -> None:
    """result["energy"] (InferenceX's power metrics with a validity flag and reasons) and the
    per-token figures in the headline (None when the power measurement is not valid)."""
    from ci_tools.results import telemetry

    e = telemetry.energy(samples, window, expected_gpus=gpus, tokens=result.get("tokens"), successful=successful)
    result["energy"] = e
    result["headline"].update({k: e.get(k) for k in ENERGY_HEADLINE})


def telemetry_samples(path: Path) -> tuple[list[dict] | None, list[str]]:
    """The runner's nvidia-smi samples (results/telemetry.py parses them), times in UTC; None without the file."""
    from ci_tools.results import telemetry

    csv = path / names.GPU_TELEMETRY_CSV
    if not csv.is_file():
        return None, []
    meta_path = path / names.GPU_TELEMETRY_META
    offset = telemetry.utc_offset(read_json(meta_path) or {}, str(meta_path))
    return telemetry.parse_csv(csv.read_text(encoding="utf-8", errors="replace"), offset)
