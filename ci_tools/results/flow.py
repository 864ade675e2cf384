"""The `results process` and `results collect` flows (shell): job directories and downloaded
artifacts in, result files out; the CLI prints what they hand back.

- `process`: one `result.json` per job directory (a multi-node job: one per concurrency), or, for an
  eval job, `eval_result.json` scored against the thresholds file.
- `collect`: every result.json and eval_result.json under the roots, the sweep's plan beside them,
  into results.json, eval-verdict.json and evals.md.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ci_tools import names
from ci_tools.errors import InputError
from ci_tools.results.policy import ResultsPolicy
from ci_tools.results.process import PointInfo, read_json


@dataclass(frozen=True)
class Written:
    result: dict
    target: Path
    eval: bool = False   # an eval_result.json (scored), not a benchmark result.json


def _write_json(target: Path, doc: dict) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    # allow_nan=False: a NaN or infinity that got past refuse_non_finite is a bug, not a file to write
    target.write_text(json.dumps(doc, indent=2, allow_nan=False) + "\n", encoding="utf-8")


def with_custody(result: dict, directory: Path, job: dict | None, read: list[Path], expected: str | None,
                 known: tuple[Path, dict | None] | None = None) -> dict:
    """RESULT with its `custody` section: the export checked against the hashes the runner took when the
    client exited (runner/seal.py); a difference makes it invalid (rule `export-custody`). JOB is
    DIRECTORY's job.json, KNOWN a parent job directory's, as already read."""
    from ci_tools.results import custody
    from ci_tools.results.custody_files import evidence

    failures, section = custody.judge(evidence(directory, job, read, expected, known))
    result["custody"] = section
    if failures:
        result["valid"] = False
        result["failures"] = [*result.get("failures", []), *(f.as_dict() for f in failures)]
    return result


def process_eval(directory: Path, job: dict, out: Path | None, thresholds_path: Path | None,
                 policy_path: Path | None = None, export_sha256: str | None = None) -> Written:
    from ci_tools.evals.load import load_acceptance_tolerance, load_thresholds
    from ci_tools.evals.process import process_eval_dir

    path = thresholds_path or Path(names.EVAL_THRESHOLDS)
    result = process_eval_dir(directory, job, load_thresholds(path, str(path)), load_acceptance_tolerance(policy_path))
    result = with_custody(result, directory, job, [], export_sha256)
    target = out or (directory / names.EVAL_RESULT_JSON)
    _write_json(target, result)
    return Written(result, target, eval=True)


def load_results_policy(path: Path | None) -> ResultsPolicy:
    """The `results:` section of the policy file (--policy; else inferencex-e2e/ci-policy.yaml here; else
    ci-tools' default policy), schema-checked: a bad key or value is a located error, never ignored."""
    from ci_tools.results.policy import section_findings
    from ci_tools.sweep.load import policy_section

    return ResultsPolicy.from_mapping(policy_section(path, "results", section_findings))


def process(dirs: list[Path], point: PointInfo | None, out: Path | None, *, max_error_rate: float,
            min_requests: int | None, workers: int | None, policy: ResultsPolicy = ResultsPolicy(),
            export_sha256: str | None = None, known: tuple[Path, dict | None] | None = None) -> Iterator[Written]:
    """Each directory's result, written as soon as it is computed (DIR/result.json, or OUT). KNOWN: the
    job directory whose job.json was read already, and what it held; every other one is read once here."""
    from ci_tools.results.process import export_files, is_job_dir, process_job

    for d in dirs:
        is_job_dir(d)
        job = known[1] if known is not None and d == known[0] else read_json(d / names.JOB_JSON)
        result = process_job(d, job, point, max_error_rate=max_error_rate, min_requests=min_requests,
                             workers=workers, policy=policy)
        result = with_custody(result, d, job, export_files(d), export_sha256, known)
        target = out or (d / names.RESULT_JSON)
        _write_json(target, result)
        yield Written(result, target)


@dataclass(frozen=True)
class Collected:
    data: dict           # the run-level collection written to --out (`evals` and `eval-verdict` included)
    table: str           # the eval table (evals.md; the step summary)

    @property
    def verdict(self) -> dict:
        return self.data["eval-verdict"]

    @property
    def counted(self) -> dict:
        """Valid and invalid results, eval results included (what the completeness check counts)."""
        evals = self.data["evals"]
        return {"valid": self.data["valid"] + sum(1 for e in evals if e.get("valid")),
                "invalid": self.data["invalid"] + sum(1 for e in evals if not e.get("valid"))}


PROGRESS_MIN_BYTES = 256 * 1024 * 1024   # an export this big takes seconds: say so before reading it


def _progress_lines(dirs: list[Path]) -> list[str]:
    """What `results process` says before a long read: each big export, its size (2.6 GB took 37 s)."""
    from ci_tools.results.process import find_aiperf_dir

    out = []
    for d in dirs:
        try:
            export = find_aiperf_dir(d) / names.PROFILE_JSONL
            size = export.stat().st_size
        except (InputError, OSError):
            continue   # the read itself says what is missing
        if size >= PROGRESS_MIN_BYTES:
            out.append(f"reading {export} ({size / 1e9:,.1f} GB)…" if size >= 1e9 else
                       f"reading {export} ({size / 1e6:,.0f} MB)…")
    return out


def run_process(directory: Path, out: Path | None, point: PointInfo | None, *, max_error_rate: float,
                min_requests: int | None, workers: int | None, thresholds_path: Path | None,
                policy_path: Path | None = None, export_sha256: str | None = None, progress=None) -> list[Written]:
    """`results process`: an eval job is scored; otherwise each job directory's result (one per
    concurrency for a multi-node job, or DIRECTORY itself when the point is given) is computed. Each
    is checked against the hashes the runner took of the client's exports (EXPORT_SHA256: the run
    step's output, the record's own hash)."""
    from ci_tools.evals.process import is_eval_job
    from ci_tools.results.process import job_dirs

    # DIRECTORY's job.json, read once: whether it is an eval job, its concurrency folders, its point, custody
    job = read_json(directory / names.JOB_JSON) if directory.is_dir() else None
    if point is None and job is not None and is_eval_job(job):
        return [process_eval(directory, job, out, thresholds_path, policy_path, export_sha256)]
    dirs = job_dirs(directory, job) if point is None else [directory]
    if out is not None and len(dirs) > 1:
        raise InputError(f"--out: {directory} holds {len(dirs)} results (one per concurrency); drop --out "
                         "to write each beside its export", exit_code=2)
    policy = load_results_policy(policy_path)
    said = _progress_lines(dirs) if progress is not None else []
    for line in said:
        progress(line)
    started = time.monotonic()
    written = list(process(dirs, point, out, max_error_rate=max_error_rate, min_requests=min_requests,
                           workers=workers, policy=policy, export_sha256=export_sha256,
                           known=(directory, job) if directory.is_dir() else None))
    if said:
        progress(f"read {len(said)} export(s) in {time.monotonic() - started:,.1f} s")
    return written


@dataclass(frozen=True)
class Pareto:
    points: list
    analysis: list[dict]
    checked: list[dict]


def pareto(input_path: Path, claims: Path | None, plot: Path | None, title: str) -> Pareto:
    """`results pareto`: the points, their frontier, the claims checked and the PNG written."""
    from ci_tools.results import pareto as frontier
    from ci_tools.results.sources import load_points
    from ci_tools.yaml.load import read_text

    points = load_points(input_path)
    checked: list[dict] = []
    if claims is not None:
        checked = frontier.check_claims(points, frontier.parse_claims(read_text(claims), str(claims)), str(claims))
    if plot is not None:
        try:
            from ci_tools.results.chart import from_points
            from ci_tools.results.render import plot_png

            plot_png(from_points(points, title), plot)
        except ImportError:
            raise InputError("--plot needs matplotlib: pip install 'ci-tools[plot]'") from None
    return Pareto(points, frontier.analyse(points), checked)


def collect(roots: list[Path], out: Path) -> Collected:
    from ci_tools.evals.report import markdown
    from ci_tools.results.collect import collect as collect_results
    from ci_tools.results.collect import collect_evals, find_plan, find_results

    files = find_results(roots)
    eval_files = find_results(roots, names.EVAL_RESULT_JSON)
    if not files and not eval_files:
        raise InputError("no result.json or eval_result.json found under " + ", ".join(map(str, roots)))
    data = collect_results(files)
    plan_path = find_plan(roots)
    plan = None
    if plan_path is not None:
        try:
            plan = json.loads(plan_path.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise InputError(f"{plan_path}: the sweep's plan is not valid JSON ({exc})") from None
    evals, verdict, eval_notes = collect_evals(eval_files, plan)
    data["notes"] += eval_notes
    if not data["results"] and not evals:
        # every file was skipped: a collection of nothing must not pass as a successful collect
        kinds = " or ".join(n for n, fs in ((names.RESULT_JSON, files), (names.EVAL_RESULT_JSON, eval_files)) if fs)
        raise InputError(f"no result could be collected from {len(files) + len(eval_files)} {kinds} file(s):\n  "
                         + "\n  ".join(data["notes"])
                         + "\nhint: these files must be written by `ci-tools results process`")
    data["notes"] += verdict["notes"]
    data["evals"] = evals
    data["eval-verdict"] = verdict
    _write_json(out, data)
    (out.parent / names.EVAL_VERDICT_JSON).write_text(json.dumps(verdict, indent=2) + "\n", encoding="utf-8")
    table = markdown(verdict, evals)
    (out.parent / names.EVAL_TABLE_MD).write_text(table, encoding="utf-8")
    return Collected(data, table)
